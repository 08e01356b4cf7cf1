/*
 * bench_gateway: a load client on nghttp2 for xip83-gateway, and the figures
 * of many streams on one gateway process.
 *
 *   bench_gateway [--streams N] [--conns C] [--topics T] [--universe K]
 *                 [--rate R] [--seconds S] [--pool P] [--compare M] [--own]
 *                 [--storm [--rows R] [--fresh PCT]] [--proto h2|grpc-web|ws[,...]]
 *                 [--loops L[,L...]] [--write-hold-ms H]
 *
 * Starts build/xip83-gateway (XIP83_GATEWAY) on the database of PGDATABASE,
 * opens N bidirectional v3 Subscribe streams over C HTTP/2 connections (one
 * thread, epoll), each with one Mutate adding T topics drawn from K, and
 * waits for every Started and CatchupComplete. Then a writer thread inserts
 * R rows/s on random topics of the K for S seconds, each row's data its
 * insert time; the client reads every frame (protobuf-c) and takes the
 * latency from the insert to the frame's arrival. Prints: time to open and
 * catch up every stream, the gateway's RSS and its database connections
 * (pg_stat_activity) with them open, rows expected and received, latency
 * p50/p99, and the gateway's CPU during the live phase (and the client's:
 * the figures are the gateway's only while the client is not saturated).
 * With --compare M the live phase runs first with M streams open, then again
 * once all N are (the others join from the newest id: nothing to replay), and
 * the ratio of the gateway's CPU per second in the two is printed: what the
 * fan-out to N streams costs beyond M at the same rows/s. Keepalive Pings
 * are answered.
 *
 * --own: no topic is shared; stream i holds topics i*T .. i*T+T-1, and the
 * rows go to random topics of the open streams, each to one stream. With
 * --compare the two live phases then deliver as many rows a second, and the
 * ratio is what the streams that get none cost: N-M idle streams.
 *
 * --storm: a reconnect storm over stored rows instead of the live phase. R
 * rows (1,000,000) are loaded over the K topics first; every stream's Mutate
 * carries each topic's last id as its cursor (so each wave's answer is
 * "nothing new", which the server must still prove), and all streams open at
 * once. --fresh PCT then writes rows above the floors on PCT% of the topics
 * before the storm. Prints the time until every CatchupComplete, the
 * database's CPU (every process of the server) and the gateway's during it,
 * then the same catch-ups done node-style straight on the database: the v3
 * node's query (per topic a LATERAL ... ORDER BY id LIMIT 64, topics in
 * chunks of 256, a max(id) ceiling first) on P connections in parallel, with
 * its wall time, its database CPU and the ratios.
 *
 * --proto: the same streams and live phase as a browser opens them, one
 * protocol after another in one run, each on a gateway of its own (its RSS
 * is theirs alone): h2 as above; grpc-web, N SubscribeGroupMessages calls
 * over HTTP/1.1, one connection each (binary gRPC-Web, the response
 * chunked), open and caught up once every call's headers arrived and the
 * gateway's metrics show no wave left (the server streams have no
 * CatchupComplete); ws, N v3 Subscribe streams over WebSocket (subprotocol
 * xip83.v1), one connection each. Connections open at most --window at a
 * time, as the gateway's listen backlog takes them. The figures' cases then
 * name the protocol and the rate, so each protocol is one row of a table.
 *
 * --rate takes a list too (R1,R2,... rising): the live phase runs at each on
 * the same streams, until one's p99 passes 50 ms or the writer falls behind,
 * and the highest rate held at p99 <= 50 ms is printed. --loops L,...: the
 * whole phase again on a gateway of its own with --loops L each (the cases
 * name it), so 1 and 2 loops compare in one run. --write-hold-ms H: the
 * gateway's option of that name (the cases add hold=H).
 *
 * XIP83_ANCHOR: the binary of the node-style Go server (the anchor, built
 * outside this repository by its own README). After each gateway phase the
 * same phase runs again with the anchor as the server (without --metrics
 * and --loops, which it lacks; its cases add server=anchor), and the ratios
 * anchor / gateway of CPU per delivery, RSS and p99 are printed. The anchor
 * serves HTTP/2 Subscribe only: not with --storm or --proto grpc-web, ws.
 */
#define _GNU_SOURCE				/* memmem */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>
#include <openssl/evp.h>

#include "testlib.h"
#include "xip83/mls_api.pb-c.h"

typedef struct Conn Conn;

/* how the streams reach the gateway (--proto) */
typedef enum Proto
{
	PROTO_H2,					/* gRPC over HTTP/2, many streams a connection */
	PROTO_WEB,					/* gRPC-Web over HTTP/1.1, one call a connection */
	PROTO_WS					/* Subscribe over a WebSocket, one a connection */
} Proto;

static const char *const proto_names[] = {"h2", "grpc-web", "ws"};

/* where an HTTP/1.1 connection's response is */
typedef enum H1State
{
	H1_HEAD,					/* the status line and headers */
	H1_SIZE,					/* a chunk's size line */
	H1_DATA,					/* a chunk's bytes */
	H1_CRLF,					/* the CRLF after them */
	H1_WS,						/* WebSocket frames */
	H1_DONE						/* the last chunk came: nothing more is read */
} H1State;

typedef struct Call
{
	Conn	   *conn;
	int32_t		id;
	unsigned char *req;			/* the gRPC message to send, then nothing (held open) */
	size_t		req_len;
	size_t		req_off;
	unsigned char *in;			/* response bytes not yet parsed */
	size_t		in_len;
	size_t		in_cap;
	int		   *topics;			/* its topics' numbers in the universe */
	bool		started;
	bool		caught_up;
	bool		closed;
} Call;

struct Conn
{
	int			fd;
	nghttp2_session *h2;
	unsigned char *out;
	size_t		out_len;
	size_t		out_off;
	size_t		out_cap;
	bool		want_out;
	bool		connected;		/* its connect() completed: writes may start */
	/* HTTP/1.1 (grpc-web, ws): its one call and the response read so far */
	Call	   *call;
	unsigned char *in;
	size_t		in_len;
	size_t		in_cap;
	H1State		state;
	size_t		chunk_left;
	char		ws_accept[32];	/* the Sec-WebSocket-Accept owed to its key */
};

static int	n_streams = 10000,
			n_conns = 100,
			n_topics = 10,
			universe = 10000,
			rate = 2000,
			seconds = 10,
			pool = 4,
			compare = 0;
static int	rates[8];			/* --rate's list; rate: the one running */
static int	n_rates;
static int	loops_list[8];		/* --loops: a gateway each; gw_loops: the one running */
static int	n_loops_list;
static int	gw_loops;
static int	hold_ms = -1;		/* --write-hold-ms for the gateway; -1: its default */
static double last_p99;			/* the last live phase's, ms */
static double last_us;			/* and its server CPU per delivery, us */
static const char *anchor;		/* XIP83_ANCHOR: the node-style server's binary */
static bool on_anchor;			/* the phase's server is the anchor */
static int	n_open;				/* streams submitted so far */
static int	n_target;			/* streams asked of SubmitStreams */
static Proto proto;
static int	window = 500;		/* HTTP/1.1 connections opening at once */
static int	opening;			/* HTTP/1.1 connections not answered yet */
static int	gw_port;
static int	metrics_port;
static Call *phase_calls;		/* the phase's streams, n_streams */
static Conn *phase_conns;		/* its connections, n_conns */
static int	ep;
static unsigned int draw_seed;	/* the streams' topics: seed 7 each phase */
static bool storm;
static bool own;				/* each stream's topics its own (--own) */
static long storm_rows = 1000000;
static double fresh_pct;
static int64_t *floors;			/* per topic of the universe: the storm's cursor, its last id */
static int	started,
			caught_up,
			closed_calls;
static int64_t received;
static double *lat;				/* ms */
static size_t n_lat,
			cap_lat;
static bool measuring;
static atomic_long written;
static atomic_bool stop_writer;

static double
NowMs(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* A gRPC length-prefixed message of len bytes: the prefix written, the bytes to pack after it. */
static unsigned char *
Prefixed(size_t len)
{
	unsigned char *m = malloc(len + 5);

	if (m == NULL)
		tl_fatal("out of memory");
	m[0] = 0;
	m[1] = (unsigned char) (len >> 24);
	m[2] = (unsigned char) (len >> 16);
	m[3] = (unsigned char) (len >> 8);
	m[4] = (unsigned char) len;
	return m;
}

/* Bytes for an HTTP/1.1 connection to send, after those it has not sent yet. */
static void
OutAppend(Conn *k, const void *p, size_t len)
{
	if (k->out_len + len > k->out_cap)
	{
		k->out_cap = (k->out_len + len) * 2;
		if ((k->out = realloc(k->out, k->out_cap)) == NULL)
			tl_fatal("out of memory");
	}
	memcpy(k->out + k->out_len, p, len);
	k->out_len += len;
	k->want_out = true;
}

/* One WebSocket frame, final, masked as every client's frame must be (RFC 6455 5.3). */
static void
WsSend(Conn *k, int opcode, const unsigned char *p, size_t len)
{
	unsigned char h[14];
	size_t		n = 0;
	uint32_t	key = (uint32_t) random();
	unsigned char *masked = malloc(len + 1);

	if (masked == NULL)
		tl_fatal("out of memory");

	h[n++] = (unsigned char) (0x80 | opcode);
	if (len < 126)
		h[n++] = (unsigned char) (0x80 | len);
	else if (len < 65536)
	{
		h[n++] = 0x80 | 126;
		h[n++] = (unsigned char) (len >> 8);
		h[n++] = (unsigned char) len;
	}
	else
	{
		h[n++] = 0x80 | 127;
		for (int b = 7; b >= 0; b--)
			h[n++] = (unsigned char) ((uint64_t) len >> (8 * b));
	}
	memcpy(h + n, &key, 4);
	for (size_t i = 0; i < len; i++)
		masked[i] = p[i] ^ h[n + i % 4];
	n += 4;
	OutAppend(k, h, n);
	OutAppend(k, masked, len);
	free(masked);
}

/*
 * Answers a keepalive Ping: over HTTP/2 a Pong joins what the stream's
 * request body sends, over a WebSocket it is a message of its own.
 */
static void
Pong(Call *c, uint64_t nonce)
{
	Xmtp__Mls__Api__V1__SubscribeRequest req = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__INIT;
	Xmtp__Mls__Api__V1__SubscribeRequest__V1 v1 = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__INIT;
	Xmtp__Mls__Api__V1__Pong pong = XMTP__MLS__API__V1__PONG__INIT;
	size_t		len;
	unsigned char *m;

	pong.nonce = nonce;
	v1.request_case = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__REQUEST_PONG;
	v1.pong = &pong;
	req.version_case = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__VERSION_V1;
	req.v1 = &v1;
	len = xmtp__mls__api__v1__subscribe_request__get_packed_size(&req);
	m = Prefixed(len);
	xmtp__mls__api__v1__subscribe_request__pack(&req, m + 5);
	if (c->conn->h2 == NULL)
		WsSend(c->conn, 0x2, m, len + 5);
	else
	{
		c->req = realloc(c->req, c->req_len + 5 + len);
		memcpy(c->req + c->req_len, m, len + 5);
		c->req_len += 5 + len;
		nghttp2_session_resume_data(c->conn->h2, c->id);
	}
	free(m);
}

/* A varint at p: the byte after it, or NULL past end. */
static const unsigned char *
Varint(const unsigned char *p, const unsigned char *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; p < end && shift < 64; shift += 7)
	{
		*v |= (uint64_t) (*p & 0x7f) << shift;
		if (!(*p++ & 0x80))
			return p;
	}
	return NULL;
}

/* The body of length-delimited field num in [p, end), the first one; false when absent. */
static bool
Field(const unsigned char *p, const unsigned char *end, uint64_t num, const unsigned char **body,
	  size_t *len)
{
	uint64_t	key,
				v;

	while (p != NULL && p < end && (p = Varint(p, end, &key)) != NULL)
	{
		switch (key & 7)
		{
			case 0:
				p = Varint(p, end, &v);
				break;
			case 1:
				p += 8;
				break;
			case 5:
				p += 4;
				break;
			case 2:
				if ((p = Varint(p, end, &v)) == NULL || v > (uint64_t) (end - p))
					return false;
				if (key >> 3 == num)
				{
					*body = p;
					*len = (size_t) v;
					return true;
				}
				p += v;
				break;
			default:
				return false;
		}
	}
	return false;
}

/* A row received; its data is its insert time, so while measuring, a latency. */
static void
Delivered(const unsigned char *data, size_t len, double now)
{
	double		sent;

	received++;
	if (!measuring || len < sizeof(double))
		return;
	memcpy(&sent, data, sizeof(double));
	if (n_lat == cap_lat)
	{
		cap_lat = cap_lat ? cap_lat * 2 : 65536;
		lat = realloc(lat, cap_lat * sizeof(double));
	}
	lat[n_lat++] = now - sent;
}

/*
 * A live Messages frame read at the wire level, without unpacking it into
 * objects: at 200,000 deliveries/s the client's own parsing would be what
 * is measured. False when the frame is something else.
 */
static bool
LiveMessages(const unsigned char *msg, size_t len, double now)
{
	const unsigned char *v1,
			   *m,
			   *end;
	size_t		v1_len,
				m_len;

	if (!Field(msg, msg + len, 1, &v1, &v1_len) || !Field(v1, v1 + v1_len, 1, &m, &m_len))
		return false;
	for (end = m + m_len; Field(m, end, 1, &v1, &v1_len); m = v1 + v1_len)
	{
		const unsigned char *gv1,
				   *data = NULL;
		size_t		gv1_len,
					data_len = 0;

		if (Field(v1, v1 + v1_len, 1, &gv1, &gv1_len))
			Field(gv1, gv1 + gv1_len, 4, &data, &data_len);
		Delivered(data, data_len, now);
	}
	return true;
}

/* A gRPC-Web SubscribeGroupMessages response: one GroupMessage, V1 (1), its data (4). */
static void
WebFrame(const unsigned char *msg, size_t len)
{
	const unsigned char *v1,
			   *data = NULL;
	size_t		v1_len,
				data_len = 0;

	if (!Field(msg, msg + len, 1, &v1, &v1_len))
		tl_fatal("a gRPC-Web response that is not a GroupMessage");
	Field(v1, v1 + v1_len, 4, &data, &data_len);
	Delivered(data, data_len, NowMs(CLOCK_REALTIME));
}

static void
Frame(Call *c, const unsigned char *msg, size_t len)
{
	double		now = NowMs(CLOCK_REALTIME);
	Xmtp__Mls__Api__V1__SubscribeResponse *r;

	if (LiveMessages(msg, len, now))
		return;
	r = xmtp__mls__api__v1__subscribe_response__unpack(NULL, len, msg);
	if (r == NULL || r->v1 == NULL)
		tl_fatal("a response that is not a SubscribeResponse");
	switch (r->v1->response_case)
	{
		case XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_STARTED:
			c->started = true;
			started++;
			break;
		case XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_PING:
			Pong(c, r->v1->ping->nonce);
			break;
		case XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_CATCHUP_COMPLETE:
			c->caught_up = true;
			caught_up++;
			break;
		case XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_MESSAGES:
			for (size_t i = 0; i < r->v1->messages->n_group_messages; i++)
			{
				Xmtp__Mls__Api__V1__GroupMessage *g = r->v1->messages->group_messages[i];

				if (g->v1 == NULL)
					Delivered(NULL, 0, now);
				else
					Delivered(g->v1->data.data, g->v1->data.len, now);
			}
			break;
		default:
			break;
	}
	xmtp__mls__api__v1__subscribe_response__free_unpacked(r, NULL);
}

/* ------------------------------------------------------------ nghttp2 */

static ssize_t
ReadRequest(nghttp2_session *h2, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
			nghttp2_data_source *src, void *arg)
{
	Call	   *c = src->ptr;
	size_t		n = c->req_len - c->req_off;

	if (n == 0)
		return NGHTTP2_ERR_DEFERRED;	/* the stream stays open: no half-close */
	if (n > len)
		n = len;
	memcpy(buf, c->req + c->req_off, n);
	c->req_off += n;
	return (ssize_t) n;
}

/* A call ended: its trailers (HTTP/2), trailer frame (gRPC-Web, WebSocket) or reset. */
static void
CallClosed(Call *c)
{
	if (!c->closed)
	{
		c->closed = true;
		closed_calls++;
	}
}

/*
 * Response bytes of a call, gRPC length-prefixed messages in any cut: each
 * whole one to Frame (WebFrame for gRPC-Web); a trailer frame (flag 0x80,
 * gRPC-Web and the WebSocket subprotocol) ends the call.
 */
static void
GrpcData(Call *c, const uint8_t *data, size_t len)
{
	if (c->in_cap - c->in_len < len)
	{
		while (c->in_cap - c->in_len < len)
			c->in_cap = c->in_cap ? c->in_cap * 2 : 4096;
		c->in = realloc(c->in, c->in_cap);
	}
	memcpy(c->in + c->in_len, data, len);
	c->in_len += len;
	{
		size_t		off = 0;

		while (c->in_len - off >= 5)
		{
			uint32_t	n = (uint32_t) c->in[off + 1] << 24 | (uint32_t) c->in[off + 2] << 16
				| (uint32_t) c->in[off + 3] << 8 | c->in[off + 4];

			if (c->in_len - off - 5 < n)
				break;
			if (c->in[off] & 0x80)
				CallClosed(c);
			else if (proto == PROTO_WEB)
				WebFrame(c->in + off + 5, n);
			else
				Frame(c, c->in + off + 5, n);
			off += 5 + n;
		}
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
	}
}

static int
OnData(nghttp2_session *h2, uint8_t flags, int32_t id, const uint8_t *data, size_t len, void *arg)
{
	Call	   *c = nghttp2_session_get_stream_user_data(h2, id);

	if (c != NULL)
		GrpcData(c, data, len);
	return 0;
}

static int
OnClose(nghttp2_session *h2, int32_t id, uint32_t error, void *arg)
{
	Call	   *c = nghttp2_session_get_stream_user_data(h2, id);

	if (c)
		CallClosed(c);
	return 0;
}

/*
 * Sends what the session has ready. nghttp2 hands out one frame a call, so
 * the frames ready now are gathered into one write, as a gRPC client's
 * transport does: a burst of Pongs is one segment, not a hundred.
 */
static void
Flush(Conn *k)
{
	if (!k->connected)
		return;
	for (;;)
	{
		if (k->out_off == k->out_len)
		{
			const uint8_t *p;
			ssize_t		n;

			k->out_off = k->out_len = 0;
			while (k->h2 && k->out_len < 65536 && (n = nghttp2_session_mem_send(k->h2, &p)) != 0)
			{
				if (n < 0)
					tl_fatal("nghttp2: %s", nghttp2_strerror((int) n));
				if (k->out_len + (size_t) n > k->out_cap)
				{
					k->out_cap = (k->out_len + (size_t) n) * 2;
					if ((k->out = realloc(k->out, k->out_cap)) == NULL)
						tl_fatal("out of memory");
				}
				memcpy(k->out + k->out_len, p, (size_t) n);
				k->out_len += (size_t) n;
			}
			if (k->out_len == 0)
				break;
		}
		{
			ssize_t		w = write(k->fd, k->out + k->out_off, k->out_len - k->out_off);

			if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			if (w < 0)
				tl_fatal("write: %s", strerror(errno));
			k->out_off += (size_t) w;
		}
	}
	k->want_out = k->out_off < k->out_len;
}

/* ------------------------------------------------------------ HTTP/1.1 */

/* The value of header name in a response head, trimmed, or NULL; *len its length. */
static const char *
Header(const char *p, const char *end, const char *name, size_t *len)
{
	size_t		nl = strlen(name);

	while (p < end)
	{
		const char *eol = memmem(p, (size_t) (end - p), "\r\n", 2);

		if (eol == NULL)
			eol = end;
		if ((size_t) (eol - p) > nl && p[nl] == ':' && strncasecmp(p, name, nl) == 0)
		{
			const char *v = p + nl + 1,
					   *e = eol;

			while (v < e && (*v == ' ' || *v == '\t'))
				v++;
			while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
				e--;
			*len = (size_t) (e - v);
			return v;
		}
		p = eol + 2;
	}
	return NULL;
}

static bool
HeaderIs(const char *head, const char *end, const char *name, const char *want)
{
	size_t		len;
	const char *v = Header(head, end, name, &len);

	return v != NULL && len == strlen(want) && strncasecmp(v, want, len) == 0;
}

/*
 * The response's head: gRPC-Web's 200, chunked (the call is open; its
 * catch-up is the gateway's waves, AllCaughtUp), or the WebSocket's 101 with the accept
 * its key is owed and the subprotocol, after which the Subscribe request
 * leaves as the first message.
 */
static void
H1Head(Conn *k, const char *head, size_t len)
{
	const char *end = head + len;
	int			status = 0;
	Call	   *c = k->call;

	if (sscanf(head, "HTTP/1.1 %d", &status) != 1)
		tl_fatal("not an HTTP/1.1 response: %.40s", head);
	opening--;
	if (proto == PROTO_WEB)
	{
		if (status != 200 || !HeaderIs(head, end, "transfer-encoding", "chunked")
			|| !HeaderIs(head, end, "subscribed", "true"))
			tl_fatal("gRPC-Web: not a streamed 200 with subscribed: true: %.*s", (int) len, head);
		c->started = c->caught_up = true;
		started++;
		caught_up++;
		k->state = H1_SIZE;
	}
	else
	{
		if (status != 101 || !HeaderIs(head, end, "sec-websocket-accept", k->ws_accept)
			|| !HeaderIs(head, end, "sec-websocket-protocol", "xip83.v1"))
			tl_fatal("WebSocket: not a 101 for xip83.v1 with its accept: %.*s", (int) len, head);
		k->state = H1_WS;
		WsSend(k, 0x2, c->req, c->req_len);
	}
}

/*
 * One WebSocket frame from the server at p, when all of it is there: its
 * size in *used. Each binary message holds one gRPC length-prefixed message,
 * so fragments join in GrpcData as any cut of the bytes would.
 */
static bool
WsFrame(Conn *k, const unsigned char *p, size_t avail, size_t *used)
{
	uint64_t	len;
	size_t		h = 2;

	if (avail < 2)
		return false;
	if (p[1] & 0x80)
		tl_fatal("WebSocket: a masked frame from the server");
	len = p[1] & 0x7f;
	if (len == 126)
	{
		if (avail < 4)
			return false;
		len = (uint64_t) p[2] << 8 | p[3];
		h = 4;
	}
	else if (len == 127)
	{
		if (avail < 10)
			return false;
		len = 0;
		for (int i = 0; i < 8; i++)
			len = len << 8 | p[2 + i];
		h = 10;
	}
	if (avail - h < len)
		return false;
	*used = h + (size_t) len;
	switch (p[0] & 0x0f)
	{
		case 0x0:				/* continuation */
		case 0x2:
			GrpcData(k->call, p + h, (size_t) len);
			break;
		case 0x8:
			/* the close answered with its code; nothing more is read */
			WsSend(k, 0x8, p + h, len >= 2 ? 2 : 0);
			k->state = H1_DONE;
			CallClosed(k->call);
			break;
		case 0x9:
			WsSend(k, 0xA, p + h, (size_t) len);
			break;
		case 0xA:
			break;
		default:
			tl_fatal("WebSocket: opcode %d from the server", p[0] & 0x0f);
	}
	return true;
}

/* An HTTP/1.1 connection's bytes: the head, then chunks (gRPC-Web) or WebSocket frames. */
static void
H1Read(Conn *k, const unsigned char *buf, size_t len)
{
	size_t		off = 0;

	if (k->in_cap - k->in_len < len)
	{
		while (k->in_cap - k->in_len < len)
			k->in_cap = k->in_cap ? k->in_cap * 2 : 4096;
		if ((k->in = realloc(k->in, k->in_cap)) == NULL)
			tl_fatal("out of memory");
	}
	memcpy(k->in + k->in_len, buf, len);
	k->in_len += len;
	for (;;)
	{
		const unsigned char *p = k->in + off;
		size_t		avail = k->in_len - off,
					n;
		const unsigned char *e;

		if (k->state == H1_HEAD)
		{
			if ((e = memmem(p, avail, "\r\n\r\n", 4)) == NULL)
				break;
			H1Head(k, (const char *) p, (size_t) (e + 4 - p));
			off += (size_t) (e + 4 - p);
		}
		else if (k->state == H1_SIZE)
		{
			char	   *digits_end;
			unsigned long size;

			if ((e = memmem(p, avail, "\r\n", 2)) == NULL)
				break;
			size = strtoul((const char *) p, &digits_end, 16);
			if (digits_end == (const char *) p)
				tl_fatal("gRPC-Web: a chunk without its size");
			off += (size_t) (e + 2 - p);
			/* the last chunk: its trailers (none) are not read */
			k->state = size == 0 ? H1_DONE : H1_DATA;
			k->chunk_left = size;
		}
		else if (k->state == H1_DATA && avail > 0)
		{
			n = avail < k->chunk_left ? avail : k->chunk_left;
			GrpcData(k->call, p, n);
			off += n;
			if ((k->chunk_left -= n) == 0)
				k->state = H1_CRLF;
		}
		else if (k->state == H1_CRLF && avail >= 2)
		{
			if (p[0] != '\r' || p[1] != '\n')
				tl_fatal("gRPC-Web: a chunk longer than its size");
			off += 2;
			k->state = H1_SIZE;
		}
		else if (k->state == H1_WS && WsFrame(k, p, avail, &n))
			off += n;
		else
		{
			if (k->state == H1_DONE)
				off = k->in_len;
			break;
		}
	}
	if (k->in_len - off > 65536 && k->state == H1_HEAD)
		tl_fatal("a response head over 64 KB");
	memmove(k->in, k->in + off, k->in_len - off);
	k->in_len -= off;
}

/*
 * A connection of its own for call c: connect() started (epoll says when it
 * is done), and its request queued: the gRPC-Web POST with its body, or the
 * WebSocket Upgrade, with a fresh key whose accept the 101 must carry.
 */
static void
OpenH1(Conn *k, Call *c)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t) gw_port),
	.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.ptr = k};
	char		head[512];
	int			one = 1,
				n;

	if ((k->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) < 0)
		tl_fatal("socket: %s", strerror(errno));
	setsockopt(k->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(k->fd, (struct sockaddr *) &sa, sizeof(sa)) != 0 && errno != EINPROGRESS)
		tl_fatal("connect: %s", strerror(errno));
	k->call = c;
	c->conn = k;
	k->state = H1_HEAD;
	opening++;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, k->fd, &ev) != 0)
		tl_fatal("epoll_ctl: %s", strerror(errno));
	if (proto == PROTO_WEB)
	{
		n = snprintf(head, sizeof(head),
					 "POST /xmtp.mls.api.v1.MlsApi/SubscribeGroupMessages HTTP/1.1\r\n"
					 "Host: 127.0.0.1:%d\r\nContent-Type: application/grpc-web+proto\r\n"
					 "X-Grpc-Web: 1\r\nContent-Length: %zu\r\n\r\n", gw_port, c->req_len);
		OutAppend(k, head, (size_t) n);
		OutAppend(k, c->req, c->req_len);
	}
	else
	{
		unsigned char nonce[16],
					md[EVP_MAX_MD_SIZE];
		char		key[32],
					keyguid[96];
		unsigned int md_len;

		for (int i = 0; i < 16; i++)
			nonce[i] = (unsigned char) random();
		EVP_EncodeBlock((unsigned char *) key, nonce, 16);
		snprintf(keyguid, sizeof(keyguid), "%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
		if (!EVP_Digest(keyguid, strlen(keyguid), md, &md_len, EVP_sha1(), NULL))
			tl_fatal("SHA-1");
		EVP_EncodeBlock((unsigned char *) k->ws_accept, md, (int) md_len);
		n = snprintf(head, sizeof(head),
					 "GET /xmtp.mls.api.v1.MlsApi/Subscribe HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
					 "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
					 "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: xip83.v1\r\n\r\n",
					 gw_port, key);
		OutAppend(k, head, (size_t) n);
	}
}

/* ------------------------------------------------------------ the gateway */

static pid_t gw_pid;

static int
StartGateway(void)
{
	const char *prog = on_anchor ? anchor
		: getenv("XIP83_GATEWAY") ? getenv("XIP83_GATEWAY") : "build/xip83-gateway";
	const char *db = getenv("PGDATABASE") ? getenv("PGDATABASE") : "postgres";
	char		dsn[256],
				pool_s[16],
				loops_s[16],
				hold_s[16],
				line[128];
	int			pipefd[2];
	FILE	   *f;
	int			port = -1;

	snprintf(dsn, sizeof(dsn), "dbname=%s", db);
	snprintf(pool_s, sizeof(pool_s), "%d", pool);
	if (pipe(pipefd) != 0)
		tl_fatal("pipe");
	/* what the server says on stderr comes after the figures before it */
	fflush(stdout);
	if ((gw_pid = fork()) == 0)
	{
		dup2(pipefd[1], 1);
		close(pipefd[0]);
		const char *argv[16] = {prog, "--dsn", dsn, "--listen", "127.0.0.1:0", "--pool", pool_s};
		int			n = 7;

		snprintf(loops_s, sizeof(loops_s), "%d", gw_loops);
		snprintf(hold_s, sizeof(hold_s), "%d", hold_ms);
		/* the anchor has neither a metrics port, event loops nor a write hold to set */
		if (!on_anchor)
		{
			argv[n++] = "--metrics";
			argv[n++] = "127.0.0.1:0";
			if (gw_loops > 0)
			{
				argv[n++] = "--loops";
				argv[n++] = loops_s;
			}
			if (hold_ms >= 0)
			{
				argv[n++] = "--write-hold-ms";
				argv[n++] = hold_s;
			}
		}
		argv[n] = NULL;
		execv(prog, (char *const *) argv);
		_exit(127);
	}
	close(pipefd[1]);
	metrics_port = 0;
	f = fdopen(pipefd[0], "r");
	while (fgets(line, sizeof(line), f))
	{
		if (strncmp(line, "h2c ", 4) == 0)
			port = atoi(line + 4);
		if (strncmp(line, "metrics ", 8) == 0)
			metrics_port = atoi(line + 8);
		if (strncmp(line, "ready", 5) == 0)
			break;
	}
	if (port < 0)
		tl_fatal("%s did not start", prog);
	gw_port = port;
	return port;
}

/*
 * The gateway's waves not finished (in flight and queued), from its metrics:
 * a gRPC-Web call's headers leave before its catch-up, which says nothing
 * when it ends, so the phase counts as caught up once none is left.
 */
static long
WavesLeft(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t) metrics_port),
	.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
	char	   *page = NULL;
	size_t		len = 0;
	ssize_t		r;
	long		left = 0;
	int			found = 0;
	int			fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) != 0
		|| write(fd, req, sizeof(req) - 1) != (ssize_t) sizeof(req) - 1)
		tl_fatal("the gateway's metrics: %s", strerror(errno));
	do
	{
		if ((page = realloc(page, len + 65537)) == NULL)
			tl_fatal("out of memory");
		r = read(fd, page + len, 65536);
		len += r > 0 ? (size_t) r : 0;
	} while (r > 0);
	close(fd);
	page[len] = 0;
	for (const char *l = page; l != NULL; l = (l = strchr(l, '\n')) ? l + 1 : NULL)
		if (strncmp(l, "xip83_gateway_waves_in_flight ", 30) == 0
			|| strncmp(l, "xip83_gateway_wave_queue ", 25) == 0)
		{
			left += atol(strchr(l, ' ') + 1);
			found++;
		}
	free(page);
	if (found != 2)
		tl_fatal("the gateway's metrics lack waves_in_flight and wave_queue");
	return left;
}

static long
GatewayRssKb(void)
{
	char		path[64],
				line[256];
	FILE	   *f;
	long		kb = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int) gw_pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = atol(line + 6);
	fclose(f);
	return kb;
}

/*
 * utime + stime in seconds from a stat file of /proc, with those of the
 * children reaped when reaped is set; -1 when it is gone; *ppid the parent.
 */
static double
StatCpu(const char *path, bool reaped, pid_t *ppid)
{
	char		buf[1024];
	FILE	   *f;
	unsigned long ut = 0,
				st = 0;
	long		cut = 0,
				cst = 0;
	int			parent = 0;
	char	   *p;

	if ((f = fopen(path, "r")) == NULL)
		return -1;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	/* after the command name's closing parenthesis: fields 3.. ; utime is 14, stime 15 */
	if (p == NULL || sscanf(p + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %ld %ld",
							&parent, &ut, &st, &cut, &cst) != 5)
		return -1;
	if (ppid)
		*ppid = parent;
	return (double) (ut + st + (reaped ? (unsigned long) (cut + cst) : 0))
		/ (double) sysconf(_SC_CLK_TCK);
}

/* The same of process pid (all its threads). */
static double
ProcCpu(pid_t pid, bool reaped, pid_t *ppid)
{
	char		path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	return StatCpu(path, reaped, ppid);
}

static double
GatewayCpu(void)
{
	double		cpu = ProcCpu(gw_pid, false, NULL);

	if (cpu < 0)
		tl_fatal("cannot read the gateway's /proc/%d/stat", (int) gw_pid);
	return cpu;
}

/* What a case says of the server it ran on, after the load's own words. */
static void
CaseServer(char *cs, size_t size)
{
	size_t		n = strlen(cs);

	if (own)
		n += snprintf(cs + n, size - n, ",own=1");
	if (gw_loops > 0 && !on_anchor)
		n += snprintf(cs + n, size - n, ",loops=%d", gw_loops);
	if (hold_ms >= 0 && !on_anchor)
		n += snprintf(cs + n, size - n, ",hold=%d", hold_ms);
	if (on_anchor)
		snprintf(cs + n, size - n, ",server=anchor");
}

/*
 * CPU seconds of the gateway's feed thread (named xip83-feed): the one part
 * every loop waits on, so the serial part of the gateway; -1 when not found
 * (the anchor, or a gateway that does not name it).
 */
static double
FeedCpu(void)
{
	char		path[64],
				comm[32];
	struct dirent *e;
	DIR		   *d;
	double		cpu = -1;

	snprintf(path, sizeof(path), "/proc/%d/task", (int) gw_pid);
	if ((d = opendir(path)) == NULL)
		return -1;
	while (cpu < 0 && (e = readdir(d)) != NULL)
	{
		FILE	   *f;
		bool		feed;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int) gw_pid, atoi(e->d_name));
		if ((f = fopen(path, "r")) == NULL)
			continue;
		feed = fgets(comm, sizeof(comm), f) && strcmp(comm, "xip83-feed\n") == 0;
		fclose(f);
		if (feed)
		{
			/* the thread's own figures are under task/ only */
			snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int) gw_pid, atoi(e->d_name));
			cpu = StatCpu(path, false, NULL);
		}
	}
	closedir(d);
	return cpu;
}

/* ------------------------------------------------------------ the writer */

static void *
Writer(void *arg)
{
	PGconn	   *conn = tl_connect();
	unsigned int seed = 42;
	double		t0 = NowMs(CLOCK_MONOTONIC);
	long		n = 0;

	(void) arg;
	while (!atomic_load(&stop_writer))
	{
		/* keep to the rate: row n is due at t0 + n / rate */
		double		due = t0 + n * 1000.0 / rate;
		double		now = NowMs(CLOCK_MONOTONIC);
		char		key[32],
					data[64];
		double		sent;
		const char *params[3] = {key, data, NULL};
		int			lens[3] = {0, 0, 0};
		int			formats[3] = {0, 1, 0};
		PGresult   *res;

		if (due > now)
		{
			struct timespec ts = {0, (long) ((due - now) * 1e6)};

			nanosleep(&ts, NULL);
		}
		snprintf(key, sizeof(key), "t%d", (int) (rand_r(&seed) % (unsigned) (own ? n_open * n_topics
																				 : universe)));
		sent = NowMs(CLOCK_REALTIME);
		memcpy(data, &sent, sizeof(sent));
		memcpy(data + sizeof(sent), &n, sizeof(n));
		lens[1] = sizeof(sent) + sizeof(n);
		res = PQexecParams(conn, "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
						   " VALUES (convert_to($1, 'UTF8'), $2, sha256(convert_to($1, 'UTF8') || $2))",
						   2, NULL, params, lens, formats, 0);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			tl_fatal("insert: %s", PQerrorMessage(conn));
		PQclear(res);
		n++;
		atomic_store(&written, n);
	}
	PQfinish(conn);
	return NULL;
}

/* ------------------------------------------------------------ the storm */

/* CPU seconds of the whole server: the postmaster, its children and those gone. */
static double
DbCpu(PGconn *db)
{
	static pid_t pm;
	double		cpu;

	if (pm == 0 && ProcCpu((pid_t) PQbackendPID(db), false, &pm) < 0)
		tl_fatal("cannot read the backend's /proc/%d/stat", PQbackendPID(db));
	if ((cpu = ProcCpu(pm, true, NULL)) < 0)
		tl_fatal("cannot read the postmaster's /proc/%d/stat", (int) pm);
	{
		int			n = 0;
		struct dirent *e;
		DIR		   *d = opendir("/proc");

		while (d && (e = readdir(d)) != NULL)
		{
			pid_t		parent = 0;
			double		c;

			if (e->d_name[0] < '1' || e->d_name[0] > '9')
				continue;
			if ((c = ProcCpu((pid_t) atoi(e->d_name), false, &parent)) >= 0 && parent == pm)
			{
				cpu += c;
				n++;
			}
		}
		if (d)
			closedir(d);
		if (n == 0)
			tl_fatal("no server process found under the postmaster %d", (int) pm);
	}
	return cpu;
}

/* Stored rows over the universe, then each topic's last id: the streams' cursors. */
static void
StormLoad(PGconn *db)
{
	const long	chunk = 100000;
	char		sql[512];
	PGresult   *res;

	/* a database that holds rows already (a shell's, between runs) keeps them */
	long		have = (long) tl_scalar(db, "SELECT count(*) FROM xip83.group_messages");

	PQclear(tl_exec(db, "SELECT setseed(0.28)", 0, NULL));
	for (long from = 1; have == 0 && from <= storm_rows; from += chunk)
	{
		snprintf(sql, sizeof(sql),
				 "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
				 " SELECT g, d, sha256(g || d) FROM (SELECT"
				 "   convert_to('t' || floor(%d * random())::int, 'UTF8') g,"
				 "   decode(repeat(md5(i::text), 8), 'hex') d"
				 "   FROM generate_series(%ld, %ld) i) s",
				 universe, from, from + chunk - 1 < storm_rows ? from + chunk - 1 : storm_rows);
		PQclear(tl_exec(db, sql, 0, NULL));
	}
	if (have == 0)
		PQclear(tl_exec(db, "VACUUM ANALYZE xip83.group_messages", 0, NULL));
	floors = calloc((size_t) universe, sizeof(int64_t));
	res = tl_exec(db, "SELECT substr(convert_from(group_id, 'UTF8'), 2)::int, max(id)"
				  " FROM xip83.group_messages GROUP BY group_id", 0, NULL);
	for (int r = 0; r < PQntuples(res); r++)
		floors[atoi(PQgetvalue(res, r, 0))] = atoll(PQgetvalue(res, r, 1));
	PQclear(res);
	if (fresh_pct > 0)
	{
		/* rows the clients missed while away: 10 above the floor on PCT% of the topics */
		snprintf(sql, sizeof(sql),
				 "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
				 " SELECT g, d, sha256(g || d) FROM (SELECT convert_to('t' || k, 'UTF8') g,"
				 "   decode(repeat(md5(k::text || '/' || i), 8), 'hex') d"
				 "   FROM generate_series(0, %d) k, generate_series(1, 10) i"
				 "   WHERE k %% %d = 0) s", universe - 1, (int) (100 / fresh_pct));
		PQclear(tl_exec(db, sql, 0, NULL));
	}
	printf("storm: %ld rows over %d topics stored%s\n", have ? have : storm_rows, universe,
		   fresh_pct > 0 ? ", 10 new rows above the floors on every topic k % N = 0" : "");
}

/* The rows owed to the streams: each stream's topics' rows above their floors. */
static int64_t
StormOwed(PGconn *db, const Call *calls)
{
	int64_t    *fresh = calloc((size_t) universe, sizeof(int64_t));
	int64_t		owed = 0;
	PGresult   *res = tl_exec(db, "SELECT substr(convert_from(group_id, 'UTF8'), 2)::int, id"
							  " FROM xip83.group_messages WHERE id > (SELECT max(id) FROM"
							  " xip83.group_messages) - 1000000", 0, NULL);

	for (int r = 0; r < PQntuples(res); r++)
	{
		int			k = atoi(PQgetvalue(res, r, 0));

		fresh[k] += atoll(PQgetvalue(res, r, 1)) > floors[k];
	}
	PQclear(res);
	for (int i = 0; i < n_streams; i++)
		for (int t = 0; t < n_topics; t++)
		{
			bool		dup = false;

			for (int j = 0; j < t; j++)
				dup |= calls[i].topics[j] == calls[i].topics[t];
			owed += dup ? 0 : fresh[calls[i].topics[t]];
		}
	free(fresh);
	return owed;
}

/* One node-style worker: catch-ups i = w, w + P, ... on its own connection. */
typedef struct NodeWorker
{
	PGconn	   *conn;
	const Call *calls;
	int			w;
	int64_t		rows;
	int64_t		queries;
} NodeWorker;

#define NODE_CHUNK 256
#define NODE_LIMIT 64
#define NODE_LIMIT_S "64"

static void *
NodeCatchups(void *arg)
{
	NodeWorker *nw = arg;
	TlBuf		keys = {0},
				fl = {0};
	int64_t    *at = malloc(sizeof(int64_t) * (size_t) n_topics);
	int		   *todo = malloc(sizeof(int) * (size_t) n_topics);

	for (int i = nw->w; i < n_streams; i += pool)
	{
		const Call *c = &nw->calls[i];
		PGresult   *res = tl_exec(nw->conn, "EXECUTE node_ceiling", 0, NULL);
		char	   *ceiling = strdup(PQgetvalue(res, 0, 0));
		int			n_todo = n_topics;

		PQclear(res);
		for (int t = 0; t < n_topics; t++)
		{
			todo[t] = t;
			at[t] = floors[c->topics[t]];
		}
		/* topics whose chunk came back full go round again from their last id */
		while (n_todo > 0)
		{
			int			n_next = 0;

			for (int from = 0; from < n_todo; from += NODE_CHUNK)
			{
				int			to = from + NODE_CHUNK < n_todo ? from + NODE_CHUNK : n_todo;
				int			got[NODE_CHUNK] = {0};
				const char *params[3];

				keys.len = fl.len = 0;
				for (int j = from; j < to; j++)
				{
					char		name[16];

					/* a bytea element in hex: "\\x74..." in the array literal */
					snprintf(name, sizeof(name), "t%d", c->topics[todo[j]]);
					tl_buf_add(&keys, "%s\"\\\\x", j == from ? "{" : ",");
					for (const char *p = name; *p; p++)
						tl_buf_add(&keys, "%02x", (unsigned char) *p);
					tl_buf_add(&keys, "\"");
					tl_buf_add(&fl, "%s%lld", j == from ? "{" : ",", (long long) at[todo[j]]);
				}
				tl_buf_add(&keys, "}");
				tl_buf_add(&fl, "}");
				params[0] = keys.s;
				params[1] = fl.s;
				params[2] = ceiling;
				res = PQexecPrepared(nw->conn, "node_scan", 3, params, NULL, NULL, 1);
				if (PQresultStatus(res) != PGRES_TUPLES_OK)
					tl_fatal("node-style catch-up: %s", PQerrorMessage(nw->conn));
				nw->queries++;
				for (int r = 0; r < PQntuples(res); r++)
				{
					int			o;
					uint64_t	id;

					memcpy(&o, PQgetvalue(res, r, PQnfields(res) - 1), 4);
					memcpy(&id, PQgetvalue(res, r, 0), 8);
					o = (int) ntohl((uint32_t) o) - 1;
					got[o]++;
					at[todo[from + o]] = (int64_t) be64toh(id);
				}
				nw->rows += PQntuples(res);
				PQclear(res);
				for (int j = from; j < to; j++)
					if (got[j - from] == NODE_LIMIT)
						todo[n_next++] = todo[j];
			}
			n_todo = n_next;
		}
		free(ceiling);
	}
	free(keys.s);
	free(fl.s);
	free(at);
	free(todo);
	return NULL;
}

/* The same catch-ups as the streams' waves, done the way the v3 node does them. */
static void
NodeStyle(PGconn *db, const Call *calls, double storm_ms, double storm_db_cpu, const char *cs)
{
	NodeWorker *nw = calloc((size_t) pool, sizeof(NodeWorker));
	pthread_t  *th = calloc((size_t) pool, sizeof(pthread_t));
	double		cpu0,
				t0,
				ms,
				cpu;
	int64_t		rows = 0,
				queries = 0;

	for (int w = 0; w < pool; w++)
	{
		nw[w].conn = tl_connect();
		nw[w].calls = calls;
		nw[w].w = w;
		PQclear(tl_exec(nw[w].conn, "PREPARE node_ceiling AS SELECT max(id) FROM xip83.group_messages",
						0, NULL));
		PQclear(tl_exec(nw[w].conn, "PREPARE node_scan(bytea[], bigint[], bigint) AS"
						" SELECT m.*, w.ord::int FROM unnest($1, $2) WITH ORDINALITY AS w(topic, floor, ord)"
						" CROSS JOIN LATERAL (SELECT * FROM xip83.group_messages m"
						"   WHERE m.group_id = w.topic AND m.id > w.floor AND m.id <= $3"
						"   ORDER BY m.id LIMIT " NODE_LIMIT_S ") m", 0, NULL));
	}
	cpu0 = DbCpu(db);
	t0 = NowMs(CLOCK_MONOTONIC);
	for (int w = 0; w < pool; w++)
		pthread_create(&th[w], NULL, NodeCatchups, &nw[w]);
	for (int w = 0; w < pool; w++)
	{
		pthread_join(th[w], NULL);
		rows += nw[w].rows;
		queries += nw[w].queries;
	}
	ms = NowMs(CLOCK_MONOTONIC) - t0;
	cpu = DbCpu(db) - cpu0;
	for (int w = 0; w < pool; w++)
		PQfinish(nw[w].conn);
	printf("node-style: %d catch-ups on %d connections (LATERAL LIMIT %d, chunks of %d):"
		   " %lld queries, %lld rows, %.0f ms, database CPU %.2f s\n", n_streams, pool, NODE_LIMIT,
		   NODE_CHUNK, (long long) queries, (long long) rows, ms, cpu);
	printf("gateway storm / node-style: time %.2f, database CPU %.2f\n", storm_ms / ms,
		   storm_db_cpu / cpu);
	tl_result("bench_gateway", "%s,storm=node", "storm_ms", ms, "ms", cs);
	tl_result("bench_gateway", "%s,storm=node", "storm_db_cpu_s", cpu, "s", cs);
	tl_result("bench_gateway", "%s", "storm_time_ratio", storm_ms / ms, "", cs);
	tl_result("bench_gateway", "%s", "storm_db_cpu_ratio", storm_db_cpu / cpu, "", cs);
	free(nw);
	free(th);
}

/* ------------------------------------------------------------ main */

static int
Cmp(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/* Streams due and not open yet: HTTP/1.1 ones open --window connections at a time. */
static void TopUp(void);

static void
Loop(double until_ms, bool (*done) (void))
{
	struct epoll_event ev[256];

	while ((done == NULL || !done()) && NowMs(CLOCK_MONOTONIC) < until_ms)
	{
		int			n = epoll_wait(ep, ev, 256, 10);

		for (int i = 0; i < n; i++)
		{
			Conn	   *k = ev[i].data.ptr;

			if (ev[i].events & EPOLLOUT)
				k->connected = true;
			if (ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
			{
				unsigned char buf[65536];
				ssize_t		r;

				while ((r = read(k->fd, buf, sizeof(buf))) > 0)
				{
					if (k->h2 == NULL)
						H1Read(k, buf, (size_t) r);
					else if (nghttp2_session_mem_recv(k->h2, buf, (size_t) r) < 0)
						tl_fatal("nghttp2 recv");
				}
				if (r == 0 && k->state != H1_DONE)
					tl_fatal("the gateway closed a connection");
				if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
					tl_fatal("read: %s", strerror(errno));
			}
			Flush(k);
		}
		/*
		 * HTTP/2: a stream's Pong may be for another connection than the one
		 * read. HTTP/1.1 writes only on its own events (and TopUp): a scan of
		 * 10,000 connections a wakeup would be the client's load.
		 */
		for (int i = 0; proto == PROTO_H2 && i < n_conns; i++)
			if (nghttp2_session_want_write(phase_conns[i].h2) || phase_conns[i].want_out)
				Flush(&phase_conns[i]);
		TopUp();
	}
}

static bool
AllCaughtUp(void)
{
	static double next_scrape;

	if (n_open < n_target || caught_up + closed_calls < n_open)
		return false;
	if (proto != PROTO_WEB)
		return true;
	/* gRPC-Web: every call answered; then its waves, scraped every 20 ms */
	if (NowMs(CLOCK_MONOTONIC) < next_scrape)
		return false;
	next_scrape = NowMs(CLOCK_MONOTONIC) + 20;
	return WavesLeft() == 0;
}

/*
 * Call c's request: a v3 Subscribe with one Mutate adding T topics (drawn
 * in order from seed 7, which LivePhase draws again) from id cursor
 * `after`, or for gRPC-Web a SubscribeGroupMessages with those filters.
 */
static void
BuildRequest(Call *c, int64_t after)
{
	Xmtp__Mls__Api__V1__SubscribeRequest req = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__INIT;
	Xmtp__Mls__Api__V1__SubscribeRequest__V1 v1 = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__INIT;
	Xmtp__Mls__Api__V1__SubscribeRequest__V1__Mutate m =
		XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__MUTATE__INIT;
	Xmtp__Mls__Api__V1__SubscribeGroupMessagesRequest web =
		XMTP__MLS__API__V1__SUBSCRIBE_GROUP_MESSAGES_REQUEST__INIT;
	Xmtp__Mls__Api__V1__SubscribeRequest__V1__Mutate__Subscription *subs =
		calloc((size_t) n_topics, sizeof(*subs));
	Xmtp__Mls__Api__V1__SubscribeRequest__V1__Mutate__Subscription **ps =
		calloc((size_t) n_topics, sizeof(*ps));
	Xmtp__Mls__Api__V1__SubscribeGroupMessagesRequest__Filter *filters =
		calloc((size_t) n_topics, sizeof(*filters));
	Xmtp__Mls__Api__V1__SubscribeGroupMessagesRequest__Filter **pf =
		calloc((size_t) n_topics, sizeof(*pf));
	char	  (*names)[32] = calloc((size_t) n_topics, 32);
	size_t		len,
				n_adds = 0;

	c->topics = calloc((size_t) n_topics, sizeof(int));
	for (int t = 0; t < n_topics; t++)
	{
		uint64_t	cursor;
		bool		dup;

		xmtp__mls__api__v1__subscribe_request__v1__mutate__subscription__init(&subs[t]);
		xmtp__mls__api__v1__subscribe_group_messages_request__filter__init(&filters[t]);
		c->topics[t] = own ? n_open * n_topics + t : (int) (rand_r(&draw_seed) % (unsigned) universe);
		/* the storm's streams come back at the last ids they were sent */
		cursor = floors ? (uint64_t) floors[c->topics[t]] : (uint64_t) after;
		subs[t].id_cursor = filters[t].id_cursor = cursor;
		/* kind byte 0x00, then the group id "t<k>"; SubscribeGroupMessages takes the group id */
		names[t][0] = 0;
		len = (size_t) snprintf(names[t] + 1, 31, "t%d", c->topics[t]);
		subs[t].topic.data = (uint8_t *) names[t];
		subs[t].topic.len = len + 1;
		filters[t].group_id.data = (uint8_t *) names[t] + 1;
		filters[t].group_id.len = len;
		/* a topic drawn twice is asked once (LivePhase counts it once) */
		dup = false;
		for (int u = 0; u < t; u++)
			dup |= c->topics[u] == c->topics[t];
		if (!dup)
		{
			ps[n_adds] = &subs[t];
			pf[n_adds++] = &filters[t];
		}
	}
	if (proto == PROTO_WEB)
	{
		web.n_filters = n_adds;
		web.filters = pf;
		len = xmtp__mls__api__v1__subscribe_group_messages_request__get_packed_size(&web);
		c->req = Prefixed(len);
		xmtp__mls__api__v1__subscribe_group_messages_request__pack(&web, c->req + 5);
	}
	else
	{
		m.n_adds = n_adds;
		m.adds = ps;
		m.mutate_id = 1;
		v1.request_case = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__REQUEST_MUTATE;
		v1.mutate = &m;
		req.version_case = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__VERSION_V1;
		req.v1 = &v1;
		len = xmtp__mls__api__v1__subscribe_request__get_packed_size(&req);
		c->req = Prefixed(len);
		xmtp__mls__api__v1__subscribe_request__pack(&req, c->req + 5);
	}
	c->req_len = len + 5;
	free(subs);
	free(ps);
	free(filters);
	free(pf);
	free(names);
}

static int64_t submit_after;

static void
TopUp(void)
{
	static const nghttp2_nv hdrs[] = {
		{(uint8_t *) ":method", (uint8_t *) "POST", 7, 4, 0},
		{(uint8_t *) ":scheme", (uint8_t *) "http", 7, 4, 0},
		{(uint8_t *) ":path", (uint8_t *) "/xmtp.mls.api.v1.MlsApi/Subscribe", 5, 33, 0},
		{(uint8_t *) ":authority", (uint8_t *) "127.0.0.1", 10, 9, 0},
		{(uint8_t *) "content-type", (uint8_t *) "application/grpc", 12, 16, 0},
		{(uint8_t *) "te", (uint8_t *) "trailers", 2, 8, 0},
	};

	if (n_open >= n_target)
		return;
	for (; n_open < n_target && (proto == PROTO_H2 || opening < window); n_open++)
	{
		Call	   *c = &phase_calls[n_open];

		BuildRequest(c, submit_after);
		if (proto == PROTO_H2)
		{
			nghttp2_data_provider dp = {.source.ptr = c, .read_callback = ReadRequest};

			c->conn = &phase_conns[n_open % n_conns];
			c->id = nghttp2_submit_request(c->conn->h2, NULL, hdrs, 6, &dp, c);
			if (c->id < 0)
				tl_fatal("submit: %s", nghttp2_strerror(c->id));
		}
		else
		{
			OpenH1(&phase_conns[n_open], c);
			Flush(&phase_conns[n_open]);
		}
	}
	if (proto == PROTO_H2)
		for (int i = 0; i < n_conns; i++)
			Flush(&phase_conns[i]);
}

/* Opens streams n_open..to-1, from id cursor after (Loop opens what the window holds back). */
static void
SubmitStreams(int to, int64_t after)
{
	n_target = to;
	submit_after = after;
	TopUp();
}

/*
 * The live phase with the streams open so far: rows on random topics, each
 * owed to every open stream holding its topic. Prints its figures; returns
 * the gateway's CPU seconds per second, sets *db_share to the database's
 * (the writer's inserts included), and *ok false when a row owed was not
 * received once.
 */
static double
LivePhase(PGconn *db, const char *cs, double *db_share, bool *ok)
{
	pthread_t	writer;
	char		lcs[192];
	double		cpu0,
				cpu1,
				feed0,
				feed1,
				feed_us = -1,
				db0,
				client0,
				wall;
	int64_t		expected = 0;

	received = 0;
	n_lat = 0;
	measuring = true;
	atomic_store(&written, 0);
	atomic_store(&stop_writer, false);
	cpu0 = GatewayCpu();
	feed0 = FeedCpu();
	db0 = DbCpu(db);
	/* the client's own CPU, its writer thread's included */
	client0 = NowMs(CLOCK_PROCESS_CPUTIME_ID);
	wall = NowMs(CLOCK_MONOTONIC);
	pthread_create(&writer, NULL, Writer, NULL);
	Loop(wall + seconds * 1000.0, NULL);
	atomic_store(&stop_writer, true);
	pthread_join(writer, NULL);
	Loop(NowMs(CLOCK_MONOTONIC) + 2000, NULL);
	cpu1 = GatewayCpu();
	feed1 = FeedCpu();
	db0 = DbCpu(db) - db0;
	client0 = (NowMs(CLOCK_PROCESS_CPUTIME_ID) - client0) / 1000;
	wall = (NowMs(CLOCK_MONOTONIC) - wall) / 1000;
	measuring = false;
	{
		/* how many open streams hold each topic: the rows owed */
		int		   *holders = calloc((size_t) universe, sizeof(int));
		unsigned int s2 = 7;
		unsigned int s3 = 42;

		for (int i = 0; i < n_open; i++)
		{
			int			seen[256];
			int			n_seen = 0;

			for (int t = 0; t < n_topics; t++)
			{
				int			k = (int) (rand_r(&s2) % (unsigned) universe);
				bool		dup = false;

				for (int j = 0; j < n_seen; j++)
					dup |= seen[j] == k;
				if (!dup)
				{
					holders[k]++;
					if (n_seen < 256)
						seen[n_seen++] = k;
				}
			}
		}
		for (long r = 0; r < atomic_load(&written); r++)
			expected += own ? 1 : holders[rand_r(&s3) % (unsigned) universe];
		free(holders);
	}
	qsort(lat, n_lat, sizeof(double), Cmp);
	printf("live with %d streams: %ld rows written at %d/s for %d s; %lld deliveries expected,"
		   " %lld received\n", n_open, atomic_load(&written), rate, seconds, (long long) expected,
		   (long long) received);
	/* the figures are those of the rate asked only when the writer kept it */
	if (atomic_load(&written) < (long) rate * seconds * 95 / 100)
		printf("the writer fell behind: %.0f rows/s of the %d asked; this phase ran a lighter load\n",
			   (double) atomic_load(&written) / seconds, rate);
	last_p99 = n_lat ? lat[(size_t) (n_lat * 0.99)] : 0;
	last_us = received ? (cpu1 - cpu0) * 1e6 / (double) received : 0.0;
	if (n_lat)
		printf("insert -> frame read: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
			   lat[n_lat / 2], lat[(size_t) (n_lat * 0.99)], lat[n_lat - 1]);
	printf("%s CPU during the live phase: %.2f s over %.1f s (%.0f%% of a core, %.1f us per"
		   " delivery); the client's %.0f%%\n", on_anchor ? "anchor" : "gateway", cpu1 - cpu0, wall,
		   100 * (cpu1 - cpu0) / wall, last_us, 100 * client0 / wall);
	if (feed0 >= 0 && feed1 >= 0 && atomic_load(&written) > 0)
	{
		feed_us = (feed1 - feed0) * 1e6 / (double) atomic_load(&written);
		printf("of which the feed thread: %.2f s (%.1f us per row written)\n", feed1 - feed0, feed_us);
	}
	printf("database CPU during the live phase: %.2f s (%.0f%% of a core; the writer's inserts,"
		   " the feed's fetches)\n", db0, 100 * db0 / wall);
	/* --proto's cases name the rate already: one row a protocol */
	if (strstr(cs, ",rate=") == NULL)
		snprintf(lcs, sizeof(lcs), "%s,rate=%d", cs, rate);
	else
		snprintf(lcs, sizeof(lcs), "%s", cs);
	if (n_lat)
	{
		tl_result("bench_gateway", "%s", "live_p50_ms", lat[n_lat / 2], "ms", lcs);
		tl_result("bench_gateway", "%s", "live_p99_ms", lat[(size_t) (n_lat * 0.99)], "ms", lcs);
	}
	/* the rate the writer kept (its commits wait for fsync): the case names the rate asked */
	tl_result("bench_gateway", "%s", "live_rows_per_s", (double) atomic_load(&written) / seconds,
			  "rows/s", lcs);
	tl_result("bench_gateway", "%s", "live_cpu_share", (cpu1 - cpu0) / wall, "", lcs);
	if (feed_us >= 0)
		tl_result("bench_gateway", "%s", "live_feed_us_per_row", feed_us, "us", lcs);
	if (received)
		tl_result("bench_gateway", "%s", "live_cpu_us_per_delivery",
				  (cpu1 - cpu0) * 1e6 / (double) received, "us", lcs);
	tl_result("bench_gateway", "%s", "live_db_cpu_share", db0 / wall, "", lcs);
	*db_share = db0 / wall;
	*ok = received == expected;
	return (cpu1 - cpu0) / wall;
}

/* A phase's figures that the anchor's are set beside */
typedef struct Figures
{
	char		cs[160];		/* its case */
	double		rss_mb;
	double		p99;			/* ms */
	double		us;				/* the server's CPU per delivery */
} Figures;

/*
 * One protocol's phase on a gateway of its own (or on the anchor): the
 * streams opened and caught up, the server's RSS with them, the live
 * phase(s), whose first figures go to *fig. False when a row owed was not
 * received exactly once (or a storm's stream not caught up).
 */
static bool
Phase(PGconn *db, bool by_proto, Figures *fig)
{
	static nghttp2_session_callbacks *cb;
	double		t0,
				t_open,
				few_cpu = 0,
				few_db = 0,
				db_live = 0,
				cpu,
				cpu0 = 0,
				db_cpu0 = 0;
	long		rss;
	int64_t		dbconns;
	char		cs[160];
	bool		ok = true,
				ok2;
	int			h2_conns = n_conns;

	started = caught_up = closed_calls = 0;
	n_open = n_target = opening = 0;
	received = 0;
	draw_seed = 7;
	if (proto != PROTO_H2)
		n_conns = n_streams;	/* one call a connection */
	StartGateway();
	if (cb == NULL)
	{
		nghttp2_session_callbacks_new(&cb);
		nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, OnData);
		nghttp2_session_callbacks_set_on_stream_close_callback(cb, OnClose);
	}
	ep = epoll_create1(0);
	phase_conns = calloc((size_t) n_conns, sizeof(Conn));
	phase_calls = calloc((size_t) n_streams, sizeof(Call));
	t0 = NowMs(CLOCK_MONOTONIC);
	for (int i = 0; proto == PROTO_H2 && i < n_conns; i++)
	{
		Conn	   *k = &phase_conns[i];
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t) gw_port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		nghttp2_settings_entry set[2] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20},
		{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100}};
		struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.ptr = k};
		int			one = 1;

		k->fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(k->fd, (struct sockaddr *) &sa, sizeof(sa)) != 0)
			tl_fatal("connect: %s", strerror(errno));
		k->connected = true;
		setsockopt(k->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		fcntl(k->fd, F_SETFL, O_NONBLOCK);
		nghttp2_session_client_new(&k->h2, cb, k);
		nghttp2_submit_settings(k->h2, NGHTTP2_FLAG_NONE, set, 2);
		nghttp2_session_set_local_window_size(k->h2, NGHTTP2_FLAG_NONE, 0, 64 << 20);
		epoll_ctl(ep, EPOLL_CTL_ADD, k->fd, &ev);
	}
	if (compare > 0)
	{
		/* the same rows/s with a few streams first; the others then join above the newest id */
		SubmitStreams(compare, 0);
		Loop(t0 + 300000, AllCaughtUp);
		snprintf(cs, sizeof(cs), "streams=%d,conns=%d,topics=%d,pool=%d", n_open, n_conns, n_topics, pool);
		CaseServer(cs, sizeof(cs));
		few_cpu = LivePhase(db, cs, &few_db, &ok);
		t0 = NowMs(CLOCK_MONOTONIC);
		SubmitStreams(n_streams, tl_scalar(db, "SELECT coalesce(max(id), 0) FROM xip83.group_messages"));
	}
	else
	{
		db_cpu0 = storm ? DbCpu(db) : 0;
		cpu0 = GatewayCpu();
		/* above the rows of an earlier phase: every protocol's streams start with nothing to replay */
		SubmitStreams(n_streams, storm ? 0 : tl_scalar(db, "SELECT coalesce(max(id), 0) FROM xip83.group_messages"));
	}
	if (by_proto)
		snprintf(cs, sizeof(cs), "proto=%s,streams=%d,conns=%d,topics=%d,rate=%d",
				 proto_names[proto], n_streams, n_conns, n_topics, rate);
	else
		snprintf(cs, sizeof(cs), "streams=%d,conns=%d,topics=%d,pool=%d", n_streams, n_conns, n_topics, pool);
	CaseServer(cs, sizeof(cs));
	if (storm)
		snprintf(cs + strlen(cs), sizeof(cs) - strlen(cs), ",rows=%ld,fresh=%g", storm_rows, fresh_pct);
	Loop(t0 + 300000, AllCaughtUp);
	t_open = NowMs(CLOCK_MONOTONIC) - t0;
	rss = GatewayRssKb();
	dbconns = tl_scalar(db, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
						" AND backend_type = 'client backend' AND pid <> pg_backend_pid()");
	if (by_proto)
		printf("-- %s\n", proto_names[proto]);
	if (proto == PROTO_WEB)
		printf("%d gRPC-Web calls (%d topics each) over %d connections: %d answered, %d closed,"
			   " no wave left, in %.0f ms\n", n_streams, n_topics, n_conns, started, closed_calls, t_open);
	else
		printf("%d streams (%d topics each) over %d connections: %d Started, %d CatchupComplete,"
			   " %d closed, in %.0f ms\n", n_streams, n_topics, n_conns, started, caught_up, closed_calls,
			   t_open);
	printf("%s RSS %.1f MB (%.2f KB per stream); database connections %lld (pool %d)\n",
		   on_anchor ? "anchor" : "gateway", rss / 1024.0, (double) rss / n_streams,
		   (long long) dbconns, pool);
	tl_result("bench_gateway", "%s", "open_ms", t_open, "ms", cs);
	tl_result("bench_gateway", "%s", "rss_mb", rss / 1024.0, "MB", cs);
	if (!by_proto)
		tl_result("bench_gateway", "%s", "db_connections", (double) dbconns, "", cs);
	if (n_open < n_streams || caught_up + closed_calls < n_streams)
	{
		printf("only %d of %d streams open and caught up after 300 s\n", caught_up, n_streams);
		ok = false;
	}
	if (storm)
	{
		double		db_cpu = DbCpu(db) - db_cpu0;
		double		gw_cpu = GatewayCpu() - cpu0;
		int64_t		owed = StormOwed(db, phase_calls);

		printf("storm: every CatchupComplete in %.0f ms; database CPU %.2f s, gateway CPU %.2f s;"
			   " %lld rows owed above the floors, %lld received\n", t_open, db_cpu, gw_cpu,
			   (long long) owed, (long long) received);
		tl_result("bench_gateway", "%s,storm=gateway", "storm_ms", t_open, "ms", cs);
		tl_result("bench_gateway", "%s,storm=gateway", "storm_db_cpu_s", db_cpu, "s", cs);
		tl_result("bench_gateway", "%s,storm=gateway", "storm_gateway_cpu_s", gw_cpu, "s", cs);
		kill(gw_pid, SIGTERM);
		waitpid(gw_pid, NULL, 0);
		NodeStyle(db, phase_calls, t_open, db_cpu, cs);
		return received == owed && caught_up == n_streams;
	}

	cpu = LivePhase(db, cs, &db_live, &ok2);
	snprintf(fig->cs, sizeof(fig->cs), "%s", cs);
	fig->rss_mb = rss / 1024.0;
	fig->p99 = last_p99;
	fig->us = last_us;
	if (n_rates > 1 && compare == 0)
	{
		/* the same streams at rising rates, while p99 holds 50 ms and the writer its rate */
		int			held = 0;

		for (int k = 0; k < n_rates; k++)
		{
			bool		okk = true;

			if (k > 0)
			{
				rate = rates[k];
				LivePhase(db, cs, &db_live, &okk);
				ok2 &= okk;
			}
			if (last_p99 > 50.0 || atomic_load(&written) < (long) rate * seconds * 95 / 100)
				break;
			held = rate;
		}
		printf("highest rate held at p99 <= 50 ms: %d rows/s (%s)\n", held, cs);
		tl_result("bench_gateway", "%s", "live_rate_held_p99_50ms", held, "rows/s", cs);
		rate = rates[0];
	}
	if (compare > 0)
	{
		printf("gateway CPU per second of live phase, %d streams vs %d: %.2fx\n", n_streams, compare,
			   few_cpu > 0 ? cpu / few_cpu : 0.0);
		tl_result("bench_gateway", "%s,rate=%d,compare=%d", "live_cpu_ratio",
				  few_cpu > 0 ? cpu / few_cpu : 0.0, "", cs, rate, compare);
		printf("database CPU per second of live phase, %d streams vs %d: %.2fx\n", n_streams, compare,
			   few_db > 0 ? db_live / few_db : 0.0);
		tl_result("bench_gateway", "%s,rate=%d,compare=%d", "live_db_cpu_ratio",
				  few_db > 0 ? db_live / few_db : 0.0, "", cs, rate, compare);
	}
	/* the anchor prints its counters on stderr as it exits: after the figures */
	fflush(stdout);
	kill(gw_pid, SIGTERM);
	waitpid(gw_pid, NULL, 0);
	/* the next phase starts with none of this one's descriptors or memory */
	for (int i = 0; i < n_conns; i++)
	{
		if (phase_conns[i].h2)
			nghttp2_session_del(phase_conns[i].h2);
		if (phase_conns[i].fd > 0)
			close(phase_conns[i].fd);
		free(phase_conns[i].out);
		free(phase_conns[i].in);
	}
	for (int i = 0; i < n_streams; i++)
	{
		free(phase_calls[i].req);
		free(phase_calls[i].in);
		free(phase_calls[i].topics);
	}
	free(phase_conns);
	free(phase_calls);
	close(ep);
	n_conns = h2_conns;
	return ok && ok2;
}

/* x / y, 0 when y is */
static double
Ratio(double x, double y)
{
	return y > 0 ? x / y : 0.0;
}

/* The anchor's figures beside the gateway's, and the ratios anchor / gateway. */
static void
AnchorRatios(const Figures *gw, const Figures *an)
{
	printf("anchor / gateway: CPU per delivery %.1f / %.1f us (%.2fx), RSS %.1f / %.1f MB (%.2fx),"
		   " p99 %.2f / %.2f ms (%.2fx)\n", an->us, gw->us, Ratio(an->us, gw->us), an->rss_mb,
		   gw->rss_mb, Ratio(an->rss_mb, gw->rss_mb), an->p99, gw->p99, Ratio(an->p99, gw->p99));
	tl_result("bench_gateway", "%s,rate=%d", "anchor_cpu_per_delivery_ratio", Ratio(an->us, gw->us),
			  "", gw->cs, rate);
	tl_result("bench_gateway", "%s,rate=%d", "anchor_rss_ratio", Ratio(an->rss_mb, gw->rss_mb), "",
			  gw->cs, rate);
	tl_result("bench_gateway", "%s,rate=%d", "anchor_p99_ratio", Ratio(an->p99, gw->p99), "",
			  gw->cs, rate);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"streams", required_argument, NULL, 's'}, {"conns", required_argument, NULL, 'c'},
		{"topics", required_argument, NULL, 't'}, {"universe", required_argument, NULL, 'u'},
		{"rate", required_argument, NULL, 'r'}, {"seconds", required_argument, NULL, 'S'},
		{"pool", required_argument, NULL, 'p'}, {"compare", required_argument, NULL, 'C'},
		{"storm", no_argument, NULL, 'X'}, {"rows", required_argument, NULL, 'R'},
		{"fresh", required_argument, NULL, 'F'}, {"own", no_argument, NULL, 'O'},
		{"proto", required_argument, NULL, 'P'}, {"window", required_argument, NULL, 'W'},
		{"loops", required_argument, NULL, 'L'},
		{"write-hold-ms", required_argument, NULL, 'H'},
		{NULL, 0, NULL, 0}
	};
	Proto		protos[3];
	int			n_protos = 0,
				o;
	bool		ok = true,
				one_per_conn = false;
	PGconn	   *db;
	struct rlimit rl;
	Figures		gw,
				an;

	while ((o = getopt_long(argc, argv, "", longopts, NULL)) != -1)
		switch (o)
		{
			case 's': n_streams = atoi(optarg); break;
			case 'c': n_conns = atoi(optarg); break;
			case 't': n_topics = atoi(optarg); break;
			case 'u': universe = atoi(optarg); break;
			case 'r':
				n_rates = 0;
				for (char *tok = strtok(optarg, ","); tok != NULL; tok = strtok(NULL, ","))
				{
					if (n_rates == 8 || atoi(tok) <= 0 || (n_rates > 0 && atoi(tok) <= rates[n_rates - 1]))
						tl_fatal("--rate: rising rates, a list of at most eight");
					rates[n_rates++] = atoi(tok);
				}
				rate = rates[0];
				break;
			case 'L':
				n_loops_list = 0;
				for (char *tok = strtok(optarg, ","); tok != NULL; tok = strtok(NULL, ","))
				{
					if (n_loops_list == 8 || atoi(tok) <= 0)
						tl_fatal("--loops: a list of at most eight loop counts");
					loops_list[n_loops_list++] = atoi(tok);
				}
				break;
			case 'H':
				if ((hold_ms = atoi(optarg)) < 0)
					tl_fatal("--write-hold-ms: at least 0");
				break;
			case 'S': seconds = atoi(optarg); break;
			case 'p': pool = atoi(optarg); break;
			case 'C': compare = atoi(optarg); break;
			case 'X': storm = true; break;
			case 'R': storm_rows = atol(optarg); break;
			case 'F': fresh_pct = atof(optarg); break;
			case 'O': own = true; break;
			case 'W': window = atoi(optarg); break;
			case 'P':
				for (char *tok = strtok(optarg, ","); tok != NULL; tok = strtok(NULL, ","))
				{
					int			p = 0;

					while (p < 3 && strcmp(tok, proto_names[p]) != 0)
						p++;
					if (p == 3 || n_protos == 3)
						tl_fatal("--proto: h2, grpc-web or ws, a list of at most three");
					protos[n_protos++] = (Proto) p;
				}
				break;
			default: tl_fatal("bad option");
		}
	if (compare >= n_streams || storm)
		compare = 0;
	if (own && storm)
		tl_fatal("--own is for the live phase, not --storm");
	if (n_protos > 0 && (storm || compare > 0 || own))
		tl_fatal("--proto is for the live phase, without --storm, --compare or --own");
	if (window < 1)
		tl_fatal("--window must be at least 1");
	anchor = getenv("XIP83_ANCHOR") && *getenv("XIP83_ANCHOR") ? getenv("XIP83_ANCHOR") : NULL;
	for (int i = 0; anchor && i < n_protos; i++)
		if (protos[i] != PROTO_H2)
			tl_fatal("XIP83_ANCHOR: the anchor serves Subscribe over HTTP/2 only, not --proto %s",
					 proto_names[protos[i]]);
	if (anchor && storm)
		tl_fatal("XIP83_ANCHOR: the anchor runs the live phase, not --storm");
	/*
	 * One descriptor a connection, here and in the gateway, which inherits
	 * the limit and takes its --max-connections from it.
	 */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max)
	{
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (int i = 0; i < n_protos; i++)
		one_per_conn |= protos[i] != PROTO_H2;
	if (one_per_conn && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t) n_streams + 128)
		tl_fatal("%d connections need %d descriptors; RLIMIT_NOFILE allows %lu",
				 n_streams, n_streams + 128, (unsigned long) rl.rlim_cur);
	signal(SIGPIPE, SIG_IGN);
	db = tl_connect();
	/* the rows are stored before the gateway starts: its feed begins at their end */
	if (storm)
		StormLoad(db);
	if (n_protos == 0)
		protos[n_protos++] = PROTO_H2;
	for (int l = 0; l < (n_loops_list > 0 ? n_loops_list : 1); l++)
	{
		gw_loops = n_loops_list > 0 ? loops_list[l] : 0;
		if (gw_loops > 0)
			printf("== the gateway with --loops %d\n", gw_loops);
		for (int i = 0; i < n_protos; i++)
		{
			proto = protos[i];
			ok &= Phase(db, n_protos > 1 || proto != PROTO_H2, &gw);
			if (anchor == NULL)
				continue;
			/* the same phase on the anchor: its misses are its own, not the gateway's failure */
			printf("-- the same phase on the anchor (%s)\n", anchor);
			on_anchor = true;
			if (!Phase(db, n_protos > 1 || proto != PROTO_H2, &an))
				printf("the anchor did not deliver every row owed exactly once\n");
			on_anchor = false;
			AnchorRatios(&gw, &an);
		}
	}
	PQfinish(db);
	return ok ? 0 : 1;
}
