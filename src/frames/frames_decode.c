/*
 * frames_decode.c: reading XIP-83 messages, for inspection and tests: a
 * SubscribeRequest or SubscribeResponse as jsonb, and the target topic of a
 * stored d14n envelope (the SQL functions are in src/sql/decode.c).
 *
 * The JSON form and the envelope walk are in frames_json.c, plain C shared
 * with the fuzzing harness (tests/fuzz).
 *
 * Decoding runs in a memory context of its own with a palloc allocator, which
 * is deleted on every path, so malformed bytes leak nothing; they are reported
 * with SQLSTATE 22P03 naming the message that did not parse.
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "base/base.h"
#include "frames.h"
#include "frames_json.h"
#include "xip83/d14n_message_api.pb-c.h"
#include "xip83/mls_api.pb-c.h"

/* The JSON sink writing into a StringInfo. */
static void
AppendToStringInfo(void *arg, const char *text, size_t len)
{
	appendBinaryStringInfo((StringInfo) arg, text, (int) len);
}

/*
 * Unpacks bytes as `desc` in the current context; 22P03 naming `what` when
 * they do not parse.
 */
static ProtobufCMessage *
Unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
	   const char *what)
{
	char		why[256];
	ProtobufCMessage *msg = NULL;

	if (PbCheckWire(desc, data, len, why, sizeof(why)) == NULL)
		msg = protobuf_c_message_unpack(desc, PbAllocator(), len, data);
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("%s is not a valid %s message", what, desc->name),
				 errdetail("In the %zu bytes, %s.", len, why)));
	if (msg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("%s is not a valid %s message", what, desc->name),
				 errdetail("protobuf-c refused the %zu bytes.", len)));
	return msg;
}

/* Decodes a frame as request or response of the binding (d14n or v3), as a jsonb Datum. */
Datum
FrameDecodeJsonb(const bytea *frame, bool d14n, bool response)
{
	const ProtobufCMessageDescriptor *desc;
	MemoryContext cxt;
	MemoryContext old;
	ProtobufCMessage *msg;
	StringInfoData json;
	PbJsonSink	sink;
	Datum		result;

	if (response)
		desc = d14n ? &xmtp__xmtpv4__message_api__subscribe_response__descriptor
			: &xmtp__mls__api__v1__subscribe_response__descriptor;
	else
		desc = d14n ? &xmtp__xmtpv4__message_api__subscribe_request__descriptor
			: &xmtp__mls__api__v1__subscribe_request__descriptor;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "xip83 decode", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	msg = Unpack(desc, (const uint8_t *) VARDATA_ANY(frame), VARSIZE_ANY_EXHDR(frame), "frame");
	initStringInfo(&json);
	sink.append = AppendToStringInfo;
	sink.arg = &json;
	PbMessageToJson(msg, &sink);
	MemoryContextSwitchTo(old);
	result = DirectFunctionCall1(jsonb_in, CStringGetDatum(json.data));
	MemoryContextDelete(cxt);
	return result;
}

/*
 * The topic an envelope is for (xip83.envelope_target_topic), read through
 * OriginatorEnvelope -> UnsignedOriginatorEnvelope -> PayerEnvelope ->
 * ClientEnvelope -> AuthenticatedData.target_topic.
 */
bytea *
EnvelopeTargetTopic(const bytea *raw)
{
	MemoryContext cxt;
	MemoryContext old;
	ProtobufCBinaryData found = {0, NULL};
	const char *failed;
	bytea	   *topic;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "xip83 decode", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	failed = PbEnvelopeTargetTopic((const uint8_t *) VARDATA_ANY(raw), VARSIZE_ANY_EXHDR(raw),
								   PbAllocator(), &found);
	MemoryContextSwitchTo(old);
	if (failed != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("originator_envelope has no readable target topic"),
				 strcmp(failed, "AuthenticatedData") == 0
				 ? errdetail("Its ClientEnvelope carries no AuthenticatedData (field aad).")
				 : errdetail("Its nested %s message does not parse.", failed)));
	topic = palloc(VARHDRSZ + found.len);
	SET_VARSIZE(topic, VARHDRSZ + found.len);
	if (found.len > 0)
		memcpy(VARDATA(topic), found.data, found.len);
	MemoryContextDelete(cxt);
	return topic;
}
