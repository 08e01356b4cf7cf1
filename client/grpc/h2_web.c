/*
 * h2_web.c: browsers' ways in. HTTP/1.1 connections (client/http's parser)
 * carrying gRPC-Web calls one at a time or one XIP-83 stream over a
 * WebSocket, and what gRPC-Web needs on HTTP/2 streams too: the trailer
 * message, base64 text, CORS.
 *
 * An HTTP/1.1 connection is an H2Conn without an nghttp2 session: its one
 * stream at a time is an Xip83H2Stream like any other, with the same queue,
 * accounts, timeouts and method callbacks; only the bytes around the
 * messages differ. A gRPC-Web response is a chunked body, one chunk per
 * queued message, the trailer message last, then the zero chunk; the
 * connection then takes the next request (unless the client said close, or
 * the response ended before its request did). A WebSocket carries each
 * queued message as one binary message, the trailer message last, then a
 * close frame (1000); the connection closes once it is written.
 */
#include "h2_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A request's line and headers together, as HTTP/2's SETTINGS announce */
#define MAX_HEAD_BYTES 16384
#define MAX_REQUEST_HEADERS 66
/* frames waiting in wslay's queue (its answers to pings) before a peer is cut off */
#define WS_MAX_QUEUED 64

static const char subprotocol[] = "xip83.v1";

/* The status line's reason for the codes we send */
static const char *
Reason(const char *status)
{
	static const char *const reasons[][2] = {
		{"101", "Switching Protocols"}, {"200", "OK"}, {"204", "No Content"},
		{"400", "Bad Request"}, {"403", "Forbidden"}, {"404", "Not Found"},
		{"405", "Method Not Allowed"}, {"415", "Unsupported Media Type"},
		{"426", "Upgrade Required"}, {"431", "Request Header Fields Too Large"},
		{"503", "Service Unavailable"},
	};

	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (strcmp(reasons[i][0], status) == 0)
			return reasons[i][1];
	return "Unknown";
}

/* Appends text to the connection's output; false when out of memory. */
static bool
Out(H2Conn *c, const void *text, size_t len)
{
	unsigned char *p = h2_conn_out_reserve(c, len);

	if (p == NULL)
		return false;
	memcpy(p, text, len);
	c->out_len += len;
	return true;
}

/* A response head on an HTTP/1.1 connection: status, headers, framing. */
static void
Head(H2Conn *c, const char *status, const Xip83H2Header *hv, size_t n, const char *framing)
{
	char		line[128];
	int			len = snprintf(line, sizeof(line), "HTTP/1.1 %s %s\r\n", status, Reason(status));

	Out(c, line, (size_t) len);
	for (size_t i = 0; i < n; i++)
	{
		Out(c, hv[i].name, hv[i].name_len);
		Out(c, ": ", 2);
		Out(c, hv[i].value, hv[i].value_len);
		Out(c, "\r\n", 2);
	}
	if (framing)
		Out(c, framing, strlen(framing));
	/* a 101's Connection is Upgrade's */
	if ((c->h1_last || c->srv->draining) && strcmp(status, "101") != 0)
	{
		c->h1_last = true;
		Out(c, "Connection: close\r\n", 19);
	}
	Out(c, "\r\n", 2);
}

/*
 * A response's headers other than :status: the content type, the metadata
 * pair name: value when name is not NULL, and for an allowed browser origin
 * CORS's. Pointers into s or static; hv has room for 6.
 */
size_t
h2_stream_response_headers(Xip83H2Stream *s, Xip83H2Header *hv, const char *name,
						   const char *value)
{
	static const char web[] = "application/grpc-web+proto";
	static const char text[] = "application/grpc-web-text+proto";
	static const char expose[] = "grpc-status, grpc-message, subscribed";
	size_t		n = 0;

	if (s->web == H2_WEB_TEXT)
		hv[n++] = (Xip83H2Header) {"content-type", 12, text, sizeof(text) - 1};
	else
		hv[n++] = (Xip83H2Header) {"content-type", 12, web, sizeof(web) - 1};
	if (name)
		hv[n++] = (Xip83H2Header) {name, strlen(name), value, strlen(value)};
	if (s->origin)
	{
		hv[n++] = (Xip83H2Header) {"access-control-allow-origin", 27, s->origin, strlen(s->origin)};
		hv[n++] = (Xip83H2Header) {"vary", 4, "Origin", 6};
		hv[n++] = (Xip83H2Header) {"access-control-expose-headers", 29, expose, sizeof(expose) - 1};
	}
	return n;
}

void
h2_web_respond(Xip83H2Stream *s, const char *status, const Xip83H2Header *hv, size_t n, bool body)
{
	Head(s->conn, status, hv, n, body ? "Transfer-Encoding: chunked\r\n" : "Content-Length: 0\r\n");
}

/* A chunk holding len bytes, not a spare one: a text message or a trailer. */
static H2Chunk *
Chunk(size_t len)
{
	H2Chunk    *c = malloc(sizeof(*c) + len);

	if (c == NULL)
		return NULL;
	memset(c, 0, sizeof(*c));
	c->len = len;
	return c;
}

H2Chunk *
h2_web_text(Xip83H2Server *srv, const unsigned char *bytes, size_t len)
{
	H2Chunk    *c = Chunk((len + 2) / 3 * 4);

	if (c)
		xip83_base64_encode(bytes, len, (char *) c->data);
	return c;
}

/*
 * Queues a finishing web stream's trailers as gRPC-Web's last message (flag
 * 0x80): "grpc-status: N\r\n", and grpc-message, already percent-encoded.
 */
bool
h2_web_trailer(Xip83H2Stream *s)
{
	size_t		mlen = s->message ? strlen(s->message) : 0;
	size_t		cap = XIP83_GRPC_PREFIX + 64 + mlen;
	unsigned char *t = malloc(cap);
	int			n;
	H2Chunk    *c;

	if (t == NULL || s->trailer_queued)
	{
		free(t);
		return s->trailer_queued;
	}
	n = snprintf((char *) t + XIP83_GRPC_PREFIX, cap - XIP83_GRPC_PREFIX, "grpc-status: %d\r\n%s%s%s",
				 s->status, s->message ? "grpc-message: " : "", s->message ? s->message : "",
				 s->message ? "\r\n" : "");
	xip83_grpc_prefix(t, (uint32_t) n);
	t[0] = 0x80;
	if (s->web == H2_WEB_TEXT)
		c = h2_web_text(s->conn->srv, t, XIP83_GRPC_PREFIX + (size_t) n);
	else if ((c = Chunk(XIP83_GRPC_PREFIX + (size_t) n)) != NULL)
		memcpy(c->data, t, c->len);
	free(t);
	if (c == NULL)
		return false;
	s->trailer_queued = true;
	h2_stream_take(s, c);
	return true;
}

void
h2_web_preflight(Xip83H2Stream *s, const char *origin, size_t origin_len,
				 const char *requested, size_t requested_len)
{
	char		allow[256];
	Xip83H2Header hv[5];

	if (origin == NULL || !xip83_http_origin_allowed(s->conn->srv->cfg.cors_origins, origin, origin_len))
		return h2_stream_respond(s, "403", NULL, 0, false);
	xip83_http_allow_headers(requested ? requested : "", requested_len, allow, sizeof(allow));
	hv[0] = (Xip83H2Header) {"access-control-allow-origin", 27, origin, origin_len};
	hv[1] = (Xip83H2Header) {"vary", 4, "Origin", 6};
	hv[2] = (Xip83H2Header) {"access-control-allow-methods", 28, "POST, OPTIONS", 13};
	hv[3] = (Xip83H2Header) {"access-control-allow-headers", 28, allow, strlen(allow)};
	hv[4] = (Xip83H2Header) {"access-control-max-age", 22, "600", 3};
	h2_stream_respond(s, "204", hv, 5, false);
}

/* ---------------------------------------------------------------- HTTP/1.1 */

/* The connection's one stream, if it is a request's (not one already gone). */
static Xip83H2Stream *
Current(H2Conn *c)
{
	return c->streams;
}

static bool
Begin(void *arg)
{
	H2Conn	   *c = arg;

	/* one request at a time, and none after the last */
	if (c->streams || c->h1_last || c->closing)
		return false;
	c->h1_done = false;
	return h2_stream_new(c, (int32_t) (c->serial & 0x3fffffff) * 2 + 1) != NULL;
}

static const char *
Find(const Xip83HttpRequest *req, const char *name, size_t *len)
{
	size_t		nlen = strlen(name);

	for (size_t i = 0; i < req->n_headers; i++)
		if (req->headers[i].name_len == nlen && memcmp(req->headers[i].name, name, nlen) == 0)
		{
			*len = req->headers[i].value_len;
			return req->headers[i].value;
		}
	return NULL;
}

/* Whether the comma-separated list v (len bytes) has item, case-insensitively. */
static bool
ListHas(const char *v, size_t len, const char *item)
{
	size_t		n = strlen(item);

	for (size_t i = 0; v && i + n <= len; i++)
		if (strncasecmp(v + i, item, n) == 0 && (i == 0 || v[i - 1] == ',' || v[i - 1] == ' ')
			&& (i + n == len || v[i + n] == ',' || v[i + n] == ' '))
			return true;
	return false;
}

/* An Upgrade to WebSocket on a bidirectional method's path: XIP-83 Subscribe. */
static void
WebSocket(Xip83H2Stream *s, const Xip83HttpRequest *req, const Xip83H2Header *hv, size_t n)
{
	H2Conn	   *c = s->conn;
	Xip83H2Server *srv = c->srv;
	const Xip83GrpcMethod *m = h2_stream_find(srv, req->path, req->path_len);
	size_t		len = 0,
				klen = 0;
	const char *v;
	const char *key = Find(req, "sec-websocket-key", &klen);
	char		accept[29];
	Xip83H2Header rh[4];

	c->h1_last = true;			/* whatever happens, nothing else follows on it */
	if (m == NULL || !h2_stream_bidi(srv, req->path, req->path_len))
		return h2_stream_respond(s, "404", NULL, 0, false);
	v = Find(req, "upgrade", &len);
	if (strcmp(req->method, "GET") != 0 || !ListHas(v, len, "websocket"))
		return h2_stream_respond(s, "400", NULL, 0, false);
	v = Find(req, "sec-websocket-version", &len);
	if (v == NULL || len != 2 || memcmp(v, "13", 2) != 0)
	{
		rh[0] = (Xip83H2Header) {"sec-websocket-version", 21, "13", 2};
		return h2_stream_respond(s, "426", rh, 1, false);
	}
	v = Find(req, "sec-websocket-protocol", &len);
	if (key == NULL || !xip83_http_ws_accept(key, klen, accept) ||
		!ListHas(v, len, subprotocol))
		return h2_stream_respond(s, "400", NULL, 0, false);
	v = Find(req, "origin", &len);
	if (v && !xip83_http_origin_allowed(srv->cfg.cors_origins, v, len))
		return h2_stream_respond(s, "403", NULL, 0, false);
	if (!xip83_http_websocket(c->http, (uint64_t) XIP83_GRPC_PREFIX +
							  (m->max_message ? m->max_message : srv->cfg.max_message)))
		return h2_stream_respond(s, "503", NULL, 0, false);

	rh[0] = (Xip83H2Header) {"Upgrade", 7, "websocket", 9};
	rh[1] = (Xip83H2Header) {"Connection", 10, "Upgrade", 7};
	rh[2] = (Xip83H2Header) {"Sec-WebSocket-Accept", 20, accept, strlen(accept)};
	rh[3] = (Xip83H2Header) {"Sec-WebSocket-Protocol", 22, subprotocol, sizeof(subprotocol) - 1};
	Head(c, "101", rh, 4, NULL);
	s->web = H2_WEB_SOCKET;
	s->headers_sent = true;
	c->h1_done = true;
	h2_stream_progress(s, false);
	if (srv->draining)
		return xip83_h2_finish(s, XIP83_GRPC_UNAVAILABLE, "server is shutting down");
	h2_stream_open(s, m, hv, n);
}

static bool
Request(void *arg, const Xip83HttpRequest *req)
{
	H2Conn	   *c = arg;
	Xip83H2Stream *s = Current(c);
	Xip83H2Header hv[MAX_REQUEST_HEADERS];
	size_t		n = 0;

	if (s == NULL)
		return false;
	if (!c->greeted)
	{
		/* a whole request: the handshake's deadline is met */
		c->greeted = true;
		c->since_ms = xip83_loop_now_ms();
	}
	if (!req->keep_alive)
		c->h1_last = true;
	hv[n++] = (Xip83H2Header) {":method", 7, req->method, strlen(req->method)};
	hv[n++] = (Xip83H2Header) {":path", 5, req->path, req->path_len};
	for (size_t i = 0; i < req->n_headers && n < MAX_REQUEST_HEADERS; i++)
		hv[n++] = (Xip83H2Header) {req->headers[i].name, req->headers[i].name_len,
		req->headers[i].value, req->headers[i].value_len};
	if (req->upgrade)
		WebSocket(s, req, hv, n);
	else
	{
		size_t		len = 0;
		const char *expect = Find(req, "expect", &len);

		/* curl asks before a larger body, and would wait for this a second */
		if (expect && len == 12 && strncasecmp(expect, "100-continue", 12) == 0)
			Out(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
		h2_stream_request(s, hv, n);
		/* the body to come: a request that stops short of its end times out */
		if (s->method && !s->finishing)
			h2_stream_progress(s, true);
	}
	return true;
}

static void
Body(void *arg, const unsigned char *data, size_t len)
{
	H2Conn	   *c = arg;
	Xip83H2Stream *s = Current(c);

	if (c->h1_skip)
		c->since_ms = xip83_loop_now_ms();	/* progress */
	if (s && s->method && !s->finishing && s->web != H2_WEB_SOCKET)
		h2_stream_incoming(s, data, len);
}

static void
End(void *arg)
{
	H2Conn	   *c = arg;
	Xip83H2Stream *s = Current(c);

	c->h1_done = true;
	c->h1_skip = false;
	if (s == NULL || s->web == H2_WEB_SOCKET)
		return;
	h2_stream_progress(s, false);
	h2_stream_remote_end(s);
}

static void
WsData(void *arg, const unsigned char *data, size_t len)
{
	H2Conn	   *c = arg;
	Xip83H2Stream *s = Current(c);

	if (s && s->method && !s->finishing)
	{
		if (s->ws_messages > 0)
			return h2_web_fail(s, 1002);	/* bytes after the message's one gRPC message */
		h2_stream_incoming(s, data, len);
	}
}

static void
WsEnd(void *arg)
{
	H2Conn	   *c = arg;
	Xip83H2Stream *s = Current(c);

	if (s == NULL || s->method == NULL || s->finishing)
		return;
	if (s->ws_messages != 1 || xip83_grpc_reader_partial(&s->reader))
		return h2_web_fail(s, 1002);
	s->ws_messages = 0;
}

/* The client closed its side: a cancel, after its requests. */
static void
WsClosed(void *arg)
{
	H2Conn	   *c = arg;
	Xip83H2Stream *s = Current(c);

	if (s)
		h2_stream_free(s, !s->end_sent);
	h2_conn_dirty(c);
}

static size_t
Write(void *arg, const unsigned char *data, size_t len)
{
	H2Conn	   *c = arg;

	if (c->out_len >= H2_OUT_FILL)
		return 0;
	if (len > H2_OUT_FILL)
		len = H2_OUT_FILL;
	return Out(c, data, len) ? len : 0;
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

/* Tracks what the parser holds on the connection's account. */
static void
Track(H2Conn *c, size_t before)
{
	size_t		now = xip83_http_memory(c->http);

	h2_mem_add(c, now);
	h2_mem_sub(c, before);
}

bool
h2_web_start(H2Conn *c)
{
	c->proto = H2_PROTO_H1;
	if ((c->http = xip83_http_new(&callbacks, c, MAX_HEAD_BYTES)) == NULL)
		return false;
	Track(c, 0);
	return true;
}

void
h2_web_free(H2Conn *c)
{
	if (c->http == NULL)
		return;
	h2_mem_sub(c, xip83_http_memory(c->http));
	xip83_http_free(c->http);
	c->http = NULL;
}

bool
h2_web_recv(H2Conn *c, const unsigned char *data, size_t len)
{
	size_t		before = xip83_http_memory(c->http);
	Xip83HttpFeed rc = xip83_http_feed(c->http, data, len);

	Track(c, before);
	switch (rc)
	{
		case XIP83_HTTP_OK:
			break;
		case XIP83_HTTP_BAD:
		case XIP83_HTTP_TOO_LARGE:
			/* answered if no response is under way, then closed */
			if (c->streams == NULL || !c->streams->headers_sent)
			{
				c->h1_last = true;
				Head(c, rc == XIP83_HTTP_BAD ? "400" : "431", NULL, 0, "Content-Length: 0\r\n");
			}
			/* FALLTHROUGH */
		case XIP83_HTTP_REFUSED:
			c->h1_last = true;
			c->closing = true;
			c->since_ms = xip83_loop_now_ms();
			while (c->streams)
				h2_stream_free(c->streams, true);
			break;
	}
	/*
	 * wslay answers pings and closes on its own queue, copied: a peer that
	 * pings without reading would grow it, so past a few it is cut off, as
	 * nghttp2 cuts off a flood of PINGs it must acknowledge.
	 */
	if (xip83_http_ws_queued(c->http) > WS_MAX_QUEUED && !c->closing)
	{
		h2_conn_limit(c, XIP83_H2_LIMIT_CONN_MEMORY);
		while (c->streams)
			h2_stream_free(c->streams, true);
	}
	h2_conn_dirty(c);
	return true;
}

/* Ends the stream now, the connection after it: a WebSocket's close with code. */
void
h2_web_fail(Xip83H2Stream *s, uint16_t code)
{
	H2Conn	   *c = s->conn;

	xip83_http_ws_close(c->http, code);
	c->h1_last = true;
	h2_stream_free(s, true);
	h2_conn_dirty(c);
}

/* The stream's queue was dropped at a limit: nothing more goes out on its connection. */
void
h2_web_cut(Xip83H2Stream *s)
{
	H2Conn	   *c = s->conn;

	c->h1_last = true;
	c->closing = true;
	c->since_ms = xip83_loop_now_ms();
}

/* The stream's output for the connection's buffer, up to about H2_OUT_FILL. */
bool
h2_web_fill(H2Conn *c)
{
	Xip83H2Stream *s = Current(c);

	if (s == NULL || c->closing)
		return xip83_http_ws_flush(c->http);
	if (s->web == H2_WEB_SOCKET)
	{
		/* one message at a time in wslay's queue: the rest stays on the stream's account */
		while (xip83_http_ws_queued(c->http) == 0 && s->head && !s->end_sent)
		{
			H2Chunk    *k = s->head;
			size_t		n = k->len - k->off;

			if (!xip83_http_ws_send(c->http, (k->shared ? k->shared->data : k->data) + k->off, n))
				return false;
			h2_stream_queue_take(s, NULL, n);
			if (!xip83_http_ws_flush(c->http))
				return false;
		}
		if (s->finishing && s->head == NULL && !s->end_sent)
		{
			s->end_sent = true;
			xip83_http_ws_close(c->http, 1000);
		}
		if (!xip83_http_ws_flush(c->http))
			return false;
		if (s->end_sent && xip83_http_ws_queued(c->http) == 0)
			h2_stream_free(s, false);
		return true;
	}
	while (c->out_len < H2_OUT_FILL && s->head)
	{
		size_t		n = s->head->len - s->head->off;
		unsigned char *p = h2_conn_out_reserve(c, n + 24);
		int			k;

		if (p == NULL)
			return false;
		k = snprintf((char *) p, 24, "%zx\r\n", n);
		h2_stream_queue_take(s, p + k, n);
		memcpy(p + k + n, "\r\n", 2);
		c->out_len += (size_t) k + n + 2;
	}
	if (s->finishing && s->head == NULL && !s->end_sent)
	{
		s->end_sent = true;
		if (s->web != H2_WEB_NONE && !Out(c, "0\r\n\r\n", 5))
			return false;
		/*
		 * Answered before the request ended (a refusal at its head, a
		 * message over the limit): the rest of it is read and dropped, as
		 * it comes, before the next request; its deadline still holds.
		 */
		if (!c->h1_done)
			c->h1_skip = true;
		h2_stream_free(s, false);
		c->since_ms = xip83_loop_now_ms();
	}
	return true;
}

/* Whether the connection stays open, its output written. */
bool
h2_web_open(H2Conn *c)
{
	if (c->closing)
		return false;
	if (xip83_http_is_websocket(c->http))
		return !(xip83_http_ws_close_sent(c->http) || (c->streams == NULL && c->h1_last &&
													   xip83_http_ws_queued(c->http) == 0));
	return !(c->h1_last && c->streams == NULL);
}

/* Drain: the stream under way ends UNAVAILABLE, and no request follows. */
void
h2_web_goaway(H2Conn *c)
{
	Xip83H2Stream *s = Current(c);

	c->h1_last = true;
	if (s && s->method && !s->finishing)
		xip83_h2_finish(s, XIP83_GRPC_UNAVAILABLE, "server is shutting down");
	h2_conn_dirty(c);
}
