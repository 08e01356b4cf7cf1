/*
 * standby.h: xip83 on a hot standby (src/standby.c).
 *
 * The fence. A feed's commit_lsn, read after its horizons were computed, is a
 * WAL position before which every commit at or below those horizons lies
 * (each writer raises it before its pins are cleared, and the commit record
 * precedes that). A standby that has replayed past the fence sees every such
 * row in a snapshot taken afterwards.
 *
 * On a standby the registry holds what WAL replay put there: late ring
 * entries, and the horizons the primary's notifier logged (registry_wal.c).
 * Readers use those, read-only; nothing pins or writes.
 */
#ifndef XIP83_STANDBY_H
#define XIP83_STANDBY_H

#include "postgres.h"

#include "access/xlogdefs.h"

#include "horizon.h"
#include "core/registry.h"

/* How long a fenced read on a standby waits for replay (xip83.standby_wait_ms). */
extern int	xip83_standby_wait_ms;

extern void StandbyDefineGucs(void);

/* A WAL position and its history: where readers can check it. */
typedef struct Fence
{
	XLogRecPtr	lsn;
	TimeLineID	timeline;
	uint64		system_identifier;
} Fence;

/*
 * The fence of the horizons a feed just handed out (call right after
 * computing them): its commit_lsn, or the flushed WAL end when no commit
 * registered since the start (every row then predates the start).
 */
extern Fence StandbyFenceOf(RegistryDb *db);

/*
 * During recovery: the replayed entry of a feed of the current database,
 * read-only. 55000 when the primary's horizons of it were not replayed yet.
 */
extern RegistryDb *StandbyFeed(Oid relid);

/*
 * During recovery: waits until replay passed fence, for at most
 * xip83.standby_wait_ms (SQLSTATE X83F0 after that; X83F1 when recovery
 * ended short of it). Interruptible.
 */
extern void StandbyWaitForFence(XLogRecPtr fence);

/*
 * The notifier: logs a feed's horizons for standbys, only the lines that
 * moved since its last record of that feed, or every line when full.
 */
extern void StandbyLogHorizons(RegistryDb *db, const HorizonSet *set, bool full);

#endif							/* XIP83_STANDBY_H */
