/*
 * bench_links.c - the link model under load: a fat tree of 64 nodes x 8
 * GPUs (8 nodes per ToR, ToR uplinks oversubscribed 2:1), 10,000 flow
 * sources. Each source starts a flow, waits for it to finish, waits an
 * exponential gap (mean 1 ms) and starts the next, so arrivals are a
 * superposition of 10,000 renewal streams (close to Poisson) and about
 * 10,000 flows are in flight. Sizes are exponential, mean 64 MiB.
 *   mix "fabric" (default): GPU -> GPU across nodes (50%), GPU -> GPU in
 *     a node (20%), a swap out or in (20%), a weights load from storage
 *     (10%). Nearly every flow shares a link with another transitively,
 *     so one component holds most flows: the worst case.
 *   mix "local": GPU -> GPU in a node (50%) and swaps (50%) only:
 *     components stay within a PCIe switch or a node's NVLinks.
 *   "fabric-classes", "local-classes": the same flows (the same random
 *     draws) in five traffic classes, so that the priority-aware solver
 *     runs: GPU -> GPU in a node at level 0; across nodes at level 1,
 *     weight 1 or 4 (by the source's parity); swaps at level 2; storage
 *     loads at level 1, weight 2, through a token bucket of 100 GB/s with
 *     a 1 GiB burst.
 *
 * After all sources have started (over the first 10 ms) and a warm-up of
 * 2,000 completions, measures a fixed number of completions and prints
 *   bench links mix=M flows=10000 completions=N wall_s=... cpu_s=...
 *     flows_per_s=... recomputations_per_s=... events_per_s=...
 *     cpu_recomputations_per_s=... cpu_events_per_s=...
 *     mean_flows_resolved=... mean_links_visited=...
 *     rate_changes_per_recomputation=... mean_in_flight=... simulated_s=...
 * (per-second rates over wall-clock time, the cpu_ ones over the process's
 * CPU time, which other processes on the machine disturb less; flows
 * re-solved and links visited are per recomputation).
 * Usage: bench_links [completions [fabric|local[-classes]]] (default 10000
 * fabric).
 */
#include <errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster/links.h"

#define SOURCES 10000
#define MEAN_BYTES (64.0 * 1024 * 1024)
#define MEAN_GAP_NS 1e6

struct bench {
	struct lsim_engine *eng;
	struct lsim_net *net;
	struct lsim_topo topo;
	gsl_rng *rng;
	uint64_t completions, stop_at;
	bool local;
	bool classes;
	int32_t cls[5];
	double in_flight_sum; /* samples of flows in flight, every 1 ms */
	uint64_t n_samples;
	int failed;
};

static void next_flow(struct lsim_engine *eng, void *subject, uint64_t arg);

static void flow_done(void *ctx, lsim_flow_id id, uint64_t src)
{
	struct bench *b = ctx;
	if (++b->completions == b->stop_at)
		lsim_stop(b->eng);
	lsim_time gap = (lsim_time)gsl_ran_exponential(b->rng, MEAN_GAP_NS);
	if (!lsim_schedule_in(b->eng, gap, next_flow, b, src))
		b->failed = 1;
}

static int32_t other_gpu(struct bench *b, int32_t g, bool same_node)
{
	int32_t G = b->topo.p.gpus_per_node;
	int32_t node = g / G;
	if (same_node)
		return node * G + (g % G + 1 +
				   (int32_t)gsl_rng_uniform_int(b->rng,
								(unsigned long)G - 1)) % G;
	int32_t nodes = b->topo.p.nodes;
	int32_t n2 = (node + 1 + (int32_t)gsl_rng_uniform_int(
			      b->rng, (unsigned long)nodes - 1)) % nodes;
	return n2 * G + (int32_t)gsl_rng_uniform_int(b->rng, (unsigned long)G);
}

static void next_flow(struct lsim_engine *eng, void *subject, uint64_t src)
{
	struct bench *b = subject;
	int32_t path[LSIM_PATH_MAX];
	int32_t g = (int32_t)gsl_rng_uniform_int(b->rng,
						 (unsigned long)b->topo.n_gpus);
	double u = gsl_rng_uniform(b->rng);
	if (b->local)
		u = 0.5 + 0.4 * u; /* [0.5, 0.9): the node-local kinds */
	int n, k;
	if (u < 0.5) {
		n = lsim_topo_path_gpu_to_gpu(&b->topo, g,
					      other_gpu(b, g, false), path);
		k = 1 + (int)(src % 2);
	} else if (u < 0.7) {
		n = lsim_topo_path_gpu_to_gpu(&b->topo, g,
					      other_gpu(b, g, true), path);
		k = 0;
	} else if (u < 0.8) {
		n = lsim_topo_path_gpu_to_host(&b->topo, g, path);
		k = 3;
	} else if (u < 0.9) {
		n = lsim_topo_path_host_to_gpu(&b->topo, g, path);
		k = 3;
	} else {
		n = lsim_topo_path_storage_to_gpu(&b->topo, g, path);
		k = 4;
	}
	struct lsim_flow_req r = {
		.path = path,
		.n_hops = n,
		.bytes = 1.0 + gsl_ran_exponential(b->rng, MEAN_BYTES),
		.done = flow_done,
		.ctx = b,
		.arg = src,
		.cls = b->classes ? b->cls[k] : 0,
	};
	if (n < 1 || lsim_flow_start(b->net, &r, NULL, NULL)) {
		b->failed = 1;
		lsim_stop(eng);
	}
}

static void sample(struct lsim_engine *eng, void *ctx)
{
	struct bench *b = ctx;
	struct lsim_net_stats st;
	lsim_net_get_stats(b->net, &st);
	b->in_flight_sum += (double)st.flows_active;
	b->n_samples++;
}

static double clock_s(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	uint64_t measured = 10000;
	const char *mix = argc > 2 ? argv[2] : "fabric";
	if (argc > 1) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(argv[1], &end, 10);
		if (errno || *end || v == 0 || argc > 3 ||
		    (strcmp(mix, "fabric") && strcmp(mix, "local") &&
		     strcmp(mix, "fabric-classes") && strcmp(mix, "local-classes"))) {
			fprintf(stderr, "usage: %s [completions [fabric|local[-classes]]]\n",
				argv[0]);
			return 2;
		}
		measured = v;
	}
	struct bench b = {0};
	b.local = strncmp(mix, "local", 5) == 0;
	b.classes = strstr(mix, "-classes") != NULL;
	b.eng = lsim_engine_create();
	b.net = b.eng ? lsim_net_create(b.eng) : NULL;
	b.rng = gsl_rng_alloc(gsl_rng_mt19937);
	if (!b.net || !b.rng) {
		fprintf(stderr, "bench links: out of memory\n");
		return 1;
	}
	gsl_rng_set(b.rng, 1);
	struct lsim_topo_params p;
	lsim_topo_params_default(&p);
	p.nodes = 64;
	p.gpus_per_node = 8;
	p.nodes_per_tor = 8;
	p.oversubscription = 2;
	struct lsim_diag d;
	if (lsim_topo_build(&b.topo, b.net, &p, &d)) {
		fprintf(stderr, "bench links: %s\n", d.msg);
		return 1;
	}
	static const struct lsim_link_class cl[5] = {
		{0, 1, 0, 0}, {1, 1, 0, 0}, {1, 4, 0, 0}, {2, 1, 0, 0},
		{1, 2, 100e9, 1024.0 * 1024 * 1024},
	};
	for (int k = 0; b.classes && k < 5; k++)
		if (lsim_net_add_class(b.net, &cl[k], &b.cls[k], &d)) {
			fprintf(stderr, "bench links: %s\n", d.msg);
			return 1;
		}
	/* sources start at Poisson times over the first 10 ms */
	lsim_time t = 0;
	for (uint64_t s = 0; s < SOURCES; s++) {
		t += (lsim_time)gsl_ran_exponential(b.rng, 1e7 / SOURCES);
		lsim_schedule(b.eng, t, next_flow, &b, s);
	}
	/* warm-up: every source started, then 2,000 more completions */
	b.stop_at = UINT64_MAX;
	lsim_run(b.eng, t);
	b.stop_at = b.completions + 2000;
	lsim_run(b.eng, LSIM_TIME_MAX);

	struct lsim_net_stats s0, s1;
	lsim_net_get_stats(b.net, &s0);
	uint64_t ev0 = lsim_events_processed(b.eng);
	lsim_time sim0 = lsim_now(b.eng);
	lsim_set_periodic(b.eng, LSIM_MS, sample, &b);
	b.stop_at = b.completions + measured;
	double w0 = clock_s(CLOCK_MONOTONIC);
	double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	lsim_run(b.eng, LSIM_TIME_MAX);
	double w = clock_s(CLOCK_MONOTONIC) - w0;
	double cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
	lsim_net_get_stats(b.net, &s1);
	uint64_t ev = lsim_events_processed(b.eng) - ev0;
	double sim = lsim_time_to_s(lsim_now(b.eng) - sim0);
	int rc = 0;
	if (b.failed || b.completions != b.stop_at || w <= 0) {
		fprintf(stderr, "bench links: failed\n");
		rc = 1;
	} else {
		double rec = (double)(s1.recomputations - s0.recomputations);
		printf("bench links mix=%s flows=%d completions=%" PRIu64
		       " wall_s=%.2f cpu_s=%.2f flows_per_s=%.0f"
		       " recomputations_per_s=%.0f events_per_s=%.0f"
		       " cpu_recomputations_per_s=%.0f cpu_events_per_s=%.0f"
		       " mean_flows_resolved=%.0f mean_links_visited=%.0f"
		       " rate_changes_per_recomputation=%.0f"
		       " mean_in_flight=%.0f simulated_s=%.3f\n",
		       mix, SOURCES, measured, w, cpu, (double)measured / w,
		       rec / w, (double)ev / w, cpu > 0 ? rec / cpu : 0,
		       cpu > 0 ? (double)ev / cpu : 0,
		       (double)(s1.flows_recomputed - s0.flows_recomputed) / rec,
		       (double)(s1.links_recomputed - s0.links_recomputed) / rec,
		       (double)(s1.rate_changes - s0.rate_changes) / rec,
		       b.n_samples ? b.in_flight_sum / (double)b.n_samples : 0,
		       sim);
	}
	lsim_topo_release(&b.topo);
	lsim_net_destroy(b.net);
	lsim_engine_destroy(b.eng);
	gsl_rng_free(b.rng);
	return rc;
}
