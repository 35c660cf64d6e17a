/*
 * mig.c - the MIG profile table of each GPU kind that has MIG, read from
 * calibrate/mig.yaml (NVIDIA Multi-Instance GPU user guide, "Supported
 * MIG Profiles": the fraction of SMs is g/7 and the fraction of memory,
 * of L2 and of the memory controllers m/8 for every profile of the A100,
 * H100, H200 and B200), and the slice of a GPU profile that one MIG
 * instance sees.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "kernel/config.h"
#include "cluster/mig.h"

struct kind_raw {
	const char *gpu, *source;
};
static const struct lsim_keydef kind_keys[] = {
	{"gpu", LSIM_K_STRING, offsetof(struct kind_raw, gpu), NULL, LSIM_NOBOUNDS, NULL, "GPU profile name (calibrate/profiles/)"},
	{"source", LSIM_K_STRING, offsetof(struct kind_raw, source), NULL, LSIM_NOBOUNDS, NULL, "where the table comes from"},
};

struct prof_raw {
	const char *name;
	int64_t compute, memory;
};
static const struct lsim_keydef prof_keys[] = {
	{"name", LSIM_K_STRING, offsetof(struct prof_raw, name), NULL, LSIM_NOBOUNDS, NULL, "GPU instance profile, e.g. 3g.40gb"},
	{"compute", LSIM_K_INT, offsetof(struct prof_raw, compute), NULL, 1, LSIM_MIG_COMPUTE_SLICES, NULL, "compute slices (sevenths of the SMs)"},
	{"memory", LSIM_K_INT, offsetof(struct prof_raw, memory), NULL, 1, LSIM_MIG_MEMORY_SLICES, NULL, "memory slices (eighths of memory, bandwidth, L2)"},
};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static int need_seq(const struct lsim_doc *doc, const struct lsim_node *at,
		    const struct lsim_node *list, const char *path, struct lsim_diag *d)
{
	if (list && list->kind == LSIM_NODE_SEQ && list->n > 0)
		return 0;
	return lsim_cfg_error(d, doc, list ? list : at, path, LSIM_EFORMAT,
			      "expected a non-empty list");
}

/* Entry k of the file (a GPU kind): checked; kept in t if it is gpu. */
static int kind_entry(const struct lsim_doc *doc, size_t k, const char *gpu,
		      struct lsim_mig_table *t, struct lsim_diag *d)
{
	const struct lsim_node *list = lsim_node_get(doc->root, "gpus");
	const struct lsim_node *e = list->items[k];
	char path[96];
	snprintf(path, sizeof path, "gpus[%zu]", k);
	if (e->kind != LSIM_NODE_MAP)
		return lsim_cfg_error(d, doc, e, path, LSIM_EFORMAT, "expected a mapping of keys");
	struct kind_raw kr = {0};
	static const char *const sub[] = {"profiles", NULL};
	int rc = lsim_cfg_bind(doc, e, path, kind_keys, N_OF(kind_keys), sub, &kr, d);
	if (rc != 0)
		return rc;
	for (size_t j = 0; j < k; j++) {
		const char *o = lsim_node_get(list->items[j], "gpu")->value;
		if (strcmp(o, kr.gpu) == 0) {
			snprintf(path, sizeof path, "gpus[%zu].gpu", k);
			return lsim_cfg_error(d, doc, lsim_node_get(e, "gpu"), path, LSIM_EINVAL,
					      "%s listed twice (also gpus[%zu])", kr.gpu, j);
		}
	}
	size_t n = strlen(t->kinds);
	snprintf(t->kinds + n, sizeof t->kinds - n, "%s%s", n ? ", " : "", kr.gpu);
	const struct lsim_node *ps = lsim_node_get(e, "profiles");
	snprintf(path, sizeof path, "gpus[%zu].profiles", k);
	rc = need_seq(doc, e, ps, path, d);
	if (rc == 0 && ps->n > LSIM_MIG_MAX_PROFILES)
		rc = lsim_cfg_error(d, doc, ps, path, LSIM_ERANGE, "more than %d profiles",
				    LSIM_MIG_MAX_PROFILES);
	bool mine = gpu && strcmp(kr.gpu, gpu) == 0;
	for (size_t i = 0; rc == 0 && i < ps->n; i++) {
		const struct lsim_node *pe = ps->items[i];
		snprintf(path, sizeof path, "gpus[%zu].profiles[%zu]", k, i);
		if (pe->kind != LSIM_NODE_MAP)
			return lsim_cfg_error(d, doc, pe, path, LSIM_EFORMAT,
					      "expected a mapping of keys");
		struct prof_raw pr = {0};
		rc = lsim_cfg_bind(doc, pe, path, prof_keys, N_OF(prof_keys), NULL, &pr, d);
		if (rc != 0)
			return rc;
		char key[112];
		snprintf(key, sizeof key, "%s.name", path);
		if (!pr.name[0] || strlen(pr.name) >= sizeof t->p[0].name)
			return lsim_cfg_error(d, doc, lsim_node_get(pe, "name"), key, LSIM_EINVAL,
					      "a profile name of 1 to %zu characters",
					      sizeof t->p[0].name - 1);
		for (size_t j = 0; j < i; j++)
			if (strcmp(lsim_node_get(ps->items[j], "name")->value, pr.name) == 0)
				return lsim_cfg_error(d, doc, lsim_node_get(pe, "name"), key,
						      LSIM_EINVAL, "%s listed twice for %s (also "
						      "profiles[%zu])", pr.name, kr.gpu, j);
		if (!mine)
			continue;
		struct lsim_mig_profile *p = &t->p[t->n++];
		snprintf(p->name, sizeof p->name, "%s", pr.name);
		p->compute = (int)pr.compute;
		p->memory = (int)pr.memory;
	}
	return rc;
}

int lsim_mig_load(const char *path, const char *gpu, struct lsim_mig_table *t,
		  struct lsim_diag *d)
{
	memset(t, 0, sizeof *t);
	struct lsim_doc *doc = NULL;
	int rc = lsim_doc_load_file(path, &doc, d);
	if (rc == LSIM_EIO || rc == LSIM_ENOENT)
		return lsim_diag_set(d, LSIM_ENOENT, path, 0, 0, "mig",
				     "no MIG table (looked for this file)");
	if (rc != 0)
		return rc;
	static const char *const top[] = {"gpus", NULL};
	rc = lsim_cfg_bind(doc, doc->root, "", NULL, 0, top, NULL, d);
	const struct lsim_node *list = lsim_node_get(doc->root, "gpus");
	if (rc == 0)
		rc = need_seq(doc, doc->root, list, "gpus", d);
	for (size_t k = 0; rc == 0 && k < list->n; k++)
		rc = kind_entry(doc, k, gpu, t, d);
	lsim_doc_destroy(doc);
	if (rc != 0)
		memset(t, 0, sizeof *t);
	return rc;
}

const struct lsim_mig_profile *lsim_mig_find(const struct lsim_mig_table *t, const char *name)
{
	for (int j = 0; name && j < t->n; j++)
		if (strcmp(t->p[j].name, name) == 0)
			return &t->p[j];
	return NULL;
}

void lsim_mig_list(const struct lsim_mig_table *t, char *buf, size_t size)
{
	if (t->n == 0) {
		snprintf(buf, size, "%s", t->kinds);
		return;
	}
	size_t n = 0;
	buf[0] = '\0';
	for (int j = 0; j < t->n && n < size; j++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", j ? ", " : "", t->p[j].name);
}

void lsim_mig_apply(const struct lsim_mig_profile *p, struct lsim_gpu_profile *g)
{
	g->bf16_flops *= (double)p->compute / LSIM_MIG_COMPUTE_SLICES;
	g->hbm_bw *= (double)p->memory / LSIM_MIG_MEMORY_SLICES;
	g->hbm_bytes *= (double)p->memory / LSIM_MIG_MEMORY_SLICES;
}
