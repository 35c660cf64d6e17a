/*
 * test_collective.c - unit tests of the NCCL collective model
 * (sim/cluster/collective.h) against times computed by hand from NCCL's tuning
 * constants: rings of 2, 4 and 8 GPUs on NVSwitch, pairs behind PCIe
 * switches (all-reduce and the all-to-all that contends on the switch
 * uplinks), peer-to-peer off (through host memory), NVLink bridges in
 * pairs, the tree/ring switch point; the profile keys the model reads;
 * and the table backend at TP 2, whose iteration adds two all-reduces per
 * layer to the table's kernels (or the measured allreduce.csv's times).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster/collective.h"
#include "serving/perf.h"

static void assert_us(double got_s, double want_us)
{
	double want = want_us * 1e-6;
	if (!(fabs(got_s - want) <= 1e-9 * fabs(want) + 1e-12))
		fail_msg("got %.6f us, want %.6f us", got_s * 1e6, want_us);
}

/* An A100 node: 12 NVLinks at NCCL's 20 GB/s, Ampere row, LL128 on. */
static struct lsim_coll_topo a100_nvswitch(void)
{
	return (struct lsim_coll_topo){
		.fabric = LSIM_FABRIC_NVSWITCH, .link_bw = 240e9, .links = 12, .pcie_bw = 24e9,
		.gpus_per_switch = 2, .p2p = true, .arch = 1, .ll128 = true,
	};
}

/* A PCIe Gen4 box: NCCL's 24 GB/s a GPU, two GPUs per switch. */
static struct lsim_coll_topo pcie_gen4(bool p2p)
{
	return (struct lsim_coll_topo){
		.fabric = LSIM_FABRIC_PCIE, .pcie_bw = 24e9, .gpus_per_switch = 2, .p2p = p2p,
		.arch = 1, .ll128 = true,
	};
}

static struct lsim_coll_est est(const struct lsim_coll_topo *t, enum lsim_coll_op op, int n,
				double bytes)
{
	struct lsim_coll_est e;
	assert_int_equal(lsim_coll_time(t, op, n, bytes, &e), 0);
	return e;
}

/*
 * NVSwitch: the search fills 240 GB/s with 6 channels of 40 GB/s, doubled
 * to 12 of 20; the ring's bus bandwidth is 240 GB/s.
 */
static void test_nvswitch_rings(void **state)
{
	(void)state;
	struct lsim_coll_topo t = a100_nvswitch();
	/* 8 GPUs, 64 MiB: ring Simple, 8.4 + 14 x 3.4 = 56 us and
	 * 240 x 8/14 GB/s; LL128 (40.6 us, 220.8 x 8/14) is slower */
	struct lsim_coll_est e = est(&t, LSIM_COLL_ALLREDUCE, 8, 67108864.0);
	assert_int_equal(e.algo, LSIM_COLL_RING);
	assert_int_equal(e.proto, LSIM_PROTO_SIMPLE);
	assert_int_equal(e.channels, 12);
	assert_int_equal(e.comm_channels, 24);
	assert_int_equal(e.run_channels, 24);
	assert_us(e.time_s, 56.0 + 67108864.0 / (240e3 * 8.0 / 14.0));
	assert_true(fabs(e.bus_bw - 240e9) < 1.0);
	/* 2 GPUs, 1 MiB: 8.4 + 2 x 3.4 + 1 MiB / 240 GB/s */
	e = est(&t, LSIM_COLL_ALLREDUCE, 2, 1048576.0);
	assert_int_equal(e.proto, LSIM_PROTO_SIMPLE);
	assert_us(e.time_s, 15.2 + 1048576.0 / 240e3);
	/* 4 GPUs, 2 KiB: ring LL, 6.6 + 6 x 0.6 us, min(87.7, 240 / 4) x 4/6
	 * GB/s over the communicator's 24 channels; 2 KiB is less than 512
	 * threads x 8 B x 4 ranks on one channel, so it runs on 1 of 24 */
	e = est(&t, LSIM_COLL_ALLREDUCE, 4, 2048.0);
	assert_int_equal(e.algo, LSIM_COLL_RING);
	assert_int_equal(e.proto, LSIM_PROTO_LL);
	assert_int_equal(e.comm_channels, 24);
	assert_int_equal(e.run_channels, 1);
	assert_us(e.time_s, 10.2 + 2048.0 / (40e3 / 24.0));
	/* all-gather of 8 x 8 MiB: (n - 1) steps, LL128 at 220.8 x 8/7 */
	e = est(&t, LSIM_COLL_ALLGATHER, 8, 67108864.0);
	assert_us(e.time_s, fmin(14.0 + 7 * 1.9 + 67108864.0 / (220.8e3 * 8.0 / 7.0),
				 8.4 + 7 * 3.4 + 67108864.0 / (240e3 * 8.0 / 7.0)));
	/* send/recv: one LL step's latency, the link's full bandwidth */
	e = est(&t, LSIM_COLL_SENDRECV, 2, 67108864.0);
	assert_us(e.time_s, 7.2 + 67108864.0 / 240e3);
	/* the flows a ring all-reduce moves: 2 (n - 1) / n of the buffer */
	assert_true(lsim_coll_ring_bytes(LSIM_COLL_ALLREDUCE, 4, 1000.0) == 1500.0);
	assert_true(lsim_coll_ring_bytes(LSIM_COLL_ALLGATHER, 4, 1000.0) == 750.0);
}

/*
 * NCCL's channel count by size (enqueue.cc): a ring LL all-reduce of 8
 * GPUs gives each of a channel's 512 threads 8 B x 8 ranks = 64 B, so a
 * channel takes 32 KiB; 5 x 32 KiB runs on 5 of the 24 channels, one byte
 * less on 4. Ring LL: 6.6 + 14 x 0.6 = 15 us at min(87.7, 240 / 4) x 8/14
 * GB/s for all 24 (tree LL: 15.2 us at 58.1 x 0.5 x 0.5, slower).
 */
static void test_channels_by_size(void **state)
{
	(void)state;
	struct lsim_coll_topo t = a100_nvswitch();
	double alg = 60e3 * 8.0 / 14.0; /* bytes per us, all channels */
	struct lsim_coll_est e = est(&t, LSIM_COLL_ALLREDUCE, 8, 163840.0);
	assert_int_equal(e.algo, LSIM_COLL_RING);
	assert_int_equal(e.proto, LSIM_PROTO_LL);
	assert_int_equal(e.run_channels, 5);
	assert_us(e.time_s, 15.0 + 163840.0 / (alg * 5.0 / 24.0));
	e = est(&t, LSIM_COLL_ALLREDUCE, 8, 163839.0);
	assert_int_equal(e.run_channels, 4);
	assert_us(e.time_s, 15.0 + 163839.0 / (alg * 4.0 / 24.0));
	/* from 24 x 32 KiB on, every channel: the tuning model's own time */
	e = est(&t, LSIM_COLL_ALLREDUCE, 8, 786432.0);
	assert_int_equal(e.run_channels, 24);
	/* Simple gives each thread 64 B: 2 GPUs, 1 MiB fills 24 x 32 KiB */
	e = est(&t, LSIM_COLL_ALLREDUCE, 2, 1048576.0);
	assert_int_equal(e.proto, LSIM_PROTO_SIMPLE);
	assert_int_equal(e.run_channels, 24);
	/* PCIe Gen4, 2 GPUs: the search's 2 channels of 12 GB/s, 4 in the
	 * communicator; a 4 KiB ring LL (6.6 + 2 x 1.0 = 8.6 us at 24 / 4 GB/s
	 * on all 4) gives a thread 16 B: one channel of 4 */
	struct lsim_coll_topo p = pcie_gen4(true);
	e = est(&p, LSIM_COLL_ALLREDUCE, 2, 4096.0);
	assert_int_equal(e.proto, LSIM_PROTO_LL);
	assert_int_equal(e.comm_channels, 4);
	assert_int_equal(e.run_channels, 1);
	assert_us(e.time_s, 8.6 + 4096.0 / (6e3 / 4.0));
	/* point to point has no channel tuning here */
	e = est(&t, LSIM_COLL_SENDRECV, 2, 4096.0);
	assert_int_equal(e.run_channels, 0);
}

/*
 * PCIe, 4 GPUs two per switch: the ring 0-1-2-3 crosses each uplink once
 * each way, so the bus is a GPU's 24 GB/s (2 channels of 12).
 */
static void test_pcie_switch_pairs(void **state)
{
	(void)state;
	struct lsim_coll_topo t = pcie_gen4(true);
	struct lsim_coll_est e = est(&t, LSIM_COLL_ALLREDUCE, 4, 67108864.0);
	assert_false(e.nvlink);
	assert_int_equal(e.channels, 2);
	assert_int_equal(e.proto, LSIM_PROTO_SIMPLE);
	/* PCI latencies: 8.4 + 6 x 5.7; 24 x 4/6 = 16 GB/s */
	assert_us(e.time_s, 42.6 + 67108864.0 / 16e3);
	/* all-to-all of 4 MiB a GPU: 1 MiB to each peer; a switch's uplink
	 * carries the 4 flows its two GPUs send across: 6 GB/s each */
	e = est(&t, LSIM_COLL_ALLTOALL, 4, 4194304.0);
	assert_us(e.time_s, 6.6 + 1.0 + 1048576.0 / 6e3);
	/* one GPU per switch: only the GPU's own 3 flows share its link */
	t.gpus_per_switch = 1;
	e = est(&t, LSIM_COLL_ALLTOALL, 4, 4194304.0);
	assert_us(e.time_s, 7.6 + 1048576.0 / 8e3);
}

/* P2P off: both GPUs of a pair under one switch stage through host
 * memory, so the uplink carries both directions' sends: half the bus. */
static void test_host_memory(void **state)
{
	(void)state;
	struct lsim_coll_topo on = pcie_gen4(true), off = pcie_gen4(false);
	struct lsim_coll_est e_on = est(&on, LSIM_COLL_ALLREDUCE, 2, 67108864.0);
	struct lsim_coll_est e_off = est(&off, LSIM_COLL_ALLREDUCE, 2, 67108864.0);
	/* 8.4 + 2 x 5.7 us; 24 GB/s with P2P, 12 through the host */
	assert_us(e_on.time_s, 19.8 + 67108864.0 / 24e3);
	assert_us(e_off.time_s, 19.8 + 67108864.0 / 12e3);
	assert_int_equal(e_off.channels, 1);
}

/* NVLink bridges: 2 GPUs ride the bridge; 4 cross PCIe between pairs. */
static void test_nvlink_pairs(void **state)
{
	(void)state;
	struct lsim_coll_topo t = a100_nvswitch();
	t.fabric = LSIM_FABRIC_NVLINK_PAIRS;
	struct lsim_coll_est e = est(&t, LSIM_COLL_ALLREDUCE, 2, 67108864.0);
	assert_true(e.nvlink);
	assert_us(e.time_s, 15.2 + 67108864.0 / 240e3);
	e = est(&t, LSIM_COLL_ALLREDUCE, 4, 67108864.0);
	assert_false(e.nvlink);
	assert_us(e.time_s, 42.6 + 67108864.0 / 16e3);
}

/*
 * The tree/ring switch point, on a 32-GPU NVSwitch domain of Hopper GPUs
 * (18 links at 20.6 GB/s: 12 channels of 30 GB/s, bus 360). At 4 MiB the
 * tree's LL128 wins: 14 + 62 x 1.25 us, min(360 x .92 x 7/9, 12 x 36.7)
 * x 0.5 x 0.8 (NCCL's correction at 2^16 x 64 B), against ring LL's
 * 6.6 + 62 x 0.6 us at 87.7 x 32/62 GB/s. At 64 MiB the ring's LL128 wins.
 */
static void test_tree_ring_switch(void **state)
{
	(void)state;
	struct lsim_coll_topo t = {
		.fabric = LSIM_FABRIC_NVSWITCH, .link_bw = 18 * 20.6e9, .links = 18,
		.pcie_bw = 48e9, .gpus_per_switch = 2, .p2p = true, .arch = 2, .ll128 = true,
	};
	struct lsim_coll_est e = est(&t, LSIM_COLL_ALLREDUCE, 32, 4194304.0);
	double tree = 91.5 + 4194304.0 / (331.2 * 7.0 / 9.0 * 0.5 * 0.8 * 1e3);
	double ring_ll = 43.8 + 4194304.0 / (87.7 * 32.0 / 62.0 * 1e3);
	assert_true(tree < ring_ll);
	assert_int_equal(e.algo, LSIM_COLL_TREE);
	assert_int_equal(e.proto, LSIM_PROTO_LL128);
	assert_us(e.time_s, tree);
	e = est(&t, LSIM_COLL_ALLREDUCE, 32, 67108864.0);
	assert_int_equal(e.algo, LSIM_COLL_RING);
	assert_int_equal(e.proto, LSIM_PROTO_LL128);
	assert_us(e.time_s, 14.0 + 62 * 1.9 + 67108864.0 / (331.2 * 32.0 / 62.0 * 1e3));
	/* 8 GPUs of the same kind: the ring wins at every size */
	for (double b = 1024.0; b <= 1 << 30; b *= 4.0)
		assert_int_equal(est(&t, LSIM_COLL_ALLREDUCE, 8, b).algo, LSIM_COLL_RING);
}

static void test_bad_groups(void **state)
{
	(void)state;
	struct lsim_coll_topo t = a100_nvswitch();
	struct lsim_coll_est e;
	assert_int_equal(lsim_coll_time(&t, LSIM_COLL_ALLREDUCE, 1, 1.0, &e), LSIM_EINVAL);
	assert_int_equal(lsim_coll_time(&t, LSIM_COLL_ALLREDUCE, 2, -1.0, &e), LSIM_EINVAL);
	t.fabric = LSIM_FABRIC_MESH;
	t.links = 7;
	assert_int_equal(lsim_coll_time(&t, LSIM_COLL_ALLREDUCE, 8, 1.0, &e), 0);
	assert_int_equal(lsim_coll_time(&t, LSIM_COLL_ALLREDUCE, 9, 1.0, &e), LSIM_EINVAL);
	/* a mesh of 2 rides one of its 7 links */
	e = est(&t, LSIM_COLL_ALLREDUCE, 2, 67108864.0);
	assert_true(e.channel_bw * e.channels <= 240e9 / 7 + 1.0);
}

/* The shipped profiles' fabrics, as the model reads them. */
static void test_profiles(void **state)
{
	(void)state;
	char dir[1024];
	const char *root = getenv("LSIM_SOURCE_ROOT");
	snprintf(dir, sizeof dir, "%s/calibrate/profiles", root ? root : ".");
	struct {
		const char *name;
		enum lsim_fabric f;
		double link, pcie;
		bool p2p;
	} want[] = {
		{"A100-80GB-SXM", LSIM_FABRIC_NVSWITCH, 240e9, 24e9, true},
		{"H100-SXM", LSIM_FABRIC_NVSWITCH, 18 * 20.6e9, 48e9, true},
		{"H100-PCIe", LSIM_FABRIC_NVLINK_PAIRS, 12 * 20.6e9, 48e9, true},
		{"A100-80GB-PCIe", LSIM_FABRIC_NVLINK_PAIRS, 240e9, 24e9, true},
		{"RTX-4090", LSIM_FABRIC_PCIE, 0.0, 24e9, false},
		{"RTX-PRO-6000", LSIM_FABRIC_PCIE, 0.0, 48e9, true},
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		struct lsim_gpu_profile g;
		struct lsim_diag d = {0};
		if (lsim_gpu_profile_load(dir, want[i].name, &g, &d) != 0)
			fail_msg("%s: %s", want[i].name, d.msg);
		struct lsim_coll_topo t;
		lsim_coll_topo_from_profile(&g, &t);
		assert_int_equal(t.fabric, want[i].f);
		assert_true(fabs(t.link_bw - want[i].link) < 1.0);
		assert_true(fabs(t.pcie_bw - want[i].pcie) < 1.0);
		assert_int_equal(t.p2p, want[i].p2p);
	}
}

/* ------------------------------------------------------------------ */
/* the table backend at TP 2                                           */
/* ------------------------------------------------------------------ */

struct tmpdir {
	char root[1024];
	char tp[1100];
	char files[8][1200];
	int n_files;
};

static void tmp_write(struct tmpdir *t, const char *name, const char *text)
{
	char path[1200];
	snprintf(path, sizeof path, "%s/%s", t->tp, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	for (int i = 0; i < t->n_files; i++)
		if (!strcmp(t->files[i], path))
			return;
	snprintf(t->files[t->n_files++], sizeof t->files[0], "%s", path);
}

static int tmp_setup(void **state)
{
	struct tmpdir *t = calloc(1, sizeof *t);
	if (!t)
		return -1;
	const char *base = getenv("LSIM_BUILD_ROOT");
	snprintf(t->root, sizeof t->root, "%s/test_collective_XXXXXX", base ? base : ".");
	if (!mkdtemp(t->root))
		return -1;
	snprintf(t->tp, sizeof t->tp, "%s/tp2", t->root);
	if (mkdir(t->tp, 0700) != 0)
		return -1;
	*state = t;
	return 0;
}

static int tmp_teardown(void **state)
{
	struct tmpdir *t = *state;
	for (int i = 0; i < t->n_files; i++)
		unlink(t->files[i]);
	rmdir(t->tp);
	rmdir(t->root);
	free(t);
	return 0;
}

static lsim_time decode_one(const struct lsim_perf *p, int n, int32_t ctx)
{
	int32_t c[64];
	for (int i = 0; i < n; i++)
		c[i] = ctx;
	struct lsim_batch b = {.n_decode = n, .decode_ctx = c};
	return lsim_perf_iter_time(p, &b);
}

static lsim_time prefill(const struct lsim_perf *p, int32_t chunk)
{
	int32_t ctx = 0;
	struct lsim_batch b = {.n_prefill = 1, .prefill_chunk = &chunk, .prefill_ctx = &ctx};
	return lsim_perf_iter_time(p, &b);
}

static struct lsim_perf *table(const struct tmpdir *t, const struct lsim_coll_topo *c)
{
	struct lsim_table_params prm = {
		.tp = 2, .n_layers = 3, .coll = c, .act_bytes = 4096.0 * 2.0,
		.logit_bytes = 1000.0 * 2.0,
	};
	struct lsim_perf *p = NULL;
	struct lsim_diag d = {0};
	if (lsim_perf_table_create(t->root, &prm, &p, &d) != 0)
		fail_msg("%s:%d: %s: %s", d.file, d.line, d.key, d.msg);
	return p;
}

static void test_table_tp2(void **state)
{
	struct tmpdir *t = *state;
	tmp_write(t, "dense.csv",
		  "layer,tokens,time_us\nqkv_proj,1,10\nqkv_proj,100,109\n"
		  "layernorm,1,2\nlayernorm,100,4\n");
	tmp_write(t, "per_sequence.csv", "layer,sequences,time_us\nlm_head,1,100\n");
	tmp_write(t, "attention.csv",
		  "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n"
		  "0,0,1,100,2\n0,0,1,1000,4\n100,0,0,0,20\n");
	/* RTX PRO 6000-like: PCIe Gen5 (NCCL's 48 GB/s: 2 channels of 24) */
	struct lsim_coll_topo c = {
		.fabric = LSIM_FABRIC_PCIE, .pcie_bw = 48e9, .gpus_per_switch = 2, .p2p = true,
		.arch = 2, .ll128 = false,
	};
	struct lsim_perf *bare = table(t, NULL), *p = table(t, &c);
	/*
	 * One decode: one all-reduce of 1 x 4096 x 2 B. Ring LL: 6.6 + 2 x 1.0
	 * us at min(87.7, 48 / 4) x 2/2 = 12 GB/s over the communicator's 4
	 * channels (ring Simple: 19.8 us + ...; tree LL: 8.8 us at 44.16 / 3.8
	 * x 0.5 x 0.7 GB/s). 8192 B give a channel's 512 threads 16 B each:
	 * one channel of 4, 3 GB/s: 8.6 us + 8192 B / 3 GB/s = 11.330667 us,
	 * 11330 ns. Two per layer, three layers, and the embedding's once.
	 * Once too, the all-gather of one sequence's logits, 1000 x 2 B: ring
	 * LL at min(87.7, 48 / 3) x 2/1 = 32 GB/s (an all-gather's n - 1
	 * steps), 6.6 + 1 x 1.0 us; 2000 B leave one channel of 4 (each of
	 * its 512 threads under 8 x 2 B): 7.6 + 2000 / 8e3 us = 7.85 us, 7849 ns
	 * (7849.99..., truncated as every lookup).
	 */
	lsim_time t0 = decode_one(bare, 1, 100);
	assert_int_equal(t0, 3 * (2 * 2 + 10 + 2) * 1000 + 100 * 1000); /* layers + lm_head */
	assert_int_equal(decode_one(p, 1, 100), t0 + (3 * 2 + 1) * 11330 + 7849);
	/* a 100-token prefill: 819200 B by ring Simple, 19.8 us + 819200 /
	 * 48e3 us = 36.866667 us (LL: 8.6 + 68.27) */
	lsim_time t1 = prefill(bare, 100);
	assert_int_equal(prefill(p, 100), t1 + (3 * 2 + 1) * 36866 + 7849);
	/* sixteen decodes: 16 x 8192 B all-reduced by ring LL on all four
	 * channels, 8.6 + 131072 / 12e3 us = 19.522667 us; the logits of 16
	 * sequences, 32000 B, gathered on 3 of the 4 (32000 B < 4 x 8192 B),
	 * 7.6 + 32000 / (32e3 x 3/4) us = 8.933333 us */
	assert_int_equal(decode_one(p, 16, 100), decode_one(bare, 16, 100) + 7 * 19522 + 8933);
	lsim_perf_destroy(p);
	/* on the links: the latency only (the data moves as flows) */
	struct lsim_table_params prm = {
		.tp = 2, .n_layers = 3, .coll = &c, .act_bytes = 8192.0, .coll_on_links = true,
		.logit_bytes = 2000.0,
	};
	struct lsim_diag d = {0};
	assert_int_equal(lsim_perf_table_create(t->root, &prm, &p, &d), 0);
	/* the embedding's all-reduce and the logits' all-gather stay whole */
	assert_int_equal(prefill(p, 100), t1 + 3 * 2 * 19800 + 36866 + 7849);
	/* and each GPU's flow is capped at the model's rate past that
	 * latency, so alone on its links it takes the model's time: the ring
	 * bytes of one all-reduce (2(n-1)/n x S = S at n = 2) over S / algBw,
	 * 48 GB/s for the prefill, 3 GB/s (one LL channel) for one decode */
	assert_true(fabs(lsim_perf_ring_rate_cap(p, 100) - 48e9) < 1e-3);
	assert_true(fabs(lsim_perf_ring_rate_cap(p, 1) - 3e9) < 1e-3);
	lsim_perf_destroy(p);
	p = table(t, &c);
	assert_true(lsim_perf_ring_rate_cap(p, 100) == 0.0); /* not on the links */
	assert_true(lsim_perf_ring_rate_cap(bare, 100) == 0.0);
	lsim_perf_destroy(p);
	/* a measured allreduce.csv takes precedence: 10 us + 100 us per MiB */
	assert_false(lsim_perf_table_has_allreduce(t->root, 2));
	tmp_write(t, "allreduce.csv", "bytes,time_us\n0,10\n1048576,110\n1048576,110\n");
	assert_true(lsim_perf_table_has_allreduce(t->root, 2));
	p = table(t, &c);
	assert_int_equal(decode_one(p, 1, 100), t0 + (3 * 2 + 1) * 10781 + 7849); /* 10.78125 us */
	lsim_perf_destroy(p);
	lsim_perf_destroy(bare);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nvswitch_rings),
		cmocka_unit_test(test_channels_by_size),
		cmocka_unit_test(test_pcie_switch_pairs),
		cmocka_unit_test(test_host_memory),
		cmocka_unit_test(test_nvlink_pairs),
		cmocka_unit_test(test_tree_ring_switch),
		cmocka_unit_test(test_bad_groups),
		cmocka_unit_test(test_profiles),
		cmocka_unit_test_setup_teardown(test_table_tp2, tmp_setup, tmp_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
