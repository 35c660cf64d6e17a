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
 *   - st[]: per pool slot, the generation and the entry's heap position
 *     (updated on every move, so it is kept small and apart);
 *   - recs[]: per pool slot, what the event does (handler, subject, arg);
 *     a free slot's arg links the free list.
 *   - A handle is (generation << 32) | slot. The generation of a slot is
 *     bumped whenever its event fires or is cancelled, so an old handle never
 *     matches the slot's next occupant. Generations start at 1, so no valid
 *     handle is 0.
 *   - The three arrays grow together, doubling, with realloc; freed slots
 *     are reused first, so a steady state allocates nothing.
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
#define MAX_SLOTS (UINT32_MAX - 1u)

struct heap_entry {
	lsim_time t;
	uint64_t seq;
	uint32_t slot;
};

/* What a slot's event does; arg doubles as the free-list link. */
struct event_rec {
	lsim_handler fn;
	void *subject;
	uint64_t arg;
};

/* Where a slot's event sits; apart from event_rec so that sifting, which
 * updates pos on every move, touches 8 bytes per slot, not 32. */
struct slot_state {
	uint32_t gen;
	uint32_t pos; /* heap index, or NO_POS when free */
};

struct lsim_engine {
	struct heap_entry *heap;
	struct event_rec *recs;
	struct slot_state *st;
	uint32_t n_heap;   /* entries in heap[], the hole included */
	uint32_t n_slots;  /* slots ever handed out: recs[0 .. n_slots) */
	uint32_t cap;      /* capacity of heap[], recs[] and st[] */
	uint32_t free_head; /* first free slot below n_slots, or NO_POS */
	bool hole;         /* heap[0] is empty (inside lsim_run only) */
	bool stopped;
	bool running;
	lsim_time now;
	uint64_t seq;
	uint64_t processed;
	lsim_time period;
	bool has_sample;       /* a periodic callback is set and not past */
	lsim_time next_sample; /* the time of its next call */
	lsim_periodic_fn periodic;
	void *periodic_ctx;
	lsim_periodic_fn after;	/* after every event, or NULL */
	void *after_ctx;
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
	eng->st[e.slot].pos = i;
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
	struct slot_state *st = &eng->st[slot];
	st->pos = NO_POS;
	st->gen = st->gen == UINT32_MAX ? 1u : st->gen + 1u;
	eng->recs[slot].arg = eng->free_head;
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
	struct event_rec *r = realloc(eng->recs, (size_t)want * sizeof *r);
	if (!r)
		return false; /* heap[] is larger than cap: harmless */
	eng->recs = r;
	struct slot_state *st = realloc(eng->st, (size_t)want * sizeof *st);
	if (!st)
		return false;
	eng->st = st;
	eng->cap = (uint32_t)want;
	return true;
}

/* Returns a free slot, or NO_POS when memory ran out. */
static uint32_t alloc_slot(struct lsim_engine *eng)
{
	uint32_t s = eng->free_head;
	if (s != NO_POS) {
		eng->free_head = (uint32_t)eng->recs[s].arg;
		return s;
	}
	if (eng->n_slots == eng->cap && !grow(eng))
		return NO_POS;
	s = eng->n_slots++;
	eng->st[s].gen = 1;
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
	const struct slot_state *st = &eng->st[slot];
	if (st->gen != gen || st->pos == NO_POS)
		return NO_POS;
	return slot;
}

struct lsim_engine *lsim_engine_create(void)
{
	struct lsim_engine *eng = calloc(1, sizeof *eng);
	if (!eng)
		return NULL;
	eng->free_head = NO_POS;
	return eng;
}

void lsim_engine_destroy(struct lsim_engine *eng)
{
	if (!eng)
		return;
	free(eng->heap);
	free(eng->recs);
	free(eng->st);
	free(eng);
}

lsim_event_id lsim_schedule(struct lsim_engine *eng, lsim_time at,
			    lsim_handler fn, void *subject, uint64_t arg)
{
	if (!eng || !fn)
		return 0;
	uint32_t s = alloc_slot(eng);
	if (s == NO_POS)
		return 0;
	struct event_rec *r = &eng->recs[s];
	r->fn = fn;
	r->subject = subject;
	r->arg = arg;
	struct heap_entry e = {
		.t = at < eng->now ? eng->now : at,
		.seq = eng->seq++,
		.slot = s,
	};
	if (eng->hole) {
		/* e >= the popped minimum, so it belongs at or below the root */
		eng->hole = false;
		sift_down(eng, 0, e);
	} else {
		sift_up(eng, eng->n_heap++, e);
	}
	return ((uint64_t)eng->st[s].gen << 32) | s;
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
	if (s == NO_POS)
		return LSIM_ESTATE;
	fill_hole(eng);
	uint32_t i = eng->st[s].pos;
	uint32_t last = --eng->n_heap;
	if (i != last)
		fix_at(eng, i, eng->heap[last]);
	free_slot(eng, s);
	return 0;
}

int lsim_reschedule(struct lsim_engine *eng, lsim_event_id id, lsim_time at)
{
	uint32_t s = lookup(eng, id);
	if (s == NO_POS)
		return LSIM_ESTATE;
	fill_hole(eng);
	uint32_t i = eng->st[s].pos;
	struct heap_entry e = {
		.t = at < eng->now ? eng->now : at,
		.seq = eng->seq++,
		.slot = s,
	};
	fix_at(eng, i, e);
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
	return (size_t)eng->n_heap - (eng->hole ? 1u : 0u);
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

/* Not re-entrant: a call from inside a handler returns 0 at once. */
uint64_t lsim_run(struct lsim_engine *eng, lsim_time until)
{
	if (!eng || eng->running)
		return 0;
	eng->running = true;
	eng->stopped = false;
	uint64_t count = 0;
	while (!eng->stopped && eng->n_heap > 0) {
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
		struct event_rec *r = &eng->recs[slot];
		lsim_handler fn = r->fn;
		void *subject = r->subject;
		uint64_t arg = r->arg;
		free_slot(eng, slot);
		eng->hole = true;
		eng->now = t;
		count++;
		eng->processed++;
		fn(eng, subject, arg);
		fill_hole(eng);
		if (eng->after)
			eng->after(eng, eng->after_ctx);
	}
	if (!eng->stopped && eng->n_heap > 0 && until > eng->now)
		eng->now = until;
	eng->running = false;
	return count;
}

void lsim_stop(struct lsim_engine *eng)
{
	if (eng)
		eng->stopped = true;
}
