/*
 * lifecycle.c - how instances come and go over the cluster's links: the
 * network of a run, and the cold start of an instance (its weights move
 * from the storage service to each of its GPUs as flows that share the
 * links with all other traffic, then the engine starts up); background
 * copy streams between host and GPU.
 */
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/sim.h"

int lsim_sim_set_network(struct lsim_sim *s, const struct lsim_topo_params *p,
			 struct lsim_diag *d)
{
	if (s->sv.net)
		return lsim_diag_set(d, LSIM_ESTATE, "", 0, 0, "network",
				     "the network is already built");
	s->sv.net = lsim_net_create(s->sv.eng);
	if (!s->sv.net)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	int rc = lsim_topo_build(&s->sv.topo, s->sv.net, p, d);
	if (rc != 0) {
		lsim_net_destroy(s->sv.net);
		s->sv.net = NULL;
	}
	return rc;
}

static void engine_started(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	(void)arg;
	struct lsim_instance *in = subject;
	if (!in->failed)
		lsim_sim_instance_ready(lsim_sim_of(in), in);
}

static void weights_loaded(void *ctx, lsim_flow_id flow, uint64_t arg)
{
	(void)flow;
	(void)arg;
	struct lsim_instance *in = ctx;
	struct lsim_sim *s = lsim_sim_of(in);
	if (--in->loads_left > 0)
		return;
	if (s->sl)
		lsim_sl_loaded(s, in); /* failed or not: the tier's entry is read */
	if (in->failed)
		return;
	if (in->engine_init <= 0)
		lsim_sim_instance_ready(s, in);
	else if (!lsim_schedule_in(s->sv.eng, in->engine_init, engine_started, in, 0) &&
		 !s->sv.error) {
		s->sv.error = LSIM_ENOMEM;
		lsim_stop(s->sv.eng);
	}
}

/* Starts one weight flow of a cold start on the first n hops of path;
 * nothing for no bytes. */
static int load_flow(struct lsim_sim *s, struct lsim_instance *in, const int32_t *path, int n,
		     double bytes, struct lsim_diag *d)
{
	if (bytes <= 0 || n <= 0)
		return 0;
	struct lsim_flow_req fr = {
		.path = path, .n_hops = n, .bytes = bytes,
		.done = weights_loaded, .ctx = in, .kind = LSIM_FLOW_WEIGHTS,
	};
	lsim_flow_id id;
	int rc = lsim_flow_start(s->sv.net, &fr, &id, d);
	if (rc == 0)
		in->loads_left++;
	return rc;
}

/*
 * Each GPU's share of the weights moves from where they are held to the
 * GPU. With weight offload (cpu_offload_gb) vLLM places the offloaded
 * parameters in host memory when it builds the model, before it loads
 * the checkpoint into them (maybe_offload_to_cpu), so that part never
 * crosses the GPU's host link and PCIe: it moves on the path's hops
 * before them (storage, network, SSD), and not at all when host memory
 * holds the weights already (the host cache).
 */
int lsim_instance_cold_start(struct lsim_instance *in, lsim_time engine_init,
			     struct lsim_diag *d)
{
	struct lsim_sim *s = lsim_sim_of(in);
	if (!s->sv.net || in->gpu0 < 0 || !in->model)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "cold_start",
				     "instance %d: a cold start needs the cluster's links, "
				     "a placement and a model", (int)in->id);
	double bytes = lsim_model_weight_bytes(in->model) / (double)in->n_gpus;
	double offload = fmin(in->cfg.cpu_offload_gb * 1073741824.0, bytes);
	in->state = LSIM_INST_LOADING;
	in->start = lsim_now(s->sv.eng);
	in->ready = -1;
	in->engine_init = engine_init;
	in->loads_left = 1; /* held until every flow has started */
	for (int32_t k = 0; k < in->n_gpus; k++) {
		int32_t path[LSIM_PATH_MAX];
		int n = s->sl ? lsim_sl_load_path(s, in, k, path)
			      : lsim_topo_path_storage_to_gpu(&s->sv.topo,
							      lsim_instance_gpu(in, k), path);
		if (n < 0)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "cold_start",
					     "instance %d: GPU %d is not in the cluster",
					     (int)in->id, (int)lsim_instance_gpu(in, k));
		/* every path ends host link, PCIe (lsim_topo_path_*_to_gpu) */
		int rc = load_flow(s, in, path, n, bytes - offload, d);
		if (rc == 0)
			rc = load_flow(s, in, path, n - 2, offload, d);
		if (rc != 0)
			return rc;
	}
	weights_loaded(in, 0, 0); /* drops the hold: done if nothing moves */
	return 0;
}

/* ---- scale-out and scale-in ---- */

static void provisioned(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)arg;
	struct lsim_instance *in = subject;
	struct lsim_sim *s = lsim_sim_of(in);
	int rc = 0;
	if (in->failed || in->state == LSIM_INST_STOPPED)
		return; /* drained before its machine came */
	if (s->sv.net && in->gpu0 >= 0 && in->model) {
		rc = lsim_instance_cold_start(in, in->engine_init, &s->sv.diag);
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
	if (rc != 0 && !s->sv.error) {
		s->sv.error = rc;
		lsim_stop(eng);
	}
}

int lsim_instance_provision(struct lsim_instance *in, lsim_time provision,
			    lsim_time engine_init, struct lsim_diag *d)
{
	struct lsim_sim *s = lsim_sim_of(in);
	in->state = LSIM_INST_PROVISIONING;
	in->provision_start = in->start = lsim_now(s->sv.eng);
	in->energy_t = in->start;
	in->ready = -1;
	in->engine_init = engine_init;
	in->last_sample = in->start;
	if (!lsim_schedule_in(s->sv.eng, provision, provisioned, in, 0))
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
	in->stop = lsim_now(s->sv.eng);
	/* drained and empty: no block is held, none will be; a day of
	 * autoscaling would otherwise keep every stopped replica's cache */
	lsim_instance_drop_kv(in);
	if (s->fleet.stopped)
		s->fleet.stopped(s->fleet.ctx, in);
	if (s->sl)
		lsim_sl_gpus_freed(s);
}

void lsim_sim_drain(struct lsim_sim *s, struct lsim_instance *in)
{
	if (in->state == LSIM_INST_READY && s->n_ready > 0)
		s->n_ready--;
	in->state = LSIM_INST_DRAINING;
	lsim_sim_instance_idle(s, in);
}

/* ---- failures ---- */

static void detected(struct lsim_engine *eng, void *subject, uint64_t arg);

/* A time to failure of mean `mean` ns; with n > 1, the first of n such
 * independent failures (exponential: mean / n; Weibull of shape k: the
 * scale times n^(-1/k)). */
static double draw_ttf_of(struct lsim_sim *s, double mean, double n)
{
	if (s->fail_weibull) {
		double scale = mean / tgamma(1.0 + 1.0 / s->fail_shape) *
			       pow(n, -1.0 / s->fail_shape);
		return gsl_ran_weibull(s->fail_rng, scale, s->fail_shape);
	}
	return gsl_ran_exponential(s->fail_rng, mean / n);
}

/* The instance's time to failure: of the instance as a whole (mtbf), or of
 * the first of its GPUs (gpu_mtbf), whichever comes first. */
static lsim_time draw_ttf(struct lsim_sim *s, const struct lsim_instance *in)
{
	double t = INFINITY;
	if (s->mtbf > 0)
		t = draw_ttf_of(s, (double)s->mtbf, 1.0);
	if (s->gpu_mtbf > 0) {
		double g = in->n_gpus > 1 ? (double)in->n_gpus : 1.0;
		double tg = draw_ttf_of(s, (double)s->gpu_mtbf, g);
		t = tg < t ? tg : t;
	}
	return t < 1 ? 1 : t > 9e18 ? (lsim_time)9e18 : (lsim_time)llround(t);
}

static void instance_fails(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)arg;
	struct lsim_instance *in = subject;
	struct lsim_sim *s = lsim_sim_of(in);
	in->fail_ev = 0;
	if (in->failed || in->state == LSIM_INST_STOPPED)
		return;
	in->failed = true;
	in->failed_at = lsim_now(eng);
	s->n_failures++;
	lsim_time delay = 0;
	if (s->synchronizer) {
		const struct lsim_synchronizer_ops *ops = s->synchronizer->type->ops;
		if (ops->detection_delay)
			delay = ops->detection_delay(s->synchronizer->state, in->failed_at);
		if (delay < 0) {
			lsim_sim_policy_error(s, s->synchronizer, "a detection delay of %lld ns",
					      (long long)delay);
			return;
		}
	}
	if (!lsim_schedule_in(eng, delay > 0 ? delay : 0, detected, in, 0) && !s->sv.error) {
		s->sv.error = LSIM_ENOMEM;
		lsim_stop(eng);
	}
}

/* Starts a replacement of the instance's group (provisioning, cold start). */
static void replace(struct lsim_sim *s, const struct lsim_instance *in)
{
	if (!s->replace_failed || !s->fleet.spawn || in->group < 0 ||
	    (size_t)in->group >= s->n_groups)
		return;
	struct lsim_group *g = &s->groups[in->group];
	struct lsim_instance *nw = NULL;
	int rc = s->fleet.spawn(s->fleet.ctx, in->group, &nw, &s->sv.diag);
	if (rc == 0)
		rc = lsim_sim_grow_arrays(s);
	if (rc == 0)
		rc = lsim_instance_provision(nw, g->provision, g->engine_init, &s->sv.diag);
	if (rc == 0) {
		g->scale_outs++;
		lsim_sim_arm_failures(s, nw);
	} else if (rc == LSIM_EBUSY) {
		g->refused++;
	} else if (!s->sv.error) {
		s->sv.error = rc;
		lsim_stop(s->sv.eng);
	}
}

/* The instance is gone now: every request it held goes back (or fails). */
static void evict(struct lsim_sim *s, struct lsim_instance *in)
{
	if (in->state == LSIM_INST_READY && s->n_ready > 0)
		s->n_ready--;
	in->state = LSIM_INST_STOPPED;
	in->stop = lsim_now(s->sv.eng);
	/* its step in flight ran until it died (failure) or until now (reclaim) */
	lsim_time died = in->failed_at >= 0 ? in->failed_at : in->stop;
	if (in->busy && !in->service_mode && died > in->step_start)
		in->busy_ns += died - in->step_start;
	in->busy = false;
	in->wait_len = 0;
	in->run_len = 0;
	in->n_sched = 0;
	in->n_inflight = 0; /* its batches in flight die with it */
	in->swapping_in = in->handing_over = 0;
	in->busy_servers = 0;
	for (size_t i = 0; i < s->n_reqs; i++) {
		struct lsim_req *r = &s->sv.reqs[i];
		if (r->live && r->instance == in->id)
			lsim_sim_requeue(s, in, (int32_t)i);
	}
	in->outstanding = 0;
	in->queued_tokens = 0;
	lsim_instance_touch(in);
	/* its GPUs' memory is gone: the cache goes too (a handed-over KV
	 * still referenced from a decode instance is released there as a
	 * no-op); a day with many failures would otherwise keep them all */
	lsim_instance_drop_kv(in);
}

/* Detected: the instance is gone; its requests go back (or fail) and a
 * replacement starts. The failed GPUs stay out of service. */
static void detected(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	(void)arg;
	struct lsim_instance *in = subject;
	bool was_live = in->state != LSIM_INST_STOPPED;
	evict(lsim_sim_of(in), in);
	if (was_live)
		replace(lsim_sim_of(in), in);
}

/* ---- spot reclaims ---- */

static void spot_reclaimed(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	(void)arg;
	struct lsim_instance *in = subject;
	struct lsim_sim *s = lsim_sim_of(in);
	in->spot_ev = 0;
	if (in->state == LSIM_INST_STOPPED || in->failed)
		return; /* drained in time, or failed first */
	in->failed = true; /* the machine is gone: nothing runs on */
	evict(s, in);
	if (s->fleet.stopped)
		s->fleet.stopped(s->fleet.ctx, in); /* its GPUs return to the pool */
	if (s->sl)
		lsim_sl_gpus_freed(s);
}

/* The provider's notice: the instance drains, a replacement starts, and
 * after the warning whatever is left is taken away. */
static void spot_warned(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)arg;
	struct lsim_instance *in = subject;
	struct lsim_sim *s = lsim_sim_of(in);
	in->spot_ev = 0;
	if (in->state == LSIM_INST_STOPPED || in->failed)
		return;
	s->n_reclaims++;
	replace(s, in);
	lsim_sim_drain(s, in);
	if (in->state != LSIM_INST_STOPPED) {
		in->spot_ev = lsim_schedule_in(eng, s->spot_warning, spot_reclaimed, in, 0);
		if (!in->spot_ev && !s->sv.error)
			s->sv.error = LSIM_ENOMEM;
	}
}

void lsim_sim_arm_failures(struct lsim_sim *s, struct lsim_instance *in)
{
	if (in->spot && s->spot_mtbr > 0 && s->fail_rng) {
		lsim_time t = (lsim_time)llround(gsl_ran_exponential(s->fail_rng,
								     (double)s->spot_mtbr));
		in->spot_ev = lsim_schedule_in(s->sv.eng, t + 1, spot_warned, in, 0);
		if (!in->spot_ev && !s->sv.error)
			s->sv.error = LSIM_ENOMEM;
	}
	if ((s->mtbf <= 0 && s->gpu_mtbf <= 0) || !s->fail_rng)
		return;
	in->fail_ev = lsim_schedule_in(s->sv.eng, draw_ttf(s, in), instance_fails, in, 0);
	if (!in->fail_ev && !s->sv.error)
		s->sv.error = LSIM_ENOMEM;
}

void lsim_sim_disarm_failures(struct lsim_sim *s)
{
	for (size_t i = 0; i < s->n_inst; i++) {
		if (s->inst[i]->fail_ev) {
			lsim_cancel(s->sv.eng, s->inst[i]->fail_ev);
			s->inst[i]->fail_ev = 0;
		}
		if (s->inst[i]->spot_ev) {
			lsim_cancel(s->sv.eng, s->inst[i]->spot_ev);
			s->inst[i]->spot_ev = 0;
		}
	}
	for (size_t k = 0; s->trace_ev && k < s->n_trace_fail; k++)
		if (s->trace_ev[k]) {
			lsim_cancel(s->sv.eng, s->trace_ev[k]);
			s->trace_ev[k] = 0;
		}
	if (s->coord_ev) {
		lsim_cancel(s->sv.eng, s->coord_ev);
		s->coord_ev = 0;
	}
	for (int32_t k = 0; s->node_ev && k < s->n_nodes; k++)
		if (s->node_ev[k]) {
			lsim_cancel(s->sv.eng, s->node_ev[k]);
			s->node_ev[k] = 0;
		}
}

/* A node fails: every instance on it fails, and it stays down. */
static void node_fails(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	struct lsim_sim *s = subject;
	s->node_ev[arg] = 0;
	s->n_node_failures++;
	if (s->fleet.node_failed)
		s->fleet.node_failed(s->fleet.ctx, (int32_t)arg);
	for (size_t i = 0; i < s->n_inst; i++)
		if (lsim_instance_on_node(s->inst[i], (int32_t)arg))
			instance_fails(eng, s->inst[i], 0);
}

static void trace_failure(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	struct lsim_sim *s = subject;
	if (arg < s->n_inst)
		instance_fails(eng, s->inst[arg], 0);
}

static void coordinator_fails(struct lsim_engine *eng, void *subject, uint64_t arg);

static void coordinator_elected(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)arg;
	struct lsim_sim *s = subject;
	s->control_down = false;
	s->control_down_ns += lsim_now(eng) - s->control_down_since;
	lsim_sim_release_held(s);
	s->coord_ev = lsim_schedule_in(eng, (lsim_time)llround(gsl_ran_exponential(
						    s->fail_rng, (double)s->coord_mtbf)) + 1,
				       coordinator_fails, s, 0);
	if (!s->coord_ev && !s->sv.error)
		s->sv.error = LSIM_ENOMEM;
}

static void coordinator_fails(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)arg;
	struct lsim_sim *s = subject;
	s->coord_ev = 0;
	s->control_down = true;
	s->control_down_since = lsim_now(eng);
	s->n_coord_failures++;
	lsim_time election = 0;
	if (s->synchronizer) {
		const struct lsim_synchronizer_ops *ops = s->synchronizer->type->ops;
		if (ops->election_time)
			election = ops->election_time(s->synchronizer->state);
		if (election < 0) {
			lsim_sim_policy_error(s, s->synchronizer, "an election time of %lld ns",
					      (long long)election);
			return;
		}
	}
	if (!lsim_schedule_in(eng, election, coordinator_elected, s, 0) && !s->sv.error)
		s->sv.error = LSIM_ENOMEM;
}

void lsim_sim_arm_run_failures(struct lsim_sim *s)
{
	for (size_t i = 0; i < s->n_inst; i++)
		lsim_sim_arm_failures(s, s->inst[i]);
	if (s->n_trace_fail > 0) {
		s->trace_ev = calloc(s->n_trace_fail, sizeof *s->trace_ev);
		if (!s->trace_ev) {
			s->sv.error = LSIM_ENOMEM;
			return;
		}
	}
	for (size_t k = 0; k < s->n_trace_fail; k++) {
		s->trace_ev[k] = lsim_schedule(s->sv.eng, s->trace_fail_t[k], trace_failure,
					       s, (uint64_t)s->trace_fail_inst[k]);
		if (!s->trace_ev[k] && !s->sv.error)
			s->sv.error = LSIM_ENOMEM;
	}
	if (s->node_mtbf > 0 && s->n_nodes > 0 && s->fail_rng) {
		s->node_ev = calloc((size_t)s->n_nodes, sizeof *s->node_ev);
		if (!s->node_ev) {
			s->sv.error = LSIM_ENOMEM;
			return;
		}
		for (int32_t k = 0; k < s->n_nodes; k++) {
			lsim_time t = (lsim_time)llround(gsl_ran_exponential(
					      s->fail_rng, (double)s->node_mtbf));
			s->node_ev[k] = lsim_schedule_in(s->sv.eng, t + 1, node_fails, s,
							 (uint64_t)k);
			if (!s->node_ev[k] && !s->sv.error)
				s->sv.error = LSIM_ENOMEM;
		}
	}
	if (s->coord_mtbf > 0 && s->fail_rng) {
		s->coord_ev = lsim_schedule_in(
			s->sv.eng, (lsim_time)llround(gsl_ran_exponential(
					s->fail_rng, (double)s->coord_mtbf)) + 1,
			coordinator_fails, s, 0);
		if (!s->coord_ev && !s->sv.error)
			s->sv.error = LSIM_ENOMEM;
	}
}

/* ---- background copies ---- */

struct lsim_bg_stream {
	struct lsim_sim *s;
	int32_t path[LSIM_PATH_MAX];
	int n_hops;
	double block;
	int64_t left;
	lsim_time pause; /* gap + staging time before each copy */
	int32_t cls;	 /* traffic class of its copies (0: by kind) */
};

static void bg_copy(struct lsim_engine *eng, void *subject, uint64_t arg);

static void bg_copied(void *ctx, lsim_flow_id flow, uint64_t arg)
{
	(void)flow;
	(void)arg;
	struct lsim_bg_stream *b = ctx;
	if (b->left > 0 && !lsim_schedule_in(b->s->sv.eng, b->pause, bg_copy, b, 0) &&
	    !b->s->sv.error) {
		b->s->sv.error = LSIM_ENOMEM;
		lsim_stop(b->s->sv.eng);
	}
}

static void bg_copy(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	(void)arg;
	struct lsim_bg_stream *b = subject;
	struct lsim_flow_req fr = {
		.path = b->path, .n_hops = b->n_hops, .bytes = b->block,
		.done = bg_copied, .ctx = b, .kind = LSIM_FLOW_BACKGROUND, .cls = b->cls,
	};
	lsim_flow_id id;
	b->left--;
	int rc = lsim_flow_start(b->s->sv.net, &fr, &id, &b->s->sv.diag);
	if (rc != 0) {
		b->s->sv.error = rc;
		lsim_stop(b->s->sv.eng);
	}
}

int lsim_sim_add_background(struct lsim_sim *s, const struct lsim_bg_cfg *c,
			    struct lsim_diag *d)
{
	if (!s->sv.net)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "background",
				     "background copies need the cluster's links");
	int32_t path[LSIM_PATH_MAX];
	int n = c->to_host ? lsim_topo_path_gpu_to_host(&s->sv.topo, c->gpu, path)
			   : lsim_topo_path_host_to_gpu(&s->sv.topo, c->gpu, path);
	if (n < 0)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "background.gpu",
				     "GPU %d is not in the cluster (it has %d)", (int)c->gpu,
				     (int)s->sv.topo.n_gpus);
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
		b->cls = c->cls;
		/* the first copy after the staging of its block */
		if (c->count > 0 && !lsim_schedule(s->sv.eng, c->start + b->pause, bg_copy, b, 0))
			return LSIM_ENOMEM;
	}
	return 0;
}
