/*
 * frames_json.c: protobuf-c messages as JSON by walking their descriptors,
 * and an envelope's target topic (see frames_json.h). Plain C: everything is
 * allocated by the caller's allocator or written to the caller's sink.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "frames_json.h"
#include "xip83/d14n_envelopes.pb-c.h"

#define Min_(a, b) ((a) < (b) ? (a) : (b))

static void JsonMessage(PbJsonSink *sink, const ProtobufCMessage *msg);

static void
Put(PbJsonSink *sink, const char *text)
{
	sink->append(sink->arg, text, strlen(text));
}

/* Appends a JSON string: names come from descriptors, values from strings. */
static void
PutString(PbJsonSink *sink, const char *s)
{
	char		esc[8];

	Put(sink, "\"");
	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;

		if (c == '"' || c == '\\' || c < 0x20)
		{
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			Put(sink, esc);
		}
		else
			sink->append(sink->arg, s, 1);
	}
	Put(sink, "\"");
}

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
static int
IsDefault(const ProtobufCFieldDescriptor *f, const void *p)
{
	static const char zero[8];

	switch (f->type)
	{
		case PROTOBUF_C_TYPE_BYTES:
			return ((const ProtobufCBinaryData *) p)->len == 0;
		case PROTOBUF_C_TYPE_STRING:
			return *(char *const *) p == NULL || **(char *const *) p == '\0';
		case PROTOBUF_C_TYPE_MESSAGE:
			return *(void *const *) p == NULL;
		default:
			return memcmp(p, zero, ElementSize(f->type)) == 0;
	}
}

/* Appends one value of field f, stored at p. */
static void
JsonValue(PbJsonSink *sink, const ProtobufCFieldDescriptor *f, const void *p)
{
	char		num[32];

	num[0] = '\0';
	switch (f->type)
	{
		case PROTOBUF_C_TYPE_INT32:
		case PROTOBUF_C_TYPE_SINT32:
		case PROTOBUF_C_TYPE_SFIXED32:
			snprintf(num, sizeof(num), "%" PRId32, *(const int32_t *) p);
			break;
		case PROTOBUF_C_TYPE_UINT32:
		case PROTOBUF_C_TYPE_FIXED32:
			snprintf(num, sizeof(num), "%" PRIu32, *(const uint32_t *) p);
			break;
		case PROTOBUF_C_TYPE_INT64:
		case PROTOBUF_C_TYPE_SINT64:
		case PROTOBUF_C_TYPE_SFIXED64:
			snprintf(num, sizeof(num), "%" PRId64, *(const int64_t *) p);
			break;
		case PROTOBUF_C_TYPE_UINT64:
		case PROTOBUF_C_TYPE_FIXED64:
			snprintf(num, sizeof(num), "%" PRIu64, *(const uint64_t *) p);
			break;
		case PROTOBUF_C_TYPE_BOOL:
			snprintf(num, sizeof(num), "%s", *(const protobuf_c_boolean *) p ? "true" : "false");
			break;
		case PROTOBUF_C_TYPE_FLOAT:
			snprintf(num, sizeof(num), "%.9g", (double) *(const float *) p);
			break;
		case PROTOBUF_C_TYPE_DOUBLE:
			snprintf(num, sizeof(num), "%.17g", *(const double *) p);
			break;
		case PROTOBUF_C_TYPE_ENUM:
			{
				int			v = *(const int *) p;
				const ProtobufCEnumValue *ev =
					protobuf_c_enum_descriptor_get_value(f->descriptor, v);

				if (ev != NULL)
					PutString(sink, ev->name);
				else
					snprintf(num, sizeof(num), "%d", v);
				break;
			}
		case PROTOBUF_C_TYPE_STRING:
			PutString(sink, *(char *const *) p ? *(char *const *) p : "");
			break;
		case PROTOBUF_C_TYPE_BYTES:
			{
				const ProtobufCBinaryData *b = p;
				static const char hex[] = "0123456789abcdef";

				Put(sink, "\"");
				for (size_t i = 0; i < b->len; i++)
				{
					char		pair[2] = {hex[b->data[i] >> 4], hex[b->data[i] & 15]};

					sink->append(sink->arg, pair, 2);
				}
				Put(sink, "\"");
				break;
			}
		case PROTOBUF_C_TYPE_MESSAGE:
			JsonMessage(sink, *(const ProtobufCMessage *const *) p);
			break;
	}
	if (num[0] != '\0')
		Put(sink, num);
}

/* Appends a message as a JSON object of its fields present on the wire. */
static void
JsonMessage(PbJsonSink *sink, const ProtobufCMessage *msg)
{
	const ProtobufCMessageDescriptor *d = msg->descriptor;
	const char *base = (const char *) msg;
	int			first = 1;

	Put(sink, "{");
	for (unsigned i = 0; i < d->n_fields; i++)
	{
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const void *p = base + f->offset;

		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		{
			if (*(const uint32_t *) (base + f->quantifier_offset) != f->id)
				continue;
		}
		else if (f->label == PROTOBUF_C_LABEL_REPEATED)
		{
			if (*(const size_t *) (base + f->quantifier_offset) == 0)
				continue;
		}
		else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_MESSAGE &&
				 f->type != PROTOBUF_C_TYPE_STRING)
		{
			if (!*(const protobuf_c_boolean *) (base + f->quantifier_offset))
				continue;
		}
		else if (IsDefault(f, p))
			continue;

		Put(sink, first ? "" : ", ");
		first = 0;
		PutString(sink, f->name);
		Put(sink, ": ");
		if (f->label == PROTOBUF_C_LABEL_REPEATED)
		{
			size_t		n = *(const size_t *) (base + f->quantifier_offset);
			const char *arr = *(const char *const *) p;

			Put(sink, "[");
			for (size_t k = 0; k < n; k++)
			{
				Put(sink, k > 0 ? ", " : "");
				JsonValue(sink, f, arr + k * ElementSize(f->type));
			}
			Put(sink, "]");
		}
		else
			JsonValue(sink, f, p);
	}
	Put(sink, "}");
}

/* Reads a varint at *pos (at most 10 bytes); 0 when truncated or too long. */
static int
ReadVarint(const uint8_t *data, size_t len, size_t *pos, uint64_t *value)
{
	uint64_t	v = 0;

	for (int i = 0; i < 10 && *pos < len; i++)
	{
		uint8_t		b = data[(*pos)++];

		v |= (uint64_t) (b & 0x7f) << (7 * i);
		if ((b & 0x80) == 0)
		{
			*value = v;
			return 1;
		}
	}
	return 0;
}

/* The wire type a field of this type takes (unpacked). */
static int
WireTypeOf(ProtobufCType type)
{
	switch (type)
	{
		case PROTOBUF_C_TYPE_FIXED64:
		case PROTOBUF_C_TYPE_SFIXED64:
		case PROTOBUF_C_TYPE_DOUBLE:
			return 1;
		case PROTOBUF_C_TYPE_FIXED32:
		case PROTOBUF_C_TYPE_SFIXED32:
		case PROTOBUF_C_TYPE_FLOAT:
			return 5;
		case PROTOBUF_C_TYPE_STRING:
		case PROTOBUF_C_TYPE_BYTES:
		case PROTOBUF_C_TYPE_MESSAGE:
			return 2;
		default:
			return 0;
	}
}

/* Checks one message's bytes, offsets reported from `base` into the whole. */
static const char *
CheckWire(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
		  size_t base, int depth, char *why, size_t whylen)
{
	size_t		pos = 0;

	if (depth > 32)
	{
		snprintf(why, whylen, "messages nest deeper than 32 levels at byte %zu", base);
		return why;
	}
	while (pos < len)
	{
		size_t		start = pos,
					lenpos;
		uint64_t	tag,
					number,
					n;
		int			wire;
		const ProtobufCFieldDescriptor *f;

		if (!ReadVarint(data, len, &pos, &tag) || pos - start > 5)
		{
			snprintf(why, whylen, "%s: the field tag at byte %zu is truncated or too long",
					 desc->name, base + start);
			return why;
		}
		number = tag >> 3;
		wire = (int) (tag & 7);
		if (number == 0 || number > 536870911)
		{
			snprintf(why, whylen, "%s: field number %" PRIu64 " at byte %zu is not a valid field number",
					 desc->name, number, base + start);
			return why;
		}
		f = protobuf_c_message_descriptor_get_field(desc, (unsigned) number);
		if (f != NULL && wire != WireTypeOf(f->type) &&
			!(wire == 2 && f->label == PROTOBUF_C_LABEL_REPEATED && WireTypeOf(f->type) != 2))
		{
			snprintf(why, whylen, "%s: field %s (%" PRIu64 ") at byte %zu has wire type %d, not %d",
					 desc->name, f->name, number, base + start, wire, WireTypeOf(f->type));
			return why;
		}
		switch (wire)
		{
			case 0:
				if (!ReadVarint(data, len, &pos, &n))
				{
					snprintf(why, whylen, "%s: the varint of field %" PRIu64 " at byte %zu is truncated or longer than 10 bytes",
							 desc->name, number, base + start);
					return why;
				}
				break;
			case 1:
			case 5:
				if (len - pos < (wire == 1 ? 8u : 4u))
				{
					snprintf(why, whylen, "%s: field %" PRIu64 " at byte %zu needs %d bytes, %zu are left",
							 desc->name, number, base + start, wire == 1 ? 8 : 4, len - pos);
					return why;
				}
				pos += wire == 1 ? 8 : 4;
				break;
			case 2:
				lenpos = pos;
				if (!ReadVarint(data, len, &pos, &n) || pos - lenpos > 5 || n > len - pos ||
					n > 2147483647)
				{
					snprintf(why, whylen, "%s: the length of field %" PRIu64 " at byte %zu is malformed or runs past the end (%zu bytes left)",
							 desc->name, number, base + start, len - Min_(pos, len));
					return why;
				}
				if (f != NULL && f->type == PROTOBUF_C_TYPE_MESSAGE &&
					CheckWire(f->descriptor, data + pos, (size_t) n, base + pos, depth + 1, why, whylen))
					return why;
				if (f != NULL && WireTypeOf(f->type) != 2)
				{
					/* a packed repeated scalar: a run of its unpacked values */
					size_t		p = pos,
								end = pos + (size_t) n;

					while (p < end)
					{
						uint64_t	ignored;

						if (WireTypeOf(f->type) == 0 ? !ReadVarint(data, end, &p, &ignored)
							: (end - p < (WireTypeOf(f->type) == 1 ? 8u : 4u)))
						{
							snprintf(why, whylen, "%s: packed field %s at byte %zu ends inside a value",
									 desc->name, f->name, base + start);
							return why;
						}
						if (WireTypeOf(f->type) != 0)
							p += WireTypeOf(f->type) == 1 ? 8 : 4;
					}
				}
				pos += (size_t) n;
				break;
			default:
				snprintf(why, whylen, "%s: field %" PRIu64 " at byte %zu has wire type %d, which proto3 does not use",
						 desc->name, number, base + start, wire);
				return why;
		}
	}
	return NULL;
}

const char *
PbCheckWire(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
			char *why, size_t whylen)
{
	return CheckWire(desc, data, len, 0, 0, why, whylen);
}

/* Writes msg as JSON to sink. Our messages do not nest recursively. */
void
PbMessageToJson(const ProtobufCMessage *msg, PbJsonSink *sink)
{
	JsonMessage(sink, msg);
}

/*
 * Finds the target topic of a serialized OriginatorEnvelope through
 * UnsignedOriginatorEnvelope -> PayerEnvelope -> ClientEnvelope ->
 * AuthenticatedData. On success *topic points into memory of `allocator`
 * (not freed here, so the caller owns it with everything unpacked) and the
 * result is NULL; otherwise the result names the layer that failed.
 */
const char *
PbEnvelopeTargetTopic(const uint8_t *data, size_t len, ProtobufCAllocator *allocator,
					  ProtobufCBinaryData *topic)
{
	Xmtp__Xmtpv4__Envelopes__OriginatorEnvelope *oe;
	Xmtp__Xmtpv4__Envelopes__UnsignedOriginatorEnvelope *uoe;
	Xmtp__Xmtpv4__Envelopes__PayerEnvelope *pe;
	Xmtp__Xmtpv4__Envelopes__ClientEnvelope *ce;

	oe = xmtp__xmtpv4__envelopes__originator_envelope__unpack(allocator, len, data);
	if (oe == NULL)
		return "OriginatorEnvelope";
	uoe = xmtp__xmtpv4__envelopes__unsigned_originator_envelope__unpack(
		allocator, oe->unsigned_originator_envelope.len, oe->unsigned_originator_envelope.data);
	xmtp__xmtpv4__envelopes__originator_envelope__free_unpacked(oe, allocator);
	if (uoe == NULL)
		return "UnsignedOriginatorEnvelope";
	pe = xmtp__xmtpv4__envelopes__payer_envelope__unpack(
		allocator, uoe->payer_envelope_bytes.len, uoe->payer_envelope_bytes.data);
	xmtp__xmtpv4__envelopes__unsigned_originator_envelope__free_unpacked(uoe, allocator);
	if (pe == NULL)
		return "PayerEnvelope";
	ce = xmtp__xmtpv4__envelopes__client_envelope__unpack(
		allocator, pe->unsigned_client_envelope.len, pe->unsigned_client_envelope.data);
	xmtp__xmtpv4__envelopes__payer_envelope__free_unpacked(pe, allocator);
	if (ce == NULL)
		return "ClientEnvelope";
	if (ce->aad == NULL)
	{
		xmtp__xmtpv4__envelopes__client_envelope__free_unpacked(ce, allocator);
		return "AuthenticatedData";
	}
	/* hand the topic over: detach it so freeing the envelope keeps it */
	*topic = ce->aad->target_topic;
	ce->aad->target_topic.data = NULL;
	ce->aad->target_topic.len = 0;
	xmtp__xmtpv4__envelopes__client_envelope__free_unpacked(ce, allocator);
	return NULL;
}
