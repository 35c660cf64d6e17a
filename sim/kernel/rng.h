/*
 * rng.h - random-number streams. Each purpose (arrivals, lengths, service
 * times, each policy ...) has its own GSL generator seeded from
 * (seed, run index, stream id), so changing one consumer's draws never
 * shifts another's sequence.
 */
#ifndef LLMSIM_RNG_H
#define LLMSIM_RNG_H

#include <gsl/gsl_rng.h>
#include <stdint.h>

enum lsim_stream {
	LSIM_STREAM_ARRIVALS = 1,
	LSIM_STREAM_LENGTHS = 2,
	LSIM_STREAM_SERVICE = 3,
	LSIM_STREAM_ROUTING = 4,
	LSIM_STREAM_FAILURES = 5,
	LSIM_STREAM_CLASSES = 6,
	LSIM_STREAM_SHAPING = 7,
	LSIM_STREAM_MODELS = 8,  /* model of a request by share */
	LSIM_STREAM_JOBS = 9,    /* training jobs: drawn lists, GPU failures */
	LSIM_STREAM_LORA = 10,   /* a request's LoRA adapter */
	LSIM_STREAM_POLICY_BASE = 100, /* + policy index */
	LSIM_STREAM_COPY_BASE = 1000,  /* + superposed trace copy index */
};

/* Derives the 64-bit seed of one stream (splitmix64 mixing). */
uint64_t lsim_stream_seed(uint64_t seed, uint64_t run, uint64_t stream);

/* A new gsl_rng (mt19937) seeded for the stream; NULL if out of memory. */
gsl_rng *lsim_rng_create(uint64_t seed, uint64_t run, uint64_t stream);

#endif
