/*
 * fuzz_decoders: libFuzzer harness over every decoder the SQL functions use:
 * SubscribeRequest and SubscribeResponse of both bindings through protobuf-c
 * and our JSON writer, and the envelope's target-topic walk (frames_json.c).
 *
 * Input: the first byte picks the decoder (mod 5), the rest is the message.
 * Bytes the wire check (PbCheckWire) passes must decode.
 * Built with AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer
 * (no recovery): any crash, leak or undefined behaviour stops the run. A
 * message that decodes must also survive a round trip: without the unknown
 * fields it kept (protobuf-c keeps even a field numbered 0, which it then
 * refuses to read back), packed again and decoded again, it gives the same
 * JSON.
 *
 * Run by tests/libpq/t_frames_fuzz.c for a bounded time from seeds of real
 * frames; by hand, after make fuzzers:
 * build/fuzz/fuzz_decoders -max_total_time=60 CORPUS_DIR
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frames_json.h"
#include "xip83/d14n_message_api.pb-c.h"
#include "xip83/mls_api.pb-c.h"

typedef struct Text
{
	char	   *data;
	size_t		len;
} Text;

static void
Append(void *arg, const char *text, size_t len)
{
	Text	   *t = arg;

	t->data = realloc(t->data, t->len + len + 1);
	memcpy(t->data + t->len, text, len);
	t->len += len;
	t->data[t->len] = '\0';
}

/* The message as JSON (malloc'd). */
static Text
ToJson(const ProtobufCMessage *msg)
{
	Text		t = {NULL, 0};
	PbJsonSink	sink = {Append, &t};

	PbMessageToJson(msg, &sink);
	return t;
}

/* Drops the unknown fields of msg and of every message inside it. */
static void
StripUnknown(ProtobufCMessage *msg)
{
	const ProtobufCMessageDescriptor *d = msg->descriptor;
	char	   *base = (char *) msg;

	for (unsigned i = 0; i < msg->n_unknown_fields; i++)
		free(msg->unknown_fields[i].data);
	free(msg->unknown_fields);
	msg->unknown_fields = NULL;
	msg->n_unknown_fields = 0;
	for (unsigned i = 0; i < d->n_fields; i++)
	{
		const ProtobufCFieldDescriptor *f = &d->fields[i];

		if (f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF &&
			*(uint32_t *) (base + f->quantifier_offset) != f->id)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED)
		{
			size_t		n = *(size_t *) (base + f->quantifier_offset);
			ProtobufCMessage **arr = *(ProtobufCMessage ***) (base + f->offset);

			for (size_t k = 0; k < n; k++)
				StripUnknown(arr[k]);
		}
		else if (*(ProtobufCMessage **) (base + f->offset) != NULL)
			StripUnknown(*(ProtobufCMessage **) (base + f->offset));
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const ProtobufCMessageDescriptor *const descs[] = {
		&xmtp__mls__api__v1__subscribe_response__descriptor,
		&xmtp__mls__api__v1__subscribe_request__descriptor,
		&xmtp__xmtpv4__message_api__subscribe_response__descriptor,
		&xmtp__xmtpv4__message_api__subscribe_request__descriptor,
	};
	unsigned	which;
	ProtobufCMessage *msg;

	if (size < 1)
		return 0;
	which = data[0] % 5;
	data++;
	size--;
	if (which == 4)
	{
		ProtobufCBinaryData topic = {0, NULL};

		if (PbEnvelopeTargetTopic(data, size, NULL, &topic) == NULL)
			free(topic.data);
		return 0;
	}
	msg = protobuf_c_message_unpack(descs[which], NULL, size, data);
	{
		char		why[256];

		/* bytes the wire check passes, protobuf-c must read */
		if (PbCheckWire(descs[which], data, size, why, sizeof(why)) == NULL && msg == NULL)
			abort();
	}
	if (msg != NULL)
	{
		Text		first = ToJson(msg);
		size_t		len;
		uint8_t    *again = NULL;
		ProtobufCMessage *back;

		StripUnknown(msg);
		len = protobuf_c_message_get_packed_size(msg);
		again = realloc(again, len + 1);
		protobuf_c_message_pack(msg, again);
		back = protobuf_c_message_unpack(descs[which], NULL, len, again);
		if (back == NULL)
			abort();			/* our own bytes must decode */
		{
			Text		second = ToJson(back);

			if (first.len != second.len || memcmp(first.data, second.data, first.len) != 0)
				abort();		/* the round trip changed a field */
			free(second.data);
		}
		protobuf_c_message_free_unpacked(back, NULL);
		free(again);
		free(first.data);
		protobuf_c_message_free_unpacked(msg, NULL);
	}
	return 0;
}
