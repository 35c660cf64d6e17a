/*
 * profile_import.c - `llmsim profile import` (published measurements ->
 * the table backend's per-layer CSVs, or per-iteration tables): the part
 * common to every source format (file and CSV field helpers, the records,
 * the staging folder, writing the tables and import.yaml,
 * lsim_profile_import), and the command-line entry points of
 * `llmsim profile import` and `llmsim profile compare`. The readers of each
 * source format are in import_llmservingsim.c, import_vidur.c and
 * import_splitwise.c; compare is in profile_compare.c.
 *
 * Import reads every source row into one list of records keyed by (file,
 * tp, operator, keys), collapses duplicate keys (mean; the median of the
 * repeated runs for Splitwise, with GSL), writes the files into a staging
 * folder inside the output folder, loads every per-layer tp folder through
 * the table backend as a check, and then renames the files into place.
 * The mapping of each source onto the table layout is in docs/profiles.md.
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
#include "kernel/infile.h"
#include "import/import_internal.h"

int lsim_imp_nomem(struct lsim_diag *d, const char *what)
{
	return lsim_diag_set(d, LSIM_ENOMEM, what ? what : "", 0, 0, "", "out of memory");
}

bool lsim_imp_is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool lsim_imp_is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

const char *lsim_imp_base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* buf = a/b; false when it does not fit. */
bool lsim_imp_pjoin(char *buf, size_t size, const char *a, const char *b)
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
	return n > 0 && (size_t)n < sizeof rel && lsim_imp_pjoin(buf, size, dir, rel);
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
			if (lsim_imp_is_dir(sub))
				remove_tree(sub);
			else
				unlink(sub);
		}
		closedir(dh);
	}
	rmdir(path);
}

/* The tp<N> sub-folders of dir, ascending; returns how many (at most max). */
int lsim_imp_list_tp_dirs(const char *dir, const char *must_hold, int *tp, int max)
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
		if (snprintf(p, sizeof p, "%s/%s/%s", dir, s, must_hold) >= (int)sizeof p || !lsim_imp_is_file(p))
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

void lsim_imp_int_list(char *buf, size_t size, const int *v, int n)
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
int lsim_imp_num_field(const struct lsim_csv *c, int col, double lo, bool integer, double *out,
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

static int no_rows(const struct lsim_csv *c, struct lsim_diag *d)
{
	return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(c), lsim_csv_line(c), 0, "",
			     "no data rows");
}

bool lsim_imp_more_rows(struct lsim_csv *c, int *rc, struct lsim_diag *d)
{
	if (*rc != 0)
		return false;
	int got = next_row(c, d);
	if (got <= 0) {
		*rc = got;
		return false;
	}
	return true;
}

int lsim_imp_rows_end(const struct lsim_csv *c, int rc, size_t n, size_t *rows,
		      struct lsim_diag *d)
{
	if (rc == 0 && n == 0)
		rc = no_rows(c, d);
	if (rows)
		*rows += n;
	return rc;
}

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */


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


struct rec *lsim_imp_rec_push(struct recs *rs, int kind, int tp, const char *name,
			      struct lsim_diag *d)
{
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 1024;
		struct rec *na = realloc(rs->a, cap * sizeof *na);
		if (!na) {
			lsim_imp_nomem(d, "records");
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


static int stage_path(const struct stage *st, const char *rel, char *buf, size_t size,
		      struct lsim_diag *d)
{
	if (snprintf(buf, size, "%s/%s", st->dir, rel) >= (int)size)
		return lsim_diag_set(d, LSIM_EINVAL, st->outdir, 0, 0, "-o", "path too long");
	return 0;
}

/* Opens staging/rel for writing and records rel among the files written. */
int lsim_imp_stage_open(struct stage *st, const char *rel, FILE **out, struct lsim_diag *d)
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
		if (lsim_make_dirs(parent) != 0)
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

int lsim_imp_stage_close(FILE *f, const char *rel, struct lsim_diag *d)
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
		lsim_imp_pjoin(from, sizeof from, st->dir, rel);
		if (snprintf(to, sizeof to, "%s/%s", st->outdir, rel) >= (int)sizeof to) {
			rc = lsim_diag_set(d, LSIM_EINVAL, st->outdir, 0, 0, "-o", "path too long");
			break;
		}
		snprintf(parent, sizeof parent, "%s", to);
		char *slash = strrchr(parent, '/');
		if (slash)
			*slash = '\0';
		if (lsim_make_dirs(parent) != 0)
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
		return lsim_imp_nomem(d, "records");
	}
	int rc = 0;
	FILE *f = NULL;
	char rel[96] = "";
	for (size_t i = 0; i < rs->n && rc == 0;) {
		const struct rec *r = &rs->a[i];
		if (i == 0 || !same_file(r, &rs->a[i - 1])) {
			if (f && (rc = lsim_imp_stage_close(f, rel, d)) != 0) {
				f = NULL;
				break;
			}
			f = NULL;
			if (rec_per_tp(r->kind))
				snprintf(rel, sizeof rel, "tp%d/%s", r->tp, rec_file[r->kind]);
			else
				snprintf(rel, sizeof rel, "%s", rec_file[r->kind]);
			if ((rc = lsim_imp_stage_open(st, rel, &f, d)) != 0)
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
		int rc2 = lsim_imp_stage_close(f, rel, d);
		if (rc == 0)
			rc = rc2;
	}
	free(buf0);
	free(buf1);
	return rc;
}

/* Adds tp to the result's sorted list of degrees. */
void lsim_imp_result_add_tp(struct lsim_import_result *r, int tp)
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

void lsim_imp_note_add(struct lsim_import_result *r, const char *text)
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
			lsim_imp_result_add_tp(r, rs->a[i].tp);
	if (tp > 0 && r->n_tp == 0 && n_have > 0) {
		for (int i = 1; i < n_have; i++)
			for (int j = i; j > 0 && have[j - 1] > have[j]; j--) {
				int t = have[j];
				have[j] = have[j - 1];
				have[j - 1] = t;
			}
		char list[128];
		lsim_imp_int_list(list, sizeof list, have, n_have);
		return lsim_diag_set(d, LSIM_ENOENT, src, 0, 0, "--tp",
				     "no rows for tensor-parallel degree %d (the source has %s)", tp,
				     list);
	}
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
	int rc = lsim_imp_stage_open(st, "import.yaml", &f, d);
	if (rc)
		return rc;
	fprintf(f, "# Written by `llmsim profile import`; the layout is described in docs/profiles.md.\n");
	fprintf(f, "source: %s\ninputs: [", from[o->from]);
	for (size_t i = 0; i < o->n_src; i++) {
		fputs(i ? ", " : "", f);
		yaml_str(f, lsim_imp_base_name(o->src[i]));
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
	return lsim_imp_stage_close(f, "import.yaml", d);
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
	if (lsim_make_dirs(o->outdir) != 0)
		return lsim_diag_set(d, LSIM_EIO, o->outdir, 0, 0, "-o", "cannot create: %s",
				     strerror(errno));
	struct stage st = {.outdir = o->outdir, .r = r};
	if (snprintf(st.dir, sizeof st.dir, "%s/.import-%ld", o->outdir, (long)getpid()) >=
	    (int)sizeof st.dir - 64)
		return lsim_diag_set(d, LSIM_EINVAL, o->outdir, 0, 0, "-o", "path too long");
	remove_tree(st.dir); /* a leftover of a killed import with the same pid */
	if (lsim_make_dirs(st.dir) != 0)
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
		rc = lsim_imp_llmservingsim(o, &st, &rs, r, &copied, d);
		break;
	case LSIM_IMPORT_VIDUR:
		rc = lsim_imp_vidur(o, &rs, r, d);
		break;
	default:
		rc = lsim_imp_splitwise(o, &rs, r, model, gpu, sizeof model, d);
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
			all = all && tp_path(np, sizeof np, st.dir, r->tp[i], need[k]) && lsim_imp_is_file(np);
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
