/*
 * writes.c: the SQL functions of the write path: the id defaults
 * (next_group_id, next_welcome_id, next_id), the triggers register_position
 * and reset_positions, and xip83.track / xip83.untrack. What they do is in
 * src/feed (positions.c, track.c); here the arguments are read.
 */
#include "postgres.h"

#include "commands/trigger.h"
#include "fmgr.h"

#include "base/base.h"
#include "core/core.h"
#include "feed/feed.h"

PG_FUNCTION_INFO_V1(next_group_id);
PG_FUNCTION_INFO_V1(next_welcome_id);
PG_FUNCTION_INFO_V1(next_id);
PG_FUNCTION_INFO_V1(register_position);
PG_FUNCTION_INFO_V1(reset_positions);
PG_FUNCTION_INFO_V1(xip83_track);
PG_FUNCTION_INFO_V1(xip83_untrack);

/* xip83.next_group_id(seq regclass): the id default of xip83.group_messages. */
Datum
next_group_id(PG_FUNCTION_ARGS)
{
	ArgRequire(fcinfo, 0, "seq");
	PG_RETURN_INT64(PositionsNextOwnId(KIND_GROUP, PG_GETARG_OID(0)));
}

/* xip83.next_welcome_id(seq regclass): the id default of xip83.welcome_messages. */
Datum
next_welcome_id(PG_FUNCTION_ARGS)
{
	ArgRequire(fcinfo, 0, "seq");
	PG_RETURN_INT64(PositionsNextOwnId(KIND_WELCOME, PG_GETARG_OID(0)));
}

/*
 * xip83.next_id(source regclass): the id default xip83.track gives a tracked
 * v3 table. Draws from the sequence the table's default used before (which
 * needs USAGE or UPDATE on it, as nextval does).
 */
Datum
next_id(PG_FUNCTION_ARGS)
{
	ArgRequire(fcinfo, 0, "source");
	PG_RETURN_INT64(PositionsNextTrackedId(PG_GETARG_OID(0)));
}

/*
 * register_position(): BEFORE INSERT OR UPDATE row trigger of the xip83
 * tables, and BEFORE UPDATE trigger of tracked tables (whose inserts the
 * tracking index registers). Notes the row's topic and position for waves,
 * then registers the position: ids from the default are already pinned (no
 * lock); explicit ones below the pin are checked against the published
 * horizon, and late ones go into the late ring. An UPDATE that sets no
 * position column (a row moved to another topic) is only noted.
 */
Datum
register_position(PG_FUNCTION_ARGS)
{
	return PointerGetDatum(PositionsOnRow(CALLED_AS_TRIGGER(fcinfo)
										  ? (TriggerData *) fcinfo->context : NULL));
}

/*
 * reset_positions(): AFTER TRUNCATE trigger of the xip83 tables and tracked
 * tables. When the TRUNCATE commits, the table's lines start over at 0
 * (TRUNCATE ... RESTART IDENTITY reuses ids, so live consumers must reset
 * their cursors too).
 */
Datum
reset_positions(PG_FUNCTION_ARGS)
{
	PositionsOnTruncate(CALLED_AS_TRIGGER(fcinfo) ? (TriggerData *) fcinfo->context : NULL);
	return PointerGetDatum(NULL);
}

/*
 * xip83.track(source regclass, kind text, blob_source regclass DEFAULT NULL):
 * makes a node's table a feed of its own (src/feed/track.c).
 */
Datum
xip83_track(PG_FUNCTION_ARGS)
{
	RegistryRequirePreload();
	ArgRequire(fcinfo, 0, "source");
	ArgRequire(fcinfo, 1, "kind");
	TrackTable(PG_GETARG_OID(0), PG_GETARG_TEXT_PP(1), PG_ARGISNULL(2) ? InvalidOid : PG_GETARG_OID(2));
	PG_RETURN_VOID();
}

/* xip83.untrack(source regclass): restores what track changed. */
Datum
xip83_untrack(PG_FUNCTION_ARGS)
{
	RegistryRequirePreload();
	ArgRequire(fcinfo, 0, "source");
	UntrackTable(PG_GETARG_OID(0));
	PG_RETURN_VOID();
}
