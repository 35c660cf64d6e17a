/*
 * import_llmservingsim.c - `llmsim profile import --from llmservingsim`:
 * LLMServingSim profiler output, either the current layout (tp<N>/dense.csv
 * ...: loaded through the table backend, then copied verbatim) or the older
 * v0 layers.csv (read into records). Mapping rules: docs/profiles.md.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "kernel/csv.h"
#include "serving/perf.h"
#include "import/import_internal.h"

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
	while (lsim_imp_more_rows(c, &rc, d)) {
		const char *layer = lsim_csv_field(c, col[0]);
		if (!layer[0] || strlen(layer) >= NAME_LEN) {
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, lsim_csv_line(c),
					   lsim_csv_field_col(c, col[0]), "layer_name",
					   "empty or longer than %d characters", NAME_LEN - 1);
			break;
		}
		double input, kv = 0.0, tp, ns;
		if ((rc = lsim_imp_num_field(c, col[1], 1.0, true, &input, d)) != 0 ||
		    (kv_col >= 0 && (rc = lsim_imp_num_field(c, kv_col, 0.0, true, &kv, d)) != 0) ||
		    (rc = lsim_imp_num_field(c, col[2], 1.0, true, &tp, d)) != 0 ||
		    (rc = lsim_imp_num_field(c, col[3], 0.0, false, &ns, d)) != 0)
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
			r = lsim_imp_rec_push(rs, REC_ATTN, (int)tp, "", d);
			if (r) {
				r->k[0] = input;
				r->k[1] = kv;
			}
		} else if (!strcmp(layer, "lm_head")) {
			/* the v0 profile runs lm_head on `input` rows: one per sequence in vLLM */
			r = lsim_imp_rec_push(rs, REC_SEQ, (int)tp, layer, d);
			if (r)
				r->k[0] = input;
		} else {
			r = lsim_imp_rec_push(rs, REC_DENSE, (int)tp, layer, d);
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
	rc = lsim_imp_rows_end(c, rc, n, rows, d);
	lsim_csv_close(c);
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
	int rc = lsim_imp_stage_open(st, rel, &f, d);
	if (rc)
		return rc;
	rc = copy_file(from, f, d);
	int rc2 = lsim_imp_stage_close(f, rel, d);
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
	int n = lsim_imp_list_tp_dirs(dir, "dense.csv", tps, LSIM_IMPORT_MAX_TP);
	char list[128];
	lsim_imp_int_list(list, sizeof list, tps, n);
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
			if (!lsim_imp_is_file(from))
				continue;
			snprintf(rel, sizeof rel, "tp%d/%s", tps[i], files[k]);
			rc = stage_copy(st, from, rel, d);
			if (k < 3)
				r->rows_read += count_rows(from);
			moe_copied = moe_copied || (k == 3 && tps[i] == 1);
		}
		lsim_imp_result_add_tp(r, tps[i]);
	}
	/* experts are profiled once, at TP 1, and read there for every degree */
	snprintf(from, sizeof from, "%s/tp1/moe.csv", dir);
	if (rc == 0 && !moe_copied && lsim_imp_is_file(from))
		rc = stage_copy(st, from, "tp1/moe.csv", d);
	snprintf(from, sizeof from, "%s/meta.yaml", dir);
	if (rc == 0 && lsim_imp_is_file(from))
		rc = stage_copy(st, from, "meta.yaml", d);
	return rc;
}

int lsim_imp_llmservingsim(const struct lsim_import_opts *o, struct stage *st,
			   struct recs *rs, struct lsim_import_result *r, bool *copied,
			   struct lsim_diag *d)
{
	*copied = false;
	for (size_t i = 0; i < o->n_src; i++) {
		const char *src = o->src[i];
		char p[PATH_LEN];
		int tps[LSIM_IMPORT_MAX_TP];
		int rc = 0;
		if (lsim_imp_is_file(src)) {
			rc = read_lss_v0(src, rs, &r->rows_read, d);
		} else if (!lsim_imp_is_dir(src)) {
			return lsim_diag_set(d, LSIM_ENOENT, src, 0, 0, "SRC", "no such file or folder");
		} else if (lsim_imp_list_tp_dirs(src, "dense.csv", tps, LSIM_IMPORT_MAX_TP) > 0) {
			if (o->n_src > 1)
				return lsim_diag_set(d, LSIM_EINVAL, src, 0, 0, "SRC",
						     "a profile in the current layout (tp<N>/dense.csv) "
						     "is imported on its own");
			*copied = true;
			return import_lss_current(o, src, st, r, d);
		} else if (snprintf(p, sizeof p, "%s/layers.csv", src) < (int)sizeof p && lsim_imp_is_file(p)) {
			rc = read_lss_v0(p, rs, &r->rows_read, d);
		} else {
			int n = lsim_imp_list_tp_dirs(src, "layers.csv", tps, LSIM_IMPORT_MAX_TP);
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
	lsim_imp_note_add(r, "LLMServingSim v0 profile: attention measured for prefill chunks only "
			     "(no decode rows)");
	return 0;
}
