/*
 * standby.c: xip83 on a hot standby (feed.h has the model): the fence of
 * a set of horizons, the replayed feeds readers use during recovery, the
 * bounded wait for replay to pass a fence and the horizon records the
 * notifier writes for standbys (xip83.horizon_fence() is in
 * src/sql/horizons.c; the replayed feeds in src/core/registry.c).
 *
 * Horizons on a standby. The primary's notifier logs the horizons it hands
 * out (only the lines that moved since its last record; every line after a
 * copy of the late ring, that is after every checkpoint and at its start).
 * The record follows the commits behind those horizons in WAL, so a standby
 * that replayed it has replayed them too: its horizons only rise and never
 * pass what it replayed. A standby restarted from a restartpoint knows a
 * feed's horizons again once it replays the next full record (55000 until
 * then).
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/timestamp.h"

#include "xip83/errcodes.h"

#include "base/base.h"
#include "feed_internal.h"

int			xip83_standby_wait_ms = 10000;

void
StandbyDefineGucs(void)
{
	DefineCustomIntVariable("xip83.standby_wait_ms",
							"Longest time a fenced live fetch on a standby waits for replay to pass the fence.",
							"Past it the fetch fails with SQLSTATE X83F0 instead of returning a short page.",
							&xip83_standby_wait_ms,
							10000, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
}

/* ---------------------------------------------------------------- fence */

Fence
StandbyFenceOf(RegistryDb *db)
{
	Fence		f;

	f.lsn = RegistryFeedCommitLsn(db);
	f.system_identifier = GetSystemIdentifier();
	if (RecoveryInProgress())
	{
		/* the replayed horizons came with a record this standby replayed */
		f.lsn = GetXLogReplayRecPtr(&f.timeline);
		return f;
	}
	f.timeline = GetWALInsertionTimeLine();
	if (f.lsn == InvalidXLogRecPtr)
		f.lsn = GetFlushRecPtr(NULL);
	return f;
}

/* ------------------------------------------------------- standby readers */

void
StandbyWaitForFence(XLogRecPtr fence)
{
	TimestampTz start = GetCurrentTimestamp();

	for (;;)
	{
		XLogRecPtr	replayed = GetXLogReplayRecPtr(NULL);

		if (replayed >= fence)
			return;
		if (!RecoveryInProgress())
			ereport(ERROR,
					(errcode(ERRCODE_XIP83_FENCE_UNREACHABLE),
					 errmsg("recovery ended at %X/%X, before fence %X/%X was replayed",
							LSN_FORMAT_ARGS(replayed), LSN_FORMAT_ARGS(fence)),
					 errdetail("This server was promoted; rows the fence covers may not exist on it."),
					 errhint("Rewind the cursor to the lower of it and the new primary's horizon, and drop duplicates by message hash.")));
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), xip83_standby_wait_ms))
			ereport(ERROR,
					(errcode(ERRCODE_XIP83_FENCE_TIMEOUT),
					 errmsg("replay did not reach fence %X/%X within %d ms",
							LSN_FORMAT_ARGS(fence), xip83_standby_wait_ms),
					 errdetail("This standby has replayed up to %X/%X.", LSN_FORMAT_ARGS(replayed)),
					 errhint("Retry the fetch, read from the primary, or raise xip83.standby_wait_ms.")));
		/* replay wakes nobody: look again every millisecond */
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

void
StandbyCheckFenceWritten(XLogRecPtr fence)
{
	XLogRecPtr	written = GetXLogInsertRecPtr();

	/* every fence a primary hands out is a position it wrote */
	if (fence > written)
		ereport(ERROR,
				(errcode(ERRCODE_XIP83_FENCE_UNREACHABLE),
				 errmsg("fence %X/%X is beyond this server's WAL, which ends at %X/%X",
						LSN_FORMAT_ARGS(fence), LSN_FORMAT_ARGS(written)),
				 errdetail("This server is not in recovery: it was promoted while the server the fence came from went on, or the fence is another server's; rows the fence covers may not exist here."),
				 errhint("Rewind the cursor to the lower of it and this server's horizon, and drop duplicates by message hash.")));
}

/* ------------------------------------------------------ horizon records */

/* What the notifier last logged of one feed. */
typedef struct LoggedFeed
{
	Oid			relid;
	HorizonSet	set;			/* in TopMemoryContext */
} LoggedFeed;

#define LOGGED_FEEDS 64
static LoggedFeed Logged[LOGGED_FEEDS];
static int	NLogged = 0;

static LoggedFeed *
LoggedFeedOf(Oid relid)
{
	for (int i = 0; i < NLogged; i++)
		if (Logged[i].relid == relid)
			return &Logged[i];
	if (NLogged == LOGGED_FEEDS)
		return NULL;
	memset(&Logged[NLogged], 0, sizeof(LoggedFeed));
	Logged[NLogged].relid = relid;
	Logged[NLogged].set.group = -1;
	Logged[NLogged].set.welcome = -1;
	return &Logged[NLogged++];
}

/* The originator horizon of node in a set (ascending by node), or -1. */
static int64
OriginatorIn(const HorizonSet *s, int32 node)
{
	int			lo = 0;
	int			hi = s->n_originators - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (s->originator_node_ids[mid] == node)
			return s->originator_horizons[mid];
		if (s->originator_node_ids[mid] < node)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

void
StandbyLogHorizons(RegistryDb *db, const HorizonSet *set, bool full)
{
	LoggedFeed *last = LoggedFeedOf(RegistryFeedRelid(db));
	RegistryHorizonLine *lines = palloc(sizeof(RegistryHorizonLine) * (set->n_originators + 2));
	int			n = 0;
	MemoryContext old;

	if (last == NULL)
		full = true;
	if (full || set->group != last->set.group)
		lines[n++] = (RegistryHorizonLine) {LINE_GROUP, 0, set->group};
	if (full || set->welcome != last->set.welcome)
		lines[n++] = (RegistryHorizonLine) {LINE_WELCOME, 0, set->welcome};
	for (int i = 0; i < set->n_originators; i++)
		if (full || last == NULL ||
			OriginatorIn(&last->set, set->originator_node_ids[i]) != set->originator_horizons[i])
			lines[n++] = (RegistryHorizonLine) {LINE_FIRST_ORIGINATOR,
				set->originator_node_ids[i], set->originator_horizons[i]};
	if (n > 0 || full)
		RegistryLogHorizons(db, lines, n, full);
	pfree(lines);
	if (last == NULL)
		return;
	old = MemoryContextSwitchTo(TopMemoryContext);
	if (last->set.originator_node_ids != NULL)
	{
		pfree(last->set.originator_node_ids);
		pfree(last->set.originator_horizons);
	}
	last->set = *set;
	last->set.originator_node_ids = palloc(sizeof(int32) * Max(set->n_originators, 1));
	last->set.originator_horizons = palloc(sizeof(int64) * Max(set->n_originators, 1));
	memcpy(last->set.originator_node_ids, set->originator_node_ids,
		   sizeof(int32) * set->n_originators);
	memcpy(last->set.originator_horizons, set->originator_horizons,
		   sizeof(int64) * set->n_originators);
	MemoryContextSwitchTo(old);
}

/* ------------------------------------------------------------- SQL */

