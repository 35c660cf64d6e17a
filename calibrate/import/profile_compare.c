/*
 * profile_compare.c - `llmsim profile compare` (roofline prediction vs a
 * measured table), the fit of a serving stack's overheads to a
 * per-iteration table, and the report (text or JSON).
 *
 * Compare reads per-layer times from a table by creating it with 1 and 2
 * decoder layers (the difference is one layer, the rest is the
 * once-per-iteration part) and does the same with the roofline backend, so
 * both sides come from the simulator's own code. With --fit-tp it first
 * fits a serving stack's launch latency and GEMM efficiency to a
 * per-iteration table (lsim_fit_overheads; method in docs/perf-model.md).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/csv.h"
#include "cluster/hw.h"
#include "cluster/collective.h"
#include "serving/memplan.h"
#include "serving/perf.h"
#include "import/import_internal.h"

double lsim_compare_err(double meas, double roof)
{
	return meas > 0.0 ? roof / meas - 1.0 : NAN;
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
	lsim_imp_pjoin(path, sizeof path, tpdir, "dense.csv");
	struct lsim_csv *c = NULL;
	int rc = lsim_csv_open(path, &c, d);
	int idx[5];
	if (rc)
		return rc;
	const char *dn[1] = {"tokens"};
	rc = lsim_csv_require(c, dn, 1, idx, d);
	while (lsim_imp_more_rows(c, &rc, d)) {
		double t;
		if ((rc = lsim_imp_num_field(c, idx[0], 0.0, false, &t, d)) == 0 && t > cv->tokens_max)
			cv->tokens_max = t;
	}
	lsim_csv_close(c);
	if (rc)
		return rc;
	lsim_imp_pjoin(path, sizeof path, tpdir, "attention.csv");
	rc = lsim_csv_open(path, &c, d);
	if (rc)
		return rc;
	const char *an[4] = {"prefill_chunk", "kv_prefill", "n_decode", "kv_decode"};
	rc = lsim_csv_require(c, an, 4, idx, d);
	while (lsim_imp_more_rows(c, &rc, d)) {
		double v[4];
		for (int k = 0; k < 4 && rc == 0; k++)
			rc = lsim_imp_num_field(c, idx[k], 0.0, false, &v[k], d);
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
			return lsim_imp_nomem(d, "compare");
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
		return lsim_imp_nomem(d, "compare");
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
			  const struct lsim_gpu_profile *g, const struct perf_pair *rp,
			  struct lsim_compare_result *r, struct lsim_diag *d)
{
	static const char *const need[] = {"per_sequence.csv", "attention.csv"};
	for (size_t k = 0; k < sizeof need / sizeof need[0]; k++) {
		char p[PATH_LEN];
		if (!lsim_imp_pjoin(p, sizeof p, tpdir, need[k]) || !lsim_imp_is_file(p))
			return lsim_diag_set(d, LSIM_ENOENT, p, 0, 0, "--profile",
					     "the table has no %s, so it cannot be compared (an "
					     "import without attention measurements: see import.yaml)",
					     need[k]);
	}
	struct coverage cv;
	int rc = read_coverage(tpdir, &cv, d);
	if (rc)
		return rc;
	/* With a measured allreduce.csv the table is timed as a scenario's
	 * table instance on one node of the profile's GPUs: its all-reduces
	 * (two a layer and the embedding's) by the file, the logits'
	 * all-gather by the collective model, as the roofline's. */
	struct perf_pair tp_ = {0};
	struct lsim_coll_topo ct;
	lsim_coll_topo_from_profile(g, &ct);
	r->tp_comm = r->tp > 1 && lsim_perf_table_has_allreduce(dir, r->tp);
	struct lsim_table_params prm = {
		.tp = r->tp, .n_layers = 1, .coll = r->tp_comm ? &ct : NULL,
		.act_bytes = (double)m->hidden * m->bytes_per_param,
		.logit_bytes = lsim_memplan_padded_vocab(m) * m->bytes_per_param,
	};
	rc = lsim_perf_table_create(dir, &prm, &tp_.one, d);
	prm.n_layers = 2;
	if (rc == 0)
		rc = lsim_perf_table_create(dir, &prm, &tp_.two, d);
	struct ubatch u;
	if (rc == 0)
		rc = ubatch_init(&u, 256, d);
	if (rc) {
		pair_release(&tp_);
		return rc;
	}
	size_t cap = 0;
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
				rc = push_point(r, &cap, &pt, d);
			}
		}
	}
	free(u.chunk);
	free(u.ctx);
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
	while (lsim_imp_more_rows(c, &rc, d)) {
		double v[5];
		for (int k = 0; k < 5 && rc == 0; k++)
			rc = lsim_imp_num_field(c, idx[k], k < 3 ? 1.0 : 0.0, k < 3, &v[k], d);
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
				rc = lsim_imp_nomem(d, path);
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
	rc = lsim_imp_rows_end(c, rc, n, NULL, d);
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
				rc = lsim_imp_nomem(d, path);
		}
		if (rc == 0 && !*skip) {
			*skip = calloc(t0.n ? t0.n : 1, sizeof **skip);
			if (!*skip)
				rc = lsim_imp_nomem(d, path);
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
	if (!lsim_imp_is_file(path))
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
	if (!lsim_imp_is_dir(o->perf_dir))
		return lsim_diag_set(d, LSIM_ENOENT, o->perf_dir, 0, 0, "--profile",
				     "no such folder");
	bool own = o->data_dir && o->data_dir[0];
	char profiles[PATH_LEN], catalogue[PATH_LEN];
	snprintf(profiles, sizeof profiles, "%s/profiles", own ? o->data_dir : "");
	snprintf(catalogue, sizeof catalogue, "%s/models.yaml", own ? o->data_dir : "");
	struct lsim_gpu_profile g;
	struct lsim_model_arch m;
	int rc = lsim_gpu_profile_load(own ? profiles : NULL, o->gpu, &g, d);
	if (rc == 0)
		rc = lsim_model_load(own ? catalogue : NULL, o->model, &m, d);
	if (rc)
		return rc;
	int tps[LSIM_IMPORT_MAX_TP], n_dense, n_iter;
	int tps2[LSIM_IMPORT_MAX_TP];
	n_dense = lsim_imp_list_tp_dirs(o->perf_dir, "dense.csv", tps, LSIM_IMPORT_MAX_TP);
	n_iter = lsim_imp_list_tp_dirs(o->perf_dir, "iteration.csv", tps2, LSIM_IMPORT_MAX_TP);
	int tp = o->tp;
	if (n_dense + n_iter == 0)
		return lsim_diag_set(d, LSIM_ENOENT, o->perf_dir, 0, 0, "--profile",
				     "no table here (no tp<N>/dense.csv or tp<N>/iteration.csv)");
	if (tp <= 0) {
		if (n_dense + n_iter != 1) {
			char l1[128], l2[128];
			lsim_imp_int_list(l1, sizeof l1, tps, n_dense);
			lsim_imp_int_list(l2, sizeof l2, tps2, n_iter);
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
		lsim_imp_pjoin(path, sizeof path, tpdir, "iteration.csv");
		if (lsim_imp_is_file(path)) {
			snprintf(r->layout, sizeof r->layout, "iteration");
			rc = compare_iterations(path, &rp, r, d);
		} else {
			lsim_imp_pjoin(path, sizeof path, tpdir, "dense.csv");
			if (!lsim_imp_is_file(path)) {
				rc = lsim_diag_set(d, LSIM_ENOENT, tpdir, 0, 0, "--tp",
						   "no tp%d/dense.csv or tp%d/iteration.csv here", tp,
						   tp);
			} else {
				snprintf(r->layout, sizeof r->layout, "layers");
				rc = compare_layers(o->perf_dir, tpdir, &m, &g, &rp, r, d);
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

/* ", measured_W_s, roofline_W_s, W_error" of one point (W: layer or iter). */
static void json_times(struct lsim_buf *b, const char *what, double meas, double roof)
{
	lsim_buf_printf(b, ", \"measured_%s_s\": ", what);
	json_num(b, meas);
	lsim_buf_printf(b, ", \"roofline_%s_s\": ", what);
	json_num(b, roof);
	lsim_buf_printf(b, ", \"%s_error\": ", what);
	json_num(b, lsim_compare_err(meas, roof));
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
					   "\"context\": %d",
					i ? "," : "", phase[p->decode], p->batch, p->tokens, p->context);
			json_times(b, "layer", p->meas_layer_s, p->roof_layer_s);
			json_times(b, "iter", p->meas_iter_s, p->roof_iter_s);
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
				r->tp_comm ? "measured all-reduce (allreduce.csv) added to the table, "
					     "two per layer and the embedding's, and the logits' "
					     "all-gather as the roofline's"
					   : "not in the table (kernel times only); the roofline "
					     "includes two all-reduces per layer, the embedding's "
					     "all-reduce and the logits' all-gather");
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
