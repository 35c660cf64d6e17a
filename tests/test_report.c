/*
 * test_report.c - the run summary on a hand-made set of requests (values
 * computed by hand, GSL quantiles: linear interpolation at (n-1)f), and the
 * three sinks: the HDF5 report read back with the HDF5 C API (shape,
 * values, attributes, config, no timestamps, byte-identical rewrites,
 * atomic failure), the SQLite database (append, replace) and the CSV files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gsl/gsl_sort.h>
#include <hdf5.h>
#include <hdf5_hl.h>
#include <sqlite3.h>

#include "kernel/digest.h"
#include "report/recstore.h"
#include "report/report.h"

#define EPS 1e-12

static const char config_yaml[] = "seed: 7\nworkload:\n  rate: 2/s\n";

/*
 * Five completed requests and one each rejected, failed and unfinished.
 * Completed: TTFT 0.5 0.2 1.0 0.6 0.3; TPOT 0.2 0.1 0.1 - 0.25 (request 4
 * has one output token); E2E 2.5 2.2 4.0 0.6 1.3; queue wait 0.1 0 0.5
 * 0.2 0.1; output tokens 11+21+31+1+5 = 69; first arrival 0, last finish
 * of a completed request 6.0 (the failed one's 50 must not count).
 */
static const struct lsim_req_record reqs[] = {
	{1, 0.0, 0.1, 0.5, 2.5, 100, 11, 0, 0, LSIM_REQ_FINISHED},
	{2, 1.0, 1.0, 1.2, 3.2, 50, 21, 0, 1, LSIM_REQ_FINISHED},
	{3, 2.0, 2.5, 3.0, 6.0, 10, 31, 1, 2, LSIM_REQ_FINISHED},
	{4, 3.0, 3.2, 3.6, 3.6, 10, 1, 1, 0, LSIM_REQ_FINISHED},
	{5, 4.0, 4.1, 4.3, 5.3, 10, 5, 0, 0, LSIM_REQ_FINISHED},
	{6, 0.5, -1, -1, -1, 20, 7, -1, 0, LSIM_REQ_REJECTED},
	{7, 1.5, 1.6, 2.0, 50.0, 10, 10, 1, 3, LSIM_REQ_FAILED},
	{8, 5.0, 5.5, -1, -1, 10, 10, 0, 0, LSIM_REQ_UNFINISHED},
};
#define N_REQS (sizeof reqs / sizeof reqs[0])

/* GPU-time held (start to stop) 11 x 2 + 12 x 1 = 34 GPU-s; of it busy
 * 5 x 2 + 8 x 1 = 18, work at peak rates 4 x 2 + 6 x 1 = 14; MFU 0.1 over
 * 22 and 0.4 over 12 GPU-s (7 / 34), MBU 0.5 and 0.25 (14 / 34). */
static const struct lsim_inst_record insts[] = {
	{0, "H100-SXM", "llama-3.1-8b", 2, 0.0, 1.0, 11.0, 5.0, 100, 1000, 3,
	 4096, 1000.0, 2.5, .work_s = 4.0, .mfu = 0.1, .mbu = 0.5},
	{1, "A100-80G", "x\"y,z", 1, 0.0, 2.0, 12.0, 8.0, 200, 2000, 0, 2048,
	 500.0, 1.25, .work_s = 6.0, .mfu = 0.4, .mbu = 0.25},
};

static const struct lsim_ts_sample ts[] = {
	{0.5, 0, 0.25, 0.125, 3, 2, 350.0},
	{0.5, 1, 0.0, 0.0, 0, 0, 60.0},
	{1.0, 0, 1.0, 0.5, 1, 4, 700.0},
};

static const char *const model_names[] = {"Llama-3.1-8B"};
static const char *const tenant_names[] = {"alice"};

static struct lsim_results make_results(const char *run_id)
{
	struct lsim_results r;
	memset(&r, 0, sizeof r);
	r.info.run_id = run_id;
	r.info.scenario = "examples/quickstart.yaml";
	r.info.config_yaml = config_yaml;
	r.info.version = LSIM_VERSION;
	r.info.seed = 7;
	r.info.hw_profile = "H100-SXM,A100-80G";
	r.info.hw_source = "datasheet";
	r.info.perf_model = "roofline";
	r.reqs = reqs;
	r.n_reqs = N_REQS;
	r.insts = insts;
	r.n_insts = sizeof insts / sizeof insts[0];
	r.ts = ts;
	r.n_ts = sizeof ts / sizeof ts[0];
	r.model_names = model_names;
	r.n_models = 1;
	r.tenant_names = tenant_names;
	r.n_tenant_names = 1;
	r.summary.sim_events = 1234;
	r.wall_s = 0.25;
	assert_int_equal(lsim_summary_compute(&r), 0);
	return r;
}

static void assert_near(double got, double want)
{
	if (fabs(got - want) > EPS)
		fail_msg("got %.17g, want %.17g", got, want);
}

static void test_summary_values(void **state)
{
	(void)state;
	struct lsim_results r = make_results("run-a");
	const struct lsim_summary *s = &r.summary;
	assert_true(s->requests == 8);
	assert_true(s->completed == 5);
	assert_true(s->rejected == 1);
	assert_true(s->failed == 1);
	assert_true(s->unfinished == 1);
	assert_near(s->makespan_s, 6.0);
	assert_near(s->throughput_rps, 5.0 / 6.0);
	assert_near(s->output_tokens_per_s, 69.0 / 6.0);
	/* TTFT sorted 0.2 0.3 0.5 0.6 1.0: p90 at 3.6 = 0.6 + 0.6*0.4. */
	assert_near(s->ttft_mean_s, 0.52);
	assert_near(s->ttft_p50_s, 0.5);
	assert_near(s->ttft_p90_s, 0.84);
	assert_near(s->ttft_p95_s, 0.92);
	assert_near(s->ttft_p99_s, 0.984);
	/* TPOT sorted 0.1 0.1 0.2 0.25: p50 at 1.5, p90 at 2.7. */
	assert_near(s->tpot_mean_s, 0.1625);
	assert_near(s->tpot_p50_s, 0.15);
	assert_near(s->tpot_p90_s, 0.235);
	assert_near(s->tpot_p95_s, 0.2425);
	assert_near(s->tpot_p99_s, 0.2485);
	/* E2E sorted 0.6 1.3 2.2 2.5 4.0. */
	assert_near(s->e2e_mean_s, 2.12);
	assert_near(s->e2e_p50_s, 2.2);
	assert_near(s->e2e_p90_s, 3.4);
	assert_near(s->e2e_p95_s, 3.7);
	assert_near(s->e2e_p99_s, 3.94);
	assert_near(s->queue_wait_mean_s, 0.18);
	assert_true(s->preemptions == 6); /* all requests, failed included */
	assert_near(s->gpu_util, 14.0 / 34.0);
	assert_near(s->gpu_busy, 18.0 / 34.0);
	assert_near(s->mfu, 7.0 / 34.0);
	assert_near(s->mbu, 14.0 / 34.0);
	assert_near(s->energy_j, 1500.0);
	assert_near(s->cost_usd, 3.75);
	assert_true(s->sim_events == 1234); /* the caller's, untouched */
}

/* SLO attainment only against declared SLOs: requests whose class sets no
 * target (slo_met -1) are left out; with none left it is not defined. Of
 * the eight requests, five are judged and three met: 0.6, and goodput
 * 3 per 6 s of makespan. */
static void test_summary_slo(void **state)
{
	(void)state;
	struct lsim_req_record q[N_REQS];
	memcpy(q, reqs, sizeof q);
	const int32_t met[N_REQS] = {1, 1, 0, -1, -1, 1, 0, -1};
	for (size_t i = 0; i < N_REQS; i++)
		q[i].slo_met = met[i];
	struct lsim_results r;
	memset(&r, 0, sizeof r);
	r.reqs = q;
	r.n_reqs = N_REQS;
	assert_int_equal(lsim_summary_compute(&r), 0);
	assert_near(r.summary.slo_attainment, 0.6);
	assert_near(r.summary.goodput_rps, 0.5);
	for (size_t i = 0; i < N_REQS; i++)
		q[i].slo_met = -1; /* no class declares a target */
	assert_int_equal(lsim_summary_compute(&r), 0);
	assert_true(isnan(r.summary.slo_attainment) && isnan(r.summary.goodput_rps));
	assert_near(r.summary.throughput_rps, 5.0 / 6.0); /* the rest as before */
}

/* No request completed (all rejected): the latencies are undefined, NaN,
 * not 0 s, which would meet every latency bound (issue 29: search took
 * such a run as meeting --slo ttft_p99_s<=...). Failed requests counted. */
static void test_summary_none_completed(void **state)
{
	(void)state;
	struct lsim_req_record q[N_REQS];
	memcpy(q, reqs, sizeof q);
	for (size_t i = 0; i < N_REQS; i++) {
		q[i].status = i % 2 ? LSIM_REQ_REJECTED : LSIM_REQ_FAILED;
		q[i].first_token = q[i].finish = -1;
	}
	struct lsim_results r;
	memset(&r, 0, sizeof r);
	r.reqs = q;
	r.n_reqs = N_REQS;
	assert_int_equal(lsim_summary_compute(&r), 0);
	assert_true(r.summary.completed == 0);
	assert_true(r.summary.failed == N_REQS / 2 && r.summary.rejected == N_REQS / 2);
	const double v[] = {r.summary.ttft_mean_s, r.summary.ttft_p99_s, r.summary.tpot_mean_s,
			    r.summary.tpot_p99_s, r.summary.e2e_mean_s, r.summary.e2e_p50_s,
			    r.summary.queue_wait_mean_s};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		assert_true(isnan(v[i]));
}

/* The run id's hash is libxxhash's XXH64 (seed 0), streamed: the
 * reference values (xxhsum 0.8.1) of "", "abc" and of bytes (131 i + 7)
 * mod 256 for i < n, across the 32-byte stripe, added in pieces of every
 * size. */
static void test_digest_vectors(void **state)
{
	(void)state;
	struct lsim_digest h;
	lsim_digest_init(&h);
	assert_true(lsim_digest_value(&h) == 0xef46db3751d8e999ULL);
	lsim_digest_add(&h, "abc", 3);
	assert_true(lsim_digest_value(&h) == 0x44bc2cf5ad770999ULL);
	unsigned char buf[1000];
	for (int i = 0; i < 1000; i++)
		buf[i] = (unsigned char)(i * 131 + 7);
	const struct {
		size_t n;
		uint64_t want;
	} v[] = {{31, 0x6711d55e306b5d8fULL}, {32, 0x07f7b8e3bc5d6e25ULL},
		 {33, 0x09f85eeb4e1cbe9fULL}, {100, 0x9ddada11d3dc2d8fULL},
		 {1000, 0x0bf0bdbcc82eb373ULL}};
	for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
		for (size_t piece = 1; piece <= 40; piece++) {
			lsim_digest_init(&h);
			for (size_t at = 0; at < v[k].n; at += piece)
				lsim_digest_add(&h, buf + at,
						piece < v[k].n - at ? piece : v[k].n - at);
			assert_true(lsim_digest_value(&h) == v[k].want);
		}
}

/* An instance's rates over the GPU-time it held: tp 2 x pp 2 GPUs from 1
 * s to 11 s are 40 GPU-s; work 5 s per GPU of a stage is 10 GPU-s (0.25),
 * busy 8 of 10 s; 4e15 FLOPs at 1e15 FLOP/s peak (0.1), 2e13 B at 1e12
 * B/s (0.5). Without a model (no peaks) MFU and MBU are not defined, and
 * the summary weighs the others' by their GPU-time. */
static void test_instance_rates(void **state)
{
	(void)state;
	struct lsim_inst_record o = {.tp = 2, .pp = 2, .start = 1.0, .ready = 3.0,
				     .stop = 11.0, .busy_s = 8.0, .work_s = 5.0,
				     .model_flops = 4e15, .hbm_bytes = 2e13};
	lsim_inst_record_rates(&o, 1e15, 1e12);
	assert_near(o.gpu_util, 0.25);
	assert_near(o.gpu_busy, 0.8);
	assert_near(o.mfu, 0.1);
	assert_near(o.mbu, 0.5);
	struct lsim_inst_record svc = o;
	lsim_inst_record_rates(&svc, 0, 0);
	assert_true(isnan(svc.mfu) && isnan(svc.mbu));
	assert_near(svc.gpu_util, 0.25);
	struct lsim_inst_record never = o; /* stopped before it started */
	never.stop = never.start;
	lsim_inst_record_rates(&never, 1e15, 1e12);
	assert_true(never.gpu_util == 0 && never.gpu_busy == 0 && never.mfu == 0);

	struct lsim_inst_record two[2] = {o, svc};
	two[1].tp = 1;
	two[1].pp = 1; /* 10 GPU-s without a model */
	struct lsim_results r;
	memset(&r, 0, sizeof r);
	r.insts = two;
	r.n_insts = 2;
	assert_int_equal(lsim_summary_compute(&r), 0);
	assert_near(r.summary.mfu, 0.1); /* over the 40 GPU-s with a model */
	assert_near(r.summary.gpu_util, (5.0 * 2 + 5.0) / 50.0);
	r.n_insts = 1;
	r.insts = &two[1];
	assert_int_equal(lsim_summary_compute(&r), 0);
	assert_true(isnan(r.summary.mfu) && isnan(r.summary.mbu));
}

/* The summary's sort gives gsl_sort's array, bit for bit: random
 * latencies, many ties (+0 among them), both signs, small and subnormal
 * values, every length up to 300 (the insertion sort and the buckets'
 * edges) and one of 10^6. (-0 and +0 are the one pair of equal values
 * with different bits: gsl_sort leaves them in any order, this sort puts
 * -0 first; a latency is never -0.) */
static void test_sort_doubles(void **state)
{
	(void)state;
	uint64_t s = 0x9e3779b97f4a7c15u;
	size_t cap = 1000000;
	double *a = malloc(cap * sizeof *a), *b = malloc(cap * sizeof *b);
	assert_non_null(a);
	assert_non_null(b);
	for (size_t n = 0; n <= cap; n = n < 300 ? n + 1 : (n == 300 ? cap : cap + 1)) {
		for (size_t i = 0; i < n; i++) {
			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
			double u = (double)(s >> 11) / 9007199254740992.0;
			switch (i % 5) {
			case 0: a[i] = u * 30.0; break;			  /* seconds */
			case 1: a[i] = (double)(s % 7) * 0.25; break;	  /* ties */
			case 2: a[i] = (u - 0.5) * 1e6; break;		  /* both signs */
			case 3: a[i] = u * 1e-310; break;		  /* subnormal */
			default: a[i] = -(double)(s % 3 + 1); break;	  /* -3 .. -1 */
			}
			b[i] = a[i];
		}
		lsim_sort_doubles(a, n);
		gsl_sort(b, 1, n);
		assert_memory_equal(a, b, n * sizeof *a);
	}
	free(a);
	free(b);
}

static void test_summary_empty(void **state)
{
	(void)state;
	struct lsim_results r;
	memset(&r, 0, sizeof r);
	r.summary.ttft_p99_s = 9; /* stale values are overwritten */
	r.summary.sim_events = 3;
	assert_int_equal(lsim_summary_compute(&r), 0);
	assert_true(r.summary.requests == 0);
	assert_true(r.summary.makespan_s == 0);
	assert_true(r.summary.throughput_rps == 0);
	assert_true(isnan(r.summary.ttft_p99_s)); /* undefined: none completed */
	assert_true(r.summary.gpu_util == 0);
	assert_true(r.summary.gpu_busy == 0 && r.summary.mfu == 0 && r.summary.mbu == 0);
	assert_true(r.summary.sim_events == 3);
	assert_int_equal(lsim_summary_compute(NULL), LSIM_EINVAL);
}

/* --- temporary folder ---------------------------------------------------- */

static int make_tmpdir(void **state)
{
	char *dir = strdup("/tmp/lsim-report-XXXXXX");
	if (!dir || !mkdtemp(dir)) {
		free(dir);
		return -1;
	}
	*state = dir;
	return 0;
}

static int remove_tmpdir(void **state)
{
	char *dir = *state;
	DIR *dp = opendir(dir);
	if (dp) {
		struct dirent *e;
		char p[512];
		while ((e = readdir(dp)) != NULL) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
			if (remove(p) != 0)
				rmdir(p);
		}
		closedir(dp);
	}
	rmdir(dir);
	free(dir);
	return 0;
}

static void join(char *out, size_t size, const char *dir, const char *name)
{
	snprintf(out, size, "%s/%s", dir, name);
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* Fails if any file in dir ends in ".tmp". */
static void assert_no_tmp(const char *dir)
{
	DIR *dp = opendir(dir);
	assert_non_null(dp);
	struct dirent *e;
	while ((e = readdir(dp)) != NULL) {
		size_t n = strlen(e->d_name);
		if (n >= 4 && !strcmp(e->d_name + n - 4, ".tmp")) {
			closedir(dp);
			fail_msg("temporary file left behind: %s", e->d_name);
		}
	}
	closedir(dp);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* --- HDF5 ---------------------------------------------------------------- */

static hsize_t rows_of(hid_t file, const char *name)
{
	hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
	assert_true(ds >= 0);
	hid_t sp = H5Dget_space(ds);
	assert_int_equal(H5Sget_simple_extent_ndims(sp), 1);
	hsize_t n = 0;
	H5Sget_simple_extent_dims(sp, &n, NULL);
	H5Sclose(sp);
	H5Dclose(ds);
	return n;
}

static void assert_untimed(hid_t file, const char *name)
{
	H5O_info_t oi;
	assert_true(H5Oget_info_by_name2(file, name, &oi, H5O_INFO_TIME,
					 H5P_DEFAULT) >= 0);
	if (oi.mtime != 0 || oi.ctime != 0)
		fail_msg("%s stores a modification time", name);
}

static void test_h5_readback(void **state)
{
	const char *dir = *state;
	char path[512];
	join(path, sizeof path, dir, "report.h5");
	struct lsim_results r = make_results("run-a");
	struct lsim_diag d = {0};
	assert_int_equal(lsim_report_h5_write(path, &r, &d), 0);
	assert_no_tmp(dir);

	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	assert_true(f >= 0);
	assert_int_equal(rows_of(f, "requests"), N_REQS);
	assert_int_equal(rows_of(f, "instances"), 2);
	assert_int_equal(rows_of(f, "timeseries"), 3);
	assert_int_equal(rows_of(f, "summary"), 1);
	assert_int_equal(rows_of(f, "summary_units"), 1);

	/* A subset of /requests columns, selected by field name. */
	struct qrow {
		uint64_t id;
		double finish;
		int32_t status;
	} q[N_REQS];
	hid_t qt = H5Tcreate(H5T_COMPOUND, sizeof(struct qrow));
	H5Tinsert(qt, "id", offsetof(struct qrow, id), H5T_NATIVE_UINT64);
	H5Tinsert(qt, "finish", offsetof(struct qrow, finish), H5T_NATIVE_DOUBLE);
	H5Tinsert(qt, "status", offsetof(struct qrow, status), H5T_NATIVE_INT32);
	hid_t ds = H5Dopen2(f, "requests", H5P_DEFAULT);
	assert_true(H5Dread(ds, qt, H5S_ALL, H5S_ALL, H5P_DEFAULT, q) >= 0);
	hid_t dcpl = H5Dget_create_plist(ds);
	assert_int_equal(H5Pget_layout(dcpl), H5D_CHUNKED);
	H5Pclose(dcpl);
	H5Dclose(ds);
	H5Tclose(qt);
	assert_int_equal(q[2].id, 3);
	assert_true(q[2].finish == 6.0);
	assert_int_equal(q[6].status, LSIM_REQ_FAILED);
	assert_true(q[7].finish == -1.0);

	/* A string column of /instances. */
	struct irow {
		char model[64];
		int64_t kv_blocks;
	} in[2];
	hid_t s64 = H5Tcopy(H5T_C_S1);
	H5Tset_size(s64, 64);
	hid_t it = H5Tcreate(H5T_COMPOUND, sizeof(struct irow));
	H5Tinsert(it, "model", offsetof(struct irow, model), s64);
	H5Tinsert(it, "kv_blocks", offsetof(struct irow, kv_blocks),
		  H5T_NATIVE_INT64);
	ds = H5Dopen2(f, "instances", H5P_DEFAULT);
	assert_true(H5Dread(ds, it, H5S_ALL, H5S_ALL, H5P_DEFAULT, in) >= 0);
	H5Dclose(ds);
	H5Tclose(it);
	H5Tclose(s64);
	assert_string_equal(in[0].model, "llama-3.1-8b");
	assert_string_equal(in[1].model, "x\"y,z");
	assert_int_equal(in[1].kv_blocks, 2048);

	/* The summary row, an attribute of /summary and a unit. */
	double completed = 0, p90 = 0;
	hid_t st = H5Tcreate(H5T_COMPOUND, sizeof(double));
	H5Tinsert(st, "completed", 0, H5T_NATIVE_DOUBLE);
	ds = H5Dopen2(f, "summary", H5P_DEFAULT);
	assert_true(H5Dread(ds, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, &completed) >= 0);
	H5Tclose(st);
	hid_t a = H5Aopen(ds, "ttft_p90_s", H5P_DEFAULT);
	assert_true(a >= 0);
	assert_true(H5Aread(a, H5T_NATIVE_DOUBLE, &p90) >= 0);
	H5Aclose(a);
	H5Dclose(ds);
	assert_true(completed == 5.0);
	assert_true(p90 == r.summary.ttft_p90_s);
	assert_near(p90, 0.84);
	char unit[8] = "?";
	hid_t s8 = H5Tcopy(H5T_C_S1);
	H5Tset_size(s8, 8);
	hid_t ut = H5Tcreate(H5T_COMPOUND, 8);
	H5Tinsert(ut, "cost_usd", 0, s8);
	ds = H5Dopen2(f, "summary_units", H5P_DEFAULT);
	assert_true(H5Dread(ds, ut, H5S_ALL, H5S_ALL, H5P_DEFAULT, unit) >= 0);
	H5Dclose(ds);
	H5Tclose(ut);
	H5Tclose(s8);
	assert_string_equal(unit, "USD");

	/* Config and provenance. */
	char text[256] = "";
	assert_true(H5LTread_dataset_string(f, "config", text) >= 0);
	assert_string_equal(text, config_yaml);
	assert_true(H5LTget_attribute_string(f, "provenance", "run_id", text) >= 0);
	assert_string_equal(text, "run-a");
	assert_true(H5LTget_attribute_string(f, "provenance", "perf_model", text) >= 0);
	assert_string_equal(text, "roofline");
	uint64_t seed = 0;
	a = H5Aopen_by_name(f, "provenance", "seed", H5P_DEFAULT, H5P_DEFAULT);
	assert_true(a >= 0);
	assert_true(H5Aread(a, H5T_NATIVE_UINT64, &seed) >= 0);
	H5Aclose(a);
	assert_int_equal(seed, 7);

	/* No object stores a time: that is what makes rewrites identical. */
	static const char *const objs[] = {"/", "requests", "instances",
					   "timeseries", "summary",
					   "summary_units", "config",
					   "provenance"};
	for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++)
		assert_untimed(f, objs[i]);
	H5Fclose(f);
}

static void test_h5_identical(void **state)
{
	const char *dir = *state;
	char p1[512], p2[512];
	join(p1, sizeof p1, dir, "a.h5");
	join(p2, sizeof p2, dir, "b.h5");
	struct lsim_results r = make_results("run-a");
	struct lsim_diag d = {0};
	assert_int_equal(lsim_report_h5_write(p1, &r, &d), 0);
	assert_int_equal(lsim_report_h5_write(p2, &r, &d), 0);
	size_t n1, n2;
	char *b1 = slurp(p1, &n1), *b2 = slurp(p2, &n2);
	assert_true(n1 > 0);
	assert_int_equal(n1, n2);
	assert_memory_equal(b1, b2, n1);
	/* Overwriting an existing report replaces it with the same bytes. */
	assert_int_equal(lsim_report_h5_write(p1, &r, &d), 0);
	free(b1);
	b1 = slurp(p1, &n1);
	assert_int_equal(n1, n2);
	assert_memory_equal(b1, b2, n1);
	free(b1);
	free(b2);
	assert_no_tmp(dir);
}

/* The sliding window: 10,000 records through a window of 64, ending out
 * of order within 20 of each other, every 97th one long after its index
 * left the window; every record reads back as put, from any offset. */
static void test_store_window(void **state)
{
	(void)state;
	enum { N = 10000 };
	struct lsim_recstore *st = lsim_recstore_create(64);
	assert_non_null(st);
	struct lsim_req_record *want = calloc(N, sizeof *want);
	struct lsim_req_record *got = calloc(N, sizeof *got);
	assert_non_null(want);
	assert_non_null(got);
	for (size_t i = 0; i < N; i++) {
		want[i].id = i;
		want[i].arrival = 0.5 * (double)i;
		want[i].finish = (double)i + 1;
	}
	/* blocks of 20 put backwards; stragglers after the next 500 */
	for (size_t b = 0; b < N; b += 20) {
		for (size_t k = 20; k-- > 0;) {
			size_t i = b + k;
			if (i % 97 != 0)
				assert_int_equal(lsim_recstore_put(st, i, &want[i]), 0);
		}
		if (b >= 500)
			for (size_t i = b - 500; i < b - 480; i++)
				if (i % 97 == 0)
					assert_int_equal(lsim_recstore_put(st, i, &want[i]), 0);
	}
	for (size_t i = N - 500; i < N; i++)
		if (i % 97 == 0)
			assert_int_equal(lsim_recstore_put(st, i, &want[i]), 0);
	assert_int_equal(lsim_recstore_count(st), N);
	assert_null(lsim_recstore_array(st));
	assert_int_equal(lsim_recstore_read(st, 0, N, got), 0);
	assert_memory_equal(got, want, N * sizeof *got);
	assert_int_equal(lsim_recstore_read(st, 9990, 10, got), 0); /* in the window */
	assert_memory_equal(got, want + 9990, 10 * sizeof *got);
	assert_int_equal(lsim_recstore_read(st, 4321, 3000, got), 0); /* across */
	assert_memory_equal(got, want + 4321, 3000 * sizeof *got);
	free(want);
	free(got);
	lsim_recstore_destroy(st);
}

/* Records held by a store that spilled to disk (a long run) read back the
 * same, give the same summary and the same HDF5 bytes as the array. */
static void test_spilled_store(void **state)
{
	const char *dir = *state;
	struct lsim_recstore *st = lsim_recstore_create(3);
	assert_non_null(st);
	/* put out of order, as requests end */
	for (size_t k = N_REQS; k-- > 0;)
		assert_int_equal(lsim_recstore_put(st, k, &reqs[k]), 0);
	assert_int_equal(lsim_recstore_count(st), N_REQS);
	assert_null(lsim_recstore_array(st)); /* spilled */
	struct lsim_req_record back[N_REQS];
	assert_int_equal(lsim_recstore_read(st, 0, N_REQS, back), 0);
	assert_memory_equal(back, reqs, sizeof back);
	assert_int_equal(lsim_recstore_read(st, 5, N_REQS, back), LSIM_ERANGE);

	struct lsim_results a = make_results("run-a"), b = a;
	b.reqs = NULL;
	b.req_store = st;
	assert_int_equal(lsim_summary_compute(&a), 0);
	assert_int_equal(lsim_summary_compute(&b), 0);
	assert_memory_equal(&a.summary, &b.summary, sizeof a.summary);
	char p1[512], p2[512];
	join(p1, sizeof p1, dir, "a.h5");
	join(p2, sizeof p2, dir, "b.h5");
	struct lsim_diag d = {0};
	assert_int_equal(lsim_report_h5_write(p1, &a, &d), 0);
	assert_int_equal(lsim_report_h5_write(p2, &b, &d), 0);
	size_t n1, n2;
	char *b1 = slurp(p1, &n1), *b2 = slurp(p2, &n2);
	assert_int_equal(n1, n2);
	assert_memory_equal(b1, b2, n1);
	free(b1);
	free(b2);
	lsim_recstore_destroy(st);
}

static void test_h5_failures(void **state)
{
	const char *dir = *state;
	struct lsim_results r = make_results("run-a");
	char path[512];
	struct lsim_diag d = {0};

	/* The folder does not exist: nothing can be created. */
	join(path, sizeof path, dir, "missing/report.h5");
	assert_int_equal(lsim_report_h5_write(path, &r, &d), LSIM_EIO);
	assert_string_equal(d.file, path);
	assert_true(strlen(d.msg) > 0);
	assert_false(exists(path));

	/* The target is a folder: the file is written, the rename fails and
	 * the temporary file is removed. */
	join(path, sizeof path, dir, "taken.h5");
	assert_int_equal(mkdir(path, 0700), 0);
	memset(&d, 0, sizeof d);
	assert_int_equal(lsim_report_h5_write(path, &r, &d), LSIM_EIO);
	assert_string_equal(d.file, path);
	assert_no_tmp(dir);
	assert_int_equal(rmdir(path), 0);
}

/* --- SQLite -------------------------------------------------------------- */

static long long count(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	long long n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

static double scalar(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	double v = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void test_sqlite(void **state)
{
	const char *dir = *state;
	char path[512];
	join(path, sizeof path, dir, "results.sqlite");
	long long n_metrics = 0;
#define LSIM_X_COUNT(name, unit, help) n_metrics++;
	LSIM_SUMMARY_FIELDS(LSIM_X_COUNT)
#undef LSIM_X_COUNT
	assert_true(n_metrics == 59);

	struct lsim_diag d = {0};
	struct lsim_results a = make_results("run-a");
	struct lsim_results b = make_results("run-b");
	b.info.seed = 8;
	b.summary.mfu = NAN; /* not defined: stored as NULL */
	assert_int_equal(lsim_report_sqlite_append(path, &a, &d), 0);
	assert_int_equal(lsim_report_sqlite_append(path, &b, &d), 0);

	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
			 SQLITE_OK);
	assert_int_equal(count(db, "SELECT COUNT(*) FROM runs"), 2);
	assert_int_equal(count(db, "SELECT COUNT(*) FROM metrics"), 2 * n_metrics);
	assert_int_equal(count(db, "SELECT seed FROM runs WHERE run_id='run-b'"), 8);
	assert_int_equal(count(db, "SELECT COUNT(*) FROM runs WHERE status='done'"
				   " AND config_yaml LIKE 'seed: 7%'"), 2);
	assert_near(scalar(db, "SELECT value FROM metrics WHERE run_id='run-a'"
			       " AND name='ttft_p90_s' AND unit='s'"), 0.84);
	assert_near(scalar(db, "SELECT wall_s FROM runs WHERE run_id='run-a'"), 0.25);
	assert_int_equal(count(db, "SELECT COUNT(*) FROM metrics WHERE run_id='run-b'"
				   " AND name='mfu' AND value IS NULL"), 1);
	assert_near(scalar(db, "SELECT value FROM metrics WHERE run_id='run-a'"
			       " AND name='mfu'"), 7.0 / 34.0);
	sqlite3_close(db);

	/* The same run id again replaces its rows. */
	a.summary.ttft_p90_s = 1.5;
	assert_int_equal(lsim_report_sqlite_append(path, &a, &d), 0);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
			 SQLITE_OK);
	assert_int_equal(count(db, "SELECT COUNT(*) FROM runs"), 2);
	assert_int_equal(count(db, "SELECT COUNT(*) FROM metrics"), 2 * n_metrics);
	assert_near(scalar(db, "SELECT value FROM metrics WHERE run_id='run-a'"
			       " AND name='ttft_p90_s'"), 1.5);
	sqlite3_close(db);

	/* A database that cannot be created. */
	join(path, sizeof path, dir, "missing/results.sqlite");
	assert_int_equal(lsim_report_sqlite_append(path, &a, &d), LSIM_EIO);
	assert_string_equal(d.file, path);
}

/* --- CSV ----------------------------------------------------------------- */

/* Returns line k (0-based) of text, without its newline, in buf. */
static const char *line_of(const char *text, int k, char *buf, size_t size)
{
	for (int i = 0; i < k && text; i++) {
		text = strchr(text, '\n');
		if (text)
			text++;
	}
	assert_non_null(text);
	size_t n = strcspn(text, "\n");
	assert_true(n < size);
	memcpy(buf, text, n);
	buf[n] = '\0';
	return buf;
}

static void check_csv(const char *dir, const char *name, int k,
		      const char *want)
{
	char path[512], line[512];
	join(path, sizeof path, dir, name);
	size_t n;
	char *text = slurp(path, &n);
	assert_string_equal(line_of(text, k, line, sizeof line), want);
	free(text);
}

static void test_csv(void **state)
{
	const char *dir = *state;
	struct lsim_results r = make_results("run-a");
	struct lsim_diag d = {0};
	assert_int_equal(lsim_report_csv_write(dir, &r, &d), 0);
	assert_no_tmp(dir);
	check_csv(dir, "requests.csv", 0,
		  "id,arrival,first_scheduled,first_token,finish,prompt_tokens,"
		  "output_tokens,instance,preemptions,status,qos_class,"
		  "predicted_output,reject_reason,slo_met,tenant,model,prefill_instance,"
		  "gpu_time_s,gpu_util_mean,gpu_util_max,kv_peak_bytes");
	check_csv(dir, "requests.csv", 1, "1,0,0.1,0.5,2.5,100,11,0,0,0,0,0,0,0,0,0,0,0,0,0,0");
	check_csv(dir, "requests.csv", 6, "6,0.5,-1,-1,-1,20,7,-1,0,1,0,0,0,0,0,0,0,0,0,0,0");
	/* the names behind the model and tenant columns */
	check_csv(dir, "labels.csv", 0, "column,index,name");
	check_csv(dir, "labels.csv", 1, "model,0,Llama-3.1-8B");
	check_csv(dir, "labels.csv", 2, "tenant,0,alice");
	check_csv(dir, "instances.csv", 0,
		  "id,gpu,model,tp,node,start,ready,stop,busy_s,iterations,tokens,"
		  "preemptions,kv_blocks,energy_j,cost_usd,prompt_tokens,"
		  "prefix_hit_tokens,swaps,swap_bytes,role,kv_sent_bytes,failed_at,carbon_g,"
		  "pp,pp_bytes,work_s,spot,gpu_util,gpu_busy,model_flops,hbm_bytes,mfu,mbu");
	check_csv(dir, "instances.csv", 2,
		  "1,A100-80G,\"x\"\"y,z\",1,0,0,2,12,8,200,2000,0,2048,500,1.25,0,0,0,0,0,0,0,0,0,0,6,0,"
		  "0,0,0,0,0.4,0.25");
	check_csv(dir, "timeseries.csv", 0,
		  "t,instance,gpu_busy,kv_util,queue_len,running,power_w,arrival_rate,gpu_util");
	check_csv(dir, "timeseries.csv", 1, "0.5,0,0.25,0.125,3,2,350,0,0");
	check_csv(dir, "summary.csv", 0, "name,value,unit");
	check_csv(dir, "summary.csv", 1, "requests,8,");
	check_csv(dir, "summary.csv", 11, "ttft_p50_s,0.5,s");
	/* 5/6 needs 16 digits to read back exactly (15 are not enough). */
	check_csv(dir, "summary.csv", 8, "throughput_rps,0.8333333333333334,1/s");

	char path[512];
	join(path, sizeof path, dir, "missing");
	assert_int_equal(lsim_report_csv_write(path, &r, &d), LSIM_EIO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_summary_values),
		cmocka_unit_test(test_summary_empty),
		cmocka_unit_test(test_instance_rates),
		cmocka_unit_test(test_summary_slo),
		cmocka_unit_test(test_summary_none_completed),
		cmocka_unit_test(test_digest_vectors),
		cmocka_unit_test(test_sort_doubles),
		cmocka_unit_test_setup_teardown(test_h5_readback, make_tmpdir,
						remove_tmpdir),
		cmocka_unit_test_setup_teardown(test_h5_identical, make_tmpdir,
						remove_tmpdir),
		cmocka_unit_test(test_store_window),
		cmocka_unit_test_setup_teardown(test_spilled_store, make_tmpdir,
						remove_tmpdir),
		cmocka_unit_test_setup_teardown(test_h5_failures, make_tmpdir,
						remove_tmpdir),
		cmocka_unit_test_setup_teardown(test_sqlite, make_tmpdir,
						remove_tmpdir),
		cmocka_unit_test_setup_teardown(test_csv, make_tmpdir,
						remove_tmpdir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
