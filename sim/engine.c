/*
 * engine.c - the discrete-event engine: a radix heap of pending events
 * ordered by (time, sequence number), a pool of slots behind the handles,
 * cancel and reschedule by lazy deletion, and the run loop with its time
 * limit, early stop and periodic callback. Semantics are in
 * include/llmsim/engine.h; docs/engine.md explains and measures the design.
 *
 * Radix heap. An event's key is the 96-bit number time:seq. Keys only grow:
 * a new event is never earlier than now and its sequence number is the
 * largest yet, so every new key is larger than `last`, the key of the event
 * fired last. That makes a radix heap exact. The key is read as 12 digits
 * of 8 bits; a pending key sits in bucket (L, d), where L is the highest
 * digit in which it differs from last and d is its own digit there. Every
 * key of a lower level, or of a lower digit on the same level, is smaller,
 * so the earliest event is in the lowest non-empty bucket, found from bit
 * masks with count-trailing-zeros. Firing it makes it `last`, and the rest
 * of its bucket moves down to lower levels. A key moves down a few times
 * in its life (1.7 times per event in the hold benchmark at 10^4 pending),
 * each move an append: no comparisons along a path, no mispredicted
 * branches, sequential memory.
 *
 * Entries carry what the event does (handler, subject, arg), so firing
 * touches only the bucket. Slots give handles their meaning:
 *   - st[s]: the slot's generation, whether an event lives in it, the
 *     sequence number of its current entry, and a copy of what the event
 *     does, for reschedule;
 *   - a handle is (generation << 32) | slot; the generation is bumped when
 *     a slot is handed out again, so an old handle never matches the slot's
 *     next occupant; generations start at 1, so no valid handle is 0;
 *   - entries carry their slot's generation, and freed slots go on a
 *     stack with theirs, so firing an event and scheduling the next one
 *     only store to st[] (the fired event's slot is anywhere in it: a
 *     load there would wait for memory). The stack is last freed, first
 *     reused, and arrays grow by doubling: a steady state allocates
 *     nothing.
 *
 * Lazy deletion: cancel frees the slot and leaves its entry behind;
 * reschedule adds a new entry and records its sequence number in st[]. An
 * entry whose slot is free or whose sequence number is no longer the slot's
 * is stale; stale entries are dropped when their bucket is next scanned, and
 * all at once when they outnumber the live ones. While there are none, no
 * entry is checked.
 *
 * Sequence numbers are 32 bits. Before the counter would pass its limit,
 * the live entries are sorted by (time, seq) and renumbered from 0, which
 * keeps their order (once per 4 billion schedules).
 *
 * Out of memory inside the engine (a bucket that cannot grow while the
 * earliest event is taken) leaves the buckets out of order, so the engine
 * then refuses to run: lsim_engine_error() says so (engine_internal.h).
 */
#include "llmsim/engine.h"

#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

#define N_LEVELS 12 /* 8-bit digits of the 96-bit key */
#define N_BUCKETS (N_LEVELS * 256)
#define NO_SLOT UINT32_MAX
#define MAX_SLOTS (UINT32_MAX - 1u)

/* What an event does. */
struct event_rec {
	lsim_handler fn;
	void *subject;
	uint64_t arg;
};

struct entry {
	lsim_time t;
	uint32_t seq;
	uint32_t slot;
	uint32_t gen; /* the slot's generation while this entry is its event */
	struct event_rec rec;
};

struct bucket {
	struct entry *e;
	uint32_t n;
	uint32_t cap;
};

struct slot_state {
	uint32_t gen;
	uint32_t seq;  /* sequence number of the slot's live entry */
	bool live;     /* an event is pending in this slot */
	struct event_rec rec; /* a copy of the entry's, for reschedule */
};

/* A free slot and its generation (so reusing it reads nothing else). */
struct free_slot {
	uint32_t slot;
	uint32_t gen;
};

struct lsim_engine {
	struct bucket b[N_BUCKETS];
	uint64_t digits[N_LEVELS][4]; /* bit d of level L: bucket (L, d) in use */
	uint32_t levels;    /* bit L: level L has a bucket in use */
	lsim_time last_t;   /* key of the event fired last */
	uint32_t last_seq;
	uint32_t n_live;    /* pending events */
	uint32_t n_stale;   /* stale entries still in buckets */
	struct slot_state *st;
	struct free_slot *free; /* stack of free slots, last freed on top */
	uint32_t n_free;
	uint32_t n_slots;   /* slots ever handed out: st[0 .. n_slots) */
	uint32_t cap;       /* capacity of st[] and free[] */
	bool stopped;
	bool running;
	bool failed;        /* out of memory inside the engine: runs no more */
	lsim_time now;
	uint32_t seq;       /* next sequence number */
	uint32_t seq_limit; /* renumber before seq reaches this */
	uint64_t processed;
	lsim_time period;
	bool has_sample;       /* a periodic callback is set and not past */
	lsim_time next_sample; /* the time of its next call */
	lsim_periodic_fn periodic;
	void *periodic_ctx;
};

static inline bool stale(const struct lsim_engine *eng, const struct entry *e)
{
	const struct slot_state *st = &eng->st[e->slot];
	return !st->live || st->seq != e->seq;
}

static inline bool before(const struct entry *a, const struct entry *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

/*
 * The bucket of key time:seq relative to last, as L * 256 + d. Digits 0 to
 * 3 are seq, 4 to 11 the time (never negative, so its bits order like the
 * number). Only a key equal to last would land in bucket 0; a new key never
 * does, and after renumbering only the earliest can.
 */
static inline unsigned bucket_of(const struct lsim_engine *eng, lsim_time t,
				 uint32_t seq)
{
	uint64_t dt = (uint64_t)t ^ (uint64_t)eng->last_t;
	if (dt) {
		unsigned level = (63u - (unsigned)__builtin_clzll(dt)) / 8u;
		unsigned digit = (unsigned)((uint64_t)t >> (8u * level)) & 255u;
		return (4u + level) * 256u + digit;
	}
	uint32_t ds = seq ^ eng->last_seq;
	unsigned level = ds ? (31u - (unsigned)__builtin_clz(ds)) / 8u : 0u;
	return level * 256u + ((seq >> (8u * level)) & 255u);
}

static inline void mark(struct lsim_engine *eng, unsigned k)
{
	unsigned level = k / 256u, digit = k % 256u;
	eng->digits[level][digit / 64u] |= 1ull << (digit % 64u);
	eng->levels |= 1u << level;
}

static inline void unmark(struct lsim_engine *eng, unsigned k)
{
	unsigned level = k / 256u, digit = k % 256u;
	uint64_t *w = eng->digits[level];
	w[digit / 64u] &= ~(1ull << (digit % 64u));
	if (!(w[0] | w[1] | w[2] | w[3]))
		eng->levels &= ~(1u << level);
}

/* The lowest bucket in use, or N_BUCKETS when all are empty. */
static inline unsigned lowest(const struct lsim_engine *eng)
{
	if (!eng->levels)
		return N_BUCKETS;
	unsigned level = (unsigned)__builtin_ctz(eng->levels);
	const uint64_t *w = eng->digits[level];
	unsigned i = 0;
	while (!w[i])
		i++;
	return level * 256u + i * 64u + (unsigned)__builtin_ctzll(w[i]);
}

/* Grows bucket bk (full) by doubling. */
static bool grow_bucket(struct bucket *bk)
{
	uint64_t want = bk->cap ? (uint64_t)bk->cap * 2u : 8u;
	if (want > UINT32_MAX)
		return false;
	struct entry *e = realloc(bk->e, (size_t)want * sizeof *e);
	if (!e)
		return false;
	bk->e = e;
	bk->cap = (uint32_t)want;
	return true;
}

/* Makes room for one more entry in bucket k. */
static inline bool reserve(struct lsim_engine *eng, unsigned k)
{
	struct bucket *bk = &eng->b[k];
	return bk->n < bk->cap || grow_bucket(bk);
}

/* Appends e to bucket k, which has room. */
static inline void append(struct lsim_engine *eng, unsigned k,
			  const struct entry *e)
{
	struct bucket *bk = &eng->b[k];
	if (!bk->n)
		mark(eng, k);
	bk->e[bk->n++] = *e;
}

/* Drops the stale entries of bucket k; returns how many are left. */
static uint32_t sweep_bucket(struct lsim_engine *eng, unsigned k)
{
	struct bucket *bk = &eng->b[k];
	uint32_t n = 0;
	for (uint32_t i = 0; i < bk->n; i++)
		if (!stale(eng, &bk->e[i]))
			bk->e[n++] = bk->e[i];
	eng->n_stale -= bk->n - n;
	bk->n = n;
	if (!n)
		unmark(eng, k);
	return n;
}

/*
 * Finds the earliest pending event without changing the order: returns
 * its bucket and sets *at to its index there, or returns N_BUCKETS when
 * nothing is pending. Stale entries met on the way are dropped.
 */
static unsigned find_min(struct lsim_engine *eng, uint32_t *at)
{
	for (;;) {
		unsigned k = lowest(eng);
		if (k == N_BUCKETS)
			return k;
		if (eng->n_stale && !sweep_bucket(eng, k))
			continue;
		const struct bucket *bk = &eng->b[k];
		uint32_t m = 0;
		for (uint32_t i = 1; i < bk->n; i++)
			if (before(&bk->e[i], &bk->e[m]))
				m = i;
		*at = m;
		return k;
	}
}

/*
 * Removes the entry at index i of bucket k (found by find_min, so the
 * earliest), makes it `last`, and moves the rest of bucket k down.
 */
static void take_min(struct lsim_engine *eng, unsigned k, uint32_t i,
		     struct entry *min)
{
	struct bucket *bk = &eng->b[k];
	*min = bk->e[i];
	bk->e[i] = bk->e[--bk->n];
	eng->last_t = min->t;
	eng->last_seq = min->seq;
	while (bk->n) {
		const struct entry *e = &bk->e[bk->n - 1];
		unsigned d = bucket_of(eng, e->t, e->seq);
		if (!reserve(eng, d)) {
			eng->failed = true;
			return;
		}
		append(eng, d, e);
		bk->n--;
	}
	unmark(eng, k);
}

static int by_key(const void *pa, const void *pb)
{
	const struct entry *a = pa, *b = pb;
	return before(a, b) ? -1 : before(b, a);
}

/*
 * Renumbers the live entries 0, 1, ... in (time, seq) order and rebuilds
 * the buckets around last = (now, 0): every pending key is at or after it,
 * every later key after it. Out of memory marks the engine failed.
 */
static int renumber(struct lsim_engine *eng)
{
	struct entry *all = malloc(((size_t)eng->n_live + 1) * sizeof *all);
	if (!all) {
		eng->failed = true;
		return LSIM_ENOMEM;
	}
	uint32_t n = 0;
	for (unsigned k = 0; k < N_BUCKETS; k++) {
		struct bucket *bk = &eng->b[k];
		for (uint32_t i = 0; i < bk->n; i++)
			if (!stale(eng, &bk->e[i]))
				all[n++] = bk->e[i];
		bk->n = 0;
	}
	memset(eng->digits, 0, sizeof eng->digits);
	eng->levels = 0;
	eng->n_stale = 0;
	qsort(all, n, sizeof *all, by_key);
	eng->last_t = eng->now;
	eng->last_seq = 0;
	int rc = 0;
	for (uint32_t i = 0; i < n; i++) {
		all[i].seq = i;
		eng->st[all[i].slot].seq = i;
		unsigned k = bucket_of(eng, all[i].t, i);
		if (!reserve(eng, k)) {
			eng->failed = true;
			rc = LSIM_ENOMEM;
			break;
		}
		append(eng, k, &all[i]);
	}
	free(all);
	eng->seq = n;
	return rc;
}

/* Drops every stale entry. */
static void compact(struct lsim_engine *eng)
{
	for (unsigned k = 0; k < N_BUCKETS; k++)
		if (eng->b[k].n)
			sweep_bucket(eng, k);
}

/* One more stale entry; drops them all when they are the majority. */
static void add_stale(struct lsim_engine *eng)
{
	eng->n_stale++;
	if (eng->n_stale > 64 && eng->n_stale > eng->n_live)
		compact(eng);
}

/* Releases slot s of generation gen (its event fired or was cancelled).
 * Stores only: the slot of a fired event is anywhere in st[]. */
static inline void free_slot(struct lsim_engine *eng, uint32_t s,
			     uint32_t gen)
{
	eng->st[s].live = false;
	eng->free[eng->n_free++] = (struct free_slot){s, gen};
}

static bool grow_slots(struct lsim_engine *eng)
{
	if (eng->cap >= MAX_SLOTS)
		return false;
	uint64_t want = eng->cap ? (uint64_t)eng->cap * 2u : 64u;
	if (want > MAX_SLOTS)
		want = MAX_SLOTS;
	struct slot_state *st = realloc(eng->st, (size_t)want * sizeof *st);
	if (!st)
		return false;
	eng->st = st;
	struct free_slot *f = realloc(eng->free, (size_t)want * sizeof *f);
	if (!f)
		return false; /* st[] is larger than cap: harmless */
	eng->free = f;
	eng->cap = (uint32_t)want;
	return true;
}

/* Hands out a slot and sets *gen to its new generation; NO_SLOT when
 * memory ran out. */
static inline uint32_t alloc_slot(struct lsim_engine *eng, uint32_t *gen)
{
	if (eng->n_free) {
		struct free_slot f = eng->free[--eng->n_free];
		*gen = f.gen == UINT32_MAX ? 1u : f.gen + 1u;
		return f.slot;
	}
	if (eng->n_slots == eng->cap && !grow_slots(eng))
		return NO_SLOT;
	*gen = 1;
	return eng->n_slots++;
}

/* The slot of a live handle, or NO_SLOT. */
static uint32_t lookup(const struct lsim_engine *eng, lsim_event_id id)
{
	if (!eng)
		return NO_SLOT;
	uint32_t slot = (uint32_t)(id & 0xffffffffu);
	uint32_t gen = (uint32_t)(id >> 32);
	if (slot >= eng->n_slots)
		return NO_SLOT;
	const struct slot_state *st = &eng->st[slot];
	if (st->gen != gen || !st->live)
		return NO_SLOT;
	return slot;
}

/*
 * Prepares a new entry at time at: clamps it to now (*t), renumbers first if
 * sequence numbers ran out, and makes room in its bucket (*k). Returns 0 or
 * LSIM_ENOMEM.
 */
static inline int prepare(struct lsim_engine *eng, lsim_time at, lsim_time *t,
		   unsigned *k)
{
	if (eng->failed)
		return LSIM_ENOMEM;
	if (eng->seq >= eng->seq_limit && renumber(eng))
		return LSIM_ENOMEM;
	*t = at < eng->now ? eng->now : at;
	*k = bucket_of(eng, *t, eng->seq);
	return reserve(eng, *k) ? 0 : LSIM_ENOMEM;
}

/* Adds the prepared entry (time t, bucket k) as the live event of slot s,
 * whose generation is gen. Fields are stored in place: an entry built on
 * the stack and copied would be read back before its parts are written. */
static inline void push(struct lsim_engine *eng, lsim_time t, unsigned k, uint32_t s,
		 uint32_t gen, lsim_handler fn, void *subject, uint64_t arg)
{
	uint32_t seq = eng->seq++;
	struct slot_state *st = &eng->st[s];
	st->gen = gen;
	st->seq = seq;
	st->live = true;
	st->rec.fn = fn;
	st->rec.subject = subject;
	st->rec.arg = arg;
	eng->n_live++;
	struct bucket *bk = &eng->b[k];
	if (!bk->n)
		mark(eng, k);
	struct entry *e = &bk->e[bk->n++];
	e->t = t;
	e->seq = seq;
	e->slot = s;
	e->gen = gen;
	e->rec.fn = fn;
	e->rec.subject = subject;
	e->rec.arg = arg;
}

void lsim_engine_set_seq_limit(struct lsim_engine *eng, uint32_t limit)
{
	if (eng)
		eng->seq_limit = limit;
}

int lsim_engine_error(const struct lsim_engine *eng)
{
	return eng && eng->failed ? LSIM_ENOMEM : 0;
}

struct lsim_engine *lsim_engine_create(void)
{
	struct lsim_engine *eng = calloc(1, sizeof *eng);
	if (!eng)
		return NULL;
	eng->seq_limit = UINT32_MAX;
	return eng;
}

void lsim_engine_destroy(struct lsim_engine *eng)
{
	if (!eng)
		return;
	for (unsigned k = 0; k < N_BUCKETS; k++)
		free(eng->b[k].e);
	free(eng->st);
	free(eng->free);
	free(eng);
}

lsim_event_id lsim_schedule(struct lsim_engine *eng, lsim_time at,
			    lsim_handler fn, void *subject, uint64_t arg)
{
	if (!eng || !fn)
		return 0;
	lsim_time t;
	unsigned k;
	if (prepare(eng, at, &t, &k))
		return 0;
	uint32_t gen;
	uint32_t s = alloc_slot(eng, &gen);
	if (s == NO_SLOT)
		return 0;
	push(eng, t, k, s, gen, fn, subject, arg);
	return ((uint64_t)gen << 32) | s;
}

lsim_event_id lsim_schedule_in(struct lsim_engine *eng, lsim_time delay,
			       lsim_handler fn, void *subject, uint64_t arg)
{
	if (!eng)
		return 0;
	lsim_time at;
	if (delay <= 0)
		at = eng->now;
	else if (eng->now > LSIM_TIME_MAX - delay)
		at = LSIM_TIME_MAX;
	else
		at = eng->now + delay;
	return lsim_schedule(eng, at, fn, subject, arg);
}

int lsim_cancel(struct lsim_engine *eng, lsim_event_id id)
{
	uint32_t s = lookup(eng, id);
	if (s == NO_SLOT)
		return LSIM_ESTATE;
	free_slot(eng, s, eng->st[s].gen);
	eng->n_live--;
	add_stale(eng);
	return 0;
}

int lsim_reschedule(struct lsim_engine *eng, lsim_event_id id, lsim_time at)
{
	uint32_t s = lookup(eng, id);
	if (s == NO_SLOT)
		return LSIM_ESTATE;
	lsim_time t;
	unsigned k;
	if (prepare(eng, at, &t, &k))
		return LSIM_ENOMEM;
	struct event_rec r = eng->st[s].rec;
	eng->n_live--; /* the old entry goes stale, the new one is live */
	push(eng, t, k, s, eng->st[s].gen, r.fn, r.subject, r.arg);
	add_stale(eng);
	return 0;
}

bool lsim_event_pending(const struct lsim_engine *eng, lsim_event_id id)
{
	return lookup(eng, id) != NO_SLOT;
}

lsim_time lsim_now(const struct lsim_engine *eng)
{
	return eng ? eng->now : 0;
}

size_t lsim_pending(const struct lsim_engine *eng)
{
	if (!eng)
		return 0;
	return eng->n_live;
}

uint64_t lsim_events_processed(const struct lsim_engine *eng)
{
	return eng ? eng->processed : 0;
}

/* Sets the next sample to the first multiple of the period strictly after
 * t; none if that is beyond the range of lsim_time. */
static void next_sample_after(struct lsim_engine *eng, lsim_time t)
{
	lsim_time k = t < 0 ? 0 : t / eng->period;
	if (k >= LSIM_TIME_MAX / eng->period) {
		eng->has_sample = false;
		return;
	}
	eng->has_sample = true;
	eng->next_sample = (k + 1) * eng->period;
}

void lsim_set_periodic(struct lsim_engine *eng, lsim_time period,
		       lsim_periodic_fn fn, void *ctx)
{
	if (!eng)
		return;
	if (period <= 0 || !fn) {
		eng->period = 0;
		eng->periodic = NULL;
		eng->periodic_ctx = NULL;
		eng->has_sample = false;
		return;
	}
	eng->period = period;
	eng->periodic = fn;
	eng->periodic_ctx = ctx;
	next_sample_after(eng, eng->now);
}

/* Not re-entrant: a call from inside a handler returns 0 at once. */
uint64_t lsim_run(struct lsim_engine *eng, lsim_time until)
{
	if (!eng || eng->running || eng->failed)
		return 0;
	eng->running = true;
	eng->stopped = false;
	uint64_t count = 0;
	while (!eng->stopped && !eng->failed) {
		uint32_t at;
		unsigned k = find_min(eng, &at);
		if (k == N_BUCKETS)
			break;
		lsim_time t = eng->b[k].e[at].t;
		/* A sample falls due when the clock reaches it with work still
		 * pending at or after it; it precedes events at its own time. */
		if (eng->has_sample && eng->next_sample <= t &&
		    eng->next_sample <= until) {
			eng->now = eng->next_sample;
			next_sample_after(eng, eng->now);
			eng->periodic(eng, eng->periodic_ctx);
			continue;
		}
		if (t > until)
			break;
		struct entry e;
		take_min(eng, k, at, &e);
		free_slot(eng, e.slot, e.gen);
		eng->n_live--;
		eng->now = t;
		count++;
		eng->processed++;
		e.rec.fn(eng, e.rec.subject, e.rec.arg);
	}
	if (!eng->stopped && eng->n_live > 0 && until > eng->now)
		eng->now = until;
	eng->running = false;
	return count;
}

void lsim_stop(struct lsim_engine *eng)
{
	if (eng)
		eng->stopped = true;
}
