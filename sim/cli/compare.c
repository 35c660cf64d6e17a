/*
 * compare.c - `llmsim compare A B`: whether two runs of one workload
 * differ in TTFT, TPOT and E2E, and by how much, with a 95% confidence
 * interval. The runs replay the same requests (same trace, or same
 * generator and seed), so the comparison is paired: each request's
 * latency in B less its latency in A. Requests close in time share the
 * queues they met, so these differences are correlated; the interval
 * comes from batch means (Law and Kelton, "Simulation Modeling and
 * Analysis", ch. 9): the pairs in arrival order are cut into K batches
 * of (nearly) equal count, and the batches' mean differences, close to
 * independent when each spans much more than a queue's memory, give a
 * Student t interval with K - 1 degrees of freedom. The lag-1
 * autocorrelation of the batch means is reported so that a reader can
 * see when the batches are too short.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_statistics_double.h>
#include <hdf5.h>

#include "cli/cli.h"
#include "report/report.h"

/* ---- reading one run's /requests ---- */

struct cmp_row {
	uint64_t id;
	double arrival, first_token, finish;
	int32_t output_tokens, status;
};

struct cmp_run {
	char path[4096]; /* the report.h5 read */
	struct cmp_row *rows;
	size_t n;
};

/* The report of a run: DIR/report.h5 for a folder, else the file. */
static int find_report(const char *arg, struct cmp_run *run, struct lsim_diag *d)
{
	struct stat st;
	if (stat(arg, &st) != 0)
		return lsim_diag_set(d, LSIM_EINVAL, arg, 0, 0, "", "cannot open: %s",
				     strerror(errno));
	int len = S_ISDIR(st.st_mode)
			  ? snprintf(run->path, sizeof run->path, "%s/report.h5", arg)
			  : snprintf(run->path, sizeof run->path, "%s", arg);
	if (len < 0 || (size_t)len >= sizeof run->path)
		return lsim_diag_set(d, LSIM_EINVAL, arg, 0, 0, "", "path too long");
	if (stat(run->path, &st) != 0)
		return lsim_diag_set(d, LSIM_EINVAL, run->path, 0, 0, "",
				     "cannot open: %s (a run folder holds the report.h5 "
				     "of `llmsim run -o DIR`)",
				     strerror(errno));
	if (!S_ISREG(st.st_mode))
		return lsim_diag_set(d, LSIM_EINVAL, run->path, 0, 0, "",
				     "not a regular file");
	return 0;
}

static int read_rows(struct cmp_run *run, struct lsim_diag *d)
{
	int rc = 0;
	hid_t f = -1, ds = -1, sp = -1, mt = -1;
	f = H5Fopen(run->path, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (f < 0)
		return lsim_diag_set(d, LSIM_EINVAL, run->path, 0, 0, "",
				     "not an HDF5 file (an llmsim report.h5 is)");
	ds = H5Dopen2(f, "requests", H5P_DEFAULT);
	if (ds < 0) {
		rc = lsim_diag_set(d, LSIM_EINVAL, run->path, 0, 0, "/requests",
				   "no /requests dataset: not an llmsim run report");
		goto out;
	}
	sp = H5Dget_space(ds);
	hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
	if (n < 0) {
		rc = lsim_diag_set(d, LSIM_EINVAL, run->path, 0, 0, "/requests",
				   "cannot read the dataset's size");
		goto out;
	}
	mt = H5Tcreate(H5T_COMPOUND, sizeof(struct cmp_row));
	if (mt < 0 || H5Tinsert(mt, "id", HOFFSET(struct cmp_row, id), H5T_NATIVE_UINT64) < 0 ||
	    H5Tinsert(mt, "arrival", HOFFSET(struct cmp_row, arrival), H5T_NATIVE_DOUBLE) < 0 ||
	    H5Tinsert(mt, "first_token", HOFFSET(struct cmp_row, first_token),
		      H5T_NATIVE_DOUBLE) < 0 ||
	    H5Tinsert(mt, "finish", HOFFSET(struct cmp_row, finish), H5T_NATIVE_DOUBLE) < 0 ||
	    H5Tinsert(mt, "output_tokens", HOFFSET(struct cmp_row, output_tokens),
		      H5T_NATIVE_INT32) < 0 ||
	    H5Tinsert(mt, "status", HOFFSET(struct cmp_row, status), H5T_NATIVE_INT32) < 0) {
		rc = LSIM_ENOMEM;
		goto out;
	}
	run->n = (size_t)n;
	run->rows = calloc(run->n ? run->n : 1, sizeof *run->rows);
	if (!run->rows) {
		rc = LSIM_ENOMEM;
		goto out;
	}
	if (run->n && H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, run->rows) < 0)
		rc = lsim_diag_set(d, LSIM_EINVAL, run->path, 0, 0, "/requests",
				   "cannot read id, arrival, first_token, finish, "
				   "output_tokens and status: not an llmsim run report");
out:
	if (mt >= 0)
		H5Tclose(mt);
	if (sp >= 0)
		H5Sclose(sp);
	if (ds >= 0)
		H5Dclose(ds);
	if (f >= 0)
		H5Fclose(f);
	return rc;
}

static int by_id(const void *x, const void *y)
{
	const struct cmp_row *a = x, *b = y;
	return (a->id > b->id) - (a->id < b->id);
}

/* Reads a run's requests, sorted by id. */
static int load_run(const char *arg, struct cmp_run *run, struct lsim_diag *d)
{
	int rc = find_report(arg, run, d);
	if (rc)
		return rc;
	H5E_auto2_t old_func = NULL;
	void *old_data = NULL;
	H5Eget_auto2(H5E_DEFAULT, &old_func, &old_data);
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	rc = read_rows(run, d);
	H5Eset_auto2(H5E_DEFAULT, old_func, old_data);
	if (rc)
		return rc;
	qsort(run->rows, run->n, sizeof *run->rows, by_id);
	for (size_t i = 1; i < run->n; i++)
		if (run->rows[i].id == run->rows[i - 1].id)
			return lsim_diag_set(d, LSIM_EINVAL, run->path, 0, 0, "/requests",
					     "request id %llu appears twice",
					     (unsigned long long)run->rows[i].id);
	return 0;
}

/* ---- the paired comparison ---- */

enum { CMP_TTFT, CMP_TPOT, CMP_E2E, CMP_N };

struct cmp_metric {
	const char *name;
	size_t n;	       /* pairs: requests with the metric in both runs */
	int32_t batches;       /* used (fewer than asked when n is small) */
	double mean_a, mean_b; /* over the pairs */
	double diff, half;     /* mean of B - A and its 95% half-width */
	double lag1;	       /* lag-1 autocorrelation of the batch means */
};

struct cmp_result {
	size_t n;	/* requests in each run */
	size_t both;	/* finished in both */
	size_t only_a;	/* finished in A only */
	size_t only_b;	/* finished in B only */
	struct cmp_metric m[CMP_N];
};

/* The metric of one finished request; false when it has none. */
static bool metric_of(const struct cmp_row *r, int which, double *x)
{
	if (r->status != LSIM_REQ_FINISHED)
		return false;
	switch (which) {
	case CMP_TTFT:
		*x = r->first_token - r->arrival;
		return r->first_token >= 0.0;
	case CMP_TPOT:
		*x = (r->finish - r->first_token) / (double)(r->output_tokens - 1);
		return r->first_token >= 0.0 && r->output_tokens > 1;
	default: *x = r->finish - r->arrival; return true;
	}
}

struct cmp_pair {
	double arrival;
	uint64_t id;
	double a, b;
};

static int by_arrival(const void *x, const void *y)
{
	const struct cmp_pair *a = x, *b = y;
	if (a->arrival != b->arrival)
		return a->arrival < b->arrival ? -1 : 1;
	return (a->id > b->id) - (a->id < b->id);
}

/* Batch means of the pairs (in arrival order) into m. */
static void batch_means(struct cmp_pair *p, size_t n, int32_t batches, struct cmp_metric *m,
			double *bm)
{
	m->n = n;
	m->batches = 0;
	m->mean_a = m->mean_b = m->diff = m->half = m->lag1 = NAN;
	if (n == 0)
		return;
	qsort(p, n, sizeof *p, by_arrival);
	long double sa = 0, sb = 0;
	for (size_t i = 0; i < n; i++) {
		sa += p[i].a;
		sb += p[i].b;
	}
	m->mean_a = (double)(sa / (long double)n);
	m->mean_b = (double)(sb / (long double)n);
	m->diff = m->mean_b - m->mean_a;
	size_t k = (size_t)batches;
	if (k > n / 2)
		k = n / 2; /* at least two pairs a batch */
	if (k < 2)
		return;
	for (size_t j = 0; j < k; j++) {
		size_t lo = j * n / k, hi = (j + 1) * n / k;
		long double s = 0;
		for (size_t i = lo; i < hi; i++)
			s += p[i].b - p[i].a;
		bm[j] = (double)(s / (long double)(hi - lo));
	}
	m->batches = (int32_t)k;
	m->half = gsl_cdf_tdist_Pinv(0.975, (double)(k - 1)) * gsl_stats_sd(bm, 1, k) /
		  sqrt((double)k);
	m->lag1 = k > 2 ? gsl_stats_lag1_autocorrelation(bm, 1, k) : NAN;
}

static int compare_runs(const struct cmp_run *a, const struct cmp_run *b, int32_t batches,
			struct cmp_result *res, struct lsim_diag *d)
{
	static const char *names[CMP_N] = {"ttft_mean", "tpot_mean", "e2e_mean"};
	if (a->n != b->n)
		return lsim_diag_set(d, LSIM_EINVAL, b->path, 0, 0, "/requests",
				     "%zu requests where %s has %zu: compare needs two runs "
				     "of one workload (the same trace, or the same generator "
				     "and seed)",
				     b->n, a->path, a->n);
	memset(res, 0, sizeof *res);
	res->n = a->n;
	for (size_t i = 0; i < a->n; i++) {
		const struct cmp_row *x = &a->rows[i], *y = &b->rows[i];
		if (x->id != y->id || fabs(x->arrival - y->arrival) > 1e-9)
			return lsim_diag_set(
				d, LSIM_EINVAL, b->path, 0, 0, "/requests",
				"request %llu arrives at %.9g s where %s has request %llu at "
				"%.9g s: compare needs two runs of one workload (the same "
				"trace, or the same generator and seed)",
				(unsigned long long)y->id, y->arrival, a->path,
				(unsigned long long)x->id, x->arrival);
		bool fa = x->status == LSIM_REQ_FINISHED, fb = y->status == LSIM_REQ_FINISHED;
		res->both += fa && fb;
		res->only_a += fa && !fb;
		res->only_b += fb && !fa;
	}
	struct cmp_pair *p = malloc((a->n ? a->n : 1) * sizeof *p);
	double *bm = malloc(((size_t)batches + 1) * sizeof *bm);
	if (!p || !bm) {
		free(p);
		free(bm);
		return LSIM_ENOMEM;
	}
	for (int w = 0; w < CMP_N; w++) {
		size_t n = 0;
		for (size_t i = 0; i < a->n; i++) {
			double xa, xb;
			if (metric_of(&a->rows[i], w, &xa) && metric_of(&b->rows[i], w, &xb))
				p[n++] = (struct cmp_pair){a->rows[i].arrival, a->rows[i].id, xa,
							   xb};
		}
		res->m[w].name = names[w];
		batch_means(p, n, batches, &res->m[w], bm);
	}
	free(p);
	free(bm);
	return 0;
}

/* ---- the command ---- */

static const char usage_compare[] =
	"usage: llmsim compare RUN_A RUN_B [--batches K]\n"
	"\n"
	"Whether two runs of one workload differ in mean TTFT, TPOT and E2E.\n"
	"RUN is a run folder (`llmsim run -o RUN`) or its report.h5. The runs must\n"
	"replay the same requests (the same trace, or the same generator and seed):\n"
	"each request finished in both is a pair, and B - A is the mean of the\n"
	"pairs' differences with a 95% confidence interval from K batch means\n"
	"(default 30) of the pairs in arrival order (Student's t, K - 1 degrees of\n"
	"freedom). `lag-1` is the batch means' autocorrelation: above about 0.3 the\n"
	"batches are too short to be independent; use fewer (--batches). The\n"
	"verdict says which run is lower when the interval excludes 0.\n"
	"docs/sweeps.md, \"Comparing two runs\".\n";

int lsim_cli_compare(int argc, char **argv)
{
	const char *path[2] = {NULL, NULL};
	int32_t batches = 30;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage_compare, stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--batches")) {
			char *end = NULL;
			long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
			if (i + 1 >= argc || end == argv[i + 1] || *end || v < 2 || v > 100000) {
				fprintf(stderr,
					"llmsim: compare: --batches wants a whole number from 2 "
					"to 100000 (default 30)\n");
				return LSIM_EXIT_BADINPUT;
			}
			batches = (int32_t)v;
			i++;
			continue;
		}
		if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "llmsim: compare: unknown option '%s'\n%s", argv[i],
				usage_compare);
			return LSIM_EXIT_BADINPUT;
		}
		if (path[0] && path[1]) {
			fprintf(stderr, "llmsim: compare: three runs given; it compares two\n%s",
				usage_compare);
			return LSIM_EXIT_BADINPUT;
		}
		path[path[0] ? 1 : 0] = argv[i];
	}
	if (!path[1]) {
		fputs(usage_compare, stderr);
		return LSIM_EXIT_BADINPUT;
	}
	struct cmp_run run[2];
	memset(run, 0, sizeof run);
	struct lsim_diag d = {0};
	struct cmp_result res;
	int rc = load_run(path[0], &run[0], &d);
	if (rc == 0)
		rc = load_run(path[1], &run[1], &d);
	if (rc == 0)
		rc = compare_runs(&run[0], &run[1], batches, &res, &d);
	if (rc == 0) {
		printf("A  %s  (%zu requests)\nB  %s  (%zu requests)\n", run[0].path, run[0].n,
		       run[1].path, run[1].n);
		printf("finished in both: %zu; in A only: %zu; in B only: %zu\n", res.both,
		       res.only_a, res.only_b);
		printf("95%% CI from batch means of the pairs in arrival order; times in ms\n\n");
		printf("%-10s %8s %11s %11s %24s %8s %6s  %s\n", "metric", "pairs", "A", "B",
		       "B - A (95% CI)", "B/A - 1", "lag-1", "verdict");
		bool correlated = false;
		for (int w = 0; w < CMP_N; w++) {
			const struct cmp_metric *m = &res.m[w];
			if (m->batches < 2) {
				printf("%-10s %8zu %11s %11s %24s %8s %6s  %s\n", m->name, m->n,
				       "-", "-", "-", "-", "-", "too few pairs");
				continue;
			}
			char ci[64];
			snprintf(ci, sizeof ci, "%+.3f ± %.3f", 1e3 * m->diff, 1e3 * m->half);
			const char *verdict = fabs(m->diff) <= m->half ? "no difference at 95%"
					      : m->diff < 0	       ? "B lower"
								       : "B higher";
			bool corr = m->lag1 > 0.3;
			correlated |= corr;
			printf("%-10s %8zu %11.3f %11.3f %25s %+7.1f%% %6.2f%s %s (%d batches)\n",
			       m->name, m->n, 1e3 * m->mean_a, 1e3 * m->mean_b, ci,
			       m->mean_a != 0 ? 100.0 * (m->mean_b / m->mean_a - 1) : NAN,
			       m->lag1, corr ? "*" : " ", verdict, (int)m->batches);
		}
		if (correlated && batches > 10)
			printf("\n* lag-1 above 0.3: these batches are too short to be independent "
			       "and the interval is too narrow; try fewer, longer ones "
			       "(--batches %d)\n",
			       batches / 3 > 10 ? batches / 3 : 10);
		else if (correlated)
			printf("\n* lag-1 above 0.3: these batches are too short to be independent "
			       "and the interval is too narrow; a longer run gives longer "
			       "batches\n");
	}
	free(run[0].rows);
	free(run[1].rows);
	return rc ? lsim_cli_fail(&d, rc) : 0;
}
