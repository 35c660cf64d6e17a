/*
 * results.c - a run's results (lsim_sim_results): the records of its
 * requests, instances, QoS classes, tenants and links, and the summary
 * computed from them; the run itself is run.c.
 */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/recstore.h"
#include "report/steady.h"
#include "run/serverless.h"
#include "run/sim.h"

/* ---- results ---- */

static double ns_to_s_or_neg(lsim_time t)
{
	return t < 0 ? -1.0 : lsim_time_to_s(t);
}

/* Whether class c declares a target (an SLO): attainment is defined
 * only against one. */
static bool declares_slo(const struct lsim_qos_class *c)
{
	return c && (c->ttft > 0 || c->tpot > 0 || c->e2e > 0);
}

/* Did request q finish within each target of class c? (bit 0 TTFT,
 * bit 1 TPOT, bit 2 E2E; a missing target is met.) */
static int targets_met(const struct lsim_req_record *q,
		       const struct lsim_qos_class *c)
{
	if (q->status != LSIM_REQ_FINISHED)
		return 0;
	double ttft = q->first_token - q->arrival, e2e = q->finish - q->arrival;
	double tpot = q->output_tokens > 1
			      ? (q->finish - q->first_token) / (q->output_tokens - 1)
			      : 0;
	int m = 0;
	if (!c || c->ttft <= 0 || ttft <= lsim_time_to_s(c->ttft))
		m |= 1;
	if (!c || c->tpot <= 0 || tpot <= lsim_time_to_s(c->tpot))
		m |= 2;
	if (!c || c->e2e <= 0 || e2e <= lsim_time_to_s(c->e2e))
		m |= 4;
	return m;
}

struct class_acc {
	const struct lsim_sim *s;
	struct lsim_class_record *cr;
	double *ttft_sum;
};

static int add_to_class(void *ctx, const struct lsim_req_record *q)
{
	struct class_acc *a = ctx;
	struct lsim_class_record *c = &a->cr[q->qos_class];
	int m = targets_met(q, &a->s->classes[q->qos_class]);
	/* (attainments of targets the class lacks are NaN in the end) */
	c->requests += 1;
	c->completed += q->status == LSIM_REQ_FINISHED;
	c->rejected += q->status == LSIM_REQ_REJECTED;
	c->ttft_attainment += (m & 1) != 0;
	c->tpot_attainment += (m & 2) != 0;
	c->e2e_attainment += (m & 4) != 0;
	c->slo_attainment += m == 7;
	if (q->status == LSIM_REQ_FINISHED)
		a->ttft_sum[q->qos_class] += q->first_token - q->arrival;
	return 0;
}

static int class_records(struct lsim_sim *s, struct lsim_results *r,
			 struct lsim_class_record **out)
{
	size_t n = s->n_classes;
	*out = NULL;
	if (n == 0)
		return 0;
	struct lsim_class_record *cr = calloc(n, sizeof *cr);
	double *ttft_sum = calloc(n, sizeof *ttft_sum);
	if (!cr || !ttft_sum) {
		free(cr);
		free(ttft_sum);
		return LSIM_ENOMEM;
	}
	for (size_t c = 0; c < n; c++) {
		const struct lsim_qos_class *k = &s->classes[c];
		snprintf(cr[c].name, sizeof cr[c].name, "%.31s", k->name);
		cr[c].share = k->share;
		cr[c].ttft_target = lsim_time_to_s(k->ttft);
		cr[c].tpot_target = lsim_time_to_s(k->tpot);
		cr[c].e2e_target = lsim_time_to_s(k->e2e);
	}
	struct class_acc acc = {s, cr, ttft_sum};
	int rc = lsim_results_each_req(r, add_to_class, &acc);
	double span = r->summary.makespan_s;
	for (size_t c = 0; c < n; c++) {
		struct lsim_class_record *k = &cr[c];
		const struct lsim_qos_class *q = &s->classes[c];
		if (span > 0)
			k->goodput_rps = k->slo_attainment / span;
		/* none completed: undefined (NaN), not 0 s */
		k->ttft_mean_s = k->completed > 0 ? ttft_sum[c] / k->completed : NAN;
		if (k->requests > 0) {
			k->ttft_attainment /= k->requests;
			k->tpot_attainment /= k->requests;
			k->e2e_attainment /= k->requests;
			k->slo_attainment /= k->requests;
		}
		/* attainment only against a declared target */
		if (q->ttft <= 0)
			k->ttft_attainment = NAN;
		if (q->tpot <= 0)
			k->tpot_attainment = NAN;
		if (q->e2e <= 0)
			k->e2e_attainment = NAN;
		if (!declares_slo(q))
			k->slo_attainment = k->goodput_rps = NAN;
	}
	free(ttft_sum);
	if (rc != 0) {
		free(cr);
		return rc;
	}
	*out = cr;
	return 0;
}

void lsim_sim_to_record(const struct lsim_sim *s, const struct lsim_req *q,
			struct lsim_req_record *o)
{
	memset(o, 0, sizeof *o);
	o->id = q->id;
	o->arrival = lsim_time_to_s(q->arrival);
	o->first_scheduled = ns_to_s_or_neg(q->first_sched);
	o->first_token = ns_to_s_or_neg(q->first_token);
	o->finish = ns_to_s_or_neg(q->finish);
	o->prompt_tokens = q->prompt;
	o->output_tokens = q->output;
	o->instance = q->instance;
	o->preemptions = q->preemptions;
	o->status = q->status;
	o->qos_class = q->qos_class;
	o->predicted_output = q->predicted;
	o->reject_reason = q->reject_reason;
	o->tenant = q->tenant;
	o->model = q->model;
	o->prefill_instance = q->prefill_instance;
	o->gpu_time_s = q->gpu_ns / 1e9;
	o->gpu_util_max = q->max_share;
	o->kv_peak_bytes = q->max_kv_bytes;
	if (q->finish > q->first_sched && q->first_sched >= 0) {
		const struct lsim_instance *in = q->instance >= 0 &&
							 (size_t)q->instance < s->n_inst
						 ? s->inst[q->instance]
						 : NULL;
		double span = (double)(q->finish - q->first_sched) * (in ? in->n_gpus : 1);
		o->gpu_util_mean = q->gpu_ns / span;
	}
	const struct lsim_qos_class *c = s->n_classes ? &s->classes[q->qos_class] : NULL;
	o->slo_met = !declares_slo(c) ? -1 : targets_met(o, c) == 7;
}

struct tenant_acc {
	struct lsim_tenant_record *t;
	size_t n;
	double *out_tokens;
};

static int add_to_tenant(void *ctx, const struct lsim_req_record *q)
{
	struct tenant_acc *a = ctx;
	if (q->tenant < 0 || (size_t)q->tenant >= a->n)
		return 0;
	struct lsim_tenant_record *t = &a->t[q->tenant];
	t->requests += 1;
	if (q->status == LSIM_REQ_FINISHED) {
		t->completed += 1;
		t->tokens += (double)q->prompt_tokens + q->output_tokens;
		a->out_tokens[q->tenant] += q->output_tokens;
	}
	return 0;
}

/* /tenants: per tenant, its requests and its share of cost, energy and
 * carbon by the tokens of its completed requests. */
static int max_tenant(void *ctx, const struct lsim_req_record *q)
{
	int32_t *max = ctx;
	if (q->tenant > *max)
		*max = q->tenant;
	return 0;
}

static int tenant_records(struct lsim_sim *s, struct lsim_results *r)
{
	/* tenants are 0 .. the largest index named or seen */
	int32_t max = (int32_t)s->n_tenant_names - 1;
	int rc = lsim_results_each_req(r, max_tenant, &max);
	if (rc != 0)
		return rc;
	struct tenant_acc a = {.n = (size_t)(max + 1)};
	free(s->tenant_recs);
	s->tenant_recs = a.n ? calloc(a.n, sizeof *s->tenant_recs) : NULL;
	a.out_tokens = a.n ? calloc(a.n, sizeof *a.out_tokens) : NULL;
	if (a.n && (!s->tenant_recs || !a.out_tokens)) {
		free(a.out_tokens);
		return LSIM_ENOMEM;
	}
	a.t = s->tenant_recs;
	for (size_t k = 0; k < a.n; k++) {
		a.t[k].tenant = (int32_t)k;
		if (k < s->n_tenant_names)
			snprintf(a.t[k].name, sizeof a.t[k].name, "%.63s", s->tenant_names[k]);
		else
			snprintf(a.t[k].name, sizeof a.t[k].name, "%zu", k);
	}
	rc = lsim_results_each_req(r, add_to_tenant, &a);
	double tokens = 0;
	for (size_t k = 0; k < a.n; k++)
		tokens += a.t[k].tokens;
	for (size_t k = 0; rc == 0 && k < a.n; k++) {
		double share = tokens > 0 ? a.t[k].tokens / tokens : 0;
		a.t[k].cost_usd = r->summary.cost_usd * share;
		a.t[k].energy_j = r->summary.energy_j * share;
		a.t[k].carbon_g = r->summary.carbon_kg * 1000.0 * share;
		if (a.out_tokens[k] > 0)
			a.t[k].cost_per_mtok_usd = a.t[k].cost_usd / a.out_tokens[k] * 1e6;
	}
	free(a.out_tokens);
	r->tenants = s->tenant_recs;
	r->n_tenants = a.n;
	return rc;
}

_Static_assert(sizeof((struct lsim_link_record *)0)->from == LSIM_LINK_END_LEN,
	       "a link record holds a link end's name");

/* /links: every link of the cluster, with what it carried over the run. */
static int link_records(struct lsim_sim *s, struct lsim_results *r)
{
	int32_t n = s->sv.net ? lsim_net_n_links(s->sv.net) : 0;
	free(s->link_recs);
	s->link_recs = n > 0 ? calloc((size_t)n, sizeof *s->link_recs) : NULL;
	if (n > 0 && !s->link_recs)
		return LSIM_ENOMEM;
	lsim_link_end *from = n > 0 ? calloc((size_t)n, sizeof *from) : NULL;
	lsim_link_end *to = n > 0 ? calloc((size_t)n, sizeof *to) : NULL;
	if (n > 0 && (!from || !to)) {
		free(from);
		free(to);
		return LSIM_ENOMEM;
	}
	if (n > 0 && s->sv.topo.n_gpus > 0)
		lsim_topo_link_ends(&s->sv.topo, n, from, to);
	double span = lsim_time_to_s(lsim_now(s->sv.eng));
	for (int32_t l = 0; l < n; l++) {
		struct lsim_link_info li;
		struct lsim_link_record *o = &s->link_recs[l];
		if (lsim_link_get(s->sv.net, l, &li) != 0) {
			free(from);
			free(to);
			return LSIM_ESTATE;
		}
		o->id = l;
		int32_t ssd = from[l][0] ? -1 : lsim_sl_ssd_node(s, l);
		if (ssd >= 0) {
			snprintf(o->from, sizeof o->from, "node %" PRId32 " ssd", ssd);
			snprintf(o->to, sizeof o->to, "node %" PRId32 " host", ssd);
		} else {
			memcpy(o->from, from[l], sizeof o->from);
			memcpy(o->to, to[l], sizeof o->to);
		}
		snprintf(o->kind, sizeof o->kind, "%s", lsim_link_kind_name(li.kind));
		o->bw = li.bw;
		o->latency_s = lsim_time_to_s(li.latency);
		o->bytes = li.bytes;
		o->busy_s = lsim_time_to_s(li.busy_ns);
		o->mean_util = span > 0 ? li.util_ns / 1e9 / span : 0;
		o->msgs = li.n_msgs;
	}
	free(from);
	free(to);
	r->links = s->link_recs;
	r->n_links = (size_t)n;
	r->link_ts = s->link_ts;
	r->n_link_ts = s->n_link_ts;
	r->link_ts_period_s = s->link_rec ? s->link_ts_period_s
					  : lsim_time_to_s(s->sample_period);
	return 0;
}

int lsim_sim_results(struct lsim_sim *s, struct lsim_results *r,
		     struct lsim_inst_record **insts_out,
		     struct lsim_class_record **classes_out)
{
	int rc0;
	*insts_out = NULL;
	*classes_out = NULL;
	if (!s->records)
		return LSIM_ESTATE;
	/* requests still in flight end here, unfinished */
	for (size_t i = 0; i < s->n_reqs; i++) {
		struct lsim_req *q = &s->sv.reqs[i];
		if (!q->live)
			continue;
		struct lsim_req_record rec;
		lsim_sim_to_record(s, q, &rec);
		int rc = lsim_recstore_put(s->records, q->seq, &rec);
		if (rc != 0)
			return rc;
		q->live = false;
	}
	lsim_recstore_truncate(s->records, s->n_arrived);
	struct lsim_inst_record *ir = calloc(s->n_inst ? s->n_inst : 1, sizeof *ir);
	if (!ir)
		return LSIM_ENOMEM;
	*insts_out = ir; /* the caller's from here, freed even if a step below fails */
	for (size_t i = 0; i < s->n_inst; i++) {
		struct lsim_instance *in = s->inst[i];
		struct lsim_inst_record *o = &ir[i];
		o->id = in->id;
		snprintf(o->gpu, sizeof o->gpu, "%.31s", in->gpu ? in->gpu->name : "");
		snprintf(o->model, sizeof o->model, "%.63s",
			 in->model ? in->model->name : "service");
		o->tp = in->tp;
		o->pp = in->pp;
		o->pp_bytes = in->pp_bytes;
		o->work_s = in->work_ns / 1e9;
		o->spot = in->spot;
		o->node = in->node;
		o->start = lsim_time_to_s(in->start);
		o->ready = ns_to_s_or_neg(in->ready);
		o->stop = lsim_time_to_s(in->stop);
		double busy = lsim_time_to_s(in->busy_ns);
		if (in->service_mode)
			busy /= (double)in->cfg.max_num_seqs;
		o->busy_s = busy;
		/* service mode: its service times are all it does */
		if (in->service_mode)
			o->work_s = busy;
		o->model_flops = in->flops * in->tp;
		o->hbm_bytes = in->bytes * in->tp;
		bool model = !in->service_mode && in->gpu;
		lsim_inst_record_rates(o, model ? in->gpu->bf16_flops : 0,
				       model ? in->gpu->hbm_bw : 0);
		o->iterations = in->iterations;
		o->tokens = in->tokens;
		o->preemptions = in->preemptions;
		o->kv_blocks = lsim_instance_kv_blocks(in);
		o->prompt_tokens = in->prompt_tokens_admitted;
		o->prefix_hit_tokens = in->prefix_hit_tokens;
		o->swaps = in->swaps;
		o->swap_bytes = in->swap_bytes;
		o->role = in->role;
		o->kv_sent_bytes = in->kv_out_bytes;
		o->failed_at = ns_to_s_or_neg(in->failed_at);
		lsim_sim_account_energy(in, in->stop, in->busy_ns);
		o->energy_j = in->energy.facility_j;
		o->carbon_g = in->energy.carbon_g;
		o->cost_usd = lsim_billing_cost(&in->billing, in->start, in->stop);
	}
	memset(r, 0, sizeof *r);
	r->req_store = s->records;
	r->reqs = lsim_recstore_array(s->records);
	r->n_reqs = (size_t)lsim_recstore_count(s->records);
	r->insts = ir;
	r->n_insts = s->n_inst;
	r->ts = s->ts;
	r->n_ts = s->n_ts;
	r->ts_period_s = s->ts_rec ? s->ts_period_s : lsim_time_to_s(s->sample_period);
	r->job_ts_period_s = r->ts_period_s; /* (the jobs' results set theirs) */
	rc0 = link_records(s, r);
	if (rc0 != 0)
		return rc0;
	r->model_names = s->model_names;
	r->n_models = s->n_models;
	r->tenant_names = (const char *const *)s->tenant_names;
	r->n_tenant_names = s->n_tenant_names;
	r->summary.trace_lines_skipped =
		(s->workload ? (double)lsim_workload_skipped(s->workload) : 0.0) +
		(double)s->context_skipped;
	r->summary.trace_zero_output = (double)s->zero_output_seen;
	int rc = lsim_summary_compute(r);
	struct lsim_overload ov;
	if (rc == 0 && (rc = lsim_overload_scan(r, &ov)) == 0) {
		r->summary.overloaded_instances = ov.n;
		r->overload_worst = ov.worst;
		r->overload_from = ov.from;
		r->overload_to = ov.to;
	}
	r->summary.failures = (double)s->n_failures;
	r->summary.spot_reclaims = (double)s->n_reclaims;
	r->summary.node_failures = (double)s->n_node_failures;
	r->summary.requeued = (double)s->n_requeued;
	r->summary.lost_tokens = s->lost_tokens;
	r->summary.lost_gpu_s = s->lost_gpu_s;
	r->summary.control_downtime_s = lsim_time_to_s(s->control_down_ns);
	r->summary.sim_events = (double)lsim_events_processed(s->sv.eng);
	r->has_serverless = s->sl != NULL;
	{
		/* KV offload: summed over the instances that offload */
		double admitted = 0;
		for (size_t i = 0; i < s->n_inst; i++) {
			const struct lsim_instance *in = s->inst[i];
			if (in->service_mode || !in->cfg.kv_offload)
				continue;
			r->has_kv_offload = true;
			r->kv_offload.kv_offload_bytes += in->kv_offload_bytes;
			r->kv_offload.kv_reload_bytes += in->kv_reload_bytes;
			r->kv_offload.kv_host_hit_tokens += (double)in->kv_host_hit_tokens;
			admitted += (double)in->prompt_tokens_admitted;
		}
		if (admitted > 0)
			r->kv_offload.kv_host_hit_rate = r->kv_offload.kv_host_hit_tokens / admitted;
	}
	for (size_t i = 0; i < s->n_inst; i++) {
		/* LoRA: summed over the instances that serve adapters */
		const struct lsim_lora *l = s->inst[i]->lora;
		if (!l)
			continue;
		r->has_lora = true;
		r->lora.lora_loads += (double)l->loads;
		r->lora.lora_storage_reads += (double)l->misses;
		r->lora.lora_bytes += l->bytes;
		r->lora.lora_delayed_requests += (double)l->delayed;
		r->lora.lora_wait_s += l->wait_ns / 1e9;
	}
	if (r->has_lora)
		r->lora.lora_requests = (double)s->lora_requests;
	if (rc == 0 && s->sl)
		rc = lsim_sl_summary(s, r->insts, r->n_insts, &r->serverless);
	struct lsim_class_record *cr = NULL;
	if (rc == 0)
		rc = class_records(s, r, &cr);
	if (rc == 0)
		rc = tenant_records(s, r);
	r->classes = cr;
	r->n_classes = cr ? s->n_classes : 0;
	*classes_out = cr;
	return rc;
}
