/*
 * live_notice.c: SQL functions that encode and decode the LiveNotice payload
 * of NOTIFY xip83_live, so consumers without our generated code can read a
 * notice with one query. The notifier's own encoding is in
 * src/feed/notifier.c.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/base64.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/pg_lsn.h"

#include "base/base.h"
#include "feed/feed.h"

PG_FUNCTION_INFO_V1(live_notice_encode);
PG_FUNCTION_INFO_V1(live_notice_decode);

static const char *const state_names[] = {"unspecified", "live", "stopping"};

/* Whether the notifier sends this state: LIVE or STOPPING, never UNSPECIFIED. */
static bool
StateIsSent(int state)
{
	return state == XIP83__V1__LIVE_NOTICE__STATE__STATE_LIVE ||
		state == XIP83__V1__LIVE_NOTICE__STATE__STATE_STOPPING;
}

/* Reads a non-negative bigint argument as a uint64 protobuf field. */
static uint64
GetPosition(FunctionCallInfo fcinfo, int argno, const char *name)
{
	int64		v;

	ArgRequire(fcinfo, argno, name);
	v = PG_GETARG_INT64(argno);
	if (v < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must not be negative", name)));
	return (uint64) v;
}

/*
 * live_notice_encode(epoch, state, tick, group_horizon, welcome_horizon,
 *                    originator_node_ids, originator_horizons
 *                    [, fence, timeline_id, system_identifier]) -> base64 text
 * (the last three: NULL or left out for none)
 */
Datum
live_notice_encode(PG_FUNCTION_ARGS)
{
	Xip83__V1__LiveNotice notice = XIP83__V1__LIVE_NOTICE__INIT;
	ArgArray	nodes;
	ArgArray	horizons;
	const char *state;
	int			s;

	notice.epoch = GetPosition(fcinfo, 0, "epoch");
	if (notice.epoch == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"epoch\" must be at least 1"),
				 errdetail("Every notifier epoch is; a notice without one is refused when decoded.")));
	ArgRequire(fcinfo, 1, "state");
	state = text_to_cstring(PG_GETARG_TEXT_PP(1));
	for (s = 0; s < (int) lengthof(state_names); s++)
		if (strcmp(state, state_names[s]) == 0)
			break;
	if (s == (int) lengthof(state_names) || !StateIsSent(s))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid live notice state \"%s\"", state),
				 errhint("Use \"live\" or \"stopping\".")));
	notice.state = s;
	notice.tick = GetPosition(fcinfo, 2, "tick");
	notice.group_horizon = GetPosition(fcinfo, 3, "group_horizon");
	notice.welcome_horizon = GetPosition(fcinfo, 4, "welcome_horizon");

	nodes = ArgGetArray(fcinfo, 5, "originator_node_ids", INT4OID);
	horizons = ArgGetArray(fcinfo, 6, "originator_horizons", INT8OID);
	ArgRequireSameLength(&nodes, &horizons);

	notice.n_originator_horizons = nodes.n;
	notice.originator_horizons = palloc0(sizeof(void *) * (nodes.n + 1));
	for (int i = 0; i < nodes.n; i++)
	{
		Xip83__V1__OriginatorHorizon *oh = palloc(sizeof(*oh));

		xip83__v1__originator_horizon__init(oh);
		if (DatumGetInt32(nodes.values[i]) < 0 || DatumGetInt64(horizons.values[i]) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("originator node ids and horizons must not be negative"),
					 errdetail("Element %d is negative.", i + 1)));
		oh->originator_node_id = DatumGetInt32(nodes.values[i]);
		oh->horizon = DatumGetInt64(horizons.values[i]);
		notice.originator_horizons[i] = oh;
	}
	if (PG_NARGS() > 7 && !PG_ARGISNULL(7))
		notice.fence_lsn = PG_GETARG_LSN(7);
	if (PG_NARGS() > 8 && !PG_ARGISNULL(8))
	{
		if (PG_GETARG_INT32(8) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"timeline_id\" must not be negative")));
		notice.timeline_id = (uint32) PG_GETARG_INT32(8);
	}
	if (PG_NARGS() > 9 && !PG_ARGISNULL(9))
		notice.system_identifier = (uint64) PG_GETARG_INT64(9);
	PG_RETURN_TEXT_P(cstring_to_text(LiveNoticeToBase64(&notice)));
}

/* A uint64 field as bigint; nothing we send exceeds it, so more is corruption. */
static Datum
PositionDatum(uint64 v, const char *field)
{
	if (v > (uint64) PG_INT64_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("live notice field \"%s\" is out of range for bigint", field)));
	return Int64GetDatum((int64) v);
}

/*
 * The notice in a payload argument, refusing anything the notifier could not
 * have sent (22P02).
 */
static Xip83__V1__LiveNotice *
NoticeArg(FunctionCallInfo fcinfo)
{
	text	   *payload;
	int			b64len;
	char	   *raw;
	int			rawlen;
	Xip83__V1__LiveNotice *notice;

	ArgRequire(fcinfo, 0, "payload");
	payload = PG_GETARG_TEXT_PP(0);
	b64len = VARSIZE_ANY_EXHDR(payload);
	raw = palloc(pg_b64_dec_len(b64len) + 1);
	rawlen = pg_b64_decode(VARDATA_ANY(payload), b64len, (void *) raw,
						   pg_b64_dec_len(b64len) + 1);
	if (rawlen < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("live notice payload is not valid base64")));
	if (rawlen == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("live notice payload is empty"),
				 errdetail("Every notice carries at least an epoch and a state.")));
	notice = xip83__v1__live_notice__unpack(PbAllocator(), rawlen, (uint8_t *) raw);
	if (notice == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("live notice payload is not a valid LiveNotice message")));
	/* a well-formed message the notifier never sends is no notice either */
	if (notice->epoch == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("live notice payload is not a notice the notifier sends"),
				 errdetail("It has no epoch.")));
	if (!StateIsSent(notice->state))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("live notice payload is not a notice the notifier sends"),
				 errdetail("Its state %d is neither live (1) nor stopping (2).",
						   (int) notice->state)));
	return notice;
}

/* The composite type a decoding function is declared to return. */
static TupleDesc
ResultType(FunctionCallInfo fcinfo)
{
	TupleDesc	tupdesc;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("function returning record called in context that cannot accept type record")));
	return tupdesc;
}

/*
 * live_notice_decode(payload text) -> (epoch, state, tick, group_horizon,
 *     welcome_horizon, originator_node_ids int[], originator_horizons bigint[],
 *     fence pg_lsn, timeline_id int, system_identifier bigint)
 */
Datum
live_notice_decode(PG_FUNCTION_ARGS)
{
	Xip83__V1__LiveNotice *notice = NoticeArg(fcinfo);
	TupleDesc	tupdesc = ResultType(fcinfo);
	Datum		values[10];
	bool		nulls[10] = {false};
	Datum	   *nodes;
	Datum	   *horizons;

	nodes = palloc(sizeof(Datum) * (notice->n_originator_horizons + 1));
	horizons = palloc(sizeof(Datum) * (notice->n_originator_horizons + 1));
	for (size_t i = 0; i < notice->n_originator_horizons; i++)
	{
		uint32		node = notice->originator_horizons[i]->originator_node_id;

		if (node > (uint32) PG_INT32_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("live notice originator node id %u is out of range for integer",
							node)));
		nodes[i] = Int32GetDatum((int32) node);
		horizons[i] = PositionDatum(notice->originator_horizons[i]->horizon,
									"originator_horizons.horizon");
	}

	values[0] = PositionDatum(notice->epoch, "epoch");
	values[1] = CStringGetTextDatum(state_names[notice->state]);
	values[2] = PositionDatum(notice->tick, "tick");
	values[3] = PositionDatum(notice->group_horizon, "group_horizon");
	values[4] = PositionDatum(notice->welcome_horizon, "welcome_horizon");
	values[5] = PointerGetDatum(construct_array(nodes, notice->n_originator_horizons,
												INT4OID, sizeof(int32), true,
												TYPALIGN_INT));
	values[6] = PointerGetDatum(construct_array(horizons, notice->n_originator_horizons,
												INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
												TYPALIGN_DOUBLE));
	/* the fence: NULLs for a notice without one (from 0.1.0's notifier) */
	if (notice->fence_lsn == 0)
		nulls[7] = nulls[8] = nulls[9] = true;
	values[7] = LSNGetDatum((XLogRecPtr) notice->fence_lsn);
	values[8] = Int32GetDatum((int32) Min(notice->timeline_id, (uint32) PG_INT32_MAX));
	values[9] = Int64GetDatum((int64) notice->system_identifier);
	xip83__v1__live_notice__free_unpacked(notice, PbAllocator());

	/* 0.1.0's signature, still installed until an update, has no fence columns */
	Assert(tupdesc->natts == 7 || tupdesc->natts == 10);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
