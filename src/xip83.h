/*
 * xip83.h: what the extension's files share: GUC values, version guards and
 * the notifier's entry points (src/notifier.c).
 */
#ifndef XIP83_H
#define XIP83_H

#include "postgres.h"

#include "compat.h"

/* GUCs (src/xip83.c) */
extern int	xip83_max_page_limit;
extern int	xip83_notify_interval_ms;
extern int	xip83_notify_heartbeat_ms;

/* The notifier (src/notifier.c): one background worker per database in use. */
extern Size NotifierShmemSize(void);
extern void NotifierShmemRequest(void);
extern void NotifierShmemInit(void);
extern void NotifierInstallHooks(void);
/* Starts the current database's notifier unless it runs (or is starting). */
extern void NotifierEnsureRunning(void);
/* Wakes the current database's notifier: a horizon may have advanced. */
extern void NotifierWake(void);
extern PGDLLEXPORT void xip83_notifier_main(Datum main_arg);
extern int	xip83_wave_strategy;	/* a MergeStrategy */

#endif							/* XIP83_H */
