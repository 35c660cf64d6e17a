/*
 * perf_table.c - the `table` performance backend: iteration time from
 * measured per-layer latencies (LLMServingSim profiler output), composed the
 * way LLMServingSim's trace generator composes them:
 *
 *   T = sum of prefill chunks + n_decode          (tokens computed)
 *   S = n_prefill + n_decode                      (sequences)
 *   iter = embedding(T) + final_layernorm(T) + lm_head(S) + sampler(S)
 *        + n_layers * ( 2 * layernorm(T) + every other dense op(T)
 *                       + attention(sum chunks, sum prefill ctx, n_decode,
 *                                   mean decode ctx) [+ skew correction]
 *                       + moe(T, expected distinct experts) )
 *        + cpu_overhead
 *        + n_layers * 2 * all-reduce(T x hidden x dtype bytes)   (tp > 1)
 *        + all-reduce(T x hidden x dtype bytes)                  (tp > 1:
 *          the vocab-parallel embedding's)
 *        + all-gather(S x vocab x dtype bytes)                   (tp > 1:
 *          the logits of the vocab-parallel LM head)
 *        + n_layers * (all-gather + reduce-scatter)(EP x T_max x hidden x
 *                                    dtype bytes)              (EP > 1)
 *
 * Under pipeline parallelism a stage's share (stage_time) is its layers'
 * terms, the embedding and the CPU overhead on the first stage, the final
 * norm, LM head and sampler on the last: the stages add up to iter.
 *
 * With expert parallelism over EP GPUs (data-parallel ranks stepping in
 * lockstep, docs/parallelism.md) the moe term is one GPU's share of every
 * rank's tokens T_all: moe(T_all / EP, expected distinct experts among its
 * E / EP), the same table read at the same number of token-expert pairs
 * per expert; T_max is the most tokens one rank dispatches. At tp > 1
 * without it, vLLM shards every expert's inner size over the tp GPUs; a
 * GPU then moves and multiplies as much as one holding E / tp whole
 * experts for T / tp tokens, so the TP 1 moe.csv is read as for EP = tp.
 *
 * The all-reduces (after attention's output projection and after the MLP)
 * are timed by the folder's measured tp<N>/allreduce.csv when it has one,
 * else by the NCCL collective model on the instance's fabric
 * (sim/cluster/collective.h); LLMServingSim's per-layer tables hold kernels only.
 *
 * Every CSV value is rounded to whole nanoseconds when loaded and every
 * lookup is truncated to whole nanoseconds (at least 1), as LLMServingSim
 * does. Interpolation is linear on every axis; below the grid the first
 * sample is used (clamp), above it the last two samples are extrapolated
 * linearly. docs/perf-model.md gives the details and the reasons.
 *
 * The folder's meta.yaml says which model and GPU the tables were measured
 * for; a folder of another model or GPU than the caller's is refused
 * (check_identity), as is an MoE model without moe.csv and a dense one with
 * it.
 *
 * All tables are built at create time; the iteration-time function only
 * reads them and never allocates.
 */
#include <errno.h>
#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cluster/collective.h"
#include "kernel/config.h"
#include "kernel/csv.h"
#include "serving/perf.h"

#define PATH_LEN 1024

/* ------------------------------------------------------------------ */
/* CSV rows (read with the shared reader of csv.c)                     */
/* ------------------------------------------------------------------ */

/*
 * Next data row, with spaces around every field removed: 1, 0 at the end
 * of the file, or negative on a malformed row (the row must have as many
 * fields as the header).
 */
static int csv_row(struct lsim_csv *c, struct lsim_diag *d)
{
	int rc = lsim_csv_next(c, d);
	if (rc <= 0)
		return rc;
	int nf = lsim_csv_fields(c), nh = lsim_csv_columns(c);
	if (nf != nh)
		return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(c), lsim_csv_line(c), 0, "",
				     "%d fields where the header has %d", nf, nh);
	for (int i = 0; i < nf; i++)
		lsim_csv_field_trim(c, i);
	return 1;
}

/*
 * Parses field col of the current row as a finite number >= lo. Errors name
 * the row's line, the 1-based field number and the column.
 */
static int csv_num(const struct lsim_csv *c, int col, double lo, bool integer,
		   double *out, struct lsim_diag *d)
{
	const char *s = lsim_csv_field(c, col), *name = lsim_csv_name(c, col);
	const char *path = lsim_csv_path(c);
	int line = lsim_csv_line(c);
	char *endp = NULL;
	errno = 0;
	double v = strtod(s, &endp);
	if (s[0] == '\0' || endp == s || *endp != '\0' || errno == ERANGE || !isfinite(v))
		return lsim_diag_set(d, LSIM_EFORMAT, path, line, col + 1, name,
				     "column '%s': '%s' is not a number", name, s);
	if (integer && (v != floor(v) || fabs(v) > 2147483647.0))
		return lsim_diag_set(d, LSIM_EFORMAT, path, line, col + 1, name,
				     "column '%s': '%s' is not an integer", name, s);
	if (v < lo)
		return lsim_diag_set(d, LSIM_EFORMAT, path, line, col + 1, name,
				     "column '%s': %s is below %g", name, s, lo);
	*out = v;
	return 0;
}

/*
 * A dense.csv or attention.csv whose every time is 0 (a template, a failed
 * profiling run) would time each layer at the 1 ns floor: a run of zero
 * latency, exit 0. Single zeros are kept (a kernel below the timer's
 * resolution); all of them are refused, at the first row's time. Other
 * files may be all zero: an import writes per_sequence.csv as one
 * "not_profiled" row of 0 where the source has no LM head (Vidur).
 */
static int all_zero(const char *path, int line, int col, size_t n, double max_us,
		    struct lsim_diag *d)
{
	if (n == 0 || max_us > 0)
		return 0;
	return lsim_diag_set(d, LSIM_EFORMAT, path, line, col + 1, "time_us",
			     "every time_us of the %zu rows is 0: the table times no "
			     "layer, and a run on it would have zero latency; profile "
			     "the layers again (times in microseconds)", n);
}

/* The longest time a table row may give: 1e12 us (11.6 days), far beyond
 * any measured operation; 1e300 us pinned the simulated clock at its end
 * (docs/reliability.md). */
#define MAX_TIME_US 1e12

/* A row's time_us: csv_num's checks, and at most MAX_TIME_US. */
static int csv_time_us(const struct lsim_csv *c, int col, double *us, struct lsim_diag *d)
{
	int rc = csv_num(c, col, 0.0, false, us, d);
	if (rc == 0 && *us > MAX_TIME_US)
		rc = lsim_diag_set(d, LSIM_ERANGE, lsim_csv_path(c), lsim_csv_line(c), col + 1,
				   lsim_csv_name(c, col),
				   "column '%s': %s us is beyond any measured time (at most "
				   "%g us, 11.6 days); check the unit",
				   lsim_csv_name(c, col), lsim_csv_field(c, col), MAX_TIME_US);
	return rc;
}

/* time_us -> whole nanoseconds, at least 1 (LLMServingSim's loading rule). */
static double us_to_ns(double us)
{
	double ns = nearbyint(us * 1000.0);
	return ns < 1.0 ? 1.0 : ns;
}

/* ------------------------------------------------------------------ */
/* Interpolation                                                       */
/* ------------------------------------------------------------------ */

/* A piecewise-linear function y(x) on sorted, distinct x. */
struct tab1 {
	int n;
	double *x, *y;
};

/* First index whose value is > q (bisect_right). */
static int upper(const double *v, int n, double q)
{
	int lo = 0, hi = n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (v[mid] <= q)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The bracketing pair of q on axis v and the blend weight t: clamped to the
 * first sample below the grid, extrapolated from the last two above it.
 */
static void bracket(const double *v, int n, double q, int *lo, int *hi, double *t)
{
	*lo = *hi = 0;
	*t = 0.0;
	if (n <= 1 || q <= v[0])
		return;
	int i = upper(v, n, q);
	if (i >= n) {
		*lo = n - 2;
		*hi = n - 1;
	} else {
		*lo = i - 1;
		*hi = i;
	}
	double dx = v[*hi] - v[*lo];
	*t = dx != 0.0 ? (q - v[*lo]) / dx : 0.0;
}

static double tab1_eval(const struct tab1 *f, double q)
{
	if (f->n == 0)
		return 0.0;
	int lo, hi;
	double t;
	bracket(f->x, f->n, q, &lo, &hi, &t);
	if (lo == hi)
		return f->y[lo];
	return f->y[lo] + t * (f->y[hi] - f->y[lo]);
}

/* An interpolated latency as LLMServingSim charges it: truncated, >= 1 ns. */
static int64_t whole_ns(double v)
{
	if (!(v >= 1.0))
		return 1;
	if (v >= 9.0e18)
		return INT64_MAX / 4;
	return (int64_t)v;
}

/* ------------------------------------------------------------------ */
/* Table state                                                         */
/* ------------------------------------------------------------------ */

struct op {
	char name[48];
	int mult; /* times per decoder layer (layernorm runs twice) */
	struct tab1 f;
};

/*
 * The 4-D attention table: slices keyed by (prefill_chunk, n_decode), each a
 * ragged 2-D grid over kv_prefill (rows) and kv_decode (within a row).
 */
struct attn {
	int n_pc, n_nd;
	double *pc, *nd;
	int *cell;	 /* [n_pc * n_nd]: slice index, missing pairs -> nearest */
	int n_slice;
	int *slice_kp;	 /* [n_slice + 1] offsets into kp / row */
	double *kp;
	int *row;	 /* [n_kp_total + 1] offsets into kd / ns */
	double *kd, *ns;
};

struct moe {
	int n_ae;
	double *ae;
	struct tab1 *rows; /* per activated-expert count: time over tokens */
	int n_experts, top_k;
};

enum { AX_N, AX_SR, AX_KVB, AX_KP, N_AX };
#define AX_MAX 32

struct skew {
	bool on;
	double alpha_default;
	int nl[N_AX];		    /* labels per axis */
	double bins[N_AX][AX_MAX + 1];
	int n_pc;
	double *pc;		    /* prefill chunks with a fitted bucket */
	double *alpha;		    /* [n_pc][nl0][nl1][nl2][nl3], NaN = none */
};

struct table_state {
	int n_layers;
	lsim_time cpu_ns;
	int n_layer_ops, n_once_ops, n_seq_ops;
	struct op *layer_ops; /* per decoder layer, over tokens */
	struct op *once_ops;  /* once per iteration, over tokens */
	struct op *seq_ops;   /* once per iteration, over sequences */
	struct attn attn;
	bool has_moe;
	struct moe moe;
	int moe_shards;	      /* GPUs the experts' work is shared by: EP, TP or 1 */
	struct skew skew;
	/* tensor-parallel all-reduces: 0 none, 1 measured curve, 2 model */
	int ar_kind;
	int ar_tp;
	double ar_act;	      /* bytes per token */
	double ag_logit;      /* bytes per sequence of the logits' all-gather */
	bool ar_lat_only;     /* model: latency only (the data moves as flows) */
	struct lsim_coll_topo ar_topo;
	struct tab1 ar_curve; /* bytes -> ns */
	/* expert parallelism (ep > 1): its dispatch and combine on ep_topo */
	int ep;
	struct lsim_coll_topo ep_topo;
	double ep_act;	      /* bytes per token dispatched */
	bool ep_lat_only;     /* latency only (the data moves as flows) */
};

static void ops_free(struct op *o, int n)
{
	for (int i = 0; o && i < n; i++) {
		free(o[i].f.x);
		free(o[i].f.y);
	}
	free(o);
}

static void state_free(struct table_state *s)
{
	if (!s)
		return;
	ops_free(s->layer_ops, s->n_layer_ops);
	ops_free(s->once_ops, s->n_once_ops);
	ops_free(s->seq_ops, s->n_seq_ops);
	free(s->attn.pc);
	free(s->attn.nd);
	free(s->attn.cell);
	free(s->attn.slice_kp);
	free(s->attn.kp);
	free(s->attn.row);
	free(s->attn.kd);
	free(s->attn.ns);
	for (int i = 0; s->moe.rows && i < s->moe.n_ae; i++) {
		free(s->moe.rows[i].x);
		free(s->moe.rows[i].y);
	}
	free(s->moe.rows);
	free(s->moe.ae);
	free(s->skew.pc);
	free(s->skew.alpha);
	free(s->ar_curve.x);
	free(s->ar_curve.y);
	free(s);
}

static int nomem(struct lsim_diag *d, const char *path)
{
	return lsim_diag_set(d, LSIM_ENOMEM, path, 0, 0, "", "out of memory");
}

/* ------------------------------------------------------------------ */
/* dense.csv and per_sequence.csv                                      */
/* ------------------------------------------------------------------ */

struct krow {
	char name[48];
	double key, ns;
	int idx; /* row order, for last-wins on duplicate keys */
};

static int krow_cmp(const void *pa, const void *pb)
{
	const struct krow *a = pa, *b = pb;
	int c = strcmp(a->name, b->name);
	if (c)
		return c;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return (a->idx > b->idx) - (a->idx < b->idx);
}

/*
 * Reads a `layer,<key>,time_us` file into one op per layer name, sorted by
 * name. Duplicate (layer, key) rows: the last one wins.
 */
static int read_layer_csv(const char *path, const char *key_col, struct op **out,
			  int *n_out, struct lsim_diag *d)
{
	struct lsim_csv *c = NULL;
	int rc = lsim_csv_open(path, &c, d);
	if (rc)
		return rc;
	const char *names[3] = {"layer", key_col, "time_us"};
	int col[3];
	struct krow *rows = NULL;
	size_t n = 0, cap = 0;
	double max_us = 0; /* the largest time, and the first row's line */
	int first_line = 0;
	struct op *ops = NULL;
	int n_ops = 0;
	rc = lsim_csv_require(c, names, 3, col, d);
	while (rc == 0) {
		int r = csv_row(c, d);
		if (r <= 0) {
			rc = r;
			break;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			struct krow *nr = realloc(rows, cap * sizeof *rows);
			if (!nr) {
				rc = nomem(d, path);
				break;
			}
			rows = nr;
		}
		struct krow *k = &rows[n];
		const char *lname = lsim_csv_field(c, col[0]);
		if (lname[0] == '\0' || strlen(lname) >= sizeof k->name) {
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, lsim_csv_line(c), col[0] + 1, "layer",
					   "column 'layer': empty or longer than %zu characters",
					   sizeof k->name - 1);
			break;
		}
		snprintf(k->name, sizeof k->name, "%s", lname);
		double us;
		if ((rc = csv_num(c, col[1], 1.0, true, &k->key, d)) != 0 ||
		    (rc = csv_time_us(c, col[2], &us, d)) != 0)
			break;
		if (n == 0)
			first_line = lsim_csv_line(c);
		max_us = us > max_us ? us : max_us;
		k->ns = us_to_ns(us);
		k->idx = (int)n;
		n++;
	}
	if (rc == 0 && n == 0)
		rc = lsim_diag_set(d, LSIM_EFORMAT, path, lsim_csv_line(c), 0, "", "no data rows");
	if (rc == 0)
		rc = all_zero(path, first_line, col[2], n,
			      strcmp(key_col, "tokens") == 0 ? max_us : 1, d);
	if (rc == 0) {
		qsort(rows, n, sizeof *rows, krow_cmp);
		for (size_t i = 0; i < n; i++)
			if (i == 0 || strcmp(rows[i].name, rows[i - 1].name) != 0)
				n_ops++;
		ops = calloc((size_t)n_ops, sizeof *ops);
		if (!ops)
			rc = nomem(d, path);
	}
	for (size_t i = 0, o = 0; rc == 0 && i < n; o++) {
		size_t j = i;
		while (j < n && strcmp(rows[j].name, rows[i].name) == 0)
			j++;
		struct op *op = &ops[o];
		snprintf(op->name, sizeof op->name, "%s", rows[i].name);
		op->mult = 1;
		op->f.x = malloc((j - i) * sizeof(double));
		op->f.y = malloc((j - i) * sizeof(double));
		if (!op->f.x || !op->f.y) {
			rc = nomem(d, path);
			break;
		}
		for (size_t k = i; k < j; k++) {
			/* sorted by (key, row): keep the last row of each key */
			if (k + 1 < j && rows[k + 1].key == rows[k].key)
				continue;
			op->f.x[op->f.n] = rows[k].key;
			op->f.y[op->f.n] = rows[k].ns;
			op->f.n++;
		}
		i = j;
	}
	free(rows);
	lsim_csv_close(c);
	if (rc) {
		ops_free(ops, n_ops);
		return rc;
	}
	*out = ops;
	*n_out = n_ops;
	return 0;
}

/* Splits dense.csv's ops into once-per-iteration and per-decoder-layer ones. */
static int split_dense(struct table_state *s, struct op *all, int n, const char *path,
		       struct lsim_diag *d)
{
	int n_once = 0;
	for (int i = 0; i < n; i++)
		if (!strcmp(all[i].name, "embedding") || !strcmp(all[i].name, "final_layernorm"))
			n_once++;
	s->once_ops = calloc((size_t)(n_once ? n_once : 1), sizeof *s->once_ops);
	s->layer_ops = calloc((size_t)(n - n_once ? n - n_once : 1), sizeof *s->layer_ops);
	if (!s->once_ops || !s->layer_ops) {
		ops_free(all, n);
		return nomem(d, path);
	}
	for (int i = 0; i < n; i++) {
		if (!strcmp(all[i].name, "embedding") || !strcmp(all[i].name, "final_layernorm")) {
			s->once_ops[s->n_once_ops++] = all[i];
		} else {
			/* a decoder layer applies its RMSNorm twice (input, post-attention) */
			if (!strcmp(all[i].name, "layernorm"))
				all[i].mult = 2;
			s->layer_ops[s->n_layer_ops++] = all[i];
		}
	}
	free(all); /* the tables moved into s */
	return 0;
}

/* ------------------------------------------------------------------ */
/* attention.csv                                                       */
/* ------------------------------------------------------------------ */

struct arow {
	double pc, kp, nd, kd, ns;
	int idx;
};

static int arow_cmp(const void *pa, const void *pb)
{
	const struct arow *a = pa, *b = pb;
	if (a->pc != b->pc)
		return a->pc < b->pc ? -1 : 1;
	if (a->nd != b->nd)
		return a->nd < b->nd ? -1 : 1;
	if (a->kp != b->kp)
		return a->kp < b->kp ? -1 : 1;
	if (a->kd != b->kd)
		return a->kd < b->kd ? -1 : 1;
	return (a->idx > b->idx) - (a->idx < b->idx);
}

static int dbl_cmp(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;
	return (a > b) - (a < b);
}

/* Sorted distinct values of field off of rows, into a new array. */
static double *distinct(const struct arow *rows, size_t n, size_t off, int *n_out)
{
	double *v = malloc((n ? n : 1) * sizeof *v);
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		v[i] = *(const double *)((const char *)&rows[i] + off);
	qsort(v, n, sizeof *v, dbl_cmp);
	int m = 0;
	for (size_t i = 0; i < n; i++)
		if (m == 0 || v[i] != v[m - 1])
			v[m++] = v[i];
	*n_out = m;
	return v;
}

static int axis_index(const double *v, int n, double q)
{
	int i = upper(v, n, q) - 1;
	return (i >= 0 && v[i] == q) ? i : -1;
}

static int build_attn(struct attn *a, struct arow *rows, size_t n, const char *path,
		      struct lsim_diag *d)
{
	qsort(rows, n, sizeof *rows, arow_cmp);
	/* drop duplicate keys, keeping the last row of each */
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (i + 1 < n && rows[i + 1].pc == rows[i].pc && rows[i + 1].nd == rows[i].nd &&
		    rows[i + 1].kp == rows[i].kp && rows[i + 1].kd == rows[i].kd)
			continue;
		rows[m++] = rows[i];
	}
	n = m;
	a->pc = distinct(rows, n, offsetof(struct arow, pc), &a->n_pc);
	a->nd = distinct(rows, n, offsetof(struct arow, nd), &a->n_nd);
	int n_slice = 0, n_kp = 0;
	for (size_t i = 0; i < n; i++) {
		bool new_slice = i == 0 || rows[i].pc != rows[i - 1].pc || rows[i].nd != rows[i - 1].nd;
		n_slice += new_slice;
		n_kp += new_slice || rows[i].kp != rows[i - 1].kp;
	}
	a->cell = malloc((size_t)a->n_pc * (size_t)a->n_nd * sizeof *a->cell);
	a->slice_kp = malloc((size_t)(n_slice + 1) * sizeof *a->slice_kp);
	a->kp = malloc((size_t)n_kp * sizeof *a->kp);
	a->row = malloc((size_t)(n_kp + 1) * sizeof *a->row);
	a->kd = malloc(n * sizeof *a->kd);
	a->ns = malloc(n * sizeof *a->ns);
	if (!a->pc || !a->nd || !a->cell || !a->slice_kp || !a->kp || !a->row || !a->kd || !a->ns)
		return nomem(d, path);
	for (int i = 0; i < a->n_pc * a->n_nd; i++)
		a->cell[i] = -1;
	int s = -1, k = -1;
	for (size_t i = 0; i < n; i++) {
		bool new_slice = i == 0 || rows[i].pc != rows[i - 1].pc || rows[i].nd != rows[i - 1].nd;
		if (new_slice) {
			s++;
			a->slice_kp[s] = k + 1;
			int ip = axis_index(a->pc, a->n_pc, rows[i].pc);
			int in = axis_index(a->nd, a->n_nd, rows[i].nd);
			a->cell[ip * a->n_nd + in] = s;
		}
		if (new_slice || rows[i].kp != rows[i - 1].kp) {
			k++;
			a->kp[k] = rows[i].kp;
			a->row[k] = (int)i;
		}
		a->kd[i] = rows[i].kd;
		a->ns[i] = rows[i].ns;
	}
	a->n_slice = n_slice;
	a->slice_kp[n_slice] = n_kp;
	a->row[n_kp] = (int)n;
	/*
	 * A (prefill_chunk, n_decode) pair the profiler did not measure (for
	 * example 256 decodes beside a prefill chunk, over the token budget)
	 * borrows the nearest measured pair, by squared distance in raw axis
	 * units; ties go to the first pair in (chunk, n_decode) order.
	 */
	for (int ip = 0; ip < a->n_pc; ip++) {
		for (int in = 0; in < a->n_nd; in++) {
			if (a->cell[ip * a->n_nd + in] >= 0)
				continue;
			double best = INFINITY;
			int arg = -1;
			for (int jp = 0; jp < a->n_pc; jp++) {
				for (int jn = 0; jn < a->n_nd; jn++) {
					int sj = a->cell[jp * a->n_nd + jn];
					if (sj < 0)
						continue; /* not measured (or already borrowed) */
					double dp = a->pc[jp] - a->pc[ip], dn = a->nd[jn] - a->nd[in];
					double dist = dp * dp + dn * dn;
					if (dist < best) {
						best = dist;
						arg = sj;
					}
				}
			}
			a->cell[ip * a->n_nd + in] = -2 - arg; /* mark as borrowed */
		}
	}
	for (int i = 0; i < a->n_pc * a->n_nd; i++)
		if (a->cell[i] <= -2)
			a->cell[i] = -2 - a->cell[i];
	return 0;
}

/* One input column of a row table: its name, where it goes in struct
 * arow, and its smallest valid value. The last column is time_us. */
struct arow_col {
	const char *name;
	size_t offset;
	double min;
};

/* Reads every data row of path into *rows (which the caller frees). */
static int read_arows(const char *path, const struct arow_col *cols, int ncols,
		      struct arow **rows_out, size_t *n_out, bool need_time, struct lsim_diag *d)
{
	struct lsim_csv *c = NULL;
	int rc = lsim_csv_open(path, &c, d);
	if (rc)
		return rc;
	const char *names[8];
	int col[8];
	for (int k = 0; k < ncols; k++)
		names[k] = cols[k].name;
	names[ncols] = "time_us";
	struct arow *rows = NULL;
	size_t n = 0, cap = 0;
	double max_us = 0; /* the largest time, and the first row's line */
	int first_line = 0;
	rc = lsim_csv_require(c, names, ncols + 1, col, d);
	while (rc == 0) {
		int r = csv_row(c, d);
		if (r <= 0) {
			rc = r;
			break;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			struct arow *nr = realloc(rows, cap * sizeof *rows);
			if (!nr) {
				rc = nomem(d, path);
				break;
			}
			rows = nr;
		}
		struct arow *w = &rows[n];
		memset(w, 0, sizeof *w);
		for (int k = 0; k < ncols && rc == 0; k++)
			rc = csv_num(c, col[k], cols[k].min, true,
				     (double *)(void *)((char *)w + cols[k].offset), d);
		double us;
		if (rc == 0)
			rc = csv_time_us(c, col[ncols], &us, d);
		if (rc != 0)
			break;
		if (n == 0)
			first_line = lsim_csv_line(c);
		max_us = us > max_us ? us : max_us;
		w->ns = us_to_ns(us);
		w->idx = (int)n;
		n++;
	}
	if (rc == 0 && n == 0)
		rc = lsim_diag_set(d, LSIM_EFORMAT, path, lsim_csv_line(c), 0, "", "no data rows");
	if (rc == 0)
		rc = all_zero(path, first_line, col[ncols], n, need_time ? max_us : 1, d);
	lsim_csv_close(c);
	if (rc != 0) {
		free(rows);
		rows = NULL;
	}
	*rows_out = rows;
	*n_out = n;
	return rc;
}

static int read_attention(struct attn *a, const char *path, struct lsim_diag *d)
{
	static const struct arow_col cols[] = {
		{"prefill_chunk", offsetof(struct arow, pc), 0.0},
		{"kv_prefill", offsetof(struct arow, kp), 0.0},
		{"n_decode", offsetof(struct arow, nd), 0.0},
		{"kv_decode", offsetof(struct arow, kd), 0.0},
	};
	struct arow *rows = NULL;
	size_t n = 0;
	int rc = read_arows(path, cols, 4, &rows, &n, true, d);
	if (rc == 0)
		rc = build_attn(a, rows, n, path, d);
	free(rows);
	return rc;
}

/* Bilinear lookup within one slice, over (kv_prefill, kv_decode). */
static double attn_slice(const struct attn *a, int s, double kp, double kd)
{
	int k0 = a->slice_kp[s], nk = a->slice_kp[s + 1] - k0;
	int lo, hi;
	double t;
	bracket(a->kp + k0, nk, kp, &lo, &hi, &t);
	double v[2];
	int ks[2] = {k0 + lo, k0 + hi};
	for (int j = 0; j < (lo == hi ? 1 : 2); j++) {
		struct tab1 row = {
			.n = a->row[ks[j] + 1] - a->row[ks[j]],
			.x = a->kd + a->row[ks[j]],
			.y = a->ns + a->row[ks[j]],
		};
		v[j] = tab1_eval(&row, kd);
	}
	if (lo == hi)
		return v[0];
	return v[0] + t * (v[1] - v[0]);
}

/* One attention layer for the aggregated batch point, whole ns. */
static int64_t attn_lookup(const struct attn *a, double pc, double kp, double nd,
			   double kd)
{
	int p0, p1, n0, n1;
	double tp, tn;
	bracket(a->pc, a->n_pc, pc, &p0, &p1, &tp);
	bracket(a->nd, a->n_nd, nd, &n0, &n1, &tn);
	double c00 = attn_slice(a, a->cell[p0 * a->n_nd + n0], kp, kd);
	double c01 = attn_slice(a, a->cell[p0 * a->n_nd + n1], kp, kd);
	double c10 = attn_slice(a, a->cell[p1 * a->n_nd + n0], kp, kd);
	double c11 = attn_slice(a, a->cell[p1 * a->n_nd + n1], kp, kd);
	double v0 = c00 + tn * (c01 - c00);
	double v1 = c10 + tn * (c11 - c10);
	return whole_ns(v0 + tp * (v1 - v0));
}

/* ------------------------------------------------------------------ */
/* moe.csv                                                             */
/* ------------------------------------------------------------------ */

static int read_moe(struct moe *m, const char *path, struct lsim_diag *d)
{
	/* reuse struct arow: pc = activated experts, kd = tokens */
	static const struct arow_col cols[] = {
		{"tokens", offsetof(struct arow, kd), 1.0},
		{"activated_experts", offsetof(struct arow, pc), 1.0},
	};
	struct arow *rows = NULL;
	size_t n = 0;
	int rc = read_arows(path, cols, 2, &rows, &n, false, d);
	if (rc == 0) {
		qsort(rows, n, sizeof *rows, arow_cmp);
		m->ae = distinct(rows, n, offsetof(struct arow, pc), &m->n_ae);
		m->rows = m->ae ? calloc((size_t)m->n_ae, sizeof *m->rows) : NULL;
		if (!m->rows)
			rc = nomem(d, path);
	}
	for (size_t i = 0; rc == 0 && i < n;) {
		size_t j = i;
		while (j < n && rows[j].pc == rows[i].pc)
			j++;
		struct tab1 *f = &m->rows[axis_index(m->ae, m->n_ae, rows[i].pc)];
		f->x = malloc((j - i) * sizeof(double));
		f->y = malloc((j - i) * sizeof(double));
		if (!f->x || !f->y) {
			rc = nomem(d, path);
			break;
		}
		for (size_t k = i; k < j; k++) {
			if (k + 1 < j && rows[k + 1].kd == rows[k].kd)
				continue; /* duplicate key: the last row wins */
			f->x[f->n] = rows[k].kd;
			f->y[f->n] = rows[k].ns;
			f->n++;
		}
		i = j;
	}
	if (rc == 0) {
		/*
		 * The profiler sweeps the distinct-expert count from top_k (one
		 * token) up to the number of experts, so the grid's ends give both.
		 */
		m->top_k = (int)m->ae[0];
		m->n_experts = (int)m->ae[m->n_ae - 1];
	}
	free(rows);
	return rc;
}

/* The table at ae distinct experts and tq tokens. */
static int64_t moe_at(const struct moe *m, double ae, double tq)
{
	double aq = ae < 1.0 ? 1.0 : ae;
	if (tq < 1.0)
		tq = 1.0;
	int lo, hi;
	double t;
	bracket(m->ae, m->n_ae, aq, &lo, &hi, &t);
	double v0 = tab1_eval(&m->rows[lo], tq);
	if (lo == hi)
		return whole_ns(v0);
	double v1 = tab1_eval(&m->rows[hi], tq);
	return whole_ns(v0 + t * (v1 - v0));
}

/*
 * One GPU's share of the experts' work when `shares` GPUs split it. Each
 * expert is hit by some of t_all tokens with probability
 * 1 - ((E - k) / E)^t_all under a balanced gate (each token picks top_k of
 * E without replacement: LLMServingSim's BALANCED routing); at one share
 * this is the table at t_all tokens and that many experts of E. Expert
 * parallelism over ep = shares GPUs: a GPU holds E / ep experts, and
 * under a balanced gate the t_all tokens of every rank send it t_all x
 * top_k / ep token-expert pairs, as many as t_all / ep tokens bring to
 * one GPU holding all E; each of its experts is hit by some token with
 * probability 1 - ((E - k) / E)^t_all. Tensor parallelism over tp = shares
 * GPUs (vLLM's FusedMoE shards each expert's inner size): a GPU runs every
 * hit expert at 1 / tp of its width for all t_all tokens, the same weight
 * bytes and FLOPs as E_hit / tp whole experts at the same pairs per expert,
 * which is the same lookup.
 */
static int64_t moe_share_lookup(const struct moe *m, int shares, int64_t t_all)
{
	double e = m->n_experts, k = m->top_k < m->n_experts ? m->top_k : m->n_experts;
	double own = e / shares;
	double ae = t_all > 0 ? nearbyint(own * (1.0 - pow((e - k) / e, (double)t_all))) : 0.0;
	if (ae < 1.0)
		ae = 1.0;
	if (ae > own)
		ae = own;
	return moe_at(m, ae, (double)t_all / shares);
}

/* ------------------------------------------------------------------ */
/* meta.yaml (skew_fit block only) and skew_fit.csv                    */
/* ------------------------------------------------------------------ */

struct axis_def {
	const char *bins_key, *labels_key;
	int nl;
	double bins[AX_MAX + 1];
	char labels[AX_MAX][32];
};

/* LLMServingSim's bucket axes for a meta.yaml that does not list its own. */
static void default_axes(struct axis_def ax[N_AX])
{
	static const double nb[] = {0, 2, 4, 8, 16, 32, 64, 128, 1e6};
	static const char *const nlab[] = {"n<=2", "n<=4", "n<=8", "n<=16",
					   "n<=32", "n<=64", "n<=128", "n>128"};
	static const double sb[] = {-0.01, 0.05, 0.15, 0.40, 0.70, 1.01};
	static const char *const slab[] = {"sr<=5%", "sr<=15%", "sr<=40%", "sr<=70%", "sr>70%"};
	static const double kb[] = {0, 1024, 4096, 16384, 1e9};
	static const char *const klab[] = {"kvB<=1k", "kvB<=4k", "kvB<=16k", "kvB>16k"};
	static const double pb[] = {-1, 0, 2048, 1e9};
	static const char *const plab[] = {"kp=0", "kp<=2k", "kp>2k"};
	const double *b[N_AX] = {nb, sb, kb, pb};
	const char *const *l[N_AX] = {nlab, slab, klab, plab};
	const int nl[N_AX] = {8, 5, 4, 3};
	for (int a = 0; a < N_AX; a++) {
		ax[a].nl = nl[a];
		for (int i = 0; i <= nl[a]; i++)
			ax[a].bins[i] = b[a][i];
		for (int i = 0; i < nl[a]; i++)
			snprintf(ax[a].labels[i], sizeof ax[a].labels[i], "%s", l[a][i]);
	}
}

static const char *yscalar(const struct lsim_node *n)
{
	return n && n->kind == LSIM_NODE_SCALAR ? n->value : NULL;
}

/* A plain number from a YAML scalar; errors name file, position and key. */
static int ynum(const struct lsim_doc *doc, const struct lsim_node *n, const char *key,
		double *out, struct lsim_diag *d)
{
	const char *s = yscalar(n);
	if (lsim_units_parse(LSIM_K_DOUBLE, s, out, NULL) != 0)
		return lsim_cfg_error(d, doc, n, key, LSIM_EFORMAT, "'%s' is not a number",
				      s ? s : "(not a scalar)");
	return 0;
}

/* Reads one axis (bins and labels) from a bucket_axes mapping. */
static int read_axis(const struct lsim_doc *doc, const struct lsim_node *axes,
		     struct axis_def *ax, struct lsim_diag *d)
{
	const struct lsim_node *b = lsim_node_get(axes, ax->bins_key);
	const struct lsim_node *l = lsim_node_get(axes, ax->labels_key);
	if (!b || !l)
		return 0; /* keep the default for an axis the file does not list */
	if (b->kind != LSIM_NODE_SEQ || l->kind != LSIM_NODE_SEQ) {
		bool bad_b = b->kind != LSIM_NODE_SEQ;
		return lsim_cfg_error(d, doc, bad_b ? b : l,
				      bad_b ? ax->bins_key : ax->labels_key, LSIM_EFORMAT,
				      "'%s' and '%s' must be lists", ax->bins_key, ax->labels_key);
	}
	size_t nb = b->n, nl = l->n;
	if (nl < 1 || nl > AX_MAX || nb != nl + 1)
		return lsim_cfg_error(d, doc, l, ax->labels_key, LSIM_EFORMAT,
				      "%zu labels need %zu bin edges, found %zu (at most %d labels)",
				      nl, nl + 1, nb, AX_MAX);
	for (size_t i = 0; i < nb; i++) {
		int rc = ynum(doc, b->items[i], ax->bins_key, &ax->bins[i], d);
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < nl; i++) {
		const char *s = yscalar(l->items[i]);
		if (!s || strlen(s) >= sizeof ax->labels[i])
			return lsim_cfg_error(d, doc, l->items[i], ax->labels_key, LSIM_EFORMAT,
					      "a label must be a text of at most %zu characters",
					      sizeof ax->labels[i] - 1);
		snprintf(ax->labels[i], sizeof ax->labels[i], "%s", s);
	}
	ax->nl = (int)nl;
	return 0;
}

static int label_index(const struct axis_def *ax, const char *s)
{
	for (int i = 0; i < ax->nl; i++)
		if (!strcmp(ax->labels[i], s))
			return i;
	return -1;
}

/* Reads the per-bucket alpha table (tp<N>/skew_fit.csv) into sk. */
struct srow {
	double pc, alpha;
	int li[N_AX]; /* label index per axis, -1 when no batch can produce it */
};

static int read_skew_csv(struct skew *sk, const struct axis_def ax[N_AX], const char *path,
			 struct lsim_diag *d)
{
	struct lsim_csv *c = NULL;
	int rc = lsim_csv_open(path, &c, d);
	if (rc == LSIM_ENOENT)
		return 0; /* as LLMServingSim: fall back to alpha_default */
	if (rc)
		return rc;
	const char *names[6] = {"pc", "n_label", "skew_rate_label", "kv_big_label", "kp_label", "alpha"};
	int col[6];
	rc = lsim_csv_require(c, names, 6, col, d);
	int layer_col = lsim_csv_column(c, "layer");
	struct srow *rows = NULL;
	size_t n = 0, cap = 0;
	while (rc == 0) {
		int r = csv_row(c, d);
		if (r <= 0) {
			rc = r;
			break;
		}
		if (layer_col >= 0 && strcmp(lsim_csv_field(c, layer_col), "attention") != 0)
			continue; /* another kernel's fit */
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			struct srow *nr = realloc(rows, cap * sizeof *rows);
			if (!nr) {
				rc = nomem(d, path);
				break;
			}
			rows = nr;
		}
		struct srow *w = &rows[n];
		if ((rc = csv_num(c, col[0], 0.0, true, &w->pc, d)) != 0 ||
		    (rc = csv_num(c, col[5], -1e9, false, &w->alpha, d)) != 0)
			break;
		for (int a = 0; a < N_AX; a++)
			w->li[a] = label_index(&ax[a], lsim_csv_field(c, col[1 + a]));
		n++;
	}
	lsim_csv_close(c);
	double *pcs = NULL;
	int n_pc = 0;
	if (rc == 0) {
		pcs = malloc((n ? n : 1) * sizeof *pcs);
		if (!pcs)
			rc = nomem(d, path);
	}
	if (rc == 0) {
		for (size_t i = 0; i < n; i++)
			pcs[i] = rows[i].pc;
		qsort(pcs, n, sizeof *pcs, dbl_cmp);
		for (size_t i = 0; i < n; i++)
			if (n_pc == 0 || pcs[i] != pcs[n_pc - 1])
				pcs[n_pc++] = pcs[i];
		size_t cells = (size_t)(n_pc ? n_pc : 1);
		for (int a = 0; a < N_AX; a++)
			cells *= (size_t)ax[a].nl;
		sk->alpha = malloc(cells * sizeof *sk->alpha);
		if (!sk->alpha)
			rc = nomem(d, path);
		for (size_t i = 0; rc == 0 && i < cells; i++)
			sk->alpha[i] = NAN;
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		size_t at = (size_t)axis_index(pcs, n_pc, rows[i].pc);
		bool known = true;
		for (int a = 0; a < N_AX; a++) {
			known = known && rows[i].li[a] >= 0;
			at = at * (size_t)ax[a].nl + (size_t)(rows[i].li[a] < 0 ? 0 : rows[i].li[a]);
		}
		if (known)
			sk->alpha[at] = rows[i].alpha; /* duplicate buckets: last wins */
	}
	free(rows);
	if (rc) {
		free(pcs);
		return rc;
	}
	sk->pc = pcs;
	sk->n_pc = n_pc;
	return 0;
}

/*
 * The tables' own account of what they measured (meta.yaml's `model:` and
 * `gpu:`, as LLMServingSim's profiler writes them) against what the
 * caller times with them: a table of another model or GPU would give
 * that model's or GPU's times under this one's name.
 */
static int check_identity(const struct lsim_doc *doc, const struct lsim_table_params *prm,
			  struct lsim_diag *d)
{
	const struct lsim_node *n = lsim_node_get(doc->root, "model");
	const char *v = yscalar(n);
	if (v && prm->model && prm->model->name[0] && !lsim_model_same(v, prm->model->name))
		return lsim_cfg_error(d, doc, n, "model", LSIM_EINVAL,
				      "these tables were measured for %s, not %s: give the "
				      "folder of %s's tables, or model %s",
				      v, prm->model->name, prm->model->name, v);
	n = lsim_node_get(doc->root, "gpu");
	v = yscalar(n);
	char other[128];
	struct lsim_diag scratch = {0};
	/* the profile that claims the device (its cuda_name, else the most
	 * words); a device none claims, or two, is taken as the caller's */
	if (v && prm->gpu && prm->gpu[0] && prm->gpu_dir &&
	    lsim_gpu_profile_match(prm->gpu_dir, v, other, sizeof other, &scratch) == 0 &&
	    strcmp(other, prm->gpu) != 0)
		return lsim_cfg_error(d, doc, n, "gpu", LSIM_EINVAL,
				      "these tables were measured on %s (the GPU profile "
				      "%s), not on %s: give the folder measured on %s, or "
				      "gpu %s (or, for a what-if of that GPU's kernels on "
				      "this one, perf_table_other_gpu: true)",
				      v, other, prm->gpu, prm->gpu, other);
	if (v && prm->device && prm->device[0] && strcasecmp(v, prm->device) != 0)
		return lsim_cfg_error(d, doc, n, "gpu", LSIM_EINVAL,
				      "these tables were measured on %s, the run on %s: give "
				      "the folder measured on %s",
				      v, prm->device, prm->device);
	return 0;
}

/*
 * Reads the skew_fit block of dir/meta.yaml for degree tp and checks the
 * tables' model and GPU (check_identity). A missing file or a disabled
 * block leaves the correction off (alpha 0), as in LLMServingSim.
 */
static int read_meta(struct skew *sk, const char *dir, const struct lsim_table_params *prm,
		     struct lsim_diag *d)
{
	int tp = prm->tp;
	char path[PATH_LEN];
	if (snprintf(path, sizeof path, "%s/meta.yaml", dir) >= (int)sizeof path)
		return lsim_diag_set(d, LSIM_EINVAL, dir, 0, 0, "", "path too long");
	FILE *f = fopen(path, "rb"); /* only to tell a missing file from a bad one */
	if (!f) {
		int e = errno;
		if (e == ENOMEM) /* fopen allocates its FILE */
			return lsim_diag_set(d, LSIM_ENOMEM, path, 0, 0, "",
					     "out of memory opening the file");
		return e == ENOENT ? 0
				   : lsim_diag_set(d, LSIM_EIO, path, 0, 0, "", "cannot open: %s",
						   strerror(e));
	}
	fclose(f);
	struct lsim_doc *doc = NULL;
	int rc = lsim_doc_load_file(path, &doc, d);
	if (rc)
		return rc;
	if ((rc = check_identity(doc, prm, d)) != 0)
		goto out;

	struct axis_def ax[N_AX] = {
		{.bins_key = "n_bins", .labels_key = "n_labels"},
		{.bins_key = "skew_rate_bins", .labels_key = "skew_rate_labels"},
		{.bins_key = "kv_big_bins", .labels_key = "kv_big_labels"},
		{.bins_key = "kp_bins", .labels_key = "kp_labels"},
	};
	default_axes(ax);
	const struct lsim_node *sf = lsim_node_get(doc->root, "skew_fit");
	const char *en = yscalar(lsim_node_get(sf, "enabled"));
	if (!en || (strcmp(en, "true") && strcmp(en, "True") && strcmp(en, "TRUE")))
		goto out; /* no skew profile: no correction */
	sk->on = true;
	const struct lsim_node *n = lsim_node_get(sf, "alpha_default");
	if (n && (rc = ynum(doc, n, "skew_fit.alpha_default", &sk->alpha_default, d)) != 0)
		goto out;
	char tpkey[16];
	snprintf(tpkey, sizeof tpkey, "%d", tp);
	const struct lsim_node *entry = lsim_node_get(lsim_node_get(sf, "per_tp"), tpkey);
	const struct lsim_node *axes = lsim_node_get(entry, "bucket_axes");
	if (!axes)
		axes = lsim_node_get(sf, "bucket_axes");
	for (int a = 0; a < N_AX && rc == 0; a++)
		rc = read_axis(doc, axes, &ax[a], d);
	if (rc)
		goto out;
	for (int a = 0; a < N_AX; a++) {
		sk->nl[a] = ax[a].nl;
		memcpy(sk->bins[a], ax[a].bins, sizeof sk->bins[a]);
	}
	if (!entry)
		goto out; /* only the block-wide default */
	sk->alpha_default = 0.0;
	n = lsim_node_get(entry, "alpha_default");
	if (n && (rc = ynum(doc, n, "alpha_default", &sk->alpha_default, d)) != 0)
		goto out;
	n = lsim_node_get(entry, "bucket_table");
	const char *rel = yscalar(n);
	if (rel && rel[0]) {
		char tpath[PATH_LEN];
		if (snprintf(tpath, sizeof tpath, "%s/%s", dir, rel) >= (int)sizeof tpath)
			rc = lsim_cfg_error(d, doc, n, "bucket_table", LSIM_EINVAL, "path too long");
		else
			rc = read_skew_csv(sk, ax, tpath, d);
	}
out:
	lsim_doc_destroy(doc);
	return rc;
}

static int bucket(const struct skew *sk, int axis, double v)
{
	int nl = sk->nl[axis];
	for (int i = 0; i < nl; i++)
		if (v <= sk->bins[axis][i + 1])
			return i;
	return nl - 1;
}

static double skew_alpha(const struct skew *sk, double pc, double n, double sr, double kv_big,
			 double kp)
{
	int ip = sk->n_pc > 0 ? axis_index(sk->pc, sk->n_pc, pc) : -1;
	if (ip < 0)
		return sk->alpha_default;
	double v[N_AX] = {n, sr, kv_big, kp};
	size_t at = (size_t)ip;
	for (int a = 0; a < N_AX; a++)
		at = at * (size_t)sk->nl[a] + (size_t)bucket(sk, a, v[a]);
	return isnan(sk->alpha[at]) ? sk->alpha_default : sk->alpha[at];
}

/*
 * Attention for the batch: looked up at the mean decode context, then, for
 * decodes of unequal length, moved towards the lookup at the longest one:
 * t = t_mean + alpha * (t_max - t_mean) with the fitted bucket alpha.
 */
static int64_t attention_time(const struct table_state *s, double pc, double kp, int64_t nd,
			      int64_t kd_mean, int64_t kd_max, int64_t kd_min)
{
	int64_t t_mean = attn_lookup(&s->attn, pc, kp, (double)nd, (double)kd_mean);
	if (!s->skew.on || nd <= 1 || kd_max == kd_mean)
		return t_mean;
	int64_t gap = kd_max - kd_min;
	double sr = gap > 0 ? (double)(kd_mean - kd_min) / (double)gap : 0.5;
	sr = sr < 0.0 ? 0.0 : sr > 1.0 ? 1.0 : sr;
	double alpha = skew_alpha(&s->skew, pc, (double)nd, sr, (double)kd_max, kp);
	if (alpha == 0.0)
		return t_mean;
	int64_t t_max = attn_lookup(&s->attn, pc, kp, (double)nd, (double)kd_max);
	if (t_max <= t_mean)
		return t_mean;
	double v = nearbyint((double)t_mean + alpha * (double)(t_max - t_mean));
	return v < 1.0 ? 1 : (int64_t)v;
}

/* One all-reduce of tokens x act bytes, whole ns (>= 1): its latency
 * alone when its data moves on the links (lat_only), else all of it. */
static int64_t allreduce_ns(const struct table_state *s, int64_t tokens, bool lat_only)
{
	double bytes = (double)tokens * s->ar_act;
	if (s->ar_kind == 1)
		return whole_ns(tab1_eval(&s->ar_curve, bytes));
	struct lsim_coll_est e;
	if (lsim_coll_time(&s->ar_topo, LSIM_COLL_ALLREDUCE, s->ar_tp, bytes, &e) != 0)
		return 1; /* checked at create time: cannot happen */
	return whole_ns((lat_only ? e.latency_s : e.time_s) * 1e9);
}

/* The all-gather of the logits of seqs sequences (each GPU's share of
 * the vocabulary: vLLM's LogitsProcessor gathers them on every GPU), by
 * the NCCL model on the group's fabric, whole ns; 0 without tp > 1. */
static int64_t logits_gather_ns(const struct table_state *s, double seqs)
{
	struct lsim_coll_est e;
	if (!s->ar_kind || !(s->ag_logit > 0.0) ||
	    lsim_coll_time(&s->ar_topo, LSIM_COLL_ALLGATHER, s->ar_tp, seqs * s->ag_logit, &e) != 0)
		return 0;
	return whole_ns(e.time_s * 1e9);
}

/* The dispatch and the combine of one MoE layer of an expert-parallel
 * step whose largest rank has tokens, as vLLM's default all2all_backend
 * (allgather_reducescatter) runs them: an all-gather of every rank's
 * tokens x hidden to every rank (each rank's experts take the tokens
 * routed to them) and a reduce-scatter of the partial sums back, each of
 * ep x tokens x act bytes in all (the ranks padded to the largest), by
 * the NCCL model; in *ag and *rs. Checked at create time. */
static void ep_exchange(const struct table_state *s, int64_t tokens, struct lsim_coll_est *ag,
			struct lsim_coll_est *rs)
{
	double bytes = (double)tokens * s->ep_act * s->ep;
	if (lsim_coll_time(&s->ep_topo, LSIM_COLL_ALLGATHER, s->ep, bytes, ag) != 0 ||
	    lsim_coll_time(&s->ep_topo, LSIM_COLL_REDUCESCATTER, s->ep, bytes, rs) != 0)
		*ag = *rs = (struct lsim_coll_est){0}; /* cannot happen */
}

/* Their time, whole ns each: only their latency when their data moves on
 * the links. */
static int64_t ep_exchange_ns(const struct table_state *s, int64_t tokens)
{
	struct lsim_coll_est ag, rs;
	ep_exchange(s, tokens, &ag, &rs);
	if (s->ep_lat_only)
		return whole_ns(ag.latency_s * 1e9) + whole_ns(rs.latency_s * 1e9);
	return whole_ns(ag.time_s * 1e9) + whole_ns(rs.time_s * 1e9);
}

/* One iteration's terms in whole ns (as doubles: exact integers): the
 * embedding (first), one decoder layer with its collectives (layer), the
 * final norm, LM head and sampler (last); false for an empty batch. */
struct t_parts {
	double first, layer, last;
};

static bool table_parts(const struct table_state *s, const struct lsim_batch *b,
			struct t_parts *o)
{
	int64_t pc = 0, kp = 0;
	for (int i = 0; i < b->n_prefill; i++) {
		pc += b->prefill_chunk[i];
		kp += b->prefill_ctx[i];
	}
	int64_t nd = b->n_decode > 0 ? b->n_decode : 0;
	int64_t kd_sum = 0, kd_max = 0, kd_min = 0;
	for (int64_t i = 0; i < nd; i++) {
		int64_t k = b->decode_ctx[i];
		kd_sum += k;
		if (i == 0 || k > kd_max)
			kd_max = k;
		if (i == 0 || k < kd_min)
			kd_min = k;
	}
	int64_t tokens = pc + nd;
	int64_t seqs = (int64_t)(b->n_prefill > 0 ? b->n_prefill : 0) + nd;
	*o = (struct t_parts){0};
	if (tokens <= 0)
		return false;
	double tq = (double)tokens, sq = seqs < 1 ? 1.0 : (double)seqs;

	/* summed in double: absurd tables (a fuzzer's) must not overflow;
	 * whole ns below 2^53 add up exactly in any order */
	for (int i = 0; i < s->n_once_ops; i++) {
		double t = (double)s->once_ops[i].mult *
			   (double)whole_ns(tab1_eval(&s->once_ops[i].f, tq));
		if (!strcmp(s->once_ops[i].name, "embedding"))
			o->first += t;
		else
			o->last += t; /* final_layernorm */
	}
	for (int i = 0; i < s->n_seq_ops; i++)
		o->last += (double)s->seq_ops[i].mult *
			   (double)whole_ns(tab1_eval(&s->seq_ops[i].f, sq));
	/* at tp > 1 the embedding's all-reduce and the logits' all-gather,
	 * once an iteration, whole (they do not move on the links) */
	if (s->ar_kind) {
		o->first += (double)allreduce_ns(s, tokens, false);
		o->last += (double)logits_gather_ns(s, sq);
	}
	double layer = 0;
	for (int i = 0; i < s->n_layer_ops; i++)
		layer += (double)s->layer_ops[i].mult *
			 (double)whole_ns(tab1_eval(&s->layer_ops[i].f, tq));
	layer += (double)attention_time(s, (double)pc, (double)(kp > 0 ? kp : 0), nd,
					nd > 0 ? kd_sum / nd : 0, kd_max, kd_min);
	if (s->has_moe && s->ep > 1)
		layer += (double)moe_share_lookup(&s->moe, s->moe_shards,
						  b->moe_tokens > 0 ? b->moe_tokens : tokens) +
			 (double)ep_exchange_ns(s, b->a2a_tokens > 0 ? b->a2a_tokens : tokens);
	else if (s->has_moe)
		layer += (double)moe_share_lookup(&s->moe, s->moe_shards, tokens);
	if (s->ar_kind)
		layer += 2.0 * (double)allreduce_ns(s, tokens, s->ar_lat_only);
	o->layer = layer;
	return true;
}

static lsim_time clamp_ns(double t)
{
	return t < 9e18 ? (lsim_time)t : (lsim_time)9e18;
}

static lsim_time table_iter_time(const struct lsim_perf *p, const struct lsim_batch *b)
{
	const struct table_state *s = p->state;
	struct t_parts o;
	if (!table_parts(s, b, &o))
		return s->cpu_ns;
	return clamp_ns(o.first + o.last + (double)s->n_layers * o.layer + (double)s->cpu_ns);
}

/* A pipeline stage's share (perf.h): its layers; the embedding and the
 * CPU overhead on the first stage; final norm, LM head and sampler on the
 * last. */
static lsim_time table_stage_time(const struct lsim_perf *p, const struct lsim_batch *b,
				  int32_t layers, bool first, bool last)
{
	const struct table_state *s = p->state;
	struct t_parts o;
	table_parts(s, b, &o);
	double t = (double)layers * o.layer;
	if (first)
		t += o.first + (double)s->cpu_ns;
	if (last)
		t += o.last;
	return clamp_ns(t);
}

static void table_destroy(struct lsim_perf *p)
{
	if (!p)
		return;
	state_free(p->state);
	free(p);
}

/* The NCCL model's rate for the ring bytes of one all-reduce of a batch
 * of tokens (lsim_coll_ring_cap): the cap of each GPU's flow when the all-reduces move on the links, so that
 * uncontended they take the time the model gives without a cluster. */
static double table_ring_rate_cap(const struct lsim_perf *p, int64_t tokens)
{
	const struct table_state *s = p->state;
	if (s->ar_kind != 2 || !s->ar_lat_only || tokens < 1)
		return 0.0;
	double bytes = (double)tokens * s->ar_act;
	struct lsim_coll_est e;
	if (lsim_coll_time(&s->ar_topo, LSIM_COLL_ALLREDUCE, s->ar_tp, bytes, &e) != 0)
		return 0.0;
	return lsim_coll_ring_cap(LSIM_COLL_ALLREDUCE, s->ar_tp, bytes, &e);
}

/* With the dispatch and combine on the links: each layer's all-gather
 * brings each GPU tokens x act bytes from each other GPU, and its
 * reduce-scatter as many back, so a step sends 2 x layers x that to each
 * other GPU, each flow capped at the pair's bytes over the two
 * collectives' time past their latency. */
static double table_a2a_pair_bytes(const struct lsim_perf *p, int64_t tokens, double *cap)
{
	const struct table_state *s = p->state;
	*cap = 0.0;
	if (!s->ep_lat_only || s->ep < 2 || !s->has_moe || tokens < 1)
		return 0.0;
	double pair = (double)tokens * s->ep_act;
	struct lsim_coll_est ag, rs;
	ep_exchange(s, tokens, &ag, &rs);
	*cap = lsim_coll_rate(2.0 * pair, ag.time_s + rs.time_s, ag.latency_s + rs.latency_s);
	return 2.0 * s->n_layers * pair;
}

static const struct lsim_perf_ops table_ops = {
	.name = "table",
	.iter_time = table_iter_time,
	.destroy = table_destroy,
	.stage_time = table_stage_time,
	.ring_rate_cap = table_ring_rate_cap,
	.a2a_pair_bytes = table_a2a_pair_bytes,
};

/* tp<N>/allreduce.csv (bytes,time_us) into a curve; rows of one size
 * averaged. */
static int read_allreduce(struct tab1 *f, const char *path, struct lsim_diag *d)
{
	static const struct arow_col cols[] = {{"bytes", offsetof(struct arow, pc), 0.0}};
	struct arow *rows = NULL;
	size_t n = 0;
	int rc = read_arows(path, cols, 1, &rows, &n, false, d);
	if (rc == 0) {
		qsort(rows, n, sizeof *rows, arow_cmp);
		f->x = malloc(n * sizeof *f->x);
		f->y = malloc(n * sizeof *f->y);
		if (!f->x || !f->y)
			rc = nomem(d, path);
	}
	for (size_t i = 0; rc == 0 && i < n;) {
		size_t j = i;
		double sum = 0.0;
		for (; j < n && rows[j].pc == rows[i].pc; j++)
			sum += rows[j].ns;
		f->x[f->n] = rows[i].pc;
		f->y[f->n++] = sum / (double)(j - i);
		i = j;
	}
	free(rows);
	return rc;
}

static bool is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool lsim_perf_table_has_allreduce(const char *dir, int tp)
{
	char path[PATH_LEN];
	return dir && snprintf(path, sizeof path, "%s/tp%d/allreduce.csv", dir, tp) <
			      (int)sizeof path &&
	       is_file(path);
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* "tp1, tp2" - the tensor-parallel folders present under dir. */
static void list_tp(const char *dir, char *buf, size_t size)
{
	buf[0] = '\0';
	DIR *dh = opendir(dir);
	if (!dh)
		return;
	size_t n = 0;
	for (struct dirent *e; (e = readdir(dh)) != NULL;) {
		if (strncmp(e->d_name, "tp", 2) != 0 || e->d_name[2] < '0' || e->d_name[2] > '9')
			continue;
		int w = snprintf(buf + n, size - n, "%s%s", n ? ", " : "", e->d_name);
		if (w < 0 || (size_t)w >= size - n)
			break;
		n += (size_t)w;
	}
	closedir(dh);
}

int lsim_perf_table_create(const char *dir, const struct lsim_table_params *prm,
			   struct lsim_perf **out, struct lsim_diag *d)
{
	if (!out)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "", "no output handle");
	*out = NULL;
	if (!dir || !dir[0] || !prm)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "perf_dir",
				     "no profile folder or parameters given");
	if (prm->tp < 1)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "tp",
				     "tensor-parallel degree %d must be >= 1", prm->tp);
	if (prm->n_layers < 1)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "n_layers",
				     "layer count %d must be >= 1", prm->n_layers);
	if (!(prm->cpu_overhead_s >= 0.0) || !isfinite(prm->cpu_overhead_s))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "cpu_overhead",
				     "CPU overhead %g s must be finite and >= 0",
				     prm->cpu_overhead_s);
	/* room for "/tp1/per_sequence.csv" after the folder name */
	char tpdir[PATH_LEN - 64], path[PATH_LEN];
	if (snprintf(tpdir, sizeof tpdir, "%s/tp%d", dir, prm->tp) >= (int)sizeof tpdir - 16)
		return lsim_diag_set(d, LSIM_EINVAL, dir, 0, 0, "perf_dir", "path too long");
	if (!is_dir(tpdir)) {
		char have[256];
		list_tp(dir, have, sizeof have);
		return lsim_diag_set(d, LSIM_ENOENT, tpdir, 0, 0, "tp",
				     "no profile for tensor-parallel degree %d (folders here: %s)",
				     prm->tp, have[0] ? have : "none");
	}
	struct table_state *s = calloc(1, sizeof *s);
	struct lsim_perf *p = calloc(1, sizeof *p);
	if (!s || !p) {
		free(s);
		free(p);
		return nomem(d, dir);
	}
	s->n_layers = prm->n_layers;
	s->cpu_ns = lsim_time_from_s(prm->cpu_overhead_s);

	struct op *dense = NULL;
	int n_dense = 0, rc;
	snprintf(path, sizeof path, "%s/dense.csv", tpdir);
	rc = read_layer_csv(path, "tokens", &dense, &n_dense, d);
	if (rc == 0)
		rc = split_dense(s, dense, n_dense, path, d);
	if (rc == 0) {
		snprintf(path, sizeof path, "%s/per_sequence.csv", tpdir);
		rc = read_layer_csv(path, "sequences", &s->seq_ops, &s->n_seq_ops, d);
	}
	if (rc == 0) {
		snprintf(path, sizeof path, "%s/attention.csv", tpdir);
		rc = read_attention(&s->attn, path, d);
	}
	if (rc == 0) {
		/* a moe.csv of the tp folder is measured at that degree and
		 * read as it is; the profiler measures the experts at TP 1 only,
		 * and at tp > 1 each GPU runs 1 / tp of every expert of that
		 * table (moe_share_lookup) */
		snprintf(path, sizeof path, "%s/moe.csv", tpdir);
		rc = read_moe(&s->moe, path, d);
		s->moe_shards = 1;
		if (rc == LSIM_ENOENT && prm->tp != 1) {
			snprintf(path, sizeof path, "%s/tp1/moe.csv", dir);
			rc = read_moe(&s->moe, path, d);
			s->moe_shards = prm->tp;
		}
		s->has_moe = rc == 0;
		if (rc == LSIM_ENOENT)
			rc = 0; /* a dense model */
	}
	if (rc == 0)
		rc = read_meta(&s->skew, dir, prm, d);
	if (rc == 0 && prm->model && (prm->model->n_experts > 0) != s->has_moe) {
		/* an MoE model's experts untimed, or a dense model given experts */
		snprintf(path, sizeof path, "%s/moe.csv", tpdir);
		rc = prm->model->n_experts > 0
			? lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, "moe.csv",
					"%s is an MoE model (%d experts) but this folder has "
					"no moe.csv (here or in tp1/): its experts would go "
					"untimed; give the folder of %s's tables",
					prm->model->name, prm->model->n_experts,
					prm->model->name)
			: lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, "moe.csv",
					"%s is a dense model but this folder times experts "
					"(moe.csv): these are an MoE model's tables; give the "
					"folder of %s's tables",
					prm->model->name, prm->model->name);
	}
	if (rc == 0 && prm->coll && prm->tp > 1) {
		s->ar_tp = prm->tp;
		s->ar_act = prm->act_bytes;
		s->ag_logit = prm->logit_bytes;
		s->ar_topo = *prm->coll;
		snprintf(path, sizeof path, "%s/allreduce.csv", tpdir);
		if (is_file(path)) {
			rc = read_allreduce(&s->ar_curve, path, d);
			s->ar_kind = 1;
		} else {
			s->ar_lat_only = prm->coll_on_links;
			s->ar_kind = 2;
		}
		struct lsim_coll_est e;
		if (rc == 0 && (!(prm->act_bytes > 0.0) || !(prm->logit_bytes > 0.0)))
			rc = lsim_diag_set(d, LSIM_EINVAL, tpdir, 0, 0, "tp",
					   "%d GPUs of tensor parallelism need the model's "
					   "hidden size and vocabulary to time their "
					   "collectives", prm->tp);
		else if (rc == 0 &&
			 (lsim_coll_time(&s->ar_topo, LSIM_COLL_ALLREDUCE, prm->tp, 0.0, &e) != 0 ||
			  lsim_coll_time(&s->ar_topo, LSIM_COLL_ALLGATHER, prm->tp, 0.0, &e) != 0))
			rc = lsim_diag_set(d, LSIM_EINVAL, tpdir, 0, 0, "tp",
					   "%d GPUs of tensor parallelism do not fit the "
					   "GPU's fabric (%s) for their all-reduces and "
					   "all-gather", prm->tp,
					   lsim_fabric_name(prm->coll->fabric));
	}
	if (rc == 0 && prm->ep > 1) {
		struct lsim_coll_est e;
		if (!s->has_moe)
			rc = lsim_diag_set(d, LSIM_EINVAL, dir, 0, 0, "enable_expert_parallel",
					   "expert parallelism needs an MoE model, and %s has no "
					   "moe.csv: set enable_expert_parallel false", dir);
		else if (s->moe.n_experts % prm->ep != 0)
			rc = lsim_diag_set(d, LSIM_EINVAL, dir, 0, 0, "enable_expert_parallel",
					   "%d experts do not split evenly over an expert-parallel "
					   "group of %d GPUs (data_parallel_size x tp)",
					   s->moe.n_experts, prm->ep);
		else if (!prm->coll || !(prm->act_bytes > 0.0) ||
			 lsim_coll_time(prm->coll, LSIM_COLL_ALLGATHER, prm->ep, 0.0, &e) != 0 ||
			 lsim_coll_time(prm->coll, LSIM_COLL_REDUCESCATTER, prm->ep, 0.0, &e) != 0)
			rc = lsim_diag_set(d, LSIM_EINVAL, dir, 0, 0, "enable_expert_parallel",
					   "an expert-parallel group of %d GPUs needs the GPUs' "
					   "fabric for its all-gathers and reduce-scatters, and %s",
					   prm->ep,
					   prm->coll ? "it does not hold that many"
						     : "none was given");
		if (rc == 0) {
			s->ep = prm->ep;
			s->moe_shards = prm->ep; /* its callers refuse ep with tp > 1 */
			s->ep_topo = *prm->coll;
			s->ep_act = prm->act_bytes;
			s->ep_lat_only = prm->ep_on_links;
		}
	}
	if (rc) {
		state_free(s);
		free(p);
		return rc;
	}
	p->ops = &table_ops;
	p->state = s;
	*out = p;
	return 0;
}
