/*
 * test_engine.c - unit tests of the event engine (sim/kernel/engine.c): ordering by
 * time, FIFO ties, cancel, stale handles, reschedule, clamping of past times,
 * the run limit, early stop, the periodic callback, a randomized cross-check
 * against a reference queue, pool reuse and two coexisting engines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>

#include "llmsim/engine.h"

/* ---- a log of fired events and periodic samples ---- */

#define LOG_MAX 64
#define SAMPLE_MARK 1000u /* arg logged for a periodic sample */

struct log {
	int n;
	uint64_t arg[LOG_MAX];
	lsim_time at[LOG_MAX];
	int stop_after; /* call lsim_stop when arg == stop_after; -1: never */
};

static void log_init(struct log *l)
{
	l->n = 0;
	l->stop_after = -1;
}

static void log_fire(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	struct log *l = subject;
	assert_true(l->n < LOG_MAX);
	l->arg[l->n] = arg;
	l->at[l->n] = lsim_now(eng);
	l->n++;
	if (l->stop_after >= 0 && arg == (uint64_t)l->stop_after)
		lsim_stop(eng);
}

static void log_sample(struct lsim_engine *eng, void *ctx)
{
	log_fire(eng, ctx, SAMPLE_MARK);
}

static void expect_log(const struct log *l, int n, const uint64_t *args,
		       const lsim_time *ats)
{
	assert_int_equal(l->n, n);
	for (int i = 0; i < n; i++) {
		assert_int_equal(l->arg[i], args[i]);
		assert_int_equal(l->at[i], ats[i]);
	}
}

/* ---- ordering ---- */

static void test_order_by_time(void **state)
{
	(void)state;
	struct lsim_engine *eng = lsim_engine_create();
	assert_non_null(eng);
	struct log l;
	log_init(&l);
	assert_int_equal(lsim_now(eng), 0);
	assert_true(lsim_schedule(eng, 30, log_fire, &l, 3) != 0);
	assert_true(lsim_schedule(eng, 10, log_fire, &l, 1) != 0);
	assert_true(lsim_schedule(eng, 20, log_fire, &l, 2) != 0);
	assert_true(lsim_schedule(eng, 0, log_fire, &l, 0) != 0);
	assert_int_equal(lsim_pending(eng), 4);
	assert_int_equal(lsim_run(eng, LSIM_TIME_MAX), 4);
	static const uint64_t args[] = {0, 1, 2, 3};
	static const lsim_time ats[] = {0, 10, 20, 30};
	expect_log(&l, 4, args, ats);
	assert_int_equal(lsim_now(eng), 30);
	assert_int_equal(lsim_pending(eng), 0);
	assert_int_equal(lsim_events_processed(eng), 4);
	lsim_engine_destroy(eng);
}

static void test_fifo_ties(void **state)
{
	(void)state;
	struct lsim_engine *eng = lsim_engine_create();
	struct log l;
	log_init(&l);
	/* five at one time, interleaved with later ones */
	for (uint64_t i = 0; i < 5; i++) {
		assert_true(lsim_schedule(eng, 100, log_fire, &l, i) != 0);
		assert_true(lsim_schedule(eng, 200, log_fire, &l, 10 + i) != 0);
	}
	/* rescheduling to the same time sends an event to the back */
	lsim_event_id a = lsim_schedule(eng, 300, log_fire, &l, 20);
	assert_true(lsim_schedule(eng, 300, log_fire, &l, 21) != 0);
	assert_true(lsim_schedule(eng, 300, log_fire, &l, 22) != 0);
	assert_int_equal(lsim_reschedule(eng, a, 300), 0);
	/* an event moved earlier comes after those already at its new time */
	lsim_event_id b = lsim_schedule(eng, 900, log_fire, &l, 23);
	assert_int_equal(lsim_reschedule(eng, b, 300), 0);
	assert_int_equal(lsim_run(eng, LSIM_TIME_MAX), 14);
	static const uint64_t args[] = {0,  1,  2,  3,  4,  10, 11,
					12, 13, 14, 21, 22, 20, 23};
	static const lsim_time ats[] = {100, 100, 100, 100, 100, 200, 200,
					200, 200, 200, 300, 300, 300, 300};
	expect_log(&l, 14, args, ats);
	lsim_engine_destroy(eng);
}

/* ---- cancel and stale handles ---- */

static void test_cancel(void **state)
{
	(void)state;
	struct lsim_engine *eng = lsim_engine_create();
	struct log l;
	log_init(&l);
	lsim_event_id id[5];
	for (uint64_t i = 0; i < 5; i++) {
		id[i] = lsim_schedule(eng, 10 * (lsim_time)i, log_fire, &l, i);
		assert_true(id[i] != 0);
	}
	/* a tie partner of the cancelled one must survive */
	assert_true(lsim_schedule(eng, 20, log_fire, &l, 7) != 0);
	assert_true(lsim_event_pending(eng, id[2]));
	assert_int_equal(lsim_cancel(eng, id[2]), 0);
	assert_false(lsim_event_pending(eng, id[2]));
	assert_int_equal(lsim_pending(eng), 5);
	assert_int_equal(lsim_cancel(eng, id[0]), 0); /* the minimum */
	assert_int_equal(lsim_cancel(eng, id[4]), 0); /* the last entry */
	assert_int_equal(lsim_pending(eng), 3);
	assert_int_equal(lsim_run(eng, LSIM_TIME_MAX), 3);
	static const uint64_t args[] = {1, 7, 3};
	static const lsim_time ats[] = {10, 20, 30};
	expect_log(&l, 3, args, ats);
	lsim_engine_destroy(eng);
}

static void test_stale_handles(void **state)
{
	(void)state;
	struct lsim_engine *eng = lsim_engine_create();
	struct log l;
	log_init(&l);
	lsim_event_id fired = lsim_schedule(eng, 5, log_fire, &l, 1);
	lsim_event_id cancelled = lsim_schedule(eng, 6, log_fire, &l, 2);
	assert_int_equal(lsim_cancel(eng, cancelled), 0);
	assert_int_equal(lsim_cancel(eng, cancelled), LSIM_ESTATE);
	assert_int_equal(lsim_reschedule(eng, cancelled, 50), LSIM_ESTATE);
	assert_int_equal(lsim_run(eng, LSIM_TIME_MAX), 1);
	assert_false(lsim_event_pending(eng, fired));
	assert_int_equal(lsim_cancel(eng, fired), LSIM_ESTATE);
	assert_int_equal(lsim_reschedule(eng, fired, 50), LSIM_ESTATE);
	/* new events reuse the freed slots; the old handles stay dead */
	lsim_event_id n1 = lsim_schedule(eng, 10, log_fire, &l, 3);
	lsim_event_id n2 = lsim_schedule(eng, 11, log_fire, &l, 4);
	assert_true(n1 != fired && n1 != cancelled);
	assert_true(n2 != fired && n2 != cancelled);
	assert_false(lsim_event_pending(eng, fired));
	assert_false(lsim_event_pending(eng, cancelled));
	assert_int_equal(lsim_cancel(eng, fired), LSIM_ESTATE);
	assert_int_equal(lsim_cancel(eng, cancelled), LSIM_ESTATE);
	assert_int_equal(lsim_pending(eng), 2);
	assert_true(lsim_event_pending(eng, n1));
	/* never-valid handles */
	assert_int_equal(lsim_cancel(eng, 0), LSIM_ESTATE);
	assert_int_equal(lsim_cancel(eng, UINT64_MAX), LSIM_ESTATE);
	assert_int_equal(lsim_reschedule(eng, 12345, 1), LSIM_ESTATE);
	assert_false(lsim_event_pending(eng, 0));
	assert_int_equal(lsim_run(eng, LSIM_TIME_MAX), 2);
	assert_int_equal(l.n, 3);
	assert_int_equal(l.arg[1], 3);
	assert_int_equal(l.arg[2], 4);
	lsim_engine_destroy(eng);
}

/* A handler's own handle is stale while it runs; it may cancel siblings. */
struct sibling_ctx {
	struct log l;
	lsim_event_id self, sibling;
	int self_cancel, sibling_cancel;
};

static void cancel_sibling(struct lsim_engine *eng, void *subject,
			   uint64_t arg)
{
	struct sibling_ctx *c = subject;
	log_fire(eng, &c->l, arg);
	c->self_cancel = lsim_cancel(eng, c->self);
	c->sibling_cancel = lsim_cancel(eng, c->sibling);
}

static void test_cancel_from_handler(void **state)
{
	(void)state;
	struct lsim_engine *eng = lsim_engine_create();
	struct sibling_ctx c;
	log_init(&c.l);
	c.self = lsim_schedule(eng, 10, cancel_sibling, &c, 1);
	c.sibling = lsim_schedule(eng, 10, log_fire, &c.l, 2);
	assert_true(lsim_schedule(eng, 10, log_fire, &c.l, 3) != 0);
	assert_int_equal(lsim_run(eng, LSIM_TIME_MAX), 2);
	assert_int_equal(c.self_cancel, LSIM_ESTATE);
	assert_int_equal(c.sibling_cancel, 0);
	static const uint64_t args[] = {1, 3};
	static const lsim_time ats[] = {10, 10};
	expect_log(&c.l, 2, args, ats);
	lsim_engine_destroy(eng);
}

/* ---- reschedule and clamping ---- */

static void test_reschedule(void **state)
{
	(void)state;
	struct lsim_engine *eng = lsim_engine_create();
	struct log l;
	log_init(&l);
	lsim_event_id a = lsim_schedule(eng, 100, log_fire, &l, 1);
	lsim_event_id b = lsim_schedule(eng, 200, log_fire, &l, 2);
	assert_true(lsim_schedule(eng, 150, log_fire, &l, 3) != 0);
	assert_int_equal(lsim_reschedule(eng, a, 500), 0); /* later */
	assert_int_equal(lsim_reschedule(eng, b, 50), 0);  /* earlier */
	assert_true(lsim_event_pending(eng, a));
	assert_int_equal(lsim_pending(eng), 3);
	assert_int_equal(lsim_run(eng, LSIM_TIME_MAX), 3);
	static const uint64_t args[] = {2, 3, 1};
	static const lsim_time ats[] = {50, 150, 500};
	expect_log(&l, 3, args, ats);
	lsim_engine_destroy(eng);
}

struct past_ctx {
	struct log l;
	lsim_event_id later;
};

static void schedule_into_past(struct lsim_engine *eng, void *subject,
			       uint64_t arg)
{
	struct past_ctx *c = subject;
	log_fire(eng, &c->l, arg);
	assert_true(lsim_schedule(eng, 40, log_fire, &c->l, 10) != 0);
	assert_true(lsim_schedule_in(eng, -7, log_fire, &c->l, 11) != 0);
	assert_int_equal(lsim_reschedule(eng, c->later, 1), 0);
}

static void test_past_clamps_to_now(void **state)
{
	(void)state;
	struct lsim_engine *eng = lsim_engine_create();
	struct past_ctx c;
	log_init(&c.l);
	assert_true(lsim_schedule(eng, 100, schedule_into_past, &c, 1) != 0);
	c.later = lsim_schedule(eng, 300, log_fire, &c.l, 12);
	assert_int_equal(lsim_run(eng, LSIM_TIME_MAX), 4);
	static const uint64_t args[] = {1, 10, 11, 12};
	static const lsim_time ats[] = {100, 100, 100, 100};
	expect_log(&c.l, 4, args, ats);
	/* outside the run loop too; schedule_in past the clock's end is an
	 * error the engine records (it saturated at LSIM_TIME_MAX before,
	 * and the run ended at 9.2e9 s with exit 0) */
	assert_true(lsim_schedule(eng, -5, log_fire, &c.l, 13) != 0);
	assert_true(lsim_schedule_in(eng, 25, log_fire, &c.l, 14) != 0);
	assert_false(lsim_clock_overflow(eng));
	assert_int_equal(lsim_schedule_in(eng, LSIM_TIME_MAX, log_fire, &c.l, 15), 0);
	assert_true(lsim_clock_overflow(eng));
	assert_int_equal(lsim_run(eng, LSIM_TIME_MAX), 2);
	assert_int_equal(c.l.at[4], 100);
	assert_int_equal(c.l.at[5], 125);
	assert_int_equal(lsim_now(eng), 125);
	lsim_engine_destroy(eng);
}

/* ---- the run loop: until, stop ---- */

static void test_run_until(void **state)
{
	(void)state;
	struct lsim_engine *eng = lsim_engine_create();
	struct log l;
	log_init(&l);
	for (uint64_t i = 1; i <= 3; i++)
		assert_true(lsim_schedule(eng, 10 * (lsim_time)i, log_fire,
					  &l, i));
	assert_true(lsim_schedule(eng, 25, log_fire, &l, 4) != 0);
	/* an event exactly at the limit runs */
	assert_int_equal(lsim_run(eng, 25), 3);
	assert_int_equal(lsim_now(eng), 25);
	assert_int_equal(lsim_run(eng, 27), 0);
	assert_int_equal(lsim_now(eng), 27);
	assert_int_equal(lsim_pending(eng), 1);
	/* a limit behind the clock runs nothing and keeps the clock */
	assert_int_equal(lsim_run(eng, 5), 0);
	assert_int_equal(lsim_now(eng), 27);
	/* the queue drains before the limit: now is the last event's time */
	assert_int_equal(lsim_run(eng, 1000), 1);
	assert_int_equal(lsim_now(eng), 30);
	assert_int_equal(lsim_pending(eng), 0);
	static const uint64_t args[] = {1, 2, 4, 3};
	static const lsim_time ats[] = {10, 20, 25, 30};
	expect_log(&l, 4, args, ats);
	assert_int_equal(lsim_events_processed(eng), 4);
	lsim_engine_destroy(eng);
}

static void test_stop_from_handler(void **state)
{
	(void)state;
	struct lsim_engine *eng = lsim_engine_create();
	struct log l;
	log_init(&l);
	l.stop_after = 2;
	assert_true(lsim_schedule(eng, 10, log_fire, &l, 1) != 0);
	assert_true(lsim_schedule(eng, 20, log_fire, &l, 2) != 0);
	assert_true(lsim_schedule(eng, 20, log_fire, &l, 3) != 0);
	assert_true(lsim_schedule(eng, 30, log_fire, &l, 4) != 0);
	assert_int_equal(lsim_run(eng, 100), 2);
	assert_int_equal(lsim_now(eng), 20); /* not the limit: stopped */
	assert_int_equal(lsim_pending(eng), 2);
	assert_int_equal(lsim_run(eng, 100), 2);
	assert_int_equal(lsim_now(eng), 30); /* drained before the limit */
	assert_int_equal(lsim_events_processed(eng), 4);
	static const uint64_t args[] = {1, 2, 3, 4};
	static const lsim_time ats[] = {10, 20, 20, 30};
	expect_log(&l, 4, args, ats);
	lsim_engine_destroy(eng);
}

/* ---- the periodic callback ---- */

static void test_periodic(void **state)
{
	(void)state;
	struct lsim_engine *eng = lsim_engine_create();
	struct log l;
	log_init(&l);
	lsim_set_periodic(eng, 10, log_sample, &l);
	static const lsim_time t[] = {5, 10, 25, 30};
	for (uint64_t i = 0; i < 4; i++)
		assert_true(lsim_schedule(eng, t[i], log_fire, &l, i) != 0);
	/* samples precede events at their own time; none after the last
	 * event (an empty queue ends the run even with no limit) */
	assert_int_equal(lsim_run(eng, LSIM_TIME_MAX), 4);
	static const uint64_t args[] = {0, SAMPLE_MARK, 1, SAMPLE_MARK, 2,
					SAMPLE_MARK, 3};
	static const lsim_time ats[] = {5, 10, 10, 20, 25, 30, 30};
	expect_log(&l, 7, args, ats);
	assert_int_equal(lsim_now(eng), 30);

	/* with work pending past the limit, samples up to the limit fire */
	log_init(&l);
	assert_true(lsim_schedule(eng, 1000, log_fire, &l, 9) != 0);
	assert_int_equal(lsim_run(eng, 80), 0);
	assert_int_equal(l.n, 5);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(l.arg[i], SAMPLE_MARK);
		assert_int_equal(l.at[i], 40 + 10 * i);
	}
	assert_int_equal(lsim_now(eng), 80);

	/* a period set mid-run starts at the next multiple after now */
	log_init(&l);
	lsim_set_periodic(eng, 300, log_sample, &l);
	assert_int_equal(lsim_run(eng, 950), 0);
	static const uint64_t args2[] = {SAMPLE_MARK, SAMPLE_MARK, SAMPLE_MARK};
	static const lsim_time ats2[] = {300, 600, 900};
	expect_log(&l, 3, args2, ats2);

	/* period <= 0 removes it */
	log_init(&l);
	lsim_set_periodic(eng, 0, log_sample, &l);
	assert_int_equal(lsim_run(eng, LSIM_TIME_MAX), 1);
	static const uint64_t args3[] = {9};
	static const lsim_time ats3[] = {1000};
	expect_log(&l, 1, args3, ats3);
	lsim_engine_destroy(eng);
}

/* A periodic callback may stop the run and schedule events. */
static void sample_and_stop(struct lsim_engine *eng, void *ctx)
{
	struct log *l = ctx;
	log_sample(eng, l);
	if (l->n == 2) {
		assert_true(lsim_schedule(eng, 0, log_fire, l, 7) != 0);
		lsim_stop(eng);
	}
}

static void test_periodic_count_and_stop(void **state)
{
	(void)state;
	struct lsim_engine *eng = lsim_engine_create();
	struct log l;
	log_init(&l);
	lsim_set_periodic(eng, 1000, sample_and_stop, &l);
	assert_true(lsim_schedule(eng, 5000, log_fire, &l, 1) != 0);
	assert_int_equal(lsim_run(eng, LSIM_TIME_MAX), 0);
	assert_int_equal(l.n, 2);
	assert_int_equal(lsim_now(eng), 2000);
	assert_int_equal(lsim_pending(eng), 2);
	/* the event scheduled "at 0" was clamped to 2000 and runs before the
	 * 3000 sample */
	assert_int_equal(lsim_run(eng, LSIM_TIME_MAX), 2);
	static const uint64_t args[] = {SAMPLE_MARK, SAMPLE_MARK, 7,
					SAMPLE_MARK, SAMPLE_MARK, SAMPLE_MARK,
					1};
	static const lsim_time ats[] = {1000, 2000, 2000, 3000, 4000, 5000,
					5000};
	expect_log(&l, 7, args, ats);
	lsim_engine_destroy(eng);
}

/* The before-event hook: called before each event's handler at its time,
 * not before periodic samples; it may schedule events. */
#define HOOK_MARK 2000u /* arg logged for a hook call */

static void log_hook(struct lsim_engine *eng, void *ctx)
{
	struct log *l = ctx;
	log_fire(eng, l, HOOK_MARK);
	if (l->n == 1) /* the first call adds an event at its own time */
		assert_true(lsim_schedule(eng, lsim_now(eng), log_fire, l, 9) != 0);
}

static void test_before_event(void **state)
{
	(void)state;
	struct lsim_engine *eng = lsim_engine_create();
	struct log l;
	log_init(&l);
	lsim_set_periodic(eng, 1000, log_sample, &l);
	lsim_set_before_event(eng, log_hook, &l);
	assert_true(lsim_schedule(eng, 500, log_fire, &l, 1) != 0);
	assert_true(lsim_schedule(eng, 1000, log_fire, &l, 2) != 0);
	assert_int_equal(lsim_run(eng, LSIM_TIME_MAX), 3);
	static const uint64_t args[] = {HOOK_MARK, 1, HOOK_MARK, 9, SAMPLE_MARK,
					HOOK_MARK, 2};
	static const lsim_time ats[] = {500, 500, 500, 500, 1000, 1000, 1000};
	expect_log(&l, 7, args, ats);
	lsim_set_before_event(eng, NULL, &l);
	assert_true(lsim_schedule(eng, 1500, log_fire, &l, 3) != 0);
	assert_int_equal(lsim_run(eng, LSIM_TIME_MAX), 1);
	assert_int_equal(l.n, 8); /* no hook any more */
	lsim_engine_destroy(eng);
}

/* Tags: what the hooks, handlers and periodic callbacks see. */
struct tag_seen {
	struct lsim_engine *eng;
	int n, bad;
	uint32_t hook[8], fired[8], sample;
};

static void tag_hook(struct lsim_engine *eng, void *ctx)
{
	struct tag_seen *t = ctx;
	if (t->n < 8)
		t->hook[t->n] = lsim_event_tag(eng);
}

static void tag_fire(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)arg;
	struct tag_seen *t = subject;
	if (t->n < 8)
		t->fired[t->n++] = lsim_event_tag(eng);
}

static void tag_sample(struct lsim_engine *eng, void *ctx)
{
	struct tag_seen *t = ctx;
	t->sample = lsim_event_tag(eng) + 100;
}

/* Handler of many events: arg's tag is arg % 7. */
static void tag_check(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	struct tag_seen *t = subject;
	t->n++;
	if (lsim_event_tag(eng) != arg % 7)
		t->bad++;
}

static void test_event_tags(void **state)
{
	(void)state;
	struct lsim_engine *eng = lsim_engine_create();
	struct tag_seen t = {.eng = eng};
	assert_int_equal(lsim_event_tag(eng), 0); /* outside a run */
	lsim_set_before_event(eng, tag_hook, &t);
	lsim_set_periodic(eng, 250, tag_sample, &t);
	assert_true(lsim_schedule(eng, 100, tag_fire, &t, 0) != 0);
	lsim_event_id a = lsim_schedule_tag(eng, 150, tag_fire, &t, 0, 7);
	assert_true(a != 0);
	assert_true(lsim_schedule_tag(eng, 200, tag_fire, &t, 0, 5) != 0);
	assert_true(lsim_schedule_tag(eng, 300, tag_fire, &t, 0, LSIM_TAG_INTERNAL) != 0);
	assert_int_equal(lsim_reschedule(eng, a, 400), 0); /* keeps its tag */
	assert_int_equal(lsim_run(eng, LSIM_TIME_MAX), 4);
	assert_int_equal(t.n, 4);
	static const uint32_t want[] = {0, 5, LSIM_TAG_INTERNAL, 7};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(t.hook[i], want[i]);
		assert_int_equal(t.fired[i], want[i]);
	}
	/* the sample at 250, after the event tagged 5, sees 0 */
	assert_int_equal(t.sample, 100);
	assert_int_equal(lsim_event_tag(eng), 0);
	lsim_engine_destroy(eng);

	/* through the bucket tier (more than 4,096 pending) */
	eng = lsim_engine_create();
	t = (struct tag_seen){.eng = eng};
	for (uint64_t i = 0; i < 20000; i++)
		assert_true(lsim_schedule_tag(eng, (lsim_time)((i * 7919) % 100000),
					      tag_check, &t, i, (uint32_t)(i % 7)) != 0);
	assert_int_equal(lsim_run(eng, LSIM_TIME_MAX), 20000);
	assert_int_equal(t.n, 20000);
	assert_int_equal(t.bad, 0);
	lsim_engine_destroy(eng);
}

/* ---- randomized cross-check against a reference queue ---- */

struct ref_ev {
	lsim_time t;
	uint64_t seq;
	lsim_event_id id;
	uint64_t tag;
};

#define REF_MAX 16384
#define STALE_MAX 64

struct xcheck {
	struct lsim_engine *eng;
	uint64_t rng;
	struct ref_ev ev[REF_MAX]; /* sorted by (t, seq) */
	int n;
	uint64_t seq;
	uint64_t next_tag;
	lsim_time now;
	lsim_event_id stale[STALE_MAX];
	int n_stale;
	uint64_t fired;
	int target;	     /* pending events random_op steers towards */
	lsim_time spread;    /* times up to this far ahead (0: 1000) */
	lsim_time far_every; /* 1 in this many times is far ahead (0: none) */
};

static uint64_t xs_next(struct xcheck *x)
{
	uint64_t v = x->rng;
	v ^= v << 13;
	v ^= v >> 7;
	v ^= v << 17;
	x->rng = v;
	return v;
}

static uint64_t xs_below(struct xcheck *x, uint64_t n)
{
	return xs_next(x) % n;
}

static void remember_stale(struct xcheck *x, lsim_event_id id)
{
	x->stale[x->n_stale % STALE_MAX] = id;
	x->n_stale++;
}

static bool ref_before(const struct ref_ev *a, const struct ref_ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void ref_insert(struct xcheck *x, struct ref_ev e)
{
	assert_true(x->n < REF_MAX);
	int i = x->n;
	while (i > 0 && ref_before(&e, &x->ev[i - 1])) {
		x->ev[i] = x->ev[i - 1];
		i--;
	}
	x->ev[i] = e;
	x->n++;
}

static struct ref_ev ref_remove(struct xcheck *x, int i)
{
	struct ref_ev e = x->ev[i];
	for (int k = i; k + 1 < x->n; k++)
		x->ev[k] = x->ev[k + 1];
	x->n--;
	return e;
}

static lsim_time random_time(struct xcheck *x)
{
	/* mostly small steps for many ties; sometimes in the past */
	uint64_t r = xs_below(x, 10);
	if (r == 0)
		return x->now - (lsim_time)xs_below(x, 20);
	if (x->far_every && xs_below(x, (uint64_t)x->far_every) == 0)
		return x->now + 1000000 + (lsim_time)xs_below(x, 1000000000);
	lsim_time spread = x->spread ? x->spread : 1000;
	return x->now + (lsim_time)xs_below(x, r < 5 ? 4 : (uint64_t)spread);
}

static void xcheck_fire(struct lsim_engine *eng, void *subject, uint64_t arg);

static void op_schedule(struct xcheck *x)
{
	lsim_time at = random_time(x);
	uint64_t tag = x->next_tag++;
	lsim_event_id id = lsim_schedule(x->eng, at, xcheck_fire, x, tag);
	assert_true(id != 0);
	struct ref_ev e = {at < x->now ? x->now : at, x->seq++, id, tag};
	ref_insert(x, e);
}

static void op_cancel(struct xcheck *x)
{
	if (x->n == 0)
		return;
	struct ref_ev e = ref_remove(x, (int)xs_below(x, (uint64_t)x->n));
	assert_int_equal(lsim_cancel(x->eng, e.id), 0);
	remember_stale(x, e.id);
}

static void op_reschedule(struct xcheck *x)
{
	if (x->n == 0)
		return;
	struct ref_ev e = ref_remove(x, (int)xs_below(x, (uint64_t)x->n));
	lsim_time at = random_time(x);
	assert_int_equal(lsim_reschedule(x->eng, e.id, at), 0);
	e.t = at < x->now ? x->now : at;
	e.seq = x->seq++;
	ref_insert(x, e);
}

static void op_stale(struct xcheck *x)
{
	if (x->n_stale == 0)
		return;
	int k = x->n_stale < STALE_MAX ? x->n_stale : STALE_MAX;
	lsim_event_id id = x->stale[xs_below(x, (uint64_t)k)];
	assert_false(lsim_event_pending(x->eng, id));
	if (xs_below(x, 2))
		assert_int_equal(lsim_cancel(x->eng, id), LSIM_ESTATE);
	else
		assert_int_equal(lsim_reschedule(x->eng, id, x->now + 3),
				 LSIM_ESTATE);
}

static void check_pending(struct xcheck *x)
{
	assert_int_equal(lsim_pending(x->eng), (size_t)x->n);
	if (x->n > 0) {
		int i = (int)xs_below(x, (uint64_t)x->n);
		assert_true(lsim_event_pending(x->eng, x->ev[i].id));
	}
}

/* One random operation other than running; biased to keep about
 * x->target events queued, so the heap has depth. */
static void random_op(struct xcheck *x)
{
	uint64_t r = xs_below(x, 100);
	if (r < (x->n < x->target ? 60u : 20u))
		op_schedule(x);
	else if (r < 60)
		op_cancel(x);
	else if (r < 85)
		op_reschedule(x);
	else
		op_stale(x);
	check_pending(x);
}

static void xcheck_fire(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	struct xcheck *x = subject;
	assert_true(x->n > 0);
	struct ref_ev e = ref_remove(x, 0);
	assert_int_equal(arg, e.tag);
	assert_int_equal(lsim_now(eng), e.t);
	assert_false(lsim_event_pending(eng, e.id));
	x->now = e.t;
	x->fired++;
	remember_stale(x, e.id);
	check_pending(x);
	/* handlers schedule, cancel and reschedule too */
	int k = (int)xs_below(x, 4);
	for (int i = 0; i < k; i++)
		random_op(x);
	lsim_stop(eng);
}

static struct xcheck *xcheck_new(uint64_t seed, int target)
{
	struct xcheck *x = calloc(1, sizeof *x);
	assert_non_null(x);
	x->eng = lsim_engine_create();
	assert_non_null(x->eng);
	x->rng = seed;
	x->target = target;
	return x;
}

/* Runs the engine without a limit: exactly the reference's first event. */
static void xcheck_fire_one(struct xcheck *x)
{
	uint64_t before_fired = x->fired;
	assert_int_equal(lsim_run(x->eng, LSIM_TIME_MAX), 1);
	assert_int_equal(x->fired, before_fired + 1);
}

/* Drains: everything left fires in reference order; at least min_fired
 * events fired in all (the test really ran events). */
static void xcheck_finish(struct xcheck *x, uint64_t min_fired)
{
	while (x->n > 0)
		assert_int_equal(lsim_run(x->eng, LSIM_TIME_MAX), 1);
	assert_int_equal(lsim_pending(x->eng), 0);
	assert_int_equal(lsim_events_processed(x->eng), x->fired);
	assert_true(x->fired > min_fired);
	lsim_engine_destroy(x->eng);
	free(x);
}

static void test_random_cross_check(void **state)
{
	(void)state;
	struct xcheck *x = xcheck_new(0x243f6a8885a308d3u, 400);
	const int ops = 100000;
	for (int i = 0; i < ops; i++) {
		if (xs_below(x, 100) < 30 && x->n > 0)
			xcheck_fire_one(x);
		else
			random_op(x);
	}
	xcheck_finish(x, 30000);
}

/* The same with thousands of events pending, beyond the point where the
 * engine moves later events into time buckets and a far list: some
 * events far ahead, runs that stop at a limit (so events are scheduled
 * before the bucket window's start), and every operation checked against
 * the reference as above. */
static void test_random_cross_check_tiered(void **state)
{
	(void)state;
	struct xcheck *x = xcheck_new(0x13198a2e03707344u, 6000);
	x->spread = 1000000;
	x->far_every = 50;
	for (int i = 0; i < 7000; i++)
		op_schedule(x);
	const int ops = 60000;
	uint64_t limit_stops = 0;
	for (int i = 0; i < ops; i++) {
		uint64_t r = xs_below(x, 100);
		if (r < 25 && x->n > 0) {
			xcheck_fire_one(x);
		} else if (r < 30 && x->n > 0) {
			/* a limit: fires the first event if it is due by then,
			 * else the clock moves to the limit */
			lsim_time until = x->now + (lsim_time)xs_below(x, 50);
			if (xs_below(x, 2)) {
				/* past what is due now, to just short of the next */
				while (x->n > 0 && x->ev[0].t == x->now)
					assert_int_equal(lsim_run(x->eng, x->now), 1);
				if (x->n == 0)
					continue;
				until = x->ev[0].t - 1;
			}
			bool due = x->ev[0].t <= until;
			assert_int_equal(lsim_run(x->eng, until), due ? 1 : 0);
			if (!due) {
				x->now = until;
				limit_stops++;
			}
			assert_int_equal(lsim_now(x->eng), x->now);
		} else {
			random_op(x);
		}
	}
	assert_true(limit_stops > 100);
	xcheck_finish(x, 15000);
}

/* ---- pool reuse ---- */

struct churn {
	uint64_t left;
	uint32_t max_slot;
};

static void churn_fire(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	struct churn *c = subject;
	if (c->left == 0)
		return;
	c->left--;
	lsim_event_id id = lsim_schedule_in(eng, (lsim_time)(arg % 97) + 1,
					    churn_fire, c, arg * 31 + 7);
	assert_true(id != 0);
	/* white-box: the low 32 bits of a handle are its pool slot */
	uint32_t slot = (uint32_t)(id & 0xffffffffu);
	if (slot > c->max_slot)
		c->max_slot = slot;
}

static void test_pool_reuse(void **state)
{
	(void)state;
	struct lsim_engine *eng = lsim_engine_create();
	struct churn c = {.left = 50000, .max_slot = 0};
	for (uint64_t i = 0; i < 100; i++)
		assert_true(lsim_schedule(eng, (lsim_time)i, churn_fire, &c,
					  i) != 0);
	assert_int_equal(lsim_pending(eng), 100);
	/* steady state: each fired event is replaced, the count holds */
	uint64_t n = lsim_run(eng, 10000);
	assert_true(n > 10000);
	assert_int_equal(c.left, 50000 - n); /* one replacement each */
	assert_int_equal(lsim_pending(eng), 100);
	assert_int_equal(lsim_now(eng), 10000);
	/* the fired event's slot is reused by its replacement: the pool never
	 * exceeds the peak pending count */
	assert_true(c.max_slot < 100);
	c.left = 0;
	assert_int_equal(lsim_run(eng, LSIM_TIME_MAX), 100);
	assert_int_equal(lsim_pending(eng), 0);
	assert_int_equal(lsim_events_processed(eng), n + 100);
	lsim_engine_destroy(eng);
}

/* ---- two engines ---- */

static void test_two_engines(void **state)
{
	(void)state;
	struct lsim_engine *a = lsim_engine_create();
	struct lsim_engine *b = lsim_engine_create();
	assert_non_null(a);
	assert_non_null(b);
	struct log la, lb;
	log_init(&la);
	log_init(&lb);
	lsim_set_periodic(a, 15, log_sample, &la);
	lsim_event_id ha = lsim_schedule(a, 10, log_fire, &la, 1);
	lsim_event_id hb = lsim_schedule(b, 10, log_fire, &lb, 2);
	assert_true(lsim_schedule(a, 30, log_fire, &la, 3) != 0);
	assert_true(lsim_schedule(b, 5, log_fire, &lb, 4) != 0);
	assert_int_equal(lsim_cancel(b, hb), 0);
	/* the first event of each engine has the same handle bits; cancelling
	 * one in b left a's intact */
	assert_true(lsim_event_pending(a, ha));
	assert_int_equal(lsim_pending(a), 2);
	assert_int_equal(lsim_pending(b), 1);
	assert_int_equal(lsim_run(b, LSIM_TIME_MAX), 1);
	assert_int_equal(lsim_now(b), 5);
	assert_int_equal(lsim_now(a), 0);
	assert_int_equal(lsim_run(a, LSIM_TIME_MAX), 2);
	assert_int_equal(lsim_now(a), 30);
	static const uint64_t aa[] = {1, SAMPLE_MARK, SAMPLE_MARK, 3};
	static const lsim_time at_a[] = {10, 15, 30, 30};
	expect_log(&la, 4, aa, at_a);
	static const uint64_t ab[] = {4};
	static const lsim_time at_b[] = {5};
	expect_log(&lb, 1, ab, at_b);
	assert_int_equal(lsim_events_processed(a), 2);
	assert_int_equal(lsim_events_processed(b), 1);
	lsim_engine_destroy(a);
	lsim_engine_destroy(b);
	lsim_engine_destroy(NULL);
}

/* The tick: after every 2^k-th event (by the count processed), with now
 * at that event, not after periodic callbacks; removed with NULL. */
struct tick_log {
	int n;
	lsim_time at[8];
	uint64_t count[8];
};

static void tick_nop(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	(void)subject;
	(void)arg;
}

static void tick_rec(struct lsim_engine *eng, void *ctx)
{
	struct tick_log *l = ctx;
	if (l->n < 8) {
		l->at[l->n] = lsim_now(eng);
		l->count[l->n] = lsim_events_processed(eng);
	}
	l->n++;
}

static void test_tick(void **state)
{
	(void)state;
	struct lsim_engine *eng = lsim_engine_create();
	assert_non_null(eng);
	struct tick_log l = {0}, p = {0};
	for (int i = 1; i <= 10; i++)
		assert_true(lsim_schedule(eng, i * 100, tick_nop, NULL, 0) != 0);
	lsim_set_periodic(eng, 50, tick_rec, &p); /* samples do not count */
	lsim_set_tick(eng, 2, tick_rec, &l);	  /* every 4th event */
	lsim_run(eng, 1000);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.at[0], 400);
	assert_int_equal(l.count[0], 4);
	assert_int_equal(l.at[1], 800);
	assert_int_equal(l.count[1], 8);
	assert_int_equal(p.n, 20); /* samples at 50 .. 1000 (before the event at 1000) */
	lsim_set_tick(eng, 0, NULL, NULL);
	assert_true(lsim_schedule(eng, 2000, tick_nop, NULL, 0) != 0);
	lsim_run(eng, LSIM_TIME_MAX);
	assert_int_equal(l.n, 2);
	lsim_engine_destroy(eng);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_by_time),
		cmocka_unit_test(test_fifo_ties),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_stale_handles),
		cmocka_unit_test(test_cancel_from_handler),
		cmocka_unit_test(test_reschedule),
		cmocka_unit_test(test_past_clamps_to_now),
		cmocka_unit_test(test_run_until),
		cmocka_unit_test(test_stop_from_handler),
		cmocka_unit_test(test_periodic),
		cmocka_unit_test(test_periodic_count_and_stop),
		cmocka_unit_test(test_before_event),
		cmocka_unit_test(test_event_tags),
		cmocka_unit_test(test_random_cross_check),
		cmocka_unit_test(test_random_cross_check_tiered),
		cmocka_unit_test(test_pool_reuse),
		cmocka_unit_test(test_two_engines),
		cmocka_unit_test(test_tick),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
