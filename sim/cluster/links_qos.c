/*
 * links_qos.c - traffic classes on the links: strict priority levels,
 * weighted max-min sharing within a level, and token buckets that limit a
 * class's flows together. Holds the class table, the flow kinds, and the
 * settle of a network with classes: level by level, most urgent first,
 * each level re-solved from its own divergence level as the plain solver
 * does (links.c), with the capacity the more urgent levels leave. The
 * argument that keeps it incremental is in docs/links.md, "Traffic
 * classes".
 */
#include "cluster/links_internal.h"

#include <stdlib.h>

const char *lsim_flow_kind_name(enum lsim_flow_kind k)
{
	static const char *const names[LSIM_FLOW_KIND_COUNT] = {
		"inference", "kv", "weights", "collective", "checkpoint",
		"background", "lora",
	};
	if ((int)k < 0 || k >= LSIM_FLOW_KIND_COUNT)
		return "?";
	return names[k];
}

int lsim_flow_kind_parse(const char *s, enum lsim_flow_kind *out)
{
	for (int k = 0; s && k < LSIM_FLOW_KIND_COUNT; k++)
		if (strcmp(s, lsim_flow_kind_name((enum lsim_flow_kind)k)) == 0) {
			*out = (enum lsim_flow_kind)k;
			return 0;
		}
	return LSIM_EINVAL;
}

/* Rates (bytes/ns) below this are rounding residues of 0. */
#define QOS_ZERO 1e-9

/* ---- the class table ---- */

static void bucket_fire(struct lsim_engine *eng, void *subject, uint64_t arg);

int lsim_net_add_class(struct lsim_net *net, const struct lsim_link_class *c,
		       int32_t *id, struct lsim_diag *d)
{
	if (!net || !c)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "", "no network or class");
	if (net->st.flows_started > 0)
		return lsim_diag_set(d, LSIM_ESTATE, "", 0, 0, "",
				     "traffic classes must be added before the first flow");
	if (c->level < 0 || c->level >= LSIM_QOS_LEVELS)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "priority",
				     "a priority level is 0 (most urgent) to %d, got %d",
				     LSIM_QOS_LEVELS - 1, (int)c->level);
	if (!(c->weight > 0) || !isfinite(c->weight))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "weight",
				     "a weight must be a positive number, got %g",
				     c->weight);
	if (!(c->rate >= 0) || !isfinite(c->rate))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "rate",
				     "a rate must be a positive number of bytes/s (0: none), got %g",
				     c->rate);
	if (!(c->burst >= 0) || !isfinite(c->burst))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "burst",
				     "a burst must be >= 0 bytes, got %g", c->burst);
	if (net->n_cls == INT32_MAX - 1)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "too many classes");
	int32_t n = net->n_cls ? net->n_cls : 1;
	struct qclass *q = realloc(net->cls, (size_t)(n + 1) * sizeof *q);
	if (!q)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	net->cls = q;
	if (net->n_cls == 0) /* class 0: the default */
		q[0] = (struct qclass){
			.c = {LSIM_QOS_DEFAULT_LEVEL, 1.0, 0, 0},
			.w = 1.0, .lvl = LSIM_QOS_DEFAULT_LEVEL, .vlink = -1,
		};
	q[n] = (struct qclass){.c = *c, .w = c->weight, .lvl = c->level,
			       .vlink = -1};
	if (c->rate > 0) {
		int32_t v;
		int rc = lsim_lk_link_add(net, LSIM_LINK_HOST, c->rate, 0, &v, d);
		if (rc)
			return rc;
		struct link *l = &net->links[v];
		l->vcls = n;
		l->tok_rate = c->rate / 1e9;
		l->burst = c->burst;
		l->tokens = c->burst;
		if (c->burst > 0)
			l->bw = INFINITY;
		q[n].vlink = v;
	}
	net->n_cls = n + 1;
	net->qos = true;
	if (id)
		*id = n;
	return 0;
}

int lsim_net_map_kind(struct lsim_net *net, enum lsim_flow_kind kind,
		      int32_t cls, struct lsim_diag *d)
{
	if (!net || (int)kind < 0 || kind >= LSIM_FLOW_KIND_COUNT)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "kind",
				     "unknown flow kind %d", (int)kind);
	if (cls < 0 || (cls > 0 && cls >= net->n_cls))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "class",
				     "no traffic class %d", (int)cls);
	net->kind_cls[kind] = cls;
	return 0;
}

int lsim_net_map_tenant(struct lsim_net *net, enum lsim_flow_kind kind, int32_t tenant,
			int32_t cls, struct lsim_diag *d)
{
	if (!net || (int)kind < 0 || kind >= LSIM_FLOW_KIND_COUNT)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "kind",
				     "unknown flow kind %d", (int)kind);
	if (cls < 0 || (cls > 0 && cls >= net->n_cls) || tenant < 0)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "class",
				     "no traffic class %d for tenant %d", (int)cls, (int)tenant);
	for (int32_t i = 0; i < net->n_tmap; i++)
		if (net->tmap[i].kind == (int32_t)kind && net->tmap[i].tenant == tenant) {
			net->tmap[i].cls = cls;
			return 0;
		}
	if (net->n_tmap == INT32_MAX)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "too many tenant classes");
	struct tmap *t = realloc(net->tmap, ((size_t)net->n_tmap + 1) * sizeof *t);
	if (!t)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	net->tmap = t;
	t[net->n_tmap++] = (struct tmap){(int32_t)kind, tenant, cls};
	net->kind_tenant[kind] = true;
	return 0;
}

bool lsim_net_kind_by_tenant(const struct lsim_net *net, enum lsim_flow_kind kind)
{
	return net && (int)kind >= 0 && kind < LSIM_FLOW_KIND_COUNT && net->kind_tenant[kind];
}

/* A linear search: the entries are the ones the scenario configured. */
int32_t lsim_net_class_of(const struct lsim_net *net, enum lsim_flow_kind kind,
			  bool for_tenant, int32_t tenant)
{
	if (for_tenant && net->kind_tenant[kind])
		for (int32_t i = 0; i < net->n_tmap; i++)
			if (net->tmap[i].kind == (int32_t)kind && net->tmap[i].tenant == tenant)
				return net->tmap[i].cls;
	return net->kind_cls[kind];
}

int32_t lsim_net_n_classes(const struct lsim_net *net)
{
	return !net ? 0 : net->n_cls ? net->n_cls : 1;
}

int lsim_net_class_get(const struct lsim_net *net, int32_t cls,
		       struct lsim_class_info *out)
{
	if (!net || !out || cls < 0 || cls >= lsim_net_n_classes(net))
		return LSIM_EINVAL;
	memset(out, 0, sizeof *out);
	if (net->n_cls == 0) {
		out->c = (struct lsim_link_class){LSIM_QOS_DEFAULT_LEVEL, 1.0, 0, 0};
		return 0;
	}
	const struct qclass *q = &net->cls[cls];
	out->c = q->c;
	if (q->vlink >= 0) {
		const struct link *l = &net->links[q->vlink];
		lsim_time dt = lsim_now(net->eng) - l->t_last;
		double b = l->tokens + (l->tok_rate - l->rate_sum) * (double)(dt > 0 ? dt : 0);
		out->tokens = b < 0 ? 0 : b > l->burst ? l->burst : b;
		out->limited = isfinite(l->bw);
		out->rate_sum = l->rate_sum * 1e9;
	}
	return 0;
}

void lsim_lk_qos_free(struct lsim_net *net)
{
	for (int32_t i = 0; i < net->n_cls; i++)
		if (net->cls[i].ev)
			lsim_cancel(net->eng, net->cls[i].ev);
	free(net->cls);
}

/* ---- bookkeeping of flows joining and leaving ---- */

/* Link `link` must be looked at when level q is re-solved; cap: because
 * the capacity the more urgent levels leave it changed. */
static void qmark(struct lsim_net *net, int32_t link, int q, bool cap)
{
	struct lq *x = &net->lq[link];
	uint8_t bit = (uint8_t)(1u << q);
	if (cap)
		x->cmask |= bit;
	if (x->dmask & bit)
		return;
	x->dmask |= bit;
	net->qd[q][net->qn[q]++] = link;
}

void lsim_lk_qos_join(struct lsim_net *net, int32_t slot)
{
	const struct flow *f = &net->flows[slot];
	int q = net->fq[slot].lvl;
	for (int32_t h = 0; h < f->n_hops; h++) {
		net->lq[f->hop[h]].nlv[q]++;
		qmark(net, f->hop[h], q, false);
	}
}

/* Before the flow leaves its links: its level's divergence level, and
 * the capacity it frees for the less urgent levels on each link. */
void lsim_lk_qos_leave(struct lsim_net *net, int32_t slot)
{
	const struct flow *f = &net->flows[slot];
	const struct fq *c = &net->fq[slot];
	int q = c->lvl;
	/* A flow held at 0 (its level left no room on some link) took
	 * nothing, and the flows that held it there are held there still:
	 * its leaving changes no rate. */
	if (net->frate[slot] != INFINITY && f->rate > 0 &&
	    f->rate / c->w < net->tg[q])
		net->tg[q] = f->rate / c->w;
	for (int32_t h = 0; h < f->n_hops; h++) {
		int32_t id = f->hop[h];
		struct lq *x = &net->lq[id];
		x->nlv[q]--;
		qmark(net, id, q, false);
		for (int p = q + 1; p < LSIM_QOS_LEVELS; p++)
			if (x->nlv[p] > 0) {
				x->freed[p] += f->rate;
				qmark(net, id, p, true);
			}
	}
}

/* A re-solved flow's new rate; the less urgent levels on its links see
 * their capacity change. */
static void qos_set_rate(struct lsim_net *net, int32_t slot, double nr,
			 lsim_time now)
{
	const struct flow *f = &net->flows[slot];
	int q = net->fq[slot].lvl;
	double old = f->rate;
	for (int32_t h = 0; h < f->n_hops; h++) {
		struct lq *x = &net->lq[f->hop[h]];
		for (int p = q + 1; p < LSIM_QOS_LEVELS; p++)
			if (x->nlv[p] > 0) {
				if (old > nr)
					x->freed[p] += old - nr;
				qmark(net, f->hop[h], p, true);
			}
	}
	lsim_lk_set_rate(net, slot, nr, now);
}

/* ---- token buckets ---- */

/*
 * At the start of a settle: a bucket link's tokens up to now; an empty
 * bucket that has refilled (at least half a byte) opens (its link's
 * capacity becomes unbounded), and a bucket found empty closes (capacity
 * `rate`). Either way its level re-solves the link, whose capacity this
 * settle is the smaller of the two.
 */
static void buckets_update(struct lsim_net *net, lsim_time now)
{
	for (int32_t c = 1; c < net->n_cls; c++) {
		int32_t v = net->cls[c].vlink;
		if (v < 0)
			continue;
		struct link *l = &net->links[v];
		link_advance(l, now);
		bool open = !isfinite(l->bw);
		if (!open && l->tokens >= 0.5) {
			net->lq[v].cap_min = l->bw;
			l->bw = INFINITY;
			qmark(net, v, net->cls[c].lvl, true);
		} else if (open && l->tokens <= 0) {
			l->tokens = 0;
			l->bw = l->tok_rate;
			net->lq[v].cap_min = l->bw;
			qmark(net, v, net->cls[c].lvl, true);
		}
	}
}

/* After a settle: an open bucket whose flows take more than its rate runs
 * dry at now + tokens / (their rate - rate); its event is (re)scheduled
 * for then, or cancelled. */
static void buckets_schedule(struct lsim_net *net, lsim_time now)
{
	for (int32_t c = 1; c < net->n_cls; c++) {
		struct qclass *q = &net->cls[c];
		if (q->vlink < 0)
			continue;
		struct link *l = &net->links[q->vlink];
		net->lq[q->vlink].cap_min = INFINITY;
		lsim_time at = LSIM_TIME_MAX;
		if (!isfinite(l->bw) && l->rate_sum > l->tok_rate)
			at = add_time(now, xfer_ns(l->tokens,
						   l->rate_sum - l->tok_rate));
		if (at == LSIM_TIME_MAX) {
			if (q->ev)
				lsim_cancel(net->eng, q->ev);
			q->ev = 0;
			continue;
		}
		if (q->ev && lsim_reschedule(net->eng, q->ev, at) == 0)
			continue;
		q->ev = lsim_schedule(net->eng, at, bucket_fire, net, (uint64_t)c);
	}
}

static void bucket_fire(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	struct lsim_net *net = subject;
	struct qclass *q = &net->cls[arg];
	q->ev = 0;
	struct link *l = &net->links[q->vlink];
	link_advance(l, lsim_now(eng));
	l->tokens = 0; /* the event's time is rounded up: dry by now */
	mark_dirty(net, q->vlink);
	lsim_lk_ensure_settle(net);
}

/* ---- the solver ---- */

/*
 * The water level of link l for level q: the x at which the level-q flows
 * on it fill `cap`, each taking min(rate, w x), a fresh flow's rate being
 * its cap (INFINITY if none). As water_level (links.c): iterates from
 * x = 0 upward, a lower bound at each step, stopping once x reaches
 * bound.
 */
static double qwater(const struct lsim_net *net, const struct link *l, int q,
		     double cap, double bound)
{
	double x = 0;
	int32_t n_below = -1;
	for (int it = 0; it < 8 && x < bound; it++) {
		double below = 0, wa = 0, top = 0;
		int32_t nb = 0, nq = 0;
		const struct lq *g = &net->lq[l - net->links];
		for (int32_t k = q ? g->lend[q - 1] : 0; k < g->lend[q]; k++) {
			int32_t s = l->lanes[k].flow;
			nq++;
			double r = net->frate[s], w = net->fq[s].w;
			if (r == INFINITY && net->fm[s].cap > 0)
				r = net->fm[s].cap;
			if (r < w * x) {
				below += r;
				nb++;
				top = fmax(top, r / w);
			} else {
				wa += w;
			}
		}
		if (nb == n_below)
			break;
		if (nb == nq) {
			/* all below x: the link does not fill, unless they fill
			 * it already and x passed their rates by rounding (a
			 * link whose capacity changed while saturated; its
			 * capacity left may be a rounding residue of the
			 * bandwidth, hence the tolerance on the larger) */
			if (below < cap - THETA_RTOL * fmax(cap, l->bw))
				return INFINITY;
			return top; /* the level it fills at: that of its fastest */
		}
		n_below = nb;
		x = (cap - below) / wa;
	}
	return x;
}

/* lsim_lk_freeze, and the flow's weight off its links' weight sums. */
static void qfreeze(struct solve *sv, int32_t i, double rate)
{
	lsim_lk_freeze(sv, i, rate);
	for (int32_t h = sv->hoff[i]; h < sv->hoff[i + 1]; h++)
		sv->wsum[sv->hop[h]] -= sv->w[i];
}

/*
 * Weighted max-min rates of the local problem: fill() of links.c with a
 * link's share being rem / (weight of its unfrozen flows), the level x
 * of the filling, and a flow frozen at x taking w x. A cap c is a private
 * link that fills at x = c / w. The lazy heap stays valid: flows frozen at
 * the minimum x0 <= rem / W take w x0 each, leaving (rem - w x0) / (W - w)
 * >= rem / W.
 */
static void qfill(struct solve *sv, int32_t nF, int32_t nL)
{
	sv->n_heap = 0;
	for (int32_t i = 0; i < nL; i++)
		if (sv->nu[i] > 0 && sv->rem[i] != INFINITY)
			heap_push(sv, sv->rem[i] / sv->wsum[i], i);
	int32_t n_cap = 0;
	for (int32_t i = 0; i < nF; i++) {
		sv->frozen[i] = false;
		if (sv->capped[i].cap > 0)
			sv->capped[n_cap++] =
				(struct capped){sv->capped[i].cap / sv->w[i], i};
	}
	if (n_cap > 1)
		qsort(sv->capped, (size_t)n_cap, sizeof *sv->capped, cmp_capped);
	sv->n_changed = 0;
	int32_t ci = 0, left = nF;
	while (left > 0) {
		while (ci < n_cap && sv->frozen[sv->capped[ci].flow])
			ci++;
		if (ci < n_cap &&
		    (sv->n_heap == 0 || sv->capped[ci].cap <= sv->heap[0].key)) {
			int32_t i = sv->capped[ci].flow;
			qfreeze(sv, i, sv->capped[ci].cap * sv->w[i]);
			ci++;
			left--;
			continue;
		}
		if (sv->n_heap == 0)
			break; /* every flow crosses a real link: not reached */
		struct heap_ent top = heap_pop(sv);
		int32_t l = top.link;
		if (sv->nu[l] <= 0)
			continue;
		double s = sv->rem[l] > 0 ? sv->rem[l] / sv->wsum[l] : 0;
		if (s > top.key) {
			heap_push(sv, s, l);
			continue;
		}
		for (int32_t k = sv->off[l]; k < sv->off[l + 1]; k++) {
			int32_t i = sv->fl[k];
			if (!sv->frozen[i]) {
				qfreeze(sv, i, sv->w[i] * s);
				left--;
			}
		}
	}
}

/*
 * Level q's divergence level: the smallest rate / weight of its flows
 * that left, and for each link dirty at level q whose capacity for it
 * changed or that gained level-q flows, the water level of its level-q
 * flows in the smaller of its old and new capacity for level q (a lower
 * bound of it: the new capacity less what more urgent flows freed). The
 * dirty links become the first local links; returns their count.
 */
static int32_t qdivergence(struct lsim_net *net, int q, double *theta)
{
	double th = net->tg[q];
	int32_t nL = 0;
	uint8_t bit = (uint8_t)(1u << q);
	net->tg[q] = INFINITY;
	for (int32_t i = 0; i < net->qn[q]; i++) {
		int32_t id = net->qd[q][i];
		struct link *l = &net->links[id];
		struct lq *x = &net->lq[id];
		bool capch = x->cmask & bit;
		x->dmask &= (uint8_t)~bit;
		x->cmask &= (uint8_t)~bit;
		reach_link(net, id, &nL);
		bool fresh = false;
		double hi = 0;
		for (int32_t k = 0; k < x->lend[q]; k++) {
			int32_t s = l->lanes[k].flow;
			int lv = net->fq[s].lvl;
			if (lv < q)
				hi += net->frate[s];
			else if (lv == q && net->frate[s] == INFINITY)
				fresh = true;
		}
		if (fresh || capch) {
			double cap = l->vcls ? fmin(l->bw, x->cap_min)
					     : l->bw - hi - x->freed[q];
			double w = qwater(net, l, q, cap, th);
			if (w < th)
				th = w;
		}
		x->freed[q] = 0;
	}
	net->qn[q] = 0;
	*theta = th;
	return nL;
}

static void qnext_epoch(struct lsim_net *net)
{
	if (net->epoch == UINT32_MAX) {
		for (int32_t i = 0; i < net->n_slots; i++)
			net->fm[i].seen = 0;
		for (int32_t i = 0; i < net->n_links; i++)
			net->lm[i].mark = 0;
		net->epoch = 0;
	}
	++net->epoch;
}

/* Re-solves level q: the search of settle() (links.c) restricted to the
 * level's flows, on links whose capacity is what the more urgent levels
 * (already re-solved at this settle) leave. */
static void qsolve_level(struct lsim_net *net, int q, lsim_time now)
{
	struct solve *sv = &net->sv;
	qnext_epoch(net);
	uint32_t ep = net->epoch;
	double theta;
	int32_t nL = qdivergence(net, q, &theta), nF = 0, nfl = 0;
	sv->hoff[0] = 0;
	/* a level within rounding of 0 (1 B/s) is 0: a rate that rounded to a
	 * residue instead of 0 must not be kept where 0 would not be */
	double th = theta > QOS_ZERO ? theta * (1 - THETA_RTOL) : -INFINITY;
	for (int32_t i = 0; i < nL; i++) {
		const struct link *l = &net->links[sv->link[i]];
		double rem = l->bw, wsum = 0;
		int32_t k0 = sv->off[i] = nfl;
		for (int32_t k = 0; k < net->lq[sv->link[i]].lend[q]; k++) {
			int32_t slot = l->lanes[k].flow;
			const struct fq *c = &net->fq[slot];
			double r = net->frate[slot];
			if (c->lvl != q) {
				if (c->lvl < q)
					rem -= r;
				continue;
			}
			if (r < th * c->w) {
				rem -= r;
				continue;
			}
			sv->fl[nfl++] = slot;
		}
		for (int32_t k = k0; k < nfl; k++) {
			int32_t slot = sv->fl[k];
			struct fmark *m = &net->fm[slot];
			if (m->seen != ep) {
				m->seen = ep;
				m->idx = nF;
				m->recomputed++;
				const int32_t *hop = net->flows[slot].hop;
				int32_t nh = sv->hoff[nF];
				for (int32_t h = 0; h < LSIM_PATH_MAX && hop[h] >= 0; h++)
					sv->hop[nh++] = reach_link(net, hop[h], &nL);
				sv->hoff[nF + 1] = nh;
				sv->slot[nF] = slot;
				sv->old[nF] = net->frate[slot];
				sv->capped[nF].cap = m->cap;
				sv->w[nF] = net->fq[slot].w;
				nF++;
			}
			sv->fl[k] = m->idx;
			wsum += sv->w[m->idx];
		}
		sv->rem[i] = rem;
		sv->wsum[i] = wsum;
		sv->nu[i] = nfl - sv->off[i];
	}
	sv->off[nL] = nfl;
	net->st.flows_recomputed += (uint64_t)nF;
	net->st.links_recomputed += (uint64_t)nL;
	if (nF == 0)
		return;
	qfill(sv, nF, nL);
	for (int32_t i = 0; i < sv->n_changed; i++) {
		int32_t k = sv->changed[i];
		qos_set_rate(net, sv->slot[k], sv->rate[k], now);
	}
}

/*
 * The settle of a network with classes: the buckets first (their state
 * changes the capacity of their links), then each level with something
 * to look at, most urgent first, since a level's new rates change the
 * capacity of the levels below it on their links (qos_set_rate marks
 * them).
 */
void lsim_lk_qos_settle(struct lsim_net *net)
{
	lsim_time now = lsim_now(net->eng);
	for (int32_t i = 0; i < net->n_dirty; i++)
		net->links[net->dirty[i]].dirty = false;
	net->n_dirty = 0;
	net->theta_gone = INFINITY;
	buckets_update(net, now);
	net->st.recomputations++;
	for (int q = 0; q < LSIM_QOS_LEVELS; q++)
		if (net->qn[q] > 0 || net->tg[q] != INFINITY)
			qsolve_level(net, q, now);
	buckets_schedule(net, now);
}
