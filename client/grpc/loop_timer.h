/*
 * loop_timer.h: one-shot timers for a single-threaded event loop.
 *
 * The caller owns each Xip83Timer (embedded in its own struct: starting a
 * timer allocates nothing per timer), so a hundred thousand streams can each
 * keep a keepalive timer. Timers sit in a binary min-heap by due time; start,
 * stop and restart are O(log n). The heap holds each timer's due time beside
 * it, so that sifting compares within the array rather than loading timers
 * spread over the callers' memory. Times are CLOCK_MONOTONIC milliseconds.
 * A timer fires once; its callback may start it again or start and stop any
 * other timer.
 */
#ifndef XIP83_LOOP_TIMER_H
#define XIP83_LOOP_TIMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef void (*Xip83TimerFn) (void *arg);

typedef struct Xip83Timer
{
	uint64_t	due_ms;
	size_t		slot;			/* index in the heap + 1; 0 when not running */
	Xip83TimerFn fire;
	void	   *arg;
} Xip83Timer;

typedef struct Xip83TimerSlot
{
	uint64_t	due_ms;
	Xip83Timer *timer;
} Xip83TimerSlot;

typedef struct Xip83Timers
{
	Xip83TimerSlot *heap;
	size_t		n;
	size_t		cap;
} Xip83Timers;

/* Now, in milliseconds of the monotonic clock. */
extern uint64_t xip83_loop_now_ms(void);

/*
 * (Re)starts t to fire after delay_ms with fire(arg); false when out of
 * memory (the timer is then not running).
 */
extern bool xip83_timer_start(Xip83Timers *ts, Xip83Timer *t, uint64_t delay_ms,
							  Xip83TimerFn fire, void *arg);

/* Stops t; nothing when it is not running. */
extern void xip83_timer_stop(Xip83Timers *ts, Xip83Timer *t);

static inline bool
xip83_timer_running(const Xip83Timer *t)
{
	return t->slot != 0;
}

/* Milliseconds until the next timer is due (0 when overdue), -1 when none. */
extern int	xip83_timers_wait_ms(const Xip83Timers *ts, uint64_t now);

/* Fires every timer due at now, in due order. */
extern void xip83_timers_run(Xip83Timers *ts, uint64_t now);

/* Frees the heap; the timers themselves are the callers'. */
extern void xip83_timers_free(Xip83Timers *ts);

#endif
