/*
 * fuzz_http: libFuzzer harness over the gateway's HTTP/1.1 and WebSocket
 * glue (client/http: http-parser and wslay behind http.h) and gRPC-Web's
 * helpers:
 *
 *   0    a connection's bytes: requests, one at a time, their bodies, and
 *        after a request that asks for an Upgrade, WebSocket frames; fed in
 *        pieces, the output taken in pieces too, each whole message echoed
 *   1    base64: the text decoded in pieces equals the text decoded whole,
 *        and what is encoded decodes back
 *   2    the CORS origin list and a preflight's requested headers
 *
 * The first byte picks (mod 3), the second sets the piece sizes, the rest
 * is the input. Besides crashes, leaks and undefined behaviour
 * (AddressSanitizer, LeakSanitizer, UndefinedBehaviorSanitizer, no
 * recovery), it stops on a request head over the bound handed on, a header
 * name not lower cased, a callback out of order (a body outside a request,
 * WebSocket bytes before the switch), a WebSocket message longer than its
 * limit, and base64 that decodes differently in pieces.
 *
 * Run by tests/libpq/t_http_fuzz.sh over the seeds in
 * tests/fuzz/corpus/fuzz_http, then for a bounded time; by hand, after
 * make fuzzers: build/fuzz/fuzz_http -max_total_time=60 DIR tests/fuzz/corpus/fuzz_http
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

#define MAX_HEAD 512			/* small, so that it is reached */
#define MAX_MESSAGE 64

typedef struct Conn
{
	Xip83Http  *h;
	bool		in_request;		/* between begin and end */
	bool		upgrade;		/* the request asked for a WebSocket */
	bool		ws;				/* switched */
	size_t		message;		/* bytes of the WebSocket message so far */
	unsigned char echo[MAX_MESSAGE];
	size_t		room;			/* what write takes at a time */
} Conn;

static void
Stop(void)
{
	abort();
}

static bool
Begin(void *arg)
{
	Conn	   *c = arg;

	if (c->in_request || c->ws)
		Stop();
	c->in_request = true;
	return true;
}

static bool
Request(void *arg, const Xip83HttpRequest *req)
{
	Conn	   *c = arg;
	size_t		total = req->path_len;

	if (!c->in_request || strlen(req->method) == 0)
		Stop();
	for (size_t i = 0; i < req->n_headers; i++)
	{
		const Xip83HttpHeader *h = &req->headers[i];

		for (size_t k = 0; k < h->name_len; k++)
			if (h->name[k] >= 'A' && h->name[k] <= 'Z')
				Stop();
		total += h->name_len + h->value_len;
	}
	if (total > MAX_HEAD)
		Stop();
	c->upgrade = req->upgrade;
	return true;
}

static void
Body(void *arg, const unsigned char *data, size_t len)
{
	Conn	   *c = arg;

	if (!c->in_request || c->ws)
		Stop();
}

static void
End(void *arg)
{
	Conn	   *c = arg;

	if (!c->in_request)
		Stop();
	c->in_request = false;
	/* the transport switches once the Upgrade request is whole */
	if (c->upgrade && !c->ws)
	{
		if (!xip83_http_websocket(c->h, MAX_MESSAGE))
			Stop();
		c->ws = true;
	}
}

static void
WsData(void *arg, const unsigned char *data, size_t len)
{
	Conn	   *c = arg;

	if (!c->ws)
		Stop();
	if (c->message + len > MAX_MESSAGE)
		Stop();
	memcpy(c->echo + c->message, data, len);
	c->message += len;
}

static void
WsEnd(void *arg)
{
	Conn	   *c = arg;

	if (!c->ws)
		Stop();
	(void) xip83_http_ws_send(c->h, c->echo, c->message);
	c->message = 0;
}

static void
WsClosed(void *arg)
{
	Conn	   *c = arg;

	if (!c->ws)
		Stop();
}

static size_t
Write(void *arg, const unsigned char *data, size_t len)
{
	Conn	   *c = arg;
	volatile unsigned char sink = 0;
	size_t		n = len < c->room ? len : c->room;

	for (size_t i = 0; i < n; i++)
		sink ^= data[i];		/* every byte handed out is readable */
	(void) sink;
	return n;
}

static const Xip83HttpCallbacks callbacks = {
	.begin = Begin,
	.request = Request,
	.body = Body,
	.end = End,
	.ws_data = WsData,
	.ws_end = WsEnd,
	.ws_closed = WsClosed,
	.write = Write,
};

static void
Connection(const uint8_t *data, size_t size, uint8_t pieces)
{
	Conn		c = {0};
	size_t		piece = 1 + pieces % 17;

	c.room = 1 + pieces / 17;
	if ((c.h = xip83_http_new(&callbacks, &c, MAX_HEAD)) == NULL)
		return;
	for (size_t off = 0; off < size; off += piece)
	{
		size_t		n = size - off < piece ? size - off : piece;

		if (xip83_http_feed(c.h, data + off, n) != XIP83_HTTP_OK)
			break;
		if (!xip83_http_ws_flush(c.h))
			break;
	}
	if (xip83_http_memory(c.h) > 16384 + MAX_HEAD * 2)
		Stop();
	xip83_http_ws_close(c.h, 1000);
	(void) xip83_http_ws_flush(c.h);
	xip83_http_free(c.h);
}

static void
Base64(const uint8_t *data, size_t size, uint8_t pieces)
{
	Xip83Base64 whole = {0},
				parts = {0};
	unsigned char *a = malloc(size + 4);
	unsigned char *b = malloc(size + 4);
	char	   *enc = malloc(size / 3 * 4 + 8);
	unsigned char *back = malloc(size + 8);
	ssize_t		na = xip83_base64_decode(&whole, data, size, a);
	size_t		nb = 0;
	bool		bad = false;
	size_t		piece = 1 + pieces % 7;
	size_t		ne;
	Xip83Base64 d = {0};

	for (size_t off = 0; off < size && !bad; off += piece)
	{
		size_t		n = size - off < piece ? size - off : piece;
		ssize_t		got = xip83_base64_decode(&parts, data + off, n, b + nb);

		if (got < 0)
			bad = true;
		else
			nb += (size_t) got;
	}
	if ((na < 0) != bad || (na >= 0 && ((size_t) na != nb || memcmp(a, b, nb) != 0)))
		Stop();
	ne = xip83_base64_encode(data, size, enc);
	if (xip83_base64_decode(&d, (const unsigned char *) enc, ne, back) != (ssize_t) size ||
		d.n != 0 || memcmp(back, data, size) != 0)
		Stop();
	free(a);
	free(b);
	free(enc);
	free(back);
}

static void
Lists(const uint8_t *data, size_t size)
{
	char	   *list = malloc(size + 1);
	char		out[64];
	size_t		n;

	memcpy(list, data, size);
	list[size] = '\0';
	(void) xip83_http_origin_allowed(list, "https://a.example", 17);
	n = xip83_http_allow_headers((const char *) data, size, out, sizeof(out));
	if (n >= sizeof(out) || strlen(out) != n)
		Stop();
	free(list);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	switch (data[0] % 3)
	{
		case 0:
			Connection(data + 2, size - 2, data[1]);
			break;
		case 1:
			Base64(data + 2, size - 2, data[1]);
			break;
		case 2:
			Lists(data + 2, size - 2);
			break;
	}
	return 0;
}
