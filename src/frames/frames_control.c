/*
 * frames_control.c: the node's control frames as ready-to-send bytes:
 * Started, TopicsLive, CatchupComplete, Ping and Pong, each one complete
 * SubscribeResponse.
 *
 * The v3 (xmtp.mls.api.v1) and d14n (xmtp.xmtpv4.message_api) packages
 * define these messages with the same field numbers and types, so both
 * bindings get the same bytes; the binding argument is checked so a caller
 * states which stream a frame is for, and decoding it
 * (xip83.decode_subscribe_response) reads it with that binding's messages.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

#include "base/base.h"
#include "frames.h"
#include "xip83/mls_api.pb-c.h"

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

/* xip83.frame_started(keepalive_interval_ms, binding): Started, no capabilities. */
Datum
frame_started(PG_FUNCTION_ARGS)
{
	ResponseV1	v1 = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__INIT;
	Xmtp__Mls__Api__V1__SubscribeResponse__V1__Started started =
		XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__STARTED__INIT;
	int32		interval;

	ArgRequire(fcinfo, 0, "keepalive_interval_ms");
	FrameArgBinding(fcinfo, 1, NULL);
	interval = PG_GETARG_INT32(0);
	if (interval < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"keepalive_interval_ms\" must not be negative"),
				 errdetail("It is %d.", interval)));
	started.keepalive_interval_ms = (uint32) interval;
	v1.response_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_STARTED;
	v1.started = &started;
	return PackResponse(&v1);
}

/* xip83.frame_topics_live(topics, binding): TopicsLive with the topics in order. */
Datum
frame_topics_live(PG_FUNCTION_ARGS)
{
	ResponseV1	v1 = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__INIT;
	Xmtp__Mls__Api__V1__SubscribeResponse__V1__TopicsLive live =
		XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__TOPICS_LIVE__INIT;
	ArgArray	topics = ArgGetArray(fcinfo, 0, "topics", BYTEAOID);

	FrameArgBinding(fcinfo, 1, NULL);
	live.n_topics = topics.n;
	live.topics = palloc(sizeof(ProtobufCBinaryData) * Max(topics.n, 1));
	for (int i = 0; i < topics.n; i++)
	{
		bytea	   *t = DatumGetByteaPP(topics.values[i]);

		live.topics[i].len = VARSIZE_ANY_EXHDR(t);
		live.topics[i].data = (uint8_t *) VARDATA_ANY(t);
	}
	v1.response_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_TOPICS_LIVE;
	v1.topics_live = &live;
	return PackResponse(&v1);
}

/* xip83.frame_catchup_complete(mutate_id, binding): the ack of one Mutate. */
Datum
frame_catchup_complete(PG_FUNCTION_ARGS)
{
	ResponseV1	v1 = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__INIT;
	Xmtp__Mls__Api__V1__SubscribeResponse__V1__CatchupComplete done =
		XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__CATCHUP_COMPLETE__INIT;

	done.mutate_id = FrameArgMutateId(fcinfo, 0, false);
	FrameArgBinding(fcinfo, 1, NULL);
	v1.response_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_CATCHUP_COMPLETE;
	v1.catchup_complete = &done;
	return PackResponse(&v1);
}

/* Ping or Pong with a nonce: the bigint's 64 bits as the wire's uint64. */
static Datum
PingPong(FunctionCallInfo fcinfo, bool pong)
{
	ResponseV1	v1 = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__INIT;
	Xmtp__Mls__Api__V1__Ping ping = XMTP__MLS__API__V1__PING__INIT;
	Xmtp__Mls__Api__V1__Pong pong_msg = XMTP__MLS__API__V1__PONG__INIT;

	ArgRequire(fcinfo, 0, "nonce");
	FrameArgBinding(fcinfo, 1, NULL);
	if (pong)
	{
		pong_msg.nonce = (uint64) PG_GETARG_INT64(0);
		v1.response_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_PONG;
		v1.pong = &pong_msg;
	}
	else
	{
		ping.nonce = (uint64) PG_GETARG_INT64(0);
		v1.response_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_PING;
		v1.ping = &ping;
	}
	return PackResponse(&v1);
}

/* xip83.frame_ping(nonce, binding): the node's keepalive Ping. */
Datum
frame_ping(PG_FUNCTION_ARGS)
{
	return PingPong(fcinfo, false);
}

/* xip83.frame_pong(nonce, binding): the answer to a client's Ping. */
Datum
frame_pong(PG_FUNCTION_ARGS)
{
	return PingPong(fcinfo, true);
}
