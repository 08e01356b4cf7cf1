/*
 * wave_handles.c: the SQL functions of wave handles: xip83.wave_open (a
 * kind, then that kind's wave arguments), the *_wave_scan overloads that
 * fetch rows or frames from a handle, xip83.wave_close, and 0.1.0's per-kind
 * opens, which the 0.1.0 install script still names. The handles are
 * src/frames' (frames_handle.c); here the arguments are read and checked,
 * in the order the errors have always come in.
 */
#include "postgres.h"

#include "funcapi.h"

#include "base/base.h"
#include "rel/rel.h"
#include "frames/frames.h"
#include "entry.h"

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

/*
 * Fetches from the handle in argument 0 at most the limit in argument 1
 * rows, or with frames frames (mutate_id and max_frame_bytes in arguments 2
 * and 3).
 */
static Datum
Fetch(FunctionCallInfo fcinfo, FrameKind kind, bool frames)
{
	WaveHandle *h;
	int64		budget;
	uint64		mutate_id;
	int32		max_bytes;

	ArgRequire(fcinfo, 0, "handle");
	h = WaveHandleGet(PG_GETARG_INT32(0), kind, false);
	budget = ArgGetPageLimit(fcinfo, 1, frames ? "page_limit" : "row_limit");
	mutate_id = frames ? FrameArgMutateId(fcinfo, 2, true) : 0;
	max_bytes = frames ? FrameArgMaxBytes(fcinfo, 3) : 0;
	WaveHandleFetch(h, fcinfo, budget, frames, mutate_id, max_bytes);
	return (Datum) 0;
}

/*
 * Opens a wave from fcinfo's arguments: a kind, then that kind's wave
 * arguments as WaveHandleOpen takes them. A v3 wave without a source reads the
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
	PG_RETURN_INT32(WaveHandleOpen(wave, kind, d14n ? 5 : 2, d14n ? 7 : 4));
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
	PG_RETURN_INT32(WaveHandleOpen(fcinfo, FRAME_GROUP, 2, 4));
}

/* 0.1.0's welcome_wave_open(topics, floors, scan_cursor, ceiling, source) */
Datum
welcome_wave_open(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(WaveHandleOpen(fcinfo, FRAME_WELCOME, 2, 4));
}

/* 0.1.0's envelope_wave_open(cursor ..., scan position, source, blob_source) */
Datum
envelope_wave_open(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(WaveHandleOpen(fcinfo, FRAME_ENVELOPE, 5, 7));
}

/* xip83.group_wave_scan(handle, row_limit): the next rows of a group wave. */
Datum
group_wave_fetch(PG_FUNCTION_ARGS)
{
	return Fetch(fcinfo, FRAME_GROUP, false);
}

/* xip83.welcome_wave_scan(handle, row_limit): the next rows of a welcome wave. */
Datum
welcome_wave_fetch(PG_FUNCTION_ARGS)
{
	return Fetch(fcinfo, FRAME_WELCOME, false);
}

/* xip83.envelope_wave_scan(handle, row_limit): the next rows of a d14n wave. */
Datum
envelope_wave_fetch(PG_FUNCTION_ARGS)
{
	return Fetch(fcinfo, FRAME_ENVELOPE, false);
}

/* xip83.group_wave_scan(handle, page_limit, mutate_id, max_frame_bytes) */
Datum
group_wave_frames_fetch(PG_FUNCTION_ARGS)
{
	return Fetch(fcinfo, FRAME_GROUP, true);
}

/* xip83.welcome_wave_scan(handle, page_limit, mutate_id, max_frame_bytes) */
Datum
welcome_wave_frames_fetch(PG_FUNCTION_ARGS)
{
	return Fetch(fcinfo, FRAME_WELCOME, true);
}

/* xip83.envelope_wave_scan(handle, row_limit, mutate_id, max_frame_bytes) */
Datum
envelope_wave_frames_fetch(PG_FUNCTION_ARGS)
{
	return Fetch(fcinfo, FRAME_ENVELOPE, true);
}

/* xip83.wave_close(handle): releases the wave's scans, relations and snapshot. */
Datum
wave_close(PG_FUNCTION_ARGS)
{
	ArgRequire(fcinfo, 0, "handle");
	WaveHandleClose(WaveHandleGet(PG_GETARG_INT32(0), FRAME_GROUP, true));
	PG_RETURN_VOID();
}
