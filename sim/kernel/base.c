/*
 * base.c - the shared vocabulary: time conversion, error strings and
 * diagnostics for bad input (see include/llmsim/llmsim.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/array.h"
#include "llmsim/llmsim.h"
#include "kernel/time_ns.h"

lsim_time lsim_time_from_s(double seconds)
{
	return lsim_time_ns_of_s(seconds);
}

double lsim_time_to_s(lsim_time t)
{
	return (double)t / 1e9;
}

const char *lsim_strerror(int err)
{
	switch (err) {
	case LSIM_OK: return "success";
	case LSIM_ENOMEM: return "out of memory";
	case LSIM_EINVAL: return "invalid input";
	case LSIM_EIO: return "input/output error";
	case LSIM_ENOENT: return "not found";
	case LSIM_ERANGE: return "value out of range";
	case LSIM_EFORMAT: return "malformed file";
	case LSIM_ESTATE: return "invalid state";
	case LSIM_EBUSY: return "no room";
	case LSIM_EPLUGIN: return "plugin error";
	default: return "unknown error";
	}
}

static void copy_str(char *dst, size_t size, const char *src)
{
	if (!src)
		src = "";
	size_t n = strlen(src);
	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

int lsim_diag_set(struct lsim_diag *d, int err, const char *file, int line,
		  int col, const char *key, const char *fmt, ...)
{
	if (!d)
		return err;
	copy_str(d->file, sizeof d->file, file);
	copy_str(d->key, sizeof d->key, key);
	d->line = line;
	d->col = col;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof d->msg, fmt, ap);
	va_end(ap);
	return err;
}

int lsim_diag_ensure(struct lsim_diag *d, int err)
{
	if (d && err < 0 && !d->msg[0])
		copy_str(d->msg, sizeof d->msg, lsim_strerror(err));
	return err;
}

void lsim_diag_format(const struct lsim_diag *d, char *buf, size_t size)
{
	char where[320] = "";
	size_t n = 0;
	if (d->file[0]) {
		n = (size_t)snprintf(where, sizeof where, "%s", d->file);
		if (d->line > 0 && n < sizeof where)
			n += (size_t)snprintf(where + n, sizeof where - n,
					      ":%d", d->line);
		if (d->line > 0 && d->col > 0 && n < sizeof where)
			n += (size_t)snprintf(where + n, sizeof where - n,
					      ":%d", d->col);
	}
	snprintf(buf, size, "%s%s%s%s%s", where, where[0] ? ": " : "",
		 d->key, d->key[0] ? ": " : "", d->msg);
}

int lsim_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 16;
	while (c < need)
		c *= 2;
	void *q = realloc(*p, c * elem);
	if (!q)
		return LSIM_ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}
