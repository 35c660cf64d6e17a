/*
 * invariants.c - the simulation's invariants, which builds configured with
 * -Dinvariants=true check after every event (docs/reliability.md):
 *   - the clock never goes backwards;
 *   - requests are conserved: every request pulled from the workload has
 *     ended or is live, and a live request waits or runs in at most one
 *     instance, which is its own;
 *   - KV blocks are never over-allocated: each working instance's block
 *     reference counts add up to exactly the blocks its requests hold (and
 *     those it still holds for requests handed to a decode instance), and
 *     no more blocks are in use than it has;
 *   - links never carry more than their bandwidth, and flows never have
 *     more bytes left than they started with (lsim_net_check);
 *   - training jobs are conserved and no GPU is over-used, through the
 *     check hook the scenario sets (lsim_jobs_check);
 *   - the routers' kept view of the instances agrees with them but for
 *     the instances listed as touched (lsim_sim_check_view);
 *   - every live request that no instance holds yet is the one pulled and
 *     not arrived, held while the control plane or its instances start,
 *     or counted in transit on exactly the instance it was routed to.
 */
#include <stdio.h>
#include <stdlib.h>

#include "serving/kvcache.h"
#include "run/sim.h"

/* Sizes the scratch arrays; false when memory ran out. */
static bool scratch(struct lsim_sim *s)
{
	if (s->n_reqs > s->inv_cap_mark) {
		size_t c = s->n_reqs * 2;
		uint32_t *m = realloc(s->inv_mark, c * sizeof *m);
		if (!m)
			return false;
		for (size_t i = s->inv_cap_mark; i < c; i++)
			m[i] = 0;
		s->inv_mark = m;
		s->inv_cap_mark = c;
	}
	if (s->n_inst > s->inv_cap_kv) {
		size_t c = s->n_inst * 2;
		int64_t *k = realloc(s->inv_kv, c * sizeof *k);
		if (!k)
			return false;
		s->inv_kv = k;
		s->inv_cap_kv = c;
	}
	return true;
}

static int broken(struct lsim_diag *d, const struct lsim_sim *s,
		  const char *why)
{
	return lsim_diag_set(d, LSIM_ESTATE, "", 0, 0, "",
			     "invariant broken at t=%lld ns: %s",
			     (long long)lsim_now(s->sv.eng), why);
}

/* Request r of instance in: live, its own, and seen once (mark). */
static int check_held(struct lsim_sim *s, const struct lsim_instance *in,
		      int32_t r, const char *where, char *why, size_t n)
{
	if (r < 0 || (size_t)r >= s->n_reqs || !s->sv.reqs[r].live) {
		snprintf(why, n, "instance %d %s request slot %d, which holds no "
			 "live request", (int)in->id, where, (int)r);
		return LSIM_ESTATE;
	}
	if (s->sv.reqs[r].instance != in->id) {
		snprintf(why, n, "instance %d %s request %llu of instance %d",
			 (int)in->id, where,
			 (unsigned long long)s->sv.reqs[r].id,
			 (int)s->sv.reqs[r].instance);
		return LSIM_ESTATE;
	}
	if (s->inv_mark[r] == s->inv_epoch) {
		snprintf(why, n, "request %llu is in two places (again in "
			 "instance %d, %s)",
			 (unsigned long long)s->sv.reqs[r].id, (int)in->id, where);
		return LSIM_ESTATE;
	}
	s->inv_mark[r] = s->inv_epoch;
	return 0;
}

int lsim_sim_check(struct lsim_sim *s, struct lsim_diag *d)
{
	char why[320];
	lsim_time now = lsim_now(s->sv.eng);
	if (now < s->inv_last) {
		snprintf(why, sizeof why, "the clock went back from %lld ns",
			 (long long)s->inv_last);
		return broken(d, s, why);
	}
	s->inv_last = now;
	if (!scratch(s))
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	if (++s->inv_epoch == 0) { /* wrapped: old marks could match */
		for (size_t i = 0; i < s->inv_cap_mark; i++)
			s->inv_mark[i] = 0;
		s->inv_epoch = 1;
	}

	/* requests: pulled = ended + live */
	uint64_t live = 0;
	for (size_t i = 0; i < s->n_reqs; i++)
		live += s->sv.reqs[i].live;
	if (s->n_arrived != s->n_done + live) {
		snprintf(why, sizeof why,
			 "%llu requests pulled from the workload, but %llu ended "
			 "and %llu live",
			 (unsigned long long)s->n_arrived,
			 (unsigned long long)s->n_done,
			 (unsigned long long)live);
		return broken(d, s, why);
	}
	/* requests on no instance: pending, held, or in transit */
	uint64_t nowhere = 0, transit = 0;
	for (size_t i = 0; i < s->n_reqs; i++)
		nowhere += s->sv.reqs[i].live && s->sv.reqs[i].instance < 0;
	for (size_t i = 0; i < s->n_inst; i++) {
		const struct lsim_instance *in = s->inst[i];
		if (in->in_transit < 0 || in->transit_tokens < 0 ||
		    (in->in_transit == 0 && in->transit_tokens != 0)) {
			snprintf(why, sizeof why, "instance %d counts %lld requests "
				 "in transit with %lld tokens of work",
				 (int)in->id, (long long)in->in_transit,
				 (long long)in->transit_tokens);
			return broken(d, s, why);
		}
		transit += (uint64_t)in->in_transit;
	}
	if (nowhere != transit + s->held_len + (s->pending_slot >= 0)) {
		snprintf(why, sizeof why, "%llu live requests are on no instance, "
			 "but %llu are in transit, %llu held and %d pending",
			 (unsigned long long)nowhere, (unsigned long long)transit,
			 (unsigned long long)s->held_len, s->pending_slot >= 0);
		return broken(d, s, why);
	}
	for (size_t i = 0; i < s->n_inst; i++) {
		const struct lsim_instance *in = s->inst[i];
		for (size_t k = 0; k < in->run_len; k++)
			if (check_held(s, in, in->run[k], "runs", why, sizeof why))
				return broken(d, s, why);
		for (size_t k = 0; k < in->wait_len; k++)
			if (check_held(s, in, lsim_instance_waiting(in, k),
				       "queues", why, sizeof why))
				return broken(d, s, why);
	}

	/* KV: reference counts = blocks held */
	for (size_t i = 0; i < s->n_inst; i++)
		s->inv_kv[i] = 0;
	for (size_t i = 0; i < s->n_reqs; i++) {
		const struct lsim_req *r = &s->sv.reqs[i];
		if (!r->live)
			continue;
		if (r->instance >= 0 && (size_t)r->instance < s->n_inst)
			s->inv_kv[r->instance] += r->nblocks;
		if (r->kv_src && r->kv_src->id >= 0 &&
		    (size_t)r->kv_src->id < s->n_inst)
			s->inv_kv[r->kv_src->id] += r->src_nblocks;
	}
	for (size_t i = 0; i < s->n_inst; i++) {
		const struct lsim_instance *in = s->inst[i];
		/* a failed instance's memory is gone with it: its requests
		 * were re-queued without giving its blocks back */
		if (!in->kv || in->failed)
			continue;
		int64_t refs = lsim_kv_refs(in->kv);
		int32_t total = lsim_kv_total(in->kv), free = lsim_kv_free(in->kv);
		if (refs != s->inv_kv[i] || free < 0 || free > total ||
		    total - free > refs) {
			snprintf(why, sizeof why,
				 "instance %d: its requests hold %lld KV blocks, its "
				 "cache counts %lld references, %d of %d blocks in use",
				 (int)in->id, (long long)s->inv_kv[i],
				 (long long)refs, (int)(total - free), (int)total);
			return broken(d, s, why);
		}
	}

	if (lsim_sim_check_view(s, why, sizeof why))
		return broken(d, s, why);
	if (s->sv.net && lsim_net_check(s->sv.net, why, sizeof why))
		return broken(d, s, why);
	if (s->check_hook && s->check_hook(s->check_hook_ctx, why, sizeof why))
		return broken(d, s, why);
	return 0;
}
