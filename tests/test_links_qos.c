/*
 * test_links_qos.c - unit tests of the link model's traffic classes
 * (sim/cluster/links_qos.c): strict priority, weighted sharing and token
 * buckets on one link and on a path, with rates and completion times
 * computed by hand in the comments; a bucket's burst, then its rate, then
 * its refill on a timeline; flow kinds, and a tenant's flows of a kind,
 * mapped to classes; bad input; and
 * the incremental priority-aware solver against a from-scratch solve of
 * the same semantics after every instant of many random runs.
 *
 * Bandwidths are whole bytes per nanosecond (1 GB/s = 1 B/ns), so the
 * arithmetic is exact and times are asserted to the nanosecond.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>

#include "cluster/links.h"

#define GBPS 1e9

struct fx {
	struct lsim_engine *eng;
	struct lsim_net *net;
	int n;
	uint64_t arg[64];
	lsim_time at[64];
};

static void done(void *ctx, lsim_flow_id id, uint64_t arg)
{
	struct fx *f = ctx;
	assert_true(f->n < 64);
	f->arg[f->n] = arg;
	f->at[f->n++] = lsim_now(f->eng);
}

static lsim_time done_at(const struct fx *f, uint64_t arg)
{
	for (int i = 0; i < f->n; i++)
		if (f->arg[i] == arg)
			return f->at[i];
	return -1;
}

static struct fx *fx_new(void)
{
	struct fx *f = calloc(1, sizeof *f);
	assert_non_null(f);
	f->eng = lsim_engine_create();
	f->net = lsim_net_create(f->eng);
	assert_true(f->eng && f->net);
	return f;
}

static void fx_free(struct fx *f)
{
	lsim_net_destroy(f->net);
	lsim_engine_destroy(f->eng);
	free(f);
}

static int32_t link(struct fx *f, double gbps)
{
	int32_t id;
	assert_int_equal(lsim_link_add(f->net, LSIM_LINK_PCIE, gbps * GBPS, 0,
				       &id, NULL),
			 0);
	return id;
}

static int32_t cls(struct fx *f, int level, double w, double rate_gbps,
		   double burst)
{
	struct lsim_link_class c = {level, w, rate_gbps * GBPS, burst};
	int32_t id = -1;
	assert_int_equal(lsim_net_add_class(f->net, &c, &id, NULL), 0);
	return id;
}

static lsim_flow_id start(struct fx *f, const int32_t *path, int32_t n,
			  double bytes, double cap_gbps, int32_t c,
			  uint64_t arg)
{
	struct lsim_flow_req r = {
		.path = path, .n_hops = n, .bytes = bytes,
		.rate_cap = cap_gbps * GBPS, .done = done, .ctx = f,
		.arg = arg, .cls = c,
	};
	lsim_flow_id id = 0;
	assert_int_equal(lsim_flow_start(f->net, &r, &id, NULL), 0);
	return id;
}

static void nop(struct lsim_engine *eng, void *subject, uint64_t arg)
{
}

/* Runs every event up to t (and those at t), and leaves the clock at t. */
static void run_to(struct fx *f, lsim_time t)
{
	if (t > lsim_now(f->eng))
		lsim_schedule(f->eng, t, nop, NULL, 0);
	lsim_run(f->eng, t);
}

static double gb(struct fx *f, lsim_flow_id id)
{
	struct lsim_flow_info fi;
	assert_int_equal(lsim_flow_get(f->net, id, &fi), 0);
	return fi.rate / GBPS;
}

/* ---- strict priority ---- */

static void test_priority_one_link(void **state)
{
	(void)state;
	struct fx *f = fx_new();
	int32_t l = link(f, 10);
	int32_t hi = cls(f, 0, 1, 0, 0); /* more urgent than class 0 (level 1) */
	/* A (level 0) and B (level 1), 1e9 B each on 10 B/ns: A takes all
	 * 10 B/ns and ends at 1e9 / 10 = 1e8 ns; B is held at 0, then has
	 * the link: 1e9 / 10 more, ends at 2e8 ns. C (level 0, capped at
	 * 4 B/ns) and D (level 1) from 3e8: C 4, D the 6 left. */
	lsim_flow_id a = start(f, &l, 1, 1e9, 0, hi, 1);
	lsim_flow_id b = start(f, &l, 1, 1e9, 0, 0, 2);
	run_to(f, 0);
	assert_true(gb(f, a) == 10 && gb(f, b) == 0);
	run_to(f, 3e8);
	assert_int_equal(done_at(f, 1), 100000000);
	assert_int_equal(done_at(f, 2), 200000000);
	lsim_flow_id c = start(f, &l, 1, 4e9, 4, hi, 3);
	lsim_flow_id d = start(f, &l, 1, 6e9, 0, 0, 4);
	run_to(f, 3e8);
	assert_true(gb(f, c) == 4 && gb(f, d) == 6);
	/* both need 1e9 ns at those rates: done at 1.3e9 */
	lsim_run(f->eng, LSIM_TIME_MAX);
	assert_int_equal(done_at(f, 3), 1300000000);
	assert_int_equal(done_at(f, 4), 1300000000);
	fx_free(f);
}

/* ---- weights ---- */

static void test_weights_one_link(void **state)
{
	(void)state;
	struct fx *f = fx_new();
	int32_t l = link(f, 8);
	int32_t w2 = cls(f, 1, 2, 0, 0), w5 = cls(f, 1, 5, 0, 0);
	/* weights 1, 2, 5 on 8 B/ns: x = 8 / (1 + 2 + 5) = 1, rates 1, 2, 5.
	 * 1e9 B each: the weight-5 flow ends at 1e9 / 5 = 2e8 ns; the others
	 * have moved 2e8 and 4e8 B. Then 8 / 3 and 16 / 3 B/ns: the
	 * weight-2 flow's 6e8 B left take 6e8 / (16 / 3) = 1.125e8 ns (ends
	 * at 3.125e8); the weight-1 flow has 8e8 - 3e8 = 5e8 B left, at
	 * 8 B/ns 6.25e7 ns more: ends at 3.75e8. */
	lsim_flow_id a = start(f, &l, 1, 1e9, 0, 0, 1);
	lsim_flow_id b = start(f, &l, 1, 1e9, 0, w2, 2);
	lsim_flow_id c = start(f, &l, 1, 1e9, 0, w5, 3);
	run_to(f, 0);
	assert_true(gb(f, a) == 1 && gb(f, b) == 2 && gb(f, c) == 5);
	lsim_run(f->eng, LSIM_TIME_MAX);
	assert_int_equal(done_at(f, 3), 200000000);
	assert_int_equal(done_at(f, 2), 312500000);
	assert_int_equal(done_at(f, 1), 375000000);
	fx_free(f);
}

/* ---- priority and weights on a path ---- */

static void test_path(void **state)
{
	(void)state;
	struct fx *f = fx_new();
	int32_t l1 = link(f, 10), l2 = link(f, 6), l3 = link(f, 3);
	int32_t hi = cls(f, 0, 1, 0, 0), w3 = cls(f, 1, 3, 0, 0);
	int32_t p12[] = {l1, l2}, p23[] = {l2, l3};
	/* C, level 0, on L2, capped at 2: C = 2; L2 leaves 4 to level 1.
	 * A (weight 1) on L1 + L2, B (weight 3) on L1, D (weight 1) on L2 +
	 * L3. Level 1 fills x: L1 has weight 4 over 10 (x = 2.5), L2
	 * weight 2 over 4 (x = 2), L3 weight 1 over 3 (x = 3). L2 is the
	 * bottleneck at x = 2: A = D = 2. Then L1 has 10 - 2 = 8 for B
	 * alone: x = 8 / 3, B = 8. L3 carries D's 2 of 3. */
	lsim_flow_id c = start(f, &l2, 1, 1e12, 2, hi, 1);
	lsim_flow_id a = start(f, p12, 2, 1e12, 0, 0, 2);
	lsim_flow_id b = start(f, &l1, 1, 1e12, 0, w3, 3);
	lsim_flow_id d = start(f, p23, 2, 1e12, 0, 0, 4);
	run_to(f, 0);
	assert_true(gb(f, c) == 2);
	assert_true(gb(f, a) == 2 && gb(f, d) == 2);
	assert_true(gb(f, b) == 8);
	/* C is cancelled: L2 gives 6 to level 1. L2: weight 2 over 6
	 * (x = 3), L3: D alone over 3 (x = 3), L1 weight 4 over 10 (x = 2.5)
	 * is now the bottleneck: A = 2.5, B = 7.5; then L2 has 6 - 2.5 = 3.5
	 * for D, L3 3: D = 3. */
	lsim_flow_cancel(f->net, c, NULL);
	run_to(f, 0);
	assert_true(gb(f, a) == 2.5 && gb(f, b) == 7.5 && gb(f, d) == 3);
	fx_free(f);
}

/* ---- token buckets ---- */

static void test_bucket_timeline(void **state)
{
	(void)state;
	struct fx *f = fx_new();
	int32_t l = link(f, 5);
	/* rate 1 B/ns, burst 2e9 B, full at the start */
	int32_t c = cls(f, 1, 1, 1, 2e9);
	/* A, 4.5e9 B, alone on 5 B/ns: while tokens last it runs at 5 and
	 * they drain at 5 - 1 = 4 B/ns: empty at 2e9 / 4 = 5e8 ns, after
	 * 2.5e9 B. The 2e9 B left at 1 B/ns take 2e9 ns: A ends at 2.5e9. */
	lsim_flow_id a = start(f, &l, 1, 4.5e9, 0, c, 1);
	run_to(f, 400000000);
	struct lsim_class_info ci;
	assert_int_equal(lsim_net_class_get(f->net, c, &ci), 0);
	assert_false(ci.limited);
	assert_true(gb(f, a) == 5);
	assert_true(ci.tokens == 2e9 - 4 * 4e8); /* 4e8 B left */
	run_to(f, 1000000000);
	assert_int_equal(lsim_net_class_get(f->net, c, &ci), 0);
	assert_true(ci.limited && ci.tokens == 0);
	assert_true(gb(f, a) == 1);
	run_to(f, 3500000000);
	assert_int_equal(done_at(f, 1), 2500000000);
	/* Refill at 1 B/ns from 2.5e9 to 3.5e9: 1e9 B of tokens (under the
	 * 2e9 burst). B, 2.25e9 B, starts at 3.5e9: 5 B/ns, tokens drain at
	 * 4: empty after 2.5e8 ns and 1.25e9 B; the 1e9 B left at 1 B/ns
	 * take 1e9 ns: B ends at 3.5e9 + 2.5e8 + 1e9 = 4.75e9. */
	assert_int_equal(lsim_net_class_get(f->net, c, &ci), 0);
	assert_true(ci.tokens == 1e9);
	start(f, &l, 1, 2.25e9, 0, c, 2);
	lsim_run(f->eng, LSIM_TIME_MAX);
	assert_int_equal(done_at(f, 2), 4750000000);
	fx_free(f);
}

static void test_rate_limit_path(void **state)
{
	(void)state;
	struct fx *f = fx_new();
	int32_t l1 = link(f, 10), l2 = link(f, 4);
	/* burst 0: a pure limit of 1 B/ns on the class's flows together */
	int32_t c = cls(f, 1, 1, 1, 0);
	int32_t p[] = {l1, l2};
	/* S1 and S2 of the limited class on L1 + L2, F (class 0) on L1 and
	 * G (class 0) on L2. The bucket is a link of 1 B/ns that S1 and S2
	 * cross: x = 0.5 there, the smallest share (L1: 10 / 3, L2: 4 / 3),
	 * so S1 = S2 = 0.5. Then L1 leaves 9 to F, L2 3 to G. Each limited
	 * flow of 5e8 B takes 1e9 ns. */
	lsim_flow_id s1 = start(f, p, 2, 5e8, 0, c, 1);
	lsim_flow_id s2 = start(f, p, 2, 5e8, 0, c, 2);
	lsim_flow_id ff = start(f, &l1, 1, 9e9, 0, 0, 3);
	lsim_flow_id g = start(f, &l2, 1, 3e9, 0, 0, 4);
	run_to(f, 0);
	assert_true(gb(f, s1) == 0.5 && gb(f, s2) == 0.5);
	assert_true(gb(f, ff) == 9 && gb(f, g) == 3);
	struct lsim_class_info ci;
	assert_int_equal(lsim_net_class_get(f->net, c, &ci), 0);
	assert_true(ci.limited && ci.rate_sum == 1 * GBPS);
	lsim_run(f->eng, LSIM_TIME_MAX);
	for (int i = 1; i <= 4; i++)
		assert_int_equal(done_at(f, (uint64_t)i), 1000000000);
	/* the bucket's link is not one of the network's links */
	assert_int_equal(lsim_net_n_links(f->net), 2);
	fx_free(f);
}

/* ---- kinds ---- */

static void test_kinds(void **state)
{
	(void)state;
	struct fx *f = fx_new();
	int32_t l = link(f, 10);
	int32_t lo = cls(f, 2, 1, 0, 0);
	enum lsim_flow_kind k;
	assert_int_equal(lsim_flow_kind_parse("background", &k), 0);
	assert_int_equal(k, LSIM_FLOW_BACKGROUND);
	assert_int_equal(lsim_flow_kind_parse("bulk", &k), LSIM_EINVAL);
	assert_int_equal(lsim_net_map_kind(f->net, LSIM_FLOW_BACKGROUND, lo, NULL), 0);
	assert_int_equal(lsim_net_map_kind(f->net, LSIM_FLOW_KV, 9, NULL),
			 LSIM_EINVAL);
	/* a background flow (level 2) yields to an inference one (class 0,
	 * level 1): 0 and 10 */
	struct lsim_flow_req r = {.path = &l, .n_hops = 1, .bytes = 1e9,
				  .kind = LSIM_FLOW_BACKGROUND};
	lsim_flow_id bg, inf;
	assert_int_equal(lsim_flow_start(f->net, &r, &bg, NULL), 0);
	r.kind = LSIM_FLOW_INFERENCE;
	assert_int_equal(lsim_flow_start(f->net, &r, &inf, NULL), 0);
	run_to(f, 0);
	assert_true(gb(f, bg) == 0 && gb(f, inf) == 10);
	fx_free(f);
}

/* ---- per tenant classes ---- */

/* One 10 GB/s link. kv flows take class kvc (level 1, weight 1); tenant
 * 1's kv flows take t1 (level 1, weight 3), tenant 2's t2 (level 0);
 * inference flows have no class (class 0: level 1, weight 1), whatever
 * their tenant.
 *   C (kv, tenant 2, 10 GB): level 0, alone: 10 GB/s, done at 1 s; the
 *     others get 0 until then.
 *   from 1 s, level 1 by weight 1 : 3 : 1 of 10 GB/s: A (kv, tenant 0,
 *     7 GB) 2, B (kv, tenant 1, 6 GB) 6, D (inference, tenant 1, 7 GB) 2;
 *     B done at 1 + 6/6 = 2 s, A and D have 5 GB left,
 *   from 2 s, 5 GB/s each: done at 2 + 5/5 = 3 s. */
static void test_tenants(void **state)
{
	(void)state;
	struct fx *f = fx_new();
	int32_t l = link(f, 10);
	int32_t kvc = cls(f, 1, 1, 0, 0), t1 = cls(f, 1, 3, 0, 0), t2 = cls(f, 0, 1, 0, 0);
	assert_int_equal(lsim_net_map_kind(f->net, LSIM_FLOW_KV, kvc, NULL), 0);
	assert_false(lsim_net_kind_by_tenant(f->net, LSIM_FLOW_KV));
	assert_int_equal(lsim_net_map_tenant(f->net, LSIM_FLOW_KV, 1, t1, NULL), 0);
	assert_int_equal(lsim_net_map_tenant(f->net, LSIM_FLOW_KV, 2, t2, NULL), 0);
	assert_int_equal(lsim_net_map_tenant(f->net, LSIM_FLOW_KV, 3, 9, NULL), LSIM_EINVAL);
	assert_int_equal(lsim_net_map_tenant(f->net, LSIM_FLOW_KV, -1, t1, NULL), LSIM_EINVAL);
	assert_true(lsim_net_kind_by_tenant(f->net, LSIM_FLOW_KV));
	assert_false(lsim_net_kind_by_tenant(f->net, LSIM_FLOW_INFERENCE));
	assert_int_equal(lsim_net_class_of(f->net, LSIM_FLOW_KV, true, 1), t1);
	assert_int_equal(lsim_net_class_of(f->net, LSIM_FLOW_KV, true, 0), kvc);
	assert_int_equal(lsim_net_class_of(f->net, LSIM_FLOW_KV, false, 1), kvc);
	assert_int_equal(lsim_net_class_of(f->net, LSIM_FLOW_INFERENCE, true, 1), 0);
	struct lsim_flow_req r = {.path = &l, .n_hops = 1, .done = done, .ctx = f,
				  .kind = LSIM_FLOW_KV, .for_tenant = true};
	lsim_flow_id a, b, c, dd;
	r.bytes = 7e9, r.tenant = 0, r.arg = 'A';
	assert_int_equal(lsim_flow_start(f->net, &r, &a, NULL), 0);
	r.bytes = 6e9, r.tenant = 1, r.arg = 'B';
	assert_int_equal(lsim_flow_start(f->net, &r, &b, NULL), 0);
	r.bytes = 10e9, r.tenant = 2, r.arg = 'C';
	assert_int_equal(lsim_flow_start(f->net, &r, &c, NULL), 0);
	r.bytes = 7e9, r.tenant = 1, r.arg = 'D', r.kind = LSIM_FLOW_INFERENCE;
	assert_int_equal(lsim_flow_start(f->net, &r, &dd, NULL), 0);
	run_to(f, 0);
	assert_true(gb(f, c) == 10 && gb(f, a) == 0 && gb(f, b) == 0 && gb(f, dd) == 0);
	run_to(f, 1000000000);
	assert_true(gb(f, a) == 2 && gb(f, b) == 6 && gb(f, dd) == 2);
	lsim_run(f->eng, INT64_MAX);
	assert_int_equal(done_at(f, 'C'), 1000000000);
	assert_int_equal(done_at(f, 'B'), 2000000000);
	assert_int_equal(done_at(f, 'A'), 3000000000);
	assert_int_equal(done_at(f, 'D'), 3000000000);
	fx_free(f);
}

static void test_bad_classes(void **state)
{
	(void)state;
	struct fx *f = fx_new();
	int32_t l = link(f, 10);
	struct lsim_diag d = {0};
	struct lsim_link_class c = {8, 1, 0, 0};
	assert_int_equal(lsim_net_add_class(f->net, &c, NULL, &d), LSIM_EINVAL);
	c = (struct lsim_link_class){1, 0, 0, 0};
	assert_int_equal(lsim_net_add_class(f->net, &c, NULL, &d), LSIM_EINVAL);
	c = (struct lsim_link_class){1, -2, 0, 0};
	assert_int_equal(lsim_net_add_class(f->net, &c, NULL, &d), LSIM_EINVAL);
	c = (struct lsim_link_class){1, 1, -1, 0};
	assert_int_equal(lsim_net_add_class(f->net, &c, NULL, &d), LSIM_EINVAL);
	c = (struct lsim_link_class){1, 1, 1e9, -5};
	assert_int_equal(lsim_net_add_class(f->net, &c, NULL, &d), LSIM_EINVAL);
	/* no class 3 */
	struct lsim_flow_req r = {.path = &l, .n_hops = 1, .bytes = 1, .cls = 3};
	assert_int_equal(lsim_flow_start(f->net, &r, NULL, &d), LSIM_EINVAL);
	int32_t id = cls(f, 1, 1, 1, 0);
	/* no links after a bucket; no class after a flow */
	int32_t l2;
	assert_int_equal(lsim_link_add(f->net, LSIM_LINK_PCIE, 1e9, 0, &l2, &d),
			 LSIM_ESTATE);
	r.cls = id;
	assert_int_equal(lsim_flow_start(f->net, &r, NULL, &d), 0);
	c = (struct lsim_link_class){1, 1, 0, 0};
	assert_int_equal(lsim_net_add_class(f->net, &c, NULL, &d), LSIM_ESTATE);
	fx_free(f);
}

/* ---- many random runs against a from-scratch solve ---- */

#define RL 8	/* links, + 1 per bucket */
#define RH 4	/* hops */
#define RF 100	/* flows */
#define RC 5	/* classes */

/*
 * From scratch: level by level, most urgent first, weighted progressive
 * filling of that level's flows in what the levels above left; a cap c
 * is a private link filling at c / w; a bucket is a link of its current
 * capacity (its rate while empty, unbounded otherwise).
 */
static void ref_rates(int nf, int nl, int32_t (*path)[RH + 1], const int *nh,
		      const double *cap, const double *w, const int *lvl,
		      const double *bw, double *out)
{
	double rem[RL + RC];
	bool frozen[RF];
	for (int l = 0; l < nl; l++)
		rem[l] = bw[l];
	for (int q = 0; q < LSIM_QOS_LEVELS; q++) {
		int left = 0;
		for (int i = 0; i < nf; i++) {
			frozen[i] = lvl[i] != q;
			left += lvl[i] == q;
		}
		while (left > 0) {
			double x = INFINITY;
			int by_link = -1, by_flow = -1;
			for (int l = 0; l < nl; l++) {
				double ws = 0;
				for (int i = 0; i < nf; i++)
					for (int h = 0; h < nh[i]; h++)
						if (!frozen[i] && path[i][h] == l)
							ws += w[i];
				if (ws > 0) {
					double s = rem[l] > 0 ? rem[l] / ws : 0;
					if (s < x) {
						x = s;
						by_link = l;
					}
				}
			}
			for (int i = 0; i < nf; i++)
				if (!frozen[i] && cap[i] > 0 && cap[i] / w[i] <= x) {
					x = cap[i] / w[i];
					by_flow = i;
					by_link = -1;
				}
			assert_true(by_link >= 0 || by_flow >= 0);
			for (int i = 0; i < nf; i++) {
				if (frozen[i])
					continue;
				bool hit = i == by_flow;
				for (int h = 0; h < nh[i] && by_link >= 0; h++)
					hit |= path[i][h] == by_link;
				if (!hit)
					continue;
				out[i] = by_flow == i ? cap[i] : w[i] * x;
				frozen[i] = true;
				left--;
				for (int h = 0; h < nh[i]; h++)
					rem[path[i][h]] -= out[i];
			}
		}
	}
}

struct rnd {
	struct lsim_engine *eng;
	struct lsim_net *net;
	gsl_rng *rng;
	int nl, nc;
	int32_t link[RL];
	double bw[RL];
	int32_t cls[RC];
	struct lsim_link_class cc[RC];
	int32_t path[RF][RH];
	int nh[RF], fc[RF];
	unsigned long seed;
	double cap[RF], bytes[RF];
	lsim_flow_id id[RF];
	int next;
};

static void rnd_stop(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	lsim_stop(eng);
}

static void rnd_cancel(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	struct rnd *r = subject;
	lsim_flow_cancel(r->net, r->id[arg], NULL);
	lsim_stop(eng);
}

static void rnd_done(void *ctx, lsim_flow_id id, uint64_t arg);

static void rnd_start(struct lsim_engine *eng, void *subject, uint64_t i)
{
	struct rnd *r = subject;
	int32_t path[RH];
	for (int h = 0; h < r->nh[i]; h++)
		path[h] = r->link[r->path[i][h]];
	struct lsim_flow_req q = {
		.path = path, .n_hops = r->nh[i], .bytes = r->bytes[i],
		.rate_cap = r->cap[i] * GBPS, .done = rnd_done, .ctx = r,
		.arg = i, .cls = r->cls[r->fc[i]],
	};
	assert_int_equal(lsim_flow_start(r->net, &q, &r->id[i], NULL), 0);
	lsim_time lat = lsim_path_latency(r->net, path, r->nh[i]);
	if (lat > 0)
		lsim_schedule_in(eng, lat, rnd_stop, r, 0);
	if (gsl_rng_uniform(r->rng) < 0.15)
		lsim_schedule_in(eng, (lsim_time)(gsl_rng_uniform(r->rng) * 2e6),
				 rnd_cancel, r, i);
	lsim_stop(eng);
}

static void rnd_done(void *ctx, lsim_flow_id id, uint64_t arg)
{
	struct rnd *r = ctx;
	if (r->next < RF && gsl_rng_uniform(r->rng) < 0.5)
		rnd_start(r->eng, r, (uint64_t)r->next++);
	lsim_stop(r->eng);
}

static int rnd_check(struct rnd *r)
{
	static int32_t path[RF][RH + 1];
	static int nh[RF], who[RF], lvl[RF];
	static double cap[RF], w[RF], want[RF];
	double bw[RL + RC];
	int nl = r->nl, vl[RC];
	for (int l = 0; l < r->nl; l++)
		bw[l] = r->bw[l];
	for (int c = 0; c < r->nc; c++) {
		vl[c] = -1;
		struct lsim_class_info ci;
		assert_int_equal(lsim_net_class_get(r->net, r->cls[c], &ci), 0);
		if (r->cc[c].rate > 0) {
			vl[c] = nl;
			bw[nl++] = ci.limited ? r->cc[c].rate / GBPS : INFINITY;
		}
	}
	int nf = 0;
	for (int i = 0; i < RF; i++) {
		struct lsim_flow_info fi;
		if (!r->id[i] || lsim_flow_get(r->net, r->id[i], &fi) ||
		    fi.state != LSIM_FLOW_ACTIVE)
			continue;
		for (int h = 0; h < r->nh[i]; h++)
			path[nf][h] = r->path[i][h];
		nh[nf] = r->nh[i];
		if (vl[r->fc[i]] >= 0)
			path[nf][nh[nf]++] = vl[r->fc[i]];
		cap[nf] = r->cap[i];
		w[nf] = r->cc[r->fc[i]].weight;
		lvl[nf] = r->cc[r->fc[i]].level;
		who[nf++] = i;
	}
	if (nf == 0)
		return 0;
	ref_rates(nf, nl, path, nh, cap, w, lvl, bw, want);
	for (int k = 0; k < nf; k++) {
		struct lsim_flow_info fi;
		assert_int_equal(lsim_flow_get(r->net, r->id[who[k]], &fi), 0);
		double got = fi.rate / GBPS;
		if (!(fabs(got - want[k]) <= 1e-9 * (want[k] + 1e-3)))
			fail_msg("flow %d (class %d): rate %.17g, reference %.17g at %lld (seed %lu)",
				 who[k], r->fc[who[k]], got, want[k],
				 (long long)lsim_now(r->eng), r->seed);
	}
	return nf;
}

static void test_random_vs_scratch(void **state)
{
	(void)state;
	static const double levels[] = {1, 2, 2, 3, 4, 4.5, 6, 10};
	static const double weights[] = {1, 2, 3, 0.5};
	uint64_t instants = 0, resolved = 0, moving = 0;
	for (unsigned long seed = 1; seed <= 120; seed++) {
		struct rnd *r = calloc(1, sizeof *r);
		assert_non_null(r);
		r->eng = lsim_engine_create();
		r->net = lsim_net_create(r->eng);
		r->rng = gsl_rng_alloc(gsl_rng_mt19937);
		assert_true(r->eng && r->net && r->rng);
		gsl_rng_set(r->rng, seed);
		r->seed = seed;
		r->nl = 3 + (int)(seed % 6);
		for (int l = 0; l < r->nl; l++) {
			r->bw[l] = seed % 2 ? levels[gsl_rng_uniform_int(r->rng, 8)]
					    : 0.5 + 12 * gsl_rng_uniform(r->rng);
			lsim_time lat = seed % 3 ? 0 : (lsim_time)(l % 3) * 500;
			assert_int_equal(lsim_link_add(r->net, LSIM_LINK_NIC,
						       r->bw[l] * GBPS, lat,
						       &r->link[l], NULL),
					 0);
		}
		/* class 0 and up to four more: levels 0 to 2, weights from a
		 * few, some with a bucket (rate 1 to 4 B/ns, burst 0 or up
		 * to 4e6 B) */
		r->nc = 2 + (int)(seed % 4);
		r->cc[0] = (struct lsim_link_class){LSIM_QOS_DEFAULT_LEVEL, 1, 0, 0};
		r->cls[0] = 0;
		for (int c = 1; c < r->nc; c++) {
			struct lsim_link_class *k = &r->cc[c];
			k->level = (int)gsl_rng_uniform_int(r->rng, 3);
			k->weight = weights[gsl_rng_uniform_int(r->rng, 4)];
			if (gsl_rng_uniform(r->rng) < 0.4) {
				k->rate = (1 + (double)gsl_rng_uniform_int(r->rng, 4)) * GBPS;
				k->burst = gsl_rng_uniform(r->rng) < 0.5
						   ? 0
						   : floor(gsl_rng_uniform(r->rng) * 4e6);
			}
			assert_int_equal(lsim_net_add_class(r->net, k, &r->cls[c], NULL), 0);
		}
		for (int i = 0; i < RF; i++) {
			r->nh[i] = 1 + (int)gsl_rng_uniform_int(
					       r->rng, (unsigned long)(r->nl < RH ? r->nl : RH));
			for (int h = 0; h < r->nh[i]; h++) {
				bool again;
				do {
					r->path[i][h] = (int32_t)gsl_rng_uniform_int(
						r->rng, (unsigned long)r->nl);
					again = false;
					for (int j = 0; j < h; j++)
						again |= r->path[i][j] == r->path[i][h];
				} while (again);
			}
			r->bytes[i] = 1e4 + floor(gsl_rng_uniform(r->rng) * 4e6);
			r->cap[i] = gsl_rng_uniform(r->rng) < 0.2
					    ? levels[gsl_rng_uniform_int(r->rng, 8)] / 8
					    : 0;
			r->fc[i] = (int)gsl_rng_uniform_int(r->rng, (unsigned long)r->nc);
		}
		lsim_time t = 0;
		r->next = RF * 3 / 4;
		for (int i = 0; i < r->next; i++) {
			t += 50000 * (lsim_time)gsl_rng_uniform_int(r->rng, 8);
			lsim_schedule(r->eng, t, rnd_start, r, (uint64_t)i);
		}
		struct lsim_net_stats s0, s1;
		lsim_net_get_stats(r->net, &s0);
		while (lsim_pending(r->eng) > 0) {
			lsim_run(r->eng, LSIM_TIME_MAX);
			while (lsim_run(r->eng, lsim_now(r->eng)) > 0)
				;
			int nf = rnd_check(r);
			lsim_net_get_stats(r->net, &s1);
			resolved += s1.flows_recomputed - s0.flows_recomputed;
			moving += (uint64_t)nf * (s1.recomputations - s0.recomputations);
			s0 = s1;
			instants++;
			char why[256];
			if (lsim_net_check(r->net, why, sizeof why))
				fail_msg("seed %lu: %s", seed, why);
		}
		assert_int_equal(s1.flows_active, 0);
		lsim_net_destroy(r->net);
		lsim_engine_destroy(r->eng);
		gsl_rng_free(r->rng);
		free(r);
	}
	assert_true(instants >= 100 * 120);
	/* incremental: clearly fewer flows re-solved than were moving */
	assert_true(resolved < moving * 3 / 4);
	print_message("random_vs_scratch: %llu instants, %llu flows re-solved"
		      " of %llu moving\n",
		      (unsigned long long)instants, (unsigned long long)resolved,
		      (unsigned long long)moving);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_priority_one_link),
		cmocka_unit_test(test_weights_one_link),
		cmocka_unit_test(test_path),
		cmocka_unit_test(test_bucket_timeline),
		cmocka_unit_test(test_rate_limit_path),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_tenants),
		cmocka_unit_test(test_bad_classes),
		cmocka_unit_test(test_random_vs_scratch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
