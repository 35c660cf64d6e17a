/*
 * digest.c - XXH64 (seed 0), streaming: four 64-bit lanes over 32-byte
 * stripes, then the tail and the final avalanche, as the xxHash
 * specification (doc/xxhash_spec.md of github.com/Cyan4973/xxHash) gives
 * them. Input words are read little-endian whatever the host, so a value
 * is the same on every machine. A file is read in 64 KiB chunks.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "digest.h"

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

static uint64_t rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static uint64_t le64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static uint64_t le32(const unsigned char *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
	       (uint64_t)p[3] << 24;
}

static uint64_t round64(uint64_t acc, uint64_t in)
{
	return rotl(acc + in * P2, 31) * P1;
}

static uint64_t merge(uint64_t acc, uint64_t v)
{
	return (acc ^ round64(0, v)) * P1 + P4;
}

static void stripe(uint64_t v[4], const unsigned char *p)
{
	for (int i = 0; i < 4; i++)
		v[i] = round64(v[i], le64(p + 8 * i));
}

void lsim_digest_init(struct lsim_digest *h)
{
	memset(h, 0, sizeof *h);
	h->v[0] = P1 + P2;
	h->v[1] = P2;
	h->v[2] = 0;
	h->v[3] = 0 - P1;
}

void lsim_digest_add(struct lsim_digest *h, const void *data, size_t n)
{
	const unsigned char *p = data;
	h->total += n;
	if (h->n > 0) { /* fill the buffered stripe first */
		size_t k = 32 - h->n < n ? 32 - h->n : n;
		memcpy(h->buf + h->n, p, k);
		h->n += k;
		p += k;
		n -= k;
		if (h->n < 32)
			return;
		stripe(h->v, h->buf);
		h->n = 0;
	}
	for (; n >= 32; p += 32, n -= 32)
		stripe(h->v, p);
	memcpy(h->buf, p, n);
	h->n = n;
}

void lsim_digest_str(struct lsim_digest *h, const char *s)
{
	lsim_digest_add(h, s ? s : "", strlen(s ? s : "") + 1);
}

int lsim_digest_file(struct lsim_digest *h, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	unsigned char chunk[65536];
	size_t got;
	while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
		lsim_digest_add(h, chunk, got);
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		errno = EIO;
		return -1;
	}
	return 0;
}

uint64_t lsim_digest_value(const struct lsim_digest *h)
{
	uint64_t x;
	if (h->total >= 32) {
		const uint64_t *v = h->v;
		x = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18);
		for (int i = 0; i < 4; i++)
			x = merge(x, v[i]);
	} else {
		x = P5;
	}
	x += h->total;
	const unsigned char *p = h->buf;
	size_t n = h->n;
	for (; n >= 8; p += 8, n -= 8) {
		x ^= round64(0, le64(p));
		x = rotl(x, 27) * P1 + P4;
	}
	if (n >= 4) {
		x ^= le32(p) * P1;
		x = rotl(x, 23) * P2 + P3;
		p += 4;
		n -= 4;
	}
	for (; n > 0; p++, n--) {
		x ^= *p * P5;
		x = rotl(x, 11) * P1;
	}
	x ^= x >> 33;
	x *= P2;
	x ^= x >> 29;
	x *= P3;
	x ^= x >> 32;
	return x;
}
