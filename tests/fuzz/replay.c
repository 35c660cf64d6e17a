/*
 * replay.c - a plain main() for the fuzz targets: built with gcc (or
 * clang) without libFuzzer, linked with one target's source, it feeds that
 * target every file of the folders and files named on its command line,
 * once each, in name order. The normal and the sanitizer test suites run
 * it on tests/fuzz/corpus/<target>/, so every saved input (the seeds and
 * what the deep fuzz runs found) is replayed on every `meson test`. Each
 * input is copied into a buffer of exactly its size, as libFuzzer does, so
 * that a read past its end is caught under AddressSanitizer. A finding
 * aborts in the target (fuzz_common.c); finding no input at all is a
 * failure too, so that an emptied or moved corpus does not pass silently.
 */
#define _XOPEN_SOURCE 700

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Replays one file; 0, or -1 when it cannot be read (printed). */
static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	size_t cap = 4096, n = 0;
	uint8_t *buf = malloc(cap);
	for (;;) {
		if (!buf) {
			fprintf(stderr, "replay: %s: out of memory\n", path);
			fclose(f);
			return -1;
		}
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		uint8_t *q = realloc(buf, 2 * cap);
		if (!q)
			free(buf);
		buf = q;
		cap *= 2;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		fprintf(stderr, "replay: %s: read error\n", path);
		free(buf);
		return -1;
	}
	/* exactly n bytes, so that ASan sees a read past the end */
	uint8_t *exact = malloc(n ? n : 1);
	if (!exact) {
		free(buf);
		fprintf(stderr, "replay: %s: out of memory\n", path);
		return -1;
	}
	memcpy(exact, buf, n);
	free(buf);
	LLVMFuzzerTestOneInput(exact, n);
	free(exact);
	return 0;
}

static int not_hidden(const struct dirent *e)
{
	return e->d_name[0] != '.';
}

int main(int argc, char **argv)
{
	long count = 0;
	int errors = 0;
	for (int a = 1; a < argc; a++) {
		struct stat st;
		if (stat(argv[a], &st) != 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[a], strerror(errno));
			errors++;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			errors += replay_file(argv[a]) != 0;
			count++;
			continue;
		}
		struct dirent **names = NULL;
		int n = scandir(argv[a], &names, not_hidden, alphasort);
		if (n < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[a], strerror(errno));
			errors++;
			continue;
		}
		for (int i = 0; i < n; i++) {
			char path[4096];
			snprintf(path, sizeof path, "%s/%s", argv[a], names[i]->d_name);
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
				errors += replay_file(path) != 0;
				count++;
			}
			free(names[i]);
		}
		free(names);
	}
	printf("replayed %ld inputs, %d unreadable\n", count, errors);
	if (count == 0) {
		fprintf(stderr, "replay: no inputs found\n");
		return 1;
	}
	return errors ? 1 : 0;
}
