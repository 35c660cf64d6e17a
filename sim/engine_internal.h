/*
 * engine_internal.h - engine calls for the simulator and its tests, not
 * part of the public API: the engine's error state, and a way to reach
 * states a normal run only meets after billions of events.
 */
#ifndef LLMSIM_ENGINE_INTERNAL_H
#define LLMSIM_ENGINE_INTERNAL_H

#include <stdint.h>

struct lsim_engine;

/* Sequence numbers are renumbered before they reach limit (normally
 * UINT32_MAX); a test sets a small limit to exercise the renumbering. */
void lsim_engine_set_seq_limit(struct lsim_engine *eng, uint32_t limit);

/* LSIM_ENOMEM once memory ran out inside the engine (lsim_run then stops
 * and runs nothing more), else 0. */
int lsim_engine_error(const struct lsim_engine *eng);

#endif
