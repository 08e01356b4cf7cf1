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

/* Why no target topic was found: the layer that failed, or NULL on success. */
extern const char *PbEnvelopeTargetTopic(const uint8_t *data, size_t len,
										 ProtobufCAllocator *allocator,
										 ProtobufCBinaryData *topic);

#endif							/* XIP83_FRAMES_JSON_H */
