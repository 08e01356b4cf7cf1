/*
 * xip83.h: what the extension's files share: GUC values and version guards.
 */
#ifndef XIP83_H
#define XIP83_H

#include "postgres.h"

/* GUCs (src/xip83.c) */
extern int	xip83_max_page_limit;
extern int	xip83_wave_strategy;	/* a MergeStrategy */

#endif							/* XIP83_H */
