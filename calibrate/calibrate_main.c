/*
 * calibrate_main.c - the command lines llmsim-calibrate (built with CUDA:
 * measures, writes the raw CSV, fits, writes a hardware profile) and
 * llmsim-fit (always built: fits a raw CSV, no GPU needed). One source,
 * compiled twice; LSIM_HAVE_CUDA selects the measuring part. Exit codes: 0
 * success, 1 a failure while measuring or writing, 2 bad input (arguments
 * or a bad raw CSV, with file:line:col: key: message), 3 no CUDA device.
 */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "fit.h"
#include "cluster/hw.h"
#ifdef LSIM_HAVE_CUDA
#include "bench.h"
#define PROG "llmsim-calibrate"
#else
#define PROG "llmsim-fit"
#endif

#define EXIT_BADINPUT 2
#define EXIT_NODEVICE 3

static const char usage_text[] =
#ifdef LSIM_HAVE_CUDA
	"usage: llmsim-calibrate [--device N] [-o PROFILE.yaml] [--raw RAW.csv] [--quick] [--base NAME]\n"
	"       llmsim-calibrate --fit RAW.csv [-o PROFILE.yaml] [--base NAME]\n"
	"\n"
	"Measures the GPU (host<->device copies by size, pinned and pageable, each\n"
	"direction and both; PCIe contention with 0-8 copy threads and paced load;\n"
	"HBM copy and triad; cuBLAS bf16/fp16 GEMMs by tokens; kernel launch, eager\n"
	"and graph; peer-to-peer copies), writes one CSV row per measurement to RAW\n"
	"(default: PROFILE.raw.csv, or llmsim-calibrate.raw.csv), fits the models\n"
	"and prints them. With -o it writes a hardware profile; its name is the\n"
	"file name without .yaml. --fit skips the measuring and needs no GPU.\n"
#else
	"usage: llmsim-fit RAW.csv [-o PROFILE.yaml] [--base NAME]\n"
	"       llmsim-fit --fit RAW.csv [-o PROFILE.yaml] [--base NAME]\n"
	"\n"
	"Fits a raw CSV written by llmsim-calibrate (no GPU needed) and prints the\n"
	"fitted models. With -o it writes a hardware profile; its name is the file\n"
	"name without .yaml.\n"
#endif
	"\n"
	"options:\n"
	"  -o PROFILE.yaml  write the fitted hardware profile\n"
	"  --base NAME      take the keys no benchmark measures (peak bf16, TDP, idle\n"
	"                   power, price, host issue latency, GPU fabric) from this\n"
	"                   profile: a\n"
	"                   shipped name (e.g. H100-SXM) or a path to a .yaml file;\n"
	"                   without it those keys are placeholders tagged estimate\n"
#ifdef LSIM_HAVE_CUDA
	"  --device N       CUDA device to measure (default 0)\n"
	"  --raw RAW.csv    where the raw measurements go\n"
	"  --quick          fewer repetitions and levels (about a minute)\n"
#endif
	"  --help           this text\n"
	"\n"
	"exit status: 0 done, 1 failure, 2 bad input, 3 no CUDA device.\n";

struct args {
	const char *fit;
	const char *out;
	const char *raw;
	const char *base;
	int device;
	bool quick;
};

static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int bad_usage(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, PROG ": ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n%s", usage_text);
	va_end(ap);
	return EXIT_BADINPUT;
}

/* 0, -1 after --help, or an exit code. */
static int parse_args(int argc, char **argv, struct args *a)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		bool takes = !strcmp(arg, "-o") || !strcmp(arg, "--fit") ||
			     !strcmp(arg, "--base") || !strcmp(arg, "--raw") ||
			     !strcmp(arg, "--device");
		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			fputs(usage_text, stdout);
			return -1;
		}
		if (takes && !val)
			return bad_usage("%s needs a value", arg);
		if (!strcmp(arg, "-o")) {
			a->out = val;
		} else if (!strcmp(arg, "--fit")) {
			a->fit = val;
		} else if (!strcmp(arg, "--base")) {
			a->base = val;
#ifdef LSIM_HAVE_CUDA
		} else if (!strcmp(arg, "--raw")) {
			a->raw = val;
		} else if (!strcmp(arg, "--device")) {
			char *end;
			long dev = strtol(val, &end, 10);
			if (*end || end == val || dev < 0 || dev > 1024)
				return bad_usage("--device: not a device number: '%s'", val);
			a->device = (int)dev;
		} else if (!strcmp(arg, "--quick")) {
			a->quick = true;
#else
		} else if (arg[0] != '-' && !a->fit) {
			a->fit = arg;
#endif
		} else {
			return bad_usage("unexpected argument '%s'", arg);
		}
		if (takes)
			i++;
	}
#ifndef LSIM_HAVE_CUDA
	if (!a->fit)
		return bad_usage("missing RAW.csv");
#endif
	return 0;
}

/* Splits -o PATH/NAME.yaml into the profile name; 0 or an exit code. */
static int profile_name(const char *path, char *name, size_t size)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t len = strlen(base);
	if (len <= 5 || strcmp(base + len - 5, ".yaml") != 0 || len - 5 >= size)
		return bad_usage("-o: the profile file must be named NAME.yaml, got '%s'",
				 path);
	memcpy(name, base, len - 5);
	name[len - 5] = 0;
	return 0;
}

/* --base NAME or --base DIR/NAME.yaml into folder and name. */
static void base_location(const char *base, char *dir, size_t dsize,
			  char *name, size_t nsize)
{
	const char *slash = strrchr(base, '/');
	size_t len = strlen(base);
	bool file = slash || (len > 5 && !strcmp(base + len - 5, ".yaml"));
	if (!file) {
		char rel[300];
		snprintf(rel, sizeof rel, "profiles/%s.yaml", base);
		if (lsim_data_find(rel, dir, dsize) == 0 && strrchr(dir, '/'))
			*strrchr(dir, '/') = '\0'; /* the folder it was found in */
		else
			snprintf(dir, dsize, "%s/profiles", lsim_data_dir());
		snprintf(name, nsize, "%s", base);
		return;
	}
	if (slash)
		snprintf(dir, dsize, "%.*s", (int)(slash - base), base);
	else
		snprintf(dir, dsize, ".");
	const char *b = slash ? slash + 1 : base;
	size_t bl = strlen(b);
	if (bl > 5 && !strcmp(b + bl - 5, ".yaml"))
		bl -= 5;
	snprintf(name, nsize, "%.*s", (int)bl, b);
}

static void print_diag(const struct lsim_diag *d)
{
	char buf[1200];
	lsim_diag_format(d, buf, sizeof buf);
	fprintf(stderr, PROG ": %s\n", buf);
}

static int exit_for(int rc)
{
	return rc == LSIM_EIO || rc == LSIM_ENOMEM ? EXIT_FAILURE : EXIT_BADINPUT;
}

static void print_fit(const struct lsim_calib_fit *fit)
{
	for (int k = 0; k < LSIM_XFER_N; k++)
		if (fit->have_xfer[k])
			printf("transfer %-13s latency %8.3f us  bandwidth %8.3f GB/s  rms %.2f%%  (%zu sizes)\n",
			       lsim_xfer_name((enum lsim_xfer_kind)k),
			       fit->xfer[k].latency_s * 1e6, fit->xfer[k].bandwidth / 1e9,
			       100 * fit->xfer[k].rms_rel, fit->xfer[k].n);
	if (fit->have_bidir)
		printf("transfer bidir_pinned  %.3f GB/s both directions together\n",
		       fit->bidir_bw / 1e9);
	if (fit->have_interference)
		printf("pcie interference      slowdown = 1 + %.4g u / (1 - u)^%.4g  rms %.2f%%  (%zu points)\n",
		       fit->interference.a, fit->interference.b,
		       100 * fit->interference.rms_rel, fit->interference.n);
	if (fit->have_gemm)
		printf("gemm %-6s            %.4g TFLOP/s x M / (M + %.4g)  rms %.2f%%  (%zu points)\n",
		       fit->gemm_dtype, fit->gemm.e_max / 1e12, fit->gemm.m_half,
		       100 * fit->gemm.rms_rel, fit->gemm.n);
	for (size_t s = 0; s < fit->n_shapes; s++)
		printf("  %-6s N=%-6g K=%-6g %.4g TFLOP/s x M / (M + %.4g)  rms %.2f%%\n",
		       fit->shapes[s].dtype, fit->shapes[s].n, fit->shapes[s].k,
		       fit->shapes[s].fit.e_max / 1e12, fit->shapes[s].fit.m_half,
		       100 * fit->shapes[s].fit.rms_rel);
	if (fit->have_hbm)
		printf("hbm                    %.4g GB/s best copy/triad\n",
		       fit->hbm_bw / 1e9);
	if (fit->have_launch)
		printf("launch                 eager %.3f us, graph %.3f us per kernel\n",
		       fit->launch_eager_s * 1e6, fit->launch_graph_s * 1e6);
	if (fit->have_p2p)
		printf("p2p                    %.4g GB/s best pair\n", fit->p2p_bw / 1e9);
}

#ifdef LSIM_HAVE_CUDA
static int measure(const struct args *a, struct lsim_calib_raw *raw,
		   char *raw_path, size_t size)
{
	char err[512];
	int count = 0;
	if (lsim_bench_devices(&count, err, sizeof err) != 0 || count == 0) {
		fprintf(stderr, PROG ": no CUDA device present (%s)\n", err);
		return EXIT_NODEVICE;
	}
	if (a->device >= count) {
		fprintf(stderr, PROG ": --device %d: only %d CUDA device%s\n",
			a->device, count, count == 1 ? "" : "s");
		return EXIT_BADINPUT;
	}
	if (a->raw)
		snprintf(raw_path, size, "%s", a->raw);
	else if (a->out)
		snprintf(raw_path, size, "%.*s.raw.csv",
			 (int)(strlen(a->out) - 5), a->out);
	else
		snprintf(raw_path, size, "llmsim-calibrate.raw.csv");
	struct lsim_bench_opts o = {
		.device = a->device, .quick = a->quick, .progress = stderr,
	};
	if (lsim_bench_measure(&o, raw, err, sizeof err) != 0) {
		fprintf(stderr, PROG ": %s\n", err);
		return EXIT_FAILURE;
	}
	struct lsim_diag d;
	memset(&d, 0, sizeof d);
	int rc = lsim_calib_raw_save(raw, raw_path, &d);
	if (rc) {
		print_diag(&d);
		return EXIT_FAILURE;
	}
	snprintf(raw->file, sizeof raw->file, "%.255s", raw_path);
	fprintf(stderr, PROG ": raw measurements in %s\n", raw_path);
	return 0;
}
#endif

int main(int argc, char **argv)
{
	/* fits report failures through return codes, never abort */
	gsl_set_error_handler_off();
	struct args a = {0};
	int rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? EXIT_SUCCESS : rc;
	char name[256] = "";
	if (a.out && (rc = profile_name(a.out, name, sizeof name)) != 0)
		return rc;
	char bdir[1024], bname[256];
	struct lsim_diag d;
	memset(&d, 0, sizeof d);
	if (a.base) {
		/* a bad base is found before minutes of measuring, not after */
		base_location(a.base, bdir, sizeof bdir, bname, sizeof bname);
		struct lsim_gpu_profile check;
		rc = lsim_gpu_profile_load(bdir, bname, &check, &d);
		if (rc) {
			print_diag(&d);
			return exit_for(rc);
		}
	}

	struct lsim_calib_raw raw;
	lsim_calib_raw_init(&raw);
	if (a.fit) {
		rc = lsim_calib_raw_load(a.fit, &raw, &d);
		if (rc) {
			print_diag(&d);
			lsim_calib_raw_release(&raw);
			return exit_for(rc);
		}
	} else {
#ifdef LSIM_HAVE_CUDA
		char raw_path[1024];
		rc = measure(&a, &raw, raw_path, sizeof raw_path);
		if (rc) {
			lsim_calib_raw_release(&raw);
			return rc;
		}
#endif
	}
	struct lsim_calib_fit fit;
	rc = lsim_calib_fit_raw(&raw, &fit, &d);
	if (rc) {
		print_diag(&d);
		lsim_calib_raw_release(&raw);
		return exit_for(rc);
	}
	print_fit(&fit);
	if (a.out) {
		rc = lsim_calib_write_profile(a.out, name, &raw, &fit,
					      a.base ? bdir : NULL,
					      a.base ? bname : NULL, &d);
		if (rc) {
			print_diag(&d);
			lsim_calib_raw_release(&raw);
			return exit_for(rc);
		}
		printf("profile %s written to %s\n", name, a.out);
		char keys[512];
		if (!a.base && lsim_calib_placeholders(&fit, &raw, keys, sizeof keys))
			fprintf(stderr, PROG ": no --base profile: placeholders for %s\n",
				keys);
	}
	lsim_calib_raw_release(&raw);
	return EXIT_SUCCESS;
}
