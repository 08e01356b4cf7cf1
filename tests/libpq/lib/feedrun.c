/* feedrun.c: see feedrun.h. */
#include "feedrun.h"

#include <stdio.h>
#include <string.h>

#include "testlib.h"

static void
CountStatus(void *arg, const char *status, const char *detail)
{
	FeedRun    *run = arg;

	fprintf(stderr, "consumer: feed %s (%s)\n", status, detail);
	if (strcmp(status, "live") == 0)
		atomic_fetch_add(&run->live, 1);
	else if (strcmp(status, "offline") == 0)
		atomic_fetch_add(&run->offline, 1);
	else if (strcmp(status, "back") == 0)
		atomic_fetch_add(&run->back, 1);
	else if (strcmp(status, "late-lost") == 0)
		atomic_fetch_add(&run->late_lost, 1);
}

void *
feedrun_thread(void *arg)
{
	FeedRun    *run = arg;
	Xip83FeedOptions opt = run->opt;
	Xip83Feed  *feed;

	opt.on_status = CountStatus;
	opt.arg = run;
	feed = xip83_feed_new(&opt);
	while (!atomic_load(&run->stop))
		if (xip83_feed_step(feed, run->step_ms) < 0)
			tl_fatal("consumer failed");
	xip83_feed_free(feed);
	return NULL;
}
