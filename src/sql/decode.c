/*
 * decode.c: the SQL functions that read XIP-83 messages, for inspection and
 * tests: xip83.decode_frame (a SubscribeRequest or SubscribeResponse as
 * jsonb), xip83.envelope_target_topic, and 0.1.0's per-message decoders,
 * which the 0.1.0 install script still names. The decoding is src/frames'
 * (frames_decode.c).
 */
#include "postgres.h"

#include "utils/builtins.h"

#include "base/base.h"
#include "frames/frames.h"
#include "entry.h"

PG_FUNCTION_INFO_V1(decode_frame);
PG_FUNCTION_INFO_V1(envelope_target_topic);
/* 0.1.0's per-message decoders: a 0.1.0 install (the start of every update) names them */
PG_FUNCTION_INFO_V1(decode_subscribe_request);
PG_FUNCTION_INFO_V1(decode_subscribe_response);

/* The frame (argument 0) as request or response of the binding (argument 1), as jsonb. */
static Datum
DecodeArg(FunctionCallInfo fcinfo, bool response)
{
	bool		d14n;

	ArgRequire(fcinfo, 0, "frame");
	FrameArgBinding(fcinfo, 1, &d14n);
	PG_RETURN_DATUM(FrameDecodeJsonb(PG_GETARG_BYTEA_PP(0), d14n, response));
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
	return DecodeArg(fcinfo, strcmp(message, "response") == 0);
}

/* 0.1.0's decode_subscribe_request(frame, binding) */
Datum
decode_subscribe_request(PG_FUNCTION_ARGS)
{
	return DecodeArg(fcinfo, false);
}

/* 0.1.0's decode_subscribe_response(frame, binding) */
Datum
decode_subscribe_response(PG_FUNCTION_ARGS)
{
	return DecodeArg(fcinfo, true);
}

/* xip83.envelope_target_topic(originator_envelope): the topic an envelope is for. */
Datum
envelope_target_topic(PG_FUNCTION_ARGS)
{
	ArgRequire(fcinfo, 0, "originator_envelope");
	PG_RETURN_BYTEA_P(EnvelopeTargetTopic(PG_GETARG_BYTEA_PP(0)));
}
