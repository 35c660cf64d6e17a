/*
 * infile.h - opening an input file (scenario, trace, profile, table)
 * without blocking: a FIFO, socket or device given where a file is
 * expected is refused instead of waiting for ever on its other end; and
 * reading it line by line without taking a failed read for its end;
 * checking that an output replaces only a regular file; syncing a file
 * written before it is renamed into place.
 */
#ifndef LLMSIM_INFILE_H
#define LLMSIM_INFILE_H

#include <stdio.h>
#include <sys/types.h>

#include "llmsim/llmsim.h"

/* Opens path for reading ("rb") without blocking. Returns 0 and *out for
 * a regular file or a folder (callers name a folder themselves); 1 with
 * errno set when it cannot be opened (callers word that message);
 * LSIM_ENOMEM with d naming path and key when memory ran out opening it
 * (the FILE fdopen allocates, or the kernel's own); or LSIM_EINVAL with d
 * naming path and key when it is anything else (a FIFO, a socket, a
 * device), which would block or never end. */
/* The share of a file of `size` bytes read up to f's position, in [0, 1];
 * -1 when size is 0 (not a regular file) or the position is not known. */
double lsim_file_fraction(FILE *f, double size);

int lsim_open_input(const char *path, const char *key, FILE **out,
		    struct lsim_diag *d);

/* The next line of f by getline (*line, *cap as getline keeps them):
 * 0 and its length in *len, or *len = -1 at the end of the file; else
 * LSIM_ENOMEM or LSIM_EIO with d naming path and line lineno. getline
 * gives -1 at the end, but also when its buffer cannot grow (ENOMEM,
 * the stream's error flag left clear) or a read fails: only feof()
 * without ferror() is the end. */
int lsim_read_line(FILE *f, char **line, size_t *cap, ssize_t *len, const char *path,
		   int lineno, struct lsim_diag *d);

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

/* mkdir -p: 0, or -1 with errno set (ENOTDIR: path is a file). */
int lsim_make_dirs(const char *path);

#endif
