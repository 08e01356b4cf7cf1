/*
 * frames_decode.c: reading XIP-83 messages in SQL, for inspection and tests:
 * a SubscribeRequest or SubscribeResponse as jsonb, and the target topic of a
 * stored d14n envelope.
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

PG_FUNCTION_INFO_V1(decode_frame);
PG_FUNCTION_INFO_V1(envelope_target_topic);
/* 0.1.0's per-message decoders: a 0.1.0 install (the start of every update) names them */
PG_FUNCTION_INFO_V1(decode_subscribe_request);
PG_FUNCTION_INFO_V1(decode_subscribe_response);

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

/* Decodes a bytea argument as request or response of the binding, as jsonb. */
static Datum
DecodeToJsonb(FunctionCallInfo fcinfo, bool response)
{
	bytea	   *frame;
	bool		d14n;
	const ProtobufCMessageDescriptor *desc;
	MemoryContext cxt;
	MemoryContext old;
	ProtobufCMessage *msg;
	StringInfoData json;
	PbJsonSink	sink;
	Datum		result;

	ArgRequire(fcinfo, 0, "frame");
	FrameArgBinding(fcinfo, 1, &d14n);
	frame = PG_GETARG_BYTEA_PP(0);
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
	PG_RETURN_DATUM(result);
}

/*
 * xip83.decode_frame(frame, binding, message): a node's SubscribeResponse
 * (message 'response') or a client's SubscribeRequest ('request') as jsonb.
 */
Datum
decode_frame(PG_FUNCTION_ARGS)
{
	char	   *message;

	ArgRequire(fcinfo, 2, "message");
	message = text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (strcmp(message, "response") != 0 && strcmp(message, "request") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid message \"%s\"", message),
				 errhint("Use 'response' (SubscribeResponse, what a node sends) or 'request' (SubscribeRequest, what a client sends).")));
	return DecodeToJsonb(fcinfo, strcmp(message, "response") == 0);
}

/* 0.1.0's decode_subscribe_request(frame, binding) */
Datum
decode_subscribe_request(PG_FUNCTION_ARGS)
{
	return DecodeToJsonb(fcinfo, false);
}

/* 0.1.0's decode_subscribe_response(frame, binding) */
Datum
decode_subscribe_response(PG_FUNCTION_ARGS)
{
	return DecodeToJsonb(fcinfo, true);
}

/*
 * xip83.envelope_target_topic(originator_envelope): the topic an envelope is
 * for, read through OriginatorEnvelope -> UnsignedOriginatorEnvelope ->
 * PayerEnvelope -> ClientEnvelope -> AuthenticatedData.target_topic.
 */
Datum
envelope_target_topic(PG_FUNCTION_ARGS)
{
	bytea	   *raw;
	MemoryContext cxt;
	MemoryContext old;
	ProtobufCBinaryData found = {0, NULL};
	const char *failed;
	bytea	   *topic;

	ArgRequire(fcinfo, 0, "originator_envelope");
	raw = PG_GETARG_BYTEA_PP(0);
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
	PG_RETURN_BYTEA_P(topic);
}
