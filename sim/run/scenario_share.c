/*
 * scenario_share.c - GPU sharing of a scenario's instance groups
 * (docs/sharing.md): MIG slices (instances[].mig), MPS and time slicing
 * (instances[].share) of the groups naming one gpu_group, their checks
 * (slice budgets, memory admission) and the shared GPU each member's
 * steps see in the run.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/mig.h"
#include "serving/memplan.h"
#include "run/scenario_internal.h"

static struct lsim_node *item_of(const struct lsim_scenario *sc, size_t i)
{
	return lsim_node_get(sc->doc->root, "instances")->items[i];
}

/* A refusal of instances[i].key, at the key if written, else the item. */
__attribute__((format(printf, 5, 6))) static int
refuse(const struct lsim_scenario *sc, struct lsim_diag *d, size_t i, const char *k,
       const char *fmt, ...)
{
	char key[96], msg[900];
	snprintf(key, sizeof key, "instances[%zu].%s", i, k);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	struct lsim_node *at = lsim_node_get(item_of(sc, i), k);
	return lsim_cfg_error(d, sc->doc, at ? at : item_of(sc, i), key, LSIM_EINVAL, "%s",
			      msg);
}

static bool written(const struct lsim_scenario *sc, size_t i, const char *k)
{
	return lsim_node_get(item_of(sc, i), k) != NULL;
}

/* What one group of its own may not combine with sharing. */
static int check_alone(const struct lsim_scenario *sc, size_t i, const char *k,
		       struct lsim_diag *d)
{
	const struct inst_cfg *ic = &sc->insts[i];
	const char *what = NULL;
	if (sc->fail.mtbf > 0 || sc->fail.gpu_mtbf > 0 || sc->fail.node_mtbf > 0 ||
	    sc->fail.trace[0])
		what = "failures (a member's replacement would not join its GPU's "
		       "share): drop failures.mtbf, gpu_mtbf, node_mtbf and trace";
	else if (ic->spot)
		what = "spot capacity (a reclaimed member's replacement would not join "
		       "its GPU's share): set spot false";
	else if (ic->perf != PERF_ROOFLINE &&
		 !(ic->perf == PERF_TABLE && ic->share == LSIM_SHARE_TIME_SLICE))
		what = "perf other than roofline, but for a table under time slicing (a "
		       "table or a service time is measured on a whole GPU, which only "
		       "time slicing gives a member): use perf: roofline";
	else if (lsim_scn_placed_gpus(ic) != 1)
		what = "tp, pp or data_parallel_size above 1 (a slice or a shared GPU is "
		       "one GPU): set them to 1";
	else if (strcmp(ic->gpu, "cheapest") == 0)
		what = "gpu: cheapest: name the GPU kind";
	else if (ic->gpu_group[0] && (ic->replicas != 1 || ic->min_replicas >= 0 ||
				      ic->max_replicas >= 0))
		what = "replicas other than 1 or autoscaling in a gpu_group (each member "
		       "is one instance on the group's GPU): set replicas 1";
	else if (ic->cold_start)
		what = "cold_start (weights loaded over the links into a slice or a "
		       "shared GPU are not modelled): set it false";
	if (what)
		return refuse(sc, d, i, k, "%s is not modelled with %s", k, what);
	return 0;
}

/* The MIG table of GPU kind gpu, from mig.yaml beside the hardware
 * profiles (the scenario's data_dir, else the shipped calibrate/). */
static int load_mig(const struct lsim_scenario *sc, const char *gpu, struct lsim_mig_table *t,
		    struct lsim_diag *d)
{
	char path[1100];
	if (lsim_scn_data_file(sc, "mig.yaml", path, sizeof path) != 0)
		return LSIM_ENOMEM;
	return lsim_mig_load(path, gpu, t, d);
}

/* Per group: the MIG slice, or the MPS compute share, applied to its
 * GPU profile; the keys of the other mode refused. */
static int check_group(struct lsim_scenario *sc, size_t i, struct lsim_diag *d)
{
	struct inst_cfg *ic = &sc->insts[i];
	char list[400];
	if (ic->share != LSIM_SHARE_MPS && written(sc, i, "gpu_fraction"))
		return refuse(sc, d, i, "gpu_fraction", "gpu_fraction is used only with "
			      "share: mps");
	if (ic->share != LSIM_SHARE_TIME_SLICE &&
	    (written(sc, i, "time_slice") || written(sc, i, "switch_cost")))
		return refuse(sc, d, i, written(sc, i, "time_slice") ? "time_slice" : "switch_cost",
			      "%s is used only with share: time_slice",
			      written(sc, i, "time_slice") ? "time_slice" : "switch_cost");
	if (!ic->mig[0] && !ic->share) {
		if (ic->gpu_group[0])
			return refuse(sc, d, i, "gpu_group", "gpu_group needs mig (a slice) "
				      "or share: mps|time_slice");
		return 0;
	}
	int rc = check_alone(sc, i, ic->mig[0] ? "mig" : "share", d);
	if (rc != 0)
		return rc;
	ic->whole_flops = sc->gpus[i].bf16_flops;
	ic->whole_bw = sc->gpus[i].hbm_bw;
	ic->whole_bytes = sc->gpus[i].hbm_bytes;
	if (ic->mig[0]) {
		if (ic->share)
			return refuse(sc, d, i, "share", "MPS or time slicing inside a MIG "
				      "slice is not modelled: use one of mig and share");
		struct lsim_mig_table t;
		rc = load_mig(sc, ic->gpu, &t, d);
		if (rc != 0)
			return rc;
		const struct lsim_mig_profile *p = lsim_mig_find(&t, ic->mig);
		lsim_mig_list(&t, list, sizeof list);
		if (!p && t.n == 0)
			return refuse(sc, d, i, "mig", "%s has no MIG profiles (GPU kinds with "
				      "MIG: %s)", ic->gpu, list);
		if (!p)
			return refuse(sc, d, i, "mig", "unknown MIG profile of %s; valid: %s",
				      ic->gpu, list);
		ic->mig_compute = p->compute;
		ic->mig_memory = p->memory;
		lsim_mig_apply(p, &sc->gpus[i]);
		/* the model must fit its slice: weights and min_kv_tokens */
		struct lsim_memplan_in mi = lsim_memplan_in_for(&ic->eng, &sc->gpus[i],
								&sc->models[i], 1);
		struct lsim_memplan plan;
		lsim_memplan_compute(&mi, &plan);
		if (plan.blocks < lsim_memplan_blocks_for(ic->min_kv_tokens, ic->eng.block_size)) {
			char why[768];
			lsim_memplan_explain(&mi, &plan, ic->min_kv_tokens, why, sizeof why);
			char what[900];
			snprintf(what, sizeof what, "%s in a MIG %s slice", ic->model, ic->mig);
			return refuse(sc, d, i, "mig", "%s does not fit: %s; choose a larger "
				      "profile", what, why);
		}
		return 0;
	}
	if (!ic->gpu_group[0])
		return refuse(sc, d, i, "gpu_group", "share needs a gpu_group (the name "
			      "of the GPU its members share)");
	if (ic->share == LSIM_SHARE_MPS) {
		sc->gpus[i].bf16_flops *= ic->gpu_fraction;
		return 0;
	}
	if (ic->time_slice <= 0)
		return refuse(sc, d, i, "time_slice", "share: time_slice needs time_slice "
			      "(the length of a slice) above 0");
	if (!written(sc, i, "switch_cost"))
		return refuse(sc, d, i, "switch_cost", "share: time_slice needs switch_cost "
			      "(the context switch per slice; no sourced default: write it, "
			      "0s included)");
	return 0;
}

/* The members of gpu_group of i after i (first: i is the group's first). */
static bool first_of_group(const struct lsim_scenario *sc, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (strcmp(sc->insts[j].gpu_group, sc->insts[i].gpu_group) == 0)
			return false;
	return true;
}

/* One gpu_group starting at i: one GPU kind, one mode, the slice budget
 * (MIG) or the fractions (MPS), memory admission (MPS, time slicing). */
static int check_gpu(struct lsim_scenario *sc, size_t i, struct lsim_diag *d)
{
	const struct inst_cfg *g0 = &sc->insts[i];
	int n = 0, compute = 0, memory = 0;
	double frac = 0, util = 0;
	char a[160], b[160];
	for (size_t j = i; j < sc->n_insts; j++) {
		const struct inst_cfg *ic = &sc->insts[j];
		if (strcmp(ic->gpu_group, g0->gpu_group) != 0)
			continue;
		if (++n > LSIM_SHARE_MAX) {
			snprintf(a, sizeof a, "%d", LSIM_SHARE_MAX);
			return refuse(sc, d, j, "gpu_group", "more than %s groups on gpu_group "
				      "%s", a, g0->gpu_group);
		}
		if (strcmp(ic->gpu, g0->gpu) != 0) {
			snprintf(a, sizeof a, "%s, not %s,", g0->gpu, ic->gpu);
			return refuse(sc, d, j, "gpu", "gpu_group %s is one GPU: its members "
				      "name one GPU kind (%s)", g0->gpu_group, a);
		}
		if (strcmp(ic->price, g0->price) != 0)
			return refuse(sc, d, j, "price", "gpu_group %s is one GPU, billed once "
				      "and split among its members: they name one price (%s)",
				      g0->gpu_group, g0->price[0] ? g0->price : "the profile's");
		if (!!ic->mig[0] != !!g0->mig[0] || ic->share != g0->share ||
		    ic->time_slice != g0->time_slice || ic->switch_cost != g0->switch_cost)
			return refuse(sc, d, j, ic->mig[0] ? "mig" : "share",
				      "the members of gpu_group %s share it one way: the "
				      "same mig-or-share, share, time_slice and switch_cost",
				      g0->gpu_group);
		if (ic->mig[0]) {
			compute += ic->mig_compute;
			memory += ic->mig_memory;
			if (compute > LSIM_MIG_COMPUTE_SLICES || memory > LSIM_MIG_MEMORY_SLICES) {
				snprintf(a, sizeof a, "%d of %d compute and %d of %d memory",
					 compute, LSIM_MIG_COMPUTE_SLICES, memory,
					 LSIM_MIG_MEMORY_SLICES);
				return refuse(sc, d, j, "mig", "the slices of gpu_group %s take "
					      "%s slices with this one: choose smaller profiles "
					      "or another gpu_group", g0->gpu_group, a);
			}
			continue;
		}
		frac += ic->gpu_fraction;
		util += ic->eng.gpu_memory_utilization;
		if (ic->share == LSIM_SHARE_MPS && frac > 1 + 1e-9) {
			snprintf(a, sizeof a, "%s sum to %.4g", g0->gpu_group, frac);
			return refuse(sc, d, j, "gpu_fraction", "the gpu_fraction of gpu_group %s "
				      "with this one, above 1: lower them", a);
		}
		if (util > 1 + 1e-9) {
			snprintf(a, sizeof a, "%s sum to %.4g", g0->gpu_group, util);
			snprintf(b, sizeof b, "%s", ic->name);
			return refuse(sc, d, j, "gpu_memory_utilization",
				      "memory admission: the gpu_memory_utilization of gpu_group "
				      "%s with this one, above 1: the co-located models' weights "
				      "and KV do not fit one GPU; lower them (instance %s)", a, b);
		}
	}
	return 0;
}

int lsim_scn_check_share(struct lsim_scenario *sc, struct lsim_diag *d)
{
	for (size_t i = 0; i < sc->n_insts; i++) {
		int rc = check_group(sc, i, d);
		if (rc != 0)
			return rc;
	}
	for (size_t i = 0; i < sc->n_insts; i++) {
		if (!sc->insts[i].gpu_group[0] || !first_of_group(sc, i))
			continue;
		int rc = check_gpu(sc, i, d);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* The instance of group i (one replica in a gpu_group). */
static struct lsim_instance *instance_of(struct lsim_scenario *sc, size_t i)
{
	for (size_t k = 0; k < sc->sim.n_inst; k++)
		if (sc->sim.inst[k]->group == (int32_t)i)
			return sc->sim.inst[k];
	return NULL;
}

/* Whether groups i and j are on one GPU: the same gpu_group, or one MIG
 * slice of its own (no gpu_group: a GPU to itself). */
static bool same_gpu(const struct lsim_scenario *sc, size_t i, size_t j)
{
	const char *a = sc->insts[i].gpu_group, *b = sc->insts[j].gpu_group;
	return i == j || (a[0] && strcmp(a, b) == 0);
}

/* Whether group i shares a GPU (MIG, MPS, time slicing) and is the first
 * group of it. */
static bool first_on_gpu(const struct lsim_scenario *sc, size_t i)
{
	const struct inst_cfg *ic = &sc->insts[i];
	if (!ic->mig[0] && !ic->share)
		return false;
	for (size_t j = 0; j < i; j++)
		if (same_gpu(sc, i, j))
			return false;
	return true;
}

int32_t lsim_scn_share_host(const struct lsim_scenario *sc, size_t i)
{
	const struct inst_cfg *ic = &sc->insts[i];
	if (!ic->mig[0] && !ic->share)
		return -1;
	for (size_t j = 0; j < i; j++)
		if (same_gpu(sc, i, j))
			return (int32_t)j;
	return -1;
}

/* Member j's part of its GPU's idle power and price before normalising:
 * its compute slices (MIG), its gpu_fraction (MPS), 1 (time slicing). */
static double raw_weight(const struct inst_cfg *ic)
{
	if (ic->mig[0])
		return ic->mig_compute;
	return ic->share == LSIM_SHARE_MPS ? ic->gpu_fraction : 1;
}

/* Member in of group j: the roofline of the whole GPU its work is
 * counted at (MIG and MPS: its own perf sees a part), and with MPS the
 * rooflines of its steps while k > 1 members have work. */
static int member_perfs(struct lsim_scenario *sc, const struct lsim_share *sh,
			struct lsim_instance *in, size_t j, struct lsim_diag *d)
{
	const struct inst_cfg *ic = &sc->insts[j];
	struct lsim_roofline_params rp = {
		.tp = 1,
		.cpu_overhead_s = lsim_time_to_s(ic->cpu_overhead),
	};
	struct lsim_gpu_profile whole = sc->gpus[j];
	whole.bf16_flops = ic->whole_flops;
	whole.hbm_bw = ic->whole_bw;
	whole.hbm_bytes = ic->whole_bytes;
	if (sh->mode != LSIM_SHARE_TIME_SLICE) {
		int rc = lsim_perf_roofline_create(&sc->models[j], &whole, &rp,
						   &in->gpu_work_perf, d);
		if (rc != 0)
			return rc;
	}
	/* MPS, k members with work: each 1/k of the memory bandwidth */
	for (int32_t k = 2; sh->mode == LSIM_SHARE_MPS && k <= sh->n; k++) {
		struct lsim_gpu_profile g = sc->gpus[j];
		g.hbm_bw /= k;
		int rc = lsim_perf_roofline_create(&sc->models[j], &g, &rp,
						   &in->share_perf[k - 1], d);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int lsim_scn_attach_shares(struct lsim_scenario *sc, struct lsim_diag *d)
{
	size_t n = 0;
	for (size_t i = 0; i < sc->n_insts; i++)
		n += first_on_gpu(sc, i);
	if (n == 0)
		return 0;
	sc->shares = calloc(n, sizeof *sc->shares);
	if (!sc->shares)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < sc->n_insts; i++) {
		const struct inst_cfg *g0 = &sc->insts[i];
		if (!first_on_gpu(sc, i))
			continue;
		struct lsim_share *sh = &sc->shares[sc->n_shares++];
		sh->mode = g0->mig[0] ? LSIM_SHARE_MIG : g0->share;
		sh->slice_s = lsim_time_to_s(g0->time_slice);
		sh->switch_s = lsim_time_to_s(g0->switch_cost);
		double sum = 0;
		for (size_t j = i; j < sc->n_insts; j++) {
			if (!same_gpu(sc, i, j))
				continue;
			struct lsim_instance *in = instance_of(sc, j);
			if (!in)
				continue;
			sh->weight[sh->n] = raw_weight(&sc->insts[j]);
			sum += sh->weight[sh->n];
			sh->member[sh->n++] = in;
			in->share = sh;
		}
		/* the GPU's idle power and price once, in the members' parts */
		for (int32_t m = 0; m < sh->n; m++) {
			sh->weight[m] /= sum;
			sh->member[m]->billing.price_per_hour *= sh->weight[m];
		}
		for (int32_t m = 0; m < sh->n; m++) {
			struct lsim_instance *in = sh->member[m];
			int rc = member_perfs(sc, sh, in, (size_t)in->group, d);
			if (rc != 0)
				return rc;
		}
	}
	return 0;
}
