/*
 * rng.c - seeding of per-purpose GSL random streams from
 * (seed, run, stream) with splitmix64, so streams are independent and
 * reproducible.
 */
#include "kernel/rng.h"

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint64_t lsim_stream_seed(uint64_t seed, uint64_t run, uint64_t stream)
{
	return splitmix64(splitmix64(splitmix64(seed) ^ run) ^ stream);
}

gsl_rng *lsim_rng_create(uint64_t seed, uint64_t run, uint64_t stream)
{
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	if (!r)
		return NULL;
	uint64_t s = lsim_stream_seed(seed, run, stream);
	/* mt19937 takes an unsigned long; fold to 32 bits it actually uses,
	 * avoiding 0 (which GSL maps to its default seed). */
	unsigned long s32 = (unsigned long)((s ^ (s >> 32)) & 0xffffffffUL);
	gsl_rng_set(r, s32 ? s32 : 1UL);
	return r;
}
