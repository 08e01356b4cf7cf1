/*
 * frames_decode.c: reading XIP-83 messages in SQL, for inspection and tests:
 * a SubscribeRequest or SubscribeResponse as jsonb, and the target topic of a
 * stored d14n envelope.
 *
 * JSON form: one object per message, keyed by the .proto field names; only
 * fields present on the wire (proto3: non-default values, the set arm of a
 * oneof, non-empty repeated fields); bytes as lowercase hex strings, 64-bit
 * integers as JSON numbers, enums by name (the number when unknown), a map as
 * an array of {"key", "value"} objects. Unknown fields are left out.
 *
 * Decoding runs in a memory context of its own with a palloc allocator, which
 * is deleted on every path, so malformed bytes leak nothing; they are reported
 * with SQLSTATE 22P03 naming the message that did not parse.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "args.h"
#include "frames.h"
#include "pbmem.h"
#include "xip83/d14n_envelopes.pb-c.h"
#include "xip83/d14n_message_api.pb-c.h"
#include "xip83/mls_api.pb-c.h"

PG_FUNCTION_INFO_V1(decode_subscribe_request);
PG_FUNCTION_INFO_V1(decode_subscribe_response);
PG_FUNCTION_INFO_V1(envelope_target_topic);

static void JsonMessage(StringInfo out, const ProtobufCMessage *msg, int depth);

/* Size of one element of a repeated field of this type. */
static size_t
ElementSize(ProtobufCType type)
{
	switch (type)
	{
		case PROTOBUF_C_TYPE_INT32:
		case PROTOBUF_C_TYPE_SINT32:
		case PROTOBUF_C_TYPE_SFIXED32:
		case PROTOBUF_C_TYPE_UINT32:
		case PROTOBUF_C_TYPE_FIXED32:
		case PROTOBUF_C_TYPE_ENUM:
			return 4;
		case PROTOBUF_C_TYPE_FLOAT:
			return sizeof(float);
		case PROTOBUF_C_TYPE_BOOL:
			return sizeof(protobuf_c_boolean);
		case PROTOBUF_C_TYPE_BYTES:
			return sizeof(ProtobufCBinaryData);
		case PROTOBUF_C_TYPE_STRING:
		case PROTOBUF_C_TYPE_MESSAGE:
			return sizeof(void *);
		default:
			return 8;
	}
}

/* Whether a singular proto3 value is its type's default (not on the wire). */
static bool
IsDefault(const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (f->type)
	{
		case PROTOBUF_C_TYPE_BYTES:
			return ((const ProtobufCBinaryData *) p)->len == 0;
		case PROTOBUF_C_TYPE_STRING:
			return *(char *const *) p == NULL || **(char *const *) p == '\0';
		case PROTOBUF_C_TYPE_MESSAGE:
			return *(void *const *) p == NULL;
		default:
			{
				static const char zero[8];

				return memcmp(p, zero, ElementSize(f->type)) == 0;
			}
	}
}

/* Appends one value of field f, stored at p. */
static void
JsonValue(StringInfo out, const ProtobufCFieldDescriptor *f, const void *p, int depth)
{
	switch (f->type)
	{
		case PROTOBUF_C_TYPE_INT32:
		case PROTOBUF_C_TYPE_SINT32:
		case PROTOBUF_C_TYPE_SFIXED32:
			appendStringInfo(out, "%d", *(const int32 *) p);
			break;
		case PROTOBUF_C_TYPE_UINT32:
		case PROTOBUF_C_TYPE_FIXED32:
			appendStringInfo(out, "%u", *(const uint32 *) p);
			break;
		case PROTOBUF_C_TYPE_INT64:
		case PROTOBUF_C_TYPE_SINT64:
		case PROTOBUF_C_TYPE_SFIXED64:
			appendStringInfo(out, INT64_FORMAT, *(const int64 *) p);
			break;
		case PROTOBUF_C_TYPE_UINT64:
		case PROTOBUF_C_TYPE_FIXED64:
			appendStringInfo(out, UINT64_FORMAT, *(const uint64 *) p);
			break;
		case PROTOBUF_C_TYPE_BOOL:
			appendStringInfoString(out, *(const protobuf_c_boolean *) p ? "true" : "false");
			break;
		case PROTOBUF_C_TYPE_FLOAT:
			appendStringInfo(out, "%.9g", *(const float *) p);
			break;
		case PROTOBUF_C_TYPE_DOUBLE:
			appendStringInfo(out, "%.17g", *(const double *) p);
			break;
		case PROTOBUF_C_TYPE_ENUM:
			{
				int			v = *(const int *) p;
				const ProtobufCEnumValue *ev =
					protobuf_c_enum_descriptor_get_value(f->descriptor, v);

				if (ev != NULL)
					escape_json(out, ev->name);
				else
					appendStringInfo(out, "%d", v);
				break;
			}
		case PROTOBUF_C_TYPE_STRING:
			escape_json(out, *(char *const *) p ? *(char *const *) p : "");
			break;
		case PROTOBUF_C_TYPE_BYTES:
			{
				const ProtobufCBinaryData *b = p;
				static const char hex[] = "0123456789abcdef";

				appendStringInfoChar(out, '"');
				for (size_t i = 0; i < b->len; i++)
				{
					appendStringInfoChar(out, hex[b->data[i] >> 4]);
					appendStringInfoChar(out, hex[b->data[i] & 15]);
				}
				appendStringInfoChar(out, '"');
				break;
			}
		case PROTOBUF_C_TYPE_MESSAGE:
			JsonMessage(out, *(const ProtobufCMessage *const *) p, depth + 1);
			break;
	}
}

/* Appends a message as a JSON object of its fields present on the wire. */
static void
JsonMessage(StringInfo out, const ProtobufCMessage *msg, int depth)
{
	const ProtobufCMessageDescriptor *d = msg->descriptor;
	bool		first = true;

	check_stack_depth();
	appendStringInfoChar(out, '{');
	for (unsigned i = 0; i < d->n_fields; i++)
	{
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *base = (const char *) msg;
		const void *p = base + f->offset;

		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		{
			if (*(const uint32 *) (base + f->quantifier_offset) != f->id)
				continue;
		}
		else if (f->label == PROTOBUF_C_LABEL_REPEATED)
		{
			if (*(const size_t *) (base + f->quantifier_offset) == 0)
				continue;
		}
		else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset != 0 &&
				 f->type != PROTOBUF_C_TYPE_MESSAGE && f->type != PROTOBUF_C_TYPE_STRING)
		{
			if (!*(const protobuf_c_boolean *) (base + f->quantifier_offset))
				continue;
		}
		else if (IsDefault(f, p))
			continue;

		if (!first)
			appendStringInfoString(out, ", ");
		first = false;
		escape_json(out, f->name);
		appendStringInfoString(out, ": ");
		if (f->label == PROTOBUF_C_LABEL_REPEATED)
		{
			size_t		n = *(const size_t *) (base + f->quantifier_offset);
			const char *arr = *(const char *const *) p;
			size_t		size = ElementSize(f->type);

			appendStringInfoChar(out, '[');
			for (size_t k = 0; k < n; k++)
			{
				if (k > 0)
					appendStringInfoString(out, ", ");
				JsonValue(out, f, arr + k * size, depth);
			}
			appendStringInfoChar(out, ']');
		}
		else
			JsonValue(out, f, p, depth);
	}
	appendStringInfoChar(out, '}');
}

/*
 * Unpacks bytes as `desc` in the current context; 22P03 naming `what` when
 * they do not parse.
 */
static ProtobufCMessage *
Unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
	   const char *what)
{
	ProtobufCMessage *msg = protobuf_c_message_unpack(desc, PbAllocator(), len, data);

	if (msg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("%s is not a valid %s message", what, desc->name),
				 errdetail("The %zu bytes end inside a field, use a wire type %s does not allow, "
						   "or hold a malformed nested message.", len, desc->name)));
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
	JsonMessage(&json, msg, 0);
	MemoryContextSwitchTo(old);
	result = DirectFunctionCall1(jsonb_in, CStringGetDatum(json.data));
	MemoryContextDelete(cxt);
	PG_RETURN_DATUM(result);
}

/* xip83.decode_subscribe_request(frame, binding): a client's message as jsonb. */
Datum
decode_subscribe_request(PG_FUNCTION_ARGS)
{
	return DecodeToJsonb(fcinfo, false);
}

/* xip83.decode_subscribe_response(frame, binding): a node's frame as jsonb. */
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
	Xmtp__Xmtpv4__Envelopes__OriginatorEnvelope *oe;
	Xmtp__Xmtpv4__Envelopes__UnsignedOriginatorEnvelope *uoe;
	Xmtp__Xmtpv4__Envelopes__PayerEnvelope *pe;
	Xmtp__Xmtpv4__Envelopes__ClientEnvelope *ce;
	bytea	   *topic;

	ArgRequire(fcinfo, 0, "originator_envelope");
	raw = PG_GETARG_BYTEA_PP(0);
	cxt = AllocSetContextCreate(CurrentMemoryContext, "xip83 decode", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	oe = (void *) Unpack(&xmtp__xmtpv4__envelopes__originator_envelope__descriptor,
						 (const uint8_t *) VARDATA_ANY(raw), VARSIZE_ANY_EXHDR(raw),
						 "originator_envelope");
	uoe = (void *) Unpack(&xmtp__xmtpv4__envelopes__unsigned_originator_envelope__descriptor,
						  oe->unsigned_originator_envelope.data,
						  oe->unsigned_originator_envelope.len,
						  "unsigned_originator_envelope");
	pe = (void *) Unpack(&xmtp__xmtpv4__envelopes__payer_envelope__descriptor,
						 uoe->payer_envelope_bytes.data, uoe->payer_envelope_bytes.len,
						 "payer_envelope_bytes");
	ce = (void *) Unpack(&xmtp__xmtpv4__envelopes__client_envelope__descriptor,
						 pe->unsigned_client_envelope.data, pe->unsigned_client_envelope.len,
						 "unsigned_client_envelope");
	if (ce->aad == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("originator_envelope has no target topic"),
				 errdetail("Its ClientEnvelope carries no AuthenticatedData (field aad).")));
	MemoryContextSwitchTo(old);
	topic = palloc(VARHDRSZ + ce->aad->target_topic.len);
	SET_VARSIZE(topic, VARHDRSZ + ce->aad->target_topic.len);
	memcpy(VARDATA(topic), ce->aad->target_topic.data, ce->aad->target_topic.len);
	MemoryContextDelete(cxt);
	PG_RETURN_BYTEA_P(topic);
}
