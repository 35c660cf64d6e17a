/*
 * jobs_submit.c - the jobs of a run come in: the configuration's defaults,
 * the iteration-time model, checks of job specs, creating and destroying
 * the jobs of a run, submitting jobs, and their arrival (or rejection when
 * they can never fit).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_rng.h>

#include "jobs/jobs_internal.h"
#include "kernel/rng.h"

static void ev_arrival(struct lsim_engine *eng, void *subject, uint64_t arg);

/* ---- arrival and rejection ---- */

static bool can_ever_fit(const struct lsim_jobs *js, const struct job *jb)
{
	int32_t need = jb->spec->gpu_milli > 0 ? 1 : lsim_jobs_min_gpus(jb, jb->peak);
	if (js->alloc->resize && jb->spec->gpu_milli == 0) {
		/* each phase must fit on its own */
		need = 0;
		for (int32_t p = 0; p < jb->spec->n_phases; p++) {
			int32_t g = lsim_jobs_min_gpus(jb, lsim_jobs_desired(js, jb, p));
			if (g > need)
				need = g;
		}
	}
	int32_t t = jb->spec->tenant;
	if (js->quota && t >= 0 && (size_t)t < js->n_quota && js->quota[t] >= 0) {
		int64_t m = jb->spec->gpu_milli > 0 ? jb->spec->gpu_milli
						    : (int64_t)need * MILLI;
		if (m > (int64_t)js->quota[t] * MILLI)
			return false;
	}
	for (int32_t ty = 0; ty < js->n_types; ty++)
		if ((jb->type_mask >> ty & 1) && js->types[ty].total >= need)
			return true;
	return false;
}

static void arrive(struct lsim_jobs *js, int32_t j)
{
	struct job *jb = &js->jobs[j];
	lsim_time now = lsim_jobs_now(js);
	if (!js->any_arrival || now < js->first_arrival) {
		js->first_arrival = now;
		/* capacity counts from here: lending before it is not in it */
		lsim_jobs_accrue_lent(js);
		js->lent_before_jobs = js->lent_gpu_s;
	}
	js->any_arrival = true;
	jb->rec.arrival = now;
	if (!can_ever_fit(js, jb)) {
		lsim_jobs_set_state(js, jb, ST_DONE);
		jb->rec.status = LSIM_JOB_REJECTED;
		jb->rec.finish = now;
		js->n_ended++;
		js->n_varying -= jb->varying;
		return;
	}
	lsim_jobs_enqueue(js, j, false);
}

static void ev_arrival(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	struct lsim_jobs *js = subject;
	js->plan_valid = false;
	int32_t j = (int32_t)arg;
	/* the next arrival first, so that a pass at this instant sees every
	 * job arriving at it */
	size_t next = (size_t)j + 1;
	if (next < js->list_base + js->list->n) {
		lsim_schedule(js->eng, js->jobs[next].spec->arrival, ev_arrival,
			      js, (uint64_t)next);
	}
	arrive(js, j);
}

/* ---- creation and submission ---- */

void lsim_jobs_cfg_defaults(struct lsim_jobs_cfg *c)
{
	memset(c, 0, sizeof *c);
	c->scheduler = "fcfs";
	c->allocator = "static";
	c->grad_bytes_per_param = 2.0;
	c->ckpt_bytes_per_param = 14.0;
	c->backfill_depth = 100;
	c->las_threshold = 3600.0;
	c->las_multiplier = 10.0;
	c->las_levels = 2;
	c->las_quantum = 60 * LSIM_S;
}

int lsim_job_iter_time(const struct lsim_job_spec *s, int32_t p, int32_t n,
		       const struct lsim_gpu_profile *gpu,
		       const struct lsim_jobs_cfg *c, lsim_time *out,
		       struct lsim_diag *d)
{
	if (p < 0 || p >= s->n_phases)
		return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0, "phase",
				     "job %llu has no phase %d",
				     (unsigned long long)s->id, p);
	int32_t g = s->phases[p].gpus;
	if (n < 1)
		n = 1;
	if (s->params > 0) {
		if (!gpu || !(gpu->bf16_flops > 0))
			return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0,
					     "params",
					     "job %llu gives a model size but its GPU "
					     "type has no peak FLOP/s (no profile)",
					     (unsigned long long)s->id);
		double eff = c->efficiency > 0 ? c->efficiency : gpu->mfu_max;
		if (!(eff > 0))
			return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0,
					     "efficiency",
					     "no efficiency: set one or use a profile "
					     "with mfu_max");
		double peak = gpu->bf16_flops * eff;
		if (s->gpu_milli > 0)
			peak *= (double)s->gpu_milli / MILLI;
		double t = 6.0 * s->params * s->tokens_per_iter / ((double)n * peak);
		if (n > 1) {
			double bw = c->link_bw > 0 ? c->link_bw : gpu->nvlink_bw;
			if (!(bw > 0))
				return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line,
						     0, "link_bw",
						     "job %llu runs on %d GPUs but no "
						     "all-reduce bandwidth is known",
						     (unsigned long long)s->id, n);
			double gb = c->grad_bytes_per_param > 0
					    ? c->grad_bytes_per_param
					    : 2.0;
			t += 2.0 * (n - 1) / n * s->params * gb / bw +
			     lsim_time_to_s(c->link_latency);
		}
		*out = lsim_time_from_s(t);
		return 0;
	}
	lsim_time it = s->iter_time;
	if (n >= g || s->gpu_milli > 0)
		*out = it;
	else
		*out = (it * g + n - 1) / n;
	return 0;
}

static uint64_t type_mask_of(const struct lsim_jobs *js, const char *types)
{
	if (!types || !*types)
		return js->n_types >= 64 ? ~0ULL : (1ULL << js->n_types) - 1;
	uint64_t m = 0;
	const char *p = types;
	while (*p) {
		const char *e = strchr(p, '|');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		for (int32_t t = 0; t < js->n_types; t++)
			if (strlen(js->type_names[t]) == len &&
			    strncmp(js->type_names[t], p, len) == 0)
				m |= 1ULL << t;
		if (!e)
			break;
		p = e + 1;
	}
	return m;
}

static int check_spec(const struct lsim_jobs *js, const struct lsim_job_spec *s,
		      uint64_t mask, struct lsim_diag *d)
{
	unsigned long long id = (unsigned long long)s->id;
	if (s->n_phases < 1 || !s->phases)
		return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0, "phases",
				     "job %llu has no phases", id);
	for (int32_t p = 0; p < s->n_phases; p++)
		if (s->phases[p].iterations < 1 || s->phases[p].gpus < 1)
			return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0,
					     "phases",
					     "job %llu: phase %d needs >= 1 GPU and "
					     ">= 1 iteration",
					     id, p);
	if (s->gpu_milli < 0 || s->gpu_milli >= MILLI)
		return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0,
				     "gpu_milli",
				     "job %llu: gpu_milli must be in 0..999", id);
	if (s->gpu_milli > 0 && (s->n_phases != 1 || s->phases[0].gpus != 1))
		return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0,
				     "gpu_milli",
				     "job %llu: a GPU share is one phase on 1 GPU",
				     id);
	if (s->gpus_min < 0 || s->gpus_min > lsim_job_peak_gpus(s))
		return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0,
				     "gpus_min",
				     "job %llu: gpus_min must be in 0..peak", id);
	if (!(s->params >= 0) || !isfinite(s->params) || s->iter_time < 0 ||
	    s->ckpt_every < 0 || !(s->ckpt_bytes >= 0) || s->tenant < 0)
		return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0, "job",
				     "job %llu has a negative or non-finite value",
				     id);
	if (s->params > 0 && !(s->tokens_per_iter > 0))
		return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0,
				     "tokens_per_iter",
				     "job %llu: a model size needs tokens per "
				     "iteration", id);
	/* every phase must have an iteration time on every allowed type
	 * (with fewer GPUs the same numbers are needed) */
	for (int32_t t = 0; t < js->n_types; t++) {
		if (!(mask >> t & 1))
			continue;
		for (int32_t p = 0; p < s->n_phases; p++) {
			lsim_time it;
			int rc = lsim_job_iter_time(s, p, s->phases[p].gpus,
						    js->types[t].prof, &js->cfg,
						    &it, d);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int add_job(struct lsim_jobs *js, const struct lsim_job_spec *s,
		   struct lsim_diag *d)
{
	uint64_t mask = type_mask_of(js, s->gpu_types);
	int rc = check_spec(js, s, mask, d);
	if (rc)
		return rc;
	if (lsim_grow((void **)&js->jobs, &js->cap_jobs, js->n_jobs + 1,
			   sizeof *js->jobs))
		return LSIM_ENOMEM;
	if (s->tenant >= 0 && (size_t)s->tenant >= js->n_tenant_milli) {
		size_t n = (size_t)s->tenant + 1;
		int64_t *t = realloc(js->tenant_milli, n * sizeof *t);
		if (!t)
			return LSIM_ENOMEM;
		memset(t + js->n_tenant_milli, 0,
		       (n - js->n_tenant_milli) * sizeof *t);
		js->tenant_milli = t;
		js->n_tenant_milli = n;
	}
	struct job *jb = &js->jobs[js->n_jobs++];
	memset(jb, 0, sizeof *jb);
	jb->spec = s;
	jb->state = ST_WAITING;
	jb->type_mask = mask;
	jb->peak = lsim_job_peak_gpus(s);
	for (int32_t p = 1; p < s->n_phases; p++)
		jb->varying |= s->phases[p].gpus != s->phases[0].gpus;
	js->n_varying += jb->varying;
	jb->total = lsim_job_total_iterations(s);
	lsim_jobs_set_progress(jb, 0);
	jb->type = -1;
	jb->run_pos = -1;
	jb->pd_type = -1;
	double bytes = s->ckpt_bytes > 0 ? s->ckpt_bytes
					 : s->params * js->cfg.ckpt_bytes_per_param;
	jb->ckpt_bytes = bytes;
	jb->ckpt_t = js->cfg.storage_bw > 0 && bytes > 0
			     ? lsim_time_from_s(bytes / js->cfg.storage_bw)
			     : 0;
	struct lsim_job_record *r = &jb->rec;
	r->id = s->id;
	r->tenant = s->tenant;
	r->status = LSIM_JOB_UNFINISHED;
	r->gpus_peak = jb->peak;
	r->gpu_milli = s->gpu_milli;
	r->gpu_type = -1;
	r->arrival = s->arrival;
	r->first_start = -1;
	r->finish = -1;
	return 0;
}

int lsim_jobs_submit_list(struct lsim_jobs *js, const struct lsim_job_list *l,
			  struct lsim_diag *d)
{
	if (js->list)
		return lsim_diag_set(d, LSIM_ESTATE, "", 0, 0, "jobs",
				     "a job list was already submitted");
	size_t base = js->n_jobs, varying = js->n_varying;
	for (size_t i = 0; i < l->n; i++) {
		if (i > 0 && l->jobs[i].arrival < l->jobs[i - 1].arrival) {
			js->n_jobs = base;
			js->n_varying = varying;
			return lsim_diag_set(d, LSIM_EINVAL, "", l->jobs[i].src_line,
					     0, "arrival",
					     "job list not sorted by arrival at job %zu",
					     i);
		}
		int rc = add_job(js, &l->jobs[i], d);
		if (rc) {
			js->n_jobs = base;
			js->n_varying = varying;
			return rc;
		}
	}
	js->list = l;
	js->list_base = base;
	if (!js->quota && l->quota && l->n_tenants) {
		js->quota = l->quota;
		js->n_quota = l->n_tenants;
	}
	if (l->n > 0 && !lsim_schedule(js->eng, l->jobs[0].arrival, ev_arrival,
				       js, (uint64_t)base))
		return LSIM_ENOMEM;
	return 0;
}

int32_t lsim_jobs_submit(struct lsim_jobs *js, const struct lsim_job_spec *s,
			 struct lsim_diag *d)
{
	int rc = add_job(js, s, d);
	if (rc)
		return rc;
	int32_t j = (int32_t)(js->n_jobs - 1);
	arrive(js, j);
	return j;
}

int lsim_jobs_create(struct lsim_engine *eng, const struct lsim_pool_spec *pool,
		     const struct lsim_jobs_cfg *cfg, struct lsim_jobs **out,
		     struct lsim_diag *d)
{
	*out = NULL;
	const struct lsim_job_scheduler *sc = lsim_job_scheduler_find(cfg->scheduler);
	if (!sc)
		return lsim_diag_set(d, LSIM_ENOENT, "", 0, 0, "scheduler",
				     "unknown job scheduler '%s' (known: %s)",
				     cfg->scheduler ? cfg->scheduler : "",
				     lsim_job_scheduler_names());
	const struct lsim_job_allocator *al = lsim_job_allocator_find(cfg->allocator);
	if (!al)
		return lsim_diag_set(d, LSIM_ENOENT, "", 0, 0, "allocator",
				     "unknown job allocator '%s' (known: %s)",
				     cfg->allocator ? cfg->allocator : "",
				     lsim_job_allocator_names());
	if (pool->n_types < 1 || pool->n_types > 64 || pool->n_nodes < 1)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "pool",
				     "a pool needs 1..64 GPU types and >= 1 node");
	if (!(cfg->storage_bw >= 0) || cfg->gpu_mtbf < 0 ||
	    cfg->start_overhead < 0 || cfg->restart_overhead < 0)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "jobs",
				     "negative bandwidth, overhead or MTBF");
	struct lsim_jobs *js = calloc(1, sizeof *js);
	if (!js)
		return LSIM_ENOMEM;
	js->eng = eng;
	js->cfg = *cfg;
	js->sched = sc;
	js->alloc = al;
	js->events0 = lsim_events_processed(eng);
	js->n_types = pool->n_types;
	js->n_nodes = pool->n_nodes;
	js->lent_since = 0;
	js->quota = cfg->tenant_quota;
	js->n_quota = cfg->n_tenant_quota;
	for (int32_t i = 0; i < pool->n_nodes; i++)
		js->n_gpus += pool->node_gpus[i];
	js->types = calloc((size_t)js->n_types, sizeof *js->types);
	js->type_names = calloc((size_t)js->n_types, sizeof *js->type_names);
	js->plan = calloc((size_t)js->n_types, sizeof *js->plan);
	js->run = calloc((size_t)js->n_types, sizeof *js->run);
	js->res_base = calloc((size_t)js->n_types, sizeof *js->res_base);
	js->nodes = calloc((size_t)js->n_nodes, sizeof *js->nodes);
	js->gpus = calloc(js->n_gpus > 0 ? (size_t)js->n_gpus : 1,
			  sizeof *js->gpus);
	if (!js->types || !js->type_names || !js->plan || !js->run ||
	    !js->res_base || !js->nodes || !js->gpus) {
		lsim_jobs_destroy(js);
		return LSIM_ENOMEM;
	}
	for (int32_t t = 0; t < js->n_types; t++) {
		memcpy(js->type_names[t], pool->types[t], sizeof js->type_names[t]);
		const struct lsim_gpu_profile *pr = cfg->gpu;
		if (cfg->type_profiles && cfg->type_profiles[t])
			pr = cfg->type_profiles[t];
		js->types[t].prof = pr;
		double price = cfg->price_per_gpu_hour > 0 ? cfg->price_per_gpu_hour
			       : pr			  ? pr->price_per_hour
							  : 0.0;
		js->types[t].price_s = price / 3600.0;
	}
	int32_t g = 0;
	for (int32_t i = 0; i < js->n_nodes; i++) {
		struct node *nd = &js->nodes[i];
		nd->first = g;
		nd->count = pool->node_gpus[i];
		nd->type = pool->node_type[i];
		nd->free_whole = nd->count;
		js->types[nd->type].total += nd->count;
		js->types[nd->type].free_whole += nd->count;
		for (int32_t k = 0; k < nd->count; k++, g++) {
			js->gpus[g].node = i;
			js->gpus[g].type = nd->type;
			js->gpus[g].owner = -1;
		}
	}
	if (cfg->gpu_mtbf > 0) {
		js->fail_rng = lsim_rng_create(cfg->seed, 0, LSIM_STREAM_FAILURES);
		if (!js->fail_rng) {
			lsim_jobs_destroy(js);
			return LSIM_ENOMEM;
		}
	}
	*out = js;
	return 0;
}

void lsim_jobs_destroy(struct lsim_jobs *js)
{
	if (!js)
		return;
	for (size_t i = 0; i < js->n_jobs; i++) {
		free(js->jobs[i].gpus);
		free(js->jobs[i].flows);
		free(js->jobs[i].pd);
	}
	free(js->jobs);
	free(js->pending);
	free(js->running);
	free(js->gpus);
	free(js->nodes);
	free(js->types);
	free(js->type_names);
	if (js->plan) {
		for (int32_t t = 0; t < js->n_types; t++) {
			free(js->plan[t].t);
			free(js->plan[t].u);
		}
	}
	free(js->plan);
	if (js->run) {
		for (int32_t t = 0; t < js->n_types; t++) {
			free(js->run[t].t);
			free(js->run[t].d);
			free(js->run[t].t2);
			free(js->run[t].d2);
		}
	}
	free(js->run);
	free(js->res_base);
	free(js->pend);
	free(js->dirty);
	free(js->pscr);
	free(js->deltas);
	free(js->segs);
	free(js->lends);
	free(js->tenant_milli);
	free(js->out);
	free(js->timeline);
	free(js->scratch);
	if (js->fail_rng)
		gsl_rng_free(js->fail_rng);
	free(js);
}
