/*
 * fuzz_perf_table.c - libFuzzer target for the table perf backend's CSV
 * reading (lsim_perf_table_create). A scratch profile folder holds
 * tp1/dense.csv, tp1/attention.csv and tp1/per_sequence.csv: the input's
 * first byte picks the file that gets the rest of the input ('d' dense,
 * 'a' attention, 's' per_sequence; any other byte by its value mod 3),
 * the other two get small valid copies. A created model is asked for a
 * few iteration times (which must be > 0), then destroyed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "serving/perf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char valid_dense[] = "layer,tokens,time_us\n"
				  "embedding,1,1\n"
				  "embedding,100,2\n"
				  "final_layernorm,1,1\n"
				  "final_layernorm,100,1\n"
				  "layernorm,1,2\n"
				  "layernorm,100,4\n"
				  "qkv_proj,1,10\n"
				  "qkv_proj,100,109\n";

static const char valid_seq[] = "layer,sequences,time_us\n"
				"lm_head,1,100\n"
				"lm_head,10,190\n"
				"sampler,1,5\n";

static const char valid_attn[] = "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n"
				 "0,0,1,100,2\n"
				 "0,0,1,1000,4\n"
				 "0,0,10,100,6\n"
				 "0,0,10,1000,24\n"
				 "100,0,0,0,20\n"
				 "100,1000,0,0,40\n"
				 "100,0,1,100,22\n"
				 "100,0,1,1000,24\n"
				 "100,1000,1,100,42\n"
				 "100,1000,1,1000,44\n"
				 "100,0,10,100,26\n"
				 "100,0,10,1000,44\n"
				 "100,1000,10,100,46\n"
				 "100,1000,10,1000,64\n";

static const char *const names[3] = {"tp1/dense.csv", "tp1/attention.csv",
				     "tp1/per_sequence.csv"};
static const char *const valid[3] = {valid_dense, valid_attn, valid_seq};

/* A few batches inside, between and beyond the grid points. */
static void probe(const struct lsim_perf *p)
{
	static const int32_t chunk[2] = {1, 5000};
	static const int32_t pctx[2] = {0, 300000};
	static const int32_t dctx[3] = {1, 550, 1000000};
	const struct lsim_batch b[4] = {
		{.n_prefill = 1, .prefill_chunk = chunk, .prefill_ctx = pctx},
		{.n_decode = 1, .decode_ctx = dctx},
		{.n_prefill = 2, .prefill_chunk = chunk, .prefill_ctx = pctx,
		 .n_decode = 3, .decode_ctx = dctx},
		{.n_decode = 3, .decode_ctx = dctx},
	};
	for (int i = 0; i < 4; i++)
		if (lsim_perf_iter_time(p, &b[i]) <= 0)
			abort(); /* the interface promises > 0 for a non-empty batch */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	int pick = data[0] == 'd' ? 0 : data[0] == 'a' ? 1 : data[0] == 's' ? 2 : data[0] % 3;
	char path[512];
	for (int i = 0; i < 3; i++) {
		if (i == pick)
			lsim_fuzz_write(names[i], data + 1, size - 1, path, sizeof path);
		else
			lsim_fuzz_write(names[i], valid[i], strlen(valid[i]), path, sizeof path);
	}
	struct lsim_table_params prm = {.tp = 1, .n_layers = 2, .cpu_overhead_s = 0.0};
	struct lsim_diag d;
	memset(&d, 0, sizeof d);
	struct lsim_perf *p = NULL;
	int rc = lsim_perf_table_create(lsim_fuzz_dir(), &prm, &p, &d);
	if (rc == 0)
		probe(p);
	else
		lsim_fuzz_check_error(rc, &d);
	lsim_perf_destroy(p);
	return 0;
}
