/*
 * digest.c - the run ids' content hash (digest.h): libxxhash's streaming
 * XXH64 with seed 0; a file is read in 64 KiB chunks.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kernel/digest.h"

void lsim_digest_init(struct lsim_digest *h)
{
	XXH64_reset(&h->st, 0);
}

void lsim_digest_add(struct lsim_digest *h, const void *data, size_t n)
{
	if (n > 0)
		XXH64_update(&h->st, data, n);
}

void lsim_digest_str(struct lsim_digest *h, const char *s)
{
	if (!s)
		s = "";
	lsim_digest_add(h, s, strlen(s) + 1);
}

int lsim_digest_file(struct lsim_digest *h, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	unsigned char chunk[65536];
	size_t got;
	while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
		lsim_digest_add(h, chunk, got);
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		errno = EIO;
		return -1;
	}
	return 0;
}

uint64_t lsim_digest_value(const struct lsim_digest *h)
{
	return XXH64_digest(&h->st);
}
