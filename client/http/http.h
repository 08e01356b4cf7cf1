/*
 * http.h: HTTP/1.1 and WebSocket for the gateway's transport: a connection's
 * bytes in, requests, bodies and WebSocket message bytes out through
 * callbacks. It knows no sockets, no gRPC and no database: the transport
 * (client/grpc) owns the connection and writes the responses.
 *
 * Requests are parsed by Node's http-parser (Debian's libhttp-parser), one
 * at a time: a request begun before the previous one's response ended is
 * refused (no pipelining). A request's line and headers are held, lower
 * cased, in one buffer of at most max_header bytes until its request
 * callback returns; a request over it is refused TOO_LARGE before its
 * headers are whole. After xip83_http_websocket the bytes are WebSocket
 * frames, parsed and written by wslay's event API: pings are answered,
 * a close frame is answered and reported, a text message is refused (close
 * 1003), and a binary message's payload is handed on as it arrives, unbuffered,
 * so that its size and memory are the transport's to bound.
 *
 * Also here, for gRPC-Web: base64 both ways, the CORS origin list and the
 * preflight's allowed headers.
 */
#ifndef XIP83_HTTP_H
#define XIP83_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct Xip83Http Xip83Http;

/* A request header; pointers valid during the request callback only. */
typedef struct Xip83HttpHeader
{
	const char *name;			/* lower case */
	size_t		name_len;
	const char *value;
	size_t		value_len;
} Xip83HttpHeader;

typedef struct Xip83HttpRequest
{
	const char *method;			/* "GET", "POST", "OPTIONS", ... */
	const char *path;			/* the request target as sent */
	size_t		path_len;
	const Xip83HttpHeader *headers;
	size_t		n_headers;
	bool		upgrade;		/* Connection: upgrade with an Upgrade header */
	bool		keep_alive;		/* the connection may carry another request */
} Xip83HttpRequest;

typedef struct Xip83HttpCallbacks
{
	/* A request's first byte; false refuses it (the feed returns REFUSED). */
	bool		(*begin) (void *arg);
	/* The request line and headers are whole; false refuses it. */
	bool		(*request) (void *arg, const Xip83HttpRequest *req);
	/* Bytes of its body, chunked encoding undone. */
	void		(*body) (void *arg, const unsigned char *data, size_t len);
	/* The request is whole. */
	void		(*end) (void *arg);
	/* WebSocket: bytes of a binary message, then its end. */
	void		(*ws_data) (void *arg, const unsigned char *data, size_t len);
	void		(*ws_end) (void *arg);
	/* The peer closed the WebSocket (a close frame) or broke its protocol. */
	void		(*ws_closed) (void *arg);
	/* Takes up to len bytes for the peer: how many, 0 when it has no room now. */
	size_t		(*write) (void *arg, const unsigned char *data, size_t len);
} Xip83HttpCallbacks;

typedef enum Xip83HttpFeed
{
	XIP83_HTTP_OK,				/* every byte taken */
	XIP83_HTTP_BAD,				/* not HTTP/1.x: answer 400, close */
	XIP83_HTTP_TOO_LARGE,		/* headers over max_header: answer 431, close */
	XIP83_HTTP_REFUSED			/* a callback refused: close */
} Xip83HttpFeed;

extern Xip83Http *xip83_http_new(const Xip83HttpCallbacks *cb, void *arg, size_t max_header);
extern void xip83_http_free(Xip83Http *h);

/* Parses data: requests, or after xip83_http_websocket, WebSocket frames. */
extern Xip83HttpFeed xip83_http_feed(Xip83Http *h, const unsigned char *data, size_t len);

/* Memory the parser holds now: header buffer, WebSocket context. */
extern size_t xip83_http_memory(const Xip83Http *h);

/* The value of Sec-WebSocket-Accept for a Sec-WebSocket-Key (29 bytes with NUL). */
extern bool xip83_http_ws_accept(const char *key, size_t len, char out[29]);

/*
 * Switches the connection to WebSocket (the 101 response was written):
 * messages longer than max_message are refused with close 1009.
 */
extern bool xip83_http_websocket(Xip83Http *h, uint64_t max_message);
extern bool xip83_http_is_websocket(const Xip83Http *h);

/* Queues one binary message (copied); false when closing or out of memory. */
extern bool xip83_http_ws_send(Xip83Http *h, const unsigned char *msg, size_t len);
/* Queues the close frame; nothing can be queued after it. */
extern void xip83_http_ws_close(Xip83Http *h, uint16_t code);
/* Hands queued frames to the write callback; false on a fatal error. */
extern bool xip83_http_ws_flush(Xip83Http *h);
/* Messages queued and not yet handed to write. */
extern size_t xip83_http_ws_queued(const Xip83Http *h);
/* Close frames: ours written, the peer's received. */
extern bool xip83_http_ws_close_sent(const Xip83Http *h);
extern bool xip83_http_ws_close_received(const Xip83Http *h);

/* Base64 (RFC 4648, padded): writes 4 * ceil(len / 3) bytes, returns that. */
extern size_t xip83_base64_encode(const unsigned char *in, size_t len, char *out);

/* An incremental base64 decoder: padded groups may follow one another. */
typedef struct Xip83Base64
{
	unsigned char q[4];
	uint8_t		n;
} Xip83Base64;

/* Decodes into out (room for 3 * (len + 3) / 4 bytes): its length, or -1 when not base64. */
extern ssize_t xip83_base64_decode(Xip83Base64 *d, const unsigned char *in, size_t len,
								   unsigned char *out);

/* True when origin (len bytes) is in list ("a,b,c"; "*" allows any). */
extern bool xip83_http_origin_allowed(const char *list, const char *origin, size_t len);

/*
 * A preflight's Access-Control-Allow-Headers: the requested names that are
 * among those gRPC-Web clients send, comma separated, into out (NUL ended).
 */
extern size_t xip83_http_allow_headers(const char *requested, size_t len, char *out, size_t cap);

#endif
