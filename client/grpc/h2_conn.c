/*
 * h2_conn.c: one client connection: its socket (plain or TLS), its nghttp2
 * server session, and the bytes between them.
 *
 * What a connection speaks is told before any session starts: by ALPN over
 * TLS, else by its first bytes (the HTTP/2 preface, h2c with prior
 * knowledge; anything else is HTTP/1.1, h2_web.c, with the same output
 * buffer, accounts and deadlines). Until then the server says nothing.
 *
 * Reads feed nghttp2_session_mem_recv; writes take nghttp2_session_mem_send's
 * output, and the DATA frames its send_data callback writes (h2_stream.c),
 * into a small buffer (up to H2_OUT_FILL bytes at a time: one write or SSL_write
 * for every frame a loop turn queued on the connection) and write it; a short write keeps the rest and
 * waits for EPOLLOUT, and nothing more is taken from nghttp2 until it is out,
 * so what a connection holds beyond its streams' queues is bounded. Each
 * readiness event reads at most READ_BUDGET bytes: epoll is level-triggered,
 * so a busy connection comes back next turn and cannot starve the others.
 *
 * A connection closes when nghttp2 wants neither to read nor to write (after
 * GOAWAY and the last stream), on EOF, and on any socket, TLS or protocol
 * error; its open streams then end as cancelled. A limit closes it the
 * same way after a GOAWAY (h2_conn_limit).
 *
 * What a connection holds is charged to it (H2Conn.mem): nghttp2's own
 * allocations through an allocator of ours, sized by malloc; the output
 * buffer, which grows as needed and is given back by the sweep once a
 * period passed without use; and its streams' queues and partial messages
 * (h2_stream.c).
 */
#define _GNU_SOURCE
#include "h2_internal.h"

#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <openssl/err.h>

#define READ_CHUNK	16384		/* TLS's largest record: SSL_read leaves nothing behind */
#define READ_BUDGET (16 * READ_CHUNK)
#define ACCEPT_BUDGET 64

static bool Recv(H2Conn *c, const unsigned char *buf, size_t n);

/*
 * nghttp2's allocations, charged to their connection as malloc sized them:
 * its HPACK tables, frame buffers, streams and header blocks.
 */
static void *
NgMalloc(size_t size, void *arg)
{
	void	   *p = malloc(size);

	if (p)
		h2_mem_add(arg, malloc_usable_size(p));
	return p;
}

static void
NgFree(void *ptr, void *arg)
{
	if (ptr)
		h2_mem_sub(arg, malloc_usable_size(ptr));
	free(ptr);
}

static void *
NgCalloc(size_t nmemb, size_t size, void *arg)
{
	void	   *p = calloc(nmemb, size);

	if (p)
		h2_mem_add(arg, malloc_usable_size(p));
	return p;
}

static void *
NgRealloc(void *ptr, size_t size, void *arg)
{
	size_t		old = ptr ? malloc_usable_size(ptr) : 0;
	void	   *p = realloc(ptr, size);

	if (p == NULL)
		return NULL;
	h2_mem_sub(arg, old);
	h2_mem_add(arg, malloc_usable_size(p));
	return p;
}

/* Starts the HTTP/2 session of a connection: our SETTINGS go first. */
static bool
SessionStart(H2Conn *c)
{
	Xip83H2Server *srv = c->srv;
	nghttp2_settings_entry iv[] = {
		{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, srv->cfg.max_streams},
		{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20},
		{NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, 16384},
	};

	c->proto = H2_PROTO_H2;
	h2_conn_dirty(c);			/* the SETTINGS */
	c->alloc = (nghttp2_mem) {c, NgMalloc, NgFree, NgCalloc, NgRealloc};
	if (nghttp2_session_server_new3(&c->session, srv->callbacks, c, srv->option, &c->alloc) != 0)
		return false;
	if (nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0])) != 0)
		return false;
	/* the connection's window: many streams' requests in flight at once */
	nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0, 16 << 20);
	return true;
}

void
h2_conn_accept(Xip83H2Server *srv, H2Listener *l)
{
	for (int i = 0; i < ACCEPT_BUDGET; i++)
	{
		int			fd = xip83_h2_accept(srv, l->fd);
		int			one = 1;
		H2Conn	   *c;
		struct epoll_event ev;

		if (fd < 0)
			return;
		/* refused at once: the client sees the connection closed */
		if (srv->n_conns >= srv->cfg.max_connections)
		{
			srv->reached[XIP83_H2_LIMIT_CONNECTIONS]++;
			close(fd);
			continue;
		}
		if (srv->mem >= srv->cfg.max_memory)
		{
			srv->reached[XIP83_H2_LIMIT_MEMORY]++;
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = calloc(1, sizeof(*c));
		if (c == NULL)
		{
			close(fd);
			continue;
		}
		c->poll.kind = H2_POLL_CONN;
		c->srv = srv;
		c->fd = fd;
		c->since_ms = xip83_loop_now_ms();
		if (l->tls)
		{
			c->ssl = SSL_new(srv->tls);
			if (c->ssl == NULL || SSL_set_fd(c->ssl, fd) != 1)
			{
				SSL_free(c->ssl);
				free(c);
				close(fd);
				ERR_clear_error();
				continue;
			}
			SSL_set_accept_state(c->ssl);
			c->handshaking = true;
		}
		ev.events = EPOLLIN;
		ev.data.ptr = &c->poll;
		/* what it speaks is told by ALPN or by its first bytes */
		c->proto = H2_PROTO_SNIFF;
		if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
		{
			SSL_free(c->ssl);
			free(c);
			close(fd);
			continue;
		}
		c->next = srv->conns;
		if (srv->conns)
			srv->conns->prev = c;
		srv->conns = c;
		srv->n_conns++;
		c->serial = ++srv->serial;
		if (srv->draining)
			h2_conn_goaway(c);
	}
}

/* Registers or drops interest in writability. */
static void
WantOut(H2Conn *c, bool on)
{
	struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0),.data.ptr = &c->poll};

	if (c->out_blocked == on)
		return;
	c->out_blocked = on;
	epoll_ctl(c->srv->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/*
 * Moves the TLS handshake on; false when it failed. ALPN tells what the
 * connection speaks; without it, its first bytes do.
 */
static bool
Handshake(H2Conn *c)
{
	int			rc = SSL_do_handshake(c->ssl);

	if (rc == 1)
	{
		c->handshaking = false;
		switch (h2_tls_alpn(c->ssl))
		{
			case 2:
				return SessionStart(c);
			case 1:
				return h2_web_start(c);
			default:
				return true;
		}
	}
	switch (SSL_get_error(c->ssl, rc))
	{
		case SSL_ERROR_WANT_READ:
			WantOut(c, false);
			return true;
		case SSL_ERROR_WANT_WRITE:
			WantOut(c, true);
			return true;
		default:
			ERR_clear_error();
			return false;
	}
}

/* Reads into buf: > 0 bytes, 0 nothing now, -1 EOF or error. */
static ssize_t
SockRead(H2Conn *c, unsigned char *buf, size_t len)
{
	if (c->ssl)
	{
		int			n = SSL_read(c->ssl, buf, (int) len);

		if (n > 0)
			return n;
		switch (SSL_get_error(c->ssl, n))
		{
			case SSL_ERROR_WANT_READ:
				return 0;
			case SSL_ERROR_WANT_WRITE:
				WantOut(c, true);
				return 0;
			default:
				ERR_clear_error();
				return -1;
		}
	}
	for (;;)
	{
		ssize_t		n = read(c->fd, buf, len);

		if (n > 0)
			return n;
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
	}
}

/* Writes from buf: > 0 bytes, 0 would block, -1 error. */
static ssize_t
SockWrite(H2Conn *c, const unsigned char *buf, size_t len)
{
	if (c->ssl)
	{
		int			n = SSL_write(c->ssl, buf, (int) (len > INT32_MAX ? INT32_MAX : len));

		if (n > 0)
			return n;
		switch (SSL_get_error(c->ssl, n))
		{
			case SSL_ERROR_WANT_READ:
			case SSL_ERROR_WANT_WRITE:
				return 0;
			default:
				ERR_clear_error();
				return -1;
		}
	}
	for (;;)
	{
		ssize_t		n = send(c->fd, buf, len, MSG_NOSIGNAL);

		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
	}
}

/* Room for n more bytes at the end of the out buffer (not counted yet), or NULL. */
unsigned char *
h2_conn_out_reserve(H2Conn *c, size_t n)
{
	if (c->out_len + n > c->out_cap)
	{
		/* grown as needed: a connection that writes little keeps a small buffer */
		size_t		cap = c->out_cap ? c->out_cap * 2 : 4096;
		unsigned char *b;

		while (cap < c->out_len + n)
			cap *= 2;
		b = realloc(c->out, cap);

		if (b == NULL)
			return NULL;
		h2_mem_add(c, cap);
		h2_mem_sub(c, c->out_cap);
		c->out = b;
		c->out_cap = cap;
	}
	c->out_used = true;
	return c->out + c->out_len;
}

/* Appends nghttp2's next bytes to the out buffer; false when out of memory. */
static bool
OutFill(H2Conn *c)
{
	if (c->http)
		return h2_web_fill(c);
	while (c->session && c->out_len < H2_OUT_FILL)
	{
		const uint8_t *p;
		unsigned char *dst;
		/* a DATA frame is appended by the send_data callback, inside this call */
		ssize_t		n = nghttp2_session_mem_send(c->session, &p);

		if (n < 0)
			return false;
		if (n == 0)
			break;
		if ((dst = h2_conn_out_reserve(c, (size_t) n)) == NULL)
			return false;
		memcpy(dst, p, (size_t) n);
		c->out_len += (size_t) n;
	}
	return true;
}

/*
 * Puts the connection on the server's dirty list, flushed at the end of the
 * loop's turn: the turn's cost follows the connections written to, not the
 * connections open.
 */
void
h2_conn_dirty(H2Conn *c)
{
	Xip83H2Server *srv = c->srv;

	if (c->dirty)
		return;
	c->dirty = true;
	c->dirty_next = NULL;
	c->dirty_prev = srv->dirty_tail;
	if (srv->dirty_tail)
		srv->dirty_tail->dirty_next = c;
	else
		srv->dirty = c;
	srv->dirty_tail = c;
}

static void
Undirty(H2Conn *c)
{
	Xip83H2Server *srv = c->srv;

	if (!c->dirty)
		return;
	c->dirty = false;
	if (c->dirty_prev)
		c->dirty_prev->dirty_next = c->dirty_next;
	else
		srv->dirty = c->dirty_next;
	if (c->dirty_next)
		c->dirty_next->dirty_prev = c->dirty_prev;
	else
		srv->dirty_tail = c->dirty_prev;
}

bool
h2_conn_flush(H2Conn *c)
{
	Undirty(c);
	if (c->handshaking)
		return true;
	for (;;)
	{
		while (c->out_off < c->out_len)
		{
			ssize_t		n = SockWrite(c, c->out + c->out_off, c->out_len - c->out_off);

			if (n < 0)
				return false;
			if (n == 0)
			{
				WantOut(c, true);
				return true;
			}
			c->out_off += (size_t) n;
		}
		c->out_off = c->out_len = 0;
		if (!OutFill(c))
			return false;
		if (c->out_len == 0)
		{
			if (c->n_notify == 0)
				break;
			/* writable callbacks may queue more: take it in this pass */
			h2_stream_notify(c);
			if (!OutFill(c))
				return false;
			if (c->out_len == 0)
				break;
		}
	}
	WantOut(c, false);
	if (c->out_cap > H2_OUT_FILL * 2)
	{
		/* one large frame grew the buffer: give it back when idle */
		h2_mem_sub(c, c->out_cap);
		free(c->out);
		c->out = NULL;
		c->out_cap = 0;
	}
	if (c->http)
		return h2_web_open(c);
	if (c->session == NULL)
		return !c->closing;
	return nghttp2_session_want_read(c->session) || nghttp2_session_want_write(c->session);
}

/*
 * Until a connection's first bytes tell, they are kept: the HTTP/2 preface
 * (h2c with prior knowledge), or anything else, HTTP/1.1. False: close it.
 */
static bool
Sniff(H2Conn *c, const unsigned char *buf, size_t n)
{
	static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
	size_t		take = sizeof(c->sniff) - c->n_sniff;
	bool		h2;

	if (take > n)
		take = n;
	memcpy(c->sniff + c->n_sniff, buf, take);
	c->n_sniff += (uint8_t) take;
	h2 = memcmp(c->sniff, preface, c->n_sniff) == 0;
	if (h2 && c->n_sniff < sizeof(c->sniff))
		return true;			/* so far, either */
	if (!(h2 ? SessionStart(c) : h2_web_start(c)))
		return false;
	return Recv(c, c->sniff, c->n_sniff) && Recv(c, buf + take, n - take);
}

/* Bytes read, to the connection's protocol. False: close it. */
static bool
Recv(H2Conn *c, const unsigned char *buf, size_t n)
{
	if (n == 0)
		return true;
	switch (c->proto)
	{
		case H2_PROTO_H2:
			return nghttp2_session_mem_recv(c->session, buf, n) >= 0;
		case H2_PROTO_H1:
			return h2_web_recv(c, buf, n);
		default:
			return Sniff(c, buf, n);
	}
}

void
h2_conn_event(H2Conn *c, uint32_t events)
{
	size_t		budget = READ_BUDGET;

	if (c->handshaking)
	{
		if (!Handshake(c))
			return h2_conn_close(c);
		if (c->handshaking)
			return;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR) || (c->ssl && events & EPOLLOUT))
	{
		unsigned char buf[READ_CHUNK];

		while (budget > 0)
		{
			ssize_t		n = SockRead(c, buf, sizeof(buf));

			if (n < 0)
				return h2_conn_close(c);
			if (n == 0)
				break;
			if (!Recv(c, buf, (size_t) n))
				return h2_conn_close(c);
			/* what nghttp2 took for itself: the connection goes, alone */
			if (!c->closing && h2_mem_room(c, 0) >= 0)
				h2_conn_limit(c, (Xip83H2Limit) h2_mem_room(c, 0));
			if (c->closing)
				break;			/* nothing more is taken from it */
			budget -= (size_t) n < budget ? (size_t) n : budget;
			/*
			 * A short read drained the socket: the loop is level-triggered,
			 * so what comes later wakes it again, and the read that would
			 * only say EAGAIN is one system call per wake saved. TLS may
			 * hold a decrypted record back, so it reads on.
			 */
			if (c->ssl == NULL && (size_t) n < sizeof(buf))
				break;
		}
	}
	if (!h2_conn_flush(c))
		h2_conn_close(c);
}

void
h2_conn_goaway(H2Conn *c)
{
	if (c->session == NULL)
	{
		if (c->http)
			return h2_web_goaway(c);
		c->closing = true;		/* nothing said yet: closed at once */
		return h2_conn_dirty(c);
	}
	nghttp2_submit_goaway(c->session, NGHTTP2_FLAG_NONE,
						  nghttp2_session_get_last_proc_stream_id(c->session),
						  NGHTTP2_NO_ERROR, NULL, 0);
	for (Xip83H2Stream *s = c->streams; s; s = s->next)
		if (s->method && !s->finishing)
			xip83_h2_finish(s, XIP83_GRPC_UNAVAILABLE, "server is shutting down");
	h2_conn_dirty(c);
}

/*
 * A limit ends the connection: GOAWAY, nothing more read, closed once that
 * is written (or at the next sweep, when the client does not read).
 */
void
h2_conn_limit(H2Conn *c, Xip83H2Limit why)
{
	if (c->closing)
		return;
	c->closing = true;
	c->since_ms = xip83_loop_now_ms();
	c->srv->reached[why]++;
	if (c->session)
		nghttp2_session_terminate_session(c->session, why == XIP83_H2_LIMIT_IDLE ?
										  NGHTTP2_NO_ERROR : NGHTTP2_ENHANCE_YOUR_CALM);
	h2_conn_dirty(c);
}

/*
 * The connection's deadlines, from the server's sweep: the handshake and
 * preface, idleness, the oldest stream holding part of a request; and an
 * output buffer unused since the last sweep is given back.
 */
void
h2_conn_sweep(H2Conn *c, uint64_t now)
{
	Xip83H2Server *srv = c->srv;

	if (c->closing)
	{
		/* a GOAWAY the client did not read in a whole sweep: closed hard */
		if (now >= c->since_ms + srv->sweep_ms)
			h2_conn_close(c);
		return;
	}
	if (!c->greeted)
	{
		if (now >= c->since_ms + srv->cfg.handshake_ms)
		{
			srv->reached[XIP83_H2_LIMIT_HANDSHAKE]++;
			h2_conn_close(c);
		}
		return;
	}
	/* an HTTP/1.1 request answered early, whose rest stopped coming */
	if (c->h1_skip && now >= c->since_ms + srv->cfg.request_ms)
	{
		h2_conn_limit(c, XIP83_H2_LIMIT_REQUEST);
		return;
	}
	if (c->streams == NULL && now >= c->since_ms + srv->cfg.idle_ms && !srv->draining)
	{
		h2_conn_limit(c, XIP83_H2_LIMIT_IDLE);
		return;
	}
	while (c->in_head && now >= c->in_head->progress_ms + srv->cfg.request_ms)
	{
		Xip83H2Stream *s = c->in_head;

		/* HTTP/1.1 carries nothing past a request cut short: the connection goes */
		if ((s->method == NULL && !s->finishing) || (c->http && s->finishing))
		{
			/* inside a header block nothing else can be sent: the connection goes */
			h2_conn_limit(c, XIP83_H2_LIMIT_REQUEST);
			return;
		}
		h2_stream_limit(s, XIP83_H2_LIMIT_REQUEST, "the request made no progress in time");
		h2_stream_progress(s, false);
	}
	if (c->out && c->out_len == 0 && !c->out_used)
	{
		/* idle: a connection between bursts does not keep its reserve */
		h2_mem_sub(c, c->out_cap);
		free(c->out);
		c->out = NULL;
		c->out_cap = 0;
	}
	c->out_used = false;
}

void
h2_conn_close(H2Conn *c)
{
	Xip83H2Server *srv = c->srv;

	/* nghttp2 gives no close callbacks when a session is deleted */
	while (c->streams)
	{
		Xip83H2Stream *s = c->streams;

		if (c->session)
			nghttp2_session_set_stream_user_data(c->session, s->id, NULL);
		h2_stream_free(s, !s->end_sent);
	}
	nghttp2_session_del(c->session);
	h2_web_free(c);
	if (c->ssl)
	{
		if (!c->handshaking)
			SSL_shutdown(c->ssl);	/* close_notify, once, without waiting */
		SSL_free(c->ssl);
		ERR_clear_error();
	}
	epoll_ctl(srv->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	Undirty(c);
	if (c->out)
		h2_mem_sub(c, c->out_cap);
	/* nothing should be left; whatever is does not stay on the process's account */
	h2_mem_sub(c, c->mem);
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	srv->n_conns--;
	free(c->out);
	free(c->notify);
	free(c);
}
