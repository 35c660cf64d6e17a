/*
 * serverless.c - serverless serving (docs/serverless.md): scale to zero
 * after a keep-alive, scale from zero on demand (evicting idle instances
 * as the allocator's evict op decides, or waiting for GPUs), the storage
 * tiers a cold start loads from (host-DRAM cache, local SSD, remote
 * storage, each a path of links the load's flows share), the node caches
 * (LRU) and the serverless metrics.
 */
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run/serverless.h"
#include "run/sim.h"

/* A node's tiers: per group, when its checkpoint was last used in the
 * host cache and on the SSD (-1: not there), and how many loads read it
 * there now (a pinned entry is not evicted: its bytes are being read). */
struct sl_node {
	struct lsim_sl_node_cfg c;
	int32_t ssd_link; /* -1: no SSD */
	double host_used, ssd_used;
	lsim_time *host_at, *ssd_at; /* per group */
	int32_t *host_pin, *ssd_pin; /* per group (one allocation) */
};

struct lsim_serverless {
	int32_t n_nodes, n_groups;
	struct sl_node *nodes;
	struct lsim_sl_group_cfg *groups;
	const struct lsim_policy *alloc; /* borrowed */
	/* per instance id */
	lsim_time *idle_since;	/* -1: busy */
	lsim_time *load_start;
	int64_t *served;
	int8_t *tier;		/* -1: no load */
	size_t cap_inst;
	/* per request slot: held while its model loads */
	uint8_t *held;
	size_t cap_held;
	/* groups waiting for GPUs, in order of demand */
	int32_t *waiting;
	int32_t n_waiting;
	bool retrying;
	double *delays;		/* cold-start delays, s */
	size_t n_delays, cap_delays;
	double load_s;		/* sum of load times */
	uint64_t loads[LSIM_TIER_COUNT];
	uint64_t ka_scale_ins, evictions, cache_evictions;
};

static int fail(struct lsim_sim *s, int rc)
{
	if (!s->sv.error)
		s->sv.error = rc;
	lsim_stop(s->sv.eng);
	return rc;
}

/* Per-instance arrays hold an entry for every instance. */
static int grow_inst(struct lsim_serverless *sl, size_t n)
{
	if (n <= sl->cap_inst)
		return 0;
	size_t c = n + n / 2 + 8;
	lsim_time *a = realloc(sl->idle_since, c * sizeof *a);
	if (!a)
		return LSIM_ENOMEM;
	sl->idle_since = a;
	lsim_time *b = realloc(sl->load_start, c * sizeof *b);
	if (!b)
		return LSIM_ENOMEM;
	sl->load_start = b;
	int64_t *v = realloc(sl->served, c * sizeof *v);
	if (!v)
		return LSIM_ENOMEM;
	sl->served = v;
	int8_t *t = realloc(sl->tier, c * sizeof *t);
	if (!t)
		return LSIM_ENOMEM;
	sl->tier = t;
	for (size_t i = sl->cap_inst; i < c; i++) {
		sl->idle_since[i] = -1;
		sl->load_start[i] = -1;
		sl->served[i] = 0;
		sl->tier[i] = -1;
	}
	sl->cap_inst = c;
	return 0;
}

void lsim_sl_destroy(struct lsim_serverless *sl)
{
	if (!sl)
		return;
	for (int32_t k = 0; sl->nodes && k < sl->n_nodes; k++) {
		free(sl->nodes[k].host_at);
		free(sl->nodes[k].ssd_at);
		free(sl->nodes[k].host_pin);
	}
	free(sl->nodes);
	free(sl->groups);
	free(sl->idle_since);
	free(sl->load_start);
	free(sl->served);
	free(sl->tier);
	free(sl->held);
	free(sl->waiting);
	free(sl->delays);
	free(sl);
}

/* Puts group g's checkpoint into a cache of capacity cap (at[], *used),
 * dropping the least recently used ones that no load is reading (pin[])
 * until it fits; false (not cached, nothing dropped) if it cannot fit. */
static bool cache_put(struct lsim_serverless *sl, lsim_time *at, const int32_t *pin,
		      double *used, double cap, int32_t g, lsim_time now)
{
	double b = sl->groups[g].weight_bytes;
	if (at[g] >= 0) {
		at[g] = now;
		return true;
	}
	if (!(b <= cap))
		return false;
	double movable = 0; /* what dropping every unpinned entry frees */
	for (int32_t k = 0; k < sl->n_groups; k++)
		if (at[k] >= 0 && pin[k] == 0)
			movable += sl->groups[k].weight_bytes;
	if (*used - movable + b > cap)
		return false;
	while (*used + b > cap) {
		int32_t v = -1;
		for (int32_t k = 0; k < sl->n_groups; k++)
			if (at[k] >= 0 && pin[k] == 0 && (v < 0 || at[k] < at[v]))
				v = k;
		if (v < 0)
			return false;
		at[v] = -1;
		*used -= sl->groups[v].weight_bytes;
		sl->cache_evictions++;
	}
	at[g] = now;
	*used += b;
	return true;
}

int lsim_sl_create(struct lsim_sim *s, const struct lsim_sl_node_cfg *nodes,
		   int32_t n_nodes, const struct lsim_sl_group_cfg *groups,
		   int32_t n_groups, const struct lsim_policy *alloc,
		   struct lsim_diag *d)
{
	struct lsim_serverless *sl = calloc(1, sizeof *sl);
	if (!sl)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	s->sl = sl;
	sl->n_nodes = n_nodes;
	sl->n_groups = n_groups;
	sl->alloc = alloc;
	sl->nodes = calloc(n_nodes > 0 ? (size_t)n_nodes : 1, sizeof *sl->nodes);
	sl->groups = calloc(n_groups > 0 ? (size_t)n_groups : 1, sizeof *sl->groups);
	sl->waiting = calloc(n_groups > 0 ? (size_t)n_groups : 1, sizeof *sl->waiting);
	if (!sl->nodes || !sl->groups || !sl->waiting)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	memcpy(sl->groups, groups, (size_t)n_groups * sizeof *groups);
	for (int32_t k = 0; k < n_nodes; k++) {
		struct sl_node *nd = &sl->nodes[k];
		nd->c = nodes[k];
		nd->ssd_link = -1;
		nd->host_at = malloc((size_t)(n_groups > 0 ? n_groups : 1) * sizeof *nd->host_at);
		nd->ssd_at = malloc((size_t)(n_groups > 0 ? n_groups : 1) * sizeof *nd->ssd_at);
		nd->host_pin = calloc(2 * (size_t)(n_groups > 0 ? n_groups : 1),
				      sizeof *nd->host_pin);
		if (!nd->host_at || !nd->ssd_at || !nd->host_pin)
			return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
		nd->ssd_pin = nd->host_pin + (n_groups > 0 ? n_groups : 1);
		for (int32_t g = 0; g < n_groups; g++)
			nd->host_at[g] = nd->ssd_at[g] = -1;
		if (nd->c.ssd_bw > 0 && s->sv.net) {
			int rc = lsim_link_add(s->sv.net, LSIM_LINK_STORAGE, nd->c.ssd_bw,
					       nd->c.ssd_latency, &nd->ssd_link, d);
			if (rc != 0)
				return rc;
		}
		/* staged in group order, as many as fit (never evicting) */
		for (int32_t g = 0; nd->c.ssd_preload && g < n_groups; g++)
			if (nd->ssd_used + groups[g].weight_bytes <= nd->c.ssd_capacity) {
				nd->ssd_at[g] = 0;
				nd->ssd_used += groups[g].weight_bytes;
			}
	}
	if (grow_inst(sl, s->n_inst) != 0)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	return 0;
}

int32_t lsim_sl_ssd_node(const struct lsim_sim *s, int32_t link)
{
	for (int32_t k = 0; s->sl && link >= 0 && k < s->sl->n_nodes; k++)
		if (s->sl->nodes[k].ssd_link == link)
			return k;
	return -1;
}

bool lsim_sl_managed(const struct lsim_sim *s, int32_t g)
{
	return s->sl && g >= 0 && g < s->sl->n_groups && s->sl->groups[g].serverless;
}

void lsim_sl_mark_held(struct lsim_sim *s, int32_t req)
{
	struct lsim_serverless *sl = s->sl;
	if ((size_t)req >= sl->cap_held) {
		size_t c = s->cap_reqs > (size_t)req ? s->cap_reqs : (size_t)req + 1;
		uint8_t *p = realloc(sl->held, c);
		if (!p) {
			fail(s, LSIM_ENOMEM);
			return;
		}
		memset(p + sl->cap_held, 0, c - sl->cap_held);
		sl->held = p;
		sl->cap_held = c;
	}
	sl->held[req] = 1;
}

void lsim_sl_routed(struct lsim_sim *s, int32_t req, const struct lsim_instance *in)
{
	struct lsim_serverless *sl = s->sl;
	bool was_held = (size_t)req < sl->cap_held && sl->held[req];
	if (was_held)
		sl->held[req] = 0;
	if (!in)
		return;
	if (grow_inst(sl, (size_t)in->id + 1) != 0) {
		fail(s, LSIM_ENOMEM);
		return;
	}
	sl->idle_since[in->id] = -1;
	sl->served[in->id]++;
	if (!was_held)
		return;
	if (sl->n_delays == sl->cap_delays) {
		size_t c = sl->cap_delays ? 2 * sl->cap_delays : 256;
		double *p = realloc(sl->delays, c * sizeof *p);
		if (!p) {
			fail(s, LSIM_ENOMEM);
			return;
		}
		sl->delays = p;
		sl->cap_delays = c;
	}
	sl->delays[sl->n_delays++] =
		lsim_time_to_s(lsim_now(s->sv.eng) - s->sv.reqs[req].arrival);
}

/* The keep-alive of an instance idle since arg ran out. */
static void keep_alive_expired(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	struct lsim_instance *in = subject;
	struct lsim_sim *s = lsim_sim_of(in);
	struct lsim_serverless *sl = s->sl;
	if (in->state != LSIM_INST_READY || (size_t)in->id >= sl->cap_inst ||
	    sl->idle_since[in->id] != (lsim_time)arg || in->outstanding > 0 ||
	    in->in_transit > 0)
		return; /* busy again since, or gone */
	sl->ka_scale_ins++;
	if (in->group >= 0 && (size_t)in->group < s->n_groups)
		s->groups[in->group].scale_ins++;
	lsim_sim_drain(s, in);
}

void lsim_sl_maybe_idle(struct lsim_sim *s, struct lsim_instance *in)
{
	struct lsim_serverless *sl = s->sl;
	if (!lsim_sl_managed(s, in->group) || in->state != LSIM_INST_READY ||
	    in->outstanding > 0 || in->in_transit > 0)
		return;
	if (grow_inst(sl, (size_t)in->id + 1) != 0) {
		fail(s, LSIM_ENOMEM);
		return;
	}
	lsim_time now = lsim_now(s->sv.eng);
	if (sl->idle_since[in->id] >= 0)
		return; /* already idle: its keep-alive runs */
	sl->idle_since[in->id] = now;
	if (!lsim_schedule_in(s->sv.eng, sl->groups[in->group].keep_alive, keep_alive_expired,
			      in, (uint64_t)now)) {
		fail(s, LSIM_ENOMEM);
		return;
	}
	lsim_sl_gpus_freed(s); /* a waiting scale-out may evict it now */
}

/* The idle instances a scale-out of group g may evict: ready, nothing
 * outstanding, of another serverless group on the same GPU kind. */
static int32_t candidates(struct lsim_sim *s, int32_t g, struct lsim_evict_candidate *c)
{
	struct lsim_serverless *sl = s->sl;
	int32_t n = 0;
	for (size_t i = 0; i < s->n_inst; i++) {
		struct lsim_instance *in = s->inst[i];
		if (in->group == g || !lsim_sl_managed(s, in->group) ||
		    in->state != LSIM_INST_READY || in->outstanding > 0 || in->in_transit > 0 ||
		    sl->groups[in->group].gpu_kind != sl->groups[g].gpu_kind ||
		    (size_t)in->id >= sl->cap_inst || sl->idle_since[in->id] < 0)
			continue;
		c[n++] = (struct lsim_evict_candidate){
			.instance = in->id, .group = in->group, .node = in->node,
			.gpus = in->n_gpus, .idle_since = sl->idle_since[in->id],
			.ready = in->ready, .served = sl->served[in->id],
		};
	}
	return n;
}

/* Starts one instance of group g: 0, LSIM_EBUSY (no room, none
 * evictable), or an error. */
static int scale_out(struct lsim_sim *s, int32_t g)
{
	struct lsim_serverless *sl = s->sl;
	struct lsim_group *gr = &s->groups[g];
	struct lsim_evict_candidate *c = NULL;
	int rc;
	for (;;) {
		struct lsim_instance *in = NULL;
		rc = s->fleet.spawn ? s->fleet.spawn(s->fleet.ctx, g, &in, &s->sv.diag)
				    : LSIM_EBUSY;
		if (rc == 0) {
			rc = lsim_sim_grow_arrays(s);
			if (rc == 0)
				rc = grow_inst(sl, s->n_inst);
			if (rc == 0)
				rc = lsim_instance_provision(in, gr->provision, gr->engine_init,
							     &s->sv.diag);
			if (rc == 0) {
				lsim_sim_arm_failures(s, in);
				gr->scale_outs++;
			}
			break;
		}
		if (rc != LSIM_EBUSY)
			break;
		/* evict was appended at ABI 4: a type built for 3 has no such
		 * field (its ops table ends before it) and never evicts */
		const struct lsim_allocator_ops *ops =
			sl->alloc && sl->alloc->type->abi >= 4 ? sl->alloc->type->ops : NULL;
		if (!ops || !ops->evict)
			break;
		if (!c && !(c = malloc((s->n_inst ? s->n_inst : 1) * sizeof *c))) {
			rc = LSIM_ENOMEM;
			break;
		}
		int32_t n = candidates(s, g, c);
		if (n == 0)
			break;
		struct lsim_alloc_request r = {.tp = s->groups[g].gpus, .replica = -1};
		int32_t v = ops->evict(sl->alloc->state, &r, c, n);
		if (v == -1)
			break;
		if (v < 0 || v >= n) {
			rc = lsim_sim_policy_error(s, sl->alloc, "victim %d of %d candidates",
						   (int)v, (int)n);
			break;
		}
		struct lsim_instance *victim = s->inst[c[v].instance];
		sl->evictions++;
		s->groups[victim->group].scale_ins++;
		sl->retrying = true; /* its GPUs are for this scale-out */
		lsim_sim_drain(s, victim);
		sl->retrying = false;
	}
	free(c);
	return rc;
}

static bool is_waiting(const struct lsim_serverless *sl, int32_t g)
{
	for (int32_t i = 0; i < sl->n_waiting; i++)
		if (sl->waiting[i] == g)
			return true;
	return false;
}

bool lsim_sl_demand(struct lsim_sim *s, int32_t req, int32_t model)
{
	struct lsim_serverless *sl = s->sl;
	int32_t g = -1;
	for (int32_t k = 0; k < sl->n_groups && g < 0; k++)
		if (sl->groups[k].serverless && (model < 0 || s->groups[k].model_idx == model))
			g = k;
	if (g < 0)
		return false;
	lsim_sl_mark_held(s, req);
	if (is_waiting(sl, g))
		return true; /* its scale-out waits for GPUs already */
	if (sl->n_waiting > 0) {
		/* first come, first placed: a scale-out may not take GPUs
		 * (free or freed by an eviction) before an older one that is
		 * still waiting, else a large model waiting for a run of tp
		 * GPUs could wait for ever while small ones take each GPU
		 * that frees up */
		s->groups[g].refused++;
		sl->waiting[sl->n_waiting++] = g;
		return true;
	}
	int rc = scale_out(s, g);
	if (rc == LSIM_EBUSY) {
		s->groups[g].refused++;
		sl->waiting[sl->n_waiting++] = g;
	} else if (rc != 0) {
		fail(s, rc);
	}
	return true;
}

void lsim_sl_gpus_freed(struct lsim_sim *s)
{
	struct lsim_serverless *sl = s->sl;
	if (sl->retrying || sl->n_waiting == 0)
		return;
	sl->retrying = true;
	/* strictly in order of demand: the oldest waiting scale-out starts
	 * first (evicting what it needs); while it finds no room the others
	 * wait behind it (no overtaking: docs/serverless.md, starvation) */
	while (sl->n_waiting > 0 && !s->sv.error) {
		int rc = scale_out(s, sl->waiting[0]);
		if (rc == LSIM_EBUSY)
			break;
		memmove(sl->waiting, sl->waiting + 1, (size_t)--sl->n_waiting * sizeof *sl->waiting);
		if (rc != 0) {
			fail(s, rc);
			break;
		}
	}
	sl->retrying = false;
}

int lsim_sl_load_path(struct lsim_sim *s, struct lsim_instance *in, int32_t k, int32_t *path)
{
	struct lsim_serverless *sl = s->sl;
	int32_t gpu = lsim_instance_gpu(in, k);
	int32_t node = lsim_topo_node_of(&s->sv.topo, gpu);
	if (grow_inst(sl, (size_t)in->id + 1) != 0)
		return LSIM_ENOMEM;
	if (k == 0) {
		int32_t g = in->group;
		lsim_time now = lsim_now(s->sv.eng);
		enum lsim_sl_tier t = LSIM_TIER_REMOTE;
		if (g >= 0 && g < sl->n_groups && node >= 0 && node < sl->n_nodes) {
			struct sl_node *nd = &sl->nodes[node];
			/* the entry read is pinned until the load ends
			 * (lsim_sl_loaded): no cache_put drops it meanwhile */
			if (nd->host_at[g] >= 0) {
				t = LSIM_TIER_HOST;
				nd->host_at[g] = now;
				nd->host_pin[g]++;
			} else if (nd->ssd_link >= 0 && nd->ssd_at[g] >= 0) {
				t = LSIM_TIER_SSD;
				nd->ssd_at[g] = now;
				nd->ssd_pin[g]++;
			}
		}
		sl->tier[in->id] = (int8_t)t;
		sl->load_start[in->id] = now;
		sl->loads[t]++;
	}
	/* a pipeline stage on another node than the first GPU's reads from
	 * remote storage: that node's caches are neither read nor filled */
	if (k > 0 && node != lsim_topo_node_of(&s->sv.topo, lsim_instance_gpu(in, 0)))
		return lsim_topo_path_storage_to_gpu(&s->sv.topo, gpu, path);
	int n;
	switch (sl->tier[in->id]) {
	case LSIM_TIER_HOST:
		return lsim_topo_path_host_to_gpu(&s->sv.topo, gpu, path);
	case LSIM_TIER_SSD: /* SSD -> host (staged, pipelined) -> GPU */
		n = lsim_topo_path_host_to_gpu(&s->sv.topo, gpu, path + 1);
		if (n < 0)
			return n;
		path[0] = sl->nodes[node].ssd_link;
		return n + 1;
	default:
		return lsim_topo_path_storage_to_gpu(&s->sv.topo, gpu, path);
	}
}

void lsim_sl_loaded(struct lsim_sim *s, struct lsim_instance *in)
{
	struct lsim_serverless *sl = s->sl;
	if ((size_t)in->id >= sl->cap_inst || sl->tier[in->id] < 0)
		return;
	lsim_time now = lsim_now(s->sv.eng);
	int8_t tier = sl->tier[in->id];
	sl->tier[in->id] = -1; /* once */
	int32_t g = in->group;
	int32_t gpu = in->gpu0 >= 0 ? lsim_instance_gpu(in, 0) : -1;
	int32_t node = gpu >= 0 ? lsim_topo_node_of(&s->sv.topo, gpu) : -1;
	bool at_node = g >= 0 && g < sl->n_groups && node >= 0 && node < sl->n_nodes;
	struct sl_node *nd = at_node ? &sl->nodes[node] : NULL;
	/* the same node and entry lsim_sl_load_path pinned (at k = 0) */
	if (nd && tier == LSIM_TIER_HOST && nd->host_pin[g] > 0)
		nd->host_pin[g]--;
	else if (nd && tier == LSIM_TIER_SSD && nd->ssd_pin[g] > 0)
		nd->ssd_pin[g]--;
	if (in->failed)
		return; /* its machine failed during the load: nothing kept */
	sl->load_s += lsim_time_to_s(now - sl->load_start[in->id]);
	if (!nd)
		return;
	if (tier == LSIM_TIER_REMOTE && nd->ssd_link >= 0)
		cache_put(sl, nd->ssd_at, nd->ssd_pin, &nd->ssd_used, nd->c.ssd_capacity, g, now);
	if (nd->c.host_cache > 0)
		cache_put(sl, nd->host_at, nd->host_pin, &nd->host_used, nd->c.host_cache, g, now);
}

int lsim_sl_summary(const struct lsim_sim *s, const struct lsim_inst_record *insts,
		    size_t n_insts, struct lsim_serverless_summary *o)
{
	const struct lsim_serverless *sl = s->sl;
	memset(o, 0, sizeof *o);
	double loads = 0;
	for (int t = 0; t < LSIM_TIER_COUNT; t++)
		loads += (double)sl->loads[t];
	o->model_loads = loads;
	o->loads_host = (double)sl->loads[LSIM_TIER_HOST];
	o->loads_ssd = (double)sl->loads[LSIM_TIER_SSD];
	o->loads_remote = (double)sl->loads[LSIM_TIER_REMOTE];
	o->load_mean_s = loads > 0 ? sl->load_s / loads : NAN;
	o->keep_alive_scale_ins = (double)sl->ka_scale_ins;
	o->evictions = (double)sl->evictions;
	o->cache_evictions = (double)sl->cache_evictions;
	o->requests_delayed_by_load = (double)sl->n_delays;
	if (sl->n_delays > 0) {
		double *x = malloc(sl->n_delays * sizeof *x);
		if (!x)
			return LSIM_ENOMEM;
		memcpy(x, sl->delays, sl->n_delays * sizeof *x);
		gsl_sort(x, 1, sl->n_delays);
		o->cold_start_mean_s = gsl_stats_mean(x, 1, sl->n_delays);
		o->cold_start_p50_s = gsl_stats_quantile_from_sorted_data(x, 1, sl->n_delays, 0.5);
		o->cold_start_p90_s = gsl_stats_quantile_from_sorted_data(x, 1, sl->n_delays, 0.9);
		o->cold_start_p99_s = gsl_stats_quantile_from_sorted_data(x, 1, sl->n_delays, 0.99);
		o->cold_start_max_s = x[sl->n_delays - 1];
		free(x);
	} else {
		o->cold_start_mean_s = o->cold_start_p50_s = o->cold_start_p90_s =
			o->cold_start_p99_s = o->cold_start_max_s = NAN;
	}
	for (size_t i = 0; i < n_insts; i++) {
		const struct lsim_inst_record *r = &insts[i];
		double held = r->stop - r->start;
		if (held > 0)
			o->gpu_seconds += held * (double)r->tp * (double)(r->pp > 1 ? r->pp : 1);
	}
	return 0;
}
