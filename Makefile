# xlatefs: build, test, benchmark, install.
#
#   make                 libxlatefs.a, ./git-xlate, ./xlatefs
#   make check           unit, oracle and corruption tests; ends "N passed, N failed"
#   make check SANITIZE=1    the same under AddressSanitizer + UBSan
#   make check SANITIZE=thread CC=clang    the same under ThreadSanitizer
#   make check T='t02 t03'   only the scripts whose names start so
#   make fuzz            libFuzzer targets in .fuzz/ (clang); FUZZ_SECONDS=N
#                        runs each for N seconds from seeds made from the fixtures
#   make bench           speed against stock git, side by side
#   make bench-large     the same at a million objects (opt-in: generating
#                        the repository takes many minutes; kept in .bench/large)
#   make demo            the built-in example (see README.md)
#   make install         PREFIX=/usr/local, DESTDIR=
#   make DEVELOPER=1     strict warnings as errors
#   make V=1             show the full compiler command lines
#
# Object files sit next to their sources.  The flags in force are kept in
# .build-flags, so changing SANITIZE or CFLAGS rebuilds everything.

comma := ,
PREFIX ?= /usr/local
BINDIR = $(PREFIX)/bin
MANDIR = $(PREFIX)/share/man/man1

CC ?= cc
PKG_CONFIG ?= pkg-config
CFLAGS ?= -O2 -g
PKGS = zlib libcrypto sqlite3
FUSE_PKG = fuse3

BASE_CFLAGS = -std=gnu11 -pthread -D_GNU_SOURCE -MMD -MP -Wall -Wextra \
	-Wno-unused-parameter -Wno-sign-compare
DEV_CFLAGS = -Werror -Wmissing-prototypes -Wstrict-prototypes -Wvla \
	-Wwrite-strings -Wold-style-definition -fno-common -Wformat-security \
	-Wshadow -Wpointer-arith
ifeq ($(DEVELOPER),1)
BASE_CFLAGS += $(DEV_CFLAGS)
endif
ifneq ($(SANITIZE),)
# SANITIZE=1 means the usual pair; any other value is passed through
SAN_LIST = $(if $(filter 1,$(SANITIZE)),address$(comma)undefined,$(SANITIZE))
BASE_CFLAGS += -fsanitize=$(SAN_LIST) -fno-omit-frame-pointer \
	-fno-sanitize-recover=all
SAN_LDFLAGS = -fsanitize=$(SAN_LIST)
endif

PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS))
PKG_LIBS := $(shell $(PKG_CONFIG) --libs $(PKGS))
FUSE_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(FUSE_PKG))
FUSE_LIBS := $(shell $(PKG_CONFIG) --libs $(FUSE_PKG))
ALL_CFLAGS = $(BASE_CFLAGS) $(PKG_CFLAGS) $(CFLAGS)
ALL_LDFLAGS = -pthread $(SAN_LDFLAGS) $(LDFLAGS)

LIB = libxlatefs.a
LIB_SRCS = $(wildcard odb/*.c cache/*.c) $(filter-out $(CLI_SRCS),$(wildcard xlate/*.c))
CLI_SRCS = xlate/main.c xlate/cat-file.c $(wildcard xlate/cmd-*.c)
FS_SRCS = $(wildcard fs/*.c)
UNIT_SRCS = $(wildcard tests/unit/t-*.c)
UNIT_BINS = $(UNIT_SRCS:.c=)
HARNESS_OBJ = tests/unit/harness.o
# fuzz targets: in make check, each replays its seeds and regressions
# through driver.c (tests/t0510-fuzz-replay.sh); make fuzz links them
# with libFuzzer instead, in .fuzz/, with flags of their own
FUZZ_SRCS = $(wildcard tests/fuzz/fuzz-*.c)
FUZZ_NAMES = $(notdir $(FUZZ_SRCS:.c=))
REPLAY_BINS = $(FUZZ_SRCS:.c=-replay)
DRIVER_OBJ = tests/fuzz/driver.o tests/fuzz/files.o

LIB_OBJS = $(LIB_SRCS:.c=.o)
CLI_OBJS = $(CLI_SRCS:.c=.o)
FS_OBJS = $(FS_SRCS:.c=.o)
ALL_OBJS = $(LIB_OBJS) $(CLI_OBJS) $(FS_OBJS) $(HARNESS_OBJ) $(UNIT_SRCS:.c=.o) \
	$(FUZZ_SRCS:.c=.o) $(DRIVER_OBJ)

PROGRAMS = git-xlate xlatefs

ifneq ($(V),1)
QUIET_CC = @echo '   ' CC $@;
QUIET_AR = @echo '   ' AR $@;
QUIET_LINK = @echo '   ' LINK $@;
endif

all: $(PROGRAMS)

.build-flags: FORCE
	@echo '$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS)' | cmp -s - $@ || \
		echo '$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS)' > $@

%.o: %.c .build-flags
	$(QUIET_CC)$(CC) $(ALL_CFLAGS) -c -o $@ $<

# only fs/ sees libfuse's headers: nothing below it knows of FUSE
fs/%.o: fs/%.c .build-flags
	$(QUIET_CC)$(CC) $(ALL_CFLAGS) $(FUSE_CFLAGS) -c -o $@ $<

$(LIB): $(LIB_OBJS)
	$(QUIET_AR)$(RM) $@ && $(AR) rcs $@ $^

git-xlate: $(CLI_OBJS) $(LIB)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJS) $(LIB) $(PKG_LIBS)

xlatefs: $(FS_OBJS) $(LIB)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $(FS_OBJS) $(LIB) $(FUSE_LIBS) $(PKG_LIBS)

tests/unit/t-%: tests/unit/t-%.o $(HARNESS_OBJ) $(LIB)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $< $(HARNESS_OBJ) $(LIB) $(PKG_LIBS)

tests/fuzz/fuzz-%-replay: tests/fuzz/fuzz-%.o $(DRIVER_OBJ) $(LIB)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $< $(DRIVER_OBJ) $(LIB) $(PKG_LIBS)

# T='t02 t03': only the test scripts whose names start so (units always run)
CHECK_SCRIPTS = $(sort $(wildcard tests/t[0-9]*.sh))
ifneq ($(T),)
CHECK_SCRIPTS := $(foreach p,$(T),$(filter tests/$(p)%,$(CHECK_SCRIPTS)))
endif

check: all $(UNIT_BINS) $(REPLAY_BINS)
	@tests/run-tests.sh $(UNIT_BINS) $(CHECK_SCRIPTS)

# ---- fuzzing (clang: libFuzzer, AddressSanitizer, UBSan) ----------------
FUZZ_CC ?= clang
FUZZ_DIR = .fuzz
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS = $(filter-out -fsanitize=%,$(BASE_CFLAGS)) $(PKG_CFLAGS) -O1 -g $(FUZZ_SAN)
FUZZ_LIB_OBJS = $(LIB_SRCS:%.c=$(FUZZ_DIR)/obj/%.o)
FUZZ_BINS = $(FUZZ_NAMES:%=$(FUZZ_DIR)/%)
FUZZ_SECONDS ?= 0

$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_DIR)/fuzz-%: $(FUZZ_DIR)/obj/tests/fuzz/fuzz-%.o $(FUZZ_DIR)/obj/tests/fuzz/files.o \
		$(FUZZ_LIB_OBJS)
	$(QUIET_LINK)$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -pthread -o $@ $^ $(PKG_LIBS)

fuzz: git-xlate $(FUZZ_BINS)
	@tests/fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_NAMES)

bench: all
	@tests/bench/run.sh

# opt-in: a repository of about a million objects, made once (minutes)
bench-large: all
	@tests/bench/large.sh

demo: all
	@tests/demo.sh

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)
	install -m 755 $(PROGRAMS) $(DESTDIR)$(BINDIR)/
	install -m 644 man/*.1 $(DESTDIR)$(MANDIR)/

clean:
	$(RM) $(ALL_OBJS) $(ALL_OBJS:.o=.d) $(LIB) $(PROGRAMS) $(UNIT_BINS) \
		$(REPLAY_BINS) .build-flags
	$(RM) -r $(FUZZ_DIR)/obj $(FUZZ_BINS)

.PHONY: all check bench bench-large demo fuzz install clean FORCE
.DELETE_ON_ERROR:
# unit test objects are intermediate to make, but keep them for incremental builds
.SECONDARY: $(UNIT_SRCS:.c=.o) $(HARNESS_OBJ) $(FUZZ_SRCS:.c=.o) $(DRIVER_OBJ) \
	$(FUZZ_NAMES:%=$(FUZZ_DIR)/obj/tests/fuzz/%.o) $(FUZZ_DIR)/obj/tests/fuzz/files.o \
	$(FUZZ_LIB_OBJS)

-include $(ALL_OBJS:.o=.d)
-include $(wildcard $(FUZZ_DIR)/obj/*/*.d $(FUZZ_DIR)/obj/tests/fuzz/*.d)
