/*
 * main.c - the llmsim command line: run, check, validate, help and
 * version. The only place that prints; exit 0 on success, 2 on bad input
 * (with file:line:column: key: message), 1 on other failures.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "kernel/infile.h"
#include "run/policy_core.h"
#include "cli/profile_learn.h"
#include "report/report.h"
#include "run/scenario.h"
#include "cli/sweep.h"
#include "cli/trace_tool.h"
#include "cli/validate.h"

#define EXIT_BADINPUT LSIM_EXIT_BADINPUT

static const char usage_main[] =
	"usage: llmsim [--version] [--help] COMMAND [ARGS] [--data-dir DIR]...\n"
	"\n"
	"Discrete-event simulator of LLM serving on GPU clusters.\n"
	"\n"
	"--data-dir DIR (any command, repeatable) searches DIR for hardware\n"
	"profiles (DIR/profiles/NAME.yaml), models (DIR/models.yaml), prices and\n"
	"MIG tables before $LLMSIM_DATA_DIR (DIR:DIR...) and the shipped data.\n"
	"\n"
	"commands:\n"
	"  run SCENARIO.yaml     simulate a scenario; write report.h5, results.sqlite\n"
	"  check SCENARIO.yaml   validate a scenario and print its effective config\n"
	"  validate RUN_DIR      replay a measured vLLM run and compare latencies\n"
	"  trace stats FILE...   rows, span, rate, inter-arrival CV, length percentiles (per tenant)\n"
	"  trace convert FILE -o OUT.csv   rewrite a trace in the generic CSV layout\n"
	"  profile import|compare  perf tables from published measurements; roofline vs them\n"
	"  profile train|eval    the kproto task profiler: K-Prototypes + per-cluster regression\n"
	"  sweep SWEEP.yaml      run a policy sweep in a process pool (resumable); status, merge\n"
	"  report DIR            a sweep's configurations: means and 95% CIs across seeds\n"
	"  search FILE --slo ... capacity: the highest rate meeting the SLOs per configuration\n"
	"  compare RUN_A RUN_B   two runs of one workload: paired latency differences, 95% CIs\n"
	"  policies [KIND]       list the policies (all kinds, or one) with parameters\n"
	"  keys                  print the reference of every scenario key (Markdown)\n"
	"\n"
	"`llmsim COMMAND --help` describes one command.\n";

static const char usage_run[] =
	"usage: llmsim run SCENARIO.yaml [-o OUTDIR] [--force] [--seed N] [--set key=value]... [--csv]\n"
	"                  [--progress SECONDS] [--quiet]\n"
	"\n"
	"Simulates the scenario and writes OUTDIR/report.h5 (the run's full report),\n"
	"OUTDIR/results.sqlite (tables runs and metrics, one row), and prints a\n"
	"summary. --csv also writes requests.csv, instances.csv, timeseries.csv and\n"
	"summary.csv. OUTDIR defaults to llmsim-out. An OUTDIR that already holds a\n"
	"run is refused unless --force, which replaces the whole run (report,\n"
	"database and CSV files together, once the new run is complete). --set\n"
	"overrides any key by its dotted path (list entries by index:\n"
	"instances.0.replicas=4). Progress goes to stderr: on a terminal a bar\n"
	"(share of the input read, simulated time, requests done / arrived,\n"
	"events/s, ETA); otherwise one status line every --progress seconds\n"
	"(default 10, or $LLMSIM_PROGRESS; 0: none), which a Slurm or nohup log\n"
	"keeps. --quiet: neither.\n";

static const char usage_check[] =
	"usage: llmsim check SCENARIO.yaml [--seed N] [--set key=value]...\n"
	"\n"
	"Validates the scenario (keys, units, bounds, hardware profiles, models,\n"
	"placement) and assembles its run as `run` would (links, instances and their\n"
	"memory, jobs, the workload opened) without simulating it: whatever `run`\n"
	"refuses before its first event, `check` refuses too, and it reads every line\n"
	"of a request trace as the run reads it (a bad line is refused, or skipped\n"
	"with workload.on_error: skip). Prints the effective\n"
	"configuration as YAML, then a comment line per instance group with its\n"
	"vLLM memory plan: the terms per GPU and the KV blocks they leave, and with\n"
	"a cluster one line of the PCIe and NVLink layout its links take.\n";

static const char usage_validate[] =
	"usage: llmsim validate RUN_DIR --profile PERF_DIR [--json] [--model NAME] [--gpu GPU]\n"
	"                       [--cpu-overhead SECONDS]\n"
	"\n"
	"RUN_DIR holds a measured vLLM run (requests.jsonl and meta.json); PERF_DIR the\n"
	"matching per-layer profile (.../<GPU>/<model>/bf16 with tp<N>/ folders): a\n"
	"folder, or where none is there a path in the data folders (--data-dir, then the\n"
	"shipped data: perf/llmservingsim/RTX4090/meta-llama/Llama-3.1-8B/bf16). The\n"
	"requests are replayed, arriving at their queued_ts, through one instance with\n"
	"the run's engine settings; TTFT, TPOT and end-to-end latency (mean, p50, p90,\n"
	"p95, p99, milliseconds) are printed measured vs simulated with the difference.\n"
	"\n"
	"requests.jsonl may be in any order: requests are taken in queued_ts order (a\n"
	"stable sort). meta.json's model is matched to the catalogue by its name, else\n"
	"by its base name (without organisation, -Instruct, -Chat, -Base, -hf, -it,\n"
	"-Thinking and 4-digit release tags such as -2507); --model NAME overrides it.\n"
	"max_model_len null means the model's context. Without kv_cache.num_gpu_blocks\n"
	"the KV cache is sized from the device memory of the run (hardware.\n"
	"device_total_memory_bytes) or of --gpu GPU (a profile of calibrate/profiles).\n"
	"Prefix caching not stated: the default of the logged vllm_version (on from\n"
	"0.8). Tensor parallel: two all-reduces per layer on the fabric of --gpu GPU,\n"
	"else of the profile that hardware.device_name names. Data parallel\n"
	"(data_parallel_size D): D ranks behind vLLM's DP load balancer, in lockstep\n"
	"for an MoE model, its experts split over the D x tp GPUs with\n"
	"enable_expert_parallel. Pipeline parallel (pipeline_parallel_size P): one\n"
	"instance of P stages with up to P batches in flight, the layers split as\n"
	"vLLM splits them, the activations sent between stages on the same fabric.\n"
	"Refused (not modelled yet): data parallel with pipeline parallel, expert\n"
	"parallel with tensor parallel, and an MoE model's data parallel without it.\n";

struct run_args {
	const char *scenario;
	const char *outdir;
	const char **sets;
	size_t n_sets;
	char seed_set[64];
	bool csv, quiet, force;
	double progress_s; /* status line period off a terminal (0: none) */
};

static int parse_scenario_args(int argc, char **argv, struct run_args *a,
			       const char *usage, bool allow_out)
{
	a->sets = calloc((size_t)argc + 1, sizeof *a->sets);
	if (!a->sets)
		return lsim_cli_nomem();
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			fputs(usage, stdout);
			exit(0);
		} else if (!strcmp(arg, "--set") && i + 1 < argc) {
			a->sets[a->n_sets++] = argv[++i];
		} else if (!strcmp(arg, "--seed") && i + 1 < argc) {
			snprintf(a->seed_set, sizeof a->seed_set, "seed=%s", argv[++i]);
		} else if (allow_out && !strcmp(arg, "-o") && i + 1 < argc) {
			a->outdir = argv[++i];
		} else if (allow_out && !strcmp(arg, "--csv")) {
			a->csv = true;
		} else if (allow_out && !strcmp(arg, "--quiet")) {
			a->quiet = true;
		} else if (allow_out && !strcmp(arg, "--force")) {
			a->force = true;
		} else if (allow_out && !strcmp(arg, "--progress") && i + 1 < argc) {
			char *end;
			a->progress_s = strtod(argv[++i], &end);
			if (*end || !(a->progress_s >= 0) || a->progress_s > 1e6) {
				fprintf(stderr, "llmsim: --progress: '%s' is not a number of seconds "
						"(0 turns the status lines off)\n%s", argv[i], usage);
				return EXIT_BADINPUT;
			}
		} else if (arg[0] == '-' || a->scenario) {
			fprintf(stderr, "llmsim: unexpected argument '%s'\n%s", arg, usage);
			return EXIT_BADINPUT;
		} else {
			a->scenario = arg;
		}
	}
	if (!a->scenario) {
		fprintf(stderr, "llmsim: missing SCENARIO.yaml\n%s", usage);
		return EXIT_BADINPUT;
	}
	if (a->seed_set[0])
		a->sets[a->n_sets++] = a->seed_set;
	return 0;
}

/* Parses the arguments and loads the scenario; returns an exit status. */
static int load_from_args(int argc, char **argv, struct run_args *a,
			  const char *usage, bool allow_out,
			  struct lsim_scenario **sc, struct lsim_diag *d)
{
	int rc = parse_scenario_args(argc, argv, a, usage, allow_out);
	if (rc == 0) {
		rc = lsim_scenario_load(a->scenario, a->sets, a->n_sets, sc, d);
		if (rc != 0)
			rc = lsim_cli_fail(d, rc);
	}
	free(a->sets);
	a->sets = NULL;
	return rc;
}

/* Progress on stderr: on a terminal a bar redrawn in place; otherwise
 * (a file, a Slurm log) one status line every `every` seconds. */
struct progress_out {
	bool tty;
	double every;	     /* seconds between lines (not a terminal) */
	double start, last;  /* wall clock, s */
	double last_events;  /* at the last report, for events/s */
	bool shown;
};

static double wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fmt_hms(char *buf, size_t n, double s)
{
	long t = s < 0 ? 0 : (long)(s + 0.5);
	if (t >= 3600)
		snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, n, "%ld:%02ld", t / 60, t % 60);
}

static void progress(void *ctx, const struct lsim_progress *p)
{
	struct progress_out *o = ctx;
	double now = wall_s();
	if (now - o->last < (o->tty ? 0.25 : o->every))
		return;
	double rate = now > o->last ? ((double)p->events - o->last_events) / (now - o->last) : 0;
	o->last = now;
	o->last_events = (double)p->events;
	double f = p->fraction, elapsed = now - o->start;
	char pct[16] = "", eta[80] = "", el[64];
	fmt_hms(el, sizeof el, elapsed);
	if (f >= 0) {
		snprintf(pct, sizeof pct, "%5.1f%%", 100 * f);
		if (f > 0.005 && f < 1) {
			char e[64];
			fmt_hms(e, sizeof e, elapsed * (1 - f) / f);
			snprintf(eta, sizeof eta, "  ETA %s", e);
		} else if (f >= 1) {
			snprintf(eta, sizeof eta, "  input read, draining");
		}
	}
	if (o->tty) {
		char bar[23] = "[....................]";
		for (int i = 0; f >= 0 && i < (int)(20 * f + 1e-9) && i < 20; i++)
			bar[1 + i] = '#';
		fprintf(stderr, "\r  %s %s  sim %.1f s  done %llu / arrived %llu  %.2f M ev/s%s   ",
			f >= 0 ? bar : "", pct, p->sim_s, (unsigned long long)p->done,
			(unsigned long long)p->arrived, rate / 1e6, eta);
	} else {
		fprintf(stderr, "llmsim: progress %s  simulated %.1f s  requests done %llu / "
				"arrived %llu  %.1f M events (%.2f M/s)  elapsed %s%s\n",
			f >= 0 ? pct : "(unknown share)", p->sim_s, (unsigned long long)p->done,
			(unsigned long long)p->arrived, (double)p->events / 1e6, rate / 1e6, el, eta);
	}
	o->shown = true;
}

/* x with prec decimals, or "n/a" when it is not defined (NaN). */
static void fmt_or_na(char *buf, size_t size, int prec, double x)
{
	if (isnan(x))
		snprintf(buf, size, "n/a");
	else
		snprintf(buf, size, "%.*f", prec, x);
}

/* One latency line: "mean X s  p50 ..." with n/a where undefined (a TPOT
 * when no completed request had a second token). */
static void print_dist(const char *what, int prec, double mean, double p50, double p90,
		       double p99)
{
	char m[32], a[32], b[32], c[32];
	fmt_or_na(m, sizeof m, prec, mean);
	fmt_or_na(a, sizeof a, prec, p50);
	fmt_or_na(b, sizeof b, prec, p90);
	fmt_or_na(c, sizeof c, prec, p99);
	printf("  %-10s mean %s s  p50 %s  p90 %s  p99 %s\n", what, m, a, b, c);
}

static void print_summary(const struct lsim_results *r)
{
	const struct lsim_summary *s = &r->summary;
	printf("run %s  seed %llu  %s\n", r->info.run_id,
	       (unsigned long long)r->info.seed, r->info.scenario);
	if (s->jobs > 0)
		printf("  jobs       %.0f submitted, %.0f finished   makespan %.1f s   "
		       "JCT mean %.1f s p99 %.1f s   GPU util %.3f (useful %.3f)   cost $%.2f\n",
		       s->jobs, s->jobs_finished, s->jobs_makespan_s, s->jct_mean_s,
		       s->jct_p99_s, s->job_gpu_util, s->job_useful_util, s->jobs_cost_usd);
	if (s->requests == 0 && s->jobs > 0) {
		printf("  simulated  %.0f events in %.3f s of host time\n", s->sim_events,
		       r->wall_s);
		return;
	}
	if (s->failed > 0)
		printf("  requests   %.0f arrived, %.0f completed, %.0f rejected, %.0f failed, "
		       "%.0f unfinished\n",
		       s->requests, s->completed, s->rejected, s->failed, s->unfinished);
	else
		printf("  requests   %.0f arrived, %.0f completed, %.0f rejected, %.0f unfinished\n",
		       s->requests, s->completed, s->rejected, s->unfinished);
	printf("  makespan   %.3f s   throughput %.3f req/s, %.1f output tok/s\n",
	       s->makespan_s, s->throughput_rps, s->output_tokens_per_s);
	if (s->completed == 0) {
		printf("  latency    no request completed: TTFT, TPOT and E2E are undefined\n");
	} else {
		print_dist("TTFT", 4, s->ttft_mean_s, s->ttft_p50_s, s->ttft_p90_s, s->ttft_p99_s);
		print_dist("TPOT", 5, s->tpot_mean_s, s->tpot_p50_s, s->tpot_p90_s, s->tpot_p99_s);
		print_dist("E2E", 4, s->e2e_mean_s, s->e2e_p50_s, s->e2e_p90_s, s->e2e_p99_s);
	}
	char mfu[32], mbu[32];
	fmt_or_na(mfu, sizeof mfu, 4, s->mfu);
	fmt_or_na(mbu, sizeof mbu, 4, s->mbu);
	printf("  GPU        util %.3f  busy %.3f  MFU %s  MBU %s   preemptions %.0f\n",
	       s->gpu_util, s->gpu_busy, mfu, mbu, s->preemptions);
	if (r->has_serverless) {
		const struct lsim_serverless_summary *v = &r->serverless;
		printf("  serverless %.0f model loads (%.0f host, %.0f SSD, %.0f remote), "
		       "%.0f evictions, %.0f keep-alive scale-ins   GPU-seconds %.1f\n",
		       v->model_loads, v->loads_host, v->loads_ssd, v->loads_remote,
		       v->evictions, v->keep_alive_scale_ins, v->gpu_seconds);
		if (v->requests_delayed_by_load > 0)
			printf("  cold start %.0f requests delayed by a load: wait mean %.3f s  "
			       "p50 %.3f  p90 %.3f  p99 %.3f  max %.3f\n",
			       v->requests_delayed_by_load, v->cold_start_mean_s,
			       v->cold_start_p50_s, v->cold_start_p90_s, v->cold_start_p99_s,
			       v->cold_start_max_s);
	}
	if (r->has_kv_offload) {
		const struct lsim_kv_offload_summary *v = &r->kv_offload;
		printf("  KV offload %.0f B to host, %.0f B reloaded, %.0f prompt tokens "
		       "from host (%.4f)\n", v->kv_offload_bytes, v->kv_reload_bytes,
		       v->kv_host_hit_tokens, v->kv_host_hit_rate);
	}
	if (r->has_lora) {
		const struct lsim_lora_summary *v = &r->lora;
		printf("  LoRA       %.0f requests with an adapter, %.0f adapter loads (%.0f from "
		       "storage), %.0f B moved, %.0f requests delayed, %.6f s waited\n",
		       v->lora_requests, v->lora_loads, v->lora_storage_reads, v->lora_bytes,
		       v->lora_delayed_requests, v->lora_wait_s);
	}
	if (isnan(s->slo_attainment))
		printf("  SLO        no SLO declared\n");
	else
		printf("  SLO        attainment %.3f   goodput %.3f req/s\n", s->slo_attainment,
		       s->goodput_rps);
	for (size_t i = 0; i < r->n_classes; i++) {
		const struct lsim_class_record *c = &r->classes[i];
		char att[32];
		if (isnan(c->slo_attainment))
			snprintf(att, sizeof att, "no SLO declared");
		else
			snprintf(att, sizeof att, "attainment %.3f", c->slo_attainment);
		char ttft[32];
		fmt_or_na(ttft, sizeof ttft, 4, c->ttft_mean_s);
		printf("    %-12s %5.0f requests  %5.0f rejected  %s  TTFT mean %s s\n",
		       c->name, c->requests, c->rejected, att, ttft);
	}
	printf("  energy     %.4f kWh   cost $%.4f\n", s->energy_kwh, s->cost_usd);
	printf("  simulated  %.0f events in %.3f s of host time\n", s->sim_events,
	       r->wall_s);
}

static int cmd_run(int argc, char **argv)
{
	struct run_args a = {.outdir = "llmsim-out", .progress_s = 10};
	/* LLMSIM_PROGRESS sets the default (the test suites set 0: a line
	 * whose host times vary must not enter what they compare) */
	const char *pe = getenv("LLMSIM_PROGRESS");
	if (pe && *pe) {
		char *end;
		double v = strtod(pe, &end);
		if (*end || !(v >= 0) || v > 1e6) {
			fprintf(stderr, "llmsim: LLMSIM_PROGRESS: '%s' is not a number of seconds "
					"(0 turns the status lines off)\n", pe);
			return EXIT_BADINPUT;
		}
		a.progress_s = v;
	}
	struct lsim_diag d = {0};
	struct lsim_scenario *sc = NULL;
	int rc = load_from_args(argc, argv, &a, usage_run, true, &sc, &d);
	if (rc != 0)
		return rc;
	/* The folder first: a bad -o is found before a long simulation. */
	if (lsim_make_dirs(a.outdir) != 0) {
		rc = lsim_diag_set(&d, LSIM_EINVAL, a.outdir, 0, 0, "-o",
				   "cannot create the output folder: %s", strerror(errno));
		lsim_scenario_destroy(sc);
		return lsim_cli_fail(&d, rc);
	}
	/* What the run replaces must be a regular file or nothing: never a
	 * symbolic link (written through), a device or a folder. */
	char path[1200], db[1200], dbw[1300];
	snprintf(path, sizeof path, "%s/report.h5", a.outdir);
	snprintf(db, sizeof db, "%s/results.sqlite", a.outdir);
	/* A run already there is replaced only when asked, and then whole:
	 * the database is written afresh beside it and renamed over it, so
	 * that it holds this run's row only (appending would leave two runs
	 * the report command cannot tell apart). */
	snprintf(dbw, sizeof dbw, "%s.tmp", db);
	rc = lsim_check_output(path, "-o", &d);
	if (rc == 0)
		rc = lsim_check_output(db, "-o", &d);
	if (rc == 0)
		rc = lsim_check_output(dbw, "-o", &d);
	struct stat st;
	const char *held = lstat(path, &st) == 0 ? "report.h5"
			   : lstat(db, &st) == 0 ? "results.sqlite" : NULL;
	if (rc == 0 && held && !a.force)
		rc = lsim_diag_set(&d, LSIM_EINVAL, a.outdir, 0, 0, "-o",
				   "already holds a run (%s); write --force to replace it "
				   "(report, database and CSV files together), or choose "
				   "another -o", held);
	if (rc == 0)
		remove(dbw); /* a stale one from a run that stopped before its rename */
	for (size_t i = 0; rc == 0 && a.csv && lsim_report_csv_name(i); i++) {
		char p[1300];
		snprintf(p, sizeof p, "%s/%s", a.outdir, lsim_report_csv_name(i));
		rc = lsim_check_output(p, "-o", &d);
	}
	/* HDF5 started now, while memory is plentiful (report.h) */
	if (rc == 0)
		rc = lsim_report_h5_init(&d);
	if (rc != 0) {
		lsim_scenario_destroy(sc);
		return lsim_cli_fail(&d, rc);
	}
	const struct lsim_results *res = NULL;
	struct progress_out po = {.tty = isatty(2), .every = a.progress_s};
	po.start = po.last = wall_s();
	bool report = !a.quiet && (po.tty || a.progress_s > 0);
	rc = lsim_scenario_run(sc, report ? progress : NULL, &po, &res, &d);
	if (po.tty && po.shown)
		fprintf(stderr, "\r%110s\r", "");
	/* All or nothing (docs/reliability.md): the database is written
	 * afresh under a .tmp name, the report and the CSV files likewise,
	 * all synced; renaming the database over the previous run's is the
	 * commit, and the files follow it. A failure before the commit
	 * leaves the folder as it was. */
	bool staged_h5 = false, staged_csv = false;
	if (rc == 0)
		rc = lsim_report_sqlite_append(dbw, res, &d);
	if (rc == 0)
		staged_h5 = (rc = lsim_report_h5_stage(path, res, &d)) == 0;
	if (rc == 0 && a.csv)
		staged_csv = (rc = lsim_report_csv_stage(a.outdir, res, &d)) == 0;
	if (rc == 0 && rename(dbw, db) != 0)
		rc = lsim_diag_set(&d, LSIM_EIO, db, 0, 0, "-o",
				   "cannot store the run: %s", strerror(errno));
	if (rc != 0)
		remove(dbw);
	if (rc != 0 && staged_csv)
		lsim_report_csv_unstage(a.outdir);
	if (rc == 0 && staged_csv)
		rc = lsim_report_csv_commit(a.outdir, res, &d);
	if (rc == 0)
		rc = lsim_report_h5_commit(path, &d);
	if (rc != 0 && staged_h5) { /* gone if committed */
		char tmp[1300];
		snprintf(tmp, sizeof tmp, "%s.tmp", path);
		remove(tmp);
	}
	/* the replaced run's CSV files, when this one writes none */
	for (size_t i = 0; rc == 0 && a.force && !a.csv && lsim_report_csv_name(i); i++) {
		char p[1300];
		snprintf(p, sizeof p, "%s/%s", a.outdir, lsim_report_csv_name(i));
		if (remove(p) != 0 && errno != ENOENT)
			rc = lsim_diag_set(&d, LSIM_EIO, p, 0, 0, "-o",
					   "cannot remove the replaced run's file: %s",
					   strerror(errno));
	}
	if (rc == 0 && lsim_sync_path(a.outdir) != 0)
		rc = lsim_diag_set(&d, LSIM_EIO, a.outdir, 0, 0, "-o",
				   "cannot sync the output folder: %s", strerror(errno));
	if (rc == 0) {
		print_summary(res);
		printf("  report     %s/report.h5\n", a.outdir);
		char why[400];
		if (lsim_scenario_unfinished(sc, why, sizeof why)) {
			fflush(stdout);
			fprintf(stderr, "llmsim: warning: %s\n", why);
		}
		if (lsim_scenario_overloaded(sc, why, sizeof why)) {
			fflush(stdout);
			fprintf(stderr, "llmsim: warning: %s\n", why);
		}
	}
	lsim_scenario_destroy(sc);
	return rc == 0 ? 0 : lsim_cli_fail(&d, rc);
}

static int cmd_check(int argc, char **argv)
{
	struct run_args a = {0};
	struct lsim_diag d = {0};
	struct lsim_scenario *sc = NULL;
	int rc = load_from_args(argc, argv, &a, usage_check, false, &sc, &d);
	if (rc != 0)
		return rc;
	rc = lsim_scenario_check(sc, &d);
	if (rc != 0) {
		lsim_scenario_destroy(sc);
		return lsim_cli_fail(&d, rc);
	}
	char *plans = lsim_scenario_memory_plans(sc);
	char *net = lsim_scenario_network_summary(sc);
	if (!plans || !net) {
		free(plans);
		free(net);
		lsim_scenario_destroy(sc);
		return lsim_cli_fail(&d, LSIM_ENOMEM);
	}
	printf("# effective configuration of %s (run id %s)\n%s%s%s", a.scenario,
	       lsim_scenario_run_id(sc), lsim_scenario_effective(sc), plans, net);
	free(plans);
	free(net);
	lsim_scenario_destroy(sc);
	return 0;
}

static int cmd_validate(int argc, char **argv)
{
	struct lsim_validate_opts o = {.model = "", .gpu = ""};
	bool json = false;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			fputs(usage_validate, stdout);
			return 0;
		} else if (!strcmp(arg, "--profile") && i + 1 < argc) {
			o.perf_dir = argv[++i];
		} else if (!strcmp(arg, "--model") && i + 1 < argc) {
			o.model = argv[++i];
		} else if (!strcmp(arg, "--gpu") && i + 1 < argc) {
			o.gpu = argv[++i];
		} else if (!strcmp(arg, "--cpu-overhead") && i + 1 < argc) {
			char *end;
			o.cpu_overhead_s = strtod(argv[++i], &end);
			if (*end || o.cpu_overhead_s < 0) {
				fprintf(stderr, "llmsim: --cpu-overhead: '%s' is not a number of seconds\n",
					argv[i]);
				return EXIT_BADINPUT;
			}
		} else if (!strcmp(arg, "--json")) {
			json = true;
		} else if (arg[0] == '-' || o.run_dir) {
			fprintf(stderr, "llmsim: unexpected argument '%s'\n%s", arg,
				usage_validate);
			return EXIT_BADINPUT;
		} else {
			o.run_dir = arg;
		}
	}
	if (!o.run_dir || !o.perf_dir) {
		fprintf(stderr, "llmsim: validate needs RUN_DIR and --profile PERF_DIR\n%s",
			usage_validate);
		return EXIT_BADINPUT;
	}
	char perf_buf[4096];
	o.perf_dir = lsim_cli_perf_dir(o.perf_dir, perf_buf, sizeof perf_buf);
	struct lsim_diag d = {0};
	struct lsim_validate_result r;
	int rc = lsim_validate_run(&o, &r, &d);
	if (rc != 0)
		return lsim_cli_fail(&d, rc);
	struct lsim_buf b = {0};
	lsim_validate_format(&r, json, &b);
	if (b.data)
		fputs(b.data, stdout);
	lsim_buf_release(&b);
	return 0;
}

static const char usage_trace[] =
	"usage: llmsim trace stats FILE... [--by COLUMN] [--json]\n"
	"       llmsim trace convert FILE -o OUT.csv\n"
	"\n"
	"FILE is any trace llmsim recognises: JSONL (vLLM requests.jsonl, Mooncake)\n"
	"or CSV with the columns of the generic layout (arrival_s, prompt_tokens,\n"
	"output_tokens), Azure LLM 2023/2024, BurstGPT, Mooncake, Vidur or\n"
	"SplitwiseSim traces. stats prints rows, time span, mean rate, inter-arrival\n"
	"CV and prompt/output length percentiles (--json: one object), for the whole\n"
	"and per tenant: each FILE when several are given (merged in time order, as\n"
	"workload.traces does), or each value of the CSV column COLUMN (--by Model\n"
	"for BurstGPT). convert writes arrival_s,prompt_tokens,output_tokens,hash_ids\n"
	"with arrivals relative to the first request, exact to the nanosecond.\n";

static int cmd_trace(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL, *out = NULL, *by = NULL;
	const char **files = calloc((size_t)argc, sizeof *files);
	size_t n_files = 0;
	bool json = false;
	if (!files)
		return lsim_cli_nomem();
	if (!sub || !strcmp(sub, "--help") || !strcmp(sub, "-h")) {
		fputs(usage_trace, sub ? stdout : stderr);
		free(files);
		return sub ? 0 : EXIT_BADINPUT;
	}
	if (strcmp(sub, "stats") && strcmp(sub, "convert")) {
		fprintf(stderr, "llmsim: unknown trace command '%s'\n%s", sub, usage_trace);
		free(files);
		return EXIT_BADINPUT;
	}
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "-o") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "--by") && i + 1 < argc)
			by = argv[++i];
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage_trace, stdout);
			free(files);
			return 0;
		} else if (argv[i][0] != '-')
			files[n_files++] = argv[i];
		else {
			fprintf(stderr, "llmsim: unexpected argument '%s'\n%s", argv[i],
				usage_trace);
			free(files);
			return EXIT_BADINPUT;
		}
	}
	bool stats = !strcmp(sub, "stats"), convert = !strcmp(sub, "convert");
	if ((!stats && !convert) || n_files == 0 || (convert && (!out || n_files > 1 || by))) {
		fputs(usage_trace, stderr);
		free(files);
		return EXIT_BADINPUT;
	}
	struct lsim_diag d = {0};
	int rc;
	if (stats) {
		struct lsim_trace_stats st;
		rc = lsim_trace_stats(files, n_files, by, &st, &d);
		if (rc == 0) {
			struct lsim_buf b = {0};
			lsim_trace_stats_format(&st, json, &b);
			if (b.data)
				fputs(b.data, stdout);
			lsim_buf_release(&b);
			lsim_trace_stats_release(&st);
		}
	} else {
		size_t rows = 0;
		rc = lsim_trace_convert(files[0], out, &rows, &d);
		if (rc == 0)
			printf("wrote %zu requests to %s\n", rows, out);
	}
	free(files);
	return rc == 0 ? 0 : lsim_cli_fail(&d, rc);
}

static const char usage_policies[] =
	"usage: llmsim policies [KIND]\n\nLists the built-in policies of every kind "
	"(monitor, scheduler, allocator, profiler,\nsynchronizer, qos, adaptor), or "
	"of one, with their parameters, defaults and units.\n";

static const char usage_keys[] =
	"usage: llmsim keys\n\nPrints the reference of every scenario key "
	"(Markdown tables: name, type,\ndefault, bounds, meaning), the text "
	"of docs/config.md below its \"## Keys\".\n";

/* --help / -h: the usage on stdout, 0; any other option, or more than
 * max_args words: the usage on stderr naming the argument, 2; else -1. */
static int simple_args(int argc, char **argv, int max_args, const char *usage)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return 0;
		}
	}
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '-' || i > max_args) {
			fprintf(stderr, "llmsim: unexpected argument '%s'\n%s", argv[i], usage);
			return EXIT_BADINPUT;
		}
	}
	return -1;
}

static int cmd_policies(int argc, char **argv)
{
	int rc = simple_args(argc, argv, 1, usage_policies);
	if (rc >= 0)
		return rc;
	struct lsim_buf b = {0};
	struct lsim_diag d = {0};
	rc = lsim_policy_list(&b, argc > 1 ? argv[1] : NULL, &d);
	if (rc == 0 && b.data)
		fputs(b.data, stdout);
	lsim_buf_release(&b);
	return rc == 0 ? 0 : lsim_cli_fail(&d, rc);
}

static int cmd_keys(int argc, char **argv)
{
	int rc = simple_args(argc, argv, 0, usage_keys);
	if (rc >= 0)
		return rc;
	struct lsim_buf b = {0};
	lsim_scenario_reference(&b);
	if (b.data)
		fputs(b.data, stdout);
	lsim_buf_release(&b);
	return 0;
}

static const char usage_profile[] =
	"usage: llmsim profile import --from llmservingsim|vidur|splitwise SRC -o OUTDIR [...]\n"
	"       llmsim profile compare --profile PERF_DIR --gpu NAME --model NAME [--tp N] [--json]\n"
	"       llmsim profile collective --gpu NAME [--op OP] [--n N] [--bytes SIZE] [--compare CSV]\n"
	"       llmsim profile train DATA.csv --numeric COLS --categorical COLS --target COLS -k K\n"
	"                            [--model gb|rf|linear] -o MODEL\n"
	"       llmsim profile eval MODEL DATA.csv [--h5 OUT.h5]\n"
	"\n"
	"import turns published measurements into perf tables for the table backend;\n"
	"compare sets the roofline model against such a table (docs/profiles.md).\n"
	"collective times NCCL collectives on a profile's fabric (docs/collectives.md).\n"
	"train clusters tasks with K-Prototypes and fits a regressor per cluster (the\n"
	"kproto profiler's model); eval scores one on a 70/30 split (docs/profiler.md).\n"
	"`llmsim profile SUBCOMMAND --help` describes one.\n";

static int cmd_profile(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL;
	if (sub && !strcmp(sub, "import"))
		return lsim_cli_profile_import(argc - 1, argv + 1);
	if (sub && !strcmp(sub, "compare"))
		return lsim_cli_profile_compare(argc - 1, argv + 1);
	if (sub && !strcmp(sub, "collective"))
		return lsim_cli_profile_collective(argc - 1, argv + 1);
	if (sub && !strcmp(sub, "train"))
		return lsim_cli_profile_train(argc - 1, argv + 1);
	if (sub && !strcmp(sub, "eval"))
		return lsim_cli_profile_eval(argc - 1, argv + 1);
	bool help = sub && (!strcmp(sub, "--help") || !strcmp(sub, "-h"));
	if (sub && !help)
		fprintf(stderr, "llmsim: unknown profile command '%s'\n", sub);
	fputs(usage_profile, help ? stdout : stderr);
	return help ? 0 : EXIT_BADINPUT;
}

/* Takes every --data-dir DIR (or --data-dir=DIR) out of argv and puts the
 * folders, in the order given, before those of $LLMSIM_DATA_DIR, which the
 * data lookups (lsim_data_find) and a sweep's runs read. Returns the new
 * argc, or -1 (message printed) on a missing value or no memory. */
static int take_data_dirs(int argc, char **argv)
{
	const char *old = getenv("LLMSIM_DATA_DIR");
	size_t len = old ? strlen(old) + 1 : 1;
	for (int i = 1; i < argc; i++)
		len += strlen(argv[i]) + 1;
	char *path = malloc(len);
	if (!path) {
		fputs("llmsim: out of memory\n", stderr);
		return -1;
	}
	size_t n = 0;
	int out = 1, found = 0;
	for (int i = 1; i < argc; i++) {
		const char *dir = NULL;
		if (!strcmp(argv[i], "--data-dir")) {
			if (i + 1 >= argc || !argv[i + 1][0]) {
				fputs("llmsim: --data-dir needs a folder\n", stderr);
				free(path);
				return -1;
			}
			dir = argv[++i];
		} else if (!strncmp(argv[i], "--data-dir=", 11)) {
			dir = argv[i] + 11;
		} else {
			argv[out++] = argv[i];
			continue;
		}
		n += (size_t)sprintf(path + n, "%s%s", found++ ? ":" : "", dir);
	}
	if (found) {
		if (old && *old)
			sprintf(path + n, ":%s", old);
		if (setenv("LLMSIM_DATA_DIR", path, 1) != 0) {
			fputs("llmsim: out of memory\n", stderr);
			free(path);
			return -1;
		}
	}
	free(path);
	argv[out] = NULL;
	return out;
}

int main(int argc, char **argv)
{
	argc = take_data_dirs(argc, argv);
	if (argc < 0)
		return EXIT_BADINPUT;
	if (argc < 2) {
		fputs(usage_main, stderr);
		return EXIT_BADINPUT;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("llmsim %s\n", LSIM_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		fputs(usage_main, stdout);
		return 0;
	}
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "check"))
		return cmd_check(argc - 1, argv + 1);
	if (!strcmp(cmd, "validate"))
		return cmd_validate(argc - 1, argv + 1);
	if (!strcmp(cmd, "trace"))
		return cmd_trace(argc - 1, argv + 1);
	if (!strcmp(cmd, "policies"))
		return cmd_policies(argc - 1, argv + 1);
	if (!strcmp(cmd, "profile"))
		return cmd_profile(argc - 1, argv + 1);
	if (!strcmp(cmd, "keys"))
		return cmd_keys(argc - 1, argv + 1);
	if (!strcmp(cmd, "sweep"))
		return lsim_cli_sweep(argc - 1, argv + 1);
	if (!strcmp(cmd, "report"))
		return lsim_cli_report(argc - 1, argv + 1);
	if (!strcmp(cmd, "search"))
		return lsim_cli_search(argc - 1, argv + 1);
	if (!strcmp(cmd, "compare"))
		return lsim_cli_compare(argc - 1, argv + 1);
	fprintf(stderr, "llmsim: unknown command '%s'\n%s", cmd, usage_main);
	return EXIT_BADINPUT;
}
