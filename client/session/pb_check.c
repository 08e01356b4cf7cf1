/*
 * pb_check.c: a strict check of protobuf wire bytes (see pb_check.h).
 */
#include "pb_check.h"

#include <inttypes.h>
#include <stdio.h>

#define MAX_DEPTH 32
#define MAX_FIELD_NUMBER 536870911	/* 2^29 - 1 */

bool
xip83_pb_varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	const unsigned char *q = *p;
	uint64_t	r = 0;

	for (int i = 0; i < 10 && q < end; i++)
	{
		unsigned char b = *q++;

		/* the tenth byte holds the 64th bit only */
		if (i == 9 && b > 1)
			return false;
		r |= (uint64_t) (b & 0x7f) << (7 * i);
		if (!(b & 0x80))
		{
			*p = q;
			*v = r;
			return true;
		}
	}
	return false;
}

/* The wire type a field of this type takes (unpacked). */
static int
WireType(ProtobufCType type)
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

/* A scalar value of wire type wire at *p (not length-delimited); false when cut short. */
static bool
Scalar(const unsigned char **p, const unsigned char *end, int wire)
{
	uint64_t	ignored;
	size_t		n = wire == 1 ? 8 : 4;

	if (wire == 0)
		return xip83_pb_varint(p, end, &ignored);
	if ((size_t) (end - *p) < n)
		return false;
	*p += n;
	return true;
}

static const char *
Check(const ProtobufCMessageDescriptor *desc, const unsigned char *msg, const unsigned char *end,
	  const unsigned char *base, int depth, char *why, size_t whylen)
{
	const unsigned char *p = msg;

	if (depth > MAX_DEPTH)
	{
		snprintf(why, whylen, "%s at byte %zu: messages nested deeper than %d",
				 desc->name, (size_t) (msg - base), MAX_DEPTH);
		return why;
	}
	while (p < end)
	{
		const unsigned char *start = p;
		const unsigned char *prefix;
		bool		ok;
		size_t		at = (size_t) (p - base);
		uint64_t	tag,
					len;
		int			wire;
		const ProtobufCFieldDescriptor *f;

		/* protobuf-c refuses a tag whose fifth byte still goes on */
		ok = xip83_pb_varint(&p, end, &tag);
		if (ok ? p - start > 5 : end - start > 5)
		{
			snprintf(why, whylen, "%s: the field tag at byte %zu takes more than 5 bytes",
					 desc->name, at);
			return why;
		}
		if (!ok)
		{
			snprintf(why, whylen, "%s: the field tag at byte %zu is truncated", desc->name, at);
			return why;
		}
		wire = (int) (tag & 7);
		if ((tag >> 3) == 0 || (tag >> 3) > MAX_FIELD_NUMBER)
		{
			snprintf(why, whylen, "%s: field number %" PRIu64 " at byte %zu is not valid",
					 desc->name, tag >> 3, at);
			return why;
		}
		if (wire != 0 && wire != 1 && wire != 2 && wire != 5)
		{
			snprintf(why, whylen, "%s: field %" PRIu64 " at byte %zu has wire type %d, which proto3 does not use",
					 desc->name, tag >> 3, at, wire);
			return why;
		}
		f = protobuf_c_message_descriptor_get_field(desc, (unsigned) (tag >> 3));
		/* a repeated scalar may come packed, length-delimited */
		if (f != NULL && wire != WireType(f->type) &&
			!(wire == 2 && f->label == PROTOBUF_C_LABEL_REPEATED))
		{
			snprintf(why, whylen, "%s: field %s (%" PRIu64 ") at byte %zu has wire type %d, not %d",
					 desc->name, f->name, tag >> 3, at, wire, WireType(f->type));
			return why;
		}
		if (wire != 2)
		{
			if (!Scalar(&p, end, wire))
			{
				snprintf(why, whylen, "%s: the value of field %" PRIu64 " at byte %zu is truncated%s",
						 desc->name, tag >> 3, at, wire == 0 ? " or not a 64-bit varint" : "");
				return why;
			}
			continue;
		}
		/* and a length whose fifth byte still goes on, or above 2^31-1 */
		prefix = p;
		ok = xip83_pb_varint(&p, end, &len);
		if (ok ? p - prefix > 5 : end - prefix > 5)
		{
			snprintf(why, whylen, "%s: the length of field %" PRIu64 " at byte %zu takes more than 5 bytes",
					 desc->name, tag >> 3, at);
			return why;
		}
		if (!ok)
		{
			snprintf(why, whylen, "%s: the length of field %" PRIu64 " at byte %zu is truncated",
					 desc->name, tag >> 3, at);
			return why;
		}
		if (len > (uint64_t) (end - p) || len > INT32_MAX)
		{
			snprintf(why, whylen, "%s: the length of field %" PRIu64 " at byte %zu runs past the end",
					 desc->name, tag >> 3, at);
			return why;
		}
		if (f != NULL && f->type == PROTOBUF_C_TYPE_MESSAGE &&
			Check(f->descriptor, p, p + len, base, depth + 1, why, whylen) != NULL)
			return why;
		if (f != NULL && WireType(f->type) != 2)
		{
			/* packed: a run of whole values */
			const unsigned char *q = p;

			while (q < p + len)
				if (!Scalar(&q, p + len, WireType(f->type)))
				{
					snprintf(why, whylen, "%s: packed field %s at byte %zu ends inside a value",
							 desc->name, f->name, at);
					return why;
				}
		}
		p += len;
	}
	return NULL;
}

const char *
xip83_pb_check(const ProtobufCMessageDescriptor *desc, const unsigned char *data, size_t len,
			   char *why, size_t whylen)
{
	return Check(desc, data, data + len, data, 0, why, whylen);
}
