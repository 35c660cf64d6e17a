/*
 * run.c - the context of one run: request arrivals streamed from the
 * workload (one pending arrival event at a time), routing to instances,
 * periodic time-series samples, the end-of-run accounting and the records
 * handed to the report sinks.
 */
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/recstore.h"
#include "kernel/array.h"
#include "kernel/rng.h"
#include "run/sim.h"
#include "report/steady.h"

/* sim.h puts what a step touches in a request's first cache line */
_Static_assert(offsetof(struct lsim_req, blocks) == 64,
	       "a step's fields of struct lsim_req fill its first 64 bytes");

/* ---- how the instances report to the run (struct lsim_instance_hooks) ---- */

static int hook_queue_key(void *ctx, int32_t req, double *key)
{
	struct lsim_sim *s = ctx;
	*key = (double)s->sv.reqs[req].arrival;
	if (!s->queue)
		return 0;
	struct lsim_request_info info;
	lsim_sim_request_info(s, req, &info);
	const struct lsim_scheduler_ops *ops = s->queue->type->ops;
	*key = ops->queue_key(s->queue->state, &info);
	if (isnan(*key))
		return lsim_sim_policy_error(s, s->queue, "a NaN queue key for request %d",
					     (int)req);
	return 0;
}

static void hook_request_done(void *ctx, int32_t req)
{
	lsim_sim_request_done(ctx, req);
}

static void hook_handoff(void *ctx, struct lsim_instance *from, int32_t req)
{
	lsim_sim_handoff(ctx, from, req);
}

static void hook_stream_tokens(void *ctx, const struct lsim_instance *in, int32_t tokens)
{
	lsim_sim_stream_tokens(ctx, in, tokens);
}

static void hook_idle(void *ctx, struct lsim_instance *in)
{
	lsim_sim_instance_idle(ctx, in);
}

static void hook_requeue(void *ctx, struct lsim_instance *failed, int32_t req)
{
	lsim_sim_requeue(ctx, failed, req);
}

static const struct lsim_instance_hooks run_hooks = {
	.queue_key = hook_queue_key,
	.request_done = hook_request_done,
	.handoff = hook_handoff,
	.stream_tokens = hook_stream_tokens,
	.idle = hook_idle,
	.requeue = hook_requeue,
};

int lsim_sim_init(struct lsim_sim *s, uint64_t seed, struct lsim_diag *d)
{
	memset(s, 0, sizeof *s);
	s->sv.hooks = &run_hooks;
	s->sv.owner = s;
	s->seed = seed;
	s->sv.pue = 1.0;
	s->sample_period = LSIM_S;
	s->sv.util_window = 100 * LSIM_MS;
	s->pending_slot = -1;
	s->sv.macro_min = LSIM_TIME_MAX;
	s->sv.eng = lsim_engine_create();
	s->sv.service_rng = lsim_rng_create(seed, 0, LSIM_STREAM_SERVICE);
	s->class_rng = lsim_rng_create(seed, 0, LSIM_STREAM_CLASSES);
	s->model_rng = lsim_rng_create(seed, 0, LSIM_STREAM_MODELS);
	s->fail_rng = lsim_rng_create(seed, 0, LSIM_STREAM_FAILURES);
	s->lora_rng = lsim_rng_create(seed, 0, LSIM_STREAM_LORA);
	if (!s->sv.eng || !s->sv.service_rng || !s->class_rng || !s->model_rng ||
	    !s->fail_rng || !s->lora_rng) {
		lsim_sim_release(s);
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	}
	return 0;
}

struct lsim_dp *lsim_sim_add_dp(struct lsim_sim *s, struct lsim_instance **ranks,
				int32_t n, bool lockstep)
{
	if (n < 1)
		return NULL;
	struct lsim_dp **list = realloc(s->dp, (s->n_dp + 1) * sizeof *list);
	if (!list)
		return NULL;
	s->dp = list;
	struct lsim_dp *g = lsim_dp_create(ranks, n, lockstep);
	if (g)
		s->dp[s->n_dp++] = g;
	return g;
}

void lsim_sim_release(struct lsim_sim *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_inst; i++) {
		lsim_instance_release(s->inst[i]);
		free(s->inst[i]);
	}
	free(s->inst);
	for (size_t i = 0; i < s->n_dp; i++)
		lsim_dp_release(s->dp[i]);
	free(s->dp);
	for (size_t i = 0; i < s->n_reqs; i++) {
		free(s->sv.reqs[i].blocks);
		free(s->sv.reqs[i].src_blocks);
		free(s->sv.reqs[i].hashes);
	}
	free(s->sv.reqs);
	free(s->free_slots);
	lsim_recstore_destroy(s->records);
	lsim_tsrec_destroy(s->ts_rec);
	free(s->ts_cur);
	lsim_workload_destroy(s->workload);
	lsim_topo_release(&s->sv.topo);
	lsim_net_destroy(s->sv.net); /* before the engine its events are in */
	lsim_engine_destroy(s->sv.eng);
	gsl_rng_free(s->sv.service_rng);
	gsl_rng_free(s->class_rng);
	gsl_rng_free(s->model_rng);
	gsl_rng_free(s->fail_rng);
	gsl_rng_free(s->lora_rng);
	free(s->lora_cdf);
	free(s->trace_ev);
	free(s->node_ev);
	free(s->inst_info);
	free(s->route_map);
	free(s->sv.info_stale);
	free(s->held);
	lsim_sl_destroy(s->sl);
	s->sl = NULL;
	free(s->inv_mark);
	free(s->inv_kv);
	free(s->link_util);
	free(s->sample_link);
	free(s->sample_util);
	lsim_tsrec_destroy(s->link_rec);
	free(s->link_cur);
	free(s->link_recs);
	free(s->tenant_recs);
	for (size_t i = 0; i < s->n_bg; i++)
		free(s->bg[i]);
	free(s->bg);
	free(s->rr_model);
	free(s->ctx_by_model);
	free(s->sv.macro);
	for (size_t i = 0; i < s->n_lora_names; i++)
		free(s->lora_names[i]);
	free(s->lora_names);
	free(s->lora_index);
	for (size_t i = 0; i < s->n_tenant_names; i++)
		free(s->tenant_names[i]);
	free(s->tenant_names);
	free(s->tenant_cls);
	memset(s, 0, sizeof *s);
}

struct lsim_instance *lsim_sim_add_instance(struct lsim_sim *s)
{
	/* Instances are allocated one by one and never move: events hold
	 * pointers to them, and instances may be added while the run goes. */
	if (s->n_inst == s->cap_inst) {
		size_t c = s->cap_inst ? 2 * s->cap_inst : 8;
		struct lsim_instance **p = realloc(s->inst, c * sizeof *p);
		if (!p)
			return NULL;
		s->inst = p;
		s->cap_inst = c;
	}
	struct lsim_instance *in = calloc(1, sizeof *in);
	if (!in)
		return NULL;
	s->inst[s->n_inst++] = in;
	return in;
}

void lsim_sim_drop_instance(struct lsim_sim *s)
{
	if (s->n_inst > 0)
		free(s->inst[--s->n_inst]);
}

static void oracle_info(const struct lsim_sim *s, const struct lsim_policy *p,
			int32_t req, struct lsim_request_info *info);

/* Writes the request's record and frees its slot for reuse. */
static void retire(struct lsim_sim *s, int32_t req)
{
	struct lsim_req *r = &s->sv.reqs[req];
	struct lsim_req_record rec;
	lsim_sim_to_record(s, r, &rec);
	int rc = lsim_recstore_put(s->records, r->seq, &rec);
	if (rc != 0 && !s->sv.error) {
		s->sv.error = lsim_diag_set(&s->sv.diag, rc, "", 0, 0, "",
					 "cannot store the record of request %llu: %s",
					 (unsigned long long)r->id, lsim_strerror(rc));
		lsim_stop(s->sv.eng);
	}
	r->live = false;
	if (s->retain_requests)
		return;
	free(r->blocks);
	free(r->hashes);
	free(r->src_blocks);
	r->blocks = NULL;
	r->hashes = NULL;
	r->src_blocks = NULL;
	r->n_hashes = r->nblocks = r->n_listed = r->cap_blocks = 0;
	if (s->n_free == s->cap_free) {
		size_t c = s->cap_free ? 2 * s->cap_free : 256;
		int32_t *p = realloc(s->free_slots, c * sizeof *p);
		if (!p)
			return; /* the slot is lost, not the request */
		s->free_slots = p;
		s->cap_free = c;
	}
	s->free_slots[s->n_free++] = req;
}

void lsim_sim_request_done(struct lsim_sim *s, int32_t req)
{
	s->n_done++;
	const struct lsim_req *r = &s->sv.reqs[req];
	int32_t inst = r->instance;
	if (s->profiler && r->status == LSIM_REQ_FINISHED) {
		const struct lsim_profiler_ops *ops = s->profiler->type->ops;
		if (ops->observe) {
			struct lsim_request_info info;
			oracle_info(s, s->profiler, req, &info);
			ops->observe(s->profiler->state, &info, r->output,
				     r->finish - r->first_sched);
		}
	}
	retire(s, req);
	if (inst >= 0 && (size_t)inst < s->n_inst &&
	    s->inst[inst]->state == LSIM_INST_DRAINING)
		lsim_sim_instance_idle(s, s->inst[inst]);
	else if (s->sl && inst >= 0 && (size_t)inst < s->n_inst)
		lsim_sl_maybe_idle(s, s->inst[inst]);
	if (s->workload_done && s->n_done == s->n_arrived)
		lsim_sim_disarm_failures(s);
}

/* ---- policies' view ---- */

void lsim_sim_request_info(const struct lsim_sim *s, int32_t req,
			   struct lsim_request_info *out)
{
	const struct lsim_req *r = &s->sv.reqs[req];
	out->id = r->id;
	out->arrival = r->arrival;
	out->prompt_tokens = r->prompt;
	out->predicted_output = r->predicted;
	out->true_output = -1;
	out->qos_class = r->qos_class;
	out->priority = r->priority;
	out->deadline = r->deadline;
	out->prefix_ids = r->hashes;
	out->n_prefix_ids = r->n_hashes;
	out->prefix_block_tokens = r->hash_block_tokens;
}

static void oracle_info(const struct lsim_sim *s, const struct lsim_policy *p,
			int32_t req, struct lsim_request_info *info)
{
	lsim_sim_request_info(s, req, info);
	if (p->type->flags & LSIM_POLICY_ORACLE)
		info->true_output = s->sv.reqs[req].output;
}

/* ---- routing ---- */

/* What policies may see of one instance (its run's ended steps taken
 * into account: the event may be light). For policies that read only
 * the counts (LSIM_POLICY_COUNTS_ONLY) the instance's run is left as it
 * is and the fields that depend on it are -1. */
static inline void describe(struct lsim_instance *in, struct lsim_instance_info *o,
			    lsim_time now, bool counts_only)
{
	if (!counts_only)
		lsim_instance_advance(in, now);
	{
		o->id = in->id;
		o->outstanding = in->outstanding + in->in_transit;
		o->waiting = (int64_t)in->wait_len + in->in_transit;
		o->running = in->service_mode ? in->busy_servers : (int64_t)in->run_len;
		o->queued_tokens = counts_only ? -1 : in->queued_tokens + in->transit_tokens;
		o->kv_free_blocks = counts_only ? -1 : lsim_instance_kv_free(in);
		o->kv_total_blocks = in->kv ? in->kv_blocks : 0;
		o->mon_gpu_util = in->mon.gpu_util;
		o->mon_kv_util = in->mon.kv_util;
		o->mon_arrival_rate = in->mon.arrival_rate;
		o->mon_pcie_util = in->mon.pcie_util;
		o->in_transit = in->in_transit;
		o->kv_block_tokens = in->service_mode ? 0 : (int32_t)in->cfg.block_size;
	}
}

/* Fills inst_info with every instance (a loop for each kind of router:
 * per arrival, it describes every instance). For counts-only routers
 * the view is kept from one arrival to the next: only the instances
 * touched since are described again (lsim_instance_touch). */
static void snapshot(struct lsim_sim *s, bool counts_only)
{
	lsim_time now = lsim_now(s->sv.eng);
	if (counts_only && s->sv.info_n == s->n_inst) {
		for (size_t k = 0; k < s->sv.n_info_stale; k++) {
			struct lsim_instance *in = s->inst[s->sv.info_stale[k]];
			in->info_stale = false;
			describe(in, &s->inst_info[in->id], now, true);
		}
		s->sv.n_info_stale = 0;
		return;
	}
	for (size_t i = 0; i < s->n_inst; i++) {
		describe(s->inst[i], &s->inst_info[i], now, counts_only);
		s->route_map[i] = (int32_t)i;
		s->inst[i]->info_stale = false;
	}
	s->sv.n_info_stale = 0;
	s->sv.info_n = counts_only ? s->n_inst : 0;
}

int lsim_sim_check_view(const struct lsim_sim *s, char *why, size_t n)
{
	if (s->sv.info_n != s->n_inst)
		return 0;
	lsim_time now = lsim_now(s->sv.eng);
	for (size_t i = 0; i < s->n_inst; i++) {
		struct lsim_instance *in = s->inst[i];
		const struct lsim_instance_info *o = &s->inst_info[i];
		if (in->info_stale)
			continue;
		struct lsim_instance_info f;
		describe(in, &f, now, true);
		if (s->route_map[i] != (int32_t)i || f.id != o->id ||
		    f.outstanding != o->outstanding || f.waiting != o->waiting ||
		    f.running != o->running || f.kv_total_blocks != o->kv_total_blocks ||
		    f.in_transit != o->in_transit ||
		    memcmp(&f.mon_gpu_util, &o->mon_gpu_util, sizeof f.mon_gpu_util) ||
		    memcmp(&f.mon_kv_util, &o->mon_kv_util, sizeof f.mon_kv_util) ||
		    memcmp(&f.mon_arrival_rate, &o->mon_arrival_rate,
			   sizeof f.mon_arrival_rate) ||
		    memcmp(&f.mon_pcie_util, &o->mon_pcie_util, sizeof f.mon_pcie_util)) {
			snprintf(why, n, "instance %d changed without a touch: routers "
				 "see %lld outstanding, %lld waiting, %lld running, "
				 "it has %lld, %lld, %lld",
				 (int)in->id, (long long)o->outstanding,
				 (long long)o->waiting, (long long)o->running,
				 (long long)f.outstanding, (long long)f.waiting,
				 (long long)f.running);
			return LSIM_ESTATE;
		}
	}
	return 0;
}

/* Takes new requests of model m (decode instances get theirs from prefill
 * instances). */
static bool serves(const struct lsim_instance *in, int32_t m)
{
	return (m < 0 || in->model_idx == m) && in->role != LSIM_ROLE_DECODE;
}

/* Fills inst_info with the ready instances of model m (any model if
 * m < 0); returns how many. */
static size_t snapshot_model(struct lsim_sim *s, int32_t m, bool counts_only)
{
	if (m < 0 && s->n_ready == s->n_inst && !s->disaggregated) {
		snapshot(s, counts_only);
		return s->n_inst;
	}
	size_t k = 0;
	lsim_time now = lsim_now(s->sv.eng);
	s->sv.info_n = 0; /* inst_info holds another view */
	for (size_t i = 0; i < s->n_inst; i++)
		if (serves(s->inst[i], m) && s->inst[i]->state == LSIM_INST_READY) {
			describe(s->inst[i], &s->inst_info[k], now, counts_only);
			s->route_map[k++] = (int32_t)i;
		}
	return k;
}

/*
 * Picks the instance for req among those of its model; *pos is its entry
 * in inst_info (what the QoS policy sees). NULL with s->sv.error set on a
 * policy bug, NULL without it when no instance serves the model.
 */
static struct lsim_instance *route(struct lsim_sim *s, int32_t req, size_t *pos)
{
	int32_t m = s->sv.reqs[req].model;
	if (m < 0 && !s->router && !s->qos && s->n_ready == s->n_inst &&
	    !s->disaggregated) {
		/* the plain case, kept cheap */
		*pos = s->rr_next;
		s->rr_next = (s->rr_next + 1) % s->n_inst;
		return s->inst[*pos];
	}
	/* what the router and QoS see */
	bool counts_only =
		(!s->router || (s->router->type->flags & LSIM_POLICY_COUNTS_ONLY)) &&
		(!s->qos || (s->qos->type->flags & LSIM_POLICY_COUNTS_ONLY));
	size_t n = snapshot_model(s, m, counts_only);
	if (n == 0)
		return NULL;
	int32_t k;
	if (!s->router) {
		size_t *rr = m < 0 ? &s->rr_next : &s->rr_model[m];
		k = (int32_t)(*rr % n);
		*rr = (*rr + 1) % n;
	} else {
		struct lsim_request_info info;
		oracle_info(s, s->router, req, &info);
		const struct lsim_scheduler_ops *ops = s->router->type->ops;
		k = ops->route(s->router->state, &info, s->inst_info, (int32_t)n);
		if (k < 0 || (size_t)k >= n) {
			lsim_sim_policy_error(s, s->router, "instance %d of %zu", (int)k, n);
			return NULL;
		}
	}
	*pos = (size_t)k;
	return s->inst[s->route_map[k]];
}

int lsim_sim_policy_error(struct lsim_sim *s, const struct lsim_policy *p,
			  const char *what, ...)
{
	if (s->sv.error)
		return LSIM_EPLUGIN;
	char buf[256];
	va_list ap;
	va_start(ap, what);
	vsnprintf(buf, sizeof buf, what, ap);
	va_end(ap);
	s->sv.error = lsim_diag_set(&s->sv.diag, LSIM_EPLUGIN, "", 0, 0, lsim_policy_role_key(p->role),
				 "policy %s%s%s returned %s", p->type->name,
				 p->plugin ? " of plugin " : "", p->plugin ? p->plugin : "", buf);
	lsim_stop(s->sv.eng);
	return LSIM_EPLUGIN;
}

/* workload.lora: whether r uses an adapter (share), then which: uniform,
 * or zipf by the cumulative weights (k + 1)^-alpha, made at the first
 * draw. Two draws of its own stream per request, whatever the outcome. */
static void draw_lora(struct lsim_sim *s, struct lsim_req *r)
{
	int32_t n = s->lora_adapters;
	double u = gsl_rng_uniform(s->lora_rng), v = gsl_rng_uniform(s->lora_rng);
	if (u >= s->lora_share)
		return;
	if (!s->lora_zipf) {
		r->lora = (int32_t)(v * n);
		return;
	}
	if (!s->lora_cdf) {
		s->lora_cdf = malloc((size_t)n * sizeof *s->lora_cdf);
		if (!s->lora_cdf) {
			s->sv.error = LSIM_ENOMEM;
			lsim_stop(s->sv.eng);
			return;
		}
		double acc = 0;
		for (int32_t k = 0; k < n; k++)
			s->lora_cdf[k] = acc += pow(k + 1.0, -s->lora_alpha);
		for (int32_t k = 0; k < n; k++)
			s->lora_cdf[k] /= acc;
	}
	int32_t lo = 0, hi = n - 1; /* the first k with v < cdf[k] */
	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;
		if (v < s->lora_cdf[mid])
			hi = mid;
		else
			lo = mid + 1;
	}
	r->lora = lo;
}

/* Class by share (its own RNG stream), then the profiler's prediction. */
static void classify(struct lsim_sim *s, int32_t req)
{
	struct lsim_req *r = &s->sv.reqs[req];
	r->qos_class = 0;
	r->priority = 0;
	r->deadline = INT64_MAX;
	r->predicted = -1;
	if (s->n_classes > 0) {
		size_t c = s->n_classes - 1;
		if (r->trace_class >= 0) {
			c = (size_t)r->trace_class;
		} else {
			double u = gsl_rng_uniform(s->class_rng), acc = 0;
			for (size_t i = 0; i < s->n_classes; i++) {
				acc += s->classes[i].share;
				if (u < acc) {
					c = i;
					break;
				}
			}
		}
		r->qos_class = (int32_t)c;
		r->priority = (int32_t)s->classes[c].priority;
		if (s->classes[c].ttft > 0)
			r->deadline = r->arrival + s->classes[c].ttft;
	}
	if (r->model < 0 && s->model_shares) {
		double u = gsl_rng_uniform(s->model_rng), acc = 0;
		r->model = (int32_t)s->n_models - 1;
		for (size_t i = 0; i < s->n_models; i++) {
			acc += s->model_shares[i];
			if (u < acc) {
				r->model = (int32_t)i;
				break;
			}
		}
	}
	if (r->lora < 0 && s->lora_adapters > 0)
		draw_lora(s, r);
	s->lora_requests += r->lora >= 0;
	if (s->profiler) {
		struct lsim_request_info info;
		oracle_info(s, s->profiler, req, &info);
		const struct lsim_profiler_ops *ops = s->profiler->type->ops;
		int32_t p = ops->predict(s->profiler->state, &info);
		r->predicted = p < 0 ? -1 : p;
	}
}

/* ---- arrivals ---- */

static void arrival(struct lsim_engine *eng, void *subject, uint64_t arg);

/* The model a trace label names: a served model or an instance group. */
static int resolve_model(struct lsim_sim *s, const struct lsim_req_spec *spec,
			 struct lsim_req *r)
{
	for (size_t i = 0; i < s->n_model_labels; i++)
		if (strcmp(s->model_labels[i], spec->model_label) == 0) {
			r->model = s->model_label_idx[i];
			return 0;
		}
	return s->sv.error = lsim_diag_set(&s->sv.diag, LSIM_EINVAL, "", 0, 0,
					"workload.model_column",
					"request %llu names model '%s', which no instance group "
					"serves (give it as an instance group's model or name)",
					(unsigned long long)spec->id, spec->model_label);
}

/* FNV-1a: where an adapter's name starts its probe in lora_index. */
static size_t lora_hash(const char *name, size_t cap)
{
	uint64_t h = 14695981039346656037u;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211u;
	return (size_t)h & (cap - 1);
}

/* Doubles lora_index (kept at most half full) and re-inserts the names. */
static int lora_index_grow(struct lsim_sim *s)
{
	size_t cap = s->lora_index_cap ? 2 * s->lora_index_cap : 64;
	int32_t *ix = malloc(cap * sizeof *ix);
	if (!ix)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < cap; i++)
		ix[i] = -1;
	for (size_t a = 0; a < s->n_lora_names; a++) {
		size_t h = lora_hash(s->lora_names[a], cap);
		while (ix[h] >= 0)
			h = (h + 1) & (cap - 1);
		ix[h] = (int32_t)a;
	}
	free(s->lora_index);
	s->lora_index = ix;
	s->lora_index_cap = cap;
	return 0;
}

#define MAX_LORA_NAMES 1000000 /* as workload.lora.adapters */

/*
 * The adapter a trace label names (workload.lora_column): "" is the base
 * model; other names are numbered 0, 1, ... by first appearance. A
 * request with one must not reach a group without enable_lora (vLLM
 * refuses it): an error naming the trace's file and line.
 */
static int resolve_lora(struct lsim_sim *s, const struct lsim_req_spec *spec,
			struct lsim_req *r)
{
	const char *name = spec->lora_label;
	if (!name[0])
		return 0;
	size_t m = r->model >= 0 ? (size_t)r->model : s->n_models;
	if (s->lora_refused && s->lora_refused[m] >= 0)
		return s->sv.error = lsim_diag_set(
			       &s->sv.diag, LSIM_EINVAL, spec->src_path ? spec->src_path : "",
			       spec->src_line, 0, "workload.lora_column",
			       "request %llu names LoRA adapter '%s', but instances[%d], "
			       "which may serve it, has no enable_lora (vLLM refuses such a "
			       "request): set enable_lora: true there, or leave the "
			       "column empty for the base model",
			       (unsigned long long)spec->id, name, s->lora_refused[m]);
	if (s->lora_index_cap > 0) {
		size_t h = lora_hash(name, s->lora_index_cap);
		for (; s->lora_index[h] >= 0; h = (h + 1) & (s->lora_index_cap - 1))
			if (strcmp(s->lora_names[s->lora_index[h]], name) == 0) {
				r->lora = s->lora_index[h];
				return 0;
			}
	}
	if (s->n_lora_names == MAX_LORA_NAMES)
		return s->sv.error = lsim_diag_set(&s->sv.diag, LSIM_EINVAL,
						spec->src_path ? spec->src_path : "",
						spec->src_line, 0, "workload.lora_column",
						"more than %d distinct LoRA adapters", MAX_LORA_NAMES);
	char *copy = NULL;
	if (lsim_grow((void **)&s->lora_names, &s->cap_lora_names, s->n_lora_names + 1,
		      sizeof *s->lora_names) == 0)
		copy = strdup(name);
	if (!copy)
		return s->sv.error = LSIM_ENOMEM;
	s->lora_names[s->n_lora_names++] = copy;
	if (2 * s->n_lora_names > s->lora_index_cap) {
		if (lora_index_grow(s) != 0)
			return s->sv.error = LSIM_ENOMEM;
	} else {
		size_t h = lora_hash(copy, s->lora_index_cap);
		while (s->lora_index[h] >= 0)
			h = (h + 1) & (s->lora_index_cap - 1);
		s->lora_index[h] = (int32_t)(s->n_lora_names - 1);
	}
	r->lora = (int32_t)(s->n_lora_names - 1);
	return 0;
}

#define MAX_TENANTS 65536

/* The tenant a trace label names: numbered by first appearance. */
static int resolve_tenant(struct lsim_sim *s, const struct lsim_req_spec *spec,
			  struct lsim_req *r)
{
	for (size_t i = s->n_tenant_names; i-- > 0;)
		if (strcmp(s->tenant_names[i], spec->tenant_label) == 0) {
			r->tenant = (int32_t)i;
			return 0;
		}
	if (s->n_tenant_names == MAX_TENANTS)
		return s->sv.error = lsim_diag_set(&s->sv.diag, LSIM_EINVAL, "", 0, 0,
						"workload.tenant_column",
						"more than %d distinct tenants; name a tenant-like column",
						MAX_TENANTS);
	char **p = realloc(s->tenant_names, (s->n_tenant_names + 1) * sizeof *p);
	if (p)
		s->tenant_names = p;
	char *name = p ? strdup(spec->tenant_label) : NULL;
	if (!name)
		return s->sv.error = LSIM_ENOMEM;
	r->tenant = (int32_t)s->n_tenant_names;
	s->tenant_names[s->n_tenant_names++] = name;
	/* its traffic classes, if network.link_classes names it */
	for (size_t i = 0; i < s->n_tenant_cls; i++)
		if (strcmp(s->tenant_cls[i].name, name) == 0) {
			int rc = lsim_net_map_tenant(s->sv.net, (enum lsim_flow_kind)s->tenant_cls[i].kind,
						     r->tenant, s->tenant_cls[i].cls, &s->sv.diag);
			if (rc != 0)
				return s->sv.error = rc;
		}
	return 0;
}

/* The longest prompt + output the instances of a trace request's model
 * accept, or 0 for no limit. */
static int64_t context_of(const struct lsim_sim *s, const struct lsim_req_spec *spec)
{
	if (spec->model_label)
		for (size_t i = 0; i < s->n_model_labels; i++)
			if (strcmp(s->model_labels[i], spec->model_label) == 0)
				return s->ctx_by_model[s->model_label_idx[i]];
	return s->ctx_any; /* any instance (an unknown label fails later) */
}

/* 1: the trace request is longer than its model's context (an error in d
 * unless skipped), 0: it fits. */
static int too_long(struct lsim_sim *s, const struct lsim_req_spec *spec)
{
	int64_t ctx = spec->src_path ? context_of(s, spec) : 0;
	int64_t need = (int64_t)spec->prompt_tokens + spec->output_tokens;
	if (ctx <= 0 || need <= ctx)
		return 0;
	if (s->skip_bad_lines) {
		s->context_skipped++;
		return 1;
	}
	s->sv.error = lsim_diag_set(&s->sv.diag, LSIM_EFORMAT, spec->src_path, spec->src_line,
				 spec->src_col, spec->src_key ? spec->src_key : "",
				 "prompt %d + output %d tokens exceed the context of the "
				 "model's instances (%lld tokens, max_model_len); skip such "
				 "lines with workload.on_error: skip",
				 (int)spec->prompt_tokens, (int)spec->output_tokens,
				 (long long)ctx);
	return 1;
}

/* Reads the next request and schedules its arrival. */
static void pull_next(struct lsim_sim *s)
{
	struct lsim_req_spec spec;
	int rc;
	if (!s->workload) { /* training jobs only */
		s->workload_done = true;
		return;
	}
	for (;;) {
		memset(&spec, 0, sizeof spec);
		rc = lsim_workload_next(s->workload, &spec, &s->sv.diag);
		if (rc <= 0)
			break;
		if (spec.output_tokens == 0) {
			s->zero_output_seen++;
			if (s->zero_output == LSIM_ZERO_SKIP)
				continue;
			if (s->zero_output == LSIM_ZERO_ONE)
				spec.output_tokens = 1; /* the engine emits one token */
		}
		if (!too_long(s, &spec))
			break;
		if (s->sv.error) {
			rc = s->sv.error;
			break;
		}
	}
	if (rc <= 0) {
		if (rc < 0) {
			s->sv.error = rc;
			lsim_stop(s->sv.eng);
		}
		s->workload_done = true;
		return;
	}
	size_t slot;
	if (s->n_free > 0) {
		slot = (size_t)s->free_slots[--s->n_free];
	} else {
		if (s->n_reqs == s->cap_reqs) {
			size_t c = s->cap_reqs ? s->cap_reqs * 2 : 1024;
			/* aligned as the type asks (a cache line), which
			 * realloc does not promise */
			struct lsim_req *p = c > INT32_MAX ? NULL
				: aligned_alloc(_Alignof(struct lsim_req),
						c * sizeof *p);
			if (!p) {
				s->sv.error = LSIM_ENOMEM;
				lsim_stop(s->sv.eng);
				return;
			}
			if (s->n_reqs > 0)
				memcpy(p, s->sv.reqs, s->n_reqs * sizeof *p);
			free(s->sv.reqs);
			s->sv.reqs = p;
			s->cap_reqs = c;
		}
		slot = s->n_reqs++;
	}
	struct lsim_req *r = &s->sv.reqs[slot];
	memset(r, 0, sizeof *r);
	r->live = true;
	r->seq = s->n_arrived++;
	s->pending_slot = (int32_t)slot;
	r->id = spec.id;
	r->arrival = spec.arrival;
	r->prompt = spec.prompt_tokens;
	r->output = spec.output_tokens;
	r->first_sched = r->first_token = r->finish = -1;
	r->instance = -1;
	r->status = LSIM_REQ_UNFINISHED;
	r->tenant = spec.tenant;
	r->trace_class = -1;
	r->model = -1;
	r->lora = -1;
	r->prefill_instance = -1;
	if ((spec.model_label && resolve_model(s, &spec, r) != 0) ||
	    (spec.tenant_label && resolve_tenant(s, &spec, r) != 0) ||
	    (spec.lora_label && resolve_lora(s, &spec, r) != 0)) {
		r->live = false;
		lsim_stop(s->sv.eng);
		return;
	}
	if (spec.class_label) {
		for (size_t c = 0; c < s->n_classes && r->trace_class < 0; c++)
			if (strcmp(s->classes[c].name, spec.class_label) == 0)
				r->trace_class = (int32_t)c;
		if (r->trace_class < 0) {
			s->sv.error = lsim_diag_set(&s->sv.diag, LSIM_EINVAL, "", 0, 0,
						 "workload.class_column",
						 "request %llu names class '%s', which is not in classes",
						 (unsigned long long)spec.id, spec.class_label);
			lsim_stop(s->sv.eng);
			return;
		}
	}
	if (spec.n_hashes > 0 && spec.hashes && spec.hash_block_tokens > 0) {
		r->hashes = malloc((size_t)spec.n_hashes * sizeof *r->hashes);
		if (!r->hashes) {
			s->sv.error = LSIM_ENOMEM;
			lsim_stop(s->sv.eng);
			return;
		}
		memcpy(r->hashes, spec.hashes, (size_t)spec.n_hashes * sizeof *r->hashes);
		r->n_hashes = spec.n_hashes;
		r->hash_block_tokens = spec.hash_block_tokens;
	}
	if (!lsim_schedule_tag(s->sv.eng, spec.arrival, arrival, s, slot, LSIM_TAG_LIGHT)) {
		s->sv.error = LSIM_ENOMEM;
		lsim_stop(s->sv.eng);
	}
}

/* The control plane's latency between admission and the instance. */
static lsim_time dispatch_delay(struct lsim_sim *s, int32_t req)
{
	if (!s->synchronizer)
		return 0;
	struct lsim_request_info info;
	oracle_info(s, s->synchronizer, req, &info);
	const struct lsim_synchronizer_ops *ops = s->synchronizer->type->ops;
	lsim_time delay = ops->dispatch_delay(s->synchronizer->state, &info);
	if (delay < 0)
		lsim_sim_policy_error(s, s->synchronizer, "a dispatch delay of %lld ns",
				      (long long)delay);
	return delay;
}

static void dispatch(struct lsim_sim *s, int32_t req);

static void request_delivered(void *ctx, uint64_t arg)
{
	struct lsim_instance *in = ctx;
	lsim_instance_unreserve(in, (int32_t)arg);
	if (in->state == LSIM_INST_STOPPED) {
		dispatch(lsim_sim_of(in), (int32_t)arg); /* it died meanwhile */
		return;
	}
	lsim_instance_submit(in, (int32_t)arg);
	if (lsim_sim_of(in)->sv.error)
		lsim_stop(lsim_sim_of(in)->sv.eng);
}

/* The ToR of the instance's node (the front end's side) and its NIC; -1s
 * skipped. */
static int node_path(const struct lsim_sim *s, int32_t node, bool in_bound,
		     int32_t *path)
{
	int n = 0;
	int32_t tor = node / s->sv.topo.p.nodes_per_tor;
	int32_t tl = in_bound ? s->sv.topo.tor_down[tor] : s->sv.topo.tor_up[tor];
	int32_t nic = in_bound ? s->sv.topo.nic_in[node] : s->sv.topo.nic_out[node];
	if (in_bound && tl >= 0)
		path[n++] = tl;
	if (nic >= 0)
		path[n++] = nic;
	if (!in_bound && tl >= 0)
		path[n++] = tl;
	return n;
}

/* Hands the request, reserved on the instance, to it: over the network
 * from the front end when messages are modelled, else at once. */
static void hand_over_request(struct lsim_sim *s, struct lsim_instance *in,
			      int32_t req)
{
	int32_t path[2];
	int n = s->messages && in->node >= 0 ? node_path(s, in->node, true, path) : 0;
	if (n == 0) {
		lsim_instance_unreserve(in, req);
		lsim_instance_submit(in, req);
		return;
	}
	double bytes = LSIM_REQUEST_MSG_BYTES + 4.0 * s->sv.reqs[req].prompt;
	int rc = lsim_msg_send(s->sv.net, path, n, bytes, request_delivered, in,
			       (uint64_t)req, LSIM_TAG_LIGHT, &s->sv.diag);
	if (rc != 0)
		s->sv.error = rc;
}

void lsim_sim_stream_tokens(struct lsim_sim *s, const struct lsim_instance *in,
			    int32_t tokens)
{
	int32_t path[2];
	/* the tokens come out of the last pipeline stage */
	int32_t node = in->stage_node ? in->stage_node[in->pp - 1] : in->node;
	int n = s->messages && node >= 0 && tokens > 0 ? node_path(s, node, false, path) : 0;
	if (n > 0 && lsim_msg_send(s->sv.net, path, n, LSIM_TOKEN_MSG_BYTES * tokens,
				   NULL, NULL, 0, 0, &s->sv.diag) != 0 && !s->sv.error) {
		s->sv.error = LSIM_ENOMEM;
		lsim_stop(s->sv.eng);
	}
}

static void dispatched(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	struct lsim_instance *in = subject;
	if (in->state == LSIM_INST_STOPPED) {
		lsim_instance_unreserve(in, (int32_t)arg);
		dispatch(lsim_sim_of(in), (int32_t)arg); /* it died meanwhile */
	} else
		hand_over_request(lsim_sim_of(in), in, (int32_t)arg);
	if (lsim_sim_of(in)->sv.error)
		lsim_stop(eng);
}

/* Asks the QoS policy; a rejected request ends here with its reason. */
static int32_t admission(struct lsim_sim *s, size_t pos, int32_t req)
{
	struct lsim_request_info info;
	oracle_info(s, s->qos, req, &info);
	const struct lsim_qos_ops *ops = s->qos->type->ops;
	const struct lsim_instance_info *target = &s->inst_info[pos];
	int32_t why = ops->admit(s->qos->state, &info, target, lsim_now(s->sv.eng));
	if (why == 0)
		return 0;
	if (why < LSIM_REJECT_NEVER_FITS || why > LSIM_REJECT_RATE_LIMIT)
		return lsim_sim_policy_error(s, s->qos, "reject reason %d (QoS reasons are 1-4)",
					     (int)why);
	struct lsim_req *r = &s->sv.reqs[req];
	r->status = LSIM_REQ_REJECTED;
	r->reject_reason = why;
	r->finish = lsim_now(s->sv.eng);
	lsim_sim_request_done(s, req);
	return why;
}

static int hold(struct lsim_sim *s, int32_t req)
{
	if (s->held_len == s->held_cap) {
		size_t c = s->held_cap ? 2 * s->held_cap : 64;
		int32_t *p = malloc(c * sizeof *p);
		if (!p)
			return LSIM_ENOMEM;
		for (size_t i = 0; i < s->held_len; i++)
			p[i] = s->held[(s->held_head + i) % s->held_cap];
		free(s->held);
		s->held = p;
		s->held_head = 0;
		s->held_cap = c;
	}
	s->held[(s->held_head + s->held_len++) % s->held_cap] = req;
	return 0;
}

/* Routes, admits and hands over (after the control-plane delay) a request
 * that has arrived; holds it while its model's instances are all still
 * starting; rejects it when no live instance serves its model. */
static void dispatch(struct lsim_sim *s, int32_t req)
{
	if (s->control_down) { /* leader election: new requests wait */
		if (hold(s, req) != 0)
			s->sv.error = LSIM_ENOMEM;
		return;
	}
	size_t pos = 0;
	struct lsim_instance *in = route(s, req, &pos);
	if (s->sl && !s->sv.error)
		lsim_sl_routed(s, req, in);
	if (!in && !s->sv.error) {
		int32_t m = s->sv.reqs[req].model;
		bool starting = false;
		for (size_t i = 0; i < s->n_inst && !starting; i++)
			starting = serves(s->inst[i], m) &&
				   s->inst[i]->state < LSIM_INST_READY;
		/* a serverless group starts one now (scale from zero) */
		if (starting || (s->sl && lsim_sl_demand(s, req, m))) {
			if (s->sl && starting)
				lsim_sl_mark_held(s, req);
			if (hold(s, req) != 0)
				s->sv.error = LSIM_ENOMEM;
			return;
		}
		struct lsim_req *r = &s->sv.reqs[req];
		r->status = LSIM_REQ_REJECTED;
		r->reject_reason = LSIM_REJECT_NO_INSTANCE;
		r->finish = lsim_now(s->sv.eng);
		lsim_sim_request_done(s, req);
	}
	if (in && s->qos && admission(s, pos, req) != 0)
		in = NULL;
	if (in && in->dp) { /* the group's own balancer picks the rank */
		struct lsim_instance *rank = lsim_dp_pick(in->dp);
		in = rank ? rank : in;
	}
	if (in) {
		in->routed_since_sample++;
		lsim_time delay = dispatch_delay(s, req);
		if (s->sv.error)
			return;
		/* counted on the instance from now on (what routers see) */
		lsim_instance_reserve(in, req);
		if (delay <= 0)
			hand_over_request(s, in, req);
		else if (!lsim_schedule_in(s->sv.eng, delay, dispatched, in, (uint64_t)req))
			s->sv.error = LSIM_ENOMEM;
	}
}

void lsim_sim_handoff(struct lsim_sim *s, struct lsim_instance *from,
		      int32_t req)
{
	/* the ready decode instance of the same model with the fewest
	 * requests outstanding (the lowest id on a tie) */
	struct lsim_instance *best = NULL;
	for (size_t i = 0; i < s->n_inst; i++) {
		struct lsim_instance *in = s->inst[i];
		if (in->role == LSIM_ROLE_DECODE && in->state == LSIM_INST_READY &&
		    in->model_idx == from->model_idx &&
		    (!best || in->outstanding < best->outstanding))
			best = in;
	}
	if (!best) {
		struct lsim_req *r = &s->sv.reqs[req];
		lsim_instance_drop_handoff(from, req);
		r->status = LSIM_REQ_FAILED;
		r->reject_reason = LSIM_REJECT_NO_INSTANCE;
		r->finish = lsim_now(s->sv.eng);
		lsim_sim_request_done(s, req);
		return;
	}
	best->routed_since_sample++;
	lsim_instance_submit(best, req);
}

void lsim_sim_release_held(struct lsim_sim *s)
{
	/* every held request tries again, in arrival order, once */
	for (size_t n = s->held_len; n > 0 && !s->sv.error; n--) {
		int32_t req = s->held[s->held_head];
		s->held_head = (s->held_head + 1) % s->held_cap;
		s->held_len--;
		dispatch(s, req);
	}
	if (s->sv.error)
		lsim_stop(s->sv.eng);
}

void lsim_sim_dispatch(struct lsim_sim *s, int32_t req)
{
	dispatch(s, req);
}

void lsim_sim_requeue(struct lsim_sim *s, struct lsim_instance *failed,
		      int32_t req)
{
	struct lsim_req *r = &s->sv.reqs[req];
	double tokens = (double)r->computed + r->generated;
	r->sched_tokens = 0; /* not in a batch any more */
	s->lost_tokens += tokens;
	if (failed->tokens > 0)
		s->lost_gpu_s += tokens * lsim_time_to_s(failed->busy_ns) /
				 (double)failed->tokens * failed->n_gpus;
	if (r->kv_src && !r->kv_src->failed)
		lsim_instance_drop_handoff(r->kv_src, req);
	/* its KV lived on a dead GPU: the blocks are gone with it */
	free(r->blocks);
	free(r->src_blocks);
	r->blocks = r->src_blocks = NULL;
	r->nblocks = r->n_listed = r->cap_blocks = r->src_nblocks = r->hashed = 0;
	r->kv_src = NULL;
	r->swapped = false;
	r->swap_flows = 0;
	r->computed = r->generated = r->sched_tokens = 0;
	r->first_token = -1;
	r->instance = -1;
	r->prefill_instance = -1;
	r->attempts++;
	bool again = r->attempts <= 3;
	if (s->synchronizer) {
		const struct lsim_synchronizer_ops *ops = s->synchronizer->type->ops;
		if (ops->retry) {
			struct lsim_request_info info;
			oracle_info(s, s->synchronizer, req, &info);
			again = ops->retry(s->synchronizer->state, &info, r->attempts);
		}
	}
	if (!again) {
		r->status = LSIM_REQ_FAILED;
		r->reject_reason = LSIM_FAIL_INSTANCE;
		r->finish = lsim_now(s->sv.eng);
		lsim_sim_request_done(s, req);
		return;
	}
	s->n_requeued++;
	dispatch(s, req);
}

void lsim_sim_instance_ready(struct lsim_sim *s, struct lsim_instance *in)
{
	if (in->state == LSIM_INST_STOPPED)
		return; /* drained (a spot warning, a scale-in) while it loaded */
	in->state = LSIM_INST_READY;
	in->ready = lsim_now(s->sv.eng);
	in->last_sample = in->ready;
	s->n_ready++;
	lsim_sim_release_held(s);
	if (s->sl)
		lsim_sl_maybe_idle(s, in); /* nothing waited for it */
}

static void arrival(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	struct lsim_sim *s = subject;
	s->pending_slot = -1;
	pull_next(s);
	classify(s, (int32_t)arg);
	struct lsim_req *r = &s->sv.reqs[arg];
	if (r->output == 0) { /* failed in the trace (zero_output: fail) */
		r->status = LSIM_REQ_FAILED;
		r->reject_reason = LSIM_FAIL_IN_TRACE;
		r->finish = lsim_now(eng);
		lsim_sim_request_done(s, (int32_t)arg);
		return;
	}
	dispatch(s, (int32_t)arg);
	if (s->sv.error)
		lsim_stop(s->sv.eng);
}

/* ---- time series ---- */

int lsim_sim_grow_arrays(struct lsim_sim *s)
{
	if (s->n_inst <= s->cap_info)
		return 0;
	size_t c = s->n_inst + s->n_inst / 2 + 4;
	struct lsim_instance_info *a = realloc(s->inst_info, c * sizeof *a);
	if (a)
		s->inst_info = a;
	int32_t *m = a ? realloc(s->route_map, c * sizeof *m) : NULL;
	if (m)
		s->route_map = m;
	int32_t *st = m ? realloc(s->sv.info_stale, c * sizeof *st) : NULL;
	if (st)
		s->sv.info_stale = st;
	if (!a || !m || !st)
		return LSIM_ENOMEM;
	s->cap_info = c;
	return 0;
}

/* The adaptor's decision for each group: start instances (provisioning,
 * then a cold start) or drain ready ones (fewest requests outstanding,
 * the newest on a tie). */
static int adapt(struct lsim_sim *s, lsim_time now)
{
	const struct lsim_adaptor_ops *ops = s->adaptor->type->ops;
	s->sv.info_n = 0; /* inst_info is the groups' view below */
	for (size_t g = 0; g < s->n_groups; g++) {
		struct lsim_group *gr = &s->groups[g];
		if (lsim_sl_managed(s, (int32_t)g))
			continue; /* scaled by demand and keep-alive */
		struct lsim_scale_group sg = {
			.group = (int32_t)g, .min = gr->min, .max = gr->max,
			.start_lead = gr->start_lead, .capacity_rps = gr->capacity_rps,
			.period = s->sample_period,
		};
		/* the ready ones first, then those still starting */
		for (int pass = 0; pass < 2; pass++)
			for (size_t i = 0; i < s->n_inst; i++) {
				struct lsim_instance *in = s->inst[i];
				if (in->group != (int32_t)g)
					continue;
				/* a stopped instance keeps its last sample: not
				 * part of the group's rate any more */
				if (pass == 0 && in->state != LSIM_INST_STOPPED)
					sg.arrival_rate += in->mon.arrival_rate;
				bool ready = in->state == LSIM_INST_READY;
				if (in->state > LSIM_INST_READY || ready != (pass == 0))
					continue;
				describe(in, &s->inst_info[sg.live], now, false);
				sg.live++;
				sg.ready += ready;
			}
		int32_t want = ops->desired(s->adaptor->state, &sg, s->inst_info,
					    sg.live, now);
		if (want < 0)
			return lsim_sim_policy_error(s, s->adaptor, "%d instances for group %zu",
						     (int)want, g);
		if (want < gr->min)
			want = gr->min;
		if (want > gr->max)
			want = gr->max;
		for (int32_t live = sg.live; live < want; live++) {
			struct lsim_instance *in = NULL;
			int rc = s->fleet.spawn ? s->fleet.spawn(s->fleet.ctx, (int32_t)g, &in,
								 &s->sv.diag)
						: LSIM_EBUSY;
			if (rc == LSIM_EBUSY) {
				gr->refused++;
				break;
			}
			if (rc == 0)
				rc = lsim_sim_grow_arrays(s);
			if (rc == 0)
				rc = lsim_instance_provision(in, gr->provision, gr->engine_init,
							     &s->sv.diag);
			if (rc != 0)
				return s->sv.error = rc;
			lsim_sim_arm_failures(s, in);
			gr->scale_outs++;
		}
		for (int32_t live = sg.live; live > want; live--) {
			struct lsim_instance *victim = NULL;
			for (size_t i = 0; i < s->n_inst; i++) {
				struct lsim_instance *in = s->inst[i];
				if (in->group == (int32_t)g && in->state == LSIM_INST_READY &&
				    (!victim || in->outstanding + in->in_transit <=
						    victim->outstanding + victim->in_transit))
					victim = in;
			}
			if (!victim)
				break; /* only starting ones left: let them come up */
			lsim_sim_drain(s, victim);
			gr->scale_ins++;
		}
	}
	return 0;
}

/* Each link's mean utilisation since the last sample; a row for each
 * that carried something. Only links that may have carried something are
 * visited (the others' utilisation is 0, as link_util holds). */
static int sample_links(struct lsim_sim *s, lsim_time now)
{
	int32_t n = lsim_net_sample_active(s->sv.net, s->sample_link, s->sample_util);
	if ((size_t)n > s->cap_link_cur) {
		struct lsim_link_sample *p = realloc(s->link_cur, (size_t)n * sizeof *p);
		if (!p)
			return LSIM_ENOMEM;
		s->link_cur = p;
		s->cap_link_cur = (size_t)n;
	}
	size_t m = 0;
	for (int32_t k = 0; k < n; k++) {
		int32_t l = s->sample_link[k];
		double u = s->sample_util[k];
		s->link_util[l] = u;
		if (u > 0)
			s->link_cur[m++] = (struct lsim_link_sample){
				.t = lsim_time_to_s(now), .link = l, .util = u};
	}
	return lsim_tsrec_add(s->link_rec, now, s->link_cur, m);
}

/* Energy and carbon of the instance from energy_t to now, at its GPUs'
 * utilisation over that interval: the work at peak rates of the steps
 * done in it (service mode: the busy fraction; busy is busy_ns now).
 * Returns that utilisation. */
/* A GPU shared by its members (docs/sharing.md): each member's interval
 * up to now (its stop, if earlier) at the GPU's power at the members'
 * utilisation together, U = sum of u_j (each member's work counted at
 * the whole GPU's peak rates): member j draws weight_j of P(0), the idle
 * power, and u_j / U of P(U) - P(0), the dynamic power; their sum is one
 * GPU's P(U). Returns in's u_j (the members after the first one called
 * at a time find their interval counted and get theirs back). */
static double account_shared(struct lsim_instance *in, lsim_time now)
{
	const struct lsim_share *sh = in->share;
	double u[LSIM_SHARE_MAX], total = 0;
	lsim_time end[LSIM_SHARE_MAX];
	for (int32_t j = 0; j < sh->n; j++) {
		struct lsim_instance *m = sh->member[j];
		end[j] = m->stop >= 0 && m->stop < now ? m->stop : now;
		lsim_time dt = end[j] - m->energy_t;
		u[j] = dt > 0 ? (m->work_ns - m->energy_work) / (double)dt : 0;
		u[j] = u[j] < 0 ? 0 : u[j] > 1 ? 1 : u[j];
		total += u[j];
	}
	const struct lsim_power_model *pm = &in->energy.pm;
	double idle = lsim_power_w(pm, 0), dyn = lsim_power_w(pm, total) - idle;
	for (int32_t j = 0; j < sh->n; j++) {
		struct lsim_instance *m = sh->member[j];
		if (end[j] <= m->energy_t)
			continue;
		m->share_u = u[j];
		m->share_w = sh->weight[j] * idle + (total > 0 ? dyn * u[j] / total : 0);
		lsim_energy_acc_add_w(&m->energy, m->energy_t, end[j], u[j], m->share_w);
		m->energy_t = end[j];
		m->energy_work = m->work_ns;
	}
	return in->share_u;
}

double lsim_sim_account_energy(struct lsim_instance *in, lsim_time now, lsim_time busy)
{
	if (in->share)
		return account_shared(in, now);
	lsim_time dt = now - in->energy_t;
	if (dt <= 0)
		return 0;
	double u = in->service_mode ? (double)(busy - in->energy_busy) / (double)dt /
					      (double)in->cfg.max_num_seqs
				    : (in->work_ns - in->energy_work) / ((double)dt * in->pp);
	u = u < 0 ? 0 : u > 1 ? 1 : u;
	lsim_energy_acc_add(&in->energy, in->energy_t, now, u);
	in->energy_t = now;
	in->energy_busy = busy;
	in->energy_work = in->work_ns;
	return u;
}

/* The largest sampled utilisation of the instance's PCIe links. */
static double sampled_pcie_util(const struct lsim_sim *s,
				const struct lsim_instance *in)
{
	double u = 0;
	for (int32_t k = 0; s->sv.net && in->gpu0 >= 0 && k < in->n_gpus; k++) {
		int32_t g = lsim_instance_gpu(in, k);
		int32_t l[2] = {s->sv.topo.pcie_up[g], s->sv.topo.pcie_down[g]};
		for (int j = 0; j < 2; j++)
			if (l[j] >= 0 && s->link_util[l[j]] > u)
				u = s->link_util[l[j]];
	}
	return u;
}

/* Room for a sample's rows: one per instance. */
static int ts_reserve(struct lsim_sim *s)
{
	if (s->cap_ts_cur >= s->n_inst && s->ts_cur)
		return 0;
	size_t c = s->n_inst ? s->n_inst : 1;
	struct lsim_ts_sample *a = realloc(s->ts_cur, c * sizeof *a);
	if (!a)
		return LSIM_ENOMEM;
	s->ts_cur = a;
	s->cap_ts_cur = c;
	return 0;
}

/* A recorder's failure as the run's error: a cap too small names its key. */
static void record_failed(struct lsim_sim *s, int rc, const char *table, lsim_time now)
{
	if (rc == LSIM_ERANGE)
		s->sv.error = lsim_diag_set(&s->sv.diag, LSIM_ERANGE, "", 0, 0,
					 "output.timeseries_rows",
					 "%llu rows cannot hold one recorded period of %s "
					 "(t = %.9g s); raise it, or set 0 for no cap",
					 (unsigned long long)s->ts_rows, table,
					 lsim_time_to_s(now));
	else
		s->sv.error = rc;
}

/* The recorders of /timeseries and /link_timeseries, made at the first
 * sample. */
static int ts_recorders(struct lsim_sim *s)
{
	if (!s->ts_rec)
		s->ts_rec = lsim_tsrec_create(&lsim_tsrec_instances, s->sample_period,
					      s->ts_rows);
	if (!s->link_rec)
		s->link_rec = lsim_tsrec_create(&lsim_tsrec_links, s->sample_period,
						s->ts_rows);
	return s->ts_rec && s->link_rec ? 0 : LSIM_ENOMEM;
}

static void progress_tick(struct lsim_engine *eng, void *ctx)
{
	struct lsim_sim *s = ctx;
	s->progress(s->progress_ctx, s, lsim_now(eng));
}

static void sample(struct lsim_engine *eng, void *ctx)
{
	struct lsim_sim *s = ctx;
	lsim_time now = lsim_now(eng);
	/* a sample comes before the events at its time, step ends too */
	lsim_serving_catch_up(&s->sv, now, false);
	if (++s->n_samples > LSIM_MAX_SAMPLES) {
		s->sv.error = lsim_diag_set(&s->sv.diag, LSIM_ERANGE, "", 0, 0,
					 "output.sample_period",
					 "%.9gs gives more than %u samples by t = %.9g s, the "
					 "most a run may take (docs/output.md); raise it, or set "
					 "0 for no time series",
					 lsim_time_to_s(s->sample_period), LSIM_MAX_SAMPLES,
					 lsim_time_to_s(now));
		lsim_stop(eng);
		return;
	}
	int rc = ts_recorders(s);
	if (rc == 0)
		rc = sample_links(s, now);
	if (rc == 0)
		rc = ts_reserve(s);
	if (rc != 0) {
		record_failed(s, rc, "/link_timeseries", now);
		lsim_stop(eng);
		return;
	}
	s->n_ts_cur = 0;
	for (size_t i = 0; i < s->n_inst; i++) {
		struct lsim_instance *in = s->inst[i];
		if (in->state == LSIM_INST_STOPPED)
			continue;
		lsim_time busy = in->busy_ns;
		if (!in->service_mode && in->busy)
			busy += now - in->step_start;
		lsim_time period = now - in->last_sample;
		double util = period > 0 ? (double)(busy - in->busy_ns_sampled) /
						   (double)period
					 : 0.0;
		if (in->service_mode)
			util /= (double)in->cfg.max_num_seqs;
		if (util > 1.0)
			util = 1.0; /* service time credited at start */
		in->busy_ns_sampled = busy;
		in->last_sample = now;
		double power_u = lsim_sim_account_energy(in, now, busy);
		struct lsim_ts_sample *t = &s->ts_cur[s->n_ts_cur++];
		t->t = lsim_time_to_s(now);
		t->instance = in->id;
		t->gpu_util = power_u;
		int32_t total = lsim_instance_kv_blocks(in);
		t->kv_util = total > 0 ? 1.0 - (double)lsim_kv_free(in->kv) /
						       (double)total
				       : 0.0;
		t->queue_len = (int32_t)in->wait_len;
		t->running = in->service_mode ? in->busy_servers
					      : (int32_t)in->run_len;
		/* Power follows the GPUs' utilisation (work at peak rates, of
		 * the steps that ended since the last account); the busy
		 * fraction, KV and rate columns are what the monitor reports. */
		t->power_w = in->share ? in->share_w
			   : in->gpu ? lsim_power_w(&in->energy.pm, power_u) : 0.0;
		struct lsim_monitor_sample raw = {
			.t = now, .instance = in->id, .gpu_util = util,
			.kv_util = t->kv_util, .queue_len = (double)in->wait_len,
			.arrival_rate = period > 0 ? (double)in->routed_since_sample /
							     lsim_time_to_s(period)
						   : 0.0,
			.pcie_util = sampled_pcie_util(s, in),
		};
		in->routed_since_sample = 0;
		in->mon = raw;
		lsim_instance_touch(in);
		if (s->monitor) {
			const struct lsim_monitor_ops *ops = s->monitor->type->ops;
			ops->observe(s->monitor->state, &raw, &in->mon);
		}
		t->gpu_busy = in->mon.gpu_util;
		t->kv_util = in->mon.kv_util;
		t->arrival_rate = in->mon.arrival_rate;
	}
	rc = lsim_tsrec_add(s->ts_rec, now, s->ts_cur, s->n_ts_cur);
	if (rc != 0) {
		record_failed(s, rc, "/timeseries", now);
		lsim_stop(eng);
		return;
	}
	if (s->sample_hook)
		s->sample_hook(s->sample_hook_ctx, now);
	if (s->adaptor && s->n_groups > 0 && adapt(s, now) != 0)
		lsim_stop(eng);
}

#ifdef LSIM_INVARIANTS
/* After every event: a broken invariant stops the run with its reason. */
static void check_after_event(struct lsim_engine *eng, void *ctx)
{
	struct lsim_sim *s = ctx;
	if (s->sv.error)
		return;
	if (s->sv.macro_steps) /* the requests' side of the steps ended */
		lsim_serving_catch_up(&s->sv, lsim_now(eng), false);
	int rc = lsim_sim_check(s, &s->sv.diag);
	if (rc) {
		s->sv.error = rc;
		lsim_stop(eng);
	}
}
#endif

/* Macro steps: every step end before the event's time has taken place
 * when the event runs, unless the event is light (LSIM_TAG_LIGHT: it
 * advances what it reads) or internal to the network. */
static void before_event(struct lsim_engine *eng, void *ctx)
{
	uint32_t tag = lsim_event_tag(eng);
	if (tag != LSIM_TAG_INTERNAL && tag != LSIM_TAG_LIGHT)
		lsim_serving_catch_up(&((struct lsim_sim *)ctx)->sv, lsim_now(eng), false);
}

int lsim_sim_run(struct lsim_sim *s, struct lsim_workload *w,
		 lsim_time limit, struct lsim_diag *d)
{
	if (s->n_inst == 0 && !s->has_jobs && !s->sl)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "instances",
				     "no serving instance configured");
	s->workload = w;
	/* at least one entry: a serverless run may start with none */
	size_t n_info = s->n_inst ? s->n_inst : 1;
	s->inst_info = calloc(n_info, sizeof *s->inst_info);
	s->route_map = calloc(n_info, sizeof *s->route_map);
	s->sv.info_stale = calloc(n_info, sizeof *s->sv.info_stale);
	s->cap_info = n_info;
	s->rr_model = calloc(s->n_models ? s->n_models : 1, sizeof *s->rr_model);
	s->ctx_by_model = calloc(s->n_models ? s->n_models : 1, sizeof *s->ctx_by_model);
	size_t n_links = s->sv.net ? (size_t)lsim_net_n_links(s->sv.net) + 1 : 1;
	s->link_util = calloc(n_links, sizeof *s->link_util);
	s->sample_link = malloc(n_links * sizeof *s->sample_link);
	s->sample_util = malloc(n_links * sizeof *s->sample_util);
	for (size_t i = 0; s->ctx_by_model && i < s->n_inst; i++) {
		const struct lsim_instance *in = s->inst[i];
		int64_t c = in->service_mode ? 0 : in->max_model_len;
		if (c <= 0) /* one unlimited instance lifts the limit */
			c = INT64_MAX;
		if (c > s->ctx_any)
			s->ctx_any = c;
		if (in->model_idx >= 0 && (size_t)in->model_idx < s->n_models &&
		    c > s->ctx_by_model[in->model_idx])
			s->ctx_by_model[in->model_idx] = c;
	}
	if (s->ctx_any == INT64_MAX)
		s->ctx_any = 0;
	for (size_t m = 0; s->ctx_by_model && m < s->n_models; m++)
		if (s->ctx_by_model[m] == INT64_MAX)
			s->ctx_by_model[m] = 0;
	s->records = lsim_recstore_create(s->records_in_memory);
	if (!s->inst_info || !s->route_map || !s->sv.info_stale || !s->rr_model || !s->ctx_by_model ||
	    !s->link_util || !s->sample_link || !s->sample_util || !s->records)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	s->n_ready = 0;
	for (size_t i = 0; i < s->n_inst; i++) {
		s->n_ready += s->inst[i]->state == LSIM_INST_READY;
		s->disaggregated |= s->inst[i]->role != LSIM_ROLE_BOTH;
	}
	if (s->sample_period > 0)
		lsim_set_periodic(s->sv.eng, s->sample_period, sample, s);
	lsim_sim_arm_run_failures(s);
	pull_next(s);
#ifdef LSIM_INVARIANTS
	lsim_set_after_event(s->sv.eng, check_after_event, s);
#endif
	if (s->sv.macro_steps)
		lsim_set_before_event(s->sv.eng, before_event, s);
	s->run_limit = limit;
	if (s->progress)
		lsim_set_tick(s->sv.eng, 16, progress_tick, s);
	lsim_run(s->sv.eng, limit > 0 ? limit : LSIM_TIME_MAX);
	lsim_set_tick(s->sv.eng, 0, NULL, NULL);
	/* The request pulled but not arrived within the limit is not counted. */
	if (limit > 0 && s->pending_slot >= 0 &&
	    s->sv.reqs[s->pending_slot].arrival > limit) {
		struct lsim_req *r = &s->sv.reqs[s->pending_slot];
		r->live = false;
		s->n_arrived--;
		free(r->hashes);
		r->hashes = NULL;
		if (s->retain_requests && (size_t)s->pending_slot + 1 == s->n_reqs)
			s->n_reqs--;
		s->pending_slot = -1;
	}
	lsim_time end = lsim_now(s->sv.eng);
	/* callers take a failed schedule for memory running out */
	if ((!s->sv.error || s->sv.error == LSIM_ENOMEM) && lsim_clock_overflow(s->sv.eng))
		s->sv.error = lsim_diag_set(&s->sv.diag, LSIM_ERANGE, "", 0, 0, "",
					 "at t = %.9g s an event was due beyond the end of the "
					 "simulated clock (9.2e9 s): a step time, delay or "
					 "arrival far beyond any real run; check the perf "
					 "model's times (a perf table's columns) and the "
					 "workload's rate, repeat and time_scale",
					 lsim_time_to_s(end));
	/* the stored series as written: the last recorded period (and the
	 * last sample of an idle stretch the run ended in) */
	if (!s->sv.error && s->ts_rec) {
		const void *rows = NULL;
		int rc = lsim_tsrec_finish(s->ts_rec, &rows, &s->n_ts, &s->ts_period_s);
		s->ts = rows;
		if (rc == 0)
			rc = lsim_tsrec_finish(s->link_rec, &rows, &s->n_link_ts,
					       &s->link_ts_period_s);
		s->link_ts = rows;
		if (rc != 0)
			record_failed(s, rc, "the time series", end);
	}
	if (!s->sv.error) /* stopped at the limit: the step ends up to it */
		lsim_serving_catch_up(&s->sv, end, true);
	for (size_t i = 0; i < s->n_inst; i++) {
		struct lsim_instance *in = s->inst[i];
		if (in->state == LSIM_INST_STOPPED)
			continue; /* stopped by a scale-in: its stop time stands */
		if (in->busy && !in->service_mode)
			in->busy_ns += end - in->step_start;
		in->stop = end;
	}
	if (s->sv.error) {
		*d = s->sv.diag;
		if (!d->msg[0])
			lsim_diag_set(d, s->sv.error, "", 0, 0, "", "%s",
				      lsim_strerror(s->sv.error));
		return s->sv.error;
	}
	return 0;
}
