/*
 * registry_file.c: the registry across a clean restart.
 *
 * At a clean shutdown (pg_control says the shutdown checkpoint was written;
 * an immediate stop is a crash to the next start) the postmaster writes every database entry's published
 * horizons, originator lines and late ring to pg_xip83.registry in the data
 * directory (written to a temporary file, fsynced, renamed). At the next start
 * the file is read back into shared memory and removed at once, so a crash
 * later never restores stale state. What it buys:
 *   - horizons never go back across a clean restart, even when the rows at
 *     the top of a line were deleted (loading still raises each line to what
 *     is committed);
 *   - late writes survive it: a consumer's late cursor stays valid.
 * After a crash there is no file: lines load from the tables alone, and the
 * late ring starts empty with sequence numbers above every earlier one, so a
 * consumer holding an older late cursor is told (SQLSTATE X83L0).
 */
#include "postgres.h"

#include <unistd.h>

#include "catalog/pg_control.h"
#include "common/controldata_utils.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "utils/timestamp.h"

#include "registry.h"

#define REGISTRY_FILE "pg_xip83.registry"
#define REGISTRY_FILE_TMP REGISTRY_FILE ".tmp"
#define REGISTRY_MAGIC 0x78383302

/* One saved database entry, followed by its lines and late entries. */
typedef struct SavedDb
{
	Oid			dboid;
	Oid			relid;			/* the feed */
	uint32		n_lines;
	uint32		n_late;
	uint64		late_next;
	uint64		late_first;
	uint64		late_evicted;
	uint64		late_writes;
} SavedDb;

typedef struct SavedLine
{
	int32		node;
	uint64		high;
	uint64		published;
} SavedLine;

static bool
WriteAll(FILE *f, const void *p, size_t n)
{
	return n == 0 || fwrite(p, n, 1, f) == 1;
}

static bool
ReadAll(FILE *f, void *p, size_t n)
{
	return n == 0 || fread(p, n, 1, f) == 1;
}

/* on_shmem_exit in the postmaster: saves the registry after a clean shutdown. */
static void
RegistrySave(int code, Datum arg)
{
	FILE	   *f;
	uint32		header[2] = {REGISTRY_MAGIC, 0};
	bool		ok;

	ControlFileData *control;
	bool		crc_ok;

	if (code != 0 || Reg == NULL)
		return;
	/* only after a clean shutdown: an immediate one is a crash to the next start */
	control = get_controlfile(DataDir, &crc_ok);
	if (!crc_ok || control->state != DB_SHUTDOWNED)
		return;
	f = AllocateFile(REGISTRY_FILE_TMP, PG_BINARY_W);
	if (f == NULL)
		goto error;
	for (int d = 0; d < Reg->n_dbs; d++)
		header[1] += OidIsValid(Reg->dbs[d].dboid) && Reg->dbs[d].ready;
	ok = WriteAll(f, header, sizeof(header));
	for (int d = 0; ok && d < Reg->n_dbs; d++)
	{
		RegistryDb *db = &Reg->dbs[d];
		SavedDb		s;

		if (!OidIsValid(db->dboid) || !db->ready)
			continue;
		s.dboid = db->dboid;
		s.relid = db->relid;
		s.n_lines = pg_atomic_read_u32(&db->n_lines);
		s.n_late = 0;
		for (int i = 0; i < Reg->ring_size; i++)
			s.n_late += db->ring[i].seq != 0;
		s.late_next = db->late_next;
		s.late_first = db->late_first;
		s.late_evicted = db->late_evicted;
		s.late_writes = pg_atomic_read_u64(&db->late_writes);
		ok = WriteAll(f, &s, sizeof(s));
		for (uint32 l = 0; ok && l < s.n_lines; l++)
		{
			SavedLine	line = {db->lines[l].node,
				pg_atomic_read_u64(&db->lines[l].high),
			pg_atomic_read_u64(&db->lines[l].published)};

			ok = WriteAll(f, &line, sizeof(line));
		}
		for (int i = 0; ok && i < Reg->ring_size; i++)
			if (db->ring[i].seq != 0)
				ok = WriteAll(f, &db->ring[i], sizeof(LateEntry));
	}
	if (!ok || fflush(f) != 0 || pg_fsync(fileno(f)) != 0)
	{
		FreeFile(f);
		goto error;
	}
	if (FreeFile(f) != 0)
		goto error;
	(void) durable_rename(REGISTRY_FILE_TMP, REGISTRY_FILE, LOG);
	return;

error:
	ereport(LOG,
			(errcode_for_file_access(),
			 errmsg("could not write xip83 registry file \"%s\": %m", REGISTRY_FILE_TMP)));
	unlink(REGISTRY_FILE_TMP);
}

/*
 * Reads one saved entry into the next free entry of its pool (databases'
 * feeds, then tracked tables': see AcquireDb); false on a short file or a
 * full pool (settings lowered since).
 */
static bool
RestoreDb(FILE *f, int *next_home, int *next_tracked)
{
	SavedDb		s;
	uint32		keep;
	RegistryDb *db;

	if (!ReadAll(f, &s, sizeof(s)))
		return false;
	if (OidIsValid(s.relid) ? *next_tracked >= Reg->n_dbs : *next_home >= xip83_max_databases)
		return false;
	db = &Reg->dbs[OidIsValid(s.relid) ? (*next_tracked)++ : (*next_home)++];
	db->dboid = s.dboid;
	db->relid = s.relid;
	db->ready = false;			/* lines are raised to what is committed on first use */
	db->restored = true;
	pg_atomic_write_u64(&db->last_use_ms, (uint64) (GetCurrentTimestamp() / 1000));
	db->late_next = s.late_next;
	db->late_first = s.late_first;
	db->late_evicted = s.late_evicted;
	pg_atomic_write_u64(&db->late_writes, s.late_writes);
	keep = Min(s.n_lines, (uint32) Reg->n_lines);
	for (uint32 l = 0; l < s.n_lines; l++)
	{
		SavedLine	line;

		if (!ReadAll(f, &line, sizeof(line)))
			goto short_file;
		if (l >= keep)
			continue;
		db->lines[l].node = line.node;
		pg_atomic_write_u64(&db->lines[l].high, line.high);
		pg_atomic_write_u64(&db->lines[l].published, line.published);
	}
	pg_atomic_write_u32(&db->n_lines, Max(keep, LINE_FIRST_ORIGINATOR));
	/* into a smaller ring, what an entry overwrites counts as evicted */
	for (uint32 i = 0; i < s.n_late; i++)
	{
		LateEntry	e;

		if (!ReadAll(f, &e, sizeof(e)))
			goto short_file;
		if (db->ring[e.seq % Reg->ring_size].seq > e.seq)
			db->late_evicted = Max(db->late_evicted, e.seq);
		else
			RegistryRingPutLocked(db, &e);
	}
	return true;

short_file:
	db->dboid = InvalidOid;
	db->restored = false;
	return false;
}

/* At shared-memory creation in the postmaster: restores the saved registry, then forgets it. */
void
RegistryRestore(void)
{
	FILE	   *f;
	uint32		header[2];

	if (IsUnderPostmaster)
		return;
	on_shmem_exit(RegistrySave, (Datum) 0);
	f = AllocateFile(REGISTRY_FILE, PG_BINARY_R);
	if (f == NULL)
		return;
	if (ReadAll(f, header, sizeof(header)) && header[0] == REGISTRY_MAGIC)
	{
		int			next_home = 0;
		int			next_tracked = xip83_max_databases;

		for (uint32 i = 0; i < header[1]; i++)
			if (!RestoreDb(f, &next_home, &next_tracked))
			{
				ereport(LOG,
						(errmsg("xip83 registry file \"%s\" is truncated or holds more feeds than the settings allow; ignoring the rest",
								REGISTRY_FILE)));
				break;
			}
	}
	FreeFile(f);
	unlink(REGISTRY_FILE);
}
