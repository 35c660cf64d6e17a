/*
 * infile.h - opening an input file (scenario, trace, profile, table)
 * without blocking: a FIFO, socket or device given where a file is
 * expected is refused instead of waiting for ever on its other end; and
 * checking that an output replaces only a regular file; syncing a file
 * written before it is renamed into place.
 */
#ifndef LLMSIM_INFILE_H
#define LLMSIM_INFILE_H

#include <stdio.h>

#include "llmsim/llmsim.h"

/* Opens path for reading ("rb") without blocking. Returns 0 and *out for
 * a regular file or a folder (callers name a folder themselves); 1 with
 * errno set when it cannot be opened (callers word that message); or
 * LSIM_EINVAL with d naming path and key when it is anything else (a
 * FIFO, a socket, a device), which would block or never end. */
int lsim_open_input(const char *path, const char *key, FILE **out,
		    struct lsim_diag *d);

/* Flushes path's data to the disk (fsync), so that a rename over an
 * older file cannot leave it empty after a power cut: 0, or -1 with
 * errno. A folder syncs its entries (the renames made in it). */
int lsim_sync_path(const char *path);

/* 0 when path is absent or a regular file, which an output may replace;
 * else LSIM_EINVAL with d naming path and key (a symbolic link, a
 * device, a folder, a FIFO: llmsim never writes through or over them). */
int lsim_check_output(const char *path, const char *key, struct lsim_diag *d);

/* What a file of mode st_mode is, in words ("a FIFO", "a device"). */
const char *lsim_file_kind(unsigned mode);

#endif
