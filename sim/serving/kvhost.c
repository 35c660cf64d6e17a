/*
 * kvhost.c - the host-memory KV tier: an open-addressing map from content
 * hash to slot (backward-shift deletion, as kvcache.c's) and a doubly
 * linked LRU list over the slots. Everything is allocated at creation:
 * storing and matching never allocate.
 */
#include <stdlib.h>

#include "serving/kvhost.h"

struct lsim_kvhost {
	int64_t cap, len;
	uint64_t *hash;	     /* per slot */
	int64_t *prev, *next; /* LRU list: head the most recent, -1 ends */
	int64_t head, tail;
	uint64_t *map_key;   /* 0: empty */
	int64_t *map_val;
	uint64_t map_mask;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static int64_t find(const struct lsim_kvhost *h, uint64_t key)
{
	uint64_t i = mix(key) & h->map_mask;
	while (h->map_key[i]) {
		if (h->map_key[i] == key)
			return (int64_t)i;
		i = (i + 1) & h->map_mask;
	}
	return -1;
}

static void map_del(struct lsim_kvhost *h, uint64_t slot)
{
	uint64_t i = slot, j = slot;
	for (;;) {
		j = (j + 1) & h->map_mask;
		if (!h->map_key[j])
			break;
		uint64_t home = mix(h->map_key[j]) & h->map_mask;
		bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (!in_range) {
			h->map_key[i] = h->map_key[j];
			h->map_val[i] = h->map_val[j];
			i = j;
		}
	}
	h->map_key[i] = 0;
}

struct lsim_kvhost *lsim_kvhost_create(int64_t cap)
{
	if (cap < 1)
		return NULL;
	struct lsim_kvhost *h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	uint64_t m = 16;
	while (m < 2 * (uint64_t)cap)
		m <<= 1;
	h->cap = cap;
	h->map_mask = m - 1;
	h->head = h->tail = -1;
	h->hash = malloc((size_t)cap * sizeof *h->hash);
	h->prev = malloc((size_t)cap * sizeof *h->prev);
	h->next = malloc((size_t)cap * sizeof *h->next);
	h->map_key = calloc(m, sizeof *h->map_key);
	h->map_val = calloc(m, sizeof *h->map_val);
	if (!h->hash || !h->prev || !h->next || !h->map_key || !h->map_val) {
		lsim_kvhost_destroy(h);
		return NULL;
	}
	return h;
}

void lsim_kvhost_destroy(struct lsim_kvhost *h)
{
	if (!h)
		return;
	free(h->hash);
	free(h->prev);
	free(h->next);
	free(h->map_key);
	free(h->map_val);
	free(h);
}

static void unlink_slot(struct lsim_kvhost *h, int64_t s)
{
	if (h->prev[s] >= 0)
		h->next[h->prev[s]] = h->next[s];
	else
		h->head = h->next[s];
	if (h->next[s] >= 0)
		h->prev[h->next[s]] = h->prev[s];
	else
		h->tail = h->prev[s];
}

static void push_front(struct lsim_kvhost *h, int64_t s)
{
	h->prev[s] = -1;
	h->next[s] = h->head;
	if (h->head >= 0)
		h->prev[h->head] = s;
	h->head = s;
	if (h->tail < 0)
		h->tail = s;
}

bool lsim_kvhost_put(struct lsim_kvhost *h, uint64_t hash)
{
	int64_t m = find(h, hash);
	if (m >= 0) {
		int64_t s = h->map_val[m];
		unlink_slot(h, s);
		push_front(h, s);
		return false;
	}
	int64_t s;
	if (h->len < h->cap) {
		s = h->len++;
	} else { /* the least recently used block makes room */
		s = h->tail;
		unlink_slot(h, s);
		map_del(h, (uint64_t)find(h, h->hash[s]));
	}
	h->hash[s] = hash;
	push_front(h, s);
	uint64_t i = mix(hash) & h->map_mask;
	while (h->map_key[i])
		i = (i + 1) & h->map_mask;
	h->map_key[i] = hash;
	h->map_val[i] = s;
	return true;
}

int32_t lsim_kvhost_match(const struct lsim_kvhost *h, const uint64_t *hashes, int32_t n)
{
	int32_t got = 0;
	while (got < n && find(h, hashes[got]) >= 0)
		got++;
	return got;
}

void lsim_kvhost_touch(struct lsim_kvhost *h, const uint64_t *hashes, int32_t n)
{
	/* the first block ends up the most recent: a prefix's later blocks
	 * go before its first, as a GPU cache frees a request's tail first */
	for (int32_t i = n - 1; i >= 0; i--) {
		int64_t m = find(h, hashes[i]);
		if (m < 0)
			continue;
		int64_t s = h->map_val[m];
		unlink_slot(h, s);
		push_front(h, s);
	}
}

int64_t lsim_kvhost_len(const struct lsim_kvhost *h)
{
	return h->len;
}

int64_t lsim_kvhost_cap(const struct lsim_kvhost *h)
{
	return h->cap;
}
