/*
 * collective.h - NCCL collectives inside one node as a model of their own:
 * all-reduce, all-gather, reduce-scatter, all-to-all and send/recv for a
 * group of n GPUs of one hardware profile. The time of one collective in
 * closed form follows NCCL's tuning model (src/graph/tuning.cc: per
 * algorithm and protocol a base latency, a per-hop latency and a bus
 * bandwidth; the fastest of ring and tree, LL, LL128 and Simple wins), on
 * the bandwidth the GPUs' fabric gives the ring (NVSwitch, NVLink bridges
 * in pairs, a full mesh, or PCIe with or without peer-to-peer, through
 * PCIe switches shared by GPU pairs). The same model gives the bytes each
 * GPU sends to each peer, for runs that move collectives as flows on the
 * link model. docs/collectives.md describes the formulas and constants.
 * Pure functions of their arguments; nothing allocates.
 */
#ifndef LLMSIM_COLLECTIVE_H
#define LLMSIM_COLLECTIVE_H

#include <stdbool.h>

#include "cluster/hw.h"

enum lsim_coll_op {
	LSIM_COLL_ALLREDUCE,
	LSIM_COLL_ALLGATHER,
	LSIM_COLL_REDUCESCATTER,
	LSIM_COLL_ALLTOALL,
	LSIM_COLL_SENDRECV, /* one GPU to one other */
	LSIM_COLL_OP_COUNT
};

enum lsim_coll_algo { LSIM_COLL_RING, LSIM_COLL_TREE, LSIM_COLL_P2P };
enum lsim_coll_proto { LSIM_PROTO_LL, LSIM_PROTO_LL128, LSIM_PROTO_SIMPLE };

/* The node as the model sees it; bandwidths per direction, bytes/s. */
struct lsim_coll_topo {
	enum lsim_fabric fabric;
	double link_bw;	     /* one GPU's fast links together, as NCCL counts them */
	int links;	     /* mesh: links per GPU, one to each peer */
	double pcie_bw;	     /* one GPU's PCIe link, as NCCL counts it */
	int gpus_per_switch; /* GPUs behind one PCIe switch (its uplink as fast as a GPU's link) */
	bool p2p;	     /* PCIe peer-to-peer; false: staged through host memory */
	int arch;	     /* NCCL's table row: 0 Volta, 1 Ampere, 2 Hopper and later */
	bool ll128;	     /* NCCL enables LL128 (NVLink paths on SM 7.0, 8.0, 9.0) */
	int max_channels;    /* ring channels NCCL may build: 16; 32 from SM 10.0 (0: 16) */
};

/* The topology of one node of profile g's GPUs (its gpu_fabric,
 * nvlink_links, compute_capability, gpu_p2p and pcie_switch_gpus). */
void lsim_coll_topo_from_profile(const struct lsim_gpu_profile *g,
				 struct lsim_coll_topo *t);

/* One collective's estimate. */
struct lsim_coll_est {
	double time_s;	   /* latency + bytes / alg_bw */
	double latency_s;  /* the chosen algorithm and protocol's latency */
	double alg_bw;	   /* bytes/s of the collective's size */
	double bus_bw;	   /* alg_bw x the nccl-tests bus factor */
	enum lsim_coll_algo algo;
	enum lsim_coll_proto proto;
	bool nvlink;	   /* every hop on NVLink (NCCL's hardware class) */
	int channels;	   /* NCCL's channels and the bandwidth of each */
	double channel_bw;
	int comm_channels; /* the communicator's channels: the search's doubled */
	int run_channels;  /* those this size runs on (NCCL drops channels, then */
	int run_threads;   /* threads, of small buffers); 0 for point to point */
};

/*
 * The time of one collective of `bytes` (the nccl-tests size: the buffer
 * each GPU holds for all-reduce, the gathered or scattered total for
 * all-gather and reduce-scatter, each GPU's whole send buffer for
 * all-to-all, the message for send/recv) among GPUs 0 .. n-1 of one node.
 * n >= 2 (send/recv: between GPUs 0 and n-1). Returns 0, or LSIM_EINVAL
 * for n < 2, bytes < 0, or a group larger than the fabric allows (more
 * GPUs than mesh links + 1).
 */
int lsim_coll_time(const struct lsim_coll_topo *t, enum lsim_coll_op op, int n,
		   double bytes, struct lsim_coll_est *out);

/* Bytes GPU i sends to GPU (i + 1) % n in a ring collective of `bytes`
 * (all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n of it):
 * what a run moves as one flow per GPU on the link model. */
double lsim_coll_ring_bytes(enum lsim_coll_op op, int n, double bytes);

/* The rate that moves `bytes` of a collective timed at time_s, of which
 * latency_s is latency, in the rest: the cap of a flow carrying them on
 * the link model, so that alone on its links it takes that time; 0 where
 * no time is left. */
double lsim_coll_rate(double bytes, double time_s, double latency_s);

/* lsim_coll_rate of the ring bytes (lsim_coll_ring_bytes) of a ring
 * collective of `bytes` timed as *e: the cap of each GPU's ring flow. */
double lsim_coll_ring_cap(enum lsim_coll_op op, int n, double bytes,
			  const struct lsim_coll_est *e);

/* The nccl-tests bus-bandwidth factor: busBw = algBw x factor. */
double lsim_coll_bus_factor(enum lsim_coll_op op, int n);

const char *lsim_coll_op_name(enum lsim_coll_op op);
const char *lsim_coll_algo_name(enum lsim_coll_algo a);
const char *lsim_coll_proto_name(enum lsim_coll_proto p);
const char *lsim_fabric_name(enum lsim_fabric f);

#endif
