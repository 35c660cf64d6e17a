/*
 * test_adaptors.c - the autoscaling adaptors (policies/adaptor/adaptors.c),
 * called directly as the core calls them: parameters bound from YAML by
 * their table, init, desired() on synthetic groups and instance views at
 * chosen times, fini. Decisions are checked against hand-computed values:
 * threshold's hold window and cooldowns, target tracking's HPA formula,
 * tolerance and stabilisation windows, the predictive policy's Holt and
 * Holt-Winters forecasts and its provisioning one start lead ahead, the
 * schedule table (parsing, lookup, wrap-around). A conformance test feeds
 * every adaptor random groups and checks each answer lies in [min, max].
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/config.h"
#include "registry.h"

#define S LSIM_S
#define MAX_INST 64

/* One adaptor, bound and started as the core does it. */
struct pol {
	const struct lsim_policy_type *t;
	void *state;
	struct lsim_doc *doc;
	bool started;
	struct lsim_diag d;
};

/* params: a YAML map of parameters ("{}" for the defaults). Returns the
 * binding's or init's code; pol_close must follow either way. */
static int pol_open(struct pol *p, const char *name, const char *params,
		    int32_t n_groups)
{
	memset(p, 0, sizeof *p);
	p->t = lsim_registry_find(LSIM_KIND_ADAPTOR, name);
	assert_non_null(p->t);
	assert_int_equal(p->t->abi, LSIM_POLICY_ABI);
	p->state = calloc(1, p->t->state_size ? p->t->state_size : 1);
	assert_non_null(p->state);
	assert_int_equal(lsim_doc_load_string(params, "test.yaml", &p->doc, &p->d), 0);
	static const char *const reserved[] = {"name", "plugin", NULL};
	int rc = lsim_cfg_bind(p->doc, p->doc->root, "adaptor", p->t->params,
			       p->t->n_params, reserved, p->state, &p->d);
	if (rc != 0)
		return rc;
	struct lsim_policy_ctx ctx = {
		.seed = 1, .n_instances = 4, .n_classes = 1, .n_groups = n_groups,
	};
	rc = p->t->init ? p->t->init(p->state, &ctx) : 0;
	p->started = rc == 0;
	return rc;
}

static void pol_close(struct pol *p)
{
	if (p->started && p->t->fini)
		p->t->fini(p->state);
	free(p->state);
	lsim_doc_destroy(p->doc);
}

/* Opens and asserts success. */
static void pol_start(struct pol *p, const char *name, const char *params)
{
	int rc = pol_open(p, name, params, 1);
	if (rc != 0)
		fail_msg("%s %s: rc %d: %s: %s", name, params, rc, p->d.key, p->d.msg);
}

static int32_t ask(struct pol *p, const struct lsim_scale_group *g,
		   const struct lsim_instance_info *inst, lsim_time now)
{
	const struct lsim_adaptor_ops *ops = p->t->ops;
	return ops->desired(p->state, g, inst, g->live, now);
}

static void set_util(struct lsim_instance_info *inst, int32_t n, double u)
{
	for (int32_t i = 0; i < n; i++) {
		inst[i].id = i;
		inst[i].mon_gpu_util = u;
		inst[i].mon_kv_util = u;
	}
}

/* ---- threshold ---- */

static void test_threshold_hold_and_cooldowns(void **state)
{
	(void)state;
	struct pol p;
	pol_start(&p, "threshold",
		  "{metric: gpu_util, high: 0.8, low: 0.3, window: 30s, step: 2, "
		  "cooldown_out: 60s, cooldown_in: 120s}");
	struct lsim_scale_group g = {
		.live = 4, .ready = 4, .min = 1, .max = 20, .period = 10 * S,
	};
	struct lsim_instance_info inst[MAX_INST] = {{0}};
	/* {time s, busy fraction, expected count}; instances start at once */
	static const struct {
		int t;
		double u;
		int want;
	} steps[] = {
		/* above 0.8 from t=10: the hold window of 30 s ends at t=40 */
		{10, 0.9, 4}, {20, 0.9, 4}, {30, 0.9, 4}, {40, 0.9, 6},
		/* cooldown_out: the next scale-out 60 s after the last */
		{50, 0.9, 6}, {60, 0.9, 6}, {90, 0.9, 6}, {100, 0.9, 8},
		/* in the band: the hold starts again at 120 (window met at
		 * 150, cooldown at 160) */
		{110, 0.5, 8}, {120, 0.9, 8}, {130, 0.9, 8}, {140, 0.9, 8},
		{150, 0.9, 8}, {160, 0.9, 10},
		/* below 0.3 from 170: scale-in at 200, not held back by
		 * the scale-out at 160 (cooldowns are per direction) */
		{170, 0.1, 10}, {180, 0.1, 10}, {190, 0.1, 10}, {200, 0.1, 8},
		/* cooldown_in: 120 s */
		{210, 0.1, 8}, {310, 0.1, 8}, {320, 0.1, 6}, {330, 0.1, 6},
		{440, 0.1, 4},
	};
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		set_util(inst, g.live, steps[i].u);
		int32_t got = ask(&p, &g, inst, steps[i].t * S);
		if (got != steps[i].want)
			fail_msg("t=%d s: got %d, want %d", steps[i].t, got,
				 steps[i].want);
		g.live = g.ready = got;
	}
	pol_close(&p);
}

static void test_threshold_metrics(void **state)
{
	(void)state;
	struct lsim_instance_info inst[MAX_INST] = {{0}};
	struct pol p;
	/* the mean is over the ready instances, listed first: 2 ready at
	 * 0.9 and 2 starting at 0 -> 0.9 (all four would give 0.45) */
	pol_start(&p, "threshold", "{window: 0s}");
	struct lsim_scale_group g = {
		.live = 4, .ready = 2, .min = 0, .max = 10, .period = S,
	};
	set_util(inst, 2, 0.9);
	assert_int_equal(ask(&p, &g, inst, 10 * S), 5);
	/* no ready instance: nothing measured, no change */
	g.ready = 0;
	assert_int_equal(ask(&p, &g, inst, 200 * S), 4);
	/* clamped to max */
	g.live = g.ready = 10;
	set_util(inst, 10, 0.95);
	assert_int_equal(ask(&p, &g, inst, 400 * S), 10);
	pol_close(&p);

	/* rate: 36 req/s over 4 instances of 10 req/s = 0.9 > 0.8 */
	pol_start(&p, "threshold", "{metric: rate, window: 0s, capacity_rps: 10}");
	g = (struct lsim_scale_group){
		.live = 4, .ready = 4, .min = 1, .max = 10, .period = S,
		.arrival_rate = 36,
	};
	assert_int_equal(ask(&p, &g, inst, S), 5);
	/* 10 / 4 / 10 = 0.25 < 0.3 */
	g.arrival_rate = 10;
	assert_int_equal(ask(&p, &g, inst, 2 * S), 3);
	pol_close(&p);

	/* rate with the group's capacity; none at all: no change */
	pol_start(&p, "threshold", "{metric: rate, window: 0s}");
	g.arrival_rate = 36;
	g.capacity_rps = 10;
	assert_int_equal(ask(&p, &g, inst, S), 5);
	g.capacity_rps = 0;
	assert_int_equal(ask(&p, &g, inst, 100 * S), 4);
	/* a group at zero with requests coming starts `step` instances */
	g.live = g.ready = 0;
	g.min = 0;
	g.arrival_rate = 5;
	assert_int_equal(ask(&p, &g, inst, 200 * S), 1);
	pol_close(&p);

	/* queue: waiting 10 and 0 -> 5 per instance > 4 */
	pol_start(&p, "threshold", "{metric: queue, high: 4, low: 1, window: 0s}");
	g = (struct lsim_scale_group){
		.live = 2, .ready = 2, .min = 1, .max = 10, .period = S,
	};
	memset(inst, 0, sizeof inst);
	inst[0].waiting = 10;
	assert_int_equal(ask(&p, &g, inst, S), 3);
	pol_close(&p);

	/* low must be below high */
	assert_int_equal(pol_open(&p, "threshold", "{high: 0.5, low: 0.5}", 1),
			 LSIM_EINVAL);
	pol_close(&p);
	/* unknown metric: the binding lists the choices */
	assert_int_equal(pol_open(&p, "threshold", "{metric: cpu}", 1), LSIM_EINVAL);
	assert_string_equal(p.d.key, "adaptor.metric");
	assert_non_null(strstr(p.d.msg, "gpu_util|kv_util|queue|rate"));
	pol_close(&p);
}

/* ---- target_tracking ---- */

static void test_target_tracking_formula(void **state)
{
	(void)state;
	struct lsim_instance_info inst[MAX_INST] = {{0}};
	struct pol p;
	pol_start(&p, "target_tracking", "{target: 0.6, stabilization: 0s}");
	struct lsim_scale_group g = {
		.live = 2, .ready = 2, .min = 0, .max = 100, .period = 15 * S,
	};
	/* ceil(2 * 0.9 / 0.6) = 3 */
	set_util(inst, 2, 0.9);
	assert_int_equal(ask(&p, &g, inst, 15 * S), 3);
	/* 0.65 / 0.6 - 1 = 0.083 <= 0.1: no change */
	set_util(inst, 2, 0.65);
	assert_int_equal(ask(&p, &g, inst, 30 * S), 2);
	/* 0.67 / 0.6 - 1 = 0.117 > 0.1: ceil(2.233) = 3 */
	set_util(inst, 2, 0.67);
	assert_int_equal(ask(&p, &g, inst, 45 * S), 3);
	/* 0.2: ceil(0.667) = 1 (no stabilisation) */
	set_util(inst, 2, 0.2);
	assert_int_equal(ask(&p, &g, inst, 60 * S), 1);
	/* counts only the ready instances: 2 ready of 5 at 0.9 -> 3, and
	 * within the tolerance it keeps the live count, 5 */
	g.live = 5;
	set_util(inst, 2, 0.9);
	assert_int_equal(ask(&p, &g, inst, 75 * S), 3);
	set_util(inst, 2, 0.62);
	assert_int_equal(ask(&p, &g, inst, 90 * S), 5);
	/* no ready instance: no change */
	g.ready = 0;
	assert_int_equal(ask(&p, &g, inst, 105 * S), 5);
	pol_close(&p);

	/* 3 at 0.9 for a target of 0.3 is 9 instances; in doubles the
	 * quotient is 9.000000000000002, which must not ask for 10 */
	pol_start(&p, "target_tracking", "{target: 0.3}");
	g = (struct lsim_scale_group){
		.live = 3, .ready = 3, .min = 0, .max = 100, .period = S,
	};
	set_util(inst, 3, 0.9);
	assert_int_equal(ask(&p, &g, inst, S), 9);
	pol_close(&p);

	/* rate: ceil(95 / 10 / 0.5) = 19, even with nothing ready yet */
	pol_start(&p, "target_tracking",
		  "{metric: rate, target: 0.5, stabilization: 0s}");
	g = (struct lsim_scale_group){
		.live = 4, .ready = 4, .min = 0, .max = 100, .period = S,
		.arrival_rate = 95, .capacity_rps = 10,
	};
	assert_int_equal(ask(&p, &g, inst, S), 19);
	g.ready = 0;
	assert_int_equal(ask(&p, &g, inst, 2 * S), 19);
	g.capacity_rps = 0; /* no capacity: no change */
	assert_int_equal(ask(&p, &g, inst, 3 * S), 4);
	pol_close(&p);
}

static void test_target_tracking_stabilization(void **state)
{
	(void)state;
	struct lsim_instance_info inst[MAX_INST] = {{0}};
	struct pol p;
	/* HPA defaults: 300 s scale-in window, scale-out at once */
	pol_start(&p, "target_tracking", "{target: 0.5}");
	struct lsim_scale_group g = {
		.live = 4, .ready = 4, .min = 1, .max = 100, .period = 10 * S,
	};
	for (int t = 10; t <= 1000; t += 10) {
		/* at target until 100 s; a 60 s dip (110..160 s); at target
		 * again until 390 s; then a long dip */
		double u = t >= 110 && t <= 160 ? 0.25 : t < 400 ? 0.5 : 0.25;
		set_util(inst, g.ready, u);
		int32_t got = ask(&p, &g, inst, t * S);
		/* the dip of 60 s recommends 2 but the window holds 4; the
		 * long dip scales in when the last recommendation of 4
		 * (390 s) leaves the window, at 390 + 300 s; at 2 the
		 * recommendation is 1, taken when the last 2 (690 s) leaves
		 * it, at 990 s */
		int want = t < 690 ? 4 : t < 990 ? 2 : 1;
		if (got != want)
			fail_msg("t=%d s: got %d, want %d", t, got, want);
		g.live = g.ready = got;
	}
	pol_close(&p);

	/* a scale-out window of 30 s: a spike of two samples is ignored,
	 * one of three (entries after now - 30 s) acts */
	pol_start(&p, "target_tracking",
		  "{target: 0.5, stabilization: 0s, stabilization_out: 30s}");
	g = (struct lsim_scale_group){
		.live = 4, .ready = 4, .min = 1, .max = 100, .period = 10 * S,
	};
	static const struct {
		int t;
		double u;
		int want;
	} steps[] = {
		{10, 0.5, 4}, {20, 0.5, 4}, {30, 1.0, 4}, {40, 1.0, 4},
		{50, 0.5, 4}, {60, 1.0, 4}, {70, 1.0, 4}, {80, 1.0, 8},
		/* scale-in is immediate: ceil(8 * 0.125 / 0.5) = 2 */
		{90, 0.125, 2},
	};
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		set_util(inst, g.ready, steps[i].u);
		int32_t got = ask(&p, &g, inst, steps[i].t * S);
		if (got != steps[i].want)
			fail_msg("t=%d s: got %d, want %d", steps[i].t, got,
				 steps[i].want);
		g.live = g.ready = got;
	}
	pol_close(&p);
}

/* ---- predictive ---- */

/* A seasonal step: 6 samples at 10 req/s, 6 at 40, repeating. */
static double step_rate(int k)
{
	return k % 12 < 6 ? 10.0 : 40.0;
}

static void test_predictive_holt(void **state)
{
	(void)state;
	struct pol p;
	/* season 24 h at 10 s = 8640 samples: Holt for all 300 below.
	 * capacity 0.01, headroom 1: desired = ceil(100 * forecast). */
	pol_start(&p, "predictive",
		  "{alpha: 0.5, beta: 0.3, headroom: 1, capacity_rps: 0.01, "
		  "stabilization: 0s}");
	struct lsim_scale_group g = {
		.live = 1, .ready = 1, .min = 0, .max = INT32_MAX, .period = 10 * S,
	};
	/* a line 100 + 2k: Holt's forecast converges to the line's next
	 * value, 100 + 2(k + 1) */
	int32_t got = 0;
	for (int k = 0; k < 300; k++) {
		g.arrival_rate = 100 + 2.0 * k;
		got = ask(&p, &g, NULL, (k + 1) * 10 * S);
	}
	assert_int_equal(got, 100 * (100 + 2 * 300));
	pol_close(&p);

	/* the first season falls back to Holt (alpha 0.5, beta 0.1): after
	 * six samples of 10, level 10, trend 0; the seventh, 40, gives level
	 * 0.5 * 40 + 0.5 * 10 = 25, trend 0.1 * 15 = 1.5, forecast 26.5 */
	pol_start(&p, "predictive",
		  "{season: 120s, headroom: 1, capacity_rps: 0.01, stabilization: 0s}");
	for (int k = 0; k < 7; k++) {
		g.arrival_rate = step_rate(k);
		got = ask(&p, &g, NULL, (k + 1) * 10 * S);
		if (k < 6)
			assert_int_equal(got, 1000);
	}
	assert_int_equal(got, 2650);
	pol_close(&p);
}

static void test_predictive_holt_winters(void **state)
{
	(void)state;
	struct pol p;
	/* season 120 s at 10 s = 12 samples; the group's capacity */
	pol_start(&p, "predictive",
		  "{season: 120s, headroom: 1, stabilization: 0s}");
	struct lsim_scale_group g = {
		.live = 1, .ready = 1, .min = 0, .max = INT32_MAX, .period = 10 * S,
		.capacity_rps = 0.01,
	};
	/* after 2 seasons the next sample's forecast is the pattern's, to
	 * within 0.01 req/s (one unit of desired) */
	for (int k = 0; k < 72; k++) {
		g.arrival_rate = step_rate(k);
		int32_t got = ask(&p, &g, NULL, (k + 1) * 10 * S);
		if (k >= 23 && abs(got - (int)(100 * step_rate(k + 1))) > 1)
			fail_msg("k=%d: got %d, want %.0f", k, got,
				 100 * step_rate(k + 1));
	}
	pol_close(&p);

	/* with noise (sd 1 req/s): after 4 seasons within 3 req/s */
	pol_start(&p, "predictive",
		  "{season: 120s, headroom: 1, stabilization: 0s}");
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	assert_non_null(r);
	gsl_rng_set(r, 42);
	double worst = 0;
	for (int k = 0; k < 240; k++) {
		g.arrival_rate = step_rate(k) + gsl_ran_gaussian(r, 1.0);
		int32_t got = ask(&p, &g, NULL, (k + 1) * 10 * S);
		double err = fabs(got / 100.0 - step_rate(k + 1));
		if (k >= 47 && err > worst)
			worst = err;
	}
	gsl_rng_free(r);
	printf("  holt-winters, noise sd 1 req/s: worst error %.2f req/s\n", worst);
	assert_true(worst < 3.0);
	pol_close(&p);
}

static void test_predictive_lead(void **state)
{
	(void)state;
	/* capacity 10 req/s: 1 instance at 10 req/s, 4 at 40. The rate steps
	 * up at S = 60 s into each 120 s season (the sample at 70 s is the
	 * first high one) and down at D = 120 s. */
	static const struct {
		const char *params;
		int up;	  /* the call (time in the season) that scales out */
		int down; /* the one that scales in (0: 120 s) */
	} cases[] = {
		/* start_lead 30 s: scale out at S - 30 s, ready at S; scale
		 * in when the rate falls, at D (the next sample is low), not
		 * one lead ahead of it */
		{"{season: 120s, headroom: 1, capacity_rps: 10, stabilization: 0s}",
		 30, 0},
		/* a margin of 10 s: one period earlier */
		{"{season: 120s, headroom: 1, capacity_rps: 10, margin: 10s, "
		 "stabilization: 0s}", 20, 0},
		/* a scale-in window of 30 s: the last count of 4 (at 110 s)
		 * leaves it at 140 s */
		{"{season: 120s, headroom: 1, capacity_rps: 10, stabilization: 30s}",
		 30, 20},
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct pol p;
		pol_start(&p, "predictive", cases[c].params);
		struct lsim_scale_group g = {
			.live = 1, .ready = 1, .min = 1, .max = 16,
			.period = 10 * S, .start_lead = 30 * S,
		};
		for (int k = 0; k < 48; k++) {
			g.arrival_rate = step_rate(k);
			lsim_time now = (k + 1) * 10 * S;
			int32_t got = ask(&p, &g, NULL, now);
			if (k < 14) /* Holt, and its counts in a 30 s window */
				continue;
			/* time in the season of this call (0 = 120 s) */
			int at = (int)((now / S) % 120);
			int want = at >= cases[c].up || at < cases[c].down ? 4 : 1;
			if (got != want)
				fail_msg("case %zu, t=%d s: got %d, want %d", c,
					 (int)(now / S), got, want);
		}
		pol_close(&p);
	}

	/* no capacity anywhere: no change */
	struct pol p;
	pol_start(&p, "predictive", "{}");
	struct lsim_scale_group g = {
		.live = 3, .ready = 3, .min = 1, .max = 16, .period = 10 * S,
		.arrival_rate = 100,
	};
	assert_int_equal(ask(&p, &g, NULL, 10 * S), 3);
	pol_close(&p);
}

/* ---- schedule ---- */

static lsim_time hms(int h, int m, int s)
{
	return ((lsim_time)h * 3600 + m * 60 + s) * S;
}

static void test_schedule_lookup(void **state)
{
	(void)state;
	struct pol p;
	pol_start(&p, "schedule", "{table: \"0h:2,8h:6,20h:3\"}");
	struct lsim_scale_group g = {
		.live = 1, .ready = 1, .min = 0, .max = 100, .period = 60 * S,
	};
	assert_int_equal(ask(&p, &g, NULL, 0), 2);
	assert_int_equal(ask(&p, &g, NULL, hms(7, 59, 59)), 2);
	assert_int_equal(ask(&p, &g, NULL, hms(8, 0, 0)), 6);
	assert_int_equal(ask(&p, &g, NULL, hms(19, 59, 59)), 6);
	assert_int_equal(ask(&p, &g, NULL, hms(20, 0, 0)), 3);
	assert_int_equal(ask(&p, &g, NULL, hms(23, 59, 59)), 3);
	/* wrap-around: the next days */
	assert_int_equal(ask(&p, &g, NULL, hms(24, 0, 0)), 2);
	assert_int_equal(ask(&p, &g, NULL, hms(32, 0, 0)), 6);
	assert_int_equal(ask(&p, &g, NULL, hms(3 * 24 + 21, 0, 0)), 3);
	/* clamped to the group's limits */
	g.max = 5;
	assert_int_equal(ask(&p, &g, NULL, hms(8, 0, 0)), 5);
	g.min = 3;
	assert_int_equal(ask(&p, &g, NULL, hms(1, 0, 0)), 3);
	pol_close(&p);

	/* the first entry after midnight: before it, yesterday's last */
	pol_start(&p, "schedule", "{table: \" 6h : 4 , 18h:1 \"}");
	g = (struct lsim_scale_group){.live = 1, .min = 0, .max = 100, .period = S};
	assert_int_equal(ask(&p, &g, NULL, hms(2, 0, 0)), 1);
	assert_int_equal(ask(&p, &g, NULL, hms(6, 0, 0)), 4);
	assert_int_equal(ask(&p, &g, NULL, hms(18, 0, 0)), 1);
	pol_close(&p);

	/* 0 needs no unit; a 1 h period; an offset of 40 min */
	pol_start(&p, "schedule",
		  "{table: \"0:1,1800s:7,45min:2\", period: 1h, offset: 40min}");
	assert_int_equal(ask(&p, &g, NULL, 0), 7);		  /* 40 min */
	assert_int_equal(ask(&p, &g, NULL, hms(0, 5, 0)), 2);	  /* 45 min */
	assert_int_equal(ask(&p, &g, NULL, hms(0, 20, 0)), 1);	  /* 0 min */
	assert_int_equal(ask(&p, &g, NULL, hms(5, 50, 0)), 7);	  /* 30 min */
	pol_close(&p);
}

static void test_schedule_bad_tables(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"",		   /* empty */
		"0h",		   /* no count */
		"0h:",		   /* empty count */
		":2",		   /* empty time */
		"0h:2,",	   /* empty entry */
		",0h:2",	   /* empty entry */
		"0h:-1",	   /* negative count */
		"0h:2.5",	   /* not an integer */
		"0h:x",		   /* not a number */
		"0h:2:3",	   /* trailing text */
		"0h:2;8h:3",	   /* wrong separator */
		"8h:2,4h:3",	   /* not increasing */
		"8h:2,8h:3",	   /* repeated */
		"24h:1",	   /* not before the period */
		"-1h:2",	   /* negative time */
		"8 parsecs:2",	   /* unknown unit */
		"0h:1,8:2",	   /* no unit */
		"0h:99999999999", /* too large */
	};
	char yaml[128];
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct pol p;
		snprintf(yaml, sizeof yaml, "{table: \"%s\"}", bad[i]);
		int rc = pol_open(&p, "schedule", yaml, 1);
		if (rc != LSIM_EINVAL)
			fail_msg("'%s': rc %d, want LSIM_EINVAL", bad[i], rc);
		pol_close(&p);
	}
	/* in range for 24 h, not for 1 h */
	struct pol p;
	assert_int_equal(pol_open(&p, "schedule", "{table: \"0h:1,2h:3\"}", 1), 0);
	pol_close(&p);
	assert_int_equal(pol_open(&p, "schedule",
				  "{table: \"0h:1,2h:3\", period: 1h}", 1),
			 LSIM_EINVAL);
	pol_close(&p);
	/* the table is required: the binding names the key */
	assert_int_equal(pol_open(&p, "schedule", "{}", 1), LSIM_EINVAL);
	assert_string_equal(p.d.key, "adaptor.table");
	pol_close(&p);
}

/* ---- per-group state ---- */

static void test_groups_independent(void **state)
{
	(void)state;
	struct lsim_instance_info inst[MAX_INST] = {{0}};
	struct pol p;
	/* 2 groups announced; group 3 shows up too (grown on demand) */
	assert_int_equal(pol_open(&p, "threshold", "{window: 20s}", 2), 0);
	struct lsim_scale_group a = {
		.group = 0, .live = 2, .ready = 2, .min = 1, .max = 10,
		.period = 10 * S,
	};
	struct lsim_scale_group b = a;
	b.group = 3;
	/* group 0 hot from 10 s, group 3 hot from 20 s: each acts 20 s
	 * after its own start */
	set_util(inst, 2, 0.9);
	assert_int_equal(ask(&p, &a, inst, 10 * S), 2);
	set_util(inst, 2, 0.5);
	assert_int_equal(ask(&p, &b, inst, 10 * S), 2);
	set_util(inst, 2, 0.9);
	assert_int_equal(ask(&p, &a, inst, 20 * S), 2);
	assert_int_equal(ask(&p, &b, inst, 20 * S), 2);
	assert_int_equal(ask(&p, &a, inst, 30 * S), 3);
	assert_int_equal(ask(&p, &b, inst, 30 * S), 2);
	assert_int_equal(ask(&p, &b, inst, 40 * S), 3);
	pol_close(&p);
}

/* ---- conformance ---- */

static void test_conformance_random(void **state)
{
	(void)state;
	/* every registered adaptor, with parameter sets that reach all of
	 * its branches; schedule needs its table */
	static const char *const variants[] = {
		"{}",
		"{metric: kv_util, window: 0s, cooldown_in: 0s}",
		"{metric: queue, high: 5, low: 1}",
		"{metric: rate, capacity_rps: 3, stabilization_out: 20s}",
		"{season: 1min, margin: 5s}",
		"{table: \"0h:2,1h:60,2h:0\", period: 3h}",
	};
	size_t n_all, tested = 0;
	const struct lsim_policy_type *const *all = lsim_registry_all(&n_all);
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	assert_non_null(r);
	gsl_rng_set(r, 7);
	static const lsim_time periods[] = {
		LSIM_MS, 100 * LSIM_MS, S, 10 * S, 60 * S,
	};
	struct lsim_instance_info inst[MAX_INST];
	for (size_t i = 0; i < n_all; i++) {
		if (all[i]->kind != LSIM_KIND_ADAPTOR)
			continue;
		tested++;
		size_t ran = 0;
		for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
			struct pol p;
			if (pol_open(&p, all[i]->name, variants[v], 3) != 0) {
				/* a variant meant for another adaptor */
				pol_close(&p);
				continue;
			}
			ran++;
			lsim_time now[5] = {0};
			for (int call = 0; call < 4000; call++) {
				struct lsim_scale_group g = {0};
				g.group = (int32_t)gsl_rng_uniform_int(r, 5);
				g.min = (int32_t)gsl_rng_uniform_int(r, 4);
				g.max = g.min + (int32_t)gsl_rng_uniform_int(r, 60);
				g.live = g.min + (int32_t)gsl_rng_uniform_int(
							 r, (unsigned long)(g.max - g.min + 1));
				if (g.live > MAX_INST)
					g.live = MAX_INST;
				g.ready = (int32_t)gsl_rng_uniform_int(
					r, (unsigned long)g.live + 1);
				g.period = periods[gsl_rng_uniform_int(r, 5)];
				g.start_lead = (lsim_time)gsl_rng_uniform_int(r, 600) * S;
				double u = gsl_rng_uniform(r);
				g.arrival_rate = u < 0.1 ? 0
						 : u < 0.12 ? 1e300
							    : 1e4 * gsl_rng_uniform(r);
				u = gsl_rng_uniform(r);
				g.capacity_rps = u < 0.3 ? 0
						 : u < 0.32 ? 1e-300
							    : 100 * gsl_rng_uniform(r);
				for (int32_t k = 0; k < g.live; k++) {
					inst[k] = (struct lsim_instance_info){
						.id = k,
						.mon_gpu_util = gsl_rng_uniform(r),
						.mon_kv_util = gsl_rng_uniform(r),
						.waiting = (int64_t)gsl_rng_uniform_int(r, 1000),
					};
				}
				now[g.group] += g.period;
				int32_t got = ask(&p, &g, g.live ? inst : NULL,
						  now[g.group]);
				if (got < g.min || got > g.max)
					fail_msg("%s %s: %d outside [%d, %d]",
						 all[i]->name, variants[v], got,
						 g.min, g.max);
			}
			pol_close(&p);
		}
		if (ran == 0)
			fail_msg("%s accepted no parameter set", all[i]->name);
	}
	gsl_rng_free(r);
	assert_int_equal(tested, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threshold_hold_and_cooldowns),
		cmocka_unit_test(test_threshold_metrics),
		cmocka_unit_test(test_target_tracking_formula),
		cmocka_unit_test(test_target_tracking_stabilization),
		cmocka_unit_test(test_predictive_holt),
		cmocka_unit_test(test_predictive_holt_winters),
		cmocka_unit_test(test_predictive_lead),
		cmocka_unit_test(test_schedule_lookup),
		cmocka_unit_test(test_schedule_bad_tables),
		cmocka_unit_test(test_groups_independent),
		cmocka_unit_test(test_conformance_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
