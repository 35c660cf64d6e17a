/*
 * infile.c - opening input files without blocking on FIFOs, sockets and
 * devices; checking what an output would replace; syncing files written
 * (infile.h).
 */
#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/infile.h"

int lsim_sync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	int e = errno;
	close(fd);
	errno = e;
	/* folders on some file systems cannot be synced: nothing to do */
	return rc != 0 && (errno == EINVAL || errno == EROFS) ? 0 : rc;
}

int lsim_check_output(const char *path, const char *key, struct lsim_diag *d)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0
				       : lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, key,
						       "cannot look at the output: %s",
						       strerror(errno));
	if (S_ISREG(st.st_mode))
		return 0;
	return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, key,
			     "is %s: llmsim replaces only regular files; remove it "
			     "or write elsewhere",
			     lsim_file_kind(st.st_mode));
}

const char *lsim_file_kind(unsigned mode)
{
	if (S_ISREG(mode))
		return "a regular file";
	if (S_ISDIR(mode))
		return "a folder";
	if (S_ISFIFO(mode))
		return "a FIFO (named pipe)";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	if (S_ISLNK(mode))
		return "a symbolic link";
	return "not a regular file";
}

/* Memory ran out opening path (open, fstat or fdopen said ENOMEM): said
 * as such, not as a file that cannot be opened. */
static int open_nomem(const char *path, const char *key, struct lsim_diag *d)
{
	return lsim_diag_set(d, LSIM_ENOMEM, path, 0, 0, key ? key : "",
			     "out of memory opening the file");
}

int lsim_open_input(const char *path, const char *key, FILE **out,
		    struct lsim_diag *d)
{
	*out = NULL;
	/* O_NONBLOCK: opening a FIFO for reading otherwise waits for a
	 * writer, for ever if none comes */
	errno = 0;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOMEM ? open_nomem(path, key, d) : 1;
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return e == ENOMEM ? open_nomem(path, key, d) : 1;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		close(fd);
		return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, key ? key : "",
				     "is %s, not a regular file: llmsim reads its "
				     "inputs from regular files only (copy it to one)",
				     lsim_file_kind(st.st_mode));
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ||
	    !(*out = fdopen(fd, "rb"))) {
		/* fdopen allocates the FILE: ENOMEM when that fails */
		int e = errno;
		close(fd);
		if (e == ENOMEM)
			return open_nomem(path, key, d);
		errno = e ? e : EIO;
		return 1;
	}
	return 0;
}

int lsim_read_line(FILE *f, char **line, size_t *cap, ssize_t *len, const char *path,
		   int lineno, struct lsim_diag *d)
{
	errno = 0;
	*len = getline(line, cap, f);
	if (*len >= 0)
		return 0;
	int e = errno;
	if (e == ENOMEM)
		return lsim_diag_set(d, LSIM_ENOMEM, path, lineno, 0, "",
				     "out of memory reading line %d", lineno);
	if (ferror(f) || !feof(f))
		return lsim_diag_set(d, LSIM_EIO, path, lineno, 0, "",
				     "read error at line %d: %s", lineno,
				     e ? strerror(e) : "unknown");
	return 0;
}

int lsim_make_dirs(const char *path)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
		return -1;
	struct stat st;
	if (stat(tmp, &st) != 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) { /* a file of that name */
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

double lsim_file_fraction(FILE *f, double size)
{
	if (!f || !(size > 0))
		return -1;
	off_t at = ftello(f);
	if (at < 0)
		return -1;
	double x = (double)at / size;
	return x > 1 ? 1 : x;
}
