/*
 * test_config.c - YAML trees with positions, key tables (defaults, units,
 * bounds, enums, did-you-mean), --set overrides and the effective dump.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/config.h"

struct demo {
	int64_t count;
	double rate;
	lsim_time period;
	double mem;
	bool flag;
	int mode;
	const char *name;
};

#define D(f) offsetof(struct demo, f)
static const struct lsim_keydef keys[] = {
	{"count", LSIM_K_INT, D(count), "4", 1, 100, NULL, "how many"},
	{"rate", LSIM_K_DOUBLE, D(rate), NULL, LSIM_NOBOUNDS, NULL, "required"},
	{"period", LSIM_K_TIME, D(period), "1s", LSIM_NOBOUNDS, NULL, "sampling"},
	{"memory", LSIM_K_BYTES, D(mem), "80GB", LSIM_NOBOUNDS, NULL, "capacity"},
	{"flag", LSIM_K_BOOL, D(flag), "false", LSIM_NOBOUNDS, NULL, "a switch"},
	{"mode", LSIM_K_ENUM, D(mode), "fast", LSIM_NOBOUNDS, "fast|slow|exact", "how"},
	{"name", LSIM_K_STRING, D(name), "x", LSIM_NOBOUNDS, NULL, "label"},
};
#define NK (sizeof keys / sizeof keys[0])

static int bind_text(const char *text, struct demo *o, struct lsim_diag *d)
{
	struct lsim_doc *doc = NULL;
	int rc = lsim_doc_load_string(text, "demo.yaml", &doc, d);
	if (rc != 0)
		return rc;
	memset(o, 0, sizeof *o);
	rc = lsim_cfg_bind(doc, lsim_node_get(doc->root, "sec"), "sec", keys, NK,
			   NULL, o, d);
	lsim_doc_destroy(doc);
	return rc;
}

static void test_defaults_and_units(void **state)
{
	(void)state;
	struct demo o;
	struct lsim_diag d = {0};
	assert_int_equal(bind_text("sec:\n  rate: 2.5\n  period: 250ms\n  mode: exact\n", &o, &d), 0);
	assert_int_equal(o.count, 4);
	assert_true(o.rate == 2.5);
	assert_int_equal(o.period, 250 * LSIM_MS);
	assert_true(o.mem == 80e9);
	assert_false(o.flag);
	assert_int_equal(o.mode, 2);
}

static void test_errors_name_line_and_key(void **state)
{
	(void)state;
	struct demo o;
	struct lsim_diag d = {0};
	/* unknown key with a suggestion, at its line */
	assert_int_equal(bind_text("sec:\n  rate: 1\n  cuont: 3\n", &o, &d), LSIM_EINVAL);
	assert_string_equal(d.file, "demo.yaml");
	assert_int_equal(d.line, 3);
	assert_string_equal(d.key, "sec.cuont");
	assert_non_null(strstr(d.msg, "did you mean 'count'"));
	/* out of bounds */
	assert_int_equal(bind_text("sec:\n  rate: 1\n  count: 500\n", &o, &d), LSIM_ERANGE);
	assert_int_equal(d.line, 3);
	assert_string_equal(d.key, "sec.count");
	/* bad unit */
	assert_int_equal(bind_text("sec:\n  rate: 1\n  period: 3 furlongs\n", &o, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "sec.period");
	assert_non_null(strstr(d.msg, "time unit"));
	/* a duration or size without a unit, at its line and column, with
	 * what to write; 0 needs none */
	assert_int_equal(bind_text("sec:\n  rate: 1\n  period: 3\n", &o, &d), LSIM_EINVAL);
	assert_int_equal(d.line, 3);
	assert_int_equal(d.col, 11);
	assert_string_equal(d.key, "sec.period");
	assert_string_equal(d.msg, "3 has no unit; write 3s or 3ms");
	assert_int_equal(bind_text("sec:\n  rate: 1\n  memory: 80\n", &o, &d), LSIM_EINVAL);
	assert_string_equal(d.msg, "80 has no unit; write 80GB, 80GiB or 80B");
	assert_int_equal(bind_text("sec:\n  rate: 1\n  period: 0\n  memory: 0.0\n", &o, &d), 0);
	assert_int_equal(o.period, 0);
	assert_true(o.mem == 0);
	/* missing required */
	assert_int_equal(bind_text("sec:\n  count: 2\n", &o, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "sec.rate");
	/* bad enum lists the choices */
	assert_int_equal(bind_text("sec:\n  rate: 1\n  mode: quick\n", &o, &d), LSIM_EINVAL);
	assert_non_null(strstr(d.msg, "fast|slow|exact"));
	/* a section where a value belongs */
	assert_int_equal(bind_text("sec:\n  rate:\n    a: 1\n", &o, &d), LSIM_EINVAL);
	assert_int_equal(d.line, 3);
}

/* A table whose default has no unit (a policy's declaration, say) is
 * refused where it is used, naming the default as the culprit. */
static void test_default_without_unit(void **state)
{
	(void)state;
	static const struct lsim_keydef bad[] = {
		{"window", LSIM_K_TIME, D(period), "30", LSIM_NOBOUNDS, NULL, "a window"},
	};
	struct lsim_doc *doc = NULL;
	struct lsim_diag d = {0};
	struct demo o;
	assert_int_equal(lsim_doc_load_string("sec: {}\n", "demo.yaml", &doc, &d), 0);
	assert_int_equal(lsim_cfg_bind(doc, lsim_node_get(doc->root, "sec"), "sec", bad, 1,
				       NULL, &o, &d),
			 LSIM_EINVAL);
	assert_string_equal(d.key, "sec.window");
	assert_string_equal(d.msg, "the declared default 30 has no unit; write 30s or 30ms");
	lsim_doc_destroy(doc);
}

static void test_yaml_errors(void **state)
{
	(void)state;
	struct lsim_doc *doc = NULL;
	struct lsim_diag d = {0};
	assert_int_equal(lsim_doc_load_string("a: [1, 2\nb: 3\n", "bad.yaml", &doc, &d),
			 LSIM_EFORMAT);
	assert_string_equal(d.file, "bad.yaml");
	assert_true(d.line >= 1);
	assert_int_equal(lsim_doc_load_string("a: 1\na: 2\n", "dup.yaml", &doc, &d),
			 LSIM_EINVAL);
	assert_int_equal(d.line, 2);
	assert_string_equal(d.key, "a");
	assert_int_equal(lsim_doc_load_string("- 1\n- 2\n", "list.yaml", &doc, &d),
			 LSIM_EFORMAT);
	/* a missing file is bad input (exit 2), as is a folder */
	assert_int_equal(lsim_doc_load_file("/nonexistent/x.yaml", &doc, &d), LSIM_ENOENT);
	assert_non_null(strstr(d.msg, "No such file"));
	assert_int_equal(lsim_doc_load_file("/", &doc, &d), LSIM_EINVAL);
	assert_non_null(strstr(d.msg, "folder"));
}

static void test_overrides(void **state)
{
	(void)state;
	struct lsim_doc *doc = NULL;
	struct lsim_diag d = {0};
	assert_int_equal(lsim_doc_load_string("sec:\n  rate: 1\nlist:\n  - {n: 1}\n  - {n: 2}\n",
					      "o.yaml", &doc, &d), 0);
	assert_int_equal(lsim_doc_set(doc, "sec.rate=7.5", &d), 0);
	assert_int_equal(lsim_doc_set(doc, "sec.count=9", &d), 0); /* new key */
	assert_int_equal(lsim_doc_set(doc, "list.1.n=5", &d), 0);
	assert_int_equal(lsim_doc_set(doc, "list.7.n=5", &d), LSIM_EINVAL);
	assert_int_equal(lsim_doc_set(doc, "sec=3", &d), LSIM_EINVAL);
	assert_int_equal(lsim_doc_set(doc, "novalue", &d), LSIM_EINVAL);
	struct demo o;
	memset(&o, 0, sizeof o);
	assert_int_equal(lsim_cfg_bind(doc, lsim_node_get(doc->root, "sec"), "sec",
				       keys, NK, NULL, &o, &d), 0);
	assert_true(o.rate == 7.5);
	assert_int_equal(o.count, 9);
	struct lsim_node *list = lsim_node_get(doc->root, "list");
	assert_string_equal(lsim_node_get(list->items[1], "n")->value, "5");
	/* an override with a bad value is reported as coming from --set */
	assert_int_equal(lsim_doc_set(doc, "sec.zzz=1", &d), 0);
	assert_int_equal(lsim_cfg_bind(doc, lsim_node_get(doc->root, "sec"), "sec",
				       keys, NK, NULL, &o, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "sec.zzz");
	lsim_doc_destroy(doc);
}

/* Keys whose value is a choice by name (the policy keys): setting the key
 * switches the choice and drops the old one's parameters; C.name to
 * another name does too; C.K on a plain name makes it {name, K}; keys
 * that are not choices keep the plain rules (a section cannot be set to a
 * value, a list entry's name is only its name). */
static void test_override_choices(void **state)
{
	(void)state;
	static const char *const choices[] = {"adaptor", "scheduler.router", "qos", NULL};
	struct lsim_doc *doc = NULL;
	struct lsim_diag d = {0};
	assert_int_equal(lsim_doc_load_string(
				 "adaptor: {name: target_tracking, target: 1.0, stabilization: 60s}\n"
				 "scheduler:\n  router: least_outstanding\n"
				 "qos: {name: slo_admission, margin: 2}\n"
				 "other: {name: x, k: 1}\n"
				 "cluster:\n  - {name: a, gpu: H100-SXM}\n",
				 "c.yaml", &doc, &d), 0);
	struct lsim_node *root = doc->root;
	/* C=NAME: the section becomes the name */
	assert_int_equal(lsim_doc_set_choices(doc, "adaptor=threshold", choices, &d), 0);
	struct lsim_node *a = lsim_node_get(root, "adaptor");
	assert_int_equal(a->kind, LSIM_NODE_SCALAR);
	assert_string_equal(a->value, "threshold");
	/* ... and C.K then makes it {name: threshold, K} */
	assert_int_equal(lsim_doc_set_choices(doc, "adaptor.high=0.8", choices, &d), 0);
	a = lsim_node_get(root, "adaptor");
	assert_int_equal(a->kind, LSIM_NODE_MAP);
	assert_int_equal(a->n, 2);
	assert_string_equal(lsim_node_get(a, "name")->value, "threshold");
	assert_string_equal(lsim_node_get(a, "high")->value, "0.8");
	/* C.name to the same name keeps the parameters, to another drops them */
	assert_int_equal(lsim_doc_set_choices(doc, "adaptor.name=threshold", choices, &d), 0);
	assert_int_equal(a->n, 2);
	assert_int_equal(lsim_doc_set_choices(doc, "adaptor.name=static", choices, &d), 0);
	assert_int_equal(a->n, 1);
	assert_string_equal(lsim_node_get(a, "name")->value, "static");
	assert_null(lsim_node_get(a, "high"));
	/* a plugin stays with a new name: the name is looked up in it */
	assert_int_equal(lsim_doc_set_choices(doc, "adaptor.plugin=./p.so", choices, &d), 0);
	assert_int_equal(lsim_doc_set_choices(doc, "adaptor.k=1", choices, &d), 0);
	assert_int_equal(lsim_doc_set_choices(doc, "adaptor.name=mine", choices, &d), 0);
	assert_int_equal(a->n, 2);
	assert_string_equal(lsim_node_get(a, "plugin")->value, "./p.so");
	assert_null(lsim_node_get(a, "k"));
	/* a plain name under a section: C.name makes it a section */
	assert_int_equal(lsim_doc_set_choices(doc, "scheduler.router.name=prefix_affinity",
					      choices, &d), 0);
	struct lsim_node *r = lsim_node_get(lsim_node_get(root, "scheduler"), "router");
	assert_int_equal(r->kind, LSIM_NODE_MAP);
	assert_int_equal(r->n, 1);
	assert_string_equal(lsim_node_get(r, "name")->value, "prefix_affinity");
	assert_int_equal(lsim_doc_set_choices(doc, "scheduler.router.max_load=4", choices, &d), 0);
	assert_int_equal(r->n, 2);
	/* C.K on a section keeps the name and the other parameters */
	assert_int_equal(lsim_doc_set_choices(doc, "qos.margin=3", choices, &d), 0);
	struct lsim_node *q = lsim_node_get(root, "qos");
	assert_int_equal(q->n, 2);
	assert_string_equal(lsim_node_get(q, "margin")->value, "3");
	/* not a choice: the plain rules */
	assert_int_equal(lsim_doc_set_choices(doc, "other=y", choices, &d), LSIM_EINVAL);
	assert_non_null(strstr(d.msg, "is a section"));
	assert_int_equal(lsim_doc_set_choices(doc, "other.name=y", choices, &d), 0);
	assert_int_equal(lsim_node_get(root, "other")->n, 2);
	assert_int_equal(lsim_doc_set_choices(doc, "cluster.0.name=b", choices, &d), 0);
	assert_int_equal(lsim_node_get(root, "cluster")->items[0]->n, 2);
	/* a choice not in the file is created as written */
	assert_int_equal(lsim_doc_set_choices(doc, "monitor=ewma", (const char *const[]){"monitor", NULL}, &d), 0);
	assert_string_equal(lsim_node_get(root, "monitor")->value, "ewma");
	lsim_doc_destroy(doc);
}

static void test_dump_reparses(void **state)
{
	(void)state;
	struct demo o, o2;
	struct lsim_diag d = {0};
	assert_int_equal(bind_text("sec:\n  rate: 3\n  memory: 24GiB\n  flag: yes\n", &o, &d), 0);
	struct lsim_buf b = {0};
	lsim_buf_printf(&b, "sec:\n");
	lsim_cfg_dump(&b, 2, keys, NK, &o);
	assert_false(b.failed);
	assert_non_null(strstr(b.data, "  mode: fast\n"));
	assert_int_equal(bind_text(b.data, &o2, &d), 0);
	assert_int_equal(o2.count, o.count);
	assert_true(o2.rate == o.rate);
	assert_true(o2.mem == o.mem);
	assert_int_equal(o2.period, o.period);
	assert_true(o2.flag);
	lsim_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_and_units),
		cmocka_unit_test(test_errors_name_line_and_key),
		cmocka_unit_test(test_default_without_unit),
		cmocka_unit_test(test_yaml_errors),
		cmocka_unit_test(test_overrides),
		cmocka_unit_test(test_override_choices),
		cmocka_unit_test(test_dump_reparses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
