/*
 * horizon.h: commit-order-safe horizons, the contract other files build on.
 *
 * A horizon is the highest position P of one position line (group message
 * ids, welcome ids, or one originator's sequence ids, in the current database)
 * such that every row at a position <= P is committed, will never exist, or
 * is a late write announced in the late ring (registry.h). Horizons handed out
 * never decrease, across restarts too: the commits behind a horizon are
 * flushed to WAL before it is handed out, and a restart loads each line from
 * what is committed (a committed TRUNCATE starts a table's lines over at 0).
 * Read P first, then take the snapshot: a snapshot taken before P was
 * computed may miss rows at or below P.
 *
 * Every function here needs shared_preload_libraries = 'xip83' and fails with
 * SQLSTATE 55000 otherwise; it must be called inside a transaction, never in
 * a parallel worker or a parallel query's leader (SQLSTATE 25000). On a
 * standby they answer with what replay published (standby.h). Each call
 * takes the registry lock in shared mode and reads every backend's slot:
 * cheap, but call it once per wave or fetch, not per row.
 *
 * Ceilings: a wave that pins group_ceiling() = HorizonOfGroups() (and the
 * others likewise) never leaves a late committer for neither the wave nor the
 * live lane: rows above the ceiling are the live lane's, and no row at or
 * below it commits after the pin except late writes, which the live lane
 * delivers from the late ring.
 */
#ifndef XIP83_HORIZON_H
#define XIP83_HORIZON_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/snapshot.h"

#include "registry.h"

/* Every horizon of a feed, computed at one moment. */
typedef struct HorizonSet
{
	int64		group;			/* group message ids */
	int64		welcome;		/* welcome message ids */
	int			n_originators;	/* ascending by node id */
	int32	   *originator_node_ids;	/* palloc'd */
	int64	   *originator_horizons;
	uint64		late_head;		/* seq of the newest late entry, 0 if none */
	uint64		late_writes;	/* late writes committed since the entry was loaded */
} HorizonSet;

/*
 * Who holds a line's horizon: the lowest position an open transaction may
 * still write there (its pin, or the published horizon + 1 for a transaction
 * that holds every line) and that backend's pid; 0 and 0 when none.
 */
typedef struct HorizonHold
{
	int64		position;
	int32		pid;
} HorizonHold;

/* The late entries of one kind after a late cursor, copied out of the ring. */
typedef struct LateBatch
{
	uint64		head;			/* newest seq in the ring (0: none ever) */
	bool		lost;			/* entries after the cursor were overwritten */
	int			n;
	LateEntry  *entries;		/* ascending seq, palloc'd */
} LateBatch;

/* Errors with 55000 unless the library was preloaded. */
extern void HorizonRequirePreload(void);

/* The horizon of one line of a feed. */
extern int64 HorizonOfLine(RegistryDb *db, int line);
#define HorizonOfGroups() HorizonOfLine(RegistryAttach(), LINE_GROUP)
#define HorizonOfWelcomes() HorizonOfLine(RegistryAttach(), LINE_WELCOME)
/* All horizons of a feed at once. */
extern void HorizonCollectFeed(RegistryDb *db, HorizonSet *out);
#define HorizonCollect(out) HorizonCollectFeed(RegistryAttach(), (out))
/* Who holds each of lines [0, nlines) of a feed now (for status, publishes nothing). */
extern void HorizonInFlight(RegistryDb *db, int nlines, HorizonHold *out);
/*
 * The same as a status row shows it: v3[0] the group line, v3[1] the welcome
 * line; positions (bigint[]) and pids (int[]) follow set's originators, NULL
 * where nothing holds one.
 */
extern void HorizonHoldRow(RegistryDb *db, const HorizonSet *set, HorizonHold *v3,
						   Datum *positions, Datum *pids);
/* The late entries of a kind with seq > after (call after taking the read snapshot). */
extern void HorizonLateSince(RegistryDb *db, PositionKind kind, uint64 after, LateBatch *out);
extern uint64 HorizonLateStart(RegistryDb *db);

/*
 * The feed whose horizons cover relid as a table of that kind: xip83's own
 * table of the kind, or a table xip83.track follows as that kind (attached);
 * NULL for any other table (its ceilings are its highest visible positions).
 */
extern RegistryDb *HorizonFeedFor(Oid relid, PositionKind kind);
/*
 * The feed named by a function's source argument, after the caller's read
 * checks (42501); 55000 when no feed covers it.
 */
extern RegistryDb *HorizonFeedArg(FunctionCallInfo fcinfo, int argno, PositionKind kind);

/*
 * The snapshot to read rows up to a horizon, or up to a wave ceiling pinned
 * from one. Every row at or below a horizon committed before the horizon was
 * computed, so a snapshot taken after that sees it; one taken before may not
 * (a ceiling read in the same statement as the scan, or earlier in a
 * REPEATABLE READ transaction). So: the active snapshot, unless it is the
 * one this backend last read a horizon under, then one taken right after
 * that read. That one is newer than the transaction's: under SERIALIZABLE it
 * is refused (0A000), and in a parallel worker too (25000). Register it to
 * keep it. Needs no preloading.
 */
extern Snapshot HorizonReadSnapshot(void);

/*
 * Whether relid is the xip83 table of that name ("group_messages",
 * "welcome_messages", "envelopes"): the only tables horizons cover. A wave's
 * ceiling over any other source is that table's highest visible position.
 */
extern bool HorizonCoversTable(Oid relid, const char *table);

/* The read path's transaction hook (drops the read snapshots). */
extern void HorizonInstallHooks(void);

#endif							/* XIP83_HORIZON_H */
