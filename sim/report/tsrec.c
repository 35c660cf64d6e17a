/*
 * tsrec.c - the recorder of a stored time series (tsrec.h): samples
 * accumulated into recorded periods of k sample periods, stored as runs of
 * equal recorded periods, and coarsened in place (k doubles, pairs merge)
 * whenever the table would pass its cap. docs/output.md, "Rows kept".
 *
 * Index j of a recorded period at factor k covers the samples at fine
 * indices (j-1)k+1 .. jk (a sample at time n x period has fine index n);
 * its t is the end, jk x period, or the last sample's time for the partial
 * period a run ends in. Every index up to the last one recorded is either
 * inside a run or had no rows at all.
 */
#include <stdlib.h>
#include <string.h>

#include "kernel/array.h"
#include "report/report.h"
#include "report/tsrec.h"

struct run {
	int64_t j0, j1; /* the recorded periods it spans */
	int64_t w;	/* fine periods each of them covers */
	size_t row, n;	/* its rows in rows[] */
};

struct buf {
	char *p;
	size_t n, cap; /* rows */
};

struct lsim_tsrec {
	const struct lsim_tsrec_ops *ops;
	lsim_time period;
	uint64_t cap;
	int64_t k;
	struct buf rows; /* the rows of the runs */
	struct run *runs;
	size_t n_runs, cap_runs;
	uint64_t out_rows; /* as written: a run of one period once, else twice */
	int64_t last_j, last_w; /* the last recorded period and its length */
	/* the recorded period being filled: its index (0: none), the fine
	 * periods its rows average over so far, and its rows */
	int64_t acc_j, acc_w;
	struct buf acc, tmp;
	int64_t last_fi; /* the last sample's fine index */
	bool done;
	struct buf out;
};

/* Room for n rows of size bytes in b. */
static int reserve(struct buf *b, size_t n, size_t size)
{
	return lsim_grow((void **)&b->p, &b->cap, n, size);
}

struct lsim_tsrec *lsim_tsrec_create(const struct lsim_tsrec_ops *ops,
				     lsim_time period, uint64_t cap)
{
	if (!ops || period <= 0)
		return NULL;
	struct lsim_tsrec *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->ops = ops;
	r->period = period;
	r->cap = cap;
	r->k = 1;
	return r;
}

void lsim_tsrec_destroy(struct lsim_tsrec *r)
{
	if (!r)
		return;
	free(r->rows.p);
	free(r->runs);
	free(r->acc.p);
	free(r->tmp.p);
	free(r->out.p);
	free(r);
}

uint64_t lsim_tsrec_rows(const struct lsim_tsrec *r)
{
	return r ? r->out_rows : 0;
}

uint64_t lsim_tsrec_factor(const struct lsim_tsrec *r)
{
	return r ? (uint64_t)r->k : 1;
}

static void swap(struct buf *a, struct buf *b)
{
	struct buf t = *a;
	*a = *b;
	*b = t;
}

#define ROW(b, i, size) ((b)->p + (i) * (size))

/* dst = a (na rows over wa) followed by b (nb rows over wb), key by key. */
static int mix_groups(const struct lsim_tsrec_ops *ops, struct buf *dst,
		      const char *a, size_t na, double wa, const char *b,
		      size_t nb, double wb)
{
	size_t z = ops->size, i = 0, j = 0;
	if (reserve(dst, na + nb, z) != 0)
		return LSIM_ENOMEM;
	dst->n = 0;
	while (i < na || j < nb) {
		const char *x = i < na ? a + i * z : NULL;
		const char *y = j < nb ? b + j * z : NULL;
		if (x && y) {
			int32_t kx = ops->key(x), ky = ops->key(y);
			if (kx < ky)
				y = NULL;
			else if (ky < kx)
				x = NULL;
		}
		ops->mix(ROW(dst, dst->n++, z), x, wa, y, wb);
		i += x != NULL;
		j += y != NULL;
	}
	return 0;
}

static bool same_rows(const struct lsim_tsrec *r, const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!r->ops->same(a + i * r->ops->size, b + i * r->ops->size))
			return false;
	return true;
}

/* Stores rows for the recorded periods j0 .. j1 (equal, w fine periods
 * each), extending the last run where they equal it and follow it. */
static int store(struct lsim_tsrec *r, int64_t j0, int64_t j1, int64_t w,
		 const char *rows, size_t n)
{
	if (n == 0)
		return 0;
	size_t z = r->ops->size;
	struct run *last = r->n_runs ? &r->runs[r->n_runs - 1] : NULL;
	if (r->ops->rle && last && last->j1 == j0 - 1 && last->w == w && last->n == n &&
	    same_rows(r, ROW(&r->rows, last->row, z), rows, n)) {
		if (last->j0 == last->j1)
			r->out_rows += n;
		last->j1 = j1;
		return 0;
	}
	if (reserve(&r->rows, r->rows.n + n, z) != 0)
		return LSIM_ENOMEM;
	if (r->n_runs == r->cap_runs) {
		size_t c = r->cap_runs ? 2 * r->cap_runs : 64;
		struct run *p = realloc(r->runs, c * sizeof *p);
		if (!p)
			return LSIM_ENOMEM;
		r->runs = p;
		r->cap_runs = c;
	}
	memcpy(ROW(&r->rows, r->rows.n, z), rows, n * z);
	r->runs[r->n_runs++] = (struct run){.j0 = j0, .j1 = j1, .w = w, .row = r->rows.n, .n = n};
	r->rows.n += n;
	r->out_rows += j0 == j1 ? n : 2 * n;
	return 0;
}

/* Fine periods index j covers: k up to the last recorded (J), w_J at it,
 * none after it. */
static int64_t weight(int64_t k, int64_t J, int64_t w_J, int64_t j)
{
	return j < J ? k : j == J ? w_J : 0;
}

/* The rows at index j (n = 0: none), from the run cursor *ri on. */
static const char *group(const struct lsim_tsrec *r, const struct run *runs,
			 size_t n_runs, const char *rows, size_t *ri, int64_t j,
			 size_t *n)
{
	while (*ri < n_runs && runs[*ri].j1 < j)
		(*ri)++;
	*n = 0;
	if (*ri == n_runs || runs[*ri].j0 > j)
		return NULL;
	*n = runs[*ri].n;
	return rows + runs[*ri].row * r->ops->size;
}

/* Doubles k: pairs of recorded periods (2m-1, 2m) become period m. Before
 * the end, an odd last period goes back to be filled (the acc, empty
 * now); at the end it stands alone (the run ended inside its pair). */
static int coarsen(struct lsim_tsrec *r, bool final)
{
	size_t z = r->ops->size, n_old = r->n_runs, ri = 0;
	struct run *old = r->runs;
	struct buf old_rows = r->rows;
	int64_t k = r->k, J = r->last_j, w_J = r->last_w;
	r->runs = NULL;
	r->n_runs = r->cap_runs = 0;
	r->rows = (struct buf){0};
	r->out_rows = 0;
	int rc = 0;
	int64_t lim = final ? (J + 1) / 2 : J / 2; /* the last new index */
	int64_t m = n_old ? (old[0].j0 + 1) / 2 : lim + 1;
	while (rc == 0 && m <= lim) {
		size_t na, nb, rb = ri;
		int64_t a = 2 * m - 1, b = 2 * m;
		const char *ga = group(r, old, n_old, old_rows.p, &ri, a, &na);
		rb = ri;
		const char *gb = group(r, old, n_old, old_rows.p, &rb, b, &nb);
		int64_t wa = weight(k, J, w_J, a), wb = weight(k, J, w_J, b);
		if (ri < n_old && ga && rb == ri && old[ri].j1 >= b) {
			/* both in one run: its rows, over the pairs it spans */
			int64_t end = old[ri].j1 / 2 < lim ? old[ri].j1 / 2 : lim;
			rc = store(r, m, end, wa + wb, ga, na);
			m = end + 1;
		} else if (!ga && !gb) {
			if (ri == n_old)
				break;
			m = (old[ri].j0 + 1) / 2; /* the next run's pair */
		} else {
			rc = mix_groups(r->ops, &r->tmp, ga, na, (double)wa, gb, nb, (double)wb);
			if (rc == 0)
				rc = store(r, m, m, wa + wb, r->tmp.p, r->tmp.n);
			m++;
		}
	}
	/* before the end, the periods not complete at 2k: an odd last one
	 * and the one being filled after it share index (J+1)/2 */
	if (rc == 0 && !final && (J & 1)) {
		size_t n;
		ri = 0;
		const char *g = group(r, old, n_old, old_rows.p, &ri, J, &n);
		if (r->acc_j == J + 1) {
			rc = mix_groups(r->ops, &r->tmp, g, n, (double)k, r->acc.p,
					r->acc.n, (double)r->acc_w);
			if (rc == 0)
				swap(&r->acc, &r->tmp);
			r->acc_w += k;
		} else {
			rc = reserve(&r->acc, n, z);
			if (rc == 0 && n)
				memcpy(r->acc.p, g, n * z);
			r->acc.n = n;
			r->acc_w = k;
		}
		r->acc_j = (J + 1) / 2;
	} else if (!final && r->acc_j) {
		r->acc_j = (r->acc_j + 1) / 2; /* odd: the first of its pair */
	}
	if (rc == 0) {
		r->last_w = final ? weight(k, J, w_J, 2 * lim - 1) + weight(k, J, w_J, 2 * lim) : 2 * k;
		r->last_j = lim;
		r->k = 2 * k;
	}
	free(old);
	free(old_rows.p);
	return rc;
}

/* The period being filled, its rows averaged over w fine periods rather
 * than acc_w: the ones after its last sample count 0. */
static int fill(struct lsim_tsrec *r, int64_t w)
{
	int rc = mix_groups(r->ops, &r->tmp, r->acc.p, r->acc.n, (double)r->acc_w,
			    NULL, 0, (double)(w - r->acc_w));
	if (rc == 0) {
		swap(&r->acc, &r->tmp);
		r->acc_w = w;
	}
	return rc;
}

/* Stores the recorded period being filled (w fine periods long), then
 * coarsens while the table passes its cap. */
static int emit(struct lsim_tsrec *r, int64_t w, bool final)
{
	int rc = r->acc.n > 0 && r->acc_w < w ? fill(r, w) : 0;
	if (rc == 0 && r->cap && r->acc.n > r->cap)
		rc = LSIM_ERANGE;
	if (rc == 0)
		rc = store(r, r->acc_j, r->acc_j, w, r->acc.p, r->acc.n);
	r->last_j = r->acc_j;
	r->last_w = w;
	r->acc_j = 0;
	r->acc.n = 0;
	while (rc == 0 && r->cap && r->out_rows > r->cap) {
		if (r->n_runs == 1 && r->runs[0].j0 == r->runs[0].j1)
			return LSIM_ERANGE; /* one period's rows pass it */
		rc = coarsen(r, final);
	}
	return rc;
}

int lsim_tsrec_add(struct lsim_tsrec *r, lsim_time now, const void *rows, size_t n)
{
	if (!r || r->done || (n && !rows) || now <= 0)
		return LSIM_EINVAL;
	for (size_t i = 1; i < n; i++)
		if (r->ops->key((const char *)rows + (i - 1) * r->ops->size) >=
		    r->ops->key((const char *)rows + i * r->ops->size))
			return LSIM_EINVAL;
	int64_t fi = (now + r->period - 1) / r->period;
	if (fi <= r->last_fi)
		return LSIM_EINVAL;
	r->last_fi = fi;
	int rc = 0;
	int64_t j = (fi + r->k - 1) / r->k;
	while (rc == 0 && r->acc_j && j != r->acc_j) {
		rc = emit(r, r->k, false); /* (samples missed) */
		j = (fi + r->k - 1) / r->k;
	}
	if (rc != 0)
		return rc;
	if (!r->acc_j) {
		r->acc_j = j;
		r->acc_w = 0;
		r->acc.n = 0;
	}
	int64_t before = fi - 1 - (j - 1) * r->k; /* of this period, before fi */
	if (r->acc.n == 0 && before == 0) {
		if (reserve(&r->acc, n, r->ops->size) != 0)
			return LSIM_ENOMEM;
		if (n)
			memcpy(r->acc.p, rows, n * r->ops->size);
		r->acc.n = n;
	} else {
		if (r->acc.n > 0 && r->acc_w < before) /* (samples missed): 0 */
			rc = fill(r, before);
		if (rc == 0)
			rc = mix_groups(r->ops, &r->tmp, r->acc.p, r->acc.n,
					(double)before, rows, n, 1.0);
		if (rc != 0)
			return rc;
		swap(&r->acc, &r->tmp);
	}
	r->acc_w = fi - (j - 1) * r->k;
	if (r->acc_w == r->k)
		rc = emit(r, r->k, false);
	return rc;
}

int lsim_tsrec_finish(struct lsim_tsrec *r, const void **rows, size_t *n,
		      double *period_s)
{
	if (!r)
		return LSIM_EINVAL;
	int rc = 0;
	if (!r->done) {
		r->done = true;
		if (r->acc_j)
			rc = emit(r, r->acc_w, true);
		while (rc == 0 && r->cap && r->out_rows > r->cap) {
			if (r->n_runs == 1 && r->runs[0].j0 == r->runs[0].j1)
				rc = LSIM_ERANGE;
			else
				rc = coarsen(r, true);
		}
		size_t z = r->ops->size;
		if (rc == 0)
			rc = reserve(&r->out, r->out_rows ? r->out_rows : 1, z);
		lsim_time t_last = r->last_fi * r->period;
		for (size_t i = 0; rc == 0 && i < r->n_runs; i++) {
			const struct run *u = &r->runs[i];
			for (int pass = 0; pass < (u->j0 == u->j1 ? 1 : 2); pass++) {
				lsim_time t = (pass ? u->j1 : u->j0) * r->k * r->period;
				double ts = lsim_time_to_s(t < t_last ? t : t_last);
				for (size_t q = 0; q < u->n; q++) {
					char *o = ROW(&r->out, r->out.n++, z);
					memcpy(o, ROW(&r->rows, u->row + q, z), z);
					r->ops->set_t(o, ts);
				}
			}
		}
		if (rc != 0)
			r->done = false;
	}
	if (rc == 0) {
		*rows = r->out.p;
		*n = r->out.n;
		*period_s = lsim_time_to_s(r->k * r->period);
	}
	return rc;
}

/* ---- the rows of the three series ---- */

static bool same_double(double a, double b)
{
	return memcmp(&a, &b, sizeof a) == 0;
}

static double avg(const double *a, double wa, const double *b, double wb)
{
	return ((a ? *a * wa : 0.0) + (b ? *b * wb : 0.0)) / (wa + wb);
}

static int32_t inst_key(const void *row)
{
	return ((const struct lsim_ts_sample *)row)->instance;
}

/* Equal in everything but the time. */
static bool inst_same(const void *x, const void *y)
{
	const struct lsim_ts_sample *a = x, *b = y;
	return a->instance == b->instance && a->queue_len == b->queue_len &&
	       a->running == b->running && same_double(a->gpu_busy, b->gpu_busy) &&
	       same_double(a->kv_util, b->kv_util) && same_double(a->power_w, b->power_w) &&
	       same_double(a->arrival_rate, b->arrival_rate) &&
	       same_double(a->gpu_util, b->gpu_util);
}

static void inst_mix(void *out, const void *x, double wa, const void *y, double wb)
{
	const struct lsim_ts_sample *a = x, *b = y, *last = b ? b : a;
	struct lsim_ts_sample o = *last; /* t, instance and the point values */
	o.gpu_busy = avg(a ? &a->gpu_busy : NULL, wa, b ? &b->gpu_busy : NULL, wb);
	o.power_w = avg(a ? &a->power_w : NULL, wa, b ? &b->power_w : NULL, wb);
	o.arrival_rate = avg(a ? &a->arrival_rate : NULL, wa, b ? &b->arrival_rate : NULL, wb);
	o.gpu_util = avg(a ? &a->gpu_util : NULL, wa, b ? &b->gpu_util : NULL, wb);
	*(struct lsim_ts_sample *)out = o;
}

static void inst_set_t(void *row, double t)
{
	((struct lsim_ts_sample *)row)->t = t;
}

const struct lsim_tsrec_ops lsim_tsrec_instances = {
	.size = sizeof(struct lsim_ts_sample), .rle = true, .key = inst_key,
	.same = inst_same, .mix = inst_mix, .set_t = inst_set_t};

static int32_t link_key(const void *row)
{
	return ((const struct lsim_link_sample *)row)->link;
}

static bool link_same(const void *x, const void *y)
{
	const struct lsim_link_sample *a = x, *b = y;
	return a->link == b->link && same_double(a->util, b->util);
}

static void link_mix(void *out, const void *x, double wa, const void *y, double wb)
{
	const struct lsim_link_sample *a = x, *b = y, *last = b ? b : a;
	struct lsim_link_sample o = *last;
	o.util = avg(a ? &a->util : NULL, wa, b ? &b->util : NULL, wb);
	*(struct lsim_link_sample *)out = o;
}

static void link_set_t(void *row, double t)
{
	((struct lsim_link_sample *)row)->t = t;
}

const struct lsim_tsrec_ops lsim_tsrec_links = {
	.size = sizeof(struct lsim_link_sample), .rle = false, .key = link_key,
	.same = link_same, .mix = link_mix, .set_t = link_set_t};

static int32_t pool_key(const void *row)
{
	(void)row;
	return 0; /* one row a sample */
}

static bool pool_same(const void *x, const void *y)
{
	const struct lsim_job_sample *a = x, *b = y;
	return a->held == b->held && a->lent == b->lent && a->free == b->free &&
	       a->pending == b->pending && a->fragmented == b->fragmented;
}

static void pool_mix(void *out, const void *x, double wa, const void *y, double wb)
{
	(void)wa;
	(void)wb;
	*(struct lsim_job_sample *)out = *(const struct lsim_job_sample *)(y ? y : x);
}

static void pool_set_t(void *row, double t)
{
	((struct lsim_job_sample *)row)->t = t;
}

const struct lsim_tsrec_ops lsim_tsrec_pool = {
	.size = sizeof(struct lsim_job_sample), .rle = true, .key = pool_key,
	.same = pool_same, .mix = pool_mix, .set_t = pool_set_t};
