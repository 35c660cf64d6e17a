/*
 * recstore.c - per-request records, by arrival index: in memory up to a
 * bound, beyond it in an anonymous temporary file (tmpfile: removed when
 * closed, even if the process dies), read back in chunks.
 *
 * The memory array is a window over the indices [base, base + cap). Records
 * end roughly in arrival order, so a record past the window slides it
 * forward: the records below the new base (the older half) go to the file
 * in one write, and a record that ends after its index left the window
 * (a long request) is written on its own. One write per half window
 * instead of one per record: the spill costs about a system call per
 * 131,072 records in place of one each.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "report/recstore.h"

#define DEFAULT_MEM_RECORDS ((size_t)1 << 18)

struct lsim_recstore {
	size_t mem_records;
	struct lsim_req_record *mem; /* the window: index base + i at mem[i] */
	size_t cap;
	uint64_t base;
	FILE *file;		     /* the spill, or NULL */
	uint64_t count;
};

struct lsim_recstore *lsim_recstore_create(size_t mem_records)
{
	struct lsim_recstore *st = calloc(1, sizeof *st);
	if (st)
		st->mem_records = mem_records ? mem_records : DEFAULT_MEM_RECORDS;
	return st;
}

void lsim_recstore_destroy(struct lsim_recstore *st)
{
	if (!st)
		return;
	free(st->mem);
	if (st->file)
		fclose(st->file);
	free(st);
}

static int pwrite_all(int fd, const void *buf, size_t n, off_t at)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t k = pwrite(fd, p, n, at);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return LSIM_EIO;
		p += k;
		n -= (size_t)k;
		at += k;
	}
	return 0;
}

/* Slides the window so that idx falls in it, half a window above its new
 * base; the records below the new base go to the file in one write. */
static int slide(struct lsim_recstore *st, uint64_t idx)
{
	if (!st->file && !(st->file = tmpfile()))
		return LSIM_EIO;
	uint64_t half = st->cap / 2;
	uint64_t nb = idx - half; /* idx >= base + cap > base + half */
	uint64_t out = nb - st->base < st->cap ? nb - st->base : st->cap;
	int rc = pwrite_all(fileno(st->file), st->mem, (size_t)out * sizeof *st->mem,
			    (off_t)(st->base * sizeof *st->mem));
	if (rc != 0)
		return rc;
	size_t keep = st->cap - (size_t)out;
	memmove(st->mem, st->mem + out, keep * sizeof *st->mem);
	memset(st->mem + keep, 0, (st->cap - keep) * sizeof *st->mem);
	st->base = nb;
	return 0;
}

static int grow(struct lsim_recstore *st, uint64_t need)
{
	size_t c = st->cap ? st->cap : 1024;
	while (c < need)
		c *= 2;
	if (c > st->mem_records)
		c = st->mem_records;
	struct lsim_req_record *p = realloc(st->mem, c * sizeof *p);
	if (!p)
		return LSIM_ENOMEM;
	memset(p + st->cap, 0, (c - st->cap) * sizeof *p);
	st->mem = p;
	st->cap = c;
	return 0;
}

int lsim_recstore_put(struct lsim_recstore *st, uint64_t idx,
		      const struct lsim_req_record *rec)
{
	if (idx >= st->base + st->cap && st->cap < st->mem_records) {
		int rc = grow(st, idx + 1); /* before the first slide: base 0 */
		if (rc != 0)
			return rc;
	}
	if (idx >= st->base + st->cap) {
		int rc = slide(st, idx);
		if (rc != 0)
			return rc;
	}
	if (idx < st->base) {
		int rc = pwrite_all(fileno(st->file), rec, sizeof *rec,
				    (off_t)(idx * sizeof *rec));
		if (rc != 0)
			return rc;
	} else {
		st->mem[idx - st->base] = *rec;
	}
	if (idx + 1 > st->count)
		st->count = idx + 1;
	return 0;
}

uint64_t lsim_recstore_count(const struct lsim_recstore *st)
{
	return st ? st->count : 0;
}

void lsim_recstore_truncate(struct lsim_recstore *st, uint64_t count)
{
	if (count < st->count)
		st->count = count;
}

int lsim_recstore_read(const struct lsim_recstore *st, uint64_t first,
		       size_t n, struct lsim_req_record *buf)
{
	if (first > st->count || n > st->count - first)
		return LSIM_ERANGE;
	/* below the window: from the file (a hole reads as zeros) */
	size_t from_file = first >= st->base ? 0
			   : (size_t)(st->base - first < n ? st->base - first : n);
	char *p = (char *)buf;
	size_t left = from_file * sizeof *buf;
	off_t at = (off_t)(first * sizeof *buf);
	while (left > 0) {
		ssize_t k = pread(fileno(st->file), p, left, at);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return LSIM_EIO;
		if (k == 0) { /* a hole at the end of the file: never put */
			memset(p, 0, left);
			break;
		}
		p += k;
		left -= (size_t)k;
		at += k;
	}
	/* in the window (beyond what was ever put, count stops it) */
	size_t rest = n - from_file;
	if (rest > 0)
		memcpy(buf + from_file, st->mem + (first + from_file - st->base),
		       rest * sizeof *buf);
	return 0;
}

const struct lsim_req_record *lsim_recstore_array(const struct lsim_recstore *st)
{
	return st && !st->file ? st->mem : NULL;
}

/* ---- reading the records of a result ---- */

#define READ_CHUNK 4096

int lsim_results_read_reqs(const struct lsim_results *r, size_t first,
			   size_t n, struct lsim_req_record *buf)
{
	if (first > r->n_reqs || n > r->n_reqs - first)
		return LSIM_ERANGE;
	if (r->req_store)
		return lsim_recstore_read(r->req_store, first, n, buf);
	if (n > 0)
		memcpy(buf, r->reqs + first, n * sizeof *buf);
	return 0;
}

int lsim_results_each_req(const struct lsim_results *r,
			  int (*fn)(void *ctx, const struct lsim_req_record *q),
			  void *ctx)
{
	if (r->n_reqs == 0)
		return 0;
	const struct lsim_req_record *arr = r->req_store
						    ? lsim_recstore_array(r->req_store)
						    : r->reqs;
	if (arr) {
		for (size_t i = 0; i < r->n_reqs; i++) {
			int rc = fn(ctx, &arr[i]);
			if (rc != 0)
				return rc;
		}
		return 0;
	}
	struct lsim_req_record *buf = malloc(READ_CHUNK * sizeof *buf);
	if (!buf)
		return LSIM_ENOMEM;
	int rc = 0;
	for (size_t at = 0; rc == 0 && at < r->n_reqs; at += READ_CHUNK) {
		size_t n = r->n_reqs - at < READ_CHUNK ? r->n_reqs - at : READ_CHUNK;
		rc = lsim_results_read_reqs(r, at, n, buf);
		for (size_t i = 0; rc == 0 && i < n; i++)
			rc = fn(ctx, &buf[i]);
	}
	free(buf);
	return rc;
}
