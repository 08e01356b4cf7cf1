/*
 * h2_stream.c: gRPC calls on HTTP/2 streams: nghttp2's session callbacks
 * (requests, messages, ends) and the stream calls of h2_server.h (send,
 * finish), with the data provider that lets queued messages out as flow
 * control allows.
 *
 * DATA frames are written with NGHTTP2_DATA_FLAG_NO_COPY: the provider only
 * says how many queued bytes a frame takes, and the send_data callback puts
 * nghttp2's 9-byte frame header and those bytes straight into the
 * connection's output buffer. A live row goes to many streams as one shared
 * chunk, copied once per stream, there, rather than into a chunk of its own
 * and then into nghttp2's frame buffer.
 *
 * A response is HEADERS (:status 200, content-type application/grpc), the
 * messages as DATA, then trailers (grpc-status, grpc-message) carrying
 * END_STREAM; a call ended before anything was sent gets one HEADERS frame
 * with all of it ("trailers-only"). Once the response is complete and the
 * client is still sending, RST_STREAM(NO_ERROR) tells it to stop (RFC 9113
 * 8.1): a refused over-limit message is not read to its end.
 *
 * A gRPC-Web call (h2_web.c) differs only in its content type and its end:
 * the trailers are a last message in the body, and a text call's messages
 * are queued in base64. The same stream calls serve HTTP/1.1's one stream
 * at a time: its bytes are framed by h2_web.c rather than nghttp2.
 */
#include "h2_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* All request headers of one stream together, as SETTINGS announces. */
#define MAX_HEADER_BYTES	16384

#define NV(n, v, vlen) { (uint8_t *) (n), (uint8_t *) (v), sizeof(n) - 1, (vlen), \
		NGHTTP2_NV_FLAG_NO_COPY_NAME }

static const char grpc_type[] = "application/grpc";

/* Counts the bytes a stream's reader holds towards its connection's budget. */
void
h2_stream_reader_track(Xip83H2Stream *s, uint32_t cap_before)
{
	H2Conn	   *c = s->conn;

	if (s->reader.cap == cap_before)
		return;
	c->partial += s->reader.cap;
	c->partial -= cap_before;
	c->srv->input += s->reader.cap;
	c->srv->input -= cap_before;
	h2_mem_add(c, s->reader.cap);
	h2_mem_sub(c, cap_before);
}

/* The memory a queued chunk takes: its own, not counting a shared message's bytes. */
static size_t
ChunkCost(const H2Chunk *c)
{
	return H2_CHUNK_COST(c->small ? H2_CHUNK_SMALL : c->len);
}

/* What a chunk counts in its stream's pending memory: a shared message's bytes too. */
static size_t
ChunkHeld(const H2Chunk *c)
{
	return ChunkCost(c) + (c->shared ? c->len : 0);
}

/* Takes a chunk off s's account (it was written or dropped). */
static void
ChunkGone(Xip83H2Stream *s, const H2Chunk *c)
{
	size_t		held = ChunkHeld(c);

	s->held -= held;
	s->conn->srv->pending -= held;
	h2_mem_sub(s->conn, ChunkCost(c));
}

/*
 * Puts s on its connection's list of streams holding part of a request,
 * at the end (a new byte of it came now), or takes it off.
 */
void
h2_stream_progress(Xip83H2Stream *s, bool incomplete)
{
	H2Conn	   *c = s->conn;

	if (s->incomplete)
	{
		*(s->in_prev ? &s->in_prev->in_next : &c->in_head) = s->in_next;
		*(s->in_next ? &s->in_next->in_prev : &c->in_tail) = s->in_prev;
		s->in_prev = s->in_next = NULL;
		s->incomplete = false;
	}
	if (!incomplete)
		return;
	s->incomplete = true;
	s->progress_ms = xip83_loop_now_ms();
	s->in_prev = c->in_tail;
	*(c->in_tail ? &c->in_tail->in_next : &c->in_head) = s;
	c->in_tail = s;
}

static void
ReaderRelease(Xip83H2Stream *s)
{
	uint32_t	cap = s->reader.cap;

	xip83_grpc_reader_free(&s->reader);
	h2_stream_reader_track(s, cap);
}

static void
MarkDirty(Xip83H2Stream *s)
{
	h2_conn_dirty(s->conn);
}

static void
DropHeaders(Xip83H2Stream *s)
{
	for (uint32_t i = 0; i < s->n_hdrs; i++)
		nghttp2_rcbuf_decref(s->hdrs[i]);
	free(s->hdrs);
	s->hdrs = NULL;
	s->n_hdrs = 0;
}

/*
 * Moves up to len queued bytes into buf (NULL: the caller took them from the
 * head chunk itself); the provider's side of the queue.
 */
size_t
h2_stream_queue_take(Xip83H2Stream *s, uint8_t *buf, size_t len)
{
	Xip83H2Server *srv = s->conn->srv;
	size_t		n = 0;

	while (n < len && s->head != NULL)
	{
		H2Chunk    *c = s->head;
		size_t		take = c->len - c->off;

		if (take > len - n)
			take = len - n;
		if (buf)
			memcpy(buf + n, (c->shared ? c->shared->data : c->data) + c->off, take);
		c->off += take;
		n += take;
		if (c->off == c->len)
		{
			s->head = c->next;
			if (s->head == NULL)
				s->tail = NULL;
			ChunkGone(s, c);
			h2_chunk_free(srv, c);
		}
	}
	s->pending -= n;
	if (s->over_low && s->held < srv->cfg.low_water)
	{
		H2Conn	   *c = s->conn;

		s->over_low = false;
		/* told after the write, outside nghttp2's callbacks */
		if (c->n_notify == c->cap_notify)
		{
			size_t		cap = c->cap_notify ? c->cap_notify * 2 : 16;
			int32_t    *p = realloc(c->notify, cap * sizeof(*p));

			if (p == NULL)
				return n;		/* the stream is not told; its pending still shows */
			c->notify = p;
			c->cap_notify = cap;
		}
		c->notify[c->n_notify++] = s->id;
	}
	return n;
}

/* Submits the trailers of a finishing stream (from the data provider). */
static void
SubmitTrailers(Xip83H2Stream *s)
{
	char		status[12];
	nghttp2_nv	nva[2] = {
		NV("grpc-status", status, (size_t) snprintf(status, sizeof(status), "%d", s->status)),
	};
	size_t		n = 1;

	if (s->message)
		nva[n++] = (nghttp2_nv) NV("grpc-message", s->message, strlen(s->message));
	nghttp2_submit_trailer(s->conn->session, s->id, nva, n);
}

static ssize_t
DataRead(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
		 uint32_t *data_flags, nghttp2_data_source *source, void *user_data)
{
	Xip83H2Stream *s = source->ptr;
	bool		all = s->pending <= length;	/* the frame takes the whole queue */
	size_t		n = all ? s->pending : length;

	/* the bytes are taken in SendData, within the same nghttp2 call: nothing queues between */
	if (n > 0)
		*data_flags |= NGHTTP2_DATA_FLAG_NO_COPY;
	if (all && s->finishing)
	{
		*data_flags |= NGHTTP2_DATA_FLAG_EOF;
		if (s->web == H2_WEB_NONE)
		{
			*data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
			SubmitTrailers(s);
		}
		return (ssize_t) n;
	}
	if (n == 0)
	{
		s->deferred = true;
		return NGHTTP2_ERR_DEFERRED;
	}
	return (ssize_t) n;
}

/* A DATA frame DataRead sized: its header and payload into the connection's output. */
static int
SendData(nghttp2_session *session, nghttp2_frame *frame, const uint8_t *framehd, size_t length,
		 nghttp2_data_source *source, void *user_data)
{
	H2Conn	   *c = user_data;
	Xip83H2Stream *s = source->ptr;
	unsigned char *out;

	/* no padding is ever asked for (no select_padding callback) */
	if (frame->data.padlen > 0 || (out = h2_conn_out_reserve(c, 9 + length)) == NULL)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	memcpy(out, framehd, 9);
	if (h2_stream_queue_take(s, out + 9, length) != length)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	c->out_len += 9 + length;
	/* the frame is out; nghttp2_session_mem_send returns, so the buffer stays near OUT_FILL */
	return c->out_len >= H2_OUT_FILL ? NGHTTP2_ERR_PAUSE : 0;
}

/* Submits response headers, with the data provider or (prd NULL) END_STREAM. */
static void
Respond(Xip83H2Stream *s, const nghttp2_nv *nva, size_t n, const nghttp2_data_provider *prd)
{
	s->headers_sent = true;
	if (prd == NULL)
		s->finishing = true;
	/* a response that cannot be started is not left half-made: the stream goes */
	if (nghttp2_submit_response(s->conn->session, s->id, nva, n, prd) != 0)
	{
		s->finishing = true;
		nghttp2_submit_rst_stream(s->conn->session, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
	}
	MarkDirty(s);
}

/*
 * A response with a bare HTTP status and the headers hv (body: a gRPC-Web
 * body follows, from the queue), on either protocol.
 */
void
h2_stream_respond(Xip83H2Stream *s, const char *status, const Xip83H2Header *hv, size_t n,
				  bool body)
{
	nghttp2_nv	nva[8];
	nghttp2_data_provider prd = {.source.ptr = s,.read_callback = DataRead};

	if (s->conn->http)
	{
		s->headers_sent = true;
		if (!body)
			s->finishing = true;
		h2_web_respond(s, status, hv, n, body);
		MarkDirty(s);
		return;
	}
	nva[0] = (nghttp2_nv) NV(":status", status, strlen(status));
	for (size_t i = 0; i < n && i + 1 < sizeof(nva) / sizeof(nva[0]); i++)
		nva[i + 1] = (nghttp2_nv) {(uint8_t *) hv[i].name, (uint8_t *) hv[i].value, hv[i].name_len,
		hv[i].value_len, NGHTTP2_NV_FLAG_NONE};
	Respond(s, nva, n + 1, body ? &prd : NULL);
}

/*
 * Submits the response HEADERS, with the metadata pair name: value when name
 * is not NULL; with trailers set, a trailers-only response.
 */
static void
SubmitResponse(Xip83H2Stream *s, bool trailers, const char *accept_encoding, const char *name,
			   const char *value)
{
	/* cppcheck-suppress variableScope ; nva points into it until Respond below */
	char		status[12];
	nghttp2_nv	nva[5] = {
		NV(":status", "200", 3),
		NV("content-type", grpc_type, sizeof(grpc_type) - 1),
	};
	size_t		n = 2;
	nghttp2_data_provider prd = {.source.ptr = s,.read_callback = DataRead};

	if (s->web != H2_WEB_NONE)
	{
		/* gRPC-Web: the trailers are the body's last message */
		Xip83H2Header hv[6];

		return h2_stream_respond(s, "200", hv, h2_stream_response_headers(s, hv, name, value),
								 true);
	}
	/* nghttp2 copies these */
	if (name)
		nva[n++] = (nghttp2_nv) {(uint8_t *) name, (uint8_t *) value, strlen(name), strlen(value),
		NGHTTP2_NV_FLAG_NONE};
	if (trailers)
	{
		nva[n++] = (nghttp2_nv) NV("grpc-status", status,
								   (size_t) snprintf(status, sizeof(status), "%d", s->status));
		if (s->message)
			nva[n++] = (nghttp2_nv) NV("grpc-message", s->message, strlen(s->message));
		if (accept_encoding)
			nva[n++] = (nghttp2_nv) NV("grpc-accept-encoding", accept_encoding,
									   strlen(accept_encoding));
	}
	Respond(s, nva, n, trailers ? NULL : &prd);
}

/* Wakes the data provider if it waits for data: there is some, or trailers. */
static void
Resume(Xip83H2Stream *s)
{
	if (s->conn->http)
		return MarkDirty(s);
	if (!s->deferred)
		return;
	s->deferred = false;
	nghttp2_session_resume_data(s->conn->session, s->id);
	MarkDirty(s);
}

/* Finishes s; accept_encoding is for a refused grpc-encoding. */
void
h2_stream_finish(Xip83H2Stream *s, int status, const char *message, const char *accept_encoding)
{
	if (s->finishing)
		return;
	s->finishing = true;
	s->status = status;
	if (message)
	{
		size_t		cap = strlen(message) * 3 + 1;

		s->message = malloc(cap);
		if (s->message)
			xip83_grpc_percent_encode(message, s->message, cap);
	}
	ReaderRelease(s);
	h2_stream_progress(s, false);
	if (s->web != H2_WEB_NONE)
	{
		if (!s->headers_sent)
			SubmitResponse(s, false, NULL, NULL, NULL);
		if (!h2_web_trailer(s))
			s->status = XIP83_GRPC_INTERNAL;	/* ended without it: the client sees a cut */
		Resume(s);
	}
	else if (!s->headers_sent)
		SubmitResponse(s, true, accept_encoding, NULL, NULL);
	else
		Resume(s);
}

/* The request's headers are whole: refuse it, or give it to its method. */
static void
Request(Xip83H2Stream *s)
{
	Xip83H2Header *hv = malloc((s->n_hdrs / 2) * sizeof(*hv) + 1);

	if (hv == NULL)
		return h2_stream_respond(s, "503", NULL, 0, false);
	for (uint32_t i = 0; i + 1 < s->n_hdrs; i += 2)
	{
		nghttp2_vec n = nghttp2_rcbuf_get_buf(s->hdrs[i]);
		nghttp2_vec val = nghttp2_rcbuf_get_buf(s->hdrs[i + 1]);

		hv[i / 2] = (Xip83H2Header) {(const char *) n.base, n.len, (const char *) val.base, val.len};
	}
	h2_stream_request(s, hv, s->n_hdrs / 2);
	free(hv);
	DropHeaders(s);
}

static int
OnBeginHeaders(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
	H2Conn	   *c = user_data;
	Xip83H2Stream *s;

	if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	s = h2_stream_new(c, frame->hd.stream_id);
	if (s == NULL)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;	/* resets this stream only */
	if (nghttp2_session_set_stream_user_data(session, s->id, s) != 0)
		h2_stream_free(s, false);
	return 0;
}

/* A new stream on c, its request's head under way. */
Xip83H2Stream *
h2_stream_new(H2Conn *c, int32_t id)
{
	Xip83H2Stream *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->conn = c;
	s->id = id;
	s->next = c->streams;
	if (c->streams)
		c->streams->prev = s;
	c->streams = s;
	h2_mem_add(c, sizeof(*s));
	h2_stream_progress(s, true);
	return s;
}

static int
OnHeader(nghttp2_session *session, const nghttp2_frame *frame, nghttp2_rcbuf *name,
		 nghttp2_rcbuf *value, uint8_t flags, void *user_data)
{
	Xip83H2Stream *s;
	nghttp2_rcbuf **h;

	if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;				/* client trailers: nothing in them for us */
	s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
	if (s == NULL)
		return 0;
	s->hdr_bytes += nghttp2_rcbuf_get_buf(name).len + nghttp2_rcbuf_get_buf(value).len + 32;
	if (s->hdr_bytes > MAX_HEADER_BYTES)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	h = realloc(s->hdrs, (s->n_hdrs + 2) * sizeof(*h));
	if (h == NULL)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	s->hdrs = h;
	if (s->incomplete)
		h2_stream_progress(s, true);
	nghttp2_rcbuf_incref(name);
	nghttp2_rcbuf_incref(value);
	s->hdrs[s->n_hdrs++] = name;
	s->hdrs[s->n_hdrs++] = value;
	return 0;
}

static int
OnFrameRecv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
	H2Conn	   *c = user_data;
	Xip83H2Stream *s;

	if (!c->greeted)
	{
		/* the preface and a first frame: the handshake's deadline is met */
		c->greeted = true;
		c->since_ms = xip83_loop_now_ms();
	}
	if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
		return 0;
	s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
	if (s == NULL)
		return 0;
	if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
	{
		Request(s);
		h2_stream_progress(s, false);
	}
	if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
		h2_stream_remote_end(s);
	return 0;
}

static bool SendText(Xip83H2Stream *s, H2Chunk *c);

static int
OnDataChunk(nghttp2_session *session, uint8_t flags, int32_t stream_id,
			const uint8_t *data, size_t len, void *user_data)
{
	Xip83H2Stream *s = nghttp2_session_get_stream_user_data(session, stream_id);

	if (s != NULL)
		h2_stream_incoming(s, data, len);
	return 0;
}

static int
OnFrameSend(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
	Xip83H2Stream *s;

	if ((frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) ||
		!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
	if (s == NULL)
		return 0;
	s->end_sent = true;
	if (!nghttp2_session_get_stream_remote_close(session, s->id))
		nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_NO_ERROR);
	return 0;
}

static int
OnStreamClose(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *user_data)
{
	Xip83H2Stream *s = nghttp2_session_get_stream_user_data(session, stream_id);

	if (s != NULL)
	{
		nghttp2_session_set_stream_user_data(session, stream_id, NULL);
		h2_stream_free(s, !s->end_sent);
	}
	return 0;
}

void
h2_stream_callbacks(nghttp2_session_callbacks *cb)
{
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, OnBeginHeaders);
	nghttp2_session_callbacks_set_on_header_callback2(cb, OnHeader);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, OnFrameRecv);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, OnDataChunk);
	nghttp2_session_callbacks_set_on_frame_send_callback(cb, OnFrameSend);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, OnStreamClose);
	nghttp2_session_callbacks_set_send_data_callback(cb, SendData);
}

void
h2_stream_free(Xip83H2Stream *s, bool cancelled)
{
	H2Conn	   *c = s->conn;

	if (s->method)
	{
		c->srv->n_streams--;
		s->finishing = true;	/* sends from the callback are refused */
		s->method->closed(s, cancelled);
	}
	if (s->prev)
		s->prev->next = s->next;
	else
		c->streams = s->next;
	if (s->next)
		s->next->prev = s->prev;
	while (s->head)
	{
		H2Chunk    *next = s->head->next;

		ChunkGone(s, s->head);
		h2_chunk_free(c->srv, s->head);
		s->head = next;
	}
	ReaderRelease(s);
	h2_stream_progress(s, false);
	DropHeaders(s);
	h2_mem_sub(c, s->charged + sizeof(*s) + (s->origin ? strlen(s->origin) + 1 : 0));
	free(s->origin);
	free(s->message);
	free(s);
	if (c->streams == NULL)
		c->since_ms = xip83_loop_now_ms();	/* idle from now */
}

/* A limit ends the stream alone: RESOURCE_EXHAUSTED, counted. */
void
h2_stream_limit(Xip83H2Stream *s, Xip83H2Limit why, const char *message)
{
	if (s->finishing)
		return;
	s->conn->srv->reached[why]++;
	h2_stream_finish(s, XIP83_GRPC_RESOURCE_EXHAUSTED, message, NULL);
}

/*
 * Whether s may queue a chunk costing cost more. If not, s is reset with
 * ENHANCE_YOUR_CALM (gRPC clients report RESOURCE_EXHAUSTED) and its queue
 * dropped at once: trailers would wait behind it for a window the client
 * does not grant, and the memory would stay taken.
 */
static bool
OutputRoom(Xip83H2Stream *s, size_t cost)
{
	int			over = h2_mem_room(s->conn, cost);

	if (over < 0)
		return true;
	s->conn->srv->reached[over]++;
	s->finishing = true;
	s->status = XIP83_GRPC_RESOURCE_EXHAUSTED;
	while (s->head)
	{
		H2Chunk    *next = s->head->next;

		ChunkGone(s, s->head);
		h2_chunk_free(s->conn->srv, s->head);
		s->head = next;
	}
	s->tail = NULL;
	s->pending = 0;
	ReaderRelease(s);
	h2_stream_progress(s, false);
	if (s->conn->http)
		h2_web_cut(s);			/* no way to end one stream alone: the connection goes */
	else
		nghttp2_submit_rst_stream(s->conn->session, NGHTTP2_FLAG_NONE, s->id,
								  NGHTTP2_ENHANCE_YOUR_CALM);
	MarkDirty(s);
	return false;
}

void
h2_stream_notify(H2Conn *c)
{
	/* a callback may queue more and add to the list: take it as it is now */
	size_t		n = c->n_notify;
	int32_t    *ids = c->notify;

	c->notify = NULL;
	c->n_notify = c->cap_notify = 0;
	for (size_t i = 0; i < n; i++)
	{
		Xip83H2Stream *s = c->session ? nghttp2_session_get_stream_user_data(c->session, ids[i])
			: c->streams;

		if (s && s->id == ids[i] && s->method && s->method->writable && !s->finishing)
			s->method->writable(s);
	}
	free(ids);
}

void
h2_chunk_free(Xip83H2Server *srv, H2Chunk *c)
{
	if (c->shared)
		xip83_h2_shared_release(c->shared);
	if (c->small && srv->n_spare < H2_CHUNK_SPARE)
	{
		c->next = srv->spare;
		srv->spare = c;
		srv->n_spare++;
	}
	else
		free(c);
}

/* A chunk for a message of len bytes with its prefix: a spare one when it is small. */
static H2Chunk *
ChunkNew(Xip83H2Server *srv, size_t len)
{
	bool		small = XIP83_GRPC_PREFIX + len <= H2_CHUNK_SMALL;
	H2Chunk    *c = srv->spare;

	if (small && c != NULL)
	{
		srv->spare = c->next;
		srv->n_spare--;
	}
	else if ((c = malloc(sizeof(*c) + (small ? H2_CHUNK_SMALL : XIP83_GRPC_PREFIX + len))) == NULL)
		return NULL;
	c->small = small;
	c->next = NULL;
	c->off = 0;
	c->shared = NULL;
	return c;
}

/* Puts c at the end of s's queue and lets the data provider know. */
static void
Enqueue(Xip83H2Stream *s, H2Chunk *c)
{
	if (s->tail)
		s->tail->next = c;
	else
		s->head = c;
	s->tail = c;
	s->pending += c->len;
	s->held += ChunkHeld(c);
	s->conn->srv->pending += ChunkHeld(c);
	h2_mem_add(s->conn, ChunkCost(c));
	if (s->held >= s->conn->srv->cfg.low_water)
		s->over_low = true;
	if (!s->headers_sent)
		SubmitResponse(s, false, NULL, NULL, NULL);
	else
		Resume(s);
}

/* Puts a chunk made here on s's queue (a web stream's trailer message). */
void
h2_stream_take(Xip83H2Stream *s, H2Chunk *c)
{
	Enqueue(s, c);
}

/* Queues a message's bytes in base64 (gRPC-Web text: each message on its own). */
static bool
QueueText(Xip83H2Stream *s, const unsigned char *data, size_t len)
{
	H2Chunk    *t = h2_web_text(s->conn->srv, data, len);

	if (t == NULL || !OutputRoom(s, ChunkCost(t)))
	{
		if (t)
			h2_chunk_free(s->conn->srv, t);
		return false;
	}
	Enqueue(s, t);
	return true;
}

/* Queues c's bytes in base64 instead, and frees c. */
static bool
SendText(Xip83H2Stream *s, H2Chunk *c)
{
	bool		ok = QueueText(s, c->data, c->len);

	h2_chunk_free(s->conn->srv, c);
	return ok;
}

/* ---------------------------------------------------------------- API */

bool
xip83_h2_send(Xip83H2Stream *s, const void *msg, size_t len)
{
	H2Chunk    *c;

	if (s->finishing || len > UINT32_MAX)
		return false;
	if (!OutputRoom(s, H2_CHUNK_COST(XIP83_GRPC_PREFIX + len <= H2_CHUNK_SMALL ? H2_CHUNK_SMALL
										 : XIP83_GRPC_PREFIX + len)))
		return false;
	if ((c = ChunkNew(s->conn->srv, len)) == NULL)
		return false;
	c->len = XIP83_GRPC_PREFIX + len;
	xip83_grpc_prefix(c->data, (uint32_t) len);
	memcpy(c->data + XIP83_GRPC_PREFIX, msg, len);
	if (s->web == H2_WEB_TEXT)
		return SendText(s, c);
	Enqueue(s, c);
	return true;
}

Xip83H2Shared *
xip83_h2_shared_new(const void *msg, size_t len)
{
	H2Chunk    *c;

	/* its own allocation, not a spare: it may outlive the server */
	if (len > UINT32_MAX || (c = malloc(sizeof(*c) + XIP83_GRPC_PREFIX + len)) == NULL)
		return NULL;
	memset(c, 0, sizeof(*c));
	c->len = XIP83_GRPC_PREFIX + len;
	c->refs = 1;
	xip83_grpc_prefix(c->data, (uint32_t) len);
	memcpy(c->data + XIP83_GRPC_PREFIX, msg, len);
	return c;
}

void
xip83_h2_shared_release(Xip83H2Shared *m)
{
	if (m != NULL && --m->refs == 0)
		free(m);
}

const unsigned char *
xip83_h2_shared_bytes(const Xip83H2Shared *m, size_t *len)
{
	*len = m->len - XIP83_GRPC_PREFIX;
	return m->data + XIP83_GRPC_PREFIX;
}

bool
xip83_h2_send_shared(Xip83H2Stream *s, Xip83H2Shared *m)
{
	H2Chunk    *c;

	if (s->finishing || m->refs == UINT32_MAX)
		return false;
	if (s->web == H2_WEB_TEXT)
		return QueueText(s, m->data, m->len);
	if (!OutputRoom(s, H2_CHUNK_COST(H2_CHUNK_SMALL)))
		return false;
	/* an entry only: a spare chunk's room goes unused */
	if ((c = ChunkNew(s->conn->srv, 0)) == NULL)
		return false;
	c->len = m->len;
	c->shared = m;
	m->refs++;
	Enqueue(s, c);
	return true;
}

void
xip83_h2_send_headers(Xip83H2Stream *s, const char *name, const char *value)
{
	if (!s->finishing && !s->headers_sent)
		SubmitResponse(s, false, NULL, name, value);
}

void
xip83_h2_finish(Xip83H2Stream *s, int status, const char *message)
{
	h2_stream_finish(s, status, message, NULL);
}

size_t
xip83_h2_pending(const Xip83H2Stream *s)
{
	return s->held;
}

bool
xip83_h2_charge(Xip83H2Stream *s, size_t n)
{
	if (h2_mem_room(s->conn, n) >= 0)
		return false;
	s->charged += n;
	h2_mem_add(s->conn, n);
	return true;
}

void
xip83_h2_uncharge(Xip83H2Stream *s, size_t n)
{
	if (n > s->charged)
		n = s->charged;
	s->charged -= n;
	h2_mem_sub(s->conn, n);
}

bool
xip83_h2_finished(const Xip83H2Stream *s)
{
	return s->finishing;
}

int
xip83_h2_status(const Xip83H2Stream *s)
{
	return s->status;
}

const Xip83GrpcMethod *
xip83_h2_method(const Xip83H2Stream *s)
{
	return s->method;
}

Xip83H2Server *
xip83_h2_server(const Xip83H2Stream *s)
{
	return s->conn->srv;
}

uint64_t
xip83_h2_conn_serial(const Xip83H2Stream *s)
{
	return s->conn->serial;
}

void
xip83_h2_set_data(Xip83H2Stream *s, void *data)
{
	s->data = data;
}

void *
xip83_h2_data(const Xip83H2Stream *s)
{
	return s->data;
}
