/*
 * frames_live.c: the live lane as ready-to-send frames, tagged mutate_id 0:
 * the rows of xip83.live_group_messages, live_welcome_messages and
 * live_envelopes (same arguments, same horizon and snapshot rules) encoded
 * as the wave frames are (frames.c).
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

#include "args.h"
#include "frames.h"

PG_FUNCTION_INFO_V1(live_group_frames);
PG_FUNCTION_INFO_V1(live_welcome_frames);
PG_FUNCTION_INFO_V1(live_envelope_frames);

/*
 * Runs `sql` (the live fetch, with the function's first nargs arguments as
 * $1..$n) and returns its rows as frames of at most max_frame_bytes
 * (argument nargs).
 */
static Datum
LiveFrames(FunctionCallInfo fcinfo, FrameKind kind, const char *sql, int nargs,
		   const Oid *argtypes)
{
	int32		max_bytes = FrameArgMaxBytes(fcinfo, nargs);
	Datum		args[3];
	Framer	   *framer;
	Frame		frame;
	int			rc;

	for (int i = 0; i < nargs; i++)
		args[i] = PG_GETARG_DATUM(i);	/* the live fetch checks them, NULLs included */
	InitMaterializedSRF(fcinfo, 0);
	framer = FramerBegin(kind, 0, max_bytes);
	SPI_connect();
	{
		char		nulls[3];

		for (int i = 0; i < nargs; i++)
			nulls[i] = PG_ARGISNULL(i) ? 'n' : ' ';
		rc = SPI_execute_with_args(sql, nargs, (Oid *) argtypes, args, nulls, false, 0);
	}
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "live fetch failed: %s", SPI_result_code_string(rc));
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		Datum		values[8];
		bool		isnull[8];

		heap_deform_tuple(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, values, isnull);
		if (FramerAdd(framer, values, isnull, &frame))
			FramePut(fcinfo, kind, &frame);
	}
	if (FramerFinish(framer, &frame))
		FramePut(fcinfo, kind, &frame);
	SPI_finish();
	FramerEnd(framer);
	return (Datum) 0;
}

/* xip83.live_group_frames(after_id, row_limit, max_frame_bytes) */
Datum
live_group_frames(PG_FUNCTION_ARGS)
{
	static const Oid types[] = {INT8OID, INT4OID};

	return LiveFrames(fcinfo, FRAME_GROUP,
					  "SELECT * FROM xip83.live_group_messages($1, $2)", 2, types);
}

/* xip83.live_welcome_frames(after_id, row_limit, max_frame_bytes) */
Datum
live_welcome_frames(PG_FUNCTION_ARGS)
{
	static const Oid types[] = {INT8OID, INT4OID};

	return LiveFrames(fcinfo, FRAME_WELCOME,
					  "SELECT * FROM xip83.live_welcome_messages($1, $2)", 2, types);
}

/* xip83.live_envelope_frames(node_ids, after_sequence_ids, row_limit, max_frame_bytes) */
Datum
live_envelope_frames(PG_FUNCTION_ARGS)
{
	static const Oid types[] = {INT4ARRAYOID, INT8ARRAYOID, INT4OID};

	return LiveFrames(fcinfo, FRAME_ENVELOPE,
					  "SELECT * FROM xip83.live_envelopes($1, $2, $3)", 3, types);
}
