/*
 * frames_control.c: the node's control frames as ready-to-send bytes:
 * Started, TopicsLive, CatchupComplete, Ping and Pong, each one complete
 * SubscribeResponse, from xip83.control_frame(kind, value, binding, topics).
 *
 * The v3 (xmtp.mls.api.v1) and d14n (xmtp.xmtpv4.message_api) packages
 * define these messages with the same field numbers and types, so both
 * bindings get the same bytes; the binding argument is checked so a caller
 * states which stream a frame is for, and decoding it
 * (xip83.decode_frame) reads it with that binding's messages.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

#include "base/base.h"
#include "frames.h"
#include "xip83/mls_api.pb-c.h"

PG_FUNCTION_INFO_V1(control_frame);
/* 0.1.0's one function per frame: a 0.1.0 install (the start of every update) names them */
PG_FUNCTION_INFO_V1(frame_started);
PG_FUNCTION_INFO_V1(frame_topics_live);
PG_FUNCTION_INFO_V1(frame_catchup_complete);
PG_FUNCTION_INFO_V1(frame_ping);
PG_FUNCTION_INFO_V1(frame_pong);

typedef Xmtp__Mls__Api__V1__SubscribeResponse Response;
typedef Xmtp__Mls__Api__V1__SubscribeResponse__V1 ResponseV1;

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

/* Packs SubscribeResponse{v1{<arm>}} with the arm already set in v1. */
static Datum
PackResponse(ResponseV1 *v1)
{
	Response	response = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__INIT;

	/* cppcheck-suppress unreadVariable ; packing reads it through .base */
	response.version_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__VERSION_V1;
	response.v1 = v1;
	PG_RETURN_BYTEA_P(PbPackToBytea(&response.base));
}

/* Started advertising a keepalive interval, no capabilities. */
static Datum
Started(int64 interval, const char *argname)
{
	ResponseV1	v1 = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__INIT;
	Xmtp__Mls__Api__V1__SubscribeResponse__V1__Started started =
		XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__STARTED__INIT;

	if (interval < 0 || interval > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be a keepalive interval between 0 and %d ms",
						argname, PG_INT32_MAX),
				 errdetail("It is " INT64_FORMAT ".", interval)));
	started.keepalive_interval_ms = (uint32) interval;
	v1.response_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_STARTED;
	v1.started = &started;
	return PackResponse(&v1);
}

/* TopicsLive with the topics in order. */
static Datum
TopicsLive(const ArgArray *topics)
{
	ResponseV1	v1 = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__INIT;
	Xmtp__Mls__Api__V1__SubscribeResponse__V1__TopicsLive live =
		XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__TOPICS_LIVE__INIT;

	live.n_topics = topics->n;
	live.topics = palloc(sizeof(ProtobufCBinaryData) * Max(topics->n, 1));
	for (int i = 0; i < topics->n; i++)
	{
		bytea	   *t = DatumGetByteaPP(topics->values[i]);

		live.topics[i].len = VARSIZE_ANY_EXHDR(t);
		live.topics[i].data = (uint8_t *) VARDATA_ANY(t);
	}
	v1.response_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_TOPICS_LIVE;
	v1.topics_live = &live;
	return PackResponse(&v1);
}

/* CatchupComplete: the ack of one Mutate. */
static Datum
CatchupComplete(uint64 mutate_id)
{
	ResponseV1	v1 = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__INIT;
	Xmtp__Mls__Api__V1__SubscribeResponse__V1__CatchupComplete done =
		XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__CATCHUP_COMPLETE__INIT;

	done.mutate_id = mutate_id;
	v1.response_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_CATCHUP_COMPLETE;
	v1.catchup_complete = &done;
	return PackResponse(&v1);
}

/* Ping or Pong with a nonce: the bigint's 64 bits as the wire's uint64. */
static Datum
PingPong(int64 nonce, bool pong)
{
	ResponseV1	v1 = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__INIT;
	Xmtp__Mls__Api__V1__Ping ping = XMTP__MLS__API__V1__PING__INIT;
	Xmtp__Mls__Api__V1__Pong pong_msg = XMTP__MLS__API__V1__PONG__INIT;

	if (pong)
	{
		pong_msg.nonce = (uint64) nonce;
		v1.response_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_PONG;
		v1.pong = &pong_msg;
	}
	else
	{
		ping.nonce = (uint64) nonce;
		v1.response_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_PING;
		v1.ping = &ping;
	}
	return PackResponse(&v1);
}

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

		return TopicsLive(&topics);
	}
	ArgRequire(fcinfo, 1, "value");
	if (strcmp(kind, "started") == 0)
		return Started(PG_GETARG_INT64(1), "value");
	if (strcmp(kind, "catchup_complete") == 0)
	{
		if (PG_GETARG_INT64(1) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"value\" must be a non-negative mutate_id for a catchup_complete frame"),
					 errdetail("It is " INT64_FORMAT ".", PG_GETARG_INT64(1))));
		return CatchupComplete((uint64) PG_GETARG_INT64(1));
	}
	return PingPong(PG_GETARG_INT64(1), strcmp(kind, "pong") == 0);
}

/* 0.1.0's frame_started(keepalive_interval_ms int, binding) */
Datum
frame_started(PG_FUNCTION_ARGS)
{
	ArgRequire(fcinfo, 0, "keepalive_interval_ms");
	FrameArgBinding(fcinfo, 1, NULL);
	return Started(PG_GETARG_INT32(0), "keepalive_interval_ms");
}

/* 0.1.0's frame_topics_live(topics, binding) */
Datum
frame_topics_live(PG_FUNCTION_ARGS)
{
	ArgArray	topics = ArgGetArray(fcinfo, 0, "topics", BYTEAOID);

	FrameArgBinding(fcinfo, 1, NULL);
	return TopicsLive(&topics);
}

/* 0.1.0's frame_catchup_complete(mutate_id, binding) */
Datum
frame_catchup_complete(PG_FUNCTION_ARGS)
{
	uint64		mutate_id = FrameArgMutateId(fcinfo, 0, false);

	FrameArgBinding(fcinfo, 1, NULL);
	return CatchupComplete(mutate_id);
}

/* 0.1.0's frame_ping(nonce, binding) */
Datum
frame_ping(PG_FUNCTION_ARGS)
{
	ArgRequire(fcinfo, 0, "nonce");
	FrameArgBinding(fcinfo, 1, NULL);
	return PingPong(PG_GETARG_INT64(0), false);
}

/* 0.1.0's frame_pong(nonce, binding) */
Datum
frame_pong(PG_FUNCTION_ARGS)
{
	ArgRequire(fcinfo, 0, "nonce");
	FrameArgBinding(fcinfo, 1, NULL);
	return PingPong(PG_GETARG_INT64(0), true);
}
