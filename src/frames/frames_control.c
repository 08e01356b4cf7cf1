/*
 * frames_control.c: the node's control frames as ready-to-send bytes:
 * Started, TopicsLive, CatchupComplete, Ping and Pong, each one complete
 * SubscribeResponse, for xip83.control_frame(kind, value, binding, topics)
 * (src/sql/control.c).
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

typedef Xmtp__Mls__Api__V1__SubscribeResponse Response;
typedef Xmtp__Mls__Api__V1__SubscribeResponse__V1 ResponseV1;

/* Packs SubscribeResponse{v1{<arm>}} with the arm already set in v1. */
static bytea *
PackResponse(ResponseV1 *v1)
{
	Response	response = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__INIT;

	/* cppcheck-suppress unreadVariable ; packing reads it through .base */
	response.version_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__VERSION_V1;
	response.v1 = v1;
	return PbPackToBytea(&response.base);
}

/* Started advertising a keepalive interval, no capabilities. */
bytea *
FrameStarted(int64 interval, const char *argname)
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
bytea *
FrameTopicsLive(const ArgArray *topics)
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
bytea *
FrameCatchupComplete(uint64 mutate_id)
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
bytea *
FramePingPong(int64 nonce, bool pong)
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
