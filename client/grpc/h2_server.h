/*
 * h2_server.h: a gRPC server transport on HTTP/2 (nghttp2), one thread, one
 * epoll loop, for the gateway's session core to plug into.
 *
 * The server listens on TCP sockets, plaintext HTTP/2 with prior knowledge
 * ("h2c", what gRPC clients speak without TLS; no HTTP/1.1 Upgrade) or TLS
 * (OpenSSL, ALPN "h2"). The core registers methods by path; a request for
 * any other path is answered UNIMPLEMENTED, trailers only. Browsers reach
 * the same methods on the same listeners (a connection that does not start
 * with the HTTP/2 preface, or agrees ALPN "http/1.1", is HTTP/1.1):
 * gRPC-Web over HTTP/1.1 or HTTP/2, and the methods named in
 * websocket_paths over a WebSocket. Their streams are Xip83H2Streams like
 * any other: the same callbacks, calls, bounds and drain.
 * Everything is non-blocking; callbacks run on the loop's thread, and the
 * calls below must be made from it too (except xip83_h2_drain_async).
 *
 * A stream's life, as a method sees it: open (with the request headers) →
 * message* (each a whole gRPC message, in order) → half_close (the client
 * sent END_STREAM) → closed. closed comes exactly once for every stream
 * whose open returned XIP83_GRPC_OK, last, with cancelled set when the
 * stream ended before the server's end of it (END_STREAM) left: RST_STREAM
 * from the client, a lost connection, also when the client's own END_STREAM
 * came first and the method had finished the stream but its trailers were
 * still queued (grpc-js cancels with both at once); the stream handle is
 * invalid after it returns. Between
 * open and closed the method may send messages and finish the stream, from
 * the callbacks or from anywhere on the loop (a timer, a database socket).
 *
 * Sending never blocks: messages queue per stream and leave as HTTP/2 flow
 * control lets them (the client's window). xip83_h2_pending gives the memory
 * a stream's queue takes so the core can bound a slow client (stop producing,
 * or end the stream RESOURCE_EXHAUSTED), and the writable callback says when
 * a queue that went over the server's low-water mark drained below it again.
 * Received messages are delivered as soon as they are whole; a message
 * longer than the method's limit ends that stream alone with
 * RESOURCE_EXHAUSTED (the connection and its other streams go on).
 *
 * Bounds: what a client makes the transport hold is charged, as the memory
 * it really takes (a queued message's whole chunk, partly received
 * messages, nghttp2's own allocations, the output buffer), to its
 * connection and to the process. A send or a received byte that would take
 * a connection over max_conn_memory (or its input over max_conn_input), or
 * the process over max_memory while the connection holds more than its
 * share, ends that stream alone with RESOURCE_EXHAUSTED; nghttp2's own
 * memory over the bound closes that connection alone. Connections past
 * max_connections, or arriving while the process is over max_memory, are
 * closed at accept. Timeouts: a connection must finish its TLS handshake and
 * HTTP/2 preface within handshake_ms, a connection without streams is closed
 * (GOAWAY) after idle_ms, and a stream holding part of a request (headers or
 * a message) that gets no new byte of it for request_ms is ended
 * RESOURCE_EXHAUSTED (a header block: its connection is closed). Running out
 * of descriptors pauses every listener for a moment, the caller's too
 * (xip83_h2_watch_listener). Each limit reached is counted (Xip83H2Stats).
 *
 * Drain (xip83_h2_drain, or xip83_h2_drain_async from a signal handler):
 * stop listening, tell the core (on_drain), send GOAWAY on every connection,
 * end every unfinished stream with UNAVAILABLE after what it has queued, and
 * close connections as their streams end; connections still open after
 * drain_ms are closed hard. xip83_h2_run then returns.
 */
#ifndef XIP83_H2_SERVER_H
#define XIP83_H2_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grpc_frame.h"
#include "loop_timer.h"

typedef struct Xip83H2Server Xip83H2Server;
typedef struct Xip83H2Stream Xip83H2Stream;
typedef struct Xip83H2Shared Xip83H2Shared;

/* A request header; pointers valid during the open callback only. */
typedef struct Xip83H2Header
{
	const char *name;			/* lower case, pseudo-headers included */
	size_t		name_len;
	const char *value;
	size_t		value_len;
} Xip83H2Header;

/* A method the server serves; the struct must outlive the server. */
typedef struct Xip83GrpcMethod
{
	const char *path;			/* "/package.Service/Method" */
	uint32_t	max_message;	/* largest request message; 0: the server's */

	/*
	 * A stream opened. Return XIP83_GRPC_OK to take it, or a status to refuse
	 * it with (answered trailers-only; no other callback follows).
	 */
	int			(*open) (Xip83H2Stream *s, const Xip83H2Header *headers, size_t n_headers);
	/* One whole request message; msg is valid during the call only. */
	void		(*message) (Xip83H2Stream *s, const unsigned char *msg, size_t len);
	/* The client will send nothing more (may be NULL). */
	void		(*half_close) (Xip83H2Stream *s);
	/* The send queue drained below the low-water mark (may be NULL). */
	void		(*writable) (Xip83H2Stream *s);
	/* The stream is gone; the last call for it. */
	void		(*closed) (Xip83H2Stream *s, bool cancelled);
	void	   *arg;			/* for the method's own use: xip83_h2_method(s)->arg */
} Xip83GrpcMethod;

/* Settings; a zero field takes its default. */
typedef struct Xip83H2Config
{
	uint32_t	max_streams;	/* concurrent streams per connection (1000) */
	uint32_t	max_message;	/* largest request message (4 MiB, gRPC's default) */
	size_t		low_water;		/* writable fires when pending drops below (256 KiB) */
	uint32_t	drain_ms;		/* drain's grace before hard closes (5000) */
	size_t		max_partial;	/* bytes of partly received messages per connection
								 * (max_conn_input; 4 of the largest max_message) */
	size_t		max_conn_memory;	/* all a connection holds (128 MiB) */
	size_t		max_memory;		/* all connections together (half the machine's
								 * or cgroup's memory, at least 256 MiB) */
	uint32_t	max_connections;	/* open at once (RLIMIT_NOFILE's soft limit
									 * less 64) */
	uint32_t	handshake_ms;	/* TLS handshake and HTTP/2 preface (5000) */
	uint32_t	idle_ms;		/* a connection without streams (300000) */
	uint32_t	request_ms;		/* a partly received request with no new byte (10000) */
	/*
	 * The loop writes what it queued to the clients at most once in this
	 * many ms (0: at the end of every turn that queued some): under load,
	 * fewer sends, each carrying more, for up to that much latency; a write
	 * after a quiet spell leaves at once.
	 */
	uint32_t	write_hold_ms;
	const char *cors_origins;	/* browsers' origins allowed, "a,b" or "*" (none) */
	const char *const *websocket_paths;	/* bidirectional methods: served over
										 * WebSocket, refused over gRPC-Web
										 * (NULL ended; may be NULL) */
	/*
	 * This server is one of `loops` serving the process on threads of their
	 * own (0: alone): max_memory and max_connections, the process's, are
	 * split evenly among them, and its listeners share their port with the
	 * others' (SO_REUSEPORT: the kernel spreads connections among them).
	 */
	uint32_t	loops;
	void		(*on_drain) (void *arg);	/* drain began (may be NULL) */
	void	   *drain_arg;
} Xip83H2Config;

/* Limits reached, as counted in Xip83H2Stats.reached. */
typedef enum Xip83H2Limit
{
	XIP83_H2_LIMIT_CONNECTIONS,	/* refused at accept: max_connections */
	XIP83_H2_LIMIT_MEMORY,		/* a stream ended or a connection refused: max_memory */
	XIP83_H2_LIMIT_CONN_MEMORY,	/* a stream ended or a connection closed: max_conn_memory */
	XIP83_H2_LIMIT_CONN_INPUT,	/* a stream ended: max_partial */
	XIP83_H2_LIMIT_HANDSHAKE,	/* a connection closed: handshake_ms */
	XIP83_H2_LIMIT_IDLE,		/* a connection closed: idle_ms */
	XIP83_H2_LIMIT_REQUEST,		/* a stream or connection ended: request_ms */
	XIP83_H2_LIMIT_DESCRIPTORS, /* listeners paused: out of descriptors */
	XIP83_H2_LIMITS
} Xip83H2Limit;

/* Names of Xip83H2Limit, for metrics. */
extern const char *const xip83_h2_limit_names[XIP83_H2_LIMITS];

typedef struct Xip83H2Stats
{
	size_t		connections;
	size_t		streams;		/* open streams taken by a method */
	size_t		pending;		/* memory queued in all streams, not yet sent */
	size_t		memory;			/* the process account: all connections hold */
	size_t		input;			/* partly received messages, all connections */
	uint64_t	reached[XIP83_H2_LIMITS];	/* each limit, times reached */
	const Xip83H2Config *cfg;	/* the bounds in force */
} Xip83H2Stats;

/* A new server, or NULL with err set. */
extern Xip83H2Server *xip83_h2_server_new(const Xip83H2Config *cfg, char *err, size_t errlen);
extern void xip83_h2_server_free(Xip83H2Server *srv);

/* Serves m; false when the path is taken or memory is short. */
extern bool xip83_h2_register(Xip83H2Server *srv, const Xip83GrpcMethod *m);

/* Certificate chain and key (PEM files) for TLS listeners; false with err set. */
extern bool xip83_h2_tls_files(Xip83H2Server *srv, const char *cert_file, const char *key_file,
							   char *err, size_t errlen);

/*
 * Listens on host:port (port "0": any free one), TLS or h2c. Returns the port
 * bound, or -1 with err set. TLS needs xip83_h2_tls_files first.
 */
extern int	xip83_h2_listen(Xip83H2Server *srv, const char *host, const char *port, bool tls,
							char *err, size_t errlen);

/*
 * A non-blocking TCP listening socket on host:port (port "0": any free one;
 * the port bound goes to *bound), or -1 with err set. For listeners of the
 * caller's own (xip83_h2_watch).
 */
extern int	xip83_tcp_listen(const char *host, const char *port, int *bound, char *err,
							 size_t errlen);

/*
 * The memory of the machine, or of the process's cgroup (memory.max) when
 * that is less; 0 when neither can be read. Bounds' defaults derive from it.
 */
extern size_t xip83_machine_memory(void);

/* Runs the loop until a drain has finished; false on an epoll failure. */
extern bool xip83_h2_run(Xip83H2Server *srv);

extern void xip83_h2_drain(Xip83H2Server *srv);
/* Asks the loop to drain; async-signal-safe. */
extern void xip83_h2_drain_async(Xip83H2Server *srv);

extern void xip83_h2_stats(const Xip83H2Server *srv, Xip83H2Stats *out);

/* Timers on the server's loop (see loop_timer.h). */
extern bool xip83_h2_timer_start(Xip83H2Server *srv, Xip83Timer *t, uint64_t delay_ms,
								 Xip83TimerFn fire, void *arg);
extern bool xip83_h2_timer_start_at(Xip83H2Server *srv, Xip83Timer *t, uint64_t due_ms,
									Xip83TimerFn fire, void *arg);
extern void xip83_h2_timer_stop(Xip83H2Server *srv, Xip83Timer *t);

/*
 * Other file descriptors on the server's loop (database sockets, a metrics
 * listener): the struct lives in the caller's memory for as long as it is
 * watched. fire gets the epoll events (EPOLLIN, EPOLLOUT, EPOLLERR, ...);
 * level-triggered.
 */
typedef void (*Xip83WatchFn) (void *arg, uint32_t events);
/* Set fd to -1 before the first xip83_h2_watch. */
typedef struct Xip83Watch
{
	int			poll_kind;		/* the loop's own */
	int			fd;				/* -1: not watched */
	Xip83WatchFn fire;
	void	   *arg;
} Xip83Watch;

/*
 * Watches fd for events (EPOLLIN, EPOLLOUT), or changes what is watched;
 * also re-adds a descriptor the kernel dropped because it was closed and its
 * number reused. false with errno set.
 */
extern bool xip83_h2_watch(Xip83H2Server *srv, Xip83Watch *w, int fd, uint32_t events,
						   Xip83WatchFn fire, void *arg);
/* Stops watching (a closed descriptor is fine). */
extern void xip83_h2_unwatch(Xip83H2Server *srv, Xip83Watch *w);

/*
 * A listening socket of the caller's (xip83_tcp_listen), watched for
 * EPOLLIN like xip83_h2_watch; its fire should take connections with
 * xip83_h2_accept, so that when descriptors run out every listener, this one
 * too, pauses for a moment instead of spinning the loop. Stopped with
 * xip83_h2_unwatch.
 */
extern bool xip83_h2_watch_listener(Xip83H2Server *srv, Xip83Watch *w, int fd, Xip83WatchFn fire,
									void *arg);
/* accept4 (non-blocking, close-on-exec) on a listener: a descriptor or -1 with errno. */
extern int	xip83_h2_accept(Xip83H2Server *srv, int listen_fd);

/*
 * Queues one message (the gRPC prefix is added here). False when the stream
 * was finished already or memory is short (the message is not queued).
 */
extern bool xip83_h2_send(Xip83H2Stream *s, const void *msg, size_t len);

/*
 * One message for many streams: its bytes (prefix included) are made once
 * and every stream's queue holds a reference, not a copy; each stream still
 * counts the whole message in its pending bytes. NULL when memory is short
 * or the message too long. The caller's reference goes with
 * xip83_h2_shared_release (the server need not be there any more); the bytes
 * live on until every stream wrote or dropped them.
 */
extern Xip83H2Shared *xip83_h2_shared_new(const void *msg, size_t len);
extern void xip83_h2_shared_release(Xip83H2Shared *m);
/* The message's bytes (without the prefix). */
extern const unsigned char *xip83_h2_shared_bytes(const Xip83H2Shared *m, size_t *len);
/* Queues m on s, as xip83_h2_send would queue its bytes. */
extern bool xip83_h2_send_shared(Xip83H2Stream *s, Xip83H2Shared *m);

/*
 * Sends the response headers now, with one metadata pair name: value (lower
 * case; none when name is NULL), rather than with the first message: a
 * client may wait for them before it expects any. Does nothing once headers
 * were sent or the stream finished.
 */
extern void xip83_h2_send_headers(Xip83H2Stream *s, const char *name, const char *value);

/*
 * Ends the stream after its queued messages with grpc-status and, when
 * message is not NULL, grpc-message. Later calls do nothing.
 */
extern void xip83_h2_finish(Xip83H2Stream *s, int status, const char *message);

/*
 * Memory the stream's queue takes, for what is not yet handed to HTTP/2:
 * each message's chunk as allocated (a small message takes a whole
 * H2_CHUNK_SMALL chunk), a shared message's bytes counted whole.
 */
extern size_t xip83_h2_pending(const Xip83H2Stream *s);

/*
 * Charges memory the caller holds for a stream (its topic sets, say) to the
 * stream's connection and to the process, under the same bounds as the
 * transport's own (max_conn_memory, max_memory): false, with nothing
 * charged, when n more bytes would pass one; the caller then refuses what
 * would have taken them (RESOURCE_EXHAUSTED). xip83_h2_uncharge gives bytes
 * back; whatever a stream still has charged goes back after its closed
 * callback, so the caller need not uncharge on close.
 */
extern bool xip83_h2_charge(Xip83H2Stream *s, size_t n);
extern void xip83_h2_uncharge(Xip83H2Stream *s, size_t n);
/* True once the stream was finished (by the method, a limit or a drain). */
extern bool xip83_h2_finished(const Xip83H2Stream *s);
/*
 * The grpc-status it was finished with: the method's, a limit's or a
 * drain's; OK while it is not finished, or when a reset or a lost connection
 * ended it.
 */
extern int	xip83_h2_status(const Xip83H2Stream *s);

extern const Xip83GrpcMethod *xip83_h2_method(const Xip83H2Stream *s);
extern Xip83H2Server *xip83_h2_server(const Xip83H2Stream *s);
/* The number of the stream's connection: the same for every stream on it, never reused. */
extern uint64_t xip83_h2_conn_serial(const Xip83H2Stream *s);
extern void xip83_h2_set_data(Xip83H2Stream *s, void *data);
extern void *xip83_h2_data(const Xip83H2Stream *s);

#endif
