/*
 * summary.c - the run summary: request counts by status, makespan,
 * throughput, TTFT/TPOT/E2E means and percentiles (GSL), queue wait, and
 * instance totals (utilisation, energy, cost). The definitions are the
 * ones documented in docs/output.md. The request records are streamed:
 * one pass for the totals, then one latency column in memory at a time.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_statistics_double.h>

#include "report/report.h"

/*
 * Sorting a latency column. gsl_sort is a heapsort, and for 10^6 values
 * and more its random accesses made it 7% of an end-to-end run. Sorted is
 * sorted: any correct sort gives the same array, so the mean and
 * percentiles GSL computes from it are the same. This one is an in-place
 * radix sort (American flag sort: the most significant byte first, each
 * bucket then on its own, insertion sort below 64 values) on the IEEE bit
 * patterns made to order as the numbers do (for a positive double set the
 * sign bit, for a negative one flip every bit). No memory beyond x; NaNs
 * have no place (latencies have none); -0 sorts before +0.
 */
static uint64_t order_key(double v)
{
	uint64_t u;
	memcpy(&u, &v, sizeof u);
	return u ^ ((uint64_t)((int64_t)u >> 63) | UINT64_C(1) << 63);
}

static int digit(double v, int shift)
{
	return (int)((order_key(v) >> shift) & 255);
}

static void flag_sort(double *a, size_t n, int shift)
{
	if (n < 64) {
		for (size_t i = 1; i < n; i++) {
			double v = a[i];
			uint64_t kv = order_key(v);
			size_t j = i;
			for (; j > 0 && order_key(a[j - 1]) > kv; j--)
				a[j] = a[j - 1];
			a[j] = v;
		}
		return;
	}
	size_t count[256] = {0}, start[256], next[256];
	for (size_t i = 0; i < n; i++)
		count[digit(a[i], shift)]++;
	size_t at = 0;
	for (int d = 0; d < 256; d++) {
		start[d] = next[d] = at;
		at += count[d];
	}
	for (int d = 0; d < 256; d++) {
		size_t end = start[d] + count[d];
		while (next[d] < end) { /* place a[next[d]], and what it displaces */
			double v = a[next[d]];
			int b = digit(v, shift);
			while (b != d) {
				double w = a[next[b]];
				a[next[b]++] = v;
				v = w;
				b = digit(v, shift);
			}
			a[next[d]++] = v;
		}
	}
	if (shift > 0)
		for (int d = 0; d < 256; d++)
			if (count[d] > 1)
				flag_sort(a + start[d], count[d], shift - 8);
}

void lsim_sort_doubles(double *x, size_t n)
{
	flag_sort(x, n, 56);
}

/* Mean and percentiles of one latency: sorts x in place. */
struct dist {
	double *mean, *p50, *p90, *p95, *p99;
};

static void fill_dist(double *x, size_t n, struct dist out)
{
	/* no request has it (none completed, or none with a second token):
	 * undefined, not 0 s, which would meet every latency bound */
	if (n == 0) {
		*out.mean = *out.p50 = *out.p90 = *out.p95 = *out.p99 = NAN;
		return;
	}
	lsim_sort_doubles(x, n);
	*out.mean = gsl_stats_mean(x, 1, n);
	*out.p50 = gsl_stats_quantile_from_sorted_data(x, 1, n, 0.50);
	*out.p90 = gsl_stats_quantile_from_sorted_data(x, 1, n, 0.90);
	*out.p95 = gsl_stats_quantile_from_sorted_data(x, 1, n, 0.95);
	*out.p99 = gsl_stats_quantile_from_sorted_data(x, 1, n, 0.99);
}

/* The time an instance held its GPUs: provisioning to stop. */
static double held_time(const struct lsim_inst_record *in)
{
	return in->stop > in->start ? in->stop - in->start : 0.0;
}

void lsim_inst_record_rates(struct lsim_inst_record *o, double peak_flops,
			    double peak_bw)
{
	double t = held_time(o), pp = o->pp > 1 ? o->pp : 1;
	bool model = peak_flops > 0 && peak_bw > 0;
	o->gpu_util = o->gpu_busy = 0.0;
	o->mfu = o->mbu = model ? 0.0 : NAN;
	if (t <= 0)
		return;
	double gpu_time = t * o->tp * pp;
	o->gpu_util = o->work_s * o->tp / gpu_time;
	o->gpu_busy = o->busy_s / t;
	if (model) {
		o->mfu = o->model_flops / (gpu_time * peak_flops);
		o->mbu = o->hbm_bytes / (gpu_time * peak_bw);
	}
}

/* Pass 1 over the records: counts, makespan, tokens, SLO, queue wait. */
struct totals {
	struct lsim_summary *s;
	size_t seen;
	double first_arrival, last_finish, out_tokens, met, judged;
	size_t n_ttft, n_tpot, n_e2e, n_wait;
	long double wait_mean; /* gsl_stats_mean's recurrence, streamed */
};

static int add_totals(void *ctx, const struct lsim_req_record *q)
{
	struct totals *t = ctx;
	struct lsim_summary *s = t->s;
	if (t->seen++ == 0 || q->arrival < t->first_arrival)
		t->first_arrival = q->arrival;
	s->preemptions += q->preemptions;
	t->met += q->slo_met == 1 ? 1.0 : 0.0;
	t->judged += q->slo_met >= 0 ? 1.0 : 0.0; /* its class declares an SLO */
	switch (q->status) {
	case LSIM_REQ_FINISHED:
		if (s->completed == 0.0 || q->finish > t->last_finish)
			t->last_finish = q->finish;
		s->completed += 1.0;
		t->out_tokens += q->output_tokens;
		t->n_e2e++;
		if (q->first_token >= 0.0) {
			t->n_ttft++;
			t->n_tpot += q->output_tokens > 1;
		}
		if (q->first_scheduled >= 0.0) {
			double x = q->first_scheduled - q->arrival;
			t->wait_mean += (x - t->wait_mean) / (long double)++t->n_wait;
		}
		break;
	case LSIM_REQ_REJECTED: s->rejected += 1.0; break;
	case LSIM_REQ_FAILED: s->failed += 1.0; break;
	default: s->unfinished += 1.0; break;
	}
	return 0;
}

/* One latency of every finished request that has it, gathered in order. */
enum latency { TTFT, TPOT, E2E };
struct column {
	enum latency which;
	double *x;
	size_t n;
};

static int add_latency(void *ctx, const struct lsim_req_record *q)
{
	struct column *c = ctx;
	if (q->status != LSIM_REQ_FINISHED)
		return 0;
	switch (c->which) {
	case TTFT:
		if (q->first_token >= 0.0)
			c->x[c->n++] = q->first_token - q->arrival;
		break;
	case TPOT:
		if (q->first_token >= 0.0 && q->output_tokens > 1)
			c->x[c->n++] = (q->finish - q->first_token) /
				       (double)(q->output_tokens - 1);
		break;
	case E2E: c->x[c->n++] = q->finish - q->arrival; break;
	}
	return 0;
}

/* Loads one latency column (n values) and fills its mean and percentiles:
 * one column in memory at a time, whatever the length of the run. */
static int latency_dist(const struct lsim_results *r, enum latency which,
			size_t n, struct dist out)
{
	struct column c = {.which = which};
	if (n > 0 && !(c.x = malloc(n * sizeof *c.x)))
		return LSIM_ENOMEM;
	int rc = lsim_results_each_req(r, add_latency, &c);
	if (rc == 0 && c.n != n)
		rc = LSIM_ESTATE; /* the records changed between passes */
	if (rc == 0)
		fill_dist(c.x, n, out);
	free(c.x);
	return rc;
}

int lsim_summary_compute(struct lsim_results *r)
{
	if (!r || (r->n_reqs > 0 && !r->reqs && !r->req_store) ||
	    (r->n_insts > 0 && !r->insts))
		return LSIM_EINVAL;
	struct lsim_summary *s = &r->summary;
	/* set by the caller: keep */
	double sim_events = s->sim_events, skipped = s->trace_lines_skipped;
	double zero_output = s->trace_zero_output;
#define LSIM_X_ZERO(name, unit, help) s->name = 0.0;
	LSIM_SUMMARY_FIELDS(LSIM_X_ZERO)
#undef LSIM_X_ZERO
	s->sim_events = sim_events;
	s->trace_lines_skipped = skipped;
	s->trace_zero_output = zero_output;

	struct totals t = {.s = s};
	int rc = lsim_results_each_req(r, add_totals, &t);
	if (rc != 0)
		return rc;
	size_t n = r->n_reqs;
	s->requests = (double)n;
	if (s->completed > 0.0 && t.last_finish > t.first_arrival) {
		s->makespan_s = t.last_finish - t.first_arrival;
		s->throughput_rps = s->completed / s->makespan_s;
		s->output_tokens_per_s = t.out_tokens / s->makespan_s;
		s->goodput_rps = t.met / s->makespan_s;
	}
	/* attainment only against declared SLOs: NaN when no request's class
	 * declares a target */
	if (t.judged > 0)
		s->slo_attainment = t.met / t.judged;
	else
		s->slo_attainment = s->goodput_rps = NAN;
	s->queue_wait_mean_s = t.n_wait > 0 ? (double)t.wait_mean : NAN;

	/* Latency distributions over completed requests. */
	rc = latency_dist(r, TTFT, t.n_ttft,
			  (struct dist){&s->ttft_mean_s, &s->ttft_p50_s,
					&s->ttft_p90_s, &s->ttft_p95_s,
					&s->ttft_p99_s});
	if (rc == 0)
		rc = latency_dist(r, TPOT, t.n_tpot,
				  (struct dist){&s->tpot_mean_s, &s->tpot_p50_s,
						&s->tpot_p90_s, &s->tpot_p95_s,
						&s->tpot_p99_s});
	if (rc == 0)
		rc = latency_dist(r, E2E, t.n_e2e,
				  (struct dist){&s->e2e_mean_s, &s->e2e_p50_s,
						&s->e2e_p90_s, &s->e2e_p95_s,
						&s->e2e_p99_s});
	if (rc != 0)
		return rc;

	/* Instances: over the GPU-time they held, their work, busy time,
	 * model FLOPs and bytes (mfu and mbu: the instances' own, weighted
	 * by their GPU-time, over those with a model); energy and cost. */
	double busy = 0.0, work = 0.0, held = 0.0, admitted = 0.0, hits = 0.0;
	double mfu = 0.0, mbu = 0.0, held_model = 0.0;
	for (size_t i = 0; i < r->n_insts; i++) {
		const struct lsim_inst_record *in = &r->insts[i];
		double gpus = (double)in->tp * (in->pp > 1 ? in->pp : 1);
		double h = held_time(in);
		busy += in->busy_s * gpus;
		work += in->work_s * in->tp;
		held += h * gpus;
		if (h > 0 && !isnan(in->mfu)) {
			mfu += in->mfu * h * gpus;
			mbu += in->mbu * h * gpus;
			held_model += h * gpus;
		}
		s->energy_j += in->energy_j;
		s->carbon_kg += in->carbon_g / 1000.0;
		s->cost_usd += in->cost_usd;
		admitted += (double)in->prompt_tokens;
		hits += (double)in->prefix_hit_tokens;
	}
	if (admitted > 0.0)
		s->prefix_hit_rate = hits / admitted;
	if (held > 0.0) {
		s->gpu_util = work / held;
		s->gpu_busy = busy / held;
	}
	if (held_model > 0.0) {
		s->mfu = mfu / held_model;
		s->mbu = mbu / held_model;
	} else if (held > 0.0) {
		s->mfu = s->mbu = NAN; /* GPU-time, none of it with a model */
	}
	if (t.out_tokens > 0.0)
		s->cost_per_mtok_usd = s->cost_usd / t.out_tokens * 1e6;
	s->energy_kwh = s->energy_j / 3.6e6;
	return 0;
}
