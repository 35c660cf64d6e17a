/*
 * cli.c - the pieces every `llmsim` subcommand shares: reporting a
 * rejected input and making output folders.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cluster/hw.h"

int lsim_cli_fail(const struct lsim_diag *d, int rc)
{
	/* never a bare "llmsim:": a code returned without a message (out of
	 * memory deep in a run) is named by its meaning */
	struct lsim_diag named = *d;
	if (!named.msg[0])
		snprintf(named.msg, sizeof named.msg, "%s", lsim_strerror(rc));
	char buf[1400];
	lsim_diag_format(&named, buf, sizeof buf);
	fprintf(stderr, "llmsim: %s\n", buf);
	return rc == LSIM_EINVAL || rc == LSIM_EFORMAT || rc == LSIM_ERANGE ||
			       rc == LSIM_ENOENT || rc == LSIM_EPLUGIN || rc == LSIM_EIO ||
			       rc == LSIM_ENOMEM
		       ? LSIM_EXIT_BADINPUT
		       : LSIM_EXIT_INTERNAL;
}

int lsim_cli_nomem(void)
{
	fputs("llmsim: out of memory\n", stderr);
	return LSIM_EXIT_BADINPUT;
}

const char *lsim_cli_perf_dir(const char *path, char *buf, size_t size)
{
	if (!path || !*path || path[0] == '/' || access(path, F_OK) == 0)
		return path;
	return lsim_data_find(path, buf, size) == 0 ? buf : path;
}
