/*
 * collective.c - the NCCL collective model of collective.h: the ring's
 * bandwidth from the node's fabric, NCCL's channel search over it, and
 * NCCL's tuning model (latencies and bandwidth refinements per algorithm
 * and protocol) to pick the fastest way, then the channels NCCL runs it
 * on at that size, to time it. The constants are NCCL's
 * (src/graph/tuning.cc, search.cc, connect.cc, topo.h, xml.cc,
 * src/enqueue.cc and src/include/device.h of NCCL 2.18-
 * 2.19, the version PyTorch 2.1-2.2 and vLLM of 2024 ship), re-typed
 * here with their meaning; docs/collectives.md lists them.
 */
#include <math.h>
#include <string.h>

#include "cluster/collective.h"

/* NCCL's units: latencies in microseconds, bandwidths in GB/s (1e9 B/s). */
#define US 1e-6
#define GBS 1e9

enum { HW_NVLINK, HW_PCI };
enum { A_TREE, A_RING };
enum { P_LL, P_LL128, P_SIMPLE };

/* Base latency of a collective per algorithm and protocol (tuning.cc
 * baseLat). */
static const double base_lat[2][3] = {
	{6.8, 14.0, 0.0}, /* tree: LL, LL128, Simple */
	{6.6, 14.0, 8.4}, /* ring */
};

/* Latency per hop (ring: per step; tree: per level, twice), by the
 * hardware between the GPUs (tuning.cc hwLat, NVLink and PCI rows). */
static const double hw_lat[2][2][3] = {
	{{0.6, 1.25, 28.0}, {0.6, 1.9, 3.4}}, /* NVLink: tree, ring */
	{{1.0, 1.9, 28.0}, {1.0, 2.5, 5.7}},  /* PCI */
};

/* Single-node bandwidth caps by architecture row (Volta, Ampere, Hopper):
 * LL's total (llMaxBws), and per channel ring LL128, tree, tree LL128. */
static const double ll_max_bw[3] = {39.0, 87.7, 87.7};
static const double ring_ll128_ch_bw[3] = {20.0, 20.0, 36.7};
static const double tree_ch_bw[3] = {26.5, 24.0, 38.7};
static const double tree_ll128_ch_bw[3] = {20.0, 20.0, 36.7};

/* Tree bandwidth correction for medium sizes, by protocol, at
 * log2(bytes / 64) = 0 .. 22 (tuning.cc treeCorrectionFactor). */
static const double tree_correction[3][23] = {
	{1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0,
	 1.0, 1.0},
	{1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9,
	 1.0, 1.0},
	{.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9,
	 .9},
};

/* The per-channel speeds NCCL's search tries, fastest first (search.cc
 * speedArrayIntra; sm90SpeedArrayIntra from SM 9.0 on). */
static const double speeds_sm80[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0,
				     9.0,  7.0,	 6.0,  5.0,  4.0,  3.0};
static const double speeds_sm90[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0,
				     15.0, 12.0, 11.0, 6.0,  3.0};
/* Most channels a ring graph may have: MAXCHANNELS / 2, 16 in NCCL 2.19;
 * the newer NCCL that knows SM 10.0 defines MAXCHANNELS 64 (32 rings). */
#define MAX_CHANNELS 16

/* NCCL's bandwidth of one NVLink per direction by SM version (topo.h
 * SM60_NVLINK_BW ... SM100_NVLINK_BW), GB/s; 0 where NCCL has none. */
static double nccl_nvlink_bw(int cc10)
{
	switch (cc10) {
	case 60: return 18.0;
	case 70: return 20.0;
	case 80: return 20.0;
	case 86:
	case 87:
	case 89: return 12.0;
	case 90: return 20.6;
	case 100: return 40.1;
	default: return 0.0;
	}
}

void lsim_coll_topo_from_profile(const struct lsim_gpu_profile *g,
				 struct lsim_coll_topo *t)
{
	memset(t, 0, sizeof *t);
	int cc10 = (int)lround(g->compute_capability * 10.0);
	enum lsim_fabric f = g->fabric;
	if (g->nvlink_bw <= 0.0 && f != LSIM_FABRIC_PCIE)
		f = LSIM_FABRIC_PCIE;
	t->fabric = f;
	t->links = g->nvlink_links;
	double per = nccl_nvlink_bw(cc10) * GBS;
	if (f != LSIM_FABRIC_PCIE) {
		/* without NCCL's figure for the generation (or the link
		 * count): 0.8 of the datasheet, NCCL's ratio for SM 7.0-10.0 */
		t->link_bw = per > 0.0 && g->nvlink_links > 0 ? per * g->nvlink_links
							      : 0.8 * g->nvlink_bw;
		if (t->links < 1)
			t->links = 1;
	}
	/* NCCL counts a PCIe lane at 0.75 of its signalling rate (xml.cc
	 * kvDictPciGen: 12 Gb/s a Gen4 lane): the raw x16 figure (128b/130b)
	 * x 130/128 x 0.75 (Gen4 x16: 24 GB/s, Gen5: 48); the signalling
	 * rate x lanes is a whole number of GB/s (16, 32, 64) that the
	 * profile's rounded raw figure (63 GB/s) misses by a little */
	double signal = g->pcie_bw * (130.0 / 128.0) / GBS;
	if (signal >= 1.0)
		signal = round(signal);
	t->pcie_bw = 0.75 * signal * GBS;
	t->gpus_per_switch = g->pcie_switch_gpus > 0 ? g->pcie_switch_gpus : 1;
	t->p2p = g->gpu_p2p;
	t->arch = cc10 > 0 && cc10 < 80 ? 0 : cc10 > 0 && cc10 < 90 ? 1 : 2;
	t->ll128 = cc10 == 70 || cc10 == 80 || cc10 == 90;
	t->max_channels = cc10 >= 100 ? 2 * MAX_CHANNELS : MAX_CHANNELS;
}

/* ---- the ring's bandwidth on the fabric ---- */

/* Resources a hop loads, per direction: GPU links out and in, switch
 * uplinks up and down, NVLink bridges and mesh links (by sender). */
#define GMAX 64
struct load {
	int fast_out[GMAX], fast_in[GMAX];
	int pcie_up[GMAX], pcie_down[GMAX];
	int sw_up[GMAX], sw_down[GMAX];
};

static bool same_pair(int a, int b)
{
	return a / 2 == b / 2;
}

/* Whether a hop from a to b rides NVLink (or a mesh link). */
static bool fast_hop(const struct lsim_coll_topo *t, int a, int b)
{
	switch (t->fabric) {
	case LSIM_FABRIC_NVSWITCH:
	case LSIM_FABRIC_MESH: return true;
	case LSIM_FABRIC_NVLINK_PAIRS: return same_pair(a, b);
	default: return false;
	}
}

static void add_hop(const struct lsim_coll_topo *t, struct load *l, int a, int b)
{
	if (fast_hop(t, a, b)) {
		l->fast_out[a]++;
		l->fast_in[b]++;
		return;
	}
	l->pcie_up[a]++;
	l->pcie_down[b]++;
	int sa = a / t->gpus_per_switch, sb = b / t->gpus_per_switch;
	if (sa != sb || !t->p2p) {
		l->sw_up[sa]++;
		l->sw_down[sb]++;
	}
}

/* The most bytes/s every hop of the pattern can move at once, each hop
 * an equal share of the busiest resource it crosses. */
static double pattern_bw(const struct lsim_coll_topo *t, const struct load *l, int n)
{
	double fast = t->fabric == LSIM_FABRIC_MESH ? t->link_bw / t->links : t->link_bw;
	double bw = INFINITY;
	for (int i = 0; i < n; i++) {
		int k = l->fast_out[i] > l->fast_in[i] ? l->fast_out[i] : l->fast_in[i];
		if (k > 0 && fast / k < bw)
			bw = fast / k;
		k = l->pcie_up[i] > l->pcie_down[i] ? l->pcie_up[i] : l->pcie_down[i];
		if (k > 0 && t->pcie_bw / k < bw)
			bw = t->pcie_bw / k;
		/* a switch's uplink is as fast as a GPU's link (same width) */
		k = l->sw_up[i] > l->sw_down[i] ? l->sw_up[i] : l->sw_down[i];
		if (k > 0 && t->pcie_bw / k < bw)
			bw = t->pcie_bw / k;
	}
	return bw;
}

/* The ring 0 -> 1 -> ... -> n-1 -> 0 (pairs adjacent, as NCCL's search
 * orders them): its bandwidth per direction, and whether every hop is
 * NVLink. A full mesh carries min(n - 1, links) rings on disjoint links. */
static double ring_bw(const struct lsim_coll_topo *t, int n, bool *nvlink)
{
	struct load l;
	memset(&l, 0, sizeof l);
	*nvlink = true;
	for (int i = 0; i < n; i++) {
		int j = (i + 1) % n;
		add_hop(t, &l, i, j);
		if (!fast_hop(t, i, j))
			*nvlink = false;
	}
	double bw = pattern_bw(t, &l, n);
	if (t->fabric == LSIM_FABRIC_MESH)
		bw *= n - 1 < t->links ? n - 1 : t->links;
	return bw;
}

/* NCCL's search: the fastest per-channel speed whose channels fill the
 * most of total (at most MAX_CHANNELS of them), then channels doubled at
 * half the speed when a channel is 25 GB/s or more. */
static void channel_search(double total_gbs, int arch, int max_ch, int *n_ch, double *speed)
{
	const double *sp = arch >= 2 ? speeds_sm90 : speeds_sm80;
	int ns = arch >= 2 ? (int)(sizeof speeds_sm90 / sizeof *sp)
			   : (int)(sizeof speeds_sm80 / sizeof *sp);
	double best = 0.0;
	*n_ch = 1;
	*speed = sp[ns - 1] < total_gbs ? sp[ns - 1] : total_gbs;
	for (int i = 0; i < ns; i++) {
		if (sp[i] > total_gbs * (1.0 + 1e-9))
			continue;
		int c = (int)floor(total_gbs / sp[i] + 1e-9);
		if (c > max_ch)
			c = max_ch;
		if (c * sp[i] > best * (1.0 + 1e-9)) {
			best = c * sp[i];
			*n_ch = c;
			*speed = sp[i];
		}
	}
	if (best > 0.0 && *speed >= 25.0) {
		int dup = 2 * *n_ch < max_ch ? 2 * *n_ch : max_ch;
		*speed /= (dup + *n_ch - 1) / *n_ch;
		*n_ch = dup;
	}
}

/* Threads per channel NCCL launches at most (device.h: NCCL_LL_MAX_NTHREADS
 * 512, NCCL_LL128_MAX_NTHREADS 640, NCCL_SIMPLE_MAX_NTHREADS 512; tuning.cc
 * gives the ring's Simple 256 when the ring's bandwidth is at most PCI_BW,
 * 12 GB/s). */
static int nthreads_max(enum lsim_coll_proto p, enum lsim_coll_algo a, double bus_gbs)
{
	if (p == LSIM_PROTO_LL128)
		return 640;
	if (p == LSIM_PROTO_SIMPLE && a == LSIM_COLL_RING && bus_gbs <= 12.0 + 1e-9)
		return 256;
	return 512;
}

/* Bytes of work each thread must have before NCCL adds channels
 * (device.h NCCL_LL_THREAD_THRESHOLD 8, NCCL_LL128_THREAD_THRESHOLD 8,
 * NCCL_SIMPLE_THREAD_THRESHOLD 64; tuning.cc multiplies the ring's LL one
 * by the number of ranks). */
static double thread_threshold(enum lsim_coll_proto p, enum lsim_coll_algo a, int n)
{
	if (p == LSIM_PROTO_SIMPLE)
		return 64.0;
	if (p == LSIM_PROTO_LL && a == LSIM_COLL_RING)
		return 8.0 * n;
	return 8.0;
}

static int log2i(double v)
{
	int l = 0;
	for (double x = floor(v); x >= 2.0; x = floor(x / 2.0))
		l++;
	return l;
}

double lsim_coll_bus_factor(enum lsim_coll_op op, int n)
{
	if (n < 2)
		return 0.0;
	switch (op) {
	case LSIM_COLL_ALLREDUCE: return 2.0 * (n - 1.0) / n;
	case LSIM_COLL_ALLGATHER:
	case LSIM_COLL_REDUCESCATTER:
	case LSIM_COLL_ALLTOALL: return (n - 1.0) / n;
	default: return 1.0;
	}
}

double lsim_coll_ring_bytes(enum lsim_coll_op op, int n, double bytes)
{
	if (n < 2 || op == LSIM_COLL_ALLTOALL || op == LSIM_COLL_SENDRECV)
		return op == LSIM_COLL_SENDRECV ? bytes : 0.0;
	return lsim_coll_bus_factor(op, n) * bytes;
}

double lsim_coll_rate(double bytes, double time_s, double latency_s)
{
	return time_s > latency_s ? bytes / (time_s - latency_s) : 0.0;
}

double lsim_coll_ring_cap(enum lsim_coll_op op, int n, double bytes,
			  const struct lsim_coll_est *e)
{
	return lsim_coll_rate(lsim_coll_ring_bytes(op, n, bytes), e->time_s, e->latency_s);
}

/* Point to point (send/recv, and all-to-all as n - 1 of them at once):
 * NCCL has no tuning entry; one ring step's LL latency and the full
 * bandwidth of the busiest resource the pattern crosses. */
static void p2p_time(const struct lsim_coll_topo *t, enum lsim_coll_op op, int n,
		     double bytes, struct lsim_coll_est *e)
{
	struct load l;
	memset(&l, 0, sizeof l);
	bool nvl = true;
	double per_flow = bytes;
	if (op == LSIM_COLL_SENDRECV) {
		add_hop(t, &l, 0, n - 1);
		nvl = fast_hop(t, 0, n - 1);
	} else {
		per_flow = bytes / n;
		for (int i = 0; i < n; i++)
			for (int j = 0; j < n; j++)
				if (i != j) {
					add_hop(t, &l, i, j);
					nvl = nvl && fast_hop(t, i, j);
				}
	}
	double bw = pattern_bw(t, &l, n); /* each flow's share */
	int hw = nvl ? HW_NVLINK : HW_PCI;
	e->algo = LSIM_COLL_P2P;
	e->proto = LSIM_PROTO_SIMPLE;
	e->nvlink = nvl;
	e->latency_s = (base_lat[A_RING][P_LL] + hw_lat[hw][A_RING][P_LL]) * US;
	double t_bytes = per_flow / bw;
	e->time_s = e->latency_s + t_bytes;
	e->alg_bw = t_bytes > 0.0 ? bytes / t_bytes : bw * (op == LSIM_COLL_SENDRECV ? 1 : n);
	e->bus_bw = e->alg_bw * lsim_coll_bus_factor(op, n);
	e->channels = 0;
	e->channel_bw = 0.0;
}

int lsim_coll_time(const struct lsim_coll_topo *t, enum lsim_coll_op op, int n,
		   double bytes, struct lsim_coll_est *out)
{
	memset(out, 0, sizeof *out);
	if (!t || n < 2 || n > GMAX || !(bytes >= 0.0) || !isfinite(bytes) ||
	    (unsigned)op >= LSIM_COLL_OP_COUNT || t->gpus_per_switch < 1 ||
	    (t->fabric == LSIM_FABRIC_MESH && n > t->links + 1) ||
	    (t->fabric != LSIM_FABRIC_PCIE && !(t->link_bw > 0.0)) || !(t->pcie_bw > 0.0))
		return LSIM_EINVAL;
	if (op == LSIM_COLL_SENDRECV || op == LSIM_COLL_ALLTOALL) {
		p2p_time(t, op, n, bytes, out);
		return 0;
	}
	bool nvl;
	double total = ring_bw(t, n, &nvl) / GBS;
	int nch;
	double speed;
	int mch = t->max_channels > 0 ? t->max_channels : MAX_CHANNELS;
	channel_search(total, t->arch, mch, &nch, &speed);
	double bus = nch * speed;
	int hw = nvl ? HW_NVLINK : HW_PCI;
	int nsteps = op == LSIM_COLL_ALLREDUCE ? 2 * (n - 1) : n - 1;
	int ar = op == LSIM_COLL_ALLREDUCE;
	double llmax = ll_max_bw[t->arch];
	int lsz = log2i(bytes / 64.0);
	bool found = false;
	for (int a = A_TREE; a <= A_RING; a++) {
		if (a == A_TREE && !ar)
			continue;
		for (int p = P_LL; p <= P_SIMPLE; p++) {
			if (p == P_LL128 && !(t->ll128 && nvl))
				continue;
			double bw = bus;
			if (a == A_RING && p == P_LL)
				bw = fmin(llmax, bw * (ar ? 0.25 : 1.0 / 3.0));
			if (a == A_RING && p == P_LL128)
				bw = fmin(bw * 0.92, nch * ring_ll128_ch_bw[t->arch]);
			if (a == A_TREE) {
				bw = fmin(bw * 0.92, nch * tree_ch_bw[t->arch]);
				if (p == P_LL)
					bw = fmin(bw / 3.8, llmax);
				if (p == P_LL128)
					bw = fmin(bw * 7.0 / 9.0, nch * tree_ll128_ch_bw[t->arch]);
			}
			double alg = bw * (a == A_RING ? (double)n / nsteps : 0.5);
			if (a == A_TREE && lsz < 23)
				alg *= tree_correction[p][lsz];
			double lat = base_lat[a][p] +
				     (a == A_RING ? nsteps : 2 * (n - 1)) * hw_lat[hw][a][p];
			double time = lat * US + bytes / (alg * GBS);
			if (!found || time < out->time_s) {
				found = true;
				out->time_s = time;
				out->latency_s = lat * US;
				out->alg_bw = alg * GBS;
				out->algo = a == A_RING ? LSIM_COLL_RING : LSIM_COLL_TREE;
				out->proto = (enum lsim_coll_proto)p;
			}
		}
	}
	/* NCCL runs the chosen way on fewer channels (and threads) when the
	 * buffer is too small to give each thread its share of work: the
	 * communicator's channels are the search's doubled (connect.cc), and
	 * enqueue.cc drops one at a time while bytes < channels x threads x
	 * the protocol's per-thread threshold, then halves the threads of the
	 * last one. Its tuning model chose with all of them; the time is the
	 * bandwidth those channels carry (NCCL's model counts bandwidth per
	 * channel; fewer threads of a channel, each with less than the
	 * threshold to move, are not slower for it). */
	int comm_ch = 2 * nch < 2 * mch ? 2 * nch : 2 * mch;
	int nt_max = nthreads_max(out->proto, out->algo, bus);
	double thr = thread_threshold(out->proto, out->algo, n);
	int nc = comm_ch, nt = nt_max;
	while (bytes < (double)nc * nt * thr) {
		if (nc >= 2)
			nc--;
		else if (nt % 128 == 0)
			nt /= 2;
		else
			break;
	}
	double share = (double)nc / comm_ch;
	if (share < 1.0) {
		out->alg_bw *= share;
		out->time_s = out->latency_s + bytes / out->alg_bw;
	}
	out->bus_bw = out->alg_bw * lsim_coll_bus_factor(op, n);
	out->nvlink = nvl;
	out->channels = nch;
	out->channel_bw = speed * GBS;
	out->comm_channels = comm_ch;
	out->run_channels = nc;
	out->run_threads = nt;
	return 0;
}

const char *lsim_coll_op_name(enum lsim_coll_op op)
{
	static const char *const names[] = {"all_reduce", "all_gather", "reduce_scatter",
					    "all_to_all", "send_recv"};
	return (unsigned)op < LSIM_COLL_OP_COUNT ? names[op] : "?";
}

const char *lsim_coll_algo_name(enum lsim_coll_algo a)
{
	return a == LSIM_COLL_RING ? "ring" : a == LSIM_COLL_TREE ? "tree" : "p2p";
}

const char *lsim_coll_proto_name(enum lsim_coll_proto p)
{
	return p == LSIM_PROTO_LL ? "LL" : p == LSIM_PROTO_LL128 ? "LL128" : "Simple";
}

const char *lsim_fabric_name(enum lsim_fabric f)
{
	static const char *const names[] = {"nvswitch", "nvlink_pairs", "mesh", "pcie"};
	return (unsigned)f < LSIM_FABRIC_COUNT ? names[f] : "?";
}
