/*
 * trace_tool.c - `llmsim trace stats` and `llmsim trace convert`: one pass
 * over a trace of any recognised format. Statistics cover the whole
 * trace and, per tenant, each file of several (merged in time order) or
 * each value of a CSV column (--by); they keep the token counts (4 bytes
 * each) for exact percentiles and the inter-arrival moments in running
 * sums. Conversion writes the generic CSV under a temporary name.
 */
#include <errno.h>
#include <gsl/gsl_sort_int.h>
#include <gsl/gsl_statistics_int.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/infile.h"
#include "cli/trace_tool.h"
#include "workload.h"

static int open_any(const char *path, const char *by,
		    struct lsim_workload **w, char *format, size_t fsize,
		    struct lsim_diag *d)
{
	const char *fmt = NULL;
	struct lsim_csv_map map;
	int rc = lsim_workload_detect(path, &fmt, &map, d);
	if (rc != 0)
		return rc;
	snprintf(format, fsize, "%s", fmt);
	if (strcmp(fmt, "jsonl") == 0) {
		if (by)
			return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, "--by",
					     "--by groups by a CSV column; this trace is JSONL");
		return lsim_workload_jsonl_open(path, w, d);
	}
	map.tenant_col = by;
	rc = lsim_workload_csv_open(path, &map, w, d);
	if (rc != 0 && by && d && strcmp(d->key, "workload.tenant_column") == 0)
		snprintf(d->key, sizeof d->key, "--by");
	return rc;
}

/* One group's rows: token counts kept (4 bytes each) for exact
 * percentiles, inter-arrival moments in running sums. */
struct acc {
	int32_t *pl, *ol;
	size_t n, cap;
	double sum, sumsq;
	lsim_time first, prev;
	size_t with_hashes;
};

static int acc_add(struct acc *a, const struct lsim_req_spec *r)
{
	if (a->n == a->cap) {
		size_t c = a->cap ? a->cap * 2 : 1024;
		int32_t *p = realloc(a->pl, c * sizeof *p);
		if (p)
			a->pl = p;
		int32_t *o = p ? realloc(a->ol, c * sizeof *o) : NULL;
		if (o)
			a->ol = o;
		if (!p || !o)
			return LSIM_ENOMEM;
		a->cap = c;
	}
	if (a->n == 0) {
		a->first = r->arrival;
	} else {
		double gap = lsim_time_to_s(r->arrival - a->prev);
		a->sum += gap;
		a->sumsq += gap * gap;
	}
	a->prev = r->arrival;
	a->pl[a->n] = r->prompt_tokens;
	a->ol[a->n] = r->output_tokens;
	a->with_hashes += r->n_hashes > 0;
	a->n++;
	return 0;
}

static void len_stats(int32_t *v, size_t n, struct lsim_len_stats *o)
{
	memset(o, 0, sizeof *o);
	if (n == 0)
		return;
	gsl_sort_int(v, 1, n);
	o->mean = gsl_stats_int_mean(v, 1, n);
	o->p50 = gsl_stats_int_quantile_from_sorted_data(v, 1, n, 0.5);
	o->p90 = gsl_stats_int_quantile_from_sorted_data(v, 1, n, 0.9);
	o->p99 = gsl_stats_int_quantile_from_sorted_data(v, 1, n, 0.99);
	o->max = v[n - 1];
}

/* Fills the figures of one group and frees its arrays. */
static void acc_finish(struct acc *a, struct lsim_trace_group *g)
{
	size_t n = a->n;
	g->rows = n;
	g->span_s = n ? lsim_time_to_s(a->prev - a->first) : 0;
	if (g->span_s > 0)
		g->rate_per_s = (double)(n - 1) / g->span_s;
	if (n > 2 && a->sum > 0) {
		double m = a->sum / (double)(n - 1);
		double var = a->sumsq / (double)(n - 1) - m * m;
		g->interarrival_cv = var > 0 ? sqrt(var) / m : 0;
	}
	g->with_hashes = a->with_hashes;
	len_stats(a->pl, n, &g->prompt);
	len_stats(a->ol, n, &g->output);
	free(a->pl);
	free(a->ol);
	memset(a, 0, sizeof *a);
}

#define MAX_GROUPS 4096

/* The group of a row: its file (several files) or its --by value. */
static int group_of(struct lsim_trace_stats *out, struct acc **accs,
		    const struct lsim_req_spec *r, const char *by, size_t *k,
		    struct lsim_diag *d)
{
	char label[sizeof out->groups[0].label];
	if (by)
		snprintf(label, sizeof label, "%s", r->tenant_label ? r->tenant_label : "");
	for (size_t i = 0; i < out->n_groups; i++)
		if (by ? strcmp(out->groups[i].label, label) == 0
		       : out->groups[i].tenant == r->tenant) {
			*k = i;
			return 0;
		}
	if (out->n_groups == MAX_GROUPS)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "--by",
				     "column %s has more than %d distinct values; group by a "
				     "tenant-like column", by, MAX_GROUPS);
	size_t n = out->n_groups + 1;
	struct lsim_trace_group *g = realloc(out->groups, n * sizeof *g);
	if (g)
		out->groups = g;
	struct acc *a = g ? realloc(*accs, n * sizeof *a) : NULL;
	if (a)
		*accs = a;
	if (!g || !a)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	memset(&g[n - 1], 0, sizeof *g);
	memset(&a[n - 1], 0, sizeof *a);
	g[n - 1].tenant = r->tenant;
	if (by)
		snprintf(g[n - 1].label, sizeof g[n - 1].label, "%s", label);
	*k = out->n_groups++;
	return 0;
}

int lsim_trace_stats(const char *const *paths, size_t n_paths, const char *by,
		     struct lsim_trace_stats *out, struct lsim_diag *d)
{
	memset(out, 0, sizeof *out);
	if (n_paths == 0)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "", "no trace given");
	struct lsim_workload **srcs = calloc(n_paths, sizeof *srcs);
	if (!srcs)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	int rc = 0;
	for (size_t i = 0; i < n_paths && rc == 0; i++) {
		char fmt[32];
		rc = open_any(paths[i], by, &srcs[i], fmt, sizeof fmt, d);
		if (rc == 0 && i == 0)
			snprintf(out->format, sizeof out->format, "%s", fmt);
		else if (rc == 0 && strcmp(out->format, fmt) != 0)
			snprintf(out->format, sizeof out->format, "mixed");
	}
	struct lsim_workload *w = NULL;
	if (rc == 0 && n_paths == 1) {
		w = srcs[0];
		srcs[0] = NULL;
	} else if (rc == 0) {
		rc = lsim_workload_merge_create(srcs, n_paths, true, &w, d);
		if (rc == 0)
			memset(srcs, 0, n_paths * sizeof *srcs); /* owned by w */
	}
	for (size_t i = 0; i < n_paths; i++)
		lsim_workload_destroy(srcs[i]);
	free(srcs);
	struct acc all = {0}, *accs = NULL;
	bool grouped = by || n_paths > 1;
	struct lsim_req_spec r;
	while (rc == 0) {
		memset(&r, 0, sizeof r);
		rc = lsim_workload_next(w, &r, d);
		if (rc <= 0)
			break;
		size_t k = 0;
		rc = grouped ? group_of(out, &accs, &r, by, &k, d) : 0;
		if (rc == 0)
			rc = acc_add(&all, &r);
		if (rc == 0 && grouped)
			rc = acc_add(&accs[k], &r);
		if (rc == LSIM_ENOMEM)
			lsim_diag_set(d, rc, paths[0], 0, 0, "", "out of memory");
	}
	lsim_workload_destroy(w);
	if (rc == 0) {
		struct lsim_trace_group total;
		acc_finish(&all, &total);
		out->rows = total.rows;
		out->span_s = total.span_s;
		out->rate_per_s = total.rate_per_s;
		out->interarrival_cv = total.interarrival_cv;
		out->with_hashes = total.with_hashes;
		out->prompt = total.prompt;
		out->output = total.output;
		for (size_t i = 0; i < out->n_groups; i++) {
			acc_finish(&accs[i], &out->groups[i]);
			if (!by)
				snprintf(out->groups[i].label, sizeof out->groups[i].label,
					 "%s", paths[out->groups[i].tenant]);
		}
	}
	free(all.pl);
	free(all.ol);
	for (size_t i = 0; accs && i < out->n_groups; i++) {
		free(accs[i].pl);
		free(accs[i].ol);
	}
	free(accs);
	if (rc != 0)
		lsim_trace_stats_release(out);
	return rc;
}

void lsim_trace_stats_release(struct lsim_trace_stats *s)
{
	free(s->groups);
	s->groups = NULL;
	s->n_groups = 0;
}

static void len_json(struct lsim_buf *b, const char *name,
		     const struct lsim_len_stats *s)
{
	lsim_buf_printf(b, "\"%s\": {\"mean\": %.3f, \"p50\": %.1f, \"p90\": %.1f, "
			   "\"p99\": %.1f, \"max\": %.0f}",
			name, s->mean, s->p50, s->p90, s->p99, s->max);
}

/* A JSON string: the label escaped. */
static void json_str(struct lsim_buf *b, const char *s)
{
	lsim_buf_printf(b, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			lsim_buf_printf(b, "\\%c", c);
		else if (c < 0x20)
			lsim_buf_printf(b, "\\u%04x", c);
		else
			lsim_buf_printf(b, "%c", c);
	}
	lsim_buf_printf(b, "\"");
}

static void group_json(struct lsim_buf *b, const struct lsim_trace_group *g)
{
	lsim_buf_printf(b, "\"rows\": %zu, \"span_s\": %.6f, \"rate_per_s\": %.6f, "
			   "\"interarrival_cv\": %.4f, \"rows_with_prefix_hashes\": %zu, ",
			g->rows, g->span_s, g->rate_per_s, g->interarrival_cv,
			g->with_hashes);
	len_json(b, "prompt_tokens", &g->prompt);
	lsim_buf_printf(b, ", ");
	len_json(b, "output_tokens", &g->output);
}

static void group_text(struct lsim_buf *b, const struct lsim_trace_group *g,
		       const char *indent)
{
	lsim_buf_printf(b, "%srows              %zu\n"
			   "%sspan              %.3f s\n%smean rate         %.4f req/s\n"
			   "%sinter-arrival CV  %.3f\n%swith prefix ids   %zu\n",
			indent, g->rows, indent, g->span_s, indent, g->rate_per_s,
			indent, g->interarrival_cv, indent, g->with_hashes);
	const struct lsim_len_stats *l[2] = {&g->prompt, &g->output};
	static const char *const names[2] = {"prompt tokens", "output tokens"};
	for (int i = 0; i < 2; i++)
		lsim_buf_printf(b, "%s%-17s mean %.1f  p50 %.0f  p90 %.0f  p99 %.0f  max %.0f\n",
				indent, names[i], l[i]->mean, l[i]->p50, l[i]->p90,
				l[i]->p99, l[i]->max);
}

void lsim_trace_stats_format(const struct lsim_trace_stats *s, bool json,
			     struct lsim_buf *b)
{
	struct lsim_trace_group total = {
		.rows = s->rows, .span_s = s->span_s, .rate_per_s = s->rate_per_s,
		.interarrival_cv = s->interarrival_cv, .with_hashes = s->with_hashes,
		.prompt = s->prompt, .output = s->output,
	};
	if (json) {
		lsim_buf_printf(b, "{\"format\": \"%s\", ", s->format);
		group_json(b, &total);
		if (s->n_groups > 0) {
			lsim_buf_printf(b, ", \"tenants\": [");
			for (size_t i = 0; i < s->n_groups; i++) {
				lsim_buf_printf(b, "%s{\"tenant\": ", i ? ", " : "");
				json_str(b, s->groups[i].label);
				lsim_buf_printf(b, ", ");
				group_json(b, &s->groups[i]);
				lsim_buf_printf(b, "}");
			}
			lsim_buf_printf(b, "]");
		}
		lsim_buf_printf(b, "}\n");
		return;
	}
	lsim_buf_printf(b, "format            %s\n", s->format);
	group_text(b, &total, "");
	for (size_t i = 0; i < s->n_groups; i++) {
		lsim_buf_printf(b, "tenant %s\n", s->groups[i].label);
		group_text(b, &s->groups[i], "  ");
	}
}

int lsim_trace_convert(const char *path, const char *out, size_t *rows,
		       struct lsim_diag *d)
{
	struct stat st;
	if (stat(out, &st) == 0 && S_ISDIR(st.st_mode))
		return lsim_diag_set(d, LSIM_EINVAL, out, 0, 0, "-o",
				     "is a folder: give the name of the CSV file to write");
	/* never written through a link, nor over a device (-o /dev/full
	 * left a regular file in its place) */
	int trc = lsim_check_output(out, "-o", d);
	if (trc != 0)
		return trc;
	char format[32];
	struct lsim_workload *w = NULL;
	int rc = open_any(path, NULL, &w, format, sizeof format, d);
	if (rc != 0)
		return rc;
	size_t len = strlen(out) + 5;
	char *tmp = malloc(len);
	FILE *f = tmp ? (snprintf(tmp, len, "%s.tmp", out), fopen(tmp, "w")) : NULL;
	if (!f) {
		rc = lsim_diag_set(d, tmp ? LSIM_EINVAL : LSIM_ENOMEM, out, 0, 0, "-o",
				   "cannot create: %s", strerror(errno));
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
	int bad = fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0;
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
