/*
 * digest.h - a streaming 64-bit content hash (XXH64, seed 0: the xxHash
 * specification's 64-bit algorithm, written out here) for run ids: the
 * effective configuration and the bytes of the data files a run reads.
 * Not cryptographic: it tells different inputs apart, it does not resist
 * someone forging a collision.
 */
#ifndef LLMSIM_DIGEST_H
#define LLMSIM_DIGEST_H

#include <stddef.h>
#include <stdint.h>

struct lsim_digest {
	uint64_t v[4];	 /* the four lanes */
	uint64_t total;	 /* bytes added */
	unsigned char buf[32];
	size_t n;	 /* bytes in buf */
};

void lsim_digest_init(struct lsim_digest *h);
void lsim_digest_add(struct lsim_digest *h, const void *p, size_t n);
/* A string with its terminating NUL (so "ab","c" differs from "a","bc"). */
void lsim_digest_str(struct lsim_digest *h, const char *s);
/* The bytes of the file at path, streamed: 0, or -1 with errno set. */
int lsim_digest_file(struct lsim_digest *h, const char *path);
/* The hash of everything added (h is left as it was). */
uint64_t lsim_digest_value(const struct lsim_digest *h);

#endif
