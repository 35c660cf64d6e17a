/*
 * config.h - configuration: a YAML document kept as a tree whose nodes
 * remember their file position, --set overrides on that tree, values with
 * units, and key tables that declare every key once (name, type, default,
 * bounds, unit, help). One table drives parsing, validation, the
 * effective-config dump and the reference docs.
 */
#ifndef LLMSIM_CONFIG_H
#define LLMSIM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llmsim/llmsim.h"
#include "llmsim/params.h"

enum lsim_node_kind { LSIM_NODE_SCALAR, LSIM_NODE_MAP, LSIM_NODE_SEQ };

struct lsim_node {
	enum lsim_node_kind kind;
	int line, col;	  /* 1-based position in the file */
	char *value;	  /* SCALAR: the text */
	size_t n;	  /* MAP: entries, SEQ: items */
	char **keys;	  /* MAP: entry keys */
	int *key_lines;	  /* MAP: line of each key */
	struct lsim_node **items;
	bool used;	  /* set by lsim_cfg_bind: the key was consumed */
};

struct lsim_doc {
	char *file; /* name used in diagnostics */
	struct lsim_node *root;
};

/* Loads a YAML file. A missing file is LSIM_ENOENT, a folder LSIM_EINVAL,
 * another open failure LSIM_EIO (line 0, empty key); bad YAML LSIM_EFORMAT. */
int lsim_doc_load_file(const char *path, struct lsim_doc **out,
		       struct lsim_diag *d);
int lsim_doc_load_string(const char *text, const char *name,
			 struct lsim_doc **out, struct lsim_diag *d);
void lsim_doc_destroy(struct lsim_doc *doc);

/* The value under key in a MAP node, or NULL. */
struct lsim_node *lsim_node_get(const struct lsim_node *map, const char *key);

/*
 * Applies "a.b.c=value": sets (or creates) the scalar at the dotted path;
 * numeric parts index sequences. Errors name the override text.
 */
int lsim_doc_set(struct lsim_doc *doc, const char *assignment,
		 struct lsim_diag *d);

/*
 * lsim_doc_set, where `choices` (NULL-terminated dotted paths, or NULL)
 * name the keys whose value is a choice by name: a plain name
 * (`adaptor: static`) or a section with `name` and the choice's parameters
 * (`adaptor: {name: threshold, high: 0.8}`). For those:
 *   "C=NAME" replaces the whole value, section or not, by the name (the
 *     old choice's parameters go with it);
 *   "C.name=NAME" to a different name drops the other keys of C's section
 *     but `plugin` (they were the old choice's parameters; the plugin is
 *     where the name is looked up), and makes a plain name a section;
 *   "C.K=V" on a plain name makes it a section {name: that name, K: V}.
 * So `--set adaptor=threshold --set adaptor.high=0.8` switches the policy
 * and sets its parameter, whatever the file had.
 */
int lsim_doc_set_choices(struct lsim_doc *doc, const char *assignment,
			 const char *const *choices, struct lsim_diag *d);

/* ---- values with units ---- */


/* lsim_units_parse: llmsim/params.h (policies parse values too). */

/*
 * Whether text is a number other than 0 written without the unit that a
 * value of type t (TIME, BYTES, BW, POWER, PRICE) must carry ("400" for a
 * bandwidth, "$2.5" for a price); then hint holds what to write instead
 * ("write 400GB/s or 400Gb/s"). lsim_units_parse refuses such text.
 */
bool lsim_units_missing(enum lsim_ktype t, const char *text, char *hint,
			size_t size);

/* Formats a value of type t with a readable unit, e.g. "3.35e+12B/s". */
void lsim_units_format(enum lsim_ktype t, double v, char *buf, size_t size);

/* ---- key tables (struct lsim_keydef: include/llmsim/params.h) ---- */

/*
 * Fills obj from the MAP node (NULL = all defaults) by keys[]: converts
 * units, applies defaults, checks bounds and choices. Keys in the map that
 * are not in keys[] and not in also_allowed (NULL-terminated list of
 * sub-section names the caller handles) are errors with a did-you-mean.
 * path is the dotted prefix used in messages ("cluster.nodes[0]").
 */
int lsim_cfg_bind(const struct lsim_doc *doc, const struct lsim_node *map,
		  const char *path, const struct lsim_keydef *keys,
		  size_t nkeys, const char *const *also_allowed, void *obj,
		  struct lsim_diag *d);

/* Error helper: names doc file and node position. */
int lsim_cfg_error(struct lsim_diag *d, const struct lsim_doc *doc,
		   const struct lsim_node *n, const char *key, int err,
		   const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* ---- growable text buffer (effective config, JSON) ---- */

struct lsim_buf {
	char *data;
	size_t len, cap;
	bool failed; /* an allocation failed; data holds what fit */
};

void lsim_buf_printf(struct lsim_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void lsim_buf_release(struct lsim_buf *b);

/*
 * Appends obj's values as YAML "key: value" lines at the given indent,
 * in table order, with units. The effective-config dump.
 */
void lsim_cfg_dump(struct lsim_buf *b, int indent,
		   const struct lsim_keydef *keys, size_t nkeys,
		   const void *obj);

/* Whether obj's value of key k reads as k's declared default (as the
 * dump would write both; false for a required key). */
bool lsim_cfg_is_default(const struct lsim_keydef *k, const void *obj);

/* As lsim_cfg_dump, leaving out the keys named in optional (a
 * NULL-terminated list) whose value is their default: keys added after
 * configurations were written, kept out of the echo (and so out of the run
 * id) of the configurations that do not use them. */
void lsim_cfg_dump_opt(struct lsim_buf *b, int indent,
		       const struct lsim_keydef *keys, size_t nkeys,
		       const void *obj, const char *const *optional);

/* Appends the keys' reference (name, type, default, bounds, help) as
 * Markdown table rows. */
void lsim_cfg_doc(struct lsim_buf *b, const struct lsim_keydef *keys,
		  size_t nkeys);

/* Lists of choices "a|b|c": the index of v (-1: not there), and the name
 * at idx copied into buf (NULL past the end). */
int lsim_choice_index(const char *choices, const char *v);
const char *lsim_choice_name(const char *choices, int idx, char *buf, size_t size);

/* Levenshtein distance of two names of at most 127 bytes (99 for longer
 * ones), comparing letters case-insensitively if fold_case. */
size_t lsim_edit_distance(const char *a, const char *b, bool fold_case);

/* Closest name in list (edit distance <= 3), or NULL. */
const char *lsim_did_you_mean(const char *word, const char *const *list,
			      size_t n);

#endif
