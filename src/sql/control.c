/*
 * control.c: xip83.control_frame(kind, value, binding, topics), the node's
 * control frames as ready-to-send bytes, and 0.1.0's one function per frame
 * (frame_started, frame_topics_live, frame_catchup_complete, frame_ping,
 * frame_pong), which the 0.1.0 install script still names. The frames are
 * built by src/frames (frames_control.c); here the arguments are checked.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

#include "base/base.h"
#include "frames/frames.h"
#include "entry.h"

PG_FUNCTION_INFO_V1(control_frame);
/* 0.1.0's one function per frame: a 0.1.0 install (the start of every update) names them */
PG_FUNCTION_INFO_V1(frame_started);
PG_FUNCTION_INFO_V1(frame_topics_live);
PG_FUNCTION_INFO_V1(frame_catchup_complete);
PG_FUNCTION_INFO_V1(frame_ping);
PG_FUNCTION_INFO_V1(frame_pong);

/*
 * xip83.control_frame(kind, value, binding, topics): 'started' (value: the
 * keepalive interval in ms), 'topics_live' (topics, no value),
 * 'catchup_complete' (value: the Mutate's id), 'ping' and 'pong' (value: the
 * nonce). Each kind takes exactly the inputs it uses, so a value meant for
 * another kind is refused rather than dropped.
 */
Datum
control_frame(PG_FUNCTION_ARGS)
{
	char	   *kind;
	bool		topics_kind;

	ArgRequire(fcinfo, 0, "kind");
	kind = text_to_cstring(PG_GETARG_TEXT_PP(0));
	FrameArgBinding(fcinfo, 2, NULL);
	if (strcmp(kind, "started") != 0 && strcmp(kind, "topics_live") != 0 &&
		strcmp(kind, "catchup_complete") != 0 && strcmp(kind, "ping") != 0 &&
		strcmp(kind, "pong") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid control frame kind \"%s\"", kind),
				 errhint("Use 'started', 'topics_live', 'catchup_complete', 'ping' or 'pong'.")));
	topics_kind = strcmp(kind, "topics_live") == 0;
	if (topics_kind ? !PG_ARGISNULL(1) : !PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a %s frame takes no %s", kind, topics_kind ? "value" : "topics"),
				 errhint("'topics_live' takes topics; the other kinds take a value.")));
	if (topics_kind)
	{
		ArgArray	topics = ArgGetArray(fcinfo, 3, "topics", BYTEAOID);

		PG_RETURN_BYTEA_P(FrameTopicsLive(&topics));
	}
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"value\" must not be null"),
				 errhint("A %s frame needs a value: %s.", kind,
						 strcmp(kind, "started") == 0 ? "the keepalive interval in ms" :
						 strcmp(kind, "catchup_complete") == 0 ? "the Mutate's id" :
						 "its nonce")));
	if (strcmp(kind, "started") == 0)
		PG_RETURN_BYTEA_P(FrameStarted(PG_GETARG_INT64(1), "value"));
	if (strcmp(kind, "catchup_complete") == 0)
	{
		if (PG_GETARG_INT64(1) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"value\" must be a non-negative mutate_id for a catchup_complete frame"),
					 errdetail("It is " INT64_FORMAT ".", PG_GETARG_INT64(1))));
		PG_RETURN_BYTEA_P(FrameCatchupComplete((uint64) PG_GETARG_INT64(1)));
	}
	PG_RETURN_BYTEA_P(FramePingPong(PG_GETARG_INT64(1), strcmp(kind, "pong") == 0));
}

/* 0.1.0's frame_started(keepalive_interval_ms int, binding) */
Datum
frame_started(PG_FUNCTION_ARGS)
{
	ArgRequire(fcinfo, 0, "keepalive_interval_ms");
	FrameArgBinding(fcinfo, 1, NULL);
	PG_RETURN_BYTEA_P(FrameStarted(PG_GETARG_INT32(0), "keepalive_interval_ms"));
}

/* 0.1.0's frame_topics_live(topics, binding) */
Datum
frame_topics_live(PG_FUNCTION_ARGS)
{
	ArgArray	topics = ArgGetArray(fcinfo, 0, "topics", BYTEAOID);

	FrameArgBinding(fcinfo, 1, NULL);
	PG_RETURN_BYTEA_P(FrameTopicsLive(&topics));
}

/* 0.1.0's frame_catchup_complete(mutate_id, binding) */
Datum
frame_catchup_complete(PG_FUNCTION_ARGS)
{
	uint64		mutate_id = FrameArgMutateId(fcinfo, 0, false);

	FrameArgBinding(fcinfo, 1, NULL);
	PG_RETURN_BYTEA_P(FrameCatchupComplete(mutate_id));
}

/* 0.1.0's frame_ping(nonce, binding) */
Datum
frame_ping(PG_FUNCTION_ARGS)
{
	ArgRequire(fcinfo, 0, "nonce");
	FrameArgBinding(fcinfo, 1, NULL);
	PG_RETURN_BYTEA_P(FramePingPong(PG_GETARG_INT64(0), false));
}

/* 0.1.0's frame_pong(nonce, binding) */
Datum
frame_pong(PG_FUNCTION_ARGS)
{
	ArgRequire(fcinfo, 0, "nonce");
	FrameArgBinding(fcinfo, 1, NULL);
	PG_RETURN_BYTEA_P(FramePingPong(PG_GETARG_INT64(0), true));
}
