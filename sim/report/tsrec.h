/*
 * tsrec.h - the recorder of a stored time series (/timeseries,
 * /link_timeseries, /job_timeseries): it takes the rows of each periodic
 * sample, stores them run-length encoded where the table asks for it, and
 * keeps at most a given number of rows (output.timeseries_rows) by
 * coarsening the stored series in place: the recorded period doubles and
 * consecutive pairs of recorded periods are merged (docs/output.md).
 *
 * A table describes its rows through lsim_tsrec_ops. The rows of one
 * sample ascend strictly in their key (instance or link id); a key absent
 * from a sample counts as 0 in the averaged columns for that fine period.
 */
#ifndef LLMSIM_TSREC_H
#define LLMSIM_TSREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llmsim/llmsim.h"

struct lsim_tsrec_ops {
	size_t size; /* of a row */
	/* Run-length encode: a recorded period whose rows equal the run's
	 * before it (but for t) extends that run; a run is written as its
	 * first and last recorded period. */
	bool rle;
	int32_t (*key)(const void *row);
	bool (*same)(const void *a, const void *b); /* equal but for t */
	/* out = a over wa fine periods followed by b over wb: averaged
	 * columns (a x wa + b x wb) / (wa + wb), a missing row's as 0; point
	 * columns and the key from b, or from a where b is NULL. Never both
	 * NULL. */
	void (*mix)(void *out, const void *a, double wa, const void *b, double wb);
	void (*set_t)(void *row, double t);
};

/* The three stored series of a run (report.h's rows): /timeseries
 * (run-length encoded; gpu_busy, power_w, arrival_rate and gpu_util
 * averaged, kv_util, queue_len and running the last sample's),
 * /link_timeseries (one row per link that carried something; util
 * averaged) and /job_timeseries (run-length encoded; every column the last
 * sample's). */
extern const struct lsim_tsrec_ops lsim_tsrec_instances;
extern const struct lsim_tsrec_ops lsim_tsrec_links;
extern const struct lsim_tsrec_ops lsim_tsrec_pool;

struct lsim_tsrec;

/* period: the sample period (samples fall at its multiples); cap: rows kept
 * at most (0: no cap). NULL if memory runs out. */
struct lsim_tsrec *lsim_tsrec_create(const struct lsim_tsrec_ops *ops,
				     lsim_time period, uint64_t cap);
void lsim_tsrec_destroy(struct lsim_tsrec *r); /* accepts NULL */

/* The n rows of the sample at now. LSIM_ENOMEM; LSIM_ERANGE when the rows
 * of a single recorded period exceed the cap (a cap too small for the
 * table); LSIM_EINVAL when the keys do not ascend. */
int lsim_tsrec_add(struct lsim_tsrec *r, lsim_time now, const void *rows, size_t n);

/* Ends the series (the last recorded period may be partial: its t is the
 * last sample's) and gives its rows, valid until lsim_tsrec_destroy, and the
 * recorded period in seconds. A second call gives the same. */
int lsim_tsrec_finish(struct lsim_tsrec *r, const void **rows, size_t *n,
		      double *period_s);

/* Rows the table has now as written (at most the cap), and the sample
 * periods in a recorded one. */
uint64_t lsim_tsrec_rows(const struct lsim_tsrec *r);
uint64_t lsim_tsrec_factor(const struct lsim_tsrec *r);

#endif
