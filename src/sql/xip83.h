/*
 * xip83.h: settings every part of the extension reads (src/xip83.c defines
 * them). The registry's capacities are in registry.h, the notifier's
 * intervals in notifier.h.
 */
#ifndef XIP83_H
#define XIP83_H

#include "postgres.h"

extern int	xip83_max_page_limit;
extern int	xip83_wave_strategy;	/* a MergeStrategy */

#endif							/* XIP83_H */
