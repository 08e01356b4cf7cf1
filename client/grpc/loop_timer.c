/*
 * loop_timer.c: a binary min-heap of one-shot timers (see loop_timer.h).
 */
#include "loop_timer.h"

#include <stdlib.h>
#include <time.h>

uint64_t
xip83_loop_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/* Puts the entry e at heap index i and records the index in its timer. */
static void
Place(Xip83Timers *ts, size_t i, Xip83TimerSlot e)
{
	ts->heap[i] = e;
	e.timer->slot = i + 1;
}

/* Moves the entry at i towards the root while it is due before its parent. */
static void
SiftUp(Xip83Timers *ts, size_t i)
{
	Xip83TimerSlot e = ts->heap[i];

	while (i > 0)
	{
		size_t		parent = (i - 1) / 2;

		if (ts->heap[parent].due_ms <= e.due_ms)
			break;
		Place(ts, i, ts->heap[parent]);
		i = parent;
	}
	Place(ts, i, e);
}

/* Moves the entry at i towards the leaves while a child is due before it. */
static void
SiftDown(Xip83Timers *ts, size_t i)
{
	Xip83TimerSlot e = ts->heap[i];

	for (;;)
	{
		size_t		child = 2 * i + 1;

		if (child >= ts->n)
			break;
		if (child + 1 < ts->n && ts->heap[child + 1].due_ms < ts->heap[child].due_ms)
			child++;
		if (e.due_ms <= ts->heap[child].due_ms)
			break;
		Place(ts, i, ts->heap[child]);
		i = child;
	}
	Place(ts, i, e);
}

void
xip83_timer_stop(Xip83Timers *ts, Xip83Timer *t)
{
	size_t		i;
	Xip83TimerSlot last;

	if (t->slot == 0)
		return;
	i = t->slot - 1;
	t->slot = 0;
	last = ts->heap[--ts->n];
	if (last.timer == t)
		return;
	Place(ts, i, last);
	SiftUp(ts, i);
	SiftDown(ts, last.timer->slot - 1);
}

bool
xip83_timer_start(Xip83Timers *ts, Xip83Timer *t, uint64_t delay_ms,
				  Xip83TimerFn fire, void *arg)
{
	xip83_timer_stop(ts, t);
	if (ts->n == ts->cap)
	{
		size_t		cap = ts->cap ? ts->cap * 2 : 64;
		Xip83TimerSlot *h = realloc(ts->heap, cap * sizeof(*h));

		if (h == NULL)
			return false;
		ts->heap = h;
		ts->cap = cap;
	}
	t->due_ms = xip83_loop_now_ms() + delay_ms;
	t->fire = fire;
	t->arg = arg;
	Place(ts, ts->n++, (Xip83TimerSlot) {t->due_ms, t});
	SiftUp(ts, ts->n - 1);
	return true;
}

int
xip83_timers_wait_ms(const Xip83Timers *ts, uint64_t now)
{
	uint64_t	due;

	if (ts->n == 0)
		return -1;
	due = ts->heap[0].due_ms;
	if (due <= now)
		return 0;
	return due - now > 60000 ? 60000 : (int) (due - now);
}

void
xip83_timers_run(Xip83Timers *ts, uint64_t now)
{
	/* a callback that restarts its timer with no delay waits for the next turn */
	size_t		budget = ts->n;

	while (budget-- > 0 && ts->n > 0 && ts->heap[0].due_ms <= now)
	{
		Xip83Timer *t = ts->heap[0].timer;

		xip83_timer_stop(ts, t);
		t->fire(t->arg);
	}
}

void
xip83_timers_free(Xip83Timers *ts)
{
	for (size_t i = 0; i < ts->n; i++)
		ts->heap[i].timer->slot = 0;
	free(ts->heap);
	ts->heap = NULL;
	ts->n = ts->cap = 0;
}
