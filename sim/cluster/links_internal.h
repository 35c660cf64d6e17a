/*
 * links_internal.h - what links.c (the plain max-min solver, flows,
 * messages, topology) and links_qos.c (traffic classes: the
 * priority-aware solver and token buckets) share: the network's records
 * and the small helpers both use. Private to sim/cluster.
 */
#ifndef LLMSIM_LINKS_INTERNAL_H
#define LLMSIM_LINKS_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "cluster/links.h"

/* A rate within this relative distance of the old one counts as unchanged
 * (recomputation in another order differs by rounding only). */
#define RATE_RTOL 1e-12

/* Flows with a rate this far (relative) below the divergence level are
 * re-solved too: rates computed along different paths through the links
 * differ by rounding, and a flow kept by mistake would keep a wrong rate,
 * while one re-solved needlessly only costs time. */
#define THETA_RTOL 1e-9

/* A hint to fetch what p points to into the cache (flow records are read
 * in an order the hardware cannot guess). */
#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

enum { FLOW_FREE = -1 };

/* A flow crossing a link: which flow, and at which hop of its path. */
struct lane {
	int32_t flow;
	int32_t hop;
};

/* Per flow slot, dense and apart from struct flow: what a recomputation
 * reads of each flow it reaches, besides the path. */
struct fmark {
	uint32_t seen; /* == net->epoch: reached by this recomputation */
	int32_t idx;   /* then its index in the local problem */
	double cap;    /* bytes/ns; 0: none */
	uint64_t recomputed;
};

/* Per link, dense: == net->epoch when reached, and its local index. */
struct lmark {
	uint32_t mark;
	int32_t loc;
};

/* What a recomputation and a rate change read and update comes first. */
struct link {
	double bw;     /* bytes/ns */
	struct lane *lanes;
	int32_t n_lanes;
	bool dirty;
	double rate_sum; /* bytes/ns */
	/* statistics, integrated up to t_last */
	lsim_time t_last;
	double bytes;
	double util_ns;
	lsim_time busy_ns;
	int32_t cap_lanes;
	int32_t n_reserved; /* unfinished flows whose path crosses it */
	lsim_time latency;
	enum lsim_link_kind kind;
	/* > 0: the token bucket of this class (a link of its own, after the
	 * real ones); tokens in bytes as of t_last, refilled at tok_rate
	 * bytes/ns up to burst while its flows take less than that */
	int32_t vcls;
	double tokens, tok_rate, burst;
	double util_sampled; /* util_ns at the last sample */
	lsim_time t_sampled;
	bool watched; /* in the net's watch list */
	/* message queue */
	lsim_time msg_free_at;
	/* the serialization time of the last message size seen: a serving
	 * run's token messages come in a handful of sizes */
	double memo_bytes;
	lsim_time memo_ser;
	double msg_bytes;
	int64_t n_msgs;
	lsim_time msg_busy_ns;
};

/* Four cache lines (the array is aligned to them): the path, which is
 * all a recomputation's search reads (ended by -1 when shorter than
 * LSIM_PATH_MAX); the lane positions; what a rate change updates; the
 * rest. */
struct flow {
	int32_t hop[LSIM_PATH_MAX];
	int32_t pos[LSIM_PATH_MAX]; /* index in links[hop[i]].lanes */
	int32_t n_hops;
	int32_t state; /* FLOW_FREE or enum lsim_flow_state */
	double rate;   /* bytes/ns */
	double left;   /* bytes left as of `last` */
	lsim_time last, finish;
	lsim_event_id ev;
	uint64_t rate_changes;
	_Alignas(64) double bytes;
	lsim_time start;
	uint32_t gen;
	int32_t next_free;
	lsim_flow_done_fn done;
	void *ctx;
	uint64_t arg;
};

struct msg {
	lsim_msg_done_fn done;
	void *ctx;
	uint64_t arg;
	double bytes;
	int32_t hop[LSIM_PATH_MAX];
	int32_t n_hops, cur;
	int32_t next_free;
	uint32_t tag; /* of its delivery event */
	lsim_event_id ev;
};

struct heap_ent {
	double key;
	int32_t link;
};

struct capped {
	double cap;
	int32_t flow;
};

/*
 * The problem one recomputation solves, renumbered: local links 0 .. nL-1
 * and local flows 0 .. nF-1 in the order the search reached them, so that
 * the filling runs on small dense arrays. Sized to the pools.
 */
struct solve {
	/* per local link (cap_links; off cap_links + 1) */
	int32_t *link; /* its id */
	double *rem;   /* capacity left */
	int32_t *nu;   /* flows on it not yet frozen */
	int32_t *off;  /* its flows: fl[off[i] .. off[i + 1]) */
	struct heap_ent *heap;
	/* per local flow (cap_flows; hoff + 1; hop and fl LSIM_PATH_MAX
	 * times cap_flows, room for every lane) */
	int32_t *slot;
	double *old;   /* rate before (INFINITY: fresh) */
	double *rate;  /* new rate */
	bool *frozen;
	int32_t *hoff; /* its links: hop[hoff[i] .. hoff[i + 1]) */
	int32_t *hop;  /* local link ids */
	int32_t *fl;   /* local flow ids, by link (see off) */
	int32_t *changed; /* the flows whose rate moved */
	/* capped[i].cap is flow i's cap (0: none) until the filling packs
	 * the capped flows to the front, sorted by cap */
	struct capped *capped;
	double *w;    /* per local flow: its weight (traffic classes only) */
	double *wsum; /* per local link: weight of its unfrozen flows */
	int32_t n_heap, n_changed;
};

/* A traffic class as the solver holds it. */
struct qclass {
	struct lsim_link_class c;
	double w;
	int32_t lvl;
	int32_t vlink; /* its bucket's link, or -1 */
	lsim_event_id ev; /* the bucket running dry */
};

/* A tenant's class for a kind of flow. */
struct tmap {
	int32_t kind, tenant, cls;
};

/* Per flow slot, with classes: its weight, class and level. */
struct fq {
	double w;
	int32_t cls;
	int32_t lvl;
};

/* Per link, with classes: its active flows per level, and per level what
 * this settle must look at. */
struct lq {
	double freed[LSIM_QOS_LEVELS]; /* rate given up by more urgent flows */
	int32_t nlv[LSIM_QOS_LEVELS];
	/* the link's lanes grouped by level: level q's are
	 * [lend[q - 1], lend[q]) (lend[-1] = 0), so that a level's pass
	 * reads its own flows and the more urgent ones' only */
	int32_t lend[LSIM_QOS_LEVELS];
	uint8_t dmask; /* levels for which the link is in net->qd */
	uint8_t cmask; /* levels whose capacity here changed */
	double cap_min; /* a bucket link: its smaller capacity of this settle */
};

struct lsim_net {
	struct lsim_engine *eng;
	struct link *links;
	int32_t n_links, cap_links;
	struct flow *flows;
	int32_t n_slots, cap_flows, free_flow;
	struct msg *msgs;
	int32_t n_msg_slots, cap_msgs, free_msg;
	int32_t *dirty;
	int32_t n_dirty;
	lsim_event_id settle_ev;
	uint32_t epoch;
	struct fmark *fm; /* cap_flows */
	/* cap_flows: each active flow's rate as the solver sees it, dense so
	 * that a recomputation can tell the flows it keeps from the ones it
	 * re-solves without touching their records; INFINITY while the flow
	 * is fresh (active, not yet given a rate) */
	double *frate;
	struct lmark *lm; /* cap_links */
	struct solve sv;
	/* smallest old rate of the flows that left since the last settle */
	double theta_gone;
	/* lsim_net_sample_active: the links that had flows since its last
	 * call (or whose last sample was not 0), and the time of that call */
	int32_t *watch;
	int32_t n_watch;
	lsim_time t_sample;
	struct lsim_net_stats st;
	/* traffic classes (links_qos.c): none unless qos */
	int32_t n_real; /* links added by lsim_link_add; bucket links follow */
	bool qos;
	struct qclass *cls;
	int32_t n_cls;
	int32_t kind_cls[LSIM_FLOW_KIND_COUNT];
	struct tmap *tmap; /* per tenant classes (lsim_net_map_tenant) */
	int32_t n_tmap;
	bool kind_tenant[LSIM_FLOW_KIND_COUNT]; /* some tmap entry has this kind */
	struct fq *fq; /* cap_flows */
	struct lq *lq; /* cap_links */
	int32_t *qd[LSIM_QOS_LEVELS]; /* dirty links per level, cap_links */
	int32_t qn[LSIM_QOS_LEVELS];
	double tg[LSIM_QOS_LEVELS]; /* smallest rate / weight that left */
};

/* Nanoseconds to move `bytes` at `rate` bytes/ns, rounded up, where a
 * quotient within 1e-6 ns above an integer counts as that integer (so
 * that 1e9 B at 10 B/ns is 1e8 ns, not 1e8 + 1). */
static inline lsim_time xfer_ns(double bytes, double rate)
{
	if (bytes <= 0)
		return 0;
	if (rate <= 0)
		return LSIM_TIME_MAX;
	double x = ceil(bytes / rate - 1e-6);
	if (x <= 0)
		return 0;
	if (x >= 9.0e18)
		return LSIM_TIME_MAX;
	return (lsim_time)x;
}

static inline lsim_time add_time(lsim_time a, lsim_time b)
{
	if (b >= LSIM_TIME_MAX - a)
		return LSIM_TIME_MAX;
	return a + b;
}

/* Integrates a link's statistics up to now. */
static inline void link_advance(struct link *l, lsim_time now)
{
	lsim_time dt = now - l->t_last;
	if (dt <= 0)
		return;
	if (l->vcls) {
		double b = l->tokens + (l->tok_rate - l->rate_sum) * (double)dt;
		l->tokens = b < 0 ? 0 : b > l->burst ? l->burst : b;
	}
	l->bytes += l->rate_sum * (double)dt;
	l->util_ns += l->rate_sum / l->bw * (double)dt;
	if (l->n_lanes > 0)
		l->busy_ns += dt;
	l->t_last = now;
}

static inline void mark_dirty(struct lsim_net *net, int32_t link)
{
	struct link *l = &net->links[link];
	if (l->dirty)
		return;
	l->dirty = true;
	net->dirty[net->n_dirty++] = link;
}

/* A min-heap of local links by key (ties in any order: links with equal
 * shares freeze their flows at the same rate either way). */
static inline void heap_push(struct solve *sv, double key, int32_t link)
{
	struct heap_ent *h = sv->heap;
	int32_t i = sv->n_heap++;
	while (i > 0) {
		int32_t p = (i - 1) / 2;
		if (h[p].key <= key)
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = (struct heap_ent){key, link};
}

/* Takes the top off: the hole it leaves goes down along the smaller
 * children to a leaf, and the last entry goes up from there (fewer
 * comparisons than sifting the last entry down from the root). */
static inline struct heap_ent heap_pop(struct solve *sv)
{
	struct heap_ent *h = sv->heap;
	struct heap_ent top = h[0];
	int32_t n = --sv->n_heap, i = 0;
	struct heap_ent e = h[n];
	for (;;) {
		int32_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && h[c + 1].key < h[c].key)
			c++;
		h[i] = h[c];
		i = c;
	}
	while (i > 0) {
		int32_t p = (i - 1) / 2;
		if (h[p].key <= e.key)
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = e;
	return top;
}

static inline int cmp_capped(const void *a, const void *b)
{
	const struct capped *x = a, *y = b;
	if (x->cap != y->cap)
		return x->cap < y->cap ? -1 : 1;
	return (x->flow > y->flow) - (x->flow < y->flow);
}

/* r if keep, else 0, without a branch (compilers tend to branch on a
 * conditional expression, and here the outcome is a coin toss). */
static inline double masked(double r, bool keep)
{
	uint64_t b;
	memcpy(&b, &r, sizeof b);
	b &= (uint64_t)0 - (uint64_t)keep;
	memcpy(&r, &b, sizeof r);
	return r;
}

/* Adds link id to the local problem if the search has not reached it
 * yet; returns its local index. */
static inline int32_t reach_link(struct lsim_net *net, int32_t id, int32_t *nL)
{
	struct lmark *m = &net->lm[id];
	if (m->mark != net->epoch) {
		m->mark = net->epoch;
		m->loc = (*nL)++;
		net->sv.link[m->loc] = id;
	}
	return m->loc;
}

/* Gives a flow its new rate nr (bytes/ns): bytes left up to now, link sums
 * and statistics, and its completion event moved (links.c). */
void lsim_lk_set_rate(struct lsim_net *net, int32_t slot, double nr,
		      lsim_time now);
/* Schedules the settle event if links are dirty and none is pending. */
void lsim_lk_ensure_settle(struct lsim_net *net);
/* Fixes local flow i of the solve at rate (bytes/ns): its links' capacity
 * left and unfrozen counts lowered, and the flow on the changed list if
 * its rate moved (links.c; the weighted fill of links_qos.c also lowers
 * its links' weight sums). */
void lsim_lk_freeze(struct solve *sv, int32_t i, double rate);
/* lsim_link_add without the check that no bucket link exists yet. */
int lsim_lk_link_add(struct lsim_net *net, enum lsim_link_kind kind, double bw,
		     lsim_time latency, int32_t *id, struct lsim_diag *d);

/* links_qos.c: the settle of a network with classes; the bookkeeping of a
 * flow joining (activate) or leaving (detach) its links; growing the
 * per-link and per-flow class arrays. */
void lsim_lk_qos_settle(struct lsim_net *net);
void lsim_lk_qos_join(struct lsim_net *net, int32_t slot);
void lsim_lk_qos_leave(struct lsim_net *net, int32_t slot);
void lsim_lk_qos_free(struct lsim_net *net);

#endif
