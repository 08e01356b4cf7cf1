/*
 * registry_wal.c: the late ring across a crash, through WAL.
 *
 * A late write's entry lives in shared memory, which a crash wipes. So every
 * entry is also written to WAL, as a record of xip83's own resource manager,
 * by the writer while it appends the entry (under the registry's exclusive
 * lock, so WAL order is sequence order); its transaction's commit flushes it.
 * Crash recovery replays the records since the last checkpoint back into the
 * ring. What came before that checkpoint is vouched for by a "head" record the
 * notifier writes after every checkpoint, and the first backend writes after
 * a start that restored the ring from the shutdown file (the newest late
 * sequence number at that moment): every entry after it is replayed. So after a crash a
 * consumer's late cursor stays valid when it is at least the newest head or
 * the first replayed entry's predecessor; only one that lagged further gets
 * SQLSTATE X83L0 (live.c). Entries of transactions that never committed are
 * replayed too, and consumed as aborted.
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
#define XLOG_XIP83_HEAD 0x10

/* One late entry, or (HEAD) the newest sequence number of a database. */
typedef struct xl_xip83_late
{
	Oid			dboid;
	LateEntry	entry;			/* HEAD: only entry.seq, the head */
} xl_xip83_late;

void
RegistryLogLate(Oid dboid, const LateEntry *entry)
{
	xl_xip83_late rec;

	memset(&rec, 0, sizeof(rec));
	rec.dboid = dboid;
	rec.entry = *entry;
	XLogBeginInsert();
	XLogRegisterData((char *) &rec, sizeof(rec));
	(void) XLogInsert(XIP83_RMGR_ID, XLOG_XIP83_LATE);
}

void
RegistryLogHead(RegistryDb *db)
{
	xl_xip83_late rec;
	XLogRecPtr	lsn;

	memset(&rec, 0, sizeof(rec));
	LWLockAcquire(Reg->lock, LW_EXCLUSIVE);
	rec.dboid = db->dboid;
	rec.entry.seq = db->late_next - 1;
	XLogBeginInsert();
	XLogRegisterData((char *) &rec, sizeof(rec));
	lsn = XLogInsert(XIP83_RMGR_ID, XLOG_XIP83_HEAD);
	db->head_logged = true;
	LWLockRelease(Reg->lock);
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
	db = RegistryEntryForRedoLocked(rec->dboid);
	if (db != NULL)
	{
		if (info == XLOG_XIP83_LATE)
		{
			if (!db->replayed)
				db->late_first = seq;	/* everything from here on is replayed */
			RegistryRingPutLocked(db, &rec->entry);
			db->late_next = Max(db->late_next, seq + 1);
			db->replayed = true;
		}
		else if (info == XLOG_XIP83_HEAD && !db->replayed)
		{
			db->late_first = seq + 1;
			db->late_next = Max(db->late_next, seq + 1);
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

	if (info == XLOG_XIP83_LATE)
		appendStringInfo(buf, "db %u late seq " UINT64_FORMAT " kind %d node %d position " INT64_FORMAT " xid %u",
						 rec->dboid, rec->entry.seq, rec->entry.kind, rec->entry.node,
						 rec->entry.position, rec->entry.xid);
	else
		appendStringInfo(buf, "db %u late head " UINT64_FORMAT, rec->dboid, rec->entry.seq);
}

static const char *
Xip83Identify(uint8 info)
{
	switch (info & ~XLR_INFO_MASK)
	{
		case XLOG_XIP83_LATE:
			return "LATE";
		case XLOG_XIP83_HEAD:
			return "HEAD";
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
