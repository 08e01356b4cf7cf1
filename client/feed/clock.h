/*
 * clock.h: the clock of every timeout and deadline in the client programs.
 */
#ifndef XIP83_CLOCK_H
#define XIP83_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic milliseconds. */
static inline int64_t
xip83_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif							/* XIP83_CLOCK_H */
