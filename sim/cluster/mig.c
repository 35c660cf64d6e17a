/*
 * mig.c - the MIG profile table of each GPU kind that has MIG (NVIDIA
 * Multi-Instance GPU user guide, "Supported MIG Profiles": the fraction of
 * SMs is g/7 and the fraction of memory, of L2 and of the memory
 * controllers m/8 for every profile of the A100, H100, H200 and B200),
 * and the slice of a GPU profile that one MIG instance sees.
 */
#include <stdio.h>
#include <string.h>

#include "cluster/mig.h"

/* The six GPU instance profiles of a seven-slice GPU, in the guide's
 * order; the names differ by the memory of the product. */
#define MIG_KIND(kind, a, b, c, d, e, f)                                        \
	{kind, {{a, 1, 1}, {b, 1, 2}, {c, 2, 2}, {d, 3, 4}, {e, 4, 4}, {f, 7, 8}}}

static const struct {
	const char *gpu;
	struct lsim_mig_profile p[6];
} kinds[] = {
	/* A100-SXM4-40GB table of the guide */
	MIG_KIND("A100-40GB-SXM", "1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
	/* "For A100-SXM4-80GB, the profile names will change according to
	 * the memory proportion" (the guide); the PCIe 80GB part likewise */
	MIG_KIND("A100-80GB-SXM", "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
	MIG_KIND("A100-80GB-PCIe", "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
	/* H100 80GB table of the guide (SXM5 and PCIe) */
	MIG_KIND("H100-SXM", "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
	MIG_KIND("H100-PCIe", "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
	/* H200 141GB table of the guide */
	MIG_KIND("H200-SXM", "1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
	/* B200 180GB table of the guide */
	MIG_KIND("B200-SXM", "1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"),
};
#define N_KINDS (sizeof kinds / sizeof kinds[0])

static int kind_index(const char *gpu)
{
	for (size_t k = 0; gpu && k < N_KINDS; k++)
		if (strcmp(kinds[k].gpu, gpu) == 0)
			return (int)k;
	return -1;
}

int lsim_mig_has(const char *gpu)
{
	return kind_index(gpu) >= 0;
}

const struct lsim_mig_profile *lsim_mig_find(const char *gpu, const char *name)
{
	int k = kind_index(gpu);
	for (size_t j = 0; k >= 0 && name && j < 6; j++)
		if (strcmp(kinds[k].p[j].name, name) == 0)
			return &kinds[k].p[j];
	return NULL;
}

void lsim_mig_list(const char *gpu, char *buf, size_t size)
{
	int k = kind_index(gpu);
	size_t n = 0;
	buf[0] = '\0';
	for (size_t j = 0; j < (k >= 0 ? 6 : N_KINDS) && n < size; j++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", j ? ", " : "",
				      k >= 0 ? kinds[k].p[j].name : kinds[j].gpu);
}

void lsim_mig_apply(const struct lsim_mig_profile *p, struct lsim_gpu_profile *g)
{
	g->bf16_flops *= (double)p->compute / LSIM_MIG_COMPUTE_SLICES;
	g->hbm_bw *= (double)p->memory / LSIM_MIG_MEMORY_SLICES;
	g->hbm_bytes *= (double)p->memory / LSIM_MIG_MEMORY_SLICES;
}
