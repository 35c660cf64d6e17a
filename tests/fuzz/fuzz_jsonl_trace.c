/*
 * fuzz_jsonl_trace.c - libFuzzer target for the JSONL trace reader
 * (lsim_workload_jsonl_open): the input is the whole requests.jsonl file.
 * The workload is read to its end or first error, then destroyed.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[512];
	lsim_fuzz_write("requests.jsonl", data, size, path, sizeof path);
	struct lsim_diag d;
	memset(&d, 0, sizeof d);
	struct lsim_workload *w = NULL;
	int rc = lsim_workload_jsonl_open(path, &w, &d);
	if (rc == 0)
		lsim_fuzz_drain(w);
	else
		lsim_fuzz_check_error(rc, &d);
	lsim_workload_destroy(w);
	return 0;
}
