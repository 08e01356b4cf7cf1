/*
 * h2_request.c: a request, HTTP/2's or HTTP/1.1's: its head to a method (or
 * a refusal, a browser's preflight, a status), its body to whole messages.
 *
 * The head comes as headers with the pseudo-headers :method and :path;
 * gRPC's content type is served over HTTP/2, gRPC-Web's (binary or base64
 * text) over both. A text call's body is base64 and decoded here, before
 * gRPC's framing; what a WebSocket message carries is one gRPC message, no
 * more.
 */
#include "h2_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char grpc_type[] = "application/grpc";

static void Incoming(Xip83H2Stream *s, const unsigned char *data, size_t len);

/* Answers a request that is not a gRPC call with a bare HTTP status. */
static void
HttpRefuse(Xip83H2Stream *s, const char *status)
{
	s->web = H2_WEB_NONE;
	h2_stream_respond(s, status, NULL, 0, false);
}

/* The value of request header name, or NULL. */
static const char *
Header(const Xip83H2Header *hv, size_t n, const char *name, size_t *len)
{
	size_t		nlen = strlen(name);

	for (size_t i = 0; i < n; i++)
		if (hv[i].name_len == nlen && memcmp(hv[i].name, name, nlen) == 0)
		{
			*len = hv[i].value_len;
			return hv[i].value;
		}
	return NULL;
}

/* Whether the content type v (len bytes) is type, alone or with +... or ;... after it. */
static bool
TypeIs(const char *v, size_t len, const char *type)
{
	size_t		tlen = strlen(type);

	return v != NULL && len >= tlen && strncasecmp(v, type, tlen) == 0 &&
		(len == tlen || v[tlen] == '+' || v[tlen] == ';');
}

/* Whether path is one of the bidirectional methods, for WebSocket only. */
bool
h2_stream_bidi(Xip83H2Server *srv, const char *path, size_t len)
{
	for (const char *const *p = srv->cfg.websocket_paths; p && *p; p++)
		if (strlen(*p) == len && memcmp(*p, path, len) == 0)
			return true;
	return false;
}

const Xip83GrpcMethod *
h2_stream_find(Xip83H2Server *srv, const char *path, size_t len)
{
	for (size_t i = 0; i < srv->n_methods; i++)
		if (strlen(srv->methods[i]->path) == len && memcmp(srv->methods[i]->path, path, len) == 0)
			return srv->methods[i];
	return NULL;
}


/* Gives the stream to m (the request is for it): m's open takes or refuses it. */
void
h2_stream_open(Xip83H2Stream *s, const Xip83GrpcMethod *m, const Xip83H2Header *hv, size_t n)
{
	Xip83H2Server *srv = s->conn->srv;
	int			rc;

	xip83_grpc_reader_init(&s->reader, m->max_message ? m->max_message : srv->cfg.max_message);
	s->method = m;
	srv->n_streams++;
	rc = m->open(s, hv, n);
	if (rc != XIP83_GRPC_OK)
	{
		/* refused: no other callback for it */
		s->method = NULL;
		srv->n_streams--;
		h2_stream_finish(s, rc, NULL, NULL);
	}
}

/*
 * A request, HTTP/2's or HTTP/1.1's, with pseudo-headers (:method, :path):
 * a browser's preflight, or a gRPC or gRPC-Web call for a method.
 */
void
h2_stream_request(Xip83H2Stream *s, const Xip83H2Header *hv, size_t n_hv)
{
	Xip83H2Server *srv = s->conn->srv;
	size_t		len = 0,
				olen = 0;
	const char *v;
	const char *origin;
	const Xip83GrpcMethod *m;

	origin = Header(hv, n_hv, "origin", &olen);
	v = Header(hv, n_hv, ":method", &len);
	if (v != NULL && len == 7 && memcmp(v, "OPTIONS", 7) == 0)
	{
		const char *req = Header(hv, n_hv, "access-control-request-headers", &len);

		return h2_web_preflight(s, origin, olen, req, req ? len : 0);
	}
	if (v == NULL || len != 4 || memcmp(v, "POST", 4) != 0)
		return HttpRefuse(s, "405");
	v = Header(hv, n_hv, "content-type", &len);
	if (TypeIs(v, len, "application/grpc-web-text"))
		s->web = H2_WEB_TEXT;
	else if (TypeIs(v, len, "application/grpc-web"))
		s->web = H2_WEB_BINARY;
	else if (s->conn->http || !TypeIs(v, len, grpc_type))
		return HttpRefuse(s, "415");
	if (s->web != H2_WEB_NONE && origin && xip83_http_origin_allowed(srv->cfg.cors_origins, origin, olen))
	{
		if ((s->origin = strndup(origin, olen)) != NULL)
			h2_mem_add(s->conn, olen + 1);
	}
	if (srv->draining)
		return h2_stream_finish(s, XIP83_GRPC_UNAVAILABLE, "server is shutting down", NULL);
	v = Header(hv, n_hv, ":path", &len);
	m = v ? h2_stream_find(srv, v, len) : NULL;
	if (m == NULL)
	{
		char		text[300];

		snprintf(text, sizeof(text), "unknown method %.*s", (int) (len > 256 ? 256 : len), v ? v : "");
		return h2_stream_finish(s, XIP83_GRPC_UNIMPLEMENTED, text, NULL);
	}
	if (s->web != H2_WEB_NONE && h2_stream_bidi(srv, v, len))
		return h2_stream_finish(s, XIP83_GRPC_UNIMPLEMENTED,
					  "Subscribe is bidirectional: use the WebSocket subprotocol xip83.v1 on this path",
					  NULL);
	v = Header(hv, n_hv, "grpc-encoding", &len);
	if (v && !(len == 8 && memcmp(v, "identity", 8) == 0))
	{
		char		text[300];

		snprintf(text, sizeof(text), "compression %.*s is not supported", (int) (len > 64 ? 64 : len), v);
		return h2_stream_finish(s, XIP83_GRPC_UNIMPLEMENTED, text, "identity");
	}
	h2_stream_open(s, m, hv, n_hv);
}

/* The client sent END_STREAM (or HTTP/1.1's request ended). */
void
h2_stream_remote_end(Xip83H2Stream *s)
{
	s->remote_done = true;
	if (s->method == NULL || s->finishing)
		return;
	if (xip83_grpc_reader_partial(&s->reader))
		h2_stream_finish(s, XIP83_GRPC_INTERNAL, "the request ended inside a message", NULL);
	else if (s->method->half_close)
		s->method->half_close(s);
}


/* Takes bytes of a request's body (base64 in a text call): messages go to the method. */
void
h2_stream_incoming(Xip83H2Stream *s, const unsigned char *data, size_t len)
{
	unsigned char plain[3 * 1024];

	while (s->web == H2_WEB_TEXT && s->method != NULL && !s->finishing && len > 0)
	{
		size_t		take = len < 4 * 1024 ? len : 4 * 1024;
		ssize_t		n = xip83_base64_decode(&s->b64, data, take, plain);

		if (n < 0)
			return h2_stream_finish(s, XIP83_GRPC_INTERNAL, "the request is not base64", NULL);
		data += take;
		len -= take;
		Incoming(s, plain, (size_t) n);
	}
	if (s->web != H2_WEB_TEXT)
		Incoming(s, data, len);
}

/* The body's bytes as gRPC framed them. */
static void
Incoming(Xip83H2Stream *s, const unsigned char *data, size_t len)
{
	H2Conn	   *c = s->conn;

	while (s->method != NULL && !s->finishing && len > 0)
	{
		const unsigned char *msg = NULL;
		size_t		msg_len = 0;
		size_t		used;
		uint32_t	cap = s->reader.cap;
		Xip83GrpcRead rc = xip83_grpc_reader_feed(&s->reader, data, len, &used, &msg, &msg_len);
		char		text[120];

		h2_stream_reader_track(s, cap);
		data += used;
		len -= used;
		switch (rc)
		{
			case XIP83_GRPC_READ_MORE:
				{
					int			over = h2_mem_room(c, 0);

					if (c->partial > c->srv->cfg.max_partial)
						h2_stream_limit(s, XIP83_H2_LIMIT_CONN_INPUT,
										"too many partly received messages on this connection");
					else if (over >= 0)
						h2_stream_limit(s, (Xip83H2Limit) over, over == XIP83_H2_LIMIT_MEMORY ?
										"the server is short of memory" :
										"this connection holds too much memory");
				}
				break;
			case XIP83_GRPC_READ_MESSAGE:
				if (s->web == H2_WEB_SOCKET && s->ws_messages++ > 0)
					return h2_web_fail(s, 1002);	/* one gRPC message per WebSocket message */
				s->method->message(s, msg, msg_len);
				break;
			case XIP83_GRPC_READ_TOO_LARGE:
				if (s->web == H2_WEB_SOCKET)
					return h2_web_fail(s, 1009);
				snprintf(text, sizeof(text), "received message larger than max (%u vs. %u)",
						 s->reader.announced, s->reader.limit);
				h2_stream_finish(s, XIP83_GRPC_RESOURCE_EXHAUSTED, text, NULL);
				break;
			case XIP83_GRPC_READ_COMPRESSED:
				h2_stream_finish(s, XIP83_GRPC_INTERNAL, "compressed message without a grpc-encoding", NULL);
				break;
			case XIP83_GRPC_READ_NOMEM:
				h2_stream_finish(s, XIP83_GRPC_RESOURCE_EXHAUSTED, "out of memory", NULL);
				break;
		}
	}
	/* a new byte of a message now held, or none held: its deadline follows */
	if (s->method != NULL && !s->finishing)
		h2_stream_progress(s, xip83_grpc_reader_partial(&s->reader) ||
						   (c->http && !c->h1_done && s->web != H2_WEB_SOCKET));
}

