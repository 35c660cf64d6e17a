/*
 * profile_learn.c - `llmsim profile train` and `llmsim profile eval`:
 * argument parsing, the printed summaries (cluster table; per-cluster MSE
 * in the layout of Dang et al.'s Table 2; relative-error CDF points) and
 * the HDF5 file of an evaluation. The work is done by sim/learn/kproto.c.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <hdf5.h>

#include "learn/kproto.h"
#include "cli/cli.h"
#include "cli/profile_learn.h"

#define EXIT_BADINPUT LSIM_EXIT_BADINPUT
#define MAX_COLS 256

static const char usage_train[] =
	"usage: llmsim profile train DATA.csv --numeric COLS --categorical COLS\n"
	"           --target COLS -k K [--model gb|rf|linear] [--mu MU]\n"
	"           [--restarts N] [--seed S] -o MODEL\n"
	"\n"
	"Clusters the rows of DATA.csv with K-Prototypes (numeric attributes\n"
	"standardised, categorical ones weighted by MU per mismatch; default MU:\n"
	"half the mean standard deviation of the standardised numeric attributes)\n"
	"and fits one regressor per cluster and target: gb (gradient boosting) or\n"
	"rf (random forest) through XGBoost, or linear least squares (GSL).\n"
	"COLS is a comma-separated list of column names; --numeric or\n"
	"--categorical may be left out (not both), --target too (clusters only).\n"
	"Defaults: --model gb, --restarts 10, --seed 1. Writes the model file MODEL.\n";

static const char usage_eval[] =
	"usage: llmsim profile eval MODEL DATA.csv [--h5 OUT.h5] [--seed S]\n"
	"\n"
	"Assigns each row of DATA.csv (which must hold the model's columns) to the\n"
	"model's nearest prototype, splits every cluster 70/30 at random (seed S,\n"
	"default the model's), trains rf, gb and linear regressors on the 70% and\n"
	"prints the mean squared error of each on the 30% per cluster and target,\n"
	"and points of the relative-error CDF |pred - y| / |y|. --h5 also writes\n"
	"the tables and the full CDFs to OUT.h5.\n";

__attribute__((format(printf, 3, 4)))
static int bad_arg(const char *cmd, const char *usage, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "llmsim: profile %s: ", cmd);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n%s", usage);
	va_end(ap);
	return EXIT_BADINPUT;
}

/* Splits "a,b,c" in place into list (at most MAX_COLS); -1 on an empty name. */
static int split_cols(char *s, const char **list, size_t *n)
{
	*n = 0;
	for (char *p = s;;) {
		char *c = strchr(p, ',');
		if (c)
			*c = '\0';
		if (!*p || *n == MAX_COLS)
			return -1;
		list[(*n)++] = p;
		if (!c)
			return 0;
		p = c + 1;
	}
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	if (!*s || *s == '-' || *s == '+')
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end || errno == ERANGE)
		return -1;
	*out = v;
	return 0;
}

/* ---- train ---- */

int lsim_cli_profile_train(int argc, char **argv)
{
	const char *data = NULL, *out = NULL, *model = "gb";
	char *cols[3] = {NULL, NULL, NULL}; /* numeric, categorical, target */
	const char *num[MAX_COLS], *cat[MAX_COLS], *tgt[MAX_COLS];
	size_t n_num = 0, n_cat = 0, n_tgt = 0;
	struct lsim_kp_opts o = {.k = 0, .mu = -1, .restarts = 10, .seed = 1};
	uint64_t v;
	gsl_set_error_handler_off();
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool has = i + 1 < argc;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_train, stdout);
			return 0;
		} else if (!strcmp(a, "--numeric") && has) {
			cols[0] = argv[++i];
		} else if (!strcmp(a, "--categorical") && has) {
			cols[1] = argv[++i];
		} else if (!strcmp(a, "--target") && has) {
			cols[2] = argv[++i];
		} else if (!strcmp(a, "-k") && has) {
			if (parse_u64(argv[++i], &v) != 0 || v < 1 || v > 1000000)
				return bad_arg("train", usage_train,
					       "-k: '%s' is not an integer in [1, 1000000]", argv[i]);
			o.k = (size_t)v;
		} else if (!strcmp(a, "--model") && has) {
			model = argv[++i];
		} else if (!strcmp(a, "--mu") && has) {
			char *end;
			o.mu = strtod(argv[++i], &end);
			if (*end || !argv[i][0] || !isfinite(o.mu) || o.mu < 0)
				return bad_arg("train", usage_train,
					       "--mu: '%s' is not a finite number >= 0", argv[i]);
		} else if (!strcmp(a, "--restarts") && has) {
			if (parse_u64(argv[++i], &v) != 0 || v < 1 || v > 100000)
				return bad_arg("train", usage_train,
					       "--restarts: '%s' is not an integer in [1, 100000]",
					       argv[i]);
			o.restarts = (int)v;
		} else if (!strcmp(a, "--seed") && has) {
			if (parse_u64(argv[++i], &o.seed) != 0)
				return bad_arg("train", usage_train,
					       "--seed: '%s' is not a non-negative integer", argv[i]);
		} else if (!strcmp(a, "-o") && has) {
			out = argv[++i];
		} else if (a[0] == '-' || data) {
			return bad_arg("train", usage_train, "unexpected argument '%s'", a);
		} else {
			data = a;
		}
	}
	if (!data)
		return bad_arg("train", usage_train, "missing %s", "DATA.csv");
	if (!out)
		return bad_arg("train", usage_train, "missing %s", "-o MODEL");
	if (o.k == 0)
		return bad_arg("train", usage_train, "missing %s", "-k K");
	int kind = lsim_kp_kind_parse(model);
	if (kind != LSIM_KP_GB && kind != LSIM_KP_RF && kind != LSIM_KP_LINEAR)
		return bad_arg("train", usage_train,
			       "--model: '%s' is not gb, rf or linear", model);
	if ((cols[0] && split_cols(cols[0], num, &n_num) != 0) ||
	    (cols[1] && split_cols(cols[1], cat, &n_cat) != 0) ||
	    (cols[2] && split_cols(cols[2], tgt, &n_tgt) != 0))
		return bad_arg("train", usage_train,
			       "%s: an empty column name, or more than 256", "COLS");
	if (n_num + n_cat == 0)
		return bad_arg("train", usage_train, "%s",
			       "give at least one --numeric or --categorical column");
	struct lsim_diag d = {0};
	struct lsim_kp_data x;
	int rc = lsim_kp_data_read_csv(data, num, n_num, cat, n_cat, tgt, n_tgt, &x, &d);
	if (rc != 0)
		return lsim_cli_fail(&d, rc);
	struct lsim_kproto_model *m = NULL;
	rc = lsim_kproto_train(&x, &o, (enum lsim_kp_kind)kind, &m, &d);
	if (rc != 0) {
		if (!d.file[0])
			snprintf(d.file, sizeof d.file, "%s", data);
		lsim_kp_data_release(&x);
		return lsim_cli_fail(&d, rc);
	}
	printf("read %zu rows of %s: %zu numeric, %zu categorical attributes, %zu targets\n",
	       x.n, data, n_num, n_cat, n_tgt);
	const struct lsim_kp_clusters *c = &m->cl;
	printf("k-prototypes: k %zu, mu %.4g, cost %.6g (best of %d restarts: "
	       "restart %d, %d rounds), seed %llu\n",
	       c->k, c->mu, c->cost, o.restarts, c->best_restart + 1, c->iterations,
	       (unsigned long long)o.seed);
	printf("%-8s %8s  prototype\n", "cluster", "rows");
	for (size_t j = 0; j < c->k; j++) {
		printf("%-8zu %8zu ", j, m->sizes[j]);
		for (size_t i = 0; i < m->n_num; i++)
			printf(" %s=%.6g", m->num_names[i],
			       c->center[i] + c->scale[i] * c->proto_num[j * m->n_num + i]);
		for (size_t i = 0; i < m->n_cat; i++)
			printf(" %s=%s", m->cat_names[i],
			       m->levels[i][c->proto_cat[j * m->n_cat + i]]);
		printf("\n");
	}
	if (n_tgt > 0) {
		size_t fallback = 0;
		for (size_t i = 0; i < n_tgt * c->k; i++)
			fallback += m->reg[i].kind == LSIM_KP_CONST;
		printf("regressors: %s per cluster and target (%zu of %zu are the "
		       "cluster mean: too few rows to fit)\n",
		       lsim_kp_kind_name(m->kind), fallback, n_tgt * c->k);
	}
	rc = lsim_kproto_save(m, out, &d);
	if (rc == 0)
		printf("wrote %s\n", out);
	lsim_kproto_destroy(m);
	lsim_kp_data_release(&x);
	return rc == 0 ? 0 : lsim_cli_fail(&d, rc);
}

/* ---- eval: HDF5 ---- */

struct h5 {
	const char *path;
	hid_t file, gcpl, dcpl;
	int rc;
	struct lsim_diag *d;
};

static int h5_fail(struct h5 *h, const char *what)
{
	if (h->rc == 0)
		h->rc = lsim_diag_set(h->d, LSIM_EIO, h->path, 0, 0, "", "HDF5: cannot write %s",
				      what);
	return h->rc;
}

static void h5_attr_str(struct h5 *h, hid_t obj, const char *name, const char *v)
{
	if (h->rc)
		return;
	hid_t t = H5Tcopy(H5T_C_S1), s = H5Screate(H5S_SCALAR);
	hid_t a = -1;
	if (t < 0 || s < 0 || H5Tset_size(t, strlen(v) ? strlen(v) : 1) < 0 ||
	    (a = H5Acreate2(obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT)) < 0 ||
	    H5Awrite(a, t, v) < 0)
		h5_fail(h, name);
	if (a >= 0)
		H5Aclose(a);
	if (s >= 0)
		H5Sclose(s);
	if (t >= 0)
		H5Tclose(t);
}

static void h5_attr_u64(struct h5 *h, hid_t obj, const char *name, uint64_t v)
{
	if (h->rc)
		return;
	hid_t s = H5Screate(H5S_SCALAR), a = -1;
	if (s < 0 ||
	    (a = H5Acreate2(obj, name, H5T_NATIVE_UINT64, s, H5P_DEFAULT, H5P_DEFAULT)) < 0 ||
	    H5Awrite(a, H5T_NATIVE_UINT64, &v) < 0)
		h5_fail(h, name);
	if (a >= 0)
		H5Aclose(a);
	if (s >= 0)
		H5Sclose(s);
}

/* A dataset of rank 1 or 2 (dims[1] == 0: rank 1); returns it open or -1. */
static hid_t h5_data(struct h5 *h, hid_t loc, const char *name, hid_t type,
		     hsize_t n0, hsize_t n1, const void *v)
{
	if (h->rc)
		return -1;
	hsize_t dims[2] = {n0, n1};
	hid_t s = H5Screate_simple(n1 ? 2 : 1, dims, NULL);
	hid_t ds = s < 0 ? -1
			 : H5Dcreate2(loc, name, type, s, H5P_DEFAULT, h->dcpl, H5P_DEFAULT);
	if (ds < 0 || (n0 > 0 && H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0)) {
		h5_fail(h, name);
		if (ds >= 0)
			H5Dclose(ds);
		ds = -1;
	}
	if (s >= 0)
		H5Sclose(s);
	return ds;
}

static void h5_data_close(struct h5 *h, hid_t loc, const char *name, hid_t type,
			  hsize_t n0, hsize_t n1, const void *v)
{
	hid_t ds = h5_data(h, loc, name, type, n0, n1, v);
	if (ds >= 0)
		H5Dclose(ds);
}

static hid_t h5_group(struct h5 *h, hid_t loc, const char *name)
{
	if (h->rc)
		return -1;
	hid_t g = H5Gcreate2(loc, name, H5P_DEFAULT, h->gcpl, H5P_DEFAULT);
	if (g < 0)
		h5_fail(h, name);
	return g;
}

static const char *kind_title(enum lsim_kp_kind k)
{
	switch (k) {
	case LSIM_KP_RF: return "RandomForest";
	case LSIM_KP_GB: return "GradientBoosting";
	case LSIM_KP_LINEAR: return "Linear";
	default: return "Constant";
	}
}

static int write_h5(const char *path, const char *model_path, const char *data_path,
		    const struct lsim_kproto_model *m, const struct lsim_kp_eval *e,
		    struct lsim_diag *d)
{
	struct h5 h = {.path = path, .d = d, .file = -1, .gcpl = -1, .dcpl = -1};
	size_t len = strlen(path) + 5;
	char *tmp = malloc(len);
	if (!tmp)
		return LSIM_ENOMEM;
	snprintf(tmp, len, "%s.tmp", path);
	H5E_auto2_t old_func;
	void *old_data;
	H5Eget_auto2(H5E_DEFAULT, &old_func, &old_data);
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	h.gcpl = H5Pcreate(H5P_GROUP_CREATE);
	h.dcpl = H5Pcreate(H5P_DATASET_CREATE);
	if (h.gcpl < 0 || h.dcpl < 0 || H5Pset_obj_track_times(h.gcpl, 0) < 0 ||
	    H5Pset_obj_track_times(h.dcpl, 0) < 0)
		h5_fail(&h, "property lists");
	if (h.rc == 0) {
		h.file = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
		if (h.file < 0)
			h.rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "", "cannot create %s", tmp);
	}
	char models[128] = "";
	for (size_t i = 0; i < e->n_kinds; i++)
		snprintf(models + strlen(models), sizeof models - strlen(models), "%s%s",
			 i ? "," : "", lsim_kp_kind_name(e->kinds[i]));
	hid_t root = h.file;
	if (h.rc == 0) {
		h5_attr_str(&h, root, "model", model_path);
		h5_attr_str(&h, root, "data", data_path);
		h5_attr_u64(&h, root, "seed", e->seed);
		h5_attr_u64(&h, root, "k", e->k);
		h5_attr_u64(&h, root, "rows", e->n_rows);
		h5_attr_u64(&h, root, "rows_with_unknown_labels", e->n_unknown);
		h5_attr_str(&h, root, "regressors", models);
		h5_attr_str(&h, root, "lightgbm",
			    "not available: LightGBM is not packaged in Debian");
		h5_attr_str(&h, root, "version", LSIM_VERSION);
	}
	uint64_t *cnt = malloc(2 * (e->k ? e->k : 1) * sizeof *cnt);
	if (!cnt && h.rc == 0)
		h.rc = LSIM_ENOMEM;
	hid_t g = h5_group(&h, root, "clusters");
	if (h.rc == 0) {
		for (size_t c = 0; c < e->k; c++) {
			cnt[c] = e->n_train[c];
			cnt[e->k + c] = e->n_test[c];
		}
		h5_data_close(&h, g, "n_train", H5T_NATIVE_UINT64, e->k, 0, cnt);
		h5_data_close(&h, g, "n_test", H5T_NATIVE_UINT64, e->k, 0, cnt + e->k);
	}
	if (g >= 0)
		H5Gclose(g);
	free(cnt);
	hid_t tg = h5_group(&h, root, "targets");
	for (size_t t = 0; t < e->n_tgt && h.rc == 0; t++) {
		char name[300];
		snprintf(name, sizeof name, "%s", m->tgt_names[t]);
		for (char *p = name; *p; p++)
			if (*p == '/')
				*p = '_';
		if (!name[0] || !strcmp(name, "."))
			snprintf(name, sizeof name, "target_%zu", t);
		hid_t gt = h5_group(&h, tg, name);
		h5_attr_str(&h, gt, "column", m->tgt_names[t]);
		h5_attr_str(&h, gt, "regressors", models);
		hid_t ds = h5_data(&h, gt, "mse", H5T_NATIVE_DOUBLE, e->k, e->n_kinds,
				   e->mse + t * e->k * e->n_kinds);
		h5_attr_str(&h, ds >= 0 ? ds : gt, "columns", models);
		if (ds >= 0)
			H5Dclose(ds);
		h5_data_close(&h, gt, "mse_all", H5T_NATIVE_DOUBLE, e->n_kinds, 0,
			      e->mse_all + t * e->n_kinds);
		hid_t gc = h5_group(&h, gt, "relerr_cdf");
		size_t nr = e->n_rel[t];
		double *pts = malloc(2 * (nr ? nr : 1) * sizeof *pts);
		if (!pts && h.rc == 0)
			h.rc = LSIM_ENOMEM;
		for (size_t k = 0; k < e->n_kinds && h.rc == 0; k++) {
			const double *rel = e->relerr[t * e->n_kinds + k];
			for (size_t i = 0; i < nr; i++) {
				pts[2 * i] = rel[i];
				pts[2 * i + 1] = (double)(i + 1) / (double)nr;
			}
			hid_t cd = h5_data(&h, gc, lsim_kp_kind_name(e->kinds[k]),
					   H5T_NATIVE_DOUBLE, nr, 2, pts);
			if (cd >= 0) {
				h5_attr_str(&h, cd, "columns", "relative_error,cumulative_share");
				H5Dclose(cd);
			}
		}
		free(pts);
		if (gc >= 0)
			H5Gclose(gc);
		if (gt >= 0)
			H5Gclose(gt);
	}
	if (tg >= 0)
		H5Gclose(tg);
	if (h.file >= 0 && H5Fclose(h.file) < 0)
		h5_fail(&h, "the file");
	if (h.gcpl >= 0)
		H5Pclose(h.gcpl);
	if (h.dcpl >= 0)
		H5Pclose(h.dcpl);
	H5Eset_auto2(H5E_DEFAULT, old_func, old_data);
	if (h.rc == 0 && rename(tmp, path) != 0)
		h.rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "", "cannot rename %s: %s", tmp,
				     strerror(errno));
	if (h.rc != 0)
		remove(tmp);
	free(tmp);
	return h.rc;
}

/* ---- eval ---- */

/* Share of the sorted values v[0..n) that are <= x. */
static double share_at_most(const double *v, size_t n, double x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid] <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return n ? (double)lo / (double)n : NAN;
}

static void print_eval(const struct lsim_kproto_model *m, const struct lsim_kp_eval *e)
{
	static const double at[] = {0.05, 0.1, 0.25, 0.5, 1.0, 2.0};
	size_t nk = e->n_kinds;
	for (size_t t = 0; t < e->n_tgt; t++) {
		printf("\nMSE per cluster, target %s (test rows; LightGBM: not in Debian, not built%s)\n",
		       m->tgt_names[t],
		       lsim_kp_have_xgboost() ? "" : "; rf, gb: built without XGBoost");
		printf("%-8s %7s %7s", "cluster", "train", "test");
		for (size_t k = 0; k < nk; k++)
			printf(" %17s", kind_title(e->kinds[k]));
		printf("\n");
		for (size_t c = 0; c < e->k; c++) {
			printf("%-8zu %7zu %7zu", c, e->n_train[c], e->n_test[c]);
			for (size_t k = 0; k < nk; k++)
				printf(" %17.6g", e->mse[(t * e->k + c) * nk + k]);
			printf("\n");
		}
		size_t ntr = 0, nte = 0;
		for (size_t c = 0; c < e->k; c++) {
			ntr += e->n_train[c];
			nte += e->n_test[c];
		}
		printf("%-8s %7zu %7zu", "all", ntr, nte);
		for (size_t k = 0; k < nk; k++)
			printf(" %17.6g", e->mse_all[t * nk + k]);
		printf("\n\nrelative error |pred - y| / |y|, target %s: share of the %zu test rows "
		       "(y != 0) at or below\n%-17s",
		       m->tgt_names[t], e->n_rel[t], "");
		for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
			printf(" %6.2f", at[i]);
		printf("   median\n");
		for (size_t k = 0; k < nk; k++) {
			const double *rel = e->relerr[t * nk + k];
			size_t n = e->n_rel[t];
			printf("%-17s", kind_title(e->kinds[k]));
			for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
				printf(" %6.3f", share_at_most(rel, n, at[i]));
			printf("   %6.3f\n", n ? (n % 2 ? rel[n / 2]
						  : 0.5 * (rel[n / 2 - 1] + rel[n / 2]))
					: NAN);
		}
	}
}

int lsim_cli_profile_eval(int argc, char **argv)
{
	const char *model = NULL, *data = NULL, *h5 = NULL;
	uint64_t seed = 0;
	bool seed_set = false;
	gsl_set_error_handler_off();
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_eval, stdout);
			return 0;
		} else if (!strcmp(a, "--h5") && i + 1 < argc) {
			h5 = argv[++i];
		} else if (!strcmp(a, "--seed") && i + 1 < argc) {
			if (parse_u64(argv[++i], &seed) != 0)
				return bad_arg("eval", usage_eval,
					       "--seed: '%s' is not a non-negative integer", argv[i]);
			seed_set = true;
		} else if (a[0] == '-' || (model && data)) {
			return bad_arg("eval", usage_eval, "unexpected argument '%s'", a);
		} else if (!model) {
			model = a;
		} else {
			data = a;
		}
	}
	if (!model || !data)
		return bad_arg("eval", usage_eval, "missing %s", model ? "DATA.csv" : "MODEL");
	struct lsim_diag d = {0};
	struct lsim_kproto_model *m = NULL;
	int rc = lsim_kproto_load(model, &m, &d);
	if (rc != 0)
		return lsim_cli_fail(&d, rc);
	if (m->n_tgt == 0) {
		lsim_diag_set(&d, LSIM_EINVAL, model, 0, 0, "targets",
			      "the model was trained without --target: nothing to evaluate");
		lsim_kproto_destroy(m);
		return lsim_cli_fail(&d, LSIM_EINVAL);
	}
	struct lsim_kp_data x;
	rc = lsim_kp_data_read_csv(data, (const char *const *)m->num_names, m->n_num,
				   (const char *const *)m->cat_names, m->n_cat,
				   (const char *const *)m->tgt_names, m->n_tgt, &x, &d);
	if (rc != 0) {
		lsim_kproto_destroy(m);
		return lsim_cli_fail(&d, rc);
	}
	struct lsim_kp_eval e;
	rc = lsim_kproto_evaluate(m, &x, seed_set ? seed : m->seed, &e, &d);
	if (rc == 0) {
		printf("eval: %zu rows of %s with model %s (k %zu, trained as %s); "
		       "70/30 split per cluster, seed %llu\n",
		       x.n, data, model, m->cl.k, lsim_kp_kind_name(m->kind),
		       (unsigned long long)e.seed);
		if (e.n_unknown)
			printf("%zu rows have a label the model has not seen (it matches no prototype)\n",
			       e.n_unknown);
		print_eval(m, &e);
		if (h5) {
			rc = write_h5(h5, model, data, m, &e, &d);
			if (rc == 0)
				printf("\nwrote %s\n", h5);
		}
		lsim_kp_eval_release(&e);
	}
	lsim_kp_data_release(&x);
	lsim_kproto_destroy(m);
	return rc == 0 ? 0 : lsim_cli_fail(&d, rc);
}
