/*
 * notifier.c: the live feed's notifier, one background worker per database
 * that uses xip83, and the xip83.feed_status() view function.
 *
 * Writers never call NOTIFY: when a transaction that registered positions
 * ends, horizon.c wakes this database's notifier through its latch (a no-op
 * when the latch is already set). The worker wakes, computes the horizons and,
 * when one moved or a heartbeat is due, sends ONE NOTIFY xip83_live carrying a
 * LiveNotice (base64; at most 64 originators, so always far below 8000 bytes),
 * then sleeps xip83.notify_interval_ms before it looks again: every advance in
 * between folds into the next notice. Its own commits are asynchronous, since
 * a notice needs no durability, so the NOTIFY lock is held only briefly.
 *
 * Each start draws a new epoch (the start time in microseconds, above every
 * earlier epoch), and every notice carries it with a state: LIVE, or STOPPING
 * when the worker leaves on SIGTERM. A consumer that sees a new epoch or hears
 * nothing for a few heartbeats polls until notices resume.
 *
 * Lifecycle: a database's notifier is started by the first backend that uses
 * the registry there (a write, a horizon, a live fetch), and runs until the
 * server stops, or the database is dropped: a DROP DATABASE asks it to leave
 * from the object-access hook, before DROP waits for other sessions to end.
 * It is a dynamic worker that never restarts itself; the next use after a
 * crash or a failed start (retried every 10 s) starts a new one.
 *
 * Locking: the table of notifier entries is guarded by one spinlock; a
 * backend caches a pointer to its database's entry. The worker publishes its
 * statistics under the same spinlock.
 */
#include "postgres.h"

#include <signal.h>

#include "access/xact.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_database.h"
#include "commands/async.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "horizon.h"
#include "live_notice.h"
#include "xip83.h"

PG_FUNCTION_INFO_V1(feed_status);

#define NOTIFIER_MAX_DATABASES 64
#define NOTIFIER_CHANNEL "xip83_live"
#define NOTIFIER_RETRY_MS 10000

/* One database's notifier: who runs it and what it last sent. */
typedef struct NotifierDb
{
	Oid			dboid;			/* InvalidOid: free */
	int			pid;			/* the worker, 0 when none */
	Latch	   *latch;			/* its latch, NULL when none */
	bool		stop_requested; /* the database is being dropped */
	TimestampTz start_requested_at; /* 0 unless a start is pending */
	uint64		epoch;
	int			state;			/* XIP83__V1__LIVE_NOTICE__STATE__* */
	uint64		ticks;			/* notices sent in this epoch */
	TimestampTz last_notice_at;
	int64		last_group;
	int64		last_welcome;
} NotifierDb;

typedef struct NotifierShared
{
	slock_t		mutex;
	uint64		last_epoch;
	NotifierDb	dbs[NOTIFIER_MAX_DATABASES];
} NotifierShared;

static NotifierShared *Shared = NULL;
static NotifierDb *MyNotifier = NULL;	/* this backend's database's entry */
static object_access_hook_type prev_object_access_hook = NULL;
static volatile sig_atomic_t got_sigterm = false;

Size
NotifierShmemSize(void)
{
	return sizeof(NotifierShared);
}

void
NotifierShmemRequest(void)
{
	RequestAddinShmemSpace(NotifierShmemSize());
}

/* Creates or attaches the table (AddinShmemInitLock held). */
void
NotifierShmemInit(void)
{
	bool		found;

	Shared = ShmemInitStruct("xip83 notifier", NotifierShmemSize(), &found);
	if (found)
		return;
	memset(Shared, 0, sizeof(*Shared));
	SpinLockInit(&Shared->mutex);
}

/* The entry of the current database, claimed if new; NULL when the table is full. */
static NotifierDb *
MyEntry(void)
{
	NotifierDb *free_entry = NULL;

	if (MyNotifier != NULL && MyNotifier->dboid == MyDatabaseId)
		return MyNotifier;
	SpinLockAcquire(&Shared->mutex);
	MyNotifier = NULL;
	for (int i = 0; i < NOTIFIER_MAX_DATABASES; i++)
	{
		NotifierDb *e = &Shared->dbs[i];

		if (e->dboid == MyDatabaseId)
		{
			MyNotifier = e;
			break;
		}
		/* an entry without a worker and without a pending start can be reused */
		if (free_entry == NULL &&
			(e->dboid == InvalidOid || (e->pid == 0 && e->start_requested_at == 0)))
			free_entry = e;
	}
	if (MyNotifier == NULL && free_entry != NULL)
	{
		memset(free_entry, 0, sizeof(*free_entry));
		free_entry->dboid = MyDatabaseId;
		MyNotifier = free_entry;
	}
	SpinLockRelease(&Shared->mutex);
	return MyNotifier;
}

void
NotifierWake(void)
{
	NotifierDb *e = MyNotifier;
	Latch	   *latch;

	if (e == NULL || e->dboid != MyDatabaseId)
		return;
	latch = ((volatile NotifierDb *) e)->latch;
	if (latch != NULL)
		SetLatch(latch);
}

void
NotifierEnsureRunning(void)
{
	NotifierDb *e;
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	TimestampTz now;
	bool		start = false;

	if (Shared == NULL || AmBackgroundWorkerProcess())
		return;
	e = MyEntry();
	if (e == NULL || ((volatile NotifierDb *) e)->pid != 0)
		return;
	now = GetCurrentTimestamp();
	SpinLockAcquire(&Shared->mutex);
	if (e->dboid == MyDatabaseId && e->pid == 0 &&
		(e->start_requested_at == 0 ||
		 TimestampDifferenceExceeds(e->start_requested_at, now, NOTIFIER_RETRY_MS)))
	{
		e->start_requested_at = now;
		e->stop_requested = false;
		start = true;
	}
	SpinLockRelease(&Shared->mutex);
	if (!start)
		return;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "xip83");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "xip83_notifier_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "xip83 notifier for database %u", MyDatabaseId);
	snprintf(worker.bgw_type, BGW_MAXLEN, "xip83 notifier");
	worker.bgw_main_arg = ObjectIdGetDatum(MyDatabaseId);
	worker.bgw_notify_pid = 0;
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not start the xip83 notifier"),
				 errdetail("Live consumers poll until it runs; another start is tried in %d seconds.",
						   NOTIFIER_RETRY_MS / 1000),
				 errhint("Raise max_worker_processes.")));
}

/* DROP DATABASE: the notifier must leave before DROP counts the sessions. */
static void
NotifierObjectAccess(ObjectAccessType access, Oid classId, Oid objectId, int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access != OAT_DROP || classId != DatabaseRelationId || Shared == NULL)
		return;
	SpinLockAcquire(&Shared->mutex);
	for (int i = 0; i < NOTIFIER_MAX_DATABASES; i++)
	{
		NotifierDb *e = &Shared->dbs[i];

		if (e->dboid == objectId && e->pid != 0)
		{
			e->stop_requested = true;
			if (e->latch)
				SetLatch(e->latch);
		}
	}
	SpinLockRelease(&Shared->mutex);
}

void
NotifierInstallHooks(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = NotifierObjectAccess;
}

/* ---------------------------------------------------------------- worker */

/* SIGTERM: leave after telling consumers so. */
static void
NotifierSigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	got_sigterm = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

/* Gives the entry up when the worker exits, however it exits. */
static void
NotifierDetach(int code, Datum arg)
{
	NotifierDb *e = MyNotifier;

	if (e == NULL)
		return;
	SpinLockAcquire(&Shared->mutex);
	if (e->pid == MyProcPid)
	{
		e->pid = 0;
		e->latch = NULL;
		e->state = XIP83__V1__LIVE_NOTICE__STATE__STATE_UNSPECIFIED;
		e->start_requested_at = 0;
	}
	SpinLockRelease(&Shared->mutex);
}

/* Claims the entry of the worker's database; false if another worker holds it. */
static bool
NotifierClaim(void)
{
	NotifierDb *e = MyEntry();
	bool		ok = false;

	if (e == NULL)
		return false;
	SpinLockAcquire(&Shared->mutex);
	if (e->pid == 0 || e->pid == MyProcPid)
	{
		uint64		now = (uint64) GetCurrentTimestamp();

		Shared->last_epoch = Max(now, Shared->last_epoch + 1);
		e->pid = MyProcPid;
		e->latch = MyLatch;
		e->epoch = Shared->last_epoch;
		e->state = XIP83__V1__LIVE_NOTICE__STATE__STATE_LIVE;
		e->ticks = 0;
		e->start_requested_at = 0;
		e->stop_requested = false;
		ok = true;
	}
	SpinLockRelease(&Shared->mutex);
	return ok;
}

/* Whether two horizon sets say the same. */
static bool
SameHorizons(const HorizonSet *a, const HorizonSet *b)
{
	if (a->group != b->group || a->welcome != b->welcome ||
		a->n_originators != b->n_originators)
		return false;
	for (int i = 0; i < a->n_originators; i++)
		if (a->originator_node_ids[i] != b->originator_node_ids[i] ||
			a->originator_horizons[i] != b->originator_horizons[i])
			return false;
	return true;
}

/* Queues one notice in the current transaction and counts it. */
static void
QueueNotice(const HorizonSet *h, int state)
{
	Xip83__V1__LiveNotice notice = XIP83__V1__LIVE_NOTICE__INIT;
	Xip83__V1__OriginatorHorizon oh[HORIZON_MAX_ORIGINATORS];
	Xip83__V1__OriginatorHorizon *ohp[HORIZON_MAX_ORIGINATORS];
	NotifierDb *e = MyNotifier;

	notice.epoch = e->epoch;
	notice.state = state;
	notice.tick = e->ticks + 1;
	notice.group_horizon = (uint64) h->group;
	notice.welcome_horizon = (uint64) h->welcome;
	notice.n_originator_horizons = h->n_originators;
	notice.originator_horizons = ohp;
	for (int i = 0; i < h->n_originators; i++)
	{
		xip83__v1__originator_horizon__init(&oh[i]);
		oh[i].originator_node_id = (uint32) h->originator_node_ids[i];
		oh[i].horizon = (uint64) h->originator_horizons[i];
		ohp[i] = &oh[i];
	}
	Async_Notify(NOTIFIER_CHANNEL, LiveNoticeToBase64(&notice));
}

/* Records a sent notice in shared memory, for feed_status. */
static void
CountNotice(const HorizonSet *h, int state)
{
	NotifierDb *e = MyNotifier;

	SpinLockAcquire(&Shared->mutex);
	e->ticks++;
	e->state = state;
	e->last_notice_at = GetCurrentTimestamp();
	e->last_group = h->group;
	e->last_welcome = h->welcome;
	SpinLockRelease(&Shared->mutex);
}

/* What the worker last sent, kept across ticks. */
static HorizonSet LastSent;
static bool HaveLastSent = false;
static TimestampTz LastSentAt = 0;

/*
 * One tick: compute the horizons and, if they moved, the state changed or a
 * heartbeat is due, NOTIFY once. Returns whether a notice went out.
 */
static bool
NotifierTick(int state)
{
	HorizonSet	now;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	HorizonCollect(&now);
	if (HaveLastSent && SameHorizons(&now, &LastSent) &&
		state == XIP83__V1__LIVE_NOTICE__STATE__STATE_LIVE &&
		!TimestampDifferenceExceeds(LastSentAt, GetCurrentTimestamp(),
									xip83_notify_heartbeat_ms))
	{
		CommitTransactionCommand();
		return false;
	}
	QueueNotice(&now, state);
	CommitTransactionCommand();
	CountNotice(&now, state);
	LastSent = now;
	HaveLastSent = true;
	LastSentAt = GetCurrentTimestamp();
	return true;
}

/* A tick that reports its error and backs off instead of ending the worker. */
static bool
NotifierTickSafely(MemoryContext tick_cxt, int state)
{
	volatile bool sent = false;

	MemoryContextSwitchTo(tick_cxt);
	PG_TRY();
	{
		sent = NotifierTick(state);
	}
	PG_CATCH();
	{
		/* a full queue or a missing table: report, back off, try again */
		MemoryContextSwitchTo(tick_cxt);
		EmitErrorReport();
		AbortCurrentTransaction();
		FlushErrorState();
		(void) WaitLatch(MyLatch, WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000, PG_WAIT_EXTENSION);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(TopMemoryContext);
	MemoryContextReset(tick_cxt);
	return sent;
}

/* Milliseconds until the next heartbeat is due. */
static long
HeartbeatWait(TimestampTz last_sent)
{
	TimestampTz due = TimestampTzPlusMilliseconds(last_sent, xip83_notify_heartbeat_ms);
	long		ms = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), due);

	return Max(ms, 1);
}

/* The worker: wait for a wake-up, coalesce, notify; see the header. */
void
xip83_notifier_main(Datum main_arg)
{
	MemoryContext tick_cxt;

	pqsignal(SIGTERM, NotifierSigterm);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(main_arg), InvalidOid, 0);
	pgstat_report_appname("xip83 notifier");
	/* a notice needs no durability: do not wait for the WAL flush while holding the NOTIFY lock */
	SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);

	if (!NotifierClaim())
		proc_exit(0);
	before_shmem_exit(NotifierDetach, (Datum) 0);
	tick_cxt = AllocSetContextCreate(TopMemoryContext, "xip83 notifier tick",
									 ALLOCSET_DEFAULT_SIZES);

	for (;;)
	{
		bool		sent;

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (((volatile NotifierDb *) MyNotifier)->stop_requested)
			proc_exit(0);
		if (got_sigterm)
		{
			(void) NotifierTickSafely(tick_cxt, XIP83__V1__LIVE_NOTICE__STATE__STATE_STOPPING);
			proc_exit(0);
		}
		sent = NotifierTickSafely(tick_cxt, XIP83__V1__LIVE_NOTICE__STATE__STATE_LIVE);
		if (sent && xip83_notify_interval_ms > 0)
			(void) WaitLatch(MyLatch, WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 xip83_notify_interval_ms, PG_WAIT_EXTENSION);
		else if (!sent)
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 HeartbeatWait(LastSentAt), PG_WAIT_EXTENSION);
	}
}

/* ---------------------------------------------------------------- status */

/* xip83.feed_status(): the notifier and horizons of the current database, one row. */
Datum
feed_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	HorizonSet	h;
	NotifierDb	copy;
	NotifierDb *e;
	Datum		values[12];
	bool		nulls[12] = {false};
	Datum	   *nodes;
	Datum	   *horizons;
	static const char *const states[] = {"stopped", "live", "stopping"};

	HorizonRequirePreload();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "feed_status must return a composite type");
	HorizonCollect(&h);
	e = MyEntry();
	memset(&copy, 0, sizeof(copy));
	if (e != NULL)
	{
		SpinLockAcquire(&Shared->mutex);
		copy = *e;
		SpinLockRelease(&Shared->mutex);
	}

	nodes = palloc(sizeof(Datum) * (h.n_originators + 1));
	horizons = palloc(sizeof(Datum) * (h.n_originators + 1));
	for (int i = 0; i < h.n_originators; i++)
	{
		nodes[i] = Int32GetDatum(h.originator_node_ids[i]);
		horizons[i] = Int64GetDatum(h.originator_horizons[i]);
	}
	values[0] = Int64GetDatum(h.group);
	values[1] = Int64GetDatum(h.welcome);
	values[2] = PointerGetDatum(construct_array(nodes, h.n_originators, INT4OID,
												sizeof(int32), true, TYPALIGN_INT));
	values[3] = PointerGetDatum(construct_array(horizons, h.n_originators, INT8OID,
												sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[4] = Int32GetDatum(copy.pid);
	nulls[4] = copy.pid == 0;
	values[5] = Int64GetDatum((int64) copy.epoch);
	nulls[5] = copy.epoch == 0;
	values[6] = CStringGetTextDatum(copy.pid == 0 ? "stopped"
									: states[Min(copy.state, 2)]);
	values[7] = Int64GetDatum((int64) copy.ticks);
	values[8] = TimestampTzGetDatum(copy.last_notice_at);
	nulls[8] = copy.last_notice_at == 0;
	values[9] = Int64GetDatum(copy.last_group);
	nulls[9] = copy.last_notice_at == 0;
	values[10] = Int64GetDatum(copy.last_welcome);
	nulls[10] = copy.last_notice_at == 0;
	values[11] = BoolGetDatum(copy.start_requested_at != 0 && copy.pid == 0);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
