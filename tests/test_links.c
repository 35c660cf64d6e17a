/*
 * test_links.c - unit tests of the link model (sim/cluster/links.c): exact
 * completion times of single, equal, late-arriving and rate-capped flows,
 * max-min shares on a bottleneck path, recomputation confined to the
 * changed component, conservation of bytes over many random flows, rates
 * of a random run checked against a from-scratch max-min computation,
 * which flows a recomputation re-solves (those at or above the divergence
 * level, counted by hand), the incremental solver against a from-scratch
 * computation after every instant of many random runs, per-link
 * statistics and the utilisation sampler (one link, and only the links
 * that carried flows against every link), FIFO message queues,
 * re-entrant callbacks, cancellation, bad input, and the paths of a
 * two-node cluster.
 *
 * Expected times are computed by hand in the comments. With bandwidths
 * that are whole bytes per nanosecond the arithmetic is exact, so times
 * are asserted to the nanosecond.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/links.h"

#define GBPS 1e9 /* 1 GB/s = 1 byte/ns */

/* ---- a log of completions ---- */

#define LOG_MAX 4096

struct log {
	int n;
	uint64_t arg[LOG_MAX];
	lsim_time at[LOG_MAX];
	struct lsim_engine *eng;
};

static void log_done(void *ctx, lsim_flow_id id, uint64_t arg)
{
	struct log *l = ctx;
	assert_true(id != 0);
	assert_true(l->n < LOG_MAX);
	l->arg[l->n] = arg;
	l->at[l->n] = lsim_now(l->eng);
	l->n++;
}

static void log_msg(void *ctx, uint64_t arg)
{
	log_done(ctx, 1, arg);
}

/* The time flow `arg` finished, or -1. */
static lsim_time done_at(const struct log *l, uint64_t arg)
{
	for (int i = 0; i < l->n; i++)
		if (l->arg[i] == arg)
			return l->at[i];
	return -1;
}

/* The tags of the events run, from a before-event hook. */
struct tag_log {
	int n;
	uint32_t tag[16];
};

static void log_tag(struct lsim_engine *eng, void *ctx)
{
	struct tag_log *t = ctx;
	if (t->n < 16)
		t->tag[t->n++] = lsim_event_tag(eng);
}

struct fixture {
	struct lsim_engine *eng;
	struct lsim_net *net;
	struct log log;
};

static struct fixture *fx_new(void)
{
	struct fixture *fx = calloc(1, sizeof *fx);
	assert_non_null(fx);
	fx->eng = lsim_engine_create();
	assert_non_null(fx->eng);
	fx->net = lsim_net_create(fx->eng);
	assert_non_null(fx->net);
	fx->log.eng = fx->eng;
	return fx;
}

static void fx_free(struct fixture *fx)
{
	lsim_net_destroy(fx->net);
	lsim_engine_destroy(fx->eng);
	free(fx);
}

static int32_t add_link(struct fixture *fx, double bw, lsim_time lat)
{
	int32_t id = -1;
	assert_int_equal(lsim_link_add(fx->net, LSIM_LINK_PCIE, bw, lat, &id,
				       NULL),
			 0);
	return id;
}

static lsim_flow_id start(struct fixture *fx, const int32_t *path, int32_t n,
			  double bytes, double cap, uint64_t arg)
{
	struct lsim_flow_req r = {
		.path = path, .n_hops = n, .bytes = bytes, .rate_cap = cap,
		.done = log_done, .ctx = &fx->log, .arg = arg,
	};
	lsim_flow_id id = 0;
	assert_int_equal(lsim_flow_start(fx->net, &r, &id, NULL), 0);
	assert_true(id != 0);
	return id;
}

/* Schedules a flow start at a later time. */
struct later {
	struct fixture *fx;
	int32_t path[LSIM_PATH_MAX];
	int32_t n;
	double bytes, cap;
	lsim_flow_id id;
};

static void later_fire(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	struct later *lt = subject;
	lt->id = start(lt->fx, lt->path, lt->n, lt->bytes, lt->cap, arg);
}

/* ---- timing ---- */

static void test_one_flow(void **state)
{
	(void)state;
	struct fixture *fx = fx_new();
	int32_t l = add_link(fx, 10 * GBPS, 5 * LSIM_US);
	lsim_flow_id id = start(fx, &l, 1, 1e9, 0, 7);
	struct lsim_flow_info fi;
	assert_int_equal(lsim_flow_get(fx->net, id, &fi), 0);
	assert_int_equal(fi.state, LSIM_FLOW_LATENT);
	assert_int_equal(fi.finish, LSIM_TIME_MAX);
	lsim_run(fx->eng, 5 * LSIM_US); /* the flow is now moving */
	assert_int_equal(lsim_flow_get(fx->net, id, &fi), 0);
	assert_int_equal(fi.state, LSIM_FLOW_ACTIVE);
	assert_true(fi.rate == 10 * GBPS);
	/* 5 us + 1e9 B / 10 B/ns = 5,000 + 100,000,000 ns */
	assert_int_equal(fi.finish, 100005000);
	lsim_run(fx->eng, LSIM_TIME_MAX);
	assert_int_equal(fx->log.n, 1);
	assert_int_equal(fx->log.arg[0], 7);
	assert_int_equal(fx->log.at[0], 100005000);
	assert_int_equal(lsim_flow_get(fx->net, id, &fi), LSIM_ESTATE);
	struct lsim_link_info li;
	assert_int_equal(lsim_link_get(fx->net, l, &li), 0);
	assert_true(li.bytes == 1e9);
	assert_int_equal(li.busy_ns, 100000000);
	assert_true(fabs(li.util_ns - 1e8) < 1e-3);
	assert_int_equal(li.n_flows, 0);
	assert_true(li.util == 0);
	fx_free(fx);
}

static void test_two_equal_flows(void **state)
{
	(void)state;
	struct fixture *fx = fx_new();
	int32_t l = add_link(fx, 10 * GBPS, 5 * LSIM_US);
	start(fx, &l, 1, 1e9, 0, 1);
	start(fx, &l, 1, 1e9, 0, 2);
	lsim_run(fx->eng, LSIM_TIME_MAX);
	/* 5 us + 2e9 B / 10 B/ns, both */
	assert_int_equal(fx->log.n, 2);
	assert_int_equal(done_at(&fx->log, 1), 200005000);
	assert_int_equal(done_at(&fx->log, 2), 200005000);
	/* both started at one instant: one recomputation at activation,
	 * one when the pair ends */
	struct lsim_net_stats st;
	lsim_net_get_stats(fx->net, &st);
	assert_int_equal(st.recomputations, 2);
	assert_int_equal(st.rate_changes, 2);
	fx_free(fx);

	/* Five equal flows of 7e8 B on 7 GB/s: 1.4 B/ns each, which binary
	 * floating point rounds down, so 7e8 / 1.4 = 500000000.00000006.
	 * The exact answer is 500 ms, and that is what must come out (a
	 * plain ceil() would say 1 ns later). */
	fx = fx_new();
	l = add_link(fx, 7 * GBPS, 0);
	for (uint64_t i = 0; i < 5; i++)
		start(fx, &l, 1, 7e8, 0, 10 + i);
	lsim_run(fx->eng, LSIM_TIME_MAX);
	assert_int_equal(fx->log.n, 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(fx->log.at[i], 500 * LSIM_MS);
	fx_free(fx);
}

static void test_flow_arriving_mid_transfer(void **state)
{
	(void)state;
	struct fixture *fx = fx_new();
	int32_t l = add_link(fx, 10 * GBPS, 0);
	start(fx, &l, 1, 1e9, 0, 1);
	struct later b = {.fx = fx, .path = {l}, .n = 1, .bytes = 0.5e9};
	lsim_schedule(fx->eng, 50 * LSIM_MS, later_fire, &b, 2);
	lsim_run(fx->eng, LSIM_TIME_MAX);
	/*
	 * A alone for 50 ms at 10 B/ns: 0.5e9 B moved, 0.5e9 left. From
	 * 50 ms both move at 5 B/ns: A's 0.5e9 and B's 0.5e9 both take
	 * 1e8 ns, so both finish at 150 ms.
	 */
	assert_int_equal(done_at(&fx->log, 1), 150 * LSIM_MS);
	assert_int_equal(done_at(&fx->log, 2), 150 * LSIM_MS);
	fx_free(fx);

	/* Uneven sizes, with latency: B = 0.2 GB. Latency 5 us delays both
	 * starts equally. B at 5 B/ns takes 40 ms: done at 90 ms + 5 us.
	 * A had 0.5e9 - 0.2e9 = 0.3e9 left then, alone at 10 B/ns: 30 ms
	 * more, done at 120 ms + 5 us. */
	fx = fx_new();
	l = add_link(fx, 10 * GBPS, 5 * LSIM_US);
	start(fx, &l, 1, 1e9, 0, 1);
	struct later b2 = {.fx = fx, .path = {l}, .n = 1, .bytes = 0.2e9};
	lsim_schedule(fx->eng, 50 * LSIM_MS, later_fire, &b2, 2);
	lsim_run(fx->eng, LSIM_TIME_MAX);
	assert_int_equal(done_at(&fx->log, 2), 90 * LSIM_MS + 5 * LSIM_US);
	assert_int_equal(done_at(&fx->log, 1), 120 * LSIM_MS + 5 * LSIM_US);
	struct lsim_link_info li;
	assert_int_equal(lsim_link_get(fx->net, l, &li), 0);
	assert_true(fabs(li.bytes - 1.2e9) < 1e-3);
	assert_int_equal(li.busy_ns, 120 * LSIM_MS);
	fx_free(fx);
}

/* ---- max-min shares ---- */

static double rate_of(struct fixture *fx, lsim_flow_id id)
{
	struct lsim_flow_info fi;
	assert_int_equal(lsim_flow_get(fx->net, id, &fi), 0);
	return fi.rate;
}

static void test_bottleneck_shares(void **state)
{
	(void)state;
	struct fixture *fx = fx_new();
	/*
	 * The classic example: link 0 (10 GB/s) carries A and C; link 1
	 * (4 GB/s) carries C and B; link 2 (9 GB/s) carries D and E.
	 *   link 1 is the bottleneck: share 4/2 = 2 -> C = 2, B = 2;
	 *   then link 0 has 10 - 2 = 8 left for A alone -> A = 8;
	 *   link 2: D = E = 4.5.
	 */
	int32_t l0 = add_link(fx, 10 * GBPS, 0);
	int32_t l1 = add_link(fx, 4 * GBPS, 0);
	int32_t l2 = add_link(fx, 9 * GBPS, 0);
	int32_t pc[] = {l0, l1};
	lsim_flow_id a = start(fx, &l0, 1, 1e9, 0, 1);
	lsim_flow_id c = start(fx, pc, 2, 1e9, 0, 3);
	lsim_flow_id b = start(fx, &l1, 1, 1e9, 0, 2);
	lsim_flow_id d = start(fx, &l2, 1, 9e8, 0, 4);
	lsim_flow_id e = start(fx, &l2, 1, 9e8, 0, 5);
	lsim_run(fx->eng, 0);
	assert_true(rate_of(fx, a) == 8 * GBPS);
	assert_true(rate_of(fx, b) == 2 * GBPS);
	assert_true(rate_of(fx, c) == 2 * GBPS);
	assert_true(fabs(rate_of(fx, d) - 4.5 * GBPS) < 1e-3);
	assert_true(fabs(rate_of(fx, e) - 4.5 * GBPS) < 1e-3);
	struct lsim_link_info li;
	lsim_link_get(fx->net, l0, &li);
	assert_true(fabs(li.util - 1.0) < 1e-12);
	lsim_link_get(fx->net, l1, &li);
	assert_true(fabs(li.util - 1.0) < 1e-12);
	/*
	 * A: 1e9 / 8 = 125 ms. B and C: 1e9 / 2 = 500 ms unless freed
	 * earlier: at 125 ms A ends, but C is held by link 1, so nothing
	 * changes for B and C: both end at 500 ms. D, E: 9e8 / 4.5 = 200 ms.
	 */
	struct lsim_net_stats st;
	lsim_net_get_stats(fx->net, &st);
	/* one recomputation at time 0: all 5 flows over the 3 links */
	assert_int_equal(st.recomputations, 1);
	assert_int_equal(st.flows_recomputed, 5);
	assert_int_equal(st.links_recomputed, 3);
	lsim_run(fx->eng, 125 * LSIM_MS);
	assert_int_equal(done_at(&fx->log, 1), 125 * LSIM_MS);
	/* A left at 8 GB/s; C, at 2 below that, cannot change and was not
	 * even re-solved: it kept its rate and its event. The recomputation
	 * visited link 0 and re-solved no flow. */
	struct lsim_flow_info fi;
	assert_int_equal(lsim_flow_get(fx->net, c, &fi), 0);
	assert_int_equal(fi.recomputed, 1);
	assert_int_equal(fi.rate_changes, 1);
	assert_int_equal(fi.finish, 500 * LSIM_MS);
	lsim_net_get_stats(fx->net, &st);
	assert_int_equal(st.recomputations, 2);
	assert_int_equal(st.flows_recomputed, 5);
	assert_int_equal(st.links_recomputed, 4);
	lsim_run(fx->eng, LSIM_TIME_MAX);
	assert_int_equal(done_at(&fx->log, 2), 500 * LSIM_MS);
	assert_int_equal(done_at(&fx->log, 3), 500 * LSIM_MS);
	assert_int_equal(done_at(&fx->log, 4), 200 * LSIM_MS);
	assert_int_equal(done_at(&fx->log, 5), 200 * LSIM_MS);
	fx_free(fx);
}

static void test_rate_cap(void **state)
{
	(void)state;
	struct fixture *fx = fx_new();
	int32_t l = add_link(fx, 10 * GBPS, 0);
	/* A capped at 2 GB/s (a pageable copy); B takes the other 8. */
	lsim_flow_id a = start(fx, &l, 1, 1e9, 2 * GBPS, 1);
	lsim_flow_id b = start(fx, &l, 1, 4e9, 0, 2);
	lsim_run(fx->eng, 0);
	assert_true(rate_of(fx, a) == 2 * GBPS);
	assert_true(rate_of(fx, b) == 8 * GBPS);
	/* A: 1e9 / 2 = 500 ms. B: 8 B/ns x 500 ms = 4e9: also 500 ms. */
	lsim_run(fx->eng, LSIM_TIME_MAX);
	assert_int_equal(done_at(&fx->log, 1), 500 * LSIM_MS);
	assert_int_equal(done_at(&fx->log, 2), 500 * LSIM_MS);
	fx_free(fx);

	/* A cap above the fair share does not bind: 6 > 10 / 2 */
	fx = fx_new();
	l = add_link(fx, 10 * GBPS, 0);
	a = start(fx, &l, 1, 1e9, 6 * GBPS, 1);
	b = start(fx, &l, 1, 1e9, 0, 2);
	lsim_run(fx->eng, 0);
	assert_true(rate_of(fx, a) == 5 * GBPS);
	assert_true(rate_of(fx, b) == 5 * GBPS);
	/* alone the cap binds: a lone capped flow gets 6 */
	lsim_flow_cancel(fx->net, b, NULL);
	lsim_run(fx->eng, 0);
	assert_true(rate_of(fx, a) == 6 * GBPS);
	fx_free(fx);
}

static void test_component_only(void **state)
{
	(void)state;
	struct fixture *fx = fx_new();
	int32_t l0 = add_link(fx, 10 * GBPS, 0);
	int32_t l1 = add_link(fx, 10 * GBPS, 0);
	lsim_flow_id a = start(fx, &l0, 1, 0.5e9, 0, 1);
	lsim_flow_id b = start(fx, &l0, 1, 2e9, 0, 2);
	lsim_flow_id x = start(fx, &l1, 1, 5e9, 0, 3);
	lsim_run(fx->eng, 0);
	struct lsim_flow_info fx0, fb0;
	assert_int_equal(lsim_flow_get(fx->net, x, &fx0), 0);
	assert_int_equal(lsim_flow_get(fx->net, b, &fb0), 0);
	assert_int_equal(fx0.finish, 500 * LSIM_MS);
	assert_int_equal(fb0.finish, 400 * LSIM_MS); /* 2e9 / 5 */
	(void)a;
	/* A: 0.5e9 / 5 = 100 ms. Then B alone: 1.5e9 left / 10 = 150 ms
	 * more, finishing at 250 ms. X never moves. */
	lsim_run(fx->eng, 100 * LSIM_MS);
	assert_int_equal(done_at(&fx->log, 1), 100 * LSIM_MS);
	struct lsim_flow_info fx1, fb1;
	assert_int_equal(lsim_flow_get(fx->net, x, &fx1), 0);
	assert_int_equal(lsim_flow_get(fx->net, b, &fb1), 0);
	assert_int_equal(fx1.recomputed, fx0.recomputed);
	assert_int_equal(fx1.rate_changes, fx0.rate_changes);
	assert_int_equal(fx1.finish, 500 * LSIM_MS);
	assert_int_equal(fb1.recomputed, fb0.recomputed + 1);
	assert_int_equal(fb1.rate_changes, fb0.rate_changes + 1);
	assert_int_equal(fb1.finish, 250 * LSIM_MS);
	struct lsim_net_stats st;
	lsim_net_get_stats(fx->net, &st);
	/* the last recomputation saw B alone: 1 flow, 1 link */
	assert_int_equal(st.recomputations, 2);
	assert_int_equal(st.flows_recomputed, 3 + 1);
	assert_int_equal(st.links_recomputed, 2 + 1);
	lsim_run(fx->eng, LSIM_TIME_MAX);
	assert_int_equal(done_at(&fx->log, 2), 250 * LSIM_MS);
	assert_int_equal(done_at(&fx->log, 3), 500 * LSIM_MS);
	fx_free(fx);
}

/* ---- conservation over many random flows ---- */

#define N_LINKS 12
#define N_RANDOM 600

struct chain {
	struct fixture *fx;
	gsl_rng *rng;
	int32_t links[N_LINKS];
	double per_link[N_LINKS]; /* bytes requested across each link */
	double requested;
	int started, finished;
};

static void chain_start(struct chain *c);

static void chain_done(void *ctx, lsim_flow_id id, uint64_t arg)
{
	struct chain *c = ctx;
	c->finished++;
	/* every third completion starts a new flow from inside the callback */
	if (arg % 3 == 0 && c->started < N_RANDOM)
		chain_start(c);
}

static void chain_start(struct chain *c)
{
	int32_t path[4];
	int32_t n = 1 + (int32_t)gsl_rng_uniform_int(c->rng, 4);
	for (int32_t i = 0; i < n; i++) {
		bool again;
		do {
			path[i] = c->links[gsl_rng_uniform_int(c->rng, N_LINKS)];
			again = false;
			for (int32_t j = 0; j < i; j++)
				again |= path[j] == path[i];
		} while (again);
	}
	double bytes = 1e6 + floor(gsl_rng_uniform(c->rng) * 1e8);
	double cap = gsl_rng_uniform(c->rng) < 0.2 ? 1e9 : 0;
	struct lsim_flow_req r = {
		.path = path, .n_hops = n, .bytes = bytes, .rate_cap = cap,
		.done = chain_done, .ctx = c, .arg = (uint64_t)c->started,
	};
	assert_int_equal(lsim_flow_start(c->fx->net, &r, NULL, NULL), 0);
	for (int32_t i = 0; i < n; i++)
		c->per_link[path[i]] += bytes;
	c->requested += bytes;
	c->started++;
}

static void chain_fire(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	struct chain *c = subject;
	if (c->started < N_RANDOM)
		chain_start(c);
}

static void test_bytes_conserved(void **state)
{
	(void)state;
	struct chain *c = calloc(1, sizeof *c);
	assert_non_null(c);
	c->fx = fx_new();
	c->rng = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(c->rng, 42);
	/* bandwidths 1.5 .. 12.5 GB/s: shares are not whole numbers */
	for (int i = 0; i < N_LINKS; i++)
		c->links[i] = add_link(c->fx, (1.5 + i) * GBPS,
				       (lsim_time)(i * 700));
	/* Poisson arrivals, mean gap 2 ms */
	lsim_time t = 0;
	for (int i = 0; i < N_RANDOM; i++) {
		t += (lsim_time)(-2e6 * log(1 - gsl_rng_uniform(c->rng)));
		lsim_schedule(c->fx->eng, t, chain_fire, c, 0);
	}
	lsim_run(c->fx->eng, LSIM_TIME_MAX);
	assert_int_equal(c->started, N_RANDOM);
	assert_int_equal(c->finished, N_RANDOM);
	struct lsim_net_stats st;
	lsim_net_get_stats(c->fx->net, &st);
	assert_int_equal(st.flows_finished, N_RANDOM);
	assert_int_equal(st.flows_active, 0);
	assert_true(st.bytes_requested == c->requested);
	/* delivered from the rates: within 1 ns of the fastest rate
	 * (12.5 B/ns) per flow of the request */
	assert_true(fabs(st.bytes_delivered - c->requested) <=
		    12.5 * N_RANDOM);
	assert_true(st.max_residual <= 12.5);
	/* the per-flow corrections make link counts exact up to rounding */
	for (int i = 0; i < N_LINKS; i++) {
		struct lsim_link_info li;
		assert_int_equal(lsim_link_get(c->fx->net, c->links[i], &li), 0);
		assert_true(fabs(li.bytes - c->per_link[i]) <=
			    1e-9 * c->per_link[i]);
		assert_int_equal(li.n_flows, 0);
		/* mean utilisation while busy is at most 1 */
		assert_true(li.util_ns <= (double)li.busy_ns * (1 + 1e-9));
	}
	gsl_rng_free(c->rng);
	fx_free(c->fx);
	free(c);
}

/* ---- cross-check against a from-scratch max-min computation ---- */

#define XC_LINKS 8
#define XC_FLOWS 300
#define XC_HOPS 4

/*
 * Reference max-min rates, the textbook way: repeatedly take the smallest
 * of every link's fair share (capacity left / unfrozen flows on it) and
 * every unfrozen flow's cap, and freeze the flows it binds. Flow f crosses
 * links path[f][0 .. nh[f]) of the nl links.
 */
static void ref_rates(int nf, int nl, const int32_t (*path)[XC_HOPS],
		      const int *nh, const double *cap, const double *bw,
		      double *out)
{
	bool frozen[XC_FLOWS] = {false};
	double rem[XC_LINKS];
	int nu[XC_LINKS];
	assert_true(nf <= XC_FLOWS && nl <= XC_LINKS);
	for (int l = 0; l < nl; l++)
		rem[l] = bw[l];
	for (int left = nf; left > 0;) {
		for (int l = 0; l < nl; l++)
			nu[l] = 0;
		for (int f = 0; f < nf; f++)
			for (int h = 0; h < nh[f] && !frozen[f]; h++)
				nu[path[f][h]]++;
		double best = INFINITY;
		int best_link = -1, best_flow = -1;
		for (int l = 0; l < nl; l++) {
			if (nu[l] && rem[l] / nu[l] < best) {
				best = rem[l] / nu[l];
				best_link = l;
			}
		}
		for (int f = 0; f < nf; f++)
			if (!frozen[f] && cap[f] > 0 && cap[f] <= best) {
				best = cap[f];
				best_flow = f;
				best_link = -1;
			}
		for (int f = 0; f < nf; f++) {
			bool hit = f == best_flow;
			for (int h = 0; h < nh[f] && best_link >= 0; h++)
				hit |= path[f][h] == best_link;
			if (!hit || frozen[f])
				continue;
			frozen[f] = true;
			out[f] = best;
			left--;
			for (int h = 0; h < nh[f]; h++)
				rem[path[f][h]] -= best;
		}
	}
}

static void test_cross_check(void **state)
{
	(void)state;
	struct fixture *fx = fx_new();
	gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(rng, 7);
	double bw[XC_LINKS];
	int32_t link[XC_LINKS];
	for (int l = 0; l < XC_LINKS; l++) {
		bw[l] = 1 + 2 * l + 0.25 * l * l; /* bytes/ns */
		link[l] = add_link(fx, bw[l] * GBPS, (lsim_time)(l * 300));
	}
	/* all flows scheduled up front at Poisson times */
	static struct later lt[XC_FLOWS];
	lsim_time t = 0;
	for (int i = 0; i < XC_FLOWS; i++) {
		lt[i].fx = fx;
		lt[i].n = 1 + (int32_t)gsl_rng_uniform_int(rng, XC_HOPS);
		for (int32_t h = 0; h < lt[i].n; h++) {
			bool again;
			do {
				lt[i].path[h] = link[gsl_rng_uniform_int(rng,
									 XC_LINKS)];
				again = false;
				for (int32_t j = 0; j < h; j++)
					again |= lt[i].path[j] == lt[i].path[h];
			} while (again);
		}
		lt[i].bytes = 1e5 + floor(gsl_rng_uniform(rng) * 2e7);
		lt[i].cap = gsl_rng_uniform(rng) < 0.25
				    ? (0.5 + 4 * gsl_rng_uniform(rng)) * GBPS
				    : 0;
		t += (lsim_time)(-3e5 * log(1 - gsl_rng_uniform(rng)));
		lsim_schedule(fx->eng, t, later_fire, &lt[i], (uint64_t)i);
	}
	int checked = 0, max_active = 0;
	for (lsim_time at = 250 * LSIM_US; lsim_pending(fx->eng) > 0;
	     at += 250 * LSIM_US) {
		lsim_run(fx->eng, at);
		/* the flows moving data now, in the reference's terms */
		static int32_t path[XC_FLOWS][XC_HOPS];
		static int nh[XC_FLOWS], who[XC_FLOWS];
		static double cap[XC_FLOWS], want[XC_FLOWS];
		int nf = 0;
		for (int i = 0; i < XC_FLOWS; i++) {
			struct lsim_flow_info fi;
			if (!lt[i].id ||
			    lsim_flow_get(fx->net, lt[i].id, &fi) != 0 ||
			    fi.state != LSIM_FLOW_ACTIVE)
				continue;
			for (int32_t h = 0; h < lt[i].n; h++)
				path[nf][h] = lt[i].path[h] - link[0];
			nh[nf] = lt[i].n;
			cap[nf] = lt[i].cap / GBPS;
			who[nf++] = i;
		}
		if (nf == 0)
			continue;
		ref_rates(nf, XC_LINKS, (const int32_t (*)[XC_HOPS])path, nh,
			  cap, bw, want);
		for (int k = 0; k < nf; k++) {
			double got = rate_of(fx, lt[who[k]].id) / GBPS;
			assert_true(fabs(got - want[k]) <= 1e-9 * want[k]);
		}
		checked += nf;
		if (nf > max_active)
			max_active = nf;
	}
	assert_int_equal(fx->log.n, XC_FLOWS);
	/* the run was busy enough to test something */
	assert_true(max_active >= 20);
	assert_true(checked >= 2000);
	gsl_rng_free(rng);
	fx_free(fx);
}

/* ---- what a recomputation re-solves ---- */

static void test_resolve_threshold(void **state)
{
	(void)state;
	struct fixture *fx = fx_new();
	/*
	 * Link 0 (12 GB/s) carries X, P and Q; link 1 (2 GB/s) carries X and
	 * Y. Link 1 binds first: X = Y = 1; then P = Q = (12 - 1) / 2 = 5.5.
	 */
	int32_t l0 = add_link(fx, 12 * GBPS, 0);
	int32_t l1 = add_link(fx, 2 * GBPS, 0);
	int32_t px[] = {l0, l1};
	lsim_flow_id x = start(fx, px, 2, 1e12, 0, 1);
	lsim_flow_id y = start(fx, &l1, 1, 1e12, 0, 2);
	lsim_flow_id p = start(fx, &l0, 1, 1e12, 0, 3);
	lsim_flow_id q = start(fx, &l0, 1, 1e12, 0, 4);
	lsim_run(fx->eng, 0);
	assert_true(rate_of(fx, x) == 1 * GBPS);
	assert_true(rate_of(fx, y) == 1 * GBPS);
	assert_true(rate_of(fx, p) == 5.5 * GBPS);
	assert_true(rate_of(fx, q) == 5.5 * GBPS);
	struct lsim_flow_info fi0, fi1;
	assert_int_equal(lsim_flow_get(fx->net, x, &fi0), 0);
	struct lsim_net_stats s0, s1;
	lsim_net_get_stats(fx->net, &s0);
	/*
	 * N joins link 0 at 10 ms. With the others at their rates, link 0
	 * fills at the level x where min(1, x) + 3 min(5.5, x) = 12: x = 11/3.
	 * Below 11/3 nothing changes, so X keeps 1 without being re-solved;
	 * P, Q and N share the 11 left: 11/3 each. One link, three flows.
	 */
	struct later n = {.fx = fx, .path = {l0}, .n = 1, .bytes = 1e12};
	lsim_schedule(fx->eng, 10 * LSIM_MS, later_fire, &n, 5);
	lsim_run(fx->eng, 10 * LSIM_MS);
	lsim_net_get_stats(fx->net, &s1);
	assert_int_equal(s1.recomputations, s0.recomputations + 1);
	assert_int_equal(s1.flows_recomputed, s0.flows_recomputed + 3);
	assert_int_equal(s1.links_recomputed, s0.links_recomputed + 1);
	assert_int_equal(lsim_flow_get(fx->net, x, &fi1), 0);
	assert_int_equal(fi1.recomputed, fi0.recomputed);
	assert_int_equal(fi1.finish, fi0.finish);
	assert_true(rate_of(fx, x) == 1 * GBPS);
	assert_true(fabs(rate_of(fx, p) - 11.0 / 3 * GBPS) < 1e-3);
	assert_true(fabs(rate_of(fx, q) - 11.0 / 3 * GBPS) < 1e-3);
	assert_true(fabs(rate_of(fx, n.id) - 11.0 / 3 * GBPS) < 1e-3);
	/*
	 * Y (at 1) leaves at 20 ms: everything at 1 or above may change, so
	 * all four flows over both links are re-solved. Link 1 now binds X
	 * alone at 2; P, Q and N share 12 - 2 = 10: 10/3 each.
	 */
	lsim_run(fx->eng, 20 * LSIM_MS);
	assert_int_equal(lsim_flow_cancel(fx->net, y, NULL), 0);
	lsim_run(fx->eng, 20 * LSIM_MS);
	lsim_net_get_stats(fx->net, &s0);
	assert_int_equal(s0.recomputations, s1.recomputations + 1);
	assert_int_equal(s0.flows_recomputed, s1.flows_recomputed + 4);
	assert_int_equal(s0.links_recomputed, s1.links_recomputed + 2);
	assert_true(rate_of(fx, x) == 2 * GBPS);
	assert_true(fabs(rate_of(fx, p) - 10.0 / 3 * GBPS) < 1e-3);
	assert_true(fabs(rate_of(fx, n.id) - 10.0 / 3 * GBPS) < 1e-3);
	/* C, capped at 1 GB/s, joins link 0. It takes min(x, 1) at level
	 * x, so link 0 fills at 2 + 3x + 1 = 12: x = 3. X (2) is kept; P, Q,
	 * N and C are re-solved on link 0 alone: C = 1, the others share
	 * 12 - 2 - 1 = 9: 3 each. */
	struct later c = {.fx = fx, .path = {l0}, .n = 1, .bytes = 1e12,
			  .cap = 1 * GBPS};
	lsim_schedule(fx->eng, 30 * LSIM_MS, later_fire, &c, 6);
	lsim_run(fx->eng, 30 * LSIM_MS);
	lsim_net_get_stats(fx->net, &s1);
	assert_int_equal(s1.flows_recomputed, s0.flows_recomputed + 4);
	assert_int_equal(s1.links_recomputed, s0.links_recomputed + 1);
	assert_true(rate_of(fx, c.id) == 1 * GBPS);
	assert_true(rate_of(fx, x) == 2 * GBPS);
	assert_true(fabs(rate_of(fx, q) - 3 * GBPS) < 1e-3);
	/* a flow that starts and is cancelled at one instant never had a
	 * rate: nothing moves and nothing is re-solved */
	lsim_flow_id z = start(fx, &l0, 1, 1e12, 0, 7);
	assert_int_equal(lsim_flow_cancel(fx->net, z, NULL), 0);
	lsim_run(fx->eng, lsim_now(fx->eng));
	lsim_net_get_stats(fx->net, &s0);
	assert_int_equal(s0.recomputations, s1.recomputations + 1);
	assert_int_equal(s0.flows_recomputed, s1.flows_recomputed);
	assert_int_equal(s0.rate_changes, s1.rate_changes);
	assert_true(fabs(rate_of(fx, q) - 3 * GBPS) < 1e-3);
	fx_free(fx);

	/*
	 * The new flow's cap counts in its link's fill level. Link L (12
	 * GB/s) carries K and W; link M (5 GB/s) carries K: K = 5, W = 7.
	 * C, capped at 1, joins L: 5 + x + 1 = 12 fills L at x = 6 (without
	 * the cap, 5 + 2x = 12 would give 3.5 and re-solve K too). K keeps 5
	 * unseen; W and C are re-solved on L alone: C = 1, W = 12 - 5 - 1.
	 */
	fx = fx_new();
	int32_t ll = add_link(fx, 12 * GBPS, 0);
	int32_t lm = add_link(fx, 5 * GBPS, 0);
	int32_t pk[] = {ll, lm};
	lsim_flow_id k = start(fx, pk, 2, 1e12, 0, 1);
	lsim_flow_id w = start(fx, &ll, 1, 1e12, 0, 2);
	lsim_run(fx->eng, 0);
	assert_true(rate_of(fx, k) == 5 * GBPS);
	assert_true(rate_of(fx, w) == 7 * GBPS);
	lsim_net_get_stats(fx->net, &s0);
	lsim_flow_id cc = start(fx, &ll, 1, 1e12, 1 * GBPS, 3);
	lsim_run(fx->eng, 0);
	lsim_net_get_stats(fx->net, &s1);
	assert_int_equal(s1.flows_recomputed, s0.flows_recomputed + 2);
	assert_int_equal(s1.links_recomputed, s0.links_recomputed + 1);
	assert_true(rate_of(fx, k) == 5 * GBPS);
	assert_true(rate_of(fx, w) == 6 * GBPS);
	assert_true(rate_of(fx, cc) == 1 * GBPS);
	fx_free(fx);
}

/* ---- many random runs, every instant checked against a full
 * recomputation ---- */

#define DF_SEEDS 120
#define DF_FLOWS 100

struct diff {
	struct lsim_engine *eng;
	struct lsim_net *net;
	gsl_rng *rng;
	int nl;
	int32_t link[XC_LINKS];
	double bw[XC_LINKS]; /* bytes/ns */
	int32_t path[DF_FLOWS][XC_HOPS];
	int nh[DF_FLOWS];
	double cap[DF_FLOWS]; /* bytes/ns; 0: none */
	double bytes[DF_FLOWS];
	lsim_flow_id id[DF_FLOWS];
	int next; /* the next flow a completion may start */
};

static void df_stop(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	lsim_stop(eng);
}

static void df_cancel(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	struct diff *df = subject;
	lsim_flow_cancel(df->net, df->id[arg], NULL); /* may be over */
	lsim_stop(eng);
}

static void df_done(void *ctx, lsim_flow_id id, uint64_t arg);

static void df_start(struct lsim_engine *eng, void *subject, uint64_t i)
{
	struct diff *df = subject;
	int32_t path[XC_HOPS];
	for (int h = 0; h < df->nh[i]; h++)
		path[h] = df->link[df->path[i][h]];
	struct lsim_flow_req r = {
		.path = path, .n_hops = df->nh[i], .bytes = df->bytes[i],
		.rate_cap = df->cap[i] * GBPS, .done = df_done, .ctx = df,
		.arg = i,
	};
	assert_int_equal(lsim_flow_start(df->net, &r, &df->id[i], NULL), 0);
	/* stop again when it starts to move, and sometimes cancel it */
	lsim_time lat = lsim_path_latency(df->net, path, df->nh[i]);
	if (lat > 0)
		lsim_schedule_in(eng, lat, df_stop, df, 0);
	if (gsl_rng_uniform(df->rng) < 0.15)
		lsim_schedule_in(eng, (lsim_time)(gsl_rng_uniform(df->rng) * 2e6),
				 df_cancel, df, i);
	lsim_stop(eng);
}

static void df_done(void *ctx, lsim_flow_id id, uint64_t arg)
{
	struct diff *df = ctx;
	/* a completion sometimes starts the next flow from the callback */
	if (df->next < DF_FLOWS && gsl_rng_uniform(df->rng) < 0.5)
		df_start(df->eng, df, (uint64_t)df->next++);
	lsim_stop(df->eng);
}

/* Compares every moving flow's rate with the reference; returns how many
 * flows are moving. */
static int df_check(struct diff *df)
{
	static int32_t path[XC_FLOWS][XC_HOPS];
	static int nh[XC_FLOWS], who[XC_FLOWS];
	static double cap[XC_FLOWS], want[XC_FLOWS];
	int nf = 0;
	for (int i = 0; i < DF_FLOWS; i++) {
		struct lsim_flow_info fi;
		if (!df->id[i] || lsim_flow_get(df->net, df->id[i], &fi) ||
		    fi.state != LSIM_FLOW_ACTIVE)
			continue;
		for (int h = 0; h < df->nh[i]; h++)
			path[nf][h] = df->path[i][h];
		nh[nf] = df->nh[i];
		cap[nf] = df->cap[i];
		who[nf++] = i;
	}
	if (nf == 0)
		return 0;
	ref_rates(nf, df->nl, (const int32_t (*)[XC_HOPS])path, nh, cap,
		  df->bw, want);
	for (int k = 0; k < nf; k++) {
		struct lsim_flow_info fi;
		assert_int_equal(lsim_flow_get(df->net, df->id[who[k]], &fi), 0);
		double got = fi.rate / GBPS;
		if (!(fabs(got - want[k]) <= 1e-9 * want[k]))
			fail_msg("flow %d: rate %.17g, max-min %.17g", who[k],
				 got, want[k]);
	}
	return nf;
}

static void test_random_vs_full(void **state)
{
	(void)state;
	/* bandwidths from a small set make equal shares (ties) common */
	static const double levels[] = {1, 2, 2, 3, 4, 4.5, 6, 10};
	uint64_t resolved = 0, moving = 0, instants = 0;
	for (unsigned long seed = 1; seed <= DF_SEEDS; seed++) {
		struct diff *df = calloc(1, sizeof *df);
		assert_non_null(df);
		df->eng = lsim_engine_create();
		df->net = lsim_net_create(df->eng);
		df->rng = gsl_rng_alloc(gsl_rng_mt19937);
		assert_true(df->eng && df->net && df->rng);
		gsl_rng_set(df->rng, seed);
		df->nl = 3 + (int)(seed % 6);
		for (int l = 0; l < df->nl; l++) {
			df->bw[l] = seed % 2
					    ? levels[gsl_rng_uniform_int(df->rng, 8)]
					    : 0.5 + 12 * gsl_rng_uniform(df->rng);
			lsim_time lat = seed % 3 ? 0 : (lsim_time)(l % 3) * 500;
			assert_int_equal(lsim_link_add(df->net, LSIM_LINK_NIC,
						       df->bw[l] * GBPS, lat,
						       &df->link[l], NULL),
					 0);
		}
		for (int i = 0; i < DF_FLOWS; i++) {
			df->nh[i] = 1 + (int)gsl_rng_uniform_int(
						df->rng, (unsigned long)(df->nl < XC_HOPS
									 ? df->nl
									 : XC_HOPS));
			for (int h = 0; h < df->nh[i]; h++) {
				bool again;
				do {
					df->path[i][h] = (int32_t)gsl_rng_uniform_int(
						df->rng, (unsigned long)df->nl);
					again = false;
					for (int j = 0; j < h; j++)
						again |= df->path[i][j] == df->path[i][h];
				} while (again);
			}
			df->bytes[i] = 1e4 + floor(gsl_rng_uniform(df->rng) * 4e6);
			df->cap[i] = gsl_rng_uniform(df->rng) < 0.2
					     ? levels[gsl_rng_uniform_int(df->rng, 8)] / 8
					     : 0;
		}
		/* three quarters start at times on a 50 us grid (several at
		 * once), the rest from completions */
		lsim_time t = 0;
		df->next = DF_FLOWS * 3 / 4;
		for (int i = 0; i < df->next; i++) {
			t += 50000 * (lsim_time)gsl_rng_uniform_int(df->rng, 8);
			lsim_schedule(df->eng, t, df_start, df, (uint64_t)i);
		}
		struct lsim_net_stats st0, st1;
		lsim_net_get_stats(df->net, &st0);
		while (lsim_pending(df->eng) > 0) {
			lsim_run(df->eng, LSIM_TIME_MAX);
			while (lsim_run(df->eng, lsim_now(df->eng)) > 0)
				;
			int nf = df_check(df);
			lsim_net_get_stats(df->net, &st1);
			resolved += st1.flows_recomputed - st0.flows_recomputed;
			moving += (uint64_t)nf *
				  (st1.recomputations - st0.recomputations);
			st0 = st1;
			instants++;
		}
		assert_int_equal(st1.flows_active, 0);
		lsim_net_destroy(df->net);
		lsim_engine_destroy(df->eng);
		gsl_rng_free(df->rng);
		free(df);
	}
	/* enough instants checked, and recomputations re-solved clearly
	 * fewer flows than were moving */
	assert_true(instants >= 100 * DF_SEEDS);
	assert_true(resolved < moving * 3 / 4);
	print_message("random_vs_full: %llu instants, %llu flows re-solved"
		      " of %llu moving\n",
		      (unsigned long long)instants,
		      (unsigned long long)resolved, (unsigned long long)moving);
}

/* ---- statistics ---- */

static void test_util_sampler(void **state)
{
	(void)state;
	struct fixture *fx = fx_new();
	int32_t l = add_link(fx, 10 * GBPS, 0);
	/* 0..100 ms one flow at full rate (1e9 B); idle until 200 ms; then
	 * a flow capped at 2.5 GB/s from 200 ms for 5e8 B (200 ms). */
	start(fx, &l, 1, 1e9, 0, 1);
	struct later b = {.fx = fx, .path = {l}, .n = 1, .bytes = 5e8,
			  .cap = 2.5 * GBPS};
	lsim_schedule(fx->eng, 200 * LSIM_MS, later_fire, &b, 2);
	lsim_run(fx->eng, 50 * LSIM_MS);
	assert_true(fabs(lsim_link_sample_util(fx->net, l) - 1.0) < 1e-12);
	lsim_run(fx->eng, 150 * LSIM_MS);
	/* 50..150 ms: busy half the window */
	assert_true(fabs(lsim_link_sample_util(fx->net, l) - 0.5) < 1e-12);
	/* same instant: the current utilisation (idle) */
	assert_true(lsim_link_sample_util(fx->net, l) == 0.0);
	lsim_run(fx->eng, 350 * LSIM_MS);
	/* 150..350: idle 50 ms, then 150 ms at 0.25 */
	assert_true(fabs(lsim_link_sample_util(fx->net, l) -
			 0.25 * 150.0 / 200.0) < 1e-12);
	struct lsim_link_info li;
	lsim_link_get(fx->net, l, &li);
	assert_true(fabs(li.util - 0.25) < 1e-12);
	assert_int_equal(li.busy_ns, 250 * LSIM_MS);
	lsim_run(fx->eng, LSIM_TIME_MAX);
	assert_int_equal(done_at(&fx->log, 2), 400 * LSIM_MS);
	lsim_link_get(fx->net, l, &li);
	assert_int_equal(li.busy_ns, 300 * LSIM_MS);
	assert_true(fabs(li.bytes - 1.5e9) < 1e-3);
	assert_true(fabs(li.util_ns - (1e8 + 0.25 * 2e8)) < 1e-3);
	assert_true(lsim_link_sample_util(fx->net, 99) < 0);
	fx_free(fx);
}

/* lsim_net_sample_active against sampling every link: two nets with the
 * same links and the same random flows, sampled at the same instants. */
static void test_sample_active(void **state)
{
	(void)state;
	enum { LINKS = 40, FLOWS = 200, SAMPLES = 80 };
	struct fixture *fa = fx_new(), *fb = fx_new();
	gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
	assert_non_null(rng);
	gsl_rng_set(rng, 5);
	for (int i = 0; i < LINKS; i++) {
		double bw = (1 + gsl_rng_uniform_int(rng, 20)) * GBPS;
		lsim_time lat = (lsim_time)gsl_rng_uniform_int(rng, 3) * LSIM_US;
		assert_int_equal(add_link(fa, bw, lat), i);
		assert_int_equal(add_link(fb, bw, lat), i);
	}
	/* flows on the first 30 links only, started in [0, 2 s): the last
	 * ten links are never sampled, the others go idle again */
	struct later *lt = calloc(2 * FLOWS, sizeof *lt);
	assert_non_null(lt);
	for (int f = 0; f < FLOWS; f++) {
		struct later *x = &lt[2 * f], *y = &lt[2 * f + 1];
		x->fx = fa;
		x->n = 1 + (int32_t)gsl_rng_uniform_int(rng, 3);
		for (int32_t h = 0; h < x->n; h++) {
			int32_t id;
			bool dup;
			do {
				id = (int32_t)gsl_rng_uniform_int(rng, 30);
				dup = false;
				for (int32_t k = 0; k < h; k++)
					dup |= x->path[k] == id;
			} while (dup);
			x->path[h] = id;
		}
		x->bytes = 1e6 * (1 + gsl_rng_uniform_int(rng, 200));
		x->cap = gsl_rng_uniform(rng) < 0.3 ? 2 * GBPS : 0;
		*y = *x;
		y->fx = fb;
		lsim_time at = (lsim_time)gsl_rng_uniform_int(rng, 2000) * LSIM_MS;
		lsim_schedule(fa->eng, at, later_fire, x, (uint64_t)f);
		lsim_schedule(fb->eng, at, later_fire, y, (uint64_t)f);
	}
	int32_t ids[LINKS];
	double u[LINKS];
	bool seen[LINKS] = {false};
	int32_t returned = 0;
	for (int k = 1; k <= SAMPLES; k++) {
		lsim_time t = k * 50 * LSIM_MS;
		lsim_run(fa->eng, t);
		lsim_run(fb->eng, t);
		int32_t n = lsim_net_sample_active(fa->net, ids, u);
		returned += n;
		int32_t j = 0;
		for (int32_t l = 0; l < LINKS; l++) {
			double v = lsim_link_sample_util(fb->net, l);
			if (j < n && ids[j] == l) {
				assert_true(u[j] == v);
				seen[l] |= v > 0;
				j++;
			} else {
				assert_true(v == 0.0);
			}
		}
		assert_int_equal(j, n); /* increasing ids, all of them links */
	}
	/* the idle links were left alone, and by the end all of them */
	int32_t busy = 0;
	for (int32_t l = 0; l < 30; l++)
		busy += seen[l];
	assert_true(busy >= 25);
	for (int32_t l = 30; l < LINKS; l++)
		assert_false(seen[l]);
	assert_true(returned < SAMPLES * LINKS / 2);
	assert_int_equal(lsim_net_sample_active(fa->net, ids, u), 0);
	assert_int_equal(fa->log.n, FLOWS);
	free(lt);
	gsl_rng_free(rng);
	fx_free(fa);
	fx_free(fb);
}

/* ---- messages ---- */

static void test_message_queue(void **state)
{
	(void)state;
	struct fixture *fx = fx_new();
	/* 1 GB/s = 1 B/ns, 2 us latency */
	int32_t l = add_link(fx, 1 * GBPS, 2 * LSIM_US);
	assert_int_equal(lsim_msg_send(fx->net, &l, 1, 1000, log_msg,
				       &fx->log, 1, 0, NULL), 0);
	assert_int_equal(lsim_msg_send(fx->net, &l, 1, 2000, log_msg,
				       &fx->log, 2, 0, NULL), 0);
	assert_int_equal(lsim_msg_send(fx->net, &l, 1, 500, log_msg,
				       &fx->log, 3, 0, NULL), 0);
	/* a flow on the same link does not delay messages */
	start(fx, &l, 1, 1e6, 0, 9);
	lsim_run(fx->eng, LSIM_TIME_MAX);
	/* serialization ends at 1000, 3000, 3500; plus 2000 latency */
	assert_int_equal(done_at(&fx->log, 1), 3000);
	assert_int_equal(done_at(&fx->log, 2), 5000);
	assert_int_equal(done_at(&fx->log, 3), 5500);
	/* the flow: 2 us latency + 1e6 B at 1 B/ns */
	assert_int_equal(done_at(&fx->log, 9), 1002000);
	struct lsim_link_info li;
	lsim_link_get(fx->net, l, &li);
	assert_int_equal(li.n_msgs, 3);
	assert_true(li.msg_bytes == 3500);
	assert_int_equal(li.msg_busy_ns, 3500);

	/* Two hops, store and forward: link a (1 B/ns, 1 us), link b
	 * (2 B/ns, 3 us). Sent at t0 = now: 4000 B on a: 4000 + 1000; on b:
	 * 2000 + 3000: delivered at t0 + 10,000. A second message of 2000 B
	 * sent at once waits on a until 4000: 6000 + 1000 = 7000 at b, where
	 * b is free again from 7000 (the first left b's queue at 7000):
	 * 7000 + 1000 + 3000 = 11,000. */
	int32_t a = add_link(fx, 1 * GBPS, 1 * LSIM_US);
	int32_t b = add_link(fx, 2 * GBPS, 3 * LSIM_US);
	int32_t path[] = {a, b};
	lsim_time t0 = lsim_now(fx->eng);
	struct tag_log tags = {.n = 0};
	lsim_set_before_event(fx->eng, log_tag, &tags);
	assert_int_equal(lsim_msg_send(fx->net, path, 2, 4000, log_msg,
				       &fx->log, 11, 0, NULL), 0);
	assert_int_equal(lsim_msg_send(fx->net, path, 2, 2000, log_msg,
				       &fx->log, 12, 7, NULL), 0);
	lsim_run(fx->eng, LSIM_TIME_MAX);
	assert_int_equal(done_at(&fx->log, 11), t0 + 10000);
	assert_int_equal(done_at(&fx->log, 12), t0 + 11000);
	/* the moves from a to b are internal to the network; the deliveries
	 * carry the senders' tags (0 and 7), in delivery order */
	lsim_set_before_event(fx->eng, NULL, NULL);
	assert_int_equal(tags.n, 4);
	assert_int_equal(tags.tag[0], LSIM_TAG_INTERNAL);
	assert_int_equal(tags.tag[1], LSIM_TAG_INTERNAL);
	assert_int_equal(tags.tag[2], 0);
	assert_int_equal(tags.tag[3], 7);
	/* an idle link starts a message at once (l has been idle since
	 * 3500) */
	lsim_time t1 = lsim_now(fx->eng);
	assert_true(t1 > 3500);
	assert_int_equal(lsim_msg_send(fx->net, &l, 1, 100, log_msg, &fx->log,
				       4, 0, NULL), 0);
	lsim_run(fx->eng, LSIM_TIME_MAX);
	assert_int_equal(done_at(&fx->log, 4), t1 + 2100);
	struct lsim_net_stats st;
	lsim_net_get_stats(fx->net, &st);
	assert_int_equal(st.msgs_sent, 6);
	assert_int_equal(st.msgs_delivered, 6);
	fx_free(fx);
}

/* ---- re-entrancy, cancellation, bad input ---- */

struct relay {
	struct fixture *fx;
	int32_t link;
	int hops_left;
	lsim_time at[8];
	int n;
};

static void relay_done(void *ctx, lsim_flow_id id, uint64_t arg)
{
	struct relay *r = ctx;
	r->at[r->n++] = lsim_now(r->fx->eng);
	/* the finished flow is already forgotten */
	struct lsim_flow_info fi;
	assert_int_equal(lsim_flow_get(r->fx->net, id, &fi), LSIM_ESTATE);
	if (r->hops_left-- > 0) {
		/* several new flows from the callback, growing the pool */
		for (int i = 0; i < 3; i++) {
			struct lsim_flow_req q = {
				.path = &r->link, .n_hops = 1, .bytes = 3e8,
				.done = i == 0 ? relay_done : NULL, .ctx = r,
			};
			assert_int_equal(lsim_flow_start(r->fx->net, &q, NULL,
							 NULL), 0);
		}
	}
}

static void test_reentrant_callback(void **state)
{
	(void)state;
	struct fixture *fx = fx_new();
	struct relay r = {.fx = fx, .hops_left = 2};
	r.link = add_link(fx, 10 * GBPS, 1 * LSIM_US);
	struct lsim_flow_req q = {
		.path = &r.link, .n_hops = 1, .bytes = 1e9, .done = relay_done,
		.ctx = &r,
	};
	assert_int_equal(lsim_flow_start(fx->net, &q, NULL, NULL), 0);
	lsim_run(fx->eng, LSIM_TIME_MAX);
	/* first: 1 us + 100 ms. Each round: 1 us + three flows of 3e8 B
	 * sharing 10 B/ns = 9e8 / 10 = 90 ms, all three together. */
	assert_int_equal(r.n, 3);
	assert_int_equal(r.at[0], 100001000);
	assert_int_equal(r.at[1], 190002000);
	assert_int_equal(r.at[2], 280003000);
	struct lsim_net_stats st;
	lsim_net_get_stats(fx->net, &st);
	assert_int_equal(st.flows_started, 7);
	assert_int_equal(st.flows_finished, 7);
	fx_free(fx);
}

static void test_cancel_and_zero(void **state)
{
	(void)state;
	struct fixture *fx = fx_new();
	int32_t l = add_link(fx, 10 * GBPS, 1 * LSIM_US);
	lsim_flow_id a = start(fx, &l, 1, 1e9, 0, 1);
	lsim_flow_id b = start(fx, &l, 1, 1e9, 0, 2);
	/* cancel while latent: nothing moved */
	lsim_flow_id c = start(fx, &l, 1, 1e9, 0, 3);
	double moved = -1;
	assert_int_equal(lsim_flow_cancel(fx->net, c, &moved), 0);
	assert_true(moved == 0);
	assert_int_equal(lsim_flow_cancel(fx->net, c, &moved), LSIM_ESTATE);
	/* at 1 us + 20 ms, A has moved 5 B/ns x 20 ms = 1e8 B */
	lsim_run(fx->eng, 20 * LSIM_MS + 1 * LSIM_US);
	assert_int_equal(lsim_flow_cancel(fx->net, a, &moved), 0);
	assert_true(fabs(moved - 1e8) < 1e-3);
	/* B: 1e8 moved, 9e8 left alone at 10 B/ns: 90 ms more */
	lsim_run(fx->eng, LSIM_TIME_MAX);
	assert_int_equal(done_at(&fx->log, 2), 110 * LSIM_MS + 1 * LSIM_US);
	assert_int_equal(done_at(&fx->log, 1), -1);
	assert_int_equal(done_at(&fx->log, 3), -1);
	(void)b;
	/* a zero-byte flow completes after the path latency */
	lsim_time t0 = lsim_now(fx->eng);
	start(fx, &l, 1, 0, 0, 4);
	lsim_run(fx->eng, LSIM_TIME_MAX);
	assert_int_equal(done_at(&fx->log, 4), t0 + 1 * LSIM_US);
	struct lsim_net_stats st;
	lsim_net_get_stats(fx->net, &st);
	assert_int_equal(st.flows_cancelled, 2);
	assert_int_equal(st.flows_finished, 2);
	assert_int_equal(st.flows_active, 0);
	/* destroying with flows and messages in flight cancels their events */
	start(fx, &l, 1, 1e9, 0, 5);
	assert_int_equal(lsim_msg_send(fx->net, &l, 1, 10, log_msg, &fx->log,
				       6, 0, NULL), 0);
	lsim_net_destroy(fx->net);
	fx->net = NULL;
	assert_int_equal(lsim_pending(fx->eng), 0);
	fx_free(fx);
}

static void test_bad_input(void **state)
{
	(void)state;
	struct fixture *fx = fx_new();
	struct lsim_diag d;
	int32_t id;
	assert_int_equal(lsim_link_add(fx->net, LSIM_LINK_NIC, 0, 0, &id, &d),
			 LSIM_EINVAL);
	assert_string_equal(d.key, "bandwidth");
	assert_int_equal(lsim_link_add(fx->net, LSIM_LINK_NIC, 1e9, -1, &id, &d),
			 LSIM_EINVAL);
	int32_t l = add_link(fx, 1e9, 0);
	int32_t twice[] = {l, l};
	int32_t none[] = {l + 1};
	struct lsim_flow_req r = {.path = twice, .n_hops = 2, .bytes = 1};
	assert_int_equal(lsim_flow_start(fx->net, &r, NULL, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "path");
	r.path = none;
	r.n_hops = 1;
	assert_int_equal(lsim_flow_start(fx->net, &r, NULL, &d), LSIM_EINVAL);
	r.path = &l;
	r.n_hops = 0;
	assert_int_equal(lsim_flow_start(fx->net, &r, NULL, &d), LSIM_EINVAL);
	r.n_hops = 1;
	r.bytes = -1;
	assert_int_equal(lsim_flow_start(fx->net, &r, NULL, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "bytes");
	r.bytes = NAN;
	assert_int_equal(lsim_flow_start(fx->net, &r, NULL, &d), LSIM_EINVAL);
	assert_int_equal(lsim_msg_send(fx->net, none, 1, 1, NULL, NULL, 0, 0, &d),
			 LSIM_EINVAL);
	assert_int_equal(lsim_flow_cancel(fx->net, 0, NULL), LSIM_ESTATE);
	assert_string_equal(lsim_link_kind_name(LSIM_LINK_SPINE), "spine");
	struct lsim_net_stats st;
	lsim_net_get_stats(fx->net, &st);
	assert_int_equal(st.flows_started, 0);
	fx_free(fx);
}

/* ---- topology ---- */

static void expect_path(const int32_t *got, int n, const int32_t *want,
			int n_want)
{
	assert_int_equal(n, n_want);
	for (int i = 0; i < n; i++)
		assert_int_equal(got[i], want[i]);
}

static void test_topology_paths(void **state)
{
	(void)state;
	struct fixture *fx = fx_new();
	struct lsim_topo_params p;
	lsim_topo_params_default(&p);
	p.nodes = 2;
	p.gpus_per_node = 8;
	p.gpus_per_switch = 2;
	p.nodes_per_tor = 1; /* each node under its own ToR */
	p.nic_bw = 50e9;
	p.oversubscription = 2;
	p.spine_bw = 800e9;
	struct lsim_topo t;
	struct lsim_diag d;
	assert_int_equal(lsim_topo_build(&t, fx->net, &p, &d), 0);
	/* per GPU 2 PCIe + 2 NVLink (64), 4 switches per node (8), 2 NICs
	 * per node (4), 2 ToRs x 2 (4), spine, storage out and in: 83 */
	assert_int_equal(lsim_net_n_links(fx->net), 83);
	assert_int_equal(t.n_gpus, 16);
	assert_int_equal(t.n_switches, 8);
	assert_int_equal(t.n_tors, 2);
	struct lsim_link_info li;
	lsim_link_get(fx->net, t.tor_up[1], &li);
	assert_int_equal(li.kind, LSIM_LINK_TOR);
	assert_true(li.bw == 25e9); /* 1 node x 50 GB/s / 2 */
	lsim_link_get(fx->net, t.host[3], &li);
	assert_int_equal(li.kind, LSIM_LINK_HOST);

	int32_t path[LSIM_PATH_MAX];
	/* GPU 11 = node 1, local 3, switch 1 of node 1 = switch 5 */
	int n = lsim_topo_path_storage_to_gpu(&t, 11, path);
	int32_t w1[] = {t.storage, t.spine, t.tor_down[1], t.nic_in[1],
			t.host[5], t.pcie_down[11]};
	expect_path(path, n, w1, 6);
	n = lsim_topo_path_gpu_to_storage(&t, 11, path);
	int32_t w1b[] = {t.pcie_up[11], t.host[5], t.nic_out[1], t.tor_up[1],
			 t.spine, t.storage_in};
	expect_path(path, n, w1b, 6);
	n = lsim_topo_path_gpu_to_host(&t, 11, path);
	int32_t w2[] = {t.pcie_up[11], t.host[5]};
	expect_path(path, n, w2, 2);
	n = lsim_topo_path_host_to_gpu(&t, 11, path);
	int32_t w3[] = {t.host[5], t.pcie_down[11]};
	expect_path(path, n, w3, 2);
	n = lsim_topo_path_gpu_to_gpu(&t, 2, 7, path);
	int32_t w4[] = {t.nvlink_up[2], t.nvlink_down[7]};
	expect_path(path, n, w4, 2);
	/* GPU 2 (node 0, switch 1) -> GPU 11 (node 1, switch 5) */
	n = lsim_topo_path_gpu_to_gpu(&t, 2, 11, path);
	int32_t w5[] = {t.pcie_up[2], t.host[1], t.nic_out[0], t.tor_up[0],
			t.spine, t.tor_down[1], t.nic_in[1], t.host[5],
			t.pcie_down[11]};
	expect_path(path, n, w5, 9);
	static const enum lsim_link_kind k5[] = {
		LSIM_LINK_PCIE, LSIM_LINK_HOST, LSIM_LINK_NIC, LSIM_LINK_TOR,
		LSIM_LINK_SPINE, LSIM_LINK_TOR, LSIM_LINK_NIC, LSIM_LINK_HOST,
		LSIM_LINK_PCIE,
	};
	for (int i = 0; i < n; i++) {
		lsim_link_get(fx->net, path[i], &li);
		assert_int_equal(li.kind, k5[i]);
	}
	/* latency: 2 x (pcie 1 us + host 0.5 + nic 2 + tor 1) + spine 1 */
	assert_int_equal(lsim_path_latency(fx->net, path, n), 10 * LSIM_US);
	assert_int_equal(lsim_topo_path_gpu_to_gpu(&t, 3, 3, path),
			 LSIM_EINVAL);
	assert_int_equal(lsim_topo_path_gpu_to_host(&t, 16, path), LSIM_EINVAL);
	assert_int_equal(lsim_topo_node_of(&t, 11), 1);

	/* every one of the 83 links named once, the ends along w5's path */
	lsim_link_end from[83], to[83];
	memset(from, 0, sizeof from);
	memset(to, 0, sizeof to);
	lsim_topo_link_ends(&t, 83, from, to);
	for (int l = 0; l < 83; l++)
		assert_true(from[l][0] && to[l][0]);
	static const char *const ends5[][2] = {
		{"gpu 2", "node 0 switch 1"}, {"node 0 switch 1", "node 0 host"},
		{"node 0", "tor 0"},	      {"tor 0", "spine"},
		{"spine", "spine"},	      {"spine", "tor 1"},
		{"tor 1", "node 1"},	      {"node 1 switch 1", "node 1 host"},
		{"node 1 switch 1", "gpu 11"},
	};
	for (int i = 0; i < 9; i++) {
		assert_string_equal(from[w5[i]], ends5[i][0]);
		assert_string_equal(to[w5[i]], ends5[i][1]);
	}
	assert_string_equal(from[t.nvlink_up[2]], "gpu 2");
	assert_string_equal(to[t.nvlink_up[2]], "node 0 nvswitch");
	assert_string_equal(from[t.storage], "storage");
	assert_string_equal(to[t.storage_in], "storage");
	lsim_topo_release(&t);
	fx_free(fx);

	/* NVLink bridges in pairs (H100 PCIe): GPUs 2 and 3 ride their
	 * bridge; 2 and 4 of the same node go through the PCIe switches. */
	fx = fx_new();
	p.nvlink_pairs = true;
	assert_int_equal(lsim_topo_build(&t, fx->net, &p, &d), 0);
	n = lsim_topo_path_gpu_to_gpu(&t, 3, 2, path);
	int32_t wp1[] = {t.nvlink_up[3], t.nvlink_down[2]};
	expect_path(path, n, wp1, 2);
	n = lsim_topo_path_gpu_to_gpu(&t, 10, 11, path); /* second node's pair */
	int32_t wp2[] = {t.nvlink_up[10], t.nvlink_down[11]};
	expect_path(path, n, wp2, 2);
	n = lsim_topo_path_gpu_to_gpu(&t, 2, 4, path);
	int32_t wp3[] = {t.pcie_up[2], t.host[1], t.host[2], t.pcie_down[4]};
	expect_path(path, n, wp3, 4);
	memset(from, 0, sizeof from);
	lsim_topo_link_ends(&t, 83, from, to);
	assert_string_equal(to[t.nvlink_up[11]], "node 1 bridge 1");
	assert_string_equal(from[t.nvlink_down[10]], "node 1 bridge 1");
	lsim_topo_release(&t);
	fx_free(fx);
	p.nvlink_pairs = false;

	/* No NVLink, both nodes under one ToR, non-blocking spine. */
	fx = fx_new();
	p.nvlink_bw = 0;
	p.nodes_per_tor = 2;
	p.spine_bw = 0;
	assert_int_equal(lsim_topo_build(&t, fx->net, &p, &d), 0);
	/* 32 PCIe + 8 host + 4 NIC + 2 ToR + storage out and in */
	assert_int_equal(lsim_net_n_links(fx->net), 48);
	assert_int_equal(t.spine, -1);
	assert_int_equal(t.nvlink_up[0], -1);
	/* same switch, P2P on: the switch routes it, the uplink is not
	 * crossed (flow rates at the end of this test) */
	n = lsim_topo_path_gpu_to_gpu(&t, 0, 1, path);
	int32_t w6[] = {t.pcie_up[0], t.pcie_down[1]};
	expect_path(path, n, w6, 2);
	n = lsim_topo_path_gpu_to_gpu(&t, 0, 7, path); /* other switch */
	int32_t w7[] = {t.pcie_up[0], t.host[0], t.host[3], t.pcie_down[7]};
	expect_path(path, n, w7, 4);
	n = lsim_topo_path_gpu_to_gpu(&t, 0, 8, path); /* same ToR */
	int32_t w8[] = {t.pcie_up[0], t.host[0], t.nic_out[0], t.nic_in[1],
			t.host[4], t.pcie_down[8]};
	expect_path(path, n, w8, 6);
	n = lsim_topo_path_storage_to_gpu(&t, 8, path);
	int32_t w9[] = {t.storage, t.tor_down[0], t.nic_in[1], t.host[4],
			t.pcie_down[8]};
	expect_path(path, n, w9, 5);
	lsim_link_get(fx->net, t.tor_up[0], &li);
	assert_true(li.bw == 50e9); /* 2 nodes x 50 GB/s / 2 */
	/* a weights load (storage, ToR and NIC at 50 GB/s) shares host[4]
	 * (63 GB/s) with a swap-in to GPU 9 under the same switch: the host
	 * link is the bottleneck, 31.5 GB/s each */
	int32_t swap[LSIM_PATH_MAX];
	int ns = lsim_topo_path_host_to_gpu(&t, 9, swap);
	lsim_flow_id f1 = start(fx, path, n, 1e9, 0, 1);
	lsim_flow_id f2 = start(fx, swap, ns, 1e9, 0, 2);
	lsim_run(fx->eng, 200 * LSIM_US);
	assert_true(fabs(rate_of(fx, f1) - 31.5e9) < 1e-3);
	assert_true(fabs(rate_of(fx, f2) - 31.5e9) < 1e-3);
	lsim_topo_release(&t);

	/* bad parameters name their key */
	p.gpus_per_switch = 0;
	assert_int_equal(lsim_topo_build(&t, fx->net, &p, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "gpus_per_switch");
	p.gpus_per_switch = 2;
	p.oversubscription = 0;
	assert_int_equal(lsim_topo_build(&t, fx->net, &p, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "oversubscription");
	lsim_topo_release(&t);
	fx_free(fx);

	/* A 2-GPU ring under one switch. P2P on: each direction gets a
	 * GPU's whole PCIe link (63 GB/s). P2P off (GeForce boards): staged
	 * through host memory across the uplink, which both directions of
	 * the ring share: 31.5 GB/s each of the 63. */
	for (int off = 0; off < 2; off++) {
		fx = fx_new();
		p.oversubscription = 2;
		p.no_p2p = off;
		assert_int_equal(lsim_topo_build(&t, fx->net, &p, &d), 0);
		int32_t back[LSIM_PATH_MAX];
		n = lsim_topo_path_gpu_to_gpu(&t, 0, 1, path);
		int nb = lsim_topo_path_gpu_to_gpu(&t, 1, 0, back);
		int32_t on[] = {t.pcie_up[0], t.pcie_down[1]};
		int32_t onb[] = {t.pcie_up[1], t.pcie_down[0]};
		int32_t st[] = {t.pcie_up[0], t.host[0], t.pcie_down[1]};
		int32_t stb[] = {t.pcie_up[1], t.host[0], t.pcie_down[0]};
		expect_path(path, n, off ? st : on, off ? 3 : 2);
		expect_path(back, nb, off ? stb : onb, off ? 3 : 2);
		lsim_flow_id r1 = start(fx, path, n, 1e9, 0, 1);
		lsim_flow_id r2 = start(fx, back, nb, 1e9, 0, 2);
		/* other switch: through both uplinks, either way */
		n = lsim_topo_path_gpu_to_gpu(&t, 0, 7, path);
		expect_path(path, n, w7, 4);
		lsim_run(fx->eng, 100 * LSIM_US);
		double want = off ? 31.5e9 : 63e9;
		assert_true(fabs(rate_of(fx, r1) - want) < 1e-3);
		assert_true(fabs(rate_of(fx, r2) - want) < 1e-3);
		lsim_topo_release(&t);
		fx_free(fx);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_flow),
		cmocka_unit_test(test_two_equal_flows),
		cmocka_unit_test(test_flow_arriving_mid_transfer),
		cmocka_unit_test(test_bottleneck_shares),
		cmocka_unit_test(test_rate_cap),
		cmocka_unit_test(test_component_only),
		cmocka_unit_test(test_bytes_conserved),
		cmocka_unit_test(test_cross_check),
		cmocka_unit_test(test_resolve_threshold),
		cmocka_unit_test(test_random_vs_full),
		cmocka_unit_test(test_util_sampler),
		cmocka_unit_test(test_sample_active),
		cmocka_unit_test(test_message_queue),
		cmocka_unit_test(test_reentrant_callback),
		cmocka_unit_test(test_cancel_and_zero),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_topology_paths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
