/*
 * ceilings.c: the SQL functions that give the ceiling a wave may pin:
 * group_ceiling and welcome_ceiling (v3) and originator_ceilings (d14n). The
 * ceilings are computed by src/scan (ceilings.c, ceilings_d14n.c).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"

#include "base/base.h"
#include "scan/scan.h"

PG_FUNCTION_INFO_V1(group_ceiling);
PG_FUNCTION_INFO_V1(welcome_ceiling);
PG_FUNCTION_INFO_V1(originator_ceilings);

/* xip83.group_ceiling(source): the highest group-message id a wave may pin. */
Datum
group_ceiling(PG_FUNCTION_ARGS)
{
	ArgRequire(fcinfo, 0, "source");
	PG_RETURN_INT64(V3Ceiling(PG_GETARG_OID(0), KIND_GROUP));
}

/* xip83.welcome_ceiling(source): the highest welcome id a wave may pin. */
Datum
welcome_ceiling(PG_FUNCTION_ARGS)
{
	ArgRequire(fcinfo, 0, "source");
	PG_RETURN_INT64(V3Ceiling(PG_GETARG_OID(0), KIND_WELCOME));
}

/*
 * xip83.originator_ceilings(node_ids int[] DEFAULT NULL, source regclass):
 * one row per originator, the listed ones or every one present.
 */
Datum
originator_ceilings(PG_FUNCTION_ARGS)
{
	ArgArray	nodes = {0};

	if (!PG_ARGISNULL(0))
		nodes = ArgGetArray(fcinfo, 0, "node_ids", INT4OID);
	ArgRequire(fcinfo, 1, "source");
	InitMaterializedSRF(fcinfo, 0);
	OriginatorCeilings((ReturnSetInfo *) fcinfo->resultinfo, PG_GETARG_OID(1),
					   PG_ARGISNULL(0) ? NULL : &nodes);
	return (Datum) 0;
}
