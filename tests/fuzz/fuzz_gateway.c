/*
 * fuzz_gateway: libFuzzer harness over the parsers xip83-gateway runs on a
 * client's bytes, and on the frames it translates:
 *
 *   0-2  a server-streaming request (SubscribeGroupMessages,
 *        SubscribeWelcomeMessages, SubscribeTopics) turned into the engine's
 *        Mutate (gw_frames.c)
 *   3-4  a SubscribeRequest of either binding (session_request.c)
 *   5    a SubscribeResponse frame translated for each method, and its rows
 *        counted (gw_frames.c)
 *   6    length-delimited messages (frame_reader.c) and
 *   7    gRPC messages (client/grpc/grpc_frame.c), fed in pieces
 *
 * The first byte picks (mod 8), the rest is the input. Besides crashes,
 * leaks and undefined behaviour (AddressSanitizer, LeakSanitizer,
 * UndefinedBehaviorSanitizer, no recovery), it stops on a parser that is
 * laxer than protobuf-c (bytes protobuf-c refuses, accepted), on a wire
 * check that refuses what it should not say is malformed (bytes it passes
 * that protobuf-c cannot read), on a server-streaming request accepted whose
 * Mutate the engine then refuses as malformed, and on a reader that hands
 * out more than its limit or takes bytes that are not there.
 *
 * Run by tests/libpq/t_gateway_fuzz.sh over the seeds in
 * tests/fuzz/corpus/fuzz_gateway, then for a bounded time; by hand, after
 * make fuzzers: build/fuzz/fuzz_gateway -max_total_time=60 DIR
 * tests/fuzz/corpus/fuzz_gateway (new inputs go to DIR).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"
#include "grpc_frame.h"
#include "session/session.h"
#include "xip83/d14n_message_api.pb-c.h"
#include "xip83/mls_api.pb-c.h"

#define LIMIT 64				/* the readers' message limit: small, so it is reached */

static const ProtobufCMessageDescriptor *const filters_desc[3] = {
	&xmtp__mls__api__v1__subscribe_group_messages_request__descriptor,
	&xmtp__mls__api__v1__subscribe_welcome_messages_request__descriptor,
	&xmtp__xmtpv4__message_api__subscribe_topics_request__descriptor,
};

static const ProtobufCMessageDescriptor *const request_desc[2] = {
	&xmtp__mls__api__v1__subscribe_request__descriptor,
	&xmtp__xmtpv4__message_api__subscribe_request__descriptor,
};

/* protobuf-c can read the bytes as desc. */
static bool
Readable(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t size)
{
	ProtobufCMessage *m = protobuf_c_message_unpack(desc, NULL, size, data);

	if (m == NULL)
		return false;
	protobuf_c_message_free_unpacked(m, NULL);
	return true;
}

static void
Filters(int which, const uint8_t *data, size_t size)
{
	static const GwMethodKind kinds[3] = {GW_GROUP_MESSAGES, GW_WELCOME_MESSAGES, GW_TOPICS};
	unsigned char *out = NULL;
	size_t		out_len = 0;
	char		err[256];
	const char *code = gw_filters_request(kinds[which], data, size, &out, &out_len, err, sizeof(err));
	bool		readable = Readable(filters_desc[which], data, size);
	char		why[200];

	if (code == NULL)
	{
		Xip83Request req;

		if (!readable)
			abort();			/* accepted what protobuf-c refuses */
		/* the Mutate made of it reads as a Mutate; a topic's kind may still be refused */
		code = xip83_request_parse(which == 2 ? XIP83_BINDING_D14N : XIP83_BINDING_V3, out,
								   out_len, &req, err, sizeof(err));
		if (code != NULL && strncmp(err, "malformed", 9) == 0)
			abort();
		if (code == NULL && req.kind != XIP83_REQ_MUTATE)
			abort();
		xip83_request_free(&req);
		free(out);
	}
	if (xip83_pb_check(filters_desc[which], data, size, why, sizeof(why)) == NULL && !readable)
		abort();				/* the check passed bytes protobuf-c cannot read */
}

static void
Request(int which, const uint8_t *data, size_t size)
{
	Xip83Request req;
	char		err[256];
	char		why[200];
	const char *code = xip83_request_parse(which ? XIP83_BINDING_D14N : XIP83_BINDING_V3, data,
										   size, &req, err, sizeof(err));
	bool		readable = Readable(request_desc[which], data, size);
	bool		checked = xip83_pb_check(request_desc[which], data, size, why, sizeof(why)) == NULL;

	if (code == NULL && !readable)
		abort();
	if (checked && !readable)
		abort();				/* the check passed bytes protobuf-c cannot read */
	xip83_request_free(&req);
}

static bool
CountSend(void *arg, const unsigned char *msg, size_t len)
{
	size_t	   *n = arg;

	/* touch every byte: a message pointing outside the frame shows */
	for (size_t i = 0; i < len; i++)
		*n += msg[i] == 0xA5;
	return true;
}

static void
Translate(const uint8_t *data, size_t size)
{
	size_t		n = 0;

	(void) gw_frame_rows(data, size);
	for (int k = GW_GROUP_MESSAGES; k <= GW_TOPICS; k++)
		(void) gw_frame_translate((GwMethodKind) k, data, size, CountSend, &n);
}

/* The next piece's size, from the input's own bytes. */
static size_t
Piece(const uint8_t *data, size_t size, size_t at)
{
	size_t		n = size - at;
	size_t		want = data[at] % 17 + 1;

	return want < n ? want : n;
}

static void
LengthDelimited(const uint8_t *data, size_t size)
{
	Xip83FrameReader r;
	size_t		at = 0;
	bool		done = false;

	xip83_frame_init(&r, LIMIT);
	while (!done)
	{
		size_t		n = at < size ? Piece(data, size, at) : 0;
		size_t		used = 0;
		const unsigned char *msg = NULL;
		size_t		len = 0;
		Xip83FrameStatus st = xip83_frame_feed(&r, data + at, n, &used, &msg, &len);

		if (used > n)
			abort();
		at += used;
		switch (st)
		{
			case XIP83_FRAME_READY:
				if (len > LIMIT || (len > 0 && msg == NULL))
					abort();
				(void) CountSend(&len, msg, len);
				break;
			case XIP83_FRAME_MORE:
				if (used != n || n == 0)
					abort();	/* MORE takes everything it is given */
				break;
			default:
				done = true;
		}
	}
	xip83_frame_free(&r);
}

static void
Grpc(const uint8_t *data, size_t size)
{
	Xip83GrpcReader r;
	size_t		at = 0;

	xip83_grpc_reader_init(&r, LIMIT);
	while (at < size)
	{
		size_t		n = Piece(data, size, at);
		size_t		used = 0;
		const unsigned char *msg = NULL;
		size_t		len = 0;
		Xip83GrpcRead rc = xip83_grpc_reader_feed(&r, data + at, n, &used, &msg, &len);

		if (used > n)
			abort();
		at += used;
		if (rc == XIP83_GRPC_READ_MESSAGE)
		{
			if (len > LIMIT)
				abort();
			(void) CountSend(&len, msg, len);
		}
		else if (rc != XIP83_GRPC_READ_MORE)
			break;
		else if (used != n)
			abort();
	}
	xip83_grpc_reader_free(&r);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int			which;

	if (size < 1)
		return 0;
	which = data[0] % 8;
	data++;
	size--;
	switch (which)
	{
		case 0:
		case 1:
		case 2:
			Filters(which, data, size);
			break;
		case 3:
		case 4:
			Request(which - 3, data, size);
			break;
		case 5:
			Translate(data, size);
			break;
		case 6:
			LengthDelimited(data, size);
			break;
		default:
			Grpc(data, size);
	}
	return 0;
}
