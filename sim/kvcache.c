/*
 * kvcache.c - paged KV block pool: reference counts, an LRU free queue as
 * an intrusive doubly-linked list over block indices, and an
 * open-addressing hash map from content hash to block for prefix caching.
 *
 * Private hashes: content that only its holder can ask for again (a
 * request's own output, or a prompt with no shared prefix ids) is not put
 * in the map while the holder keeps it, since no lookup can hit it then.
 * It is published (mapped) when its block is released by a holder that may
 * come back for it (a preemption), and never when the holder is done with
 * it for good (lsim_kv_release_final). Every lookup therefore finds what it
 * would find had every hash been mapped at once, at a fraction of the map
 * traffic: a serving run with prefix caching on and no shared prefixes
 * maps almost nothing.
 */
#include <stdlib.h>

#include "kvcache.h"

struct lsim_kvcache {
	int32_t n;
	int32_t n_free;
	int32_t n_cached;
	int64_t refs;	/* sum of the reference counts */
	bool prefix_caching;
	int32_t *ref;
	uint64_t *hash;
	bool *priv;	      /* hash set but private: not in the map */
	int32_t *prev, *next; /* free queue links; -1 terminates */
	int32_t head, tail;   /* head = next to reuse */
	bool *in_free;
	/* map: hash -> block; key 0 = empty slot */
	uint64_t *map_key;
	int32_t *map_val;
	uint64_t map_mask;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static int64_t map_find(const struct lsim_kvcache *kv, uint64_t h)
{
	uint64_t i = mix(h) & kv->map_mask;
	while (kv->map_key[i]) {
		if (kv->map_key[i] == h)
			return (int64_t)i;
		i = (i + 1) & kv->map_mask;
	}
	return -1;
}

static void map_put(struct lsim_kvcache *kv, uint64_t h, int32_t b)
{
	uint64_t i = mix(h) & kv->map_mask;
	while (kv->map_key[i])
		i = (i + 1) & kv->map_mask;
	kv->map_key[i] = h;
	kv->map_val[i] = b;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void map_del(struct lsim_kvcache *kv, uint64_t slot)
{
	uint64_t i = slot, j = slot;
	for (;;) {
		j = (j + 1) & kv->map_mask;
		if (!kv->map_key[j])
			break;
		uint64_t home = mix(kv->map_key[j]) & kv->map_mask;
		/* Move j into i if home is not cyclically in (i, j]. */
		bool in_range = i <= j ? (home > i && home <= j)
				       : (home > i || home <= j);
		if (!in_range) {
			kv->map_key[i] = kv->map_key[j];
			kv->map_val[i] = kv->map_val[j];
			i = j;
		}
	}
	kv->map_key[i] = 0;
}

static void free_remove(struct lsim_kvcache *kv, int32_t b)
{
	int32_t p = kv->prev[b], q = kv->next[b];
	if (p >= 0)
		kv->next[p] = q;
	else
		kv->head = q;
	if (q >= 0)
		kv->prev[q] = p;
	else
		kv->tail = p;
	kv->in_free[b] = false;
	kv->n_free--;
}

static void free_append(struct lsim_kvcache *kv, int32_t b)
{
	kv->prev[b] = kv->tail;
	kv->next[b] = -1;
	if (kv->tail >= 0)
		kv->next[kv->tail] = b;
	else
		kv->head = b;
	kv->tail = b;
	kv->in_free[b] = true;
	kv->n_free++;
}

struct lsim_kvcache *lsim_kv_create(int32_t n_blocks, bool prefix_caching)
{
	if (n_blocks < 1)
		return NULL;
	struct lsim_kvcache *kv = calloc(1, sizeof *kv);
	if (!kv)
		return NULL;
	kv->n = n_blocks;
	kv->prefix_caching = prefix_caching;
	size_t n = (size_t)n_blocks;
	uint64_t cap = 16;
	while (cap < 2 * (uint64_t)n)
		cap <<= 1;
	kv->map_mask = cap - 1;
	kv->ref = calloc(n, sizeof *kv->ref);
	kv->hash = calloc(n, sizeof *kv->hash);
	kv->priv = calloc(n, sizeof *kv->priv);
	kv->prev = malloc(n * sizeof *kv->prev);
	kv->next = malloc(n * sizeof *kv->next);
	kv->in_free = calloc(n, sizeof *kv->in_free);
	kv->map_key = calloc(cap, sizeof *kv->map_key);
	kv->map_val = calloc(cap, sizeof *kv->map_val);
	if (!kv->ref || !kv->hash || !kv->priv || !kv->prev || !kv->next || !kv->in_free ||
	    !kv->map_key || !kv->map_val) {
		lsim_kv_destroy(kv);
		return NULL;
	}
	kv->head = kv->tail = -1;
	for (int32_t b = 0; b < n_blocks; b++)
		free_append(kv, b);
	return kv;
}

void lsim_kv_destroy(struct lsim_kvcache *kv)
{
	if (!kv)
		return;
	free(kv->ref);
	free(kv->hash);
	free(kv->priv);
	free(kv->prev);
	free(kv->next);
	free(kv->in_free);
	free(kv->map_key);
	free(kv->map_val);
	free(kv);
}

int32_t lsim_kv_total(const struct lsim_kvcache *kv) { return kv->n; }
int32_t lsim_kv_free(const struct lsim_kvcache *kv) { return kv->n_free; }
int32_t lsim_kv_cached(const struct lsim_kvcache *kv) { return kv->n_cached; }
int64_t lsim_kv_refs(const struct lsim_kvcache *kv) { return kv->refs; }

int32_t lsim_kv_match(const struct lsim_kvcache *kv, const uint64_t *hashes,
		      int32_t n, int32_t *n_evictable)
{
	int32_t hit = 0, ev = 0;
	if (kv->prefix_caching) {
		for (; hit < n; hit++) {
			int64_t s = map_find(kv, hashes[hit]);
			if (s < 0)
				break;
			if (kv->ref[kv->map_val[s]] == 0)
				ev++;
		}
	}
	if (n_evictable)
		*n_evictable = ev;
	return hit;
}

void lsim_kv_acquire(struct lsim_kvcache *kv, const uint64_t *hashes,
		     int32_t n, int32_t *out)
{
	for (int32_t i = 0; i < n; i++) {
		int64_t s = map_find(kv, hashes[i]);
		int32_t b = kv->map_val[s];
		kv->refs++;
		if (kv->ref[b]++ == 0)
			free_remove(kv, b);
		out[i] = b;
	}
}

int32_t lsim_kv_alloc(struct lsim_kvcache *kv)
{
	int32_t b = kv->head;
	if (b < 0)
		return -1;
	free_remove(kv, b);
	if (kv->hash[b]) {
		if (!kv->priv[b]) {
			int64_t s = map_find(kv, kv->hash[b]);
			if (s >= 0 && kv->map_val[s] == b)
				map_del(kv, (uint64_t)s);
		}
		kv->priv[b] = false;
		kv->hash[b] = 0;
		kv->n_cached--;
	}
	kv->ref[b] = 1;
	kv->refs++;
	return b;
}

void lsim_kv_set_hash(struct lsim_kvcache *kv, int32_t block, uint64_t hash)
{
	if (!kv->prefix_caching || !hash || kv->hash[block])
		return;
	if (map_find(kv, hash) >= 0)
		return; /* another block holds this content already */
	kv->hash[block] = hash;
	kv->n_cached++;
	map_put(kv, hash, block);
}

void lsim_kv_set_private_hash(struct lsim_kvcache *kv, int32_t block,
			      uint64_t hash)
{
	if (!kv->prefix_caching || !hash || kv->hash[block])
		return;
	kv->hash[block] = hash;
	kv->priv[block] = true;
	kv->n_cached++;
}

/* Maps a private hash, as lsim_kv_set_hash would have when it was set;
 * content some other block holds already (a 64-bit collision) is dropped,
 * as lsim_kv_set_hash drops it. */
static void publish(struct lsim_kvcache *kv, int32_t b)
{
	kv->priv[b] = false;
	if (map_find(kv, kv->hash[b]) >= 0) {
		kv->hash[b] = 0;
		kv->n_cached--;
		return;
	}
	map_put(kv, kv->hash[b], b);
}

static void release(struct lsim_kvcache *kv, const int32_t *blocks,
		    int32_t n, bool final)
{
	for (int32_t i = n - 1; i >= 0; i--) {
		int32_t b = blocks[i];
		kv->refs--;
		if (--kv->ref[b] == 0) {
			if (kv->priv[b] && !final)
				publish(kv, b);
			free_append(kv, b);
		}
	}
}

void lsim_kv_release(struct lsim_kvcache *kv, const int32_t *blocks,
		     int32_t n)
{
	release(kv, blocks, n, false);
}

void lsim_kv_release_final(struct lsim_kvcache *kv, const int32_t *blocks,
			   int32_t n)
{
	release(kv, blocks, n, true);
}
