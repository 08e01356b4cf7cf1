/*
 * registry_wal.c: the late ring across a crash, through WAL.
 *
 * A late write's entry lives in shared memory, which a crash wipes. So every
 * entry is also written to WAL, as a record of xip83's own resource manager,
 * by the writer while it appends the entry (under the registry's exclusive
 * lock, so WAL order is sequence order); its transaction's commit flushes it.
 * Crash recovery replays the records since the last checkpoint back into the
 * ring. What came before that checkpoint is carried over by a copy of the
 * whole ring (a RING record with the ring's bounds, then every entry) that the
 * notifier writes after every checkpoint, and the first backend writes after a
 * start that restored the ring from the shutdown file. So after a crash the
 * ring is what it was, but for a window of about one notifier tick after a
 * checkpoint; a consumer whose late cursor predates what was replayed gets
 * SQLSTATE X83L0 (src/scan/live.c). Entries of transactions that never committed are
 * replayed too, and consumed as aborted.
 *
 * Published horizons go to WAL too, for standbys (HORIZONS records, written
 * by the notifier: src/feed/standby.c): redo raises each line's published value, and
 * a full record (every line of the feed) marks the feed readable there.
 *
 * Standbys' topic summaries get two more records (core.h has the model):
 * RAISE, a key and position a non-fresh write raises, logged by the writer
 * before its row; SUMMARY, a kind whose summary a load resets or a TRUNCATE
 * or drop turns off there.
 *
 * The resource manager id is PostgreSQL's experimental one (128): a cluster
 * cannot load another extension that uses it at the same time.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"

#include "registry.h"

#define XIP83_RMGR_ID RM_EXPERIMENTAL_ID
#define XLOG_XIP83_LATE 0x00
#define XLOG_XIP83_RING 0x10
#define XLOG_XIP83_HORIZONS 0x20
#define XLOG_XIP83_RAISE 0x30
#define XLOG_XIP83_SUMMARY 0x40

/* One late entry, or (RING) the bounds of a copy of the ring that follows. */
typedef struct xl_xip83_late
{
	Oid			dboid;
	Oid			relid;			/* the feed: a tracked table, or InvalidOid */
	LateEntry	entry;			/* RING: unused */
	uint64		late_first;		/* RING: the ring's bounds */
	uint64		late_evicted;
} xl_xip83_late;

/* A HORIZONS record: this header, then n lines. */
typedef struct xl_xip83_horizons
{
	Oid			dboid;
	Oid			relid;
	uint32		n;
	uint32		full;			/* 1: every line of the feed */
} xl_xip83_horizons;

/* A RAISE record (key, position) or a SUMMARY record (off). */
typedef struct xl_xip83_summary
{
	Oid			dboid;
	Oid			relid;
	int32		kind;
	uint32		key;			/* RAISE */
	uint64		position;		/* RAISE; SUMMARY: 1 off, 0 reset */
} xl_xip83_summary;

static void
LogSummary(const RegistryDb *db, uint8 info, PositionKind kind, uint32 key, uint64 position)
{
	xl_xip83_summary rec;

	/* only a standby reads them */
	if (!XLogStandbyInfoActive())
		return;
	memset(&rec, 0, sizeof(rec));
	rec.dboid = db->dboid;
	rec.relid = db->relid;
	rec.kind = (int32) kind;
	rec.key = key;
	rec.position = position;
	XLogBeginInsert();
	XLogRegisterData((char *) &rec, sizeof(rec));
	/* the transaction's commit, which follows, flushes it */
	(void) XLogInsert(XIP83_RMGR_ID, info);
}

void
RegistryLogSummaryRaise(const RegistryDb *db, PositionKind kind, uint32 key, uint64 position)
{
	LogSummary(db, XLOG_XIP83_RAISE, kind, key, position);
}

void
RegistryLogSummaryReset(const RegistryDb *db, PositionKind kind, bool off)
{
	LogSummary(db, XLOG_XIP83_SUMMARY, kind, 0, off ? 1 : 0);
}

void
RegistryLogSummaryResetFeed(Oid dboid, Oid relid)
{
	RegistryDb	feed;

	/* only the names a record carries */
	memset(&feed, 0, sizeof(feed));
	feed.dboid = dboid;
	feed.relid = relid;
	for (int k = 0; k < 3; k++)
		LogSummary(&feed, XLOG_XIP83_SUMMARY, (PositionKind) k, 0, 0);
}

/* Replays a RAISE or SUMMARY record into the feed's summary (lock not held). */
static void
RedoSummary(RegistryDb *db, uint8 info, const xl_xip83_summary *rec)
{
	Summary    *s;

	if (rec->kind < 0 || rec->kind > (int32) KIND_ENVELOPE ||
		(s = SummaryOf(db, (PositionKind) rec->kind)) == NULL)
		return;
	if (info == XLOG_XIP83_RAISE)
	{
		/* before the commit that makes the row visible is replayed */
		SummaryNote(s, rec->key, rec->position);
		return;
	}
	if (rec->position != 0)
		SummarySetStandbyOff(s);
	SummaryReset(s);
}

void
RegistryLogHorizons(const RegistryDb *db, const RegistryHorizonLine *lines, int n, bool full)
{
	xl_xip83_horizons rec;

	rec.dboid = db->dboid;
	rec.relid = db->relid;
	rec.n = (uint32) n;
	rec.full = full ? 1 : 0;
	XLogBeginInsert();
	XLogRegisterData((char *) &rec, sizeof(rec));
	if (n > 0)
		XLogRegisterData((char *) lines, sizeof(RegistryHorizonLine) * n);
	/* no flush: the notifier commits asynchronously; a standby gets it with what follows */
	(void) XLogInsert(XIP83_RMGR_ID, XLOG_XIP83_HORIZONS);
}

/* Raises a line's published horizon (and high, which a promotion starts from). */
static void
RaiseLine(PositionLine *line, uint64 v)
{
	uint64		cur = pg_atomic_read_u64(&line->published);

	while (cur < v && !pg_atomic_compare_exchange_u64(&line->published, &cur, v))
		;
	cur = pg_atomic_read_u64(&line->high);
	while (cur < v && !pg_atomic_compare_exchange_u64(&line->high, &cur, v))
		;
}

/* Replays a HORIZONS record into its feed's lines; lock held exclusive. */
static void
RedoHorizonsLocked(RegistryDb *db, const xl_xip83_horizons *rec)
{
	const RegistryHorizonLine *lines = (const RegistryHorizonLine *) (rec + 1);

	for (uint32 i = 0; i < rec->n; i++)
	{
		int			l = lines[i].line;

		if (lines[i].horizon < 0)
			continue;
		if (l >= LINE_FIRST_ORIGINATOR)
			l = RegistryAddOriginatorLocked(db, lines[i].node, (uint64) lines[i].horizon);
		if (l >= 0)
			RaiseLine(&db->lines[l], (uint64) lines[i].horizon);
	}
	if (rec->full)
		db->horizons_replayed = true;
}

XLogRecPtr
RegistryLogLate(const RegistryDb *db, const LateEntry *entry)
{
	xl_xip83_late rec;

	memset(&rec, 0, sizeof(rec));
	rec.dboid = db->dboid;
	rec.relid = db->relid;
	rec.entry = *entry;
	XLogBeginInsert();
	XLogRegisterData((char *) &rec, sizeof(rec));
	return XLogInsert(XIP83_RMGR_ID, XLOG_XIP83_LATE);
}

static int
CompareSeq(const void *a, const void *b)
{
	uint64		x = ((const LateEntry *) a)->seq;
	uint64		y = ((const LateEntry *) b)->seq;

	return (x > y) - (x < y);
}

void
RegistryLogRing(RegistryDb *db)
{
	xl_xip83_late rec;
	XLogRecPtr	lsn;
	LateEntry  *copy = palloc(sizeof(LateEntry) * Reg->ring_size);
	int			n = 0;

	memset(&rec, 0, sizeof(rec));
	LWLockAcquire(Reg->lock, LW_EXCLUSIVE);
	rec.dboid = db->dboid;
	rec.relid = db->relid;
	rec.late_first = db->late_first;
	rec.late_evicted = db->late_evicted;
	rec.entry.seq = db->late_next - 1;
	XLogBeginInsert();
	XLogRegisterData((char *) &rec, sizeof(rec));
	lsn = XLogInsert(XIP83_RMGR_ID, XLOG_XIP83_RING);
	for (int i = 0; i < Reg->ring_size; i++)
		if (db->ring[i].seq != 0)
			copy[n++] = db->ring[i];
	qsort(copy, n, sizeof(LateEntry), CompareSeq);
	/* the end of the last record: the insert position is not a flush target */
	for (int i = 0; i < n; i++)
		lsn = RegistryLogLate(db, &copy[i]);
	db->ring_logged = true;
	LWLockRelease(Reg->lock);
	pfree(copy);
	/* rare (once a checkpoint): worth the flush, so that recovery can rely on it */
	XLogFlush(lsn);
}

/*
 * Replays a record into the ring (startup process). The entry's database is
 * found or given a fresh entry; `replayed` marks what recovery vouches for.
 */
static void
Xip83Redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	xl_xip83_late *rec = (xl_xip83_late *) XLogRecGetData(record);
	RegistryDb *db;
	uint64		seq = rec->entry.seq;

	if (Reg == NULL)
		return;
	LWLockAcquire(Reg->lock, LW_EXCLUSIVE);
	/* every record starts with the feed's (dboid, relid) */
	db = RegistryEntryForRedoLocked(rec->dboid, rec->relid);
	if (db != NULL && (info == XLOG_XIP83_RAISE || info == XLOG_XIP83_SUMMARY))
	{
		/* an entry stays with its feed during recovery */
		LWLockRelease(Reg->lock);
		RedoSummary(db, info, (const xl_xip83_summary *) XLogRecGetData(record));
		return;
	}
	if (db != NULL)
	{
		if (info == XLOG_XIP83_HORIZONS)
			RedoHorizonsLocked(db, (const xl_xip83_horizons *) XLogRecGetData(record));
		else if (info == XLOG_XIP83_LATE)
		{
			/*
			 * Everything from here on is replayed. Sequence numbers go on
			 * from the writer's, not from this server's clock: a standby's
			 * readers hand them out as late cursors.
			 */
			if (!db->replayed)
				db->late_first = seq;
			RegistryRingPutLocked(db, &rec->entry);
			db->late_next = db->replayed ? Max(db->late_next, seq + 1) : seq + 1;
			db->replayed = true;
		}
		else if (info == XLOG_XIP83_RING)
		{
			/* the copy's entries follow: they fill in what came before */
			db->late_first = db->replayed ? Min(db->late_first, rec->late_first) : rec->late_first;
			db->late_evicted = Max(db->late_evicted, rec->late_evicted);
			db->late_next = db->replayed ? Max(db->late_next, seq + 1) : seq + 1;
			db->replayed = true;
		}
	}
	LWLockRelease(Reg->lock);
}

static void
Xip83Desc(StringInfo buf, XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	xl_xip83_late *rec = (xl_xip83_late *) XLogRecGetData(record);

	if (info == XLOG_XIP83_HORIZONS)
	{
		const xl_xip83_horizons *h = (const xl_xip83_horizons *) rec;
		const RegistryHorizonLine *lines = (const RegistryHorizonLine *) (h + 1);

		appendStringInfo(buf, "db %u feed %u %s horizons", h->dboid, h->relid,
						 h->full ? "all" : "moved");
		for (uint32 i = 0; i < h->n; i++)
			appendStringInfo(buf, " %d/%d=" INT64_FORMAT, lines[i].line, lines[i].node,
							 lines[i].horizon);
	}
	else if (info == XLOG_XIP83_LATE)
		appendStringInfo(buf, "db %u feed %u late seq " UINT64_FORMAT " kind %d node %d position " INT64_FORMAT " xid %u",
						 rec->dboid, rec->relid, rec->entry.seq, rec->entry.kind, rec->entry.node,
						 rec->entry.position, rec->entry.xid);
	else if (info == XLOG_XIP83_RAISE || info == XLOG_XIP83_SUMMARY)
	{
		const xl_xip83_summary *r = (const xl_xip83_summary *) rec;

		if (info == XLOG_XIP83_RAISE)
			appendStringInfo(buf, "db %u feed %u kind %d key %u position " UINT64_FORMAT,
							 r->dboid, r->relid, r->kind, r->key, r->position);
		else
			appendStringInfo(buf, "db %u feed %u kind %d summary %s", r->dboid, r->relid,
							 r->kind, r->position != 0 ? "off" : "reset");
	}
	else
		appendStringInfo(buf, "db %u feed %u late ring head " UINT64_FORMAT " first " UINT64_FORMAT " evicted " UINT64_FORMAT,
						 rec->dboid, rec->relid, rec->entry.seq, rec->late_first, rec->late_evicted);
}

static const char *
Xip83Identify(uint8 info)
{
	switch (info & ~XLR_INFO_MASK)
	{
		case XLOG_XIP83_LATE:
			return "LATE";
		case XLOG_XIP83_RING:
			return "RING";
		case XLOG_XIP83_HORIZONS:
			return "HORIZONS";
		case XLOG_XIP83_RAISE:
			return "RAISE";
		case XLOG_XIP83_SUMMARY:
			return "SUMMARY";
	}
	return NULL;
}

static RmgrData Xip83Rmgr = {
	.rm_name = "xip83",
	.rm_redo = Xip83Redo,
	.rm_desc = Xip83Desc,
	.rm_identify = Xip83Identify,
};

void
RegistryRegisterRmgr(void)
{
	RegisterCustomRmgr(XIP83_RMGR_ID, &Xip83Rmgr);
}
