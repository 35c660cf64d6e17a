/*
 * fuzz_yaml.c - libFuzzer target for the YAML configuration tree: the
 * input's first line is a --set override ("a.b.c=value"), the rest is the
 * document given to lsim_doc_load_string. When the document loads, the
 * override is applied with lsim_doc_set_choices and the tree is walked (every
 * node, key and value read, so ASan sees a bad pointer), then destroyed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/config.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Sums positions and text lengths over the tree; depth-limited. */
static size_t walk(const struct lsim_node *n, int depth)
{
	if (!n || depth > 10000)
		return 0;
	size_t sum = (size_t)n->line + (size_t)n->col;
	switch (n->kind) {
	case LSIM_NODE_SCALAR:
		sum += n->value ? strlen(n->value) : 0;
		break;
	case LSIM_NODE_MAP:
		for (size_t i = 0; i < n->n; i++)
			sum += strlen(n->keys[i]) + (size_t)n->key_lines[i] +
			       walk(n->items[i], depth + 1);
		break;
	case LSIM_NODE_SEQ:
		for (size_t i = 0; i < n->n; i++)
			sum += walk(n->items[i], depth + 1);
		break;
	}
	return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t set_len = nl ? (size_t)(nl - data) : size;
	size_t doc_off = nl ? set_len + 1 : size;
	char *set = malloc(set_len + 1);
	char *text = malloc(size - doc_off + 1);
	if (!set || !text)
		abort();
	memcpy(set, data, set_len);
	set[set_len] = '\0';
	memcpy(text, data + doc_off, size - doc_off);
	text[size - doc_off] = '\0';

	struct lsim_diag d;
	memset(&d, 0, sizeof d);
	struct lsim_doc *doc = NULL;
	int rc = lsim_doc_load_string(text, "fuzz.yaml", &doc, &d);
	if (rc == 0) {
		volatile size_t sink = walk(doc->root, 0);
		memset(&d, 0, sizeof d);
		/* the policy keys' rewrites too (a choice at the root, one in
		 * a section, and a one-letter one the fuzzer finds quickly) */
		static const char *const choices[] = {"adaptor", "scheduler.router", "a", NULL};
		rc = lsim_doc_set_choices(doc, set, choices, &d);
		if (rc != 0)
			lsim_fuzz_check_error(rc, &d);
		sink += walk(doc->root, 0);
		(void)sink;
	} else {
		lsim_fuzz_check_error(rc, &d);
	}
	lsim_doc_destroy(doc);
	free(set);
	free(text);
	return 0;
}
