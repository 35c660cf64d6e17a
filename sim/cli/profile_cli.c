/*
 * profile_cli.c - `llmsim profile import` and `llmsim profile compare`:
 * their arguments and output, over the importers and the roofline
 * comparison of calibrate/import (profile_import.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "import/profile_import.h"

#define EXIT_BADINPUT LSIM_EXIT_BADINPUT

static const char usage_import[] =
	"usage: llmsim profile import --from llmservingsim|vidur|splitwise SRC... -o OUTDIR\n"
	"                             [--model NAME] [--gpu NAME] [--tp N]\n"
	"\n"
	"Turns published measurements into tables under OUTDIR/tp<N>/:\n"
	"  llmservingsim  a profiler folder in the current layout (tp<N>/dense.csv ...),\n"
	"                 checked and copied; or the v0 layers.csv (a file, or a folder\n"
	"                 with layers.csv or tp<N>/layers.csv), converted\n"
	"  vidur          mlp.csv and attention.csv summed into per-layer rows;\n"
	"                 all_reduce.csv / send_recv.csv into bytes -> time tables\n"
	"                 (SRC: files, or folders holding them)\n"
	"  splitwise      perf_model.csv into per-iteration tables (tp<N>/iteration.csv);\n"
	"                 --model and --gpu pick its model and hardware rows\n"
	"--tp N imports that tensor-parallel degree only. --model and --gpu are recorded\n"
	"in OUTDIR/import.yaml. Per-layer folders are checked by loading them through the\n"
	"table perf backend; files are written under temporary names and renamed when\n"
	"complete. Details: docs/profiles.md.\n";

static const char usage_compare[] =
	"usage: llmsim profile compare --profile PERF_DIR --gpu NAME --model NAME [--tp N]\n"
	"                              [--fit-tp N] [--json]\n"
	"\n"
	"Puts llmsim's roofline prediction for the hardware profile and model beside the\n"
	"measured table in PERF_DIR (a folder, or where none is there a path in the\n"
	"data folders: perf/vidur/a100/...) per decoder layer and per iteration: prefills of\n"
	"1, 2, 4 .. 8192 tokens and decode batches of 1, 4, 16, 64, 256 sequences at\n"
	"contexts 128, 512, 2048, 8192, wherever the table has measurements; for a\n"
	"per-iteration table (Splitwise) its own batch configurations. Prints a table\n"
	"with the error roofline / measured - 1, or one JSON object with --json.\n"
	"--fit-tp N first fits the serving stack's launch_latency (a per-kernel cost\n"
	"that does not shrink with TP) and mfu_max to the per-iteration table\n"
	"tp<N>/iteration.csv, then compares --tp with the fitted values. It fits the\n"
	"host_issue_latency (the host floor) too where rows of tp<N> are bound by it,\n"
	"else keeps the profile's, and prints the largest value the rows cannot see.\n";

static int parse_tp(const char *s, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!s[0] || *end || v < 1 || v > 4096) {
		fprintf(stderr, "llmsim: --tp: '%s' is not a tensor-parallel degree\n", s);
		return EXIT_BADINPUT;
	}
	*out = (int)v;
	return 0;
}

int lsim_cli_profile_import(int argc, char **argv)
{
	struct lsim_import_opts o = {.from = -1};
	const char *from = NULL;
	const char **src = calloc((size_t)(argc > 0 ? argc : 1), sizeof *src);
	if (!src)
		return lsim_cli_nomem();
	int rc = 0;
	for (int i = 1; i < argc && rc == 0; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_import, stdout);
			free(src);
			return 0;
		} else if (!strcmp(a, "--from") && i + 1 < argc) {
			from = argv[++i];
		} else if (!strcmp(a, "-o") && i + 1 < argc) {
			o.outdir = argv[++i];
		} else if (!strcmp(a, "--model") && i + 1 < argc) {
			o.model = argv[++i];
		} else if (!strcmp(a, "--gpu") && i + 1 < argc) {
			o.gpu = argv[++i];
		} else if (!strcmp(a, "--tp") && i + 1 < argc) {
			rc = parse_tp(argv[++i], &o.tp);
		} else if (a[0] == '-') {
			fprintf(stderr, "llmsim: unexpected argument '%s'\n%s", a, usage_import);
			rc = EXIT_BADINPUT;
		} else {
			src[o.n_src++] = a;
		}
	}
	if (rc == 0 && (!from || lsim_import_from_parse(from, &o.from) != 0)) {
		fprintf(stderr, "llmsim: --from: %s%s%s (llmservingsim, vidur or splitwise)\n%s",
			from ? "unknown source '" : "missing", from ? from : "", from ? "'" : "",
			usage_import);
		rc = EXIT_BADINPUT;
	}
	if (rc == 0 && (o.n_src == 0 || !o.outdir)) {
		fprintf(stderr, "llmsim: profile import needs SRC and -o OUTDIR\n%s", usage_import);
		rc = EXIT_BADINPUT;
	}
	if (rc) {
		free(src);
		return rc;
	}
	o.src = src;
	struct lsim_diag d = {0};
	struct lsim_import_result r;
	int err = lsim_profile_import(&o, &r, &d);
	free(src);
	if (err)
		return lsim_cli_fail(&d, err);
	printf("imported %s: %zu rows -> %s (%s tables)\n", from, r.rows_read, o.outdir, r.layout);
	for (int i = 0; i < r.n_tp; i++)
		printf("  tp%-3d %s\n", r.tp[i],
		       !strcmp(r.layout, "iteration") ? "per-iteration (llmsim profile compare)"
		       : r.loadable[i]		     ? "loads in the table perf backend"
						     : "incomplete: does not load in the table backend");
	for (int i = 0; i < r.n_files; i++)
		printf("  wrote %s\n", r.files[i]);
	if (r.note[0])
		printf("  note: %s\n", r.note);
	return 0;
}

int lsim_cli_profile_compare(int argc, char **argv)
{
	struct lsim_compare_opts o = {0};
	bool json = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_compare, stdout);
			return 0;
		} else if (!strcmp(a, "--profile") && i + 1 < argc) {
			o.perf_dir = argv[++i];
		} else if (!strcmp(a, "--gpu") && i + 1 < argc) {
			o.gpu = argv[++i];
		} else if (!strcmp(a, "--model") && i + 1 < argc) {
			o.model = argv[++i];
		} else if (!strcmp(a, "--tp") && i + 1 < argc) {
			int rc = parse_tp(argv[++i], &o.tp);
			if (rc)
				return rc;
		} else if (!strcmp(a, "--fit-tp") && i + 1 < argc) {
			int rc = parse_tp(argv[++i], &o.fit_tp);
			if (rc)
				return rc;
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else {
			fprintf(stderr, "llmsim: unexpected argument '%s'\n%s", a, usage_compare);
			return EXIT_BADINPUT;
		}
	}
	if (!o.perf_dir || !o.gpu || !o.model) {
		fprintf(stderr, "llmsim: profile compare needs --profile, --gpu and --model\n%s",
			usage_compare);
		return EXIT_BADINPUT;
	}
	char perf_buf[4096];
	o.perf_dir = lsim_cli_perf_dir(o.perf_dir, perf_buf, sizeof perf_buf);
	struct lsim_diag d = {0};
	struct lsim_compare_result r;
	int rc = lsim_profile_compare(&o, &r, &d);
	if (rc)
		return lsim_cli_fail(&d, rc);
	struct lsim_buf b = {0};
	lsim_compare_format(&r, json, &b);
	if (b.data)
		fputs(b.data, stdout);
	bool failed = b.failed;
	lsim_buf_release(&b);
	lsim_compare_result_release(&r);
	if (failed)
		return lsim_cli_nomem();
	return 0;
}
