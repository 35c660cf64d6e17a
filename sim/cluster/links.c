/*
 * links.c - the link model: flows sharing directed links max-min fairly,
 * FIFO message queues, and the cluster topology builder. Semantics are in
 * sim/cluster/links.h; the algorithm and its cost in docs/links.md.
 *
 * Data layout (indices, never pointers: arrays grow with realloc):
 *   - links[]: bandwidth in bytes/ns, latency, the lanes (flows moving data
 *     across it, each with the hop at which the flow crosses it, so that a
 *     swap-remove fixes the moved flow's back-index in O(1)), the sum of
 *     their rates and the statistics integrated up to t_last.
 *   - flows[]: a pool of slots with a free list and a generation per slot;
 *     a handle is (generation << 32) | slot. Each flow keeps its path, its
 *     position in each link's lanes, its bytes left as of `last`, its rate
 *     and one engine event (activation while latent, completion after).
 *     Dense arrays beside it (fm[], frate[]) hold what a recomputation
 *     reads of every flow it meets.
 *   - msgs[]: a pool of in-flight messages with a free list.
 *
 * Rate changes are batched: a flow that starts or ends marks its links
 * dirty, and one "settle" event at the current time handles every change
 * made at that instant. It re-solves only the flows reachable from the
 * dirty links whose rate is at or above the divergence level: below that
 * level the max-min allocation cannot change. Storage for lanes and
 * scratch is reserved when a flow is started, so event handlers never
 * allocate (except inside the engine).
 */
#include "cluster/links_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


const char *lsim_link_kind_name(enum lsim_link_kind k)
{
	static const char *const names[LSIM_LINK_KIND_COUNT] = {
		"pcie", "host", "nvlink", "nic", "tor", "spine", "storage",
	};
	if ((int)k < 0 || k >= LSIM_LINK_KIND_COUNT)
		return "?";
	return names[k];
}

/* ---- utilities ---- */

/* Grows *p (elements of size sz) to hold at least need; 0 or LSIM_ENOMEM. */
static int reserve(void **p, int32_t *cap, int32_t need, size_t sz)
{
	if (need <= *cap)
		return 0;
	int64_t want = *cap ? (int64_t)*cap : 8;
	while (want < need)
		want *= 2;
	if (want > INT32_MAX)
		want = INT32_MAX;
	void *q = realloc(*p, (size_t)want * sz);
	if (!q)
		return LSIM_ENOMEM;
	*p = q;
	*cap = (int32_t)want;
	return 0;
}

/* Reallocates *p to n elements of size sz (a failure leaves *p as it
 * was: arrays grown together may end up with different sizes, which is
 * harmless because only the smallest, the recorded capacity, is used). */
static int grow_to(void **p, size_t n, size_t sz)
{
	void *q = realloc(*p, n * sz);
	if (!q)
		return LSIM_ENOMEM;
	*p = q;
	return 0;
}

/* Like grow_to, from `used` elements to n, aligned to `align` (a divisor
 * of sz). */
static int grow_aligned(void **p, size_t used, size_t n, size_t sz,
			size_t align)
{
	void *q = aligned_alloc(align, n * sz);
	if (!q)
		return LSIM_ENOMEM;
	if (used > 0)
		memcpy(q, *p, used * sz);
	free(*p);
	*p = q;
	return 0;
}

/* Grows every array sized to the link pool to `want` links. */
static int grow_links(struct lsim_net *net, int32_t want)
{
	struct solve *sv = &net->sv;
	size_t n = (size_t)want;
	if (grow_to((void **)&net->links, n, sizeof *net->links) ||
	    grow_to((void **)&net->dirty, n, sizeof *net->dirty) ||
	    grow_to((void **)&net->watch, n, sizeof *net->watch) ||
	    grow_to((void **)&net->lm, n, sizeof *net->lm) ||
	    grow_to((void **)&sv->link, n, sizeof *sv->link) ||
	    grow_to((void **)&sv->rem, n, sizeof *sv->rem) ||
	    grow_to((void **)&sv->nu, n, sizeof *sv->nu) ||
	    grow_to((void **)&sv->off, n + 1, sizeof *sv->off) ||
	    grow_to((void **)&sv->heap, n, sizeof *sv->heap) ||
	    grow_to((void **)&sv->wsum, n, sizeof *sv->wsum) ||
	    grow_to((void **)&net->lq, n, sizeof *net->lq))
		return LSIM_ENOMEM;
	for (int q = 0; q < LSIM_QOS_LEVELS; q++)
		if (grow_to((void **)&net->qd[q], n, sizeof *net->qd[q]))
			return LSIM_ENOMEM;
	return 0;
}

/* Grows every array sized to the flow pool to `want` flows. */
static int grow_flows(struct lsim_net *net, int32_t want)
{
	struct solve *sv = &net->sv;
	size_t n = (size_t)want, np = n * LSIM_PATH_MAX;
	if (grow_aligned((void **)&net->flows, (size_t)net->n_slots, n,
			 sizeof *net->flows, _Alignof(struct flow)) ||
	    grow_to((void **)&net->fm, n, sizeof *net->fm) ||
	    grow_to((void **)&net->frate, n, sizeof *net->frate) ||
	    grow_to((void **)&sv->slot, n, sizeof *sv->slot) ||
	    grow_to((void **)&sv->old, n, sizeof *sv->old) ||
	    grow_to((void **)&sv->rate, n, sizeof *sv->rate) ||
	    grow_to((void **)&sv->frozen, n, sizeof *sv->frozen) ||
	    grow_to((void **)&sv->hoff, n + 1, sizeof *sv->hoff) ||
	    grow_to((void **)&sv->hop, np, sizeof *sv->hop) ||
	    grow_to((void **)&sv->fl, np, sizeof *sv->fl) ||
	    grow_to((void **)&sv->changed, n, sizeof *sv->changed) ||
	    grow_to((void **)&sv->capped, n, sizeof *sv->capped) ||
	    grow_to((void **)&sv->w, n, sizeof *sv->w) ||
	    grow_to((void **)&net->fq, n, sizeof *net->fq))
		return LSIM_ENOMEM;
	return 0;
}



static lsim_flow_id flow_handle(const struct lsim_net *net, int32_t slot)
{
	return ((uint64_t)net->flows[slot].gen << 32) | (uint32_t)slot;
}

/* The slot of a live flow handle, or -1. */
static int32_t flow_lookup(const struct lsim_net *net, lsim_flow_id id)
{
	if (!net)
		return -1;
	uint32_t slot = (uint32_t)(id & 0xffffffffu);
	uint32_t gen = (uint32_t)(id >> 32);
	if (slot >= (uint32_t)net->n_slots)
		return -1;
	const struct flow *f = &net->flows[slot];
	if (f->state == FLOW_FREE || f->gen != gen)
		return -1;
	return (int32_t)slot;
}


static void settle_fire(struct lsim_engine *eng, void *subject,
			uint64_t arg);


/* A flow crosses the link: lsim_net_sample_active samples it from now
 * on. Idle since its last sample (no flow, so its statistics did not
 * move), it is as if sampled at every call since. */
static void watch_link(struct lsim_net *net, int32_t link)
{
	struct link *l = &net->links[link];
	if (l->watched || link >= net->n_real)
		return;
	l->watched = true;
	net->watch[net->n_watch++] = link;
	if (l->t_sampled < net->t_sample)
		l->t_sampled = net->t_sample;
}

void lsim_lk_ensure_settle(struct lsim_net *net)
{
	if (net->settle_ev || net->n_dirty == 0)
		return;
	net->settle_ev = lsim_schedule(net->eng, lsim_now(net->eng),
				       settle_fire, net, 0);
}

/* Moves link l's lane at `from` to `to`. */
static void lane_move(struct lsim_net *net, struct link *l, int32_t from, int32_t to)
{
	struct lane mv = l->lanes[from];
	l->lanes[to] = mv;
	net->flows[mv.flow].pos[mv.hop] = to;
}

/* With classes the lanes stay grouped by level (struct lq): the hole a
 * lane leaves in its level is filled by that level's last lane, whose
 * place the next level's last lane fills, and so on: one move a level. */
static void lane_remove(struct lsim_net *net, int32_t link, int32_t p)
{
	struct link *l = &net->links[link];
	if (net->qos) {
		int32_t *lend = net->lq[link].lend;
		int q = net->fq[l->lanes[p].flow].lvl;
		int32_t hole = p;
		for (int g = q; g < LSIM_QOS_LEVELS; g++) {
			int32_t last = --lend[g];
			if (last != hole && last >= (g ? lend[g - 1] : 0))
				lane_move(net, l, last, hole);
			hole = last;
		}
		l->n_lanes--;
		return;
	}
	int32_t last = --l->n_lanes;
	if (p != last)
		lane_move(net, l, last, p);
}

/* Adds a lane (slot's hop h) at the end of its level's group: each less
 * urgent level's first lane moves to that level's end. */
static void lane_add(struct lsim_net *net, int32_t link, int32_t slot, int32_t h)
{
	struct link *l = &net->links[link];
	int32_t hole = l->n_lanes++;
	if (net->qos) {
		int32_t *lend = net->lq[link].lend;
		int q = net->fq[slot].lvl;
		for (int g = LSIM_QOS_LEVELS - 1; g > q; g--) {
			int32_t first = lend[g - 1];
			if (first != hole && first < lend[g])
				lane_move(net, l, first, hole);
			lend[g]++;
			hole = first;
		}
		lend[q]++;
	}
	net->flows[slot].pos[h] = hole;
	l->lanes[hole] = (struct lane){slot, h};
}

/* Takes an active flow off its links: statistics up to now, its rate out
 * of the sums, the links marked for recomputation. */
static void flow_detach(struct lsim_net *net, int32_t slot, lsim_time now)
{
	struct flow *f = &net->flows[slot];
	if (net->qos)
		lsim_lk_qos_leave(net, slot);
	if (f->rate < net->theta_gone && net->frate[slot] != INFINITY)
		net->theta_gone = f->rate;
	for (int32_t h = 0; h < f->n_hops; h++) {
		int32_t id = f->hop[h];
		struct link *l = &net->links[id];
		link_advance(l, now);
		lane_remove(net, id, f->pos[h]);
		l->rate_sum -= f->rate;
		if (l->n_lanes == 0)
			l->rate_sum = 0;
		mark_dirty(net, id);
	}
}

static void flow_free(struct lsim_net *net, int32_t slot)
{
	struct flow *f = &net->flows[slot];
	for (int32_t h = 0; h < f->n_hops; h++)
		net->links[f->hop[h]].n_reserved--;
	f->state = FLOW_FREE;
	f->gen = f->gen == UINT32_MAX ? 1u : f->gen + 1u;
	f->ev = 0;
	f->next_free = net->free_flow;
	net->free_flow = slot;
	net->st.flows_active--;
}

/* ---- network ---- */

struct lsim_net *lsim_net_create(struct lsim_engine *eng)
{
	if (!eng)
		return NULL;
	struct lsim_net *net = calloc(1, sizeof *net);
	if (!net)
		return NULL;
	net->eng = eng;
	net->free_flow = -1;
	net->free_msg = -1;
	net->theta_gone = INFINITY;
	for (int q = 0; q < LSIM_QOS_LEVELS; q++)
		net->tg[q] = INFINITY;
	return net;
}

void lsim_net_destroy(struct lsim_net *net)
{
	if (!net)
		return;
	for (int32_t i = 0; i < net->n_slots; i++)
		if (net->flows[i].state != FLOW_FREE && net->flows[i].ev)
			lsim_cancel(net->eng, net->flows[i].ev);
	for (int32_t i = 0; i < net->n_msg_slots; i++)
		if (net->msgs[i].ev)
			lsim_cancel(net->eng, net->msgs[i].ev);
	if (net->settle_ev)
		lsim_cancel(net->eng, net->settle_ev);
	for (int32_t i = 0; i < net->n_links; i++)
		free(net->links[i].lanes);
	free(net->links);
	free(net->flows);
	free(net->msgs);
	free(net->dirty);
	free(net->watch);
	free(net->fm);
	free(net->frate);
	free(net->lm);
	struct solve *sv = &net->sv;
	free(sv->link);
	free(sv->rem);
	free(sv->nu);
	free(sv->off);
	free(sv->heap);
	free(sv->slot);
	free(sv->old);
	free(sv->rate);
	free(sv->frozen);
	free(sv->hoff);
	free(sv->hop);
	free(sv->fl);
	free(sv->changed);
	free(sv->capped);
	free(sv->w);
	free(sv->wsum);
	free(net->lq);
	free(net->fq);
	free(net->tmap);
	for (int q = 0; q < LSIM_QOS_LEVELS; q++)
		free(net->qd[q]);
	lsim_lk_qos_free(net);
	free(net);
}

int lsim_link_add(struct lsim_net *net, enum lsim_link_kind kind, double bw,
		  lsim_time latency, int32_t *id, struct lsim_diag *d)
{
	if (!net)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "", "no network");
	if (net->n_links != net->n_real)
		return lsim_diag_set(d, LSIM_ESTATE, "", 0, 0, "",
				     "links must be added before the traffic classes with a rate");
	int rc = lsim_lk_link_add(net, kind, bw, latency, id, d);
	if (rc == 0)
		net->n_real = net->n_links;
	return rc;
}

int lsim_lk_link_add(struct lsim_net *net, enum lsim_link_kind kind, double bw,
		     lsim_time latency, int32_t *id, struct lsim_diag *d)
{
	if ((int)kind < 0 || kind >= LSIM_LINK_KIND_COUNT)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "kind",
				     "unknown link kind %d", (int)kind);
	if (!(bw > 0) || !isfinite(bw))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "bandwidth",
				     "link bandwidth must be a positive number of bytes/s, got %g",
				     bw);
	if (latency < 0)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "latency",
				     "link latency must be >= 0, got %lld ns",
				     (long long)latency);
	int32_t n = net->n_links;
	if (n == INT32_MAX)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "too many links");
	if (n == net->cap_links) {
		int32_t want = n > INT32_MAX / 2 ? INT32_MAX : (n ? 2 * n : 8);
		if (grow_links(net, want))
			return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "",
					     "out of memory");
		net->cap_links = want;
	}
	struct link *l = &net->links[n];
	memset(l, 0, sizeof *l);
	net->lm[n] = (struct lmark){0, 0};
	memset(&net->lq[n], 0, sizeof net->lq[n]);
	net->lq[n].cap_min = INFINITY;
	l->bw = bw / 1e9;
	l->memo_bytes = -1.0;
	l->latency = latency;
	l->kind = kind;
	l->t_last = lsim_now(net->eng);
	l->t_sampled = l->t_last;
	net->n_links = n + 1;
	if (id)
		*id = n;
	return 0;
}

int32_t lsim_net_n_links(const struct lsim_net *net)
{
	return net ? net->n_real : 0;
}

int lsim_link_get(const struct lsim_net *net, int32_t link,
		  struct lsim_link_info *out)
{
	if (!net || link < 0 || link >= net->n_links || !out)
		return LSIM_EINVAL;
	const struct link *l = &net->links[link];
	lsim_time dt = lsim_now(net->eng) - l->t_last;
	if (dt < 0)
		dt = 0;
	out->kind = l->kind;
	out->bw = l->bw * 1e9;
	out->latency = l->latency;
	out->n_flows = l->n_lanes;
	out->util = l->rate_sum / l->bw;
	out->bytes = l->bytes + l->rate_sum * (double)dt;
	out->busy_ns = l->busy_ns + (l->n_lanes > 0 ? dt : 0);
	out->util_ns = l->util_ns + l->rate_sum / l->bw * (double)dt;
	out->msg_bytes = l->msg_bytes;
	out->n_msgs = l->n_msgs;
	out->msg_busy_ns = l->msg_busy_ns;
	return 0;
}

double lsim_link_sample_util(struct lsim_net *net, int32_t link)
{
	if (!net || link < 0 || link >= net->n_links)
		return -1.0;
	struct link *l = &net->links[link];
	lsim_time now = lsim_now(net->eng);
	link_advance(l, now);
	lsim_time dt = now - l->t_sampled;
	if (dt <= 0)
		return l->rate_sum / l->bw;
	double u = (l->util_ns - l->util_sampled) / (double)dt;
	l->util_sampled = l->util_ns;
	l->t_sampled = now;
	return u;
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

int32_t lsim_net_sample_active(struct lsim_net *net, int32_t *links, double *util)
{
	if (!net)
		return 0;
	qsort(net->watch, (size_t)net->n_watch, sizeof *net->watch, cmp_i32);
	int32_t n = 0, keep = 0;
	for (int32_t i = 0; i < net->n_watch; i++) {
		int32_t id = net->watch[i];
		struct link *l = &net->links[id];
		double u = lsim_link_sample_util(net, id);
		links[n] = id;
		util[n++] = u;
		if (u == 0.0 && l->n_lanes == 0)
			l->watched = false; /* 0 until a flow comes */
		else
			net->watch[keep++] = id;
	}
	net->n_watch = keep;
	net->t_sample = lsim_now(net->eng);
	return n;
}

lsim_time lsim_path_latency(const struct lsim_net *net, const int32_t *path,
			    int32_t n)
{
	lsim_time t = 0;
	for (int32_t i = 0; net && path && i < n; i++)
		if (path[i] >= 0 && path[i] < net->n_links)
			t = add_time(t, net->links[path[i]].latency);
	return t;
}

int lsim_net_check(const struct lsim_net *net, char *why, size_t n)
{
	for (int32_t i = 0; i < net->n_links; i++) {
		const struct link *l = &net->links[i];
		double sum = 0;
		for (int32_t k = 0; k < l->n_lanes; k++) {
			const struct flow *f = &net->flows[l->lanes[k].flow];
			if (f->state == LSIM_FLOW_ACTIVE)
				sum += f->rate;
		}
		/* rates are bytes/ns; allow rounding of the solver's sums */
		double cap = l->bw * (1 + 1e-9) + 1e-12;
		if (sum > cap || l->rate_sum > cap) {
			snprintf(why, n,
				 "link %d (%s): its flows' rates add up to %.9g B/s, "
				 "above its bandwidth %.9g B/s",
				 (int)i, lsim_link_kind_name(l->kind),
				 1e9 * (sum > l->rate_sum ? sum : l->rate_sum),
				 1e9 * l->bw);
			return LSIM_ESTATE;
		}
	}
	for (int32_t i = 0; i < net->n_slots; i++) {
		const struct flow *f = &net->flows[i];
		if (f->state == FLOW_FREE)
			continue;
		double slack = 1e-6 * (f->bytes > 1 ? f->bytes : 1);
		if (!(f->left >= -slack && f->left <= f->bytes + slack) ||
		    !(f->rate >= 0)) {
			snprintf(why, n,
				 "flow %d: %.17g bytes left of %.17g at rate %.9g B/s",
				 (int)i, f->left, f->bytes, 1e9 * f->rate);
			return LSIM_ESTATE;
		}
	}
	return 0;
}

void lsim_net_get_stats(const struct lsim_net *net, struct lsim_net_stats *out)
{
	if (!out)
		return;
	if (!net) {
		memset(out, 0, sizeof *out);
		return;
	}
	*out = net->st;
}

/* ---- max-min fair rates by progressive filling ---- */



/* Fixes local flow i's rate; a flow whose rate moves (or that had none
 * yet) joins the changed list. */
void lsim_lk_freeze(struct solve *sv, int32_t i, double rate)
{
	double old = sv->old[i];
	sv->rate[i] = rate;
	sv->frozen[i] = true;
	bool same = old == INFINITY ? false
		    : old > 0	    ? fabs(rate - old) <= RATE_RTOL * old
				    : rate == 0;
	if (!same)
		sv->changed[sv->n_changed++] = i;
	for (int32_t h = sv->hoff[i]; h < sv->hoff[i + 1]; h++) {
		sv->rem[sv->hop[h]] -= rate;
		sv->nu[sv->hop[h]]--;
	}
}

/*
 * Max-min fair rates of the local problem (nF flows over nL links, each
 * link with the capacity the kept flows leave, rem, and its flows here,
 * nu of them). Progressive filling with a lazy heap: a link's fair share
 * rem / nu only grows as flows elsewhere freeze (they freeze at the
 * current minimum, which is at most the link's share), so a stale key is a
 * lower bound; a popped link whose share has grown is pushed back with its
 * new key, and a popped link whose key is current is the bottleneck. A
 * rate cap acts as a private link of that capacity: the smallest unfrozen
 * cap competes with the heap's top.
 */
static void fill(struct solve *sv, int32_t nF, int32_t nL)
{
	sv->n_heap = 0;
	for (int32_t i = 0; i < nL; i++)
		if (sv->nu[i] > 0)
			heap_push(sv, sv->rem[i] / sv->nu[i], i);
	int32_t n_cap = 0;
	for (int32_t i = 0; i < nF; i++) { /* packs in place: n_cap <= i */
		sv->frozen[i] = false;
		if (sv->capped[i].cap > 0)
			sv->capped[n_cap++] = (struct capped){sv->capped[i].cap, i};
	}
	if (n_cap > 1)
		qsort(sv->capped, (size_t)n_cap, sizeof *sv->capped,
		      cmp_capped);
	sv->n_changed = 0;
	int32_t ci = 0, left = nF;
	while (left > 0) {
		while (ci < n_cap && sv->frozen[sv->capped[ci].flow])
			ci++;
		if (ci < n_cap &&
		    (sv->n_heap == 0 || sv->capped[ci].cap <= sv->heap[0].key)) {
			lsim_lk_freeze(sv, sv->capped[ci].flow, sv->capped[ci].cap);
			ci++;
			left--;
			continue;
		}
		if (sv->n_heap == 0)
			break; /* every flow crosses a link: not reached */
		struct heap_ent top = heap_pop(sv);
		int32_t l = top.link;
		if (sv->nu[l] <= 0)
			continue;
		double s = sv->rem[l] > 0 ? sv->rem[l] / sv->nu[l] : 0;
		if (s > top.key) {
			heap_push(sv, s, l);
			continue;
		}
		for (int32_t k = sv->off[l]; k < sv->off[l + 1]; k++) {
			int32_t i = sv->fl[k];
			if (!sv->frozen[i]) {
				lsim_lk_freeze(sv, i, s);
				left--;
			}
		}
	}
}

static void complete_fire(struct lsim_engine *eng, void *subject,
			  uint64_t arg);

/* Gives a flow its new rate nr: bytes left up to now at the old rate,
 * link sums and statistics, and its completion event moved. */
void lsim_lk_set_rate(struct lsim_net *net, int32_t slot, double nr,
		      lsim_time now)
{
	struct flow *f = &net->flows[slot];
	f->left -= f->rate * (double)(now - f->last);
	f->last = now;
	for (int32_t h = 0; h < f->n_hops; h++) {
		struct link *l = &net->links[f->hop[h]];
		link_advance(l, now);
		l->rate_sum += nr - f->rate;
	}
	f->rate = nr;
	net->frate[slot] = nr;
	f->rate_changes++;
	net->st.rate_changes++;
	f->finish = add_time(now, xfer_ns(f->left, nr));
	if (f->finish == LSIM_TIME_MAX) {
		/* stalled (no capacity left): waits for the next change */
		if (f->ev)
			lsim_cancel(net->eng, f->ev);
		f->ev = 0;
		return;
	}
	if (f->ev && lsim_reschedule(net->eng, f->ev, f->finish) == 0)
		return;
	f->ev = lsim_schedule(net->eng, f->finish, complete_fire, net,
			      (uint64_t)slot);
}

/*
 * A lower bound of the level x at which link l fills once its fresh flows
 * (frate INFINITY) take part, growing with x up to their caps, while the
 * others keep their rates: the x with sum over its flows of
 * min(rate, x) = bw, a fresh flow's rate being its cap (INFINITY if none).
 * Iterates x <- (bw - sum of rates below x) / (flows at or above x) from
 * x = 0, which climbs to that x from below and stops when the set of flows
 * below x no longer grows (then x is exact), after 8 rounds, or once x
 * reaches `bound` (the caller only wants it if it is below). INFINITY if
 * the link cannot fill.
 */
static double water_level(const struct lsim_net *net, const struct link *l,
			  double bound)
{
	double x = 0;
	int32_t n_below = -1;
	for (int it = 0; it < 8 && x < bound; it++) {
		double below = 0;
		int32_t nb = 0;
		for (int32_t k = 0; k < l->n_lanes; k++) {
			double r = net->frate[l->lanes[k].flow];
			if (r == INFINITY && net->fm[l->lanes[k].flow].cap > 0)
				r = net->fm[l->lanes[k].flow].cap;
			if (r < x) {
				below += r;
				nb++;
			}
		}
		if (nb == n_below)
			break;
		if (nb == l->n_lanes)
			return INFINITY;
		n_below = nb;
		x = (l->bw - below) / (l->n_lanes - nb);
	}
	return x;
}



/*
 * The level below which nothing changes at this settle (docs/links.md):
 * the smallest old rate of the flows that left, and for each dirty link
 * with fresh flows, the level at which it would fill with them given the
 * other flows' current rates. The dirty links become the first local
 * links; returns their count.
 */
static int32_t divergence(struct lsim_net *net, double *theta)
{
	double th = net->theta_gone;
	int32_t nL = 0;
	net->theta_gone = INFINITY;
	for (int32_t i = 0; i < net->n_dirty; i++) {
		int32_t id = net->dirty[i];
		struct link *l = &net->links[id];
		l->dirty = false;
		reach_link(net, id, &nL);
		bool fresh = false;
		for (int32_t k = 0; k < l->n_lanes && !fresh; k++)
			fresh = net->frate[l->lanes[k].flow] == INFINITY;
		if (fresh) {
			double x = water_level(net, l, th);
			if (x < th)
				th = x;
		}
	}
	net->n_dirty = 0;
	*theta = th;
	return nL;
}

/*
 * Recomputes the rates that can change after the flows that started and
 * ended at this instant. Below the divergence level theta the new
 * allocation equals the old one, so flows with a rate below theta (less a
 * margin for rounding) keep it and count only as capacity taken from their
 * links. A breadth-first search from the dirty links through the other
 * flows builds the local problem; progressive filling solves it, and only
 * flows whose rate moved are advanced and rescheduled.
 */
static void settle(struct lsim_net *net)
{
	lsim_time now = lsim_now(net->eng);
	struct solve *sv = &net->sv;
	if (net->epoch == UINT32_MAX) {
		/* wrap: clear every mark so that no stale one matches */
		for (int32_t i = 0; i < net->n_slots; i++)
			net->fm[i].seen = 0;
		for (int32_t i = 0; i < net->n_links; i++)
			net->lm[i].mark = 0;
		net->epoch = 0;
	}
	uint32_t ep = ++net->epoch;
	double theta;
	int32_t nL = divergence(net, &theta), nF = 0, nfl = 0;
	sv->hoff[0] = 0;
	double th = theta > 0 ? theta * (1 - THETA_RTOL) : -INFINITY;
	for (int32_t i = 0; i < nL; i++) {
		const struct link *l = &net->links[sv->link[i]];
		double rem = l->bw;
		int32_t k0 = sv->off[i] = nfl;
		/* the flows to re-solve to fl[], without a branch on each
		 * rate (which way it goes is a coin toss) */
		for (int32_t k = 0; k < l->n_lanes; k++) {
			int32_t slot = l->lanes[k].flow;
			double r = net->frate[slot];
			bool kept = r < th;
			rem -= masked(r, kept);
			sv->fl[nfl] = slot;
			nfl += !kept;
		}
		/* then those not met yet join the local problem */
		for (int32_t k = k0; k < nfl; k++) {
			int32_t slot = sv->fl[k];
			if (k + 4 < nfl)
				PREFETCH(net->flows[sv->fl[k + 4]].hop);
			struct fmark *m = &net->fm[slot];
			if (m->seen != ep) {
				m->seen = ep;
				m->idx = nF;
				m->recomputed++;
				const int32_t *hop = net->flows[slot].hop;
				int32_t nh = sv->hoff[nF];
				for (int32_t h = 0; h < LSIM_PATH_MAX && hop[h] >= 0;
				     h++)
					sv->hop[nh++] = reach_link(net, hop[h], &nL);
				sv->hoff[nF + 1] = nh;
				sv->slot[nF] = slot;
				sv->old[nF] = net->frate[slot];
				sv->capped[nF].cap = m->cap;
				nF++;
			}
			sv->fl[k] = m->idx;
		}
		sv->rem[i] = rem;
		sv->nu[i] = nfl - sv->off[i];
	}
	sv->off[nL] = nfl;
	net->st.recomputations++;
	net->st.flows_recomputed += (uint64_t)nF;
	net->st.links_recomputed += (uint64_t)nL;
	if (nF == 0)
		return;
	fill(sv, nF, nL);
	for (int32_t i = 0; i < sv->n_changed; i++) {
		int32_t k = sv->changed[i];
		if (i + 2 < sv->n_changed) {
			struct flow *g = &net->flows[sv->slot[sv->changed[i + 2]]];
			PREFETCH(g->hop);
			PREFETCH(&g->n_hops);
		}
		lsim_lk_set_rate(net, sv->slot[k], sv->rate[k], now);
	}
}

static void settle_fire(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	struct lsim_net *net = subject;
	net->settle_ev = 0;
	if (net->qos)
		lsim_lk_qos_settle(net);
	else
		settle(net);
}

/* ---- flows ---- */

/* The flow has delivered its bytes (left is what its rates leave over,
 * a rounding residual): corrects the links' byte counts to the exact size,
 * frees it and calls its callback. */
static void finish(struct lsim_net *net, int32_t slot, double left)
{
	lsim_time now = lsim_now(net->eng);
	struct flow *f = &net->flows[slot];
	if (f->state == LSIM_FLOW_ACTIVE) {
		for (int32_t h = 0; h < f->n_hops; h++) {
			struct link *l = &net->links[f->hop[h]];
			l->bytes += left;
			l->util_ns += left / l->bw;
		}
		flow_detach(net, slot, now);
	}
	double r = fabs(left);
	if (r > net->st.max_residual)
		net->st.max_residual = r;
	net->st.flows_finished++;
	net->st.bytes_requested += f->bytes;
	net->st.bytes_delivered += f->bytes - left;
	lsim_flow_done_fn done = f->done;
	void *ctx = f->ctx;
	uint64_t arg = f->arg;
	lsim_flow_id id = flow_handle(net, slot);
	flow_free(net, slot);
	lsim_lk_ensure_settle(net);
	if (done)
		done(ctx, id, arg);
}

static void activate(struct lsim_net *net, int32_t slot)
{
	lsim_time now = lsim_now(net->eng);
	struct flow *f = &net->flows[slot];
	f->state = LSIM_FLOW_ACTIVE;
	f->last = now;
	f->rate = 0;
	net->frate[slot] = INFINITY;
	for (int32_t h = 0; h < f->n_hops; h++) {
		int32_t id = f->hop[h];
		struct link *l = &net->links[id];
		link_advance(l, now);
		lane_add(net, id, slot, h);
		mark_dirty(net, id);
		watch_link(net, id);
	}
	if (net->qos)
		lsim_lk_qos_join(net, slot);
	lsim_lk_ensure_settle(net);
}

static void activate_fire(struct lsim_engine *eng, void *subject,
			  uint64_t arg)
{
	struct lsim_net *net = subject;
	int32_t slot = (int32_t)arg;
	net->flows[slot].ev = 0;
	if (net->flows[slot].bytes <= 0)
		finish(net, slot, 0);
	else
		activate(net, slot);
}

static void complete_fire(struct lsim_engine *eng, void *subject,
			  uint64_t arg)
{
	struct lsim_net *net = subject;
	int32_t slot = (int32_t)arg;
	struct flow *f = &net->flows[slot];
	lsim_time now = lsim_now(eng);
	f->ev = 0;
	f->left -= f->rate * (double)(now - f->last);
	f->last = now;
	/* Less than a nanosecond's worth left (or rounding of the size) is
	 * done; more cannot happen while events follow rate changes, but is
	 * handled by waiting for the rest. */
	if (f->left > f->rate + 1e-9 * f->bytes) {
		f->finish = add_time(now, xfer_ns(f->left, f->rate));
		if (f->finish != LSIM_TIME_MAX)
			f->ev = lsim_schedule(eng, f->finish, complete_fire,
					      net, arg);
		return;
	}
	finish(net, slot, f->left);
}

static int check_path(const struct lsim_net *net, const int32_t *path,
		      int32_t n, bool unique, struct lsim_diag *d)
{
	if (!path || n < 1 || n > LSIM_PATH_MAX)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "path",
				     "a path has 1 to %d links, got %d",
				     LSIM_PATH_MAX, (int)n);
	for (int32_t i = 0; i < n; i++) {
		if (path[i] < 0 || path[i] >= net->n_links)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "path",
					     "hop %d: no link %d (the network has %d)",
					     (int)i, (int)path[i],
					     (int)net->n_links);
		for (int32_t j = 0; unique && j < i; j++)
			if (path[j] == path[i])
				return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0,
						     "path",
						     "link %d appears twice in the path",
						     (int)path[i]);
	}
	return 0;
}

int lsim_flow_start(struct lsim_net *net, const struct lsim_flow_req *req,
		    lsim_flow_id *id, struct lsim_diag *d)
{
	if (!net || !req)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "",
				     "no network or request");
	int rc = check_path(net, req->path, req->n_hops, true, d);
	if (rc)
		return rc;
	if (!(req->bytes >= 0) || !isfinite(req->bytes))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "bytes",
				     "flow size must be >= 0 bytes, got %g",
				     req->bytes);
	if (isnan(req->rate_cap) || isinf(req->rate_cap))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "rate_cap",
				     "rate cap must be finite, got %g",
				     req->rate_cap);
	if ((int)req->kind < 0 || req->kind >= LSIM_FLOW_KIND_COUNT)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "kind",
				     "unknown flow kind %d", (int)req->kind);
	int32_t cls = req->cls > 0 ? req->cls
				   : lsim_net_class_of(net, req->kind, req->for_tenant, req->tenant);
	if (cls < 0 || (cls > 0 && cls >= net->n_cls))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "class",
				     "no traffic class %d", (int)cls);
	int32_t vlink = net->qos ? net->cls[cls].vlink : -1;
	if (vlink >= 0 && req->n_hops >= LSIM_PATH_MAX)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "path",
				     "a flow of a class with a rate crosses at most %d links, got %d",
				     LSIM_PATH_MAX - 1, (int)req->n_hops);
	/* Room for this flow in every structure an event may touch. */
	int32_t slot = net->free_flow;
	if (slot < 0) {
		if (net->n_slots == INT32_MAX)
			return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "",
					     "too many flows");
		int32_t n = net->n_slots;
		if (n == net->cap_flows) {
			int32_t want = n > INT32_MAX / 2 ? INT32_MAX
							 : (n ? 2 * n : 8);
			if (grow_flows(net, want))
				return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0,
						     "", "out of memory");
			net->cap_flows = want;
		}
		slot = net->n_slots++;
		net->flows[slot].gen = 1;
		net->flows[slot].state = FLOW_FREE;
		net->flows[slot].next_free = net->free_flow;
		net->free_flow = slot;
	}
	for (int32_t h = 0; h <= req->n_hops; h++) {
		int32_t lid = h < req->n_hops ? req->path[h] : vlink;
		if (lid < 0)
			break;
		struct link *l = &net->links[lid];
		if (reserve((void **)&l->lanes, &l->cap_lanes,
			    l->n_reserved + 1, sizeof *l->lanes))
			return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "",
					     "out of memory");
	}
	lsim_time now = lsim_now(net->eng);
	lsim_time lat = lsim_path_latency(net, req->path, req->n_hops);
	struct flow *f = &net->flows[slot];
	f->state = LSIM_FLOW_LATENT;
	f->n_hops = req->n_hops;
	memcpy(f->hop, req->path, (size_t)req->n_hops * sizeof *f->hop);
	if (vlink >= 0)
		f->hop[f->n_hops++] = vlink;
	for (int32_t h = f->n_hops; h < LSIM_PATH_MAX; h++)
		f->hop[h] = -1;
	net->fq[slot] = net->qos ? (struct fq){net->cls[cls].w, cls,
					       net->cls[cls].lvl}
				 : (struct fq){1.0, 0, LSIM_QOS_DEFAULT_LEVEL};
	f->bytes = req->bytes;
	f->left = req->bytes;
	f->rate = 0;
	f->last = now;
	f->start = now;
	f->finish = LSIM_TIME_MAX;
	f->ev = 0;
	f->done = req->done;
	f->ctx = req->ctx;
	f->arg = req->arg;
	net->fm[slot] = (struct fmark){
		.cap = req->rate_cap > 0 ? req->rate_cap / 1e9 : 0,
	};
	f->rate_changes = 0;
	if (lat > 0 || req->bytes <= 0) {
		f->ev = lsim_schedule(net->eng, add_time(now, lat),
				      activate_fire, net, (uint64_t)slot);
		if (!f->ev) {
			f->state = FLOW_FREE;
			return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "",
					     "out of memory");
		}
	}
	net->free_flow = f->next_free;
	for (int32_t h = 0; h < f->n_hops; h++)
		net->links[f->hop[h]].n_reserved++;
	net->st.flows_started++;
	net->st.flows_active++;
	if (!f->ev)
		activate(net, slot);
	if (id)
		*id = flow_handle(net, slot);
	return 0;
}

int lsim_flow_cancel(struct lsim_net *net, lsim_flow_id id,
		     double *delivered)
{
	int32_t slot = flow_lookup(net, id);
	if (slot < 0)
		return LSIM_ESTATE;
	struct flow *f = &net->flows[slot];
	lsim_time now = lsim_now(net->eng);
	double moved = 0;
	if (f->ev)
		lsim_cancel(net->eng, f->ev);
	if (f->state == LSIM_FLOW_ACTIVE) {
		moved = f->bytes - (f->left - f->rate * (double)(now - f->last));
		flow_detach(net, slot, now);
	}
	net->st.flows_cancelled++;
	flow_free(net, slot);
	lsim_lk_ensure_settle(net);
	if (delivered)
		*delivered = moved;
	return 0;
}

int lsim_flow_get(const struct lsim_net *net, lsim_flow_id id,
		  struct lsim_flow_info *out)
{
	int32_t slot = flow_lookup(net, id);
	if (slot < 0 || !out)
		return LSIM_ESTATE;
	const struct flow *f = &net->flows[slot];
	lsim_time now = lsim_now(net->eng);
	out->state = (enum lsim_flow_state)f->state;
	out->bytes = f->bytes;
	out->bytes_left = f->left - f->rate * (double)(now - f->last);
	out->rate = f->rate * 1e9;
	out->start = f->start;
	out->finish = f->state == LSIM_FLOW_ACTIVE ? f->finish : LSIM_TIME_MAX;
	out->recomputed = net->fm[slot].recomputed;
	out->rate_changes = f->rate_changes;
	return 0;
}

/* ---- messages ---- */

static void msg_fire(struct lsim_engine *eng, void *subject, uint64_t arg);

static void msg_free(struct lsim_net *net, int32_t slot)
{
	net->msgs[slot].ev = 0;
	net->msgs[slot].next_free = net->free_msg;
	net->free_msg = slot;
}

/* Queues message slot on the link of its current hop; false if the engine
 * ran out of memory, with the link left untouched. The last hop of a
 * message nobody waits for (no done callback) needs no event: its link's
 * queue is accounted for here, its arrival would change nothing, so it
 * counts as delivered now and its slot is free at once (a token stream
 * is such a message: a third of a serving run's events). */
static bool msg_enqueue(struct lsim_net *net, int32_t slot)
{
	struct msg *m = &net->msgs[slot];
	struct link *l = &net->links[m->hop[m->cur]];
	lsim_time now = lsim_now(net->eng);
	lsim_time start = l->msg_free_at > now ? l->msg_free_at : now;
	if (m->bytes != l->memo_bytes) {
		l->memo_bytes = m->bytes;
		l->memo_ser = xfer_ns(m->bytes, l->bw);
	}
	lsim_time ser = l->memo_ser;
	lsim_time done = add_time(start, ser);
	bool last = m->cur == m->n_hops - 1;
	bool silent = !m->done && last;
	lsim_event_id ev = 0;
	if (!silent) {
		ev = lsim_schedule_tag(net->eng, add_time(done, l->latency), msg_fire,
				       net, (uint64_t)slot,
				       last ? m->tag : LSIM_TAG_INTERNAL);
		if (!ev)
			return false;
	}
	l->msg_free_at = done;
	l->msg_bytes += m->bytes;
	l->n_msgs++;
	l->msg_busy_ns += ser;
	m->ev = ev;
	if (silent) {
		msg_free(net, slot);
		net->st.msgs_delivered++;
	}
	return true;
}

static void msg_fire(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	struct lsim_net *net = subject;
	int32_t slot = (int32_t)arg;
	struct msg *m = &net->msgs[slot];
	m->ev = 0;
	if (++m->cur < m->n_hops) {
		if (msg_enqueue(net, slot))
			return;
		msg_free(net, slot); /* out of memory: the message is lost */
		return;
	}
	lsim_msg_done_fn done = m->done;
	void *ctx = m->ctx;
	uint64_t uarg = m->arg;
	msg_free(net, slot);
	net->st.msgs_delivered++;
	if (done)
		done(ctx, uarg);
}

int lsim_msg_send(struct lsim_net *net, const int32_t *path, int32_t n_hops,
		  double bytes, lsim_msg_done_fn done, void *ctx, uint64_t arg,
		  uint32_t tag, struct lsim_diag *d)
{
	if (!net)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "", "no network");
	int rc = check_path(net, path, n_hops, false, d);
	if (rc)
		return rc;
	if (!(bytes >= 0) || !isfinite(bytes))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "bytes",
				     "message size must be >= 0 bytes, got %g",
				     bytes);
	int32_t slot = net->free_msg;
	if (slot < 0) {
		int32_t cap = net->cap_msgs;
		if (net->n_msg_slots == INT32_MAX ||
		    reserve((void **)&net->msgs, &cap, net->n_msg_slots + 1,
			    sizeof *net->msgs))
			return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "",
					     "out of memory");
		net->cap_msgs = cap;
		slot = net->n_msg_slots++;
		net->msgs[slot].ev = 0;
		net->msgs[slot].next_free = -1;
	} else {
		net->free_msg = net->msgs[slot].next_free;
	}
	struct msg *m = &net->msgs[slot];
	m->done = done;
	m->ctx = ctx;
	m->arg = arg;
	m->tag = tag;
	m->bytes = bytes;
	memcpy(m->hop, path, (size_t)n_hops * sizeof *m->hop);
	m->n_hops = n_hops;
	m->cur = 0;
	if (!msg_enqueue(net, slot)) {
		msg_free(net, slot);
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "",
				     "out of memory");
	}
	net->st.msgs_sent++;
	return 0;
}

/* ---- topology ---- */

void lsim_topo_params_default(struct lsim_topo_params *p)
{
	*p = (struct lsim_topo_params){
		.nodes = 1,
		.gpus_per_node = 8,
		.gpus_per_switch = 2,
		.nodes_per_tor = 32,
		.pcie_bw = 63.0e9,   /* PCIe Gen5 x16, per direction */
		.host_bw = 63.0e9,   /* switch uplink: Gen5 x16 */
		.nvlink_bw = 450e9,  /* NVLink 4: 900 GB/s total, 450 each way */
		.nic_bw = 400e9,     /* 8 x 400 Gb/s ConnectX-7 */
		.oversubscription = 1.0,
		.spine_bw = 0,
		.storage_bw = 50e9,
		.pcie_latency = 1 * LSIM_US,
		.host_latency = 500,
		.nvlink_latency = 1 * LSIM_US,
		.nic_latency = 2 * LSIM_US,
		.tor_latency = 1 * LSIM_US,
		.spine_latency = 1 * LSIM_US,
		.storage_latency = 100 * LSIM_US,
	};
}

static int topo_check(const struct lsim_topo_params *p, struct lsim_diag *d)
{
	static const struct {
		const char *key;
		size_t off;
	} counts[] = {
		{"nodes", offsetof(struct lsim_topo_params, nodes)},
		{"gpus_per_node", offsetof(struct lsim_topo_params, gpus_per_node)},
		{"gpus_per_switch", offsetof(struct lsim_topo_params, gpus_per_switch)},
		{"nodes_per_tor", offsetof(struct lsim_topo_params, nodes_per_tor)},
	};
	static const struct {
		const char *key;
		size_t off;
		bool zero_ok;
	} bws[] = {
		{"pcie_bw", offsetof(struct lsim_topo_params, pcie_bw), false},
		{"host_bw", offsetof(struct lsim_topo_params, host_bw), false},
		{"nvlink_bw", offsetof(struct lsim_topo_params, nvlink_bw), true},
		{"nic_bw", offsetof(struct lsim_topo_params, nic_bw), false},
		{"oversubscription",
		 offsetof(struct lsim_topo_params, oversubscription), false},
		{"spine_bw", offsetof(struct lsim_topo_params, spine_bw), true},
		{"storage_bw", offsetof(struct lsim_topo_params, storage_bw), false},
	};
	static const struct {
		const char *key;
		size_t off;
	} lats[] = {
		{"pcie_latency", offsetof(struct lsim_topo_params, pcie_latency)},
		{"host_latency", offsetof(struct lsim_topo_params, host_latency)},
		{"nvlink_latency", offsetof(struct lsim_topo_params, nvlink_latency)},
		{"nic_latency", offsetof(struct lsim_topo_params, nic_latency)},
		{"tor_latency", offsetof(struct lsim_topo_params, tor_latency)},
		{"spine_latency", offsetof(struct lsim_topo_params, spine_latency)},
		{"storage_latency", offsetof(struct lsim_topo_params, storage_latency)},
	};
	const char *base = (const char *)p;
	for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
		int32_t v;
		memcpy(&v, base + counts[i].off, sizeof v);
		if (v < 1)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0,
					     counts[i].key,
					     "must be >= 1, got %d", (int)v);
	}
	for (size_t i = 0; i < sizeof bws / sizeof bws[0]; i++) {
		double v;
		memcpy(&v, base + bws[i].off, sizeof v);
		bool ok = isfinite(v) && (v > 0 || (bws[i].zero_ok && v == 0));
		if (!ok)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0,
					     bws[i].key, "must be %s, got %g",
					     bws[i].zero_ok ? ">= 0" : "> 0", v);
	}
	for (size_t i = 0; i < sizeof lats / sizeof lats[0]; i++) {
		lsim_time v;
		memcpy(&v, base + lats[i].off, sizeof v);
		if (v < 0)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0,
					     lats[i].key,
					     "must be >= 0, got %lld ns",
					     (long long)v);
	}
	if ((int64_t)p->nodes * p->gpus_per_node > (1 << 24))
		return lsim_diag_set(d, LSIM_ERANGE, "", 0, 0, "nodes",
				     "%d nodes x %d GPUs is more than 2^24 GPUs",
				     (int)p->nodes, (int)p->gpus_per_node);
	return 0;
}

void lsim_topo_release(struct lsim_topo *t)
{
	if (!t)
		return;
	free(t->pcie_up);
	free(t->pcie_down);
	free(t->nvlink_up);
	free(t->nvlink_down);
	free(t->host);
	free(t->nic_out);
	free(t->nic_in);
	free(t->tor_up);
	free(t->tor_down);
	memset(t, 0, sizeof *t);
	t->spine = t->storage = t->storage_in = -1;
}

static int32_t *ids_alloc(int32_t n)
{
	int32_t *a = malloc((size_t)n * sizeof *a);
	for (int32_t i = 0; a && i < n; i++)
		a[i] = -1;
	return a;
}

int lsim_topo_build(struct lsim_topo *t, struct lsim_net *net,
		    const struct lsim_topo_params *p, struct lsim_diag *d)
{
	memset(t, 0, sizeof *t);
	t->spine = t->storage = t->storage_in = -1;
	int rc = topo_check(p, d);
	if (rc)
		return rc;
	t->p = *p;
	int32_t G = p->gpus_per_node;
	t->switches_per_node = (G + p->gpus_per_switch - 1) / p->gpus_per_switch;
	t->n_gpus = p->nodes * G;
	t->n_switches = p->nodes * t->switches_per_node;
	t->n_tors = (p->nodes + p->nodes_per_tor - 1) / p->nodes_per_tor;
	t->pcie_up = ids_alloc(t->n_gpus);
	t->pcie_down = ids_alloc(t->n_gpus);
	t->nvlink_up = ids_alloc(t->n_gpus);
	t->nvlink_down = ids_alloc(t->n_gpus);
	t->host = ids_alloc(t->n_switches);
	t->nic_out = ids_alloc(p->nodes);
	t->nic_in = ids_alloc(p->nodes);
	t->tor_up = ids_alloc(t->n_tors);
	t->tor_down = ids_alloc(t->n_tors);
	if (!t->pcie_up || !t->pcie_down || !t->nvlink_up || !t->nvlink_down ||
	    !t->host || !t->nic_out || !t->nic_in || !t->tor_up ||
	    !t->tor_down) {
		lsim_topo_release(t);
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "",
				     "out of memory");
	}
	for (int32_t n = 0; n < p->nodes && !rc; n++) {
		for (int32_t s = 0; s < t->switches_per_node && !rc; s++)
			rc = lsim_link_add(net, LSIM_LINK_HOST, p->host_bw,
					   p->host_latency,
					   &t->host[n * t->switches_per_node + s],
					   d);
		for (int32_t g = n * G; g < (n + 1) * G && !rc; g++) {
			rc = lsim_link_add(net, LSIM_LINK_PCIE, p->pcie_bw,
					   p->pcie_latency, &t->pcie_up[g], d);
			if (!rc)
				rc = lsim_link_add(net, LSIM_LINK_PCIE,
						   p->pcie_bw, p->pcie_latency,
						   &t->pcie_down[g], d);
			if (!rc && p->nvlink_bw > 0)
				rc = lsim_link_add(net, LSIM_LINK_NVLINK,
						   p->nvlink_bw,
						   p->nvlink_latency,
						   &t->nvlink_up[g], d);
			if (!rc && p->nvlink_bw > 0)
				rc = lsim_link_add(net, LSIM_LINK_NVLINK,
						   p->nvlink_bw,
						   p->nvlink_latency,
						   &t->nvlink_down[g], d);
		}
		if (!rc)
			rc = lsim_link_add(net, LSIM_LINK_NIC, p->nic_bw,
					   p->nic_latency, &t->nic_out[n], d);
		if (!rc)
			rc = lsim_link_add(net, LSIM_LINK_NIC, p->nic_bw,
					   p->nic_latency, &t->nic_in[n], d);
	}
	double up = p->nodes_per_tor * p->nic_bw / p->oversubscription;
	for (int32_t r = 0; r < t->n_tors && !rc; r++) {
		rc = lsim_link_add(net, LSIM_LINK_TOR, up, p->tor_latency,
				   &t->tor_up[r], d);
		if (!rc)
			rc = lsim_link_add(net, LSIM_LINK_TOR, up,
					   p->tor_latency, &t->tor_down[r], d);
	}
	if (!rc && p->spine_bw > 0)
		rc = lsim_link_add(net, LSIM_LINK_SPINE, p->spine_bw,
				   p->spine_latency, &t->spine, d);
	if (!rc)
		rc = lsim_link_add(net, LSIM_LINK_STORAGE, p->storage_bw,
				   p->storage_latency, &t->storage, d);
	if (!rc)
		rc = lsim_link_add(net, LSIM_LINK_STORAGE, p->storage_bw,
				   p->storage_latency, &t->storage_in, d);
	if (rc)
		lsim_topo_release(t);
	return rc;
}

int32_t lsim_topo_node_of(const struct lsim_topo *t, int32_t gpu)
{
	if (gpu < 0 || gpu >= t->n_gpus)
		return -1;
	return gpu / t->p.gpus_per_node;
}

static int32_t tor_of(const struct lsim_topo *t, int32_t node)
{
	return node / t->p.nodes_per_tor;
}

static int32_t switch_of(const struct lsim_topo *t, int32_t gpu)
{
	int32_t n = gpu / t->p.gpus_per_node;
	int32_t local = gpu % t->p.gpus_per_node;
	return n * t->switches_per_node + local / t->p.gpus_per_switch;
}

/* Names one direction of a link: from -> to into id's entries, when id is
 * a link below n. */
static void name_link(int32_t id, int32_t n, lsim_link_end *from,
		      lsim_link_end *to, const char *a, const char *b)
{
	if (id < 0 || id >= n)
		return;
	snprintf(from[id], LSIM_LINK_END_LEN, "%s", a);
	snprintf(to[id], LSIM_LINK_END_LEN, "%s", b);
}

void lsim_topo_link_ends(const struct lsim_topo *t, int32_t n_links,
			 lsim_link_end *from, lsim_link_end *to)
{
	char a[LSIM_LINK_END_LEN], b[LSIM_LINK_END_LEN];
	int32_t G = t->p.gpus_per_node;
	for (int32_t g = 0; g < t->n_gpus; g++) {
		int32_t node = g / G, sw = switch_of(t, g);
		snprintf(a, sizeof a, "gpu %" PRId32, g);
		snprintf(b, sizeof b, "node %" PRId32 " switch %" PRId32, node,
			 sw - node * t->switches_per_node);
		name_link(t->pcie_up[g], n_links, from, to, a, b);
		name_link(t->pcie_down[g], n_links, from, to, b, a);
		if (t->p.nvlink_pairs)
			snprintf(b, sizeof b, "node %" PRId32 " bridge %" PRId32,
				 node, (g % G) / 2);
		else
			snprintf(b, sizeof b, "node %" PRId32 " nvswitch", node);
		name_link(t->nvlink_up[g], n_links, from, to, a, b);
		name_link(t->nvlink_down[g], n_links, from, to, b, a);
	}
	for (int32_t sw = 0; sw < t->n_switches; sw++) {
		int32_t node = sw / t->switches_per_node;
		snprintf(a, sizeof a, "node %" PRId32 " switch %" PRId32, node,
			 sw % t->switches_per_node);
		snprintf(b, sizeof b, "node %" PRId32 " host", node);
		name_link(t->host[sw], n_links, from, to, a, b);
	}
	for (int32_t node = 0; node < t->p.nodes; node++) {
		snprintf(a, sizeof a, "node %" PRId32, node);
		snprintf(b, sizeof b, "tor %" PRId32, tor_of(t, node));
		name_link(t->nic_out[node], n_links, from, to, a, b);
		name_link(t->nic_in[node], n_links, from, to, b, a);
	}
	for (int32_t r = 0; r < t->n_tors; r++) {
		snprintf(a, sizeof a, "tor %" PRId32, r);
		name_link(t->tor_up[r], n_links, from, to, a, "spine");
		name_link(t->tor_down[r], n_links, from, to, "spine", a);
	}
	name_link(t->spine, n_links, from, to, "spine", "spine");
	name_link(t->storage, n_links, from, to, "storage", "spine");
	name_link(t->storage_in, n_links, from, to, "spine", "storage");
}

static bool gpu_ok(const struct lsim_topo *t, int32_t gpu)
{
	return t && gpu >= 0 && gpu < t->n_gpus;
}

int lsim_topo_path_storage_to_gpu(const struct lsim_topo *t, int32_t gpu,
				  int32_t *out)
{
	if (!gpu_ok(t, gpu) || !out)
		return LSIM_EINVAL;
	int32_t node = gpu / t->p.gpus_per_node, n = 0;
	out[n++] = t->storage;
	if (t->spine >= 0)
		out[n++] = t->spine;
	out[n++] = t->tor_down[tor_of(t, node)];
	out[n++] = t->nic_in[node];
	out[n++] = t->host[switch_of(t, gpu)];
	out[n++] = t->pcie_down[gpu];
	return n;
}

int lsim_topo_path_gpu_to_storage(const struct lsim_topo *t, int32_t gpu,
				  int32_t *out)
{
	if (!gpu_ok(t, gpu) || !out)
		return LSIM_EINVAL;
	int32_t node = gpu / t->p.gpus_per_node, n = 0;
	out[n++] = t->pcie_up[gpu];
	out[n++] = t->host[switch_of(t, gpu)];
	out[n++] = t->nic_out[node];
	out[n++] = t->tor_up[tor_of(t, node)];
	if (t->spine >= 0)
		out[n++] = t->spine;
	out[n++] = t->storage_in;
	return n;
}

int lsim_topo_path_gpu_to_host(const struct lsim_topo *t, int32_t gpu,
			       int32_t *out)
{
	if (!gpu_ok(t, gpu) || !out)
		return LSIM_EINVAL;
	out[0] = t->pcie_up[gpu];
	out[1] = t->host[switch_of(t, gpu)];
	return 2;
}

int lsim_topo_path_host_to_gpu(const struct lsim_topo *t, int32_t gpu,
			       int32_t *out)
{
	if (!gpu_ok(t, gpu) || !out)
		return LSIM_EINVAL;
	out[0] = t->host[switch_of(t, gpu)];
	out[1] = t->pcie_down[gpu];
	return 2;
}

int lsim_topo_path_gpu_to_gpu(const struct lsim_topo *t, int32_t src,
			      int32_t dst, int32_t *out)
{
	if (!gpu_ok(t, src) || !gpu_ok(t, dst) || src == dst || !out)
		return LSIM_EINVAL;
	int32_t ns = src / t->p.gpus_per_node, nd = dst / t->p.gpus_per_node;
	int32_t ss = switch_of(t, src), sd = switch_of(t, dst), n = 0;
	if (ns == nd && t->nvlink_up[src] >= 0 &&
	    (!t->p.nvlink_pairs || (src % t->p.gpus_per_node) / 2 == (dst % t->p.gpus_per_node) / 2)) {
		out[n++] = t->nvlink_up[src];
		out[n++] = t->nvlink_down[dst];
		return n;
	}
	out[n++] = t->pcie_up[src];
	if (ns == nd && ss == sd && !t->p.no_p2p) {
		/* peer-to-peer inside one PCIe switch: its uplink is not crossed */
		out[n++] = t->pcie_down[dst];
		return n;
	}
	out[n++] = t->host[ss];
	if (ns != nd) {
		out[n++] = t->nic_out[ns];
		int32_t rs = tor_of(t, ns), rd = tor_of(t, nd);
		if (rs != rd) {
			out[n++] = t->tor_up[rs];
			if (t->spine >= 0)
				out[n++] = t->spine;
			out[n++] = t->tor_down[rd];
		}
		out[n++] = t->nic_in[nd];
	}
	if (sd != ss || ns != nd)
		out[n++] = t->host[sd];
	out[n++] = t->pcie_down[dst];
	return n;
}
