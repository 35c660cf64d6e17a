/*
 * validate.c - `llmsim validate`: replays a measured vLLM run (its
 * requests.jsonl arriving at queued_ts, with the engine settings of its
 * meta.json) through one simulated instance using the matching per-layer
 * profile, and compares TTFT, TPOT and end-to-end latency percentiles.
 * A data-parallel run (data_parallel_size D) is replayed through D ranks
 * behind vLLM's DP load balancer, stepping in lockstep for an MoE model,
 * with the experts split over the D x tp GPUs under enable_expert_parallel;
 * a pipeline-parallel run (pipeline_parallel_size P) through one instance
 * of P stages (docs/parallelism.md).
 */
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cluster/collective.h"
#include "run/sim.h"
#include "serving/kvcache.h"
#include "serving/memplan.h"
#include "cli/validate.h"
#include "kernel/infile.h"

static const char *const stat_names[] = {"mean", "p50", "p90", "p95", "p99"};
static const char *const metric_names[] = {"ttft", "tpot", "e2e"};

struct lat {
	double *v[3]; /* ms: ttft, tpot, e2e */
	size_t n[3];
};

static void lat_release(struct lat *l)
{
	for (int i = 0; i < 3; i++)
		free(l->v[i]);
}

static void stats(double *v, size_t n, double out[5])
{
	if (n == 0) {
		memset(out, 0, 5 * sizeof *out);
		return;
	}
	gsl_sort(v, 1, n);
	out[0] = gsl_stats_mean(v, 1, n);
	static const double q[] = {0.5, 0.9, 0.95, 0.99};
	for (int i = 0; i < 4; i++)
		out[i + 1] = gsl_stats_quantile_from_sorted_data(v, 1, n, q[i]);
}

/*
 * The value at a dotted path ("engine_kwargs.max_model_len") in *out, NULL
 * when a part is missing or the value is JSON null: 0. -1 when a part
 * before the last holds something other than an object (or null), its
 * dotted prefix then in bad[].
 */
static int lookup(json_object *root, const char *path, json_object **out, char *bad,
		  size_t bad_size)
{
	char buf[128];
	snprintf(buf, sizeof buf, "%s", path);
	json_object *x = root;
	size_t len = 0;
	*out = NULL;
	for (char *save = NULL, *part = strtok_r(buf, ".", &save); part;
	     part = strtok_r(NULL, ".", &save)) {
		if (!x)
			return 0;
		if (!json_object_is_type(x, json_type_object)) {
			snprintf(bad, bad_size, "%.*s", (int)(len ? len - 1 : 0), path);
			return -1;
		}
		if (!json_object_object_get_ex(x, part, &x))
			return 0;
		len += strlen(part) + 1;
	}
	*out = x;
	return 0;
}

static json_object *at(json_object *root, const char *path)
{
	json_object *x = NULL;
	char bad[128];
	return lookup(root, path, &x, bad, sizeof bad) == 0 ? x : NULL;
}

/* The line of path's last key in the file: the first line naming it after
 * the lines naming the keys before it (json-c keeps no line numbers). */
static int key_line(const char *file, const char *path)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return 0;
	char buf[128], *line = NULL;
	size_t cap = 0;
	snprintf(buf, sizeof buf, "%s", path);
	char *save = NULL, *part = strtok_r(buf, ".", &save);
	int lineno = 0, found = 0;
	ssize_t len = 0;
	/* a position for a message only: a read error ends the search */
	while (part && lsim_read_line(f, &line, &cap, &len, file, lineno + 1, NULL) == 0 &&
	       len >= 0) {
		lineno++;
		char quoted[140];
		snprintf(quoted, sizeof quoted, "\"%s\"", part);
		/* a later part may stand on the same line: look again */
		for (char *p = line; part && (p = strstr(p, quoted)) != NULL;) {
			p += strlen(quoted);
			part = strtok_r(NULL, ".", &save);
			if (!part)
				found = lineno;
			else
				snprintf(quoted, sizeof quoted, "\"%s\"", part);
		}
	}
	free(line);
	fclose(f);
	return found;
}

/* A refusal of the run log at meta.json's line of key, naming it. */
#define meta_refuse(d, meta_path, key, ...) \
	lsim_diag_set((d), LSIM_EINVAL, (meta_path), key_line((meta_path), (key)), 0, (key), \
		      __VA_ARGS__)

struct meta {
	int64_t max_num_seqs, max_batched, tp;
	int64_t dp;		/* data_parallel_size (1: none) */
	int64_t pp;		/* pipeline_parallel_size (1: none) */
	bool ep;		/* enable_expert_parallel */
	char a2a[64];		/* all2all_backend, or empty (vLLM's default) */
	int v_major, v_minor;	/* vllm_version, or -1 */
	const char *a2a_from;	/* its meta.json key */
	int64_t max_model_len;	/* 0: the model's context */
	int64_t blocks;		/* 0: derived from memory */
	int64_t block_size;
	double gpu_mem_util;
	double device_bytes;	/* hardware.device_total_memory_bytes, or 0 */
	bool prefix_caching;
	char model[128];
	char device[128]; /* hardware.device_name, or empty */
	const char *len_from, *blocks_from; /* for the report */
	const char *prefix_from; /* meta.json key of prefix caching, or NULL */
	char prefix_default[96]; /* ... else how the default was chosen */
};

/*
 * The first of paths[] that holds a value of the type (JSON null counts
 * as absent): 1 and *which set; 0 if none; an error for a wrong type. Every
 * path is checked, not only the first present, so a wrong type is never
 * passed over in silence: a section (engine_kwargs) that is not an object,
 * a string where a number belongs, NaN or Infinity (json-c reads both)
 * where an integer belongs. With agree, two paths that both hold a value
 * must hold the same one: a log whose engine arguments and resolved
 * configuration disagree does not say what ran.
 */
static int first_of_x(json_object *root, const char *file, const char *const *paths,
		      json_type type, bool agree, json_object **v, const char **which,
		      struct lsim_diag *d)
{
	int found = 0;
	for (const char *const *p = paths; *p; p++) {
		json_object *x = NULL;
		char bad[128];
		if (lookup(root, *p, &x, bad, sizeof bad) < 0)
			return lsim_diag_set(d, LSIM_EFORMAT, file, key_line(file, bad), 0, bad,
					     "%s must be an object, found %s", bad,
					     json_object_to_json_string(at(root, bad)));
		if (!x)
			continue;
		bool ok = json_object_is_type(x, type) ||
			  (type == json_type_double && json_object_is_type(x, json_type_int));
		if (!ok)
			return lsim_diag_set(d, LSIM_EFORMAT, file, key_line(file, *p), 0, *p,
					     "expected %s, found %s",
					     type == json_type_int ? "an integer"
					     : type == json_type_boolean ? "true or false"
					     : type == json_type_string ? "a string"
									: "a number",
					     json_object_to_json_string(x));
		if (type == json_type_double && !isfinite(json_object_get_double(x)))
			return lsim_diag_set(d, LSIM_EFORMAT, file, key_line(file, *p), 0, *p,
					     "expected a finite number, found %s",
					     json_object_to_json_string(x));
		if (!found) {
			*v = x;
			*which = *p;
			found = 1;
		} else if (agree && (type == json_type_double
					     ? json_object_get_double(x) != json_object_get_double(*v)
					     : strcmp(json_object_to_json_string(x),
						      json_object_to_json_string(*v)) != 0))
			return lsim_diag_set(d, LSIM_EFORMAT, file, key_line(file, *p), 0, *p,
					     "%s is %s but %s is %s: the log does not say "
					     "which the run had; make them agree",
					     *p, json_object_to_json_string(x), *which,
					     json_object_to_json_string(*v));
	}
	return found;
}

static int first_of(json_object *root, const char *file, const char *const *paths,
		    json_type type, json_object **v, const char **which,
		    struct lsim_diag *d)
{
	return first_of_x(root, file, paths, type, true, v, which, d);
}

#define PATHS(...) ((const char *const[]){__VA_ARGS__, NULL})

static int meta_int(json_object *root, const char *file, const char *const *paths,
		    int64_t dflt, bool required, int64_t *out, const char **which,
		    struct lsim_diag *d)
{
	json_object *v = NULL;
	const char *w = NULL;
	int got = first_of(root, file, paths, json_type_int, &v, &w, d);
	if (got < 0)
		return got;
	if (!got && required)
		return lsim_diag_set(d, LSIM_EFORMAT, file, key_line(file, paths[0]), 0,
				     paths[0], "missing integer %s (null or absent)", paths[0]);
	*out = got ? json_object_get_int64(v) : dflt;
	if (which)
		*which = got ? w : NULL;
	if (got && *out < 1)
		return lsim_diag_set(d, LSIM_EINVAL, file, key_line(file, w), 0, w,
				     "%s must be positive, not %lld", w, (long long)*out);
	/* json-c clamps integers beyond 64 bits to the limit: refuse those
	 * and every count no engine setting reaches */
	if (got && *out > INT32_MAX)
		return lsim_diag_set(d, LSIM_EINVAL, file, key_line(file, w), 0, w,
				     "%s %s is out of range (at most %d)", w,
				     json_object_to_json_string(v), INT32_MAX);
	return 0;
}

/*
 * Settings of a run that change what it did in ways validate does not
 * replay. Each must be absent, null or its default (vLLM's), else the run
 * is refused naming the key: replaying it as if it were the default would
 * compare the model with a different run.
 */
enum must { MUST_FALSE, MUST_TRUE, MUST_AT_MOST_1, MUST_NULL, MUST_16BIT, MUST_FCFS, MUST_ZERO,
	     MUST_ZERO_FIELD };
/* each kind's default, as the refusal names it (MUST_ZERO_FIELD: field=0) */
static const char *const must_default[] = {
	[MUST_FALSE] = "false", [MUST_TRUE] = "true", [MUST_AT_MOST_1] = "1",
	[MUST_NULL] = "null, false or 0", [MUST_16BIT] = "auto", [MUST_FCFS] = "fcfs",
	[MUST_ZERO] = "0", [MUST_ZERO_FIELD] = "0",
};
static const struct unmodelled {
	const char *paths[3];
	enum must must;
	const char *what; /* what the setting does that is not replayed */
	const char *field; /* MUST_ZERO_FIELD: the field of a config's repr */
} unmodelled[] = {
	{{"engine_kwargs.data_parallel_external_lb",
	  "resolved_config.parallel_config.data_parallel_external_lb"}, MUST_FALSE,
	 "an external load balancer spread the requests over the data-parallel ranks; "
	 "validate replays vLLM's internal one"},
	{{"engine_kwargs.data_parallel_hybrid_lb",
	  "resolved_config.parallel_config.data_parallel_hybrid_lb"}, MUST_FALSE,
	 "a load balancer per node spread the requests; validate replays vLLM's "
	 "internal one over all ranks"},
	{{"engine_kwargs.enable_eplb", "resolved_config.parallel_config.enable_eplb"},
	 MUST_FALSE, "the expert load balancer moved and replicated experts between "
	 "ranks; validate splits them evenly"},
	{{"engine_kwargs.enable_elastic_ep", "resolved_config.parallel_config.enable_elastic_ep"},
	 MUST_FALSE, "elastic expert parallelism changed the ranks during the run, which "
	 "validate does not replay"},
	{{"engine_kwargs.enable_dbo", "resolved_config.parallel_config.enable_dbo"},
	 MUST_FALSE, "dual-batch overlap split each step into two micro-batches that "
	 "overlap compute with communication; validate times whole steps"},
	{{"engine_kwargs.nnodes", "resolved_config.parallel_config.nnodes"}, MUST_AT_MOST_1,
	 "the ranks spanned several nodes; validate times the collectives on one "
	 "node's fabric"},
	{{"engine_kwargs.decode_context_parallel_size",
	  "resolved_config.parallel_config.decode_context_parallel_size"}, MUST_AT_MOST_1,
	 "decode context parallelism split the KV cache over the GPUs, which "
	 "validate does not replay"},
	{{"engine_kwargs.prefill_context_parallel_size",
	  "resolved_config.parallel_config.prefill_context_parallel_size"}, MUST_AT_MOST_1,
	 "prefill context parallelism split the prompts over the GPUs, which "
	 "validate does not replay"},
	{{"engine_kwargs.kv_cache_dtype", "resolved_config.cache_config.cache_dtype"},
	 MUST_16BIT, "the KV cache was stored in another type than the model's 16-bit "
	 "one, where the block size in bytes and the attention tables assume the model's"},
	{{"engine_kwargs.quantization", "resolved_config.model_config.quantization",
	  "resolved_config.quant_config"}, MUST_NULL,
	 "the weights were quantized; the tables and the memory plan are for the "
	 "16-bit model"},
	{{"engine_kwargs.enable_chunked_prefill",
	  "resolved_config.scheduler_config.enable_chunked_prefill"}, MUST_TRUE,
	 "prompts were prefilled whole; validate replays vLLM V1's chunked prefill"},
	{{"engine_kwargs.speculative_config", "resolved_config.speculative_config"},
	 MUST_NULL, "speculative decoding proposed and verified several tokens a step, "
	 "which validate does not replay"},
	{{"engine_kwargs.kv_transfer_config", "resolved_config.kv_transfer_config"},
	 MUST_NULL, "a KV connector moved KV caches (disaggregated serving or "
	 "offload), which validate does not replay"},
	{{"engine_kwargs.enable_lora", "resolved_config.lora_config"}, MUST_NULL,
	 "LoRA adapters were loaded; the requests' adapters are not in the log"},
	{{"engine_kwargs.kv_offloading_size", "resolved_config.cache_config.kv_offloading_size"},
	 MUST_NULL, "KV blocks were offloaded to host memory, which validate does not replay"},
	{{"engine_kwargs.cpu_offload_gb", "resolved_config.cache_config.cpu_offload_gb"},
	 MUST_NULL, "weights were offloaded to host memory and copied in at every step, "
	 "which validate does not replay"},
	/* newer logs hold the offload settings as the configs' Python reprs */
	{{"resolved_config.offload_config.uva"}, MUST_ZERO_FIELD,
	 "weights were offloaded to host memory and read over PCIe at every step, "
	 "which validate does not replay", "cpu_offload_gb"},
	{{"resolved_config.offload_config.prefetch"}, MUST_ZERO_FIELD,
	 "groups of layers' weights were offloaded to host memory and prefetched, "
	 "which validate does not replay", "offload_group_size"},
	{{"engine_kwargs.long_prefill_token_threshold",
	  "resolved_config.scheduler_config.long_prefill_token_threshold"}, MUST_ZERO,
	 "every prefill chunk was capped at that many tokens, which validate does not "
	 "replay"},
	{{"engine_kwargs.scheduling_policy", "resolved_config.scheduler_config.policy"},
	 MUST_FCFS, "requests were scheduled by priority; validate replays first come, "
	 "first served"},
	{{"engine_kwargs.max_num_partial_prefills",
	  "resolved_config.scheduler_config.max_num_partial_prefills"}, MUST_AT_MOST_1,
	 "several long prompts were prefilled at once under their own limits, "
	 "which validate does not replay"},
};

/* Whether v is the setting's default: false, 1 or less, null (a false or
 * a 0 counts as unset too: enable_lora false, cpu_offload_gb 0), a 16-bit
 * type, fcfs, 0; or, for a config's repr ("UVAOffloadConfig(cpu_offload_gb=
 * 0.0, ...)"), its field 0 (a repr without the field cannot say: taken as
 * the default). */
static bool is_default(json_object *v, enum must must, const char *field)
{
	json_type t = json_object_get_type(v);
	switch (must) {
	case MUST_FALSE:
		return t == json_type_boolean && !json_object_get_boolean(v);
	case MUST_TRUE:
		return t == json_type_boolean && json_object_get_boolean(v);
	case MUST_AT_MOST_1:
		return t == json_type_int && json_object_get_int64(v) <= 1;
	case MUST_NULL:
		return (t == json_type_boolean && !json_object_get_boolean(v)) ||
		       ((t == json_type_int || t == json_type_double) &&
			json_object_get_double(v) == 0.0);
	case MUST_16BIT: {
		static const char *const ok[] = {"auto", "bfloat16", "bf16", "float16",
						 "fp16", "half", "torch.bfloat16",
						 "torch.float16"};
		for (size_t i = 0; t == json_type_string && i < sizeof ok / sizeof ok[0]; i++)
			if (strcasecmp(json_object_get_string(v), ok[i]) == 0)
				return true;
		return false;
	}
	case MUST_FCFS:
		return t == json_type_string && strcasecmp(json_object_get_string(v), "fcfs") == 0;
	case MUST_ZERO:
		return (t == json_type_int || t == json_type_double) &&
		       json_object_get_double(v) == 0.0;
	case MUST_ZERO_FIELD: {
		if (t != json_type_string)
			return false;
		char key[64];
		snprintf(key, sizeof key, "%s=", field);
		const char *s = json_object_get_string(v), *at = strstr(s, key);
		if (!at)
			return true;
		char *end = NULL;
		double x = strtod(at + strlen(key), &end);
		return end != at + strlen(key) && x == 0.0;
	}
	}
	return false;
}

static int check_unmodelled(json_object *root, const char *path, struct lsim_diag *d)
{
	for (size_t i = 0; i < sizeof unmodelled / sizeof unmodelled[0]; i++) {
		const struct unmodelled *u = &unmodelled[i];
		for (int k = 0; k < 3 && u->paths[k]; k++) {
			json_object *v = at(root, u->paths[k]);
			if (!v || is_default(v, u->must, u->field)) /* absent or null: the default */
				continue;
			return meta_refuse(d, path, u->paths[k],
					   "%s %s: %s, so this run cannot be validated; use a "
					   "run with the default (%s%s%s)",
					   u->paths[k], json_object_to_json_string(v), u->what,
					   u->field ? u->field : "", u->field ? "=" : "",
					   must_default[u->must]);
		}
	}
	return 0;
}

static int read_meta(const char *path, struct meta *m, struct lsim_diag *d)
{
	json_object *root = json_object_from_file(path);
	if (!root) {
		const char *why = json_util_get_last_err();
		int n = why ? (int)strcspn(why, "\n") : 0; /* json-c ends it with a newline */
		return lsim_diag_set(d, LSIM_EFORMAT, path, 0, 0, "", "cannot read JSON: %.*s",
				     n, why ? why : "");
	}
	int rc = 0;
	if (!json_object_is_type(root, json_type_object))
		rc = lsim_diag_set(d, LSIM_EFORMAT, path, 1, 0, "",
				   "meta.json must hold a JSON object, found %s",
				   json_type_to_name(json_object_get_type(root)));
	json_object *v = NULL;
	const char *w = NULL;
	int got = 0;
	/* read only when prefix caching is unstated, but a wrong type is
	 * refused whenever it is there */
	m->v_major = m->v_minor = -1;
	if (rc == 0 && (got = first_of(root, path, PATHS("vllm_version"), json_type_string,
				       &v, &w, d)) < 0)
		rc = got;
	else if (got > 0 && (sscanf(json_object_get_string(v), "%d.%d", &m->v_major,
				    &m->v_minor) != 2 || m->v_major < 0 || m->v_minor < 0))
		m->v_major = m->v_minor = -1;
	if (rc == 0)
		rc = meta_int(root, path, PATHS("engine_kwargs.max_num_seqs",
					    "resolved_config.scheduler_config.max_num_seqs"),
			      0, true, &m->max_num_seqs, NULL, d);
	if (rc == 0)
		rc = meta_int(root, path,
			      PATHS("engine_kwargs.max_num_batched_tokens",
				    "resolved_config.scheduler_config.max_num_batched_tokens"),
			      0, true, &m->max_batched, NULL, d);
	if (rc == 0)
		rc = meta_int(root, path,
			      PATHS("engine_kwargs.tensor_parallel_size",
				    "resolved_config.parallel_config.tensor_parallel_size"),
			      0, true, &m->tp, NULL, d);
	if (rc == 0)
		rc = meta_int(root, path,
			      PATHS("engine_kwargs.data_parallel_size",
				    "resolved_config.parallel_config.data_parallel_size"),
			      1, false, &m->dp, NULL, d);
	if (rc == 0)
		rc = meta_int(root, path,
			      PATHS("engine_kwargs.pipeline_parallel_size",
				    "resolved_config.parallel_config.pipeline_parallel_size"),
			      1, false, &m->pp, NULL, d);
	if (rc == 0 && m->pp > 64)
		rc = lsim_diag_set(d, LSIM_EINVAL, path,
				   key_line(path, "pipeline_parallel_size"), 0,
				   "pipeline_parallel_size",
				   "pipeline_parallel_size %lld: at most 64 stages are replayed",
				   (long long)m->pp);
	if (rc == 0 && m->dp > 64)
		rc = lsim_diag_set(d, LSIM_EINVAL, path,
				   key_line(path, "data_parallel_size"), 0, "data_parallel_size",
				   "data_parallel_size %lld: at most 64 ranks are replayed",
				   (long long)m->dp);
	/* ranks on this node: vLLM takes data_parallel_size when it is unset
	 * (EngineArgs.create_engine_config), so fewer means the ranks spanned
	 * nodes, whose gathers the fabric of one node would not time. Ray's
	 * backend counts them as it places them: not read there. */
	int64_t local = 0;
	const char *local_from = NULL;
	if (rc == 0)
		rc = meta_int(root, path,
			      PATHS("engine_kwargs.data_parallel_size_local",
				    "resolved_config.parallel_config.data_parallel_size_local"),
			      m->dp, false, &local, &local_from, d);
	if (rc == 0 &&
	    (got = first_of(root, path,
			    PATHS("engine_kwargs.data_parallel_backend",
				  "resolved_config.parallel_config.data_parallel_backend"),
			    json_type_string, &v, &w, d)) < 0)
		rc = got;
	if (rc == 0 && local < m->dp && !(got > 0 && strcmp(json_object_get_string(v), "ray") == 0))
		rc = lsim_diag_set(d, LSIM_EINVAL, path, key_line(path, local_from), 0, local_from,
				   "%s %lld with data_parallel_size %lld: the ranks spanned "
				   "nodes, and validate times their collectives on one node's "
				   "fabric, so this run cannot be validated; use a run on one "
				   "node",
				   local_from, (long long)local, (long long)m->dp);
	if (rc == 0 &&
	    (got = first_of(root, path,
			    PATHS("engine_kwargs.enable_expert_parallel",
				  "resolved_config.parallel_config.enable_expert_parallel"),
			    json_type_boolean, &v, &w, d)) > 0)
		m->ep = json_object_get_boolean(v);
	if (got < 0)
		rc = got;
	if (rc == 0 &&
	    (got = first_of(root, path,
			    PATHS("engine_kwargs.all2all_backend",
				  "resolved_config.parallel_config.all2all_backend"),
			    json_type_string, &v, &m->a2a_from, d)) > 0)
		snprintf(m->a2a, sizeof m->a2a, "%s", json_object_get_string(v));
	if (got < 0)
		rc = got;
	/* null (older logs) or absent: the model's context, as vLLM takes it */
	if (rc == 0)
		rc = meta_int(root, path,
			      PATHS("engine_kwargs.max_model_len",
				    "resolved_config.model_config.max_model_len"),
			      0, false, &m->max_model_len, &m->len_from, d);
	/* no kv_cache block: the memory plan sizes the cache (each rank's) */
	if (rc == 0)
		rc = meta_int(root, path,
			      PATHS("kv_cache.num_gpu_blocks",
				    "resolved_config.cache_config.num_gpu_blocks"),
			      0, false, &m->blocks, &m->blocks_from, d);
	if (rc == 0)
		rc = meta_int(root, path,
			      PATHS("kv_cache.block_size", "engine_kwargs.block_size",
				    "resolved_config.cache_config.block_size"),
			      16, false, &m->block_size, NULL, d);
	m->gpu_mem_util = 0.9; /* vLLM's default */
	if (rc == 0 &&
	    (got = first_of(root, path,
			    PATHS("kv_cache.gpu_memory_utilization",
				  "engine_kwargs.gpu_memory_utilization",
				  "resolved_config.cache_config.gpu_memory_utilization"),
			    json_type_double, &v, &w, d)) > 0)
		m->gpu_mem_util = json_object_get_double(v);
	if (got < 0)
		rc = got;
	if (rc == 0 && !(m->gpu_mem_util > 0 && m->gpu_mem_util <= 1))
		rc = lsim_diag_set(d, LSIM_EINVAL, path, key_line(path, w), 0, w,
				   "gpu_memory_utilization must be in (0, 1]");
	/* Unstated: the default of the vLLM that wrote the log. It changed
	 * between engine generations (V0 off; V1 on, the default engine from
	 * 0.8.0 on), and it moves a KV-bound run's latencies by several
	 * percent, so with neither the setting nor the version it is refused. */
	if (rc == 0 &&
	    (got = first_of(root, path,
			    PATHS("kv_cache.enable_prefix_caching",
				  "engine_kwargs.enable_prefix_caching",
				  "resolved_config.cache_config.enable_prefix_caching"),
			    json_type_boolean, &v, &w, d)) > 0) {
		m->prefix_caching = json_object_get_boolean(v);
		m->prefix_from = w;
	}
	if (got < 0)
		rc = got;
	else if (rc == 0 && got == 0) {
		int major = -1, minor = -1;
		if ((got = first_of(root, path, PATHS("vllm_version"), json_type_string,
				    &v, &w, d)) > 0 &&
		    sscanf(json_object_get_string(v), "%d.%d", &major, &minor) == 2 &&
		    major >= 0 && minor >= 0) {
			m->prefix_caching = major > 0 || minor >= 8;
			snprintf(m->prefix_default, sizeof m->prefix_default,
				 "unstated: the default of vLLM %.32s, %s",
				 json_object_get_string(v),
				 m->prefix_caching ? "V1 engine" : "V0 engine");
		} else if (got < 0)
			rc = got;
		else
			rc = lsim_diag_set(d, LSIM_EFORMAT, path,
					   key_line(path, "engine_kwargs"), 0,
					   "engine_kwargs.enable_prefix_caching",
					   "meta.json says neither whether prefix caching was on "
					   "(kv_cache.enable_prefix_caching, engine_kwargs."
					   "enable_prefix_caching or resolved_config.cache_config."
					   "enable_prefix_caching) nor which vLLM wrote it "
					   "(vllm_version, whose default would decide): add "
					   "engine_kwargs.enable_prefix_caching true or false as "
					   "the run had it");
	}
	if (rc == 0 &&
	    (got = first_of(root, path, PATHS("hardware.device_total_memory_bytes"),
			    json_type_double, &v, &w, d)) > 0)
		m->device_bytes = json_object_get_double(v);
	if (got < 0)
		rc = got;
	if (rc == 0 && got > 0 &&
	    !(m->device_bytes > 0 && m->device_bytes < 1e15 &&
	      m->device_bytes == floor(m->device_bytes)))
		rc = lsim_diag_set(d, LSIM_EINVAL, path, key_line(path, w), 0, w,
				   "device memory must be a positive whole number of bytes "
				   "below 1 PB, not %g", m->device_bytes);
	if (rc == 0 &&
	    (got = first_of(root, path, PATHS("hardware.device_name"), json_type_string,
			    &v, &w, d)) > 0)
		snprintf(m->device, sizeof m->device, "%s", json_object_get_string(v));
	if (got < 0)
		rc = got;
	if (rc == 0 &&
	    (got = first_of_x(root, path, PATHS("model", "engine_kwargs.model"),
			      json_type_string, false, &v, &w, d)) > 0)
		snprintf(m->model, sizeof m->model, "%s", json_object_get_string(v));
	if (got < 0)
		rc = got;
	if (rc == 0)
		rc = check_unmodelled(root, path, d);
	json_object_put(root);
	return rc;
}

static int push(struct lat *l, int k, double v)
{
	double *p = realloc(l->v[k], (l->n[k] + 1) * sizeof *p);
	if (!p)
		return LSIM_ENOMEM;
	l->v[k] = p;
	p[l->n[k]++] = v;
	return 0;
}

/* One time of a requests.jsonl line (s): present, a number (not null, a
 * string or a list), finite, not negative, within the clock's range. */
static int real_num(json_object *o, const char *key, const char *path, int lineno,
		    bool required, double *x, bool *present, struct lsim_diag *d)
{
	json_object *v = NULL;
	*present = json_object_object_get_ex(o, key, &v);
	if (!*present && !required)
		return 0;
	if (!*present)
		return lsim_diag_set(d, LSIM_EFORMAT, path, lineno, 0, key,
				     "no %s: every line needs queued_ts, first_token_ts, "
				     "last_token_ts and output_toks", key);
	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
		return lsim_diag_set(d, LSIM_EFORMAT, path, lineno, 0, key,
				     "%s must be a number, found %s", key,
				     json_object_to_json_string(v));
	*x = json_object_get_double(v);
	if (!isfinite(*x) || *x < 0)
		return lsim_diag_set(d, LSIM_EFORMAT, path, lineno, 0, key,
				     "%s must be a finite number not below 0, found %s", key,
				     json_object_to_json_string(v));
	/* the simulator's clock: int64 nanoseconds, some 292 years */
	if (*x >= 9.2e9)
		return lsim_diag_set(d, LSIM_EFORMAT, path, lineno, 0, key,
				     "%s %s s is out of range (times are seconds below "
				     "9.2e9, the simulator's 64-bit nanosecond clock)",
				     key, json_object_to_json_string(v));
	return 0;
}

/*
 * The measured latencies of requests.jsonl. Measured data get the checks
 * configs get (docs/reliability.md): every time a finite, non-negative
 * number, in the order a request lives through them (queued_ts <=
 * scheduled_ts, where given, <= first_token_ts <= last_token_ts), at
 * least one output token. A line that breaks one is refused with its line
 * and key: a NaN or a first token before its arrival would otherwise pass
 * into the measured percentiles as nan or a negative TTFT.
 */
static int read_real(const char *path, struct lat *l, struct lsim_diag *d)
{
	FILE *f = NULL;
	int rc = lsim_open_input(path, "", &f, d);
	if (rc)
		return rc;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len = 0;
	int lineno = 0;
	while (rc == 0) {
		/* a failed read is an error, not the end: the measured requests
		 * must not be cut short silently */
		rc = lsim_read_line(f, &line, &cap, &len, path, lineno + 1, d);
		if (rc || len < 0)
			break;
		lineno++;
		if (line[strspn(line, " \t\r\n")] == '\0')
			continue;
		json_object *o = json_tokener_parse(line);
		double tq = 0, ts = 0, tf = 0, tl = 0;
		bool has_q, has_s, has_f, has_l, has_o;
		json_object *out = NULL;
		if (!o || !json_object_is_type(o, json_type_object))
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, lineno, 0, "",
					   "not a JSON object");
		if (rc == 0)
			rc = real_num(o, "queued_ts", path, lineno, true, &tq, &has_q, d);
		if (rc == 0)
			rc = real_num(o, "scheduled_ts", path, lineno, false, &ts, &has_s, d);
		if (rc == 0)
			rc = real_num(o, "first_token_ts", path, lineno, true, &tf, &has_f, d);
		if (rc == 0)
			rc = real_num(o, "last_token_ts", path, lineno, true, &tl, &has_l, d);
		if (rc == 0 && !(has_o = json_object_object_get_ex(o, "output_toks", &out)))
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, lineno, 0, "output_toks",
					   "no output_toks: every line needs queued_ts, "
					   "first_token_ts, last_token_ts and output_toks");
		if (rc == 0 && (!json_object_is_type(out, json_type_int) ||
				json_object_get_int64(out) < 1 ||
				json_object_get_int64(out) > INT32_MAX))
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, lineno, 0, "output_toks",
					   "output_toks must be an integer from 1 to %d (a "
					   "finished request has its first token), found %s",
					   INT32_MAX, json_object_to_json_string(out));
		if (rc == 0 && tf < tq)
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, lineno, 0, "first_token_ts",
					   "first_token_ts %.9f is before queued_ts %.9f: a "
					   "first token cannot come before its request",
					   tf, tq);
		if (rc == 0 && has_s && !(ts >= tq && ts <= tf))
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, lineno, 0, "scheduled_ts",
					   "scheduled_ts %.9f is %s %s %.9f", ts,
					   ts < tq ? "before" : "after",
					   ts < tq ? "queued_ts" : "first_token_ts",
					   ts < tq ? tq : tf);
		if (rc == 0 && tl < tf)
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, lineno, 0, "last_token_ts",
					   "last_token_ts %.9f is before first_token_ts %.9f",
					   tl, tf);
		if (rc == 0) {
			int64_t n = json_object_get_int64(out);
			rc = push(l, 0, (tf - tq) * 1e3);
			if (rc == 0 && n > 1)
				rc = push(l, 1, (tl - tf) * 1e3 / (double)(n - 1));
			if (rc == 0)
				rc = push(l, 2, (tl - tq) * 1e3);
		}
		json_object_put(o);
	}
	free(line);
	fclose(f);
	return rc;
}

/* The catalogue model for the run (--model, else meta.json's "model"). */
static int find_model(const struct lsim_validate_opts *o, const struct meta *m,
		      const char *meta_path, struct lsim_model_arch *arch,
		      struct lsim_diag *d)
{
	char catalogue[1024];
	(void)lsim_data_find("models.yaml", catalogue, sizeof catalogue);
	bool given = o->model && o->model[0];
	if (!given && !m->model[0])
		return lsim_diag_set(d, LSIM_EFORMAT, meta_path, 0, 0, "model",
				     "no \"model\" in meta.json: pass --model NAME "
				     "(a name of %s)", catalogue);
	int rc = lsim_model_match(catalogue, given ? o->model : m->model, arch, d);
	if (rc == LSIM_ENOENT) {
		char why[sizeof d->msg];
		snprintf(why, sizeof why, "%s", d->msg);
		if (given)
			rc = lsim_diag_set(d, rc, "", 0, 0, "--model",
					   "%s; write a model of %s", why, catalogue);
		else
			rc = lsim_diag_set(d, rc, meta_path, key_line(meta_path, "model"),
					   0, "model",
					   "%s; pass --model NAME with a model of %s, or add "
					   "the model there", why, catalogue);
	}
	return rc;
}

static int simulate(const struct lsim_validate_opts *o, const struct meta *m,
		    const char *meta_path, const char *jsonl, struct lat *l,
		    struct lsim_validate_result *res, struct lsim_diag *d)
{
	struct lsim_model_arch arch;
	int rc = find_model(o, m, meta_path, &arch, d);
	if (rc != 0)
		return rc;
	snprintf(res->model, sizeof res->model, "%s", arch.name);
	struct lsim_gpu_profile gpu;
	memset(&gpu, 0, sizeof gpu);
	snprintf(gpu.name, sizeof gpu.name, "measured");
	if (o->gpu && o->gpu[0]) {
		rc = lsim_gpu_profile_load(NULL, o->gpu, &gpu, d);
		if (rc != 0)
			return rc;
	} else if (m->blocks == 0) {
		if (!(m->device_bytes > 0))
			return lsim_diag_set(d, LSIM_EINVAL, meta_path, 0, 0, "kv_cache",
					     "meta.json gives neither kv_cache.num_gpu_blocks nor "
					     "hardware.device_total_memory_bytes, so the KV cache "
					     "cannot be sized: pass --gpu NAME (a GPU profile)");
		gpu.hbm_bytes = m->device_bytes; /* the run's own device */
	}
	/* Expert parallelism splits the experts of an MoE model over the
	 * D x tp GPUs; a dense model has none to split (vLLM ignores it) */
	int64_t epn = m->ep && arch.n_experts > 0 ? m->dp * m->tp : 1;
	/* the dispatch and combine are timed as vLLM's default backend runs
	 * them: an NCCL all-gather and reduce-scatter. Unstated:
	 * allgather_reducescatter is the default of the vLLM
	 * releases that log none (VLLM_ALL2ALL_BACKEND chose it, vllm/envs.py)
	 * from 2026 on (vLLM PR 33728, 2026-02-03: "already the default"),
	 * taken here from 0.16; earlier ones defaulted to naive for a time */
	if (epn > 1 && !m->a2a[0] && !(m->v_major > 0 || m->v_minor >= 16))
		return lsim_diag_set(d, LSIM_EINVAL, meta_path,
				     key_line(meta_path, "enable_expert_parallel"), 0,
				     "all2all_backend",
				     "meta.json does not say which all-to-all backend the "
				     "expert-parallel run used (no all2all_backend), and the "
				     "default of vLLM %s is not known to be "
				     "allgather_reducescatter (the one modelled; vLLM chose it "
				     "by VLLM_ALL2ALL_BACKEND, whose default was naive for a "
				     "time): add engine_kwargs.all2all_backend as the run had it",
				     m->v_major >= 0 ? "before 0.16" : "of unknown version");
	if (epn > 1 && m->a2a[0] && strcmp(m->a2a, "allgather_reducescatter") != 0)
		return lsim_diag_set(d, LSIM_EINVAL, meta_path, key_line(meta_path, "all2all_backend"),
				     0, m->a2a_from,
				     "all2all_backend \"%s\": the expert-parallel dispatch and "
				     "combine are modelled as vLLM's default "
				     "allgather_reducescatter (an NCCL all-gather and "
				     "reduce-scatter), not as that backend's kernels, so this run "
				     "cannot be validated; use a run with allgather_reducescatter",
				     m->a2a);
	if (epn > 1 && arch.n_experts % epn != 0)
		return meta_refuse(d, meta_path, "data_parallel_size",
				   "the %d experts of %s do not split evenly over the %lld "
				   "expert-parallel GPUs (an uneven split is not modelled), so "
				   "this run cannot be validated",
				   arch.n_experts, arch.name, (long long)epn);
	if (m->pp > arch.n_layers)
		return meta_refuse(d, meta_path, "pipeline_parallel_size",
				   "pipeline_parallel_size %lld is more stages than the %d "
				   "decoder layers of %s",
				   (long long)m->pp, arch.n_layers, arch.name);
	/* with tp > 1 the experts of one rank's TP group combine by the
	 * all-reduce (vLLM uses all-to-all kernels across data-parallel ranks
	 * only), a mix the table model does not time */
	if (epn > 1 && m->tp > 1)
		return meta_refuse(d, meta_path, "enable_expert_parallel",
				   "enable_expert_parallel with tensor_parallel_size %lld: "
				   "expert parallelism across tensor-parallel GPUs is not "
				   "modelled yet (only across data-parallel ranks of one GPU "
				   "each), so this run cannot be validated",
				   (long long)m->tp);
	/* without it vLLM shards every expert over the D x tp GPUs by tensor
	 * parallelism (FusedMoEParallelConfig: flatten_tp_across_dp) and
	 * gathers every rank's tokens for them, which is not modelled */
	if (m->dp > 1 && arch.n_experts > 0 && !m->ep)
		return meta_refuse(d, meta_path, "data_parallel_size",
				   "data_parallel_size %lld of the MoE model %s without "
				   "enable_expert_parallel: vLLM then shards every expert over "
				   "the %lld GPUs by tensor parallelism and gathers every rank's "
				   "tokens for them, which is not modelled, so this run cannot "
				   "be validated; use a run with enable_expert_parallel true",
				   (long long)m->dp, arch.name, (long long)(m->dp * m->tp));
	/* data-parallel groups of pipelines: the scenario's limit too */
	if (m->dp > 1 && m->pp > 1)
		return meta_refuse(d, meta_path, "pipeline_parallel_size",
				   "pipeline_parallel_size %lld with data_parallel_size %lld: "
				   "data-parallel ranks of pipelines are not modelled yet, so "
				   "this run cannot be validated; use a run with one of them 1",
				   (long long)m->pp, (long long)m->dp);
	/* Tensor parallel: the all-reduces run on the GPUs' fabric, from
	 * --gpu or the profile the run's device name matches; expert
	 * parallel: its all-gathers and reduce-scatters too; pipeline parallel: the stages'
	 * send/recv and all-gathers */
	bool need_fabric = m->tp > 1 || epn > 1 || m->pp > 1;
	const char *fabric_key = m->tp > 1	 ? "tensor_parallel_size"
				 : m->pp > 1 ? "pipeline_parallel_size"
					     : "enable_expert_parallel";
	const char *fabric_why = m->tp > 1   ? "tensor_parallel_size > 1"
				 : m->pp > 1 ? "pipeline_parallel_size > 1"
					     : "enable_expert_parallel";
	const char *fabric_ops = m->tp > 1   ? "all-reduces"
				 : m->pp > 1 ? "send/recv between stages"
					     : "all-gathers and reduce-scatters";
	struct lsim_coll_topo ct;
	const struct lsim_gpu_profile *fabric = NULL;
	struct lsim_gpu_profile matched;
	if (need_fabric && o->gpu && o->gpu[0]) {
		fabric = &gpu;
		snprintf(res->fabric_from, sizeof res->fabric_from, "--gpu %s", gpu.name);
	} else if (need_fabric) {
		char dir[1024], name[128];
		(void)lsim_data_find("profiles", dir, sizeof dir);
		rc = m->device[0] ? lsim_gpu_profile_match(dir, m->device, name, sizeof name, d)
				  : LSIM_ENOENT;
		if (rc == 0)
			rc = lsim_gpu_profile_load(dir, name, &matched, d);
		if (rc != 0) {
			char why[sizeof d->msg];
			snprintf(why, sizeof why, "%s", m->device[0] ? d->msg : "no hardware.device_name");
			return lsim_diag_set(d, LSIM_EINVAL, meta_path,
					     key_line(meta_path, fabric_key), 0, fabric_key,
					     "%s: the %s need the GPUs' fabric, and %s: pass "
					     "--gpu NAME (a profile of %s)",
					     fabric_why, fabric_ops, why, dir);
		}
		fabric = &matched;
		snprintf(res->fabric_from, sizeof res->fabric_from,
			 "hardware.device_name \"%.60s\"", m->device);
	}
	if (fabric) {
		lsim_coll_topo_from_profile(fabric, &ct);
		snprintf(res->fabric, sizeof res->fabric, "%s", fabric->name);
	}
	if (m->pp > 1 && fabric != &gpu) {
		/* the stages' send/recv read the instance's profile: the run's
		 * device lends it its fabric */
		gpu.fabric = fabric->fabric;
		gpu.nvlink_bw = fabric->nvlink_bw;
		gpu.nvlink_links = fabric->nvlink_links;
		gpu.pcie_bw = fabric->pcie_bw;
		gpu.pcie_switch_gpus = fabric->pcie_switch_gpus;
		gpu.gpu_p2p = fabric->gpu_p2p;
		gpu.compute_capability = fabric->compute_capability;
	}
	struct lsim_table_params tp = {
		.tp = (int)m->tp, .n_layers = arch.n_layers,
		.cpu_overhead_s = o->cpu_overhead_s,
		.coll = fabric ? &ct : NULL,
		.act_bytes = (double)arch.hidden * arch.bytes_per_param,
		.logit_bytes = lsim_memplan_padded_vocab(&arch) * arch.bytes_per_param,
		.ep = (int)epn,
		/* the tables must be of the run's model and device (--gpu
		 * lends its fabric and memory, not its kernels' times) */
		.model = &arch,
		.device = m->device[0] ? m->device : NULL,
	};
	res->dp = m->dp;
	res->pp = m->pp;
	res->ep = epn;
	res->lockstep = m->dp > 1 && arch.n_experts > 0;
	struct lsim_sim s;
	rc = lsim_sim_init(&s, 1, d);
	if (rc != 0)
		return rc;
	s.retain_requests = true; /* compared request by request below */
	s.sample_period = 0;
	struct lsim_engine_cfg ec = {
		.max_num_seqs = m->max_num_seqs,
		.max_num_batched_tokens = m->max_batched,
		.block_size = m->block_size,
		.num_gpu_blocks = m->blocks, /* 0: the instance derives it */
		.gpu_memory_utilization = m->gpu_mem_util,
		.max_model_len = m->max_model_len, /* 0: the model's context */
		.enable_prefix_caching = m->prefix_caching,
		.enable_chunked_prefill = true,
		.pp = m->pp,
		/* expert parallel: a rank holds its share of the experts */
		.experts_per_rank = epn > 1 ? (int32_t)(arch.n_experts / epn) : 0,
		/* a dense model's ranks are independent engines (no DP group) */
		.dp = arch.n_experts > 0 ? (int32_t)m->dp : 1,
	};
	/* the ranks' caches together stay within one instance's limit
	 * (kvcache.h): host memory grows with the blocks, used or not */
	int64_t blocks = m->blocks;
	if (blocks == 0) {
		struct lsim_memplan_in mi = lsim_memplan_in_for(&ec, &gpu, &arch, (int32_t)m->tp);
		struct lsim_memplan plan;
		lsim_memplan_compute(&mi, &plan);
		blocks = plan.blocks;
	}
	if (blocks > LSIM_KV_BLOCKS_MAX / m->dp) {
		bool by_gpu = !m->blocks && o->gpu && o->gpu[0];
		const char *w = m->blocks ? m->blocks_from
			: by_gpu ? "hbm" : "hardware.device_total_memory_bytes";
		lsim_sim_release(&s);
		return lsim_diag_set(d, LSIM_EINVAL, by_gpu ? o->gpu : meta_path,
				     by_gpu ? 0 : key_line(meta_path, w), 0, w,
				     "%s %lld KV blocks per rank x %lld data-parallel rank(s) is "
				     "more than llmsim holds (at most %d in all; no GPU's "
				     "memory holds that many)",
				     m->blocks ? "the run's" : "the memory plan gives",
				     (long long)blocks, (long long)m->dp, LSIM_KV_BLOCKS_MAX);
	}
	/* one instance per data-parallel rank, all sharing one perf model (a
	 * pure function of the batch: the table is read once, not per rank) */
	struct lsim_instance *ranks[64];
	struct lsim_perf *perf = NULL;
	rc = lsim_perf_table_create(o->perf_dir, &tp, &perf, d);
	for (int64_t k = 0; rc == 0 && k < m->dp; k++) {
		struct lsim_instance *in = lsim_sim_add_instance(&s);
		rc = in ? lsim_instance_init(in, &s.sv, (int32_t)k, &ec, &gpu, &arch,
					     (int32_t)m->tp, lsim_perf_share(perf), d)
			: LSIM_ENOMEM;
		if (rc != 0 && in)
			lsim_sim_drop_instance(&s);
		if (rc == 0)
			ranks[k] = in;
	}
	lsim_perf_destroy(perf); /* the instances hold it now */
	if (rc == 0) {
		res->kv_blocks = lsim_instance_kv_blocks(ranks[0]);
		res->max_model_len = ranks[0]->max_model_len;
	}
	if (rc == 0 && m->dp > 1 &&
	    !lsim_sim_add_dp(&s, ranks, (int32_t)m->dp, res->lockstep))
		rc = LSIM_ENOMEM;
	struct lsim_workload *w = NULL;
	lsim_time back = 0;
	if (rc == 0)
		rc = lsim_workload_jsonl_open_sorted(jsonl, &w, &res->n_back, &back, d);
	res->max_back_ms = (double)back / 1e6;
	if (rc == 0)
		rc = lsim_sim_run(&s, w, 0, d);
	for (size_t i = 0; rc == 0 && i < s.n_reqs; i++) {
		const struct lsim_req *r = &s.sv.reqs[i];
		if (r->status != LSIM_REQ_FINISHED) {
			rc = lsim_diag_set(d, LSIM_EINVAL, jsonl, (int)i + 1, 0, "",
					   "request %llu did not finish in the simulation",
					   (unsigned long long)r->id);
			break;
		}
		double ttft = (double)(r->first_token - r->arrival) / 1e6;
		double e2e = (double)(r->finish - r->arrival) / 1e6;
		rc = push(l, 0, ttft);
		if (rc == 0 && r->output > 1)
			rc = push(l, 1, (double)(r->finish - r->first_token) / 1e6 /
						(double)(r->output - 1));
		if (rc == 0)
			rc = push(l, 2, e2e);
		if (r->preemptions > 0)
			res->n_preempted++;
	}
	lsim_sim_release(&s);
	return rc;
}

int lsim_validate_run(const struct lsim_validate_opts *o,
		      struct lsim_validate_result *out, struct lsim_diag *d)
{
	memset(out, 0, sizeof *out);
	char meta_path[1024], jsonl[1024];
	snprintf(meta_path, sizeof meta_path, "%s/meta.json", o->run_dir);
	snprintf(jsonl, sizeof jsonl, "%s/requests.jsonl", o->run_dir);
	struct meta m;
	memset(&m, 0, sizeof m);
	struct lat real = {{NULL}, {0}}, sim = {{NULL}, {0}};
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = read_meta(meta_path, &m, d);
	if (rc == 0)
		rc = read_real(jsonl, &real, d);
	if (rc == 0 && real.n[2] == 0)
		rc = lsim_diag_set(d, LSIM_EFORMAT, jsonl, 0, 0, "",
				   "no request in the file: nothing to compare");
	if (rc == 0)
		rc = simulate(o, &m, meta_path, jsonl, &sim, out, d);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rc == 0) {
		snprintf(out->run_model, sizeof out->run_model, "%s", m.model);
		out->block_size = m.block_size;
		out->kv_from = m.blocks_from;
		out->len_from = m.len_from;
		out->prefix_caching = m.prefix_caching;
		snprintf(out->prefix_from, sizeof out->prefix_from, "%s",
			 m.prefix_from ? m.prefix_from : m.prefix_default);
		out->n_requests = real.n[2];
		for (int k = 0; k < 3; k++) {
			double a[5], b[5];
			stats(real.v[k], real.n[k], a);
			stats(sim.v[k], sim.n[k], b);
			for (int j = 0; j < 5; j++) {
				struct lsim_validate_row *row = &out->rows[k][j];
				row->real_ms = a[j];
				row->sim_ms = b[j];
				row->err_pct = a[j] != 0 ? (b[j] - a[j]) / a[j] * 100 : 0;
			}
		}
		out->wall_s = (double)(t1.tv_sec - t0.tv_sec) +
			      (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	}
	lat_release(&real);
	lat_release(&sim);
	return rc;
}

void lsim_validate_format(const struct lsim_validate_result *r, bool json,
			  struct lsim_buf *b)
{
	if (json) {
		lsim_buf_printf(b, "{\"metrics\": {");
		for (int k = 0; k < 3; k++)
			for (int j = 0; j < 5; j++) {
				const struct lsim_validate_row *row = &r->rows[k][j];
				lsim_buf_printf(b, "%s\"%s_%s\": {\"real\": %.6f, \"sim\": %.6f, \"err_pct\": %.4f}",
						k || j ? ", " : "", metric_names[k],
						stat_names[j], row->real_ms, row->sim_ms,
						row->err_pct);
			}
		lsim_buf_printf(b, "}, \"requests\": %zu, \"sim_preempted_requests\": %zu, "
				"\"model\": \"%s\", \"kv_blocks\": %lld, \"kv_blocks_from\": \"%s\", "
				"\"block_size\": %lld, \"max_model_len\": %lld, "
				"\"max_model_len_from\": \"%s\", \"lines_out_of_order\": %llu, "
				"\"max_step_back_ms\": %.6f, \"prefix_caching\": %s, "
				"\"prefix_caching_from\": \"%s\", \"fabric\": \"%s\", "
				"\"data_parallel_size\": %lld, \"expert_parallel_gpus\": %lld, "
				"\"lockstep\": %s, \"pipeline_parallel_size\": %lld}\n",
				r->n_requests, r->n_preempted, r->model, (long long)r->kv_blocks,
				r->kv_from ? r->kv_from : "derived", (long long)r->block_size,
				(long long)r->max_model_len,
				r->len_from ? r->len_from : "model context",
				(unsigned long long)r->n_back, r->max_back_ms,
				r->prefix_caching ? "true" : "false", r->prefix_from, r->fabric,
				(long long)r->dp, (long long)r->ep, r->lockstep ? "true" : "false",
				(long long)r->pp);
		return;
	}
	lsim_buf_printf(b, "%-12s %14s %14s %9s\n", "metric (ms)", "measured",
			"simulated", "diff %");
	for (int k = 0; k < 3; k++) {
		for (int j = 0; j < 5; j++) {
			const struct lsim_validate_row *row = &r->rows[k][j];
			char name[32];
			snprintf(name, sizeof name, "%s %s", metric_names[k], stat_names[j]);
			lsim_buf_printf(b, "%-12s %14.1f %14.1f %+8.1f%%\n", name,
					row->real_ms, row->sim_ms, row->err_pct);
		}
		lsim_buf_printf(b, "\n");
	}
	lsim_buf_printf(b, "%zu requests; %zu preempted at least once in the simulation\n",
			r->n_requests, r->n_preempted);
	lsim_buf_printf(b, "model %s (the run's %s)\n", r->model,
			r->run_model[0] ? r->run_model : "model not named");
	lsim_buf_printf(b, "KV cache %lld blocks of %lld tokens (%s)\n",
			(long long)r->kv_blocks, (long long)r->block_size,
			r->kv_from ? r->kv_from : "derived from the device memory");
	lsim_buf_printf(b, "max_model_len %lld (%s)\n", (long long)r->max_model_len,
			r->len_from ? r->len_from : "null in meta.json: the model's context");
	if (r->dp > 1)
		lsim_buf_printf(b, "data parallel: %lld ranks behind vLLM's DP load balancer, "
				   "%s\n", (long long)r->dp,
				r->lockstep ? "stepping in lockstep (an MoE model)"
					    : "each stepping on its own (a dense model)");
	if (r->ep > 1)
		lsim_buf_printf(b, "expert parallel over %lld GPUs\n", (long long)r->ep);
	if (r->pp > 1)
		lsim_buf_printf(b, "pipeline parallel: %lld stages, up to %lld batches in flight\n",
				(long long)r->pp, (long long)r->pp);
	if (r->fabric_from[0])
		lsim_buf_printf(b, "%s on the fabric of profile %s (%s)\n",
				r->ep > 1 || r->pp > 1 ? "collectives" : "all-reduces", r->fabric,
				r->fabric_from);
	lsim_buf_printf(b, "prefix caching %s (%s)\n", r->prefix_caching ? "on" : "off",
			r->prefix_from);
	if (r->n_back > 0)
		lsim_buf_printf(b, "requests taken in queued_ts order: %llu lines of requests.jsonl "
				   "are earlier than the line before them (at most %.3f ms)\n",
				(unsigned long long)r->n_back, r->max_back_ms);
}
