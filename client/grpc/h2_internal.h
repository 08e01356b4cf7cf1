/*
 * h2_internal.h: the structures shared by the transport's files:
 * h2_server.c (the loop, listeners, drain, timers), h2_conn.c (a
 * connection's socket, TLS and nghttp2 session), h2_stream.c (nghttp2's
 * callbacks and the stream calls of h2_server.h) and h2_tls.c.
 *
 * Ownership: the server owns its connections (a list), a connection its
 * streams (a list, and nghttp2's stream user data). A stream is freed only in
 * nghttp2's stream-close callback or when its connection closes, a connection
 * only by conn_close at the top of the loop, never inside nghttp2's callbacks.
 */
#ifndef XIP83_H2_INTERNAL_H
#define XIP83_H2_INTERNAL_H

#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>

#include "h2_server.h"
#include "http/http.h"

typedef enum H2PollKind
{
	H2_POLL_LISTENER,
	H2_POLL_CONN,
	H2_POLL_WAKE,
	H2_POLL_WATCH				/* an Xip83Watch of the core's */
} H2PollKind;

/* The head of everything registered with epoll: data.ptr points at it. */
typedef struct H2Poll
{
	int			kind;			/* H2PollKind */
} H2Poll;

typedef struct H2Listener
{
	H2Poll		poll;
	int			fd;
	bool		tls;
	bool		paused;			/* out of descriptors: off epoll for a while */
	struct H2Listener *next;
} H2Listener;

/* What a chunk of n bytes of room costs: its allocation, header included. */
#define H2_CHUNK_COST(room) (sizeof(H2Chunk) + (room))

/*
 * A queued outgoing message: gRPC prefix and body, in data or, for a message
 * many streams send, in the shared chunk the entry points at (one reference
 * each). A shared chunk (xip83_h2_shared_new) lives until its last reference
 * goes: the caller's, and every queue's entry not yet written or dropped.
 */
typedef struct Xip83H2Shared H2Chunk;
struct Xip83H2Shared
{
	H2Chunk    *next;
	size_t		len;
	size_t		off;			/* bytes already handed to nghttp2 */
	bool		small;			/* room for H2_CHUNK_SMALL bytes: reused (Xip83H2Server.spare) */
	H2Chunk    *shared;			/* the bytes are shared->data, not data */
	uint32_t	refs;			/* of a shared chunk */
	unsigned char data[];
};

/*
 * Messages up to this size (prefix included) go in chunks of this room,
 * kept for reuse when written: a live delivery is one small message per
 * stream, hundreds of thousands a second, and malloc's fast bins full of
 * them made each larger allocation (libpq's results) sort them first.
 */
#define H2_CHUNK_SMALL 512
#define H2_CHUNK_SPARE 16384	/* spare chunks kept at most */

/* A connection's output buffer is filled up to about this much, then written. */
#define H2_OUT_FILL 65536

/* Requests of the largest size a connection may be receiving at once, by default. */
#define H2_PARTIAL_REQUESTS 4

typedef struct H2Conn H2Conn;

/* What a connection speaks: told by its first bytes, or by ALPN */
typedef enum H2Proto
{
	H2_PROTO_SNIFF,				/* nothing read yet */
	H2_PROTO_H2,
	H2_PROTO_H1					/* HTTP/1.1, perhaps a WebSocket after it */
} H2Proto;

/* What a stream's body carries */
typedef enum H2Web
{
	H2_WEB_NONE,				/* gRPC */
	H2_WEB_BINARY,				/* gRPC-Web: trailers as a last message */
	H2_WEB_TEXT,				/* gRPC-Web, base64 both ways */
	H2_WEB_SOCKET				/* a WebSocket: one message each, trailers last */
} H2Web;

struct Xip83H2Stream
{
	H2Conn	   *conn;
	int32_t		id;
	const Xip83GrpcMethod *method;	/* set when a method took the stream */
	void	   *data;
	H2Chunk    *head;
	H2Chunk    *tail;
	size_t		pending;		/* bytes queued, not yet handed to nghttp2 */
	size_t		held;			/* the memory the queue takes (xip83_h2_pending) */
	size_t		charged;		/* by the caller, xip83_h2_charge */
	Xip83GrpcReader reader;
	/* request headers, held (nghttp2_rcbuf references) until the request is whole */
	nghttp2_rcbuf **hdrs;		/* name, value, name, value, ... */
	uint32_t	n_hdrs;
	uint32_t	hdr_bytes;
	int			status;			/* grpc-status once finishing */
	char	   *message;		/* grpc-message, percent-encoded, or NULL */
	bool		headers_sent;	/* response HEADERS submitted */
	bool		finishing;		/* trailers go out after the queue */
	bool		end_sent;		/* a frame with END_STREAM left */
	bool		deferred;		/* the data provider is waiting for data */
	bool		over_low;		/* pending went over the low-water mark */
	bool		remote_done;	/* the client sent END_STREAM */
	bool		incomplete;		/* on the connection's incomplete list */
	uint8_t		web;			/* H2Web */
	bool		trailer_queued; /* a web stream's trailer message is in the queue */
	char	   *origin;			/* a web stream's allowed Origin, echoed */
	Xip83Base64 b64;			/* a text request's base64 state */
	uint32_t	ws_messages;	/* gRPC messages in the WebSocket message under way */
	uint64_t	progress_ms;	/* the last new byte of the part held */
	/* streams holding part of a request, by progress_ms: oldest first */
	Xip83H2Stream *in_prev;
	Xip83H2Stream *in_next;
	Xip83H2Stream *prev;
	Xip83H2Stream *next;
};

struct H2Conn
{
	H2Poll		poll;
	Xip83H2Server *srv;
	int			fd;
	SSL		   *ssl;			/* NULL for h2c */
	bool		handshaking;	/* TLS handshake not done */
	bool		out_blocked;	/* EPOLLOUT registered */
	bool		dirty;			/* on the server's dirty list: nghttp2 may have
								 * something to send */
	uint8_t		proto;			/* H2Proto */
	nghttp2_session *session;	/* HTTP/2 only */
	Xip83Http  *http;			/* HTTP/1.1 only */
	bool		h1_last;		/* HTTP/1.1: no request after this one */
	bool		h1_done;		/* HTTP/1.1: the request under way is whole */
	bool		h1_skip;		/* HTTP/1.1: answered; the rest of its request is read and dropped */
	unsigned char sniff[24];	/* the first bytes, until they tell */
	uint8_t		n_sniff;
	unsigned char *out;			/* bytes from nghttp2 not yet written */
	size_t		out_len;
	size_t		out_off;
	size_t		out_cap;
	size_t		partial;		/* bytes held by streams' partial messages */
	size_t		mem;			/* all the connection holds (h2_mem_add) */
	nghttp2_mem alloc;			/* nghttp2's allocations, charged to mem */
	uint64_t	since_ms;		/* accepted; then the last stream's end */
	bool		greeted;		/* the client's preface and first frame came */
	bool		closing;		/* a limit closes it: GOAWAY, then close */
	bool		out_used;		/* the out buffer held bytes since the last sweep */
	Xip83H2Stream *in_head;		/* streams holding part of a request */
	Xip83H2Stream *in_tail;
	int32_t    *notify;			/* streams to tell they are writable */
	size_t		n_notify;
	size_t		cap_notify;
	Xip83H2Stream *streams;
	H2Conn	   *prev;
	H2Conn	   *next;
	H2Conn	   *dirty_prev;
	H2Conn	   *dirty_next;
	uint64_t	serial;			/* the connection's number, counted from 1 */
};

struct Xip83H2Server
{
	Xip83H2Config cfg;
	int			epfd;
	int			wakefd;			/* eventfd: drain requests from signal handlers */
	uint64_t	flush_due;		/* the dirty connections are written then (0: none) */
	uint64_t	flushed_at;		/* when they last were */
	H2Poll		wake_poll;
	SSL_CTX    *tls;
	H2Listener *listeners;
	H2Conn	   *conns;
	H2Conn	   *dirty;			/* connections to flush, oldest first */
	H2Conn	   *dirty_tail;
	size_t		n_conns;
	uint64_t	serial;			/* connections accepted so far */
	size_t		n_streams;
	size_t		pending;		/* Xip83H2Stream.held, all streams */
	size_t		mem;			/* the process account: every H2Conn.mem */
	size_t		input;			/* every H2Conn.partial */
	uint64_t	reached[XIP83_H2_LIMITS];
	size_t		freed;			/* memory given back since the last trim */
	size_t		freed_then;		/* freed, at the last sweep */
	Xip83Watch **watched;		/* the caller's listeners (xip83_h2_watch_listener) */
	size_t		n_watched;
	Xip83Timer	sweep_timer;
	uint64_t	sweep_ms;
	bool		auto_partial;	/* max_partial follows the largest max_message */
	H2Chunk    *spare;			/* written small chunks, for reuse */
	size_t		n_spare;
	const Xip83GrpcMethod **methods;
	size_t		n_methods;
	Xip83Timers timers;
	Xip83Timer	drain_timer;
	Xip83Timer	accept_timer;
	bool		draining;
	bool		drained;		/* the drain's grace ran out */
	nghttp2_session_callbacks *callbacks;
	nghttp2_option *option;
};

/* h2_server.c */
extern void h2_mem_add(H2Conn *c, size_t n);
extern void h2_mem_sub(H2Conn *c, size_t n);
extern int	h2_mem_room(H2Conn *c, size_t n);
extern void h2_accept_pause(Xip83H2Server *srv);

/* h2_conn.c */
extern void h2_conn_accept(Xip83H2Server *srv, H2Listener *l);
extern void h2_conn_event(H2Conn *c, uint32_t events);
extern void h2_conn_dirty(H2Conn *c);
extern bool h2_conn_flush(H2Conn *c);
extern void h2_conn_close(H2Conn *c);
extern void h2_conn_goaway(H2Conn *c);
extern unsigned char *h2_conn_out_reserve(H2Conn *c, size_t n);
extern void h2_conn_limit(H2Conn *c, Xip83H2Limit why);
extern void h2_conn_sweep(H2Conn *c, uint64_t now);

/* h2_stream.c */
extern void h2_stream_callbacks(nghttp2_session_callbacks *cb);
extern void h2_stream_free(Xip83H2Stream *s, bool cancelled);
extern void h2_stream_notify(H2Conn *c);
extern void h2_chunk_free(Xip83H2Server *srv, H2Chunk *c);
extern void h2_stream_progress(Xip83H2Stream *s, bool incomplete);
extern void h2_stream_limit(Xip83H2Stream *s, Xip83H2Limit why, const char *message);

extern void h2_stream_finish(Xip83H2Stream *s, int status, const char *message,
							 const char *accept_encoding);
extern void h2_stream_reader_track(Xip83H2Stream *s, uint32_t cap_before);

/* h2_request.c */
extern void h2_stream_request(Xip83H2Stream *s, const Xip83H2Header *hv, size_t n);
extern void h2_stream_open(Xip83H2Stream *s, const Xip83GrpcMethod *m, const Xip83H2Header *hv,
						   size_t n);
extern const Xip83GrpcMethod *h2_stream_find(Xip83H2Server *srv, const char *path, size_t len);
extern bool h2_stream_bidi(Xip83H2Server *srv, const char *path, size_t len);
extern void h2_stream_remote_end(Xip83H2Stream *s);
extern size_t h2_stream_queue_take(Xip83H2Stream *s, uint8_t *buf, size_t len);
extern Xip83H2Stream *h2_stream_new(H2Conn *c, int32_t id);
extern void h2_stream_respond(Xip83H2Stream *s, const char *status, const Xip83H2Header *hv,
							  size_t n, bool body);
extern void h2_stream_take(Xip83H2Stream *s, H2Chunk *c);
extern void h2_stream_incoming(Xip83H2Stream *s, const unsigned char *data, size_t len);
extern size_t h2_stream_response_headers(Xip83H2Stream *s, Xip83H2Header *hv, const char *name,
										 const char *value);

/* h2_web.c */
extern bool h2_web_start(H2Conn *c);
extern bool h2_web_recv(H2Conn *c, const unsigned char *data, size_t len);
extern bool h2_web_fill(H2Conn *c);
extern bool h2_web_open(H2Conn *c);
extern void h2_web_goaway(H2Conn *c);
extern void h2_web_free(H2Conn *c);
extern void h2_web_respond(Xip83H2Stream *s, const char *status, const Xip83H2Header *hv, size_t n,
						   bool body);
extern bool h2_web_trailer(Xip83H2Stream *s);
extern H2Chunk *h2_web_text(Xip83H2Server *srv, const unsigned char *bytes, size_t len);
extern void h2_web_preflight(Xip83H2Stream *s, const char *origin, size_t origin_len,
							 const char *requested, size_t requested_len);
extern void h2_web_cut(Xip83H2Stream *s);
extern void h2_web_fail(Xip83H2Stream *s, uint16_t code);

/* h2_tls.c */
extern SSL_CTX *h2_tls_context(const char *cert_file, const char *key_file, char *err, size_t errlen);
extern int	h2_tls_alpn(SSL *ssl);

#endif
