/*
 * loop_timer.h: one-shot timers for a single-threaded event loop.
 *
 * The caller owns each Xip83Timer (embedded in its own struct: starting a
 * timer allocates nothing per timer), so a hundred thousand streams can each
 * keep a keepalive timer. Timers due at the same millisecond form a group,
 * and the groups sit in a binary min-heap by due time, each entry holding its
 * due time beside its first timer so that sifting compares within the array.
 * A timer started at the due time of a group started just before (a small
 * cache by due time finds it) joins that group in O(1), and leaving a group
 * that is not left empty is O(1): many timers armed for one grid point (the
 * keepalives of a connection's streams) cost the heap one entry. Other
 * starts and stops are O(log groups). Times are CLOCK_MONOTONIC
 * milliseconds. A timer fires once; its callback may start it again or start
 * and stop any other timer.
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
	/*
	 * 0 when not running; a group's first timer: its heap index + 1; a later
	 * one of a group, or one taken out to fire: a mark above any index
	 */
	size_t		slot;
	struct Xip83Timer *prev;	/* in its group, or in the run's list */
	struct Xip83Timer *next;
	Xip83TimerFn fire;
	void	   *arg;
} Xip83Timer;

typedef struct Xip83TimerSlot
{
	uint64_t	due_ms;
	Xip83Timer *timer;			/* the group's first timer */
} Xip83TimerSlot;

#define XIP83_TIMER_CACHE 8192

typedef struct Xip83Timers
{
	Xip83TimerSlot *heap;		/* a min-heap of groups */
	size_t		n;				/* groups */
	size_t		cap;
	size_t		count;			/* running timers */
	Xip83Timer *firing;			/* due timers of the run in progress */
	Xip83Timer *cache[XIP83_TIMER_CACHE];	/* first timers of groups, by due time */
} Xip83Timers;

/* Now, in milliseconds of the monotonic clock. */
extern uint64_t xip83_loop_now_ms(void);

/*
 * (Re)starts t to fire after delay_ms with fire(arg); false when out of
 * memory (the timer is then not running).
 */
extern bool xip83_timer_start(Xip83Timers *ts, Xip83Timer *t, uint64_t delay_ms,
							  Xip83TimerFn fire, void *arg);

/* The same at due_ms of xip83_loop_now_ms's clock (the past: the next run). */
extern bool xip83_timer_start_at(Xip83Timers *ts, Xip83Timer *t, uint64_t due_ms,
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

/*
 * Fires every timer due at now, in due order; a timer started while the run
 * is in progress waits for the next run, whatever its due time.
 */
extern void xip83_timers_run(Xip83Timers *ts, uint64_t now);

/* Stops every timer and frees the heap; the timers themselves are the callers'. */
extern void xip83_timers_free(Xip83Timers *ts);

#endif
