/*
 * hw.h - hardware profiles (one GPU kind and its node) and model
 * architectures, as loaded from calibrate/profiles/NAME.yaml and
 * calibrate/models.yaml. Plain data: everything in SI units (bytes,
 * bytes/s, FLOP/s, watts, seconds, USD).
 */
#ifndef LLMSIM_HW_H
#define LLMSIM_HW_H

#include <stdbool.h>
#include <stdint.h>

#include "llmsim/llmsim.h"

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
	double allreduce_latency_s; /* fixed latency of one all-reduce */
	double allreduce_step_s;    /* latency of each of its ring's 2(n-1) steps */
	/* Kernels slow down with the GPU's PCIe load u: time is multiplied by
	 * lsim_pcie_slowdown(pcie_interference, pcie_interference_exp, u). */
	double pcie_interference;     /* a: 0 = no slowdown */
	double pcie_interference_exp; /* b */
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

struct lsim_diag;

/*
 * Loads dir/NAME.yaml into *g. Unknown keys, missing keys and bad units are
 * errors naming file, line and key.
 */
int lsim_gpu_profile_load(const char *dir, const char *name,
			  struct lsim_gpu_profile *g, struct lsim_diag *d);

/* Finds model NAME in the catalogue file; the error lists the known ones. */
int lsim_model_load(const char *catalogue, const char *name,
		    struct lsim_model_arch *m, struct lsim_diag *d);

/*
 * The folder shipped data (calibrate/) is read from: $LLMSIM_DATA_DIR if
 * set, else the source tree's calibrate/ as configured at build time.
 */
const char *lsim_data_dir(void);

#endif
