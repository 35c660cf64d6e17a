/*
 * detect.c - opening a trace by recognising its format: JSONL by content
 * (first non-blank byte '{'), CSV by its header row against the published
 * layouts (Azure LLM 2023/2024, BurstGPT, Mooncake CSV, Vidur, SplitwiseSim,
 * llmsim's generic CSV).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "kernel/csv.h"
#include "kernel/infile.h"
#include "workload.h"

/* Known CSV layouts: the columns that identify them and map to requests. */
static const struct {
	const char *name;
	struct lsim_csv_map map;
} layouts[] = {
	{"generic", {"arrival_s", LSIM_TF_SECONDS, "prompt_tokens", "output_tokens"}},
	{"azure-llm", {"TIMESTAMP", LSIM_TF_DATETIME, "ContextTokens", "GeneratedTokens"}},
	{"burstgpt", {"Timestamp", LSIM_TF_SECONDS, "Request tokens", "Response tokens"}},
	{"mooncake-csv", {"timestamp_ms", LSIM_TF_MILLISECONDS, "input_length", "output_length"}},
	{"vidur", {"arrived_at", LSIM_TF_SECONDS, "num_prefill_tokens", "num_decode_tokens"}},
	{"splitwise", {"arrival_timestamp", LSIM_TF_SECONDS, "prompt_size", "token_size"}},
};

static bool has_column(const struct lsim_csv *c, const char *name)
{
	for (int i = 0; i < lsim_csv_columns(c); i++)
		if (strcmp(lsim_csv_name(c, i), name) == 0)
			return true;
	return false;
}

/* First non-blank byte of the file (skipping a UTF-8 BOM), or EOF. */
static int first_byte(const char *path, int *out, struct lsim_diag *d)
{
	FILE *f = NULL;
	int orc = lsim_open_input(path, "workload.path", &f, d);
	if (orc < 0)
		return orc;
	if (!f)
		return lsim_diag_set(d, LSIM_ENOENT, path, 0, 0, "workload.path",
				     "cannot open the trace: %s", strerror(errno));
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, "workload.path",
				     "is a folder, not a file");
	}
	int ch, n = 0;
	while ((ch = fgetc(f)) != EOF) {
		if (n++ < 3 && (ch == 0xEF || ch == 0xBB || ch == 0xBF))
			continue;
		if (ch != ' ' && ch != '\t' && ch != '\r' && ch != '\n')
			break;
	}
	fclose(f);
	*out = ch;
	return 0;
}

int lsim_workload_detect(const char *path, const char **format,
			 struct lsim_csv_map *map, struct lsim_diag *d)
{
	int ch = 0;
	int rc = first_byte(path, &ch, d);
	if (rc != 0)
		return rc;
	if (ch == '{') {
		*format = "jsonl";
		return 0;
	}
	struct lsim_csv *c = NULL;
	rc = lsim_csv_open(path, &c, d);
	if (rc != 0)
		return rc;
	rc = LSIM_EFORMAT;
	for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
		const struct lsim_csv_map *m = &layouts[i].map;
		if (has_column(c, m->arrival_col) && has_column(c, m->prompt_col) &&
		    has_column(c, m->output_col)) {
			*format = layouts[i].name;
			*map = *m;
			rc = 0;
			break;
		}
	}
	lsim_csv_close(c);
	if (rc != 0)
		return lsim_diag_set(d, rc, path, 1, 0, "workload.path",
				     "unrecognised trace header: expected JSONL or a CSV with the "
				     "columns of generic (arrival_s, prompt_tokens, output_tokens), "
				     "Azure LLM, BurstGPT, Mooncake, Vidur or SplitwiseSim traces; "
				     "or give kind: csv with the column names");
	return 0;
}

int lsim_workload_open_auto(const char *path, struct lsim_workload **out,
			    struct lsim_diag *d)
{
	const char *format = NULL;
	struct lsim_csv_map map;
	int rc = lsim_workload_detect(path, &format, &map, d);
	if (rc != 0)
		return rc;
	if (strcmp(format, "jsonl") == 0)
		return lsim_workload_jsonl_open(path, out, d);
	return lsim_workload_csv_open(path, &map, out, d);
}
