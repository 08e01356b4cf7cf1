/*
 * frames_json.h: protobuf-c messages as JSON, and the target topic of a d14n
 * envelope, in plain C on protobuf-c alone (no PostgreSQL), so the SQL
 * decoders (frames_decode.c) and the fuzzing harness (tests/fuzz) run the same
 * code.
 *
 * JSON form: one object per message keyed by the .proto field names; only the
 * fields present on the wire (proto3: non-default values, the set arm of a
 * oneof, non-empty repeated fields); bytes as lowercase hex strings, 64-bit
 * integers as JSON numbers, enums by name (the number when unknown), a map as
 * an array of {"key", "value"} objects; unknown fields left out.
 */
#ifndef XIP83_FRAMES_JSON_H
#define XIP83_FRAMES_JSON_H

#include <stddef.h>
#include <protobuf-c/protobuf-c.h>

/* Where JSON text goes: append(arg, text, len). */
typedef struct PbJsonSink
{
	void		(*append) (void *arg, const char *text, size_t len);
	void	   *arg;
} PbJsonSink;

extern void PbMessageToJson(const ProtobufCMessage *msg, PbJsonSink *sink);

/*
 * Checks bytes against the wire format of desc, nested messages included:
 * NULL when they are well formed, else a sentence saying what is wrong and
 * where (in why, of whylen bytes). Stricter than protobuf-c: it also refuses
 * field number 0 (kept by protobuf-c as an unknown field), a known field in
 * another wire type than its own (protobuf-c reads a bool from any) and a
 * length prefix over 5 bytes.
 */
extern const char *PbCheckWire(const ProtobufCMessageDescriptor *desc, const uint8_t *data,
							   size_t len, char *why, size_t whylen);

/* Why no target topic was found: the layer that failed, or NULL on success. */
extern const char *PbEnvelopeTargetTopic(const uint8_t *data, size_t len,
										 ProtobufCAllocator *allocator,
										 ProtobufCBinaryData *topic);

#endif							/* XIP83_FRAMES_JSON_H */
