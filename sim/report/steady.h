/*
 * steady.h - steady-state analysis of a finished run, for capacity search
 * (docs/sweeps.md, "Capacity search"): the warm-up removed by MSER-5, a
 * stability test on the backlog over the measured window, and the summary
 * recomputed over the requests that arrived after the warm-up.
 */
#ifndef LLMSIM_STEADY_H
#define LLMSIM_STEADY_H

#include <stdbool.h>
#include <stddef.h>

#include "report/report.h"

/*
 * MSER-5 (White 1997; Franklin & White 2008): y[0..n-1] in batches of 5,
 * batch means Z_1..Z_m (m = n / 5); the truncation d in [0, m/2] that
 * minimises sum_{j>d} (Z_j - mean(Z_{d+1..m}))^2 / (m - d)^2. Returns the
 * first observation kept (5 d); *at_limit says the minimum fell on m/2,
 * i.e. the run is too short (or never settles) for the rule to apply.
 * With fewer than 10 batches nothing is truncated and *at_limit is true.
 */
size_t lsim_mser5(const double *y, size_t n, bool *at_limit);

/*
 * A trend test on y[0..n-1]: 10 batch means of equal size regressed on
 * their index (least squares). *growth is the fitted rise over the window
 * (slope x 9 batches); *t is the slope over its standard error. The series
 * trends up when t > 1.860 (one-sided 5%, 8 degrees of freedom) and the
 * rise exceeds max(1, 20% of the series' mean). Needs n >= 20.
 */
bool lsim_trend_up(const double *y, size_t n, double *growth, double *t);

/* What the analysis found. */
struct lsim_steady {
	size_t n;	   /* requests in the run */
	size_t warmup;	   /* of which the first (by arrival) dropped */
	double warmup_s;   /* the arrival time of the first one kept */
	bool settled;	   /* MSER-5 found its cut in the first half */
	bool growing;	   /* the backlog trends up over the kept window */
	double growth;	   /* its fitted rise over the window (requests) */
	double trend_t;	   /* its t statistic */
	double unfinished; /* requests left unfinished (or stalled) */
	bool stable;	   /* settled, not growing, nothing unfinished */
	struct lsim_summary summary; /* over the requests kept */
};

/*
 * Analyses res: the backlog (requests in the system, at each arrival, in
 * arrival order) is the series; MSER-5 cuts its warm-up, the trend test
 * judges the rest; the summary is recomputed over the requests that
 * arrived at or after the cut (instances and energy as in the whole run).
 * Returns 0 or a negative LSIM_E* code.
 */
int lsim_steady_analyse(const struct lsim_results *res, struct lsim_steady *out);

/*
 * Overloaded instances: for each instance, its waiting queue (requests
 * routed to it and not yet scheduled: arrival <= t < first_scheduled)
 * at the end of each of 100 equal slices of the arrival window (first to
 * last arrival), MSER-5 on that series, then the trend test on what
 * follows the cut (the rise also at least 10 requests, so that a few
 * queued requests' jitter is not a trend). An instance whose queue grows
 * through the run is overloaded: its latencies depend on how long the
 * run lasts. Streams the records twice; memory per instance.
 */
struct lsim_overload {
	int32_t n;	 /* instances overloaded */
	int32_t worst;	 /* the one whose queue rose most, or -1 */
	double from, to; /* its fitted queue at the start and end of its window */
};

int lsim_overload_scan(const struct lsim_results *res, struct lsim_overload *out);

#endif
