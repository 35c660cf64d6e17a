/*
 * trace_tool.h - `llmsim trace`: statistics of a trace file and conversion
 * to the generic CSV layout, streaming through the trace readers.
 */
#ifndef LLMSIM_TRACE_TOOL_H
#define LLMSIM_TRACE_TOOL_H

#include <stddef.h>
#include <stdint.h>

#include "kernel/config.h"

struct lsim_len_stats {
	double mean, p50, p90, p99, max;
};

/* The figures of one tenant. */
struct lsim_trace_group {
	char label[128];     /* the file (several files) or the --by value */
	int32_t tenant;	     /* position of its file */
	size_t rows;
	double span_s;
	double rate_per_s;
	double interarrival_cv;
	struct lsim_len_stats prompt, output;
	size_t with_hashes;
};

struct lsim_trace_stats {
	char format[32];     /* of the first file; "mixed" if they differ */
	size_t rows;
	double span_s;	     /* last arrival - first arrival */
	double rate_per_s;   /* (rows - 1) / span */
	double interarrival_cv;
	struct lsim_len_stats prompt, output;
	size_t with_hashes;  /* rows carrying prefix-block ids */
	/* per tenant: each file when several are given (merged as
	 * workload.traces merges them), else each value of column `by` */
	struct lsim_trace_group *groups;
	size_t n_groups;
};

/* Statistics of one trace, or of several merged as tenants; by: a CSV
 * column whose values name tenants (NULL: none). Release the result. */
int lsim_trace_stats(const char *const *paths, size_t n_paths, const char *by,
		     struct lsim_trace_stats *out, struct lsim_diag *d);
void lsim_trace_stats_release(struct lsim_trace_stats *s);
/* Text (json false) or one JSON object into b. */
void lsim_trace_stats_format(const struct lsim_trace_stats *s, bool json,
			     struct lsim_buf *b);
/* Writes arrival_s,prompt_tokens,output_tokens[,hash_ids] (via out.tmp). */
int lsim_trace_convert(const char *path, const char *out, size_t *rows,
		       struct lsim_diag *d);

#endif
