/*
 * loop_timer.c: one-shot timers in a binary min-heap of groups of equal due
 * time (see loop_timer.h).
 */
#include "loop_timer.h"

#include <stdlib.h>
#include <time.h>

/* slot of a timer that is running but not first of a group */
#define MEMBER SIZE_MAX
/* slot of a timer taken out of the heap by a run, before it fires */
#define FIRING (SIZE_MAX - 1)

uint64_t
xip83_loop_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static Xip83Timer **
CacheEntry(Xip83Timers *ts, uint64_t due_ms)
{
	return &ts->cache[due_ms % XIP83_TIMER_CACHE];
}

/* Puts the entry e at heap index i and records the index in its first timer. */
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

/* Takes the group at heap index i out of the heap; its timers keep their links. */
static void
RemoveGroup(Xip83Timers *ts, size_t i)
{
	Xip83TimerSlot last = ts->heap[--ts->n];
	Xip83Timer **c = CacheEntry(ts, ts->heap[i].due_ms);

	if (*c == ts->heap[i].timer)
		*c = NULL;
	if (i == ts->n)
		return;
	Place(ts, i, last);
	SiftUp(ts, i);
	SiftDown(ts, last.timer->slot - 1);
}

void
xip83_timer_stop(Xip83Timers *ts, Xip83Timer *t)
{
	if (t->slot == 0)
		return;
	ts->count--;
	if (t->slot == MEMBER || t->slot == FIRING)
	{
		/* a member has a first before it; the run's list has no first */
		if (t->prev != NULL)
			t->prev->next = t->next;
		else
			ts->firing = t->next;
		if (t->next != NULL)
			t->next->prev = t->prev;
	}
	else if (t->next != NULL)
	{
		/* the next timer of the group takes the first's place in the heap */
		Xip83Timer *n = t->next;
		Xip83Timer **c = CacheEntry(ts, t->due_ms);

		n->prev = NULL;
		n->slot = t->slot;
		ts->heap[t->slot - 1].timer = n;
		if (*c == t)
			*c = n;
	}
	else
		RemoveGroup(ts, t->slot - 1);
	t->slot = 0;
	t->prev = t->next = NULL;
}

bool
xip83_timer_start(Xip83Timers *ts, Xip83Timer *t, uint64_t delay_ms,
				  Xip83TimerFn fire, void *arg)
{
	return xip83_timer_start_at(ts, t, xip83_loop_now_ms() + delay_ms, fire, arg);
}

bool
xip83_timer_start_at(Xip83Timers *ts, Xip83Timer *t, uint64_t due_ms,
					 Xip83TimerFn fire, void *arg)
{
	Xip83Timer **c;
	Xip83Timer *first;

	xip83_timer_stop(ts, t);
	t->due_ms = due_ms;
	t->fire = fire;
	t->arg = arg;
	c = CacheEntry(ts, t->due_ms);
	if ((first = *c) != NULL && first->due_ms == t->due_ms)
	{
		/* joins the group, right after its first */
		t->prev = first;
		t->next = first->next;
		if (t->next != NULL)
			t->next->prev = t;
		first->next = t;
		t->slot = MEMBER;
		ts->count++;
		return true;
	}
	if (ts->n == ts->cap)
	{
		size_t		cap = ts->cap ? ts->cap * 2 : 64;
		Xip83TimerSlot *h = realloc(ts->heap, cap * sizeof(*h));

		if (h == NULL)
			return false;
		ts->heap = h;
		ts->cap = cap;
	}
	t->prev = t->next = NULL;
	Place(ts, ts->n++, (Xip83TimerSlot) {t->due_ms, t});
	SiftUp(ts, ts->n - 1);
	*c = t;
	ts->count++;
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
	Xip83Timer *last = NULL;

	/*
	 * The due groups leave the heap for one list first, in due order, so
	 * that a timer (re)started by a callback waits for the next run; a timer
	 * that a callback stops leaves the list.
	 */
	while (ts->n > 0 && ts->heap[0].due_ms <= now)
	{
		Xip83Timer *first = ts->heap[0].timer;

		RemoveGroup(ts, 0);
		first->prev = last;
		if (last != NULL)
			last->next = first;
		else
			ts->firing = first;
		for (Xip83Timer *t = first; t != NULL; t = t->next)
		{
			t->slot = FIRING;
			last = t;
		}
	}
	while (ts->firing != NULL)
	{
		Xip83Timer *t = ts->firing;

		xip83_timer_stop(ts, t);
		t->fire(t->arg);
	}
}

void
xip83_timers_free(Xip83Timers *ts)
{
	for (size_t i = 0; i < ts->n; i++)
		for (Xip83Timer *t = ts->heap[i].timer, *next; t != NULL; t = next)
		{
			next = t->next;
			t->slot = 0;
			t->prev = t->next = NULL;
		}
	free(ts->heap);
	ts->heap = NULL;
	ts->n = ts->cap = ts->count = 0;
	for (size_t i = 0; i < XIP83_TIMER_CACHE; i++)
		ts->cache[i] = NULL;
}
