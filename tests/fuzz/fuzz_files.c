/*
 * fuzz_files.c - libFuzzer targets for the readers of the remaining input
 * files, one executable each, chosen at build time by LSIM_FUZZ_READER:
 *   sweep        a sweep file (lsim_sweep_load)
 *   gpu_profile  a hardware profile, calibrate/profiles/NAME.yaml (as
 *                fuzz.yaml, so its name must be "fuzz")
 *                (lsim_gpu_profile_load)
 *   models       the model catalogue: the input's first line names the
 *                model to look up, the rest is the catalogue
 *                (lsim_model_load)
 *   prices       the price catalogue (lsim_prices_load)
 *   carbon       a grid carbon-intensity series over a 7-day run
 *                (lsim_carbon_load)
 *   power_table  a measured power-vs-utilisation table
 *                (lsim_power_model_load_table)
 *   kproto       a saved k-prototypes profiler model (lsim_kproto_load)
 * Each input is written to a scratch file and read; what loads is freed,
 * what fails must fail with a negative code and a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "fuzz_common.h"
#include "hw.h"
#include "kproto.h"
#include "sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { SWEEP = 1, GPU_PROFILE, MODELS, PRICES, CARBON, POWER_TABLE, KPROTO };

#ifndef LSIM_FUZZ_READER
#error "LSIM_FUZZ_READER selects the reader (tests/fuzz/meson.build)"
#endif

static void check(int rc, const struct lsim_diag *d)
{
	if (rc != 0)
		lsim_fuzz_check_error(rc, d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[4096];
	struct lsim_diag d;
	memset(&d, 0, sizeof d);
	switch (LSIM_FUZZ_READER) {
	case SWEEP: {
		lsim_fuzz_write("sweep.yaml", data, size, path, sizeof path);
		struct lsim_sweep *sw = NULL;
		check(lsim_sweep_load(path, &sw, &d), &d);
		lsim_sweep_destroy(sw);
		break;
	}
	case GPU_PROFILE: {
		lsim_fuzz_write("profiles/fuzz.yaml", data, size, path, sizeof path);
		char *slash = strrchr(path, '/');
		*slash = '\0';
		struct lsim_gpu_profile g;
		memset(&g, 0, sizeof g);
		check(lsim_gpu_profile_load(path, "fuzz", &g, &d), &d);
		break;
	}
	case MODELS: {
		const uint8_t *nl = memchr(data, '\n', size);
		size_t name_len = nl ? (size_t)(nl - data) : 0;
		size_t off = nl ? name_len + 1 : 0;
		char name[128];
		if (name_len >= sizeof name)
			name_len = sizeof name - 1;
		memcpy(name, data, name_len);
		name[name_len] = '\0';
		lsim_fuzz_write("models.yaml", data + off, size - off, path,
				sizeof path);
		struct lsim_model_arch m;
		memset(&m, 0, sizeof m);
		check(lsim_model_load(path, name, &m, &d), &d);
		break;
	}
	case PRICES: {
		lsim_fuzz_write("prices.yaml", data, size, path, sizeof path);
		struct lsim_prices *p = NULL;
		check(lsim_prices_load(path, &p, &d), &d);
		lsim_prices_destroy(p);
		break;
	}
	case CARBON: {
		lsim_fuzz_write("carbon.csv", data, size, path, sizeof path);
		struct lsim_carbon_series *c = NULL;
		check(lsim_carbon_load(path, 7 * 86400 * LSIM_S, &c, &d), &d);
		lsim_carbon_destroy(c);
		break;
	}
	case POWER_TABLE: {
		lsim_fuzz_write("power.csv", data, size, path, sizeof path);
		struct lsim_power_model pm;
		memset(&pm, 0, sizeof pm);
		check(lsim_power_model_load_table(&pm, path, &d), &d);
		break;
	}
	case KPROTO: {
		lsim_fuzz_write("model.kproto", data, size, path, sizeof path);
		struct lsim_kproto_model *m = NULL;
		check(lsim_kproto_load(path, &m, &d), &d);
		lsim_kproto_destroy(m);
		break;
	}
	default:
		abort();
	}
	return 0;
}
