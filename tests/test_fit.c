/*
 * test_fit.c - unit tests of the calibration fits and files
 * (calibrate/fit.c): repetition statistics; the host-link, interference and
 * GEMM-efficiency fits recovering known parameters from exact and from
 * +-1% noisy synthetic data; the curves' closed-form values; the raw CSV
 * written and read back; the recorded synthetic table
 * (tests/data/calib/synthetic.csv) fitted end to end, saturated contention
 * points left out; the profile writer's output loaded by the simulator's
 * own loader (sim/cluster/hw.c), with and without a base profile; and bad raw
 * files reported with file, line, column and key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fit.h"
#include "cluster/hw.h"

/* |x - want| <= tol |want| */
static bool near(double x, double want, double tol)
{
	bool ok = fabs(x - want) <= tol * fabs(want);
	if (!ok)
		fprintf(stderr, "got %.12g, want %.12g (tolerance %g)\n", x, want, tol);
	return ok;
}

#define REL(x, want, tol) assert_true(near((x), (want), (tol)))

/* The +-1% deterministic noise factor used by the synthetic data. */
static double noise(int i)
{
	return 1.0 + 0.01 * sin(1.7 * i + 0.3);
}

static const char *source_root(void)
{
	const char *r = getenv("LSIM_SOURCE_ROOT");
	return r ? r : ".";
}

/* A fresh folder under the build tree for written files. */
static void tmp_dir(char *buf, size_t size)
{
	const char *b = getenv("LSIM_BUILD_ROOT");
	snprintf(buf, size, "%s/test_fit_XXXXXX", b ? b : ".");
	assert_non_null(mkdtemp(buf));
}

static void test_stats(void **state)
{
	(void)state;
	double s[] = {5, 1, 4, 2, 3};
	struct lsim_calib_row r;
	lsim_calib_row_clear(&r);
	assert_true(isnan(r.median_s) && isnan(r.size));
	lsim_calib_stats(s, 5, &r);
	assert_true(r.reps == 5);
	assert_true(r.min_s == 1);
	assert_true(r.median_s == 3);
	/* GSL quantile: rank (n - 1) f = 0.4 -> 1 + 0.4 (2 - 1) */
	REL(r.p10_s, 1.4, 1e-12);
	REL(r.p90_s, 4.6, 1e-12);
	assert_true(s[0] == 1 && s[4] == 5); /* sorted in place */
	double even[] = {4, 1, 3, 2};
	lsim_calib_stats(even, 4, &r);
	assert_true(r.median_s == 2.5);
}

static void test_transfer(void **state)
{
	(void)state;
	double size[10], t[10];
	for (int i = 0; i < 10; i++) {
		size[i] = 4096.0 * pow(4, i);
		t[i] = 10e-6 + size[i] / 25e9;
	}
	struct lsim_transfer_fit f;
	struct lsim_diag d;
	assert_int_equal(lsim_fit_transfer(size, t, 10, &f, &d), 0);
	REL(f.latency_s, 10e-6, 1e-9);
	REL(f.bandwidth, 25e9, 1e-9);
	assert_true(f.rms_rel < 1e-12);
	assert_int_equal(f.n, 10);
	/* +-1% noise: both parameters within 2% */
	for (int i = 0; i < 10; i++)
		t[i] *= noise(i);
	assert_int_equal(lsim_fit_transfer(size, t, 10, &f, &d), 0);
	REL(f.latency_s, 10e-6, 0.02);
	REL(f.bandwidth, 25e9, 0.02);
	assert_true(f.rms_rel > 0.001 && f.rms_rel < 0.011);
	/* one size only; times shrinking with size */
	double one[] = {4096, 4096}, t1[] = {1e-5, 1.1e-5};
	assert_int_equal(lsim_fit_transfer(one, t1, 2, &f, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "transfer");
	double sz2[] = {4096, 1 << 20}, t2[] = {2e-5, 1e-5};
	assert_int_equal(lsim_fit_transfer(sz2, t2, 2, &f, &d), LSIM_EINVAL);
	double t3[] = {0, 1e-5};
	assert_int_equal(lsim_fit_transfer(sz2, t3, 2, &f, &d), LSIM_EINVAL);
}

static void test_interference(void **state)
{
	(void)state;
	REL(lsim_pcie_slowdown(0.3, 1.5, 0.5), 1.0 + 0.15 * 2.0 * sqrt(2.0), 1e-12);
	REL(lsim_pcie_slowdown(0.3, 1.5, 1.5), 298.0, 1e-9); /* u clamped to 0.99 */
	assert_true(lsim_pcie_slowdown(0.3, 1.5, -0.2) == 1.0);
	assert_true(lsim_pcie_slowdown(0.3, 1.5, 0) == 1.0);
	double u[10], s[10];
	for (int i = 0; i < 10; i++) {
		u[i] = i / 10.0;
		s[i] = lsim_pcie_slowdown(0.3, 1.5, u[i]);
	}
	struct lsim_interference_fit f;
	struct lsim_diag d;
	assert_int_equal(lsim_fit_interference(u, s, 10, &f, &d), 0);
	REL(f.a, 0.3, 1e-6);
	REL(f.b, 1.5, 1e-6);
	assert_true(f.rms_rel < 1e-9);
	for (int i = 0; i < 10; i++)
		s[i] *= noise(i);
	assert_int_equal(lsim_fit_interference(u, s, 10, &f, &d), 0);
	REL(f.a, 0.3, 0.02);
	REL(f.b, 1.5, 0.02);
	assert_true(f.rms_rel > 0.001 && f.rms_rel < 0.011);
	/* u = 1 is outside; one loaded point is not a curve */
	u[3] = 1.0;
	assert_int_equal(lsim_fit_interference(u, s, 10, &f, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "interference");
	double u2[] = {0, 0.5}, s2[] = {1, 1.4};
	assert_int_equal(lsim_fit_interference(u2, s2, 2, &f, &d), LSIM_EINVAL);
}

static void test_efficiency(void **state)
{
	(void)state;
	assert_true(lsim_gemm_efficiency(0.8, 256, 256) == 0.4);
	REL(lsim_gemm_efficiency(0.8, 256, 768), 0.6, 1e-15);
	assert_true(lsim_gemm_efficiency(0.8, 256, 0) == 0);
	double m[14], e[14];
	for (int i = 0; i < 14; i++) {
		m[i] = pow(2, i);
		e[i] = lsim_gemm_efficiency(0.8, 256, m[i]);
	}
	struct lsim_efficiency_fit f;
	struct lsim_diag d;
	assert_int_equal(lsim_fit_efficiency(m, e, 14, &f, &d), 0);
	REL(f.e_max, 0.8, 1e-6);
	REL(f.m_half, 256, 1e-6);
	for (int i = 0; i < 14; i++)
		e[i] *= noise(i);
	assert_int_equal(lsim_fit_efficiency(m, e, 14, &f, &d), 0);
	REL(f.e_max, 0.8, 0.02);
	REL(f.m_half, 256, 0.02);
	assert_true(f.rms_rel > 0.001 && f.rms_rel < 0.011);
	/* any scale: FLOP/s in, FLOP/s out */
	for (int i = 0; i < 14; i++)
		e[i] = lsim_gemm_efficiency(791.2e12, 256, m[i]);
	assert_int_equal(lsim_fit_efficiency(m, e, 14, &f, &d), 0);
	REL(f.e_max, 791.2e12, 1e-6);
	e[2] = 0;
	assert_int_equal(lsim_fit_efficiency(m, e, 14, &f, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "efficiency");
}

static void load_synthetic(struct lsim_calib_raw *raw)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/tests/data/calib/synthetic.csv",
		 source_root());
	struct lsim_diag d;
	lsim_calib_raw_init(raw);
	int rc = lsim_calib_raw_load(path, raw, &d);
	if (rc)
		fprintf(stderr, "%s:%d: %s: %s\n", d.file, d.line, d.key, d.msg);
	assert_int_equal(rc, 0);
}

static void test_synthetic_table(void **state)
{
	(void)state;
	struct lsim_calib_raw raw;
	load_synthetic(&raw);
	assert_int_equal(raw.n_meta, 20);
	assert_int_equal(raw.n_rows, 181);
	assert_string_equal(lsim_calib_raw_meta(&raw, "gpu_name"),
			    "Synthetic GPU, \"test\" data");
	assert_null(lsim_calib_raw_meta(&raw, "no_such_key"));
	struct lsim_calib_fit fit;
	struct lsim_diag d;
	assert_int_equal(lsim_calib_fit_raw(&raw, &fit, &d), 0);
	/* generated with (10 us, 25 GB/s), (8 us, 26 GB/s), (20 us, 12 GB/s), (22 us, 11 GB/s) */
	static const double lat[] = {10e-6, 8e-6, 20e-6, 22e-6};
	static const double bw[] = {25e9, 26e9, 12e9, 11e9};
	for (int k = 0; k < LSIM_XFER_N; k++) {
		assert_true(fit.have_xfer[k]);
		REL(fit.xfer[k].latency_s, lat[k], 0.02);
		REL(fit.xfer[k].bandwidth, bw[k], 0.02);
	}
	assert_true(fit.have_bidir);
	REL(fit.bidir_bw, 40e9, 0.02);
	/* 9 paced + 6 contention points under 0.98 + 2 baselines; the two
	 * saturated rows (off the curve on purpose) are left out */
	assert_true(fit.have_interference);
	assert_int_equal(fit.interference.n, 17);
	REL(fit.interference.a, 0.3, 0.02);
	REL(fit.interference.b, 1.5, 0.02);
	assert_true(fit.have_gemm);
	assert_string_equal(fit.gemm_dtype, "bf16");
	assert_int_equal(fit.gemm.n, 42);
	REL(fit.gemm.e_max, 0.8 * 989e12, 0.02);
	REL(fit.gemm.m_half, 256, 0.02);
	assert_int_equal(fit.n_shapes, 6);
	assert_string_equal(fit.shapes[3].dtype, "fp16");
	REL(fit.shapes[3].fit.e_max, 0.78 * 989e12, 0.02);
	REL(fit.shapes[3].fit.m_half, 240, 0.02);
	assert_true(fit.have_hbm);
	REL(fit.hbm_bw, 3.0e12, 1e-6); /* triad beats copy's 2.95 TB/s */
	assert_true(fit.have_launch);
	REL(fit.launch_eager_s, 4.5e-6, 1e-9);
	REL(fit.launch_graph_s, 1.1e-6, 1e-9);
	assert_false(fit.have_p2p);
	lsim_calib_raw_release(&raw);
}

static void test_raw_roundtrip(void **state)
{
	(void)state;
	char dir[1024], path[1100];
	tmp_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/raw.csv", dir);
	struct lsim_calib_raw raw, back;
	lsim_calib_raw_init(&raw);
	assert_int_equal(lsim_calib_raw_set_meta(&raw, "gpu_name", "A \"quoted\", name"), 0);
	assert_int_equal(lsim_calib_raw_set_meta(&raw, "date", "x"), 0);
	assert_int_equal(lsim_calib_raw_set_meta(&raw, "date", "2026-02-03"), 0);
	assert_int_equal(raw.n_meta, 2);
	struct lsim_calib_row r;
	lsim_calib_row_clear(&r);
	snprintf(r.bench, sizeof r.bench, "gemm");
	snprintf(r.variant, sizeof r.variant, "bf16");
	r.m = 64;
	r.n = 4096;
	r.k = 14336;
	double s[] = {3e-5, 1e-5, 2e-5};
	lsim_calib_stats(s, 3, &r);
	r.value = 2.0 * 64 * 4096 * 14336 / 2e-5;
	snprintf(r.unit, sizeof r.unit, "FLOP/s");
	assert_int_equal(lsim_calib_raw_add(&raw, &r), 0);
	struct lsim_diag d;
	assert_int_equal(lsim_calib_raw_save(&raw, path, &d), 0);
	lsim_calib_raw_init(&back);
	assert_int_equal(lsim_calib_raw_load(path, &back, &d), 0);
	assert_int_equal(back.n_rows, 1);
	assert_int_equal(back.n_meta, 2);
	assert_string_equal(lsim_calib_raw_meta(&back, "gpu_name"), "A \"quoted\", name");
	assert_string_equal(lsim_calib_raw_meta(&back, "date"), "2026-02-03");
	const struct lsim_calib_row *b = &back.rows[0];
	assert_string_equal(b->bench, "gemm");
	assert_string_equal(b->variant, "bf16");
	assert_string_equal(b->unit, "FLOP/s");
	assert_true(b->m == 64 && b->n == 4096 && b->k == 14336);
	assert_true(b->median_s == 2e-5 && b->min_s == 1e-5 && b->reps == 3);
	assert_true(isnan(b->size) && isnan(b->threads) && isnan(b->util));
	assert_int_equal(b->line, 4); /* header, two meta rows, this row */
	lsim_calib_raw_release(&back);
	lsim_calib_raw_release(&raw);
	/* a folder that does not exist */
	snprintf(path, sizeof path, "%s/no/such/raw.csv", dir);
	assert_int_equal(lsim_calib_raw_save(&raw, path, &d), LSIM_EIO);
	snprintf(path, sizeof path, "%s/raw.csv", dir);
	unlink(path);
	rmdir(dir);
}

static void test_profile_roundtrip(void **state)
{
	(void)state;
	struct lsim_calib_raw raw;
	load_synthetic(&raw);
	struct lsim_calib_fit fit;
	struct lsim_diag d;
	assert_int_equal(lsim_calib_fit_raw(&raw, &fit, &d), 0);
	char dir[1024], path[1100], profiles[1100];
	tmp_dir(dir, sizeof dir);
	snprintf(profiles, sizeof profiles, "%s/calibrate/profiles", source_root());

	/* with the H100-SXM profile for the keys no benchmark measures */
	snprintf(path, sizeof path, "%s/Synth-GPU.yaml", dir);
	int rc = lsim_calib_write_profile(path, "Synth-GPU", &raw, &fit, profiles,
					  "H100-SXM", &d);
	if (rc)
		fprintf(stderr, "%s:%d: %s: %s\n", d.file, d.line, d.key, d.msg);
	assert_int_equal(rc, 0);
	struct lsim_gpu_profile g;
	rc = lsim_gpu_profile_load(dir, "Synth-GPU", &g, &d);
	if (rc)
		fprintf(stderr, "%s:%d: %s: %s\n", d.file, d.line, d.key, d.msg);
	assert_int_equal(rc, 0);
	assert_string_equal(g.name, "Synth-GPU");
	assert_string_equal(g.provenance, "mixed");
	assert_non_null(strstr(g.source, "llmsim-calibrate 0.1.0 on Synthetic GPU"));
	assert_non_null(strstr(g.source, "unmeasured keys from H100-SXM"));
	const double tol = 1e-5; /* six significant digits in the file */
	REL(g.pcie_bw, fit.xfer[LSIM_XFER_H2D_PINNED].bandwidth, tol);
	REL(g.mfu_max, fit.gemm.e_max / 989e12, tol);
	REL(g.mfu_half_tokens, fit.gemm.m_half, tol);
	REL(g.mbu, 3.0e12 / 3.35e12, tol);
	REL(g.launch_s, 4.5e-6, tol);
	REL(g.hbm_bytes, 85899345920.0, tol);
	/* from the base profile */
	assert_true(g.bf16_flops == 989e12);
	assert_true(g.hbm_bw == 3350e9);
	assert_true(g.nvlink_bw == 450e9);
	assert_true(g.tdp_w == 700 && g.idle_w == 100);
	assert_true(g.price_per_hour == 3.49);
	assert_true(g.fabric == LSIM_FABRIC_NVSWITCH && g.nvlink_links == 18);
	unlink(path);

	/* the fabric keys and the host floor come from the base even where
	 * they differ from the loader's defaults; the compute capability is
	 * the device query's (9.0), not the base's 8.0 */
	char base[1100];
	snprintf(base, sizeof base, "%s/Odd.yaml", dir);
	FILE *bf = fopen(base, "w");
	assert_non_null(bf);
	fputs("name: Odd\nprovenance: estimate\nsource: \"test\"\nbf16_tflops: 100\nhbm: 24GB\n"
	      "hbm_bw: 900GB/s\npcie_bw: 31.5GB/s\nnvlink_bw: 0GB/s\ntdp: 300W\nidle_power: 40W\n"
	      "price: $1/h\nmfu_max: 0.7\nmfu_half_tokens: 64\nmbu: 0.8\nlaunch_latency: 5us\n"
	      "host_issue_latency: 3us\ngpu_fabric: pcie\nnvlink_links: 2\n"
	      "compute_capability: 8.0\ngpu_p2p: false\npcie_switch_gpus: 4\n",
	      bf);
	assert_int_equal(fclose(bf), 0);
	snprintf(path, sizeof path, "%s/Synth-Odd.yaml", dir);
	assert_int_equal(lsim_calib_write_profile(path, "Synth-Odd", &raw, &fit, dir, "Odd", &d), 0);
	assert_int_equal(lsim_gpu_profile_load(dir, "Synth-Odd", &g, &d), 0);
	assert_true(g.fabric == LSIM_FABRIC_PCIE && g.nvlink_links == 2 && !g.gpu_p2p);
	assert_true(g.pcie_switch_gpus == 4 && g.compute_capability == 9.0);
	REL(g.host_issue_s, 3e-6, 1e-12);
	unlink(path);
	unlink(base);

	/* without a base: placeholders, peak from the GEMM asymptote */
	char keys[256];
	assert_int_equal(lsim_calib_placeholders(&fit, &raw, keys, sizeof keys), 4);
	assert_string_equal(keys, "nvlink_bw, tdp, idle_power, price");
	snprintf(path, sizeof path, "%s/Bare.yaml", dir);
	assert_int_equal(lsim_calib_write_profile(path, "Bare", &raw, &fit, NULL,
						  NULL, &d), 0);
	assert_int_equal(lsim_gpu_profile_load(dir, "Bare", &g, &d), 0);
	REL(g.bf16_flops, fit.gemm.e_max, tol);
	assert_true(g.mfu_max == 1);
	REL(g.hbm_bw, 2.0 * 2619000e3 * 5120 / 8, tol); /* clock x bus width */
	REL(g.mbu, 3.0e12 / (2.0 * 2619000e3 * 5120 / 8), tol);
	assert_true(g.tdp_w == 300 && g.idle_w == 43 && g.price_per_hour == 0);
	assert_true(g.nvlink_bw == 0);
	/* no base: the loader's defaults, but the measured compute capability */
	assert_true(g.fabric == LSIM_FABRIC_PCIE && g.nvlink_links == 0 && g.gpu_p2p);
	assert_true(g.compute_capability == 9.0 && g.pcie_switch_gpus == 2);
	unlink(path);

	/* a base that does not exist is the loader's error */
	assert_int_equal(lsim_calib_write_profile(path, "Bare", &raw, &fit, profiles,
						  "No-Such-GPU", &d), LSIM_ENOENT);
	snprintf(path, sizeof path, "%s/missing/Bare.yaml", dir);
	assert_int_equal(lsim_calib_write_profile(path, "Bare", &raw, &fit, NULL,
						  NULL, &d), LSIM_EIO);
	rmdir(dir);
	lsim_calib_raw_release(&raw);
}

/* Loads text as a raw CSV; returns the code, d filled. */
static int load_text(const char *text, struct lsim_diag *d, char *path,
		     size_t size)
{
	const char *b = getenv("LSIM_BUILD_ROOT");
	snprintf(path, size, "%s/test_fit_XXXXXX", b ? b : ".");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct lsim_calib_raw raw;
	lsim_calib_raw_init(&raw);
	memset(d, 0, sizeof *d);
	int rc = lsim_calib_raw_load(path, &raw, d);
	lsim_calib_raw_release(&raw);
	unlink(path);
	return rc;
}

#define HEADER "bench,variant,size,m,n,k,threads,util,reps,median_s,min_s,p10_s,p90_s,value,unit,note\n"

static void test_bad_csv(void **state)
{
	(void)state;
	char path[1024];
	struct lsim_diag d;
	/* the recorded bad files */
	char file[1100];
	struct lsim_calib_raw raw;
	lsim_calib_raw_init(&raw);
	snprintf(file, sizeof file, "%s/tests/data/calib/bad_missing_column.csv",
		 source_root());
	assert_int_equal(lsim_calib_raw_load(file, &raw, &d), LSIM_EFORMAT);
	assert_string_equal(d.file, file);
	assert_int_equal(d.line, 1);
	assert_string_equal(d.key, "median_s");
	lsim_calib_raw_release(&raw);
	lsim_calib_raw_init(&raw);
	snprintf(file, sizeof file, "%s/tests/data/calib/bad_nonnumeric.csv",
		 source_root());
	assert_int_equal(lsim_calib_raw_load(file, &raw, &d), LSIM_EFORMAT);
	assert_string_equal(d.file, file);
	assert_int_equal(d.line, 4);
	assert_int_equal(d.col, 21);
	assert_string_equal(d.key, "size");
	assert_non_null(strstr(d.msg, "not a number: '64KiB'"));
	lsim_calib_raw_release(&raw);

	/* non-numeric time, line 3 */
	assert_int_equal(load_text(HEADER
				   "transfer,h2d_pinned,4096,,,,,,10,1e-5,,,,,B/s,\n"
				   "transfer,h2d_pinned,16384,,,,,,10,fast,,,,,B/s,\n",
				   &d, path, sizeof path), LSIM_EFORMAT);
	assert_int_equal(d.line, 3);
	assert_string_equal(d.key, "median_s");
	assert_string_equal(d.file, path);
	/* a row without the field its bench needs */
	assert_int_equal(load_text(HEADER "gemm,bf16,,64,4096,,,,10,1e-5,,,,,,\n",
				   &d, path, sizeof path), LSIM_EFORMAT);
	assert_int_equal(d.line, 2);
	assert_string_equal(d.key, "k");
	assert_int_equal(load_text(HEADER "launch,eager,,,,,,,10,,,,,,,\n", &d,
				   path, sizeof path), LSIM_EFORMAT);
	assert_string_equal(d.key, "median_s");
	assert_int_equal(load_text(HEADER "contention,probe,4096,,,,2,,10,1e-5,,,,,,\n",
				   &d, path, sizeof path), LSIM_EFORMAT);
	assert_string_equal(d.key, "util");
	/* an unknown bench */
	assert_int_equal(load_text(HEADER "nccl,allreduce,1024,,,,,,10,1e-5,,,,,,\n",
				   &d, path, sizeof path), LSIM_EFORMAT);
	assert_int_equal(d.line, 2);
	assert_int_equal(d.col, 1);
	assert_string_equal(d.key, "bench");
	assert_non_null(strstr(d.msg, "unknown bench 'nccl'"));
	/* not a file */
	lsim_calib_raw_init(&raw);
	assert_int_not_equal(lsim_calib_raw_load("/nonexistent/raw.csv", &raw, &d), 0);
	lsim_calib_raw_release(&raw);
}

static void test_fit_errors_name_the_file(void **state)
{
	(void)state;
	char path[1024];
	const char *b = getenv("LSIM_BUILD_ROOT");
	snprintf(path, sizeof path, "%s/test_fit_XXXXXX", b ? b : ".");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	/* two rows of one size: no bandwidth can be fitted */
	const char *text = HEADER
		"transfer,d2h_pinned,4096,,,,,,10,1e-5,,,,,,\n"
		"transfer,d2h_pinned,4096,,,,,,10,1.1e-5,,,,,,\n";
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct lsim_calib_raw raw;
	lsim_calib_raw_init(&raw);
	struct lsim_diag d;
	assert_int_equal(lsim_calib_raw_load(path, &raw, &d), 0);
	struct lsim_calib_fit fit;
	assert_int_equal(lsim_calib_fit_raw(&raw, &fit, &d), LSIM_EINVAL);
	assert_string_equal(d.file, path);
	assert_string_equal(d.key, "transfer d2h_pinned");
	assert_non_null(strstr(d.msg, "distinct"));
	lsim_calib_raw_release(&raw);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_transfer),
		cmocka_unit_test(test_interference),
		cmocka_unit_test(test_efficiency),
		cmocka_unit_test(test_synthetic_table),
		cmocka_unit_test(test_raw_roundtrip),
		cmocka_unit_test(test_profile_roundtrip),
		cmocka_unit_test(test_bad_csv),
		cmocka_unit_test(test_fit_errors_name_the_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
