/*
 * waves.c: the SQL functions that read a wave as rows: group_wave_scan,
 * welcome_wave_scan and envelope_wave_scan (a page, or with the limit NULL
 * the whole wave one row per call, what the *_wave_stream wrappers read),
 * and 0.1.0's *_wave_rows, which the 0.1.0 install script still names.
 *
 * Only the fmgr side is here: arguments, the tuplestore of a page, the
 * per-call state of a stream and the expression-context callback that
 * releases it when its reader stops early. The waves themselves are the
 * iterators of src/scan (WaveOpen, WaveRunBegin), which read the wave's
 * arguments from the fcinfo they are given.
 */
#include "postgres.h"

#include "executor/executor.h"
#include "funcapi.h"
#include "utils/tuplestore.h"

#include "base/base.h"
#include "rel/rel.h"
#include "scan/scan.h"
#include "entry.h"

PG_FUNCTION_INFO_V1(group_wave_scan);
PG_FUNCTION_INFO_V1(welcome_wave_scan);
PG_FUNCTION_INFO_V1(envelope_wave_scan);
/* 0.1.0's streams: a 0.1.0 install (the start of every update) names them */
PG_FUNCTION_INFO_V1(group_wave_rows);
PG_FUNCTION_INFO_V1(welcome_wave_rows);
PG_FUNCTION_INFO_V1(envelope_wave_rows);

/* One stateless page of a wave into the caller's tuplestore. */
static Datum
WaveScanPage(FunctionCallInfo fcinfo, const SourceSpec *spec)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int32		limit = ArgGetPageLimit(fcinfo, 4, "page_limit");
	Datum		values[8];
	bool		nulls[8];
	Wave	   *wave;

	Assert(spec->ncolumns <= lengthof(values));
	InitMaterializedSRF(fcinfo, 0);
	wave = WaveOpen(fcinfo, spec, 5, limit);
	while (WaveNext(wave, values, nulls))
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	WaveClose(wave);
	return (Datum) 0;
}

/* Releases a stream's wave when its query ends before the rows do. */
static void
WaveShutdown(Datum arg)
{
	WaveClose((Wave *) DatumGetPointer(arg));
}

/*
 * The first call of a value-per-call function returning rows of a wave (or
 * frames of one): checks the caller takes a set, sets up the call context and
 * its row type, and switches to multi_call_memory_ctx (*old: the context to
 * switch back to).
 */
FuncCallContext *
WaveRowsFirstCall(FunctionCallInfo fcinfo, MemoryContext *old)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	FuncCallContext *funcctx;
	TupleDesc	tupdesc;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-valued function called in context that cannot accept a set")));
	funcctx = SRF_FIRSTCALL_INIT();
	*old = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	funcctx->tuple_desc = BlessTupleDesc(tupdesc);
	return funcctx;
}

/*
 * The rows of a wave one per call, for a cursor (value-per-call SRF); the
 * source is argument source_arg.
 */
static Datum
WaveRows(FunctionCallInfo fcinfo, const SourceSpec *spec, int source_arg)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	FuncCallContext *funcctx;
	Wave	   *wave;
	Datum		values[8];
	bool		nulls[8];

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext old;

		funcctx = WaveRowsFirstCall(fcinfo, &old);
		/* the rows come over many calls: the wave keeps its snapshot registered */
		wave = WaveOpen(fcinfo, spec, source_arg, 0);
		funcctx->user_fctx = wave;
		RegisterExprContextCallback(rsinfo->econtext, WaveShutdown, PointerGetDatum(wave));
		MemoryContextSwitchTo(old);
	}
	funcctx = SRF_PERCALL_SETUP();
	wave = (Wave *) funcctx->user_fctx;
	if (WaveNext(wave, values, nulls))
		SRF_RETURN_NEXT(funcctx,
						HeapTupleGetDatum(heap_form_tuple(funcctx->tuple_desc, values, nulls)));
	UnregisterExprContextCallback(rsinfo->econtext, WaveShutdown, PointerGetDatum(wave));
	WaveClose(wave);
	SRF_RETURN_DONE(funcctx);
}

/*
 * A page, or with page_limit NULL the whole wave one row per call (what
 * *_wave_stream reads). Whether to stream is the caller's to say: a function
 * cannot tell a target list, where value-per-call streams, from FROM, where
 * the executor drains it into a tuplestore first.
 */
static Datum
WaveScan(FunctionCallInfo fcinfo, const SourceSpec *spec)
{
	if (PG_ARGISNULL(4))
		return WaveRows(fcinfo, spec, 5);
	return WaveScanPage(fcinfo, spec);
}

/* xip83.group_wave_scan: one page of a group-message wave, or all of it. */
Datum
group_wave_scan(PG_FUNCTION_ARGS)
{
	return WaveScan(fcinfo, &WaveV3GroupSource);
}

/* xip83.welcome_wave_scan: one page of a welcome wave, or all of it. */
Datum
welcome_wave_scan(PG_FUNCTION_ARGS)
{
	return WaveScan(fcinfo, &WaveV3WelcomeSource);
}

/*
 * 0.1.0's group_wave_rows and welcome_wave_rows (no page_limit argument). The
 * 0.1.0 install script names these symbols (CREATE EXTENSION ... VERSION
 * '0.1.0', where an update from it starts), and a 0.1.0 database calls them
 * until it is updated.
 */
Datum
group_wave_rows(PG_FUNCTION_ARGS)
{
	return WaveRows(fcinfo, &WaveV3GroupSource, 4);
}

Datum
welcome_wave_rows(PG_FUNCTION_ARGS)
{
	return WaveRows(fcinfo, &WaveV3WelcomeSource, 4);
}

/* Ends a stream's run when its query stops reading before the end. */
static void
WaveRunShutdown(Datum arg)
{
	WaveRun   **slot = (WaveRun **) DatumGetPointer(arg);

	if (*slot != NULL)
		WaveRunEnd(*slot);
	*slot = NULL;
}

/*
 * The whole wave past the scan cursor, one row per call: the pages
 * concatenated, the source at source_arg. In a target list
 * (envelope_wave_stream) it runs only as far as its reader fetches; the merge
 * carries over from call to call.
 */
static Datum
EnvelopeWaveRows(FunctionCallInfo fcinfo, int source_arg)
{
	FuncCallContext *funcctx;
	WaveRun   **run;
	Datum		values[5];
	bool		nulls[5];

	if (SRF_IS_FIRSTCALL())
	{
		ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
		MemoryContext old;

		funcctx = WaveRowsFirstCall(fcinfo, &old);
		run = palloc(sizeof(WaveRun *));
		*run = WaveRunBegin(fcinfo, -1, source_arg);
		funcctx->user_fctx = run;
		RegisterExprContextCallback(rsinfo->econtext, WaveRunShutdown, PointerGetDatum(run));
		MemoryContextSwitchTo(old);
	}
	funcctx = SRF_PERCALL_SETUP();
	run = (WaveRun **) funcctx->user_fctx;
	if (*run != NULL && WaveRunNext(*run, values, nulls))
		SRF_RETURN_NEXT(funcctx,
						HeapTupleGetDatum(heap_form_tuple(funcctx->tuple_desc, values, nulls)));
	/* the run's slot goes with multi_call_memory_ctx: no callback may see it after */
	UnregisterExprContextCallback(((ReturnSetInfo *) fcinfo->resultinfo)->econtext,
								  WaveRunShutdown, PointerGetDatum(run));
	WaveRunShutdown(PointerGetDatum(run));
	SRF_RETURN_DONE(funcctx);
}

/*
 * envelope_wave_scan(cursor_topics, cursor_node_ids, cursor_sequence_ids,
 *                    ceiling_node_ids, ceiling_sequence_ids, scan_node_id,
 *                    scan_sequence_id, row_limit, source, blob_source)
 * One page of a d14n wave (see the file header for the semantics), or with
 * row_limit NULL the whole wave one row per call: whether to stream is the
 * caller's to say, as a function cannot tell a target list from FROM.
 */
Datum
envelope_wave_scan(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int32		row_limit;
	WaveRun    *run;
	Datum		values[5];
	bool		nulls[5];

	if (PG_ARGISNULL(7))
		return EnvelopeWaveRows(fcinfo, 8);
	row_limit = ArgGetPageLimit(fcinfo, 7, "row_limit");

	InitMaterializedSRF(fcinfo, 0);
	run = WaveRunBegin(fcinfo, row_limit, 8);
	while (WaveRunNext(run, values, nulls))
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	WaveRunEnd(run);
	return (Datum) 0;
}

/*
 * 0.1.0's envelope_wave_rows (no row_limit argument): the 0.1.0 install
 * script names this symbol (CREATE EXTENSION ... VERSION '0.1.0', where an
 * update from it starts), and a 0.1.0 database calls it until it is updated.
 */
Datum
envelope_wave_rows(PG_FUNCTION_ARGS)
{
	return EnvelopeWaveRows(fcinfo, 7);
}
