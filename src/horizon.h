/*
 * horizon.h: commit-order-safe horizons, the contract other files build on.
 *
 * A horizon is the highest position P of one position line (group message
 * ids, welcome ids, or one originator's sequence ids, in the current database)
 * such that every row at a position <= P is committed or will never exist.
 * Horizons handed out never decrease while the server runs (a committed
 * TRUNCATE of a table starts its lines over at 0), so a consumer that reads
 * (cursor, P] in an earlier-or-equal snapshot taken after P was read never
 * skips a late committer. Read P first, then take the snapshot: a snapshot
 * taken before P was computed may miss rows at or below P.
 *
 * Every function here needs shared_preload_libraries = 'xip83' and fails with
 * SQLSTATE 55000 otherwise; it must be called inside a transaction (the first
 * use of a database after a server start reads its tables once). Each call
 * takes the registry lock in shared mode and reads one slot per backend: cheap,
 * but not free, so call it once per wave or fetch, not per row.
 *
 * Ceilings: a wave that pins group_ceiling() = HorizonOfGroups(),
 * welcome_ceiling() = HorizonOfWelcomes() and originator_ceilings() from
 * HorizonOfOriginator() / HorizonCollect() never leaves a late committer for
 * neither the wave nor the live lane: rows above the ceiling are the live
 * lane's, and no row at or below it can commit after the pin. Horizons cover
 * the xip83.* tables only (their ids are registered); a scan of another
 * `source` table has no registry behind it.
 */
#ifndef XIP83_HORIZON_H
#define XIP83_HORIZON_H

#include "postgres.h"

#include "utils/snapshot.h"

/* Originators one database can track; a LiveNotice of this many fits NOTIFY. */
#define HORIZON_MAX_ORIGINATORS 64

/* Every horizon of the current database, computed at one moment. */
typedef struct HorizonSet
{
	int64		group;			/* group message ids */
	int64		welcome;		/* welcome message ids */
	int			n_originators;	/* ascending by node id */
	int32		originator_node_ids[HORIZON_MAX_ORIGINATORS];
	int64		originator_horizons[HORIZON_MAX_ORIGINATORS];
} HorizonSet;

/* Errors with 55000 unless the library was preloaded. */
extern void HorizonRequirePreload(void);
extern bool HorizonPreloaded(void);

/* Group-message horizon of the current database. */
extern int64 HorizonOfGroups(void);
/* Welcome horizon of the current database. */
extern int64 HorizonOfWelcomes(void);
/* Horizon of one originator of the current database; 0 if it has no envelopes. */
extern int64 HorizonOfOriginator(int32 originator_node_id);
/* All horizons of the current database at once. */
extern void HorizonCollect(HorizonSet *out);
/*
 * The snapshot to read rows up to a horizon, or up to a wave ceiling pinned
 * from one. Every row at or below a horizon committed before the horizon was
 * computed, so a snapshot taken after that sees it; one taken before may not
 * (a ceiling read in the same statement as the scan, or earlier in a
 * REPEATABLE READ transaction). So: the active snapshot, unless it is the
 * one this backend last read a horizon under, then a new one. Register it to
 * keep it. Needs no preloading.
 */
extern Snapshot HorizonReadSnapshot(void);

/*
 * Whether relid is the xip83 table of that name ("group_messages",
 * "welcome_messages", "envelopes"): the only tables horizons cover. A wave's
 * ceiling over any other source is that table's highest visible position.
 */
extern bool HorizonCoversTable(Oid relid, const char *table);

/* Shared memory and hooks, from _PG_init while preloading. */
extern Size HorizonShmemSize(void);
extern void HorizonShmemRequest(void);
extern void HorizonShmemInit(void);
extern void HorizonInstallHooks(void);

#endif							/* XIP83_HORIZON_H */
