/*
 * scenario_jobs.c - a scenario's training and fine-tuning jobs: the jobs
 * section (the list read or drawn, quotas, the pool of the cluster's
 * nodes), starting them on a run's engine, the /job_timeseries samples,
 * and their results (/jobs, /job_timeline and the summary's job fields).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/jobs.h"
#include "kernel/rng.h"
#include "run/scenario_internal.h"

/* jobs.quotas: "name:gpus,..." as the list's tenants and quotas. */
static int parse_quotas(struct lsim_scenario *sc, struct lsim_node *node,
			struct lsim_diag *d)
{
	const char *s = sc->jobs.quotas;
	while (*s) {
		const char *colon = strchr(s, ':');
		const char *comma = strchr(s, ',');
		if (!comma)
			comma = s + strlen(s);
		char *end = NULL;
		long q = colon && colon < comma ? strtol(colon + 1, &end, 10) : -1;
		if (!colon || colon > comma || colon == s || end != comma || q < 0 ||
		    q > 1000000)
			return lsim_cfg_error(d, sc->doc, lsim_node_get(node, "quotas"),
					      "jobs.quotas", LSIM_EINVAL,
					      "expected name:gpus entries separated by commas "
					      "(e.g. alice:16,bob:8), at '%s'", s);
		char name[128];
		snprintf(name, sizeof name, "%.*s", (int)(colon - s), s);
		int32_t t = lsim_job_list_tenant(&sc->job_list, name);
		if (t < 0)
			return LSIM_ENOMEM;
		sc->job_list.quota[t] = (int32_t)q;
		s = *comma ? comma + 1 : comma;
	}
	return 0;
}

/* What drawing a job list (stats, philly) takes from the jobs section,
 * for a cluster of gpus GPUs. */
static void job_gen_params(const struct lsim_scenario *sc, int32_t gpus,
			   struct lsim_job_gen_params *gp)
{
	lsim_job_gen_defaults(gp);
	gp->seed = lsim_stream_seed((uint64_t)sc->top.seed, 0, LSIM_STREAM_JOBS);
	gp->count = (size_t)sc->jobs.count;
	gp->load = sc->jobs.load;
	gp->capacity_gpus = gpus;
	gp->mean_gpus = sc->jobs.mean_gpus;
	gp->ckpt_interval = sc->jobs.ckpt_interval;
}

/* jobs: the list (read or drawn), and the pool: the cluster's nodes. */
int lsim_scn_load_jobs(struct lsim_scenario *sc, struct lsim_diag *d)
{
	struct lsim_node *node = lsim_node_get(sc->doc->root, "jobs");
	int rc = lsim_scn_bind_section(sc, sc->doc->root, "jobs", "jobs", lsim_scn_job_keys,
				       lsim_scn_n_job_keys, NULL, &sc->jobs, d);
	if (rc != 0)
		return rc;
	if (sc->n_nodes == 0)
		return lsim_cfg_error(d, sc->doc, node, "jobs", LSIM_EINVAL,
				      "jobs run on the cluster's GPUs: give a cluster section");
	if (!lsim_job_scheduler_find(sc->jobs.scheduler))
		return lsim_cfg_error(d, sc->doc, lsim_node_get(node, "scheduler"),
				      "jobs.scheduler", LSIM_ENOENT,
				      "unknown job scheduler '%s' (known: %s)",
				      sc->jobs.scheduler, lsim_job_scheduler_names());
	if (!lsim_job_allocator_find(sc->jobs.allocator))
		return lsim_cfg_error(d, sc->doc, lsim_node_get(node, "allocator"),
				      "jobs.allocator", LSIM_ENOENT,
				      "unknown job allocator '%s' (known: %s)",
				      sc->jobs.allocator, lsim_job_allocator_names());
	sc->have_jobs = true;
	lsim_job_list_init(&sc->job_list);
	lsim_pool_spec_init(&sc->pool);
	int32_t gpus = 0;
	for (size_t i = 0; rc == 0 && i < sc->n_nodes; i++) {
		rc = lsim_pool_spec_add(&sc->pool, (int32_t)sc->nodes[i].count,
					(int32_t)sc->nodes[i].gpus_per_node, sc->nodes[i].gpu);
		gpus += (int32_t)(sc->nodes[i].count * sc->nodes[i].gpus_per_node);
	}
	/* the hardware of each pool type: its profile */
	size_t nt = rc == 0 ? (size_t)sc->pool.n_types : 0;
	sc->pool_profiles = calloc(nt ? nt : 1, sizeof *sc->pool_profiles);
	sc->pool_profile_ptrs = calloc(nt ? nt : 1, sizeof *sc->pool_profile_ptrs);
	if (rc == 0 && (!sc->pool_profiles || !sc->pool_profile_ptrs))
		rc = LSIM_ENOMEM;
	for (size_t t = 0; rc == 0 && t < nt; t++) {
		rc = lsim_scn_load_profile(sc, sc->pool.types[t], &sc->pool_profiles[t], d);
		sc->pool_profile_ptrs[t] = &sc->pool_profiles[t];
	}
	if (rc == 0 && sc->jobs.quotas[0])
		rc = parse_quotas(sc, node, d);
	char *path = rc == 0 ? lsim_scn_resolve(sc, sc->jobs.path) : NULL;
	if (rc == 0 && !path)
		rc = LSIM_ENOMEM;
	if (rc == 0) {
		if (sc->jobs.source == JOBS_STATS) {
			struct lsim_cluster_stats st;
			struct lsim_job_gen_params gp;
			job_gen_params(sc, gpus, &gp);
			rc = lsim_jobs_read_cluster_stats(path, sc->jobs.cluster_name, &st, d);
			if (rc == 0)
				rc = lsim_jobs_gen_stats(&st, &gp, &sc->job_list, d);
		} else if (sc->jobs.source == JOBS_CSV) {
			rc = lsim_jobs_read_csv(path, &sc->job_list, d);
		} else if (sc->jobs.source == JOBS_ALIBABA) {
			rc = lsim_jobs_read_alibaba_pods(path, 0, &sc->job_list, d);
		} else {
			struct lsim_job_gen_params gp;
			job_gen_params(sc, gpus, &gp);
			rc = lsim_jobs_gen_empirical(path, &gp, &sc->job_list, d);
		}
		if (rc != 0 && d && !d->key[0])
			snprintf(d->key, sizeof d->key, "jobs.path");
	}
	free(path);
	return rc;
}

/* Starts the run's jobs on its engine: the GPUs the initial instances use
 * are lent to inference first. */
int lsim_scn_start_jobs(struct lsim_scenario *sc, struct lsim_diag *d)
{
	if (!sc->have_jobs)
		return 0;
	struct lsim_jobs_cfg c;
	lsim_jobs_cfg_defaults(&c);
	c.scheduler = sc->jobs.scheduler;
	c.allocator = sc->jobs.allocator;
	c.type_profiles = sc->pool_profile_ptrs;
	c.gpu = sc->pool.n_types > 0 ? &sc->pool_profiles[0] : NULL;
	c.efficiency = sc->jobs.efficiency;
	c.storage_bw = sc->jobs.storage_bw > 0 ? sc->jobs.storage_bw : sc->net.storage_bw;
	c.gpu_mtbf = sc->jobs.gpu_mtbf;
	c.seed = lsim_stream_seed((uint64_t)sc->top.seed, 0, LSIM_STREAM_JOBS);
	int rc = lsim_jobs_create(sc->sim.sv.eng, &sc->pool, &c, &sc->js, d);
	if (rc != 0) {
		if (d && !d->key[0])
			snprintf(d->key, sizeof d->key, "jobs");
		return rc;
	}
	if (sc->sim.sv.net && sc->jobs.traffic == 0) /* all-reduces and checkpoints as flows */
		lsim_jobs_use_links(sc->js, sc->sim.sv.net, &sc->sim.sv.topo);
	for (size_t i = 0; rc == 0 && i < sc->sim.n_inst; i++) {
		const struct lsim_instance *in = sc->sim.inst[i];
		for (int32_t st = 0; in->node >= 0 && rc == 0 && st < in->pp; st++)
			rc = lsim_jobs_reclaim(sc->js, in->stage_node ? in->stage_node[st] : in->node,
					       in->tp, NULL, NULL);
	}
	if (rc == 0)
		rc = lsim_jobs_submit_list(sc->js, &sc->job_list, d);
	return rc;
}

/* The sim's check hook: the training jobs' invariants. */
int lsim_scn_check_jobs(void *ctx, char *why, size_t n)
{
	const struct lsim_scenario *sc = ctx;
	return sc->js ? lsim_jobs_check(sc->js, why, n) : 0;
}

/* A sample of the training pool for /job_timeseries, run-length encoded
 * and coarsened to output.timeseries_rows as /timeseries is (docs/output.md,
 * report/tsrec.h). job_fragmentation counts every sample. Memory running out stops the run (exit 2), never the series
 * alone. */
void lsim_scn_sample_jobs(void *ctx, lsim_time now)
{
	struct lsim_scenario *sc = ctx;
	if (!sc->js)
		return;
	struct lsim_jobs_occupancy o;
	lsim_jobs_occupancy(sc->js, &o);
	struct lsim_job_sample row = {
		.t = lsim_time_to_s(now), .held = o.held, .lent = o.lent, .free = o.free,
		.pending = o.pending, .fragmented = o.fragmented};
	if (row.free > 0) {
		sc->job_frag_sum += (double)row.fragmented / row.free;
		sc->job_frag_n++;
	}
	if (!sc->job_rec)
		sc->job_rec = lsim_tsrec_create(&lsim_tsrec_pool, sc->sim.sample_period,
						sc->sim.ts_rows);
	int rc = sc->job_rec ? lsim_tsrec_add(sc->job_rec, now, &row, 1) : LSIM_ENOMEM;
	if (rc != 0 && !sc->sim.sv.error) {
		sc->sim.sv.error = lsim_diag_set(&sc->sim.sv.diag, LSIM_ENOMEM, "", 0, 0, "",
						 "out of memory for /job_timeseries");
		lsim_stop(sc->sim.sv.eng);
	}
}

/* /jobs and the job fields of the summary. */
int lsim_scn_job_results(struct lsim_scenario *sc)
{
	if (!sc->js)
		return 0;
	size_t n = 0;
	const struct lsim_job_record *rec = lsim_jobs_records(sc->js, &n);
	free(sc->job_rows);
	sc->job_rows = calloc(n ? n : 1, sizeof *sc->job_rows);
	if (!sc->job_rows)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct lsim_job_record *j = &rec[i];
		struct lsim_job_row *o = &sc->job_rows[i];
		o->id = j->id;
		o->tenant = j->tenant;
		o->status = j->status;
		o->gpus_peak = j->gpus_peak;
		o->restarts = j->restarts;
		o->failures = j->failures;
		o->preemptions = j->preemptions;
		o->resizes = j->resizes;
		o->iterations = j->iterations;
		o->lost_iterations = j->lost_iterations;
		o->arrival = j->arrival < 0 ? -1 : lsim_time_to_s(j->arrival);
		o->first_start = j->first_start < 0 ? -1 : lsim_time_to_s(j->first_start);
		o->finish = j->finish < 0 ? -1 : lsim_time_to_s(j->finish);
		o->queued_s = lsim_time_to_s(j->queued);
		o->alloc_gpu_s = j->alloc_gpu_s;
		o->useful_gpu_s = j->useful_gpu_s;
		o->lost_gpu_s = j->lost_gpu_s;
		o->overhead_gpu_s = j->overhead_gpu_s;
		o->cost_usd = j->cost;
		if (j->gpu_type >= 0 && j->gpu_type < sc->pool.n_types)
			o->energy_j = j->alloc_gpu_s * sc->pool_profiles[j->gpu_type].tdp_w *
				      sc->power.pue;
		sc->res.summary.jobs_energy_j += o->energy_j;
	}
	sc->res.job_ts_period_s = lsim_time_to_s(sc->sim.sample_period);
	if (sc->job_rec) { /* the end of the last stretch and period */
		const void *rows = NULL;
		if (lsim_tsrec_finish(sc->job_rec, &rows, &sc->res.n_job_ts,
				      &sc->res.job_ts_period_s) != 0)
			return LSIM_ENOMEM;
		sc->res.job_ts = rows;
	}
	sc->res.summary.job_fragmentation =
		sc->job_frag_n ? sc->job_frag_sum / (double)sc->job_frag_n : 0;
	size_t ne = 0;
	const struct lsim_job_event *ev = lsim_jobs_timeline(sc->js, &ne);
	free(sc->job_events);
	sc->job_events = calloc(ne ? ne : 1, sizeof *sc->job_events);
	if (!sc->job_events)
		return LSIM_ENOMEM;
	for (size_t k = 0; k < ne; k++)
		sc->job_events[k] = (struct lsim_job_event_row){
			.t = lsim_time_to_s(ev[k].t), .job = ev[k].job,
			.state = ev[k].state, .gpus = ev[k].gpus};
	sc->res.job_timeline = sc->job_events;
	sc->res.n_job_timeline = ne;
	sc->res.jobs = sc->job_rows;
	sc->res.n_jobs = n;
	struct lsim_jobs_summary js;
	int rc = lsim_jobs_summary(sc->js, &js);
	if (rc != 0)
		return rc;
	struct lsim_summary *s = &sc->res.summary;
	s->jobs = (double)js.n_jobs;
	s->jobs_finished = (double)js.n_finished;
	sc->jobs_unfinished = (double)js.n_unfinished;
	s->jobs_makespan_s = js.makespan_s;
	s->jct_mean_s = js.jct_mean_s;
	s->jct_p99_s = js.jct_p99_s;
	s->job_queue_mean_s = js.queue_mean_s;
	s->job_gpu_util = js.util_alloc;
	s->job_useful_util = js.util_useful;
	s->jobs_cost_usd = js.cost;
	return 0;
}
