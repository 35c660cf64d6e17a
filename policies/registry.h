/*
 * registry.h - the list of built-in policies and lookup by kind and name.
 */
#ifndef LLMSIM_REGISTRY_H
#define LLMSIM_REGISTRY_H

#include <stddef.h>

#include "llmsim/policy.h"

/* Every built-in policy, in listing order. */
const struct lsim_policy_type *const *lsim_registry_all(size_t *n);

/* The built-in of this kind and name, or NULL. */
const struct lsim_policy_type *lsim_registry_find(enum lsim_policy_kind kind,
						   const char *name);

/* The built-in types, defined in policies/<kind>/. */
extern const struct lsim_policy_type lsim_mon_periodic, lsim_mon_ewma;
extern const struct lsim_policy_type lsim_sched_round_robin, lsim_sched_random,
	lsim_sched_least_outstanding, lsim_sched_least_load, lsim_sched_least_tokens,
	lsim_sched_kv_aware, lsim_sched_power_of_two, lsim_sched_prefix_affinity;
extern const struct lsim_policy_type lsim_queue_fcfs, lsim_queue_sjf,
	lsim_queue_priority, lsim_queue_edf;
extern const struct lsim_policy_type lsim_alloc_first_fit,
	lsim_alloc_best_fit, lsim_alloc_spread, lsim_alloc_lru_idle,
	lsim_alloc_lfu_idle;
extern const struct lsim_policy_type lsim_qos_none, lsim_qos_admission,
	lsim_qos_token_bucket;
extern const struct lsim_policy_type lsim_adapt_static, lsim_adapt_threshold,
	lsim_adapt_target_tracking, lsim_adapt_predictive, lsim_adapt_schedule;
extern const struct lsim_policy_type lsim_sync_none, lsim_sync_fixed,
	lsim_sync_heartbeat;
extern const struct lsim_policy_type lsim_prof_oracle, lsim_prof_mean,
	lsim_prof_bucket;
extern const struct lsim_policy_type lsim_prof_kproto; /* profiler/kproto.c */

#endif
