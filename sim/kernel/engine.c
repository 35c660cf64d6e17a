/*
 * engine.c - the discrete-event engine: a pool of event records, an indexed
 * d-ary min-heap (d = ARITY, 2 by measurement) ordered by (time, sequence
 * number) over that pool, handle based cancel and reschedule, and the run
 * loop with its time limit, early stop and periodic callback. Semantics are
 * in include/llmsim/engine.h and docs/engine.md.
 *
 * Data layout:
 *   - heap[]: the heap proper. Each entry carries the hot fields (time,
 *     sequence number, slot) so comparisons touch only this array;
 *   - slots[]: per pool slot, one 64-byte record: what the event does
 *     (handler, subject, arg; a free slot's arg links the free list), the
 *     generation, the entry's heap position, and its time, sequence number
 *     and links while it waits in a bucket or the far list (below). Taking
 *     an event out of a bucket, firing it and freeing its slot thus touch
 *     one record, not three arrays (split three ways, the hold benchmark
 *     ran 10% slower at 10^4 pending and 30% slower at 10^6).
 *   - A handle is (generation << 32) | slot. The generation of a slot is
 *     bumped whenever its event fires or is cancelled, so an old handle never
 *     matches the slot's next occupant. Generations start at 1, so no valid
 *     handle is 0.
 *   - The arrays (and the bucket heads, two per slot) grow together,
 *     doubling, with realloc; freed slots are reused first, so a steady
 *     state allocates nothing.
 *
 * Far events (many pending): while at most HEAP_MAX events are pending
 * everything is in the heap. Beyond that the heap keeps only the events
 * before a moving window end w1; later ones wait, unsorted, in time
 * buckets of equal power-of-two width (doubly-linked lists through the
 * slots, so cancel is O(1)) or, past the buckets, in a far list. When the
 * heap runs dry the next non-empty bucket moves into it; when the buckets
 * are spent the far list is spread over a fresh set spanning it, two
 * buckets per event. Each event is thus linked once or twice and heaped
 * among a handful instead of sifting through log2(pending) levels. The
 * heap always holds every event before w1 and nothing else does, so the
 * order is still exactly (time, sequence number).
 *
 * Pop-and-push fusion: when the run loop takes the minimum it leaves a hole
 * at the root instead of moving the last entry there at once. If the handler
 * schedules an event (the common case: a completion schedules the next one),
 * the new entry drops into the hole and sifts down once; otherwise the hole
 * is filled before any other heap operation and after the handler returns.
 */
#include "llmsim/engine.h"

#include <stdlib.h>

/* Heap arity: 2 measured faster than 4 and 8 (docs/engine.md). */
#define ARITY 2

#define NO_POS UINT32_MAX   /* heap position of a free slot */
#define LIST_POS (UINT32_MAX - 1u) /* "position" of an event in a list */
#define MAX_SLOTS (UINT32_MAX - 2u)
#define NO_SLOT UINT32_MAX

/* The bucket tier (see above). HEAP_MAX: pending events beyond which it
 * starts; it stops when a spread finds at most HEAP_MAX / 2. A spread
 * makes BUCKETS_PER_EVENT buckets per event (a power of two, at most the
 * room grown with the slots, so running never allocates). */
#define FAR UINT32_MAX /* list index of the far list */
#define HEAP_MAX 4096u
#define BUCKETS_PER_EVENT 2u

struct heap_entry {
	lsim_time t;
	uint64_t seq;
	uint32_t slot;
};

/* A pool slot: what its event does (arg doubles as the free-list link),
 * where it sits, and, while it waits in a list, its time, sequence number
 * and links. */
struct slot {
	lsim_handler fn;
	void *subject;
	uint64_t arg;
	lsim_time t;	     /* t, seq, prev, next, list: only in a list */
	uint64_t seq;
	uint32_t gen;
	uint32_t pos;	     /* heap index, LIST_POS in a list, NO_POS when free */
	uint32_t prev, next; /* NO_SLOT ends */
	uint32_t list;	     /* bucket index, or FAR */
	uint32_t tag;	     /* lsim_schedule_tag's */
};
_Static_assert(sizeof(struct slot) == 64, "a slot is 64 bytes");

struct lsim_engine {
	struct heap_entry *heap;
	struct slot *slots;
	uint32_t n_heap;   /* entries in heap[], the hole included */
	uint32_t n_slots;  /* slots ever handed out: slots[0 .. n_slots) */
	uint32_t cap;      /* capacity of heap[] and slots[] */
	uint32_t free_head; /* first free slot below n_slots, or NO_POS */
	bool hole;         /* heap[0] is empty (inside lsim_run only) */
	bool stopped;
	bool running;
	bool overflow; /* an event was asked for beyond LSIM_TIME_MAX */
	uint32_t tag; /* of the event being handled */
	lsim_time now;
	uint64_t seq;
	uint64_t processed;
	/* the bucket tier: heads of the buckets, a bit per non-empty bucket
	 * (room for BUCKETS_PER_EVENT per slot), the far list, geometry */
	uint32_t *head;
	uint64_t *used;
	uint32_t far;	  /* head of the far list */
	uint32_t n_buckets; /* of the current spread: a power of two */
	bool tiered;	/* lists in use; else w1 is "never" and all is heaped */
	uint64_t w1;	/* the heap holds exactly the events before w1 */
	uint64_t base, w_end; /* bucket j: [base + j 2^shift, + 2^shift) */
	unsigned shift;
	uint32_t cur;	/* buckets before cur are spent */
	uint32_t n_list; /* events in buckets and the far list */
	uint64_t far_lo, far_hi; /* bounds of the far list's times */
	lsim_time period;
	bool has_sample;       /* a periodic callback is set and not past */
	lsim_time next_sample; /* the time of its next call */
	lsim_periodic_fn periodic;
	void *periodic_ctx;
	lsim_periodic_fn after;	/* after every event, or NULL */
	void *after_ctx;
	lsim_periodic_fn tick;	/* after every (tick_mask + 1)-th event, or NULL */
	void *tick_ctx;
	uint64_t tick_mask;
	lsim_periodic_fn before; /* before every event's handler, or NULL */
	void *before_ctx;
};

static inline bool before(const struct heap_entry *a,
			  const struct heap_entry *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static inline void place(struct lsim_engine *eng, uint32_t i,
			 struct heap_entry e)
{
	eng->heap[i] = e;
	eng->slots[e.slot].pos = i;
}

/* Moves e up from position i (a hole) to its place. */
static void sift_up(struct lsim_engine *eng, uint32_t i, struct heap_entry e)
{
	struct heap_entry *h = eng->heap;
	while (i > 0) {
		uint32_t p = (i - 1) / ARITY;
		if (!before(&e, &h[p]))
			break;
		place(eng, i, h[p]);
		i = p;
	}
	place(eng, i, e);
}

/* Moves e down from position i (a hole) to its place. */
static void sift_down(struct lsim_engine *eng, uint32_t i,
		      struct heap_entry e)
{
	struct heap_entry *h = eng->heap;
	uint32_t n = eng->n_heap;
	for (;;) {
		uint32_t c = ARITY * i + 1;
		if (c >= n)
			break;
		uint32_t end = c + ARITY < n ? c + ARITY : n;
		uint32_t m = c;
		for (uint32_t k = c + 1; k < end; k++)
			if (before(&h[k], &h[m]))
				m = k;
		if (!before(&h[m], &e))
			break;
		place(eng, i, h[m]);
		i = m;
	}
	place(eng, i, e);
}

/* Puts e at position i, whose old entry was removed, restoring order. */
static void fix_at(struct lsim_engine *eng, uint32_t i, struct heap_entry e)
{
	if (i > 0 && before(&e, &eng->heap[(i - 1) / ARITY]))
		sift_up(eng, i, e);
	else
		sift_down(eng, i, e);
}

/* Fills the hole at the root left by the run loop with the last entry. */
static void fill_hole(struct lsim_engine *eng)
{
	if (!eng->hole)
		return;
	eng->hole = false;
	uint32_t last = --eng->n_heap;
	if (last > 0)
		sift_down(eng, 0, eng->heap[last]);
}

static void free_slot(struct lsim_engine *eng, uint32_t slot)
{
	struct slot *st = &eng->slots[slot];
	st->pos = NO_POS;
	st->gen = st->gen == UINT32_MAX ? 1u : st->gen + 1u;
	st->arg = eng->free_head;
	eng->free_head = slot;
}

static bool grow(struct lsim_engine *eng)
{
	if (eng->cap >= MAX_SLOTS)
		return false;
	uint64_t want = eng->cap ? (uint64_t)eng->cap * 2u : 64u;
	if (want > MAX_SLOTS)
		want = MAX_SLOTS;
	struct heap_entry *h = realloc(eng->heap, (size_t)want * sizeof *h);
	if (!h)
		return false;
	eng->heap = h;
	struct slot *sl = realloc(eng->slots, (size_t)want * sizeof *sl);
	if (!sl)
		return false; /* heap[] is larger than cap: harmless */
	eng->slots = sl;
	uint64_t nb = want * BUCKETS_PER_EVENT;
	uint32_t *head = realloc(eng->head, (size_t)nb * sizeof *head);
	if (!head)
		return false;
	eng->head = head;
	uint64_t *used = realloc(eng->used, (size_t)(nb / 64) * sizeof *used);
	if (!used)
		return false;
	eng->used = used;
	eng->cap = (uint32_t)want;
	return true;
}

/* Returns a free slot, or NO_POS when memory ran out. */
static uint32_t alloc_slot(struct lsim_engine *eng)
{
	uint32_t s = eng->free_head;
	if (s != NO_POS) {
		eng->free_head = (uint32_t)eng->slots[s].arg;
		return s;
	}
	if (eng->n_slots == eng->cap && !grow(eng))
		return NO_POS;
	s = eng->n_slots++;
	eng->slots[s].gen = 1;
	return s;
}

/* The slot of a live handle, or NO_POS. */
static uint32_t lookup(const struct lsim_engine *eng, lsim_event_id id)
{
	if (!eng)
		return NO_POS;
	uint32_t slot = (uint32_t)(id & 0xffffffffu);
	uint32_t gen = (uint32_t)(id >> 32);
	if (slot >= eng->n_slots)
		return NO_POS;
	const struct slot *st = &eng->slots[slot];
	if (st->gen != gen || st->pos == NO_POS)
		return NO_POS;
	return slot;
}

/* ---- the bucket tier ---- */

/* The head of list j: a bucket, or the far list. */
static uint32_t *list_head(struct lsim_engine *eng, uint32_t j)
{
	return j == FAR ? &eng->far : &eng->head[j];
}

static void list_link(struct lsim_engine *eng, uint32_t slot, lsim_time t,
		      uint64_t seq)
{
	uint64_t ut = (uint64_t)t;
	uint32_t j = ut < eng->w_end ? (uint32_t)((ut - eng->base) >> eng->shift)
				      : FAR;
	uint32_t *hp = list_head(eng, j);
	if (j == FAR) {
		if (eng->far == NO_SLOT) {
			eng->far_lo = eng->far_hi = ut;
		} else {
			if (ut < eng->far_lo)
				eng->far_lo = ut;
			if (ut > eng->far_hi)
				eng->far_hi = ut;
		}
	} else {
		eng->used[j / 64] |= 1ull << (j % 64);
	}
	uint32_t h = *hp;
	struct slot *n = &eng->slots[slot];
	n->t = t;
	n->seq = seq;
	n->prev = NO_SLOT;
	n->next = h;
	n->list = j;
	n->pos = LIST_POS;
	if (h != NO_SLOT)
		eng->slots[h].prev = slot;
	*hp = slot;
	eng->n_list++;
}

static void list_unlink(struct lsim_engine *eng, uint32_t slot)
{
	struct slot *n = &eng->slots[slot];
	uint32_t *hp = list_head(eng, n->list);
	if (n->prev != NO_SLOT)
		eng->slots[n->prev].next = n->next;
	else
		*hp = n->next;
	if (n->next != NO_SLOT)
		eng->slots[n->next].prev = n->prev;
	if (n->list != FAR && *hp == NO_SLOT)
		eng->used[n->list / 64] &= ~(1ull << (n->list % 64));
	eng->n_list--;
}

/* First non-empty bucket at or after j, or n_buckets. */
static uint32_t next_used(const struct lsim_engine *eng, uint32_t j)
{
	for (uint32_t w = j / 64; w < eng->n_buckets / 64; w++) {
		uint64_t bits = eng->used[w];
		if (w == j / 64)
			bits &= ~0ull << (j % 64);
		if (bits)
			return w * 64 + (uint32_t)__builtin_ctzll(bits);
	}
	return eng->n_buckets;
}

/* Moves every event of list j into the heap, which is empty (it has room:
 * it holds at most as many entries as there are slots): a few are sorted
 * (a sorted array is a heap), more are heapified bottom-up. */
static void heap_list(struct lsim_engine *eng, uint32_t j)
{
	uint32_t *hp = list_head(eng, j);
	uint32_t s = *hp;
	*hp = NO_SLOT;
	if (j != FAR)
		eng->used[j / 64] &= ~(1ull << (j % 64));
	struct heap_entry *h = eng->heap;
	uint32_t n = 0;
	while (s != NO_SLOT) {
		const struct slot *ln = &eng->slots[s];
		struct heap_entry e = {.t = ln->t, .seq = ln->seq, .slot = s};
		s = ln->next;
		uint32_t i = n++;
		if (n <= 32) /* insertion sort */
			for (; i > 0 && before(&e, &h[i - 1]); i--)
				h[i] = h[i - 1];
		h[i] = e;
	}
	eng->n_list -= n;
	eng->n_heap = n;
	if (n > 32)
		for (uint32_t i = n / ARITY + 1; i-- > 0;)
			sift_down(eng, i, h[i]);
	for (uint32_t i = 0; i < n; i++)
		eng->slots[h[i].slot].pos = i;
}

/* Many events pending: all of the heap goes to the far list, to be spread
 * over buckets when the run next needs an event. */
static void spill(struct lsim_engine *eng)
{
	eng->tiered = true;
	eng->w1 = (uint64_t)eng->now; /* nothing scheduled from now on is heaped */
	eng->w_end = 0;		      /* ... nor put in a bucket */
	eng->cur = eng->n_buckets = 0;
	uint32_t n = eng->n_heap;
	eng->n_heap = 0;
	for (uint32_t i = 0; i < n; i++)
		list_link(eng, eng->heap[i].slot, eng->heap[i].t, eng->heap[i].seq);
}

/* The heap is empty: refills it with the next bucket, spreading the far
 * list over fresh buckets first when they are spent. False if nothing is
 * pending. */
static bool advance(struct lsim_engine *eng)
{
	while (eng->tiered) {
		uint32_t j = next_used(eng, eng->cur);
		if (j < eng->n_buckets) {
			heap_list(eng, j);
			eng->cur = j + 1;
			eng->w1 = eng->base + ((uint64_t)(j + 1) << eng->shift);
			return true;
		}
		if (eng->far == NO_SLOT) {
			eng->tiered = false;
			eng->w1 = UINT64_MAX;
			return false;
		}
		if (eng->n_list <= HEAP_MAX / 2) {
			/* few left: back to the plain heap */
			eng->tiered = false;
			eng->w1 = UINT64_MAX;
			heap_list(eng, FAR);
			return true;
		}
		/* spread the far list over buckets spanning its times */
		uint64_t nb = 64, room = (uint64_t)eng->cap * BUCKETS_PER_EVENT;
		while (nb < (uint64_t)eng->n_list * BUCKETS_PER_EVENT && nb * 2 <= room)
			nb *= 2;
		eng->n_buckets = (uint32_t)nb;
		uint64_t span = eng->far_hi - eng->far_lo + 1u;
		uint64_t width = span / nb + (span % nb != 0);
		eng->shift = 0;
		while ((1ull << eng->shift) < width)
			eng->shift++;
		eng->base = eng->far_lo;
		eng->w_end = eng->base + (nb << eng->shift);
		eng->cur = 0;
		eng->w1 = eng->base;
		for (uint64_t b = 0; b < nb; b++)
			eng->head[b] = NO_SLOT;
		for (uint32_t w = 0; w < nb / 64; w++)
			eng->used[w] = 0;
		uint32_t s = eng->far;
		eng->far = NO_SLOT;
		while (s != NO_SLOT) {
			uint32_t next = eng->slots[s].next;
			eng->n_list--;
			list_link(eng, s, eng->slots[s].t, eng->slots[s].seq);
			s = next;
		}
	}
	return false;
}

/* Takes slot s's pending event (at heap position or LIST_POS i) out of
 * the queue, keeping the slot. */
static void take_out(struct lsim_engine *eng, uint32_t s, uint32_t i)
{
	if (i == LIST_POS) {
		list_unlink(eng, s);
		return;
	}
	uint32_t last = --eng->n_heap;
	if (i != last)
		fix_at(eng, i, eng->heap[last]);
}

/* Places a slot's event: heaped if before w1, else in its list. */
static void place_event(struct lsim_engine *eng, uint32_t s, struct heap_entry e)
{
	if ((uint64_t)e.t >= eng->w1) {
		list_link(eng, s, e.t, e.seq);
	} else if (eng->hole) {
		/* e >= the popped minimum, so it belongs at or below the root */
		eng->hole = false;
		sift_down(eng, 0, e);
	} else {
		sift_up(eng, eng->n_heap++, e);
	}
}

struct lsim_engine *lsim_engine_create(void)
{
	struct lsim_engine *eng = calloc(1, sizeof *eng);
	if (!eng)
		return NULL;
	eng->far = NO_SLOT;
	eng->free_head = NO_POS;
	eng->w1 = UINT64_MAX;
	return eng;
}

void lsim_engine_destroy(struct lsim_engine *eng)
{
	if (!eng)
		return;
	free(eng->heap);
	free(eng->slots);
	free(eng->head);
	free(eng->used);
	free(eng);
}

lsim_event_id lsim_schedule_tag(struct lsim_engine *eng, lsim_time at,
				lsim_handler fn, void *subject, uint64_t arg,
				uint32_t tag)
{
	if (!eng || !fn)
		return 0;
	uint32_t s = alloc_slot(eng);
	if (s == NO_POS)
		return 0;
	struct slot *r = &eng->slots[s];
	r->fn = fn;
	r->subject = subject;
	r->arg = arg;
	r->tag = tag;
	struct heap_entry e = {
		.t = at < eng->now ? eng->now : at,
		.seq = eng->seq++,
		.slot = s,
	};
	place_event(eng, s, e);
	return ((uint64_t)r->gen << 32) | s;
}

lsim_event_id lsim_schedule(struct lsim_engine *eng, lsim_time at,
			    lsim_handler fn, void *subject, uint64_t arg)
{
	return lsim_schedule_tag(eng, at, fn, subject, arg, 0);
}

uint32_t lsim_event_tag(const struct lsim_engine *eng)
{
	return eng ? eng->tag : 0;
}

lsim_event_id lsim_schedule_in_tag(struct lsim_engine *eng, lsim_time delay,
				   lsim_handler fn, void *subject, uint64_t arg,
				   uint32_t tag)
{
	if (!eng)
		return 0;
	lsim_time at;
	if (delay <= 0)
		at = eng->now;
	else if (eng->now > LSIM_TIME_MAX - delay) {
		/* beyond the clock: an error, never a silent clamp (a step
		 * of 1e300 s pinned the clock at 9.2e9 s, exit 0) */
		eng->overflow = true;
		eng->stopped = true;
		return 0;
	} else
		at = eng->now + delay;
	return lsim_schedule_tag(eng, at, fn, subject, arg, tag);
}

lsim_event_id lsim_schedule_in(struct lsim_engine *eng, lsim_time delay,
			       lsim_handler fn, void *subject, uint64_t arg)
{
	return lsim_schedule_in_tag(eng, delay, fn, subject, arg, 0);
}

int lsim_cancel(struct lsim_engine *eng, lsim_event_id id)
{
	uint32_t s = lookup(eng, id);
	if (s == NO_POS)
		return LSIM_ESTATE;
	fill_hole(eng);
	take_out(eng, s, eng->slots[s].pos);
	free_slot(eng, s);
	return 0;
}

int lsim_reschedule(struct lsim_engine *eng, lsim_event_id id, lsim_time at)
{
	uint32_t s = lookup(eng, id);
	if (s == NO_POS)
		return LSIM_ESTATE;
	fill_hole(eng);
	uint32_t i = eng->slots[s].pos;
	struct heap_entry e = {
		.t = at < eng->now ? eng->now : at,
		.seq = eng->seq++,
		.slot = s,
	};
	if (i != LIST_POS && (uint64_t)e.t < eng->w1) {
		fix_at(eng, i, e);
		return 0;
	}
	take_out(eng, s, i);
	place_event(eng, s, e);
	return 0;
}

bool lsim_event_pending(const struct lsim_engine *eng, lsim_event_id id)
{
	return lookup(eng, id) != NO_POS;
}

lsim_time lsim_now(const struct lsim_engine *eng)
{
	return eng ? eng->now : 0;
}

size_t lsim_pending(const struct lsim_engine *eng)
{
	if (!eng)
		return 0;
	return (size_t)eng->n_heap - (eng->hole ? 1u : 0u) + eng->n_list;
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

void lsim_set_after_event(struct lsim_engine *eng, lsim_periodic_fn fn,
			  void *ctx)
{
	if (!eng)
		return;
	eng->after = fn;
	eng->after_ctx = fn ? ctx : NULL;
}

void lsim_set_before_event(struct lsim_engine *eng, lsim_periodic_fn fn,
			   void *ctx)
{
	if (!eng)
		return;
	eng->before = fn;
	eng->before_ctx = fn ? ctx : NULL;
}

void lsim_set_tick(struct lsim_engine *eng, unsigned log2_every,
		   lsim_periodic_fn fn, void *ctx)
{
	if (!eng)
		return;
	eng->tick = fn;
	eng->tick_ctx = fn ? ctx : NULL;
	eng->tick_mask = log2_every < 63 ? (UINT64_C(1) << log2_every) - 1 : UINT64_MAX;
}

/* Not re-entrant: a call from inside a handler returns 0 at once. */
uint64_t lsim_run(struct lsim_engine *eng, lsim_time until)
{
	if (!eng || eng->running)
		return 0;
	eng->running = true;
	eng->stopped = false;
	uint64_t count = 0;
	while (!eng->stopped) {
		if (!eng->tiered && eng->n_heap > HEAP_MAX)
			spill(eng);
		if (eng->n_heap == 0 && !advance(eng))
			break;
		lsim_time t = eng->heap[0].t;
		/* A sample falls due when the clock reaches it with work still
		 * pending at or after it; it precedes events at its own time. */
		if (eng->has_sample && eng->next_sample <= t &&
		    eng->next_sample <= until) {
			eng->now = eng->next_sample;
			next_sample_after(eng, eng->now);
			eng->periodic(eng, eng->periodic_ctx);
			if (eng->after)
				eng->after(eng, eng->after_ctx);
			continue;
		}
		if (t > until)
			break;
		uint32_t slot = eng->heap[0].slot;
		struct slot *r = &eng->slots[slot];
		lsim_handler fn = r->fn;
		void *subject = r->subject;
		uint64_t arg = r->arg;
		eng->tag = r->tag;
		free_slot(eng, slot);
		eng->hole = true;
		eng->now = t;
		count++;
		eng->processed++;
		if (eng->before)
			eng->before(eng, eng->before_ctx);
		fn(eng, subject, arg);
		fill_hole(eng);
		if (eng->after)
			eng->after(eng, eng->after_ctx);
		if (eng->tick && (eng->processed & eng->tick_mask) == 0)
			eng->tick(eng, eng->tick_ctx);
		eng->tag = 0;
	}
	if (!eng->stopped && lsim_pending(eng) > 0 && until > eng->now)
		eng->now = until;
	eng->running = false;
	return count;
}

bool lsim_clock_overflow(const struct lsim_engine *eng)
{
	return eng && eng->overflow;
}

void lsim_stop(struct lsim_engine *eng)
{
	if (eng)
		eng->stopped = true;
}
