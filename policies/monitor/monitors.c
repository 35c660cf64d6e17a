/*
 * monitors.c - monitor policies: what the time series and the routers'
 * mon_* fields report each sample period. periodic reports the raw values
 * of the period; ewma smooths them per instance with weight alpha on the
 * newest sample.
 */
#include <stddef.h>
#include <stdlib.h>

#include "registry.h"

static void periodic_observe(void *state, const struct lsim_monitor_sample *raw,
			     struct lsim_monitor_sample *out)
{
	*out = *raw;
}

static const struct lsim_monitor_ops periodic_ops = {.observe = periodic_observe};

const struct lsim_policy_type lsim_mon_periodic = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_MONITOR,
	.name = "periodic",
	.summary = "raw values of each sample period (output.sample_period)",
	.ops = &periodic_ops,
};

struct ewma_state {
	double alpha;
	struct lsim_monitor_sample *prev; /* per instance */
	bool *seen;
	int32_t n;
};

static int ewma_init(void *state, const struct lsim_policy_ctx *ctx)
{
	struct ewma_state *s = state;
	s->n = ctx->n_instances > 0 ? ctx->n_instances : 1;
	s->prev = calloc((size_t)s->n, sizeof *s->prev);
	s->seen = calloc((size_t)s->n, sizeof *s->seen);
	return s->prev && s->seen ? 0 : LSIM_ENOMEM;
}

static void ewma_fini(void *state)
{
	struct ewma_state *s = state;
	free(s->prev);
	free(s->seen);
}

static double blend(double a, double now, double prev)
{
	return a * now + (1.0 - a) * prev;
}

static void ewma_observe(void *state, const struct lsim_monitor_sample *raw,
			 struct lsim_monitor_sample *out)
{
	struct ewma_state *s = state;
	*out = *raw;
	int32_t i = raw->instance;
	if (i < 0 || i >= s->n)
		return;
	if (s->seen[i]) {
		const struct lsim_monitor_sample *p = &s->prev[i];
		out->gpu_util = blend(s->alpha, raw->gpu_util, p->gpu_util);
		out->kv_util = blend(s->alpha, raw->kv_util, p->kv_util);
		out->queue_len = blend(s->alpha, raw->queue_len, p->queue_len);
		out->arrival_rate = blend(s->alpha, raw->arrival_rate, p->arrival_rate);
		out->pcie_util = blend(s->alpha, raw->pcie_util, p->pcie_util);
	}
	s->prev[i] = *out;
	s->seen[i] = true;
}

static const struct lsim_monitor_ops ewma_ops = {.observe = ewma_observe};

static const struct lsim_keydef ewma_params[] = {
	{"alpha", LSIM_K_DOUBLE, offsetof(struct ewma_state, alpha), "0.3", 0.001, 1,
	 NULL, "weight of the newest sample (1: no smoothing)", ""},
};

const struct lsim_policy_type lsim_mon_ewma = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_MONITOR,
	.name = "ewma",
	.summary = "exponentially weighted moving average of each instance's samples",
	.state_size = sizeof(struct ewma_state), .params = ewma_params,
	.n_params = 1, .init = ewma_init, .fini = ewma_fini, .ops = &ewma_ops,
};
