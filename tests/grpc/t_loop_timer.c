/*
 * t_loop_timer: the gateway loop's timer heap (client/grpc/loop_timer.h) on
 * its own, against a plain list as its definition: 20,000 random starts,
 * restarts and stops of 5,000 timers, some from inside callbacks, half of
 * the starts at a few due times so that most timers share a group, then
 * every running timer fired in one run far in the future. Checked: each timer
 * fires once if and only if it is running in the list, in due order (the
 * heap's and the list's due times equal), xip83_timer_running agrees, and a
 * callback that restarts its timer with no delay waits for the next run.
 * No server is needed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "loop_timer.h"

#define TIMERS 5000
#define STEPS 20000

typedef struct T
{
	Xip83Timer	timer;
	int			id;
	uint64_t	due;			/* the list's due time; 0: not running */
	int			fired;
} T;

static Xip83Timers heap;
static T	timers[TIMERS];
static uint64_t last_due;
static int	failures;
static unsigned int seed = 83;

#define CHECK(c, ...) do { if (!(c)) { failures++; fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static void Fire(void *arg);

/* Records a start in the list, once the heap took it. */
static void
Started(T *t, bool ok)
{
	if (!ok)
	{
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	t->due = t->timer.due_ms;
}

static void
Start(T *t, uint64_t delay)
{
	Started(t, xip83_timer_start(&heap, &t->timer, delay, Fire, t));
}

static void
StartAt(T *t, uint64_t due)
{
	Started(t, xip83_timer_start_at(&heap, &t->timer, due, Fire, t));
}

static void
Stop(T *t)
{
	xip83_timer_stop(&heap, &t->timer);
	t->due = 0;
}

/* While the random steps run, a fire restarts or stops another timer. */
static bool meddle;

static void
Fire(void *arg)
{
	T		   *t = arg;

	CHECK(t->due != 0, "timer %d fired while stopped", t->id);
	CHECK(t->timer.due_ms >= last_due, "timer %d fired out of order", t->id);
	CHECK(!xip83_timer_running(&t->timer), "timer %d running in its own callback", t->id);
	last_due = t->timer.due_ms;
	t->due = 0;
	t->fired++;
	if (meddle)
	{
		T		   *o = &timers[rand_r(&seed) % TIMERS];

		if (rand_r(&seed) % 2)
			Start(o, rand_r(&seed) % 1000);
		else
			Stop(o);
	}
}

static int	again_count;

static void
Again(void *arg)
{
	again_count++;
	xip83_timer_start(&heap, arg, 0, Again, arg);
}

int
main(void)
{
	uint64_t	now,
				base = xip83_loop_now_ms() + 50000;
	int			running = 0,
				fired = 0;

	alarm(120);					/* a broken heap can loop forever */
	for (int i = 0; i < TIMERS; i++)
		timers[i].id = i;
	meddle = true;
	for (int s = 0; s < STEPS; s++)
	{
		T		   *t = &timers[rand_r(&seed) % TIMERS];
		unsigned	op = rand_r(&seed) % 10;

		if (op < 3)
			Start(t, rand_r(&seed) % 100000);	/* start or restart */
		else if (op < 6)
			StartAt(t, base + (rand_r(&seed) % 4) * 1000);	/* into a group */
		else if (op < 9)
			Stop(t);
		else
		{
			/* what is due now fires, callbacks meddling */
			last_due = 0;
			xip83_timers_run(&heap, xip83_loop_now_ms());
		}
	}
	meddle = false;
	for (int i = 0; i < TIMERS; i++)
	{
		CHECK(xip83_timer_running(&timers[i].timer) == (timers[i].due != 0),
			  "timer %d: running %d, the list says %d", i, xip83_timer_running(&timers[i].timer),
			  timers[i].due != 0);
		running += timers[i].due != 0;
		timers[i].fired = 0;
	}
	CHECK(heap.count == (size_t) running, "the heap holds %zu timers, the list %d", heap.count, running);
	CHECK(heap.count - heap.n >= heap.count / 4, "%zu timers in %zu groups: too few share a group",
		  heap.count, heap.n);
	now = xip83_loop_now_ms() + 200000;
	last_due = 0;
	xip83_timers_run(&heap, now);
	for (int i = 0; i < TIMERS; i++)
	{
		CHECK(timers[i].due == 0, "timer %d did not fire", i);
		CHECK(timers[i].fired <= 1, "timer %d fired %d times", i, timers[i].fired);
		fired += timers[i].fired;
	}
	CHECK(fired == running && heap.count == 0 && heap.n == 0, "%d of %d timers fired, %zu left",
		  fired, running, heap.count);
	CHECK(xip83_timers_wait_ms(&heap, now) == -1, "no timer, yet a wait");

	/* a timer restarted from its callback with no delay waits for the next run */
	{
		Xip83Timer	again = {0};

		xip83_timer_start(&heap, &again, 0, Again, &again);
		xip83_timers_run(&heap, xip83_loop_now_ms() + 10);
		CHECK(again_count == 1, "a timer restarting itself fired %d times in one run", again_count);
		xip83_timers_run(&heap, xip83_loop_now_ms() + 10);
		CHECK(again_count == 2, "and %d times after the next", again_count);
		xip83_timer_stop(&heap, &again);
	}
	printf("%d timers running after %d steps fired in due order; %d failures\n", running, STEPS, failures);
	xip83_timers_free(&heap);
	return failures ? 1 : 0;
}
