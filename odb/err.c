/*
 * err.c: the thread-local error record behind every XL_E* return.
 *
 * Functions in odb/, xlate/ and cache/ return a negative code and leave
 * the reason here, so that the caller deciding what to tell the user (a
 * command's stderr line, the daemon's log next to an EIO) has the detail
 * without every layer passing strings around.  Each thread has its own
 * record: FUSE worker threads never see each other's messages.
 */
#include "odb.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ERR_MSG_MAX 1024

static _Thread_local char err_text[ERR_MSG_MAX];
static _Thread_local int err_last;

static int err_vset(int code, const char *fmt, va_list ap)
{
	vsnprintf(err_text, sizeof(err_text), fmt, ap);
	err_last = code;
	return code;
}

int err_set(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(code, fmt, ap);
	va_end(ap);
	return code;
}

int err_corrupt(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	err_vset(XL_ECORRUPT, fmt, ap);
	va_end(ap);
	n = strlen(err_text);
	/* the origin helps whoever reads the log find the exact rule */
	snprintf(err_text + n, sizeof(err_text) - n, " [%s:%d]", file, line);
	return XL_ECORRUPT;
}

int err_errno(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	err_vset(XL_EIO, fmt, ap);
	va_end(ap);
	n = strlen(err_text);
	snprintf(err_text + n, sizeof(err_text) - n, ": %s", strerror(saved));
	errno = saved;
	return XL_EIO;
}

int err_wrap(const char *fmt, ...)
{
	char old[ERR_MSG_MAX];
	va_list ap;
	size_t n;

	memcpy(old, err_text, sizeof(old));
	va_start(ap, fmt);
	vsnprintf(err_text, sizeof(err_text), fmt, ap);
	va_end(ap);
	n = strlen(err_text);
	/* append ": old", cut to fit (snprintf would warn about the cut) */
	if (n + 2 < sizeof(err_text)) {
		size_t room = sizeof(err_text) - n - 3, m = strlen(old);

		memcpy(err_text + n, ": ", 2);
		if (m > room)
			m = room;
		memcpy(err_text + n + 2, old, m);
		err_text[n + 2 + m] = '\0';
	}
	return err_last;
}

const char *err_msg(void)
{
	return err_text;
}

int err_code(void)
{
	return err_last;
}

void err_clear(void)
{
	err_text[0] = '\0';
	err_last = 0;
}
