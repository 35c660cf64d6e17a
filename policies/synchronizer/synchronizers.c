/*
 * synchronizers.c - synchronizer policies: the control plane between the
 * scheduler and the instances. none is a perfect control plane (requests
 * reach their instance the instant they are admitted); fixed adds a
 * constant dispatch latency (the request travels over the control plane);
 * heartbeat detects failed instances by missed heartbeats, retries their
 * requests a bounded number of times and takes a leader election when the
 * coordinator fails.
 */
#include <stddef.h>

#include "registry.h"

static lsim_time none_delay(void *state, const struct lsim_request_info *r)
{
	return 0;
}

static const struct lsim_synchronizer_ops none_ops = {.dispatch_delay = none_delay};

const struct lsim_policy_type lsim_sync_none = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SYNCHRONIZER,
	.name = "none", .summary = "a perfect control plane: no dispatch delay, no failures",
	.ops = &none_ops,
};

struct fixed_state {
	lsim_time delay;
};

static lsim_time fixed_delay(void *state, const struct lsim_request_info *r)
{
	return ((const struct fixed_state *)state)->delay;
}

static const struct lsim_synchronizer_ops fixed_ops = {.dispatch_delay = fixed_delay};

static const struct lsim_keydef fixed_params[] = {
	{"delay", LSIM_K_TIME, offsetof(struct fixed_state, delay), "1ms", 0, 1e12,
	 NULL, "control-plane latency from admission to the instance", ""},
};

const struct lsim_policy_type lsim_sync_fixed = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SYNCHRONIZER,
	.name = "fixed", .summary = "a constant control-plane dispatch latency",
	.state_size = sizeof(struct fixed_state), .params = fixed_params,
	.n_params = 1, .ops = &fixed_ops,
};

struct heartbeat_state {
	lsim_time interval, delay, election;
	int64_t missed, retries;
};

static lsim_time hb_delay(void *state, const struct lsim_request_info *r)
{
	return ((const struct heartbeat_state *)state)->delay;
}

/* Beats are due at multiples of interval; the failure is noticed when the
 * missed-th beat after it has not come. */
static lsim_time hb_detect(void *state, lsim_time failed_at)
{
	const struct heartbeat_state *s = state;
	lsim_time next = (failed_at / s->interval + 1) * s->interval;
	return next + (s->missed - 1) * s->interval - failed_at;
}

static bool hb_retry(void *state, const struct lsim_request_info *r, int32_t attempts)
{
	return attempts <= ((const struct heartbeat_state *)state)->retries;
}

static lsim_time hb_election(void *state)
{
	return ((const struct heartbeat_state *)state)->election;
}

static const struct lsim_synchronizer_ops heartbeat_ops = {
	.dispatch_delay = hb_delay, .detection_delay = hb_detect,
	.retry = hb_retry, .election_time = hb_election,
};

#define HB(f) offsetof(struct heartbeat_state, f)
static const struct lsim_keydef heartbeat_params[] = {
	{"interval", LSIM_K_TIME, HB(interval), "1s", 1000, 1e13, NULL, "time between heartbeats", ""},
	{"missed", LSIM_K_INT, HB(missed), "3", 1, 1000, NULL, "missed heartbeats that declare an instance failed", ""},
	{"retries", LSIM_K_INT, HB(retries), "2", 0, 1000, NULL, "times a request caught by failures is re-queued before it fails", ""},
	{"election", LSIM_K_TIME, HB(election), "5s", 0, 1e13, NULL, "leader election after the coordinator fails: new requests wait", ""},
	{"delay", LSIM_K_TIME, HB(delay), "0s", 0, 1e12, NULL, "control-plane latency from admission to the instance", ""},
};
#undef HB

const struct lsim_policy_type lsim_sync_heartbeat = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SYNCHRONIZER,
	.name = "heartbeat",
	.summary = "detect failed instances by missed heartbeats, retry their requests, elect a new leader",
	.state_size = sizeof(struct heartbeat_state), .params = heartbeat_params,
	.n_params = sizeof heartbeat_params / sizeof heartbeat_params[0],
	.ops = &heartbeat_ops,
};
