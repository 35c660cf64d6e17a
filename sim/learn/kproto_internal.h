/*
 * kproto_internal.h - what the pieces of the kproto task profiler share
 * (kproto.c, kproto_model.c, kproto_file.c): helpers on name and level
 * lists, number parsing, and the allocation of clusters and models.
 * Included by nothing else.
 */
#ifndef LLMSIM_KPROTO_INTERNAL_H
#define LLMSIM_KPROTO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "kernel/config.h"
#include "learn/kproto.h"

/* kproto.c */
void lsim_kp_free_names(char **v, size_t n);
void lsim_kp_free_levels(char ***levels, size_t *n_levels, size_t n_cat);
/* Appends label to a level list that grows at powers of two. */
int lsim_kp_push_level(char ***list, size_t *n, const char *label);
int32_t lsim_kp_find_label(char *const *list, size_t n, const char *label);
/* A finite decimal number filling the whole text. */
int lsim_kp_parse_number(const char *s, double *out);
int lsim_kp_clusters_alloc(struct lsim_kp_clusters *c, size_t k, size_t n_num,
			   size_t n_cat);

/* kproto_model.c */
int lsim_kp_no_xgboost(struct lsim_diag *d, const char *file, int line,
		       enum lsim_kp_kind kind);
/* Allocates the name, level and regressor arrays of a model whose
 * counts and k are set. */
int lsim_kp_model_alloc(struct lsim_kproto_model *m);
int lsim_kp_model_scratch(struct lsim_kproto_model *m);

#endif
