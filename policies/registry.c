/*
 * registry.c - the one list of every built-in policy. To add a policy,
 * define its type object in policies/<kind>/ and add one line here.
 */
#include <string.h>

#include "registry.h"

static const struct lsim_policy_type *const builtins[] = {
	/* monitor */
	&lsim_mon_periodic,
	&lsim_mon_ewma,
	/* scheduler: routers */
	&lsim_sched_round_robin,
	&lsim_sched_random,
	&lsim_sched_least_outstanding,
	&lsim_sched_least_load,
	&lsim_sched_least_tokens,
	&lsim_sched_kv_aware,
	&lsim_sched_power_of_two,
	&lsim_sched_prefix_affinity,
	/* scheduler: queue orders */
	&lsim_queue_fcfs,
	&lsim_queue_sjf,
	&lsim_queue_priority,
	&lsim_queue_edf,
	/* allocator */
	&lsim_alloc_first_fit,
	&lsim_alloc_best_fit,
	&lsim_alloc_spread,
	&lsim_alloc_lru_idle,
	&lsim_alloc_lfu_idle,
	/* qos */
	&lsim_qos_none,
	&lsim_qos_admission,
	&lsim_qos_token_bucket,
	/* adaptor */
	&lsim_adapt_static,
	&lsim_adapt_threshold,
	&lsim_adapt_target_tracking,
	&lsim_adapt_predictive,
	&lsim_adapt_schedule,
	/* synchronizer */
	&lsim_sync_none,
	&lsim_sync_fixed,
	&lsim_sync_heartbeat,
	/* profiler */
	&lsim_prof_oracle,
	&lsim_prof_mean,
	&lsim_prof_bucket,
	&lsim_prof_kproto,
};

const struct lsim_policy_type *const *lsim_registry_all(size_t *n)
{
	*n = sizeof builtins / sizeof builtins[0];
	return builtins;
}

const struct lsim_policy_type *lsim_registry_find(enum lsim_policy_kind kind,
						   const char *name)
{
	for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
		if (builtins[i]->kind == kind && strcmp(builtins[i]->name, name) == 0)
			return builtins[i];
	return NULL;
}

const char *lsim_policy_kind_name(enum lsim_policy_kind k)
{
	static const char *const names[LSIM_KIND_COUNT] = {
		"monitor", "scheduler", "allocator", "profiler",
		"synchronizer", "qos", "adaptor",
	};
	return (unsigned)k < LSIM_KIND_COUNT ? names[k] : "?";
}
