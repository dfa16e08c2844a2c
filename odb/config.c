/*
 * config.c: Git's config file syntax, enough to read a repository's
 * format keys correctly.
 *
 *   [section]            keys become "section.key"
 *   [section "sub"]      "section.sub.key"; the subsection keeps its case
 *                        and may hold \" and \\ escapes
 *   [section.sub]        the old form: "section.sub.key", lower-cased
 *   key = value          value: leading/trailing blanks dropped, "quoted
 *                        parts" keep theirs, \\ \" \n \t \b escapes, a
 *                        backslash-newline joins lines, ; or # outside
 *                        quotes starts a comment
 *   key                  a bare key is boolean true (value NULL)
 *
 * Section and key names are case-insensitive, so they are handed to the
 * callback lower-cased.  include.path and includeIf are not followed: a
 * repository's format keys live in its own config file.
 */
#include "odb_i.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct config_parser {
	const char *p, *end;
	const char *origin;
	int line;		/* of the next character */
	int last;		/* the character cp_get returned last */
	struct buf section;	/* "section" or "section.sub", canonical */
	struct buf key;
	struct buf value;
};

/* Git names the line the bad character is on, the newline ending it included. */
static int cp_error(struct config_parser *cp, const char *what)
{
	return ERR_CORRUPT("%s: line %d: %s", cp->origin,
			   cp->line - (cp->last == '\n'), what);
}

/* The next character, with CRLF read as one newline (as Git does). */
static int cp_get(struct config_parser *cp)
{
	int c;

	if (cp->p >= cp->end)
		return cp->last = EOF;
	c = (unsigned char)*cp->p++;
	if (c == '\r' && cp->p < cp->end && *cp->p == '\n')
		c = (unsigned char)*cp->p++;
	if (c == '\n')
		cp->line++;
	return cp->last = c;
}

static int cp_peek(struct config_parser *cp)
{
	return cp->p < cp->end ? (unsigned char)*cp->p : EOF;
}

static int is_keychar(int c)
{
	return isalnum(c) || c == '-';
}

/* After '[': parse up to and including ']'. */
static int cp_section(struct config_parser *cp)
{
	int c;

	buf_reset(&cp->section);
	for (;;) {
		c = cp_get(cp);
		if (c == ']')
			break;
		if (c == ' ' || c == '\t') {
			/* [section "subsection"] */
			while ((c = cp_get(cp)) == ' ' || c == '\t')
				;
			if (c != '"')
				return cp_error(cp, "bad section header");
			buf_addch(&cp->section, '.');
			for (;;) {
				c = cp_get(cp);
				if (c == EOF || c == '\n')
					return cp_error(cp, "unterminated subsection");
				if (c == '"')
					break;
				if (c == '\\') {
					c = cp_get(cp);
					if (c == EOF || c == '\n')
						return cp_error(cp, "bad subsection escape");
				}
				buf_addch(&cp->section, c);
			}
			if (cp_get(cp) != ']')
				return cp_error(cp, "bad section header");
			break;
		}
		if (c == EOF || !(is_keychar(c) || c == '.'))
			return cp_error(cp, "bad section header");
		buf_addch(&cp->section, tolower(c));
	}
	if (!cp->section.len)
		return cp_error(cp, "empty section name");
	return 0;
}

/*
 * The value after '=' up to the end of the line, as Git reads it: blanks
 * outside quotes are dropped at the start and the end, and each one
 * inside the value becomes a space; ';' or '#' outside quotes starts a
 * comment; a backslash escapes \\ \" n t b or joins the next line.
 */
static int cp_value(struct config_parser *cp)
{
	int quoted = 0, c;
	size_t spaces = 0;	/* blanks seen since the last value byte */

	buf_reset(&cp->value);
	for (;;) {
		c = cp_get(cp);
		if (c == EOF || c == '\n') {
			if (quoted)
				return cp_error(cp, "unterminated quoted value");
			return 0;
		}
		if (!quoted && isspace(c)) {
			if (cp->value.len)
				spaces++;
			continue;
		}
		if (!quoted && (c == ';' || c == '#')) {
			while ((c = cp_get(cp)) != EOF && c != '\n')
				;
			return 0;
		}
		for (; spaces; spaces--)
			buf_addch(&cp->value, ' ');
		if (c == '"') {
			quoted = !quoted;
			continue;
		}
		if (c == '\\') {
			c = cp_get(cp);
			switch (c) {
			case '\n':
				continue;	/* continuation */
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'b': c = '\b'; break;
			case '\\':
			case '"':
				break;
			default:
				return cp_error(cp, "bad escape in value");
			}
		}
		buf_addch(&cp->value, c);
	}
}

int config_parse(const char *text, size_t len, const char *origin,
		 config_fn fn, void *data)
{
	struct config_parser cp = {
		.p = text, .end = text + len, .origin = origin, .line = 1,
		.section = BUF_INIT, .key = BUF_INIT, .value = BUF_INIT,
	};
	int ret = 0, c;

	/* a UTF-8 byte order mark is allowed at the start */
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		cp.p += 3;
	while (!ret && (c = cp_get(&cp)) != EOF) {
		if (c == '\n' || isspace(c))
			continue;
		if (c == '#' || c == ';') {
			while ((c = cp_get(&cp)) != EOF && c != '\n')
				;
			continue;
		}
		if (c == '[') {
			ret = cp_section(&cp);
			continue;
		}
		if (!isalpha(c)) {
			ret = cp_error(&cp, "bad config line");
			break;
		}
		if (!cp.section.len) {
			ret = cp_error(&cp, "key outside any section");
			break;
		}
		buf_reset(&cp.key);
		buf_add(&cp.key, cp.section.buf, cp.section.len);
		buf_addch(&cp.key, '.');
		buf_addch(&cp.key, tolower(c));
		while (is_keychar(cp_peek(&cp)))
			buf_addch(&cp.key, tolower(cp_get(&cp)));
		while ((c = cp_peek(&cp)) == ' ' || c == '\t')
			cp_get(&cp);
		/* "key = value", or a bare "key" alone on its line */
		c = cp_get(&cp);
		if (c == '=') {
			if ((ret = cp_value(&cp)))
				break;
			ret = fn(cp.key.buf, cp.value.buf, data);
		} else if (c == EOF || c == '\n') {
			ret = fn(cp.key.buf, NULL, data);
		} else {
			ret = cp_error(&cp, "bad config line");
		}
	}
	buf_release(&cp.section);
	buf_release(&cp.key);
	buf_release(&cp.value);
	return ret;
}

int config_bool(const char *v)
{
	long long n;

	if (!v)
		return 1;
	if (!*v)
		return 0;
	if (!strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
	    !strcasecmp(v, "on"))
		return 1;
	if (!strcasecmp(v, "false") || !strcasecmp(v, "no") ||
	    !strcasecmp(v, "off"))
		return 0;
	if (!config_int(v, &n))
		return n != 0;
	return -1;
}

int config_int(const char *v, long long *out)
{
	char *end;
	long long n, mul = 1;

	if (!v || !*v)
		return err_set(XL_EINVALID, "empty integer");
	errno = 0;
	n = strtoll(v, &end, 0);
	if (errno == ERANGE || end == v)
		return err_set(XL_EINVALID, "bad integer '%s'", v);
	switch (*end) {
	case 'k': case 'K': mul = 1024; end++; break;
	case 'm': case 'M': mul = 1024 * 1024; end++; break;
	case 'g': case 'G': mul = 1024 * 1024 * 1024; end++; break;
	}
	if (*end || __builtin_mul_overflow(n, mul, out))
		return err_set(XL_EINVALID, "bad integer '%s'", v);
	return 0;
}
