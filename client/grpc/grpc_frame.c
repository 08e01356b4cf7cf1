/*
 * grpc_frame.c: gRPC message framing (see grpc_frame.h).
 */
#include "grpc_frame.h"

#include <stdlib.h>
#include <string.h>

const char *const xip83_grpc_codes[XIP83_GRPC_NCODES] = {
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
	"UNAUTHENTICATED"
};

/* The first allocation for a message split across DATA frames. */
#define BODY_FIRST	16384

void
xip83_grpc_reader_init(Xip83GrpcReader *r, uint32_t limit)
{
	memset(r, 0, sizeof(*r));
	r->limit = limit;
}

void
xip83_grpc_reader_free(Xip83GrpcReader *r)
{
	free(r->body);
	r->body = NULL;
	r->cap = 0;
	r->prefix_len = 0;
	r->need = 0;
	r->have = 0;
}

bool
xip83_grpc_reader_partial(const Xip83GrpcReader *r)
{
	/* a whole prefix and body is the message handed out last */
	return r->prefix_len > 0 && !(r->prefix_len == XIP83_GRPC_PREFIX && r->have == r->need);
}

/* Makes room for the message's bytes seen so far plus add more. */
static bool
BodyReserve(Xip83GrpcReader *r, uint32_t add)
{
	uint32_t	want = r->have + add;
	uint32_t	cap;
	unsigned char *b;

	if (want <= r->cap)
		return true;
	/* doubling keeps copies linear; never past the announced length */
	cap = r->cap ? r->cap : BODY_FIRST;
	while (cap < want)
		cap = cap > r->need / 2 ? r->need : cap * 2;
	if (cap > r->need)
		cap = r->need;
	b = realloc(r->body, cap);
	if (b == NULL)
		return false;
	r->body = b;
	r->cap = cap;
	return true;
}

Xip83GrpcRead
xip83_grpc_reader_feed(Xip83GrpcReader *r, const unsigned char *data, size_t len,
					   size_t *used, const unsigned char **msg, size_t *msg_len)
{
	size_t		off = 0;

	/* the message handed out last is no longer the caller's */
	if (r->prefix_len == XIP83_GRPC_PREFIX && r->have == r->need)
		xip83_grpc_reader_free(r);

	while (r->prefix_len < XIP83_GRPC_PREFIX && off < len)
		r->prefix[r->prefix_len++] = data[off++];
	*used = off;
	if (r->prefix_len < XIP83_GRPC_PREFIX)
		return XIP83_GRPC_READ_MORE;
	if (r->have == 0 && r->cap == 0)
	{
		uint32_t	n = ((uint32_t) r->prefix[1] << 24) | ((uint32_t) r->prefix[2] << 16) |
			((uint32_t) r->prefix[3] << 8) | r->prefix[4];

		if (r->prefix[0] != 0)
			return XIP83_GRPC_READ_COMPRESSED;
		if (n > r->limit)
		{
			r->announced = n;
			return XIP83_GRPC_READ_TOO_LARGE;
		}
		r->need = n;
		/* the whole body in this piece: hand it out where it lies */
		if (len - off >= n)
		{
			*used = off + n;
			*msg = data + off;
			*msg_len = n;
			r->have = n;
			return XIP83_GRPC_READ_MESSAGE;
		}
	}
	{
		uint32_t	take = r->need - r->have;

		if (take > len - off)
			take = (uint32_t) (len - off);
		if (take > 0)
		{
			if (!BodyReserve(r, take))
				return XIP83_GRPC_READ_NOMEM;
			memcpy(r->body + r->have, data + off, take);
			r->have += take;
			off += take;
		}
	}
	*used = off;
	if (r->have < r->need)
		return XIP83_GRPC_READ_MORE;
	*msg = r->body;
	*msg_len = r->need;
	return XIP83_GRPC_READ_MESSAGE;
}

void
xip83_grpc_prefix(unsigned char out[XIP83_GRPC_PREFIX], uint32_t len)
{
	out[0] = 0;
	out[1] = (unsigned char) (len >> 24);
	out[2] = (unsigned char) (len >> 16);
	out[3] = (unsigned char) (len >> 8);
	out[4] = (unsigned char) len;
}

size_t
xip83_grpc_percent_encode(const char *text, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t		n = 0;

	if (cap == 0)
		return 0;
	for (const unsigned char *p = (const unsigned char *) text; *p; p++)
	{
		bool		plain = *p >= 0x20 && *p <= 0x7e && *p != '%';

		if (n + (plain ? 1 : 3) >= cap)
			break;
		if (plain)
			out[n++] = (char) *p;
		else
		{
			out[n++] = '%';
			out[n++] = hex[*p >> 4];
			out[n++] = hex[*p & 15];
		}
	}
	out[n] = '\0';
	return n;
}
