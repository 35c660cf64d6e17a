/*
 * digest.h - a streaming 64-bit content hash for run ids (XXH64, seed 0,
 * from libxxhash): the effective configuration and the bytes of the data
 * files a run reads. Not cryptographic: it tells different inputs apart,
 * it does not resist someone forging a collision.
 */
#ifndef LLMSIM_DIGEST_H
#define LLMSIM_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#define XXH_STATIC_LINKING_ONLY /* XXH64_state_t by value */
#include <xxhash.h>

struct lsim_digest {
	XXH64_state_t st;
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
