/*
 * http.c: HTTP/1.1 requests on http-parser and WebSocket on wslay, glued
 * to the callbacks of http.h.
 *
 * The request line and headers go into one buffer as they arrive, in
 * whatever pieces http-parser hands them: the target, then each name
 * (lower cased) and value, each NUL ended, with their offsets. It is
 * built into an array of headers when they are whole and dropped once the
 * request callback returned: what a connection holds between requests is
 * the parser's own struct.
 */
#include "http.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <http_parser.h>
#include <openssl/sha.h>
#include <wslay/wslay.h>

#define MAX_HEADERS 64

/*
 * What a WebSocket context costs: wslay allocates its context, frame
 * context and their buffers itself, so this is measured, not tracked
 * (wslay 1.1.1 on glibc: 8790 bytes).
 */
#define WS_CONTEXT_COST 8800

typedef enum Part
{
	PART_NONE,
	PART_URL,
	PART_NAME,
	PART_VALUE
} Part;

struct Xip83Http
{
	http_parser parser;
	const Xip83HttpCallbacks *cb;
	void	   *arg;
	size_t		max_header;
	char	   *buf;			/* target, names and values, NUL ended */
	size_t		len;
	size_t		cap;
	Part		part;			/* what the last piece was part of */
	size_t		offs[1 + 2 * MAX_HEADERS];	/* where each starts in buf */
	size_t		n_offs;
	bool		too_large;
	bool		refused;
	/* WebSocket */
	wslay_event_context_ptr ws;
	const unsigned char *in;	/* what wslay_event_recv reads from */
	size_t		in_len;
	uint8_t		opcode;			/* of the message being received */
	bool		data_frame;		/* the frame being received carries message bytes */
	uint64_t	max_message;	/* a message's bytes at most */
	uint64_t	message;		/* bytes of the message being received so far */
	bool		closed_told;
};

static const char *const allowed_headers[] = {
	"content-type", "x-grpc-web", "x-user-agent", "grpc-timeout",
	"connect-protocol-version", "connect-timeout-ms",
};

/* Appends a piece of the head; a new part starts a new string. */
static int
Add(Xip83Http *h, Part part, const char *at, size_t n)
{
	size_t		need = h->len + n + 1;

	if (h->part != part)
	{
		if (h->part != PART_NONE)
			h->buf[h->len++] = '\0';
		/* a value without a name, or too many: http-parser rules out the first */
		if (h->n_offs == sizeof(h->offs) / sizeof(h->offs[0]))
		{
			h->too_large = true;
			return -1;
		}
		h->offs[h->n_offs++] = h->len;
		h->part = part;
		need++;
	}
	if (need > h->max_header)
	{
		h->too_large = true;
		return -1;
	}
	if (need > h->cap)
	{
		size_t		cap = h->cap ? h->cap : 512;
		char	   *b;

		while (cap < need)
			cap *= 2;
		if ((b = realloc(h->buf, cap)) == NULL)
			return -1;
		h->buf = b;
		h->cap = cap;
	}
	for (size_t i = 0; i < n; i++)
		h->buf[h->len + i] = part == PART_NAME ? (char) tolower((unsigned char) at[i]) : at[i];
	h->len += n;
	return 0;
}

static void
DropHead(Xip83Http *h)
{
	free(h->buf);
	h->buf = NULL;
	h->len = h->cap = h->n_offs = 0;
	h->part = PART_NONE;
}

static int
OnBegin(http_parser *p)
{
	Xip83Http  *h = p->data;

	DropHead(h);
	if (!h->cb->begin(h->arg))
	{
		h->refused = true;
		return -1;
	}
	return 0;
}

static int
OnUrl(http_parser *p, const char *at, size_t n)
{
	return Add(p->data, PART_URL, at, n);
}

static int
OnName(http_parser *p, const char *at, size_t n)
{
	return Add(p->data, PART_NAME, at, n);
}

static int
OnValue(http_parser *p, const char *at, size_t n)
{
	return Add(p->data, PART_VALUE, at, n);
}

static int
OnHeadersComplete(http_parser *p)
{
	Xip83Http  *h = p->data;
	Xip83HttpHeader hv[MAX_HEADERS];
	Xip83HttpRequest req = {0};
	bool		ok;

	/* Add left room for the last string's NUL */
	if (h->n_offs == 0)
		return -1;
	h->buf[h->len] = '\0';
	req.method = http_method_str((enum http_method) p->method);
	req.path = h->buf + h->offs[0];
	req.path_len = strlen(req.path);
	for (size_t i = 1; i + 1 < h->n_offs; i += 2)
	{
		Xip83HttpHeader *x = &hv[req.n_headers++];

		x->name = h->buf + h->offs[i];
		x->name_len = strlen(x->name);
		x->value = h->buf + h->offs[i + 1];
		x->value_len = strlen(x->value);
	}
	/* a name without a value cannot reach here either: http-parser wants the colon */
	req.headers = hv;
	req.upgrade = p->upgrade;
	req.keep_alive = http_should_keep_alive(p);
	ok = h->cb->request(h->arg, &req);
	DropHead(h);
	if (!ok)
	{
		h->refused = true;
		return -1;
	}
	return 0;
}

static int
OnBody(http_parser *p, const char *at, size_t n)
{
	Xip83Http  *h = p->data;

	h->cb->body(h->arg, (const unsigned char *) at, n);
	return 0;
}

static int
OnMessageComplete(http_parser *p)
{
	Xip83Http  *h = p->data;

	h->cb->end(h->arg);
	return 0;
}

static const http_parser_settings settings = {
	.on_message_begin = OnBegin,
	.on_url = OnUrl,
	.on_header_field = OnName,
	.on_header_value = OnValue,
	.on_headers_complete = OnHeadersComplete,
	.on_body = OnBody,
	.on_message_complete = OnMessageComplete,
};

Xip83Http *
xip83_http_new(const Xip83HttpCallbacks *cb, void *arg, size_t max_header)
{
	Xip83Http  *h = calloc(1, sizeof(*h));

	if (h == NULL)
		return NULL;
	http_parser_init(&h->parser, HTTP_REQUEST);
	h->parser.data = h;
	h->cb = cb;
	h->arg = arg;
	h->max_header = max_header;
	return h;
}

void
xip83_http_free(Xip83Http *h)
{
	if (h == NULL)
		return;
	DropHead(h);
	if (h->ws)
		wslay_event_context_free(h->ws);
	free(h);
}

size_t
xip83_http_memory(const Xip83Http *h)
{
	return sizeof(*h) + h->cap + (h->ws ? WS_CONTEXT_COST : 0);
}

static Xip83HttpFeed
WsFeed(Xip83Http *h, const unsigned char *data, size_t len)
{
	h->in = data;
	h->in_len = len;
	if (wslay_event_recv(h->ws) != 0)
	{
		h->in_len = 0;
		return XIP83_HTTP_REFUSED;
	}
	h->in_len = 0;
	/* wslay stops reading after a close, its own for an error too */
	if (!wslay_event_get_read_enabled(h->ws) && !h->closed_told)
	{
		h->closed_told = true;
		h->cb->ws_closed(h->arg);
	}
	return XIP83_HTTP_OK;
}

Xip83HttpFeed
xip83_http_feed(Xip83Http *h, const unsigned char *data, size_t len)
{
	size_t		used;

	if (h->ws)
		return WsFeed(h, data, len);
	used = http_parser_execute(&h->parser, &settings, (const char *) data, len);
	if (h->too_large)
		return XIP83_HTTP_TOO_LARGE;
	if (h->refused)
		return XIP83_HTTP_REFUSED;
	if (HTTP_PARSER_ERRNO(&h->parser) != HPE_OK)
		return XIP83_HTTP_BAD;
	/* an upgrade: what follows the head is the transport's, once it switched */
	if (h->parser.upgrade && used < len)
	{
		if (h->ws == NULL)
			return XIP83_HTTP_REFUSED;
		return WsFeed(h, data + used, len - used);
	}
	return XIP83_HTTP_OK;
}

/* ---------------------------------------------------------------- WebSocket */

static ssize_t
WsRecv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user_data)
{
	Xip83Http  *h = user_data;
	size_t		n = len < h->in_len ? len : h->in_len;

	if (n == 0)
	{
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	memcpy(buf, h->in, n);
	h->in += n;
	h->in_len -= n;
	return (ssize_t) n;
}

static ssize_t
WsSend(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags, void *user_data)
{
	Xip83Http  *h = user_data;
	size_t		n = h->cb->write(h->arg, data, len);

	if (n == 0)
	{
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	return (ssize_t) n;
}

static void
WsFrameStart(wslay_event_context_ptr ctx, const struct wslay_event_on_frame_recv_start_arg *arg,
			 void *user_data)
{
	Xip83Http  *h = user_data;

	if (arg->opcode == WSLAY_TEXT_FRAME)
	{
		/* the subprotocol carries binary messages only */
		wslay_event_queue_close(ctx, WSLAY_CODE_UNSUPPORTED_DATA, NULL, 0);
		wslay_event_shutdown_read(ctx);
		return;
	}
	if (arg->opcode == WSLAY_BINARY_FRAME)
	{
		h->opcode = arg->opcode;
		h->message = 0;
	}
	/* a control frame may come between a message's fragments: its payload is not the message's */
	h->data_frame = arg->opcode == WSLAY_BINARY_FRAME || arg->opcode == WSLAY_CONTINUATION_FRAME;
}

static void
WsFrameChunk(wslay_event_context_ptr ctx, const struct wslay_event_on_frame_recv_chunk_arg *arg,
			 void *user_data)
{
	Xip83Http  *h = user_data;

	/* control frames come through here too; only a binary message's bytes go on */
	if (!h->data_frame || h->opcode != WSLAY_BINARY_FRAME || !wslay_event_get_read_enabled(ctx))
		return;
	/* wslay's own bound lets a fragmented message pass it without buffering: counted here */
	if (arg->data_length > h->max_message - h->message)
	{
		wslay_event_queue_close(ctx, WSLAY_CODE_MESSAGE_TOO_BIG, NULL, 0);
		wslay_event_shutdown_read(ctx);
		return;
	}
	h->message += arg->data_length;
	h->cb->ws_data(h->arg, arg->data, arg->data_length);
}

static void
WsMessage(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg, void *user_data)
{
	Xip83Http  *h = user_data;

	if (arg->opcode == WSLAY_BINARY_FRAME && wslay_event_get_read_enabled(ctx))
	{
		h->opcode = 0;
		h->message = 0;
		h->cb->ws_end(h->arg);
	}
}

bool
xip83_http_websocket(Xip83Http *h, uint64_t max_message)
{
	static const struct wslay_event_callbacks wcb = {
		.recv_callback = WsRecv,
		.send_callback = WsSend,
		.on_frame_recv_start_callback = WsFrameStart,
		.on_frame_recv_chunk_callback = WsFrameChunk,
		.on_msg_recv_callback = WsMessage,
	};

	if (h->ws)
		return true;
	if (wslay_event_context_server_init(&h->ws, &wcb, h) != 0)
		return false;
	/* payloads are handed on as they come: the transport assembles and bounds them */
	wslay_event_config_set_no_buffering(h->ws, 1);
	wslay_event_config_set_max_recv_msg_length(h->ws, max_message);
	h->max_message = max_message;
	return true;
}

bool
xip83_http_is_websocket(const Xip83Http *h)
{
	return h->ws != NULL;
}

bool
xip83_http_ws_send(Xip83Http *h, const unsigned char *msg, size_t len)
{
	struct wslay_event_msg m = {WSLAY_BINARY_FRAME, msg, len};

	return h->ws && wslay_event_queue_msg(h->ws, &m) == 0;
}

void
xip83_http_ws_close(Xip83Http *h, uint16_t code)
{
	if (h->ws)
		(void) wslay_event_queue_close(h->ws, code, NULL, 0);
}

bool
xip83_http_ws_flush(Xip83Http *h)
{
	return h->ws == NULL || wslay_event_send(h->ws) == 0;
}

size_t
xip83_http_ws_queued(const Xip83Http *h)
{
	return h->ws ? wslay_event_get_queued_msg_count(h->ws) : 0;
}

bool
xip83_http_ws_close_sent(const Xip83Http *h)
{
	return h->ws && wslay_event_get_close_sent(h->ws);
}

bool
xip83_http_ws_close_received(const Xip83Http *h)
{
	return h->ws && wslay_event_get_close_received(h->ws);
}

bool
xip83_http_ws_accept(const char *key, size_t len, char out[29])
{
	static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	unsigned char in[64 + sizeof(guid)];
	unsigned char md[SHA_DIGEST_LENGTH];

	/* a key is 16 random bytes in base64: 24 characters */
	if (len == 0 || len > 64)
		return false;
	memcpy(in, key, len);
	memcpy(in + len, guid, sizeof(guid) - 1);
	SHA1(in, len + sizeof(guid) - 1, md);
	out[xip83_base64_encode(md, sizeof(md), out)] = '\0';
	return true;
}

/* ---------------------------------------------------------------- gRPC-Web's helpers */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t
xip83_base64_encode(const unsigned char *in, size_t len, char *out)
{
	size_t		o = 0;

	for (size_t i = 0; i < len; i += 3)
	{
		uint32_t	v = (uint32_t) in[i] << 16;

		if (i + 1 < len)
			v |= (uint32_t) in[i + 1] << 8;
		if (i + 2 < len)
			v |= in[i + 2];
		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = i + 1 < len ? b64[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < len ? b64[v & 63] : '=';
	}
	return o;
}

static int
B64Value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

ssize_t
xip83_base64_decode(Xip83Base64 *d, const unsigned char *in, size_t len, unsigned char *out)
{
	size_t		o = 0;

	for (size_t i = 0; i < len; i++)
	{
		int			v[4];
		int			pad = 0;

		d->q[d->n++] = in[i];
		if (d->n < 4)
			continue;
		d->n = 0;
		for (int k = 0; k < 4; k++)
		{
			if (d->q[k] == '=' && k >= 2)
			{
				pad++;
				v[k] = 0;
				continue;
			}
			/* a letter after a pad, or a stray byte */
			if (pad > 0 || (v[k] = B64Value(d->q[k])) < 0)
				return -1;
		}
		out[o++] = (unsigned char) (v[0] << 2 | v[1] >> 4);
		if (pad < 2)
			out[o++] = (unsigned char) ((v[1] & 15) << 4 | v[2] >> 2);
		if (pad < 1)
			out[o++] = (unsigned char) ((v[2] & 3) << 6 | v[3]);
	}
	return (ssize_t) o;
}

/* The next comma-separated item of [p, end), spaces trimmed; false at the end. */
static bool
NextItem(const char **p, const char *end, const char **item, size_t *len)
{
	const char *s = *p;
	const char *e;

	while (s < end && (*s == ' ' || *s == '\t' || *s == ','))
		s++;
	if (s == end)
		return false;
	e = memchr(s, ',', (size_t) (end - s));
	*p = e ? e : end;
	if (e == NULL)
		e = end;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*item = s;
	*len = (size_t) (e - s);
	return true;
}

bool
xip83_http_origin_allowed(const char *list, const char *origin, size_t len)
{
	const char *p = list;
	const char *item;
	size_t		n;

	if (list == NULL)
		return false;
	while (NextItem(&p, list + strlen(list), &item, &n))
		if ((n == 1 && item[0] == '*') || (n == len && memcmp(item, origin, len) == 0))
			return true;
	return false;
}

size_t
xip83_http_allow_headers(const char *requested, size_t len, char *out, size_t cap)
{
	const char *p = requested;
	const char *item;
	size_t		n;
	size_t		o = 0;

	if (cap == 0)
		return 0;
	while (NextItem(&p, requested + len, &item, &n))
	{
		for (size_t i = 0; i < sizeof(allowed_headers) / sizeof(allowed_headers[0]); i++)
		{
			const char *a = allowed_headers[i];

			if (strlen(a) == n && strncasecmp(a, item, n) == 0 && o + n + 3 <= cap)
			{
				if (o > 0)
				{
					out[o++] = ',';
					out[o++] = ' ';
				}
				memcpy(out + o, a, n);
				o += n;
				break;
			}
		}
	}
	out[o] = '\0';
	return o;
}
