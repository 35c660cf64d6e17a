/*
 * fuzz_scenario.c - libFuzzer target for the full scenario loader
 * (lsim_scenario_load): the input is the scenario YAML file. Hardware
 * profiles and models come from the shipped calibrate/ folder, which the
 * loader finds by itself. A loaded scenario's effective configuration and
 * run id are read, then it is destroyed; it is not run.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "run/scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[512];
	lsim_fuzz_write("scenario.yaml", data, size, path, sizeof path);
	struct lsim_diag d;
	memset(&d, 0, sizeof d);
	struct lsim_scenario *sc = NULL;
	int rc = lsim_scenario_load(path, NULL, 0, &sc, &d);
	if (rc == 0) {
		const char *eff = lsim_scenario_effective(sc);
		const char *id = lsim_scenario_run_id(sc);
		if (!eff || !id || strlen(id) != 16)
			abort();
		volatile uint64_t sink = lsim_scenario_seed(sc) + strlen(eff);
		(void)sink;
	} else {
		lsim_fuzz_check_error(rc, &d);
	}
	lsim_scenario_destroy(sc);
	return 0;
}
