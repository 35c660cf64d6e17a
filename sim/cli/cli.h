/*
 * cli.h - what every `llmsim` subcommand shares: the exit codes, the one
 * line a rejected input prints, and making an output folder. Only the CLI
 * (sim/cli/main.c and the subcommands it dispatches to) prints.
 */
#ifndef LLMSIM_CLI_H
#define LLMSIM_CLI_H

#include "llmsim/llmsim.h"

/* Exit codes. 2: the run cannot be done as given - bad input (config,
 * trace, profile, plugin, arguments) or a machine that cannot hold it (an
 * output path that cannot be made or written, a full disk, memory running
 * out); either way the user changes something before trying again, and
 * the message names the file, line and key, or the resource. 1: an
 * internal error, a bug to report. */
#define LSIM_EXIT_BADINPUT 2
#define LSIM_EXIT_NOROOM 2 /* the same code: the machine's side of it */
#define LSIM_EXIT_INTERNAL 1

/* Prints "llmsim: file:line:col: key: message" to stderr and returns the
 * exit code for rc: LSIM_EXIT_INTERNAL for a call made in the wrong state
 * (a bug), else LSIM_EXIT_BADINPUT. */
int lsim_cli_fail(const struct lsim_diag *d, int rc);

/* Prints "llmsim: out of memory" and returns LSIM_EXIT_BADINPUT. */
int lsim_cli_nomem(void);

/* A --profile PERF_DIR as given when it exists; else, when the data search
 * path (--data-dir, $LLMSIM_DATA_DIR, the shipped data) holds it, that
 * folder (perf/llmservingsim/...: the shipped tables, from the source tree
 * or an install); else as given, for the reader to refuse naming it. */
const char *lsim_cli_perf_dir(const char *path, char *buf, size_t size);

/* `llmsim profile collective` (sim/cli/collective_cli.c). */
int lsim_cli_profile_collective(int argc, char **argv);

/* `llmsim compare A B` (sim/cli/compare.c). */
int lsim_cli_compare(int argc, char **argv);

/* `llmsim profile import` and `profile compare` (sim/cli/profile_cli.c;
 * argv[0] is "import" / "compare"): usage on --help, results on stdout;
 * 0, 2 on bad input, 1 on other failures. */
int lsim_cli_profile_import(int argc, char **argv);
int lsim_cli_profile_compare(int argc, char **argv);

#endif
