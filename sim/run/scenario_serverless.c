/*
 * scenario_serverless.c - a scenario's serverless serving: the checks of
 * instances[].serverless and keep_alive and of the nodes' weight tiers
 * (cluster[].host_cache, ssd_*), and the run's serverless state built
 * from them (docs/serverless.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/scenario_internal.h"

const char *const lsim_scn_serverless_node_keys[] = {
	"host_cache", "ssd_bw", "ssd_capacity", "ssd_latency", "ssd_preload", NULL,
};

static int refuse(struct lsim_scenario *sc, struct lsim_node *at, const char *key,
		  const char *msg, struct lsim_diag *d)
{
	return lsim_cfg_error(d, sc->doc, at, key, LSIM_EINVAL, "%s", msg);
}

static bool any_tier(const struct lsim_scenario *sc)
{
	for (size_t i = 0; i < sc->n_nodes; i++)
		if (sc->nodes[i].host_cache > 0 || sc->nodes[i].ssd_bw > 0)
			return true;
	return false;
}

static bool any_serverless(const struct lsim_scenario *sc)
{
	for (size_t i = 0; i < sc->n_insts; i++)
		if (sc->insts[i].serverless)
			return true;
	return false;
}

bool lsim_scn_uses_serverless(const struct lsim_scenario *sc)
{
	return any_serverless(sc) || any_tier(sc);
}

int lsim_scn_check_serverless(struct lsim_scenario *sc, struct lsim_node *root,
			      struct lsim_diag *d)
{
	struct lsim_node *list = lsim_node_get(root, "instances");
	char key[96];
	for (size_t i = 0; i < sc->n_insts; i++) {
		const struct inst_cfg *ic = &sc->insts[i];
		struct lsim_node *item = list->items[i];
		const char *what = NULL, *field = NULL;
		if (!ic->serverless) {
			if (lsim_node_get(item, "keep_alive")) {
				field = "keep_alive";
				what = "keep_alive applies to serverless groups: add "
				       "serverless: true, or drop keep_alive";
			} else if (ic->replicas == 0) {
				field = "replicas";
				what = "0 replicas serve nothing: write serverless: true to "
				       "start instances on demand, or replicas of 1 or more";
			}
		} else if (ic->min_replicas >= 0 || ic->max_replicas >= 0) {
			field = ic->min_replicas >= 0 ? "min_replicas" : "max_replicas";
			what = "a serverless group scales by demand and keep_alive, not by "
			       "the adaptor: drop min_replicas and max_replicas (replicas "
			       "is the count at start)";
		} else if (ic->dp > 1) {
			field = "data_parallel_size";
			what = "serverless data-parallel groups are not modelled: use "
			       "data_parallel_size 1";
		} else if (ic->role != LSIM_ROLE_BOTH) {
			field = "role";
			what = "serverless disaggregated instances are not modelled: use "
			       "role: both";
		} else if (ic->perf == PERF_SERVICE && lsim_node_get(root, "cluster")) {
			field = "perf";
			what = "a serverless scale-out loads its model's weights over the "
			       "links: perf roofline or table, not service";
		}
		if (what) {
			snprintf(key, sizeof key, "instances[%zu].%s", i, field);
			struct lsim_node *at = lsim_node_get(item, field);
			return refuse(sc, at ? at : item, key, what, d);
		}
	}
	struct lsim_node *cl = lsim_node_get(root, "cluster");
	for (size_t i = 0; i < sc->n_nodes; i++) {
		const struct node_cfg *nc = &sc->nodes[i];
		struct lsim_node *item = cl && cl->kind == LSIM_NODE_SEQ && cl->n > i ? cl->items[i] : cl;
		const char *what = NULL, *field = NULL;
		if (nc->ssd_bw > 0 && !(nc->ssd_capacity > 0)) {
			field = "ssd_capacity";
			what = "an SSD tier needs its capacity: set ssd_capacity (bytes), "
			       "or drop ssd_bw";
		} else if (nc->ssd_bw <= 0 && nc->ssd_capacity > 0) {
			field = "ssd_bw";
			what = "an SSD tier needs its read bandwidth: set ssd_bw, or drop "
			       "ssd_capacity";
		} else if (nc->ssd_preload && nc->ssd_bw <= 0) {
			field = "ssd_preload";
			what = "ssd_preload needs an SSD tier: set ssd_bw and ssd_capacity";
		}
		if (what) {
			snprintf(key, sizeof key, "cluster[%zu].%s", i, field);
			struct lsim_node *at = item ? lsim_node_get(item, field) : NULL;
			return refuse(sc, at ? at : item, key, what, d);
		}
	}
	if (any_tier(sc) && !any_serverless(sc)) {
		for (size_t i = 0; i < sc->n_insts; i++)
			if (sc->insts[i].cold_start || lsim_scn_max_replicas(&sc->insts[i]) >
								sc->insts[i].replicas)
				return 0; /* cold starts read from the tiers */
		return refuse(sc, cl, "cluster.host_cache",
			      "weight tiers serve cold starts: no instance group starts "
			      "cold (serverless, cold_start or max_replicas above replicas); "
			      "drop host_cache and ssd_bw", d);
	}
	return 0;
}

int lsim_scn_setup_serverless(struct lsim_scenario *sc, struct lsim_diag *d)
{
	if (!any_serverless(sc) && !any_tier(sc))
		return 0;
	for (size_t i = 0; i < sc->n_insts; i++) {
		sc->groups[i].model_idx = sc->group_model[i];
		sc->groups[i].gpus = (int32_t)lsim_scn_placed_gpus(&sc->insts[i]);
	}
	size_t nn = sc->n_rt_nodes;
	struct lsim_sl_node_cfg *nodes = calloc(nn ? nn : 1, sizeof *nodes);
	struct lsim_sl_group_cfg *groups = calloc(sc->n_insts ? sc->n_insts : 1, sizeof *groups);
	int rc = nodes && groups ? 0 : LSIM_ENOMEM;
	for (size_t k = 0; rc == 0 && k < nn; k++) {
		const struct node_cfg *nc = &sc->nodes[sc->nodes_init[k].group];
		nodes[k] = (struct lsim_sl_node_cfg){
			.host_cache = nc->host_cache, .ssd_bw = nc->ssd_bw,
			.ssd_capacity = nc->ssd_capacity, .ssd_latency = nc->ssd_latency,
			.ssd_preload = nc->ssd_preload,
		};
	}
	for (size_t i = 0; rc == 0 && i < sc->n_insts; i++) {
		const struct inst_cfg *ic = &sc->insts[i];
		int32_t kind = (int32_t)i;
		for (size_t j = 0; j < i; j++)
			if (strcmp(sc->insts[j].gpu, ic->gpu) == 0) {
				kind = groups[j].gpu_kind;
				break;
			}
		groups[i] = (struct lsim_sl_group_cfg){
			.serverless = ic->serverless, .keep_alive = ic->keep_alive,
			.weight_bytes = ic->perf == PERF_SERVICE
						? 0 : lsim_model_weight_bytes(&sc->models[i]),
			.gpu_kind = kind,
		};
	}
	if (rc == 0)
		rc = lsim_sl_create(&sc->sim, nodes, (int32_t)nn, groups, (int32_t)sc->n_insts,
				    sc->policies[LSIM_ROLE_ALLOCATOR], d);
	free(nodes);
	free(groups);
	if (rc == LSIM_ENOMEM && !d->msg[0])
		lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	/* the instances that start ready and idle: their keep-alive runs */
	for (size_t i = 0; rc == 0 && i < sc->sim.n_inst; i++)
		lsim_sl_maybe_idle(&sc->sim, sc->sim.inst[i]);
	return rc != 0 ? rc : sc->sim.sv.error;
}
