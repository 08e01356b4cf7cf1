/*
 * notifier.c: the live feed's notifier, one background worker per database
 * that uses xip83, its LiveNotice, and the state xip83.feed_status() shows
 * (src/sql/horizons.c).
 *
 * Writers never call NOTIFY: when a transaction that registered positions
 * ends, the registry wakes this database's notifier through registry_wake,
 * which sets its latch (a no-op when the latch is already set). The worker
 * wakes, computes the horizons and, when one moved, a late write arrived or a
 * heartbeat is due, sends ONE NOTIFY xip83_live carrying a LiveNotice (base64:
 * epoch, state and tick, a few dozen bytes), then pauses before it looks
 * again: every advance in between folds into the next notice. The pause is
 * xip83.notify_interval_ms after a quiet spell and doubles, up to
 * xip83.notify_busy_interval_ms, while every pause ends with news waiting:
 * each notice is a transaction of its own (an xid, a commit record), which
 * under a steady stream of writes cost them about 8% at 1 ms, so a busy feed
 * trades a few milliseconds of latency for fewer of them. Its own commits are
 * asynchronous, since a notice needs no durability, so the NOTIFY lock is
 * held only briefly.
 *
 * A notice is only a wake-up. Any role may NOTIFY on any channel, so a
 * consumer never takes a position, an originator or a limit from a notice: it
 * fetches, and the live fetch functions read the horizons themselves. The
 * notice carries no horizons (they are readable only by roles that may read
 * the tables), only the fence of those it stands for (the WAL position a
 * standby must replay to see every row at or below them, with the timeline
 * and system identifier: feed.h), which a forger can only use to make a
 * consumer wait; the sender's pid, which PostgreSQL attaches to every
 * notification and which nobody can forge, tells the real notifier's notices
 * (feed_status.notifier_pid) from others.
 *
 * Each start draws a new epoch (the start time in microseconds, above every
 * earlier epoch), and every notice carries it with a state: LIVE, or STOPPING
 * when the worker leaves on SIGTERM. A consumer that sees a new epoch or hears
 * nothing for a few heartbeats polls until notices resume.
 *
 * Lifecycle: a database's notifier is started by a transaction's first write
 * (through registry_first_write, set here) and by the SQL entry points that
 * read (a horizon, a live fetch, feed_status), and leaves when nothing used the registry of its database for
 * xip83.notifier_idle_ms (consumers fetch on every heartbeat, so a followed
 * feed keeps it), when the server stops, or when the database is dropped: a
 * DROP DATABASE asks it to leave from the object-access hook, before DROP
 * waits for other sessions to end. It is a dynamic worker that never restarts
 * itself; the next use after a crash or a failed start (retried every 10 s)
 * starts a new one.
 *
 * For standbys the notifier also logs the horizons it computed when they
 * moved (standby.c), and all of them after every copy of the late ring.
 *
 * Locking: the table of notifier entries is guarded by one spinlock, held
 * only to copy or assign a few fields (no system call, no SetLatch under it);
 * a backend caches a pointer to its database's entry.
 */
#include "postgres.h"

#include <signal.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_database.h"
#include "commands/async.h"
#include "common/base64.h"
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
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/base.h"
#include "core/core.h"
#include "feed_internal.h"


#define NOTIFIER_CHANNEL "xip83_live"
#define NOTIFIER_RETRY_MS 10000

/* Who runs one of a database's workers. */
typedef struct WorkerSlot
{
	int			pid;			/* the worker, 0 when none */
	Latch	   *latch;			/* its latch, NULL when none */
	bool		stop_requested; /* the database is being dropped */
	TimestampTz start_requested_at; /* 0 unless a start is pending */
} WorkerSlot;

/*
 * One database's workers (the notifier, the summary's builder: DbWorkerSort)
 * and what the notifier last sent.
 */
typedef struct NotifierDb
{
	Oid			dboid;			/* InvalidOid: free */
	WorkerSlot	w[DB_WORKER_SORTS];
	uint64		epoch;
	int			state;			/* XIP83__V1__LIVE_NOTICE__STATE__* */
	uint64		ticks;			/* notices sent in this epoch */
	TimestampTz last_notice_at;
} NotifierDb;

typedef struct NotifierShared
{
	slock_t		mutex;
	uint64		last_epoch;
	int			n_dbs;
	NotifierDb	dbs[FLEXIBLE_ARRAY_MEMBER];
} NotifierShared;

static NotifierShared *Shared = NULL;
static NotifierDb *MyNotifier = NULL;	/* this backend's database's entry */
static object_access_hook_type prev_object_access_hook = NULL;
static volatile sig_atomic_t got_sigterm = false;

int			xip83_notify_interval_ms = 1;
int			xip83_notify_busy_interval_ms = 5;
int			xip83_notify_heartbeat_ms = 1000;
int			xip83_notifier_idle_ms = 60000;

Size
NotifierShmemSize(void)
{
	return add_size(offsetof(NotifierShared, dbs),
					mul_size(sizeof(NotifierDb), xip83_max_databases));
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
	memset(Shared, 0, NotifierShmemSize());
	SpinLockInit(&Shared->mutex);
	Shared->n_dbs = xip83_max_databases;
}

/* Whether no worker of an entry runs or is starting: it may serve another database. */
static bool
EntryIdle(const NotifierDb *e)
{
	for (int k = 0; k < DB_WORKER_SORTS; k++)
		if (e->w[k].pid != 0 || e->w[k].start_requested_at != 0)
			return false;
	return true;
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
	for (int i = 0; i < Shared->n_dbs; i++)
	{
		NotifierDb *e = &Shared->dbs[i];

		if (e->dboid == MyDatabaseId)
		{
			MyNotifier = e;
			break;
		}
		/* an entry without a worker and without a pending start can be reused */
		if (free_entry == NULL &&
			(e->dboid == InvalidOid || EntryIdle(e)))
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

/* registry_wake: a transaction that registered positions ended. */
static void
NotifierWake(void)
{
	NotifierDb *e = MyNotifier;
	Latch	   *latch;

	if (e == NULL || e->dboid != MyDatabaseId)
		return;
	latch = ((volatile NotifierDb *) e)->w[WORKER_NOTIFIER].latch;
	if (latch != NULL)
		SetLatch(latch);
}

/* What starts each sort of worker, and what a failed start means for users. */
static const struct
{
	const char *function;
	const char *type;
	const char *detail;
}			WorkerSorts[DB_WORKER_SORTS] = {
	{"xip83_notifier_main", "xip83 notifier",
	"Live consumers poll until it runs; another start is tried in %d seconds."},
	{"xip83_summary_main", "xip83 summary",
	"Waves descend the topics the recent-writes tables do not rule out until it runs; another start is tried in %d seconds."},
};

void
DbWorkerStart(DbWorkerSort sort)
{
	NotifierDb *e;
	WorkerSlot *w;
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	TimestampTz now;
	bool		start = false;

	/*
	 * A standby runs no notifier (it cannot NOTIFY, and nothing writes
	 * there); its summary worker follows replay (summary_build.c).
	 */
	if (Shared == NULL || (RecoveryInProgress() && sort != WORKER_SUMMARY))
		return;
	e = MyEntry();
	if (e == NULL || ((volatile NotifierDb *) e)->w[sort].pid != 0)
		return;
	w = &e->w[sort];
	now = GetCurrentTimestamp();
	SpinLockAcquire(&Shared->mutex);
	if (e->dboid == MyDatabaseId && w->pid == 0 &&
		(w->start_requested_at == 0 ||
		 TimestampDifferenceExceeds(w->start_requested_at, now, NOTIFIER_RETRY_MS)))
	{
		w->start_requested_at = now;
		w->stop_requested = false;
		start = true;
	}
	SpinLockRelease(&Shared->mutex);
	if (!start)
		return;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = sort == WORKER_SUMMARY ? BgWorkerStart_ConsistentState
		: BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "xip83");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "%s", WorkerSorts[sort].function);
	snprintf(worker.bgw_name, BGW_MAXLEN, "%s for database %u", WorkerSorts[sort].type, MyDatabaseId);
	snprintf(worker.bgw_type, BGW_MAXLEN, "%s", WorkerSorts[sort].type);
	worker.bgw_main_arg = ObjectIdGetDatum(MyDatabaseId);
	worker.bgw_notify_pid = 0;
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not start the %s", WorkerSorts[sort].type),
				 errdetail(WorkerSorts[sort].detail, NOTIFIER_RETRY_MS / 1000),
				 errhint("Raise max_worker_processes.")));
}

void
NotifierEnsureRunning(void)
{
	if (!AmBackgroundWorkerProcess())
		DbWorkerStart(WORKER_NOTIFIER);
}

/* DROP DATABASE: the workers must leave before DROP counts the sessions. */
static void
NotifierObjectAccess(ObjectAccessType access, Oid classId, Oid objectId, int subId, void *arg)
{
	Latch	   *latches[DB_WORKER_SORTS] = {NULL};

	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access != OAT_DROP || classId != DatabaseRelationId || Shared == NULL)
		return;
	SpinLockAcquire(&Shared->mutex);
	for (int i = 0; i < Shared->n_dbs; i++)
	{
		NotifierDb *e = &Shared->dbs[i];

		for (int k = 0; k < DB_WORKER_SORTS; k++)
			if (e->dboid == objectId && e->w[k].pid != 0)
			{
				e->w[k].stop_requested = true;
				latches[k] = e->w[k].latch;
			}
	}
	SpinLockRelease(&Shared->mutex);
	for (int k = 0; k < DB_WORKER_SORTS; k++)
		if (latches[k] != NULL)
			SetLatch(latches[k]);
}

/* What feed_status shows of the current database's notifier. */
void
NotifierStatusOf(NotifierStatus *out)
{
	NotifierDb *e = MyEntry();
	NotifierDb	copy;

	memset(&copy, 0, sizeof(copy));
	if (e != NULL)
	{
		SpinLockAcquire(&Shared->mutex);
		copy = *e;
		SpinLockRelease(&Shared->mutex);
	}
	out->pid = copy.w[WORKER_NOTIFIER].pid;
	out->epoch = copy.epoch;
	out->state = copy.state;
	out->ticks = copy.ticks;
	out->last_notice_at = copy.last_notice_at;
	out->start_requested_at = copy.w[WORKER_NOTIFIER].start_requested_at;
}

void
NotifierInstallHooks(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = NotifierObjectAccess;
	registry_wake = NotifierWake;
	registry_first_write = NotifierEnsureRunning;
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

/* Gives a worker's slot up when the worker exits, however it exits. */
static void
DbWorkerDetach(int code, Datum arg)
{
	WorkerSlot *w;

	if (MyNotifier == NULL)
		return;
	w = &MyNotifier->w[DatumGetInt32(arg)];
	SpinLockAcquire(&Shared->mutex);
	if (w->pid == MyProcPid)
	{
		w->pid = 0;
		w->latch = NULL;
		w->start_requested_at = 0;
		if (DatumGetInt32(arg) == WORKER_NOTIFIER)
			MyNotifier->state = XIP83__V1__LIVE_NOTICE__STATE__STATE_UNSPECIFIED;
	}
	SpinLockRelease(&Shared->mutex);
}

bool
DbWorkerClaim(DbWorkerSort sort)
{
	NotifierDb *e = MyEntry();
	bool		ok = false;
	uint64		now = (uint64) GetCurrentTimestamp();

	if (e == NULL)
		return false;
	SpinLockAcquire(&Shared->mutex);
	if (e->w[sort].pid == 0 || e->w[sort].pid == MyProcPid)
	{
		e->w[sort].pid = MyProcPid;
		e->w[sort].latch = MyLatch;
		e->w[sort].start_requested_at = 0;
		e->w[sort].stop_requested = false;
		if (sort == WORKER_NOTIFIER)
		{
			Shared->last_epoch = Max(now, Shared->last_epoch + 1);
			e->epoch = Shared->last_epoch;
			e->state = XIP83__V1__LIVE_NOTICE__STATE__STATE_LIVE;
			e->ticks = 0;
		}
		ok = true;
	}
	SpinLockRelease(&Shared->mutex);
	if (ok)
		before_shmem_exit(DbWorkerDetach, Int32GetDatum(sort));
	return ok;
}

bool
DbWorkerStopRequested(DbWorkerSort sort)
{
	return MyNotifier != NULL && ((volatile NotifierDb *) MyNotifier)->w[sort].stop_requested;
}

/* What a notice stands for: every horizon and the late ring's head, digested. */
typedef struct FeedDigest
{
	int64		group;
	int64		welcome;
	uint64		late_head;
	uint64		originators;	/* FNV-1a over (node, horizon) pairs */
} FeedDigest;

static FeedDigest
Digest(const HorizonSet *h)
{
	FeedDigest	d = {h->group, h->welcome, h->late_head, 1469598103934665603ULL};

	for (int i = 0; i < h->n_originators; i++)
	{
		d.originators = (d.originators ^ (uint64) (uint32) h->originator_node_ids[i]) * 1099511628211ULL;
		d.originators = (d.originators ^ (uint64) h->originator_horizons[i]) * 1099511628211ULL;
	}
	return d;
}

static bool
SameDigest(const FeedDigest *a, const FeedDigest *b)
{
	return a->group == b->group && a->welcome == b->welcome &&
		a->late_head == b->late_head && a->originators == b->originators;
}

/*
 * Every horizon record after a copy of the late ring is full (standby.c): a
 * standby that starts replaying at a checkpoint learns every line from it.
 */
static bool HorizonsFullDue = false;

/* The newest fence of the notice being made: the highest of its feeds'. */
static Fence NoticeFence;

/* Logs a feed's moved horizons for standbys and raises the notice's fence. */
static void
NoteFeed(RegistryDb *db, const HorizonSet *set)
{
	Fence		f = StandbyFenceOf(db);

	StandbyLogHorizons(db, set, HorizonsFullDue);
	if (f.lsn > NoticeFence.lsn)
		NoticeFence = f;
}

/*
 * The horizons and late heads of every loaded tracked-table feed of the
 * database, digested: a notice goes out when any of them moves.
 */
static uint64
DigestTrackedFeeds(void)
{
	RegistryDb *feeds[64];
	int			n = RegistryFeedsOf(MyDatabaseId, feeds, lengthof(feeds));
	uint64		h = 1469598103934665603ULL;

	for (int i = 0; i < n; i++)
	{
		HorizonSet	set;
		FeedDigest	d;

		if (!OidIsValid(RegistryFeedRelid(feeds[i])))
			continue;
		HorizonCollectFeed(feeds[i], &set);
		NoteFeed(feeds[i], &set);
		d = Digest(&set);
		h = (h ^ (uint64) RegistryFeedRelid(feeds[i])) * 1099511628211ULL;
		h = (h ^ (uint64) d.group) * 1099511628211ULL;
		h = (h ^ (uint64) d.welcome) * 1099511628211ULL;
		h = (h ^ d.late_head) * 1099511628211ULL;
		h = (h ^ d.originators) * 1099511628211ULL;
	}
	return h;
}

/* Serializes a notice as base64 text, failing if NOTIFY could not carry it. */
char *
LiveNoticeToBase64(const Xip83__V1__LiveNotice *notice)
{
	bytea	   *raw = PbPackToBytea(&notice->base);
	int			rawlen = VARSIZE(raw) - VARHDRSZ;
	int			cap = pg_b64_enc_len(rawlen) + 1;
	char	   *text = palloc(cap);
	int			len = pg_b64_encode((void *) VARDATA(raw), rawlen, text, cap);

	if (len < 0 || len > LIVE_NOTICE_MAX_PAYLOAD)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("live notice of %d bytes does not fit a NOTIFY payload", len)));
	text[len] = '\0';
	pfree(raw);
	return text;
}

/*
 * Queues one notice (a wake-up: epoch, state, tick, and the fence of the
 * horizons it stands for) in the current transaction.
 */
static void
QueueNotice(int state)
{
	Xip83__V1__LiveNotice notice = XIP83__V1__LIVE_NOTICE__INIT;
	NotifierDb *e = MyNotifier;

	notice.epoch = e->epoch;
	notice.state = state;
	notice.tick = e->ticks + 1;
	notice.fence_lsn = NoticeFence.lsn;
	notice.timeline_id = NoticeFence.timeline;
	notice.system_identifier = NoticeFence.system_identifier;
	Async_Notify(NOTIFIER_CHANNEL, LiveNoticeToBase64(&notice));
}

/* Records a sent notice in shared memory, for feed_status. */
static void
CountNotice(int state)
{
	NotifierDb *e = MyNotifier;
	TimestampTz now = GetCurrentTimestamp();

	SpinLockAcquire(&Shared->mutex);
	e->ticks++;
	e->state = state;
	e->last_notice_at = now;
	SpinLockRelease(&Shared->mutex);
}

/* What the worker last sent, kept across ticks. */
static FeedDigest LastSent;
static bool HaveLastSent = false;
static TimestampTz LastSentAt = 0;

/*
 * One tick: compute the horizons and, if they moved, a late write arrived,
 * the state changed or a heartbeat is due, NOTIFY once. Returns whether a
 * notice went out.
 */
static bool
NotifierTick(int state)
{
	HorizonSet	now;
	FeedDigest	d;
	RegistryDb *own;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	own = RegistryAttach();
	HorizonCollectFeed(own, &now);
	memset(&NoticeFence, 0, sizeof(NoticeFence));
	NoteFeed(own, &now);
	d = Digest(&now);
	d.originators ^= DigestTrackedFeeds();
	HorizonsFullDue = false;
	if (HaveLastSent && SameDigest(&d, &LastSent) &&
		state == XIP83__V1__LIVE_NOTICE__STATE__STATE_LIVE &&
		!TimestampDifferenceExceeds(LastSentAt, GetCurrentTimestamp(),
									xip83_notify_heartbeat_ms))
	{
		CommitTransactionCommand();
		return false;
	}
	QueueNotice(state);
	CommitTransactionCommand();
	CountNotice(state);
	LastSent = d;
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

/*
 * After every checkpoint, a copy of the late ring goes to WAL, so that crash
 * recovery can restore it (registry_wal.c).
 */
static void
LogLateRingAfterCheckpoint(void)
{
	static XLogRecPtr logged_after = InvalidXLogRecPtr;
	XLogRecPtr	redo = GetRedoRecPtr();
	RegistryDb *feeds[64];
	int			n;

	if (redo == logged_after)
		return;
	n = RegistryFeedsOf(MyDatabaseId, feeds, lengthof(feeds));
	for (int i = 0; i < n; i++)
		RegistryLogRing(feeds[i]);
	logged_after = redo;
	/* every horizon follows at once, after the ring */
	HorizonsFullDue = true;
	SetLatch(MyLatch);
}

/*
 * The pause after a notice: deaf to the latch, which every commit sets, so
 * that what commits meanwhile folds into the next notice; in slices, so that
 * a reload, a stop or a shutdown waits at most a slice, not a long interval.
 */
#define INTERVAL_SLICE_MS 100

static void
WaitInterval(int ms)
{
	TimestampTz until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), ms);

	for (;;)
	{
		long		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), until);

		if (left <= 0 || ConfigReloadPending || got_sigterm ||
			DbWorkerStopRequested(WORKER_NOTIFIER))
			return;
		(void) WaitLatch(MyLatch, WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Min(left, INTERVAL_SLICE_MS), PG_WAIT_EXTENSION);
	}
}

/*
 * The pause after a notice: the interval when the notifier had waited for a
 * wake-up before it (the feed was quiet), else twice the last pause, as long
 * as the busy interval allows (news was waiting when the last pause ended).
 */
static int
NextPause(int last, bool after_pause)
{
	int			busy = Max(xip83_notify_busy_interval_ms, xip83_notify_interval_ms);

	if (!after_pause || last <= 0)
		return xip83_notify_interval_ms;
	return (int) Min((int64) last * 2, (int64) busy);
}

/* Whether nothing but this worker used the registry of its database for a while. */
static bool
NotifierIdle(void)
{
	RegistryDb *feeds[64];
	int			n = RegistryFeedsOf(MyDatabaseId, feeds, lengthof(feeds));
	uint64		now_ms = (uint64) (GetCurrentTimestamp() / 1000);

	if (n == 0 || xip83_notifier_idle_ms <= 0)
		return false;
	for (int i = 0; i < n; i++)
		if (now_ms - RegistryFeedLastUseMs(feeds[i]) <= (uint64) xip83_notifier_idle_ms)
			return false;
	return true;
}

/* The worker: wait for a wake-up, coalesce, notify; see the header. */
void
xip83_notifier_main(Datum main_arg)
{
	MemoryContext tick_cxt;
	int			pause = 0;
	bool		after_pause = false;	/* the last wait was a pause, not for a wake-up */

	pqsignal(SIGTERM, NotifierSigterm);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(main_arg), InvalidOid, 0);
	pgstat_report_appname("xip83 notifier");
	/* a notice needs no durability: do not wait for the WAL flush while holding the NOTIFY lock */
	SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);

	if (!DbWorkerClaim(WORKER_NOTIFIER))
		proc_exit(0);
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
		if (DbWorkerStopRequested(WORKER_NOTIFIER))
			proc_exit(0);
		if (got_sigterm || NotifierIdle())
		{
			(void) NotifierTickSafely(tick_cxt, XIP83__V1__LIVE_NOTICE__STATE__STATE_STOPPING);
			proc_exit(0);
		}
		sent = NotifierTickSafely(tick_cxt, XIP83__V1__LIVE_NOTICE__STATE__STATE_LIVE);
		LogLateRingAfterCheckpoint();
		if (sent && xip83_notify_interval_ms > 0)
		{
			pause = NextPause(pause, after_pause);
			WaitInterval(pause);
			after_pause = true;
		}
		else if (!sent)
		{
			after_pause = false;
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 HeartbeatWait(LastSentAt), PG_WAIT_EXTENSION);
		}
	}
}

/* ---------------------------------------------------------------- status */

