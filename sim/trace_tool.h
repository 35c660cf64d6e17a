/*
 * trace_tool.h - `llmsim trace`: statistics of a trace file and conversion
 * to the generic CSV layout, streaming through the trace readers.
 */
#ifndef LLMSIM_TRACE_TOOL_H
#define LLMSIM_TRACE_TOOL_H

#include <stddef.h>

#include "config.h"

struct lsim_len_stats {
	double mean, p50, p90, p99, max;
};

struct lsim_trace_stats {
	char format[32];
	size_t rows;
	double span_s;	     /* last arrival - first arrival */
	double rate_per_s;   /* (rows - 1) / span */
	double interarrival_cv;
	struct lsim_len_stats prompt, output;
	size_t with_hashes;  /* rows carrying prefix-block ids */
};

int lsim_trace_stats(const char *path, struct lsim_trace_stats *out,
		     struct lsim_diag *d);
/* Text (json false) or one JSON object into b. */
void lsim_trace_stats_format(const struct lsim_trace_stats *s, bool json,
			     struct lsim_buf *b);
/* Writes arrival_s,prompt_tokens,output_tokens[,hash_ids] (via out.tmp). */
int lsim_trace_convert(const char *path, const char *out, size_t *rows,
		       struct lsim_diag *d);

#endif
