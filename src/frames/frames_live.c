/*
 * frames_live.c: the live lane as ready-to-send frames, tagged mutate_id 0
 * (xip83.live_frames, by kind): the rows of xip83.live_group_messages,
 * live_welcome_messages and live_envelopes (same arguments, same horizon, snapshot and late-lane rules)
 * encoded as the wave frames are (frames.c), in the order the live fetch
 * returns them (late rows first).
 *
 * Each frame comes with what the consumer advances by: the late cursor of its
 * last row, and the highest position it carries (v3: the highest id; d14n:
 * per originator in the frame, the highest sequence id), since late rows put
 * lower positions after higher ones.
 *
 * The rows are read through SPI with the live fetch functions themselves, so
 * a live frame carries exactly what the live fetch returns, with its
 * privilege checks; a page is bounded by row_limit (xip83.max_page_limit).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/tuplestore.h"

#include "base/base.h"
#include "frames.h"

PG_FUNCTION_INFO_V1(live_frames);
PG_FUNCTION_INFO_V1(live_frames_d14n);
/* 0.1.0's per-kind functions: a 0.1.0 install (the start of every update) names them */
PG_FUNCTION_INFO_V1(live_group_frames);
PG_FUNCTION_INFO_V1(live_welcome_frames);
PG_FUNCTION_INFO_V1(live_envelope_frames);

/* The live fetch's late_cursor column, after the kind's columns. */
#define LATE_CURSOR_GROUP		7
#define LATE_CURSOR_WELCOME		8
#define LATE_CURSOR_ENVELOPE	5

/* What a frame's rows advance a consumer by. */
typedef struct LiveAdvance
{
	int64		late_cursor;
	int64		max_id;			/* v3 */
	int			n;				/* d14n: originators in the frame */
	int			cap;
	Datum	   *nodes;
	Datum	   *sequences;
} LiveAdvance;

/* Counts a row into the advance of the frame it is in. */
static void
AdvanceAdd(LiveAdvance *adv, FrameKind kind, int late_col, const Datum *values,
		   const bool *nulls)
{
	if (!nulls[late_col])
		adv->late_cursor = DatumGetInt64(values[late_col]);
	if (kind != FRAME_ENVELOPE)
		adv->max_id = Max(adv->max_id, DatumGetInt64(values[0]));
	else
	{
		int32		node = DatumGetInt32(values[0]);
		int64		seq = DatumGetInt64(values[1]);
		int			i;

		for (i = 0; i < adv->n; i++)
			if (DatumGetInt32(adv->nodes[i]) == node)
				break;
		if (i == adv->n)
		{
			if (adv->n == adv->cap)
			{
				adv->cap = Max(8, adv->cap * 2);
				adv->nodes = repalloc(adv->nodes, sizeof(Datum) * adv->cap);
				adv->sequences = repalloc(adv->sequences, sizeof(Datum) * adv->cap);
			}
			adv->nodes[i] = Int32GetDatum(node);
			adv->sequences[i] = Int64GetDatum(seq);
			adv->n++;
		}
		else if (seq > DatumGetInt64(adv->sequences[i]))
			adv->sequences[i] = Int64GetDatum(seq);
	}
}

/* Appends a live frame with its advance to the result, and starts a new advance. */
static void
PutLiveFrame(FunctionCallInfo fcinfo, FrameKind kind, Frame *frame, LiveAdvance *adv)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};
	int			i = 0;

	values[i++] = PointerGetDatum(frame->bytes);
	values[i++] = Int32GetDatum(frame->messages);
	if (kind == FRAME_ENVELOPE)
	{
		values[i++] = PointerGetDatum(construct_array(adv->nodes, adv->n, INT4OID, sizeof(int32),
													  true, TYPALIGN_INT));
		values[i++] = PointerGetDatum(construct_array(adv->sequences, adv->n, INT8OID,
													  sizeof(int64), FLOAT8PASSBYVAL,
													  TYPALIGN_DOUBLE));
	}
	else
		values[i++] = Int64GetDatum(adv->max_id);
	values[i++] = Int64GetDatum(adv->late_cursor);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	pfree(frame->bytes);
	adv->max_id = PG_INT64_MIN;
	adv->n = 0;
}

/*
 * Runs `sql` (the live fetch, with the function's nargs arguments from
 * `first` on as $1..$n) and returns its rows as frames of at most
 * max_frame_bytes (the argument after them).
 */
static Datum
LiveFrames(FunctionCallInfo fcinfo, FrameKind kind, const char *sql, int first, int nargs,
		   const Oid *argtypes, int late_col)
{
	int32		max_bytes = FrameArgMaxBytes(fcinfo, first + nargs);
	Datum		args[4];
	char		nulls[4];
	LiveAdvance adv = {0};
	Framer	   *framer;
	Frame		frame;
	int			rc;

	for (int i = 0; i < nargs; i++)
	{
		/* the live fetch checks them, NULLs included */
		args[i] = PG_GETARG_DATUM(first + i);
		nulls[i] = PG_ARGISNULL(first + i) ? 'n' : ' ';
	}
	InitMaterializedSRF(fcinfo, 0);
	framer = FramerBegin(kind, 0, max_bytes);
	adv.max_id = PG_INT64_MIN;
	adv.cap = 8;
	adv.nodes = palloc(sizeof(Datum) * adv.cap);
	adv.sequences = palloc(sizeof(Datum) * adv.cap);
	SPI_connect();
	rc = SPI_execute_with_args(sql, nargs, (Oid *) argtypes, args, nulls, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "live fetch failed: %s", SPI_result_code_string(rc));
	if (SPI_tuptable->tupdesc->natts <= late_col)
		elog(ERROR, "live fetch returned %d columns", SPI_tuptable->tupdesc->natts);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		Datum		values[LATE_CURSOR_WELCOME + 1];
		bool		isnull[LATE_CURSOR_WELCOME + 1];

		heap_deform_tuple(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, values, isnull);
		if (FramerAdd(framer, values, isnull, &frame))
			PutLiveFrame(fcinfo, kind, &frame, &adv);
		AdvanceAdd(&adv, kind, late_col, values, isnull);
	}
	if (FramerFinish(framer, &frame))
		PutLiveFrame(fcinfo, kind, &frame, &adv);
	SPI_finish();
	FramerEnd(framer);
	return (Datum) 0;
}

/* The live frames of `kind`, its live fetch's arguments from `first` on. */
static Datum
LiveFramesOf(FunctionCallInfo fcinfo, FrameKind kind, int first)
{
	static const Oid v3_types[] = {INT8OID, INT4OID, INT8OID};
	static const Oid d14n_types[] = {INT4ARRAYOID, INT8ARRAYOID, INT4OID, INT8OID};

	switch (kind)
	{
		case FRAME_GROUP:
			return LiveFrames(fcinfo, kind, "SELECT * FROM xip83.live_group_messages($1, $2, $3)",
							  first, 3, v3_types, LATE_CURSOR_GROUP);
		case FRAME_WELCOME:
			return LiveFrames(fcinfo, kind, "SELECT * FROM xip83.live_welcome_messages($1, $2, $3)",
							  first, 3, v3_types, LATE_CURSOR_WELCOME);
		case FRAME_ENVELOPE:
			break;
	}
	return LiveFrames(fcinfo, kind, "SELECT * FROM xip83.live_envelopes($1, $2, $3, $4)",
					  first, 4, d14n_types, LATE_CURSOR_ENVELOPE);
}

/* xip83.live_frames(kind, after_id, row_limit, late_after, max_frame_bytes) */
Datum
live_frames(PG_FUNCTION_ARGS)
{
	return LiveFramesOf(fcinfo, FrameArgKind(fcinfo, 0, false), 1);
}

/*
 * xip83.live_frames('envelope', node_ids, after_sequence_ids, row_limit,
 *                   late_after, max_frame_bytes)
 */
Datum
live_frames_d14n(PG_FUNCTION_ARGS)
{
	return LiveFramesOf(fcinfo, FrameArgKind(fcinfo, 0, true), 1);
}

/* 0.1.0's live_group_frames(after_id, row_limit, late_after, max_frame_bytes) */
Datum
live_group_frames(PG_FUNCTION_ARGS)
{
	return LiveFramesOf(fcinfo, FRAME_GROUP, 0);
}

/* 0.1.0's live_welcome_frames(after_id, row_limit, late_after, max_frame_bytes) */
Datum
live_welcome_frames(PG_FUNCTION_ARGS)
{
	return LiveFramesOf(fcinfo, FRAME_WELCOME, 0);
}

/* 0.1.0's live_envelope_frames(node_ids, after_sequence_ids, row_limit, late_after, max_frame_bytes) */
Datum
live_envelope_frames(PG_FUNCTION_ARGS)
{
	return LiveFramesOf(fcinfo, FRAME_ENVELOPE, 0);
}
