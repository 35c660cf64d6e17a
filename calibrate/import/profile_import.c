/*
 * profile_import.c - `llmsim profile import` (published measurements ->
 * the table backend's per-layer CSVs, or per-iteration tables) and
 * `llmsim profile compare` (roofline prediction vs a measured table).
 *
 * Import reads every source row into one list of records keyed by (file,
 * tp, operator, keys), collapses duplicate keys (mean; the median of the
 * repeated runs for Splitwise, with GSL), writes the files into a staging
 * folder inside the output folder, loads every per-layer tp folder through
 * the table backend as a check, and then renames the files into place.
 * The mapping of each source onto the table layout is in docs/profiles.md.
 *
 * Compare reads per-layer times from a table by creating it with 1 and 2
 * decoder layers (the difference is one layer, the rest is the
 * once-per-iteration part) and does the same with the roofline backend, so
 * both sides come from the simulator's own code. With --fit-tp it first
 * fits a serving stack's launch latency and GEMM efficiency to a
 * per-iteration table (lsim_fit_overheads; method in docs/perf-model.md).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "kernel/csv.h"
#include "cluster/hw.h"
#include "serving/perf.h"
#include "cli/cli.h"
#include "import/profile_import.h"

#define PATH_LEN 1024
#define NAME_LEN 48
#define MAX_LABELS 16

static int nomem(struct lsim_diag *d, const char *what)
{
	return lsim_diag_set(d, LSIM_ENOMEM, what ? what : "", 0, 0, "", "out of memory");
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* buf = a/b; false when it does not fit. */
static bool pjoin(char *buf, size_t size, const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	if (na + 1 + nb >= size) {
		if (size)
			buf[0] = '\0';
		return false;
	}
	memcpy(buf, a, na);
	buf[na] = '/';
	memcpy(buf + na + 1, b, nb + 1);
	return true;
}

/* buf = dir/tp<N>/file; false when it does not fit. */
static bool tp_path(char *buf, size_t size, const char *dir, int tp, const char *file)
{
	char rel[96];
	int n = snprintf(rel, sizeof rel, "tp%d/%s", tp, file);
	return n > 0 && (size_t)n < sizeof rel && pjoin(buf, size, dir, rel);
}

/* mkdir -p; 0 or -1 with errno set. */
/* Removes a folder tree this module created (files and sub-folders). */
static void remove_tree(const char *path)
{
	DIR *dh = opendir(path);
	if (dh) {
		for (struct dirent *e; (e = readdir(dh)) != NULL;) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			char sub[PATH_LEN];
			if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= (int)sizeof sub)
				continue;
			if (is_dir(sub))
				remove_tree(sub);
			else
				unlink(sub);
		}
		closedir(dh);
	}
	rmdir(path);
}

/* The tp<N> sub-folders of dir, ascending; returns how many (at most max). */
static int list_tp_dirs(const char *dir, const char *must_hold, int *tp, int max)
{
	int n = 0;
	DIR *dh = opendir(dir);
	if (!dh)
		return 0;
	for (struct dirent *e; (e = readdir(dh)) != NULL;) {
		const char *s = e->d_name;
		if (strncmp(s, "tp", 2) != 0 || s[2] < '1' || s[2] > '9')
			continue;
		char *end;
		long v = strtol(s + 2, &end, 10);
		if (*end || v < 1 || v > 4096 || n >= max)
			continue;
		char p[PATH_LEN];
		if (snprintf(p, sizeof p, "%s/%s/%s", dir, s, must_hold) >= (int)sizeof p || !is_file(p))
			continue;
		tp[n++] = (int)v;
	}
	closedir(dh);
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && tp[j - 1] > tp[j]; j--) {
			int t = tp[j];
			tp[j] = tp[j - 1];
			tp[j - 1] = t;
		}
	return n;
}

static void int_list(char *buf, size_t size, const int *v, int n)
{
	size_t at = 0;
	buf[0] = '\0';
	for (int i = 0; i < n && at < size; i++)
		at += (size_t)snprintf(buf + at, size - at, "%s%d", i ? ", " : "", v[i]);
}

/* ------------------------------------------------------------------ */
/* CSV fields                                                          */
/* ------------------------------------------------------------------ */

/* Next data row with trimmed fields: 1, 0 at the end, or an error. */
static int next_row(struct lsim_csv *c, struct lsim_diag *d)
{
	int rc = lsim_csv_next(c, d);
	if (rc <= 0)
		return rc;
	int nf = lsim_csv_fields(c), nh = lsim_csv_columns(c);
	if (nf != nh)
		return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(c), lsim_csv_line(c),
				     lsim_csv_field_col(c, nf < nh ? nf - 1 : nh), "",
				     "%d fields where the header has %d", nf, nh);
	for (int i = 0; i < nf; i++)
		lsim_csv_field_trim(c, i);
	return 1;
}

/*
 * Field col as a finite number >= lo (an integer when asked). Errors name
 * the file, the row's line, the field's byte column and the column name.
 */
static int num_field(const struct lsim_csv *c, int col, double lo, bool integer, double *out,
		     struct lsim_diag *d)
{
	const char *s = lsim_csv_field(c, col), *name = lsim_csv_name(c, col);
	int line = lsim_csv_line(c), bcol = lsim_csv_field_col(c, col);
	char *end = NULL;
	errno = 0;
	double v = s ? strtod(s, &end) : 0.0;
	if (!s || !s[0] || end == s || *end || errno == ERANGE || !isfinite(v))
		return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(c), line, bcol, name,
				     "'%s' is not a number", s ? s : "");
	if (integer && (v != floor(v) || fabs(v) > 4.0e15))
		return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(c), line, bcol, name,
				     "'%s' is not an integer", s);
	if (v < lo)
		return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(c), line, bcol, name,
				     "%s is below %g", s, lo);
	*out = v;
	return 0;
}

/* An optional time field: empty -> 0 (Vidur leaves a kernel it did not run empty). */
static int opt_num_field(const struct lsim_csv *c, int col, double *out, struct lsim_diag *d)
{
	*out = 0.0;
	if (col < 0)
		return 0;
	const char *s = lsim_csv_field(c, col);
	if (!s || !s[0])
		return 0;
	return num_field(c, col, 0.0, false, out, d);
}

static int bool_field(const struct lsim_csv *c, int col, bool *out, struct lsim_diag *d)
{
	const char *s = lsim_csv_field(c, col);
	if (s && (!strcasecmp(s, "true") || !strcmp(s, "1"))) {
		*out = true;
		return 0;
	}
	if (s && (!strcasecmp(s, "false") || !strcmp(s, "0"))) {
		*out = false;
		return 0;
	}
	return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(c), lsim_csv_line(c),
			     lsim_csv_field_col(c, col), lsim_csv_name(c, col),
			     "'%s' is not True or False", s ? s : "");
}

static int no_rows(const struct lsim_csv *c, struct lsim_diag *d)
{
	return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(c), lsim_csv_line(c), 0, "",
			     "no data rows");
}

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */

enum rec_kind {
	REC_DENSE,  /* tp<N>/dense.csv: layer,tokens,time_us */
	REC_SEQ,    /* tp<N>/per_sequence.csv: layer,sequences,time_us */
	REC_ATTN,   /* tp<N>/attention.csv: prefill_chunk,kv_prefill,n_decode,kv_decode,time_us */
	REC_AR_TP,  /* tp<N>/allreduce.csv: bytes,time_us */
	REC_NET_AR, /* network/all_reduce.csv: num_workers,devices_per_node,bytes,time_us */
	REC_NET_SR, /* network/send_recv.csv: same columns */
	REC_ITER,   /* tp<N>/iteration.csv: batch_size,prompt_tokens,output_tokens,prompt_us,token_us,runs */
	N_REC_KINDS
};

static const char *const rec_file[N_REC_KINDS] = {
	"dense.csv", "per_sequence.csv", "attention.csv", "allreduce.csv",
	"network/all_reduce.csv", "network/send_recv.csv", "iteration.csv",
};

static const char *const rec_header[N_REC_KINDS] = {
	"layer,tokens,time_us",
	"layer,sequences,time_us",
	"prefill_chunk,kv_prefill,n_decode,kv_decode,time_us",
	"bytes,time_us",
	"num_workers,devices_per_node,bytes,time_us",
	"num_workers,devices_per_node,bytes,time_us",
	"batch_size,prompt_tokens,output_tokens,prompt_us,token_us,runs",
};

static bool rec_per_tp(int kind)
{
	return kind != REC_NET_AR && kind != REC_NET_SR;
}

struct rec {
	int kind, tp;
	char name[NAME_LEN];
	double k[4];
	double v[2]; /* microseconds */
};

struct recs {
	struct rec *a;
	size_t n, cap;
};

static struct rec *rec_push(struct recs *rs, int kind, int tp, const char *name,
			    struct lsim_diag *d)
{
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 1024;
		struct rec *na = realloc(rs->a, cap * sizeof *na);
		if (!na) {
			nomem(d, "records");
			return NULL;
		}
		rs->a = na;
		rs->cap = cap;
	}
	struct rec *r = &rs->a[rs->n++];
	memset(r, 0, sizeof *r);
	r->kind = kind;
	r->tp = tp;
	snprintf(r->name, sizeof r->name, "%s", name ? name : "");
	return r;
}

static int rec_cmp(const void *pa, const void *pb)
{
	const struct rec *a = pa, *b = pb;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->tp != b->tp)
		return a->tp < b->tp ? -1 : 1;
	int c = strcmp(a->name, b->name);
	if (c)
		return c;
	for (int i = 0; i < 4; i++)
		if (a->k[i] != b->k[i])
			return a->k[i] < b->k[i] ? -1 : 1;
	return 0;
}

static bool same_key(const struct rec *a, const struct rec *b)
{
	return a->kind == b->kind && a->tp == b->tp && !strcmp(a->name, b->name) &&
	       !memcmp(a->k, b->k, sizeof a->k);
}

static bool same_file(const struct rec *a, const struct rec *b)
{
	return a->kind == b->kind && (!rec_per_tp(a->kind) || a->tp == b->tp);
}

/* ------------------------------------------------------------------ */
/* Staging: files written inside outdir, renamed into place at the end  */
/* ------------------------------------------------------------------ */

struct stage {
	const char *outdir;
	char dir[PATH_LEN];
	struct lsim_import_result *r;
};

static int stage_path(const struct stage *st, const char *rel, char *buf, size_t size,
		      struct lsim_diag *d)
{
	if (snprintf(buf, size, "%s/%s", st->dir, rel) >= (int)size)
		return lsim_diag_set(d, LSIM_EINVAL, st->outdir, 0, 0, "-o", "path too long");
	return 0;
}

/* Opens staging/rel for writing and records rel among the files written. */
static int stage_open(struct stage *st, const char *rel, FILE **out, struct lsim_diag *d)
{
	char path[PATH_LEN];
	int rc = stage_path(st, rel, path, sizeof path, d);
	if (rc)
		return rc;
	struct lsim_import_result *r = st->r;
	if (r->n_files >= LSIM_IMPORT_MAX_FILES || strlen(rel) >= sizeof r->files[0])
		return lsim_diag_set(d, LSIM_EINVAL, st->outdir, 0, 0, "-o",
				     "too many output files (at most %d)", LSIM_IMPORT_MAX_FILES);
	char parent[PATH_LEN];
	snprintf(parent, sizeof parent, "%s", path);
	char *slash = strrchr(parent, '/');
	if (slash) {
		*slash = '\0';
		if (lsim_cli_make_dirs(parent) != 0)
			return lsim_diag_set(d, LSIM_EIO, parent, 0, 0, "-o", "cannot create: %s",
					     strerror(errno));
	}
	FILE *f = fopen(path, "w");
	if (!f)
		return lsim_diag_set(d, LSIM_EIO, path, 0, 0, "-o", "cannot write: %s",
				     strerror(errno));
	snprintf(r->files[r->n_files++], sizeof r->files[0], "%s", rel);
	*out = f;
	return 0;
}

static int stage_close(FILE *f, const char *rel, struct lsim_diag *d)
{
	bool bad = ferror(f) != 0;
	if (fclose(f) != 0 || bad)
		return lsim_diag_set(d, LSIM_EIO, rel, 0, 0, "-o", "write failed");
	return 0;
}

/* Renames every staged file into outdir, then removes the staging folder. */
static int stage_commit(struct stage *st, struct lsim_diag *d)
{
	int rc = 0;
	for (int i = 0; i < st->r->n_files && rc == 0; i++) {
		const char *rel = st->r->files[i];
		char from[PATH_LEN], to[PATH_LEN], parent[PATH_LEN];
		pjoin(from, sizeof from, st->dir, rel);
		if (snprintf(to, sizeof to, "%s/%s", st->outdir, rel) >= (int)sizeof to) {
			rc = lsim_diag_set(d, LSIM_EINVAL, st->outdir, 0, 0, "-o", "path too long");
			break;
		}
		snprintf(parent, sizeof parent, "%s", to);
		char *slash = strrchr(parent, '/');
		if (slash)
			*slash = '\0';
		if (lsim_cli_make_dirs(parent) != 0)
			rc = lsim_diag_set(d, LSIM_EIO, parent, 0, 0, "-o", "cannot create: %s",
					   strerror(errno));
		else if (rename(from, to) != 0)
			rc = lsim_diag_set(d, LSIM_EIO, to, 0, 0, "-o", "cannot rename: %s",
					   strerror(errno));
	}
	remove_tree(st->dir);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Writing the records                                                 */
/* ------------------------------------------------------------------ */

static double agg_mean(double *v, size_t n)
{
	return gsl_stats_mean(v, 1, n);
}

static double agg_median(double *v, size_t n)
{
	gsl_sort(v, 1, n);
	return gsl_stats_median_from_sorted_data(v, 1, n);
}

/*
 * Writes one file per (kind, tp) into the staging folder. Records with the
 * same key are collapsed: the mean of their values, or (median = true) the
 * median of the runs, as Splitwise repeats every configuration.
 */
static int write_records(struct stage *st, struct recs *rs, bool median, struct lsim_diag *d)
{
	qsort(rs->a, rs->n, sizeof *rs->a, rec_cmp);
	double *buf0 = malloc((rs->n ? rs->n : 1) * sizeof *buf0);
	double *buf1 = malloc((rs->n ? rs->n : 1) * sizeof *buf1);
	if (!buf0 || !buf1) {
		free(buf0);
		free(buf1);
		return nomem(d, "records");
	}
	int rc = 0;
	FILE *f = NULL;
	char rel[96] = "";
	for (size_t i = 0; i < rs->n && rc == 0;) {
		const struct rec *r = &rs->a[i];
		if (i == 0 || !same_file(r, &rs->a[i - 1])) {
			if (f && (rc = stage_close(f, rel, d)) != 0) {
				f = NULL;
				break;
			}
			f = NULL;
			if (rec_per_tp(r->kind))
				snprintf(rel, sizeof rel, "tp%d/%s", r->tp, rec_file[r->kind]);
			else
				snprintf(rel, sizeof rel, "%s", rec_file[r->kind]);
			if ((rc = stage_open(st, rel, &f, d)) != 0)
				break;
			fprintf(f, "%s\n", rec_header[r->kind]);
		}
		size_t j = i;
		while (j < rs->n && same_key(&rs->a[j], r)) {
			buf0[j - i] = rs->a[j].v[0];
			buf1[j - i] = rs->a[j].v[1];
			j++;
		}
		size_t m = j - i;
		double v0 = median ? agg_median(buf0, m) : agg_mean(buf0, m);
		double v1 = median ? agg_median(buf1, m) : agg_mean(buf1, m);
		switch (r->kind) {
		case REC_DENSE:
		case REC_SEQ:
			fprintf(f, "%s,%.0f,%.3f\n", r->name, r->k[0], v0);
			break;
		case REC_ATTN:
			fprintf(f, "%.0f,%.0f,%.0f,%.0f,%.3f\n", r->k[0], r->k[1], r->k[2], r->k[3], v0);
			break;
		case REC_AR_TP:
			fprintf(f, "%.0f,%.3f\n", r->k[0], v0);
			break;
		case REC_NET_AR:
		case REC_NET_SR:
			fprintf(f, "%.0f,%.0f,%.0f,%.3f\n", r->k[0], r->k[1], r->k[2], v0);
			break;
		default:
			fprintf(f, "%.0f,%.0f,%.0f,%.3f,%.3f,%zu\n", r->k[0], r->k[1], r->k[2], v0,
				v1, m);
			break;
		}
		i = j;
	}
	if (f) {
		int rc2 = stage_close(f, rel, d);
		if (rc == 0)
			rc = rc2;
	}
	free(buf0);
	free(buf1);
	return rc;
}

/* Adds tp to the result's sorted list of degrees. */
static void result_add_tp(struct lsim_import_result *r, int tp)
{
	for (int i = 0; i < r->n_tp; i++)
		if (r->tp[i] == tp)
			return;
	if (r->n_tp >= LSIM_IMPORT_MAX_TP)
		return;
	int at = r->n_tp++;
	while (at > 0 && r->tp[at - 1] > tp) {
		r->tp[at] = r->tp[at - 1];
		at--;
	}
	r->tp[at] = tp;
}

static void note_add(struct lsim_import_result *r, const char *text)
{
	size_t n = strlen(r->note);
	if (n + 3 >= sizeof r->note)
		return;
	snprintf(r->note + n, sizeof r->note - n, "%s%s", n ? "; " : "", text);
}

/*
 * Keeps only the records of degree tp (when tp > 0) and fills r->tp from
 * what is left; LSIM_ENOENT when the source has no row of that degree.
 */
static int select_tp(struct recs *rs, int tp, struct lsim_import_result *r, const char *src,
		     struct lsim_diag *d)
{
	int have[LSIM_IMPORT_MAX_TP], n_have = 0;
	size_t m = 0;
	for (size_t i = 0; i < rs->n; i++) {
		const struct rec *x = &rs->a[i];
		if (rec_per_tp(x->kind)) {
			bool seen = false;
			for (int k = 0; k < n_have; k++)
				seen = seen || have[k] == x->tp;
			if (!seen && n_have < LSIM_IMPORT_MAX_TP)
				have[n_have++] = x->tp;
			if (tp > 0 && x->tp != tp)
				continue;
		}
		rs->a[m++] = *x;
	}
	rs->n = m;
	for (size_t i = 0; i < rs->n; i++)
		if (rec_per_tp(rs->a[i].kind))
			result_add_tp(r, rs->a[i].tp);
	if (tp > 0 && r->n_tp == 0 && n_have > 0) {
		for (int i = 1; i < n_have; i++)
			for (int j = i; j > 0 && have[j - 1] > have[j]; j--) {
				int t = have[j];
				have[j] = have[j - 1];
				have[j - 1] = t;
			}
		char list[128];
		int_list(list, sizeof list, have, n_have);
		return lsim_diag_set(d, LSIM_ENOENT, src, 0, 0, "--tp",
				     "no rows for tensor-parallel degree %d (the source has %s)", tp,
				     list);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* LLMServingSim                                                       */
/* ------------------------------------------------------------------ */

/* The v0 profiler's layers.csv: layer_name,input,kv_cache,tp_size,latency(ns). */
static int read_lss_v0(const char *path, struct recs *rs, size_t *rows, struct lsim_diag *d)
{
	struct lsim_csv *c = NULL;
	int rc = lsim_csv_open(path, &c, d);
	if (rc)
		return rc;
	const char *names[4] = {"layer_name", "input", "tp_size", "latency(ns)"};
	int col[4];
	rc = lsim_csv_require(c, names, 4, col, d);
	int kv_col = lsim_csv_column(c, "kv_cache");
	size_t n = 0;
	while (rc == 0) {
		int got = next_row(c, d);
		if (got <= 0) {
			rc = got;
			break;
		}
		const char *layer = lsim_csv_field(c, col[0]);
		if (!layer[0] || strlen(layer) >= NAME_LEN) {
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, lsim_csv_line(c),
					   lsim_csv_field_col(c, col[0]), "layer_name",
					   "empty or longer than %d characters", NAME_LEN - 1);
			break;
		}
		double input, kv = 0.0, tp, ns;
		if ((rc = num_field(c, col[1], 1.0, true, &input, d)) != 0 ||
		    (kv_col >= 0 && (rc = num_field(c, kv_col, 0.0, true, &kv, d)) != 0) ||
		    (rc = num_field(c, col[2], 1.0, true, &tp, d)) != 0 ||
		    (rc = num_field(c, col[3], 0.0, false, &ns, d)) != 0)
			break;
		if (tp > 4096) {
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, lsim_csv_line(c),
					   lsim_csv_field_col(c, col[2]), "tp_size",
					   "%g is not a tensor-parallel degree", tp);
			break;
		}
		struct rec *r;
		if (!strcmp(layer, "attn")) {
			/* prefill attention of `input` tokens after kv_cache cached ones */
			r = rec_push(rs, REC_ATTN, (int)tp, "", d);
			if (r) {
				r->k[0] = input;
				r->k[1] = kv;
			}
		} else if (!strcmp(layer, "lm_head")) {
			/* the v0 profile runs lm_head on `input` rows: one per sequence in vLLM */
			r = rec_push(rs, REC_SEQ, (int)tp, layer, d);
			if (r)
				r->k[0] = input;
		} else {
			r = rec_push(rs, REC_DENSE, (int)tp, layer, d);
			if (r)
				r->k[0] = input;
		}
		if (!r) {
			rc = LSIM_ENOMEM;
			break;
		}
		r->v[0] = ns / 1000.0;
		n++;
	}
	if (rc == 0 && n == 0)
		rc = no_rows(c, d);
	lsim_csv_close(c);
	*rows += n;
	return rc;
}

static int copy_file(const char *from, FILE *to, struct lsim_diag *d)
{
	FILE *f = fopen(from, "rb");
	if (!f)
		return lsim_diag_set(d, LSIM_EIO, from, 0, 0, "", "cannot open: %s", strerror(errno));
	char buf[65536];
	size_t n;
	int rc = 0;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		if (fwrite(buf, 1, n, to) != n) {
			rc = lsim_diag_set(d, LSIM_EIO, from, 0, 0, "", "copy failed");
			break;
		}
	if (rc == 0 && ferror(f))
		rc = lsim_diag_set(d, LSIM_EIO, from, 0, 0, "", "read failed");
	fclose(f);
	return rc;
}

static int stage_copy(struct stage *st, const char *from, const char *rel, struct lsim_diag *d)
{
	FILE *f = NULL;
	int rc = stage_open(st, rel, &f, d);
	if (rc)
		return rc;
	rc = copy_file(from, f, d);
	int rc2 = stage_close(f, rel, d);
	return rc ? rc : rc2;
}

/* Data rows of a CSV file (for the summary of a verbatim copy). */
static size_t count_rows(const char *path)
{
	struct lsim_csv *c = NULL;
	struct lsim_diag d;
	size_t n = 0;
	if (lsim_csv_open(path, &c, &d) != 0)
		return 0;
	while (lsim_csv_next(c, &d) > 0)
		n++;
	lsim_csv_close(c);
	return n;
}

/*
 * The current layout (meta.yaml, tp<N>/dense.csv ...): every selected tp
 * folder is loaded through the table backend, then copied verbatim.
 */
static int import_lss_current(const struct lsim_import_opts *o, const char *dir,
			      struct stage *st, struct lsim_import_result *r, struct lsim_diag *d)
{
	int tps[LSIM_IMPORT_MAX_TP];
	int n = list_tp_dirs(dir, "dense.csv", tps, LSIM_IMPORT_MAX_TP);
	char list[128];
	int_list(list, sizeof list, tps, n);
	bool found = false;
	for (int i = 0; i < n; i++)
		found = found || tps[i] == o->tp;
	if (o->tp > 0 && !found)
		return lsim_diag_set(d, LSIM_ENOENT, dir, 0, 0, "--tp",
				     "no tp%d folder (the source has %s)", o->tp, list);
	static const char *const files[] = {"dense.csv", "per_sequence.csv", "attention.csv",
					    "moe.csv", "skew_fit.csv"};
	char from[PATH_LEN], rel[96];
	int rc = 0;
	bool moe_copied = false;
	for (int i = 0; i < n && rc == 0; i++) {
		if (o->tp > 0 && tps[i] != o->tp)
			continue;
		struct lsim_table_params prm = {.tp = tps[i], .n_layers = 1};
		struct lsim_perf *p = NULL;
		rc = lsim_perf_table_create(dir, &prm, &p, d);
		lsim_perf_destroy(p);
		for (size_t k = 0; rc == 0 && k < sizeof files / sizeof files[0]; k++) {
			snprintf(from, sizeof from, "%s/tp%d/%s", dir, tps[i], files[k]);
			if (!is_file(from))
				continue;
			snprintf(rel, sizeof rel, "tp%d/%s", tps[i], files[k]);
			rc = stage_copy(st, from, rel, d);
			if (k < 3)
				r->rows_read += count_rows(from);
			moe_copied = moe_copied || (k == 3 && tps[i] == 1);
		}
		result_add_tp(r, tps[i]);
	}
	/* experts are profiled once, at TP 1, and read there for every degree */
	snprintf(from, sizeof from, "%s/tp1/moe.csv", dir);
	if (rc == 0 && !moe_copied && is_file(from))
		rc = stage_copy(st, from, "tp1/moe.csv", d);
	snprintf(from, sizeof from, "%s/meta.yaml", dir);
	if (rc == 0 && is_file(from))
		rc = stage_copy(st, from, "meta.yaml", d);
	return rc;
}

static int import_llmservingsim(const struct lsim_import_opts *o, struct stage *st,
				struct recs *rs, struct lsim_import_result *r, bool *copied,
				struct lsim_diag *d)
{
	*copied = false;
	for (size_t i = 0; i < o->n_src; i++) {
		const char *src = o->src[i];
		char p[PATH_LEN];
		int tps[LSIM_IMPORT_MAX_TP];
		int rc = 0;
		if (is_file(src)) {
			rc = read_lss_v0(src, rs, &r->rows_read, d);
		} else if (!is_dir(src)) {
			return lsim_diag_set(d, LSIM_ENOENT, src, 0, 0, "SRC", "no such file or folder");
		} else if (list_tp_dirs(src, "dense.csv", tps, LSIM_IMPORT_MAX_TP) > 0) {
			if (o->n_src > 1)
				return lsim_diag_set(d, LSIM_EINVAL, src, 0, 0, "SRC",
						     "a profile in the current layout (tp<N>/dense.csv) "
						     "is imported on its own");
			*copied = true;
			return import_lss_current(o, src, st, r, d);
		} else if (snprintf(p, sizeof p, "%s/layers.csv", src) < (int)sizeof p && is_file(p)) {
			rc = read_lss_v0(p, rs, &r->rows_read, d);
		} else {
			int n = list_tp_dirs(src, "layers.csv", tps, LSIM_IMPORT_MAX_TP);
			if (n == 0)
				return lsim_diag_set(d, LSIM_ENOENT, src, 0, 0, "SRC",
						     "no LLMServingSim profile here (looked for "
						     "tp<N>/dense.csv, layers.csv and tp<N>/layers.csv)");
			for (int k = 0; k < n && rc == 0; k++) {
				snprintf(p, sizeof p, "%s/tp%d/layers.csv", src, tps[k]);
				rc = read_lss_v0(p, rs, &r->rows_read, d);
			}
		}
		if (rc)
			return rc;
	}
	note_add(r, "LLMServingSim v0 profile: attention measured for prefill chunks only "
		    "(no decode rows)");
	return 0;
}

/* ------------------------------------------------------------------ */
/* Vidur                                                               */
/* ------------------------------------------------------------------ */

/* mlp.csv operators -> table rows (docs/profiles.md). */
static const struct {
	const char *op, *name;
} vidur_ops[] = {
	{"emb", "embedding"},
	{"input_layernorm", "input_layernorm"},
	{"attn_pre_proj", "qkv_proj"},
	{"attn_rope", "rotary_emb"},
	{"attn_post_proj", "o_proj"},
	{"post_attention_layernorm", "post_attention_layernorm"},
	{"mlp_up_proj", "gate_up_proj"}, /* "up_proj" for a plain MLP */
	{"mlp_act", "act_fn"},
	{"mlp_down_proj", "down_proj"},
	{"add", "add"},
};
#define N_VIDUR_OPS (sizeof vidur_ops / sizeof vidur_ops[0])

/* Model shape seen in a file: n_embd, query heads, KV heads. */
struct vshape {
	bool set;
	double v[3];
	char file[PATH_LEN];
	int line;
};

static int shape_check(struct vshape *s, const struct lsim_csv *c, const int col[3],
		       struct lsim_diag *d)
{
	double v[3];
	for (int i = 0; i < 3; i++) {
		int rc = num_field(c, col[i], 1.0, true, &v[i], d);
		if (rc)
			return rc;
	}
	if (!s->set) {
		memcpy(s->v, v, sizeof v);
		snprintf(s->file, sizeof s->file, "%s", lsim_csv_path(c));
		s->line = lsim_csv_line(c);
		s->set = true;
		return 0;
	}
	for (int i = 0; i < 3; i++)
		if (v[i] != s->v[i])
			return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(c), lsim_csv_line(c),
					     lsim_csv_field_col(c, col[i]), lsim_csv_name(c, col[i]),
					     "%g here but %g in %s line %d: one model shape per import",
					     v[i], s->v[i], base_name(s->file), s->line);
	return 0;
}

static int vidur_mlp(struct lsim_csv *c, struct recs *rs, struct vshape *shape, size_t *rows,
		     struct lsim_diag *d)
{
	const char *names[N_VIDUR_OPS + 5];
	char cols[N_VIDUR_OPS][64];
	int idx[N_VIDUR_OPS + 5];
	for (size_t i = 0; i < N_VIDUR_OPS; i++) {
		snprintf(cols[i], sizeof cols[i], "time_stats.%s.median", vidur_ops[i].op);
		names[i] = cols[i];
	}
	names[N_VIDUR_OPS + 0] = "n_embd";
	names[N_VIDUR_OPS + 1] = "n_head";
	names[N_VIDUR_OPS + 2] = "n_kv_head";
	names[N_VIDUR_OPS + 3] = "num_tokens";
	names[N_VIDUR_OPS + 4] = "num_tensor_parallel_workers";
	int rc = lsim_csv_require(c, names, (int)N_VIDUR_OPS + 5, idx, d);
	int gated_col = lsim_csv_column(c, "use_gated_mlp");
	size_t n = 0;
	while (rc == 0) {
		int got = next_row(c, d);
		if (got <= 0) {
			rc = got;
			break;
		}
		if ((rc = shape_check(shape, c, idx + N_VIDUR_OPS, d)) != 0)
			break;
		bool gated = true;
		double tokens, tp;
		if ((gated_col >= 0 && (rc = bool_field(c, gated_col, &gated, d)) != 0) ||
		    (rc = num_field(c, idx[N_VIDUR_OPS + 3], 1.0, true, &tokens, d)) != 0 ||
		    (rc = num_field(c, idx[N_VIDUR_OPS + 4], 1.0, true, &tp, d)) != 0)
			break;
		for (size_t i = 0; i < N_VIDUR_OPS && rc == 0; i++) {
			double ms;
			if ((rc = num_field(c, idx[i], 0.0, false, &ms, d)) != 0)
				break;
			const char *name = vidur_ops[i].name;
			if (!gated && !strcmp(name, "gate_up_proj"))
				name = "up_proj";
			struct rec *r = rec_push(rs, REC_DENSE, (int)tp, name, d);
			if (!r) {
				rc = LSIM_ENOMEM;
				break;
			}
			r->k[0] = tokens;
			r->v[0] = ms * 1000.0;
		}
		n++;
	}
	if (rc == 0 && n == 0)
		rc = no_rows(c, d);
	*rows += n;
	return rc;
}

static int vidur_attention(struct lsim_csv *c, struct recs *rs, struct vshape *shape,
			   size_t *rows, struct lsim_diag *d)
{
	static const char *const names[] = {"n_embd", "n_q_head", "n_kv_head",
					    "num_tensor_parallel_workers", "batch_size",
					    "prefill_chunk_size", "kv_cache_size", "is_prefill"};
	int idx[8];
	int rc = lsim_csv_require(c, names, 8, idx, d);
	int t_pre = lsim_csv_column(c, "time_stats.attn_prefill.median");
	int t_dec = lsim_csv_column(c, "time_stats.attn_decode.median");
	int t_in = lsim_csv_column(c, "time_stats.attn_input_reshape.median");
	int t_out = lsim_csv_column(c, "time_stats.attn_output_reshape.median");
	int t_save = lsim_csv_column(c, "time_stats.attn_kv_cache_save.median");
	size_t n = 0;
	while (rc == 0) {
		int got = next_row(c, d);
		if (got <= 0) {
			rc = got;
			break;
		}
		if ((rc = shape_check(shape, c, idx, d)) != 0)
			break;
		bool prefill;
		double tp, bs, chunk, kv, t_main, t_a, t_b, t_c;
		if ((rc = num_field(c, idx[3], 1.0, true, &tp, d)) != 0 ||
		    (rc = num_field(c, idx[4], 1.0, true, &bs, d)) != 0 ||
		    (rc = num_field(c, idx[5], 0.0, true, &chunk, d)) != 0 ||
		    (rc = num_field(c, idx[6], 0.0, true, &kv, d)) != 0 ||
		    (rc = bool_field(c, idx[7], &prefill, d)) != 0)
			break;
		int tcol = prefill ? t_pre : t_dec;
		if (tcol < 0) {
			rc = lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(c), 1, 0,
					   prefill ? "time_stats.attn_prefill.median"
						   : "time_stats.attn_decode.median",
					   "missing column, needed by the %s row on line %d",
					   prefill ? "prefill" : "decode", lsim_csv_line(c));
			break;
		}
		if ((rc = num_field(c, tcol, 0.0, false, &t_main, d)) != 0 ||
		    (rc = opt_num_field(c, t_in, &t_a, d)) != 0 ||
		    (rc = opt_num_field(c, t_out, &t_b, d)) != 0 ||
		    (rc = opt_num_field(c, t_save, &t_c, d)) != 0)
			break;
		if (prefill && bs != 1.0) {
			rc = lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(c), lsim_csv_line(c),
					   lsim_csv_field_col(c, idx[4]), "batch_size",
					   "a prefill row must have batch_size 1, not %g", bs);
			break;
		}
		struct rec *r = rec_push(rs, REC_ATTN, (int)tp, "", d);
		if (!r) {
			rc = LSIM_ENOMEM;
			break;
		}
		if (prefill) {
			r->k[0] = chunk; /* prefill_chunk */
			r->k[1] = kv;	 /* kv_prefill */
		} else {
			r->k[2] = bs; /* n_decode */
			r->k[3] = kv; /* kv_decode: the context of each decode */
		}
		r->v[0] = (t_main + t_a + t_b + t_c) * 1000.0;
		n++;
	}
	if (rc == 0 && n == 0)
		rc = no_rows(c, d);
	*rows += n;
	return rc;
}

/* NCCL collectives: all_reduce.csv or send_recv.csv (which = the name). */
static int vidur_network(struct lsim_csv *c, const char *which, int tp_only, struct recs *rs,
			 size_t *rows, struct lsim_diag *d)
{
	char tcol[64];
	snprintf(tcol, sizeof tcol, "time_stats.%s.median", which);
	const char *names[4] = {tcol, "num_workers", "devices_per_node", "size"};
	int idx[4];
	int rc = lsim_csv_require(c, names, 4, idx, d);
	bool ar = !strcmp(which, "all_reduce");
	size_t n = 0;
	while (rc == 0) {
		int got = next_row(c, d);
		if (got <= 0) {
			rc = got;
			break;
		}
		double ms, workers, dpn, size;
		if ((rc = num_field(c, idx[0], 0.0, false, &ms, d)) != 0 ||
		    (rc = num_field(c, idx[1], 1.0, true, &workers, d)) != 0 ||
		    (rc = num_field(c, idx[2], 1.0, true, &dpn, d)) != 0 ||
		    (rc = num_field(c, idx[3], 0.0, true, &size, d)) != 0)
			break;
		struct rec *r = rec_push(rs, ar ? REC_NET_AR : REC_NET_SR, 0, "", d);
		if (!r) {
			rc = LSIM_ENOMEM;
			break;
		}
		r->k[0] = workers;
		r->k[1] = dpn;
		r->k[2] = size;
		r->v[0] = ms * 1000.0;
		/* a TP group lives in one node: all its workers on the same node */
		if (ar && dpn == workers && workers <= 4096 && (tp_only == 0 || workers == tp_only)) {
			r = rec_push(rs, REC_AR_TP, (int)workers, "", d);
			if (!r) {
				rc = LSIM_ENOMEM;
				break;
			}
			r->k[0] = size;
			r->v[0] = ms * 1000.0;
		}
		n++;
	}
	if (rc == 0 && n == 0)
		rc = no_rows(c, d);
	*rows += n;
	return rc;
}

enum vkind { V_MLP, V_ATTN, V_AR, V_SR, V_UNKNOWN };

static enum vkind vidur_kind(const struct lsim_csv *c)
{
	if (lsim_csv_column(c, "time_stats.mlp_up_proj.median") >= 0)
		return V_MLP;
	if (lsim_csv_column(c, "time_stats.attn_decode.median") >= 0 ||
	    lsim_csv_column(c, "time_stats.attn_prefill.median") >= 0)
		return V_ATTN;
	if (lsim_csv_column(c, "time_stats.all_reduce.median") >= 0)
		return V_AR;
	if (lsim_csv_column(c, "time_stats.send_recv.median") >= 0)
		return V_SR;
	return V_UNKNOWN;
}

struct vidur_seen {
	struct vshape mlp, attn;
	bool kinds[4];
};

static int vidur_file(const char *path, const struct lsim_import_opts *o, struct recs *rs,
		      struct vidur_seen *seen, size_t *rows, struct lsim_diag *d)
{
	struct lsim_csv *c = NULL;
	int rc = lsim_csv_open(path, &c, d);
	if (rc)
		return rc;
	enum vkind k = vidur_kind(c);
	switch (k) {
	case V_MLP:
		rc = vidur_mlp(c, rs, &seen->mlp, rows, d);
		break;
	case V_ATTN:
		rc = vidur_attention(c, rs, &seen->attn, rows, d);
		break;
	case V_AR:
		rc = vidur_network(c, "all_reduce", o->tp, rs, rows, d);
		break;
	case V_SR:
		rc = vidur_network(c, "send_recv", o->tp, rs, rows, d);
		break;
	default:
		rc = lsim_diag_set(d, LSIM_EFORMAT, path, 1, 0, "time_stats.mlp_up_proj.median",
				   "not a Vidur profile: no column time_stats.mlp_up_proj.median "
				   "(mlp.csv), time_stats.attn_decode.median or "
				   "time_stats.attn_prefill.median (attention.csv), "
				   "time_stats.all_reduce.median or time_stats.send_recv.median");
		break;
	}
	if (k != V_UNKNOWN)
		seen->kinds[k] = true;
	lsim_csv_close(c);
	return rc;
}

static int import_vidur(const struct lsim_import_opts *o, struct recs *rs,
			struct lsim_import_result *r, struct lsim_diag *d)
{
	static const char *const known[] = {"mlp.csv", "attention.csv", "all_reduce.csv",
					    "send_recv.csv"};
	struct vidur_seen seen;
	memset(&seen, 0, sizeof seen);
	int rc = 0;
	for (size_t i = 0; i < o->n_src && rc == 0; i++) {
		const char *src = o->src[i];
		if (is_file(src)) {
			rc = vidur_file(src, o, rs, &seen, &r->rows_read, d);
			continue;
		}
		if (!is_dir(src))
			return lsim_diag_set(d, LSIM_ENOENT, src, 0, 0, "SRC", "no such file or folder");
		int found = 0;
		for (size_t k = 0; k < sizeof known / sizeof known[0] && rc == 0; k++) {
			char p[PATH_LEN];
			if (snprintf(p, sizeof p, "%s/%s", src, known[k]) >= (int)sizeof p || !is_file(p))
				continue;
			found++;
			rc = vidur_file(p, o, rs, &seen, &r->rows_read, d);
		}
		if (rc == 0 && found == 0)
			return lsim_diag_set(d, LSIM_ENOENT, src, 0, 0, "SRC",
					     "no Vidur profile here (looked for mlp.csv, "
					     "attention.csv, all_reduce.csv, send_recv.csv)");
	}
	if (rc)
		return rc;
	if (seen.mlp.set && seen.attn.set) {
		for (int i = 0; i < 3; i++)
			if (seen.mlp.v[i] != seen.attn.v[i]) {
				static const char *const what[] = {"n_embd", "n_q_head", "n_kv_head"};
				return lsim_diag_set(d, LSIM_EINVAL, seen.attn.file, seen.attn.line, 0,
						     what[i],
						     "attention profile of another model: %s %g, "
						     "but %g in %s",
						     what[i], seen.attn.v[i], seen.mlp.v[i],
						     base_name(seen.mlp.file));
			}
	}
	if (seen.kinds[V_MLP]) {
		/*
		 * Vidur does not profile the LM head or the sampler; the table
		 * backend needs a per_sequence.csv, so each tp folder gets one
		 * zero row (charged as 1 ns per iteration).
		 */
		int tps[LSIM_IMPORT_MAX_TP], n = 0;
		for (size_t i = 0; i < rs->n; i++) {
			if (rs->a[i].kind != REC_DENSE)
				continue;
			bool dup = false;
			for (int k = 0; k < n; k++)
				dup = dup || tps[k] == rs->a[i].tp;
			if (!dup && n < LSIM_IMPORT_MAX_TP)
				tps[n++] = rs->a[i].tp;
		}
		for (int k = 0; k < n; k++) {
			struct rec *x = rec_push(rs, REC_SEQ, tps[k], "not_profiled", d);
			if (!x)
				return LSIM_ENOMEM;
			x->k[0] = 1;
		}
		note_add(r, "Vidur profiles no LM head or sampler: per_sequence.csv holds one "
			    "zero row 'not_profiled'");
		if (!seen.kinds[V_ATTN])
			note_add(r, "no attention.csv given: the tp folders lack attention.csv and "
				    "do not load in the table backend");
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Splitwise                                                           */
/* ------------------------------------------------------------------ */

struct labels {
	int n;
	char v[MAX_LABELS][48];
};

static void labels_add(struct labels *l, const char *s)
{
	for (int i = 0; i < l->n; i++)
		if (!strcasecmp(l->v[i], s))
			return;
	if (l->n < MAX_LABELS)
		snprintf(l->v[l->n++], sizeof l->v[0], "%s", s);
}

static void labels_join(const struct labels *l, char *buf, size_t size)
{
	size_t at = 0;
	buf[0] = '\0';
	for (int i = 0; i < l->n && at < size; i++)
		at += (size_t)snprintf(buf + at, size - at, "%s%s", i ? ", " : "", l->v[i]);
}

/* The one value wanted: given, or the only one in the file. */
static int pick_label(const struct labels *l, const char *given, const char *opt, const char *path,
		      const char *what, char *out, size_t size, struct lsim_diag *d)
{
	char list[512];
	labels_join(l, list, sizeof list);
	if (given && given[0]) {
		for (int i = 0; i < l->n; i++)
			if (!strcasecmp(l->v[i], given)) {
				snprintf(out, size, "%s", l->v[i]);
				return 0;
			}
		return lsim_diag_set(d, LSIM_ENOENT, path, 0, 0, opt, "no %s '%s' in the file (it has %s)",
				     what, given, list);
	}
	if (l->n != 1)
		return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, opt,
				     "the file holds several values of %s (%s): choose one with %s",
				     what, list, opt);
	snprintf(out, size, "%s", l->v[0]);
	return 0;
}

static int import_splitwise(const struct lsim_import_opts *o, struct recs *rs,
			    struct lsim_import_result *r, char *model, char *gpu, size_t size,
			    struct lsim_diag *d)
{
	if (o->n_src != 1)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "SRC",
				     "splitwise takes one perf_model.csv");
	char path[PATH_LEN];
	const char *src = o->src[0];
	if (is_dir(src)) {
		if (snprintf(path, sizeof path, "%s/perf_model.csv", src) >= (int)sizeof path)
			return lsim_diag_set(d, LSIM_EINVAL, src, 0, 0, "SRC", "path too long");
	} else {
		snprintf(path, sizeof path, "%s", src);
	}
	static const char *const names[] = {"model", "hardware", "prompt_size", "batch_size",
					    "token_size", "prompt_time", "token_time",
					    "tensor_parallel"};
	/* two passes: the labels first, to pick the rows */
	struct labels models = {0}, hws = {0};
	for (int pass = 0; pass < 2; pass++) {
		struct lsim_csv *c = NULL;
		int idx[8];
		int rc = lsim_csv_open(path, &c, d);
		if (rc == 0)
			rc = lsim_csv_require(c, names, 8, idx, d);
		size_t n = 0;
		while (rc == 0) {
			int got = next_row(c, d);
			if (got <= 0) {
				rc = got;
				break;
			}
			const char *m = lsim_csv_field(c, idx[0]), *h = lsim_csv_field(c, idx[1]);
			for (int k = 0; k < 2 && rc == 0; k++) {
				const char *s = k ? h : m;
				if (!s[0] || strlen(s) >= sizeof models.v[0])
					rc = lsim_diag_set(d, LSIM_EFORMAT, path, lsim_csv_line(c),
							   lsim_csv_field_col(c, idx[k]), names[k],
							   "empty or longer than %zu characters",
							   sizeof models.v[0] - 1);
			}
			if (rc)
				break;
			if (pass == 0) {
				labels_add(&models, m);
				labels_add(&hws, h);
				n++;
				continue;
			}
			double v[6];
			static const int vi[6] = {2, 3, 4, 5, 6, 7};
			static const double lo[6] = {1, 1, 1, 0, 0, 1};
			for (int k = 0; k < 6 && rc == 0; k++)
				rc = num_field(c, idx[vi[k]], lo[k], k < 3 || k == 5, &v[k], d);
			if (rc)
				break;
			if (v[5] > 4096) {
				rc = lsim_diag_set(d, LSIM_EFORMAT, path, lsim_csv_line(c),
						   lsim_csv_field_col(c, idx[7]), "tensor_parallel",
						   "%g is not a tensor-parallel degree", v[5]);
				break;
			}
			n++;
			if (strcasecmp(m, model) || strcasecmp(h, gpu))
				continue;
			struct rec *x = rec_push(rs, REC_ITER, (int)v[5], "", d);
			if (!x) {
				rc = LSIM_ENOMEM;
				break;
			}
			x->k[0] = v[1]; /* batch_size */
			x->k[1] = v[0]; /* prompt tokens */
			x->k[2] = v[2]; /* output tokens */
			x->v[0] = v[3] * 1000.0;
			x->v[1] = v[4] * 1000.0;
		}
		if (rc == 0 && n == 0)
			rc = no_rows(c, d);
		if (pass == 1)
			r->rows_read = n;
		lsim_csv_close(c);
		if (rc)
			return rc;
		if (pass == 0 &&
		    ((rc = pick_label(&models, o->model, "--model", path, "model", model, size, d)) ||
		     (rc = pick_label(&hws, o->gpu, "--gpu", path, "hardware", gpu, size, d))))
			return rc;
	}
	note_add(r, "per-iteration times (Splitwise measures whole prompt and token phases): "
		    "llmsim profile compare reads them; the table backend does not");
	return 0;
}

/* ------------------------------------------------------------------ */
/* Import                                                              */
/* ------------------------------------------------------------------ */

int lsim_import_from_parse(const char *name, int *out)
{
	static const char *const names[] = {"llmservingsim", "vidur", "splitwise"};
	for (int i = 0; i < 3; i++)
		if (name && !strcmp(name, names[i])) {
			*out = i;
			return 0;
		}
	return LSIM_EINVAL;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void yaml_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
	fputc('"', f);
}

static int write_manifest(struct stage *st, const struct lsim_import_opts *o,
			  const struct lsim_import_result *r, const char *model, const char *gpu,
			  struct lsim_diag *d)
{
	static const char *const from[] = {"llmservingsim", "vidur", "splitwise"};
	FILE *f = NULL;
	int rc = stage_open(st, "import.yaml", &f, d);
	if (rc)
		return rc;
	fprintf(f, "# Written by `llmsim profile import`; the layout is described in docs/profiles.md.\n");
	fprintf(f, "source: %s\ninputs: [", from[o->from]);
	for (size_t i = 0; i < o->n_src; i++) {
		fputs(i ? ", " : "", f);
		yaml_str(f, base_name(o->src[i]));
	}
	fputs("]\ngpu: ", f);
	yaml_str(f, gpu);
	fputs("\nmodel: ", f);
	yaml_str(f, model);
	fprintf(f, "\nlayout: %s\ntp: [", r->layout);
	for (int i = 0; i < r->n_tp; i++)
		fprintf(f, "%s%d", i ? ", " : "", r->tp[i]);
	fputs("]\nloadable: [", f);
	for (int i = 0, k = 0; i < r->n_tp; i++)
		if (r->loadable[i])
			fprintf(f, "%s%d", k++ ? ", " : "", r->tp[i]);
	fputs("]\nfiles: [", f);
	for (int i = 0; i < r->n_files; i++) {
		fputs(i ? ", " : "", f);
		yaml_str(f, r->files[i]);
	}
	fputs("]\nnote: ", f);
	yaml_str(f, r->note);
	fputc('\n', f);
	return stage_close(f, "import.yaml", d);
}

int lsim_profile_import(const struct lsim_import_opts *o, struct lsim_import_result *r,
			struct lsim_diag *d)
{
	if (!o || !r)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "", "no options or result");
	memset(r, 0, sizeof *r);
	if (o->from < LSIM_IMPORT_LLMSERVINGSIM || o->from > LSIM_IMPORT_SPLITWISE)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "--from",
				     "unknown source kind %d", o->from);
	if (!o->outdir || !o->outdir[0])
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "-o", "no output folder");
	if (o->n_src == 0 || !o->src)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "SRC", "no source given");
	if (o->tp < 0 || o->tp > 4096)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "--tp",
				     "tensor-parallel degree %d out of range", o->tp);
	if (lsim_cli_make_dirs(o->outdir) != 0)
		return lsim_diag_set(d, LSIM_EIO, o->outdir, 0, 0, "-o", "cannot create: %s",
				     strerror(errno));
	struct stage st = {.outdir = o->outdir, .r = r};
	if (snprintf(st.dir, sizeof st.dir, "%s/.import-%ld", o->outdir, (long)getpid()) >=
	    (int)sizeof st.dir - 64)
		return lsim_diag_set(d, LSIM_EINVAL, o->outdir, 0, 0, "-o", "path too long");
	remove_tree(st.dir); /* a leftover of a killed import with the same pid */
	if (lsim_cli_make_dirs(st.dir) != 0)
		return lsim_diag_set(d, LSIM_EIO, st.dir, 0, 0, "-o", "cannot create: %s",
				     strerror(errno));
	snprintf(r->layout, sizeof r->layout, "%s",
		 o->from == LSIM_IMPORT_SPLITWISE ? "iteration" : "layers");

	struct recs rs = {0};
	char model[64], gpu[64];
	snprintf(model, sizeof model, "%s", o->model ? o->model : "");
	snprintf(gpu, sizeof gpu, "%s", o->gpu ? o->gpu : "");
	bool copied = false;
	int rc;
	switch (o->from) {
	case LSIM_IMPORT_LLMSERVINGSIM:
		rc = import_llmservingsim(o, &st, &rs, r, &copied, d);
		break;
	case LSIM_IMPORT_VIDUR:
		rc = import_vidur(o, &rs, r, d);
		break;
	default:
		rc = import_splitwise(o, &rs, r, model, gpu, sizeof model, d);
		break;
	}
	const char *src0 = o->src[0];
	if (rc == 0 && !copied)
		rc = select_tp(&rs, o->tp, r, src0, d);
	if (rc == 0 && !copied)
		rc = write_records(&st, &rs, o->from == LSIM_IMPORT_SPLITWISE, d);
	free(rs.a);
	/* every per-layer tp folder must load through the table backend */
	for (int i = 0; rc == 0 && !copied && i < r->n_tp && o->from != LSIM_IMPORT_SPLITWISE; i++) {
		bool all = true;
		static const char *const need[3] = {"dense.csv", "per_sequence.csv", "attention.csv"};
		for (int k = 0; k < 3; k++) {
			char np[PATH_LEN];
			all = all && tp_path(np, sizeof np, st.dir, r->tp[i], need[k]) && is_file(np);
		}
		if (!all)
			continue;
		struct lsim_table_params prm = {.tp = r->tp[i], .n_layers = 1};
		struct lsim_perf *p = NULL;
		rc = lsim_perf_table_create(st.dir, &prm, &p, d);
		lsim_perf_destroy(p);
		r->loadable[i] = rc == 0;
	}
	if (rc == 0 && copied)
		for (int i = 0; i < r->n_tp; i++)
			r->loadable[i] = true;
	if (rc == 0 && r->n_files == 0)
		rc = lsim_diag_set(d, LSIM_EINVAL, src0, 0, 0, "SRC", "nothing to import");
	if (rc == 0)
		qsort(r->files, (size_t)r->n_files, sizeof r->files[0], str_cmp);
	if (rc == 0)
		rc = write_manifest(&st, o, r, model, gpu, d);
	if (rc == 0)
		return stage_commit(&st, d);
	remove_tree(st.dir);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Compare                                                             */
/* ------------------------------------------------------------------ */

double lsim_compare_err(double meas, double roof)
{
	return meas > 0.0 ? roof / meas - 1.0 : NAN;
}

/* A piecewise-linear y(x) read from a two-column CSV: clamp below, extend above. */
struct curve {
	size_t n;
	double *x, *y;
};

static double curve_eval(const struct curve *c, double q)
{
	if (c->n == 0)
		return 0.0;
	if (c->n == 1 || q <= c->x[0])
		return c->y[0];
	size_t hi = 1;
	while (hi < c->n - 1 && c->x[hi] < q)
		hi++;
	size_t lo = hi - 1;
	double t = (q - c->x[lo]) / (c->x[hi] - c->x[lo]);
	return c->y[lo] + t * (c->y[hi] - c->y[lo]);
}

static int read_curve(const char *path, const char *xcol, const char *ycol, struct curve *cv,
		      struct lsim_diag *d)
{
	struct lsim_csv *c = NULL;
	int rc = lsim_csv_open(path, &c, d);
	if (rc)
		return rc;
	const char *names[2] = {xcol, ycol};
	int idx[2];
	size_t cap = 0;
	rc = lsim_csv_require(c, names, 2, idx, d);
	while (rc == 0) {
		int got = next_row(c, d);
		if (got <= 0) {
			rc = got;
			break;
		}
		double x, y;
		if ((rc = num_field(c, idx[0], 0.0, false, &x, d)) != 0 ||
		    (rc = num_field(c, idx[1], 0.0, false, &y, d)) != 0)
			break;
		if (cv->n > 0 && x <= cv->x[cv->n - 1]) {
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, lsim_csv_line(c),
					   lsim_csv_field_col(c, idx[0]), xcol,
					   "rows must be sorted by %s, ascending", xcol);
			break;
		}
		if (cv->n == cap) {
			cap = cap ? cap * 2 : 256;
			double *nx = realloc(cv->x, cap * sizeof *nx);
			if (nx)
				cv->x = nx;
			double *ny = nx ? realloc(cv->y, cap * sizeof *ny) : NULL;
			if (ny)
				cv->y = ny;
			if (!nx || !ny) {
				rc = nomem(d, path);
				break;
			}
		}
		cv->x[cv->n] = x;
		cv->y[cv->n] = y * 1e-6; /* microseconds -> seconds */
		cv->n++;
	}
	if (rc == 0 && cv->n == 0)
		rc = no_rows(c, d);
	lsim_csv_close(c);
	return rc;
}

/* What the measured table covers. */
struct coverage {
	double tokens_max;	 /* dense.csv */
	double pc_max;		 /* largest chunk of a pure-prefill attention row */
	double nd_max;		 /* largest decode count of a pure-decode row */
	double kd_min, kd_max;	 /* decode contexts of the pure-decode rows */
};

static int read_coverage(const char *tpdir, struct coverage *cv, struct lsim_diag *d)
{
	memset(cv, 0, sizeof *cv);
	cv->kd_min = INFINITY;
	char path[PATH_LEN];
	pjoin(path, sizeof path, tpdir, "dense.csv");
	struct lsim_csv *c = NULL;
	int rc = lsim_csv_open(path, &c, d);
	int idx[5];
	if (rc)
		return rc;
	const char *dn[1] = {"tokens"};
	rc = lsim_csv_require(c, dn, 1, idx, d);
	while (rc == 0) {
		int got = next_row(c, d);
		if (got <= 0) {
			rc = got;
			break;
		}
		double t;
		if ((rc = num_field(c, idx[0], 0.0, false, &t, d)) == 0 && t > cv->tokens_max)
			cv->tokens_max = t;
	}
	lsim_csv_close(c);
	if (rc)
		return rc;
	pjoin(path, sizeof path, tpdir, "attention.csv");
	rc = lsim_csv_open(path, &c, d);
	if (rc)
		return rc;
	const char *an[4] = {"prefill_chunk", "kv_prefill", "n_decode", "kv_decode"};
	rc = lsim_csv_require(c, an, 4, idx, d);
	while (rc == 0) {
		int got = next_row(c, d);
		if (got <= 0) {
			rc = got;
			break;
		}
		double v[4];
		for (int k = 0; k < 4 && rc == 0; k++)
			rc = num_field(c, idx[k], 0.0, false, &v[k], d);
		if (rc)
			break;
		if (v[2] == 0.0 && v[0] > cv->pc_max)
			cv->pc_max = v[0];
		if (v[0] == 0.0 && v[2] > 0.0) {
			if (v[2] > cv->nd_max)
				cv->nd_max = v[2];
			if (v[3] < cv->kd_min)
				cv->kd_min = v[3];
			if (v[3] > cv->kd_max)
				cv->kd_max = v[3];
		}
	}
	lsim_csv_close(c);
	return rc;
}

struct perf_pair {
	struct lsim_perf *one, *two; /* 1 and 2 decoder layers */
	struct lsim_perf *full;	     /* roofline only: the model's layer count */
};

static void pair_release(struct perf_pair *p)
{
	lsim_perf_destroy(p->one);
	lsim_perf_destroy(p->two);
	lsim_perf_destroy(p->full);
	memset(p, 0, sizeof *p);
}

/* Per-layer and whole-iteration time of one batch, in seconds. */
static void pair_times(const struct perf_pair *p, int n_layers, const struct lsim_batch *b,
		       double *layer, double *iter)
{
	lsim_time t1 = lsim_perf_iter_time(p->one, b), t2 = lsim_perf_iter_time(p->two, b);
	lsim_time l = t2 - t1;
	*layer = lsim_time_to_s(l);
	if (p->full)
		*iter = lsim_time_to_s(lsim_perf_iter_time(p->full, b));
	else
		*iter = lsim_time_to_s(t1 + (lsim_time)(n_layers - 1) * l);
}

static int push_point(struct lsim_compare_result *r, size_t *cap,
		      const struct lsim_compare_point *pt, struct lsim_diag *d)
{
	if (r->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 32;
		struct lsim_compare_point *np = realloc(r->pts, nc * sizeof *np);
		if (!np)
			return nomem(d, "compare");
		r->pts = np;
		*cap = nc;
	}
	r->pts[r->n++] = *pt;
	return 0;
}

/* A uniform batch: n sequences, each `chunk` new tokens after ctx cached. */
struct ubatch {
	struct lsim_batch b;
	int32_t *chunk, *ctx;
};

static int ubatch_init(struct ubatch *u, int n, struct lsim_diag *d)
{
	memset(u, 0, sizeof *u);
	u->chunk = malloc((size_t)(n > 0 ? n : 1) * sizeof *u->chunk);
	u->ctx = malloc((size_t)(n > 0 ? n : 1) * sizeof *u->ctx);
	if (!u->chunk || !u->ctx) {
		free(u->chunk);
		free(u->ctx);
		return nomem(d, "compare");
	}
	return 0;
}

static void ubatch_set(struct ubatch *u, bool decode, int n, int chunk, int ctx)
{
	for (int i = 0; i < n; i++) {
		u->chunk[i] = chunk;
		u->ctx[i] = ctx;
	}
	memset(&u->b, 0, sizeof u->b);
	if (decode) {
		u->b.n_decode = n;
		u->b.decode_ctx = u->ctx;
	} else {
		u->b.n_prefill = n;
		u->b.prefill_chunk = u->chunk;
		u->b.prefill_ctx = u->ctx;
	}
}

static int roofline_pair(const struct lsim_model_arch *m, const struct lsim_gpu_profile *g, int tp,
			 struct perf_pair *rp, struct lsim_diag *d)
{
	struct lsim_roofline_params prm = {.tp = tp, .cpu_overhead_s = 0.0};
	struct lsim_model_arch m1 = *m, m2 = *m;
	m1.n_layers = 1;
	m2.n_layers = 2;
	int rc = lsim_perf_roofline_create(&m1, g, &prm, &rp->one, d);
	if (rc == 0)
		rc = lsim_perf_roofline_create(&m2, g, &prm, &rp->two, d);
	if (rc == 0)
		rc = lsim_perf_roofline_create(m, g, &prm, &rp->full, d);
	return rc;
}

static int compare_layers(const char *dir, const char *tpdir, const struct lsim_model_arch *m,
			  const struct perf_pair *rp, struct lsim_compare_result *r,
			  struct lsim_diag *d)
{
	static const char *const need[] = {"per_sequence.csv", "attention.csv"};
	for (size_t k = 0; k < sizeof need / sizeof need[0]; k++) {
		char p[PATH_LEN];
		if (!pjoin(p, sizeof p, tpdir, need[k]) || !is_file(p))
			return lsim_diag_set(d, LSIM_ENOENT, p, 0, 0, "--profile",
					     "the table has no %s, so it cannot be compared (an "
					     "import without attention measurements: see import.yaml)",
					     need[k]);
	}
	struct coverage cv;
	int rc = read_coverage(tpdir, &cv, d);
	if (rc)
		return rc;
	struct perf_pair tp_ = {0};
	struct lsim_table_params prm = {.tp = r->tp, .n_layers = 1};
	rc = lsim_perf_table_create(dir, &prm, &tp_.one, d);
	prm.n_layers = 2;
	if (rc == 0)
		rc = lsim_perf_table_create(dir, &prm, &tp_.two, d);
	struct curve ar = {0};
	char path[PATH_LEN];
	pjoin(path, sizeof path, tpdir, "allreduce.csv");
	if (rc == 0 && r->tp > 1 && is_file(path)) {
		rc = read_curve(path, "bytes", "time_us", &ar, d);
		r->tp_comm = rc == 0;
	}
	struct ubatch u;
	if (rc == 0)
		rc = ubatch_init(&u, 256, d);
	if (rc) {
		pair_release(&tp_);
		free(ar.x);
		free(ar.y);
		return rc;
	}
	size_t cap = 0;
	double act = (double)m->hidden * m->bytes_per_param; /* bytes per token all-reduced */
	static const int batches[] = {1, 4, 16, 64, 256};
	static const int contexts[] = {128, 512, 2048, 8192};
	for (int phase = 0; phase < 2 && rc == 0; phase++) {
		int n_outer = phase == 0 ? 14 : (int)(sizeof batches / sizeof batches[0]);
		for (int i = 0; i < n_outer && rc == 0; i++) {
			int n_inner = phase == 0 ? 1 : (int)(sizeof contexts / sizeof contexts[0]);
			for (int j = 0; j < n_inner && rc == 0; j++) {
				struct lsim_compare_point pt = {.decode = phase == 1};
				if (phase == 0) {
					pt.batch = 1;
					pt.tokens = 1 << i; /* 1 .. 8192 */
					if (pt.tokens > cv.tokens_max || pt.tokens > cv.pc_max)
						continue;
				} else {
					pt.batch = batches[i];
					pt.tokens = 1;
					pt.context = contexts[j];
					if (pt.batch > cv.nd_max || pt.batch > cv.tokens_max ||
					    pt.context < cv.kd_min || pt.context > cv.kd_max)
						continue;
				}
				ubatch_set(&u, pt.decode, pt.batch, pt.tokens, pt.context);
				pair_times(&tp_, r->n_layers, &u.b, &pt.meas_layer_s, &pt.meas_iter_s);
				pair_times(rp, r->n_layers, &u.b, &pt.roof_layer_s, &pt.roof_iter_s);
				if (r->tp_comm) {
					/* two all-reduces per layer of T x hidden activations */
					double t = 2.0 * curve_eval(&ar, (double)pt.batch * pt.tokens * act);
					pt.meas_layer_s += t;
					pt.meas_iter_s += r->n_layers * t;
				}
				rc = push_point(r, &cap, &pt, d);
			}
		}
	}
	free(u.chunk);
	free(u.ctx);
	free(ar.x);
	free(ar.y);
	pair_release(&tp_);
	return rc;
}

/* Splitwise-style rows: batch_size,prompt_tokens,output_tokens,prompt_us,token_us. */
static int compare_iterations(const char *path, const struct perf_pair *rp,
			      struct lsim_compare_result *r, struct lsim_diag *d)
{
	struct lsim_csv *c = NULL;
	int rc = lsim_csv_open(path, &c, d);
	if (rc)
		return rc;
	static const char *const names[] = {"batch_size", "prompt_tokens", "output_tokens",
					    "prompt_us", "token_us"};
	int idx[5];
	rc = lsim_csv_require(c, names, 5, idx, d);
	struct lsim_compare_point *pre = NULL, *dec = NULL;
	size_t n = 0, cap = 0;
	struct ubatch u = {0};
	while (rc == 0) {
		int got = next_row(c, d);
		if (got <= 0) {
			rc = got;
			break;
		}
		double v[5];
		for (int k = 0; k < 5 && rc == 0; k++)
			rc = num_field(c, idx[k], k < 3 ? 1.0 : 0.0, k < 3, &v[k], d);
		if (rc == 0 && (v[0] > 4096 || v[1] > 1e7 || v[2] > 1e6))
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, lsim_csv_line(c), 0, "batch_size",
					   "batch, prompt or output size out of range");
		if (rc)
			break;
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			struct lsim_compare_point *np = realloc(pre, cap * sizeof *np);
			if (np)
				pre = np;
			struct lsim_compare_point *nd = np ? realloc(dec, cap * sizeof *nd) : NULL;
			if (nd)
				dec = nd;
			if (!np || !nd) {
				rc = nomem(d, path);
				break;
			}
		}
		int bsz = (int)v[0], p = (int)v[1], out = (int)v[2];
		free(u.chunk);
		free(u.ctx);
		if ((rc = ubatch_init(&u, bsz, d)) != 0)
			break;
		struct lsim_compare_point *a = &pre[n], *b = &dec[n];
		memset(a, 0, sizeof *a);
		memset(b, 0, sizeof *b);
		a->batch = b->batch = bsz;
		a->tokens = p;
		b->decode = true;
		b->tokens = 1;
		b->context = p + (out - 1) / 2;
		a->meas_layer_s = a->roof_layer_s = b->meas_layer_s = b->roof_layer_s = NAN;
		a->meas_iter_s = v[3] * 1e-6;
		b->meas_iter_s = v[4] * 1e-6;
		ubatch_set(&u, false, bsz, p, 0);
		a->roof_iter_s = lsim_time_to_s(lsim_perf_iter_time(rp->full, &u.b));
		/* the measured token time is over the whole output: contexts p .. p+out-1 */
		double sum = 0.0;
		for (int k = 0; k < out; k++) {
			ubatch_set(&u, true, bsz, 1, p + k);
			sum += lsim_time_to_s(lsim_perf_iter_time(rp->full, &u.b));
		}
		b->roof_iter_s = sum / out;
		n++;
	}
	if (rc == 0 && n == 0)
		rc = no_rows(c, d);
	lsim_csv_close(c);
	free(u.chunk);
	free(u.ctx);
	/*
	 * A prompt configuration measured in several rows (the same batch and
	 * prompt with different output lengths) is one prefill point: the mean
	 * of its rows.
	 */
	size_t pcap = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		bool seen = false;
		for (size_t k = 0; k < i && !seen; k++)
			seen = pre[k].batch == pre[i].batch && pre[k].tokens == pre[i].tokens;
		if (seen)
			continue;
		struct lsim_compare_point pt = pre[i];
		double sum = 0.0;
		int cnt = 0;
		for (size_t k = i; k < n; k++)
			if (pre[k].batch == pt.batch && pre[k].tokens == pt.tokens) {
				sum += pre[k].meas_iter_s;
				cnt++;
			}
		pt.meas_iter_s = sum / cnt;
		rc = push_point(r, &pcap, &pt, d);
	}
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = push_point(r, &pcap, &dec[i], d);
	free(pre);
	free(dec);
	return rc;
}

/* The roofline times of the table's points with the profile g. */
static int iter_points(const char *path, const struct lsim_model_arch *m,
		       const struct lsim_gpu_profile *g, int tp, struct lsim_compare_result *t,
		       struct lsim_diag *d)
{
	struct perf_pair rp = {0};
	memset(t, 0, sizeof *t);
	int rc = roofline_pair(m, g, tp, &rp, d);
	if (rc == 0)
		rc = compare_iterations(path, &rp, t, d);
	pair_release(&rp);
	return rc;
}

struct fit_pt {
	double x, w; /* the launch latency that fits the point exactly; its weight */
};

static int cmp_fit_pt(const void *a, const void *b)
{
	double x = ((const struct fit_pt *)a)->x, y = ((const struct fit_pt *)b)->x;
	return x < y ? -1 : x > y;
}

#define FIT_DL 10e-6 /* launch latency step used to read each point's slope */

/*
 * For one mfu_max: the launch latency minimising sum_i w_i |x - x_i| (the
 * weighted median, clamped at 0) and that sum. Point i's time is
 * a_i + k_i * launch (k_i its kernels), so its error |a_i + k_i x - m_i| /
 * m_i is (k_i / m_i) |x - x_i|, x_i = (m_i - a_i) / k_i; each phase's
 * weights are divided by its number of points.
 */
static double fit_launch(const struct lsim_compare_result *t0,
			 const struct lsim_compare_result *t1, const bool *skip,
			 struct fit_pt *pts, double *launch)
{
	size_t n_ph[2] = {0, 0}, n = 0;
	for (size_t i = 0; i < t0->n; i++)
		if (!skip[i])
			n_ph[t0->pts[i].decode]++;
	double wsum = 0.0, fixed = 0.0;
	for (size_t i = 0; i < t0->n; i++) {
		const struct lsim_compare_point *p = &t0->pts[i];
		if (skip[i])
			continue;
		double k = (t1->pts[i].roof_iter_s - p->roof_iter_s) / FIT_DL;
		if (!(k > 0.0)) { /* a point whose time does not depend on it */
			fixed += fabs(lsim_compare_err(p->meas_iter_s, p->roof_iter_s)) /
				 (double)n_ph[p->decode];
			continue;
		}
		pts[n].x = (p->meas_iter_s - p->roof_iter_s) / k;
		pts[n].w = k / p->meas_iter_s / (double)n_ph[p->decode];
		wsum += pts[n++].w;
	}
	qsort(pts, n, sizeof *pts, cmp_fit_pt);
	double acc = 0.0, x = 0.0;
	for (size_t i = 0; i < n; i++) {
		acc += pts[i].w;
		if (acc >= 0.5 * wsum) {
			x = pts[i].x;
			break;
		}
	}
	*launch = x > 0.0 ? x : 0.0;
	double obj = fixed;
	for (size_t i = 0; i < n; i++)
		obj += pts[i].w * fabs(*launch - pts[i].x);
	return obj;
}

/*
 * Marks the rows no model can fit: a prefill measured faster than the
 * same prompts in a smaller batch (Splitwise's 64 x 512 rows at TP 2 take
 * 0.36 s on H100 where 32 x 512 take 2.4 s). Returns how many.
 */
static size_t screen_rows(const struct lsim_compare_result *t, bool *skip)
{
	size_t n = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct lsim_compare_point *p = &t->pts[i];
		skip[i] = false;
		for (size_t k = 0; k < t->n && !p->decode && !skip[i]; k++) {
			const struct lsim_compare_point *q = &t->pts[k];
			skip[i] = !q->decode && q->tokens == p->tokens && q->context == p->context &&
				  q->batch < p->batch && q->meas_iter_s > p->meas_iter_s;
		}
		n += skip[i];
	}
	return n;
}

/*
 * mfu_max and the launch latency that fit the table best with g's other
 * values (its host issue latency included: a row on the host floor counts
 * as fixed, its time not depending on the launches). skip (t->n entries,
 * allocated here on the first call) marks the rows screened out.
 */
static int fit_launch_mfu(const char *path, const struct lsim_model_arch *m, int tp,
			  struct lsim_gpu_profile *g, bool **skip, size_t *screened,
			  struct lsim_diag *d)
{
	struct lsim_gpu_profile gt = *g;
	struct lsim_compare_result t0, t1;
	struct fit_pt *pts = NULL;
	double best = INFINITY, best_mfu = g->mfu_max, best_launch = g->launch_s;
	int rc = 0;
	for (int step = 20; step <= 200 && rc == 0; step++) {
		gt.mfu_max = step * 0.005;
		gt.launch_s = 0.0;
		rc = iter_points(path, m, &gt, tp, &t0, d);
		if (rc)
			break;
		gt.launch_s = FIT_DL;
		rc = iter_points(path, m, &gt, tp, &t1, d);
		if (rc == 0 && t1.n != t0.n)
			rc = lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, "", "table changed while fitting");
		if (rc == 0 && !pts) {
			pts = calloc(t0.n ? t0.n : 1, sizeof *pts);
			if (!pts)
				rc = nomem(d, path);
		}
		if (rc == 0 && !*skip) {
			*skip = calloc(t0.n ? t0.n : 1, sizeof **skip);
			if (!*skip)
				rc = nomem(d, path);
			else if (screened)
				*screened = screen_rows(&t0, *skip);
			else
				screen_rows(&t0, *skip);
		}
		if (rc == 0) {
			double launch, obj = fit_launch(&t0, &t1, *skip, pts, &launch);
			if (obj < best) {
				best = obj;
				best_mfu = gt.mfu_max;
				best_launch = launch;
			}
		}
		lsim_compare_result_release(&t0);
		lsim_compare_result_release(&t1);
	}
	free(pts);
	if (rc == 0) {
		g->mfu_max = best_mfu;
		g->launch_s = best_launch;
	}
	return rc;
}

/* The fit's objective (the sum over the phases of the mean |error| of
 * the kept rows) when every row of t, timed without a host floor, takes
 * at least `floor` seconds. */
static double floor_obj(const struct lsim_compare_result *t, const bool *skip, double floor)
{
	double sum[2] = {0.0, 0.0};
	size_t n[2] = {0, 0};
	for (size_t i = 0; i < t->n; i++) {
		const struct lsim_compare_point *p = &t->pts[i];
		if (skip[i])
			continue;
		double pred = p->roof_iter_s > floor ? p->roof_iter_s : floor;
		sum[p->decode] += fabs(lsim_compare_err(p->meas_iter_s, pred));
		n[p->decode]++;
	}
	return (n[0] ? sum[0] / n[0] : 0.0) + (n[1] ? sum[1] / n[1] : 0.0);
}

/*
 * For the rows t (timed without a host floor): the host floor (seconds a
 * step) that minimises the objective. It is piecewise linear in the
 * floor, with kinks where the floor meets a row's GPU time or its
 * measured time, so the minimum is at one of those. Only floors above the
 * GPU time of two kept rows or more count: one row cannot tell a floor
 * from its own error. Returns true and sets *floor when the best of them
 * is below the objective of every floor the rows cannot see (up to the
 * smallest GPU time): the table sees a floor.
 */
static bool fit_floor(const struct lsim_compare_result *t, const bool *skip, double *floor)
{
	double f0 = floor_obj(t, skip, 0.0), best = f0, bx = 0.0;
	for (size_t i = 0; i < t->n; i++) {
		if (skip[i])
			continue;
		const double c[2] = {t->pts[i].meas_iter_s, t->pts[i].roof_iter_s};
		for (int k = 0; k < 2; k++) {
			if (!(c[k] > 0.0) || !isfinite(c[k]))
				continue;
			size_t lifted = 0;
			for (size_t j = 0; j < t->n; j++)
				lifted += !skip[j] && t->pts[j].roof_iter_s < c[k];
			if (lifted < 2)
				continue;
			double f = floor_obj(t, skip, c[k]);
			if (f < best || (f == best && c[k] < bx)) {
				best = f;
				bx = c[k];
			}
		}
	}
	*floor = bx;
	return best < f0 * (1.0 - 1e-9);
}

int lsim_fit_overheads(const char *path, const struct lsim_model_arch *m, int tp,
		       struct lsim_gpu_profile *g, double mean_abs[2], size_t *screened,
		       bool *host_fitted, struct lsim_diag *d)
{
	if (!path || !m || !g)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "", "no table, model or profile");
	if (!is_file(path))
		return lsim_diag_set(d, LSIM_ENOENT, path, 0, 0, "--fit-tp",
				     "no per-iteration table here to fit; give --fit-tp a degree N "
				     "whose tp<N>/iteration.csv exists (llmsim profile import --from "
				     "splitwise writes them)");
	bool *skip = NULL;
	struct lsim_compare_result t0;
	const double kernels = lsim_perf_roofline_kernels(m);
	if (host_fitted)
		*host_fitted = false;
	int rc = fit_launch_mfu(path, m, tp, g, &skip, screened, d);
	/* then the host floor given them, and them given it, until it stays:
	 * kept at the profile's value when the rows cannot see one */
	for (int round = 0; round < 8 && rc == 0; round++) {
		struct lsim_gpu_profile g0 = *g;
		double floor;
		g0.host_issue_s = 0.0;
		rc = iter_points(path, m, &g0, tp, &t0, d);
		if (rc)
			break;
		bool seen = fit_floor(&t0, skip, &floor);
		lsim_compare_result_release(&t0);
		if (!seen)
			break;
		if (host_fitted)
			*host_fitted = true;
		if (fabs(floor / kernels - g->host_issue_s) <= 1e-12)
			break;
		g->host_issue_s = floor / kernels;
		rc = fit_launch_mfu(path, m, tp, g, &skip, NULL, d);
	}
	if (rc == 0 && mean_abs) {
		rc = iter_points(path, m, g, tp, &t0, d);
		for (int ph = 0; ph < 2 && rc == 0; ph++) {
			double sum = 0.0;
			int cnt = 0;
			for (size_t i = 0; i < t0.n; i++)
				if (t0.pts[i].decode == (ph == 1) && !skip[i]) {
					sum += fabs(lsim_compare_err(t0.pts[i].meas_iter_s,
								     t0.pts[i].roof_iter_s));
					cnt++;
				}
			mean_abs[ph] = cnt ? sum / cnt : NAN;
		}
		if (rc == 0)
			lsim_compare_result_release(&t0);
	}
	free(skip);
	return rc;
}

int lsim_host_issue_unseen(const char *path, const struct lsim_model_arch *m, int tp,
			   const struct lsim_gpu_profile *g, double *bound_s, struct lsim_diag *d)
{
	if (!path || !m || !g || !bound_s)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "", "no table, model or profile");
	struct lsim_gpu_profile g0 = *g;
	struct lsim_compare_result t;
	g0.host_issue_s = 0.0;
	int rc = iter_points(path, m, &g0, tp, &t, d);
	if (rc)
		return rc;
	double lo = INFINITY;
	for (size_t i = 0; i < t.n; i++)
		if (t.pts[i].roof_iter_s < lo)
			lo = t.pts[i].roof_iter_s;
	lsim_compare_result_release(&t);
	*bound_s = isfinite(lo) ? lo / lsim_perf_roofline_kernels(m) : 0.0;
	return 0;
}

static void summarise(struct lsim_compare_result *r)
{
	for (int ph = 0; ph < 2; ph++) {
		double sl = 0.0, si = 0.0;
		int nl = 0, ni = 0;
		for (size_t i = 0; i < r->n; i++) {
			const struct lsim_compare_point *p = &r->pts[i];
			if (p->decode != (ph == 1))
				continue;
			double el = lsim_compare_err(p->meas_layer_s, p->roof_layer_s);
			double ei = lsim_compare_err(p->meas_iter_s, p->roof_iter_s);
			if (isfinite(el)) {
				sl += fabs(el);
				nl++;
			}
			if (isfinite(ei)) {
				si += fabs(ei);
				ni++;
			}
		}
		r->mean_abs_layer[ph] = nl ? sl / nl : NAN;
		r->mean_abs_iter[ph] = ni ? si / ni : NAN;
	}
}

int lsim_profile_compare(const struct lsim_compare_opts *o, struct lsim_compare_result *r,
			 struct lsim_diag *d)
{
	if (!o || !r)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "", "no options or result");
	memset(r, 0, sizeof *r);
	if (!o->perf_dir || !o->perf_dir[0])
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "--profile", "no profile folder given");
	if (!o->gpu || !o->gpu[0] || !o->model || !o->model[0])
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, !o->gpu || !o->gpu[0] ? "--gpu" : "--model",
				     "compare needs --gpu and --model");
	if (!is_dir(o->perf_dir))
		return lsim_diag_set(d, LSIM_ENOENT, o->perf_dir, 0, 0, "--profile",
				     "no such folder");
	const char *base = o->data_dir && o->data_dir[0] ? o->data_dir : lsim_data_dir();
	char profiles[PATH_LEN], catalogue[PATH_LEN];
	snprintf(profiles, sizeof profiles, "%s/profiles", base);
	snprintf(catalogue, sizeof catalogue, "%s/models.yaml", base);
	struct lsim_gpu_profile g;
	struct lsim_model_arch m;
	int rc = lsim_gpu_profile_load(profiles, o->gpu, &g, d);
	if (rc == 0)
		rc = lsim_model_load(catalogue, o->model, &m, d);
	if (rc)
		return rc;
	int tps[LSIM_IMPORT_MAX_TP], n_dense, n_iter;
	int tps2[LSIM_IMPORT_MAX_TP];
	n_dense = list_tp_dirs(o->perf_dir, "dense.csv", tps, LSIM_IMPORT_MAX_TP);
	n_iter = list_tp_dirs(o->perf_dir, "iteration.csv", tps2, LSIM_IMPORT_MAX_TP);
	int tp = o->tp;
	if (n_dense + n_iter == 0)
		return lsim_diag_set(d, LSIM_ENOENT, o->perf_dir, 0, 0, "--profile",
				     "no table here (no tp<N>/dense.csv or tp<N>/iteration.csv)");
	if (tp <= 0) {
		if (n_dense + n_iter != 1) {
			char l1[128], l2[128];
			int_list(l1, sizeof l1, tps, n_dense);
			int_list(l2, sizeof l2, tps2, n_iter);
			return lsim_diag_set(d, LSIM_EINVAL, o->perf_dir, 0, 0, "--tp",
					     "choose a tensor-parallel degree with --tp (per-layer "
					     "tables: %s; per-iteration: %s)",
					     l1[0] ? l1 : "none", l2[0] ? l2 : "none");
		}
		tp = n_dense ? tps[0] : tps2[0];
	}
	char tpdir[PATH_LEN], path[PATH_LEN];
	if (o->fit_tp > 0) {
		snprintf(path, sizeof path, "%s/tp%d/iteration.csv", o->perf_dir, o->fit_tp);
		r->prof_launch_s = g.launch_s;
		r->prof_mfu_max = g.mfu_max;
		r->prof_host_issue_s = g.host_issue_s;
		rc = lsim_fit_overheads(path, &m, o->fit_tp, &g, r->fit_mean_abs, &r->fit_screened,
					&r->host_fitted, d);
		if (rc)
			return rc;
		r->fitted = true;
		r->fit_tp = o->fit_tp;
		r->fit_launch_s = g.launch_s;
		r->fit_mfu_max = g.mfu_max;
		r->host_issue_s = g.host_issue_s;
		rc = lsim_host_issue_unseen(path, &m, o->fit_tp, &g, &r->fit_host_unseen_s, d);
		if (rc)
			return rc;
	}
	snprintf(tpdir, sizeof tpdir, "%s/tp%d", o->perf_dir, tp);
	snprintf(r->gpu, sizeof r->gpu, "%s", g.name);
	snprintf(r->model, sizeof r->model, "%s", m.name);
	r->tp = tp;
	r->n_layers = m.n_layers;
	struct perf_pair rp = {0};
	rc = roofline_pair(&m, &g, tp, &rp, d);
	if (rc == 0) {
		pjoin(path, sizeof path, tpdir, "iteration.csv");
		if (is_file(path)) {
			snprintf(r->layout, sizeof r->layout, "iteration");
			rc = compare_iterations(path, &rp, r, d);
		} else {
			pjoin(path, sizeof path, tpdir, "dense.csv");
			if (!is_file(path)) {
				rc = lsim_diag_set(d, LSIM_ENOENT, tpdir, 0, 0, "--tp",
						   "no tp%d/dense.csv or tp%d/iteration.csv here", tp,
						   tp);
			} else {
				snprintf(r->layout, sizeof r->layout, "layers");
				rc = compare_layers(o->perf_dir, tpdir, &m, &rp, r, d);
			}
		}
	}
	pair_release(&rp);
	if (rc) {
		lsim_compare_result_release(r);
		return rc;
	}
	summarise(r);
	return 0;
}

void lsim_compare_result_release(struct lsim_compare_result *r)
{
	if (!r)
		return;
	free(r->pts);
	r->pts = NULL;
	r->n = 0;
}

static void json_num(struct lsim_buf *b, double v)
{
	if (isfinite(v))
		lsim_buf_printf(b, "%.9g", v);
	else
		lsim_buf_printf(b, "null");
}

static void json_str(struct lsim_buf *b, const char *s)
{
	lsim_buf_printf(b, "\"");
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			lsim_buf_printf(b, "\\%c", ch);
		else if (ch < 0x20)
			lsim_buf_printf(b, "\\u%04x", ch);
		else
			lsim_buf_printf(b, "%c", ch);
	}
	lsim_buf_printf(b, "\"");
}

static void text_pct(struct lsim_buf *b, double e)
{
	if (isfinite(e))
		lsim_buf_printf(b, " %+9.1f", 100.0 * e);
	else
		lsim_buf_printf(b, " %9s", "-");
}

static void text_val(struct lsim_buf *b, double v, double scale)
{
	if (isfinite(v))
		lsim_buf_printf(b, " %12.3f", v * scale);
	else
		lsim_buf_printf(b, " %12s", "-");
}

void lsim_compare_format(const struct lsim_compare_result *r, bool json, struct lsim_buf *b)
{
	static const char *const phase[2] = {"prefill", "decode"};
	if (json) {
		lsim_buf_printf(b, "{\"gpu\": ");
		json_str(b, r->gpu);
		lsim_buf_printf(b, ", \"model\": ");
		json_str(b, r->model);
		lsim_buf_printf(b, ", \"tp\": %d, \"layers\": %d, \"layout\": ", r->tp, r->n_layers);
		json_str(b, r->layout);
		lsim_buf_printf(b, ", \"tp_comm_measured\": %s, \"points\": [",
				r->tp_comm ? "true" : "false");
		for (size_t i = 0; i < r->n; i++) {
			const struct lsim_compare_point *p = &r->pts[i];
			lsim_buf_printf(b, "%s\n  {\"phase\": \"%s\", \"batch\": %d, \"tokens\": %d, "
					   "\"context\": %d, \"measured_layer_s\": ",
					i ? "," : "", phase[p->decode], p->batch, p->tokens, p->context);
			json_num(b, p->meas_layer_s);
			lsim_buf_printf(b, ", \"roofline_layer_s\": ");
			json_num(b, p->roof_layer_s);
			lsim_buf_printf(b, ", \"layer_error\": ");
			json_num(b, lsim_compare_err(p->meas_layer_s, p->roof_layer_s));
			lsim_buf_printf(b, ", \"measured_iter_s\": ");
			json_num(b, p->meas_iter_s);
			lsim_buf_printf(b, ", \"roofline_iter_s\": ");
			json_num(b, p->roof_iter_s);
			lsim_buf_printf(b, ", \"iter_error\": ");
			json_num(b, lsim_compare_err(p->meas_iter_s, p->roof_iter_s));
			lsim_buf_printf(b, "}");
		}
		lsim_buf_printf(b, "],\n \"mean_abs_error\": {");
		for (int ph = 0; ph < 2; ph++) {
			lsim_buf_printf(b, "%s\"%s\": {\"layer\": ", ph ? ", " : "", phase[ph]);
			json_num(b, r->mean_abs_layer[ph]);
			lsim_buf_printf(b, ", \"iter\": ");
			json_num(b, r->mean_abs_iter[ph]);
			lsim_buf_printf(b, "}");
		}
		lsim_buf_printf(b, "}");
		if (r->fitted) {
			lsim_buf_printf(b, ",\n \"fit\": {\"tp\": %d, \"launch_latency_s\": ", r->fit_tp);
			json_num(b, r->fit_launch_s);
			lsim_buf_printf(b, ", \"mfu_max\": ");
			json_num(b, r->fit_mfu_max);
			lsim_buf_printf(b, ", \"profile_launch_latency_s\": ");
			json_num(b, r->prof_launch_s);
			lsim_buf_printf(b, ", \"profile_mfu_max\": ");
			json_num(b, r->prof_mfu_max);
			lsim_buf_printf(b, ", \"host_issue_latency_s\": ");
			json_num(b, r->host_issue_s);
			lsim_buf_printf(b, ", \"host_issue_fitted\": %s, \"profile_host_issue_latency_s\": ",
					r->host_fitted ? "true" : "false");
			json_num(b, r->prof_host_issue_s);
			lsim_buf_printf(b, ", \"host_issue_unseen_below_s\": ");
			json_num(b, r->fit_host_unseen_s);
			lsim_buf_printf(b, ", \"mean_abs_error\": {\"prefill\": ");
			json_num(b, r->fit_mean_abs[0]);
			lsim_buf_printf(b, ", \"decode\": ");
			json_num(b, r->fit_mean_abs[1]);
			lsim_buf_printf(b, "}}");
		}
		lsim_buf_printf(b, "}\n");
		return;
	}
	lsim_buf_printf(b, "roofline vs measured: %s, %s, tp %d, %d layers (%s table)\n", r->gpu,
			r->model, r->tp, r->n_layers, r->layout);
	if (r->tp > 1 && !strcmp(r->layout, "layers"))
		lsim_buf_printf(b, "TP communication: %s\n",
				r->tp_comm ? "measured all-reduce (allreduce.csv) added to the table"
					   : "not in the table (kernel times only); the roofline "
					     "includes two all-reduces per layer");
	if (r->fitted)
		lsim_buf_printf(b, "fitted on tp%d: launch_latency %.2f us (profile %.2f us), "
				   "mfu_max %.3f (profile %.3f); on tp%d: prefill %.1f%%, decode "
				   "%.1f%% mean |error| (%zu inconsistent rows left out)\n",
				r->fit_tp, 1e6 * r->fit_launch_s, 1e6 * r->prof_launch_s,
				r->fit_mfu_max, r->prof_mfu_max, r->fit_tp,
				100.0 * r->fit_mean_abs[0], 100.0 * r->fit_mean_abs[1],
				r->fit_screened);
	if (r->fitted && r->host_fitted)
		lsim_buf_printf(b, "host floor: host_issue_latency %.2f us fitted (profile %.2f us); the "
				   "tp%d rows cannot see one below %.2f us\n",
				1e6 * r->host_issue_s, 1e6 * r->prof_host_issue_s, r->fit_tp,
				1e6 * r->fit_host_unseen_s);
	else if (r->fitted)
		lsim_buf_printf(b, "host floor: host_issue_latency %.2f us (profile, not fitted); the "
				   "tp%d rows cannot see one below %.2f us\n",
				1e6 * r->host_issue_s, r->fit_tp, 1e6 * r->fit_host_unseen_s);
	lsim_buf_printf(b, "error = roofline / measured - 1\n\n");
	lsim_buf_printf(b, "%-7s %5s %6s %7s %12s %12s %9s %12s %12s %9s\n", "phase", "batch",
			"tokens", "context", "layer_us", "roof_us", "err%", "iter_ms", "roof_ms",
			"err%");
	for (size_t i = 0; i < r->n; i++) {
		const struct lsim_compare_point *p = &r->pts[i];
		lsim_buf_printf(b, "%-7s %5d %6d %7d", phase[p->decode], p->batch, p->tokens,
				p->context);
		text_val(b, p->meas_layer_s, 1e6);
		text_val(b, p->roof_layer_s, 1e6);
		text_pct(b, lsim_compare_err(p->meas_layer_s, p->roof_layer_s));
		text_val(b, p->meas_iter_s, 1e3);
		text_val(b, p->roof_iter_s, 1e3);
		text_pct(b, lsim_compare_err(p->meas_iter_s, p->roof_iter_s));
		lsim_buf_printf(b, "\n");
	}
	lsim_buf_printf(b, "\nmean |error|:");
	for (int ph = 0; ph < 2; ph++) {
		lsim_buf_printf(b, "  %s layer", phase[ph]);
		if (isfinite(r->mean_abs_layer[ph]))
			lsim_buf_printf(b, " %.1f%%", 100.0 * r->mean_abs_layer[ph]);
		else
			lsim_buf_printf(b, " -");
		lsim_buf_printf(b, ", iteration");
		if (isfinite(r->mean_abs_iter[ph]))
			lsim_buf_printf(b, " %.1f%%", 100.0 * r->mean_abs_iter[ph]);
		else
			lsim_buf_printf(b, " -");
		lsim_buf_printf(b, ph ? "\n" : ";");
	}
}

/* ------------------------------------------------------------------ */
/* Command line                                                        */
/* ------------------------------------------------------------------ */

#define EXIT_BADINPUT LSIM_EXIT_BADINPUT

static const char usage_import[] =
	"usage: llmsim profile import --from llmservingsim|vidur|splitwise SRC... -o OUTDIR\n"
	"                             [--model NAME] [--gpu NAME] [--tp N]\n"
	"\n"
	"Turns published measurements into tables under OUTDIR/tp<N>/:\n"
	"  llmservingsim  a profiler folder in the current layout (tp<N>/dense.csv ...),\n"
	"                 checked and copied; or the v0 layers.csv (a file, or a folder\n"
	"                 with layers.csv or tp<N>/layers.csv), converted\n"
	"  vidur          mlp.csv and attention.csv summed into per-layer rows;\n"
	"                 all_reduce.csv / send_recv.csv into bytes -> time tables\n"
	"                 (SRC: files, or folders holding them)\n"
	"  splitwise      perf_model.csv into per-iteration tables (tp<N>/iteration.csv);\n"
	"                 --model and --gpu pick its model and hardware rows\n"
	"--tp N imports that tensor-parallel degree only. --model and --gpu are recorded\n"
	"in OUTDIR/import.yaml. Per-layer folders are checked by loading them through the\n"
	"table perf backend; files are written under temporary names and renamed when\n"
	"complete. Details: docs/profiles.md.\n";

static const char usage_compare[] =
	"usage: llmsim profile compare --profile PERF_DIR --gpu NAME --model NAME [--tp N]\n"
	"                              [--fit-tp N] [--json]\n"
	"\n"
	"Puts llmsim's roofline prediction for the hardware profile and model beside the\n"
	"measured table in PERF_DIR (per decoder layer and per iteration): prefills of\n"
	"1, 2, 4 .. 8192 tokens and decode batches of 1, 4, 16, 64, 256 sequences at\n"
	"contexts 128, 512, 2048, 8192, wherever the table has measurements; for a\n"
	"per-iteration table (Splitwise) its own batch configurations. Prints a table\n"
	"with the error roofline / measured - 1, or one JSON object with --json.\n"
	"--fit-tp N first fits the serving stack's launch_latency (a per-kernel cost\n"
	"that does not shrink with TP) and mfu_max to the per-iteration table\n"
	"tp<N>/iteration.csv, then compares --tp with the fitted values. It fits the\n"
	"host_issue_latency (the host floor) too where rows of tp<N> are bound by it,\n"
	"else keeps the profile's, and prints the largest value the rows cannot see.\n";

static int parse_tp(const char *s, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!s[0] || *end || v < 1 || v > 4096) {
		fprintf(stderr, "llmsim: --tp: '%s' is not a tensor-parallel degree\n", s);
		return EXIT_BADINPUT;
	}
	*out = (int)v;
	return 0;
}

int lsim_cli_profile_import(int argc, char **argv)
{
	struct lsim_import_opts o = {.from = -1};
	const char *from = NULL;
	const char **src = calloc((size_t)(argc > 0 ? argc : 1), sizeof *src);
	if (!src)
		return lsim_cli_nomem();
	int rc = 0;
	for (int i = 1; i < argc && rc == 0; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_import, stdout);
			free(src);
			return 0;
		} else if (!strcmp(a, "--from") && i + 1 < argc) {
			from = argv[++i];
		} else if (!strcmp(a, "-o") && i + 1 < argc) {
			o.outdir = argv[++i];
		} else if (!strcmp(a, "--model") && i + 1 < argc) {
			o.model = argv[++i];
		} else if (!strcmp(a, "--gpu") && i + 1 < argc) {
			o.gpu = argv[++i];
		} else if (!strcmp(a, "--tp") && i + 1 < argc) {
			rc = parse_tp(argv[++i], &o.tp);
		} else if (a[0] == '-') {
			fprintf(stderr, "llmsim: unexpected argument '%s'\n%s", a, usage_import);
			rc = EXIT_BADINPUT;
		} else {
			src[o.n_src++] = a;
		}
	}
	if (rc == 0 && (!from || lsim_import_from_parse(from, &o.from) != 0)) {
		fprintf(stderr, "llmsim: --from: %s%s%s (llmservingsim, vidur or splitwise)\n%s",
			from ? "unknown source '" : "missing", from ? from : "", from ? "'" : "",
			usage_import);
		rc = EXIT_BADINPUT;
	}
	if (rc == 0 && (o.n_src == 0 || !o.outdir)) {
		fprintf(stderr, "llmsim: profile import needs SRC and -o OUTDIR\n%s", usage_import);
		rc = EXIT_BADINPUT;
	}
	if (rc) {
		free(src);
		return rc;
	}
	o.src = src;
	struct lsim_diag d = {0};
	struct lsim_import_result r;
	int err = lsim_profile_import(&o, &r, &d);
	free(src);
	if (err)
		return lsim_cli_fail(&d, err);
	printf("imported %s: %zu rows -> %s (%s tables)\n", from, r.rows_read, o.outdir, r.layout);
	for (int i = 0; i < r.n_tp; i++)
		printf("  tp%-3d %s\n", r.tp[i],
		       !strcmp(r.layout, "iteration") ? "per-iteration (llmsim profile compare)"
		       : r.loadable[i]		     ? "loads in the table perf backend"
						     : "incomplete: does not load in the table backend");
	for (int i = 0; i < r.n_files; i++)
		printf("  wrote %s\n", r.files[i]);
	if (r.note[0])
		printf("  note: %s\n", r.note);
	return 0;
}

int lsim_cli_profile_compare(int argc, char **argv)
{
	struct lsim_compare_opts o = {0};
	bool json = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_compare, stdout);
			return 0;
		} else if (!strcmp(a, "--profile") && i + 1 < argc) {
			o.perf_dir = argv[++i];
		} else if (!strcmp(a, "--gpu") && i + 1 < argc) {
			o.gpu = argv[++i];
		} else if (!strcmp(a, "--model") && i + 1 < argc) {
			o.model = argv[++i];
		} else if (!strcmp(a, "--tp") && i + 1 < argc) {
			int rc = parse_tp(argv[++i], &o.tp);
			if (rc)
				return rc;
		} else if (!strcmp(a, "--fit-tp") && i + 1 < argc) {
			int rc = parse_tp(argv[++i], &o.fit_tp);
			if (rc)
				return rc;
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else {
			fprintf(stderr, "llmsim: unexpected argument '%s'\n%s", a, usage_compare);
			return EXIT_BADINPUT;
		}
	}
	if (!o.perf_dir || !o.gpu || !o.model) {
		fprintf(stderr, "llmsim: profile compare needs --profile, --gpu and --model\n%s",
			usage_compare);
		return EXIT_BADINPUT;
	}
	struct lsim_diag d = {0};
	struct lsim_compare_result r;
	int rc = lsim_profile_compare(&o, &r, &d);
	if (rc)
		return lsim_cli_fail(&d, rc);
	struct lsim_buf b = {0};
	lsim_compare_format(&r, json, &b);
	if (b.data)
		fputs(b.data, stdout);
	bool failed = b.failed;
	lsim_buf_release(&b);
	lsim_compare_result_release(&r);
	if (failed)
		return lsim_cli_nomem();
	return 0;
}
