/*
 * instance_internal.h - what the pieces of the serving instance
 * (instance.c: queues, blocks, steps, pipeline, lockstep, service mode;
 * instance_macro.c: macro steps) share. Included by nothing else.
 */
#ifndef LLMSIM_INSTANCE_INTERNAL_H
#define LLMSIM_INSTANCE_INTERNAL_H

#include "kernel/array.h"
#include "serving/serving.h"

/* a / b rounded up (a >= 0, b > 0). */
static inline int32_t lsim_inst_ceil_div(int64_t a, int64_t b)
{
	return (int32_t)((a + b - 1) / b);
}

/* ---- instance.c ---- */

/* The run stops with LSIM_ENOMEM (the first error stands). */
void lsim_inst_fail_nomem(struct lsim_serving *s);
/* Lists blocks of r for tokens tokens, allocating what it lacks; false
 * when the cache has too few free. */
bool lsim_inst_ensure_blocks(struct lsim_instance *in, struct lsim_req *r,
			     int32_t tokens);
/* Registers r's full blocks in the prefix cache. */
void lsim_inst_register_full_blocks(struct lsim_instance *in, struct lsim_req *r);
/* Whether PCIe traffic slows the instance's kernels. */
bool lsim_inst_pcie_slowed(const struct lsim_instance *in);
/* The step time of batch b of tokens tokens (its work in ns in *work; each
 * stage's time in stages[] when not NULL). */
lsim_time lsim_inst_step_time(struct lsim_instance *in, const struct lsim_batch *b,
			      int64_t tokens, struct lsim_iter_work *work, lsim_time *stages);
/* The end of the step in flight (pp 1): an event. */
void lsim_inst_step_end(struct lsim_engine *eng, void *subject, uint64_t arg);
/* instance_io.c: whether the steps move their inputs and outputs as flows,
 * and a step of kernel time dt and `tokens` tokens started that way. */
bool lsim_inst_io_on(const struct lsim_instance *in);
void lsim_inst_io_step(struct lsim_instance *in, lsim_time dt, int64_t tokens);
/* Starts the step formed, of kernel time dt and `tokens` tokens: its
 * inputs' flows, its compute or, with ring, its compute then its
 * all-reduce flows. */
void lsim_inst_launch_step(struct lsim_instance *in, lsim_time dt, int64_t tokens, bool ring);
/* lora.c: copies the adapters of the batch formed that are not in GPU
 * slots; returns the copies moving (the step waits for them: it starts
 * by lsim_inst_launch_step when the last arrives), -1 if the run
 * stopped. */
int32_t lsim_inst_lora_load(struct lsim_instance *in);
/* Adds a step's work (in ns per GPU) to the instance's counters. */
void lsim_inst_add_work(struct lsim_instance *in, const struct lsim_iter_work *w);
/* Forms and starts the instance's next step, if it has one to run. */
void lsim_inst_schedule_step(struct lsim_instance *in);
/* The requests list[0 .. n-1] (toks: each one's tokens, NULL: their
 * sched_tokens) ran a step begun at start on gpus GPUs: their tokens,
 * finishes, handovers and GPU time. */
void lsim_inst_finish_batch(struct lsim_instance *in, const int32_t *list,
			    const int32_t *toks, size_t n, lsim_time start, int32_t gpus);

/* ---- instance_pipe.c ---- */

/* Whether the step's all-reduces run as flows on the links. */
bool lsim_inst_ring_on(const struct lsim_instance *in);
/* Starts one collective's flow of `bytes` from GPU src to GPU dst of the
 * run's cluster, at most `cap` bytes/s (0: no cap), done(ctx, flow, arg)
 * on arrival; false (and the run stopped with the error) if the links
 * refuse it. */
bool lsim_inst_gpu_flow(struct lsim_serving *s, int32_t src, int32_t dst, double bytes,
			double cap, lsim_flow_done_fn done, void *ctx, uint64_t arg);
/* A pipeline's sends and all-gathers move as flows on the links (a
 * cluster) rather than in the NCCL model's closed form. */
bool lsim_inst_pp_flows(const struct lsim_instance *in);
/* The step's compute is done (pp 1): its all-reduce flows start, or the
 * step ends. An event. */
void lsim_inst_compute_done(struct lsim_engine *eng, void *subject, uint64_t arg);
/* Issues a batch of tokens tokens and work work into the pipeline. */
void lsim_inst_pipe_issue(struct lsim_instance *in, int64_t tokens, struct lsim_iter_work work);
/* Seconds to send bytes of activations from stage st to the next, NCCL's
 * send/recv latency in *lat. */
double lsim_inst_pp_send_s(const struct lsim_instance *in, int32_t st, double bytes, double *lat);

/* ---- instance_macro.c ---- */

/* Plans a macro step from batch b's first step (of time dt, starting at
 * start); returns the time of the step in flight (dt when no run). */
lsim_time lsim_inst_plan_run(struct lsim_instance *in, struct lsim_batch *b,
			     lsim_time dt, lsim_time start);
/* The run reached the end of its plan with the batch unchanged: plans
 * more steps; false when it cannot go on. */
bool lsim_inst_extend_run(struct lsim_instance *in);
/* The step ends of in's run before t (at_t: and at t) take place now. */
void lsim_inst_catch_up(struct lsim_instance *in, lsim_time t, bool at_t);
/* Something could change the batch: the run ends with the step in flight. */
void lsim_inst_macro_cut(struct lsim_instance *in);

#endif
