/*
 * scenario_workload.c - a scenario's request workload: workload.traces,
 * the JSONL key mapping, the models the groups serve and workload.models,
 * lengths_from, opening the generator or the (shaped, merged) traces for
 * a run, failures.trace, and the overrides that make a run longer.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/csv.h"
#include "kernel/rng.h"
#include "run/scenario_internal.h"

/* workload.traces: several trace files merged as tenants 0, 1, ... */
int lsim_scn_bind_traces(struct lsim_scenario *sc, struct lsim_diag *d)
{
	struct lsim_node *wl = lsim_node_get(sc->doc->root, "workload");
	struct lsim_node *list = lsim_node_get(wl, "traces");
	if (!list)
		return 0;
	if (list->kind != LSIM_NODE_SEQ || list->n == 0)
		return lsim_cfg_error(d, sc->doc, list, "workload.traces", LSIM_EINVAL,
				      "expected a non-empty list of trace files");
	if (sc->wl.kind == WL_GENERATOR || sc->wl.path[0])
		return lsim_cfg_error(d, sc->doc, list, "workload.traces", LSIM_EINVAL,
				      "traces replaces path and needs kind: csv, jsonl or auto");
	sc->traces = calloc(list->n, sizeof *sc->traces);
	if (!sc->traces)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < list->n; i++) {
		if (list->items[i]->kind != LSIM_NODE_SCALAR)
			return lsim_cfg_error(d, sc->doc, list->items[i], "workload.traces",
					      LSIM_EINVAL, "each entry is a file path");
		sc->traces[i] = list->items[i]->value;
	}
	sc->n_traces = list->n;
	return 0;
}

/* kind: jsonl with arrival_column, prompt_column and output_column given
 * reads those keys (a generic JSONL); all three or none. */
int lsim_scn_check_jsonl_mapping(struct lsim_scenario *sc, struct lsim_diag *d)
{
	static const char *const keys[] = {"arrival_column", "prompt_column",
					   "output_column"};
	struct lsim_node *wl = lsim_node_get(sc->doc->root, "workload");
	int given = 0;
	for (size_t i = 0; i < N_OF(keys); i++)
		given += lsim_node_get(wl, keys[i]) != NULL;
	if (sc->wl.kind != WL_JSONL || given == 0)
		return 0;
	for (size_t i = 0; i < N_OF(keys) && given < 3; i++)
		if (!lsim_node_get(wl, keys[i])) {
			char key[64];
			snprintf(key, sizeof key, "workload.%s", keys[i]);
			return lsim_cfg_error(d, sc->doc, wl, key, LSIM_EINVAL,
					      "a JSONL key mapping needs arrival_column, "
					      "prompt_column and output_column; %s is missing",
					      keys[i]);
		}
	sc->wl.jsonl_mapped = true;
	return 0;
}

static int32_t find_name(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], s) == 0)
			return (int32_t)i;
	return -1;
}

/*
 * The models the instance groups serve, the labels a trace may use for
 * them (a model name, or a group name that names one model only), and
 * workload.models: shares by which requests are assigned to models.
 */
int lsim_scn_build_models(struct lsim_scenario *sc, struct lsim_diag *d)
{
	size_t n = sc->n_insts;
	sc->model_names = calloc(n, sizeof *sc->model_names);
	sc->group_model = calloc(n, sizeof *sc->group_model);
	sc->model_labels = calloc(2 * n, sizeof *sc->model_labels);
	sc->model_label_idx = calloc(2 * n, sizeof *sc->model_label_idx);
	if (!sc->model_names || !sc->group_model || !sc->model_labels ||
	    !sc->model_label_idx)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		/* a serverless group serves its own checkpoint (a fine-tuned
		 * variant of its model), named by the group */
		const char *m = sc->insts[i].serverless ? sc->insts[i].name : sc->insts[i].model;
		int32_t k = find_name(sc->model_names, sc->n_models, m);
		if (k < 0) {
			k = (int32_t)sc->n_models++;
			sc->model_names[k] = m;
			sc->model_labels[sc->n_model_labels] = m;
			sc->model_label_idx[sc->n_model_labels++] = k;
		}
		sc->group_model[i] = k;
	}
	for (size_t i = 0; i < n; i++) {
		const char *g = sc->insts[i].name;
		int32_t k = find_name(sc->model_labels, sc->n_model_labels, g);
		if (k >= 0) {
			if (sc->model_label_idx[k] != sc->group_model[i])
				sc->model_label_idx[k] = -1; /* names two models */
			continue;
		}
		sc->model_labels[sc->n_model_labels] = g;
		sc->model_label_idx[sc->n_model_labels++] = sc->group_model[i];
	}
	/* drop ambiguous group names: a trace naming one is an error */
	size_t k = 0;
	for (size_t i = 0; i < sc->n_model_labels; i++)
		if (sc->model_label_idx[i] >= 0) {
			sc->model_labels[k] = sc->model_labels[i];
			sc->model_label_idx[k++] = sc->model_label_idx[i];
		}
	sc->n_model_labels = k;

	/* disaggregation: prefill and decode instances come in pairs of roles */
	for (size_t i = 0; i < n; i++)
		if (sc->insts[i].eng.first_token == LSIM_FIRST_TOKEN_DECODE &&
		    sc->insts[i].role != LSIM_ROLE_PREFILL) {
			char key[64];
			snprintf(key, sizeof key, "instances[%zu].first_token", i);
			return lsim_cfg_error(d, sc->doc,
					      lsim_node_get(sc->doc->root, "instances")->items[i],
					      key, LSIM_EINVAL,
					      "decode: only a prefill instance (role: prefill) "
					      "hands its first token to another instance");
		}
	for (size_t m = 0; m < sc->n_models; m++) {
		int roles[3] = {0, 0, 0};
		size_t last = 0;
		for (size_t i = 0; i < n; i++)
			if (sc->group_model[i] == (int32_t)m) {
				roles[sc->insts[i].role]++;
				last = i;
			}
		bool no_decode = roles[LSIM_ROLE_PREFILL] > 0 && roles[LSIM_ROLE_DECODE] == 0;
		if (no_decode || (roles[LSIM_ROLE_DECODE] > 0 && roles[LSIM_ROLE_PREFILL] == 0)) {
			char key[64];
			snprintf(key, sizeof key, "instances[%zu].role", last);
			return lsim_cfg_error(d, sc->doc,
					      lsim_node_get(sc->doc->root, "instances")->items[last],
					      key, LSIM_EINVAL, "model %s has %s", sc->model_names[m],
					      no_decode ? "prefill instances but no decode instance "
							  "to hand its requests to"
							: "decode instances but no prefill instance: "
							  "decode instances take requests only from "
							  "prefill ones");
		}
	}

	struct lsim_node *wl = lsim_node_get(sc->doc->root, "workload");
	int rc = lsim_scn_bind_list_in(sc, wl, "models", "workload.models",
				       lsim_scn_model_share_keys, lsim_scn_n_model_share_keys,
				       (void **)&sc->model_shares,
				       &sc->n_model_shares, sizeof *sc->model_shares, false, d);
	if (rc != 0 || sc->n_model_shares == 0)
		return rc;
	struct lsim_node *list = lsim_node_get(wl, "models");
	if (sc->wl.model_column[0])
		return lsim_cfg_error(d, sc->doc, list, "workload.models", LSIM_EINVAL,
				      "give models by share or model_column, not both");
	sc->model_share_by_idx = calloc(sc->n_models, sizeof *sc->model_share_by_idx);
	if (!sc->model_share_by_idx)
		return LSIM_ENOMEM;
	double sum = 0;
	for (size_t i = 0; i < sc->n_model_shares; i++) {
		const struct model_share *ms = &sc->model_shares[i];
		int32_t j = find_name(sc->model_labels, sc->n_model_labels, ms->name);
		if (j < 0)
			return lsim_cfg_error(d, sc->doc, list->items[i], "workload.models",
					      LSIM_EINVAL,
					      "model '%s' is served by no instance group "
					      "(give an instance group's model or name)",
					      ms->name);
		sc->model_share_by_idx[sc->model_label_idx[j]] += ms->share;
		sum += ms->share;
	}
	if (sum < 0.999999 || sum > 1.000001)
		return lsim_cfg_error(d, sc->doc, list, "workload.models", LSIM_EINVAL,
				      "the shares add up to %g, not 1", sum);
	return 0;
}

/* workload.lengths_from: every (prompt, output) pair of a trace. */
int lsim_scn_load_pairs(struct lsim_scenario *sc, struct lsim_diag *d)
{
	if (!sc->wl.lengths_from[0])
		return 0;
	if (sc->wl.kind != WL_GENERATOR)
		return lsim_cfg_error(d, sc->doc, lsim_node_get(sc->doc->root, "workload"),
				      "workload.lengths_from", LSIM_EINVAL,
				      "lengths_from feeds a generator; a trace has its own lengths");
	char *path = lsim_scn_resolve(sc, sc->wl.lengths_from);
	if (!path)
		return LSIM_ENOMEM;
	struct lsim_workload *w = NULL;
	int rc = lsim_workload_open_auto(path, &w, d);
	size_t cap = 0;
	struct lsim_req_spec r;
	while (rc == 0) {
		int got = lsim_workload_next(w, &r, d);
		if (got <= 0) {
			rc = got;
			break;
		}
		if (sc->n_pairs == cap) {
			cap = cap ? cap * 2 : 1024;
			int32_t *p = realloc(sc->pairs, 2 * cap * sizeof *p);
			if (!p) {
				rc = LSIM_ENOMEM;
				break;
			}
			sc->pairs = p;
		}
		sc->pairs[2 * sc->n_pairs] = r.prompt_tokens;
		sc->pairs[2 * sc->n_pairs + 1] = r.output_tokens;
		sc->n_pairs++;
	}
	lsim_workload_destroy(w);
	free(path);
	if (rc == 0 && sc->n_pairs == 0)
		rc = lsim_cfg_error(d, sc->doc, lsim_node_get(sc->doc->root, "workload"),
				    "workload.lengths_from", LSIM_EINVAL,
				    "the trace has no requests");
	return rc;
}

static void fill_len(struct lsim_len_dist *o, const struct len_cfg *l,
		     const int32_t *values, size_t n_values)
{
	memset(o, 0, sizeof *o);
	o->kind = (enum lsim_len_kind)l->dist;
	switch (o->kind) {
	case LSIM_LEN_FIXED: o->a = l->value; break;
	case LSIM_LEN_UNIFORM: o->a = l->low; o->b = l->high; break;
	case LSIM_LEN_LOGNORMAL: o->a = l->mean; o->b = l->stddev; break;
	case LSIM_LEN_EMPIRICAL: break;
	case LSIM_LEN_ZIPF: o->a = l->exponent; break;
	}
	o->min = (int32_t)l->min;
	o->max = (int32_t)l->max;
	o->values = values;
	o->n_values = n_values;
}

static int open_one(const struct wl_cfg *c, const char *path,
		    struct lsim_workload **w, struct lsim_diag *d)
{
	/* the scenario's mapping: columns of a CSV, keys of a JSONL (only
	 * when given: jsonl_mapped), label columns of either */
	struct lsim_csv_map map = {
		.arrival_col = c->arrival_column,
		.arrival_format = (enum lsim_time_format)c->time_format,
		.prompt_col = c->prompt_column,
		.output_col = c->output_column,
		.class_col = c->class_column,
		.model_col = c->model_column,
		.tenant_col = c->tenant_column,
		.lora_col = c->lora_column,
	};
	bool labels = c->class_column[0] || c->model_column[0] || c->tenant_column[0] ||
		      c->lora_column[0];
	int rc;
	if (c->kind == WL_CSV) {
		rc = lsim_workload_csv_open(path, &map, w, d);
	} else if (c->kind == WL_JSONL) {
		if (!c->jsonl_mapped)
			map.arrival_col = map.prompt_col = map.output_col = NULL;
		rc = lsim_workload_jsonl_open_map(path, &map, w, d);
	} else if (labels) { /* auto: the format's own columns plus the labels */
		const char *fmt = NULL;
		struct lsim_csv_map known;
		rc = lsim_workload_detect(path, &fmt, &known, d);
		known.class_col = map.class_col;
		known.model_col = map.model_col;
		known.tenant_col = map.tenant_col;
		known.lora_col = map.lora_col;
		if (rc == 0 && strcmp(fmt, "jsonl") == 0) {
			known.arrival_col = known.prompt_col = known.output_col = NULL;
			rc = lsim_workload_jsonl_open_map(path, &known, w, d);
		} else if (rc == 0) {
			rc = lsim_workload_csv_open(path, &known, w, d);
		}
	} else {
		rc = lsim_workload_open_auto(path, w, d);
	}
	if (rc == 0 && c->on_error == 1)
		lsim_workload_set_on_error(*w, LSIM_ON_ERROR_SKIP);
	return rc;
}

/* The trace, or the merge of workload.traces (tenant = position). */
static int open_trace(void *ctx, struct lsim_workload **w, struct lsim_diag *d)
{
	const struct trace_ctx *t = ctx;
	const struct lsim_scenario *sc = t->sc;
	if (sc->n_traces == 0)
		return open_one(&sc->wl, t->path, w, d);
	struct lsim_workload **srcs = calloc(sc->n_traces, sizeof *srcs);
	if (!srcs)
		return LSIM_ENOMEM;
	int rc = 0;
	size_t k = 0;
	for (; k < sc->n_traces && rc == 0; k++) {
		char *path = lsim_scn_resolve(sc, sc->traces[k]);
		rc = path ? open_one(&sc->wl, path, &srcs[k], d) : LSIM_ENOMEM;
		free(path);
	}
	if (rc == 0)
		rc = lsim_workload_merge_create(srcs, sc->n_traces, true, w, d);
	else
		for (size_t i = 0; i < k; i++)
			lsim_workload_destroy(srcs[i]);
	free(srcs);
	return rc;
}

/* The mean inter-arrival gap of the (whole) trace, from one streaming pass. */
static int mean_gap(void *ctx, lsim_time *gap, struct lsim_diag *d)
{
	struct lsim_workload *w = NULL;
	int rc = open_trace(ctx, &w, d);
	lsim_time first = 0, last = 0;
	uint64_t n = 0;
	struct lsim_req_spec r;
	while (rc == 0) {
		int got = lsim_workload_next(w, &r, d);
		if (got <= 0) {
			rc = got;
			break;
		}
		if (n++ == 0)
			first = r.arrival;
		last = r.arrival;
	}
	lsim_workload_destroy(w);
	*gap = n > 1 ? (last - first) / (lsim_time)(n - 1) : LSIM_S;
	return rc;
}

int lsim_scn_read_trace(struct lsim_scenario *sc, struct lsim_diag *d)
{
	if (sc->wl.kind == WL_GENERATOR)
		return 0;
	struct trace_ctx t = {.sc = sc, .path = lsim_scn_resolve(sc, sc->wl.path)};
	if (!t.path)
		return LSIM_ENOMEM;
	lsim_time gap;
	int rc = mean_gap(&t, &gap, d);
	free(t.path);
	return rc;
}

int lsim_scn_open_workload(struct lsim_scenario *sc, struct run_rngs *rngs,
			   struct lsim_workload **w, struct lsim_diag *d)
{
	const struct wl_cfg *c = &sc->wl;
	if (c->kind == WL_GENERATOR) {
		struct lsim_gen_params p;
		memset(&p, 0, sizeof p);
		p.arrival = (enum lsim_arrival_kind)c->arrival;
		p.rate = c->rate;
		p.cv = c->cv;
		p.rate_on = c->rate_on;
		p.rate_off = c->rate_off;
		p.mean_on = c->mean_on;
		p.mean_off = c->mean_off;
		p.amplitude = c->amplitude;
		p.period = c->period;
		p.spike_every = c->spike_every;
		p.spike_length = c->spike_length;
		p.spike_factor = c->spike_factor;
		p.count = (uint64_t)c->count;
		p.duration = c->duration;
		fill_len(&p.prompt, &sc->len[0], sc->len_values[0], sc->n_len_values[0]);
		fill_len(&p.output, &sc->len[1], sc->len_values[1], sc->n_len_values[1]);
		p.pairs = sc->pairs;
		p.n_pairs = sc->n_pairs;
		uint64_t seed = (uint64_t)sc->top.seed;
		rngs->arrivals = lsim_rng_create(seed, 0, LSIM_STREAM_ARRIVALS);
		rngs->lengths = lsim_rng_create(seed, 0, LSIM_STREAM_LENGTHS);
		if (!rngs->arrivals || !rngs->lengths)
			return LSIM_ENOMEM;
		return lsim_workload_generator_create(&p, rngs->arrivals,
						      rngs->lengths, w, d);
	}
	rngs->trace.sc = sc;
	rngs->trace.path = lsim_scn_resolve(sc, c->path);
	if (!rngs->trace.path)
		return LSIM_ENOMEM;
	bool shaped = c->window_start > 0 || c->window_end > 0 ||
		      c->time_scale != 1.0 || c->keep < 1.0 || c->repeat > 1 ||
		      c->rate_scale != 1.0;
	if (!shaped)
		return open_trace(&rngs->trace, w, d);
	/* rate_scale k > 1: ceil(k) copies, each thinned to k/ceil(k), copy i
	 * shifted by i/ceil(k) of the trace's mean inter-arrival gap */
	size_t copies = c->rate_scale > 1 ? (size_t)ceil(c->rate_scale - 1e-9) : 1;
	struct lsim_shape_params sp = {
		.window_start = c->window_start, .window_end = c->window_end,
		.time_scale = c->time_scale,
		.keep = c->keep * (copies > 1 ? c->rate_scale / (double)copies
					      : c->rate_scale),
		.repeat = (uint64_t)c->repeat,
	};
	lsim_time gap = 0;
	if (copies > 1) {
		int rc = mean_gap(&rngs->trace, &gap, d);
		if (rc != 0)
			return rc;
	}
	struct lsim_workload *srcs[64];
	size_t k = 0;
	int rc = 0;
	for (; k < copies && rc == 0; k++) {
		rngs->shaping[k] = lsim_rng_create((uint64_t)sc->top.seed, 0,
						   k ? LSIM_STREAM_COPY_BASE + k
						     : LSIM_STREAM_SHAPING);
		if (!rngs->shaping[k]) {
			rc = LSIM_ENOMEM;
			continue; /* k still counts this copy: srcs[k] was not made */
		}
		sp.offset = (lsim_time)llround((double)gap * c->time_scale *
					       (double)k / (double)copies);
		rc = lsim_workload_shape_create(open_trace, &rngs->trace, &sp,
						rngs->shaping[k], &srcs[k], d);
	}
	if (rc != 0) {
		for (size_t i = 0; i + 1 < k; i++)
			lsim_workload_destroy(srcs[i]);
		return rc;
	}
	if (copies == 1) {
		*w = srcs[0];
		return 0;
	}
	return lsim_workload_merge_create(srcs, copies, false, w, d);
}

/* failures.trace: time_s, instance (the instance's id: its position in
 * instances order, replicas expanded; later ones as they are added). */
int lsim_scn_load_failure_trace(struct lsim_scenario *sc, struct lsim_diag *d)
{
	char *path = lsim_scn_resolve(sc, sc->fail.trace);
	if (!path)
		return LSIM_ENOMEM;
	struct lsim_csv *c = NULL;
	int rc = lsim_csv_open(path, &c, d);
	static const char *const cols[] = {"time_s", "instance"};
	int idx[2] = {0, 0};
	if (rc == 0)
		rc = lsim_csv_require(c, cols, 2, idx, d);
	if (rc != 0 && d && d->line == 0)
		snprintf(d->key, sizeof d->key, "failures.trace");
	size_t cap = 0;
	while (rc >= 0 && (rc = lsim_csv_next(c, d)) > 0) {
		int line = lsim_csv_line(c);
		const char *ts = lsim_csv_field(c, idx[0]), *is = lsim_csv_field(c, idx[1]);
		char *end = NULL;
		double t = strtod(ts ? ts : "", &end);
		if (!ts || end == ts || *end || !(t >= 0) || t > 9e9) {
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, line,
					   lsim_csv_field_col(c, idx[0]), "time_s",
					   "failure time '%s' is not a time >= 0 in seconds",
					   ts ? ts : "");
			break;
		}
		long v = strtol(is ? is : "", &end, 10);
		if (!is || end == is || *end || v < 0 || v > 1000000) {
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, line,
					   lsim_csv_field_col(c, idx[1]), "instance",
					   "instance '%s' is not an instance id", is ? is : "");
			break;
		}
		if (sc->n_fail == cap) {
			cap = cap ? 2 * cap : 16;
			lsim_time *pt = realloc(sc->fail_t, cap * sizeof *pt);
			if (pt)
				sc->fail_t = pt;
			int32_t *pi = pt ? realloc(sc->fail_inst, cap * sizeof *pi) : NULL;
			if (pi)
				sc->fail_inst = pi;
			if (!pt || !pi) {
				rc = LSIM_ENOMEM;
				break;
			}
		}
		sc->fail_t[sc->n_fail] = (lsim_time)llround(t * 1e9);
		sc->fail_inst[sc->n_fail++] = (int32_t)v;
	}
	if (rc > 0)
		rc = 0;
	lsim_csv_close(c);
	free(path);
	return rc;
}

int lsim_scenario_longer(const struct lsim_scenario *sc, int64_t factor,
			 char sets[][64], size_t *n)
{
	*n = 0;
	const struct wl_cfg *w = &sc->wl;
	if (sc->top.duration > 0) /* a run cut at a time: cut it later */
		snprintf(sets[(*n)++], 64, "duration=%.9gs",
			 lsim_time_to_s(sc->top.duration) * (double)factor);
	if (w->kind != WL_GENERATOR) {
		if (w->repeat > INT64_MAX / factor)
			return LSIM_ERANGE;
		snprintf(sets[(*n)++], 64, "workload.repeat=%lld",
			 (long long)(w->repeat * factor));
		return 0;
	}
	if (w->count > 0) {
		if (w->count > INT64_MAX / factor)
			return LSIM_ERANGE;
		snprintf(sets[(*n)++], 64, "workload.count=%lld", (long long)(w->count * factor));
	}
	if (w->duration > 0)
		snprintf(sets[(*n)++], 64, "workload.duration=%.9gs",
			 lsim_time_to_s(w->duration) * (double)factor);
	return 0;
}
