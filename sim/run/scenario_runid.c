/*
 * scenario_runid.c - the run id of a scenario: the digest of its
 * configuration (file paths left out) and of the contents of every file
 * the run reads: hardware profiles, model entries, perf table folders,
 * traces and the other data files.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernel/digest.h"
#include "run/scenario_internal.h"

/* Adds the digest of the file at path, labelled, to h. What is not a
 * regular file (a pipe a trace streams through: reading it here would eat
 * it), or cannot be read, adds its path instead (reading it for the run
 * reports any error). */
static int digest_file(struct lsim_digest *h, const char *label, const char *path,
		       struct lsim_diag *d)
{
	struct lsim_digest f;
	struct stat st;
	lsim_digest_init(&f);
	lsim_digest_str(h, label);
	errno = 0;
	if (!path || stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
	    lsim_digest_file(&f, path) != 0) {
		/* memory running out is an error, not a file to name instead:
		 * the id would change with nothing said */
		if (errno == ENOMEM)
			return lsim_diag_set(d, LSIM_ENOMEM, path, 0, 0, "",
					     "out of memory reading it for the run id");
		lsim_digest_str(h, "not read");
		lsim_digest_str(h, path);
		return 0;
	}
	unsigned char v[8];
	uint64_t x = lsim_digest_value(&f);
	for (int i = 0; i < 8; i++)
		v[i] = (unsigned char)(x >> (8 * i));
	lsim_digest_add(h, v, sizeof v);
	return 0;
}

/* As digest_file for a path relative to the scenario. */
static int digest_scenario_file(const struct lsim_scenario *sc, struct lsim_digest *h,
				const char *label, const char *rel, struct lsim_diag *d)
{
	char *path = lsim_scn_resolve(sc, rel);
	if (!path)
		return LSIM_ENOMEM;
	int rc = digest_file(h, label, path, d);
	free(path);
	return rc;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular files of folder dir in name order (and, depth 1, those of
 * its subfolders), each name with its digest. */
static int digest_folder(struct lsim_digest *h, const char *dir, int depth,
			 struct lsim_diag *d)
{
	errno = 0;
	DIR *dp = opendir(dir);
	if (!dp) {
		if (errno == ENOMEM)
			return lsim_diag_set(d, LSIM_ENOMEM, dir, 0, 0, "",
					     "out of memory reading it for the run id");
		lsim_digest_str(h, "folder");
		lsim_digest_str(h, "not read");
		lsim_digest_str(h, NULL);
		lsim_digest_str(h, dir);
		return 0;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	for (struct dirent *e; rc == 0 && (e = readdir(dp));) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **p = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof *p);
			if (!p)
				rc = LSIM_ENOMEM;
			else
				names = p;
		}
		if (rc == 0 && !(names[n++] = strdup(e->d_name)))
			rc = LSIM_ENOMEM;
	}
	closedir(dp);
	if (rc == 0)
		qsort(names, n, sizeof *names, cmp_names);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		size_t len = strlen(dir) + strlen(names[i]) + 2;
		char *path = malloc(len);
		struct stat st;
		if (!path) {
			rc = LSIM_ENOMEM;
			break;
		}
		snprintf(path, len, "%s/%s", dir, names[i]);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			rc = digest_file(h, names[i], path, d);
		} else if (depth > 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			lsim_digest_str(h, names[i]);
			rc = digest_folder(h, path, depth - 1, d);
		}
		free(path);
	}
	for (size_t i = 0; i < n; i++)
		free(names ? names[i] : NULL);
	free(names);
	return rc;
}

/* A model catalogue entry, field by field. */
static void digest_model(struct lsim_digest *h, const struct lsim_model_arch *m)
{
	char text[600];
	snprintf(text, sizeof text,
		 "%s|%s|%d|%d|%d|%d|%d|%d|%d|%d|%d|%d|%a|%d|%d", m->name, m->source,
		 m->n_layers, m->hidden, m->n_heads, m->n_kv_heads, m->head_dim,
		 m->intermediate, m->vocab, (int)m->gated_mlp, m->n_experts,
		 m->experts_per_token, m->params, m->bytes_per_param, m->max_context);
	lsim_digest_str(h, "model");
	lsim_digest_str(h, text);
	if (m->tied_embeddings) /* untied entries keep the text they had */
		lsim_digest_str(h, "tied");
}

/*
 * The run id: XXH64 of the configuration (with the seed; file paths left
 * out) and of the contents of what the run reads: each hardware profile
 * file, each model's catalogue entry, each perf table folder, the traces
 * and the other data files (lengths_from, failure and carbon traces, the
 * price file, the job file; a MIG slice's entry of the MIG table). The same contents at another path give the
 * same id; a changed byte gives another. Each file is read once more, in
 * full (docs/output.md says what that costs).
 */
int lsim_scn_compute_run_id(struct lsim_scenario *sc, struct lsim_diag *d)
{
	struct lsim_buf b = {0};
	lsim_scn_dump_config(sc, &b, true);
	int rc = b.failed ? LSIM_ENOMEM : 0;
	struct lsim_digest h;
	lsim_digest_init(&h);
	lsim_digest_str(&h, "llmsim run id 2");
	lsim_digest_add(&h, b.data ? b.data : "", b.len);
	free(b.data);
	for (size_t i = 0; rc == 0 && i < sc->n_insts; i++) {
		char path[1200];
		rc = lsim_scn_profile_path(sc, lsim_data_is_path(sc->insts[i].gpu)
						       ? sc->insts[i].gpu : sc->gpus[i].name,
					   path, sizeof path);
		if (rc == 0)
			rc = digest_file(&h, "gpu", path, d);
		if (sc->insts[i].perf != PERF_SERVICE)
			digest_model(&h, &sc->models[i]);
		if (sc->insts[i].mig[0]) { /* its entry of mig.yaml */
			char text[96];
			snprintf(text, sizeof text, "%.40s|%d|%d", sc->insts[i].mig,
				 sc->insts[i].mig_compute, sc->insts[i].mig_memory);
			lsim_digest_str(&h, "mig");
			lsim_digest_str(&h, text);
		}
		if (sc->insts[i].perf == PERF_TABLE) {
			lsim_digest_str(&h, "perf_table");
			rc = digest_folder(&h, sc->table_dirs[i], 1, d);
		}
	}
	for (size_t t = 0; rc == 0 && sc->have_jobs && t < (size_t)sc->pool.n_types; t++) {
		char path[1200];
		rc = lsim_scn_profile_path(sc, sc->pool.types[t], path, sizeof path);
		if (rc == 0)
			rc = digest_file(&h, "pool gpu", path, d);
	}
	if (rc == 0 && sc->wl.kind != WL_GENERATOR && sc->wl.path[0])
		rc = digest_scenario_file(sc, &h, "trace", sc->wl.path, d);
	for (size_t k = 0; rc == 0 && sc->wl.kind != WL_GENERATOR && k < sc->n_traces; k++)
		rc = digest_scenario_file(sc, &h, "trace", sc->traces[k], d);
	if (rc == 0 && sc->wl.lengths_from[0])
		rc = digest_scenario_file(sc, &h, "lengths_from", sc->wl.lengths_from, d);
	if (rc == 0 && sc->fail.trace[0])
		rc = digest_scenario_file(sc, &h, "failures.trace", sc->fail.trace, d);
	if (rc == 0 && sc->power.carbon_trace[0])
		rc = digest_scenario_file(sc, &h, "carbon_trace", sc->power.carbon_trace, d);
	if (rc == 0 && sc->prices) {
		if (sc->power.prices[0]) {
			rc = digest_scenario_file(sc, &h, "prices", sc->power.prices, d);
		} else {
			char shipped[1024];
			(void)lsim_data_find("prices.yaml", shipped, sizeof shipped);
			rc = digest_file(&h, "prices", shipped, d);
		}
	}
	if (rc == 0 && sc->have_jobs && sc->jobs.path)
		rc = digest_scenario_file(sc, &h, "jobs", sc->jobs.path, d);
	snprintf(sc->run_id, sizeof sc->run_id, "%016llx",
		 (unsigned long long)lsim_digest_value(&h));
	return rc;
}
