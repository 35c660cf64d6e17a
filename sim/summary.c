/*
 * summary.c - the run summary: request counts by status, makespan,
 * throughput, TTFT/TPOT/E2E means and percentiles (GSL), queue wait, and
 * instance totals (utilisation, energy, cost). The definitions are the
 * ones documented in docs/output.md.
 */
#include <stdlib.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "report.h"

/* Mean and percentiles of one latency: sorts x in place. */
struct dist {
	double *mean, *p50, *p90, *p95, *p99;
};

static void fill_dist(double *x, size_t n, struct dist out)
{
	if (n == 0) {
		*out.mean = *out.p50 = *out.p90 = *out.p95 = *out.p99 = 0.0;
		return;
	}
	gsl_sort(x, 1, n);
	*out.mean = gsl_stats_mean(x, 1, n);
	*out.p50 = gsl_stats_quantile_from_sorted_data(x, 1, n, 0.50);
	*out.p90 = gsl_stats_quantile_from_sorted_data(x, 1, n, 0.90);
	*out.p95 = gsl_stats_quantile_from_sorted_data(x, 1, n, 0.95);
	*out.p99 = gsl_stats_quantile_from_sorted_data(x, 1, n, 0.99);
}

int lsim_summary_compute(struct lsim_results *r)
{
	if (!r || (r->n_reqs > 0 && !r->reqs) || (r->n_insts > 0 && !r->insts))
		return LSIM_EINVAL;
	struct lsim_summary *s = &r->summary;
	double sim_events = s->sim_events; /* set by the caller: keep */
	double skipped = s->trace_lines_skipped;
#define LSIM_X_ZERO(name, unit, help) s->name = 0.0;
	LSIM_SUMMARY_FIELDS(LSIM_X_ZERO)
#undef LSIM_X_ZERO
	s->sim_events = sim_events;
	s->trace_lines_skipped = skipped;

	size_t n = r->n_reqs;
	double *buf = NULL;
	if (n > 0) {
		buf = malloc(n * sizeof *buf);
		if (!buf)
			return LSIM_ENOMEM;
	}

	/* Counts, makespan, tokens, preemptions. */
	double first_arrival = 0.0, last_finish = 0.0, out_tokens = 0.0;
	for (size_t i = 0; i < n; i++) {
		const struct lsim_req_record *q = &r->reqs[i];
		if (i == 0 || q->arrival < first_arrival)
			first_arrival = q->arrival;
		s->preemptions += q->preemptions;
		switch (q->status) {
		case LSIM_REQ_FINISHED:
			if (s->completed == 0.0 || q->finish > last_finish)
				last_finish = q->finish;
			s->completed += 1.0;
			out_tokens += q->output_tokens;
			break;
		case LSIM_REQ_REJECTED: s->rejected += 1.0; break;
		case LSIM_REQ_FAILED: s->failed += 1.0; break;
		default: s->unfinished += 1.0; break;
		}
	}
	s->requests = (double)n;
	double met = 0.0;
	for (size_t i = 0; i < n; i++)
		met += r->reqs[i].slo_met ? 1.0 : 0.0;
	if (n > 0)
		s->slo_attainment = met / (double)n;
	if (s->completed > 0.0 && last_finish > first_arrival) {
		s->makespan_s = last_finish - first_arrival;
		s->throughput_rps = s->completed / s->makespan_s;
		s->output_tokens_per_s = out_tokens / s->makespan_s;
		s->goodput_rps = met / s->makespan_s;
	}

	/* Latency distributions over completed requests. */
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct lsim_req_record *q = &r->reqs[i];
		if (q->status == LSIM_REQ_FINISHED && q->first_token >= 0.0)
			buf[k++] = q->first_token - q->arrival;
	}
	fill_dist(buf, k, (struct dist){&s->ttft_mean_s, &s->ttft_p50_s,
					&s->ttft_p90_s, &s->ttft_p95_s,
					&s->ttft_p99_s});
	k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct lsim_req_record *q = &r->reqs[i];
		if (q->status == LSIM_REQ_FINISHED && q->first_token >= 0.0 &&
		    q->output_tokens > 1)
			buf[k++] = (q->finish - q->first_token) /
				   (double)(q->output_tokens - 1);
	}
	fill_dist(buf, k, (struct dist){&s->tpot_mean_s, &s->tpot_p50_s,
					&s->tpot_p90_s, &s->tpot_p95_s,
					&s->tpot_p99_s});
	k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct lsim_req_record *q = &r->reqs[i];
		if (q->status == LSIM_REQ_FINISHED)
			buf[k++] = q->finish - q->arrival;
	}
	fill_dist(buf, k, (struct dist){&s->e2e_mean_s, &s->e2e_p50_s,
					&s->e2e_p90_s, &s->e2e_p95_s,
					&s->e2e_p99_s});
	k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct lsim_req_record *q = &r->reqs[i];
		if (q->status == LSIM_REQ_FINISHED && q->first_scheduled >= 0.0)
			buf[k++] = q->first_scheduled - q->arrival;
	}
	if (k > 0)
		s->queue_wait_mean_s = gsl_stats_mean(buf, 1, k);
	free(buf);

	/* Instances: GPU-weighted busy fraction, energy and cost. */
	double busy = 0.0, life = 0.0, admitted = 0.0, hits = 0.0;
	for (size_t i = 0; i < r->n_insts; i++) {
		const struct lsim_inst_record *in = &r->insts[i];
		busy += in->busy_s * in->tp;
		if (in->stop > in->ready)
			life += (in->stop - in->ready) * in->tp;
		s->energy_j += in->energy_j;
		s->cost_usd += in->cost_usd;
		admitted += (double)in->prompt_tokens;
		hits += (double)in->prefix_hit_tokens;
	}
	if (admitted > 0.0)
		s->prefix_hit_rate = hits / admitted;
	if (life > 0.0)
		s->gpu_util = busy / life;
	return 0;
}
