/*
 * fit.c - calibration fits and files: repetition statistics, the raw
 * measurement table (CSV in and out), weighted least squares of the host
 * link (latency + bandwidth), nonlinear least squares of the PCIe
 * interference and GEMM efficiency curves (GSL), and the writer of a
 * hardware profile YAML with its provenance.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_fit.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "kernel/config.h"
#include "kernel/csv.h"
#include "fit.h"
#include "cluster/collective.h"
#include "cluster/hw.h"

/* ---- statistics of repetitions ---- */

void lsim_calib_row_clear(struct lsim_calib_row *row)
{
	memset(row, 0, sizeof *row);
	row->size = row->m = row->n = row->k = NAN;
	row->threads = row->util = row->reps = NAN;
	row->median_s = row->min_s = row->p10_s = row->p90_s = NAN;
	row->value = NAN;
}

void lsim_calib_stats(double *samples, size_t n, struct lsim_calib_row *row)
{
	if (n == 0)
		return;
	gsl_sort(samples, 1, n);
	row->reps = (double)n;
	row->min_s = samples[0];
	row->median_s = gsl_stats_median_from_sorted_data(samples, 1, n);
	row->p10_s = gsl_stats_quantile_from_sorted_data(samples, 1, n, 0.10);
	row->p90_s = gsl_stats_quantile_from_sorted_data(samples, 1, n, 0.90);
}

/* ---- transfer: t = latency + size / bandwidth ---- */

static double rel_rms(const double *model, const double *y, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++) {
		double r = (model[i] - y[i]) / y[i];
		s += r * r;
	}
	return n ? sqrt(s / (double)n) : 0;
}

static int need_points(const double *x, size_t n, size_t min, const char *what,
		       struct lsim_diag *d)
{
	size_t distinct = 0;
	for (size_t i = 0; i < n && distinct < min; i++) {
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = x[j] == x[i];
		distinct += !seen;
	}
	if (distinct < min)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, what,
				     "needs at least %zu distinct points, got %zu",
				     min, distinct);
	return 0;
}

int lsim_fit_transfer(const double *size, const double *t, size_t n,
		      struct lsim_transfer_fit *out, struct lsim_diag *d)
{
	int rc = need_points(size, n, 2, "transfer", d);
	if (rc)
		return rc;
	double *w = malloc(n * sizeof *w);
	double *model = malloc(n * sizeof *model);
	if (!w || !model) {
		free(w);
		free(model);
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "transfer",
				     "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		if (!(t[i] > 0) || !(size[i] >= 0)) {
			free(w);
			free(model);
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "transfer",
					     "point %zu: time %g s for %g bytes (need time > 0)",
					     i, t[i], size[i]);
		}
		w[i] = 1.0 / (t[i] * t[i]);
	}
	double c0, c1, cov00, cov01, cov11, chisq;
	gsl_fit_wlinear(size, 1, w, 1, t, 1, n, &c0, &c1, &cov00, &cov01,
			&cov11, &chisq);
	if (!(c1 > 0)) {
		free(w);
		free(model);
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "transfer",
				     "time does not grow with size (slope %g s/B)",
				     c1);
	}
	for (size_t i = 0; i < n; i++)
		model[i] = c0 + c1 * size[i];
	out->latency_s = c0;
	out->bandwidth = 1.0 / c1;
	out->rms_rel = rel_rms(model, t, n);
	out->n = n;
	free(w);
	free(model);
	return 0;
}

/* ---- two-parameter nonlinear least squares with relative residuals ---- */

struct curve {
	const double *x, *y;
	size_t n;
	/* model value and its partial derivatives at x for params p */
	void (*eval)(const double *p, double x, double *f, double *dp);
};

static int curve_f(const gsl_vector *p, void *data, gsl_vector *f)
{
	const struct curve *c = data;
	double pp[2] = {gsl_vector_get(p, 0), gsl_vector_get(p, 1)};
	for (size_t i = 0; i < c->n; i++) {
		double m, dp[2];
		c->eval(pp, c->x[i], &m, dp);
		gsl_vector_set(f, i, (m - c->y[i]) / c->y[i]);
	}
	return GSL_SUCCESS;
}

static int curve_df(const gsl_vector *p, void *data, gsl_matrix *j)
{
	const struct curve *c = data;
	double pp[2] = {gsl_vector_get(p, 0), gsl_vector_get(p, 1)};
	for (size_t i = 0; i < c->n; i++) {
		double m, dp[2];
		c->eval(pp, c->x[i], &m, dp);
		gsl_matrix_set(j, i, 0, dp[0] / c->y[i]);
		gsl_matrix_set(j, i, 1, dp[1] / c->y[i]);
	}
	return GSL_SUCCESS;
}

/* Solves from p[0..1] in place; returns the rms relative residual or NAN. */
static double curve_solve(struct curve *c, double p[2])
{
	const gsl_multifit_nlinear_type *type = gsl_multifit_nlinear_trust;
	gsl_multifit_nlinear_parameters params =
		gsl_multifit_nlinear_default_parameters();
	gsl_multifit_nlinear_workspace *w =
		gsl_multifit_nlinear_alloc(type, &params, c->n, 2);
	if (!w)
		return NAN;
	gsl_multifit_nlinear_fdf fdf = {
		.f = curve_f, .df = curve_df, .fvv = NULL,
		.n = c->n, .p = 2, .params = c,
	};
	gsl_vector_view x0 = gsl_vector_view_array(p, 2);
	int info = 0;
	int status = gsl_multifit_nlinear_init(&x0.vector, &fdf, w);
	if (status == GSL_SUCCESS)
		status = gsl_multifit_nlinear_driver(500, 1e-12, 1e-12, 0.0,
						     NULL, NULL, &info, w);
	double rms = NAN;
	if (status == GSL_SUCCESS || status == GSL_EMAXITER) {
		gsl_vector *x = gsl_multifit_nlinear_position(w);
		gsl_vector *f = gsl_multifit_nlinear_residual(w);
		p[0] = gsl_vector_get(x, 0);
		p[1] = gsl_vector_get(x, 1);
		double s = 0;
		for (size_t i = 0; i < c->n; i++)
			s += gsl_vector_get(f, i) * gsl_vector_get(f, i);
		rms = sqrt(s / (double)c->n);
		if (!isfinite(p[0]) || !isfinite(p[1]))
			rms = NAN;
	}
	gsl_multifit_nlinear_free(w);
	return rms;
}

/* ---- interference: slowdown = 1 + a u / (1 - u)^b ---- */

static void interference_eval(const double *p, double u, double *f,
			      double *dp)
{
	double g = u * pow(1.0 - u, -p[1]);
	*f = 1.0 + p[0] * g;
	dp[0] = g;
	dp[1] = p[0] * g * -log1p(-u);
}

int lsim_fit_interference(const double *u, const double *slowdown, size_t n,
			  struct lsim_interference_fit *out,
			  struct lsim_diag *d)
{
	size_t loaded = 0;
	for (size_t i = 0; i < n; i++) {
		if (!(u[i] >= 0 && u[i] < 1))
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "interference",
					     "point %zu: utilisation %g outside [0, 1)",
					     i, u[i]);
		if (!(slowdown[i] > 0))
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "interference",
					     "point %zu: slowdown %g (need > 0)", i,
					     slowdown[i]);
		if (u[i] > 0)
			loaded++;
	}
	int rc = need_points(u, n, 2, "interference", d);
	if (rc == 0 && loaded < 2)
		rc = lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "interference",
				   "needs at least 2 points with utilisation > 0");
	if (rc)
		return rc;
	/* start: b = 1 and a from the linear fit through 1 */
	double sxy = 0, sxx = 0;
	for (size_t i = 0; i < n; i++) {
		double x = u[i] / (1.0 - u[i]);
		sxy += x * (slowdown[i] - 1.0);
		sxx += x * x;
	}
	double p[2] = {sxx > 0 ? sxy / sxx : 0.1, 1.0};
	struct curve c = {u, slowdown, n, interference_eval};
	double rms = curve_solve(&c, p);
	if (!isfinite(rms))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "interference",
				     "the fit did not converge");
	out->a = p[0];
	out->b = p[1];
	out->rms_rel = rms;
	out->n = n;
	return 0;
}

/* ---- efficiency: eff = e_max m / (m + m_half) ---- */

double lsim_gemm_efficiency(double e_max, double m_half, double m)
{
	if (!(m > 0))
		return 0;
	return e_max * m / (m + m_half);
}

static void efficiency_eval(const double *p, double m, double *f, double *dp)
{
	double q = 1.0 / (m + p[1]);
	*f = p[0] * m * q;
	dp[0] = m * q;
	dp[1] = -p[0] * m * q * q;
}

int lsim_fit_efficiency(const double *m, const double *eff, size_t n,
			struct lsim_efficiency_fit *out, struct lsim_diag *d)
{
	for (size_t i = 0; i < n; i++)
		if (!(m[i] > 0) || !(eff[i] > 0))
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "efficiency",
					     "point %zu: m %g, efficiency %g (need both > 0)",
					     i, m[i], eff[i]);
	int rc = need_points(m, n, 2, "efficiency", d);
	if (rc)
		return rc;
	double *inv_m = malloc(n * sizeof *inv_m);
	double *inv_e = malloc(n * sizeof *inv_e);
	if (!inv_m || !inv_e) {
		free(inv_m);
		free(inv_e);
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "efficiency",
				     "out of memory");
	}
	/* start: 1/eff = 1/e_max + (m_half/e_max) / m, a straight line */
	double ymax = 0;
	for (size_t i = 0; i < n; i++) {
		inv_m[i] = 1.0 / m[i];
		inv_e[i] = 1.0 / eff[i];
		ymax = eff[i] > ymax ? eff[i] : ymax;
	}
	double c0, c1, cov00, cov01, cov11, sumsq;
	gsl_fit_linear(inv_m, 1, inv_e, 1, n, &c0, &c1, &cov00, &cov01, &cov11,
		       &sumsq);
	free(inv_m);
	free(inv_e);
	double p[2] = {ymax, 1.0};
	if (c0 > 0 && c1 > 0) {
		p[0] = 1.0 / c0;
		p[1] = c1 / c0;
	}
	struct curve c = {m, eff, n, efficiency_eval};
	double rms = curve_solve(&c, p);
	if (!isfinite(rms) || !(p[0] > 0))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "efficiency",
				     "the fit did not converge");
	out->e_max = p[0];
	out->m_half = p[1];
	out->rms_rel = rms;
	out->n = n;
	return 0;
}

/* ---- the raw table in memory ---- */

const char *const lsim_calib_columns[] = {
	"bench", "variant", "size", "m", "n", "k", "threads", "util", "reps",
	"median_s", "min_s", "p10_s", "p90_s", "value", "unit", "note",
};

enum col {
	C_BENCH, C_VARIANT, C_SIZE, C_M, C_N, C_K, C_THREADS, C_UTIL, C_REPS,
	C_MEDIAN, C_MIN, C_P10, C_P90, C_VALUE, C_UNIT, C_NOTE,
};

static const char *const benches[] = {
	"meta", "transfer", "contention", "interference", "hbm", "gemm",
	"launch", "p2p",
};

static const char *const xfer_names[LSIM_XFER_N] = {
	"h2d_pinned", "d2h_pinned", "h2d_pageable", "d2h_pageable",
};

const char *lsim_xfer_name(enum lsim_xfer_kind k)
{
	return (unsigned)k < LSIM_XFER_N ? xfer_names[k] : "?";
}

void lsim_calib_raw_init(struct lsim_calib_raw *raw)
{
	memset(raw, 0, sizeof *raw);
}

void lsim_calib_raw_release(struct lsim_calib_raw *raw)
{
	if (!raw)
		return;
	free(raw->rows);
	free(raw->meta);
	memset(raw, 0, sizeof *raw);
}

int lsim_calib_raw_add(struct lsim_calib_raw *raw,
		       const struct lsim_calib_row *row)
{
	if (raw->n_rows == raw->cap_rows) {
		size_t cap = raw->cap_rows ? 2 * raw->cap_rows : 64;
		struct lsim_calib_row *r = realloc(raw->rows, cap * sizeof *r);
		if (!r)
			return LSIM_ENOMEM;
		raw->rows = r;
		raw->cap_rows = cap;
	}
	raw->rows[raw->n_rows++] = *row;
	return 0;
}

int lsim_calib_raw_set_meta(struct lsim_calib_raw *raw, const char *key,
			    const char *value)
{
	struct lsim_calib_meta *m = NULL;
	for (size_t i = 0; i < raw->n_meta && !m; i++)
		if (strcmp(raw->meta[i].key, key) == 0)
			m = &raw->meta[i];
	if (!m) {
		if (raw->n_meta == raw->cap_meta) {
			size_t cap = raw->cap_meta ? 2 * raw->cap_meta : 16;
			struct lsim_calib_meta *q =
				realloc(raw->meta, cap * sizeof *q);
			if (!q)
				return LSIM_ENOMEM;
			raw->meta = q;
			raw->cap_meta = cap;
		}
		m = &raw->meta[raw->n_meta++];
		snprintf(m->key, sizeof m->key, "%s", key);
	}
	snprintf(m->value, sizeof m->value, "%s", value ? value : "");
	return 0;
}

const char *lsim_calib_raw_meta(const struct lsim_calib_raw *raw,
				const char *key)
{
	for (size_t i = 0; i < raw->n_meta; i++)
		if (strcmp(raw->meta[i].key, key) == 0)
			return raw->meta[i].value;
	return NULL;
}

/* ---- CSV in ---- */

/* An error at field (CSV index) of column col_idx: "<what><text>". */
static int bad_field(struct lsim_diag *d, struct lsim_csv *r, int col_idx,
		     int field, const char *what, const char *text)
{
	return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(r), lsim_csv_line(r),
			     lsim_csv_field_col(r, field),
			     lsim_calib_columns[col_idx], "%s%s", what, text);
}

static int parse_num(struct lsim_csv *r, const int *idx, int c, double *out,
		     struct lsim_diag *d)
{
	const char *s = lsim_csv_field_trim(r, idx[c]);
	if (!s || !*s) {
		*out = NAN;
		return 0;
	}
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno == ERANGE || !isfinite(v))
		return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(r),
				     lsim_csv_line(r), lsim_csv_field_col(r, idx[c]),
				     lsim_calib_columns[c], "not a number: '%s'", s);
	*out = v;
	return 0;
}

static int need(struct lsim_csv *r, const int *idx, int c, double v,
		const char *bench, struct lsim_diag *d)
{
	if (isfinite(v) && v >= 0)
		return 0;
	return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(r), lsim_csv_line(r),
			     lsim_csv_field_col(r, idx[c]), lsim_calib_columns[c],
			     "a '%s' row needs a value >= 0 here", bench);
}

/* Checks that row has the fields its bench needs. */
static int check_row(struct lsim_csv *r, const int *idx,
		     const struct lsim_calib_row *row, struct lsim_diag *d)
{
	const char *b = row->bench;
	int rc = 0;
	if (!strcmp(b, "transfer") || !strcmp(b, "hbm") || !strcmp(b, "p2p"))
		rc = need(r, idx, C_SIZE, row->size, b, d);
	if (rc == 0 && !strcmp(b, "gemm")) {
		rc = need(r, idx, C_M, row->m, b, d);
		if (rc == 0)
			rc = need(r, idx, C_N, row->n, b, d);
		if (rc == 0)
			rc = need(r, idx, C_K, row->k, b, d);
	}
	if (rc == 0 && (!strcmp(b, "contention") || !strcmp(b, "interference"))) {
		rc = need(r, idx, C_THREADS, row->threads, b, d);
		if (rc == 0 && !strcmp(row->variant, "probe"))
			rc = need(r, idx, C_UTIL, row->util, b, d);
	}
	if (rc == 0 && !(row->median_s > 0))
		rc = lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(r),
				   lsim_csv_line(r),
				   lsim_csv_field_col(r, idx[C_MEDIAN]),
				   "median_s", "a '%s' row needs a time > 0 here",
				   b);
	return rc;
}

static int read_row(struct lsim_csv *r, const int *idx,
		    struct lsim_calib_raw *raw, struct lsim_diag *d)
{
	struct lsim_calib_row row;
	lsim_calib_row_clear(&row);
	row.line = lsim_csv_line(r);
	const char *bench = lsim_csv_field_trim(r, idx[C_BENCH]);
	const char *variant = lsim_csv_field_trim(r, idx[C_VARIANT]);
	if (!bench || !*bench)
		return bad_field(d, r, C_BENCH, idx[C_BENCH], "missing bench name",
				 "");
	bool known = false;
	for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++)
		known = known || strcmp(bench, benches[i]) == 0;
	if (!known)
		return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(r),
				     lsim_csv_line(r),
				     lsim_csv_field_col(r, idx[C_BENCH]), "bench",
				     "unknown bench '%s' (known: meta, transfer, "
				     "contention, interference, hbm, gemm, launch, p2p)",
				     bench);
	if (!variant || !*variant)
		return bad_field(d, r, C_VARIANT, idx[C_VARIANT], "missing variant",
				 "");
	if (!strcmp(bench, "meta")) {
		const char *note = lsim_csv_field_trim(r, idx[C_NOTE]);
		return lsim_calib_raw_set_meta(raw, variant, note ? note : "");
	}
	snprintf(row.bench, sizeof row.bench, "%s", bench);
	snprintf(row.variant, sizeof row.variant, "%s", variant);
	const char *unit = lsim_csv_field_trim(r, idx[C_UNIT]);
	snprintf(row.unit, sizeof row.unit, "%s", unit ? unit : "");
	double *num[] = {
		[C_SIZE] = &row.size, [C_M] = &row.m, [C_N] = &row.n,
		[C_K] = &row.k, [C_THREADS] = &row.threads, [C_UTIL] = &row.util,
		[C_REPS] = &row.reps, [C_MEDIAN] = &row.median_s,
		[C_MIN] = &row.min_s, [C_P10] = &row.p10_s, [C_P90] = &row.p90_s,
		[C_VALUE] = &row.value,
	};
	for (int c = C_SIZE; c <= C_VALUE; c++) {
		int rc = parse_num(r, idx, c, num[c], d);
		if (rc)
			return rc;
	}
	int rc = check_row(r, idx, &row, d);
	if (rc)
		return rc;
	if (lsim_calib_raw_add(raw, &row))
		return lsim_diag_set(d, LSIM_ENOMEM, lsim_csv_path(r), 0, 0, "",
				     "out of memory");
	return 0;
}

int lsim_calib_raw_load(const char *path, struct lsim_calib_raw *raw,
			struct lsim_diag *d)
{
	struct lsim_csv *r = NULL;
	int rc = lsim_csv_open(path, &r, d);
	if (rc)
		return rc;
	snprintf(raw->file, sizeof raw->file, "%s", path);
	int idx[LSIM_CALIB_NCOLUMNS];
	rc = lsim_csv_require(r, lsim_calib_columns, LSIM_CALIB_NCOLUMNS, idx, d);
	while (rc == 0) {
		int got = lsim_csv_next(r, d);
		if (got <= 0) {
			rc = got;
			break;
		}
		rc = read_row(r, idx, raw, d);
	}
	lsim_csv_close(r);
	return rc;
}

/* ---- CSV out ---- */

static void put_num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.9g", v);
	fputc(',', f);
}

static void put_text(FILE *f, const char *s, bool last)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
	fputc(last ? '\n' : ',', f);
}

int lsim_calib_raw_save(const struct lsim_calib_raw *raw, const char *path,
			struct lsim_diag *d)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return lsim_diag_set(d, LSIM_EIO, path, 0, 0, "",
				     "cannot write: %s", strerror(errno));
	for (int c = 0; c < LSIM_CALIB_NCOLUMNS; c++)
		fprintf(f, "%s%c", lsim_calib_columns[c],
			c + 1 < LSIM_CALIB_NCOLUMNS ? ',' : '\n');
	for (size_t i = 0; i < raw->n_meta; i++) {
		fprintf(f, "meta,%s,,,,,,,,,,,,,,", raw->meta[i].key);
		put_text(f, raw->meta[i].value, true);
	}
	for (size_t i = 0; i < raw->n_rows; i++) {
		const struct lsim_calib_row *w = &raw->rows[i];
		fprintf(f, "%s,%s,", w->bench, w->variant);
		const double v[] = {w->size, w->m, w->n, w->k, w->threads,
				    w->util, w->reps, w->median_s, w->min_s,
				    w->p10_s, w->p90_s, w->value};
		for (size_t j = 0; j < sizeof v / sizeof v[0]; j++)
			put_num(f, v[j]);
		fprintf(f, "%s,\n", w->unit);
	}
	int bad = ferror(f);
	bad |= fclose(f) != 0;
	if (bad)
		return lsim_diag_set(d, LSIM_EIO, path, 0, 0, "",
				     "write failed: %s", strerror(errno));
	return 0;
}

/* ---- the whole fit ---- */

struct pts {
	double *x, *y;
	size_t n, cap;
};

static int pts_add(struct pts *p, double x, double y)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 32;
		double *nx = realloc(p->x, cap * sizeof *nx);
		if (!nx)
			return LSIM_ENOMEM;
		p->x = nx;
		double *ny = realloc(p->y, cap * sizeof *ny);
		if (!ny)
			return LSIM_ENOMEM;
		p->y = ny;
		p->cap = cap;
	}
	p->x[p->n] = x;
	p->y[p->n] = y;
	p->n++;
	return 0;
}

static void pts_release(struct pts *p)
{
	free(p->x);
	free(p->y);
	memset(p, 0, sizeof *p);
}

static bool bench_is(const struct lsim_calib_row *r, const char *bench)
{
	return strcmp(r->bench, bench) == 0;
}

static bool is(const struct lsim_calib_row *r, const char *bench,
	       const char *variant)
{
	return bench_is(r, bench) && strcmp(r->variant, variant) == 0;
}

/* Prefixes a fit's diagnostic with the raw file and bench. */
static int fit_error(struct lsim_diag *d, const struct lsim_calib_raw *raw,
		     const char *what, int rc)
{
	if (d) {
		char msg[sizeof d->msg];
		snprintf(msg, sizeof msg, "%s", d->msg);
		lsim_diag_set(d, rc, raw->file, 0, 0, what, "fit failed: %s", msg);
	}
	return rc;
}

static int fit_transfers(const struct lsim_calib_raw *raw,
			 struct lsim_calib_fit *fit, struct lsim_diag *d)
{
	for (int k = 0; k < LSIM_XFER_N; k++) {
		struct pts p = {0};
		int rc = 0;
		for (size_t i = 0; i < raw->n_rows && rc == 0; i++)
			if (is(&raw->rows[i], "transfer", xfer_names[k]))
				rc = pts_add(&p, raw->rows[i].size,
					     raw->rows[i].median_s);
		if (rc == 0 && p.n > 0) {
			rc = lsim_fit_transfer(p.x, p.y, p.n, &fit->xfer[k], d);
			if (rc == 0)
				fit->have_xfer[k] = true;
			else {
				char what[64];
				snprintf(what, sizeof what, "transfer %s",
					 xfer_names[k]);
				rc = fit_error(d, raw, what, rc);
			}
		}
		pts_release(&p);
		if (rc)
			return rc;
	}
	double best = -1;
	for (size_t i = 0; i < raw->n_rows; i++) {
		const struct lsim_calib_row *r = &raw->rows[i];
		if (is(r, "transfer", "bidir_pinned") && r->size > best) {
			best = r->size;
			fit->bidir_bw = 2.0 * r->size / r->median_s;
			fit->have_bidir = true;
		}
	}
	return 0;
}

static int fit_interference(const struct lsim_calib_raw *raw,
			    struct lsim_calib_fit *fit, struct lsim_diag *d)
{
	static const char *const kinds[] = {"contention", "interference"};
	struct pts p = {0};
	int rc = 0;
	for (size_t k = 0; k < 2 && rc == 0; k++) {
		double base = NAN;
		for (size_t i = 0; i < raw->n_rows; i++)
			if (is(&raw->rows[i], kinds[k], "probe") &&
			    raw->rows[i].threads == 0)
				base = raw->rows[i].median_s;
		if (!isfinite(base))
			continue;
		for (size_t i = 0; i < raw->n_rows && rc == 0; i++) {
			const struct lsim_calib_row *r = &raw->rows[i];
			if (!is(r, kinds[k], "probe"))
				continue;
			/* saturated points (closed-loop copies) are off the curve */
			if (r->threads > 0 && !(r->util <= LSIM_CALIB_UTIL_MAX))
				continue;
			double u = r->threads == 0 ? 0 : r->util;
			rc = pts_add(&p, u, r->median_s / base);
		}
	}
	if (rc == 0 && p.n > 0) {
		rc = lsim_fit_interference(p.x, p.y, p.n, &fit->interference, d);
		if (rc == 0)
			fit->have_interference = true;
		else
			rc = fit_error(d, raw, "interference", rc);
	}
	pts_release(&p);
	return rc;
}

static int fit_gemm(const struct lsim_calib_raw *raw,
		    struct lsim_calib_fit *fit, struct lsim_diag *d)
{
	/* the pooled dtype: bf16 when measured, else fp16, else the first */
	const char *dtype = NULL;
	for (size_t i = 0; i < raw->n_rows; i++) {
		const struct lsim_calib_row *r = &raw->rows[i];
		if (!bench_is(r, "gemm"))
			continue;
		if (!dtype || !strcmp(r->variant, "bf16") ||
		    (!strcmp(r->variant, "fp16") && strcmp(dtype, "bf16")))
			dtype = r->variant;
	}
	if (!dtype)
		return 0;
	snprintf(fit->gemm_dtype, sizeof fit->gemm_dtype, "%s", dtype);
	struct pts all = {0};
	int rc = 0;
	for (size_t i = 0; i < raw->n_rows && rc == 0; i++) {
		const struct lsim_calib_row *r = &raw->rows[i];
		if (!bench_is(r, "gemm"))
			continue;
		double flops = 2.0 * r->m * r->n * r->k / r->median_s;
		if (!strcmp(r->variant, dtype))
			rc = pts_add(&all, r->m, flops / 1e12);
		/* one fit per (dtype, n, k), in order of first appearance */
		size_t s = 0;
		while (s < fit->n_shapes &&
		       !(fit->shapes[s].n == r->n && fit->shapes[s].k == r->k &&
			 !strcmp(fit->shapes[s].dtype, r->variant)))
			s++;
		if (s == fit->n_shapes && s < LSIM_CALIB_MAX_GEMM) {
			struct lsim_gemm_shape_fit *g = &fit->shapes[s];
			memset(g, 0, sizeof *g);
			snprintf(g->dtype, sizeof g->dtype, "%s", r->variant);
			g->n = r->n;
			g->k = r->k;
			fit->n_shapes++;
		}
	}
	for (size_t s = 0; s < fit->n_shapes && rc == 0; s++) {
		struct lsim_gemm_shape_fit *g = &fit->shapes[s];
		struct pts p = {0};
		for (size_t i = 0; i < raw->n_rows && rc == 0; i++) {
			const struct lsim_calib_row *r = &raw->rows[i];
			if (is(r, "gemm", g->dtype) && r->n == g->n && r->k == g->k)
				rc = pts_add(&p, r->m,
					     2.0 * r->m * r->n * r->k / r->median_s / 1e12);
		}
		if (rc == 0)
			rc = lsim_fit_efficiency(p.x, p.y, p.n, &g->fit, d);
		g->fit.e_max *= 1e12;
		pts_release(&p);
		if (rc) {
			char what[64];
			snprintf(what, sizeof what, "gemm %s %gx%g", g->dtype,
				 g->n, g->k);
			rc = fit_error(d, raw, what, rc);
		}
	}
	if (rc == 0) {
		rc = lsim_fit_efficiency(all.x, all.y, all.n, &fit->gemm, d);
		if (rc == 0) {
			fit->gemm.e_max *= 1e12;
			fit->have_gemm = true;
		} else {
			rc = fit_error(d, raw, "gemm", rc);
		}
	}
	pts_release(&all);
	return rc;
}

int lsim_calib_fit_raw(const struct lsim_calib_raw *raw,
		       struct lsim_calib_fit *fit, struct lsim_diag *d)
{
	memset(fit, 0, sizeof *fit);
	fit->launch_eager_s = fit->launch_graph_s = NAN;
	int rc = fit_transfers(raw, fit, d);
	if (rc == 0)
		rc = fit_interference(raw, fit, d);
	if (rc == 0)
		rc = fit_gemm(raw, fit, d);
	if (rc)
		return rc;
	for (size_t i = 0; i < raw->n_rows; i++) {
		const struct lsim_calib_row *r = &raw->rows[i];
		if (bench_is(r, "hbm")) {
			/* bytes moved per element: copy 2 arrays, triad 3 */
			double arrays = !strcmp(r->variant, "triad") ? 3 : 2;
			double bw = arrays * r->size / r->median_s;
			if (bw > fit->hbm_bw)
				fit->hbm_bw = bw;
			fit->have_hbm = true;
		} else if (bench_is(r, "launch")) {
			const char *v = r->variant;
			if (strcmp(v, "eager") == 0) {
				fit->launch_eager_s = r->median_s;
				fit->have_launch = true;
			} else if (strcmp(v, "graph") == 0) {
				fit->launch_graph_s = r->median_s;
			}
		} else if (bench_is(r, "p2p")) {
			double bw = r->size / r->median_s;
			if (bw > fit->p2p_bw)
				fit->p2p_bw = bw;
			fit->have_p2p = true;
		}
	}
	return 0;
}

/* ---- the hardware profile ---- */

enum kind { K_NUM, K_BYTES, K_BW, K_POWER, K_PRICE, K_TIME, K_FABRIC, K_BOOL };

struct entry {
	const char *key;
	enum kind kind;
	double v;	/* SI: bytes, B/s, W, USD/h, seconds, or plain */
	char prov[320]; /* key_provenance text */
	bool placeholder;
	bool omit; /* a key with a default in the loader, and nothing to say */
};

enum {
	E_TFLOPS, E_HBM, E_HBM_BW, E_PCIE, E_NVLINK, E_TDP, E_IDLE, E_PRICE,
	E_MFU_MAX, E_MFU_HALF, E_MBU, E_LAUNCH, E_HOST, E_INTERF,
	E_INTERF_EXP, E_FABRIC, E_LINKS, E_CC, E_P2P, E_SWITCH, E_N
};

static const struct {
	const char *key;
	enum kind kind;
	double placeholder;
	const char *why;
} entry_defs[E_N] = {
	[E_TFLOPS] = {"bf16_tflops", K_NUM, 100, "no GEMM measured"},
	[E_HBM] = {"hbm", K_BYTES, 16e9, "device memory not recorded"},
	[E_HBM_BW] = {"hbm_bw", K_BW, 1e12, "no HBM peak known"},
	[E_PCIE] = {"pcie_bw", K_BW, 25e9, "no pinned host-to-device sweep"},
	[E_NVLINK] = {"nvlink_bw", K_BW, 0, "no peer-to-peer copy measured"},
	[E_TDP] = {"tdp", K_POWER, 300, "board power is not measured"},
	[E_IDLE] = {"idle_power", K_POWER, 43, "idle power is not measured (1/7 of the tdp placeholder)"},
	[E_PRICE] = {"price", K_PRICE, 0, "price is not measurable"},
	[E_MFU_MAX] = {"mfu_max", K_NUM, 0.7, "no GEMM measured"},
	[E_MFU_HALF] = {"mfu_half_tokens", K_NUM, 128, "no GEMM measured"},
	[E_MBU] = {"mbu", K_NUM, 0.85, "no HBM kernel measured"},
	[E_LAUNCH] = {"launch_latency", K_TIME, 5e-6, "no launch measured"},
	[E_HOST] = {"host_issue_latency", K_TIME, 0, NULL},
	[E_INTERF] = {"pcie_interference", K_NUM, 0, "no contention measured"},
	[E_INTERF_EXP] = {"pcie_interference_exp", K_NUM, 1, "no contention measured"},
	/* the serving stack's host floor and the node's fabric (what the
	 * collective model reads): the base profile's, else the loader's
	 * defaults (why NULL: omitted without a base) */
	[E_FABRIC] = {"gpu_fabric", K_FABRIC, 0, NULL},
	[E_LINKS] = {"nvlink_links", K_NUM, 0, NULL},
	[E_CC] = {"compute_capability", K_NUM, 0, NULL},
	[E_P2P] = {"gpu_p2p", K_BOOL, 1, NULL},
	[E_SWITCH] = {"pcie_switch_gpus", K_NUM, 2, NULL},
};

/* Copies text into a YAML double-quoted scalar body (escapes " and \). */
static void yaml_escape(char *dst, size_t size, const char *src)
{
	size_t j = 0;
	for (; *src && j + 2 < size; src++) {
		unsigned char ch = (unsigned char)*src;
		if (ch < 0x20)
			ch = ' ';
		if (ch == '"' || ch == '\\')
			dst[j++] = '\\';
		dst[j++] = (char)ch;
	}
	dst[j] = 0;
}

static const char *meta_or(const struct lsim_calib_raw *raw, const char *key,
			   const char *dflt)
{
	const char *v = lsim_calib_raw_meta(raw, key);
	return v && *v ? v : dflt;
}

static double meta_num(const struct lsim_calib_raw *raw, const char *key)
{
	const char *v = lsim_calib_raw_meta(raw, key);
	if (!v || !*v)
		return NAN;
	char *end;
	double x = strtod(v, &end);
	return *end || !isfinite(x) ? NAN : x;
}

static void set_measured(struct entry *e, double v, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_measured(struct entry *e, double v, const char *fmt, ...)
{
	e->v = v;
	e->placeholder = false;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->prov, sizeof e->prov, fmt, ap);
	va_end(ap);
}

/* The key_provenance line of key in the base document, or NULL. */
static const char *base_prov(const struct lsim_doc *doc, const char *key)
{
	if (!doc)
		return NULL;
	const struct lsim_node *kp = lsim_node_get(doc->root, "key_provenance");
	const struct lsim_node *n = kp ? lsim_node_get(kp, key) : NULL;
	return n && n->kind == LSIM_NODE_SCALAR ? n->value : NULL;
}

static double base_value(const struct lsim_gpu_profile *b, int e)
{
	switch (e) {
	case E_TFLOPS: return b->bf16_flops / 1e12;
	case E_HBM: return b->hbm_bytes;
	case E_HBM_BW: return b->hbm_bw;
	case E_PCIE: return b->pcie_bw;
	case E_NVLINK: return b->nvlink_bw;
	case E_TDP: return b->tdp_w;
	case E_IDLE: return b->idle_w;
	case E_PRICE: return b->price_per_hour;
	case E_MFU_MAX: return b->mfu_max;
	case E_MFU_HALF: return b->mfu_half_tokens;
	case E_MBU: return b->mbu;
	case E_LAUNCH: return b->launch_s;
	case E_HOST: return b->host_issue_s;
	case E_FABRIC: return (double)b->fabric;
	case E_LINKS: return b->nvlink_links;
	case E_CC: return b->compute_capability;
	case E_P2P: return b->gpu_p2p ? 1.0 : 0.0;
	case E_SWITCH: return b->pcie_switch_gpus;
	default: return 0; /* pcie_interference(_exp): measured, never the base's */
	}
}

static double clamp(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Fills e[] from base (or placeholders), then overrides measured keys. */
static void build_entries(struct entry *e, const struct lsim_calib_raw *raw,
			  const struct lsim_calib_fit *fit,
			  const struct lsim_gpu_profile *base,
			  const struct lsim_doc *base_doc)
{
	for (int i = 0; i < E_N; i++) {
		e[i] = (struct entry){.key = entry_defs[i].key, .kind = entry_defs[i].kind};
		if (!base && !entry_defs[i].why) {
			e[i].omit = true; /* the loader's default stands */
		} else if (base && i != E_INTERF && i != E_INTERF_EXP) {
			e[i].v = base_value(base, i);
			const char *p = base_prov(base_doc, e[i].key);
			if (p)
				snprintf(e[i].prov, sizeof e[i].prov, "%s (from profile %s)",
					 p, base->name);
			else
				snprintf(e[i].prov, sizeof e[i].prov,
					 "estimate: from profile %s", base->name);
		} else {
			e[i].v = entry_defs[i].placeholder;
			e[i].placeholder = true;
			snprintf(e[i].prov, sizeof e[i].prov,
				 "estimate: placeholder, %s and no base profile was given; replace it",
				 entry_defs[i].why);
		}
	}
	const char *gpu = meta_or(raw, "gpu_name", "the GPU");
	double cc = meta_num(raw, "compute_capability");
	if (isfinite(cc) && cc > 0 && cc <= 20) {
		set_measured(&e[E_CC], cc, "measured: device query on %s", gpu);
		e[E_CC].omit = false;
	}
	double mem = meta_num(raw, "total_mem");
	if (isfinite(mem) && mem > 0)
		set_measured(&e[E_HBM], mem,
			     "measured: device query on %s (usable memory as reported by CUDA)",
			     gpu);
	double peak_bw = meta_num(raw, "peak_mem_bw");
	if (!base && isfinite(peak_bw) && peak_bw > 0)
		set_measured(&e[E_HBM_BW], peak_bw,
			     "estimate: 2 x memory clock x bus width from the device query on %s",
			     gpu);
	if (fit->have_gemm) {
		double peak = e[E_TFLOPS].v * 1e12;
		double tmax = fit->gemm.e_max;
		if (!base) {
			set_measured(&e[E_TFLOPS], tmax / 1e12,
				     "measured: asymptote of the %s GEMM efficiency fit on %s; no datasheet peak (no base profile), so mfu_max is 1",
				     fit->gemm_dtype, gpu);
			peak = tmax;
		}
		set_measured(&e[E_MFU_MAX], clamp(tmax / peak, 0.01, 1),
			     "measured: %s GEMM fit e_max = %.4g TFLOP/s over %.4g TFLOP/s peak, %zu points, rms %.2f%%",
			     fit->gemm_dtype, tmax / 1e12, peak / 1e12, fit->gemm.n,
			     100 * fit->gemm.rms_rel);
		set_measured(&e[E_MFU_HALF], clamp(fit->gemm.m_half, 0, 1e6),
			     "measured: %s GEMM fit eff(M) = e_max M / (M + m_half) over M tokens, %zu points, rms %.2f%%",
			     fit->gemm_dtype, fit->gemm.n, 100 * fit->gemm.rms_rel);
	}
	if (fit->have_hbm) {
		if (e[E_HBM_BW].placeholder)
			set_measured(&e[E_HBM_BW], fit->hbm_bw,
				     "measured: best copy/triad kernel bandwidth (no peak known, so mbu is 1)");
		set_measured(&e[E_MBU], clamp(fit->hbm_bw / e[E_HBM_BW].v, 0.01, 1),
			     "measured: best copy/triad kernel %.4g GB/s over %.4g GB/s peak on %s",
			     fit->hbm_bw / 1e9, e[E_HBM_BW].v / 1e9, gpu);
	}
	if (fit->have_xfer[LSIM_XFER_H2D_PINNED]) {
		const struct lsim_transfer_fit *h = &fit->xfer[LSIM_XFER_H2D_PINNED];
		const struct lsim_transfer_fit *b = &fit->xfer[LSIM_XFER_D2H_PINNED];
		char other[96] = "";
		if (fit->have_xfer[LSIM_XFER_D2H_PINNED])
			snprintf(other, sizeof other,
				 "; device-to-host %.4g GB/s, latency %.3g us",
				 b->bandwidth / 1e9, b->latency_s * 1e6);
		set_measured(&e[E_PCIE], h->bandwidth,
			     "measured: pinned host-to-device fit t = latency + size / bw, latency %.3g us, %zu sizes, rms %.2f%%%s (effective, not raw)",
			     h->latency_s * 1e6, h->n, 100 * h->rms_rel, other);
	}
	if (fit->have_p2p)
		set_measured(&e[E_NVLINK], fit->p2p_bw,
			     "measured: best peer-to-peer copy bandwidth (NVLink if present, else the PCIe path)");
	if (fit->have_launch)
		set_measured(&e[E_LAUNCH], fit->launch_eager_s,
			     "measured: eager launches of an empty kernel, median per launch%s",
			     isfinite(fit->launch_graph_s) ? "; graph launch in the comment block" : "");
	if (fit->have_interference) {
		set_measured(&e[E_INTERF], clamp(fit->interference.a, 0, 100),
			     "measured: a of slowdown = 1 + a u / (1 - u)^b, %zu points, rms %.2f%%",
			     fit->interference.n, 100 * fit->interference.rms_rel);
		set_measured(&e[E_INTERF_EXP], clamp(fit->interference.b, 0, 10),
			     "measured: b of the same fit");
	}
	if (!base && e[E_IDLE].v > e[E_TDP].v)
		e[E_IDLE].v = e[E_TDP].v;
}

size_t lsim_calib_placeholders(const struct lsim_calib_fit *fit,
			       const struct lsim_calib_raw *raw, char *buf,
			       size_t size)
{
	struct entry e[E_N];
	build_entries(e, raw, fit, NULL, NULL);
	size_t count = 0, len = 0;
	if (size)
		buf[0] = 0;
	for (int i = 0; i < E_N; i++) {
		if (!e[i].placeholder)
			continue;
		count++;
		if (len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%s",
						count > 1 ? ", " : "", e[i].key);
	}
	return count;
}

static void put_value(FILE *f, const struct entry *e)
{
	switch (e->kind) {
	case K_BYTES: fprintf(f, "%.6gGB", e->v / 1e9); break;
	case K_BW: fprintf(f, "%.6gGB/s", e->v / 1e9); break;
	case K_POWER: fprintf(f, "%.6gW", e->v); break;
	case K_PRICE: fprintf(f, "$%.6g/h", e->v); break;
	case K_TIME: fprintf(f, "%.6gus", e->v * 1e6); break;
	case K_FABRIC: fputs(lsim_fabric_name((enum lsim_fabric)e->v), f); break;
	case K_BOOL: fputs(e->v != 0.0 ? "true" : "false", f); break;
	default: fprintf(f, "%.6g", e->v); break;
	}
}

static void put_comments(FILE *f, const char *name,
			 const struct lsim_calib_raw *raw,
			 const struct lsim_calib_fit *fit, const char *base_name)
{
	fprintf(f, "# %s - measured with llmsim-calibrate on %s.\n", name,
		meta_or(raw, "gpu_name", "an unnamed GPU"));
	fprintf(f, "# Calibration provenance:\n");
	fprintf(f, "#   gpu: %s (compute capability %s, %s SMs, PCI %s)\n",
		meta_or(raw, "gpu_name", "?"), meta_or(raw, "compute_capability", "?"),
		meta_or(raw, "sm_count", "?"), meta_or(raw, "pci_bus_id", "?"));
	double mem = meta_num(raw, "total_mem");
	if (isfinite(mem))
		fprintf(f, "#   memory: %.4g GB (%.0f bytes)\n", mem / 1e9, mem);
	else
		fprintf(f, "#   memory: ?\n");
	fprintf(f, "#   driver: %s; CUDA driver API %s, runtime %s, cuBLAS %s\n",
		meta_or(raw, "driver_version", "?"), meta_or(raw, "cuda_driver", "?"),
		meta_or(raw, "cuda_runtime", "?"), meta_or(raw, "cublas_version", "?"));
	fprintf(f, "#   date: %s\n", meta_or(raw, "date", "?"));
	fprintf(f, "#   tool: %s %s, quick: %s, repetitions: %s\n",
		meta_or(raw, "tool", "llmsim-calibrate"),
		meta_or(raw, "tool_version", "?"), meta_or(raw, "quick", "?"),
		meta_or(raw, "repetitions", "?"));
	fprintf(f, "#   raw data: %s (%zu rows)\n", raw->file[0] ? raw->file : "in memory",
		raw->n_rows);
	fprintf(f, "#   unmeasured keys: %s\n",
		base_name ? base_name : "placeholders (no base profile given)");
	fprintf(f, "#   fits (rms = root mean square relative residual):\n");
	for (int k = 0; k < LSIM_XFER_N; k++)
		if (fit->have_xfer[k])
			fprintf(f, "#     %s: latency %.4g us, %.5g GB/s, rms %.2f%%, %zu sizes\n",
				xfer_names[k], fit->xfer[k].latency_s * 1e6,
				fit->xfer[k].bandwidth / 1e9,
				100 * fit->xfer[k].rms_rel, fit->xfer[k].n);
	if (fit->have_bidir)
		fprintf(f, "#     bidir_pinned: %.5g GB/s both directions together\n",
			fit->bidir_bw / 1e9);
	if (fit->have_interference)
		fprintf(f, "#     pcie interference: slowdown = 1 + a u / (1 - u)^b, a %.5g, b %.5g, rms %.2f%%, %zu points\n",
			fit->interference.a, fit->interference.b,
			100 * fit->interference.rms_rel, fit->interference.n);
	if (fit->have_gemm)
		fprintf(f, "#     gemm %s (all shapes): %.5g TFLOP/s x M / (M + %.5g), rms %.2f%%, %zu points\n",
			fit->gemm_dtype, fit->gemm.e_max / 1e12, fit->gemm.m_half,
			100 * fit->gemm.rms_rel, fit->gemm.n);
	for (size_t s = 0; s < fit->n_shapes; s++) {
		const struct lsim_gemm_shape_fit *g = &fit->shapes[s];
		fprintf(f, "#       %s N=%g K=%g: %.5g TFLOP/s x M / (M + %.5g), rms %.2f%%\n",
			g->dtype, g->n, g->k, g->fit.e_max / 1e12, g->fit.m_half,
			100 * g->fit.rms_rel);
	}
	if (fit->have_hbm)
		fprintf(f, "#     hbm: %.5g GB/s best copy/triad\n", fit->hbm_bw / 1e9);
	if (fit->have_launch)
		fprintf(f, "#     launch: eager %.4g us, graph %.4g us per kernel\n",
			fit->launch_eager_s * 1e6, fit->launch_graph_s * 1e6);
	if (fit->have_p2p)
		fprintf(f, "#     p2p: %.5g GB/s best pair\n", fit->p2p_bw / 1e9);
}

int lsim_calib_write_profile(const char *path, const char *name,
			     const struct lsim_calib_raw *raw,
			     const struct lsim_calib_fit *fit,
			     const char *base_dir, const char *base_name,
			     struct lsim_diag *d)
{
	struct lsim_gpu_profile base;
	struct lsim_doc *base_doc = NULL;
	if (base_name) {
		int rc = lsim_gpu_profile_load(base_dir, base_name, &base, d);
		if (rc)
			return rc;
		char bpath[1024];
		snprintf(bpath, sizeof bpath, "%s/%s.yaml", base_dir, base_name);
		rc = lsim_doc_load_file(bpath, &base_doc, d);
		if (rc)
			return rc;
	}
	struct entry e[E_N];
	build_entries(e, raw, fit, base_name ? &base : NULL, base_doc);
	lsim_doc_destroy(base_doc);

	FILE *f = fopen(path, "w");
	if (!f)
		return lsim_diag_set(d, LSIM_EIO, path, 0, 0, "",
				     "cannot write: %s", strerror(errno));
	put_comments(f, name, raw, fit, base_name);
	char buf[512], src[256], esc[640];
	fprintf(f, "name: %s\n", name);
	fprintf(f, "provenance: mixed\n");
	snprintf(buf, sizeof buf, "llmsim-calibrate %s on %s, driver %s, CUDA %s, %s; unmeasured keys from %s",
		 meta_or(raw, "tool_version", "?"), meta_or(raw, "gpu_name", "?"),
		 meta_or(raw, "driver_version", "?"), meta_or(raw, "cuda_runtime", "?"),
		 meta_or(raw, "date", "?"),
		 base_name ? base_name : "placeholders");
	snprintf(src, sizeof src, "%.255s", buf);
	yaml_escape(esc, sizeof esc, src);
	fprintf(f, "source: \"%s\"\n", esc);
	for (int i = 0; i < E_N; i++) {
		if (e[i].omit)
			continue;
		fprintf(f, "%s: ", e[i].key);
		put_value(f, &e[i]);
		fputc('\n', f);
	}
	fprintf(f, "key_provenance:\n");
	for (int i = 0; i < E_N; i++) {
		if (e[i].omit)
			continue;
		yaml_escape(esc, sizeof esc, e[i].prov);
		fprintf(f, "  %s: \"%s\"\n", e[i].key, esc);
	}
	int bad = ferror(f);
	bad |= fclose(f) != 0;
	if (bad)
		return lsim_diag_set(d, LSIM_EIO, path, 0, 0, "",
				     "write failed: %s", strerror(errno));
	return 0;
}
