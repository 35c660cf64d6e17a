/*
 * fuzz_csv_trace.c - libFuzzer target for the CSV trace reader
 * (lsim_workload_csv_open). The input's first line is the column map,
 * "ARRIVAL,FORMAT,PROMPT,OUTPUT[,LORA]" with FORMAT one of s, ms, dt
 * (seconds, milliseconds, date-time) and LORA a column naming each
 * request's LoRA adapter (workload.lora_column); a first line that is not of that form leaves
 * the default map "t,s,prompt,output". The rest of the input is the CSV
 * file. The workload is read to its end or first error, then destroyed.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_common.h"
#include "workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Splits "a,f,p,o" or "a,f,p,o,l" (at most 255 bytes) into the map; 0 if
 * it has that form. */
static int parse_map(const uint8_t *line, size_t n, char *buf, size_t buf_size,
		     struct lsim_csv_map *map)
{
	if (n >= buf_size)
		return -1;
	memcpy(buf, line, n);
	buf[n] = '\0';
	if (memchr(buf, '\0', n))
		return -1;
	char *f[5] = {NULL};
	char *p = buf;
	for (int i = 0; i < 5 && p; i++) {
		f[i] = p;
		char *comma = strchr(p, ',');
		if (comma) {
			if (i == 4)
				return -1;
			*comma = '\0';
			p = comma + 1;
		} else {
			if (i < 3)
				return -1;
			p = NULL;
		}
	}
	if (!strcmp(f[1], "s"))
		map->arrival_format = LSIM_TF_SECONDS;
	else if (!strcmp(f[1], "ms"))
		map->arrival_format = LSIM_TF_MILLISECONDS;
	else if (!strcmp(f[1], "dt"))
		map->arrival_format = LSIM_TF_DATETIME;
	else
		return -1;
	map->arrival_col = f[0];
	map->prompt_col = f[2];
	map->output_col = f[3];
	map->lora_col = f[4];
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lsim_csv_map map = {"t", LSIM_TF_SECONDS, "prompt", "output"};
	char buf[256];
	const uint8_t *nl = memchr(data, '\n', size);
	size_t skip = 0;
	if (nl && parse_map(data, (size_t)(nl - data), buf, sizeof buf, &map) == 0)
		skip = (size_t)(nl - data) + 1;
	char path[512];
	lsim_fuzz_write("trace.csv", data + skip, size - skip, path, sizeof path);
	struct lsim_diag d;
	memset(&d, 0, sizeof d);
	struct lsim_workload *w = NULL;
	int rc = lsim_workload_csv_open(path, &map, &w, &d);
	if (rc == 0)
		lsim_fuzz_drain(w);
	else
		lsim_fuzz_check_error(rc, &d);
	lsim_workload_destroy(w);
	return 0;
}
