/*
 * pb_check.h: a strict check of a protobuf message's wire bytes against its
 * descriptor, before anything decodes them.
 *
 * protobuf-c refuses truncated bytes but lets through some of what the wire
 * format forbids (a field numbered 0 whose tag takes two bytes, a varint
 * whose tenth byte overflows 64 bits), and the gateway's own walks over
 * request bytes need the same rules.
 * This one refuses, with a message that names the field and its byte
 * offset: a tag, varint, length or fixed value cut short by the end of the
 * bytes or of the enclosing field; a tag or a length longer than 5 bytes,
 * or a length above 2^31-1, as protobuf-c refuses them; a field number of 0
 * or above 2^29-1; a wire type that proto3 does not use (groups, 6, 7) or
 * that does not match the field's type; a varint longer than 10 bytes or
 * beyond 64 bits; messages nested deeper than 32. Unknown fields of a
 * valid wire type are allowed, as protobuf allows them.
 */
#ifndef XIP83_PB_CHECK_H
#define XIP83_PB_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/*
 * Reads one varint at *p; false, *p unmoved, when it is cut short by end,
 * longer than 10 bytes or beyond 64 bits.
 */
extern bool xip83_pb_varint(const unsigned char **p, const unsigned char *end, uint64_t *v);

/* NULL when data is a well-formed desc, else why (written into why). */
extern const char *xip83_pb_check(const ProtobufCMessageDescriptor *desc,
								  const unsigned char *data, size_t len, char *why,
								  size_t whylen);

#endif
