/*
 * config.c - YAML documents as position-carrying trees (libyaml event
 * API), dotted-path overrides, key tables bound to structs with defaults,
 * bounds and did-you-mean for unknown keys, the effective-config dump, and
 * a small growable text buffer.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <yaml.h>

#include "kernel/config.h"
#include "kernel/infile.h"

/* ---- text buffer ---- */

void lsim_buf_printf(struct lsim_buf *b, const char *fmt, ...)
{
	if (b->failed)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		size_t room = b->cap - b->len;
		int n = vsnprintf(b->data ? b->data + b->len : NULL,
				  b->data ? room : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->failed = true;
			return;
		}
		if (b->data && (size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : 256;
		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		char *p = realloc(b->data, cap);
		if (!p) {
			b->failed = true;
			return;
		}
		b->data = p;
		b->cap = cap;
	}
}

void lsim_buf_release(struct lsim_buf *b)
{
	if (!b)
		return;
	free(b->data);
	memset(b, 0, sizeof *b);
}

/* ---- nodes ---- */

static void node_free(struct lsim_node *n)
{
	if (!n)
		return;
	free(n->value);
	for (size_t i = 0; i < n->n; i++) {
		if (n->keys)
			free(n->keys[i]);
		node_free(n->items[i]);
	}
	free(n->keys);
	free(n->key_lines);
	free(n->items);
	free(n);
}

static struct lsim_node *node_new(enum lsim_node_kind kind, int line,
				  int col)
{
	struct lsim_node *n = calloc(1, sizeof *n);
	if (n) {
		n->kind = kind;
		n->line = line;
		n->col = col;
	}
	return n;
}

/* Appends item (and key for maps; key ownership passes). */
static int node_push(struct lsim_node *parent, char *key, int key_line,
		     struct lsim_node *item)
{
	size_t m = parent->n + 1;
	/* the arrays hold the next power of two >= n entries: they grow when
	 * n is 0 or a power of two (one more each time was quadratic: a
	 * 100,000-value sweep axis took minutes where realloc copies) */
	size_t n = parent->n;
	bool grow = (n & (n - 1)) == 0;
	size_t cap = n ? 2 * n : 1;
	if (grow) {
		struct lsim_node **items = realloc(parent->items, cap * sizeof *items);
		if (!items)
			return LSIM_ENOMEM;
		parent->items = items;
	}
	if (parent->kind == LSIM_NODE_MAP) {
		if (grow) {
			char **keys = realloc(parent->keys, cap * sizeof *keys);
			if (!keys)
				return LSIM_ENOMEM;
			parent->keys = keys;
			int *lines = realloc(parent->key_lines, cap * sizeof *lines);
			if (!lines)
				return LSIM_ENOMEM;
			parent->key_lines = lines;
		}
		parent->keys[n] = key;
		parent->key_lines[n] = key_line;
	}
	parent->items[n] = item;
	parent->n = m;
	return 0;
}

/* The entry of key in a map, or -1. */
static long key_index(const struct lsim_node *map, const char *key)
{
	if (!map || map->kind != LSIM_NODE_MAP)
		return -1;
	for (size_t i = 0; i < map->n; i++)
		if (strcmp(map->keys[i], key) == 0)
			return (long)i;
	return -1;
}

struct lsim_node *lsim_node_get(const struct lsim_node *map, const char *key)
{
	long i = key_index(map, key);
	return i < 0 ? NULL : map->items[i];
}

/* ---- loading ---- */

#define MAX_DEPTH 64

struct loader {
	yaml_parser_t parser;
	const char *file;
	struct lsim_diag *d;
	char path[512]; /* where the loader is, "instances[0].replicas" */
	size_t path_len;
};

/* Appends a map key (".key") or a sequence index ("[i]") to L->path;
 * returns the length to restore. A path too long is cut, not overrun. */
static size_t path_push(struct loader *L, const char *key, size_t index)
{
	size_t old = L->path_len, room = sizeof L->path - old;
	int n = key ? snprintf(L->path + old, room, "%s%s", old ? "." : "", key)
		    : snprintf(L->path + old, room, "[%zu]", index);
	L->path_len = n < 0 ? old : (size_t)n >= room ? sizeof L->path - 1 : old + (size_t)n;
	return old;
}

static void path_pop(struct loader *L, size_t old)
{
	L->path_len = old;
	L->path[old] = '\0';
}

static int parse_error(struct loader *L)
{
	yaml_parser_t *p = &L->parser;
	return lsim_diag_set(L->d, LSIM_EFORMAT, L->file,
			     (int)p->problem_mark.line + 1,
			     (int)p->problem_mark.column + 1, "",
			     "YAML syntax error: %s%s%s",
			     p->problem ? p->problem : "unknown",
			     p->context ? " " : "",
			     p->context ? p->context : "");
}

static int load_node(struct loader *L, yaml_event_t *ev,
		     struct lsim_node **out, int depth);

static int load_children(struct loader *L, struct lsim_node *n, int depth)
{
	for (;;) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&L->parser, &ev))
			return parse_error(L);
		if (ev.type == YAML_MAPPING_END_EVENT ||
		    ev.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&ev);
			return 0;
		}
		char *key = NULL;
		int key_line = 0;
		if (n->kind == LSIM_NODE_MAP) {
			if (ev.type != YAML_SCALAR_EVENT) {
				int line = (int)ev.start_mark.line + 1;
				int col = (int)ev.start_mark.column + 1;
				yaml_event_delete(&ev);
				return lsim_diag_set(L->d, LSIM_EFORMAT, L->file,
						     line, col, "",
						     "mapping keys must be plain scalars");
			}
			key_line = (int)ev.start_mark.line + 1;
			int key_col = (int)ev.start_mark.column + 1;
			long first = key_index(n, (const char *)ev.data.scalar.value);
			if (first >= 0) {
				size_t old = path_push(L, (const char *)ev.data.scalar.value, 0);
				int rc = lsim_diag_set(L->d, LSIM_EINVAL, L->file, key_line,
						       key_col, L->path,
						       "duplicate key (first on line %d)",
						       n->key_lines[first]);
				path_pop(L, old);
				yaml_event_delete(&ev);
				return rc;
			}
			key = strdup((const char *)ev.data.scalar.value);
			yaml_event_delete(&ev);
			if (!key)
				return LSIM_ENOMEM;
			if (!yaml_parser_parse(&L->parser, &ev)) {
				free(key);
				return parse_error(L);
			}
		}
		struct lsim_node *child = NULL;
		size_t old = path_push(L, key, n->n);
		int rc = load_node(L, &ev, &child, depth + 1);
		path_pop(L, old);
		if (rc == 0) {
			rc = node_push(n, key, key_line, child);
			if (rc != 0)
				node_free(child);
			else
				key = NULL;
		}
		free(key);
		if (rc != 0)
			return rc;
	}
}

/* Consumes ev (deletes it) and builds the node it starts. */
static int load_node(struct loader *L, yaml_event_t *ev,
		     struct lsim_node **out, int depth)
{
	int line = (int)ev->start_mark.line + 1;
	int col = (int)ev->start_mark.column + 1;
	int rc = 0;
	struct lsim_node *n = NULL;
	if (depth > MAX_DEPTH) {
		yaml_event_delete(ev);
		return lsim_diag_set(L->d, LSIM_EFORMAT, L->file, line, col, "",
				     "nesting deeper than %d levels", MAX_DEPTH);
	}
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		n = node_new(LSIM_NODE_SCALAR, line, col);
		if (n && !(n->value = strdup((const char *)ev->data.scalar.value))) {
			free(n);
			n = NULL;
		}
		yaml_event_delete(ev);
		if (!n)
			return LSIM_ENOMEM;
		break;
	case YAML_MAPPING_START_EVENT:
	case YAML_SEQUENCE_START_EVENT:
		n = node_new(ev->type == YAML_MAPPING_START_EVENT ? LSIM_NODE_MAP
								  : LSIM_NODE_SEQ,
			     line, col);
		yaml_event_delete(ev);
		if (!n)
			return LSIM_ENOMEM;
		rc = load_children(L, n, depth);
		break;
	case YAML_ALIAS_EVENT:
		yaml_event_delete(ev);
		return lsim_diag_set(L->d, LSIM_EFORMAT, L->file, line, col, L->path,
				     "YAML aliases (*name) are not supported; write the value");
	default:
		yaml_event_delete(ev);
		return lsim_diag_set(L->d, LSIM_EFORMAT, L->file, line, col, "",
				     "unexpected YAML event");
	}
	if (rc != 0) {
		node_free(n);
		return rc;
	}
	*out = n;
	return 0;
}

static int load_stream(struct loader *L, struct lsim_doc *doc)
{
	yaml_event_t ev;
	int rc = 0;
	bool seen_doc = false;
	for (;;) {
		if (!yaml_parser_parse(&L->parser, &ev))
			return parse_error(L);
		yaml_event_type_t t = ev.type;
		if (t == YAML_STREAM_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		if (t == YAML_STREAM_START_EVENT || t == YAML_DOCUMENT_END_EVENT) {
			yaml_event_delete(&ev);
			continue;
		}
		if (t == YAML_DOCUMENT_START_EVENT) {
			int line = (int)ev.start_mark.line + 1;
			yaml_event_delete(&ev);
			if (seen_doc)
				return lsim_diag_set(L->d, LSIM_EFORMAT, L->file,
						     line, 1, "",
						     "only one YAML document per file");
			seen_doc = true;
			continue;
		}
		rc = load_node(L, &ev, &doc->root, 0);
		if (rc != 0)
			return rc;
	}
	if (!doc->root)
		doc->root = node_new(LSIM_NODE_MAP, 1, 1);
	if (!doc->root)
		return LSIM_ENOMEM;
	if (doc->root->kind != LSIM_NODE_MAP)
		return lsim_diag_set(L->d, LSIM_EFORMAT, L->file, doc->root->line,
				     doc->root->col, "",
				     "the top level must be a mapping of keys");
	return 0;
}

static int doc_load(FILE *f, const char *text, const char *name,
		    struct lsim_doc **out, struct lsim_diag *d)
{
	struct lsim_doc *doc = calloc(1, sizeof *doc);
	if (!doc || !(doc->file = strdup(name))) {
		free(doc);
		return LSIM_ENOMEM;
	}
	struct loader L = {.file = name, .d = d};
	if (!yaml_parser_initialize(&L.parser)) {
		lsim_doc_destroy(doc);
		return LSIM_ENOMEM;
	}
	if (f)
		yaml_parser_set_input_file(&L.parser, f);
	else
		yaml_parser_set_input_string(&L.parser,
					     (const unsigned char *)text,
					     strlen(text));
	int rc = load_stream(&L, doc);
	yaml_parser_delete(&L.parser);
	if (rc != 0) {
		lsim_doc_destroy(doc);
		return rc;
	}
	*out = doc;
	return 0;
}

int lsim_doc_load_file(const char *path, struct lsim_doc **out,
		       struct lsim_diag *d)
{
	FILE *f = NULL;
	int orc = lsim_open_input(path, "", &f, d);
	if (orc < 0)
		return orc;
	if (!f) {
		int e = errno;
		return lsim_diag_set(d, e == ENOENT ? LSIM_ENOENT : LSIM_EIO, path, 0, 0,
				     "", "cannot open file: %s",
				     e ? strerror(e) : "unknown error");
	}
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, "",
				     "is a folder, not a file");
	}
	int rc = doc_load(f, NULL, path, out, d);
	fclose(f);
	return rc;
}

int lsim_doc_load_string(const char *text, const char *name,
			 struct lsim_doc **out, struct lsim_diag *d)
{
	return doc_load(NULL, text, name, out, d);
}

void lsim_doc_destroy(struct lsim_doc *doc)
{
	if (!doc)
		return;
	node_free(doc->root);
	free(doc->file);
	free(doc);
}

/* ---- overrides ---- */

static bool is_index(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* The node at a dotted path, or NULL (nothing is created). */
static struct lsim_node *node_at(struct lsim_node *cur, const char *path,
				 size_t len)
{
	char part[256];
	while (cur && len > 0) {
		const char *dot = memchr(path, '.', len);
		size_t n = dot ? (size_t)(dot - path) : len;
		if (n == 0 || n >= sizeof part)
			return NULL;
		memcpy(part, path, n);
		part[n] = '\0';
		if (cur->kind == LSIM_NODE_MAP)
			cur = lsim_node_get(cur, part);
		else if (cur->kind == LSIM_NODE_SEQ && is_index(part) &&
			 (size_t)atol(part) < cur->n)
			cur = cur->items[atol(part)];
		else
			return NULL;
		path += n + (dot ? 1 : 0);
		len -= n + (dot ? 1 : 0);
	}
	return cur;
}

/* Drops every entry of a MAP but those named in keep (NULL-terminated;
 * NULL: drops all of them). */
static void map_keep_only(struct lsim_node *map, const char *const *keep)
{
	size_t j = 0;
	for (size_t i = 0; i < map->n; i++) {
		bool kept = false;
		for (size_t k = 0; keep && keep[k] && !kept; k++)
			kept = strcmp(map->keys[i], keep[k]) == 0;
		if (kept) {
			map->keys[j] = map->keys[i];
			map->key_lines[j] = map->key_lines[i];
			map->items[j++] = map->items[i];
			continue;
		}
		free(map->keys[i]);
		node_free(map->items[i]);
	}
	/* the arrays keep their room: node_push grows them from any n */
	map->n = j;
	if (j == 0) {
		free(map->keys);
		free(map->key_lines);
		free(map->items);
		map->keys = NULL;
		map->key_lines = NULL;
		map->items = NULL;
	}
}

/*
 * Rewrites the choice at `c` (a node of the tree) for an assignment to its
 * path itself (rest NULL) or to C.rest: see lsim_doc_set_choices.
 */
static int choice_rewrite(struct lsim_node *c, const char *rest,
			  const char *value)
{
	if (!rest) { /* C=NAME: the section, if any, becomes the name */
		if (c->kind == LSIM_NODE_MAP) {
			map_keep_only(c, NULL);
			c->kind = LSIM_NODE_SCALAR;
		}
		return 0;
	}
	if (c->kind == LSIM_NODE_SCALAR) { /* a plain name becomes {name: it} */
		struct lsim_node *name = node_new(LSIM_NODE_SCALAR, c->line, c->col);
		char *k = strdup("name");
		if (!name || !k) {
			free(k);
			node_free(name);
			return LSIM_ENOMEM;
		}
		name->value = c->value;
		c->value = NULL;
		c->kind = LSIM_NODE_MAP;
		if (node_push(c, k, c->line, name) != 0) {
			free(k);
			node_free(name);
			return LSIM_ENOMEM;
		}
	}
	if (c->kind == LSIM_NODE_MAP && strcmp(rest, "name") == 0) {
		const struct lsim_node *old = lsim_node_get(c, "name");
		/* another choice: not its parameters (its plugin, if it has
		 * one, is where the new name is looked up: it stays) */
		static const char *const identity[] = {"name", "plugin", NULL};
		if (!old || old->kind != LSIM_NODE_SCALAR || !old->value ||
		    strcmp(old->value, value) != 0)
			map_keep_only(c, identity);
	}
	return 0;
}

int lsim_doc_set_choices(struct lsim_doc *doc, const char *assignment,
			 const char *const *choices, struct lsim_diag *d)
{
	const char *eq = strchr(assignment, '=');
	for (size_t i = 0; eq && choices && choices[i]; i++) {
		size_t n = strlen(choices[i]);
		size_t plen = (size_t)(eq - assignment);
		if (plen < n || strncmp(assignment, choices[i], n) != 0)
			continue;
		const char *rest = NULL;
		if (plen > n) {
			if (assignment[n] != '.')
				continue;
			rest = assignment + n + 1;
		}
		struct lsim_node *c = node_at(doc->root, choices[i], n);
		if (!c)
			break; /* not in the file: set as written */
		char *r = rest ? strndup(rest, (size_t)(eq - rest)) : NULL;
		if (rest && !r)
			return LSIM_ENOMEM;
		/* only C.name and C.K one level down are choices' keys */
		int rc = !r || !strchr(r, '.') ? choice_rewrite(c, r, eq + 1) : 0;
		free(r);
		if (rc != 0)
			return rc;
		break;
	}
	return lsim_doc_set(doc, assignment, d);
}

int lsim_doc_set(struct lsim_doc *doc, const char *assignment,
		 struct lsim_diag *d)
{
	const char *eq = strchr(assignment, '=');
	if (!eq || eq == assignment)
		return lsim_diag_set(d, LSIM_EINVAL, "--set", 0, 0, assignment,
				     "expected key.path=value");
	char *path = strndup(assignment, (size_t)(eq - assignment));
	if (!path)
		return LSIM_ENOMEM;
	struct lsim_node *cur = doc->root;
	int rc = 0;
	char *save = NULL;
	char *part = strtok_r(path, ".", &save);
	while (part && rc == 0) {
		char *next = strtok_r(NULL, ".", &save);
		struct lsim_node *child = NULL;
		if (cur->kind == LSIM_NODE_SEQ) {
			if (!is_index(part) || (size_t)atol(part) >= cur->n) {
				rc = lsim_diag_set(d, LSIM_EINVAL, "--set", 0, 0,
						   assignment,
						   "'%s' is not an index of a list of %zu",
						   part, cur->n);
				break;
			}
			child = cur->items[atol(part)];
		} else if (cur->kind == LSIM_NODE_MAP) {
			child = lsim_node_get(cur, part);
			if (!child) {
				child = node_new(next ? LSIM_NODE_MAP
						      : LSIM_NODE_SCALAR,
						 0, 0);
				char *k = strdup(part);
				if (!child || !k ||
				    node_push(cur, k, 0, child) != 0) {
					free(k);
					node_free(child);
					rc = LSIM_ENOMEM;
					break;
				}
			}
		} else {
			rc = lsim_diag_set(d, LSIM_EINVAL, "--set", 0, 0,
					   assignment,
					   "'%s' is inside a plain value", part);
			break;
		}
		if (!next) {
			if (child->kind != LSIM_NODE_SCALAR) {
				rc = lsim_diag_set(d, LSIM_EINVAL, "--set", 0, 0,
						   assignment,
						   "'%s' is a section, not a value",
						   part);
				break;
			}
			char *v = strdup(eq + 1);
			if (!v) {
				rc = LSIM_ENOMEM;
				break;
			}
			free(child->value);
			child->value = v;
			child->line = child->col = 0; /* errors name --set, not the file */
		}
		cur = child;
		part = next;
	}
	free(path);
	return rc;
}

/* ---- binding ---- */

size_t lsim_edit_distance(const char *a, const char *b, bool fold_case)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 127 || lb > 127)
		return 99;
	size_t row[128];
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cur = row[j];
			unsigned char x = (unsigned char)a[i - 1], y = (unsigned char)b[j - 1];
			size_t cost = (fold_case ? tolower(x) == tolower(y) : x == y) ? 0 : 1;
			size_t best = prev + cost;
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = cur;
		}
	}
	return row[lb];
}

const char *lsim_did_you_mean(const char *word, const char *const *list,
			      size_t n)
{
	const char *best = NULL;
	size_t best_d = 4;
	for (size_t i = 0; i < n; i++) {
		size_t dist = lsim_edit_distance(word, list[i], false);
		if (dist < best_d) {
			best_d = dist;
			best = list[i];
		}
	}
	return best;
}

int lsim_cfg_error(struct lsim_diag *d, const struct lsim_doc *doc,
		   const struct lsim_node *n, const char *key, int err,
		   const char *fmt, ...)
{
	char msg[sizeof d->msg];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	const char *file = doc ? doc->file : "";
	if (n && n->line == 0)
		file = "--set";
	return lsim_diag_set(d, err, file, n ? n->line : 0, n ? n->col : 0,
			     key, "%s", msg);
}

int lsim_choice_index(const char *choices, const char *v)
{
	size_t len = strlen(v);
	int idx = 0;
	const char *p = choices;
	while (*p) {
		const char *bar = strchr(p, '|');
		size_t l = bar ? (size_t)(bar - p) : strlen(p);
		if (l == len && strncmp(p, v, l) == 0)
			return idx;
		idx++;
		if (!bar)
			break;
		p = bar + 1;
	}
	return -1;
}

const char *lsim_choice_name(const char *choices, int idx, char *buf, size_t size)
{
	const char *p = choices;
	for (int i = 0; i < idx && p; i++) {
		p = strchr(p, '|');
		if (p)
			p++;
	}
	if (!p || idx < 0)
		return NULL;
	const char *bar = strchr(p, '|');
	size_t l = bar ? (size_t)(bar - p) : strlen(p);
	if (l >= size)
		l = size - 1;
	memcpy(buf, p, l);
	buf[l] = '\0';
	return buf;
}

static int parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = {"true", "yes", "on", "1"};
	static const char *const no[] = {"false", "no", "off", "0"};
	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

static const char *type_name(enum lsim_ktype t)
{
	switch (t) {
	case LSIM_K_INT: return "integer";
	case LSIM_K_DOUBLE: return "number";
	case LSIM_K_BOOL: return "boolean";
	case LSIM_K_STRING: return "string";
	case LSIM_K_ENUM: return "choice";
	case LSIM_K_TIME: return "duration";
	case LSIM_K_BYTES: return "size";
	case LSIM_K_BW: return "bandwidth";
	case LSIM_K_POWER: return "power";
	case LSIM_K_PRICE: return "price";
	}
	return "?";
}

static int bind_one(const struct lsim_doc *doc, const struct lsim_node *n,
		    const char *fullkey, const struct lsim_keydef *k,
		    const char *text, bool is_default, void *obj,
		    struct lsim_diag *d)
{
	char *field = (char *)obj + k->offset;
	switch (k->type) {
	case LSIM_K_STRING:
		*(const char **)(void *)field = text;
		return 0;
	case LSIM_K_BOOL: {
		bool b;
		if (parse_bool(text, &b) != 0)
			return lsim_cfg_error(d, doc, n, fullkey, LSIM_EINVAL,
					      "'%s' is not a boolean (true/false)",
					      text);
		*(bool *)(void *)field = b;
		return 0;
	}
	case LSIM_K_ENUM: {
		int idx = lsim_choice_index(k->choices, text);
		if (idx < 0)
			return lsim_cfg_error(d, doc, n, fullkey, LSIM_EINVAL,
					      "'%s' is not one of: %s", text,
					      k->choices);
		*(int *)(void *)field = idx;
		return 0;
	}
	default:
		break;
	}
	double v;
	const char *why;
	char hint[160];
	if (lsim_units_missing(k->type, text, hint, sizeof hint))
		return lsim_cfg_error(d, doc, n, fullkey, LSIM_EINVAL,
				      "%s%s has no unit; %s",
				      is_default ? "the declared default " : "",
				      text, hint);
	if (lsim_units_parse(k->type, text, &v, &why) != 0)
		return lsim_cfg_error(d, doc, n, fullkey, LSIM_EINVAL,
				      "'%s' is not a valid %s: %s", text,
				      type_name(k->type), why);
	if (k->min <= k->max && (v < k->min || v > k->max)) {
		char lo[48], hi[48];
		lsim_units_format(k->type, k->min, lo, sizeof lo);
		lsim_units_format(k->type, k->max, hi, sizeof hi);
		return lsim_cfg_error(d, doc, n, fullkey, LSIM_ERANGE,
				      "%s is outside [%s, %s]", text, lo, hi);
	}
	switch (k->type) {
	case LSIM_K_INT:
		*(int64_t *)(void *)field = (int64_t)v;
		break;
	case LSIM_K_TIME:
		*(lsim_time *)(void *)field = (lsim_time)llround(v);
		break;
	default:
		*(double *)(void *)field = v;
		break;
	}
	return 0;
}

int lsim_cfg_bind(const struct lsim_doc *doc, const struct lsim_node *map,
		  const char *path, const struct lsim_keydef *keys,
		  size_t nkeys, const char *const *also_allowed, void *obj,
		  struct lsim_diag *d)
{
	char fullkey[256];
	if (map && map->kind != LSIM_NODE_MAP)
		return lsim_cfg_error(d, doc, map, path, LSIM_EINVAL,
				      "expected a section of keys");
	/* Unknown keys first: a typo should not surface as "missing". */
	for (size_t i = 0; map && i < map->n; i++) {
		const char *key = map->keys[i];
		bool known = false;
		for (size_t j = 0; j < nkeys && !known; j++)
			known = strcmp(keys[j].name, key) == 0;
		for (size_t j = 0; also_allowed && also_allowed[j] && !known; j++)
			known = strcmp(also_allowed[j], key) == 0;
		if (known)
			continue;
		const char *names[128];
		size_t nn = 0;
		for (size_t j = 0; j < nkeys && nn < 128; j++)
			names[nn++] = keys[j].name;
		for (size_t j = 0; also_allowed && also_allowed[j] && nn < 128; j++)
			names[nn++] = also_allowed[j];
		const char *best = lsim_did_you_mean(key, names, nn);
		snprintf(fullkey, sizeof fullkey, "%s%s%s", path,
			 path[0] ? "." : "", key);
		struct lsim_node at = {.line = map->key_lines[i], .col = 1};
		if (map->items[i]->line > 0)
			at.col = 0;
		return lsim_cfg_error(d, doc, at.line ? &at : map->items[i],
				      fullkey, LSIM_EINVAL,
				      "unknown key%s%s%s", best ? " (did you mean '" : "",
				      best ? best : "", best ? "'?)" : "");
	}
	for (size_t j = 0; j < nkeys; j++) {
		const struct lsim_keydef *k = &keys[j];
		snprintf(fullkey, sizeof fullkey, "%s%s%s", path,
			 path[0] ? "." : "", k->name);
		struct lsim_node *v = lsim_node_get(map, k->name);
		const char *text = k->def;
		if (v) {
			if (v->kind != LSIM_NODE_SCALAR)
				return lsim_cfg_error(d, doc, v, fullkey,
						      LSIM_EINVAL,
						      "expected a single value, not a %s",
						      v->kind == LSIM_NODE_MAP ? "section"
									      : "list");
			text = v->value;
		} else if (!text) {
			return lsim_cfg_error(d, doc, map, fullkey, LSIM_EINVAL,
					      "missing required key");
		}
		int rc = bind_one(doc, v ? v : map, fullkey, k, text, !v, obj, d);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* ---- dump and docs ---- */

static void format_value(const struct lsim_keydef *k, const void *obj,
			 char *buf, size_t size)
{
	const char *field = (const char *)obj + k->offset;
	switch (k->type) {
	case LSIM_K_STRING: {
		const char *s = *(const char *const *)(const void *)field;
		snprintf(buf, size, "\"%s\"", s ? s : "");
		break;
	}
	case LSIM_K_BOOL:
		snprintf(buf, size, "%s",
			 *(const bool *)(const void *)field ? "true" : "false");
		break;
	case LSIM_K_ENUM:
		if (!lsim_choice_name(k->choices, *(const int *)(const void *)field, buf, size))
			snprintf(buf, size, "?");
		break;
	case LSIM_K_INT:
		snprintf(buf, size, "%lld",
			 (long long)*(const int64_t *)(const void *)field);
		break;
	case LSIM_K_TIME:
		lsim_units_format(k->type,
				  (double)*(const lsim_time *)(const void *)field,
				  buf, size);
		break;
	default:
		lsim_units_format(k->type, *(const double *)(const void *)field,
				  buf, size);
		break;
	}
}


void lsim_cfg_dump(struct lsim_buf *b, int indent,
		   const struct lsim_keydef *keys, size_t nkeys,
		   const void *obj)
{
	char val[128];
	for (size_t j = 0; j < nkeys; j++) {
		format_value(&keys[j], obj, val, sizeof val);
		lsim_buf_printf(b, "%*s%s: %s\n", indent, "", keys[j].name, val);
	}
}

bool lsim_cfg_is_default(const struct lsim_keydef *k, const void *obj)
{
	if (!k->def)
		return false;
	/* the default bound as a value would be, into a scratch field */
	union {
		const char *s;
		bool b;
		int i;
		int64_t n;
		lsim_time t;
		double x;
	} scratch = {0};
	struct lsim_keydef at = *k;
	at.offset = 0;
	if (bind_one(NULL, NULL, k->name, &at, k->def, true, &scratch, NULL) != 0)
		return false;
	if (k->type == LSIM_K_STRING) {
		const char *s = *(const char *const *)(const void *)((const char *)obj + k->offset);
		return strcmp(s ? s : "", k->def) == 0;
	}
	char val[128], def[128];
	format_value(k, obj, val, sizeof val);
	format_value(&at, &scratch, def, sizeof def);
	return strcmp(val, def) == 0;
}

void lsim_cfg_dump_opt(struct lsim_buf *b, int indent,
		       const struct lsim_keydef *keys, size_t nkeys,
		       const void *obj, const char *const *optional)
{
	for (size_t j = 0; j < nkeys; j++) {
		bool opt = false;
		for (size_t o = 0; optional && optional[o] && !opt; o++)
			opt = strcmp(optional[o], keys[j].name) == 0;
		if (!opt || !lsim_cfg_is_default(&keys[j], obj))
			lsim_cfg_dump(b, indent, &keys[j], 1, obj);
	}
}

void lsim_cfg_doc(struct lsim_buf *b, const struct lsim_keydef *keys,
		  size_t nkeys)
{
	for (size_t j = 0; j < nkeys; j++) {
		const struct lsim_keydef *k = &keys[j];
		char lo[48] = "", hi[48] = "";
		if (k->min <= k->max) {
			lsim_units_format(k->type, k->min, lo, sizeof lo);
			lsim_units_format(k->type, k->max, hi, sizeof hi);
		}
		lsim_buf_printf(b, "| `%s` | %s%s%s | %s | %s%s%s%s%s | %s |\n",
				k->name, type_name(k->type),
				k->choices ? ": " : "",
				k->choices ? k->choices : "",
				k->def ? k->def : "(required)",
				lo[0] ? "[" : "", lo, lo[0] ? ", " : "", hi,
				lo[0] ? "]" : "", k->help);
	}
}
