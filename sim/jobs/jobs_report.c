/*
 * jobs_report.c - what the jobs module reports: the pool's occupancy, the
 * per-job records and the timeline, the summary over the records
 * (quantiles with GSL), and the invariants checked after every event.
 */
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "jobs/jobs_internal.h"

/* ---- invariants ---- */

int lsim_jobs_check(const struct lsim_jobs *js, char *why, size_t n)
{
	size_t queued = 0, holding = 0, done = 0;
	for (size_t j = 0; j < js->n_jobs; j++) {
		int st = js->jobs[j].state;
		queued += st == ST_QUEUED;
		holding += st == ST_RESTARTING || st == ST_COMPUTING ||
			   st == ST_CHECKPOINTING;
		done += st == ST_DONE;
	}
	if (queued != js->n_pending || holding != js->n_running ||
	    done != js->n_ended) {
		snprintf(why, n,
			 "jobs: %zu queued, %zu holding GPUs, %zu ended, but the "
			 "lists hold %zu pending, %zu running, %zu ended",
			 queued, holding, done, js->n_pending, js->n_running,
			 js->n_ended);
		return LSIM_ESTATE;
	}
	for (int32_t g = 0; g < js->n_gpus; g++) {
		int32_t used = js->gpus[g].used;
		if (used < 0 || used > MILLI) {
			snprintf(why, n, "jobs: GPU %d has %d milli-GPUs in use",
				 (int)g, (int)used);
			return LSIM_ESTATE;
		}
	}
	return 0;
}

/* ---- observers ---- */

int32_t lsim_jobs_free_gpus(const struct lsim_jobs *js)
{
	int32_t f = 0;
	for (int32_t t = 0; t < js->n_types; t++)
		f += js->types[t].free_whole;
	return f;
}

void lsim_jobs_occupancy(const struct lsim_jobs *js, struct lsim_jobs_occupancy *o)
{
	memset(o, 0, sizeof *o);
	for (int32_t t = 0; t < js->n_types; t++) {
		o->total += js->types[t].total;
		o->lent += js->types[t].lent;
		o->free += js->types[t].free_whole;
	}
	o->held = o->total - o->lent - o->free;
	o->pending = (int32_t)js->n_pending;
	if (js->n_pending == 0)
		return;
	/* free GPUs the job at the head of the queue cannot use: on nodes
	 * with fewer free than it needs (a gang must fit one node when it is
	 * no larger than a node) */
	const struct job *head = &js->jobs[js->pending[0]];
	int32_t need = head->rec.gpus_peak;
	for (int32_t n = 0; n < js->n_nodes; n++) {
		const struct node *nd = &js->nodes[n];
		if (need <= nd->count && nd->free_whole < need)
			o->fragmented += nd->free_whole;
	}
}

int32_t lsim_jobs_lent_gpus(const struct lsim_jobs *js)
{
	int32_t f = 0;
	for (int32_t t = 0; t < js->n_types; t++)
		f += js->types[t].lent;
	return f;
}

size_t lsim_jobs_submitted(const struct lsim_jobs *js)
{
	return js->n_jobs;
}

size_t lsim_jobs_ended(const struct lsim_jobs *js)
{
	return js->n_ended;
}

/* ---- results ---- */

const struct lsim_job_event *lsim_jobs_timeline(const struct lsim_jobs *js,
					       size_t *n)
{
	*n = js->n_timeline;
	return js->timeline;
}

const struct lsim_job_record *lsim_jobs_records(struct lsim_jobs *js, size_t *n)
{
	*n = 0;
	if (lsim_grow((void **)&js->out, &js->cap_out, js->n_jobs, sizeof *js->out))
		return NULL;
	lsim_time now = lsim_jobs_now(js);
	for (size_t i = 0; i < js->n_jobs; i++) {
		const struct job *jb = &js->jobs[i];
		struct lsim_job_record *r = &js->out[i];
		*r = jb->rec;
		if (jb->state == ST_DONE)
			continue;
		r->status = LSIM_JOB_UNFINISHED;
		r->iterations = jb->done;
		if (jb->state == ST_COMPUTING && jb->it > 0) {
			int64_t k = (now - jb->seg_start) / jb->it;
			int64_t len = jb->seg_iter1 - jb->seg_iter0;
			r->iterations = jb->seg_iter0 + (k < len ? k : len);
		}
		if (jb->run_pos >= 0) {
			double s = lsim_jobs_held_gpus(jb) *
				   lsim_time_to_s(now - jb->held_since);
			r->alloc_gpu_s += s;
			r->cost += s * jb->price_s;
		}
		if (jb->state == ST_QUEUED)
			r->queued += now - jb->queued_since;
	}
	*n = js->n_jobs;
	return js->out;
}

static void quantiles(double *v, size_t n, double *mean, double *p50,
		      double *p90, double *p99)
{
	*mean = *p50 = *p90 = *p99 = 0;
	if (n == 0)
		return;
	gsl_sort(v, 1, n);
	*mean = gsl_stats_mean(v, 1, n);
	*p50 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.50);
	*p90 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.90);
	*p99 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.99);
}

int lsim_jobs_summary(struct lsim_jobs *js, struct lsim_jobs_summary *o)
{
	memset(o, 0, sizeof *o);
	size_t n;
	const struct lsim_job_record *r = lsim_jobs_records(js, &n);
	if (!r && js->n_jobs)
		return LSIM_ENOMEM;
	if (lsim_grow((void **)&js->scratch, &js->cap_scratch, 2 * n + 1,
			   sizeof *js->scratch))
		return LSIM_ENOMEM;
	double *jct = js->scratch, *q = js->scratch + n;
	size_t nf = 0;
	lsim_time end = js->last_end;
	o->n_jobs = n;
	for (size_t i = 0; i < n; i++) {
		switch (r[i].status) {
		case LSIM_JOB_FINISHED:
			jct[nf] = lsim_time_to_s(r[i].finish - r[i].arrival);
			q[nf] = lsim_time_to_s(r[i].queued);
			nf++;
			o->n_finished++;
			break;
		case LSIM_JOB_REJECTED:
			o->n_rejected++;
			break;
		default:
			o->n_unfinished++;
			if (lsim_jobs_now(js) > end)
				end = lsim_jobs_now(js);
			break;
		}
		o->alloc_gpu_s += r[i].alloc_gpu_s;
		o->useful_gpu_s += r[i].useful_gpu_s;
		o->lost_gpu_s += r[i].lost_gpu_s;
		o->overhead_gpu_s += r[i].overhead_gpu_s;
		o->lost_iterations += r[i].lost_iterations;
		o->restarts += r[i].restarts;
		o->failures += r[i].failures;
		o->preemptions += r[i].preemptions;
		o->resizes += r[i].resizes;
		o->cost += r[i].cost;
	}
	quantiles(jct, nf, &o->jct_mean_s, &o->jct_p50_s, &o->jct_p90_s,
		  &o->jct_p99_s);
	quantiles(q, nf, &o->queue_mean_s, &o->queue_p50_s, &o->queue_p90_s,
		  &o->queue_p99_s);
	if (js->any_arrival && end > js->first_arrival) {
		o->makespan_s = lsim_time_to_s(end - js->first_arrival);
		lsim_jobs_accrue_lent(js);
		int32_t total = 0;
		for (int32_t t = 0; t < js->n_types; t++)
			total += js->types[t].total;
		double cap = total * o->makespan_s -
			     (js->lent_gpu_s - js->lent_before_jobs);
		o->capacity_gpu_s = cap > 0 ? cap : 0;
	}
	if (o->capacity_gpu_s > 0) {
		o->util_alloc = o->alloc_gpu_s / o->capacity_gpu_s;
		o->util_useful = o->useful_gpu_s / o->capacity_gpu_s;
	}
	o->events = lsim_events_processed(js->eng) - js->events0;
	return 0;
}
