/*
 * job_readers.c - job lists and pool descriptions, and what fills them:
 * the Alibaba GPU v2023 pod and node readers, the generic job CSV reader,
 * the Helios virtual-cluster quota and the Acme/Helios cluster summary
 * readers, and the seeded job generators (empirical runtimes, published
 * statistics, the power-of-two size law, epoch-shaped phases).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_roots.h>

#include "kernel/csv.h"
#include "job_specs.h"
#include "kernel/array.h"
#include "kernel/rng.h"
#include "workload_internal.h"

/* RNG streams of the generators (beside those of sim/kernel/rng.h). */
enum { STREAM_JOB_SIZES = 2001, STREAM_JOB_TENANTS = 2002 };

/* ---- specs ---- */

int32_t lsim_job_peak_gpus(const struct lsim_job_spec *s)
{
	int32_t m = 0;
	for (int32_t p = 0; p < s->n_phases; p++)
		if (s->phases[p].gpus > m)
			m = s->phases[p].gpus;
	return m;
}

int64_t lsim_job_total_iterations(const struct lsim_job_spec *s)
{
	int64_t n = 0;
	for (int32_t p = 0; p < s->n_phases; p++)
		n += s->phases[p].iterations;
	return n;
}

void lsim_job_split_duration(lsim_time dur, int64_t *iterations,
			     lsim_time *iter_time)
{
	static const lsim_time units[] = {LSIM_S, LSIM_MS, LSIM_US, LSIM_NS};
	if (dur <= 0) {
		*iterations = 1;
		*iter_time = 0;
		return;
	}
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (dur % units[i] == 0) {
			*iterations = dur / units[i];
			*iter_time = units[i];
			return;
		}
	}
}

/* ---- lists ---- */

void lsim_job_list_init(struct lsim_job_list *l)
{
	memset(l, 0, sizeof *l);
}

void lsim_job_list_release(struct lsim_job_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free((void *)l->jobs[i].phases);
	free(l->jobs);
	for (size_t i = 0; i < l->n_tenants; i++)
		free(l->tenants[i]);
	free(l->tenants);
	free(l->quota);
	for (size_t i = 0; i < l->n_strings; i++)
		free(l->strings[i]);
	free(l->strings);
	memset(l, 0, sizeof *l);
}

static const char *intern(struct lsim_job_list *l, const char *s)
{
	if (!s || !*s)
		return NULL;
	for (size_t i = 0; i < l->n_strings; i++)
		if (strcmp(l->strings[i], s) == 0)
			return l->strings[i];
	if (lsim_grow((void **)&l->strings, &l->cap_strings, l->n_strings + 1,
		 sizeof *l->strings))
		return NULL;
	char *c = strdup(s);
	if (c)
		l->strings[l->n_strings++] = c;
	return c;
}

int lsim_job_list_add(struct lsim_job_list *l, const struct lsim_job_spec *s)
{
	if (s->n_phases < 1 || !s->phases)
		return LSIM_EINVAL;
	if (lsim_grow((void **)&l->jobs, &l->cap, l->n + 1, sizeof *l->jobs))
		return LSIM_ENOMEM;
	struct lsim_job_phase *ph = malloc((size_t)s->n_phases * sizeof *ph);
	if (!ph)
		return LSIM_ENOMEM;
	memcpy(ph, s->phases, (size_t)s->n_phases * sizeof *ph);
	struct lsim_job_spec c = *s;
	c.phases = ph;
	c.gpu_types = NULL;
	if (s->gpu_types && *s->gpu_types) {
		c.gpu_types = intern(l, s->gpu_types);
		if (!c.gpu_types) {
			free(ph);
			return LSIM_ENOMEM;
		}
	}
	l->jobs[l->n++] = c;
	return 0;
}

int32_t lsim_job_list_tenant(struct lsim_job_list *l, const char *name)
{
	for (size_t i = 0; i < l->n_tenants; i++)
		if (strcmp(l->tenants[i], name) == 0)
			return (int32_t)i;
	size_t cap = l->cap_tenants;
	if (lsim_grow((void **)&l->tenants, &l->cap_tenants, l->n_tenants + 1,
		 sizeof *l->tenants))
		return LSIM_ENOMEM;
	if (l->cap_tenants != cap || !l->quota) {
		int32_t *q = realloc(l->quota, l->cap_tenants * sizeof *q);
		if (!q)
			return LSIM_ENOMEM;
		l->quota = q;
	}
	char *c = strdup(name);
	if (!c)
		return LSIM_ENOMEM;
	l->tenants[l->n_tenants] = c;
	l->quota[l->n_tenants] = -1;
	return (int32_t)l->n_tenants++;
}

void lsim_job_list_sort(struct lsim_job_list *l)
{
	size_t n = l->n;
	bool sorted = true;
	for (size_t i = 1; i < n && sorted; i++)
		sorted = l->jobs[i - 1].arrival <= l->jobs[i].arrival;
	if (sorted)
		return;
	struct lsim_job_spec *tmp = malloc(n * sizeof *tmp);
	if (!tmp) {
		/* stable insertion sort in place: slow but needs no memory */
		for (size_t i = 1; i < n; i++) {
			struct lsim_job_spec x = l->jobs[i];
			size_t k = i;
			for (; k > 0 && l->jobs[k - 1].arrival > x.arrival; k--)
				l->jobs[k] = l->jobs[k - 1];
			l->jobs[k] = x;
		}
		return;
	}
	/* bottom-up merge sort: stable */
	struct lsim_job_spec *a = l->jobs, *b = tmp;
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n;
			size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, k = mid, o = lo;
			while (i < mid && k < hi)
				b[o++] = a[k].arrival < a[i].arrival ? a[k++] : a[i++];
			while (i < mid)
				b[o++] = a[i++];
			while (k < hi)
				b[o++] = a[k++];
		}
		struct lsim_job_spec *t = a;
		a = b;
		b = t;
	}
	if (a != l->jobs)
		memcpy(l->jobs, a, n * sizeof *a);
	free(tmp);
}

/* ---- pools ---- */

void lsim_pool_spec_init(struct lsim_pool_spec *p)
{
	memset(p, 0, sizeof *p);
}

void lsim_pool_spec_release(struct lsim_pool_spec *p)
{
	if (!p)
		return;
	free(p->node_gpus);
	free(p->node_type);
	free(p->types);
	memset(p, 0, sizeof *p);
}

int32_t lsim_pool_spec_type(const struct lsim_pool_spec *p, const char *name)
{
	for (int32_t t = 0; t < p->n_types; t++)
		if (strcmp(p->types[t], name) == 0)
			return t;
	return -1;
}

int lsim_pool_spec_add(struct lsim_pool_spec *p, int32_t count, int32_t gpus,
		       const char *type)
{
	if (count < 0 || gpus < 1 || !type || strlen(type) >= sizeof p->types[0])
		return LSIM_EINVAL;
	int32_t t = lsim_pool_spec_type(p, type);
	if (t < 0) {
		size_t cap = (size_t)p->cap_types;
		if (lsim_grow((void **)&p->types, &cap, (size_t)p->n_types + 1,
			 sizeof *p->types))
			return LSIM_ENOMEM;
		p->cap_types = (int32_t)cap;
		t = p->n_types++;
		snprintf(p->types[t], sizeof p->types[t], "%s", type);
	}
	size_t need = (size_t)p->n_nodes + (size_t)count;
	size_t cap = (size_t)p->cap_nodes, cap2 = cap;
	if (lsim_grow((void **)&p->node_gpus, &cap, need, sizeof *p->node_gpus) ||
	    lsim_grow((void **)&p->node_type, &cap2, need, sizeof *p->node_type))
		return LSIM_ENOMEM;
	p->cap_nodes = (int32_t)(cap < cap2 ? cap : cap2);
	for (int32_t i = 0; i < count; i++) {
		p->node_gpus[p->n_nodes] = gpus;
		p->node_type[p->n_nodes] = t;
		p->n_nodes++;
	}
	return 0;
}

/* ---- field parsing ---- */

struct row {
	struct lsim_csv *r;
	const char *path;
	struct lsim_diag *d;
};

static int bad(const struct row *w, int col, const char *key, const char *fmt,
	       ...) __attribute__((format(printf, 4, 5)));

static int bad(const struct row *w, int col, const char *key, const char *fmt,
	       ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return lsim_diag_set(w->d, LSIM_EFORMAT, w->path, lsim_csv_line(w->r),
			     col >= 0 ? lsim_csv_field_col(w->r, col) : 0, key,
			     "%s", msg);
}

/* Field of column col (trimmed), "" when the column is absent. */
static const char *field(const struct row *w, int col)
{
	if (col < 0)
		return "";
	const char *f = lsim_csv_field_trim(w->r, col);
	return f ? f : "";
}

static int parse_int(const struct row *w, int col, const char *key,
		     int64_t lo, int64_t hi, int64_t *out)
{
	const char *s = field(w, col);
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (!*s || *end || errno)
		return bad(w, col, key, "not an integer: '%s'", s);
	if (v < lo || v > hi) {
		char msg[160];
		snprintf(msg, sizeof msg, "%lld is outside [%lld, %lld]", v,
			 (long long)lo, (long long)hi);
		return bad(w, col, key, "%s", msg);
	}
	*out = v;
	return 0;
}

static int parse_double(const struct row *w, int col, const char *key,
			double *out)
{
	const char *s = field(w, col);
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(v))
		return bad(w, col, key, "not a finite number: '%s'", s);
	if (v < 0)
		return bad(w, col, key, "negative: '%s'", s);
	*out = v;
	return 0;
}

/* Seconds, exactly, into ns; non-negative. */
static int parse_seconds(const struct row *w, int col, const char *key,
			 lsim_time *out)
{
	const char *s = field(w, col);
	int64_t v;
	int rc = lsim_wl_parse_decimal(s, 9, &v);
	if (rc == LSIM_ERANGE)
		return bad(w, col, key, "time out of range: '%s'", s);
	if (rc)
		return bad(w, col, key, "not a number of seconds: '%s'", s);
	if (v < 0)
		return bad(w, col, key, "negative time: '%s'", s);
	*out = v;
	return 0;
}

static int check_width(const struct row *w)
{
	int nf = lsim_csv_fields(w->r), nc = lsim_csv_columns(w->r);
	if (nf == nc)
		return 0;
	char msg[128];
	snprintf(msg, sizeof msg, "%d fields where the header has %d", nf, nc);
	return lsim_diag_set(w->d, LSIM_EFORMAT, w->path, lsim_csv_line(w->r),
			     nf > nc ? lsim_csv_field_col(w->r, nc) : 0,
			     nf > nc ? "" : lsim_csv_name(w->r, nf), "%s", msg);
}

/* ---- Alibaba GPU v2023 ---- */

int lsim_jobs_read_alibaba_pods(const char *path, double end_s,
				struct lsim_job_list *l, struct lsim_diag *d)
{
	static const char *const cols[] = {
		"name",	       "num_gpu",	"gpu_milli",	  "gpu_spec",
		"qos",	       "creation_time", "deletion_time", "scheduled_time",
	};
	enum { C_NAME, C_NGPU, C_MILLI, C_SPEC, C_QOS, C_CREATE, C_DEL, C_SCHED };
	struct lsim_csv *r;
	int rc = lsim_csv_open(path, &r, d);
	if (rc)
		return rc;
	int idx[8];
	rc = lsim_csv_require(r, cols, 8, idx, d);
	struct row w = {r, path, d};
	uint64_t row_no = 0;
	while (!rc && (rc = lsim_csv_next(r, d)) == 1) {
		rc = check_width(&w);
		if (rc)
			break;
		uint64_t id = row_no++;
		int64_t ngpu, milli;
		rc = parse_int(&w, idx[C_NGPU], "num_gpu", 0, 1 << 20, &ngpu);
		if (rc)
			break;
		if (ngpu == 0) {
			l->skipped_no_gpu++;
			continue;
		}
		rc = parse_int(&w, idx[C_MILLI], "gpu_milli", 1, 1000, &milli);
		if (rc)
			break;
		if (milli < 1000 && ngpu > 1) {
			rc = bad(&w, idx[C_MILLI], "gpu_milli",
				 "a share below 1000 needs num_gpu 1");
			break;
		}
		lsim_time create, sched, del;
		rc = parse_seconds(&w, idx[C_CREATE], "creation_time", &create);
		if (rc)
			break;
		if (!*field(&w, idx[C_SCHED])) {
			l->skipped_unscheduled++;
			continue;
		}
		rc = parse_seconds(&w, idx[C_SCHED], "scheduled_time", &sched);
		if (rc)
			break;
		if (sched < create) {
			rc = bad(&w, idx[C_SCHED], "scheduled_time",
				 "scheduled before its creation time");
			break;
		}
		if (!*field(&w, idx[C_DEL])) {
			if (!(end_s > 0)) {
				l->skipped_open++;
				continue;
			}
			del = lsim_time_from_s(end_s);
			if (del < sched)
				del = sched;
		} else {
			rc = parse_seconds(&w, idx[C_DEL], "deletion_time", &del);
			if (rc)
				break;
			if (del < sched) {
				rc = bad(&w, idx[C_DEL], "deletion_time",
					 "deleted before it was scheduled");
				break;
			}
		}
		const char *qos = field(&w, idx[C_QOS]);
		int32_t tenant = lsim_job_list_tenant(l, *qos ? qos : "default");
		if (tenant < 0) {
			rc = LSIM_ENOMEM;
			break;
		}
		struct lsim_job_phase ph = {0, (int32_t)ngpu};
		struct lsim_job_spec s = {0};
		lsim_job_split_duration(del - sched, &ph.iterations, &s.iter_time);
		s.id = id;
		s.arrival = create;
		s.tenant = tenant;
		s.gpu_milli = milli < 1000 ? (int32_t)milli : 0;
		s.gpu_types = field(&w, idx[C_SPEC]);
		s.phases = &ph;
		s.n_phases = 1;
		s.src_line = lsim_csv_line(r);
		rc = lsim_job_list_add(l, &s);
	}
	lsim_csv_close(r);
	if (rc < 0)
		return rc;
	lsim_job_list_sort(l);
	return 0;
}

int lsim_jobs_read_alibaba_nodes(const char *path, struct lsim_pool_spec *p,
				 struct lsim_diag *d)
{
	static const char *const cols[] = {"sn", "gpu", "model"};
	struct lsim_csv *r;
	int rc = lsim_csv_open(path, &r, d);
	if (rc)
		return rc;
	int idx[3];
	rc = lsim_csv_require(r, cols, 3, idx, d);
	struct row w = {r, path, d};
	while (!rc && (rc = lsim_csv_next(r, d)) == 1) {
		rc = check_width(&w);
		if (rc)
			break;
		int64_t gpus;
		rc = parse_int(&w, idx[1], "gpu", 0, 1 << 16, &gpus);
		if (rc)
			break;
		if (gpus == 0)
			continue;
		const char *model = field(&w, idx[2]);
		if (!*model || strlen(model) >= sizeof p->types[0]) {
			rc = bad(&w, idx[2], "model",
				 "a GPU node needs a model name of 1..31 "
				 "characters: '%s'",
				 model);
			break;
		}
		rc = lsim_pool_spec_add(p, 1, (int32_t)gpus, model);
	}
	lsim_csv_close(r);
	return rc < 0 ? rc : 0;
}

/* ---- the generic job CSV ---- */

/* "g:i;g:i" into ph (cap entries); returns the count or a negative code. */
static int parse_phases(const struct row *w, int col, struct lsim_job_phase *ph,
			int cap)
{
	const char *s = field(w, col);
	int n = 0;
	const char *p = s;
	while (*p) {
		char *end;
		errno = 0;
		long long g = strtoll(p, &end, 10);
		if (end == p || *end != ':' || errno || g < 1 || g > INT32_MAX)
			return bad(w, col, "phases",
				   "expected gpus:iterations;... in '%s'", s);
		p = end + 1;
		long long it = strtoll(p, &end, 10);
		if (end == p || errno || it < 1 || (*end && *end != ';'))
			return bad(w, col, "phases",
				   "expected gpus:iterations;... in '%s'", s);
		if (n == cap)
			return bad(w, col, "phases", "too many phases in '%s'", s);
		ph[n].gpus = (int32_t)g;
		ph[n].iterations = it;
		n++;
		p = *end ? end + 1 : end;
	}
	if (n == 0)
		return bad(w, col, "phases", "no phases in '%s'", s);
	return n;
}

enum {
	G_ARRIVAL, G_ID, G_TENANT, G_KIND, G_GPUS, G_GPUS_MIN, G_MILLI,
	G_TYPE, G_DUR, G_ITERS, G_ITER_S, G_PARAMS, G_TOKENS, G_CKPT_EVERY,
	G_CKPT_INT, G_CKPT_BYTES, G_PHASES, G_N
};

static const char *const gen_cols[G_N] = {
	"arrival_s", "id", "tenant", "kind", "gpus", "gpus_min", "gpu_milli",
	"gpu_type", "duration_s", "iterations", "iter_s", "params",
	"tokens_per_iter", "ckpt_every", "ckpt_interval_s", "ckpt_bytes",
	"phases",
};

#define MAX_CSV_PHASES 64

static int csv_row(const struct row *w, const int *c, uint64_t row_no,
		   lsim_time *prev, struct lsim_job_list *l)
{
	struct lsim_job_phase ph[MAX_CSV_PHASES];
	struct lsim_job_spec s = {0};
	int rc;
	s.src_line = lsim_csv_line(w->r);
#define HAS(k) (*field(w, c[k]) != '\0')
	if ((rc = parse_seconds(w, c[G_ARRIVAL], "arrival_s", &s.arrival)))
		return rc;
	if (s.arrival < *prev)
		return bad(w, c[G_ARRIVAL], "arrival_s",
			   "arrival before the previous row's: '%s'",
			   field(w, c[G_ARRIVAL]));
	*prev = s.arrival;
	s.id = row_no;
	if (HAS(G_ID)) {
		int64_t v;
		if ((rc = parse_int(w, c[G_ID], "id", 0, INT64_MAX, &v)))
			return rc;
		s.id = (uint64_t)v;
	}
	const char *tn = HAS(G_TENANT) ? field(w, c[G_TENANT]) : "default";
	s.tenant = lsim_job_list_tenant(l, tn);
	if (s.tenant < 0)
		return LSIM_ENOMEM;
	if (HAS(G_KIND)) {
		const char *k = field(w, c[G_KIND]);
		if (strcmp(k, "train") == 0)
			s.kind = LSIM_JOB_TRAIN;
		else if (strcmp(k, "finetune") == 0)
			s.kind = LSIM_JOB_FINETUNE;
		else
			return bad(w, c[G_KIND], "kind",
				   "expected train or finetune, got '%s'", k);
	}
	int64_t v;
	if (HAS(G_GPUS_MIN)) {
		if ((rc = parse_int(w, c[G_GPUS_MIN], "gpus_min", 1, INT32_MAX,
				    &v)))
			return rc;
		s.gpus_min = (int32_t)v;
	}
	if (HAS(G_MILLI)) {
		if ((rc = parse_int(w, c[G_MILLI], "gpu_milli", 1, 1000, &v)))
			return rc;
		s.gpu_milli = v < 1000 ? (int32_t)v : 0;
	}
	s.gpu_types = field(w, c[G_TYPE]);
	if (HAS(G_ITER_S) &&
	    (rc = parse_seconds(w, c[G_ITER_S], "iter_s", &s.iter_time)))
		return rc;
	if (HAS(G_PARAMS) &&
	    (rc = parse_double(w, c[G_PARAMS], "params", &s.params)))
		return rc;
	if (HAS(G_TOKENS) && (rc = parse_double(w, c[G_TOKENS],
						"tokens_per_iter",
						&s.tokens_per_iter)))
		return rc;
	if (HAS(G_CKPT_BYTES) && (rc = parse_double(w, c[G_CKPT_BYTES],
						    "ckpt_bytes", &s.ckpt_bytes)))
		return rc;
	bool model = s.params > 0;
	if (model && !(s.tokens_per_iter > 0))
		return bad(w, c[G_PARAMS], "tokens_per_iter",
			   "params needs tokens_per_iter > 0");
	if (model && HAS(G_ITER_S))
		return bad(w, c[G_ITER_S], "iter_s",
			   "give iter_s or params, not both");
	int np;
	if (HAS(G_PHASES)) {
		if (HAS(G_GPUS) || HAS(G_DUR) || HAS(G_ITERS))
			return bad(w, c[G_PHASES], "phases",
				   "phases replace gpus, duration_s and "
				   "iterations: leave those empty");
		np = parse_phases(w, c[G_PHASES], ph, MAX_CSV_PHASES);
		if (np < 0)
			return np;
		if (!model && !HAS(G_ITER_S))
			return bad(w, c[G_PHASES], "iter_s",
				   "phases need iter_s or params");
	} else {
		if (!HAS(G_GPUS))
			return bad(w, c[G_GPUS], "gpus",
				   "a job needs gpus (or phases)");
		if ((rc = parse_int(w, c[G_GPUS], "gpus", 1, INT32_MAX, &v)))
			return rc;
		ph[0].gpus = (int32_t)v;
		np = 1;
		if (HAS(G_DUR) == HAS(G_ITERS))
			return bad(w, c[G_DUR], "duration_s",
				   "give exactly one of duration_s and "
				   "iterations");
		if (HAS(G_DUR)) {
			if (model || HAS(G_ITER_S))
				return bad(w, c[G_DUR], "duration_s",
					   "a duration excludes iter_s and "
					   "params");
			lsim_time dur;
			if ((rc = parse_seconds(w, c[G_DUR], "duration_s", &dur)))
				return rc;
			lsim_job_split_duration(dur, &ph[0].iterations,
						&s.iter_time);
		} else {
			if ((rc = parse_int(w, c[G_ITERS], "iterations", 1,
					    INT64_MAX, &ph[0].iterations)))
				return rc;
			if (!model && !HAS(G_ITER_S))
				return bad(w, c[G_ITERS], "iter_s",
					   "iterations need iter_s or params");
		}
	}
	if (HAS(G_CKPT_EVERY) && HAS(G_CKPT_INT))
		return bad(w, c[G_CKPT_INT], "ckpt_interval_s",
			   "give ckpt_every or ckpt_interval_s, not both");
	if (HAS(G_CKPT_EVERY)) {
		if ((rc = parse_int(w, c[G_CKPT_EVERY], "ckpt_every", 0,
				    INT64_MAX, &s.ckpt_every)))
			return rc;
	} else if (HAS(G_CKPT_INT)) {
		lsim_time ci;
		if ((rc = parse_seconds(w, c[G_CKPT_INT], "ckpt_interval_s", &ci)))
			return rc;
		if (model || s.iter_time <= 0)
			return bad(w, c[G_CKPT_INT], "ckpt_interval_s",
				   "an interval needs a fixed iteration time "
				   "(duration_s or iter_s)");
		s.ckpt_every = ci / s.iter_time;
		if (s.ckpt_every < 1)
			s.ckpt_every = 1;
	}
	s.phases = ph;
	s.n_phases = np;
	int32_t peak = lsim_job_peak_gpus(&s);
	if (s.gpus_min > peak)
		return bad(w, c[G_GPUS_MIN], "gpus_min",
			   "gpus_min above the job's GPUs: '%s'",
			   field(w, c[G_GPUS_MIN]));
	if (s.gpu_milli > 0 && (np != 1 || ph[0].gpus != 1))
		return bad(w, c[G_MILLI], "gpu_milli",
			   "a GPU share is for a 1-GPU job");
#undef HAS
	return lsim_job_list_add(l, &s);
}

int lsim_jobs_read_csv(const char *path, struct lsim_job_list *l,
		       struct lsim_diag *d)
{
	struct lsim_csv *r;
	int rc = lsim_csv_open(path, &r, d);
	if (rc)
		return rc;
	int c[G_N];
	rc = lsim_csv_require(r, gen_cols, 1, c, d);
	for (int k = 1; k < G_N; k++)
		c[k] = lsim_csv_column(r, gen_cols[k]);
	struct row w = {r, path, d};
	uint64_t row_no = 0;
	lsim_time prev = 0;
	while (!rc && (rc = lsim_csv_next(r, d)) == 1) {
		rc = check_width(&w);
		if (!rc)
			rc = csv_row(&w, c, row_no++, &prev, l);
	}
	lsim_csv_close(r);
	return rc < 0 ? rc : 0;
}

/* ---- published summaries ---- */

int lsim_jobs_read_vc_quotas(const char *path, const char *date,
			     struct lsim_job_list *l, struct lsim_diag *d)
{
	static const char *const cols[] = {"date"};
	struct lsim_csv *r;
	int rc = lsim_csv_open(path, &r, d);
	if (rc)
		return rc;
	int dc;
	rc = lsim_csv_require(r, cols, 1, &dc, d);
	struct row w = {r, path, d};
	bool found = false;
	while (!rc && !found && (rc = lsim_csv_next(r, d)) == 1) {
		if ((rc = check_width(&w)))
			break;
		if (date && strcmp(field(&w, dc), date) != 0)
			continue;
		found = true;
		for (int k = 0; k < lsim_csv_columns(r) && !rc; k++) {
			const char *name = lsim_csv_name(r, k);
			if (k == dc || strcmp(name, "total") == 0)
				continue;
			int64_t g;
			if ((rc = parse_int(&w, k, name, 0, INT32_MAX, &g)))
				break;
			if (g == 0)
				continue;
			int32_t t = lsim_job_list_tenant(l, name);
			if (t < 0)
				rc = LSIM_ENOMEM;
			else
				l->quota[t] = (int32_t)g;
		}
	}
	int line = lsim_csv_line(r);
	lsim_csv_close(r);
	if (rc < 0)
		return rc;
	if (!found)
		return lsim_diag_set(d, LSIM_ENOENT, path, line, 0, "date",
				     "no row for date '%s'", date ? date : "");
	return 0;
}

int lsim_jobs_read_cluster_stats(const char *path, const char *cluster,
				 struct lsim_cluster_stats *out,
				 struct lsim_diag *d)
{
	static const char *const need[] = {"id", "avg_run_time_gpu",
					   "med_run_time_gpu", "avg_gpu_num"};
	struct lsim_csv *r;
	int rc = lsim_csv_open(path, &r, d);
	if (rc)
		return rc;
	int c[4];
	rc = lsim_csv_require(r, need, 4, c, d);
	int c_medg = lsim_csv_column(r, "med_gpu_num");
	int c_maxr = lsim_csv_column(r, "max_run_time_gpu");
	int c_maxg = lsim_csv_column(r, "max_gpu");
	int c_avgq = lsim_csv_column(r, "avg_que_time_gpu");
	int c_medq = lsim_csv_column(r, "med_que_time_gpu");
	struct row w = {r, path, d};
	char known[256] = "";
	bool found = false;
	while (!rc && !found && (rc = lsim_csv_next(r, d)) == 1) {
		if ((rc = check_width(&w)))
			break;
		const char *id = field(&w, c[0]);
		if (strcmp(id, cluster) != 0) {
			size_t k = strlen(known);
			snprintf(known + k, sizeof known - k, "%s%s", k ? ", " : "",
				 id);
			continue;
		}
		found = true;
		memset(out, 0, sizeof *out);
		snprintf(out->name, sizeof out->name, "%s", id);
		double mg = 0;
		if ((rc = parse_double(&w, c[1], "avg_run_time_gpu",
				       &out->avg_run_s)) ||
		    (rc = parse_double(&w, c[2], "med_run_time_gpu",
				       &out->med_run_s)) ||
		    (rc = parse_double(&w, c[3], "avg_gpu_num", &out->avg_gpus)))
			break;
		struct {
			int col;
			const char *key;
			double *v;
		} opt[] = {
			{c_medg, "med_gpu_num", &out->med_gpus},
			{c_maxr, "max_run_time_gpu", &out->max_run_s},
			{c_maxg, "max_gpu", &mg},
			{c_avgq, "avg_que_time_gpu", &out->avg_queue_s},
			{c_medq, "med_que_time_gpu", &out->med_queue_s},
		};
		for (size_t k = 0; k < sizeof opt / sizeof opt[0] && !rc; k++)
			if (*field(&w, opt[k].col))
				rc = parse_double(&w, opt[k].col, opt[k].key,
						  opt[k].v);
		out->max_gpus = mg < INT32_MAX ? (int32_t)mg : INT32_MAX;
	}
	int line = lsim_csv_line(r);
	lsim_csv_close(r);
	if (rc < 0)
		return rc;
	if (!found)
		return lsim_diag_set(d, LSIM_ENOENT, path, line, 0, "id",
				     "no cluster '%s' (known: %s)", cluster, known);
	return 0;
}

/* ---- generators ---- */

void lsim_job_gen_defaults(struct lsim_job_gen_params *p)
{
	memset(p, 0, sizeof *p);
	p->seed = 1;
	p->count = 1000;
	p->load = 0.8;
	p->min_duration = LSIM_S;
}

#define MAX_SIZES 31

static double law_mean(double q, int n)
{
	double num = 0, den = 0, w = 1;
	for (int k = 0; k < n; k++) {
		num += w * ldexp(1.0, k);
		den += w;
		w *= q;
	}
	return num / den;
}

struct law_ctx {
	double target;
	int n;
};

static double law_f(double q, void *ctx)
{
	const struct law_ctx *c = ctx;
	return law_mean(q, c->n) - c->target;
}

int lsim_job_size_law(double mean_gpus, int32_t max_gpus, double *prob, int *n)
{
	int k = 0;
	while (k < MAX_SIZES - 1 && ((int64_t)1 << (k + 1)) <= max_gpus)
		k++;
	int ns = k + 1; /* sizes 1, 2, ..., 2^k */
	*n = ns;
	if (!(mean_gpus >= 1) || (ns > 1 && mean_gpus >= ldexp(1.0, k)) ||
	    (ns == 1 && mean_gpus != 1))
		return LSIM_ERANGE;
	double q = 0;
	if (mean_gpus > 1) {
		struct law_ctx ctx = {mean_gpus, ns};
		gsl_function f = {law_f, &ctx};
		double hi = 1;
		while (law_f(hi, &ctx) < 0)
			hi *= 2;
		gsl_root_fsolver *s = gsl_root_fsolver_alloc(gsl_root_fsolver_brent);
		if (!s)
			return LSIM_ENOMEM;
		gsl_error_handler_t *old = gsl_set_error_handler_off();
		int st = gsl_root_fsolver_set(s, &f, 0.0, hi);
		for (int it = 0; !st && it < 200; it++) {
			st = gsl_root_fsolver_iterate(s);
			double lo = gsl_root_fsolver_x_lower(s);
			double up = gsl_root_fsolver_x_upper(s);
			if (!st && gsl_root_test_interval(lo, up, 0, 1e-14) ==
					   GSL_SUCCESS)
				break;
		}
		q = gsl_root_fsolver_root(s);
		gsl_root_fsolver_free(s);
		gsl_set_error_handler(old);
		if (st)
			return LSIM_ERANGE;
	}
	double w = 1, den = 0;
	for (int i = 0; i < ns; i++) {
		prob[i] = w;
		den += w;
		w *= q;
	}
	for (int i = 0; i < ns; i++)
		prob[i] /= den;
	return 0;
}

/* Draws of the generators: a duration source and everything else. */
struct dur_src {
	gsl_ran_discrete_t *table; /* empirical */
	const double *values;
	double mu, sigma, cap_s; /* lognormal */
};

static double draw_duration(const struct dur_src *src, gsl_rng *r)
{
	if (src->table)
		return src->values[gsl_ran_discrete(r, src->table)];
	double v = src->sigma > 0 ? gsl_ran_lognormal(r, src->mu, src->sigma)
				  : exp(src->mu);
	return src->cap_s > 0 && v > src->cap_s ? src->cap_s : v;
}

static int generate(const struct dur_src *src, double mean_dur_s,
		    double mean_gpus, int32_t max_gpus,
		    const struct lsim_job_gen_params *p, struct lsim_job_list *l,
		    struct lsim_diag *d)
{
	if (p->capacity_gpus > 0 && max_gpus > p->capacity_gpus)
		max_gpus = p->capacity_gpus;
	double prob[MAX_SIZES];
	int ns;
	int rc = lsim_job_size_law(mean_gpus, max_gpus, prob, &ns);
	if (rc)
		return lsim_diag_set(d, rc, "", 0, 0, "mean_gpus",
				     "mean GPUs %g is not reachable with sizes "
				     "up to %d",
				     mean_gpus, max_gpus);
	double rate = p->rate;
	if (!(rate > 0)) {
		if (!(p->load > 0) || p->capacity_gpus <= 0 || !(mean_dur_s > 0))
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "rate",
					     "give a rate, or a load with the "
					     "pool's capacity_gpus");
		rate = p->load * p->capacity_gpus / (mean_gpus * mean_dur_s);
	}
	if (l->n_tenants == 0 && lsim_job_list_tenant(l, "default") < 0)
		return LSIM_ENOMEM;
	double *tw = malloc(l->n_tenants * sizeof *tw);
	if (!tw)
		return LSIM_ENOMEM;
	bool any_quota = false;
	for (size_t t = 0; t < l->n_tenants; t++)
		any_quota |= l->quota[t] > 0;
	for (size_t t = 0; t < l->n_tenants; t++)
		tw[t] = any_quota ? (l->quota[t] > 0 ? l->quota[t] : 0) : 1.0;
	gsl_ran_discrete_t *sizes = gsl_ran_discrete_preproc((size_t)ns, prob);
	gsl_ran_discrete_t *tenants = gsl_ran_discrete_preproc(l->n_tenants, tw);
	gsl_rng *ra = lsim_rng_create(p->seed, 0, LSIM_STREAM_ARRIVALS);
	gsl_rng *rl = lsim_rng_create(p->seed, 0, LSIM_STREAM_LENGTHS);
	gsl_rng *rs = lsim_rng_create(p->seed, 0, STREAM_JOB_SIZES);
	gsl_rng *rt = lsim_rng_create(p->seed, 0, STREAM_JOB_TENANTS);
	rc = sizes && tenants && ra && rl && rs && rt ? 0 : LSIM_ENOMEM;
	double t_s = 0;
	double min_s = lsim_time_to_s(p->min_duration);
	for (size_t i = 0; !rc && i < p->count; i++) {
		t_s += gsl_ran_exponential(ra, 1.0 / rate);
		double dur = draw_duration(src, rl);
		if (dur < min_s)
			dur = min_s;
		int32_t gpus = (int32_t)1 << gsl_ran_discrete(rs, sizes);
		int32_t tenant = (int32_t)gsl_ran_discrete(rt, tenants);
		int32_t q = l->quota[tenant];
		while (q > 0 && gpus > q)
			gpus /= 2; /* a VC never runs a job larger than itself */
		struct lsim_job_phase ph = {0, gpus};
		struct lsim_job_spec s = {0};
		s.id = l->n;
		s.arrival = lsim_time_from_s(t_s);
		s.tenant = tenant;
		lsim_job_split_duration(lsim_time_from_s(floor(dur + 0.5)),
					&ph.iterations, &s.iter_time);
		if (p->ckpt_interval > 0 && s.iter_time > 0) {
			s.ckpt_every = p->ckpt_interval / s.iter_time;
			if (s.ckpt_every < 1)
				s.ckpt_every = 1;
			s.ckpt_bytes = p->ckpt_bytes;
		}
		s.phases = &ph;
		s.n_phases = 1;
		rc = lsim_job_list_add(l, &s);
	}
	gsl_rng_free(ra);
	gsl_rng_free(rl);
	gsl_rng_free(rs);
	gsl_rng_free(rt);
	if (sizes)
		gsl_ran_discrete_free(sizes);
	if (tenants)
		gsl_ran_discrete_free(tenants);
	free(tw);
	return rc;
}

int lsim_jobs_gen_empirical(const char *runtime_csv,
			    const struct lsim_job_gen_params *p,
			    struct lsim_job_list *l, struct lsim_diag *d)
{
	static const char *const cols[] = {"runtime"};
	struct lsim_csv *r;
	int rc = lsim_csv_open(runtime_csv, &r, d);
	if (rc)
		return rc;
	int c;
	rc = lsim_csv_require(r, cols, 1, &c, d);
	int cc = lsim_csv_column(r, "count");
	struct row w = {r, runtime_csv, d};
	double *val = NULL, *wt = NULL;
	size_t n = 0, cap_v = 0, cap_w = 0;
	double min_s = lsim_time_to_s(p->min_duration), sum_w = 0, sum_vw = 0;
	while (!rc && (rc = lsim_csv_next(r, d)) == 1) {
		if ((rc = check_width(&w)))
			break;
		double v, k = 1;
		if ((rc = parse_double(&w, c, "runtime", &v)))
			break;
		if (cc >= 0 && (rc = parse_double(&w, cc, "count", &k)))
			break;
		if (lsim_grow((void **)&val, &cap_v, n + 1, sizeof *val) ||
		    lsim_grow((void **)&wt, &cap_w, n + 1, sizeof *wt)) {
			rc = LSIM_ENOMEM;
			break;
		}
		val[n] = v;
		wt[n] = k;
		n++;
		sum_w += k;
		sum_vw += k * (v > min_s ? v : min_s);
	}
	int line = lsim_csv_line(r);
	lsim_csv_close(r);
	if (rc >= 0 && !(sum_w > 0))
		rc = lsim_diag_set(d, LSIM_EFORMAT, runtime_csv, line, 0,
				   "runtime", "no runtimes with a positive count");
	if (rc >= 0) {
		struct dur_src src = {0};
		src.values = val;
		src.table = gsl_ran_discrete_preproc(n, wt);
		if (!src.table) {
			rc = LSIM_ENOMEM;
		} else {
			double mg = p->mean_gpus > 0 ? p->mean_gpus : 1.928;
			int32_t mx = p->max_gpus > 0 ? p->max_gpus : 128;
			rc = generate(&src, sum_vw / sum_w, mg, mx, p, l, d);
			gsl_ran_discrete_free(src.table);
		}
	}
	free(val);
	free(wt);
	return rc < 0 ? rc : 0;
}

int lsim_jobs_gen_stats(const struct lsim_cluster_stats *st,
			const struct lsim_job_gen_params *p,
			struct lsim_job_list *l, struct lsim_diag *d)
{
	if (!(st->med_run_s > 0) || !(st->avg_run_s > 0))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "med_run_time_gpu",
				     "cluster %s has no positive run times",
				     st->name);
	struct dur_src src = {0};
	src.mu = log(st->med_run_s);
	double ratio = st->avg_run_s / st->med_run_s;
	src.sigma = ratio > 1 ? sqrt(2 * log(ratio)) : 0;
	src.cap_s = st->max_run_s;
	double mg = p->mean_gpus > 0 ? p->mean_gpus : st->avg_gpus;
	int32_t mx = p->max_gpus > 0 ? p->max_gpus
		     : st->max_gpus > 0 ? st->max_gpus
					: 1024;
	return generate(&src, st->avg_run_s, mg, mx, p, l, d);
}

int lsim_job_phases_epochs(int32_t epochs, int64_t iters_per_epoch,
			   int32_t high_epochs, int32_t gpus_high,
			   int32_t gpus_low, int32_t spike_gpus,
			   int64_t spike_iters, struct lsim_job_phase *out,
			   int32_t cap)
{
	if (epochs < 1 || iters_per_epoch < 1 || gpus_high < 1 || gpus_low < 1)
		return LSIM_EINVAL;
	int32_t n = 0;
	for (int32_t e = 0; e < epochs; e++) {
		struct lsim_job_phase parts[2] = {
			{iters_per_epoch, e < high_epochs ? gpus_high : gpus_low},
			{spike_iters, spike_gpus},
		};
		int np = spike_gpus > 0 && spike_iters > 0 && e + 1 < epochs ? 2 : 1;
		for (int k = 0; k < np; k++) {
			if (n > 0 && out[n - 1].gpus == parts[k].gpus) {
				out[n - 1].iterations += parts[k].iterations;
				continue;
			}
			if (n == cap)
				return LSIM_ERANGE;
			out[n++] = parts[k];
		}
	}
	return n;
}
