/*
 * kvcache.h - a paged KV-cache block pool with optional prefix caching,
 * after vLLM's block manager: blocks have a reference count; blocks with
 * no reference sit in a free queue in LRU order and, if they carry a hash,
 * can still be found by prefix lookup until they are reused (evicted).
 */
#ifndef LLMSIM_KVCACHE_H
#define LLMSIM_KVCACHE_H

#include <stdbool.h>
#include <stdint.h>

struct lsim_kvcache;

/* What a holder lists for an anonymous block (lsim_kv_alloc_anon): one
 * with no content anyone can find, and one full of private content. */
#define LSIM_KV_ANON (-1)
#define LSIM_KV_ANON_PRIV (-2)

/*
 * The most blocks one cache holds. A block costs its pool about 60-100
 * bytes of host memory (its arrays, the free ring and the prefix map, sized
 * to the block count up front), so the limit keeps one cache near 1 GiB.
 * Physical caches stay far below it: the largest profile of calibrate/
 * (192 GiB) holds 7.2 million blocks of the model with the least KV per
 * token in calibrate/models.yaml (ChatGLM2-6B, 28,672 bytes) at block_size
 * 1, and 449,000 at vLLM's 16. Configurations above it are refused.
 */
#define LSIM_KV_BLOCKS_MAX (1 << 24)

/* Returns NULL if out of memory. 1 <= n_blocks <= LSIM_KV_BLOCKS_MAX. */
struct lsim_kvcache *lsim_kv_create(int32_t n_blocks, bool prefix_caching);
void lsim_kv_destroy(struct lsim_kvcache *kv);

int32_t lsim_kv_total(const struct lsim_kvcache *kv);
/* Blocks with no reference (including cached, evictable ones). */
int32_t lsim_kv_free(const struct lsim_kvcache *kv);

/*
 * Looks up the longest run of leading hashes present in the cache (at
 * most n). *n_evictable receives how many of those blocks currently have
 * no reference (taking them reduces the free count).
 */
int32_t lsim_kv_match(const struct lsim_kvcache *kv, const uint64_t *hashes,
		      int32_t n, int32_t *n_evictable);

/* Takes a reference on the cached blocks of the first n hashes (which
 * lsim_kv_match found) and writes their ids to out. */
void lsim_kv_acquire(struct lsim_kvcache *kv, const uint64_t *hashes,
		     int32_t n, int32_t *out);

/* A fresh block, or -1 if none: the free queue's head, whose content (if
 * it can still be found) is evicted. Which block it is, when the head's
 * content cannot be found, is free (the most recently freed such block). */
int32_t lsim_kv_alloc(struct lsim_kvcache *kv);

/* Takes n fresh blocks as anonymous ones (the holder lists them as
 * LSIM_KV_ANON), evicting as lsim_kv_alloc would n times; false, taking
 * none, if fewer than n are free. */
bool lsim_kv_alloc_anon(struct lsim_kvcache *kv, int32_t n);

/* Records that block is full and holds content hash (0 = none). */
void lsim_kv_set_hash(struct lsim_kvcache *kv, int32_t block, uint64_t hash);

/* Records that block is full and holds content hash that only its holder
 * can ask for again: kept out of the lookup map until the block is
 * released by lsim_kv_release (which maps it then), and never mapped if
 * it is released by lsim_kv_release_final. */
void lsim_kv_set_private_hash(struct lsim_kvcache *kv, int32_t block,
			      uint64_t hash);

/* An anonymous block the caller holds is full and holds content hash:
 * as lsim_kv_set_hash on a block of its own, it is mapped unless the
 * content is mapped already (or prefix caching is off, or hash is 0).
 * Returns the block's id, to list instead of LSIM_KV_ANON, or
 * LSIM_KV_ANON where nothing was mapped. */
int32_t lsim_kv_set_hash_anon(struct lsim_kvcache *kv, uint64_t hash);

/* n anonymous blocks the caller holds are full of private content (it
 * lists them as LSIM_KV_ANON_PRIV): lsim_kv_set_private_hash by count,
 * the hash left for lsim_kv_name_private to give. */
void lsim_kv_mark_private(struct lsim_kvcache *kv, int32_t n);

/* Gives one LSIM_KV_ANON_PRIV block the caller holds an id and its
 * private hash (as lsim_kv_set_private_hash had set it), so that
 * lsim_kv_release can publish it; returns the id to list instead. */
int32_t lsim_kv_name_private(struct lsim_kvcache *kv, uint64_t hash);

/* Drops one reference on each block; blocks reaching zero join the free
 * queue, the last of the list first (so tails are evicted first), and
 * their private hashes become findable. Anonymous entries count too; an
 * LSIM_KV_ANON_PRIV one is not published (lsim_kv_name_private it
 * first). */
void lsim_kv_release(struct lsim_kvcache *kv, const int32_t *blocks,
		     int32_t n);
/* The same, for a holder that will never look its content up again (a
 * finished request): private hashes stay unfindable. */
void lsim_kv_release_final(struct lsim_kvcache *kv, const int32_t *blocks,
			   int32_t n);

/* Releases anonymous blocks by count, as lsim_kv_release of a list
 * ending with n_priv LSIM_KV_ANON_PRIV entries then n_plain LSIM_KV_ANON
 * ones would. */
void lsim_kv_release_anon(struct lsim_kvcache *kv, int32_t n_plain, int32_t n_priv);

/* fn(ctx, hash) is called whenever content that lookups could find is
 * evicted (its block reused), before the block is handed out; NULL: no
 * one is told (KV offload to host memory listens, docs/memory.md). */
void lsim_kv_on_evict(struct lsim_kvcache *kv, void (*fn)(void *ctx, uint64_t hash),
		      void *ctx);

/* Number of blocks cached (with a hash) - for tests. */
int32_t lsim_kv_cached(const struct lsim_kvcache *kv);
/* Sum of all blocks' reference counts: what the holders' block lists add
 * up to (the invariant checks compare them). */
int64_t lsim_kv_refs(const struct lsim_kvcache *kv);

#endif
