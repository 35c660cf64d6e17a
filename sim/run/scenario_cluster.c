/*
 * scenario_cluster.c - a scenario's cluster: placement of the instance
 * groups' replicas on its nodes (by the allocator policy), its network
 * of links and background copy streams, and the fleet at run time (the
 * adaptor's scale-outs and scale-ins, failed nodes).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/jobs.h"
#include "run/scenario_internal.h"

/* Bytes one GPU of a replica of instance group i needs: its share of the
 * weights and of the minimum KV reserve. */
static double bytes_per_gpu(const struct lsim_scenario *sc, size_t i)
{
	const struct inst_cfg *ic = &sc->insts[i];
	if (ic->perf == PERF_SERVICE)
		return 0;
	const struct lsim_model_arch *m = &sc->models[i];
	/* expert parallel: a rank holds 1 / dp of the experts */
	double w = lsim_model_weight_bytes(m);
	if (ic->ep && ic->dp > 1)
		w -= lsim_model_expert_bytes(m) * (1.0 - 1.0 / (double)ic->dp);
	return (w + lsim_model_kv_bytes_per_token(m) * (double)ic->min_kv_tokens) /
	       (double)lsim_scn_replica_gpus(ic);
}

static uint64_t gpu_bits(int32_t first, int32_t n)
{
	uint64_t m = n >= 64 ? ~0ULL : ((1ULL << n) - 1);
	return m << first;
}

/* The first of n consecutive free GPUs among total, or -1. */
static int32_t first_free_run(uint64_t used, int32_t total, int32_t n)
{
	for (int32_t g = 0; g + n <= total; g++)
		if ((used & gpu_bits(g, n)) == 0)
			return g;
	return -1;
}

/* Gives back a part of a replica (n GPUs from local index g0 on node
 * at). */
static void unplace(struct lsim_node_info *nodes, uint64_t *used, int32_t at,
		    int32_t g0, int32_t n, bool counted)
{
	used[at] &= ~gpu_bits(g0, n);
	nodes[at].gpus_free += n;
	if (counted)
		nodes[at].instances--;
}

/*
 * Places one replica of group i (replica index r; -1 for a scale-out) with
 * the allocator policy: the core marks the nodes that fit (GPU kind, a run
 * of free GPUs), the policy picks one. All tp x pp GPUs go in one node if
 * any node fits them; otherwise, with pp > 1, each stage's tp GPUs go in a
 * node of their own choosing (a pipeline across nodes). A node counts one
 * instance per run of consecutive stages placed on it. Fills node_out and
 * gpu_out (local index) per stage. Returns 0, LSIM_EBUSY when it does not
 * fit, LSIM_EPLUGIN when the allocator picks a node that does not fit.
 */
static int place_replica(struct lsim_scenario *sc, size_t i, int32_t r,
			 struct lsim_node_info *nodes, uint64_t *used, size_t total,
			 int32_t *node_out, int32_t *gpu_out)
{
	const struct inst_cfg *ic = &sc->insts[i];
	/* a data-parallel replica's ranks (pp 1) as one run of GPUs */
	int32_t tp = (int32_t)(ic->tp * ic->dp), pp = ic->eng.pp > 1 ? (int32_t)ic->eng.pp : 1;
	const struct lsim_policy *alloc = sc->policies[LSIM_ROLE_ALLOCATOR];
	const struct lsim_allocator_ops *ops = alloc->type->ops;
	for (int pass = 0; pass < (pp > 1 ? 2 : 1); pass++) {
		int32_t want = pass == 0 ? tp * pp : tp, parts = pass == 0 ? 1 : pp;
		int32_t done = 0;
		int rc = 0;
		for (; done < parts; done++) {
			bool any = false;
			for (size_t j = 0; j < total; j++) {
				nodes[j].fits = strcmp(sc->nodes[nodes[j].group].gpu, ic->gpu) == 0 &&
						nodes[j].gpus_free >= want &&
						first_free_run(used[j], nodes[j].gpus_total, want) >= 0;
				any |= nodes[j].fits;
			}
			if (!any)
				break;
			struct lsim_alloc_request req = {
				.tp = want, .replica = r, .bytes_per_gpu = bytes_per_gpu(sc, i),
			};
			int32_t at = ops->place(alloc->state, &req, nodes, (int32_t)total);
			if (at < 0 || (size_t)at >= total || !nodes[at].fits) {
				rc = LSIM_EPLUGIN;
				break;
			}
			int32_t g0 = first_free_run(used[at], nodes[at].gpus_total, want);
			used[at] |= gpu_bits(g0, want);
			nodes[at].gpus_free -= want;
			if (done == 0 || node_out[done - 1] != at)
				nodes[at].instances++;
			if (pass == 0) {
				for (int32_t st = 0; st < pp; st++) {
					node_out[st] = at;
					gpu_out[st] = g0 + st * tp;
				}
			} else {
				node_out[done] = at;
				gpu_out[done] = g0;
			}
		}
		if (done == parts)
			return 0;
		for (int32_t k = done - 1; k >= 0; k--)
			unplace(nodes, used, node_out[k], gpu_out[k], want,
				k == 0 || node_out[k - 1] != node_out[k]);
		if (rc != 0)
			return rc;
	}
	return LSIM_EBUSY;
}

/*
 * Places every replica (place_replica), after checking that a replica's
 * GPUs have the memory for their share of the weights plus the KV
 * reserve, with 5% of the device kept for activations.
 */
int lsim_scn_place(struct lsim_scenario *sc, struct lsim_diag *d)
{
	size_t total = 0;
	for (size_t i = 0; i < sc->n_nodes; i++)
		total += (size_t)sc->nodes[i].count;
	struct lsim_node_info *nodes = calloc(total ? total : 1, sizeof *nodes);
	size_t n_stages = 0;
	for (size_t i = 0; i < sc->n_insts; i++)
		n_stages += (size_t)(sc->insts[i].replicas *
				     (sc->insts[i].eng.pp > 1 ? sc->insts[i].eng.pp : 1));
	sc->placement = calloc(n_stages ? n_stages : 1, sizeof *sc->placement);
	sc->placement_gpu = calloc(n_stages ? n_stages : 1, sizeof *sc->placement_gpu);
	uint64_t *used = calloc(total ? total : 1, sizeof *used);
	if (!nodes || !sc->placement || !sc->placement_gpu || !used) {
		free(nodes);
		free(used);
		return LSIM_ENOMEM;
	}
	size_t k = 0;
	for (size_t g = 0; g < sc->n_nodes; g++)
		for (int64_t c = 0; c < sc->nodes[g].count; c++, k++) {
			nodes[k].id = (int32_t)k;
			nodes[k].group = (int32_t)g;
			nodes[k].gpus_total = (int32_t)sc->nodes[g].gpus_per_node;
			if (nodes[k].gpus_total > sc->gpus_per_node_max)
				sc->gpus_per_node_max = nodes[k].gpus_total;
			nodes[k].gpus_free = nodes[k].gpus_total;
		}
	const struct lsim_policy *alloc = sc->policies[LSIM_ROLE_ALLOCATOR];
	struct lsim_node *list = lsim_node_get(sc->doc->root, "instances");
	int rc = 0;
	size_t next = 0;
	for (size_t i = 0; i < sc->n_insts && rc == 0; i++) {
		const struct inst_cfg *ic = &sc->insts[i];
		int32_t pp = ic->eng.pp > 1 ? (int32_t)ic->eng.pp : 1;
		int32_t want = (int32_t)lsim_scn_placed_gpus(ic);
		char key[64];
		snprintf(key, sizeof key, "instances[%zu].replicas", i);
		int32_t host = lsim_scn_share_host(sc, i);
		if (host >= 0) { /* GPU sharing: on its gpu_group's GPU (one replica) */
			size_t at = 0;
			for (size_t j = 0; j < (size_t)host; j++)
				at += (size_t)(sc->insts[j].replicas *
					       (sc->insts[j].eng.pp > 1 ? sc->insts[j].eng.pp : 1));
			sc->placement[next] = sc->placement[at];
			sc->placement_gpu[next] = sc->placement_gpu[at];
			next++;
			continue;
		}
		for (int64_t r = 0; r < ic->replicas && rc == 0; r++, next += (size_t)pp) {
			rc = place_replica(sc, i, (int32_t)r, nodes, used, total,
					   &sc->placement[next], &sc->placement_gpu[next]);
			if (rc == LSIM_EBUSY)
				rc = lsim_cfg_error(d, sc->doc, list->items[i], key,
						    LSIM_EINVAL,
						    "not enough %s GPUs in the cluster for replica %lld "
						    "(%d GPUs: tp %lld x %s %d; %s)",
						    ic->gpu, (long long)r + 1, (int)want, (long long)ic->tp,
						    ic->dp > 1 ? "data_parallel_size" : "pp",
						    ic->dp > 1 ? (int)ic->dp : (int)pp,
						    pp > 1 ? "each stage must fit in one node"
							   : "a replica must fit in one node");
			else if (rc == LSIM_EPLUGIN)
				rc = lsim_cfg_error(d, sc->doc, list->items[i], "allocator",
						    LSIM_EPLUGIN,
						    "allocator %s chose a node that does not fit",
						    alloc->type->name);
		}
	}
	/* kept: a run starts from this and places replicas it adds */
	sc->nodes_init = nodes;
	sc->used_init = used;
	sc->n_rt_nodes = total;
	return rc;
}

/* The cluster's topology parameters: the network keys, and those left
 * at 0 from the GPU profile of the first node group (PCIe generation,
 * GPUs per switch, P2P, NVLink), as an instance group or the training
 * jobs' pool loaded it; returns that profile's name, or NULL where the
 * defaults of lsim_topo_params_default stand in (no instance group or
 * job pool uses that GPU). One topology of all nodes, as many GPUs per
 * node as the largest node group. */
static const char *topo_params(const struct lsim_scenario *sc, struct lsim_topo_params *p)
{
	const struct net_cfg *c = &sc->net;
	struct lsim_topo_params def;
	lsim_topo_params_default(&def);
	double pcie = def.pcie_bw, nvlink = def.nvlink_bw;
	int32_t per_switch = def.gpus_per_switch;
	bool pairs = false, no_p2p = false;
	const struct lsim_gpu_profile *g = NULL;
	for (size_t i = 0; i < sc->n_insts && !g; i++)
		if (strcmp(sc->insts[i].gpu, sc->nodes[0].gpu) == 0)
			g = &sc->gpus[i];
	if (!g && sc->have_jobs && sc->pool_profiles) {
		int32_t t = lsim_pool_spec_type(&sc->pool, sc->nodes[0].gpu);
		if (t >= 0)
			g = &sc->pool_profiles[t];
	}
	if (g) {
		pcie = g->pcie_bw;
		nvlink = g->nvlink_bw;
		pairs = g->fabric == LSIM_FABRIC_NVLINK_PAIRS;
		no_p2p = !g->gpu_p2p;
		per_switch = g->pcie_switch_gpus;
	}
	const char *from = g ? g->name : NULL;
	int64_t nodes = 0;
	for (size_t i = 0; i < sc->n_nodes; i++)
		nodes += sc->nodes[i].count;
	*p = (struct lsim_topo_params){
		.nodes = (int32_t)nodes,
		.gpus_per_node = sc->gpus_per_node_max,
		.gpus_per_switch = c->gpus_per_switch > 0 ? (int32_t)c->gpus_per_switch : per_switch,
		.nodes_per_tor = (int32_t)c->nodes_per_tor,
		.pcie_bw = c->pcie_bw > 0 ? c->pcie_bw : pcie,
		.host_bw = c->host_bw > 0 ? c->host_bw : pcie,
		.nvlink_bw = c->nvlink_bw > 0 ? c->nvlink_bw : nvlink,
		.nvlink_pairs = pairs,
		.no_p2p = no_p2p,
		.nic_bw = c->nic_bw,
		.oversubscription = c->oversubscription,
		.spine_bw = c->spine_bw,
		.storage_bw = c->storage_bw,
		.pcie_latency = c->pcie_latency,
		.host_latency = c->host_latency,
		.nvlink_latency = c->nvlink_latency,
		.nic_latency = c->nic_latency,
		.tor_latency = c->tor_latency,
		.spine_latency = c->spine_latency,
		.storage_latency = c->storage_latency,
	};
	if (p->gpus_per_switch > p->gpus_per_node)
		p->gpus_per_switch = p->gpus_per_node;
	return from;
}

char *lsim_scenario_network_summary(const struct lsim_scenario *sc)
{
	struct lsim_buf b = {0};
	lsim_buf_printf(&b, "%s", "");
	if (sc->n_nodes > 0) {
		struct lsim_topo_params p;
		const char *from = topo_params(sc, &p);
		lsim_buf_printf(&b,
				"# network: a node's GPUs on PCIe links of %.2f GB/s a direction, "
				"%d under each switch, whose uplink has %.2f GB/s for both "
				"directions; peer-to-peer %s; NVLink %s%.2f GB/s a direction "
				"(what network leaves at 0 from %s%s)\n",
				p.pcie_bw / 1e9, (int)p.gpus_per_switch, p.host_bw / 1e9,
				p.no_p2p ? "off (through host memory)" : "on",
				p.nvlink_pairs ? "bridges in pairs, " : "", p.nvlink_bw / 1e9,
				from ? from : "the defaults of a DGX H100 node",
				from ? "'s profile" : "");
	}
	if (b.failed) {
		lsim_buf_release(&b);
		return NULL;
	}
	return b.data;
}

/* The cluster's links. */
int lsim_scn_build_network(struct lsim_scenario *sc, struct lsim_diag *d)
{
	if (sc->n_nodes == 0)
		return 0;
	const struct net_cfg *c = &sc->net;
	struct lsim_topo_params p;
	topo_params(sc, &p);
	sc->sim.sv.util_window = c->util_window;
	sc->sim.messages = c->messages;
	int rc = lsim_sim_set_network(&sc->sim, &p, d);
	struct lsim_net *net = sc->sim.sv.net;
	/* the QoS manager's link scheduling: a class per configured kind
	 * (and tenant: by its trace's position now, by name when the trace
	 * first names it, run.c) */
	size_t n_named = 0;
	for (size_t i = 0; i < sc->n_lc; i++)
		n_named += sc->lc[i].tenant[0] && sc->wl.tenant_column[0];
	free(sc->sim.tenant_cls);
	sc->sim.n_tenant_cls = 0;
	sc->sim.tenant_cls = n_named ? malloc(n_named * sizeof *sc->sim.tenant_cls) : NULL;
	if (rc == 0 && n_named && !sc->sim.tenant_cls)
		rc = lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	for (size_t i = 0; rc == 0 && i < sc->n_lc; i++) {
		const struct lc_cfg *k = &sc->lc[i];
		struct lsim_link_class lc = {k->priority, k->weight, k->rate, k->burst};
		enum lsim_flow_kind kind = (enum lsim_flow_kind)k->kind;
		int32_t id;
		rc = lsim_net_add_class(net, &lc, &id, d);
		if (rc == 0 && !k->tenant[0])
			rc = lsim_net_map_kind(net, kind, id, d);
		else if (rc == 0 && !sc->wl.tenant_column[0])
			rc = lsim_net_map_tenant(net, kind, (int32_t)strtol(k->tenant, NULL, 10), id, d);
		else if (rc == 0)
			sc->sim.tenant_cls[sc->sim.n_tenant_cls++] =
				(struct lsim_tenant_class){k->tenant, (int32_t)kind, id};
		if (rc != 0)
			snprintf(d->key, sizeof d->key, "network.link_classes[%zu]", i);
	}
	for (size_t i = 0; rc == 0 && i < sc->n_bg; i++) {
		const struct bg_cfg *b = &sc->bg[i];
		struct lsim_bg_cfg bc = {
			.gpu = (int32_t)b->gpu, .to_host = b->direction == 1,
			.block = b->block, .count = b->count, .streams = b->streams,
			.gap = b->gap, .staging_bw = b->staging_bw, .start = b->start,
		};
		/* an entry with its own priority, weight or rate is a class of
		 * its own; otherwise its copies are background flows */
		if (b->priority != LSIM_QOS_DEFAULT_LEVEL || b->weight != 1 || b->rate > 0) {
			struct lsim_link_class lc = {b->priority, b->weight, b->rate, b->burst};
			rc = lsim_net_add_class(net, &lc, &bc.cls, d);
			if (rc != 0) {
				snprintf(d->key, sizeof d->key, "background[%zu]", i);
				break;
			}
		}
		rc = lsim_sim_add_background(&sc->sim, &bc, d);
		if (rc != 0)
			snprintf(d->key, sizeof d->key, "background[%zu].gpu", i);
	}
	return rc;
}

/* ---- the fleet at run time: the adaptor's scale-outs and scale-ins ---- */

static int spawn(void *ctx, int32_t g, struct lsim_instance **out,
		 struct lsim_diag *d)
{
	struct lsim_scenario *sc = ctx;
	const struct inst_cfg *ic = &sc->insts[g];
	int32_t pp = ic->eng.pp > 1 ? (int32_t)ic->eng.pp : 1;
	int32_t node[64], gpu_local[64]; /* per stage (pp <= 64) */
	if (sc->n_rt_nodes == 0)
		return lsim_scn_make_instance(sc, (size_t)g, NULL, NULL, out, d);
	int rc = place_replica(sc, (size_t)g, -1, sc->rt_nodes, sc->rt_used,
			       sc->n_rt_nodes, node, gpu_local);
	if (rc == LSIM_EPLUGIN)
		return lsim_diag_set(d, rc, "", 0, 0, "allocator",
				     "allocator %s chose a node that does not fit",
				     sc->policies[LSIM_ROLE_ALLOCATOR]->type->name);
	if (rc != 0)
		return rc;
	for (int32_t st = 0; sc->js && st < pp; st++) /* training jobs there
							* checkpoint and make room */
		lsim_jobs_reclaim(sc->js, node[st], (int32_t)ic->tp, NULL, NULL);
	return lsim_scn_make_instance(sc, (size_t)g, node, gpu_local, out, d);
}

static void stopped(void *ctx, const struct lsim_instance *in)
{
	struct lsim_scenario *sc = ctx;
	if (in->node < 0 || (size_t)in->node >= sc->n_rt_nodes)
		return;
	for (int32_t j = 0; in->share && j < in->share->n; j++)
		if (in->share->member[j] != in && in->share->member[j]->stop < 0)
			return; /* a shared GPU goes back with its last member */
	/* stage by stage; a node counted one instance per run of stages */
	for (int32_t st = 0; st < in->pp; st++) {
		int32_t node = in->stage_node ? in->stage_node[st] : in->node;
		int32_t g0 = in->stage_gpu0 ? in->stage_gpu0[st] : in->gpu0 + st * in->tp;
		bool first = st == 0 || !in->stage_node || in->stage_node[st - 1] != node;
		unplace(sc->rt_nodes, sc->rt_used, node, g0 - node * sc->gpus_per_node_max,
			in->tp, first);
		if (sc->js) /* training can use them again */
			lsim_jobs_give_back(sc->js, node, in->tp);
	}
}

static void node_failed(void *ctx, int32_t node)
{
	struct lsim_scenario *sc = ctx;
	if (node < 0 || (size_t)node >= sc->n_rt_nodes)
		return;
	sc->rt_nodes[node].gpus_free = 0;
	sc->rt_used[node] = ~0ULL;
}

/* The groups the adaptor scales, and the run's copy of the nodes. */
int lsim_scn_setup_fleet(struct lsim_scenario *sc)
{
	free(sc->groups);
	sc->groups = calloc(sc->n_insts, sizeof *sc->groups);
	if (!sc->groups)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < sc->n_insts; i++) {
		const struct inst_cfg *ic = &sc->insts[i];
		struct lsim_group *g = &sc->groups[i];
		g->min = (int32_t)lsim_scn_min_replicas(ic);
		g->max = (int32_t)lsim_scn_max_replicas(ic);
		if (ic->dp > 1) /* counted in instances, each rank one; never scaled
				 * (lsim_scn_check_dp refuses min_replicas and max_replicas) */
			g->min = g->max = (int32_t)(ic->replicas * ic->dp);
		g->capacity_rps = ic->capacity_rps;
		g->provision = ic->provision_time;
		g->engine_init = ic->engine_init;
		/* uncontended: weights per GPU over the storage link */
		double bytes = ic->perf == PERF_SERVICE ? 0
			: lsim_model_weight_bytes(&sc->models[i]) /
				  (double)lsim_scn_replica_gpus(ic);
		g->start_lead = ic->provision_time + ic->engine_init +
				(lsim_time)llround(bytes / sc->net.storage_bw * 1e9);
	}
	sc->sim.mtbf = sc->fail.mtbf;
	sc->sim.gpu_mtbf = sc->fail.gpu_mtbf;
	sc->sim.coord_mtbf = sc->fail.coordinator_mtbf;
	sc->sim.fail_weibull = sc->fail.distribution == 1;
	sc->sim.fail_shape = sc->fail.shape;
	sc->sim.replace_failed = sc->fail.replace;
	sc->sim.spot_mtbr = sc->fail.spot_mtbr;
	sc->sim.node_mtbf = sc->fail.node_mtbf;
	sc->sim.n_nodes = (int32_t)sc->n_rt_nodes;
	sc->sim.spot_warning = sc->fail.spot_warning;
	sc->sim.trace_fail_t = sc->fail_t;
	sc->sim.trace_fail_inst = sc->fail_inst;
	sc->sim.n_trace_fail = sc->n_fail;
	sc->sim.groups = sc->groups;
	sc->sim.n_groups = sc->n_insts;
	sc->sim.load_bw = sc->net.storage_bw;
	sc->sim.fleet = (struct lsim_fleet_ops){.spawn = spawn, .stopped = stopped,
						.node_failed = node_failed, .ctx = sc};
	free(sc->rt_nodes);
	free(sc->rt_used);
	sc->rt_nodes = NULL;
	sc->rt_used = NULL;
	if (sc->n_rt_nodes == 0)
		return 0;
	sc->rt_nodes = malloc(sc->n_rt_nodes * sizeof *sc->rt_nodes);
	sc->rt_used = malloc(sc->n_rt_nodes * sizeof *sc->rt_used);
	if (!sc->rt_nodes || !sc->rt_used)
		return LSIM_ENOMEM;
	memcpy(sc->rt_nodes, sc->nodes_init, sc->n_rt_nodes * sizeof *sc->rt_nodes);
	memcpy(sc->rt_used, sc->used_init, sc->n_rt_nodes * sizeof *sc->rt_used);
	return 0;
}
