/*
 * fuzz_perf_table.c - libFuzzer target for the table perf backend's CSV
 * reading (lsim_perf_table_create). A scratch profile folder holds
 * tp1/dense.csv, tp1/attention.csv and tp1/per_sequence.csv: the input's
 * first byte picks the file that gets the rest of the input ('d' dense,
 * 'a' attention, 's' per_sequence; any other byte by its value mod 3),
 * the other two are the small valid table of fuzz_common.h. A created model is asked for a
 * few iteration times (which must be > 0), then destroyed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "serving/perf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
	lsim_fuzz_write_table("", path, sizeof path);
	lsim_fuzz_write(lsim_fuzz_table_files[pick], data + 1, size - 1, path, sizeof path);
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
