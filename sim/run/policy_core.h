/*
 * policy_core.h - instances of policies: a type (built-in or from a
 * plugin), its state with parameters bound from the scenario, its RNG
 * stream, and the handle of the shared object it came from.
 */
#ifndef LLMSIM_SIM_POLICY_H
#define LLMSIM_SIM_POLICY_H

#include <gsl/gsl_rng.h>

#include "kernel/config.h"
#include "llmsim/policy.h"

/* The slot a policy fills; it decides which ops it must provide. */
enum lsim_policy_role {
	LSIM_ROLE_ROUTER,   /* scheduler with route() */
	LSIM_ROLE_QUEUE,    /* scheduler with queue_key() */
	LSIM_ROLE_PROFILER, /* profiler with predict() */
	LSIM_ROLE_ALLOCATOR, /* allocator with place() */
	LSIM_ROLE_QOS,	     /* qos with admit() */
	LSIM_ROLE_MONITOR,   /* monitor with observe() */
	LSIM_ROLE_ADAPTOR,   /* adaptor with desired() */
	LSIM_ROLE_SYNCHRONIZER, /* synchronizer with dispatch_delay() */
	LSIM_ROLE_COUNT
};

struct lsim_policy {
	const struct lsim_policy_type *type;
	enum lsim_policy_role role;
	void *state;
	gsl_rng *rng;
	void *dl;	    /* dlopen handle, NULL for built-ins */
	char *plugin;	    /* plugin path as written, NULL for built-ins */
	bool initialized;
};

/* Does type t fit role r? */
bool lsim_policy_fits(const struct lsim_policy_type *t, enum lsim_policy_role r);
const char *lsim_policy_role_key(enum lsim_policy_role r);

/*
 * Creates the policy described by node (a name, or a section with `name:`
 * or `plugin:` and parameters; NULL = default_name). Plugin paths are
 * relative to base_dir. path names the key in messages.
 */
int lsim_policy_create(const struct lsim_doc *doc, const struct lsim_node *node,
		       const char *path, enum lsim_policy_role role,
		       const char *default_name, const char *base_dir,
		       uint64_t seed, int32_t n_instances, int32_t n_classes,
		       int32_t n_groups, struct lsim_policy **out,
		       struct lsim_diag *d);
void lsim_policy_destroy(struct lsim_policy *p);

/* Appends "name: ...", "plugin: ..." and the parameters at indent. */
void lsim_policy_dump(struct lsim_buf *b, int indent, const struct lsim_policy *p);

/* Appends a listing of the built-ins (all kinds, or one) for `llmsim policies`. */
int lsim_policy_list(struct lsim_buf *b, const char *kind, struct lsim_diag *d);

#endif
