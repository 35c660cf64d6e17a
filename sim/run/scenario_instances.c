/*
 * scenario_instances.c - a scenario's instance groups: hardware profiles
 * and models, vLLM's memory plan, the checks of data, expert and pipeline
 * parallelism and of chunked prefill, the engine instances with their perf
 * backends (roofline, table, service), and their prices (instances[].price,
 * gpu: cheapest) and the carbon series.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cluster/collective.h"
#include "serving/kvcache.h"
#include "serving/memplan.h"
#include "run/scenario_internal.h"

/* The memory plan of instance group i, and what it was computed from. */
static void plan_group(const struct lsim_scenario *sc, size_t i, struct lsim_memplan_in *mi,
		       struct lsim_memplan *plan)
{
	const struct inst_cfg *ic = &sc->insts[i];
	*mi = lsim_memplan_in_for(&ic->eng, &sc->gpus[i], &sc->models[i], (int32_t)ic->tp);
	lsim_memplan_compute(mi, plan);
}

/*
 * vLLM's memory plan (memplan.h) for each engine instance group: a replica
 * must hold min_kv_tokens of KV (at least one block) after its weights,
 * the activation peak of the profiling pass and the non-torch memory, on
 * its binding rank. The same plan sizes the cache in lsim_instance_init,
 * so check refuses exactly what run would.
 */
int lsim_scn_check_memory(struct lsim_scenario *sc, struct lsim_diag *d)
{
	struct lsim_node *list = lsim_node_get(sc->doc->root, "instances");
	for (size_t i = 0; i < sc->n_insts; i++) {
		const struct inst_cfg *ic = &sc->insts[i];
		if (ic->perf == PERF_SERVICE)
			continue;
		struct lsim_memplan_in mi;
		struct lsim_memplan plan;
		plan_group(sc, i, &mi, &plan);
		if (ic->eng.num_gpu_blocks == 0 && plan.blocks > LSIM_KV_BLOCKS_MAX) {
			char key[80];
			snprintf(key, sizeof key, "instances[%zu].num_gpu_blocks", i);
			return lsim_cfg_error(d, sc->doc, list->items[i], key, LSIM_EINVAL,
					      "the memory plan of %s on %s gives %lld KV "
					      "blocks, more than one instance holds (at most "
					      "%d): set num_gpu_blocks or a larger block_size",
					      ic->model, sc->gpus[i].name,
					      (long long)plan.blocks, LSIM_KV_BLOCKS_MAX);
		}
		if (plan.blocks >= lsim_memplan_blocks_for(ic->min_kv_tokens, ic->eng.block_size))
			continue;
		char why[768], key[80];
		const char *k = lsim_memplan_explain(&mi, &plan, ic->min_kv_tokens, why,
						     sizeof why);
		snprintf(key, sizeof key, "instances[%zu].%s", i, k);
		struct lsim_node *at = lsim_node_get(list->items[i], k);
		return lsim_cfg_error(d, sc->doc, at ? at : list->items[i], key, LSIM_EINVAL,
				      "%s on %lld x %s does not fit: %s", ic->model,
				      (long long)lsim_scn_replica_gpus(ic), sc->gpus[i].name,
				      why);
	}
	return 0;
}

char *lsim_scenario_memory_plans(const struct lsim_scenario *sc)
{
	struct lsim_buf b = {0};
	const double gib = 1073741824.0;
	lsim_buf_printf(&b, "%s", "");
	for (size_t i = 0; i < sc->n_insts; i++) {
		const struct inst_cfg *ic = &sc->insts[i];
		if (ic->perf == PERF_SERVICE)
			continue;
		struct lsim_memplan_in mi;
		struct lsim_memplan plan;
		plan_group(sc, i, &mi, &plan);
		lsim_buf_printf(&b,
				"# instances[%zu] %s: vLLM memory plan per GPU of %lld x %s: "
				"%.3f GiB x %.2f = %.3f GiB - weights %.3f - activations %.3f "
				"- non-torch %.3f = KV %.3f GiB = %lld blocks of %lld tokens%s\n",
				i, ic->name, (long long)lsim_scn_replica_gpus(ic),
				sc->gpus[i].name,
				mi.total_bytes / gib, mi.utilization, plan.budget / gib,
				plan.weights / gib, plan.activation / gib, plan.non_torch / gib,
				plan.kv_bytes / gib, (long long)plan.blocks,
				(long long)ic->eng.block_size,
				ic->eng.num_gpu_blocks > 0 ? " (num_gpu_blocks overrides it)" : "");
	}
	if (b.failed) {
		lsim_buf_release(&b);
		return NULL;
	}
	return b.data;
}

int lsim_scn_data_file(const struct lsim_scenario *sc, const char *rel, char *out,
		       size_t size)
{
	if (!sc->top.data_dir[0]) {
		(void)lsim_data_find(rel, out, size); /* absent: the loader says so */
		return 0;
	}
	char *base = lsim_scn_resolve(sc, sc->top.data_dir);
	if (!base)
		return LSIM_ENOMEM;
	snprintf(out, size, "%s/%s", base, rel);
	free(base);
	return 0;
}

int lsim_scn_profile_path(const struct lsim_scenario *sc, const char *name, char *out,
			  size_t size)
{
	if (lsim_data_is_path(name)) {
		char *p = lsim_scn_resolve(sc, name);
		if (!p)
			return LSIM_ENOMEM;
		snprintf(out, size, "%s", p);
		free(p);
		return 0;
	}
	char rel[300];
	snprintf(rel, sizeof rel, "profiles/%s.yaml", name);
	return lsim_scn_data_file(sc, rel, out, size);
}

int lsim_scn_load_profile(const struct lsim_scenario *sc, const char *name,
			  struct lsim_gpu_profile *g, struct lsim_diag *d)
{
	char path[1024];
	if (lsim_data_is_path(name)) {
		if (lsim_scn_profile_path(sc, name, path, sizeof path) != 0)
			return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
		return lsim_gpu_profile_load(NULL, path, g, d);
	}
	if (!sc->top.data_dir[0])
		return lsim_gpu_profile_load(NULL, name, g, d);
	if (lsim_scn_data_file(sc, "profiles", path, sizeof path) != 0)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	return lsim_gpu_profile_load(path, name, g, d);
}

int lsim_scn_load_model(const struct lsim_scenario *sc, const char *name,
			struct lsim_model_arch *m, struct lsim_diag *d)
{
	if (lsim_data_is_path(name)) {
		char *p = lsim_scn_resolve(sc, name);
		if (!p)
			return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
		int rc = lsim_model_load(NULL, p, m, d);
		free(p);
		return rc;
	}
	if (!sc->top.data_dir[0])
		return lsim_model_load(NULL, name, m, d);
	char catalogue[1024];
	if (lsim_scn_data_file(sc, "models.yaml", catalogue, sizeof catalogue) != 0)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	return lsim_model_load(catalogue, name, m, d);
}

/*
 * Group i's model into sc->models[i]. A model an earlier group named is
 * copied, not read again: one name is one file within a scenario, so the
 * copy is what the load gives (a plain value), and a scenario of many
 * groups reads the model catalogue once, not once a group. The earlier
 * groups that have read theirs are the first `done` and those gpu:
 * cheapest chose for.
 */
static int group_model(struct lsim_scenario *sc, size_t i, size_t done, struct lsim_diag *d)
{
	const struct inst_cfg *ic = &sc->insts[i];
	for (size_t j = 0; j < i; j++)
		if (sc->insts[j].perf != PERF_SERVICE && (j < done || sc->gpu_choice[j][0]) &&
		    strcmp(sc->insts[j].model, ic->model) == 0) {
			sc->models[i] = sc->models[j];
			return 0;
		}
	return lsim_scn_load_model(sc, ic->model, &sc->models[i], d);
}

int lsim_scn_load_hw(struct lsim_scenario *sc, struct lsim_diag *d)
{
	sc->table_dirs = calloc(sc->n_insts, sizeof *sc->table_dirs);
	if (!sc->table_dirs)
		return LSIM_ENOMEM;
	size_t hl = 0, sl = 0, pl = 0;
	for (size_t i = 0; i < sc->n_insts; i++) {
		struct inst_cfg *ic = &sc->insts[i];
		/* A profile an earlier group named is copied, as its model is
		 * (group_model); choose_gpu has set both for gpu: cheapest. */
		bool chosen = sc->gpu_choice[i][0] != '\0';
		size_t gj = i;
		for (size_t j = 0; j < i && gj == i; j++)
			if (strcmp(sc->insts[j].gpu, ic->gpu) == 0)
				gj = j;
		const char *what = "gpu";
		int rc = 0;
		if (!chosen && gj < i)
			sc->gpus[i] = sc->gpus[gj];
		else if (!chosen)
			rc = lsim_scn_load_profile(sc, ic->gpu, &sc->gpus[i], d);
		if (rc == 0 && !chosen && ic->perf != PERF_SERVICE) {
			what = "model";
			rc = group_model(sc, i, i, d);
		}
		if (rc != 0) {
			char key[64];
			struct lsim_node *list = lsim_node_get(sc->doc->root, "instances");
			struct lsim_diag inner = *d;
			snprintf(key, sizeof key, "instances[%zu].%s", i, what);
			struct lsim_node *at = lsim_node_get(list->items[i], what);
			if (!at)
				at = list->items[i];
			if (inner.line > 0) {
				/* The profile or catalogue itself is bad: keep its
				 * file, line and key, and say what named it. */
				char where[300] = "--set";
				if (at->line > 0)
					snprintf(where, sizeof where, "%s:%d", sc->doc->file,
						 at->line);
				size_t n = strlen(d->msg);
				snprintf(d->msg + n, sizeof d->msg - n, " (%s of %s, %s)",
					 what[0] == 'g' ? "hardware profile" : "model catalogue",
					 key, where);
				return rc;
			}
			/* Not found: point at the scenario key that named it. */
			lsim_cfg_error(d, sc->doc, at, key, rc, "%s%s%s", inner.msg,
				       inner.file[0] ? " in " : "", inner.file);
			return rc;
		}
		/* vLLM's rule: the attention heads are split evenly over the
		 * tensor-parallel group, the KV heads too (or replicated evenly
		 * when there are fewer of them than GPUs). */
		const struct lsim_model_arch *m = &sc->models[i];
		int kvh = m->n_kv_heads > 0 ? m->n_kv_heads : m->n_heads;
		if (ic->perf != PERF_SERVICE &&
		    (m->n_heads % ic->tp != 0 ||
		     (kvh >= ic->tp ? kvh % ic->tp : ic->tp % kvh) != 0)) {
			struct lsim_node *list = lsim_node_get(sc->doc->root, "instances");
			struct lsim_node *at = lsim_node_get(list->items[i], "tp");
			char key[64];
			snprintf(key, sizeof key, "instances[%zu].tp", i);
			return lsim_cfg_error(d, sc->doc, at ? at : list->items[i], key,
					      LSIM_EINVAL,
					      "tp %lld does not divide the %d attention heads "
					      "and %d KV heads of %s evenly",
					      (long long)ic->tp, m->n_heads, kvh, m->name);
		}
		sc->table_dirs[i] = lsim_scn_resolve(sc, ic->perf_table);
		if (!sc->table_dirs[i])
			return LSIM_ENOMEM;
		if (ic->perf == PERF_TABLE && !ic->perf_table[0]) {
			struct lsim_node *list = lsim_node_get(sc->doc->root, "instances");
			char key[64];
			snprintf(key, sizeof key, "instances[%zu].perf_table", i);
			return lsim_cfg_error(d, sc->doc, list->items[i], key, LSIM_EINVAL,
					      "perf: table needs perf_table (a profile folder)");
		}
		struct stat st;
		if (ic->perf == PERF_TABLE &&
		    (stat(sc->table_dirs[i], &st) != 0 || !S_ISDIR(st.st_mode))) {
			struct lsim_node *list = lsim_node_get(sc->doc->root, "instances");
			struct lsim_node *at = lsim_node_get(list->items[i], "perf_table");
			char key[64];
			snprintf(key, sizeof key, "instances[%zu].perf_table", i);
			return lsim_cfg_error(d, sc->doc, at ? at : list->items[i], key,
					      LSIM_ENOENT, "no profile folder %s",
					      sc->table_dirs[i]);
		}
		if (hl < sizeof sc->hw_names)
			hl += (size_t)snprintf(sc->hw_names + hl, sizeof sc->hw_names - hl,
					       "%s%s", i ? "," : "", sc->gpus[i].name);
		if (sl < sizeof sc->hw_sources)
			sl += (size_t)snprintf(sc->hw_sources + sl,
					       sizeof sc->hw_sources - sl, "%s%s: %s (%s)",
					       i ? "; " : "", sc->gpus[i].name,
					       sc->gpus[i].source, sc->gpus[i].provenance);
		static const char *const perf_names[] = {"roofline", "table", "service"};
		if (pl < sizeof sc->perf_desc)
			pl += (size_t)snprintf(sc->perf_desc + pl,
					       sizeof sc->perf_desc - pl, "%s%s%s%s",
					       i ? "," : "", perf_names[ic->perf],
					       ic->perf == PERF_TABLE ? ":" : "",
					       ic->perf == PERF_TABLE ? ic->perf_table : "");
	}
	return 0;
}

/*
 * Weight offload (cpu_offload_gb, docs/memory.md): the bytes move over
 * the cluster's links at every step, so it needs a cluster; it is timed
 * for the plain step (pp 1, data_parallel_size 1, a model's steps) and
 * can keep at most the weights one GPU holds.
 */
int lsim_scn_check_cpu_offload(struct lsim_scenario *sc, struct lsim_node *root, size_t i,
			       struct lsim_diag *d)
{
	const struct inst_cfg *ic = &sc->insts[i];
	if (ic->eng.cpu_offload_gb <= 0)
		return 0;
	struct lsim_node *item = lsim_node_get(root, "instances")->items[i];
	struct lsim_node *at = lsim_node_get(item, "cpu_offload_gb");
	char key[96];
	snprintf(key, sizeof key, "instances[%zu].cpu_offload_gb", i);
	const char *what = NULL;
	if (sc->n_nodes == 0)
		what = "a scenario without a cluster section (the copies are flows on "
		       "its PCIe links): add a cluster";
	else if (ic->perf == PERF_SERVICE)
		what = "perf: service (no model steps to wait for the copies)";
	else if (ic->eng.pp > 1)
		what = "pp > 1 (the pipelined step is not timed with the copies): use pp 1";
	else if (ic->dp > 1)
		what = "data_parallel_size > 1 (the ranks' lockstep is not timed with the "
		       "copies): use replicas instead";
	if (what)
		return lsim_cfg_error(d, sc->doc, at, key, LSIM_EINVAL,
				      "cpu_offload_gb %g is not modelled with %s; or set "
				      "cpu_offload_gb: 0", ic->eng.cpu_offload_gb, what);
	const struct lsim_model_arch *m = &sc->models[i];
	double weights = lsim_memplan_rank_params(m, (int32_t)ic->tp, 1, 0,
						  ic->eng.experts_per_rank) *
			 m->bytes_per_param;
	double gib = 1073741824.0;
	if (ic->eng.cpu_offload_gb * gib > weights)
		return lsim_cfg_error(d, sc->doc, at, key, LSIM_ERANGE,
				      "cpu_offload_gb %g GiB is more than the %.3f GiB of %s "
				      "weights one GPU holds at tp %lld: write at most %.3f",
				      ic->eng.cpu_offload_gb, weights / gib, m->name,
				      (long long)ic->tp, floor(weights / gib * 1000) / 1000);
	return 0;
}

/*
 * LoRA (enable_lora, workload.lora; docs/lora.md): the adapters' rank
 * fits the GPU slots, the slots are a rank vLLM accepts, the host cache
 * holds at least the slots, and the instance is one the copies are timed
 * for (a cluster, pp 1, a dense model, no KV swap or offload: the flows
 * those start are not ordered with the adapters'). Sets the size of one
 * adapter on one GPU.
 */
int lsim_scn_check_lora(struct lsim_scenario *sc, struct lsim_node *root, size_t i,
			struct lsim_diag *d)
{
	struct inst_cfg *ic = &sc->insts[i];
	struct lsim_node *item = lsim_node_get(root, "instances")->items[i];
	struct lsim_node *wl = lsim_node_get(lsim_node_get(root, "workload"), "lora");
	const struct lsim_model_arch *m = &sc->models[i];
	char key[96];
	if (!ic->eng.enable_lora) {
		/* a trace's adapters are checked per request (run.c) */
		if (sc->lora_wl.adapters > 0 && ic->perf != PERF_SERVICE)
			return lsim_cfg_error(d, sc->doc, lsim_node_get(wl, "adapters"),
					      "workload.lora.adapters", LSIM_EINVAL,
					      "requests use %lld LoRA adapters, but instances[%zu] "
					      "(%s) has no enable_lora (vLLM refuses such a request): "
					      "set enable_lora: true there, or adapters: 0",
					      (long long)sc->lora_wl.adapters, i, ic->name);
		return 0;
	}
	struct lsim_node *at = lsim_node_get(item, "enable_lora");
	snprintf(key, sizeof key, "instances[%zu].enable_lora", i);
	const char *what = NULL;
	if (sc->n_nodes == 0)
		what = "a scenario without a cluster section (the adapters are flows on its "
		       "links): add a cluster";
	else if (ic->perf == PERF_SERVICE)
		what = "perf: service (no model steps to wait for the copies)";
	else if (m->n_experts > 0)
		what = "an MoE model (LoRA on its experts is not modelled): use a dense model";
	else if (ic->eng.pp > 1)
		what = "pp > 1 (the pipelined step is not timed with the copies): use pp 1";
	else if (ic->eng.kv_offload)
		what = "kv_offload: host (its reloads are not ordered with the adapters' "
		       "copies): use kv_offload: none";
	else if (ic->eng.preemption_mode == LSIM_PREEMPT_SWAP)
		what = "preemption_mode: swap (a request swapped back in is not counted "
		       "against max_loras): use recompute";
	else if (ic->role != 0)
		what = "role prefill or decode (the hand-over is not counted against "
		       "max_loras): use role: both";
	if (what)
		return lsim_cfg_error(d, sc->doc, at, key, LSIM_EINVAL,
				      "enable_lora is not modelled with %s; or set "
				      "enable_lora: false", what);
	if (!lsim_lora_rank_ok(ic->eng.max_lora_rank)) {
		snprintf(key, sizeof key, "instances[%zu].max_lora_rank", i);
		return lsim_cfg_error(d, sc->doc, lsim_node_get(item, "max_lora_rank"), key,
				      LSIM_EINVAL, "max_lora_rank %lld is not one vLLM "
				      "accepts: write 1, 8, 16, 32, 64, 128, 256, 320 or 512",
				      (long long)ic->eng.max_lora_rank);
	}
	if (ic->eng.max_cpu_loras > 0 && ic->eng.max_cpu_loras < ic->eng.max_loras) {
		snprintf(key, sizeof key, "instances[%zu].max_cpu_loras", i);
		return lsim_cfg_error(d, sc->doc, lsim_node_get(item, "max_cpu_loras"), key,
				      LSIM_ERANGE, "max_cpu_loras %lld is below max_loras "
				      "%lld (vLLM requires the host cache to hold the GPU's "
				      "adapters): write at least %lld, or 0",
				      (long long)ic->eng.max_cpu_loras,
				      (long long)ic->eng.max_loras, (long long)ic->eng.max_loras);
	}
	if ((sc->lora_wl.adapters > 0 || sc->wl.lora_column[0]) &&
	    sc->lora_wl.rank > ic->eng.max_lora_rank)
		return lsim_cfg_error(d, sc->doc, lsim_node_get(wl, "rank"),
				      "workload.lora.rank", LSIM_ERANGE,
				      "rank %lld is above instances[%zu].max_lora_rank %lld "
				      "(vLLM refuses the adapter): write at most %lld, or "
				      "raise max_lora_rank",
				      (long long)sc->lora_wl.rank, i,
				      (long long)ic->eng.max_lora_rank,
				      (long long)ic->eng.max_lora_rank);
	ic->eng.lora_rank = sc->lora_wl.rank;
	ic->eng.lora_adapter_params = lsim_lora_params(m, (int32_t)sc->lora_wl.rank,
						       (int32_t)ic->tp);
	ic->eng.lora_adapter_bytes = ic->eng.lora_adapter_params * m->bytes_per_param;
	return 0;
}

/*
 * Data and expert parallelism (data_parallel_size, enable_expert_parallel)
 * as far as they are modelled (docs/parallelism.md); every other
 * combination is refused naming the key.
 */
int lsim_scn_check_dp(struct lsim_scenario *sc, struct lsim_node *root, size_t i,
		      struct lsim_diag *d)
{
	const struct inst_cfg *ic = &sc->insts[i];
	struct lsim_node *item = lsim_node_get(root, "instances")->items[i];
	char key[96];
	const char *what = NULL;
	if (ic->dp > 1) {
		snprintf(key, sizeof key, "instances[%zu].data_parallel_size", i);
		if (ic->perf == PERF_SERVICE)
			what = "perf: service (a rank needs a model's steps)";
		else if (ic->eng.pp > 1)
			what = "pp > 1";
		else if (ic->role != LSIM_ROLE_BOTH)
			what = "role prefill or decode";
		else if (ic->cold_start)
			what = "cold_start";
		else if (sc->models[i].n_experts > 0 &&
			 (ic->eng.io_in_bytes > 0 || ic->eng.io_out_bytes > 0))
			what = "io_in_bytes or io_out_bytes on an MoE model (the ranks' "
			       "lockstep step does not wait for the copies)";
		else if (ic->spot)
			what = "spot";
		else if (ic->min_replicas >= 0 || ic->max_replicas >= 0)
			what = "min_replicas or max_replicas (the adaptor adds single instances)";
		else if (sc->fail.mtbf > 0 || sc->fail.gpu_mtbf > 0 || sc->fail.node_mtbf > 0 ||
			 sc->fail.trace[0] || sc->fail.spot_mtbr > 0)
			what = "failures (a failed rank's group is not modelled)";
		if (what)
			return lsim_cfg_error(d, sc->doc, lsim_node_get(item, "data_parallel_size"),
					      key, LSIM_EINVAL,
					      "data_parallel_size %lld with %s is not modelled yet: "
					      "use data_parallel_size 1 (replicas behind the router) "
					      "or drop the other setting", (long long)ic->dp, what);
		/* vLLM shards every expert over the D x tp GPUs by tensor
		 * parallelism then (FusedMoEParallelConfig) and gathers every
		 * rank's tokens for them, which neither backend times */
		if (sc->models[i].n_experts > 0 && !ic->ep)
			return lsim_cfg_error(d, sc->doc, lsim_node_get(item, "data_parallel_size"),
					      key, LSIM_EINVAL,
					      "data_parallel_size %lld of the MoE model %s without "
					      "enable_expert_parallel: vLLM then shards every expert "
					      "over all %lld GPUs by tensor parallelism and gathers "
					      "every rank's tokens for them, which is not modelled; "
					      "set enable_expert_parallel: true",
					      (long long)ic->dp, sc->models[i].name,
					      (long long)lsim_scn_placed_gpus(ic));
		/* an MoE model's ranks form a DP group (the memory plan's NCCL
		 * term); vLLM runs a dense model's ranks as independent engines
		 * of data_parallel_size 1 (run_engine_core), with no group */
		if (sc->models[i].n_experts > 0)
			sc->insts[i].eng.dp = (int32_t)ic->dp;
	}
	if (!ic->ep)
		return 0;
	snprintf(key, sizeof key, "instances[%zu].enable_expert_parallel", i);
	struct lsim_node *at = lsim_node_get(item, "enable_expert_parallel");
	if (ic->perf == PERF_SERVICE)
		what = "perf: service runs no model, and no experts: set it false";
	else if (sc->models[i].n_experts == 0)
		what = "a dense model has no experts to split: set it false";
	else if (ic->perf != PERF_TABLE)
		what = "expert parallelism is modelled with perf: table only (its moe.csv): "
		       "use perf: table";
	else if (ic->tp > 1)
		what = "expert parallelism across tensor-parallel GPUs is not modelled yet "
		       "(only across data-parallel ranks of tp 1): use tp 1";
	else if (ic->dp < 2)
		what = "it splits the experts over the data_parallel_size ranks: set "
		       "data_parallel_size 2 or more";
	if (what)
		return lsim_cfg_error(d, sc->doc, at ? at : item, key, LSIM_EINVAL,
				      "enable_expert_parallel: %s", what);
	if (sc->models[i].n_experts % ic->dp != 0) {
		/* vLLM gives the first ranks one expert more (determine_expert_map);
		 * an uneven split is not modelled */
		snprintf(key, sizeof key, "instances[%zu].data_parallel_size", i);
		return lsim_cfg_error(d, sc->doc, lsim_node_get(item, "data_parallel_size"),
				      key, LSIM_EINVAL,
				      "data_parallel_size %lld with enable_expert_parallel: the "
				      "%d experts of %s do not split evenly over %lld ranks (an "
				      "uneven split is not modelled): use a data_parallel_size "
				      "that divides %d",
				      (long long)ic->dp, sc->models[i].n_experts,
				      sc->models[i].name, (long long)ic->dp,
				      sc->models[i].n_experts);
	}
	/* each rank holds its share of the experts (the memory plan's) */
	sc->insts[i].eng.experts_per_rank = sc->models[i].n_experts / (int32_t)ic->dp;
	return 0;
}

int lsim_scn_check_node(struct lsim_scenario *sc, struct lsim_node *root, size_t i,
			struct lsim_diag *d)
{
	const struct inst_cfg *ic = &sc->insts[i];
	struct lsim_node *item = lsim_node_get(root, "instances")->items[i];
	char key[96];
	int32_t layers = sc->models[i].n_layers;
	if (ic->perf != PERF_SERVICE && ic->eng.pp > layers) {
		/* a stage of no layers: vLLM's get_pp_indices refuses it too */
		snprintf(key, sizeof key, "instances[%zu].pp", i);
		return lsim_cfg_error(d, sc->doc, lsim_node_get(item, "pp"), key, LSIM_EINVAL,
				      "pp %lld is more stages than the %d decoder layers of "
				      "%s: use at most %d",
				      (long long)ic->eng.pp, layers, sc->models[i].name, layers);
	}
	int64_t n = lsim_scn_placed_gpus(ic);
	if (sc->n_nodes > 0 || ic->perf == PERF_SERVICE || n <= LSIM_SCN_NODE_GPUS)
		return 0;
	const char *k = ic->tp > 1 ? "tp" : ic->eng.pp > 1 ? "pp" : "data_parallel_size";
	struct lsim_node *at = lsim_node_get(item, k);
	snprintf(key, sizeof key, "instances[%zu].%s", i, k);
	return lsim_cfg_error(d, sc->doc, at ? at : item, key, LSIM_EINVAL,
			      "a replica of tp %lld x pp %lld x data_parallel_size %lld = "
			      "%lld GPUs is more than one node's %d, and without a cluster "
			      "section all its collectives and stage sends would be timed "
			      "inside one node: add a cluster whose nodes hold it (a "
			      "pipeline's stages may then span nodes, over the network), or "
			      "use at most %d GPUs",
			      (long long)ic->tp, (long long)(ic->eng.pp > 1 ? ic->eng.pp : 1),
			      (long long)ic->dp, (long long)n, LSIM_SCN_NODE_GPUS,
			      LSIM_SCN_NODE_GPUS);
}

/*
 * vLLM's rule: without chunked prefill a prompt is prefilled in one
 * iteration, so the token budget must hold the longest sequence the
 * instance accepts (prompt and output: a request preempted by recompute
 * prefills both). With less, such a request waits at the head of the
 * queue for ever and the run ends with it unfinished.
 */
int lsim_scn_check_chunked_prefill(const struct lsim_scenario *sc, struct lsim_diag *d)
{
	struct lsim_node *list = lsim_node_get(sc->doc->root, "instances");
	for (size_t i = 0; i < sc->n_insts; i++) {
		const struct inst_cfg *ic = &sc->insts[i];
		if (ic->perf == PERF_SERVICE || ic->eng.enable_chunked_prefill)
			continue;
		int64_t len = ic->eng.max_model_len > 0 ? ic->eng.max_model_len
							: sc->models[i].max_context;
		int64_t budget = ic->eng.max_num_batched_tokens;
		if (budget >= len)
			continue;
		struct lsim_node *at = lsim_node_get(list->items[i], "max_num_batched_tokens");
		if (!at)
			at = lsim_node_get(list->items[i], "enable_chunked_prefill");
		char key[64], from[160];
		snprintf(key, sizeof key, "instances[%zu].max_num_batched_tokens", i);
		if (ic->eng.max_model_len > 0)
			snprintf(from, sizeof from, "max_model_len %lld", (long long)len);
		else
			snprintf(from, sizeof from, "max_model_len %lld (the context of %s)",
				 (long long)len, sc->models[i].name);
		return lsim_cfg_error(d, sc->doc, at ? at : list->items[i], key, LSIM_EINVAL,
				      "%lld is below %s with enable_chunked_prefill: false, so a "
				      "longer request could never be scheduled (vLLM refuses this "
				      "too); raise max_num_batched_tokens to at least %lld, lower "
				      "max_model_len to at most %lld, or set enable_chunked_prefill: "
				      "true", (long long)budget, from, (long long)len,
				      (long long)budget);
	}
	return 0;
}

/* Adds one instance of group i with id sim.n_inst, placed on node (first
 * local GPU gpu_local; node -1 without a cluster). */
/* Whether the next replica of group i runs on spot capacity: with spot,
 * its live replicas (the new one included) keep on_demand_base on demand
 * plus on_demand_percent of those above the base, rounded up, and the new
 * one fills whichever side is short. */
static bool next_is_spot(const struct lsim_scenario *sc, size_t i)
{
	const struct inst_cfg *ic = &sc->insts[i];
	if (!ic->spot)
		return false;
	int64_t n = 1, od = 0; /* the new one, and the live on-demand ones */
	for (size_t k = 0; k < sc->sim.n_inst; k++) {
		const struct lsim_instance *in = sc->sim.inst[k];
		if (in->group == (int32_t)i && in->state != LSIM_INST_STOPPED && !in->failed) {
			n++;
			od += !in->spot;
		}
	}
	int64_t base = n < ic->on_demand_base ? n : ic->on_demand_base;
	int64_t want = base + (int64_t)ceil(ic->on_demand_percent / 100.0 * (double)(n - base) - 1e-9);
	return od >= want;
}

/* A table instance's all-reduces move as flows on the links (as the
 * roofline's do) unless its folder has a measured allreduce.csv, whose
 * times stand in for the whole all-reduce. */
static bool table_ar_on_links(const struct lsim_scenario *sc, const struct inst_cfg *ic,
			      const char *dir)
{
	return ic->tp > 1 && sc->sim.sv.net && sc->net.allreduce_on_links &&
	       !lsim_perf_table_has_allreduce(dir, (int)ic->tp);
}

/* Makes an instance of group i; node and gpu_local give each pipeline
 * stage's node and first local GPU (NULL: no cluster). */
int lsim_scn_make_instance(struct lsim_scenario *sc, size_t i, const int32_t *node,
			   const int32_t *gpu_local, struct lsim_instance **out,
			   struct lsim_diag *d)
{
	const struct inst_cfg *ic = &sc->insts[i];
	int32_t id = (int32_t)sc->sim.n_inst;
	bool spot = next_is_spot(sc, i);
	struct lsim_instance *in = lsim_sim_add_instance(&sc->sim);
	if (!in)
		return LSIM_ENOMEM;
	/* the fabric both perf models time the group's collectives on */
	struct lsim_coll_topo ct;
	lsim_serving_coll_topo(&sc->sim.sv, &sc->gpus[i], &ct);
	int rc;
	if (ic->perf == PERF_SERVICE) {
		struct lsim_service_cfg svc = {
			.dist = ic->service_dist,
			.mean = ic->service_time,
		};
		rc = lsim_instance_init_service(in, &sc->sim.sv, id, ic->eng.max_num_seqs,
						&svc, &sc->gpus[i]);
	} else {
		struct lsim_perf *perf = NULL;
		double cpu = lsim_time_to_s(ic->cpu_overhead);
		if (!sc->group_perf &&
		    !(sc->group_perf = calloc(sc->n_insts, sizeof *sc->group_perf))) {
			lsim_sim_drop_instance(&sc->sim);
			return LSIM_ENOMEM;
		}
		struct group_perf *gp = &sc->group_perf[i];
		if (gp->time) {
			perf = lsim_perf_share(gp->time);
			rc = 0;
		} else if (ic->perf == PERF_TABLE) {
			char profiles[1024];
			struct lsim_table_params tp = {
				.tp = (int)ic->tp,
				.n_layers = sc->models[i].n_layers,
				.cpu_overhead_s = cpu,
				.coll = &ct,
				.act_bytes = (double)sc->models[i].hidden *
					     sc->models[i].bytes_per_param,
				.logit_bytes = lsim_memplan_padded_vocab(&sc->models[i]) *
					       sc->models[i].bytes_per_param,
				.coll_on_links = table_ar_on_links(sc, ic, sc->table_dirs[i]),
				.ep = ic->ep ? (int)ic->dp : 0,
				.ep_on_links = ic->ep && ic->dp > 1 && sc->sim.sv.net &&
					       sc->net.allreduce_on_links,
				/* the tables must be of this model and GPU */
				.model = &sc->models[i],
				.gpu = ic->perf_table_other_gpu ? NULL : sc->gpus[i].name,
				.gpu_dir = lsim_scn_data_file(sc, "profiles", profiles,
							      sizeof profiles) == 0
						   ? profiles : NULL,
			};
			rc = lsim_perf_table_create(sc->table_dirs[i], &tp, &perf, d);
			if (rc != 0 && d && !d->key[0]) /* a file that cannot be opened */
				snprintf(d->key, sizeof d->key, "instances[%zu].perf_table", i);
		} else {
			struct lsim_roofline_params rp = {
				.tp = (int)ic->tp,
				.cpu_overhead_s = cpu,
				.allreduce_on_links = ic->tp > 1 && sc->sim.sv.net &&
						      sc->net.allreduce_on_links,
				.coll = &ct,
			};
			rc = lsim_perf_roofline_create(&sc->models[i], &sc->gpus[i], &rp,
						       &perf, d);
			if (rc != 0 && d && strcmp(d->key, "tp") == 0) /* the group's tp */
				snprintf(d->key, sizeof d->key, "instances[%zu].tp", i);
		}
		if (rc == 0 && !gp->time)
			gp->time = lsim_perf_share(perf);
		struct lsim_engine_cfg eng = ic->eng;
		eng.swap_space = ic->swap_space * (double)lsim_scn_replica_gpus(ic);
	eng.kv_offload_space = ic->kv_offload_space * (double)lsim_scn_replica_gpus(ic);
		if (rc == 0)
			rc = lsim_instance_init(in, &sc->sim.sv, id, &eng, &sc->gpus[i],
						&sc->models[i], (int32_t)ic->tp, perf, d);
	}
	if (rc != 0) {
		lsim_sim_drop_instance(&sc->sim);
		return rc;
	}
	if (node) {
		in->node = node[0];
		in->gpu0 = node[0] * sc->gpus_per_node_max + gpu_local[0];
		if (in->pp > 1) {
			in->stage_node = malloc((size_t)in->pp * sizeof *in->stage_node);
			in->stage_gpu0 = malloc((size_t)in->pp * sizeof *in->stage_gpu0);
			if (!in->stage_node || !in->stage_gpu0)
				return LSIM_ENOMEM; /* freed with the instance */
			for (int32_t st = 0; st < in->pp; st++) {
				in->stage_node[st] = node[st];
				in->stage_gpu0[st] = node[st] * sc->gpus_per_node_max +
						     gpu_local[st];
			}
		}
	}
	if (ic->perf == PERF_TABLE) {
		/* measured times, but the work of a step (what power follows)
		 * comes from the roofline; a profile without its parameters
		 * leaves power on the busy fraction */
		struct lsim_roofline_params rp = {.tp = (int)ic->tp, .coll = &ct};
		struct group_perf *gp = &sc->group_perf[i];
		if (gp->work)
			in->work_perf = lsim_perf_share(gp->work);
		else if (lsim_perf_roofline_create(&sc->models[i], &sc->gpus[i], &rp,
						   &in->work_perf, NULL) != 0)
			in->work_perf = NULL;
		else
			gp->work = lsim_perf_share(in->work_perf);
	}
	in->group = (int32_t)i;
	in->model_idx = sc->group_model[i];
	in->role = ic->role;
	in->spot = spot;
	in->allreduce_on_links = ic->perf == PERF_TABLE
					 ? table_ar_on_links(sc, ic, sc->table_dirs[i])
					 : ic->perf == PERF_ROOFLINE && ic->tp > 1 && sc->sim.sv.net &&
						   sc->net.allreduce_on_links;
	if (sc->offers && sc->offers[i])
		lsim_billing_from_price(&in->billing, sc->offers[i],
					(int)lsim_scn_replica_gpus(ic), spot);
	*out = in;
	return 0;
}

/* One replica of data-parallel group i: its data_parallel_size ranks,
 * each an instance of tp GPUs side by side from the replica's placement
 * (entry next), made one group behind vLLM's DP balancer, in lockstep for
 * an MoE model. */
static int build_dp_replica(struct lsim_scenario *sc, size_t i, size_t next,
			    struct lsim_diag *d)
{
	const struct inst_cfg *ic = &sc->insts[i];
	struct lsim_instance *ranks[64];
	for (int64_t k = 0; k < ic->dp; k++) {
		int32_t node = 0, gpu = 0;
		if (sc->placement) {
			node = sc->placement[next];
			gpu = sc->placement_gpu[next] + (int32_t)(k * ic->tp);
		}
		int rc = lsim_scn_make_instance(sc, i, sc->placement ? &node : NULL,
						sc->placement ? &gpu : NULL, &ranks[k], d);
		if (rc != 0)
			return rc;
	}
	if (!lsim_sim_add_dp(&sc->sim, ranks, (int32_t)ic->dp, sc->models[i].n_experts > 0))
		return LSIM_ENOMEM;
	return 0;
}

int lsim_scn_build_instances(struct lsim_scenario *sc, struct lsim_diag *d)
{
	size_t next = 0; /* the replica's first stage in the placement */
	for (size_t i = 0; i < sc->n_insts; i++) {
		const struct inst_cfg *ic = &sc->insts[i];
		size_t pp = ic->eng.pp > 1 ? (size_t)ic->eng.pp : 1;
		for (int64_t r = 0; r < ic->replicas; r++, next += pp) {
			if (ic->dp > 1) {
				int rc = build_dp_replica(sc, i, next, d);
				if (rc != 0)
					return rc;
				continue;
			}
			struct lsim_instance *in = NULL;
			int rc = lsim_scn_make_instance(
				sc, i, sc->placement ? &sc->placement[next] : NULL,
				sc->placement ? &sc->placement_gpu[next] : NULL, &in, d);
			if (rc == 0 && ic->cold_start)
				rc = lsim_instance_cold_start(in, ic->engine_init, d);
			if (rc != 0 && d && !d->file[0] && d->key[0] && !strchr(d->key, '.') &&
			    !strchr(d->key, '[')) {
				/* an instance key (tp: the model does not fit): name
				 * the scenario's group, where the key is written */
				struct lsim_node *list = lsim_node_get(sc->doc->root, "instances");
				struct lsim_node *at = lsim_node_get(list->items[i], d->key);
				char key[160], msg[sizeof d->msg];
				snprintf(key, sizeof key, "instances[%zu].%s", i, d->key);
				snprintf(msg, sizeof msg, "%s", d->msg);
				lsim_cfg_error(d, sc->doc, at ? at : list->items[i], key, rc,
					       "%s", msg);
			}
			if (rc != 0)
				return rc;
		}
	}
	return 0;
}

/* The price file: power.prices, or the shipped one; loaded once. */
static int load_prices(struct lsim_scenario *sc, struct lsim_diag *d)
{
	if (sc->prices)
		return 0;
	char *path = sc->power.prices[0] ? lsim_scn_resolve(sc, sc->power.prices) : NULL;
	char shipped[1024];
	(void)lsim_data_find("prices.yaml", shipped, sizeof shipped);
	int rc = lsim_prices_load(path ? path : shipped, &sc->prices, d);
	free(path);
	return rc;
}


/* Whether a replica of ic on GPUs of profile g holds min_kv_tokens of KV
 * by vLLM's memory plan (what lsim_scn_check_memory asks). */
static bool plan_holds(const struct inst_cfg *ic, const struct lsim_gpu_profile *g,
		       const struct lsim_model_arch *m)
{
	struct lsim_memplan_in mi = lsim_memplan_in_for(&ic->eng, g, m, (int32_t)ic->tp);
	struct lsim_memplan plan;
	lsim_memplan_compute(&mi, &plan);
	return plan.blocks >= lsim_memplan_blocks_for(ic->min_kv_tokens, ic->eng.block_size);
}
/*
 * gpu: cheapest. Of the GPU kinds in the price file (and among the
 * cluster's node kinds, with a cluster) that have a hardware profile and
 * hold a replica (weights and min_kv_tokens of KV over its tp x pp GPUs,
 * as placement checks), the one whose cheapest offer costs least per
 * replica-hour (spot price with spot; the first in the file on a tie).
 * That kind becomes the group's GPU and that offer its price.
 */
static int choose_gpu(struct lsim_scenario *sc, size_t i, struct lsim_node *item,
		      struct lsim_diag *d)
{
	struct inst_cfg *ic = &sc->insts[i];
	char key[64];
	snprintf(key, sizeof key, "instances[%zu].gpu", i);
	if (ic->price[0] && strcmp(ic->price, "cheapest") != 0)
		return lsim_cfg_error(d, sc->doc, item, key, LSIM_EINVAL,
				      "gpu: cheapest chooses the offer too: leave price "
				      "empty or cheapest");
	if (ic->perf == PERF_TABLE)
		return lsim_cfg_error(d, sc->doc, item, key, LSIM_EINVAL,
				      "gpu: cheapest needs perf roofline or service (a "
				      "measured table belongs to one GPU kind)");
	/* every kind listed must have an offer: a typo would silently narrow
	 * the choice */
	char listed[64];
	for (int k = 0; ic->gpu_from[0] && lsim_choice_name(ic->gpu_from, k, listed, sizeof listed);
	     k++) {
		bool offered = false;
		for (size_t j = 0; j < sc->prices->n && !offered; j++)
			offered = strcmp(sc->prices->items[j].gpu, listed) == 0;
		if (!offered) {
			snprintf(key, sizeof key, "instances[%zu].gpu_from", i);
			return lsim_cfg_error(d, sc->doc, lsim_node_get(item, "gpu_from"), key,
					      LSIM_EINVAL, "no offer in the price file for '%s'",
					      listed);
		}
	}
	double gpus = (double)lsim_scn_replica_gpus(ic);
	if (!sc->cheap_profiles) {
		size_t n = sc->prices->n ? sc->prices->n : 1;
		sc->cheap_profiles = calloc(n, sizeof *sc->cheap_profiles);
		sc->cheap_state = calloc(n, sizeof *sc->cheap_state);
		if (!sc->cheap_profiles || !sc->cheap_state)
			return LSIM_ENOMEM;
	}
	const struct lsim_model_arch *m = &sc->models[i];
	if (ic->perf != PERF_SERVICE) {
		struct lsim_diag inner = {0};
		if (group_model(sc, i, 0, &inner) != 0) {
			snprintf(key, sizeof key, "instances[%zu].model", i);
			return lsim_cfg_error(d, sc->doc, item, key, LSIM_EINVAL, "%s%s%s",
					      inner.msg, inner.file[0] ? " in " : "", inner.file);
		}
	}
	const struct lsim_instance_price *best = NULL;
	double best_price = 0;
	size_t best_k = 0;
	for (size_t k = 0; k < sc->prices->n; k++) {
		const char *kind = sc->prices->items[k].gpu;
		bool seen = false, in_cluster = sc->n_nodes == 0;
		for (size_t j = 0; j < k && !seen; j++)
			seen = strcmp(sc->prices->items[j].gpu, kind) == 0;
		for (size_t g = 0; g < sc->n_nodes && !in_cluster; g++)
			in_cluster = strcmp(sc->nodes[g].gpu, kind) == 0;
		struct lsim_diag scratch = {0};
		const struct lsim_instance_price *ip = NULL;
		bool chosen_from = !ic->gpu_from[0] || lsim_choice_index(ic->gpu_from, kind) >= 0;
		if (seen || !in_cluster || !chosen_from)
			continue;
		if (sc->cheap_state[k] == 0)
			sc->cheap_state[k] = lsim_scn_load_profile(sc, kind, &sc->cheap_profiles[k],
								   &scratch) == 0 ? 1 : -1;
		if (sc->cheap_state[k] < 0 ||
		    (ic->perf != PERF_SERVICE && !plan_holds(ic, &sc->cheap_profiles[k], m)) ||
		    lsim_prices_cheapest(sc->prices, kind, ic->spot, &ip, &scratch) != 0)
			continue;
		double price = lsim_price_per_gpu_hour(ip, ic->spot) * gpus;
		if (!best || price < best_price) {
			best = ip;
			best_price = price;
			best_k = k;
		}
	}
	if (!best)
		return lsim_cfg_error(d, sc->doc, item, key, LSIM_EINVAL,
				      "no GPU kind with a profile and a%s offer%s%s%s holds %s "
				      "on %d GPUs", ic->spot ? " spot" : "n",
				      sc->n_nodes > 0 ? " in the cluster" : "",
				      ic->gpu_from[0] ? " among " : "", ic->gpu_from, ic->model,
				      (int)gpus);
	snprintf(sc->gpu_choice[i], sizeof sc->gpu_choice[i], "%s", best->gpu);
	ic->gpu = sc->gpu_choice[i];
	sc->gpus[i] = sc->cheap_profiles[best_k];
	sc->offers[i] = best;
	return 0;
}

/* instances[].price offers (from power.prices) and the carbon series. */
int lsim_scn_load_costs(struct lsim_scenario *sc, struct lsim_diag *d)
{
	int rc = 0;
	sc->offers = calloc(sc->n_insts ? sc->n_insts : 1, sizeof *sc->offers);
	sc->gpu_choice = calloc(sc->n_insts ? sc->n_insts : 1, sizeof *sc->gpu_choice);
	/* each group's profile and model: read here for gpu: cheapest, by
	 * lsim_scn_load_hw for the others */
	sc->gpus = calloc(sc->n_insts ? sc->n_insts : 1, sizeof *sc->gpus);
	sc->models = calloc(sc->n_insts ? sc->n_insts : 1, sizeof *sc->models);
	if (!sc->offers || !sc->gpu_choice || !sc->gpus || !sc->models)
		return LSIM_ENOMEM;
	for (size_t i = 0; rc == 0 && i < sc->n_insts; i++) {
		const struct inst_cfg *ic = &sc->insts[i];
		char key[64];
		snprintf(key, sizeof key, "instances[%zu].price", i);
		struct lsim_node *item = lsim_node_get(sc->doc->root, "instances")->items[i];
		if (ic->gpu_from[0] && !(ic->gpu && strcmp(ic->gpu, "cheapest") == 0)) {
			snprintf(key, sizeof key, "instances[%zu].gpu_from", i);
			rc = lsim_cfg_error(d, sc->doc, lsim_node_get(item, "gpu_from"), key,
					    LSIM_EINVAL, "gpu_from lists the kinds gpu: cheapest "
					    "chooses from; gpu is %s", ic->gpu ? ic->gpu : "not set");
			break;
		}
		if (ic->gpu && strcmp(ic->gpu, "cheapest") == 0) {
			rc = load_prices(sc, d);
			if (rc == 0)
				rc = choose_gpu(sc, i, item, d);
			continue;
		}
		if (!ic->spot && (ic->on_demand_base > 0 || ic->on_demand_percent > 0)) {
			snprintf(key, sizeof key, "instances[%zu].%s", i,
				 ic->on_demand_base > 0 ? "on_demand_base" : "on_demand_percent");
			rc = lsim_cfg_error(d, sc->doc, item, key, LSIM_EINVAL,
					    "an on-demand share needs spot: true (without it every "
					    "replica runs on demand)");
			continue;
		}
		if (!ic->price[0]) {
			if (ic->spot)
				rc = lsim_cfg_error(d, sc->doc, item, key, LSIM_EINVAL,
						    "spot needs a price offer (instances[].price)");
			continue;
		}
		rc = load_prices(sc, d);
		if (rc != 0) {
			if (d && d->line == 0) /* the file itself: name the key that gave it */
				snprintf(d->key, sizeof d->key, "%s",
					 sc->power.prices[0] ? "power.prices" : "prices");
			break;
		}
		if (strcmp(ic->price, "cheapest") == 0) /* of the group's GPU kind */
			rc = lsim_prices_cheapest(sc->prices, ic->gpu, ic->spot,
						  &sc->offers[i], d);
		else
			rc = lsim_prices_find(sc->prices, ic->price, &sc->offers[i], d);
		if (rc != 0 && d && d->line == 0) {
			/* no such offer: point at the scenario key that named it */
			struct lsim_diag inner = *d;
			struct lsim_node *at = lsim_node_get(item, "price");
			rc = lsim_cfg_error(d, sc->doc, at ? at : item, key, rc, "%s in %s",
					    inner.msg, inner.file);
		}
		if (rc == 0 && ic->spot && !(sc->offers[i]->spot > 0))
			rc = lsim_cfg_error(d, sc->doc, item, key, LSIM_EINVAL,
					    "offer %s has no spot price", ic->price);
		if (rc != 0 && d && !strchr(d->key, '['))
			snprintf(d->key, sizeof d->key, "%s", key);
	}
	if (rc == 0 && sc->power.carbon_trace[0]) {
		char *path = lsim_scn_resolve(sc, sc->power.carbon_trace);
		if (!path)
			return LSIM_ENOMEM;
		rc = lsim_carbon_load(path, sc->power.carbon_period, &sc->carbon, d);
		if (rc != 0 && d && !d->key[0])
			snprintf(d->key, sizeof d->key, "power.carbon_trace");
		free(path);
	}
	return rc;
}
