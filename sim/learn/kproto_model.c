/*
 * kproto_model.c - the kproto task profiler's per-cluster regressors
 * (XGBoost gradient boosting and random forest when built with it, GSL
 * least squares), training and prediction of the model, the 70/30
 * per-cluster evaluation, and freeing what the core attached to the
 * `kproto` profiler policy's state.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_multifit.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#ifdef LSIM_HAVE_XGBOOST
#include <xgboost/c_api.h>
#endif

#include "learn/kproto.h"
#include "learn/kproto_internal.h"

#define GB_ROUNDS 100
#define RF_TREES "100"
#define EVAL_TRAIN_SHARE 0.7

static int find_name(char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return (int)i;
	return -1;
}

/* ---- regressors ---- */

const char *lsim_kp_kind_name(enum lsim_kp_kind k)
{
	switch (k) {
	case LSIM_KP_CONST: return "const";
	case LSIM_KP_LINEAR: return "linear";
	case LSIM_KP_GB: return "gb";
	case LSIM_KP_RF: return "rf";
	}
	return "?";
}

int lsim_kp_kind_parse(const char *s)
{
	for (int k = LSIM_KP_CONST; k <= LSIM_KP_RF; k++)
		if (strcmp(s, lsim_kp_kind_name((enum lsim_kp_kind)k)) == 0)
			return k;
	return -1;
}

bool lsim_kp_have_xgboost(void)
{
#ifdef LSIM_HAVE_XGBOOST
	return true;
#else
	return false;
#endif
}

int lsim_kp_no_xgboost(struct lsim_diag *d, const char *file, int line,
		       enum lsim_kp_kind kind)
{
	return lsim_diag_set(d, LSIM_ENOENT, file, line, 0, "model",
			     "%s needs XGBoost, and this llmsim was built without it "
			     "(install libxgboost-dev and rebuild); use linear",
			     kind == LSIM_KP_GB ? "gradient boosting (gb)"
						: "random forest (rf)");
}

static void reg_release(struct lsim_kp_reg *r)
{
	free(r->coef);
	r->coef = NULL;
#ifdef LSIM_HAVE_XGBOOST
	if (r->booster)
		XGBoosterFree(r->booster);
#endif
	r->booster = NULL;
}

#ifdef LSIM_HAVE_XGBOOST
static int xgb_error(struct lsim_diag *d, const char *what)
{
	return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "xgboost", "%s: %s", what,
			     XGBGetLastError());
}

/* Trains a booster on rows x features (row-major floats). */
static int xgb_train(enum lsim_kp_kind kind, const float *X, const float *y,
		     size_t nr, size_t p, double base, uint64_t seed,
		     void **out, struct lsim_diag *d)
{
	DMatrixHandle dm = NULL;
	BoosterHandle b = NULL;
	int rc = 0;
	if (XGDMatrixCreateFromMat(X, (bst_ulong)nr, (bst_ulong)p, NAN, &dm) != 0 ||
	    XGDMatrixSetFloatInfo(dm, "label", y, (bst_ulong)nr) != 0 ||
	    XGBoosterCreate(&dm, 1, &b) != 0) {
		rc = xgb_error(d, "cannot set up training");
		goto out;
	}
	char sbuf[32], bbuf[40];
	snprintf(sbuf, sizeof sbuf, "%llu", (unsigned long long)(seed & 0x7fffffff));
	snprintf(bbuf, sizeof bbuf, "%.17g", base);
	const char *common[][2] = {
		{"nthread", "1"}, {"verbosity", "0"}, {"seed", sbuf},
		{"objective", "reg:squarederror"}, {"base_score", bbuf},
		{"tree_method", "exact"},
	};
	const char *gb[][2] = {{"eta", "0.1"}, {"max_depth", "6"}};
	const char *rf[][2] = {
		{"eta", "1"}, {"num_parallel_tree", RF_TREES}, {"subsample", "0.8"},
		{"colsample_bynode", "0.8"}, {"max_depth", "8"},
		{"lambda", "0"}, /* leaves are means, as in a random forest */
	};
	for (size_t i = 0; i < sizeof common / sizeof common[0]; i++)
		if (XGBoosterSetParam(b, common[i][0], common[i][1]) != 0)
			rc = -1;
	if (kind == LSIM_KP_GB) {
		for (size_t i = 0; i < sizeof gb / sizeof gb[0]; i++)
			if (XGBoosterSetParam(b, gb[i][0], gb[i][1]) != 0)
				rc = -1;
	} else {
		for (size_t i = 0; i < sizeof rf / sizeof rf[0]; i++)
			if (XGBoosterSetParam(b, rf[i][0], rf[i][1]) != 0)
				rc = -1;
	}
	if (rc != 0) {
		rc = xgb_error(d, "bad parameter");
		goto out;
	}
	int rounds = kind == LSIM_KP_GB ? GB_ROUNDS : 1;
	for (int i = 0; i < rounds; i++)
		if (XGBoosterUpdateOneIter(b, i, dm) != 0) {
			rc = xgb_error(d, "training failed");
			goto out;
		}
	*out = b;
	b = NULL;
out:
	if (b)
		XGBoosterFree(b);
	if (dm)
		XGDMatrixFree(dm);
	return rc;
}

/* Predictions of a booster for nr rows; out[i] = fallback on failure. */
static void xgb_predict(void *b, const float *X, size_t nr, size_t p,
			double fallback, double *out)
{
	DMatrixHandle dm = NULL;
	bst_ulong len = 0;
	const float *res = NULL;
	if (XGDMatrixCreateFromMat(X, (bst_ulong)nr, (bst_ulong)p, NAN, &dm) != 0 ||
	    XGBoosterPredict(b, dm, 0, 0, 0, &len, &res) != 0 || len != nr) {
		for (size_t i = 0; i < nr; i++)
			out[i] = fallback;
	} else {
		for (size_t i = 0; i < nr; i++)
			out[i] = res[i];
	}
	if (dm)
		XGDMatrixFree(dm);
}
#endif

/*
 * Ordinary least squares of y on [1, features] over the rows, leaving out
 * features constant on them. Returns 1 when there are fewer rows than
 * coefficients (the caller falls back to the mean).
 */
static int linear_fit(const double *X, size_t p, const size_t *rows, size_t nr,
		      const double *y, double *coef)
{
	size_t *cols = malloc((p ? p : 1) * sizeof *cols);
	if (!cols)
		return LSIM_ENOMEM;
	size_t q = 0;
	for (size_t j = 0; j < p; j++) {
		double first = X[rows[0] * p + j];
		for (size_t r = 1; r < nr; r++)
			if (X[rows[r] * p + j] != first) {
				cols[q++] = j;
				break;
			}
	}
	if (nr < q + 1) {
		free(cols);
		return 1;
	}
	gsl_matrix *A = gsl_matrix_alloc(nr, q + 1);
	gsl_matrix *cov = gsl_matrix_alloc(q + 1, q + 1);
	gsl_vector *b = gsl_vector_alloc(nr), *c = gsl_vector_alloc(q + 1);
	gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(nr, q + 1);
	int rc = 0;
	if (!A || !cov || !b || !c || !ws) {
		rc = LSIM_ENOMEM;
		goto out;
	}
	for (size_t r = 0; r < nr; r++) {
		gsl_matrix_set(A, r, 0, 1.0);
		for (size_t j = 0; j < q; j++)
			gsl_matrix_set(A, r, j + 1, X[rows[r] * p + cols[j]]);
		gsl_vector_set(b, r, y[rows[r]]);
	}
	/* A categorical attribute whose every level occurs gives indicators
	 * summing to the intercept column: singular values below 1e-10 of the
	 * largest are dropped (the minimum-norm fit) instead of exploding. */
	double chisq;
	size_t rank;
	if (gsl_multifit_linear_tsvd(A, b, 1e-10, c, cov, &chisq, &rank, ws) != 0) {
		rc = 1;
		goto out;
	}
	memset(coef, 0, (p + 1) * sizeof *coef);
	coef[0] = gsl_vector_get(c, 0);
	for (size_t j = 0; j < q; j++)
		coef[1 + cols[j]] = gsl_vector_get(c, j + 1);
	for (size_t j = 0; j <= p; j++)
		if (!isfinite(coef[j]))
			rc = 1;
out:
	gsl_matrix_free(A);
	gsl_matrix_free(cov);
	gsl_vector_free(b);
	gsl_vector_free(c);
	if (ws)
		gsl_multifit_linear_free(ws);
	free(cols);
	return rc;
}

/*
 * Fits one regressor of kind on the rows (y indexed by row). No rows:
 * the constant fallback; one row: its value.
 */
static int reg_fit(enum lsim_kp_kind kind, const double *X, size_t p,
		   const size_t *rows, size_t nr, const double *y,
		   double fallback, uint64_t seed, struct lsim_kp_reg *r,
		   struct lsim_diag *d)
{
	memset(r, 0, sizeof *r);
	r->kind = LSIM_KP_CONST;
	r->value = fallback;
	if (nr == 0)
		return 0;
	double mean = 0;
	for (size_t i = 0; i < nr; i++)
		mean += (y[rows[i]] - mean) / (double)(i + 1);
	r->value = mean;
	if (nr < 2)
		return 0;
	if (kind == LSIM_KP_LINEAR) {
		r->coef = malloc((p + 1) * sizeof *r->coef);
		if (!r->coef)
			return LSIM_ENOMEM;
		int rc = linear_fit(X, p, rows, nr, y, r->coef);
		if (rc < 0)
			return rc;
		if (rc > 0) {
			free(r->coef);
			r->coef = NULL;
			return 0;
		}
		r->kind = LSIM_KP_LINEAR;
		return 0;
	}
#ifdef LSIM_HAVE_XGBOOST
	float *fx = malloc(nr * (p ? p : 1) * sizeof *fx);
	float *fy = malloc(nr * sizeof *fy);
	int rc = 0;
	if (!fx || !fy) {
		rc = LSIM_ENOMEM;
	} else {
		for (size_t i = 0; i < nr; i++) {
			for (size_t j = 0; j < p; j++)
				fx[i * p + j] = (float)X[rows[i] * p + j];
			fy[i] = (float)y[rows[i]];
		}
		rc = xgb_train(kind, fx, fy, nr, p, mean, seed, &r->booster, d);
		if (rc == 0)
			r->kind = kind;
	}
	free(fx);
	free(fy);
	return rc;
#else
	return lsim_kp_no_xgboost(d, "", 0, kind);
#endif
}

/* Predictions for nr feature rows (row-major, p columns). */
static int reg_predict_many(const struct lsim_kp_reg *r, const double *X,
			    size_t nr, size_t p, double *out)
{
	switch (r->kind) {
	case LSIM_KP_CONST:
		for (size_t i = 0; i < nr; i++)
			out[i] = r->value;
		return 0;
	case LSIM_KP_LINEAR:
		for (size_t i = 0; i < nr; i++) {
			double s = r->coef[0];
			for (size_t j = 0; j < p; j++)
				s += r->coef[1 + j] * X[i * p + j];
			out[i] = s;
		}
		return 0;
	case LSIM_KP_GB:
	case LSIM_KP_RF: {
#ifdef LSIM_HAVE_XGBOOST
		float *fx = malloc(nr * (p ? p : 1) * sizeof *fx);
		if (!fx)
			return LSIM_ENOMEM;
		for (size_t i = 0; i < nr * p; i++)
			fx[i] = (float)X[i];
		xgb_predict(r->booster, fx, nr, p, r->value, out);
		free(fx);
		return 0;
#else
		for (size_t i = 0; i < nr; i++)
			out[i] = r->value;
		return 0;
#endif
	}
	}
	return LSIM_EINVAL;
}

/* ---- the model ---- */

/* Regressor features of a raw row: standardised numerics, then level
 * indicators (an unknown code sets none). */
static void features(const struct lsim_kproto_model *m, const double *num,
		     const int32_t *cat, double *out)
{
	size_t f = 0;
	for (size_t i = 0; i < m->n_num; i++)
		out[f++] = (num[i] - m->cl.center[i]) / m->cl.scale[i];
	for (size_t i = 0; i < m->n_cat; i++) {
		for (size_t l = 0; l < m->n_levels[i]; l++)
			out[f + l] = cat[i] == (int32_t)l ? 1.0 : 0.0;
		f += m->n_levels[i];
	}
}

void lsim_kproto_destroy(struct lsim_kproto_model *m)
{
	if (!m)
		return;
	if (m->reg)
		for (size_t i = 0; i < m->n_tgt * m->cl.k; i++)
			reg_release(&m->reg[i]);
	free(m->reg);
	lsim_kp_clusters_release(&m->cl);
	lsim_kp_free_names(m->num_names, m->n_num);
	lsim_kp_free_names(m->cat_names, m->n_cat);
	lsim_kp_free_names(m->tgt_names, m->n_tgt);
	lsim_kp_free_levels(m->levels, m->n_levels, m->n_cat);
	free(m->sizes);
	free(m->feat);
	free(m->cat_fill);
	free(m);
}

/* Allocates the name, level and regressor arrays of a model whose
 * counts and k are set. */
int lsim_kp_model_alloc(struct lsim_kproto_model *m)
{
	size_t k = m->cl.k;
	m->num_names = calloc(m->n_num ? m->n_num : 1, sizeof *m->num_names);
	m->cat_names = calloc(m->n_cat ? m->n_cat : 1, sizeof *m->cat_names);
	m->tgt_names = calloc(m->n_tgt ? m->n_tgt : 1, sizeof *m->tgt_names);
	m->levels = calloc(m->n_cat ? m->n_cat : 1, sizeof *m->levels);
	m->n_levels = calloc(m->n_cat ? m->n_cat : 1, sizeof *m->n_levels);
	m->reg = calloc(m->n_tgt * k > 0 ? m->n_tgt * k : 1, sizeof *m->reg);
	m->sizes = calloc(k, sizeof *m->sizes);
	if (!m->num_names || !m->cat_names || !m->tgt_names || !m->levels ||
	    !m->n_levels || !m->reg || !m->sizes)
		return LSIM_ENOMEM;
	return 0;
}

int lsim_kp_model_scratch(struct lsim_kproto_model *m)
{
	m->n_feat = m->n_num;
	for (size_t i = 0; i < m->n_cat; i++)
		m->n_feat += m->n_levels[i];
	m->feat = calloc(m->n_feat ? m->n_feat : 1, sizeof *m->feat);
	m->cat_fill = calloc(m->n_cat ? m->n_cat : 1, sizeof *m->cat_fill);
	return m->feat && m->cat_fill ? 0 : LSIM_ENOMEM;
}

/* The feature matrix of every row of x (codes already the model's). */
static double *feature_matrix(const struct lsim_kproto_model *m,
			      const double *num, const int32_t *cat, size_t n)
{
	size_t p = m->n_feat;
	double *X = malloc(n * (p ? p : 1) * sizeof *X);
	if (!X)
		return NULL;
	for (size_t r = 0; r < n; r++)
		features(m, num + r * m->n_num, cat + r * m->n_cat, X + r * p);
	return X;
}

int lsim_kproto_train(const struct lsim_kp_data *x, const struct lsim_kp_opts *o,
		      enum lsim_kp_kind kind, struct lsim_kproto_model **out,
		      struct lsim_diag *d)
{
	if (kind != LSIM_KP_LINEAR && kind != LSIM_KP_GB && kind != LSIM_KP_RF)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "model",
				     "the regressor must be gb, rf or linear");
	if (kind != LSIM_KP_LINEAR && x->n_tgt > 0 && !lsim_kp_have_xgboost())
		return lsim_kp_no_xgboost(d, "", 0, kind);
	struct lsim_kproto_model *m = calloc(1, sizeof *m);
	int32_t *assign = malloc((x->n ? x->n : 1) * sizeof *assign);
	size_t *rows = malloc((x->n ? x->n : 1) * sizeof *rows);
	double *X = NULL, *y = malloc((x->n ? x->n : 1) * sizeof *y);
	int rc = 0;
	if (!m || !assign || !rows || !y) {
		rc = LSIM_ENOMEM;
		goto out;
	}
	if ((rc = lsim_kp_cluster(x, o, &m->cl, assign, d)) != 0)
		goto out;
	m->n_num = x->n_num;
	m->n_cat = x->n_cat;
	m->n_tgt = x->n_tgt;
	m->kind = kind;
	m->seed = o->seed;
	m->n_train = x->n;
	if ((rc = lsim_kp_model_alloc(m)) != 0)
		goto out;
	for (size_t i = 0; i < m->n_num; i++)
		if (!(m->num_names[i] = strdup(x->num_names[i])))
			rc = LSIM_ENOMEM;
	for (size_t i = 0; i < m->n_cat; i++) {
		if (!(m->cat_names[i] = strdup(x->cat_names[i])))
			rc = LSIM_ENOMEM;
		for (size_t l = 0; rc == 0 && l < x->n_levels[i]; l++)
			rc = lsim_kp_push_level(&m->levels[i], &m->n_levels[i], x->levels[i][l]);
	}
	for (size_t i = 0; i < m->n_tgt; i++)
		if (!(m->tgt_names[i] = strdup(x->tgt_names[i])))
			rc = LSIM_ENOMEM;
	if (rc == 0)
		rc = lsim_kp_model_scratch(m);
	if (rc != 0)
		goto out;
	for (size_t r = 0; r < x->n; r++)
		m->sizes[assign[r]]++;
	if (m->n_tgt > 0 && !(X = feature_matrix(m, x->num, x->cat, x->n))) {
		rc = LSIM_ENOMEM;
		goto out;
	}
	for (size_t t = 0; t < m->n_tgt && rc == 0; t++) {
		double mean = 0;
		for (size_t r = 0; r < x->n; r++) {
			y[r] = x->tgt[r * x->n_tgt + t];
			mean += (y[r] - mean) / (double)(r + 1);
		}
		for (size_t c = 0; c < m->cl.k && rc == 0; c++) {
			size_t nr = 0;
			for (size_t r = 0; r < x->n; r++)
				if ((size_t)assign[r] == c)
					rows[nr++] = r;
			rc = reg_fit(kind, X, m->n_feat, rows, nr, y, mean,
				     o->seed, &m->reg[t * m->cl.k + c], d);
		}
	}
out:
	free(assign);
	free(rows);
	free(X);
	free(y);
	if (rc != 0) {
		lsim_kproto_destroy(m);
		return rc;
	}
	*out = m;
	return 0;
}

size_t lsim_kproto_predict(struct lsim_kproto_model *m, const double *num,
			   const int32_t *cat, double *out)
{
	size_t c = lsim_kp_nearest(&m->cl, num, cat, NULL);
	/* an unknown label takes the mode of the chosen cluster */
	for (size_t i = 0; i < m->n_cat; i++)
		m->cat_fill[i] = cat[i] >= 0 ? cat[i] : m->cl.proto_cat[c * m->n_cat + i];
	features(m, num, m->cat_fill, m->feat);
	for (size_t t = 0; t < m->n_tgt; t++) {
		const struct lsim_kp_reg *r = &m->reg[t * m->cl.k + c];
		if (reg_predict_many(r, m->feat, 1, m->n_feat, &out[t]) != 0)
			out[t] = r->value;
	}
	return c;
}

int lsim_kproto_num_index(const struct lsim_kproto_model *m, const char *name)
{
	return find_name(m->num_names, m->n_num, name);
}

int lsim_kproto_cat_index(const struct lsim_kproto_model *m, const char *name)
{
	return find_name(m->cat_names, m->n_cat, name);
}

int lsim_kproto_tgt_index(const struct lsim_kproto_model *m, const char *name)
{
	return find_name(m->tgt_names, m->n_tgt, name);
}

int32_t lsim_kproto_level(const struct lsim_kproto_model *m, size_t col,
			  const char *label)
{
	if (col >= m->n_cat)
		return -1;
	return lsim_kp_find_label(m->levels[col], m->n_levels[col], label);
}

/* ---- evaluation ---- */

void lsim_kp_eval_release(struct lsim_kp_eval *e)
{
	if (!e)
		return;
	if (e->relerr)
		for (size_t i = 0; i < e->n_tgt * e->n_kinds; i++)
			free(e->relerr[i]);
	free(e->relerr);
	free(e->n_rel);
	free(e->n_train);
	free(e->n_test);
	free(e->mse);
	free(e->mse_all);
	memset(e, 0, sizeof *e);
}

int lsim_kproto_evaluate(const struct lsim_kproto_model *m,
			 const struct lsim_kp_data *x, uint64_t seed,
			 struct lsim_kp_eval *e, struct lsim_diag *d)
{
	memset(e, 0, sizeof *e);
	if (m->n_tgt == 0)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "targets",
				     "the model has no targets to evaluate");
	if (x->n_num != m->n_num || x->n_cat != m->n_cat || x->n_tgt != m->n_tgt)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "columns",
				     "the data's columns are not the model's");
	size_t k = m->cl.k, n = x->n, nt = m->n_tgt, p = m->n_feat;
	e->k = k;
	e->n_tgt = nt;
	e->seed = seed;
	e->n_rows = n;
	e->kinds[e->n_kinds++] = LSIM_KP_RF;
	e->kinds[e->n_kinds++] = LSIM_KP_GB;
	e->kinds[e->n_kinds++] = LSIM_KP_LINEAR;
	if (!lsim_kp_have_xgboost()) {
		e->n_kinds = 1;
		e->kinds[0] = LSIM_KP_LINEAR;
	}
	size_t nk = e->n_kinds;
	int32_t *cat = malloc(n * (m->n_cat ? m->n_cat : 1) * sizeof *cat);
	size_t *cl = malloc((n ? n : 1) * sizeof *cl);
	size_t *order = malloc((n ? n : 1) * sizeof *order);
	size_t *train = malloc((n ? n : 1) * sizeof *train);
	double *y = malloc((n ? n : 1) * sizeof *y);
	double *pred = malloc((n ? n : 1) * sizeof *pred);
	double *Xt = malloc((n ? n : 1) * (p ? p : 1) * sizeof *Xt);
	bool *is_test = calloc(n ? n : 1, sizeof *is_test);
	e->n_train = calloc(k, sizeof *e->n_train);
	e->n_test = calloc(k, sizeof *e->n_test);
	e->mse = calloc(nt * k * nk, sizeof *e->mse);
	e->mse_all = calloc(nt * nk, sizeof *e->mse_all);
	e->relerr = calloc(nt * nk, sizeof *e->relerr);
	e->n_rel = calloc(nt, sizeof *e->n_rel);
	gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
	double *X = NULL;
	int rc = 0;
	if (!cat || !cl || !order || !train || !y || !pred || !Xt || !is_test ||
	    !e->n_train || !e->n_test || !e->mse || !e->mse_all || !e->relerr ||
	    !e->n_rel || !rng) {
		rc = LSIM_ENOMEM;
		goto out;
	}
	/* the data's codes -> the model's */
	for (size_t i = 0; i < m->n_cat; i++) {
		for (size_t r = 0; r < n; r++) {
			int32_t code = x->cat[r * m->n_cat + i];
			cat[r * m->n_cat + i] =
				lsim_kproto_level(m, i, x->levels[i][code]);
		}
	}
	for (size_t r = 0; r < n; r++) {
		for (size_t i = 0; i < m->n_cat; i++)
			if (cat[r * m->n_cat + i] < 0) {
				e->n_unknown++;
				break;
			}
		cl[r] = lsim_kp_nearest(&m->cl, x->num + r * m->n_num,
					cat + r * m->n_cat, NULL);
		for (size_t i = 0; i < m->n_cat; i++) /* as lsim_kproto_predict */
			if (cat[r * m->n_cat + i] < 0)
				cat[r * m->n_cat + i] = m->cl.proto_cat[cl[r] * m->n_cat + i];
	}
	if (!(X = feature_matrix(m, x->num, cat, n))) {
		rc = LSIM_ENOMEM;
		goto out;
	}
	/* the 70/30 split, per cluster */
	gsl_rng_set(rng, (unsigned long)seed);
	for (size_t c = 0; c < k; c++) {
		size_t nc = 0;
		for (size_t r = 0; r < n; r++)
			if (cl[r] == c)
				order[nc++] = r;
		if (nc > 1)
			gsl_ran_shuffle(rng, order, nc, sizeof *order);
		size_t ntr = (size_t)floor(EVAL_TRAIN_SHARE * (double)nc + 0.5);
		e->n_train[c] = ntr;
		e->n_test[c] = nc - ntr;
		for (size_t i = ntr; i < nc; i++)
			is_test[order[i]] = true;
	}
	for (size_t t = 0; t < nt && rc == 0; t++) {
		size_t n_test_all = 0;
		double mean = 0;
		size_t n_mean = 0;
		for (size_t r = 0; r < n; r++) {
			y[r] = x->tgt[r * nt + t];
			if (!is_test[r])
				mean += (y[r] - mean) / (double)++n_mean;
			else
				n_test_all++;
		}
		for (size_t mk = 0; mk < nk && rc == 0; mk++) {
			double *rel = malloc((n_test_all ? n_test_all : 1) * sizeof *rel);
			e->relerr[t * nk + mk] = rel;
			if (!rel) {
				rc = LSIM_ENOMEM;
				break;
			}
			size_t nrel = 0;
			double sse_all = 0;
			for (size_t c = 0; c < k && rc == 0; c++) {
				size_t ntr = 0, nte = 0;
				for (size_t r = 0; r < n; r++) {
					if (cl[r] != c)
						continue;
					if (is_test[r])
						order[nte++] = r;
					else
						train[ntr++] = r;
				}
				struct lsim_kp_reg reg;
				rc = reg_fit(e->kinds[mk], X, p, train, ntr, y, mean,
					     seed, &reg, d);
				if (rc != 0)
					break;
				for (size_t i = 0; i < nte; i++)
					memcpy(Xt + i * p, X + order[i] * p, p * sizeof *Xt);
				if (nte > 0)
					rc = reg_predict_many(&reg, Xt, nte, p, pred);
				reg_release(&reg);
				double sse = 0;
				for (size_t i = 0; i < nte && rc == 0; i++) {
					double yy = y[order[i]], err = pred[i] - yy;
					sse += err * err;
					if (yy != 0)
						rel[nrel++] = fabs(err) / fabs(yy);
				}
				sse_all += sse;
				e->mse[(t * k + c) * nk + mk] = nte ? sse / (double)nte : NAN;
			}
			gsl_sort(rel, 1, nrel);
			e->n_rel[t] = nrel;
			e->mse_all[t * nk + mk] =
				n_test_all ? sse_all / (double)n_test_all : NAN;
		}
	}
out:
	free(cat);
	free(cl);
	free(order);
	free(train);
	free(y);
	free(pred);
	free(Xt);
	free(X);
	free(is_test);
	if (rng)
		gsl_rng_free(rng);
	if (rc != 0)
		lsim_kp_eval_release(e);
	return rc;
}

/* ---- the core side of the kproto profiler ---- */

void lsim_kproto_detach(struct lsim_kproto_profiler *s)
{
	lsim_kproto_destroy(s->m);
	free(s->class_code);
	free(s->num);
	free(s->cat);
	free(s->out);
	s->m = NULL;
	s->class_code = NULL;
	s->num = s->out = NULL;
	s->cat = NULL;
}
