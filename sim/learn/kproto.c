/*
 * kproto.c - the task profiler of Dang et al. (section 4): data tables
 * read from CSV, K-Prototypes clustering (Huang 1998) with seeded restarts,
 * per-cluster regressors (XGBoost gradient boosting and random forest when
 * built with it, GSL least squares), the versioned model file with the
 * boosters embedded as base64, the 70/30 per-cluster evaluation, and the
 * core side of the `kproto` profiler policy (reading its model file).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
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

#include "kernel/csv.h"
#include "learn/kproto.h"
#include "run/policy_core.h"

#define MAGIC "llmsim-kproto-model"
#define FORMAT_VERSION 1
#define MAX_ITER_DEFAULT 100
#define GB_ROUNDS 100
#define RF_TREES "100"
#define EVAL_TRAIN_SHARE 0.7
#define B64_LINE 76

/* ---- small helpers ---- */

static void free_names(char **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static char **copy_names(const char *const *src, size_t n)
{
	char **v = calloc(n ? n : 1, sizeof *v);
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (!(v[i] = strdup(src[i]))) {
			free_names(v, i);
			return NULL;
		}
	}
	return v;
}

static void free_levels(char ***levels, size_t *n_levels, size_t n_cat)
{
	if (levels)
		for (size_t i = 0; i < n_cat; i++)
			free_names(levels[i], n_levels ? n_levels[i] : 0);
	free(levels);
	free(n_levels);
}

/* Appends label to a level list that grows at powers of two. */
static int push_level(char ***list, size_t *n, const char *label)
{
	if (*n == 0 || (*n & (*n - 1)) == 0) {
		size_t cap = *n ? *n * 2 : 4;
		char **v = realloc(*list, cap * sizeof *v);
		if (!v)
			return LSIM_ENOMEM;
		*list = v;
	}
	if (!((*list)[*n] = strdup(label)))
		return LSIM_ENOMEM;
	(*n)++;
	return 0;
}

static int32_t find_label(char *const *list, size_t n, const char *label)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i], label) == 0)
			return (int32_t)i;
	return -1;
}

static int find_name(char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return (int)i;
	return -1;
}

/* ---- data tables ---- */

int lsim_kp_data_init(struct lsim_kp_data *x, const char *const *num,
		      size_t n_num, const char *const *cat, size_t n_cat,
		      const char *const *tgt, size_t n_tgt)
{
	memset(x, 0, sizeof *x);
	x->n_num = n_num;
	x->n_cat = n_cat;
	x->n_tgt = n_tgt;
	x->num_names = copy_names(num, n_num);
	x->cat_names = copy_names(cat, n_cat);
	x->tgt_names = copy_names(tgt, n_tgt);
	x->levels = calloc(n_cat ? n_cat : 1, sizeof *x->levels);
	x->n_levels = calloc(n_cat ? n_cat : 1, sizeof *x->n_levels);
	if (!x->num_names || !x->cat_names || !x->tgt_names || !x->levels ||
	    !x->n_levels) {
		lsim_kp_data_release(x);
		return LSIM_ENOMEM;
	}
	return 0;
}

void lsim_kp_data_release(struct lsim_kp_data *x)
{
	if (!x)
		return;
	free_names(x->num_names, x->n_num);
	free_names(x->cat_names, x->n_cat);
	free_names(x->tgt_names, x->n_tgt);
	free_levels(x->levels, x->n_levels, x->n_cat);
	free(x->num);
	free(x->cat);
	free(x->tgt);
	memset(x, 0, sizeof *x);
}

static int grow_rows(struct lsim_kp_data *x)
{
	if (x->n < x->cap)
		return 0;
	size_t cap = x->cap ? x->cap * 2 : 64;
	double *num = realloc(x->num, cap * (x->n_num ? x->n_num : 1) * sizeof *num);
	if (!num)
		return LSIM_ENOMEM;
	x->num = num;
	int32_t *cat = realloc(x->cat, cap * (x->n_cat ? x->n_cat : 1) * sizeof *cat);
	if (!cat)
		return LSIM_ENOMEM;
	x->cat = cat;
	double *tgt = realloc(x->tgt, cap * (x->n_tgt ? x->n_tgt : 1) * sizeof *tgt);
	if (!tgt)
		return LSIM_ENOMEM;
	x->tgt = tgt;
	x->cap = cap;
	return 0;
}

int lsim_kp_data_add(struct lsim_kp_data *x, const double *num,
		     const char *const *cat, const double *tgt)
{
	int rc = grow_rows(x);
	if (rc != 0)
		return rc;
	for (size_t j = 0; j < x->n_num; j++)
		x->num[x->n * x->n_num + j] = num[j];
	for (size_t j = 0; j < x->n_cat; j++) {
		int32_t code = find_label(x->levels[j], x->n_levels[j], cat[j]);
		if (code < 0) {
			if (x->n_levels[j] >= INT32_MAX)
				return LSIM_ERANGE;
			if ((rc = push_level(&x->levels[j], &x->n_levels[j], cat[j])) != 0)
				return rc;
			code = (int32_t)x->n_levels[j] - 1;
		}
		x->cat[x->n * x->n_cat + j] = code;
	}
	for (size_t j = 0; j < x->n_tgt; j++)
		x->tgt[x->n * x->n_tgt + j] = tgt[j];
	x->n++;
	return 0;
}

int32_t lsim_kp_level(const struct lsim_kp_data *x, size_t col, const char *label)
{
	if (col >= x->n_cat)
		return -1;
	return find_label(x->levels[col], x->n_levels[col], label);
}

/* A finite decimal number filling the whole text. */
static int parse_number(const char *s, double *out)
{
	if (!s || !*s)
		return -1;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

int lsim_kp_data_read_csv(const char *path, const char *const *num,
			  size_t n_num, const char *const *cat, size_t n_cat,
			  const char *const *tgt, size_t n_tgt,
			  struct lsim_kp_data *x, struct lsim_diag *d)
{
	size_t nc = n_num + n_cat + n_tgt;
	if (nc == 0)
		return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, "columns",
				     "no columns named");
	const char **names = calloc(nc, sizeof *names);
	int *idx = calloc(nc, sizeof *idx);
	double *nv = calloc(n_num + 1, sizeof *nv), *tv = calloc(n_tgt + 1, sizeof *tv);
	const char **cv = calloc(n_cat + 1, sizeof *cv);
	struct lsim_csv *r = NULL;
	int rc = 0;
	if (!names || !idx || !nv || !tv || !cv) {
		rc = LSIM_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n_num; i++)
		names[i] = num[i];
	for (size_t i = 0; i < n_cat; i++)
		names[n_num + i] = cat[i];
	for (size_t i = 0; i < n_tgt; i++)
		names[n_num + n_cat + i] = tgt[i];
	for (size_t i = 0; i < nc; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(names[i], names[j]) == 0) {
				rc = lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, names[i],
						   "column named twice");
				goto out;
			}
	if ((rc = lsim_kp_data_init(x, num, n_num, cat, n_cat, tgt, n_tgt)) != 0)
		goto out;
	if ((rc = lsim_csv_open(path, &r, d)) != 0)
		goto out;
	if ((rc = lsim_csv_require(r, names, (int)nc, idx, d)) != 0)
		goto out;
	int need = 0;
	for (size_t i = 0; i < nc; i++)
		if (idx[i] + 1 > need)
			need = idx[i] + 1;
	while ((rc = lsim_csv_next(r, d)) == 1) {
		int line = lsim_csv_line(r);
		if (lsim_csv_fields(r) < need) {
			for (size_t i = 0; i < nc; i++)
				if (idx[i] >= lsim_csv_fields(r)) {
					rc = lsim_diag_set(d, LSIM_EFORMAT, path, line, 0,
							   names[i], "the row has no such field (%d fields)",
							   lsim_csv_fields(r));
					goto out;
				}
		}
		for (size_t i = 0; i < nc; i++) {
			const char *f = lsim_csv_field_trim(r, idx[i]);
			if (i >= n_num && i < n_num + n_cat) {
				cv[i - n_num] = f;
				continue;
			}
			double v;
			if (parse_number(f, &v) != 0) {
				rc = lsim_diag_set(d, LSIM_EFORMAT, path, line,
						   lsim_csv_field_col(r, idx[i]), names[i],
						   "expected a finite number, found '%.40s'", f);
				goto out;
			}
			if (i < n_num)
				nv[i] = v;
			else
				tv[i - n_num - n_cat] = v;
		}
		if ((rc = lsim_kp_data_add(x, nv, cv, tv)) != 0)
			goto out;
	}
	if (rc == 0 && x->n == 0)
		rc = lsim_diag_set(d, LSIM_EFORMAT, path, lsim_csv_line(r), 0, "",
				   "no data rows");
out:
	lsim_csv_close(r);
	free(names);
	free(idx);
	free(nv);
	free(tv);
	free(cv);
	if (rc != 0)
		lsim_kp_data_release(x);
	return rc;
}

/* ---- K-Prototypes ---- */

void lsim_kp_clusters_release(struct lsim_kp_clusters *c)
{
	if (!c)
		return;
	free(c->center);
	free(c->scale);
	free(c->proto_num);
	free(c->proto_cat);
	memset(c, 0, sizeof *c);
}

static int clusters_alloc(struct lsim_kp_clusters *c, size_t k, size_t n_num,
			  size_t n_cat)
{
	memset(c, 0, sizeof *c);
	c->k = k;
	c->n_num = n_num;
	c->n_cat = n_cat;
	c->center = calloc(n_num ? n_num : 1, sizeof *c->center);
	c->scale = calloc(n_num ? n_num : 1, sizeof *c->scale);
	c->proto_num = calloc(k * (n_num ? n_num : 1), sizeof *c->proto_num);
	c->proto_cat = calloc(k * (n_cat ? n_cat : 1), sizeof *c->proto_cat);
	if (!c->center || !c->scale || !c->proto_num || !c->proto_cat) {
		lsim_kp_clusters_release(c);
		return LSIM_ENOMEM;
	}
	return 0;
}

/* Distance of a standardised row to prototype j. */
static double dist_z(const struct lsim_kp_clusters *c, const double *pn,
		     const int32_t *pc, const double *z, const int32_t *cat,
		     size_t j)
{
	double s = 0;
	const double *p = pn + j * c->n_num;
	for (size_t i = 0; i < c->n_num; i++) {
		double e = z[i] - p[i];
		s += e * e;
	}
	const int32_t *q = pc + j * c->n_cat;
	size_t miss = 0;
	for (size_t i = 0; i < c->n_cat; i++)
		miss += cat[i] != q[i];
	return s + c->mu * (double)miss;
}

size_t lsim_kp_nearest(const struct lsim_kp_clusters *c, const double *num,
		       const int32_t *cat, double *dist)
{
	size_t best = 0;
	double bd = INFINITY;
	for (size_t j = 0; j < c->k; j++) {
		double s = 0;
		const double *p = c->proto_num + j * c->n_num;
		for (size_t i = 0; i < c->n_num; i++) {
			double e = (num[i] - c->center[i]) / c->scale[i] - p[i];
			s += e * e;
		}
		const int32_t *q = c->proto_cat + j * c->n_cat;
		size_t miss = 0;
		for (size_t i = 0; i < c->n_cat; i++)
			miss += cat[i] != q[i];
		s += c->mu * (double)miss;
		if (s < bd) {
			bd = s;
			best = j;
		}
	}
	if (dist)
		*dist = bd;
	return best;
}

/* Working memory of one clustering. */
struct kp_work {
	const struct lsim_kp_data *x;
	struct lsim_kp_clusters *c;
	const double *z;
	double *pn;	  /* prototypes of the current restart */
	int32_t *pc;
	int32_t *assign;
	double *dist;	  /* each row's distance to its prototype */
	size_t *count;	  /* rows per cluster */
	size_t *tally;	  /* k x max levels, for the modes */
	size_t max_levels;
};

/* Assigns every row to its nearest prototype; returns whether any row
 * moved and the total cost in *cost. */
static bool assign_rows(struct kp_work *w, double *cost)
{
	const struct lsim_kp_data *x = w->x;
	const struct lsim_kp_clusters *c = w->c;
	bool changed = false;
	double total = 0;
	memset(w->count, 0, c->k * sizeof *w->count);
	for (size_t r = 0; r < x->n; r++) {
		const double *z = w->z + r * c->n_num;
		const int32_t *cat = x->cat + r * c->n_cat;
		size_t best = 0;
		double bd = INFINITY;
		for (size_t j = 0; j < c->k; j++) {
			double s = dist_z(c, w->pn, w->pc, z, cat, j);
			if (s < bd) {
				bd = s;
				best = j;
			}
		}
		if (w->assign[r] != (int32_t)best)
			changed = true;
		w->assign[r] = (int32_t)best;
		w->dist[r] = bd;
		w->count[best]++;
		total += bd;
	}
	*cost = total;
	return changed;
}

static void set_proto_to_row(struct kp_work *w, size_t j, size_t r)
{
	const struct lsim_kp_clusters *c = w->c;
	memcpy(w->pn + j * c->n_num, w->z + r * c->n_num, c->n_num * sizeof *w->pn);
	memcpy(w->pc + j * c->n_cat, w->x->cat + r * c->n_cat,
	       c->n_cat * sizeof *w->pc);
}

/* Gives each empty cluster the row farthest from its prototype among
 * clusters with more than one row (deterministic: the lowest row wins
 * ties). */
static void fill_empty(struct kp_work *w)
{
	const struct lsim_kp_clusters *c = w->c;
	for (size_t j = 0; j < c->k; j++) {
		if (w->count[j] > 0)
			continue;
		size_t far = SIZE_MAX;
		double fd = -1;
		for (size_t r = 0; r < w->x->n; r++)
			if (w->count[w->assign[r]] > 1 && w->dist[r] > fd) {
				fd = w->dist[r];
				far = r;
			}
		if (far == SIZE_MAX)
			return; /* fewer rows than clusters: cannot happen (k <= n) */
		w->count[w->assign[far]]--;
		w->assign[far] = (int32_t)j;
		w->count[j] = 1;
		w->dist[far] = 0;
		set_proto_to_row(w, j, far);
	}
}

/* Prototypes := means (numeric) and modes (categorical, ties: the lowest
 * code) of their rows. */
static void update_protos(struct kp_work *w)
{
	const struct lsim_kp_data *x = w->x;
	const struct lsim_kp_clusters *c = w->c;
	if (c->n_num > 0) {
		memset(w->pn, 0, c->k * c->n_num * sizeof *w->pn);
		for (size_t r = 0; r < x->n; r++) {
			double *p = w->pn + (size_t)w->assign[r] * c->n_num;
			const double *z = w->z + r * c->n_num;
			for (size_t i = 0; i < c->n_num; i++)
				p[i] += z[i];
		}
		for (size_t j = 0; j < c->k; j++)
			for (size_t i = 0; i < c->n_num; i++)
				w->pn[j * c->n_num + i] /= (double)w->count[j];
	}
	for (size_t i = 0; i < c->n_cat; i++) {
		size_t L = x->n_levels[i];
		memset(w->tally, 0, c->k * w->max_levels * sizeof *w->tally);
		for (size_t r = 0; r < x->n; r++)
			w->tally[(size_t)w->assign[r] * w->max_levels +
				 (size_t)x->cat[r * c->n_cat + i]]++;
		for (size_t j = 0; j < c->k; j++) {
			const size_t *t = w->tally + j * w->max_levels;
			size_t best = 0;
			for (size_t l = 1; l < L; l++)
				if (t[l] > t[best])
					best = l;
			w->pc[j * c->n_cat + i] = (int32_t)best;
		}
	}
}

int lsim_kp_cluster(const struct lsim_kp_data *x, const struct lsim_kp_opts *o,
		    struct lsim_kp_clusters *c, int32_t *assign_out,
		    struct lsim_diag *d)
{
	if (x->n_num + x->n_cat == 0)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "columns",
				     "clustering needs at least one numeric or categorical attribute");
	if (o->k < 1 || o->k > x->n)
		return lsim_diag_set(d, LSIM_ERANGE, "", 0, 0, "k",
				     "k must be in [1, rows = %zu], not %zu", x->n, o->k);
	if (o->restarts < 1)
		return lsim_diag_set(d, LSIM_ERANGE, "", 0, 0, "restarts",
				     "restarts must be >= 1, not %d", o->restarts);
	if (!(o->mu < 0) && !isfinite(o->mu))
		return lsim_diag_set(d, LSIM_ERANGE, "", 0, 0, "mu",
				     "mu must be finite");
	size_t k = o->k, n = x->n, nn = x->n_num, ncat = x->n_cat;
	int rc = clusters_alloc(c, k, nn, ncat);
	if (rc != 0)
		return rc;
	struct kp_work w = {.x = x, .c = c};
	double *z = malloc(n * (nn ? nn : 1) * sizeof *z);
	double *col = malloc(n * sizeof *col);
	w.pn = calloc(k * (nn ? nn : 1), sizeof *w.pn);
	w.pc = calloc(k * (ncat ? ncat : 1), sizeof *w.pc);
	w.assign = malloc(n * sizeof *w.assign);
	w.dist = malloc(n * sizeof *w.dist);
	w.count = calloc(k, sizeof *w.count);
	int32_t *best_assign = malloc(n * sizeof *best_assign);
	size_t *all = malloc(n * sizeof *all), *chosen = malloc(k * sizeof *chosen);
	for (size_t i = 0; i < ncat; i++)
		if (x->n_levels[i] > w.max_levels)
			w.max_levels = x->n_levels[i];
	w.tally = calloc(k * (w.max_levels ? w.max_levels : 1), sizeof *w.tally);
	gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
	if (!z || !col || !w.pn || !w.pc || !w.assign || !w.dist || !w.count ||
	    !best_assign || !all || !chosen || !w.tally || !rng) {
		rc = LSIM_ENOMEM;
		goto out;
	}
	w.z = z;
	/* standardisation: mean and sample standard deviation per column */
	size_t varying = 0;
	for (size_t i = 0; i < nn; i++) {
		for (size_t r = 0; r < n; r++)
			col[r] = x->num[r * nn + i];
		double mean = gsl_stats_mean(col, 1, n);
		double sd = n > 1 ? gsl_stats_sd_m(col, 1, n, mean) : 0;
		c->center[i] = mean;
		c->scale[i] = sd > 0 && isfinite(sd) ? sd : 1;
		varying += sd > 0 && isfinite(sd);
		for (size_t r = 0; r < n; r++)
			z[r * nn + i] = (col[r] - mean) / c->scale[i];
	}
	/* Huang's advice: mu between 1/3 and 2/3 of the mean sd of the
	 * numeric attributes; half of it. Standardised, every attribute that
	 * varies has sd 1 (constant ones add nothing to distances and are
	 * left out of the mean), so mu = 0.5; with none, mu = 1. */
	if (o->mu >= 0)
		c->mu = o->mu;
	else
		c->mu = varying > 0 ? 0.5 : 1.0;
	gsl_rng_set(rng, (unsigned long)o->seed);
	for (size_t r = 0; r < n; r++)
		all[r] = r;
	int max_iter = o->max_iter > 0 ? o->max_iter : MAX_ITER_DEFAULT;
	c->cost = INFINITY;
	for (int rs = 0; rs < o->restarts; rs++) {
		gsl_ran_choose(rng, chosen, k, all, n, sizeof *all);
		for (size_t j = 0; j < k; j++)
			set_proto_to_row(&w, j, chosen[j]);
		for (size_t r = 0; r < n; r++)
			w.assign[r] = -1;
		double cost = 0;
		int it;
		for (it = 0; it < max_iter; it++) {
			bool changed = assign_rows(&w, &cost);
			if (it > 0 && !changed)
				break;
			fill_empty(&w);
			update_protos(&w);
		}
		if (it == max_iter)
			assign_rows(&w, &cost);
		if (cost < c->cost) {
			c->cost = cost;
			c->best_restart = rs;
			c->iterations = it < max_iter ? it + 1 : it;
			memcpy(c->proto_num, w.pn, k * nn * sizeof *w.pn);
			memcpy(c->proto_cat, w.pc, k * ncat * sizeof *w.pc);
			memcpy(best_assign, w.assign, n * sizeof *best_assign);
		}
	}
	if (assign_out)
		memcpy(assign_out, best_assign, n * sizeof *best_assign);
out:
	free(z);
	free(col);
	free(w.pn);
	free(w.pc);
	free(w.assign);
	free(w.dist);
	free(w.count);
	free(w.tally);
	free(best_assign);
	free(all);
	free(chosen);
	if (rng)
		gsl_rng_free(rng);
	if (rc != 0)
		lsim_kp_clusters_release(c);
	return rc;
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

static int no_xgboost(struct lsim_diag *d, const char *file, int line,
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
	return no_xgboost(d, "", 0, kind);
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
	free_names(m->num_names, m->n_num);
	free_names(m->cat_names, m->n_cat);
	free_names(m->tgt_names, m->n_tgt);
	free_levels(m->levels, m->n_levels, m->n_cat);
	free(m->sizes);
	free(m->feat);
	free(m->cat_fill);
	free(m);
}

/* Allocates the name, level and regressor arrays of a model whose
 * counts and k are set. */
static int model_alloc(struct lsim_kproto_model *m)
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

static int model_scratch(struct lsim_kproto_model *m)
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
		return no_xgboost(d, "", 0, kind);
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
	if ((rc = model_alloc(m)) != 0)
		goto out;
	for (size_t i = 0; i < m->n_num; i++)
		if (!(m->num_names[i] = strdup(x->num_names[i])))
			rc = LSIM_ENOMEM;
	for (size_t i = 0; i < m->n_cat; i++) {
		if (!(m->cat_names[i] = strdup(x->cat_names[i])))
			rc = LSIM_ENOMEM;
		for (size_t l = 0; rc == 0 && l < x->n_levels[i]; l++)
			rc = push_level(&m->levels[i], &m->n_levels[i], x->levels[i][l]);
	}
	for (size_t i = 0; i < m->n_tgt; i++)
		if (!(m->tgt_names[i] = strdup(x->tgt_names[i])))
			rc = LSIM_ENOMEM;
	if (rc == 0)
		rc = model_scratch(m);
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
	return find_label(m->levels[col], m->n_levels[col], label);
}

/* ---- base64 (RFC 4648, with padding) ---- */

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64_write(FILE *f, const unsigned char *p, size_t n)
{
	size_t col = 0;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16;
		if (i + 1 < n)
			v |= (unsigned)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		char q[4] = {b64[(v >> 18) & 63], b64[(v >> 12) & 63],
			     i + 1 < n ? b64[(v >> 6) & 63] : '=',
			     i + 2 < n ? b64[v & 63] : '='};
		fwrite(q, 1, 4, f);
		col += 4;
		if (col == B64_LINE) {
			fputc('\n', f);
			col = 0;
		}
	}
	if (col)
		fputc('\n', f);
}

static int b64_value(char ch)
{
	const char *p = ch ? strchr(b64, ch) : NULL;
	return p ? (int)(p - b64) : -1;
}

/* ---- saving ---- */

static int has_newline(const char *s)
{
	return strchr(s, '\n') || strchr(s, '\r');
}

/* A length-prefixed string: "len:bytes". */
static void put_str(FILE *f, const char *s)
{
	fprintf(f, " %zu:%s", strlen(s), s);
}

int lsim_kproto_save(const struct lsim_kproto_model *m, const char *path,
		     struct lsim_diag *d)
{
	for (size_t i = 0; i < m->n_num; i++)
		if (has_newline(m->num_names[i]))
			return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, "numeric",
					     "a column name holds a line break");
	for (size_t i = 0; i < m->n_cat; i++) {
		if (has_newline(m->cat_names[i]))
			return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, "categorical",
					     "a column name holds a line break");
		for (size_t l = 0; l < m->n_levels[i]; l++)
			if (has_newline(m->levels[i][l]))
				return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0,
						     m->cat_names[i],
						     "a label holds a line break");
	}
	for (size_t i = 0; i < m->n_tgt; i++)
		if (has_newline(m->tgt_names[i]))
			return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, "target",
					     "a column name holds a line break");
	size_t len = strlen(path) + 5;
	char *tmp = malloc(len);
	if (!tmp)
		return LSIM_ENOMEM;
	snprintf(tmp, len, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f) {
		int rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "", "cannot write %s: %s",
				       tmp, strerror(errno));
		free(tmp);
		return rc;
	}
	int rc = 0;
	const struct lsim_kp_clusters *c = &m->cl;
	fprintf(f, "%s\nversion %d\n", MAGIC, FORMAT_VERSION);
	fprintf(f, "kind %s\nseed %llu\nrows %zu\n", lsim_kp_kind_name(m->kind),
		(unsigned long long)m->seed, m->n_train);
	fprintf(f, "clusters %zu mu %.17g cost %.17g restart %d iterations %d\n",
		c->k, c->mu, c->cost, c->best_restart, c->iterations);
	fprintf(f, "numeric %zu\n", m->n_num);
	for (size_t i = 0; i < m->n_num; i++) {
		fputs("num", f);
		put_str(f, m->num_names[i]);
		fprintf(f, " %.17g %.17g\n", c->center[i], c->scale[i]);
	}
	fprintf(f, "categorical %zu\n", m->n_cat);
	for (size_t i = 0; i < m->n_cat; i++) {
		fputs("cat", f);
		put_str(f, m->cat_names[i]);
		fprintf(f, " %zu", m->n_levels[i]);
		for (size_t l = 0; l < m->n_levels[i]; l++)
			put_str(f, m->levels[i][l]);
		fputc('\n', f);
	}
	fprintf(f, "targets %zu\n", m->n_tgt);
	for (size_t i = 0; i < m->n_tgt; i++) {
		fputs("tgt", f);
		put_str(f, m->tgt_names[i]);
		fputc('\n', f);
	}
	for (size_t j = 0; j < c->k; j++) {
		fprintf(f, "proto %zu %zu", j, m->sizes[j]);
		for (size_t i = 0; i < m->n_num; i++)
			fprintf(f, " %.17g", c->proto_num[j * m->n_num + i]);
		for (size_t i = 0; i < m->n_cat; i++)
			fprintf(f, " %d", (int)c->proto_cat[j * m->n_cat + i]);
		fputc('\n', f);
	}
	for (size_t t = 0; t < m->n_tgt && rc == 0; t++) {
		for (size_t j = 0; j < c->k && rc == 0; j++) {
			const struct lsim_kp_reg *r = &m->reg[t * c->k + j];
			fprintf(f, "reg %zu %zu %s %.17g", t, j,
				lsim_kp_kind_name(r->kind), r->value);
			if (r->kind == LSIM_KP_LINEAR) {
				fprintf(f, " %zu", m->n_feat + 1);
				for (size_t i = 0; i <= m->n_feat; i++)
					fprintf(f, " %.17g", r->coef[i]);
				fputc('\n', f);
			} else if (r->kind == LSIM_KP_GB || r->kind == LSIM_KP_RF) {
#ifdef LSIM_HAVE_XGBOOST
				bst_ulong n = 0;
				const char *buf = NULL;
				if (XGBoosterSaveModelToBuffer(r->booster,
							       "{\"format\": \"ubj\"}",
							       &n, &buf) != 0) {
					rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "reg",
							   "XGBoost cannot save a booster: %s",
							   XGBGetLastError());
					break;
				}
				fprintf(f, " %llu\n", (unsigned long long)n);
				b64_write(f, (const unsigned char *)buf, (size_t)n);
#else
				(void)b64_write;
				rc = no_xgboost(d, path, 0, r->kind);
#endif
			} else {
				fputc('\n', f);
			}
		}
	}
	fputs("end\n", f);
	if (ferror(f) && rc == 0)
		rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "", "write error on %s", tmp);
	if (fclose(f) != 0 && rc == 0)
		rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "", "cannot close %s: %s",
				   tmp, strerror(errno));
	if (rc == 0 && rename(tmp, path) != 0)
		rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "", "cannot rename %s: %s",
				   tmp, strerror(errno));
	if (rc != 0)
		remove(tmp);
	free(tmp);
	return rc;
}

/* ---- loading ---- */

/* The reader: the file in memory, split into lines in place. */
struct mreader {
	const char *path;
	char *buf;
	size_t len, pos;
	int line;	 /* of cur */
	char *cur;	 /* the current line, NUL-terminated */
	char *p;	 /* position in cur */
	const char *kw;	 /* its keyword, for messages */
	struct lsim_diag *d;
};

__attribute__((format(printf, 3, 4)))
static int mr_err(struct mreader *mr, int col, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return lsim_diag_set(mr->d, LSIM_EFORMAT, mr->path, mr->line, col,
			     mr->kw ? mr->kw : "", "%s", msg);
}

static int mr_col(const struct mreader *mr)
{
	return mr->cur ? (int)(mr->p - mr->cur) + 1 : 0;
}

/* Advances to the next line; 0, or 1 at the end of the file. */
static int mr_next_raw(struct mreader *mr)
{
	if (mr->pos >= mr->len)
		return 1;
	char *s = mr->buf + mr->pos;
	char *e = memchr(s, '\n', mr->len - mr->pos);
	size_t n = e ? (size_t)(e - s) : mr->len - mr->pos;
	mr->pos += n + (e ? 1 : 0);
	s[n] = '\0';
	if (n > 0 && s[n - 1] == '\r')
		s[n - 1] = '\0';
	mr->line++;
	mr->cur = mr->p = s;
	return 0;
}

/* The next line must start with keyword kw (followed by a space or its end). */
static int mr_expect(struct mreader *mr, const char *kw)
{
	mr->kw = kw;
	if (mr_next_raw(mr) != 0) {
		mr->line++;
		mr->cur = NULL;
		return mr_err(mr, 0, "the file ends here; expected '%s' (truncated?)", kw);
	}
	size_t n = strlen(kw);
	if (strncmp(mr->cur, kw, n) != 0 || (mr->cur[n] != ' ' && mr->cur[n] != '\0'))
		return mr_err(mr, 1, "expected '%s', found '%.40s'", kw, mr->cur);
	mr->p = mr->cur + n;
	return 0;
}

/* Skips the one space before a token. */
static int mr_space(struct mreader *mr, const char *what)
{
	if (*mr->p != ' ')
		return mr_err(mr, mr_col(mr), "missing %s", what);
	mr->p++;
	if (*mr->p == ' ' || *mr->p == '\0')
		return mr_err(mr, mr_col(mr), "missing %s", what);
	return 0;
}

static int mr_word(struct mreader *mr, const char *what, char *out, size_t size)
{
	int rc = mr_space(mr, what);
	if (rc != 0)
		return rc;
	size_t n = strcspn(mr->p, " ");
	if (n >= size)
		return mr_err(mr, mr_col(mr), "%s too long", what);
	memcpy(out, mr->p, n);
	out[n] = '\0';
	mr->p += n;
	return 0;
}

static int mr_size(struct mreader *mr, const char *what, size_t max, size_t *out)
{
	int col = mr_col(mr) + 1;
	char w[32];
	int rc = mr_word(mr, what, w, sizeof w);
	if (rc != 0)
		return rc;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(w, &end, 10);
	if (*end || w[0] == '-' || w[0] == '+' || errno == ERANGE || v > max)
		return mr_err(mr, col, "%s must be an integer in [0, %zu], not '%s'",
			      what, max, w);
	*out = (size_t)v;
	return 0;
}

static int mr_double(struct mreader *mr, const char *what, double *out)
{
	int col = mr_col(mr) + 1;
	char w[64];
	int rc = mr_word(mr, what, w, sizeof w);
	if (rc != 0)
		return rc;
	if (strcmp(w, "inf") == 0) { /* the cost of an empty fit */
		*out = INFINITY;
		return 0;
	}
	if (parse_number(w, out) != 0)
		return mr_err(mr, col, "%s must be a finite number, not '%s'", what, w);
	return 0;
}

/* "key value": a literal word then a value. */
static int mr_lit(struct mreader *mr, const char *lit)
{
	int col = mr_col(mr) + 1;
	char w[32];
	int rc = mr_word(mr, lit, w, sizeof w);
	if (rc != 0)
		return rc;
	if (strcmp(w, lit) != 0)
		return mr_err(mr, col, "expected '%s', found '%s'", lit, w);
	return 0;
}

static int mr_str(struct mreader *mr, const char *what, char **out)
{
	int rc = mr_space(mr, what);
	if (rc != 0)
		return rc;
	int col = mr_col(mr);
	char *end;
	errno = 0;
	unsigned long long n = strtoull(mr->p, &end, 10);
	if (end == mr->p || *end != ':' || errno == ERANGE || *mr->p == '-' ||
	    *mr->p == '+')
		return mr_err(mr, col, "%s must be written LENGTH:TEXT", what);
	if (strlen(end + 1) < n)
		return mr_err(mr, col, "%s is shorter than its length %llu", what, n);
	if (end[1 + n] != ' ' && end[1 + n] != '\0')
		return mr_err(mr, col, "%s is longer than its length %llu", what, n);
	if (!(*out = strndup(end + 1, (size_t)n)))
		return LSIM_ENOMEM;
	mr->p = end + 1 + n;
	return 0;
}

static int mr_eol(struct mreader *mr)
{
	if (*mr->p != '\0')
		return mr_err(mr, mr_col(mr), "unexpected text '%.40s'", mr->p);
	return 0;
}

/* Reads the base64 lines of an n-byte booster (4 characters per 3 bytes,
 * padded, at most B64_LINE a line) and decodes them into out, which has
 * room for n + 2 bytes. */
static int mr_b64(struct mreader *mr, size_t n, unsigned char *out)
{
	size_t want = (n + 2) / 3 * 4, have = 0;
	char *text = malloc(want + 1);
	if (!text)
		return LSIM_ENOMEM;
	int rc = 0;
	while (have < want && rc == 0) {
		if (mr_next_raw(mr) != 0) {
			mr->line++;
			mr->cur = NULL;
			rc = mr_err(mr, 0, "the file ends inside a booster (%zu of %zu base64 characters)",
				    have, want);
			break;
		}
		size_t len = strlen(mr->cur);
		if (len == 0 || len > B64_LINE || len > want - have) {
			rc = mr_err(mr, 1, "a base64 line of %zu characters (%zu of %zu read)",
				    len, have, want);
			break;
		}
		for (size_t i = 0; i < len && rc == 0; i++)
			if (b64_value(mr->cur[i]) < 0 && mr->cur[i] != '=')
				rc = mr_err(mr, (int)i + 1, "not base64: '%c'", mr->cur[i]);
		memcpy(text + have, mr->cur, len);
		have += len;
	}
	size_t got = 0;
	for (size_t i = 0; i < want && rc == 0; i += 4) {
		int v[4];
		for (int j = 0; j < 4; j++) {
			char ch = text[i + (size_t)j];
			bool last = i + 4 == want;
			v[j] = b64_value(ch);
			if (v[j] < 0 && !(ch == '=' && last && j >= 2 &&
					  (j == 3 || text[i + 3] == '=')))
				rc = mr_err(mr, 0, "the booster is not valid base64 (character %zu: '%c')",
					    i + (size_t)j + 1, ch);
		}
		if (rc != 0)
			break;
		unsigned x = (unsigned)v[0] << 18 | (unsigned)v[1] << 12 |
			     (v[2] >= 0 ? (unsigned)v[2] << 6 : 0) | (v[3] >= 0 ? (unsigned)v[3] : 0);
		unsigned char b[3] = {(unsigned char)(x >> 16), (unsigned char)(x >> 8),
				      (unsigned char)x};
		int nb = v[2] < 0 ? 1 : v[3] < 0 ? 2 : 3;
		for (int j = 0; j < nb; j++)
			out[got++] = b[j];
	}
	if (rc == 0 && got != n)
		rc = mr_err(mr, 0, "the booster has %zu bytes, not %zu", got, n);
	free(text);
	return rc;
}

static int load_reg(struct mreader *mr, struct lsim_kproto_model *m,
		    bool *seen)
{
	int rc = mr_expect(mr, "reg");
	size_t t, j;
	char kind[16];
	if (rc == 0)
		rc = mr_size(mr, "target index", m->n_tgt ? m->n_tgt - 1 : 0, &t);
	if (rc == 0)
		rc = mr_size(mr, "cluster index", m->cl.k - 1, &j);
	int kcol = mr_col(mr) + 1;
	if (rc == 0)
		rc = mr_word(mr, "regressor", kind, sizeof kind);
	if (rc != 0)
		return rc;
	if (seen[t * m->cl.k + j])
		return mr_err(mr, 5, "a second regressor for target %zu, cluster %zu", t, j);
	seen[t * m->cl.k + j] = true;
	struct lsim_kp_reg *r = &m->reg[t * m->cl.k + j];
	int kk = lsim_kp_kind_parse(kind);
	if (kk < 0)
		return mr_err(mr, kcol, "unknown regressor '%s' (const, linear, gb, rf)", kind);
	r->kind = (enum lsim_kp_kind)kk;
	if ((rc = mr_double(mr, "value", &r->value)) != 0)
		return rc;
	if (r->kind == LSIM_KP_CONST)
		return mr_eol(mr);
	if (r->kind == LSIM_KP_LINEAR) {
		size_t nc;
		int ccol = mr_col(mr) + 1;
		if ((rc = mr_size(mr, "coefficient count", SIZE_MAX / 16, &nc)) != 0)
			return rc;
		if (nc != m->n_feat + 1)
			return mr_err(mr, ccol, "%zu coefficients, the model has %zu features + 1",
				      nc, m->n_feat);
		if (!(r->coef = malloc(nc * sizeof *r->coef)))
			return LSIM_ENOMEM;
		for (size_t i = 0; i < nc && rc == 0; i++)
			rc = mr_double(mr, "coefficient", &r->coef[i]);
		return rc ? rc : mr_eol(mr);
	}
	size_t nb;
	if ((rc = mr_size(mr, "booster size", (size_t)1 << 34, &nb)) != 0 ||
	    (rc = mr_eol(mr)) != 0)
		return rc;
	if (nb == 0)
		return mr_err(mr, 0, "an empty booster");
	int line = mr->line;
#ifdef LSIM_HAVE_XGBOOST
	unsigned char *buf = malloc(nb + 2);
	if (!buf)
		return LSIM_ENOMEM;
	rc = mr_b64(mr, nb, buf);
	BoosterHandle b = NULL;
	if (rc == 0 && (XGBoosterCreate(NULL, 0, &b) != 0 ||
			XGBoosterLoadModelFromBuffer(b, buf, (bst_ulong)nb) != 0 ||
			XGBoosterSetParam(b, "nthread", "1") != 0))
		rc = lsim_diag_set(mr->d, LSIM_EFORMAT, mr->path, line, 0, "reg",
				   "XGBoost cannot read the booster: %s",
				   XGBGetLastError());
	if (rc == 0)
		r->booster = b;
	else if (b)
		XGBoosterFree(b);
	free(buf);
	return rc;
#else
	(void)mr_b64;
	return no_xgboost(mr->d, mr->path, line, r->kind);
#endif
}

static int load_body(struct mreader *mr, struct lsim_kproto_model *m)
{
	int rc;
	char w[64];
	size_t v;
	mr->kw = "";
	if (mr_next_raw(mr) != 0 || strcmp(mr->cur, MAGIC) != 0) {
		mr->line = 1;
		return mr_err(mr, 1, "not an llmsim kproto model (the first line is not '%s')",
			      MAGIC);
	}
	if ((rc = mr_expect(mr, "version")) != 0 ||
	    (rc = mr_size(mr, "version", 1000000, &v)) != 0 || (rc = mr_eol(mr)) != 0)
		return rc;
	if (v != FORMAT_VERSION)
		return mr_err(mr, 9, "format version %zu; this llmsim reads version %d",
			      v, FORMAT_VERSION);
	if ((rc = mr_expect(mr, "kind")) != 0 || (rc = mr_word(mr, "kind", w, sizeof w)) != 0 ||
	    (rc = mr_eol(mr)) != 0)
		return rc;
	int kk = lsim_kp_kind_parse(w);
	if (kk != LSIM_KP_LINEAR && kk != LSIM_KP_GB && kk != LSIM_KP_RF)
		return mr_err(mr, 6, "kind must be gb, rf or linear, not '%s'", w);
	m->kind = (enum lsim_kp_kind)kk;
	size_t seed;
	if ((rc = mr_expect(mr, "seed")) != 0 ||
	    (rc = mr_size(mr, "seed", SIZE_MAX, &seed)) != 0 || (rc = mr_eol(mr)) != 0)
		return rc;
	m->seed = seed;
	if ((rc = mr_expect(mr, "rows")) != 0 ||
	    (rc = mr_size(mr, "rows", SIZE_MAX, &m->n_train)) != 0 || (rc = mr_eol(mr)) != 0)
		return rc;
	size_t k;
	struct lsim_kp_clusters *c = &m->cl;
	double mu, cost;
	size_t rs, its;
	if ((rc = mr_expect(mr, "clusters")) != 0 ||
	    (rc = mr_size(mr, "k", 1000000, &k)) != 0 || (rc = mr_lit(mr, "mu")) != 0 ||
	    (rc = mr_double(mr, "mu", &mu)) != 0 || (rc = mr_lit(mr, "cost")) != 0 ||
	    (rc = mr_double(mr, "cost", &cost)) != 0 || (rc = mr_lit(mr, "restart")) != 0 ||
	    (rc = mr_size(mr, "restart", INT32_MAX, &rs)) != 0 ||
	    (rc = mr_lit(mr, "iterations")) != 0 ||
	    (rc = mr_size(mr, "iterations", INT32_MAX, &its)) != 0 || (rc = mr_eol(mr)) != 0)
		return rc;
	if (k == 0)
		return mr_err(mr, 10, "k must be at least 1");
	if (mu < 0)
		return mr_err(mr, 0, "mu must be >= 0");
	size_t nn, ncat, nt;
	if ((rc = mr_expect(mr, "numeric")) != 0 ||
	    (rc = mr_size(mr, "count", 100000, &nn)) != 0 || (rc = mr_eol(mr)) != 0)
		return rc;
	if ((rc = clusters_alloc(c, k, nn, 0)) != 0)
		return rc;
	c->mu = mu;
	c->cost = cost;
	c->best_restart = (int)rs;
	c->iterations = (int)its;
	m->n_num = nn;
	char **num_names = calloc(nn ? nn : 1, sizeof *num_names);
	if (!num_names)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < nn && rc == 0; i++) {
		if ((rc = mr_expect(mr, "num")) != 0 ||
		    (rc = mr_str(mr, "name", &num_names[i])) != 0 ||
		    (rc = mr_double(mr, "center", &c->center[i])) != 0 ||
		    (rc = mr_double(mr, "scale", &c->scale[i])) != 0 || (rc = mr_eol(mr)) != 0)
			break;
		if (!(c->scale[i] > 0))
			rc = mr_err(mr, 0, "the scale of %s must be > 0", num_names[i]);
	}
	m->num_names = num_names; /* model_alloc below keeps it */
	if (rc != 0)
		return rc;
	if ((rc = mr_expect(mr, "categorical")) != 0 ||
	    (rc = mr_size(mr, "count", 100000, &ncat)) != 0 || (rc = mr_eol(mr)) != 0)
		return rc;
	if (nn + ncat == 0)
		return mr_err(mr, 0, "no attributes");
	m->n_cat = ncat;
	char **cat_names = calloc(ncat ? ncat : 1, sizeof *cat_names);
	char ***levels = calloc(ncat ? ncat : 1, sizeof *levels);
	size_t *n_levels = calloc(ncat ? ncat : 1, sizeof *n_levels);
	m->cat_names = cat_names;
	m->levels = levels;
	m->n_levels = n_levels;
	if (!cat_names || !levels || !n_levels)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < ncat; i++) {
		size_t nl;
		if ((rc = mr_expect(mr, "cat")) != 0 ||
		    (rc = mr_str(mr, "name", &cat_names[i])) != 0 ||
		    (rc = mr_size(mr, "level count", 10000000, &nl)) != 0)
			return rc;
		if (nl == 0)
			return mr_err(mr, 0, "%s has no levels", cat_names[i]);
		if (!(levels[i] = calloc(nl, sizeof *levels[i])))
			return LSIM_ENOMEM;
		for (size_t l = 0; l < nl; l++) {
			if ((rc = mr_str(mr, "label", &levels[i][l])) != 0)
				return rc;
			n_levels[i] = l + 1;
			if (find_label(levels[i], l, levels[i][l]) >= 0)
				return mr_err(mr, 0, "%s: label '%s' twice", cat_names[i],
					      levels[i][l]);
		}
		if ((rc = mr_eol(mr)) != 0)
			return rc;
	}
	if ((rc = mr_expect(mr, "targets")) != 0 ||
	    (rc = mr_size(mr, "count", 100000, &nt)) != 0 || (rc = mr_eol(mr)) != 0)
		return rc;
	m->n_tgt = nt;
	char **tgt_names = calloc(nt ? nt : 1, sizeof *tgt_names);
	m->tgt_names = tgt_names;
	if (!tgt_names)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < nt; i++)
		if ((rc = mr_expect(mr, "tgt")) != 0 ||
		    (rc = mr_str(mr, "name", &tgt_names[i])) != 0 || (rc = mr_eol(mr)) != 0)
			return rc;
	/* the prototypes' categorical part, then the rest of the model */
	free(c->proto_cat);
	c->n_cat = ncat;
	if (!(c->proto_cat = calloc(k * (ncat ? ncat : 1), sizeof *c->proto_cat)))
		return LSIM_ENOMEM;
	m->reg = calloc(nt * k > 0 ? nt * k : 1, sizeof *m->reg);
	m->sizes = calloc(k, sizeof *m->sizes);
	if (!m->reg || !m->sizes || (rc = model_scratch(m)) != 0)
		return rc ? rc : LSIM_ENOMEM;
	for (size_t j = 0; j < k; j++) {
		size_t idx;
		if ((rc = mr_expect(mr, "proto")) != 0 ||
		    (rc = mr_size(mr, "cluster index", k - 1, &idx)) != 0)
			return rc;
		if (idx != j)
			return mr_err(mr, 7, "prototype %zu where %zu was expected", idx, j);
		if ((rc = mr_size(mr, "size", SIZE_MAX, &m->sizes[j])) != 0)
			return rc;
		for (size_t i = 0; i < nn; i++)
			if ((rc = mr_double(mr, "coordinate", &c->proto_num[j * nn + i])) != 0)
				return rc;
		for (size_t i = 0; i < ncat; i++) {
			size_t code;
			if ((rc = mr_size(mr, "level code", n_levels[i] - 1, &code)) != 0)
				return rc;
			c->proto_cat[j * ncat + i] = (int32_t)code;
		}
		if ((rc = mr_eol(mr)) != 0)
			return rc;
	}
	bool *seen = calloc(nt * k > 0 ? nt * k : 1, sizeof *seen);
	if (!seen)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < nt * k && rc == 0; i++)
		rc = load_reg(mr, m, seen);
	free(seen);
	if (rc != 0)
		return rc;
	if ((rc = mr_expect(mr, "end")) != 0 || (rc = mr_eol(mr)) != 0)
		return rc;
	while (mr_next_raw(mr) == 0) {
		mr->kw = "";
		if (mr->cur[0] != '\0')
			return mr_err(mr, 1, "text after 'end'");
	}
	return 0;
}

int lsim_kproto_load(const char *path, struct lsim_kproto_model **out,
		     struct lsim_diag *d)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return lsim_diag_set(d, errno == ENOENT ? LSIM_ENOENT : LSIM_EIO, path,
				     0, 0, "", "cannot open the model %s: %s", path,
				     strerror(errno));
	struct mreader mr = {.path = path, .d = d};
	size_t cap = 0;
	int rc = 0;
	for (;;) {
		if (mr.len + 65536 > cap) {
			cap = cap ? cap * 2 : 131072;
			char *b = realloc(mr.buf, cap + 1);
			if (!b) {
				rc = LSIM_ENOMEM;
				break;
			}
			mr.buf = b;
		}
		size_t n = fread(mr.buf + mr.len, 1, cap - mr.len, f);
		mr.len += n;
		if (n == 0)
			break;
	}
	if (rc == 0 && ferror(f))
		rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "", "read error");
	fclose(f);
	if (rc == 0 && memchr(mr.buf, '\0', mr.len))
		rc = lsim_diag_set(d, LSIM_EFORMAT, path, 0, 0, "",
				   "a NUL byte: not a text model file");
	struct lsim_kproto_model *m = NULL;
	if (rc == 0 && !(m = calloc(1, sizeof *m)))
		rc = LSIM_ENOMEM;
	if (rc == 0) {
		mr.buf[mr.len] = '\0';
		rc = load_body(&mr, m);
	}
	free(mr.buf);
	if (rc != 0) {
		lsim_kproto_destroy(m);
		return rc;
	}
	*out = m;
	return 0;
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

/* "a, b, c" of n names into buf. */
static void list_names(char *const *names, size_t n, char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "",
					names[i]);
	if (n == 0)
		snprintf(buf, size, "none");
}

#define CLASS_CODES_INDEXED 256

int lsim_kproto_attach(struct lsim_policy *p, const struct lsim_doc *doc,
		       const struct lsim_node *params, const char *key,
		       const char *base_dir, struct lsim_diag *d)
{
	if (!p || p->type != &lsim_prof_kproto)
		return 0;
	struct lsim_kproto_profiler *s = p->state;
	char k[192], list[512];
	const struct lsim_node *at = lsim_node_get(params, "model");
	snprintf(k, sizeof k, "%s.model", key);
	if (!s->model || !s->model[0])
		return lsim_cfg_error(d, doc, at ? at : params, k, LSIM_EINVAL,
				      "kproto needs a model file (llmsim profile train ... -o FILE)");
	size_t len = strlen(base_dir ? base_dir : "") + strlen(s->model) + 2;
	char *file = malloc(len);
	if (!file)
		return LSIM_ENOMEM;
	if (s->model[0] == '/' || !base_dir || !base_dir[0])
		snprintf(file, len, "%s", s->model);
	else
		snprintf(file, len, "%s/%s", base_dir, s->model);
	struct lsim_kproto_model *m = NULL;
	int rc = lsim_kproto_load(file, &m, d);
	free(file);
	if (rc == LSIM_ENOENT && d && d->line == 0)
		return lsim_cfg_error(d, doc, at, k, rc, "%s", d->msg);
	if (rc != 0)
		return rc;
	s->target_idx = 0;
	s->prompt_col = s->hour_col = s->class_col = -1;
	if (m->n_tgt == 0) {
		rc = lsim_cfg_error(d, doc, at, k, LSIM_EINVAL,
				    "the model has no targets to predict");
		goto fail;
	}
	if (s->target && s->target[0] &&
	    (s->target_idx = lsim_kproto_tgt_index(m, s->target)) < 0) {
		list_names(m->tgt_names, m->n_tgt, list, sizeof list);
		snprintf(k, sizeof k, "%s.target", key);
		rc = lsim_cfg_error(d, doc, lsim_node_get(params, "target"), k,
				    LSIM_EINVAL, "the model has no target '%s'; it has: %s",
				    s->target, list);
		goto fail;
	}
	if (s->prompt_feature && s->prompt_feature[0]) {
		if ((s->prompt_col = lsim_kproto_num_index(m, s->prompt_feature)) < 0) {
			list_names(m->num_names, m->n_num, list, sizeof list);
			snprintf(k, sizeof k, "%s.prompt_feature", key);
			rc = lsim_cfg_error(d, doc, lsim_node_get(params, "prompt_feature"),
					    k, LSIM_EINVAL,
					    "the model has no numeric attribute '%s'; it has: %s",
					    s->prompt_feature, list);
			goto fail;
		}
	} else if (m->n_num > 0) {
		s->prompt_col = 0;
	}
	if (s->hour_feature && s->hour_feature[0]) {
		s->hour_col = lsim_kproto_num_index(m, s->hour_feature);
		if (s->hour_col < 0 || s->hour_col == s->prompt_col) {
			list_names(m->num_names, m->n_num, list, sizeof list);
			snprintf(k, sizeof k, "%s.hour_feature", key);
			rc = lsim_cfg_error(d, doc, lsim_node_get(params, "hour_feature"),
					    k, LSIM_EINVAL,
					    s->hour_col < 0
						    ? "the model has no numeric attribute '%s'; it has: %s"
						    : "'%s' is already the prompt feature (numeric: %s)",
					    s->hour_feature, list);
			goto fail;
		}
	}
	const char *labels = s->class_labels ? s->class_labels : "";
	if (s->class_feature && s->class_feature[0]) {
		if ((s->class_col = lsim_kproto_cat_index(m, s->class_feature)) < 0) {
			list_names(m->cat_names, m->n_cat, list, sizeof list);
			snprintf(k, sizeof k, "%s.class_feature", key);
			rc = lsim_cfg_error(d, doc, lsim_node_get(params, "class_feature"),
					    k, LSIM_EINVAL,
					    "the model has no categorical attribute '%s'; it has: %s",
					    s->class_feature, list);
			goto fail;
		}
		size_t col = (size_t)s->class_col;
		size_t n = CLASS_CODES_INDEXED;
		if (labels[0]) {
			n = 1;
			for (const char *q = labels; *q; q++)
				n += *q == '|';
		}
		s->class_code = calloc(n, sizeof *s->class_code);
		if (!s->class_code) {
			rc = LSIM_ENOMEM;
			goto fail;
		}
		s->n_class_code = n;
		const char *q = labels;
		for (size_t i = 0; i < n; i++) {
			char lab[128];
			if (labels[0]) {
				size_t l = strcspn(q, "|");
				snprintf(lab, sizeof lab, "%.*s", (int)(l < 127 ? l : 127), q);
				q += l + (q[l] == '|');
			} else {
				snprintf(lab, sizeof lab, "%zu", i);
			}
			s->class_code[i] = lsim_kproto_level(m, col, lab);
			if (labels[0] && s->class_code[i] < 0) {
				list_names(m->levels[col], m->n_levels[col], list, sizeof list);
				snprintf(k, sizeof k, "%s.class_labels", key);
				rc = lsim_cfg_error(d, doc, lsim_node_get(params, "class_labels"),
						    k, LSIM_EINVAL,
						    "'%s' is not a label of %s; its labels: %s",
						    lab, s->class_feature, list);
				goto fail;
			}
		}
	} else if (labels[0]) {
		snprintf(k, sizeof k, "%s.class_labels", key);
		rc = lsim_cfg_error(d, doc, lsim_node_get(params, "class_labels"), k,
				    LSIM_EINVAL, "class_labels needs class_feature");
		goto fail;
	}
	s->num = calloc(m->n_num ? m->n_num : 1, sizeof *s->num);
	s->cat = calloc(m->n_cat ? m->n_cat : 1, sizeof *s->cat);
	s->out = calloc(m->n_tgt, sizeof *s->out);
	if (!s->num || !s->cat || !s->out) {
		rc = LSIM_ENOMEM;
		goto fail;
	}
	s->m = m;
	return 0;
fail:
	s->m = m;
	lsim_kproto_detach(s);
	return rc;
}
