/*
 * trace_tool.c - `llmsim trace stats` and `llmsim trace convert`: one pass
 * over a trace of any recognised format. Statistics keep the token counts
 * (4 bytes each) for exact percentiles and the inter-arrival moments in
 * running sums; conversion writes the generic CSV under a temporary name.
 */
#include <errno.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_tool.h"
#include "workload.h"

static int open_any(const char *path, struct lsim_workload **w, char *format,
		    size_t fsize, struct lsim_diag *d)
{
	const char *fmt = NULL;
	struct lsim_csv_map map;
	int rc = lsim_workload_detect(path, &fmt, &map, d);
	if (rc != 0)
		return rc;
	snprintf(format, fsize, "%s", fmt);
	return strcmp(fmt, "jsonl") == 0 ? lsim_workload_jsonl_open(path, w, d)
					 : lsim_workload_csv_open(path, &map, w, d);
}

static void len_stats(double *v, size_t n, struct lsim_len_stats *o)
{
	memset(o, 0, sizeof *o);
	if (n == 0)
		return;
	gsl_sort(v, 1, n);
	o->mean = gsl_stats_mean(v, 1, n);
	o->p50 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.5);
	o->p90 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.9);
	o->p99 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.99);
	o->max = v[n - 1];
}

int lsim_trace_stats(const char *path, struct lsim_trace_stats *out,
		     struct lsim_diag *d)
{
	memset(out, 0, sizeof *out);
	struct lsim_workload *w = NULL;
	int rc = open_any(path, &w, out->format, sizeof out->format, d);
	if (rc != 0)
		return rc;
	double *pl = NULL, *ol = NULL;
	size_t n = 0, cap = 0;
	double sum = 0, sumsq = 0;
	lsim_time first = 0, prev = 0;
	struct lsim_req_spec r;
	for (;;) {
		memset(&r, 0, sizeof r);
		rc = lsim_workload_next(w, &r, d);
		if (rc <= 0)
			break;
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			double *a = realloc(pl, cap * sizeof *a);
			double *b = a ? realloc(ol, cap * sizeof *b) : NULL;
			if (a)
				pl = a;
			if (b)
				ol = b;
			if (!a || !b) {
				rc = lsim_diag_set(d, LSIM_ENOMEM, path, 0, 0, "",
						   "out of memory");
				break;
			}
		}
		if (n == 0) {
			first = r.arrival;
		} else {
			double gap = lsim_time_to_s(r.arrival - prev);
			sum += gap;
			sumsq += gap * gap;
		}
		prev = r.arrival;
		pl[n] = r.prompt_tokens;
		ol[n] = r.output_tokens;
		out->with_hashes += r.n_hashes > 0;
		n++;
	}
	lsim_workload_destroy(w);
	if (rc == 0) {
		out->rows = n;
		out->span_s = lsim_time_to_s(prev - first);
		if (out->span_s > 0)
			out->rate_per_s = (double)(n - 1) / out->span_s;
		if (n > 2 && sum > 0) {
			double m = sum / (double)(n - 1);
			double var = sumsq / (double)(n - 1) - m * m;
			out->interarrival_cv = var > 0 ? sqrt(var) / m : 0;
		}
		len_stats(pl, n, &out->prompt);
		len_stats(ol, n, &out->output);
	}
	free(pl);
	free(ol);
	return rc;
}

static void len_json(struct lsim_buf *b, const char *name,
		     const struct lsim_len_stats *s)
{
	lsim_buf_printf(b, "\"%s\": {\"mean\": %.3f, \"p50\": %.1f, \"p90\": %.1f, "
			   "\"p99\": %.1f, \"max\": %.0f}",
			name, s->mean, s->p50, s->p90, s->p99, s->max);
}

void lsim_trace_stats_format(const struct lsim_trace_stats *s, bool json,
			     struct lsim_buf *b)
{
	if (json) {
		lsim_buf_printf(b, "{\"format\": \"%s\", \"rows\": %zu, \"span_s\": %.6f, "
				   "\"rate_per_s\": %.6f, \"interarrival_cv\": %.4f, "
				   "\"rows_with_prefix_hashes\": %zu, ",
				s->format, s->rows, s->span_s, s->rate_per_s,
				s->interarrival_cv, s->with_hashes);
		len_json(b, "prompt_tokens", &s->prompt);
		lsim_buf_printf(b, ", ");
		len_json(b, "output_tokens", &s->output);
		lsim_buf_printf(b, "}\n");
		return;
	}
	lsim_buf_printf(b, "format            %s\nrows              %zu\n"
			   "span              %.3f s\nmean rate         %.4f req/s\n"
			   "inter-arrival CV  %.3f\nwith prefix ids   %zu\n",
			s->format, s->rows, s->span_s, s->rate_per_s,
			s->interarrival_cv, s->with_hashes);
	const struct lsim_len_stats *l[2] = {&s->prompt, &s->output};
	static const char *const names[2] = {"prompt tokens", "output tokens"};
	for (int i = 0; i < 2; i++)
		lsim_buf_printf(b, "%-17s mean %.1f  p50 %.0f  p90 %.0f  p99 %.0f  max %.0f\n",
				names[i], l[i]->mean, l[i]->p50, l[i]->p90, l[i]->p99,
				l[i]->max);
}

int lsim_trace_convert(const char *path, const char *out, size_t *rows,
		       struct lsim_diag *d)
{
	char format[32];
	struct lsim_workload *w = NULL;
	int rc = open_any(path, &w, format, sizeof format, d);
	if (rc != 0)
		return rc;
	size_t len = strlen(out) + 5;
	char *tmp = malloc(len);
	FILE *f = tmp ? (snprintf(tmp, len, "%s.tmp", out), fopen(tmp, "w")) : NULL;
	if (!f) {
		rc = lsim_diag_set(d, LSIM_EIO, out, 0, 0, "-o", "cannot create: %s",
				   strerror(errno));
		lsim_workload_destroy(w);
		free(tmp);
		return rc;
	}
	fputs("arrival_s,prompt_tokens,output_tokens,hash_ids\n", f);
	size_t n = 0;
	struct lsim_req_spec r;
	for (;;) {
		memset(&r, 0, sizeof r);
		rc = lsim_workload_next(w, &r, d);
		if (rc <= 0)
			break;
		/* exact: ns as seconds with 9 decimals */
		fprintf(f, "%lld.%09lld,%d,%d,", (long long)(r.arrival / LSIM_S),
			(long long)(r.arrival % LSIM_S), r.prompt_tokens,
			r.output_tokens);
		for (int32_t i = 0; i < r.n_hashes; i++)
			fprintf(f, "%s%llu", i ? " " : "", (unsigned long long)r.hashes[i]);
		fputc('\n', f);
		n++;
	}
	lsim_workload_destroy(w);
	int bad = ferror(f);
	if (fclose(f) != 0 || bad)
		rc = rc ? rc : lsim_diag_set(d, LSIM_EIO, out, 0, 0, "-o",
					     "cannot write: %s", strerror(errno));
	if (rc == 0 && rename(tmp, out) != 0)
		rc = lsim_diag_set(d, LSIM_EIO, out, 0, 0, "-o", "cannot rename: %s",
				   strerror(errno));
	if (rc != 0)
		remove(tmp);
	free(tmp);
	*rows = n;
	return rc;
}
