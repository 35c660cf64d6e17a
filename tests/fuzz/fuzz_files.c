/*
 * fuzz_files.c - libFuzzer targets for the readers of the remaining input
 * files, one executable each, chosen at build time by LSIM_FUZZ_READER:
 *   sweep        a sweep file (lsim_sweep_load)
 *   gpu_profile  a hardware profile, calibrate/profiles/NAME.yaml (as
 *                fuzz.yaml, so its name must be "fuzz")
 *                (lsim_gpu_profile_load)
 *   models       the model catalogue: the input's first line names the
 *                model to look up, the rest is the catalogue
 *                (lsim_model_load)
 *   prices       the price catalogue (lsim_prices_load)
 *   carbon       a grid carbon-intensity series over a 7-day run
 *                (lsim_carbon_load)
 *   power_table  a measured power-vs-utilisation table
 *                (lsim_power_model_load_table)
 *   kproto       a saved k-prototypes profiler model (lsim_kproto_load)
 *   jobs         a training-job file; the first byte picks the reader (by
 *                value mod 6): the generic job CSV, Alibaba v2023 pods,
 *                Alibaba nodes, Helios VC quotas, a cluster summary
 *                (cluster "Venus"), or a runtime,count CSV drawn from
 *                (lsim_jobs_read_*, lsim_jobs_gen_empirical)
 *   trace_auto   a request trace of any recognised layout: format
 *                detection from the header, then the trace is drained
 *                (lsim_workload_open_auto)
 *   failure_trace  the failures.trace CSV of a small fixed scenario, read
 *                while it loads (lsim_scenario_load)
 *   import       a published measurement for `llmsim profile import`; the
 *                first byte picks the source (by value mod 4): Splitwise
 *                perf_model.csv, LLMServingSim v0 tp1/layers.csv, Vidur
 *                mlp.csv, Vidur all_reduce.csv (lsim_profile_import)
 *   validate     a measured vLLM run for `llmsim validate`: the first byte
 *                picks the fuzzed file (even: meta.json, odd:
 *                requests.jsonl), the other is a small valid one; replayed
 *                as Llama-3.1-8B on the small table of fuzz_common.h (the
 *                shipped tables' 14,000 rows took 90% of each input's
 *                time; fuzz_perf_table fuzzes the table reader)
 *                (lsim_validate_run)
 * Each input is written to a scratch file and read; what loads is freed,
 * what fails must fail with a negative code and a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cost.h"
#include "fuzz_common.h"
#include "cluster/hw.h"
#include "jobs/jobs.h"
#include "learn/kproto.h"
#include "import/profile_import.h"
#include "run/scenario.h"
#include "cli/sweep.h"
#include "cli/validate.h"
#include "workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
	SWEEP = 1, GPU_PROFILE, MODELS, PRICES, CARBON, POWER_TABLE, KPROTO, JOBS, TRACE_AUTO,
	FAILURE_TRACE, IMPORT, VALIDATE
};

/* A failed read must fail with a negative code and a message. */
static void check(int rc, const struct lsim_diag *d)
{
	if (rc != 0)
		lsim_fuzz_check_error(rc, d);
}

static const char valid_meta[] =
	"{\"schema_version\": 1, \"model\": \"meta-llama/Llama-3.1-8B\",\n"
	" \"engine_kwargs\": {\"tensor_parallel_size\": 1, \"max_num_seqs\": 256,\n"
	"  \"max_num_batched_tokens\": 2048, \"max_model_len\": 32768},\n"
	" \"kv_cache\": {\"num_gpu_blocks\": 2588, \"block_size\": 16,\n"
	"  \"enable_prefix_caching\": true}}\n";
static const char valid_requests[] =
	"{\"request_id\": \"a\", \"input_toks\": 200, \"output_toks\": 20, "
	"\"queued_ts\": 10.0, \"scheduled_ts\": 10.0, \"first_token_ts\": 10.05, "
	"\"last_token_ts\": 10.3}\n"
	"{\"request_id\": \"b\", \"input_toks\": 100, \"output_toks\": 5, "
	"\"queued_ts\": 10.1, \"scheduled_ts\": 10.1, \"first_token_ts\": 10.15, "
	"\"last_token_ts\": 10.2}\n";

/* A vLLM run folder with one file fuzzed, replayed through validate. */
static void validate_one(const uint8_t *data, size_t size, struct lsim_diag *d)
{
	if (size == 0)
		return;
	char path[4096], perf[4096];
	bool meta = data[0] % 2 == 0;
	lsim_fuzz_write("run/meta.json", meta ? (const void *)(data + 1) : valid_meta,
			meta ? size - 1 : sizeof valid_meta - 1, path, sizeof path);
	lsim_fuzz_write("run/requests.jsonl", meta ? valid_requests : (const void *)(data + 1),
			meta ? sizeof valid_requests - 1 : size - 1, path, sizeof path);
	*strrchr(path, '/') = '\0';
	lsim_fuzz_write_table("table", perf, sizeof perf);
	struct lsim_validate_opts o = {
		.run_dir = path, .perf_dir = perf, .model = "Llama-3.1-8B",
		.cpu_overhead_s = 0.0,
	};
	struct lsim_validate_result r;
	memset(&r, 0, sizeof r);
	check(lsim_validate_run(&o, &r, d), d);
}

/* One importer on one fuzzed source file, chosen by the first byte. */
static void import_one(const uint8_t *data, size_t size, struct lsim_diag *d)
{
	if (size == 0)
		return;
	static const char *const rel[4] = {"sw/perf_model.csv", "lss/tp1/layers.csv",
					   "vidur/mlp.csv", "vidur/all_reduce.csv"};
	static const int from[4] = {LSIM_IMPORT_SPLITWISE, LSIM_IMPORT_LLMSERVINGSIM,
				    LSIM_IMPORT_VIDUR, LSIM_IMPORT_VIDUR};
	int k = data[0] % 4;
	char path[4096], out[4096];
	lsim_fuzz_write(rel[k], data + 1, size - 1, path, sizeof path);
	if (k == 1) { /* the LLMServingSim source is the folder above tp1/ */
		*strrchr(path, '/') = '\0';
		*strrchr(path, '/') = '\0';
	}
	snprintf(out, sizeof out, "%s/imported", lsim_fuzz_dir());
	const char *src[1] = {path};
	struct lsim_import_opts o = {
		.from = from[k], .src = src, .n_src = 1, .outdir = out,
	};
	struct lsim_import_result r;
	memset(&r, 0, sizeof r);
	check(lsim_profile_import(&o, &r, d), d);
}

/* A scenario of two replicas whose failures come from ft.csv. */
static const char failure_scenario[] =
	"name: ft\n"
	"cluster: [{gpu: H100-SXM, count: 1, gpus_per_node: 2}]\n"
	"instances: [{gpu: H100-SXM, replicas: 2}]\n"
	"failures: {trace: ft.csv}\n"
	"workload: {count: 10, rate: 5}\n";

/* One of the job readers, chosen by the input's first byte. */
static void read_jobs(const uint8_t *data, size_t size, struct lsim_diag *d)
{
	if (size == 0)
		return;
	char path[4096];
	lsim_fuzz_write("jobs.csv", data + 1, size - 1, path, sizeof path);
	struct lsim_job_list l;
	lsim_job_list_init(&l);
	struct lsim_pool_spec p;
	memset(&p, 0, sizeof p);
	int rc = 0;
	switch (data[0] % 6) {
	case 0:
		rc = lsim_jobs_read_csv(path, &l, d);
		break;
	case 1:
		rc = lsim_jobs_read_alibaba_pods(path, data[0] & 64 ? 86400.0 : 0.0, &l, d);
		break;
	case 2:
		rc = lsim_jobs_read_alibaba_nodes(path, &p, d);
		break;
	case 3:
		rc = lsim_jobs_read_vc_quotas(path, NULL, &l, d);
		break;
	case 4: {
		struct lsim_cluster_stats st;
		rc = lsim_jobs_read_cluster_stats(path, "Venus", &st, d);
		break;
	}
	default: {
		struct lsim_job_gen_params g;
		lsim_job_gen_defaults(&g);
		g.count = 50;
		g.capacity_gpus = 64;
		rc = lsim_jobs_gen_empirical(path, &g, &l, d);
		break;
	}
	}
	check(rc, d);
	lsim_job_list_release(&l);
	lsim_pool_spec_release(&p);
}

#ifndef LSIM_FUZZ_READER
#error "LSIM_FUZZ_READER selects the reader (tests/fuzz/meson.build)"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[4096];
	struct lsim_diag d;
	memset(&d, 0, sizeof d);
	switch (LSIM_FUZZ_READER) {
	case SWEEP: {
		lsim_fuzz_write("sweep.yaml", data, size, path, sizeof path);
		struct lsim_sweep *sw = NULL;
		check(lsim_sweep_load(path, &sw, &d), &d);
		lsim_sweep_destroy(sw);
		break;
	}
	case GPU_PROFILE: {
		lsim_fuzz_write("profiles/fuzz.yaml", data, size, path, sizeof path);
		char *slash = strrchr(path, '/');
		*slash = '\0';
		struct lsim_gpu_profile g;
		memset(&g, 0, sizeof g);
		check(lsim_gpu_profile_load(path, "fuzz", &g, &d), &d);
		break;
	}
	case MODELS: {
		const uint8_t *nl = memchr(data, '\n', size);
		size_t name_len = nl ? (size_t)(nl - data) : 0;
		size_t off = nl ? name_len + 1 : 0;
		char name[128];
		if (name_len >= sizeof name)
			name_len = sizeof name - 1;
		memcpy(name, data, name_len);
		name[name_len] = '\0';
		lsim_fuzz_write("models.yaml", data + off, size - off, path,
				sizeof path);
		struct lsim_model_arch m;
		memset(&m, 0, sizeof m);
		check(lsim_model_load(path, name, &m, &d), &d);
		break;
	}
	case PRICES: {
		lsim_fuzz_write("prices.yaml", data, size, path, sizeof path);
		struct lsim_prices *p = NULL;
		check(lsim_prices_load(path, &p, &d), &d);
		lsim_prices_destroy(p);
		break;
	}
	case CARBON: {
		lsim_fuzz_write("carbon.csv", data, size, path, sizeof path);
		struct lsim_carbon_series *c = NULL;
		check(lsim_carbon_load(path, 7 * 86400 * LSIM_S, &c, &d), &d);
		lsim_carbon_destroy(c);
		break;
	}
	case POWER_TABLE: {
		lsim_fuzz_write("power.csv", data, size, path, sizeof path);
		struct lsim_power_model pm;
		memset(&pm, 0, sizeof pm);
		check(lsim_power_model_load_table(&pm, path, &d), &d);
		break;
	}
	case KPROTO: {
		lsim_fuzz_write("model.kproto", data, size, path, sizeof path);
		struct lsim_kproto_model *m = NULL;
		check(lsim_kproto_load(path, &m, &d), &d);
		lsim_kproto_destroy(m);
		break;
	}
	case JOBS:
		read_jobs(data, size, &d);
		break;
	case IMPORT:
		import_one(data, size, &d);
		break;
	case VALIDATE:
		validate_one(data, size, &d);
		break;
	case FAILURE_TRACE: {
		lsim_fuzz_write("ft.csv", data, size, path, sizeof path);
		lsim_fuzz_write("ft.yaml", failure_scenario, sizeof failure_scenario - 1, path,
				sizeof path);
		struct lsim_scenario *sc = NULL;
		check(lsim_scenario_load(path, NULL, 0, &sc, &d), &d);
		lsim_scenario_destroy(sc);
		break;
	}
	case TRACE_AUTO: {
		lsim_fuzz_write("trace.csv", data, size, path, sizeof path);
		struct lsim_workload *w = NULL;
		int rc = lsim_workload_open_auto(path, &w, &d);
		if (rc == 0)
			lsim_fuzz_drain(w);
		else
			lsim_fuzz_check_error(rc, &d);
		lsim_workload_destroy(w);
		break;
	}
	default:
		abort();
	}
	return 0;
}
