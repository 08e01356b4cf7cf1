/*
 * frames_handle.c: wave handles: open a wave once (xip83.wave_open), fetch
 * its rows or frames page by page in later statements (the *_wave_scan
 * overloads that take a handle), close it (xip83.wave_close).
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

#include "base/base.h"
#include "frames.h"
#include "rel/rel.h"

PG_FUNCTION_INFO_V1(wave_open);
PG_FUNCTION_INFO_V1(wave_open_d14n);
PG_FUNCTION_INFO_V1(group_wave_fetch);
PG_FUNCTION_INFO_V1(welcome_wave_fetch);
PG_FUNCTION_INFO_V1(envelope_wave_fetch);
PG_FUNCTION_INFO_V1(group_wave_frames_fetch);
PG_FUNCTION_INFO_V1(welcome_wave_frames_fetch);
PG_FUNCTION_INFO_V1(envelope_wave_frames_fetch);
PG_FUNCTION_INFO_V1(wave_close);
/* 0.1.0's per-kind open: a 0.1.0 install (the start of every update) names them */
PG_FUNCTION_INFO_V1(group_wave_open);
PG_FUNCTION_INFO_V1(welcome_wave_open);
PG_FUNCTION_INFO_V1(envelope_wave_open);

typedef struct WaveHandle
{
	int32		id;
	FrameKind	kind;
	FrameWave  *wave;			/* NULL until the open succeeded */
	MemoryContext cxt;
	ResourceOwner owner;
	bool		broken;			/* an error interrupted it */
} WaveHandle;

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
 * Opens a wave of `kind` from fcinfo's wave arguments; returns its handle.
 * The first narrays arguments are arrays the wave keeps pointers into: they
 * are copied into the handle's memory, as the statement's go with it.
 */
static Datum
HandleOpen(FunctionCallInfo fcinfo, FrameKind kind, int narrays, int source_arg)
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
	PG_RETURN_INT32(h->id);
}

/* The open handle `id` (argument 0) of the given kind, or an error. */
static WaveHandle *
HandleGet(FunctionCallInfo fcinfo, FrameKind kind, bool any_kind)
{
	int32		id;
	ListCell   *lc;

	ArgRequire(fcinfo, 0, "handle");
	id = PG_GETARG_INT32(0);
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
 * Fetches from a handle into a materialized result: at most `limit` rows
 * (argument 1), as rows or, with frames, as frames (mutate_id and
 * max_frame_bytes in arguments 2 and 3).
 */
static Datum
HandleFetch(FunctionCallInfo fcinfo, FrameKind kind, bool frames)
{
	WaveHandle *h = HandleGet(fcinfo, kind, false);
	int64		budget = ArgGetPageLimit(fcinfo, 1, frames ? "page_limit" : "row_limit");
	uint64		mutate_id = frames ? FrameArgMutateId(fcinfo, 2, true) : 0;
	int32		max_bytes = frames ? FrameArgMaxBytes(fcinfo, 3) : 0;
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
	return (Datum) 0;
}

/*
 * Opens a wave from fcinfo's arguments: a kind, then that kind's wave
 * arguments as HandleOpen takes them. A v3 wave without a source reads the
 * kind's own table (one signature serves both v3 kinds, so no SQL default).
 */
static Datum
HandleOpenKind(FunctionCallInfo fcinfo, bool d14n)
{
	FrameKind	kind = FrameArgKind(fcinfo, 0, d14n);
	int			nargs = PG_NARGS() - 1;

	/* cppcheck-suppress unusedStructMember ; the union only reserves the space */
	LOCAL_FCINFO(wave, 10);

	if (nargs > 10)
		elog(ERROR, "wave_open takes at most 11 arguments");
	InitFunctionCallInfoData(*wave, fcinfo->flinfo, nargs, fcinfo->fncollation,
							 fcinfo->context, fcinfo->resultinfo);
	for (int i = 0; i < nargs; i++)
		wave->args[i] = fcinfo->args[i + 1];
	if (!d14n && wave->args[4].isnull)
	{
		wave->args[4].value = ObjectIdGetDatum(SourceOwnTable(kind == FRAME_GROUP ?
															  "group_messages" :
															  "welcome_messages"));
		wave->args[4].isnull = false;
	}
	return HandleOpen(wave, kind, d14n ? 5 : 2, d14n ? 7 : 4);
}

/* xip83.wave_open(kind, topics, floors, scan_cursor, ceiling, source) -> handle */
Datum
wave_open(PG_FUNCTION_ARGS)
{
	return HandleOpenKind(fcinfo, false);
}

/* xip83.wave_open('envelope', cursor ..., scan position, source, blob_source) -> handle */
Datum
wave_open_d14n(PG_FUNCTION_ARGS)
{
	return HandleOpenKind(fcinfo, true);
}

/* 0.1.0's group_wave_open(topics, floors, scan_cursor, ceiling, source) */
Datum
group_wave_open(PG_FUNCTION_ARGS)
{
	return HandleOpen(fcinfo, FRAME_GROUP, 2, 4);
}

/* 0.1.0's welcome_wave_open(topics, floors, scan_cursor, ceiling, source) */
Datum
welcome_wave_open(PG_FUNCTION_ARGS)
{
	return HandleOpen(fcinfo, FRAME_WELCOME, 2, 4);
}

/* 0.1.0's envelope_wave_open(cursor ..., scan position, source, blob_source) */
Datum
envelope_wave_open(PG_FUNCTION_ARGS)
{
	return HandleOpen(fcinfo, FRAME_ENVELOPE, 5, 7);
}

/* xip83.group_wave_scan(handle, row_limit): the next rows of a group wave. */
Datum
group_wave_fetch(PG_FUNCTION_ARGS)
{
	return HandleFetch(fcinfo, FRAME_GROUP, false);
}

/* xip83.welcome_wave_scan(handle, row_limit): the next rows of a welcome wave. */
Datum
welcome_wave_fetch(PG_FUNCTION_ARGS)
{
	return HandleFetch(fcinfo, FRAME_WELCOME, false);
}

/* xip83.envelope_wave_scan(handle, row_limit): the next rows of a d14n wave. */
Datum
envelope_wave_fetch(PG_FUNCTION_ARGS)
{
	return HandleFetch(fcinfo, FRAME_ENVELOPE, false);
}

/* xip83.group_wave_scan(handle, page_limit, mutate_id, max_frame_bytes) */
Datum
group_wave_frames_fetch(PG_FUNCTION_ARGS)
{
	return HandleFetch(fcinfo, FRAME_GROUP, true);
}

/* xip83.welcome_wave_scan(handle, page_limit, mutate_id, max_frame_bytes) */
Datum
welcome_wave_frames_fetch(PG_FUNCTION_ARGS)
{
	return HandleFetch(fcinfo, FRAME_WELCOME, true);
}

/* xip83.envelope_wave_scan(handle, row_limit, mutate_id, max_frame_bytes) */
Datum
envelope_wave_frames_fetch(PG_FUNCTION_ARGS)
{
	return HandleFetch(fcinfo, FRAME_ENVELOPE, true);
}

/* xip83.wave_close(handle): releases the wave's scans, relations and snapshot. */
Datum
wave_close(PG_FUNCTION_ARGS)
{
	WaveHandle *h = HandleGet(fcinfo, FRAME_GROUP, true);

	handles = list_delete_ptr(handles, h);
	HandleRelease(h);
	pfree(h);
	PG_RETURN_VOID();
}
