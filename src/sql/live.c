/*
 * live.c (src/sql): the SQL functions of live fetch: live_group_messages,
 * live_welcome_messages and live_envelopes. A live read is where the
 * database's notifier is started, so that a consumer that polls gets
 * notices: after the feed is resolved and before the horizons are read, as
 * the horizon functions do. The reading itself is src/scan's (live.c).
 */
#include "postgres.h"

#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/pg_lsn.h"

#include "base/base.h"
#include "core/core.h"
#include "feed/feed.h"
#include "scan/scan.h"

PG_FUNCTION_INFO_V1(live_group_messages);
PG_FUNCTION_INFO_V1(live_welcome_messages);
PG_FUNCTION_INFO_V1(live_envelopes);

/*
 * Whether a fetch was given horizons to read up to (argument up_to_arg), after
 * waiting, on a standby, for replay to pass the fence they came with
 * (fence_arg). A standby cannot vouch for horizons without their fence (22023);
 * a server out of recovery refuses a fence beyond its own WAL (X83F1).
 */
static bool
LiveFetchFence(FunctionCallInfo fcinfo, int up_to_arg, int fence_arg)
{
	bool		up_to = PG_NARGS() > up_to_arg && !PG_ARGISNULL(up_to_arg);
	bool		fence = PG_NARGS() > fence_arg && !PG_ARGISNULL(fence_arg);

	if (!RecoveryInProgress())
	{
		if (fence)
			StandbyCheckFenceWritten(PG_GETARG_LSN(fence_arg));
		return up_to;
	}
	if (up_to && !fence)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("on a standby, up_to needs the fence it was read with"),
				 errdetail("Rows at or below a primary's horizon are visible here only once replay has passed its fence."),
				 errhint("Pass the fence xip83.horizon_fence() returned with the horizons, or leave up_to out to read up to this standby's own horizons.")));
	if (fence)
		StandbyWaitForFence(PG_GETARG_LSN(fence_arg));
	return up_to;
}

/*
 * One v3 kind: live_group_messages or live_welcome_messages(after_id,
 * row_limit, late_after, source, up_to, fence).
 */
static Datum
LiveMessages(FunctionCallInfo fcinfo, PositionKind kind)
{
	int64		after;
	int64		late_after;
	int			limit;
	RegistryDb *feed;
	bool		up_to_given;

	ArgRequire(fcinfo, 0, "after_id");
	ArgRequire(fcinfo, 2, "late_after");
	after = PG_GETARG_INT64(0);
	limit = ArgGetPageLimit(fcinfo, 1, "row_limit");
	late_after = PG_GETARG_INT64(2);
	feed = HorizonFeedArg(fcinfo, 3, kind);
	NotifierEnsureRunning();
	up_to_given = LiveFetchFence(fcinfo, 4, 5);
	LiveFetchMessages(fcinfo, kind, feed, after, limit, late_after, up_to_given,
					  up_to_given ? PG_GETARG_INT64(4) : 0);
	return (Datum) 0;
}

/* xip83.live_group_messages(after_id, row_limit, late_after). */
Datum
live_group_messages(PG_FUNCTION_ARGS)
{
	return LiveMessages(fcinfo, KIND_GROUP);
}

/* xip83.live_welcome_messages(after_id, row_limit, late_after). */
Datum
live_welcome_messages(PG_FUNCTION_ARGS)
{
	return LiveMessages(fcinfo, KIND_WELCOME);
}

/*
 * xip83.live_envelopes(node_ids, after_sequence_ids, row_limit, late_after,
 * source, blob_source, up_to_sequence_ids, fence): late envelopes of listed
 * originators, then per listed originator envelopes in (after, its horizon].
 */
Datum
live_envelopes(PG_FUNCTION_ARGS)
{
	ArgArray	nodes = ArgGetArray(fcinfo, 0, "node_ids", INT4OID);
	ArgArray	afters = ArgGetArray(fcinfo, 1, "after_sequence_ids", INT8OID);
	ArgArray	up_tos = {0};
	int			limit;
	int64		late_after;
	RegistryDb *feed;
	Oid			blob;
	bool		given;

	ArgRequireSameLength(&nodes, &afters);
	if (PG_NARGS() > 6 && !PG_ARGISNULL(6))
	{
		up_tos = ArgGetArray(fcinfo, 6, "up_to_sequence_ids", INT8OID);
		ArgRequireSameLength(&nodes, &up_tos);
	}
	limit = ArgGetPageLimit(fcinfo, 2, "row_limit");
	ArgRequire(fcinfo, 3, "late_after");
	late_after = PG_GETARG_INT64(3);
	feed = HorizonFeedArg(fcinfo, 4, KIND_ENVELOPE);
	blob = PG_NARGS() > 5 && !PG_ARGISNULL(5) ? PG_GETARG_OID(5) : InvalidOid;
	LiveRequireFeedBlob(feed, blob);
	NotifierEnsureRunning();
	given = LiveFetchFence(fcinfo, 6, 7);
	LiveFetchEnvelopes(fcinfo, feed, blob, &nodes, &afters, given ? &up_tos : NULL, limit,
					   late_after);
	return (Datum) 0;
}
