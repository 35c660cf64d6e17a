/*
 * validate.c - `llmsim validate`: replays a measured vLLM run (its
 * requests.jsonl arriving at queued_ts, with the engine settings of its
 * meta.json) through one simulated instance using the matching per-layer
 * profile, and compares TTFT, TPOT and end-to-end latency percentiles.
 */
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"
#include "validate.h"

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

static int get_int(json_object *o, const char *a, const char *b,
		   int64_t *out)
{
	json_object *x = NULL, *y = NULL;
	if (!json_object_object_get_ex(o, a, &x))
		return -1;
	if (b) {
		if (!json_object_object_get_ex(x, b, &y))
			return -1;
		x = y;
	}
	if (!json_object_is_type(x, json_type_int))
		return -1;
	*out = json_object_get_int64(x);
	return 0;
}

struct meta {
	int64_t max_num_seqs, max_batched, tp, max_model_len;
	int64_t blocks, block_size;
	bool prefix_caching;
	double total_bytes; /* hardware.device_total_memory_bytes; 0: absent */
	char model[128];
};

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
	static const struct {
		const char *a, *b;
		size_t off;
	} f[] = {
		{"engine_kwargs", "max_num_seqs", offsetof(struct meta, max_num_seqs)},
		{"engine_kwargs", "max_num_batched_tokens", offsetof(struct meta, max_batched)},
		{"engine_kwargs", "tensor_parallel_size", offsetof(struct meta, tp)},
		{"engine_kwargs", "max_model_len", offsetof(struct meta, max_model_len)},
		{"kv_cache", "num_gpu_blocks", offsetof(struct meta, blocks)},
		{"kv_cache", "block_size", offsetof(struct meta, block_size)},
	};
	for (size_t i = 0; i < sizeof f / sizeof f[0] && rc == 0; i++)
		if (get_int(root, f[i].a, f[i].b,
			    (int64_t *)(void *)((char *)m + f[i].off)) != 0)
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, 0, 0, f[i].b,
					   "missing integer %s.%s", f[i].a, f[i].b);
	json_object *kv = NULL, *pc = NULL, *model = NULL;
	if (rc == 0 && json_object_object_get_ex(root, "kv_cache", &kv) &&
	    json_object_object_get_ex(kv, "enable_prefix_caching", &pc))
		m->prefix_caching = json_object_get_boolean(pc);
	int64_t total = 0; /* what the memory plan reads when num_gpu_blocks is 0 */
	if (rc == 0 && get_int(root, "hardware", "device_total_memory_bytes", &total) == 0)
		m->total_bytes = (double)total;
	if (rc == 0 && json_object_object_get_ex(root, "model", &model)) {
		const char *s = json_object_get_string(model);
		const char *slash = strrchr(s, '/');
		snprintf(m->model, sizeof m->model, "%s", slash ? slash + 1 : s);
	}
	if (rc == 0 && (m->blocks < 1 || m->block_size < 1 || m->max_num_seqs < 1 ||
			m->max_batched < 1 || m->tp < 1))
		rc = lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, "kv_cache",
				   "engine settings must be positive");
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

static int read_real(const char *path, struct lat *l, struct lsim_diag *d)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return lsim_diag_set(d, LSIM_EIO, path, 0, 0, "", "cannot open file");
	char *line = NULL;
	size_t cap = 0;
	int lineno = 0, rc = 0;
	while (rc == 0 && getline(&line, &cap, f) > 0) {
		lineno++;
		if (line[strspn(line, " \t\r\n")] == '\0')
			continue;
		json_object *o = json_tokener_parse(line);
		json_object *q, *ft, *lt, *out;
		if (!o || !json_object_object_get_ex(o, "queued_ts", &q) ||
		    !json_object_object_get_ex(o, "first_token_ts", &ft) ||
		    !json_object_object_get_ex(o, "last_token_ts", &lt) ||
		    !json_object_object_get_ex(o, "output_toks", &out)) {
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, lineno, 0,
					   "queued_ts",
					   "need queued_ts, first_token_ts, last_token_ts, output_toks");
		} else {
			double tq = json_object_get_double(q);
			double tf = json_object_get_double(ft);
			double tl = json_object_get_double(lt);
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

static int simulate(const struct lsim_validate_opts *o, const struct meta *m,
		    const char *jsonl, struct lat *l, size_t *n_preempted,
		    struct lsim_diag *d)
{
	struct lsim_model_arch arch;
	char catalogue[1024];
	snprintf(catalogue, sizeof catalogue, "%s/models.yaml", lsim_data_dir());
	int rc = lsim_model_load(catalogue, o->model && o->model[0] ? o->model : m->model,
				 &arch, d);
	if (rc != 0)
		return rc;
	struct lsim_gpu_profile gpu;
	memset(&gpu, 0, sizeof gpu);
	snprintf(gpu.name, sizeof gpu.name, "measured");
	gpu.hbm_bytes = m->total_bytes; /* sizes the cache when num_gpu_blocks is 0 */
	struct lsim_table_params tp = {
		.tp = (int)m->tp, .n_layers = arch.n_layers,
		.cpu_overhead_s = o->cpu_overhead_s,
	};
	struct lsim_perf *perf = NULL;
	rc = lsim_perf_table_create(o->perf_dir, &tp, &perf, d);
	if (rc != 0)
		return rc;
	struct lsim_sim s;
	rc = lsim_sim_init(&s, 1, d);
	if (rc != 0) {
		lsim_perf_destroy(perf);
		return rc;
	}
	s.retain_requests = true; /* compared request by request below */
	s.sample_period = 0;
	struct lsim_engine_cfg ec = {
		.max_num_seqs = m->max_num_seqs,
		.max_num_batched_tokens = m->max_batched,
		.block_size = m->block_size,
		.num_gpu_blocks = m->blocks,
		.gpu_memory_utilization = 0.9,
		.max_model_len = m->max_model_len,
		.enable_prefix_caching = m->prefix_caching,
		.enable_chunked_prefill = true,
	};
	struct lsim_instance *in = lsim_sim_add_instance(&s);
	rc = in ? lsim_instance_init(in, &s, 0, &ec, &gpu, &arch, (int32_t)m->tp,
				     perf, d)
		: LSIM_ENOMEM;
	if (rc != 0 && in)
		lsim_sim_drop_instance(&s);
	struct lsim_workload *w = NULL;
	if (rc == 0)
		rc = lsim_workload_jsonl_open(jsonl, &w, d);
	if (rc == 0)
		rc = lsim_sim_run(&s, w, 0, d);
	for (size_t i = 0; rc == 0 && i < s.n_reqs; i++) {
		const struct lsim_req *r = &s.reqs[i];
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
			(*n_preempted)++;
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
	if (rc == 0)
		rc = simulate(o, &m, jsonl, &sim, &out->n_preempted, d);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rc == 0) {
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
		lsim_buf_printf(b, "}, \"requests\": %zu, \"sim_preempted_requests\": %zu}\n",
				r->n_requests, r->n_preempted);
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
}
