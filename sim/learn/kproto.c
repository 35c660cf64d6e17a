/*
 * kproto.c - the task profiler of Dang et al. (section 4): data tables
 * read from CSV and K-Prototypes clustering (Huang 1998) with seeded
 * restarts; the helpers on name and level lists the other pieces share.
 * The per-cluster regressors, training, prediction and the 70/30
 * evaluation are in kproto_model.c, the versioned model file in
 * kproto_file.c, the core side of the `kproto` profiler policy (reading
 * its model file) in sim/run/kproto_attach.c.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "kernel/csv.h"
#include "learn/kproto.h"
#include "learn/kproto_internal.h"

#define MAX_ITER_DEFAULT 100

/* ---- small helpers ---- */

void lsim_kp_free_names(char **v, size_t n)
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
			lsim_kp_free_names(v, i);
			return NULL;
		}
	}
	return v;
}

void lsim_kp_free_levels(char ***levels, size_t *n_levels, size_t n_cat)
{
	if (levels)
		for (size_t i = 0; i < n_cat; i++)
			lsim_kp_free_names(levels[i], n_levels ? n_levels[i] : 0);
	free(levels);
	free(n_levels);
}

/* Appends label to a level list that grows at powers of two. */
int lsim_kp_push_level(char ***list, size_t *n, const char *label)
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

int32_t lsim_kp_find_label(char *const *list, size_t n, const char *label)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i], label) == 0)
			return (int32_t)i;
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
	lsim_kp_free_names(x->num_names, x->n_num);
	lsim_kp_free_names(x->cat_names, x->n_cat);
	lsim_kp_free_names(x->tgt_names, x->n_tgt);
	lsim_kp_free_levels(x->levels, x->n_levels, x->n_cat);
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
		int32_t code = lsim_kp_find_label(x->levels[j], x->n_levels[j], cat[j]);
		if (code < 0) {
			if (x->n_levels[j] >= INT32_MAX)
				return LSIM_ERANGE;
			if ((rc = lsim_kp_push_level(&x->levels[j], &x->n_levels[j], cat[j])) != 0)
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
	return lsim_kp_find_label(x->levels[col], x->n_levels[col], label);
}

/* A finite decimal number filling the whole text. */
int lsim_kp_parse_number(const char *s, double *out)
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
			if (lsim_kp_parse_number(f, &v) != 0) {
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

int lsim_kp_clusters_alloc(struct lsim_kp_clusters *c, size_t k, size_t n_num,
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
	int rc = lsim_kp_clusters_alloc(c, k, nn, ncat);
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
