/*
 * frames.c (src/sql): the wave scans' frame form, the *_wave_scan overloads
 * that take mutate_id and max_frame_bytes (a page, or with the limit NULL a
 * whole wave one frame per call, for a cursor), 0.1.0's *_wave_frames_rows
 * that the 0.1.0 install script still names, and the checked reading of the
 * frame functions' arguments (entry.h) every frame entry point uses.
 *
 * The frames are src/frames' (Framer, FrameWave); this file reads the
 * arguments, fills the result and keeps a stream's state across calls,
 * released by an expression-context callback when its reader stops early.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "base/base.h"
#include "frames/frames.h"
#include "entry.h"

PG_FUNCTION_INFO_V1(group_wave_frames);
PG_FUNCTION_INFO_V1(welcome_wave_frames);
PG_FUNCTION_INFO_V1(envelope_wave_frames);
/* 0.1.0's frame streams: a 0.1.0 install (the start of every update) names them */
PG_FUNCTION_INFO_V1(group_wave_frames_rows);
PG_FUNCTION_INFO_V1(welcome_wave_frames_rows);
PG_FUNCTION_INFO_V1(envelope_wave_frames_rows);

/*
 * A mutate_id argument: a wave's must be positive (0 tags the live lane),
 * a CatchupComplete's may be 0; never negative.
 */
uint64
FrameArgMutateId(FunctionCallInfo fcinfo, int argno, bool wave)
{
	int64		v;

	ArgRequire(fcinfo, argno, "mutate_id");
	v = PG_GETARG_INT64(argno);
	if (v < 0 || (wave && v == 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"mutate_id\" must be %s", wave ? "positive" : "non-negative"),
				 errdetail("It is " INT64_FORMAT ".", v),
				 wave ? errhint("mutate_id 0 tags the live lane; a wave is tagged with its Mutate's nonzero id.") : 0));
	return (uint64) v;
}

/*
 * The kind argument of xip83.wave_open and xip83.live_frames: 'group' or
 * 'welcome' with the v3 arguments, 'envelope' with the d14n ones.
 */
FrameKind
FrameArgKind(FunctionCallInfo fcinfo, int argno, bool d14n)
{
	char	   *kind;

	ArgRequire(fcinfo, argno, "kind");
	kind = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (!d14n && strcmp(kind, "group") == 0)
		return FRAME_GROUP;
	if (!d14n && strcmp(kind, "welcome") == 0)
		return FRAME_WELCOME;
	if (d14n && strcmp(kind, "envelope") == 0)
		return FRAME_ENVELOPE;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid kind \"%s\" for the %s arguments", kind, d14n ? "d14n" : "v3"),
			 errhint(d14n ? "The d14n arguments (node ids and sequence ids) go with kind 'envelope'."
					 : "The v3 arguments go with kind 'group' or 'welcome'; 'envelope' takes the d14n ones.")));
	return FRAME_GROUP;			/* keep compiler quiet */
}

/* The max_frame_bytes argument: positive. */
int32
FrameArgMaxBytes(FunctionCallInfo fcinfo, int argno)
{
	int32		v;

	ArgRequire(fcinfo, argno, "max_frame_bytes");
	v = PG_GETARG_INT32(argno);
	if (v < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"max_frame_bytes\" must be positive"),
				 errdetail("It is %d.", v)));
	return v;
}

/* Checks the binding argument: 'v3' or 'd14n'. */
void
FrameArgBinding(FunctionCallInfo fcinfo, int argno, bool *d14n)
{
	char	   *binding;

	ArgRequire(fcinfo, argno, "binding");
	binding = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (strcmp(binding, "v3") != 0 && strcmp(binding, "d14n") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid binding \"%s\"", binding),
				 errhint("Use 'v3' (xmtp.mls.api.v1) or 'd14n' (xmtp.xmtpv4.message_api).")));
	if (d14n)
		*d14n = binding[0] == 'd';
}

/* A frame stream's state across calls. */
typedef struct FrameStream
{
	FrameWave  *wave;
	Framer	   *framer;
} FrameStream;

/* Releases a frame stream when its query stops reading before the end. */
static void
FrameStreamShutdown(Datum arg)
{
	FrameStream *stream = (FrameStream *) DatumGetPointer(arg);

	if (stream->wave != NULL)
		FrameWaveClose(stream->wave);
	stream->wave = NULL;
}

/*
 * A whole wave as frames, one frame per call (value per call), for the
 * *_wave_stream cursors: mutate_id at mutate_arg, then max_frame_bytes, then
 * the source(s).
 */
static Datum
WaveFramesRows(FunctionCallInfo fcinfo, FrameKind kind, int mutate_arg)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	FuncCallContext *funcctx;
	FrameStream *stream;
	Frame		frame;
	int64		budget = -1;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext old;

		funcctx = WaveRowsFirstCall(fcinfo, &old);
		stream = palloc0(sizeof(FrameStream));
		stream->framer = FramerBegin(kind, FrameArgMutateId(fcinfo, mutate_arg, true),
									 FrameArgMaxBytes(fcinfo, mutate_arg + 1));
		stream->wave = FrameWaveOpen(fcinfo, kind, mutate_arg + 2, 0);
		funcctx->user_fctx = stream;
		RegisterExprContextCallback(rsinfo->econtext, FrameStreamShutdown,
									PointerGetDatum(stream));
		MemoryContextSwitchTo(old);
	}
	funcctx = SRF_PERCALL_SETUP();
	stream = (FrameStream *) funcctx->user_fctx;
	if (stream->wave != NULL && FrameNextFromWave(stream->framer, stream->wave, &budget, &frame))
		SRF_RETURN_NEXT(funcctx,
						HeapTupleGetDatum(FrameTuple(funcctx->tuple_desc, kind, &frame)));
	UnregisterExprContextCallback(rsinfo->econtext, FrameStreamShutdown, PointerGetDatum(stream));
	FrameStreamShutdown(PointerGetDatum(stream));
	SRF_RETURN_DONE(funcctx);
}

/* 0.1.0's group_wave_frames_rows: a whole group wave as frames, one per call. */
Datum
group_wave_frames_rows(PG_FUNCTION_ARGS)
{
	return WaveFramesRows(fcinfo, FRAME_GROUP, 4);
}

/* 0.1.0's welcome_wave_frames_rows */
Datum
welcome_wave_frames_rows(PG_FUNCTION_ARGS)
{
	return WaveFramesRows(fcinfo, FRAME_WELCOME, 4);
}

/* 0.1.0's envelope_wave_frames_rows */
Datum
envelope_wave_frames_rows(PG_FUNCTION_ARGS)
{
	return WaveFramesRows(fcinfo, FRAME_ENVELOPE, 7);
}

/*
 * One page of a wave as frames: the page's rows (at most page_limit), as the
 * wave scan returns them, in frames of at most max_frame_bytes. With the
 * limit NULL, the whole wave one frame per call, as the scans stream rows.
 */
static Datum
WaveFramesPage(FunctionCallInfo fcinfo, FrameKind kind)
{
	bool		d14n = kind == FRAME_ENVELOPE;
	int			first = d14n ? 7 : 4;	/* page_limit, mutate_id, max_frame_bytes, source */
	int64		budget;
	uint64		mutate_id;
	int32		max_bytes;
	FrameWave  *wave;
	Framer	   *framer;
	Frame		frame;

	if (PG_ARGISNULL(first))
		return WaveFramesRows(fcinfo, kind, first + 1);
	budget = ArgGetPageLimit(fcinfo, first, d14n ? "row_limit" : "page_limit");
	mutate_id = FrameArgMutateId(fcinfo, first + 1, true);
	max_bytes = FrameArgMaxBytes(fcinfo, first + 2);
	InitMaterializedSRF(fcinfo, 0);
	wave = FrameWaveOpen(fcinfo, kind, first + 3, budget);
	framer = FramerBegin(kind, mutate_id, max_bytes);
	while (FrameNextFromWave(framer, wave, &budget, &frame))
		FramePut(fcinfo, kind, &frame);
	FramerEnd(framer);
	FrameWaveClose(wave);
	return (Datum) 0;
}

/* xip83.group_wave_scan(..., page_limit, mutate_id, max_frame_bytes, source) */
Datum
group_wave_frames(PG_FUNCTION_ARGS)
{
	return WaveFramesPage(fcinfo, FRAME_GROUP);
}

/* xip83.welcome_wave_scan(..., page_limit, mutate_id, max_frame_bytes, source) */
Datum
welcome_wave_frames(PG_FUNCTION_ARGS)
{
	return WaveFramesPage(fcinfo, FRAME_WELCOME);
}

/* xip83.envelope_wave_scan(..., row_limit, mutate_id, max_frame_bytes, source, blob_source) */
Datum
envelope_wave_frames(PG_FUNCTION_ARGS)
{
	return WaveFramesPage(fcinfo, FRAME_ENVELOPE);
}
