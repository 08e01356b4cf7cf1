/*
 * feedrun.h: a feed consumer on its own thread for the libpq tests, with the
 * status changes it reported counted (and printed on stderr).
 */
#ifndef XIP83_FEEDRUN_H
#define XIP83_FEEDRUN_H

#include <stdatomic.h>

#include "feed/feed.h"

typedef struct FeedRun
{
	Xip83FeedOptions opt;		/* on_row and the rest; on_status is the run's */
	int			step_ms;
	atomic_int	stop;			/* set to end the thread */
	atomic_int	live;			/* "live" reports */
	atomic_int	offline;		/* "offline" reports */
	atomic_int	back;			/* "back" reports */
	atomic_int	late_lost;		/* "late-lost" reports */
} FeedRun;

/* pthread start routine: steps the feed until run->stop is set; fatal on a feed error. */
void	   *feedrun_thread(void *run);

#endif							/* XIP83_FEEDRUN_H */
