/*
 * kvhost.h - the host-memory tier of KV offload (instances[].kv_offload:
 * host): a fixed number of KV blocks' content hashes held in host DRAM,
 * evicted least recently used first, after vLLM's CPU KV offloading and
 * LMCache's local CPU backend. Only the hashes: what moves, and when, is
 * the instance's (flows on the GPU's PCIe path, instance.c).
 */
#ifndef LLMSIM_KVHOST_H
#define LLMSIM_KVHOST_H

#include <stdbool.h>
#include <stdint.h>

struct lsim_kvhost;

/* A tier of cap blocks (cap >= 1); NULL if out of memory. */
struct lsim_kvhost *lsim_kvhost_create(int64_t cap);
void lsim_kvhost_destroy(struct lsim_kvhost *h);

/* Stores content hash (non-zero) as the most recently used, evicting the
 * least recently used block when full; returns false if it was held
 * already (only made most recently used: nothing to copy). */
bool lsim_kvhost_put(struct lsim_kvhost *h, uint64_t hash);

/* How many of the leading hashes[0 .. n-1] the tier holds, up to the
 * first it lacks. */
int32_t lsim_kvhost_match(const struct lsim_kvhost *h, const uint64_t *hashes, int32_t n);
/* Makes the n held hashes[0 .. n-1] the most recently used, the first
 * the most (a reload: lsim_kvhost_match found them). */
void lsim_kvhost_touch(struct lsim_kvhost *h, const uint64_t *hashes, int32_t n);

/* Blocks held, and the capacity. */
int64_t lsim_kvhost_len(const struct lsim_kvhost *h);
int64_t lsim_kvhost_cap(const struct lsim_kvhost *h);

#endif
