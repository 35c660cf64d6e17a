/*
 * hw.c - loading of hardware profiles (calibrate/profiles/NAME.yaml) and
 * of model architectures (calibrate/models.yaml), and the derived sizes
 * (KV bytes per token, weight bytes).
 */
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "hw.h"

#ifndef LSIM_DATA_DIR
#define LSIM_DATA_DIR "calibrate"
#endif

const char *lsim_data_dir(void)
{
	const char *env = getenv("LLMSIM_DATA_DIR");
	return env && *env ? env : LSIM_DATA_DIR;
}

double lsim_model_kv_bytes_per_token(const struct lsim_model_arch *m)
{
	return 2.0 * m->n_layers * m->n_kv_heads * m->head_dim *
	       m->bytes_per_param;
}

double lsim_model_weight_bytes(const struct lsim_model_arch *m)
{
	return m->params * m->bytes_per_param;
}

double lsim_pcie_slowdown(double a, double b, double u)
{
	u = u < 0 ? 0 : u > 0.99 ? 0.99 : u;
	return 1.0 + a * u * pow(1.0 - u, -b);
}

static void copy_field(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

/* ---- GPU profiles ---- */

struct gpu_raw {
	const char *name, *provenance, *source;
	double tflops, hbm, hbm_bw, pcie_bw, nvlink_bw, tdp, idle, price;
	double mfu_max, mfu_half, mbu, interference, interference_exp;
	lsim_time launch, allreduce, allreduce_step;
};

#define G(f) offsetof(struct gpu_raw, f)
static const struct lsim_keydef gpu_keys[] = {
	{"name", LSIM_K_STRING, G(name), NULL, LSIM_NOBOUNDS, NULL, "profile name (matches the file name)"},
	{"provenance", LSIM_K_STRING, G(provenance), NULL, LSIM_NOBOUNDS, NULL, "datasheet | measured | estimate | mixed"},
	{"source", LSIM_K_STRING, G(source), NULL, LSIM_NOBOUNDS, NULL, "where the numbers come from"},
	{"bf16_tflops", LSIM_K_DOUBLE, G(tflops), NULL, 0.1, 1e5, NULL, "dense bf16/fp16 tensor peak, TFLOP/s"},
	{"hbm", LSIM_K_BYTES, G(hbm), NULL, 1e9, 1e13, NULL, "device memory capacity"},
	{"hbm_bw", LSIM_K_BW, G(hbm_bw), NULL, 1e9, 1e14, NULL, "device memory bandwidth"},
	{"pcie_bw", LSIM_K_BW, G(pcie_bw), NULL, 1e8, 1e13, NULL, "host link bandwidth per direction"},
	{"nvlink_bw", LSIM_K_BW, G(nvlink_bw), NULL, 0, 1e13, NULL, "GPU-GPU bandwidth per direction (0: none)"},
	{"tdp", LSIM_K_POWER, G(tdp), NULL, 1, 1e4, NULL, "board power limit"},
	{"idle_power", LSIM_K_POWER, G(idle), NULL, 0, 1e4, NULL, "power at idle"},
	{"price", LSIM_K_PRICE, G(price), NULL, 0, 1e3, NULL, "on-demand USD per GPU-hour"},
	{"mfu_max", LSIM_K_DOUBLE, G(mfu_max), NULL, 0.01, 1, NULL, "achievable fraction of bf16 peak"},
	{"mfu_half_tokens", LSIM_K_DOUBLE, G(mfu_half), NULL, 0, 1e6, NULL, "tokens at half of mfu_max"},
	{"mbu", LSIM_K_DOUBLE, G(mbu), NULL, 0.01, 1, NULL, "achievable fraction of hbm_bw"},
	{"launch_latency", LSIM_K_TIME, G(launch), NULL, 0, 1e9, NULL, "per-kernel launch overhead"},
	{"allreduce_latency", LSIM_K_TIME, G(allreduce), NULL, 0, 1e9, NULL, "fixed latency of one all-reduce"},
	{"allreduce_step_latency", LSIM_K_TIME, G(allreduce_step), "0", 0, 1e9, NULL, "latency of each of an all-reduce ring's 2(n-1) steps (0: none)"},
	{"pcie_interference", LSIM_K_DOUBLE, G(interference), "0", 0, 100, NULL, "a of the kernel slowdown 1 + a u / (1 - u)^b at PCIe load u (0: none)"},
	{"pcie_interference_exp", LSIM_K_DOUBLE, G(interference_exp), "1", 0, 10, NULL, "b of the kernel slowdown curve"},
};
#undef G

int lsim_gpu_profile_load(const char *dir, const char *name,
			  struct lsim_gpu_profile *g, struct lsim_diag *d)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s.yaml", dir, name);
	struct lsim_doc *doc = NULL;
	int rc = lsim_doc_load_file(path, &doc, d);
	if (rc == LSIM_EIO || rc == LSIM_ENOENT)
		return lsim_diag_set(d, LSIM_ENOENT, path, 0, 0, "gpu",
				     "no hardware profile '%s' (looked for this file)",
				     name);
	if (rc != 0)
		return rc;
	struct gpu_raw raw;
	memset(&raw, 0, sizeof raw);
	static const char *const extra[] = {"key_provenance", NULL};
	rc = lsim_cfg_bind(doc, doc->root, "", gpu_keys,
			   sizeof gpu_keys / sizeof gpu_keys[0], extra, &raw, d);
	if (rc == 0 && strcmp(raw.name, name) != 0)
		rc = lsim_cfg_error(d, doc, lsim_node_get(doc->root, "name"),
				    "name", LSIM_EINVAL,
				    "profile name '%s' does not match its file name '%s'",
				    raw.name, name);
	if (rc == 0 && raw.idle > raw.tdp)
		rc = lsim_cfg_error(d, doc, lsim_node_get(doc->root, "idle_power"),
				    "idle_power", LSIM_ERANGE,
				    "idle power exceeds tdp");
	if (rc == 0) {
		memset(g, 0, sizeof *g);
		copy_field(g->name, sizeof g->name, raw.name);
		copy_field(g->source, sizeof g->source, raw.source);
		copy_field(g->provenance, sizeof g->provenance, raw.provenance);
		g->bf16_flops = raw.tflops * 1e12;
		g->hbm_bytes = raw.hbm;
		g->hbm_bw = raw.hbm_bw;
		g->pcie_bw = raw.pcie_bw;
		g->nvlink_bw = raw.nvlink_bw;
		g->tdp_w = raw.tdp;
		g->idle_w = raw.idle;
		g->price_per_hour = raw.price;
		g->mfu_max = raw.mfu_max;
		g->mfu_half_tokens = raw.mfu_half;
		g->mbu = raw.mbu;
		g->launch_s = lsim_time_to_s(raw.launch);
		g->allreduce_latency_s = lsim_time_to_s(raw.allreduce);
		g->allreduce_step_s = lsim_time_to_s(raw.allreduce_step);
		g->pcie_interference = raw.interference;
		g->pcie_interference_exp = raw.interference_exp;
	}
	lsim_doc_destroy(doc);
	return rc;
}

/* ---- model catalogue ---- */

struct model_raw {
	const char *name, *source;
	int64_t layers, hidden, heads, kv_heads, head_dim, inter, vocab;
	int64_t experts, experts_per_token, bytes_per_param, max_context;
	bool gated;
	double params;
};

#define M(f) offsetof(struct model_raw, f)
static const struct lsim_keydef model_keys[] = {
	{"name", LSIM_K_STRING, M(name), NULL, LSIM_NOBOUNDS, NULL, "model name"},
	{"source", LSIM_K_STRING, M(source), NULL, LSIM_NOBOUNDS, NULL, "where the architecture comes from"},
	{"layers", LSIM_K_INT, M(layers), NULL, 1, 1000, NULL, "decoder layers"},
	{"hidden", LSIM_K_INT, M(hidden), NULL, 1, 1e6, NULL, "model width"},
	{"heads", LSIM_K_INT, M(heads), NULL, 1, 1e4, NULL, "attention heads"},
	{"kv_heads", LSIM_K_INT, M(kv_heads), NULL, 1, 1e4, NULL, "key/value heads"},
	{"head_dim", LSIM_K_INT, M(head_dim), NULL, 1, 1e4, NULL, "size of one head"},
	{"intermediate", LSIM_K_INT, M(inter), NULL, 1, 1e7, NULL, "MLP inner size (per expert)"},
	{"vocab", LSIM_K_INT, M(vocab), NULL, 1, 1e7, NULL, "vocabulary size"},
	{"gated_mlp", LSIM_K_BOOL, M(gated), NULL, LSIM_NOBOUNDS, NULL, "three MLP matrices (SwiGLU)"},
	{"experts", LSIM_K_INT, M(experts), "0", 0, 1e5, NULL, "MoE experts (0: dense)"},
	{"experts_per_token", LSIM_K_INT, M(experts_per_token), "0", 0, 1e3, NULL, "experts active per token"},
	{"params", LSIM_K_DOUBLE, M(params), NULL, 1e6, 1e14, NULL, "total parameters"},
	{"bytes_per_param", LSIM_K_INT, M(bytes_per_param), "2", 1, 8, NULL, "weight bytes per parameter"},
	{"max_context", LSIM_K_INT, M(max_context), NULL, 1, 1e8, NULL, "longest context"},
};
#undef M

int lsim_model_load(const char *catalogue, const char *name,
		    struct lsim_model_arch *m, struct lsim_diag *d)
{
	struct lsim_doc *doc = NULL;
	int rc = lsim_doc_load_file(catalogue, &doc, d);
	if (rc != 0)
		return rc;
	struct lsim_node *list = lsim_node_get(doc->root, "models");
	if (!list || list->kind != LSIM_NODE_SEQ) {
		rc = lsim_cfg_error(d, doc, list ? list : doc->root, "models",
				    LSIM_EFORMAT, "expected a list 'models:'");
		lsim_doc_destroy(doc);
		return rc;
	}
	char known[512] = "";
	size_t klen = 0;
	rc = LSIM_ENOENT;
	for (size_t i = 0; i < list->n; i++) {
		struct lsim_node *entry = list->items[i];
		struct lsim_node *nm = lsim_node_get(entry, "name");
		if (nm && nm->kind == LSIM_NODE_SCALAR && klen < sizeof known)
			klen += (size_t)snprintf(known + klen, sizeof known - klen,
						 "%s%s", klen ? ", " : "", nm->value);
		if (!nm || nm->kind != LSIM_NODE_SCALAR ||
		    strcmp(nm->value, name) != 0)
			continue;
		char path[64];
		snprintf(path, sizeof path, "models[%zu]", i);
		struct model_raw raw;
		memset(&raw, 0, sizeof raw);
		rc = lsim_cfg_bind(doc, entry, path, model_keys,
				   sizeof model_keys / sizeof model_keys[0], NULL,
				   &raw, d);
		if (rc == 0 && raw.heads % raw.kv_heads != 0)
			rc = lsim_cfg_error(d, doc, entry, "kv_heads", LSIM_EINVAL,
					    "heads must be a multiple of kv_heads");
		if (rc == 0) {
			memset(m, 0, sizeof *m);
			copy_field(m->name, sizeof m->name, raw.name);
			copy_field(m->source, sizeof m->source, raw.source);
			m->n_layers = (int)raw.layers;
			m->hidden = (int)raw.hidden;
			m->n_heads = (int)raw.heads;
			m->n_kv_heads = (int)raw.kv_heads;
			m->head_dim = (int)raw.head_dim;
			m->intermediate = (int)raw.inter;
			m->vocab = (int)raw.vocab;
			m->gated_mlp = raw.gated;
			m->n_experts = (int)raw.experts;
			m->experts_per_token = (int)raw.experts_per_token;
			m->params = raw.params;
			m->bytes_per_param = (int)raw.bytes_per_param;
			m->max_context = (int)raw.max_context;
		}
		break;
	}
	if (rc == LSIM_ENOENT)
		lsim_diag_set(d, rc, catalogue, 0, 0, "model",
			      "unknown model '%s'; known: %s", name, known);
	lsim_doc_destroy(doc);
	return rc;
}
