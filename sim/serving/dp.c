/*
 * dp.c - data-parallel groups (struct lsim_dp, docs/parallelism.md): the
 * group's ranks and vLLM's DP load balancer in front of them, as vLLM
 * v1 runs it (vllm/v1/engine/core_client.py, DPLBAsyncMPClient.
 * get_core_engine_for_request; vllm/v1/engine/coordinator.py): each
 * request goes to the rank of least 4 x waiting + running, ties to the
 * lowest rank, in counts the coordinator publishes every 100 ms, to which
 * the front end adds one waiting request for each it sends until the next
 * publication replaces them. The lockstep steps of an MoE group are in
 * instance.c (lsim_dp_step).
 */
#include <stdint.h>
#include <stdlib.h>

#include "serving/serving.h"

/* vLLM's coordinator: stats_update_interval_ms, 100 by default. */
#define DP_PUBLISH_PERIOD (100 * LSIM_MS)

struct lsim_dp *lsim_dp_create(struct lsim_instance **ranks, int32_t n, bool lockstep)
{
	if (n < 1)
		return NULL;
	struct lsim_dp *g = calloc(1, sizeof *g);
	if (!g)
		return NULL;
	size_t k = (size_t)n;
	g->n = n;
	g->lockstep = lockstep;
	g->publish_period = DP_PUBLISH_PERIOD;
	g->rank = malloc(k * sizeof *g->rank);
	g->pub_wait = calloc(k, sizeof *g->pub_wait);
	g->pub_run = calloc(k, sizeof *g->pub_run);
	g->batch = calloc(k, sizeof *g->batch);
	g->part = calloc(k, sizeof *g->part);
	if (!g->rank || !g->pub_wait || !g->pub_run || !g->batch || !g->part) {
		lsim_dp_release(g);
		return NULL;
	}
	for (int32_t i = 0; i < n; i++) {
		g->rank[i] = ranks[i];
		ranks[i]->dp = g;
		ranks[i]->dp_rank = i;
	}
	return g;
}

void lsim_dp_release(struct lsim_dp *g)
{
	if (!g)
		return;
	free(g->rank);
	free(g->pub_wait);
	free(g->pub_run);
	free(g->batch);
	free(g->part);
	free(g);
}

static bool has_work(const struct lsim_dp *g)
{
	for (int32_t i = 0; i < g->n; i++)
		if (g->pub_wait[i] || g->pub_run[i] || g->rank[i]->outstanding > 0)
			return true;
	return false;
}

/* The coordinator publishes each rank's scheduler counts; it goes on
 * every period while the group has work, and stops once it has none and
 * has published that (a later request starts it again). */
static void publish(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)arg;
	struct lsim_dp *g = subject;
	g->pub_ev = 0;
	for (int32_t i = 0; i < g->n; i++) {
		g->pub_wait[i] = (int64_t)g->rank[i]->wait_len;
		g->pub_run[i] = (int64_t)g->rank[i]->run_len;
	}
	if (has_work(g)) {
		g->pub_ev = lsim_schedule_in(eng, g->publish_period, publish, g, 0);
		if (!g->pub_ev && !g->rank[0]->sv->error)
			g->rank[0]->sv->error = LSIM_ENOMEM;
	}
}

struct lsim_instance *lsim_dp_pick(struct lsim_dp *g)
{
	int32_t best = -1;
	int64_t min = INT64_MAX;
	for (int32_t i = 0; i < g->n; i++) {
		if (g->rank[i]->state != LSIM_INST_READY || g->rank[i]->failed)
			continue;
		int64_t score = 4 * g->pub_wait[i] + g->pub_run[i];
		if (score < min) {
			min = score;
			best = i;
		}
	}
	if (best < 0)
		return NULL;
	g->pub_wait[best]++;
	struct lsim_serving *s = g->rank[best]->sv;
	if (!g->pub_ev) {
		g->pub_ev = lsim_schedule_in(s->eng, g->publish_period, publish, g, 0);
		if (!g->pub_ev && !s->error)
			s->error = LSIM_ENOMEM;
	}
	return g->rank[best];
}
