/*
 * hw.c - loading of hardware profiles (calibrate/profiles/NAME.yaml) and
 * of model architectures (calibrate/models.yaml), and the derived sizes
 * (KV bytes per token, weight bytes).
 */
#include <ctype.h>
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "kernel/config.h"
#include "cluster/hw.h"

#ifndef LSIM_DATA_DIR
#define LSIM_DATA_DIR "calibrate"
#endif

/* Whether this process's executable lies in the build tree it was built
 * in (a development binary or a test), from /proc/self/exe. */
static bool in_build_tree(void)
{
#if defined(LSIM_BUILD_ROOT) && defined(LSIM_INSTALL_DATA_DIR)
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return true; /* cannot tell: the build tree's data, as before */
	exe[n] = '\0';
	size_t k = strlen(LSIM_BUILD_ROOT);
	return strncmp(exe, LSIM_BUILD_ROOT, k) == 0 && exe[k] == '/';
#else
	return true;
#endif
}

const char *lsim_data_dir(void)
{
#ifdef LSIM_INSTALL_DATA_DIR
	if (!in_build_tree())
		return LSIM_INSTALL_DATA_DIR;
#endif
	return LSIM_DATA_DIR;
}

/* A walk along the data search path: each folder of $LLMSIM_DATA_DIR in
 * order, then the shipped data (last). */
struct data_walk {
	const char *next; /* the rest of $LLMSIM_DATA_DIR */
	bool shipped;	  /* the shipped data's turn has come */
};

/* The next candidate DIR/rel into out; false when the walk is over. */
static bool data_next(struct data_walk *w, const char *rel, char *out, size_t size)
{
	while (w->next && *w->next) {
		const char *dir = w->next, *end = strchr(dir, ':');
		size_t n = end ? (size_t)(end - dir) : strlen(dir);
		w->next = end ? end + 1 : dir + n;
		if (n > 0 && n < size) {
			snprintf(out, size, "%.*s/%s", (int)n, dir, rel);
			return true;
		}
	}
	if (w->shipped)
		return false;
	w->shipped = true;
	snprintf(out, size, "%s/%s", lsim_data_dir(), rel);
	return true;
}

int lsim_data_find(const char *rel, char *out, size_t size)
{
	struct data_walk w = {getenv("LLMSIM_DATA_DIR"), false};
	while (data_next(&w, rel, out, size))
		if (access(out, R_OK) == 0)
			return 0;
	return LSIM_ENOENT; /* out holds the shipped path, the last tried */
}

bool lsim_data_is_path(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	return n > 0 && (strchr(name, '/') ||
			 (n > 5 && strcmp(name + n - 5, ".yaml") == 0));
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

double lsim_model_expert_bytes(const struct lsim_model_arch *m)
{
	return (double)m->n_layers * m->n_experts * (m->gated_mlp ? 3.0 : 2.0) *
	       m->hidden * m->intermediate * m->bytes_per_param;
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
	const char *name, *provenance, *source, *cuda_name;
	double tflops, hbm, hbm_bw, pcie_bw, nvlink_bw, tdp, idle, price;
	double mfu_max, mfu_half, mbu, interference, interference_exp;
	lsim_time launch, host_issue;
	int fabric;
	int64_t nvlink_links, switch_gpus;
	double cc;
	bool p2p;
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
	{"host_issue_latency", LSIM_K_TIME, G(host_issue), "0", 0, 1e9, NULL, "the serving stack's host time to issue one kernel, overlapped with the GPU (0: not modelled)"},
	{"pcie_interference", LSIM_K_DOUBLE, G(interference), "0", 0, 100, NULL, "a of the kernel slowdown 1 + a u / (1 - u)^b at PCIe load u (0: none)"},
	{"pcie_interference_exp", LSIM_K_DOUBLE, G(interference_exp), "1", 0, 10, NULL, "b of the kernel slowdown curve"},
	{"gpu_fabric", LSIM_K_ENUM, G(fabric), "auto", LSIM_NOBOUNDS, "auto|" LSIM_FABRIC_CHOICES, "how a node's GPUs reach each other (auto: nvswitch with nvlink_bw, else pcie)"},
	{"nvlink_links", LSIM_K_INT, G(nvlink_links), "0", 0, 64, NULL, "NVLinks (mesh: peer links) per GPU; 0: unknown (NCCL's bandwidth taken as 0.8 of nvlink_bw)"},
	{"compute_capability", LSIM_K_DOUBLE, G(cc), "0", 0, 20, NULL, "CUDA compute capability (picks NCCL's constants); 0: not an NVIDIA GPU"},
	{"gpu_p2p", LSIM_K_BOOL, G(p2p), "true", LSIM_NOBOUNDS, NULL, "GPUs reach each other's memory over PCIe (false: staged through host memory)"},
	{"pcie_switch_gpus", LSIM_K_INT, G(switch_gpus), "2", 1, 64, NULL, "GPUs behind one PCIe switch"},
	{"cuda_name", LSIM_K_STRING, G(cuda_name), "", LSIM_NOBOUNDS, NULL, "the CUDA device name the card reports, where the name's words do not say the profile (\"NVIDIA H100 80GB HBM3\" is H100-SXM); a device of this name is this profile"},
};
#undef G

/* Keys older profiles carry that no longer mean anything: refused, with
 * what to do instead, rather than read and ignored. */
static int retired_gpu_key(const struct lsim_doc *doc, struct lsim_diag *d)
{
	static const char *const gone[] = {"allreduce_latency", "allreduce_step_latency"};
	for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
		const struct lsim_node *n = lsim_node_get(doc->root, gone[i]);
		if (n)
			return lsim_cfg_error(d, doc, n, gone[i], LSIM_EINVAL,
					      "a retired key, no longer read: the serving perf "
					      "models time every collective by the NCCL model "
					      "from gpu_fabric, nvlink_links, compute_capability, "
					      "gpu_p2p and pcie_switch_gpus (docs/collectives.md); "
					      "delete it");
	}
	return 0;
}

int lsim_gpu_profile_load(const char *dir, const char *name,
			  struct lsim_gpu_profile *g, struct lsim_diag *d)
{
	char path[1024], stem[256];
	if (lsim_data_is_path(name)) {
		/* a profile given as its file: named by the file's stem */
		snprintf(path, sizeof path, "%s", name);
		const char *slash = strrchr(name, '/');
		snprintf(stem, sizeof stem, "%s", slash ? slash + 1 : name);
		size_t n = strlen(stem);
		if (n > 5 && strcmp(stem + n - 5, ".yaml") == 0)
			stem[n - 5] = '\0';
		name = stem;
	} else if (dir) {
		snprintf(path, sizeof path, "%s/%s.yaml", dir, name);
	} else {
		char rel[300];
		snprintf(rel, sizeof rel, "profiles/%s.yaml", name);
		lsim_data_find(rel, path, sizeof path);
	}
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
	rc = retired_gpu_key(doc, d);
	if (rc == 0)
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
	if (rc == 0 && raw.fabric > 0 && raw.fabric - 1 != LSIM_FABRIC_PCIE && !(raw.nvlink_bw > 0))
		rc = lsim_cfg_error(d, doc, lsim_node_get(doc->root, "gpu_fabric"),
				    "gpu_fabric", LSIM_EINVAL,
				    "a GPU fabric of links needs nvlink_bw > 0; write gpu_fabric: pcie "
				    "for GPUs without NVLink");
	if (rc == 0 && raw.fabric - 1 == LSIM_FABRIC_MESH && raw.nvlink_links < 1)
		rc = lsim_cfg_error(d, doc, lsim_node_get(doc->root, "gpu_fabric"),
				    "gpu_fabric", LSIM_EINVAL,
				    "a mesh needs nvlink_links: the links per GPU, one to each peer");
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
		g->host_issue_s = lsim_time_to_s(raw.host_issue);
		g->pcie_interference = raw.interference;
		g->pcie_interference_exp = raw.interference_exp;
		g->fabric = raw.fabric == 0 ? (raw.nvlink_bw > 0 ? LSIM_FABRIC_NVSWITCH
								   : LSIM_FABRIC_PCIE)
					    : (enum lsim_fabric)(raw.fabric - 1);
		g->nvlink_links = (int)raw.nvlink_links;
		g->compute_capability = raw.cc;
		g->gpu_p2p = raw.p2p;
		g->pcie_switch_gpus = (int)raw.switch_gpus;
	}
	lsim_doc_destroy(doc);
	return rc;
}

/* ---- model catalogue ---- */

struct model_raw {
	const char *name, *source;
	int64_t layers, hidden, heads, kv_heads, head_dim, inter, vocab;
	int64_t experts, experts_per_token, bytes_per_param, max_context;
	bool gated, tied;
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
	{"tied_embeddings", LSIM_K_BOOL, M(tied), "false", LSIM_NOBOUNDS, NULL, "the LM head shares the embedding matrix"},
	{"experts", LSIM_K_INT, M(experts), "0", 0, 1e5, NULL, "MoE experts (0: dense)"},
	{"experts_per_token", LSIM_K_INT, M(experts_per_token), "0", 0, 1e3, NULL, "experts active per token"},
	{"params", LSIM_K_DOUBLE, M(params), NULL, 1e6, 1e14, NULL, "total parameters"},
	{"bytes_per_param", LSIM_K_INT, M(bytes_per_param), "2", 1, 8, NULL, "weight bytes per parameter"},
	{"max_context", LSIM_K_INT, M(max_context), NULL, 1, 1e8, NULL, "longest context"},
};
#undef M

/* The catalogue file's document and its list 'models:'. */
static int load_catalogue(const char *catalogue, struct lsim_doc **doc,
			  struct lsim_node **list, struct lsim_diag *d)
{
	int rc = lsim_doc_load_file(catalogue, doc, d);
	if (rc != 0)
		return rc;
	*list = lsim_node_get((*doc)->root, "models");
	if (!*list || (*list)->kind != LSIM_NODE_SEQ) {
		rc = lsim_cfg_error(d, *doc, *list ? *list : (*doc)->root, "models",
				    LSIM_EFORMAT, "expected a list 'models:'");
		lsim_doc_destroy(*doc);
		*doc = NULL;
		return rc;
	}
	/* one entry per name: a second would never be found (the first wins) */
	for (size_t i = 0; i < (*list)->n; i++) {
		const struct lsim_node *a = lsim_node_get((*list)->items[i], "name");
		for (size_t j = 0; a && a->kind == LSIM_NODE_SCALAR && j < i; j++) {
			const struct lsim_node *b = lsim_node_get((*list)->items[j], "name");
			if (!b || b->kind != LSIM_NODE_SCALAR || strcmp(a->value, b->value) != 0)
				continue;
			char path[64];
			snprintf(path, sizeof path, "models[%zu].name", i);
			rc = lsim_cfg_error(d, *doc, a, path, LSIM_EFORMAT,
					    "model '%s' is in the catalogue twice: line %d "
					    "(models[%zu]) and line %d; keep one",
					    a->value, b->line, j, a->line);
			lsim_doc_destroy(*doc);
			*doc = NULL;
			return rc;
		}
	}
	return 0;
}

static int model_load_from(const char *catalogue, const char *name,
			   struct lsim_model_arch *m, struct lsim_diag *d)
{
	struct lsim_doc *doc = NULL;
	struct lsim_node *list = NULL;
	int rc = load_catalogue(catalogue, &doc, &list, d);
	if (rc != 0)
		return rc;
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
		/* a token is routed to experts_per_token distinct experts */
		const struct lsim_node *ept = lsim_node_get(entry, "experts_per_token");
		if (rc == 0 && raw.experts_per_token > raw.experts) {
			char key[96];
			snprintf(key, sizeof key, "%s.experts_per_token", path);
			rc = lsim_cfg_error(d, doc, ept ? ept : entry, key, LSIM_EINVAL,
					    "experts_per_token %lld exceeds experts %lld: a token "
					    "goes to that many distinct experts; write at most %lld",
					    (long long)raw.experts_per_token,
					    (long long)raw.experts, (long long)raw.experts);
		}
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
			m->tied_embeddings = raw.tied;
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

/* ---- published model names ---- */

static bool ends_with_ci(const char *s, size_t n, const char *tag)
{
	size_t t = strlen(tag);
	return n > t && strncasecmp(s + n - t, tag, t) == 0;
}

int lsim_model_load(const char *catalogue, const char *name,
		    struct lsim_model_arch *m, struct lsim_diag *d)
{
	if (lsim_data_is_path(name)) {
		/* a model given as its file: a catalogue of that one model */
		struct lsim_doc *doc = NULL;
		struct lsim_node *list = NULL;
		int rc = load_catalogue(name, &doc, &list, d);
		if (rc != 0)
			return rc;
		const struct lsim_node *nm = list->n == 1 ? lsim_node_get(list->items[0], "name")
							 : NULL;
		char one[256] = "";
		if (nm && nm->kind == LSIM_NODE_SCALAR)
			snprintf(one, sizeof one, "%s", nm->value);
		else
			rc = lsim_cfg_error(d, doc, list, "models", LSIM_EFORMAT,
					    "a model given as a file holds exactly one model "
					    "with its name; this one has %zu entries",
					    list->n);
		lsim_doc_destroy(doc);
		return rc != 0 ? rc : model_load_from(name, one, m, d);
	}
	if (catalogue)
		return model_load_from(catalogue, name, m, d);
	/* each models.yaml of $LLMSIM_DATA_DIR in turn, then the shipped one,
	 * whose error (the nearest names) is the one given */
	char path[1024];
	struct data_walk w = {getenv("LLMSIM_DATA_DIR"), false};
	while (data_next(&w, "models.yaml", path, sizeof path)) {
		if (w.shipped)
			return model_load_from(path, name, m, d);
		if (access(path, R_OK) != 0)
			continue;
		int rc = model_load_from(path, name, m, d);
		if (rc != LSIM_ENOENT)
			return rc;
	}
	return LSIM_ENOENT; /* not reached: the shipped catalogue comes last */
}

bool lsim_model_strip_tag(char *name)
{
	char *slash = strrchr(name, '/');
	if (slash) {
		memmove(name, slash + 1, strlen(slash + 1) + 1);
		return true;
	}
	size_t n = strlen(name); /* (not strlen(name + 5): GCC's ASan build
				 * takes that for a read past the literal) */
	if (n > 5 && strncasecmp(name, "Meta-", 5) == 0) {
		memmove(name, name + 5, n - 4); /* the rest and its NUL */
		return true;
	}
	static const char *const tags[] = {"-Instruct", "-Chat", "-Base", "-hf",
					   "-it", "-Thinking"};
	for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++)
		if (ends_with_ci(name, n, tags[i])) {
			name[n - strlen(tags[i])] = '\0';
			return true;
		}
	/* a release tag: "-" and four digits (Qwen's -2507 is July 2025) */
	if (n > 5 && name[n - 5] == '-') {
		bool digits = true;
		for (size_t k = n - 4; k < n; k++)
			digits = digits && name[k] >= '0' && name[k] <= '9';
		if (digits) {
			name[n - 5] = '\0';
			return true;
		}
	}
	return false;
}

int lsim_model_match(const char *catalogue, const char *name,
		     struct lsim_model_arch *m, struct lsim_diag *d)
{
	struct lsim_doc *doc = NULL;
	struct lsim_node *list = NULL;
	int rc = load_catalogue(catalogue, &doc, &list, d);
	if (rc != 0)
		return rc;
	char cand[128], found[128] = "";
	snprintf(cand, sizeof cand, "%s", name);
	do {
		for (size_t i = 0; i < list->n && !found[0]; i++) {
			struct lsim_node *nm = lsim_node_get(list->items[i], "name");
			if (nm && nm->kind == LSIM_NODE_SCALAR &&
			    strcasecmp(nm->value, cand) == 0)
				snprintf(found, sizeof found, "%s", nm->value);
		}
	} while (!found[0] && lsim_model_strip_tag(cand));
	if (!found[0]) {
		/* the three nearest names to what is left after stripping */
		const char *best[3] = {NULL, NULL, NULL};
		size_t dist[3] = {SIZE_MAX, SIZE_MAX, SIZE_MAX};
		for (size_t i = 0; i < list->n; i++) {
			struct lsim_node *nm = lsim_node_get(list->items[i], "name");
			if (!nm || nm->kind != LSIM_NODE_SCALAR)
				continue;
			size_t e = lsim_edit_distance(cand, nm->value, true);
			for (int k = 0; k < 3; k++)
				if (e < dist[k]) { /* ties: catalogue order */
					for (int j = 2; j > k; j--) {
						best[j] = best[j - 1];
						dist[j] = dist[j - 1];
					}
					best[k] = nm->value;
					dist[k] = e;
					break;
				}
		}
		char base[200] = "";
		if (strcmp(cand, name) != 0)
			snprintf(base, sizeof base, " (nor is '%s', its name without "
				 "organisation, fine-tune and release tags)", cand);
		rc = lsim_diag_set(d, LSIM_ENOENT, catalogue, 0, 0, "model",
				   "model '%s' is not in the catalogue%s; nearest: %s%s%s%s%s",
				   name, base, best[0] ? best[0] : "(none)",
				   best[1] ? ", " : "", best[1] ? best[1] : "",
				   best[2] ? ", " : "", best[2] ? best[2] : "");
	}
	lsim_doc_destroy(doc);
	return rc != 0 ? rc : lsim_model_load(catalogue, found, m, d);
}

bool lsim_model_same(const char *a, const char *b)
{
	char x[128], y[128];
	snprintf(x, sizeof x, "%s", a);
	snprintf(y, sizeof y, "%s", b);
	while (lsim_model_strip_tag(x))
		;
	while (lsim_model_strip_tag(y))
		;
	return strcasecmp(x, y) == 0;
}

/* Splits s into words at spaces and '-' (at most max), in place. */
static int words(char *s, char **w, int max)
{
	int n = 0;
	char *save = NULL;
	for (char *t = strtok_r(s, " -_", &save); t && n < max;
	     t = strtok_r(NULL, " -_", &save))
		if (strcasecmp(t, "NVIDIA") != 0 && strcasecmp(t, "GeForce") != 0)
			w[n++] = t;
	return n;
}

/* Whether profile word p begins device word w: a prefix, but not one that
 * cuts a number ("L4" does not begin "L40S"; "SXM" begins "SXM4"). */
static bool word_begins(const char *w, const char *p)
{
	size_t n = strlen(p);
	if (strncasecmp(w, p, n) != 0)
		return false;
	return !(n > 0 && isdigit((unsigned char)p[n - 1]) && isdigit((unsigned char)w[n]));
}

/* Every word of the profile begins a word of the device; the word count,
 * or 0 when one does not. */
static int profile_fits(const char *profile, char *const *dev, int nd)
{
	char buf[128];
	snprintf(buf, sizeof buf, "%s", profile);
	char *pw[16];
	int np = words(buf, pw, 16);
	for (int i = 0; i < np; i++) {
		bool found = false;
		for (int j = 0; j < nd && !found; j++)
			found = word_begins(dev[j], pw[i]);
		if (!found)
			return 0;
	}
	return np;
}

/* The profile file's cuda_name, in buf ("" when it has none or cannot be
 * read: the loader reports a bad file when it is used). */
static void profile_cuda_name(const char *path, char *buf, size_t size)
{
	struct lsim_doc *doc = NULL;
	struct lsim_diag scratch = {0};
	buf[0] = '\0';
	if (lsim_doc_load_file(path, &doc, &scratch) != 0)
		return;
	const struct lsim_node *n = lsim_node_get(doc->root, "cuda_name");
	if (n && n->kind == LSIM_NODE_SCALAR)
		snprintf(buf, size, "%s", n->value);
	lsim_doc_destroy(doc);
}

int lsim_gpu_profile_match(const char *dir, const char *device, char *out,
			   size_t size, struct lsim_diag *d)
{
	char dbuf[256];
	snprintf(dbuf, sizeof dbuf, "%s", device);
	char *dev[32];
	int nd = words(dbuf, dev, 32);
	DIR *dh = opendir(dir);
	if (!dh)
		return lsim_diag_set(d, LSIM_ENOENT, dir, 0, 0, "", "cannot open the profiles folder");
	char best[128] = "", tie[128] = "";
	int best_n = 0;
	for (struct dirent *e; (e = readdir(dh)) != NULL;) {
		size_t len = strlen(e->d_name);
		if (e->d_name[0] == '.' || len < 6 || len >= sizeof best ||
		    strcmp(e->d_name + len - 5, ".yaml") != 0)
			continue;
		char name[128], path[1200], cuda[256];
		snprintf(name, sizeof name, "%.*s", (int)(len - 5), e->d_name);
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		profile_cuda_name(path, cuda, sizeof cuda);
		/* the name the card reports: above any count of words */
		int n = cuda[0] && strcasecmp(cuda, device) == 0 ? 1000
							       : profile_fits(name, dev, nd);
		if (n > best_n) {
			best_n = n;
			snprintf(best, sizeof best, "%s", name);
			tie[0] = 0;
		} else if (n > 0 && n == best_n) {
			/* readdir's order is the file system's: keep the pair in
			 * name order so the message does not depend on it */
			if (strcmp(name, best) < 0) {
				snprintf(tie, sizeof tie, "%s", best);
				snprintf(best, sizeof best, "%s", name);
			} else if (!tie[0] || strcmp(name, tie) < 0)
				snprintf(tie, sizeof tie, "%s", name);
		}
	}
	closedir(dh);
	if (best_n == 0)
		return lsim_diag_set(d, LSIM_ENOENT, "", 0, 0, "",
				     "no GPU profile of %s matches the device \"%s\"", dir, device);
	if (tie[0])
		return lsim_diag_set(d, LSIM_ENOENT, "", 0, 0, "",
				     "the device \"%s\" matches both GPU profiles %s and %s",
				     device, best, tie);
	snprintf(out, size, "%s", best);
	return 0;
}
