/*
 * horizons.c: the SQL functions that read horizons and the state of a feed:
 * group_horizon, welcome_horizon, envelope_horizons, late_cursor,
 * horizon_fence, feed_status and tracked_status; and require_preload, which
 * the install script calls.
 *
 * Reading a horizon has no side effect below this layer; these entry points
 * are where a read starts the database's notifier, so that a consumer that
 * polls horizons gets notices too. The computing is in src/core
 * (horizons.c), the snapshot and feed resolution in src/feed (horizon.c).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/pg_lsn.h"
#include "utils/regproc.h"
#include "utils/timestamp.h"

#include "base/base.h"
#include "core/core.h"
#include "rel/rel.h"
#include "feed/feed.h"

PG_FUNCTION_INFO_V1(group_horizon);
PG_FUNCTION_INFO_V1(welcome_horizon);
PG_FUNCTION_INFO_V1(envelope_horizons);
PG_FUNCTION_INFO_V1(late_cursor);
PG_FUNCTION_INFO_V1(horizon_fence);
PG_FUNCTION_INFO_V1(feed_status);
PG_FUNCTION_INFO_V1(tracked_status);
PG_FUNCTION_INFO_V1(require_preload);

/*
 * Called by CREATE EXTENSION before anything is created: without the library
 * preloaded the install would succeed and the first horizon, live fetch or
 * track would fail later, far from the cause.
 */
Datum
require_preload(PG_FUNCTION_ARGS)
{
	if (!RegistryReady())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("xip83 must be loaded at server start"),
				 errdetail("Its horizons, live feed and tracked tables live in shared memory, which only a library in shared_preload_libraries can have."),
				 errhint("Add xip83 to shared_preload_libraries in postgresql.conf, restart the server, then run CREATE EXTENSION xip83 again.")));
	PG_RETURN_VOID();
}

/* A feed's originators and their horizons as two arrays, by node id. */
static void
OriginatorArrays(const HorizonSet *set, Datum *nodes_out, Datum *horizons_out)
{
	Datum	   *nodes = palloc(sizeof(Datum) * (set->n_originators + 1));
	Datum	   *horizons = palloc(sizeof(Datum) * (set->n_originators + 1));

	for (int i = 0; i < set->n_originators; i++)
	{
		nodes[i] = Int32GetDatum(set->originator_node_ids[i]);
		horizons[i] = Int64GetDatum(set->originator_horizons[i]);
	}
	*nodes_out = PointerGetDatum(construct_array(nodes, set->n_originators, INT4OID,
												 sizeof(int32), true, TYPALIGN_INT));
	*horizons_out = PointerGetDatum(construct_array(horizons, set->n_originators, INT8OID,
													sizeof(int64), FLOAT8PASSBYVAL,
													TYPALIGN_DOUBLE));
}

/*
 * Who holds a feed's horizons, as a status row shows it: v3[0] the group
 * line, v3[1] the welcome line; positions (bigint[]) and pids (int[]) follow
 * set's originators, NULL where nothing holds one.
 */
static void
HoldRow(RegistryDb *db, const HorizonSet *set, RegistryHold *v3, Datum *positions, Datum *pids)
{
	int			nlines = RegistryLineCount(db);
	int			size = Max(nlines, LINE_FIRST_ORIGINATOR);
	RegistryHold *hold = palloc0(sizeof(RegistryHold) * size);
	int			n = set->n_originators;
	Datum	   *pos = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *pid = palloc(sizeof(Datum) * Max(n, 1));
	bool	   *none = palloc(sizeof(bool) * Max(n, 1));
	int			dims[1] = {n};
	int			lbs[1] = {1};

	RegistryInFlight(db, nlines, hold);
	v3[0] = hold[LINE_GROUP];
	v3[1] = hold[LINE_WELCOME];
	for (int i = 0; i < n; i++)
	{
		int			line = -1;

		for (int l = LINE_FIRST_ORIGINATOR; l < nlines && line < 0; l++)
			if (RegistryLineNode(db, l) == set->originator_node_ids[i])
				line = l;
		none[i] = line < 0 || hold[line].pid == 0;
		pos[i] = Int64GetDatum(none[i] ? 0 : hold[line].position);
		pid[i] = Int32GetDatum(none[i] ? 0 : hold[line].pid);
	}
	*positions = PointerGetDatum(construct_md_array(pos, none, 1, dims, lbs, INT8OID, sizeof(int64),
													FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	*pids = PointerGetDatum(construct_md_array(pid, none, 1, dims, lbs, INT4OID, sizeof(int32),
											   true, TYPALIGN_INT));
}

/* xip83.group_horizon(source): every group message id at or below it is committed or never will be. */
Datum
group_horizon(PG_FUNCTION_ARGS)
{
	RegistryDb *db = HorizonFeedArg(fcinfo, 0, KIND_GROUP);

	NotifierEnsureRunning();
	PG_RETURN_INT64(HorizonOfLine(db, LINE_GROUP));
}

/* xip83.welcome_horizon(source): the same for welcome ids. */
Datum
welcome_horizon(PG_FUNCTION_ARGS)
{
	RegistryDb *db = HorizonFeedArg(fcinfo, 0, KIND_WELCOME);

	NotifierEnsureRunning();
	PG_RETURN_INT64(HorizonOfLine(db, LINE_WELCOME));
}

/* xip83.envelope_horizons(source): one row per originator known to the registry, by node id. */
Datum
envelope_horizons(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	RegistryDb *db = HorizonFeedArg(fcinfo, 0, KIND_ENVELOPE);
	HorizonSet	set;

	NotifierEnsureRunning();
	HorizonCollectFeed(db, &set);
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < set.n_originators; i++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};

		values[0] = Int32GetDatum(set.originator_node_ids[i]);
		values[1] = Int64GetDatum(set.originator_horizons[i]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * xip83.late_cursor(source DEFAULT NULL): the newest entry of a feed's late
 * ring (NULL: xip83's own tables), the late cursor a consumer that starts
 * "from now" passes to its first live fetch.
 */
Datum
late_cursor(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_NARGS() > 0 && !PG_ARGISNULL(0) ? PG_GETARG_OID(0) : InvalidOid;

	PG_RETURN_INT64((int64) HorizonLateStart(HorizonLateFeed(relid)));
}

/* The kind a source is followed as: xip83's own table of it, or its tracked kind; -1: none. */
static int
KindOfSource(Oid relid)
{
	TrackedSource t;

	for (int k = 0; k < 3; k++)
		if (HorizonCoversTable(relid, RegistryKindTable[k]))
			return k;
	if (TrackedFind(relid, &t) && t.source == relid)
		return (int) t.kind;
	return -1;
}

/*
 * xip83.horizon_fence(source) -> (horizon, originator_node_ids,
 * originator_horizons, fence, timeline_id, system_identifier): the horizons of
 * a feed and, read right after them, the WAL position a standby must have
 * replayed to see every row at or below them.
 */
Datum
horizon_fence(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[6];
	bool		nulls[6] = {false};
	int			kind;
	RegistryDb *db;
	HorizonSet	set;
	Fence		fence;

	ArgRequire(fcinfo, 0, "source");
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("horizon_fence must be declared to return a composite type")));
	kind = KindOfSource(PG_GETARG_OID(0));
	db = HorizonFeedArg(fcinfo, 0, kind < 0 ? KIND_GROUP : (PositionKind) kind);
	NotifierEnsureRunning();
	HorizonCollectFeed(db, &set);
	fence = StandbyFenceOf(db);

	nulls[0] = kind == KIND_ENVELOPE;
	values[0] = Int64GetDatum(kind == KIND_WELCOME ? set.welcome : set.group);
	nulls[1] = nulls[2] = kind != KIND_ENVELOPE;
	OriginatorArrays(&set, &values[1], &values[2]);
	values[3] = LSNGetDatum(fence.lsn);
	values[4] = Int32GetDatum((int32) fence.timeline);
	values[5] = Int64GetDatum((int64) fence.system_identifier);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* Whether the caller may read an xip83 table (horizons are shown only then). */
static bool
CanRead(const char *table)
{
	Oid			relid = SourceOwnRelation(table);

	return OidIsValid(relid) && pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK;
}

/*
 * xip83.feed_status(): the notifier and horizons of the current database, one
 * row. A horizon is NULL unless the caller may SELECT from its table; so is
 * who holds it (the pid of the backend whose open transaction may still
 * write the lowest position in flight, and that position), as pg_locks shows
 * anyone which backend writes which table.
 */
/* What status shows of a summary's state; have false: none (off, or the feed not loaded). */
static const char *
SummaryStateName(bool have, SummaryState state)
{
	static const char *const names[] = {"waiting", "building", "ready", "waiting"};

	return have ? names[state] : "off";
}

/* Per kind of a feed: the summary's state, rows its pass read, its last pass's ms. */
static void
SummaryArrays(const RegistryDb *db, Datum *states, Datum *rows, Datum *ms)
{
	Datum		s[3],
				r[3],
				m[3];

	for (int k = 0; k < 3; k++)
	{
		SummaryState state = SUMMARY_EMPTY;
		int64		nrows = 0,
					pass_ms = 0;
		bool		have = SummaryStatsOf(db, (PositionKind) k, &state, &nrows, &pass_ms);

		s[k] = CStringGetTextDatum(SummaryStateName(have, state));
		r[k] = Int64GetDatum(nrows);
		m[k] = Int64GetDatum(pass_ms);
	}
	*states = PointerGetDatum(construct_array(s, 3, TEXTOID, -1, false, TYPALIGN_INT));
	*rows = PointerGetDatum(construct_array(r, 3, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	*ms = PointerGetDatum(construct_array(m, 3, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

Datum
feed_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	HorizonSet	h;
	NotifierStatus copy;
	Datum		values[30];
	bool		nulls[30] = {false};
	RegistryHold v3[2];
	int64		low[3];
	int64		used[3];
	bool		have_recent;
	static const char *const states[] = {"stopped", "live", "stopping"};

	HorizonRequirePreload();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "feed_status must return a composite type");
	NotifierEnsureRunning();
	HorizonCollect(&h);
	NotifierStatusOf(&copy);

	values[0] = Int64GetDatum(h.group);
	nulls[0] = !CanRead("group_messages");
	values[1] = Int64GetDatum(h.welcome);
	nulls[1] = !CanRead("welcome_messages");
	OriginatorArrays(&h, &values[2], &values[3]);
	nulls[2] = nulls[3] = !CanRead("envelopes");
	values[4] = Int32GetDatum(copy.pid);
	nulls[4] = copy.pid == 0;
	values[5] = Int64GetDatum((int64) copy.epoch);
	nulls[5] = copy.epoch == 0;
	values[6] = CStringGetTextDatum(copy.pid == 0 ? "stopped"
									: states[Min(copy.state, 2)]);
	values[7] = Int64GetDatum((int64) copy.ticks);
	values[8] = TimestampTzGetDatum(copy.last_notice_at);
	nulls[8] = copy.last_notice_at == 0;
	values[9] = BoolGetDatum(copy.start_requested_at != 0 && copy.pid == 0);
	values[10] = Int64GetDatum((int64) h.late_writes);
	values[11] = Int64GetDatum((int64) h.late_head);
	values[12] = Int32GetDatum(xip83_late_ring_size);
	/* per kind: the recent-writes table's low-water position and entries in use */
	have_recent = RecentStatsMine(low, used);
	for (int k = 0; k < 3; k++)
	{
		values[13 + 2 * k] = Int64GetDatum(have_recent ? low[k] : 0);
		values[14 + 2 * k] = Int64GetDatum(have_recent ? used[k] : 0);
		nulls[13 + 2 * k] = nulls[14 + 2 * k] = !have_recent || !CanRead(RegistryKindTable[k]);
	}
	values[19] = Int32GetDatum(xip83_recent_entries);
	/* who holds each horizon, shown to the same roles as the horizon itself */
	HoldRow(RegistryAttach(), &h, v3, &values[24], &values[25]);
	for (int k = 0; k < 2; k++)
	{
		values[20 + 2 * k] = Int64GetDatum(v3[k].position);
		values[21 + 2 * k] = Int32GetDatum(v3[k].pid);
		nulls[20 + 2 * k] = nulls[21 + 2 * k] = nulls[k] || v3[k].pid == 0;
	}
	nulls[24] = nulls[25] = nulls[2];
	SummaryArrays(RegistryLookupMine(), &values[26], &values[27], &values[28]);
	values[29] = Int32GetDatum(xip83_summary_kb);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * xip83.tracked_status(source): one row about a tracked table's feed, NULL
 * where the caller may not read the table: its horizon (v3) or originators'
 * horizons (envelopes), positions registered and late writes committed since
 * the feed was loaded, its late cursor, and its recent-writes table's
 * low-water position and entries in use, and who holds the horizon (the
 * lowest position an open transaction may still write, and its backend's
 * pid). Reading it publishes horizons, as reading any horizon does.
 */
Datum
tracked_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[15];
	bool		nulls[15] = {false};
	RegistryHold v3[2];
	TrackedSource t;
	RegistryDb *db;
	HorizonSet	h;
	int64		low[3];
	int64		used[3];

	RegistryRequirePreload();
	ArgRequire(fcinfo, 0, "source");
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "tracked_status must return a composite type");
	if (!TrackedFind(PG_GETARG_OID(0), &t) || t.source != PG_GETARG_OID(0))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table %s is not tracked",
						DatumGetCString(DirectFunctionCall1(regclassout, PG_GETARG_DATUM(0))))));
	if (pg_class_aclcheck(t.source, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
	{
		memset(nulls, true, sizeof(nulls));
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
	}
	db = RegistryAttachFeed(t.source);
	HorizonCollectFeed(db, &h);
	values[0] = Int64GetDatum(t.kind == KIND_GROUP ? h.group : h.welcome);
	nulls[0] = t.kind == KIND_ENVELOPE;
	OriginatorArrays(&h, &values[1], &values[2]);
	nulls[1] = nulls[2] = t.kind != KIND_ENVELOPE;
	values[3] = Int64GetDatum((int64) RegistryFeedRegistered(db));
	values[4] = Int64GetDatum((int64) h.late_writes);
	values[5] = Int64GetDatum((int64) h.late_head);
	if (RecentStatsOf(db, low, used))
	{
		values[6] = Int64GetDatum(low[t.kind]);
		values[7] = Int64GetDatum(used[t.kind]);
	}
	else
		nulls[6] = nulls[7] = true;
	HoldRow(db, &h, v3, &values[10], &values[11]);
	values[8] = Int64GetDatum(v3[t.kind == KIND_WELCOME].position);
	values[9] = Int32GetDatum(v3[t.kind == KIND_WELCOME].pid);
	nulls[8] = nulls[9] = t.kind == KIND_ENVELOPE || v3[t.kind == KIND_WELCOME].pid == 0;
	nulls[10] = nulls[11] = t.kind != KIND_ENVELOPE;
	{
		SummaryState state;
		int64		rows = 0,
					ms = 0;
		bool		have = SummaryStatsOf(db, t.kind, &state, &rows, &ms);

		values[12] = CStringGetTextDatum(SummaryStateName(have, state));
		values[13] = Int64GetDatum(rows);
		values[14] = Int64GetDatum(ms);
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
