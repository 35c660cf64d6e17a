/*
 * array.h - growing an array by doubling, the one way the core grows its
 * lists (from 16 elements).
 */
#ifndef LLMSIM_ARRAY_H
#define LLMSIM_ARRAY_H

#include <stddef.h>

/* Makes *p (*cap elements of elem bytes) hold at least need elements,
 * doubling from 16: 0, or LSIM_ENOMEM with *p and *cap unchanged. */
int lsim_grow(void **p, size_t *cap, size_t need, size_t elem);

#endif
