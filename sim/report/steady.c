/*
 * steady.c - steady-state analysis of a finished run (steady.h): the
 * backlog at each arrival, MSER-5 warm-up truncation, a batch-means trend
 * test for stability, and the summary over the requests kept.
 */
#include "report/steady.h"

#include <gsl/gsl_fit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llmsim/llmsim.h"

size_t lsim_mser5(const double *y, size_t n, bool *at_limit)
{
	size_t m = n / 5;
	*at_limit = true;
	if (m < 10)
		return 0;
	/* sums over the tail Z_{d+1..m}, from the end: the statistic of every
	 * d in one pass (sum of squares about the mean = S2 - S1^2 / k); each
	 * batch mean is formed as the pass reaches it, so nothing is
	 * allocated */
	size_t half = m / 2, best = half;
	double s1 = 0, s2 = 0, best_v = INFINITY;
	for (size_t d = m; d-- > 0;) {
		double z = 0;
		for (size_t k = 0; k < 5; k++)
			z += y[5 * d + k];
		z /= 5.0;
		s1 += z;
		s2 += z * z;
		if (d > half)
			continue;
		double k = (double)(m - d);
		double ss = s2 - s1 * s1 / k;
		double v = (ss > 0 ? ss : 0) / (k * k);
		if (v <= best_v) { /* ties: the smaller truncation */
			best_v = v;
			best = d;
		}
	}
	*at_limit = best == half;
	return 5 * best;
}

bool lsim_trend_up(const double *y, size_t n, double *growth, double *t)
{
	*growth = 0;
	*t = 0;
	if (n < 20)
		return false;
	double x[10], z[10], mean = 0;
	for (size_t b = 0; b < 10; b++) {
		size_t lo = n * b / 10, hi = n * (b + 1) / 10;
		double s = 0;
		for (size_t i = lo; i < hi; i++)
			s += y[i];
		x[b] = (double)b;
		z[b] = s / (double)(hi - lo);
		mean += z[b] / 10.0;
	}
	double c0, c1, cov00, cov01, cov11, sumsq;
	gsl_fit_linear(x, 1, z, 1, 10, &c0, &c1, &cov00, &cov01, &cov11, &sumsq);
	*growth = 9.0 * c1;
	if (c1 > 0)
		*t = cov11 > 0 ? c1 / sqrt(cov11) : INFINITY;
	double floor = 0.2 * fabs(mean);
	return *t > 1.860 && *growth > (floor > 1 ? floor : 1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int lsim_steady_analyse(const struct lsim_results *res, struct lsim_steady *out)
{
	memset(out, 0, sizeof *out);
	size_t n = res->n_reqs;
	out->n = n;
	struct lsim_req_record *q = n ? malloc(n * sizeof *q) : NULL;
	double *ends = n ? malloc(n * sizeof *ends) : NULL;
	double *backlog = n ? malloc(n * sizeof *backlog) : NULL;
	if (n && (!q || !ends || !backlog)) {
		free(q);
		free(ends);
		free(backlog);
		return LSIM_ENOMEM;
	}
	int rc = n ? lsim_results_read_reqs(res, 0, n, q) : 0;
	if (rc == 0) {
		/* requests in the system at each arrival: those arrived before
		 * it less those ended by then (unfinished ones never end) */
		for (size_t i = 0; i < n; i++) {
			bool ended = q[i].status == LSIM_REQ_FINISHED ||
				     q[i].status == LSIM_REQ_REJECTED ||
				     q[i].status == LSIM_REQ_FAILED;
			ends[i] = ended ? q[i].finish : INFINITY;
			out->unfinished += !ended;
		}
		qsort(ends, n, sizeof *ends, cmp_double);
		size_t e = 0;
		for (size_t i = 0; i < n; i++) {
			while (e < n && ends[e] <= q[i].arrival)
				e++;
			backlog[i] = i > e ? (double)(i - e) : 0.0;
		}
		bool at_limit = true;
		size_t cut = lsim_mser5(backlog, n, &at_limit);
		out->warmup = cut;
		out->warmup_s = cut < n ? q[cut].arrival : 0.0;
		out->settled = !at_limit;
		out->growing = lsim_trend_up(backlog + cut, n - cut, &out->growth,
					     &out->trend_t);
		out->stable = out->settled && !out->growing && out->unfinished == 0;

		struct lsim_results kept = *res;
		kept.req_store = NULL;
		kept.reqs = q + cut;
		kept.n_reqs = n - cut;
		memset(&kept.summary, 0, sizeof kept.summary);
		rc = lsim_summary_compute(&kept);
		out->summary = kept.summary;
	}
	free(q);
	free(ends);
	free(backlog);
	return rc;
}

/* ---- overloaded instances ---- */

#define OVL_BINS 100

struct ovl_pass {
	double t0, width;
	size_t n_insts;
	int32_t *in, *out; /* per instance x bin: requests queued, scheduled */
};

static size_t ovl_bin(const struct ovl_pass *p, double t)
{
	double b = p->width > 0 ? (t - p->t0) / p->width : 0;
	return b <= 0 ? 0 : b >= OVL_BINS - 1 ? OVL_BINS - 1 : (size_t)b;
}

static int ovl_add(void *ctx, const struct lsim_req_record *q)
{
	struct ovl_pass *p = ctx;
	if (q->instance < 0 || (size_t)q->instance >= p->n_insts)
		return 0;
	size_t row = (size_t)q->instance * OVL_BINS;
	p->in[row + ovl_bin(p, q->arrival)]++;
	/* left the queue: scheduled, or ended without being scheduled */
	double left = q->first_scheduled >= 0 ? q->first_scheduled
		      : q->status != LSIM_REQ_UNFINISHED ? q->finish : INFINITY;
	if (left <= p->t0 + p->width * OVL_BINS)
		p->out[row + ovl_bin(p, left)]++;
	return 0;
}

int lsim_overload_scan(const struct lsim_results *res, struct lsim_overload *out)
{
	out->n = 0;
	out->worst = -1;
	out->from = out->to = 0;
	size_t n = res->n_reqs;
	if (n < 2 || res->n_insts == 0)
		return 0;
	struct lsim_req_record first, last;
	int rc = lsim_results_read_reqs(res, 0, 1, &first);
	if (rc == 0)
		rc = lsim_results_read_reqs(res, n - 1, 1, &last);
	if (rc != 0)
		return rc;
	struct ovl_pass p = {.t0 = first.arrival, .width = (last.arrival - first.arrival) / OVL_BINS,
			     .n_insts = res->n_insts};
	if (!(p.width > 0))
		return 0;
	p.in = calloc(res->n_insts * OVL_BINS, sizeof *p.in);
	p.out = calloc(res->n_insts * OVL_BINS, sizeof *p.out);
	if (!p.in || !p.out) {
		free(p.in);
		free(p.out);
		return LSIM_ENOMEM;
	}
	rc = lsim_results_each_req(res, ovl_add, &p);
	double worst_rise = 0;
	for (size_t i = 0; rc == 0 && i < res->n_insts; i++) {
		double y[OVL_BINS], queued = 0;
		for (size_t b = 0; b < OVL_BINS; b++) {
			queued += p.in[i * OVL_BINS + b] - p.out[i * OVL_BINS + b];
			y[b] = queued;
		}
		bool at_limit;
		size_t cut = lsim_mser5(y, OVL_BINS, &at_limit);
		double growth, t;
		if (!lsim_trend_up(y + cut, OVL_BINS - cut, &growth, &t) || growth < 10)
			continue;
		out->n++;
		if (growth > worst_rise) {
			worst_rise = growth;
			out->worst = (int32_t)i;
			/* the fitted line's ends: mean -/+ half the rise */
			double mean = 0;
			for (size_t b = cut; b < OVL_BINS; b++)
				mean += y[b] / (double)(OVL_BINS - cut);
			out->from = mean - growth / 2;
			out->to = mean + growth / 2;
		}
	}
	free(p.in);
	free(p.out);
	return rc;
}
