/*
 * notifier.h: the live feed's notifier (src/notifier.c), one background
 * worker per database in use. The registry wakes it through registry_wake;
 * SQL entry points start it.
 */
#ifndef XIP83_NOTIFIER_H
#define XIP83_NOTIFIER_H

#include "postgres.h"

extern int	xip83_notify_interval_ms;
extern int	xip83_notify_busy_interval_ms;
extern int	xip83_notify_heartbeat_ms;
extern int	xip83_notifier_idle_ms;

extern Size NotifierShmemSize(void);
extern void NotifierShmemRequest(void);
extern void NotifierShmemInit(void);
extern void NotifierInstallHooks(void);
/* Starts the current database's notifier unless it runs (or is starting). */
extern void NotifierEnsureRunning(void);
extern PGDLLEXPORT void xip83_notifier_main(Datum main_arg);

#endif							/* XIP83_NOTIFIER_H */
