/*
 * frames_handle.c: wave handles: open a wave once (xip83.wave_open), fetch
 * its rows or frames page by page in later statements (the *_wave_scan
 * overloads that take a handle), close it (xip83.wave_close). The SQL
 * functions are in src/sql/wave_handles.c; the handles, their memory and
 * resource owners are kept here.
 *
 * Why: a cursor over xip83.*_wave_stream streams only while PostgreSQL
 * inlines the SQL wrapper, and it refuses to when an argument holds a
 * volatile function (xip83.group_ceiling() is one) or a sub-select; the
 * function scan then reads the whole wave before the first FETCH returns. A
 * handle does not depend on the planner: its arguments are evaluated once, by
 * whatever expression, in the statement that opens it, and each fetch reads
 * only the rows it returns, with memory bounded by the wave's topics.
 *
 * State: a handle lives in the backend until wave_close or the end of the
 * transaction that opened it (every fetch reads with the snapshot taken at
 * open). Its scans, relations and snapshot are held by a resource owner of
 * its own under the transaction's, its memory by a context under
 * TopTransactionContext. Before commit every handle still open is closed; on
 * abort the transaction's resource owner and memory release them. A fetch
 * interrupted by an error (caught by a savepoint) leaves its handle unusable
 * (55000): its merge may be half-way through a step.
 */
#include "postgres.h"

#include "access/xact.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/tuplestore.h"

#include "frames.h"

struct WaveHandle
{
	int32		id;
	FrameKind	kind;
	FrameWave  *wave;			/* NULL until the open succeeded */
	MemoryContext cxt;
	ResourceOwner owner;
	bool		broken;			/* an error interrupted it */
};

static const char *const kind_names[] = {"group", "welcome", "envelope"};

static List *handles = NIL;		/* in TopTransactionContext */
static int32 next_handle = 1;
static bool callback_registered = false;

/* Closes a handle's wave (unless broken), releases its owner and memory. */
static void
HandleRelease(WaveHandle *h)
{
	ResourceOwner save = CurrentResourceOwner;

	CurrentResourceOwner = h->owner;
	if (h->wave != NULL && !h->broken)
		FrameWaveClose(h->wave);
	CurrentResourceOwner = save;
	/* quietly drops what a broken handle still holds, and its locks */
	ResourceOwnerRelease(h->owner, RESOURCE_RELEASE_BEFORE_LOCKS, false, false);
	ResourceOwnerRelease(h->owner, RESOURCE_RELEASE_LOCKS, false, false);
	ResourceOwnerRelease(h->owner, RESOURCE_RELEASE_AFTER_LOCKS, false, false);
	ResourceOwnerDelete(h->owner);
	MemoryContextDelete(h->cxt);
}

/* Closes the handles still open before commit; forgets them at the end. */
static void
HandlesXactCallback(XactEvent event, void *arg)
{
	ListCell   *lc;

	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			foreach(lc, handles)
				HandleRelease((WaveHandle *) lfirst(lc));
			handles = NIL;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			/* the transaction's resource owner and memory take the rest */
			handles = NIL;
			next_handle = 1;
			break;
	}
}

/*
 * Opens a wave of `kind` from the wave arguments of the SQL call's fcinfo
 * (as FrameWaveOpen reads them); returns its handle. The first narrays
 * arguments are arrays the wave keeps pointers into: they are copied into
 * the handle's memory, as the statement's go with it.
 */
int32
WaveHandleOpen(FunctionCallInfo fcinfo, FrameKind kind, int narrays, int source_arg)
{
	MemoryContext old;
	ResourceOwner save = CurrentResourceOwner;
	WaveHandle *h;

	if (!callback_registered)
	{
		RegisterXactCallback(HandlesXactCallback, NULL);
		callback_registered = true;
	}
	h = MemoryContextAllocZero(TopTransactionContext, sizeof(WaveHandle));
	h->id = next_handle++;
	h->kind = kind;
	h->broken = true;			/* until the open succeeded */
	h->cxt = AllocSetContextCreate(TopTransactionContext, "xip83 wave handle",
								   ALLOCSET_DEFAULT_SIZES);
	h->owner = ResourceOwnerCreate(TopTransactionResourceOwner, "xip83 wave handle");
	old = MemoryContextSwitchTo(TopTransactionContext);
	handles = lappend(handles, h);
	MemoryContextSwitchTo(h->cxt);
	for (int i = 0; i < narrays; i++)
		if (!PG_ARGISNULL(i))
			fcinfo->args[i].value = PointerGetDatum(PG_DETOAST_DATUM_COPY(PG_GETARG_DATUM(i)));
	CurrentResourceOwner = h->owner;
	PG_TRY();
	{
		h->wave = FrameWaveOpen(fcinfo, kind, source_arg, 0);
	}
	PG_FINALLY();
	{
		CurrentResourceOwner = save;
		MemoryContextSwitchTo(old);
	}
	PG_END_TRY();
	h->broken = false;
	return h->id;
}

/* The open handle `id` of the given kind (of any with any_kind), or an error. */
WaveHandle *
WaveHandleGet(int32 id, FrameKind kind, bool any_kind)
{
	ListCell   *lc;

	foreach(lc, handles)
	{
		WaveHandle *h = (WaveHandle *) lfirst(lc);

		if (h->id != id)
			continue;
		if (!any_kind && h->kind != kind)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("wave handle %d is a %s wave, not a %s wave", id,
							kind_names[h->kind], kind_names[kind]),
					 errhint("Fetch it with xip83.%s_wave_scan(handle, ...).",
							 kind_names[h->kind])));
		if (h->broken && !any_kind)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("wave handle %d was interrupted by an error", id),
					 errhint("Close it with xip83.wave_close and open the wave again "
							 "from the last position you received.")));
		return h;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("no open wave handle %d", id),
			 errdetail("Handles last until xip83.wave_close or the end of the transaction "
					   "that opened them.")));
	return NULL;				/* keep compiler quiet */
}

/*
 * Fetches from a handle into the materialized result of the SQL call whose
 * fcinfo it is given: at most `budget` rows, as rows or, with frames, as
 * frames tagged mutate_id of at most max_bytes.
 */
void
WaveHandleFetch(WaveHandle *h, FunctionCallInfo fcinfo, int64 budget, bool frames,
				uint64 mutate_id, int32 max_bytes)
{
	FrameKind	kind = h->kind;
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ResourceOwner save = CurrentResourceOwner;
	MemoryContext old;

	InitMaterializedSRF(fcinfo, 0);
	h->broken = true;
	/* the wave's scans allocate as they read: in memory that outlives the statement */
	old = MemoryContextSwitchTo(h->cxt);
	CurrentResourceOwner = h->owner;
	PG_TRY();
	{
		if (frames)
		{
			Framer	   *framer = FramerBegin(kind, mutate_id, max_bytes);
			Frame		frame;

			while (FrameNextFromWave(framer, h->wave, &budget, &frame))
				FramePut(fcinfo, kind, &frame);
			FramerEnd(framer);
		}
		else
		{
			Datum		values[8];
			bool		nulls[8];

			while (budget-- > 0 && FrameWaveNext(h->wave, values, nulls))
			{
				CHECK_FOR_INTERRUPTS();
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			}
		}
	}
	PG_FINALLY();
	{
		CurrentResourceOwner = save;
		MemoryContextSwitchTo(old);
	}
	PG_END_TRY();
	h->broken = false;
}

/* Closes a handle: releases the wave's scans, relations and snapshot. */
void
WaveHandleClose(WaveHandle *h)
{
	handles = list_delete_ptr(handles, h);
	HandleRelease(h);
	pfree(h);
}
