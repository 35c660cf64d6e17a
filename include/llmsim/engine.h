/*
 * engine.h - the discrete-event engine: a clock, a pending-event queue
 * ordered by (time, sequence number), handle-based cancel and reschedule,
 * and a run loop with a time limit, early stop and a periodic callback.
 *
 * Semantics:
 *   - Events at equal times fire in the order they were scheduled
 *     (rescheduling an event gives it a new sequence number).
 *   - Scheduling in the past (at < now) is clamped to now.
 *   - A handle stays valid until its event fires or is cancelled; after
 *     that, cancel/reschedule on it return LSIM_ESTATE (stale handles are
 *     detected by a generation count, never misapplied to a reused slot).
 *   - Event records come from a pool owned by the engine: scheduling does
 *     not call malloc once the pool has grown to the peak pending count.
 *   - The engine holds no global state; several engines may coexist.
 */
#ifndef LLMSIM_ENGINE_H
#define LLMSIM_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "llmsim/llmsim.h"

struct lsim_engine;

/* An event handler: subject and arg are what was passed to lsim_schedule. */
typedef void (*lsim_handler)(struct lsim_engine *eng, void *subject,
			     uint64_t arg);

/* Periodic callback, called at now = k * period for k >= 1 (before any
 * event at the same time). */
typedef void (*lsim_periodic_fn)(struct lsim_engine *eng, void *ctx);

/* Opaque event handle; 0 is never a valid handle. */
typedef uint64_t lsim_event_id;

struct lsim_engine *lsim_engine_create(void);
void lsim_engine_destroy(struct lsim_engine *eng);

/* Returns a handle, or 0 if memory ran out. */
lsim_event_id lsim_schedule(struct lsim_engine *eng, lsim_time at,
			    lsim_handler fn, void *subject, uint64_t arg);
/* Convenience: schedule at now + delay. */
lsim_event_id lsim_schedule_in(struct lsim_engine *eng, lsim_time delay,
			       lsim_handler fn, void *subject, uint64_t arg);

/* Tags: a number the event carries for the before-event hook to read
 * (lsim_event_tag); the engine gives them no meaning. lsim_schedule's
 * events have tag 0; a reschedule keeps the tag. LSIM_TAG_INTERNAL marks
 * an event whose handler reads and changes only the state of the module
 * that scheduled it (a message moving between links): a hook bringing
 * other state up to date may skip it. */
#define LSIM_TAG_INTERNAL 1u
lsim_event_id lsim_schedule_tag(struct lsim_engine *eng, lsim_time at,
				lsim_handler fn, void *subject, uint64_t arg,
				uint32_t tag);
lsim_event_id lsim_schedule_in_tag(struct lsim_engine *eng, lsim_time delay,
				   lsim_handler fn, void *subject, uint64_t arg,
				   uint32_t tag);
/* The tag of the event being handled (in the before-event hook, the
 * handler and the after-event hook); 0 in a periodic callback and
 * outside lsim_run. */
uint32_t lsim_event_tag(const struct lsim_engine *eng);
int lsim_cancel(struct lsim_engine *eng, lsim_event_id id);
int lsim_reschedule(struct lsim_engine *eng, lsim_event_id id, lsim_time at);
bool lsim_event_pending(const struct lsim_engine *eng, lsim_event_id id);

lsim_time lsim_now(const struct lsim_engine *eng);
size_t lsim_pending(const struct lsim_engine *eng);
uint64_t lsim_events_processed(const struct lsim_engine *eng);

/* period <= 0 removes the callback. */
void lsim_set_periodic(struct lsim_engine *eng, lsim_time period,
		       lsim_periodic_fn fn, void *ctx);

/* fn (NULL removes it) is called after every event's handler and after
 * every periodic callback, with now at that event's time: debug builds
 * check the simulation's invariants there. */
void lsim_set_after_event(struct lsim_engine *eng, lsim_periodic_fn fn,
			  void *ctx);

/* fn (NULL removes it) is called before every event's handler (not
 * before periodic callbacks), with now at that event's time: the
 * simulation brings state it advances lazily (macro steps) up to now. */
void lsim_set_before_event(struct lsim_engine *eng, lsim_periodic_fn fn,
			   void *ctx);

/* fn (NULL removes it) is called after the handler of every event whose
 * count (lsim_events_processed) is a multiple of 2^log2_every, with now at
 * that event's time: a run reports its progress there, at a cost per event
 * of one test of the count. */
void lsim_set_tick(struct lsim_engine *eng, unsigned log2_every,
		   lsim_periodic_fn fn, void *ctx);

/*
 * Runs events with time <= until (use LSIM_TIME_MAX for no limit) until the
 * queue is empty or lsim_stop is called. On return now is the time of the
 * last event run (or until, if the limit was reached with events pending).
 * Returns the number of events processed by this call.
 */
uint64_t lsim_run(struct lsim_engine *eng, lsim_time until);
/* Makes lsim_run return after the current event. */
void lsim_stop(struct lsim_engine *eng);
/* Whether an event was asked for beyond the clock's range (now + delay
 * past LSIM_TIME_MAX, 9.2e18 ns): lsim_schedule_in then schedules
 * nothing, returns 0 and stops the run; the caller reports the error. */
bool lsim_clock_overflow(const struct lsim_engine *eng);

#endif
