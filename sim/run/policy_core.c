/*
 * policy.c - creating policies from the scenario: lookup of built-ins by
 * kind and name (an unknown name lists the valid ones), loading of plugins
 * with dlopen and an ABI check, parameter binding into the policy's state,
 * its own RNG stream, and the listing behind `llmsim policies`.
 */
#define _GNU_SOURCE /* dladdr1: the ELF symbol of the plugin's entry point */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "learn/kproto.h"
#include "run/policy_core.h"
#include "registry.h"
#include "kernel/rng.h"

static const char *const role_keys[LSIM_ROLE_COUNT] = {
	"scheduler.router", "scheduler.queue", "profiler", "allocator", "qos",
	"monitor", "adaptor", "synchronizer",
};

const char *lsim_policy_role_key(enum lsim_policy_role r)
{
	return role_keys[r];
}

bool lsim_policy_fits(const struct lsim_policy_type *t, enum lsim_policy_role r)
{
	if (!t || !t->ops)
		return false;
	switch (r) {
	case LSIM_ROLE_ROUTER:
		return t->kind == LSIM_KIND_SCHEDULER &&
		       ((const struct lsim_scheduler_ops *)t->ops)->route;
	case LSIM_ROLE_QUEUE:
		return t->kind == LSIM_KIND_SCHEDULER &&
		       ((const struct lsim_scheduler_ops *)t->ops)->queue_key;
	case LSIM_ROLE_PROFILER:
		return t->kind == LSIM_KIND_PROFILER &&
		       ((const struct lsim_profiler_ops *)t->ops)->predict;
	case LSIM_ROLE_ALLOCATOR:
		return t->kind == LSIM_KIND_ALLOCATOR &&
		       ((const struct lsim_allocator_ops *)t->ops)->place;
	case LSIM_ROLE_QOS:
		return t->kind == LSIM_KIND_QOS &&
		       ((const struct lsim_qos_ops *)t->ops)->admit;
	case LSIM_ROLE_MONITOR:
		return t->kind == LSIM_KIND_MONITOR &&
		       ((const struct lsim_monitor_ops *)t->ops)->observe;
	case LSIM_ROLE_ADAPTOR:
		return t->kind == LSIM_KIND_ADAPTOR &&
		       ((const struct lsim_adaptor_ops *)t->ops)->desired;
	case LSIM_ROLE_SYNCHRONIZER:
		return t->kind == LSIM_KIND_SYNCHRONIZER &&
		       ((const struct lsim_synchronizer_ops *)t->ops)->dispatch_delay;
	default:
		return false;
	}
}

/* "a, b, c" of the types in list that fit the role. */
static void names_for(const struct lsim_policy_type *const *list, size_t n,
		      enum lsim_policy_role role, char *buf, size_t size,
		      const char **arr, size_t *n_arr)
{
	size_t len = 0;
	*n_arr = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (!lsim_policy_fits(list[i], role))
			continue;
		if (len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%s",
						len ? ", " : "", list[i]->name);
		if (*n_arr < 64)
			arr[(*n_arr)++] = list[i]->name;
	}
}

/* The size of a parameter of the type in the state it is bound into. */
static size_t ktype_size(enum lsim_ktype t)
{
	switch (t) {
	case LSIM_K_INT:
	case LSIM_K_TIME:
		return sizeof(int64_t);
	case LSIM_K_DOUBLE:
	case LSIM_K_BYTES:
	case LSIM_K_BW:
	case LSIM_K_POWER:
	case LSIM_K_PRICE:
		return sizeof(double);
	case LSIM_K_BOOL:
		return sizeof(bool);
	case LSIM_K_STRING:
		return sizeof(const char *);
	case LSIM_K_ENUM:
		return sizeof(int);
	default:
		return 0;
	}
}

/*
 * What is malformed in a plugin's policy type, or NULL: checked before
 * anything reads it, since a NULL name, a parameter written past the state
 * or an unknown kind would crash llmsim or corrupt its memory rather than
 * stop with a message.
 */
static const char *malformed(const struct lsim_policy_type *t, char *buf, size_t size)
{
	if (!t->name || !t->name[0])
		return "has no name (name is NULL or empty)";
	if ((unsigned)t->kind >= (unsigned)LSIM_KIND_COUNT) {
		snprintf(buf, size, "has kind %d, which is no policy kind", (int)t->kind);
		return buf;
	}
	if (!t->ops)
		return "has no ops";
	if (t->n_params > 0 && !t->params)
		return "declares parameters but gives no table (params is NULL)";
	if (t->n_params > 1024)
		return "declares more than 1024 parameters";
	for (size_t i = 0; i < t->n_params; i++) {
		const struct lsim_keydef *k = &t->params[i];
		size_t sz = ktype_size(k->type);
		if (!k->name || !k->name[0]) {
			snprintf(buf, size, "parameter %zu has no name", i);
			return buf;
		}
		if (sz == 0) {
			snprintf(buf, size, "parameter '%.64s' has type %d, which is no parameter type",
				 k->name, (int)k->type);
			return buf;
		}
		if (k->type == LSIM_K_ENUM && !k->choices) {
			snprintf(buf, size, "parameter '%.64s' is an enum without choices", k->name);
			return buf;
		}
		if (k->offset > t->state_size || sz > t->state_size - k->offset) {
			snprintf(buf, size,
				 "parameter '%.64s' lies at bytes %zu to %zu, past the state "
				 "of %zu bytes (state_size)",
				 k->name, k->offset, k->offset + sz, t->state_size);
			return buf;
		}
	}
	return NULL;
}

/* Whether sym, found by dlsym, is a function of the object (not data). */
static bool is_function(void *sym)
{
	Dl_info info;
	const ElfW(Sym) *es = NULL;
	if (!dladdr1(sym, &info, (void **)&es, RTLD_DL_SYMENT) || !es)
		return false;
	int type = ELF64_ST_TYPE(es->st_info); /* ELF32_ST_TYPE is the same */
	return type == STT_FUNC || type == STT_GNU_IFUNC;
}

static int load_plugin(const struct lsim_doc *doc, const struct lsim_node *at,
		       const char *key, const char *file, const char *name,
		       enum lsim_policy_role role, struct lsim_policy *p,
		       struct lsim_diag *d)
{
	p->dl = dlopen(file, RTLD_NOW | RTLD_LOCAL);
	if (!p->dl)
		return lsim_cfg_error(d, doc, at, key, LSIM_EPLUGIN,
				      "cannot load plugin: %s", dlerror());
	lsim_plugin_entry_fn entry;
	void *sym = dlsym(p->dl, LSIM_PLUGIN_ENTRY);
	memcpy(&entry, &sym, sizeof entry);
	if (!sym)
		return lsim_cfg_error(d, doc, at, key, LSIM_EPLUGIN,
				      "%s does not export %s()", file,
				      LSIM_PLUGIN_ENTRY);
	if (!is_function(sym))
		return lsim_cfg_error(d, doc, at, key, LSIM_EPLUGIN,
				      "%s exports %s as data, not as a function; define "
				      "it as the function lsim_plugin_entry_fn declares",
				      file, LSIM_PLUGIN_ENTRY);
	size_t n = 0;
	const struct lsim_policy_type *const *types = entry(&n);
	if (!types || n == 0)
		return lsim_cfg_error(d, doc, at, key, LSIM_EPLUGIN,
				      "%s exports no policy", file);
	const struct lsim_policy_type *pick = NULL;
	size_t fitting = 0;
	for (size_t i = 0; i < n; i++) {
		if (!types[i] || types[i]->abi < LSIM_POLICY_ABI_OLDEST ||
		    types[i]->abi > LSIM_POLICY_ABI)
			return lsim_cfg_error(d, doc, at, key, LSIM_EPLUGIN,
					      "%s: policy %zu was built for ABI %u, llmsim loads "
					      "ABI %u to %u: rebuild it against include/llmsim/policy.h",
					      file, i, types[i] ? types[i]->abi : 0,
					      LSIM_POLICY_ABI_OLDEST, LSIM_POLICY_ABI);
		char why[160];
		const char *bad = malformed(types[i], why, sizeof why);
		if (bad)
			return lsim_cfg_error(d, doc, at, key, LSIM_EPLUGIN,
					      "%s: policy %zu (%.64s) %s", file, i,
					      types[i]->name ? types[i]->name : "unnamed", bad);
		if (!lsim_policy_fits(types[i], role))
			continue;
		fitting++;
		if (!name || strcmp(types[i]->name, name) == 0)
			pick = pick ? pick : types[i];
	}
	if (name && !pick) {
		char list[512];
		const char *arr[64];
		size_t na;
		names_for(types, n, role, list, sizeof list, arr, &na);
		return lsim_cfg_error(d, doc, at, key, LSIM_ENOENT,
				      "%s has no %s policy '%s'; it has: %s", file,
				      role_keys[role], name, list[0] ? list : "none");
	}
	if (!name && fitting != 1)
		return lsim_cfg_error(d, doc, at, key, LSIM_EINVAL,
				      "%s holds %zu policies that fit %s: say which with name:",
				      file, fitting, role_keys[role]);
	p->type = pick;
	return 0;
}

int lsim_policy_create(const struct lsim_doc *doc, const struct lsim_node *node,
		       const char *path, enum lsim_policy_role role,
		       const char *default_name, const char *base_dir,
		       uint64_t seed, int32_t n_instances, int32_t n_classes,
		       int32_t n_groups, struct lsim_policy **out,
		       struct lsim_diag *d)
{
	struct lsim_policy *p = calloc(1, sizeof *p);
	if (!p)
		return LSIM_ENOMEM;
	p->role = role;
	const char *name = default_name;
	const struct lsim_node *params = NULL, *name_node = node, *plugin_node = NULL;
	char key[160];
	int rc = 0;
	if (node && node->kind == LSIM_NODE_SCALAR) {
		name = node->value;
	} else if (node && node->kind == LSIM_NODE_MAP) {
		params = node;
		const struct lsim_node *nm = lsim_node_get(node, "name");
		plugin_node = lsim_node_get(node, "plugin");
		if (nm && nm->kind == LSIM_NODE_SCALAR) {
			name = nm->value;
			name_node = nm;
		} else if (nm) {
			rc = lsim_cfg_error(d, doc, nm, path, LSIM_EINVAL,
					    "name must be a single value");
		} else if (plugin_node) {
			name = NULL;
		}
	} else if (node) {
		rc = lsim_cfg_error(d, doc, node, path, LSIM_EINVAL,
				    "expected a policy name or a section");
	}
	if (rc == 0 && plugin_node) {
		snprintf(key, sizeof key, "%s.plugin", path);
		if (plugin_node->kind != LSIM_NODE_SCALAR) {
			rc = lsim_cfg_error(d, doc, plugin_node, key, LSIM_EINVAL,
					    "plugin must be a file path");
		} else {
			p->plugin = strdup(plugin_node->value);
			size_t len = strlen(base_dir) + strlen(plugin_node->value) + 2;
			char *file = malloc(len);
			if (!p->plugin || !file) {
				rc = LSIM_ENOMEM;
			} else {
				if (plugin_node->value[0] == '/')
					snprintf(file, len, "%s", plugin_node->value);
				else
					snprintf(file, len, "%s/%s", base_dir,
						 plugin_node->value);
				rc = load_plugin(doc, plugin_node, key, file, name,
						 role, p, d);
			}
			free(file);
		}
	} else if (rc == 0) {
		static const enum lsim_policy_kind kinds[LSIM_ROLE_COUNT] = {
			LSIM_KIND_SCHEDULER, LSIM_KIND_SCHEDULER,
			LSIM_KIND_PROFILER, LSIM_KIND_ALLOCATOR, LSIM_KIND_QOS,
			LSIM_KIND_MONITOR, LSIM_KIND_ADAPTOR,
			LSIM_KIND_SYNCHRONIZER,
		};
		p->type = lsim_registry_find(kinds[role], name);
		if (!lsim_policy_fits(p->type, role)) {
			size_t n;
			const struct lsim_policy_type *const *all = lsim_registry_all(&n);
			char list[512];
			const char *arr[64];
			size_t na;
			names_for(all, n, role, list, sizeof list, arr, &na);
			const char *best = lsim_did_you_mean(name, arr, na);
			snprintf(key, sizeof key, "%s%s", path,
				 name_node == node ? "" : ".name");
			rc = lsim_cfg_error(d, doc, name_node ? name_node : node, key,
					    LSIM_ENOENT,
					    "unknown %s policy '%s'%s%s%s; valid: %s",
					    role_keys[role], name,
					    best ? " (did you mean '" : "",
					    best ? best : "", best ? "'?)" : "", list);
			p->type = NULL;
		}
	}
	if (rc == 0 && p->type->state_size > 0 &&
	    !(p->state = calloc(1, p->type->state_size)))
		rc = LSIM_ENOMEM;
	if (rc == 0) {
		static const char *const reserved[] = {"name", "plugin", NULL};
		rc = lsim_cfg_bind(doc, params, path, p->type->params,
				   p->type->n_params, reserved, p->state, d);
	}
	if (rc == 0) {
		p->rng = lsim_rng_create(seed, 0, LSIM_STREAM_POLICY_BASE + (uint64_t)role);
		if (!p->rng)
			rc = LSIM_ENOMEM;
	}
	if (rc == 0) /* the core, not the policy, reads a kproto model file */
		rc = lsim_kproto_attach(p, doc, params, path, base_dir, d);
	if (rc == 0 && p->type->init) {
		struct lsim_policy_ctx ctx = {
			.seed = lsim_stream_seed(seed, 0,
						 LSIM_STREAM_POLICY_BASE + (uint64_t)role),
			.rng = p->rng,
			.n_instances = n_instances,
			.n_classes = n_classes > 0 ? n_classes : 1,
			.n_groups = n_groups > 0 ? n_groups : 1,
		};
		rc = p->type->init(p->state, &ctx);
		if (rc != 0)
			rc = lsim_cfg_error(d, doc, node, path, rc < 0 ? rc : LSIM_EPLUGIN,
					    "policy %s failed to start: %s",
					    p->type->name, lsim_strerror(rc));
		else
			p->initialized = true;
	}
	if (rc != 0) {
		lsim_policy_destroy(p);
		return rc;
	}
	*out = p;
	return 0;
}

void lsim_policy_destroy(struct lsim_policy *p)
{
	if (!p)
		return;
	if (p->initialized && p->type->fini)
		p->type->fini(p->state);
	free(p->state);
	gsl_rng_free(p->rng);
	if (p->dl)
		dlclose(p->dl);
	free(p->plugin);
	free(p);
}

void lsim_policy_dump(struct lsim_buf *b, int indent, const struct lsim_policy *p)
{
	lsim_buf_printf(b, "%*sname: %s\n", indent, "", p->type->name);
	if (p->plugin)
		lsim_buf_printf(b, "%*splugin: \"%s\"\n", indent, "", p->plugin);
	lsim_cfg_dump(b, indent, p->type->params, p->type->n_params, p->state);
}

int lsim_policy_list(struct lsim_buf *b, const char *kind, struct lsim_diag *d)
{
	int want = -1;
	if (kind) {
		for (int k = 0; k < LSIM_KIND_COUNT; k++)
			if (strcmp(kind, lsim_policy_kind_name((enum lsim_policy_kind)k)) == 0)
				want = k;
		if (want < 0)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "KIND",
					     "unknown policy kind '%s'; kinds: monitor, scheduler, "
					     "allocator, profiler, synchronizer, qos, adaptor",
					     kind);
	}
	size_t n;
	const struct lsim_policy_type *const *all = lsim_registry_all(&n);
	for (int k = 0; k < LSIM_KIND_COUNT; k++) {
		if (want >= 0 && k != want)
			continue;
		bool any = false;
		for (size_t i = 0; i < n; i++) {
			const struct lsim_policy_type *t = all[i];
			if ((int)t->kind != k)
				continue;
			if (!any)
				lsim_buf_printf(b, "%s:\n", lsim_policy_kind_name(t->kind));
			any = true;
			const char *role = "";
			if (lsim_policy_fits(t, LSIM_ROLE_ROUTER))
				role = " [scheduler.router]";
			else if (lsim_policy_fits(t, LSIM_ROLE_QUEUE))
				role = " [scheduler.queue]";
			lsim_buf_printf(b, "  %-18s %s%s\n", t->name, t->summary, role);
			for (size_t j = 0; j < t->n_params; j++) {
				const struct lsim_keydef *p = &t->params[j];
				char lo[48], hi[48], bounds[112] = "";
				if (p->min <= p->max) {
					lsim_units_format(p->type, p->min, lo, sizeof lo);
					lsim_units_format(p->type, p->max, hi, sizeof hi);
					snprintf(bounds, sizeof bounds, ", in [%s, %s]", lo, hi);
				}
				lsim_buf_printf(b, "      %-16s default %s%s%s%s  %s\n",
						p->name, p->def ? p->def : "(required)",
						p->unit && p->unit[0] ? " " : "",
						p->unit ? p->unit : "", bounds, p->help);
			}
		}
		if (!any && want >= 0)
			lsim_buf_printf(b, "%s:\n  (none yet)\n",
					lsim_policy_kind_name((enum lsim_policy_kind)k));
	}
	return 0;
}
