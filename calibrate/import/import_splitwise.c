/*
 * import_splitwise.c - `llmsim profile import --from splitwise`: Splitwise's
 * perf_model.csv (prompt and per-token time per batch configuration) into
 * per-iteration tables, tp<N>/iteration.csv. Mapping rules: docs/profiles.md.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "kernel/csv.h"
#include "import/import_internal.h"

#define MAX_LABELS 16

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

int lsim_imp_splitwise(const struct lsim_import_opts *o, struct recs *rs,
		       struct lsim_import_result *r, char *model, char *gpu, size_t size,
		       struct lsim_diag *d)
{
	if (o->n_src != 1)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "SRC",
				     "splitwise takes one perf_model.csv");
	char path[PATH_LEN];
	const char *src = o->src[0];
	if (lsim_imp_is_dir(src)) {
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
		while (lsim_imp_more_rows(c, &rc, d)) {
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
				rc = lsim_imp_num_field(c, idx[vi[k]], lo[k], k < 3 || k == 5, &v[k], d);
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
			struct rec *x = lsim_imp_rec_push(rs, REC_ITER, (int)v[5], "", d);
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
		rc = lsim_imp_rows_end(c, rc, n, NULL, d);
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
	lsim_imp_note_add(r, "per-iteration times (Splitwise measures whole prompt and token phases): "
			     "llmsim profile compare reads them; the table backend does not");
	return 0;
}
