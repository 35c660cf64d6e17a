/*
 * lifecycle.c - how instances come and go over the cluster's links: the
 * network of a run, and the cold start of an instance (its weights move
 * from the storage service to each of its GPUs as flows that share the
 * links with all other traffic, then the engine starts up); background
 * copy streams between host and GPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

int lsim_sim_set_network(struct lsim_sim *s, const struct lsim_topo_params *p,
			 struct lsim_diag *d)
{
	if (s->net)
		return lsim_diag_set(d, LSIM_ESTATE, "", 0, 0, "network",
				     "the network is already built");
	s->net = lsim_net_create(s->eng);
	if (!s->net)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	int rc = lsim_topo_build(&s->topo, s->net, p, d);
	if (rc != 0) {
		lsim_net_destroy(s->net);
		s->net = NULL;
	}
	return rc;
}

double lsim_instance_pcie_util(struct lsim_instance *in)
{
	struct lsim_sim *s = in->sim;
	if (!s->net || in->gpu0 < 0)
		return 0;
	int32_t n = 2 * in->tp;
	if (!in->pcie_util_ns) {
		in->pcie_util_ns = calloc((size_t)n, sizeof *in->pcie_util_ns);
		if (!in->pcie_util_ns)
			return 0;
	}
	lsim_time now = lsim_now(s->eng), dt = now - in->pcie_t;
	double u = 0; /* the busiest link's mean utilisation since pcie_t */
	for (int32_t j = 0; j < n; j++) {
		int32_t gpu = in->gpu0 + j / 2;
		int32_t l = j % 2 ? s->topo.pcie_down[gpu] : s->topo.pcie_up[gpu];
		struct lsim_link_info li;
		if (l < 0 || lsim_link_get(s->net, l, &li) != 0)
			continue;
		if (dt > 0 && (li.util_ns - in->pcie_util_ns[j]) / (double)dt > u)
			u = (li.util_ns - in->pcie_util_ns[j]) / (double)dt;
		in->pcie_util_ns[j] = li.util_ns;
	}
	if (dt > 0) {
		double w = s->util_window > 0 ? (double)s->util_window : 1.0;
		in->pcie_ewma += (u - in->pcie_ewma) * -expm1(-(double)dt / w);
		in->pcie_t = now;
	}
	return in->pcie_ewma;
}

static void engine_started(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	(void)arg;
	struct lsim_instance *in = subject;
	lsim_sim_instance_ready(in->sim, in);
}

static void weights_loaded(void *ctx, lsim_flow_id flow, uint64_t arg)
{
	(void)flow;
	(void)arg;
	struct lsim_instance *in = ctx;
	struct lsim_sim *s = in->sim;
	if (--in->loads_left > 0)
		return;
	if (in->engine_init <= 0)
		lsim_sim_instance_ready(s, in);
	else if (!lsim_schedule_in(s->eng, in->engine_init, engine_started, in, 0) &&
		 !s->error) {
		s->error = LSIM_ENOMEM;
		lsim_stop(s->eng);
	}
}

int lsim_instance_cold_start(struct lsim_instance *in, lsim_time engine_init,
			     struct lsim_diag *d)
{
	struct lsim_sim *s = in->sim;
	if (!s->net || in->gpu0 < 0 || !in->model)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "cold_start",
				     "instance %d: a cold start needs the cluster's links, "
				     "a placement and a model", (int)in->id);
	double bytes = lsim_model_weight_bytes(in->model) / (double)in->tp;
	in->state = LSIM_INST_LOADING;
	in->start = lsim_now(s->eng);
	in->ready = -1;
	in->engine_init = engine_init;
	in->loads_left = in->tp;
	for (int32_t k = 0; k < in->tp; k++) {
		int32_t path[LSIM_PATH_MAX];
		int n = lsim_topo_path_storage_to_gpu(&s->topo, in->gpu0 + k, path);
		if (n < 0)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "cold_start",
					     "instance %d: GPU %d is not in the cluster",
					     (int)in->id, (int)(in->gpu0 + k));
		struct lsim_flow_req fr = {
			.path = path, .n_hops = n, .bytes = bytes,
			.done = weights_loaded, .ctx = in,
		};
		lsim_flow_id id;
		int rc = lsim_flow_start(s->net, &fr, &id, d);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* ---- scale-out and scale-in ---- */

static void provisioned(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)arg;
	struct lsim_instance *in = subject;
	struct lsim_sim *s = in->sim;
	int rc = 0;
	if (s->net && in->gpu0 >= 0 && in->model) {
		rc = lsim_instance_cold_start(in, in->engine_init, &s->diag);
		in->start = in->provision_start; /* it costs from provisioning */
	} else {
		/* no links: the weights arrive at load_bw, uncontended */
		double bytes = in->model ? lsim_model_weight_bytes(in->model) : 0;
		lsim_time load = s->load_bw > 0 ? (lsim_time)llround(bytes / s->load_bw * 1e9)
						: 0;
		in->state = LSIM_INST_LOADING;
		if (!lsim_schedule_in(eng, load + in->engine_init, engine_started, in, 0))
			rc = LSIM_ENOMEM;
	}
	if (rc != 0 && !s->error) {
		s->error = rc;
		lsim_stop(eng);
	}
}

int lsim_instance_provision(struct lsim_instance *in, lsim_time provision,
			    lsim_time engine_init, struct lsim_diag *d)
{
	struct lsim_sim *s = in->sim;
	in->state = LSIM_INST_PROVISIONING;
	in->provision_start = in->start = lsim_now(s->eng);
	in->ready = -1;
	in->engine_init = engine_init;
	in->last_sample = in->start;
	if (!lsim_schedule_in(s->eng, provision, provisioned, in, 0))
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	return 0;
}

void lsim_sim_instance_idle(struct lsim_sim *s, struct lsim_instance *in)
{
	if (in->state != LSIM_INST_DRAINING || in->outstanding > 0 || in->busy ||
	    in->run_len > 0 || in->wait_len > 0 || in->handing_over > 0 ||
	    in->swapping_in > 0 || in->busy_servers > 0)
		return;
	in->state = LSIM_INST_STOPPED;
	in->stop = lsim_now(s->eng);
	if (s->fleet.stopped)
		s->fleet.stopped(s->fleet.ctx, in);
}

void lsim_sim_drain(struct lsim_sim *s, struct lsim_instance *in)
{
	if (in->state == LSIM_INST_READY && s->n_ready > 0)
		s->n_ready--;
	in->state = LSIM_INST_DRAINING;
	lsim_sim_instance_idle(s, in);
}

/* ---- background copies ---- */

struct lsim_bg_stream {
	struct lsim_sim *s;
	int32_t path[LSIM_PATH_MAX];
	int n_hops;
	double block;
	int64_t left;
	lsim_time pause; /* gap + staging time before each copy */
};

static void bg_copy(struct lsim_engine *eng, void *subject, uint64_t arg);

static void bg_copied(void *ctx, lsim_flow_id flow, uint64_t arg)
{
	(void)flow;
	(void)arg;
	struct lsim_bg_stream *b = ctx;
	if (b->left > 0 && !lsim_schedule_in(b->s->eng, b->pause, bg_copy, b, 0) &&
	    !b->s->error) {
		b->s->error = LSIM_ENOMEM;
		lsim_stop(b->s->eng);
	}
}

static void bg_copy(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	(void)arg;
	struct lsim_bg_stream *b = subject;
	struct lsim_flow_req fr = {
		.path = b->path, .n_hops = b->n_hops, .bytes = b->block,
		.done = bg_copied, .ctx = b,
	};
	lsim_flow_id id;
	b->left--;
	int rc = lsim_flow_start(b->s->net, &fr, &id, &b->s->diag);
	if (rc != 0) {
		b->s->error = rc;
		lsim_stop(b->s->eng);
	}
}

int lsim_sim_add_background(struct lsim_sim *s, const struct lsim_bg_cfg *c,
			    struct lsim_diag *d)
{
	if (!s->net)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "background",
				     "background copies need the cluster's links");
	int32_t path[LSIM_PATH_MAX];
	int n = c->to_host ? lsim_topo_path_gpu_to_host(&s->topo, c->gpu, path)
			   : lsim_topo_path_host_to_gpu(&s->topo, c->gpu, path);
	if (n < 0)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "background.gpu",
				     "GPU %d is not in the cluster (it has %d)", (int)c->gpu,
				     (int)s->topo.n_gpus);
	lsim_time staging = c->staging_bw > 0
				    ? (lsim_time)llround(c->block / c->staging_bw * 1e9)
				    : 0;
	for (int64_t k = 0; k < c->streams; k++) {
		struct lsim_bg_stream **p = realloc(s->bg, (s->n_bg + 1) * sizeof *p);
		if (!p)
			return LSIM_ENOMEM;
		s->bg = p;
		struct lsim_bg_stream *b = calloc(1, sizeof *b);
		if (!b)
			return LSIM_ENOMEM;
		s->bg[s->n_bg++] = b;
		b->s = s;
		memcpy(b->path, path, sizeof path);
		b->n_hops = n;
		b->block = c->block;
		b->left = c->count;
		b->pause = c->gap + staging;
		/* the first copy after the staging of its block */
		if (c->count > 0 && !lsim_schedule(s->eng, c->start + b->pause, bg_copy, b, 0))
			return LSIM_ENOMEM;
	}
	return 0;
}
