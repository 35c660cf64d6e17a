/*
 * collective_cli.c - `llmsim profile collective`: the NCCL collective
 * model (sim/cluster/collective.h) for one hardware profile, either at given
 * sizes or set against a measured table of collective times (Vidur's
 * network profiles: num_workers,devices_per_node,bytes,time_us), with the
 * mean absolute error per group size and, as an option, the measuring
 * harness's host time per call (docs/collectives.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cluster/collective.h"
#include "kernel/config.h"
#include "kernel/csv.h"
#include "cluster/hw.h"

static const char usage_collective[] =
	"usage: llmsim profile collective --gpu NAME [--op OP] [--n N] [--bytes SIZE[,SIZE...]]\n"
	"       llmsim profile collective --gpu NAME --compare TABLE.csv [--op OP]\n"
	"                                 [--harness-us H] [--rows]\n"
	"\n"
	"The time of an NCCL collective among N GPUs of one node of profile NAME\n"
	"(calibrate/profiles/NAME.yaml), from NCCL's tuning model on the profile's\n"
	"fabric: the algorithm and protocol NCCL would pick, the time, the algorithm\n"
	"and bus bandwidths. OP: all_reduce (default), all_gather, reduce_scatter,\n"
	"all_to_all, send_recv (N 2 only). SIZE is whole bytes up to 1 TiB and takes\n"
	"units (64MiB), up to 64 of them; default N 2, SIZE 1MiB.\n"
	"\n"
	"--compare sets the model against a measured table with the columns\n"
	"num_workers,devices_per_node,bytes,time_us (rows whose group spans one\n"
	"node; send_recv: devices_per_node 2) and prints, per group size, the mean\n"
	"absolute error of messages >= 1 MiB and below (OP defaults to send_recv\n"
	"when the file name says so). --harness-us H models the measurement: rank\n"
	"0's kernel time of an eager loop holds a lagging peer's host time per\n"
	"call, so every collective but send/recv is recorded as max(model, H)\n"
	"(default 0: NCCL's time alone; runs never charge it). --rows prints each\n"
	"row (n, bytes, measured_us, model_us, algo, proto, channels) to stderr.\n"
	"The table gives the group and message sizes, so --n and --bytes go without\n"
	"--compare, and --harness-us and --rows with it only.\n";

/* One group size's comparison. */
struct grp {
	int n;
	int rows[2];	/* below 1 MiB, from 1 MiB */
	double err[2];	/* sums of |model - measured| / measured */
	double at_bytes, meas, model; /* the row nearest 64 MiB */
};

#define MAX_GROUPS 16

static int parse_op(const char *s, enum lsim_coll_op *op)
{
	for (int i = 0; i < LSIM_COLL_OP_COUNT; i++)
		if (!strcmp(s, lsim_coll_op_name((enum lsim_coll_op)i))) {
			*op = (enum lsim_coll_op)i;
			return 0;
		}
	fprintf(stderr, "llmsim: --op '%s': write all_reduce, all_gather, reduce_scatter, "
			"all_to_all or send_recv\n", s);
	return LSIM_EXIT_BADINPUT;
}

static int field_num(struct lsim_csv *c, int col, double *v, struct lsim_diag *d)
{
	const char *s = lsim_csv_field_trim(c, col);
	char *end = NULL;
	*v = strtod(s, &end);
	if (!s[0] || *end || !isfinite(*v) || *v < 0)
		return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(c), lsim_csv_line(c), col + 1,
				     lsim_csv_name(c, col), "'%s' is not a number >= 0", s);
	return 0;
}

/*
 * What the measuring harness records (docs/collectives.md, section 5):
 * rank 0's kernel time of a collective launched eagerly, back to back.
 * Its kernel starts when its own host launches it and ends when every
 * rank's kernel has joined, so where rank 0's host runs ahead of a peer's
 * the kernel also holds the peer's host time per call, `harness_s`: the
 * record is max(NCCL's time, harness_s). A send/recv's rank 0 is the
 * sender, whose kernel does not wait for the receiver (NCCL's buffers take
 * the message), so it records NCCL's time. Simulated runs never charge
 * this: vLLM captures its collectives in CUDA graphs.
 */
static double harness_time(enum lsim_coll_op op, double nccl_s, double harness_s)
{
	if (op == LSIM_COLL_SENDRECV || nccl_s >= harness_s)
		return nccl_s;
	return harness_s;
}

static int compare(const struct lsim_coll_topo *t, const char *gpu, const char *path,
		   enum lsim_coll_op op, bool rows, double harness_s, struct lsim_diag *d)
{
	struct lsim_csv *c = NULL;
	int rc = lsim_csv_open(path, &c, d);
	if (rc)
		return rc;
	static const char *const names[] = {"num_workers", "devices_per_node", "bytes", "time_us"};
	int col[4];
	rc = lsim_csv_require(c, names, 4, col, d);
	struct grp g[MAX_GROUPS];
	int ng = 0;
	while (rc == 0) {
		int got = lsim_csv_next(c, d);
		if (got <= 0) {
			rc = got;
			break;
		}
		double v[4];
		for (int k = 0; k < 4 && rc == 0; k++)
			rc = field_num(c, col[k], &v[k], d);
		if (rc)
			break;
		int n = (int)v[0];
		bool one_node = op == LSIM_COLL_SENDRECV ? v[1] == 2 : v[1] == v[0];
		if (!one_node || n < 2 || v[3] <= 0)
			continue;
		int k = 0;
		while (k < ng && g[k].n != n)
			k++;
		if (k == ng) {
			if (ng == MAX_GROUPS) {
				rc = lsim_diag_set(d, LSIM_EFORMAT, path, lsim_csv_line(c), 0,
						   "num_workers", "more than %d group sizes",
						   MAX_GROUPS);
				break;
			}
			memset(&g[ng], 0, sizeof g[ng]);
			g[ng++].n = n;
		}
		struct lsim_coll_est e;
		rc = lsim_coll_time(t, op, op == LSIM_COLL_SENDRECV ? 2 : n, v[2], &e);
		if (rc) {
			lsim_diag_set(d, rc, path, lsim_csv_line(c), 0, "num_workers",
				      "%d GPUs do not fit the profile's fabric (%s)", n,
				      lsim_fabric_name(t->fabric));
			break;
		}
		double meas = v[3] * 1e-6;
		e.time_s = harness_time(op, e.time_s, harness_s);
		if (rows)
			fprintf(stderr, "%d\t%.0f\t%.3f\t%.3f\t%s\t%s\t%d\n", n, v[2], v[3],
				e.time_s * 1e6, lsim_coll_algo_name(e.algo),
				lsim_coll_proto_name(e.proto), e.run_channels);
		int big = v[2] >= 1048576.0;
		g[k].rows[big]++;
		g[k].err[big] += fabs(e.time_s - meas) / meas;
		if (g[k].at_bytes == 0 ||
		    fabs(log(v[2] / 67108864.0)) < fabs(log(g[k].at_bytes / 67108864.0))) {
			g[k].at_bytes = v[2];
			g[k].meas = meas;
			g[k].model = e.time_s;
		}
	}
	lsim_csv_close(c);
	if (rc == 0 && ng == 0)
		rc = lsim_diag_set(d, LSIM_EFORMAT, path, 0, 0, "devices_per_node",
				   "no row of a group within one node");
	if (rc)
		return rc;
	printf("gpu\tfabric\top\tn\trows_ge_1MiB\tmae_ge_1MiB_pct\trows_lt_1MiB\tmae_lt_1MiB_pct"
	       "\tbytes\tmeasured_us\tmodel_us\n");
	for (int k = 0; k < ng; k++) {
		double m0 = g[k].rows[0] ? 100.0 * g[k].err[0] / g[k].rows[0] : NAN;
		double m1 = g[k].rows[1] ? 100.0 * g[k].err[1] / g[k].rows[1] : NAN;
		printf("%s\t%s\t%s\t%d\t%d\t%.1f\t%d\t%.1f\t%.0f\t%.0f\t%.0f\n", gpu,
		       lsim_fabric_name(t->fabric), lsim_coll_op_name(op), g[k].n, g[k].rows[1], m1,
		       g[k].rows[0], m0, g[k].at_bytes, g[k].meas * 1e6, g[k].model * 1e6);
	}
	return 0;
}

int lsim_cli_profile_collective(int argc, char **argv)
{
	const char *gpu = NULL, *cmp = NULL, *sizes = "1MiB";
	bool rows = false;
	double harness_us = 0.0;
	enum lsim_coll_op op = LSIM_COLL_ALLREDUCE;
	bool op_set = false, n_set = false, bytes_set = false, harness_set = false;
	int n = 2;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_collective, stdout);
			return 0;
		} else if (!strcmp(a, "--gpu") && i + 1 < argc) {
			gpu = argv[++i];
		} else if (!strcmp(a, "--harness-us") && i + 1 < argc) {
			char *end = NULL;
			harness_us = strtod(argv[++i], &end);
			harness_set = true;
			if (*end || !isfinite(harness_us) || harness_us < 0 || harness_us > 1e6) {
				fprintf(stderr, "llmsim: --harness-us '%s': write the host's time per "
						"eager collective call in microseconds (0 to 1000000)\n",
					argv[i]);
				return LSIM_EXIT_BADINPUT;
			}
		} else if (!strcmp(a, "--rows")) {
			rows = true;
		} else if (!strcmp(a, "--compare") && i + 1 < argc) {
			cmp = argv[++i];
		} else if (!strcmp(a, "--op") && i + 1 < argc) {
			if (parse_op(argv[++i], &op))
				return LSIM_EXIT_BADINPUT;
			op_set = true;
		} else if (!strcmp(a, "--n") && i + 1 < argc) {
			char *end = NULL;
			long v = strtol(argv[++i], &end, 10);
			if (*end || v < 2 || v > 64) {
				fprintf(stderr, "llmsim: --n '%s': write a group size of 2 to 64 GPUs\n",
					argv[i]);
				return LSIM_EXIT_BADINPUT;
			}
			n = (int)v;
			n_set = true;
		} else if (!strcmp(a, "--bytes") && i + 1 < argc) {
			sizes = argv[++i];
			bytes_set = true;
		} else {
			fprintf(stderr, "llmsim: unexpected argument '%s'\n%s", a, usage_collective);
			return LSIM_EXIT_BADINPUT;
		}
	}
	if (!gpu) {
		fprintf(stderr, "llmsim: profile collective needs --gpu\n%s", usage_collective);
		return LSIM_EXIT_BADINPUT;
	}
	/* each option means something in one mode only */
	if (cmp && (n_set || bytes_set)) {
		fprintf(stderr, "llmsim: --compare takes the group sizes and message sizes "
				"from its table: drop --%s\n", n_set ? "n" : "bytes");
		return LSIM_EXIT_BADINPUT;
	}
	if (!cmp && (harness_set || rows)) {
		fprintf(stderr, "llmsim: --%s applies to --compare only: drop it, or add "
				"--compare TABLE\n", harness_set ? "harness-us" : "rows");
		return LSIM_EXIT_BADINPUT;
	}
	if (!cmp && op == LSIM_COLL_SENDRECV && n != 2) {
		fprintf(stderr, "llmsim: --op send_recv moves data between two GPUs: drop "
				"--n, or write --n 2\n");
		return LSIM_EXIT_BADINPUT;
	}
	struct lsim_diag d = {0};
	struct lsim_gpu_profile g;
	int rc = lsim_gpu_profile_load(NULL, gpu, &g, &d);
	if (rc)
		return lsim_cli_fail(&d, rc);
	struct lsim_coll_topo t;
	lsim_coll_topo_from_profile(&g, &t);
	if (cmp) {
		if (!op_set && strstr(cmp, "send_recv"))
			op = LSIM_COLL_SENDRECV;
		rc = compare(&t, gpu, cmp, op, rows, harness_us * 1e-6, &d);
		return rc ? lsim_cli_fail(&d, rc) : 0;
	}
	struct lsim_coll_est e;
	if (lsim_coll_time(&t, op, n, 0.0, &e) != 0) {
		lsim_diag_set(&d, LSIM_EINVAL, "", 0, 0, "--n",
			      "%d GPUs do not fit %s's fabric (%s)", n, gpu,
			      lsim_fabric_name(t.fabric));
		return lsim_cli_fail(&d, LSIM_EINVAL);
	}
	/* every size is read before the first row is printed: a bad one
	 * leaves no partial table */
	double list[64];
	struct lsim_coll_est est[64];
	int n_list = 0;
	char buf[1024];
	if (snprintf(buf, sizeof buf, "%s", sizes) >= (int)sizeof buf) {
		fprintf(stderr, "llmsim: --bytes: the list is too long (at most %zu characters)\n",
			sizeof buf - 1);
		return LSIM_EXIT_BADINPUT;
	}
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		double bytes;
		char *end = NULL;
		bytes = strtod(tok, &end);
		bool plain = end != tok && *end == '\0' && isfinite(bytes);
		if ((!plain && lsim_units_parse(LSIM_K_BYTES, tok, &bytes, NULL) != 0) ||
		    !(bytes >= 0) || bytes != floor(bytes) || bytes > 0x1p40) {
			fprintf(stderr, "llmsim: --bytes '%s': write a whole number of bytes up to "
					"1 TiB, such as 65536 or 64MiB\n",
				tok);
			return LSIM_EXIT_BADINPUT;
		}
		if (n_list == (int)(sizeof list / sizeof list[0])) {
			fprintf(stderr, "llmsim: --bytes: at most %zu sizes\n",
				sizeof list / sizeof list[0]);
			return LSIM_EXIT_BADINPUT;
		}
		if ((rc = lsim_coll_time(&t, op, n, bytes, &e)) != 0) {
			lsim_diag_set(&d, rc, "", 0, 0, "--bytes", "cannot time %s bytes", tok);
			return lsim_cli_fail(&d, rc);
		}
		est[n_list] = e;
		list[n_list++] = bytes;
	}
	printf("gpu\tfabric\top\tn\tbytes\talgo\tproto\ttime_us\talg_bw_GBps\tbus_bw_GBps\n");
	for (int k = 0; k < n_list; k++) {
		double bytes = list[k];
		e = est[k];
		printf("%s\t%s\t%s\t%d\t%.0f\t%s\t%s\t%.2f\t%.1f\t%.1f\n", gpu,
		       lsim_fabric_name(t.fabric), lsim_coll_op_name(op), n, bytes,
		       lsim_coll_algo_name(e.algo), lsim_coll_proto_name(e.proto), e.time_s * 1e6,
		       e.alg_bw / 1e9, e.bus_bw / 1e9);
	}
	return 0;
}
