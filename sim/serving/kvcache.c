/*
 * kvcache.c - paged KV block pool: reference counts, an LRU free queue, and
 * an open-addressing hash map from content hash to block for prefix
 * caching.
 *
 * The free queue: what the order of free blocks decides is which content
 * is evicted when, so only blocks whose content can still be found need a
 * place of their own in it. A ring of entries in the queue's order holds
 * those blocks by id; every other free block (no hash, or a private one
 * released for good) is an anonymous entry, and such blocks wait on a
 * stack instead. Taking the queue's head gives the block an id entry names
 * (its content evicted), or for an anonymous entry the block on top of the
 * stack: the most recently freed, still in the cache, where a queue of ids
 * walks through every block of the pool in turn (tens of MB for a fleet,
 * a cache miss per block). Which content is found, evicted and counted
 * when is exactly as with one queue of ids; only the ids of content-free
 * blocks differ. A block taken out of the middle (a prefix hit on a free
 * block) leaves its entry behind, recognised as stale by a generation
 * count; the ring is compacted when full.
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
 *
 * Anonymous blocks: a holder whose block has no content anyone can find
 * (a fresh block, or one with private content) need not know which block
 * it is. lsim_kv_alloc_anon hands out such blocks by count: the holder
 * lists them as LSIM_KV_ANON (or LSIM_KV_ANON_PRIV once full of private
 * content), and only a block that gets content others may find is given
 * an id (lsim_kv_set_hash_anon, lsim_kv_name_private). The ids of
 * anonymous blocks, held or free, wait on the stack; runs of anonymous
 * entries in the queue are one entry with a count. A request that shares
 * nothing then costs the cache a few operations, not a few per block.
 */
#include <stdlib.h>

#include "serving/kvcache.h"

struct lsim_kvcache {
	int32_t n;
	int32_t n_free;
	int32_t n_cached;
	int64_t refs;	/* sum of the reference counts, anonymous ones included */
	bool prefix_caching;
	int32_t *ref;
	uint64_t *hash;
	bool *priv;	      /* hash set but private: not in the map */
	bool *in_free;	      /* free, in the queue by id */
	uint32_t *gen;	      /* of the block's id entry in the ring */
	/* the free queue: ring[head .. tail) (mod cap), head = next to reuse */
	uint64_t *ring;
	uint64_t cap, head, tail;
	int32_t *stack;	      /* the ids of anonymous blocks, free or held */
	int32_t n_stack;
	/* map: hash -> block; key 0 = empty slot */
	uint64_t *map_key;
	int32_t *map_val;
	uint64_t map_mask;
	/* told of each findable content evicted (NULL: nobody) */
	void (*on_evict)(void *ctx, uint64_t hash);
	void *evict_ctx;
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

/* Ring entries: a block id with its generation (bit 63 clear), or a run
 * of anonymous entries: bit 63 set, bit 62 if their blocks had a
 * (private) hash, the run's length in the low 32 bits. */
#define ANON_RUN (1ULL << 63)
#define ANON_HASHED (1ULL << 62)
#define GEN_MASK 0x7fffffffU

static uint64_t id_entry(const struct lsim_kvcache *kv, int32_t b)
{
	return (uint64_t)(kv->gen[b] & GEN_MASK) << 32 | (uint32_t)b;
}

/* A block id entry whose block has left the queue since (or came back
 * with a new entry). */
static bool stale(const struct lsim_kvcache *kv, uint64_t e)
{
	int32_t b = (int32_t)(uint32_t)e;
	return !kv->in_free[b] || e != id_entry(kv, b);
}

/* Drops stale entries; the queue keeps its order. */
static void compact(struct lsim_kvcache *kv)
{
	uint64_t to = kv->head;
	for (uint64_t i = kv->head; i != kv->tail; i++) {
		uint64_t e = kv->ring[i & (kv->cap - 1)];
		if ((e & ANON_RUN) || !stale(kv, e))
			kv->ring[to++ & (kv->cap - 1)] = e;
	}
	kv->tail = to;
}

/* Appends an entry; a ring of twice the pool always has room once the
 * stale entries are gone (at most one live entry a free block). */
static void push(struct lsim_kvcache *kv, uint64_t e)
{
	if (kv->tail - kv->head == kv->cap)
		compact(kv);
	kv->ring[kv->tail++ & (kv->cap - 1)] = e;
}

/* n anonymous free blocks join the queue's tail (hashed: they held
 * private content, which counts as cached until their turn). */
static void push_anon(struct lsim_kvcache *kv, bool hashed, int32_t n)
{
	uint64_t kind = ANON_RUN | (hashed ? ANON_HASHED : 0);
	kv->n_free += n;
	if (kv->tail != kv->head) {
		uint64_t *last = &kv->ring[(kv->tail - 1) & (kv->cap - 1)];
		if ((*last & ~(uint64_t)UINT32_MAX) == kind) {
			*last += (uint64_t)n; /* runs stay under 2^31 */
			return;
		}
	}
	push(kv, kind | (uint32_t)n);
}

/* Free block b joins the queue's tail. */
static void free_append(struct lsim_kvcache *kv, int32_t b)
{
	if (kv->hash[b] && !kv->priv[b]) { /* findable: in the queue by id */
		kv->in_free[b] = true;
		kv->gen[b]++;
		push(kv, id_entry(kv, b));
		kv->n_free++;
		return;
	}
	/* nothing to find in it: any such block will do when its turn comes */
	bool hashed = kv->hash[b] != 0;
	kv->hash[b] = 0;
	kv->priv[b] = false;
	kv->stack[kv->n_stack++] = b;
	push_anon(kv, hashed, 1);
}

/* A findable free block taken by a prefix hit: its entry goes stale. */
static void free_remove(struct lsim_kvcache *kv, int32_t b)
{
	kv->in_free[b] = false;
	kv->n_free--;
}

/* Takes up to n blocks from the queue's head (n_free >= n > 0): a block
 * whose content is evicted (its id returned, out of the queue), or
 * anonymous ones, as many as the head's run has (-1, *got of them). */
static int32_t take_head(struct lsim_kvcache *kv, int32_t n, int32_t *got)
{
	for (;;) {
		uint64_t *e = &kv->ring[kv->head & (kv->cap - 1)];
		if (*e & ANON_RUN) {
			int32_t run = (int32_t)(uint32_t)*e;
			int32_t k = run < n ? run : n;
			if (*e & ANON_HASHED)
				kv->n_cached -= k;
			*e -= (uint64_t)k;
			if (k == run)
				kv->head++;
			kv->n_free -= k;
			*got = k;
			return -1;
		}
		kv->head++;
		if (stale(kv, *e))
			continue;
		int32_t b = (int32_t)(uint32_t)*e; /* its content is evicted */
		int64_t s = map_find(kv, kv->hash[b]);
		if (s >= 0 && kv->map_val[s] == b) {
			map_del(kv, (uint64_t)s);
			if (kv->on_evict)
				kv->on_evict(kv->evict_ctx, kv->hash[b]);
		}
		kv->hash[b] = 0;
		kv->n_cached--;
		free_remove(kv, b);
		*got = 1;
		return b;
	}
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
	kv->in_free = calloc(n, sizeof *kv->in_free);
	kv->gen = calloc(n, sizeof *kv->gen);
	kv->cap = 2;
	while (kv->cap < 2 * (uint64_t)n)
		kv->cap <<= 1;
	kv->ring = malloc(kv->cap * sizeof *kv->ring);
	kv->stack = malloc(n * sizeof *kv->stack);
	kv->map_key = calloc(cap, sizeof *kv->map_key);
	kv->map_val = calloc(cap, sizeof *kv->map_val);
	if (!kv->ref || !kv->hash || !kv->priv || !kv->in_free || !kv->gen || !kv->ring ||
	    !kv->stack || !kv->map_key || !kv->map_val) {
		lsim_kv_destroy(kv);
		return NULL;
	}
	for (int32_t b = n_blocks - 1; b >= 0; b--) /* block 0 on top */
		kv->stack[kv->n_stack++] = b;
	push_anon(kv, false, n_blocks);
	return kv;
}

void lsim_kv_on_evict(struct lsim_kvcache *kv, void (*fn)(void *ctx, uint64_t hash),
		      void *ctx)
{
	kv->on_evict = fn;
	kv->evict_ctx = ctx;
}

void lsim_kv_destroy(struct lsim_kvcache *kv)
{
	if (!kv)
		return;
	free(kv->ref);
	free(kv->hash);
	free(kv->priv);
	free(kv->in_free);
	free(kv->gen);
	free(kv->ring);
	free(kv->stack);
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
	if (kv->n_free == 0)
		return -1;
	int32_t got;
	int32_t b = take_head(kv, 1, &got);
	if (b < 0)
		b = kv->stack[--kv->n_stack];
	kv->ref[b] = 1;
	kv->refs++;
	return b;
}

bool lsim_kv_alloc_anon(struct lsim_kvcache *kv, int32_t n)
{
	if (n > kv->n_free)
		return false;
	for (int32_t left = n; left > 0;) {
		int32_t got;
		int32_t b = take_head(kv, left, &got);
		if (b >= 0) /* evicted, and anonymous from now on */
			kv->stack[kv->n_stack++] = b;
		left -= got;
	}
	kv->refs += n;
	return true;
}

/* Names one of the anonymous blocks held: takes an id off the stack. */
static int32_t name_anon(struct lsim_kvcache *kv)
{
	int32_t b = kv->stack[--kv->n_stack];
	kv->ref[b] = 1;
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

int32_t lsim_kv_set_hash_anon(struct lsim_kvcache *kv, uint64_t hash)
{
	if (!kv->prefix_caching || !hash || map_find(kv, hash) >= 0)
		return LSIM_KV_ANON; /* nothing to map, or mapped already */
	int32_t b = name_anon(kv);
	kv->hash[b] = hash;
	kv->n_cached++;
	map_put(kv, hash, b);
	return b;
}

void lsim_kv_mark_private(struct lsim_kvcache *kv, int32_t n)
{
	if (kv->prefix_caching)
		kv->n_cached += n;
}

int32_t lsim_kv_name_private(struct lsim_kvcache *kv, uint64_t hash)
{
	int32_t b = name_anon(kv);
	if (kv->prefix_caching) {
		kv->hash[b] = hash;
		kv->priv[b] = true;
	}
	return b;
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
	kv->refs -= n;
	for (int32_t i = n - 1; i >= 0; i--) {
		int32_t b = blocks[i];
		if (b < 0) { /* anonymous: the stack keeps its id */
			push_anon(kv, b == LSIM_KV_ANON_PRIV && kv->prefix_caching, 1);
			continue;
		}
		if (--kv->ref[b] == 0) {
			if (kv->priv[b] && !final)
				publish(kv, b);
			free_append(kv, b);
		}
	}
}

void lsim_kv_release_anon(struct lsim_kvcache *kv, int32_t n_plain, int32_t n_priv)
{
	kv->refs -= n_plain + n_priv;
	if (n_plain > 0)
		push_anon(kv, false, n_plain);
	if (n_priv > 0)
		push_anon(kv, kv->prefix_caching, n_priv);
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
