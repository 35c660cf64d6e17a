/*
 * cli.h - what every `llmsim` subcommand shares: the exit codes, the one
 * line a rejected input prints, and making an output folder. Only the CLI
 * (sim/main.c and the subcommands it dispatches to) prints.
 */
#ifndef LLMSIM_CLI_H
#define LLMSIM_CLI_H

#include "llmsim/llmsim.h"

/* Exit code of bad input (config, trace, profile, plugin, arguments, an
 * output path that cannot be made); other failures (a full disk, out of
 * memory) exit 1. */
#define LSIM_EXIT_BADINPUT 2

/* Prints "llmsim: file:line:col: key: message" to stderr and returns the
 * exit code for rc: LSIM_EXIT_BADINPUT for bad input, else 1. */
int lsim_cli_fail(const struct lsim_diag *d, int rc);

/* mkdir -p: 0, or -1 with errno set (ENOTDIR: path is a file). */
int lsim_cli_make_dirs(const char *path);

#endif
