/*
 * hw.h - hardware profiles (one GPU kind and its node) and model
 * architectures, as loaded from calibrate/profiles/NAME.yaml and
 * calibrate/models.yaml. Plain data: everything in SI units (bytes,
 * bytes/s, FLOP/s, watts, seconds, USD).
 */
#ifndef LLMSIM_HW_H
#define LLMSIM_HW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llmsim/llmsim.h"

/* How the GPUs of a node reach each other (the profile's gpu_fabric). */
enum lsim_fabric {
	LSIM_FABRIC_NVSWITCH,	  /* every GPU's NVLinks to NVSwitches */
	LSIM_FABRIC_NVLINK_PAIRS, /* NVLink bridges join GPUs 2k and 2k+1; PCIe between pairs */
	LSIM_FABRIC_MESH,	  /* a direct link between every two GPUs (xGMI) */
	LSIM_FABRIC_PCIE,	  /* PCIe only */
	LSIM_FABRIC_COUNT
};

/* "nvswitch|nvlink_pairs|mesh|pcie": the profile key's choices. */
#define LSIM_FABRIC_CHOICES "nvswitch|nvlink_pairs|mesh|pcie"

struct lsim_gpu_profile {
	char name[64];	       /* e.g. "H100-SXM" */
	char source[256];      /* where the numbers come from */
	char provenance[32];   /* datasheet | measured | estimate | mixed */
	double bf16_flops;     /* peak dense bf16/fp16 tensor FLOP/s */
	double hbm_bytes;      /* device memory capacity */
	double hbm_bw;	       /* peak device memory bandwidth, B/s */
	double pcie_bw;	       /* host link bandwidth per direction, B/s */
	double nvlink_bw;      /* GPU-GPU bandwidth per direction, B/s (0: none) */
	double tdp_w;	       /* board power limit */
	double idle_w;	       /* power at idle */
	double price_per_hour; /* USD per GPU-hour, on demand */
	/* Roofline efficiencies (fractions of peak). */
	double mfu_max;	     /* best achievable fraction of bf16_flops */
	double mfu_half_tokens; /* tokens at which half of mfu_max is reached */
	double mbu;	     /* achievable fraction of hbm_bw */
	double launch_s;     /* per-kernel launch overhead, seconds */
	/* the serving stack's host (CPU) time to issue one kernel; the host
	 * issues while the GPU runs, so an iteration takes the longer of the
	 * two (docs/perf-model.md); 0: not modelled */
	double host_issue_s;
	/* Kernels slow down with the GPU's PCIe load u: time is multiplied by
	 * lsim_pcie_slowdown(pcie_interference, pcie_interference_exp, u). */
	double pcie_interference;     /* a: 0 = no slowdown */
	double pcie_interference_exp; /* b */
	/* How the GPUs of a node reach each other (sim/cluster/collective.h times
	 * collectives on them). */
	enum lsim_fabric fabric;
	int nvlink_links;	   /* NVLinks (or mesh links) per GPU; 0: unknown */
	double compute_capability; /* e.g. 8.0, 9.0; 0: not an NVIDIA GPU */
	bool gpu_p2p;		   /* PCIe peer-to-peer between GPUs */
	int pcie_switch_gpus;	   /* GPUs behind one PCIe switch */
};

struct lsim_model_arch {
	char name[64];	 /* e.g. "Llama-3.1-8B" */
	char source[256];
	int n_layers;
	int hidden;	 /* d_model */
	int n_heads;
	int n_kv_heads;
	int head_dim;
	int intermediate; /* MLP inner size (per expert for MoE) */
	int vocab;
	bool gated_mlp;	 /* SwiGLU-style: 3 matrices instead of 2 */
	bool tied_embeddings; /* the LM head is the embedding matrix */
	int n_experts;	 /* 0 for dense models */
	int experts_per_token;
	double params;	 /* total parameter count */
	int bytes_per_param; /* 2 for bf16 */
	int max_context;
};

/* slowdown(u) = 1 + a * u / (1 - u)^b for PCIe utilisation u, clamped to
 * [0, 0.99]: queueing-like growth towards saturation. */
double lsim_pcie_slowdown(double a, double b, double u);

/* Bytes of KV cache per token (all layers, K and V). */
double lsim_model_kv_bytes_per_token(const struct lsim_model_arch *m);
/* Bytes of weights. */
double lsim_model_weight_bytes(const struct lsim_model_arch *m);
/* Bytes of the routed experts' weights (0 for a dense model): per layer
 * n_experts MLPs of hidden x intermediate, 3 matrices if gated, else 2. */
double lsim_model_expert_bytes(const struct lsim_model_arch *m);

struct lsim_diag;

/*
 * Loads dir/NAME.yaml into *g; with dir NULL, profiles/NAME.yaml found on
 * the data search path (lsim_data_find). A NAME that is a path
 * (lsim_data_is_path) is that file, and the profile's name is the file's
 * name without ".yaml". Unknown keys, missing keys and bad units are errors
 * naming file, line and key.
 */
int lsim_gpu_profile_load(const char *dir, const char *name,
			  struct lsim_gpu_profile *g, struct lsim_diag *d);

/* Finds model NAME in the catalogue file; with catalogue NULL, in each
 * models.yaml on the data search path in turn (lsim_data_find's order). A
 * NAME that is a path is a catalogue file holding exactly that one model.
 * The error lists the known ones. */
int lsim_model_load(const char *catalogue, const char *name,
		    struct lsim_model_arch *m, struct lsim_diag *d);

/*
 * Strips one published-name decoration from the end (or the front) of
 * name, in place: an organisation prefix ("Qwen/"), a leading "Meta-", or
 * a trailing fine-tune or release tag: -Instruct, -Chat, -Base, -hf, -it,
 * -Thinking, or a 4-digit release tag such as -2507 (case-insensitive).
 * Quantisation tags (-FP8, -AWQ, ...) and versions (-v0.2) are kept: they
 * name different weights. Returns whether anything was stripped.
 */
bool lsim_model_strip_tag(char *name);

/*
 * Finds a published model name (a vLLM run's "model") in the catalogue:
 * the name itself, then each name lsim_model_strip_tag leaves, compared
 * case-insensitively, the first that is in the catalogue winning. The
 * catalogue name used goes to m->name. Unmatched: LSIM_ENOENT naming the
 * nearest catalogue names (edit distance to the fully stripped name).
 */
int lsim_model_match(const char *catalogue, const char *name,
		     struct lsim_model_arch *m, struct lsim_diag *d);

/* Whether two published model names are one model: equal
 * (case-insensitively) once lsim_model_strip_tag has stripped all it can
 * from each ("Qwen/Qwen3-30B-A3B-Instruct-2507" is "Qwen3-30B-A3B"). */
bool lsim_model_same(const char *a, const char *b);

/*
 * The profile of dir whose name is a CUDA device name's (a vLLM run's
 * hardware.device_name): every '-'-separated word of the profile's name
 * begins one word of the device's (case-insensitive; "NVIDIA" and
 * "GeForce" left out; a prefix may not cut a number, so "L4" does not
 * begin "L40S"), so "RTX-PRO-6000" is "NVIDIA RTX PRO 6000
 * Blackwell Server Edition" and "A100-80GB-SXM" is "NVIDIA
 * A100-SXM4-80GB". The profile with the most words wins; a tie between
 * two is ambiguous. A profile whose cuda_name is the device's name
 * (case-insensitive) wins over any words: "NVIDIA H100 80GB HBM3" does
 * not say SXM. The name goes to out. LSIM_ENOENT when none matches or two
 * tie (d says which).
 */
int lsim_gpu_profile_match(const char *dir, const char *device, char *out,
			   size_t size, struct lsim_diag *d);

/*
 * The folder shipped data (calibrate/) is read from: for a binary in the
 * build tree it was built in (a development build, the tests), the source
 * tree's calibrate/; else (installed) PREFIX/share/llmsim, where `meson
 * install` puts that data.
 */
const char *lsim_data_dir(void);

/*
 * Finds the data file REL (e.g. "profiles/H100-SXM.yaml", "models.yaml")
 * on the search path: each folder of $LLMSIM_DATA_DIR (':'-separated, in
 * order; the CLI's --data-dir puts its folders first), then the shipped
 * data. The first readable one goes to out; none: the shipped path goes
 * to out and LSIM_ENOENT is returned.
 */
int lsim_data_find(const char *rel, char *out, size_t size);

/* Whether a profile or model name is given as a file: it holds a '/' or
 * ends in ".yaml". */
bool lsim_data_is_path(const char *name);

#endif
