/*
 * h2_server.c: the transport's loop: listeners, epoll, timers, the dirty
 * connections' flushes, and drain (see h2_server.h).
 *
 * One turn of the loop: wait for sockets or the next timer, handle every
 * ready socket (a connection reads, feeds nghttp2 and flushes), fire due
 * timers, then flush every connection that has something new to send
 * (anything sent from a timer or from another connection's callback).
 */
#define _GNU_SOURCE				/* accept4 */
#include "h2_internal.h"

#include <errno.h>
#include <malloc.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define EVENTS_PER_WAIT 256
#define ACCEPT_PAUSE_MS 100
/* descriptors kept back from max_connections' default: logs, database sockets */
#define FD_RESERVE 64
/* memory given back by ended streams and connections before malloc is trimmed */
#define TRIM_AFTER ((size_t) 4 << 20)
/* spare chunks kept through a trim */
#define SPARE_KEEP 1024

const char *const xip83_h2_limit_names[XIP83_H2_LIMITS] = {
	[XIP83_H2_LIMIT_CONNECTIONS] = "max_connections",
	[XIP83_H2_LIMIT_MEMORY] = "max_memory",
	[XIP83_H2_LIMIT_CONN_MEMORY] = "max_conn_memory",
	[XIP83_H2_LIMIT_CONN_INPUT] = "max_conn_input",
	[XIP83_H2_LIMIT_HANDSHAKE] = "handshake_timeout",
	[XIP83_H2_LIMIT_IDLE] = "idle_timeout",
	[XIP83_H2_LIMIT_REQUEST] = "request_timeout",
	[XIP83_H2_LIMIT_DESCRIPTORS] = "descriptors",
};

/* A number from the first line of path that starts with key (or the file's first), or 0. */
static uint64_t
FileNumber(const char *path, const char *key)
{
	FILE	   *f = fopen(path, "r");
	char		line[256];
	uint64_t	v = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (key == NULL || strncmp(line, key, strlen(key)) == 0)
		{
			v = strtoull(line + (key ? strlen(key) : 0), NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

size_t
xip83_machine_memory(void)
{
	uint64_t	total = FileNumber("/proc/meminfo", "MemTotal:") * 1024;
	uint64_t	cg = FileNumber("/sys/fs/cgroup/memory.max", NULL);

	if (cg > 0 && (total == 0 || cg < total))
		total = cg;
	return total > SIZE_MAX ? SIZE_MAX : (size_t) total;
}

/*
 * max_memory's default: half of the machine's (or the cgroup's) memory, so
 * the transport's clients cannot take what the rest of the process (and the
 * database beside it) needs.
 */
static size_t
DefaultMemory(void)
{
	size_t		total = xip83_machine_memory() / 2;

	return total < ((size_t) 256 << 20) ? (size_t) 256 << 20 : total;
}

/* max_connections' default: the descriptors this process may open, less a reserve. */
static uint32_t
DefaultConnections(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return 100000;
	if (rl.rlim_cur < 2 * FD_RESERVE)
		return (uint32_t) (rl.rlim_cur / 2);
	return rl.rlim_cur - FD_RESERVE > UINT32_MAX ? UINT32_MAX : (uint32_t) (rl.rlim_cur - FD_RESERVE);
}

/* ---------------------------------------------------------------- memory */

void
h2_mem_add(H2Conn *c, size_t n)
{
	c->mem += n;
	c->srv->mem += n;
}

void
h2_mem_sub(H2Conn *c, size_t n)
{
	c->mem -= n;
	c->srv->mem -= n;
	c->srv->freed += n;
}

/*
 * Whether c may take n more bytes: -1 yes, else the limit it would pass. The
 * process's bound refuses only a connection holding more than its share of
 * it: some connection does whenever the process is over, and those that
 * hold little go on.
 */
int
h2_mem_room(H2Conn *c, size_t n)
{
	Xip83H2Server *srv = c->srv;

	if (c->mem + n > srv->cfg.max_conn_memory)
		return XIP83_H2_LIMIT_CONN_MEMORY;
	if (srv->mem + n > srv->cfg.max_memory && c->mem + n > srv->cfg.max_memory / (srv->n_conns + 1))
		return XIP83_H2_LIMIT_MEMORY;
	return -1;
}

/* ---------------------------------------------------------------- the sweep */

/*
 * Once a period: every connection's deadlines (one pass, no timer per
 * connection or stream), and after a burst of ends, memory given back to
 * the system once the burst is over.
 */
static void
Sweep(void *arg)
{
	Xip83H2Server *srv = arg;
	uint64_t	now = xip83_loop_now_ms();

	for (H2Conn *c = srv->conns, *next; c; c = next)
	{
		next = c->next;
		h2_conn_sweep(c, now);
	}
	/* the burst is over when the last period gave back little more */
	if (srv->freed >= TRIM_AFTER && srv->freed - srv->freed_then < TRIM_AFTER / 16)
	{
		while (srv->n_spare > SPARE_KEEP)
		{
			H2Chunk    *c = srv->spare;

			srv->spare = c->next;
			srv->n_spare--;
			free(c);
		}
		malloc_trim(0);
		srv->freed = 0;
	}
	srv->freed_then = srv->freed;
	if (!srv->draining || srv->conns)
		xip83_timer_start(&srv->timers, &srv->sweep_timer, srv->sweep_ms, Sweep, srv);
}

Xip83H2Server *
xip83_h2_server_new(const Xip83H2Config *cfg, char *err, size_t errlen)
{
	Xip83H2Server *srv = calloc(1, sizeof(*srv));
	struct epoll_event ev = {.events = EPOLLIN};

	if (srv == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (cfg)
		srv->cfg = *cfg;
	if (srv->cfg.max_streams == 0)
		srv->cfg.max_streams = 1000;
	if (srv->cfg.max_message == 0)
		srv->cfg.max_message = 4 << 20;
	if (srv->cfg.low_water == 0)
		srv->cfg.low_water = 256 << 10;
	if (srv->cfg.drain_ms == 0)
		srv->cfg.drain_ms = 5000;
	if (srv->cfg.max_partial == 0)
	{
		srv->auto_partial = true;
		srv->cfg.max_partial = (size_t) srv->cfg.max_message * H2_PARTIAL_REQUESTS;
	}
	if (srv->cfg.max_conn_memory == 0)
		srv->cfg.max_conn_memory = (size_t) 128 << 20;
	if (srv->cfg.max_memory == 0)
		srv->cfg.max_memory = DefaultMemory();
	if (srv->cfg.max_connections == 0)
		srv->cfg.max_connections = DefaultConnections();
	if (srv->cfg.loops > 1)
	{
		/* together the loops never pass the process's bounds */
		srv->cfg.max_memory /= srv->cfg.loops;
		srv->cfg.max_connections /= srv->cfg.loops;
		if (srv->cfg.max_connections == 0)
			srv->cfg.max_connections = 1;
	}
	if (srv->cfg.handshake_ms == 0)
		srv->cfg.handshake_ms = 5000;
	if (srv->cfg.idle_ms == 0)
		srv->cfg.idle_ms = 300000;
	if (srv->cfg.request_ms == 0)
		srv->cfg.request_ms = 10000;
	/* a quarter of the shortest timeout late at most */
	srv->sweep_ms = srv->cfg.handshake_ms;
	if (srv->cfg.idle_ms < srv->sweep_ms)
		srv->sweep_ms = srv->cfg.idle_ms;
	if (srv->cfg.request_ms < srv->sweep_ms)
		srv->sweep_ms = srv->cfg.request_ms;
	srv->sweep_ms /= 4;
	srv->sweep_ms = srv->sweep_ms < 10 ? 10 : srv->sweep_ms > 1000 ? 1000 : srv->sweep_ms;
	srv->epfd = epoll_create1(EPOLL_CLOEXEC);
	srv->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	srv->wake_poll.kind = H2_POLL_WAKE;
	ev.data.ptr = &srv->wake_poll;
	if (srv->epfd < 0 || srv->wakefd < 0 ||
		epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->wakefd, &ev) != 0)
	{
		snprintf(err, errlen, "could not set up epoll: %s", strerror(errno));
		goto fail;
	}
	if (nghttp2_session_callbacks_new(&srv->callbacks) != 0 || nghttp2_option_new(&srv->option) != 0)
	{
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	h2_stream_callbacks(srv->callbacks);
	return srv;
fail:
	xip83_h2_server_free(srv);
	return NULL;
}

void
xip83_h2_server_free(Xip83H2Server *srv)
{
	if (srv == NULL)
		return;
	while (srv->conns)
		h2_conn_close(srv->conns);
	while (srv->listeners)
	{
		H2Listener *l = srv->listeners;

		srv->listeners = l->next;
		if (l->fd >= 0)
			close(l->fd);
		free(l);
	}
	if (srv->epfd >= 0)
		close(srv->epfd);
	if (srv->wakefd >= 0)
		close(srv->wakefd);
	while (srv->spare)
	{
		H2Chunk    *c = srv->spare;

		srv->spare = c->next;
		free(c);
	}
	SSL_CTX_free(srv->tls);
	nghttp2_session_callbacks_del(srv->callbacks);
	nghttp2_option_del(srv->option);
	xip83_timers_free(&srv->timers);
	free(srv->watched);
	free(srv->methods);
	free(srv);
}

bool
xip83_h2_register(Xip83H2Server *srv, const Xip83GrpcMethod *m)
{
	const Xip83GrpcMethod **p;

	for (size_t i = 0; i < srv->n_methods; i++)
		if (strcmp(srv->methods[i]->path, m->path) == 0)
			return false;
	p = realloc(srv->methods, (srv->n_methods + 1) * sizeof(*p));
	if (p == NULL)
		return false;
	srv->methods = p;
	srv->methods[srv->n_methods++] = m;
	/* a connection can always take a few requests of the largest size at once */
	if (srv->auto_partial && (size_t) (m->max_message ? m->max_message : srv->cfg.max_message)
		* H2_PARTIAL_REQUESTS > srv->cfg.max_partial)
		srv->cfg.max_partial = (size_t) (m->max_message ? m->max_message : srv->cfg.max_message)
			* H2_PARTIAL_REQUESTS;
	return true;
}

bool
xip83_h2_tls_files(Xip83H2Server *srv, const char *cert_file, const char *key_file,
				   char *err, size_t errlen)
{
	SSL_CTX    *ctx = h2_tls_context(cert_file, key_file, err, errlen);

	if (ctx == NULL)
		return false;
	SSL_CTX_free(srv->tls);
	srv->tls = ctx;
	return true;
}

static int
TcpListen(const char *host, const char *port, bool reuse_port, int *bound, char *err,
		  size_t errlen)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC,.ai_socktype = SOCK_STREAM,.ai_flags = AI_PASSIVE};
	struct addrinfo *ai;
	struct sockaddr_storage ss;
	socklen_t	sslen = sizeof(ss);
	int			fd = -1,
				one = 1,
				rc;

	rc = getaddrinfo(host, port, &hints, &ai);
	if (rc != 0)
	{
		snprintf(err, errlen, "could not resolve %s:%s: %s", host, port, gai_strerror(rc));
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
		(reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) ||
		bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0 ||
		getsockname(fd, (struct sockaddr *) &ss, &sslen) != 0)
	{
		snprintf(err, errlen, "could not listen on %s:%s: %s", host, port, strerror(errno));
		freeaddrinfo(ai);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	freeaddrinfo(ai);
	*bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *) &ss)->sin6_port
				   : ((struct sockaddr_in *) &ss)->sin_port);
	return fd;
}

int
xip83_tcp_listen(const char *host, const char *port, int *bound, char *err, size_t errlen)
{
	return TcpListen(host, port, false, bound, err, errlen);
}

int
xip83_h2_listen(Xip83H2Server *srv, const char *host, const char *port, bool tls,
				char *err, size_t errlen)
{
	int			fd,
				bound;
	H2Listener *l;
	struct epoll_event ev = {.events = EPOLLIN};

	if (tls && srv->tls == NULL)
	{
		snprintf(err, errlen, "a TLS listener needs a certificate and key first");
		return -1;
	}
	if ((fd = TcpListen(host, port, srv->cfg.loops > 1, &bound, err, errlen)) < 0)
		return -1;
	l = calloc(1, sizeof(*l));
	if (l == NULL)
	{
		snprintf(err, errlen, "out of memory");
		close(fd);
		return -1;
	}
	l->poll.kind = H2_POLL_LISTENER;
	l->fd = fd;
	l->tls = tls;
	ev.data.ptr = &l->poll;
	if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
	{
		snprintf(err, errlen, "could not watch the listener: %s", strerror(errno));
		close(fd);
		free(l);
		return -1;
	}
	l->next = srv->listeners;
	srv->listeners = l;
	return bound;
}

/* The drain's grace is over: whatever is still open is closed now. */
static void
DrainDeadline(void *arg)
{
	Xip83H2Server *srv = arg;

	srv->drained = true;
	while (srv->conns)
		h2_conn_close(srv->conns);
}

void
xip83_h2_drain(Xip83H2Server *srv)
{
	if (srv->draining)
		return;
	srv->draining = true;
	/* closed, but kept: this turn's events may still point at them */
	for (H2Listener *l = srv->listeners; l; l = l->next)
		if (l->fd >= 0)
		{
			epoll_ctl(srv->epfd, EPOLL_CTL_DEL, l->fd, NULL);
			close(l->fd);
			l->fd = -1;
			l->paused = false;
		}
	xip83_timer_stop(&srv->timers, &srv->accept_timer);
	/* the core ends its streams its own way first, if it likes */
	if (srv->cfg.on_drain)
		srv->cfg.on_drain(srv->cfg.drain_arg);
	for (H2Conn *c = srv->conns; c; c = c->next)
		h2_conn_goaway(c);
	xip83_timer_start(&srv->timers, &srv->drain_timer, srv->cfg.drain_ms, DrainDeadline, srv);
}

void
xip83_h2_drain_async(Xip83H2Server *srv)
{
	uint64_t	one = 1;
	int			saved = errno;

	/* a full counter means a drain is asked for already */
	if (write(srv->wakefd, &one, sizeof(one)) < 0)
		(void) 0;
	errno = saved;
}

void
xip83_h2_stats(const Xip83H2Server *srv, Xip83H2Stats *out)
{
	out->connections = srv->n_conns;
	out->streams = srv->n_streams;
	out->pending = srv->pending;
	out->memory = srv->mem;
	out->input = srv->input;
	memcpy(out->reached, srv->reached, sizeof(out->reached));
	out->cfg = &srv->cfg;
}

bool
xip83_h2_timer_start(Xip83H2Server *srv, Xip83Timer *t, uint64_t delay_ms,
					 Xip83TimerFn fire, void *arg)
{
	return xip83_timer_start(&srv->timers, t, delay_ms, fire, arg);
}

bool
xip83_h2_timer_start_at(Xip83H2Server *srv, Xip83Timer *t, uint64_t due_ms,
						Xip83TimerFn fire, void *arg)
{
	return xip83_timer_start_at(&srv->timers, t, due_ms, fire, arg);
}

void
xip83_h2_timer_stop(Xip83H2Server *srv, Xip83Timer *t)
{
	xip83_timer_stop(&srv->timers, t);
}

bool
xip83_h2_watch(Xip83H2Server *srv, Xip83Watch *w, int fd, uint32_t events, Xip83WatchFn fire,
			   void *arg)
{
	struct epoll_event ev = {.events = events};

	if (w->fd >= 0 && w->fd != fd)
		xip83_h2_unwatch(srv, w);
	w->poll_kind = H2_POLL_WATCH;
	w->fire = fire;
	w->arg = arg;
	ev.data.ptr = w;
	if (epoll_ctl(srv->epfd, EPOLL_CTL_MOD, fd, &ev) != 0
		&& (errno != ENOENT || epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) != 0))
	{
		w->fd = -1;
		return false;
	}
	w->fd = fd;
	return true;
}

void
xip83_h2_unwatch(Xip83H2Server *srv, Xip83Watch *w)
{
	if (w->fd >= 0)
		(void) epoll_ctl(srv->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	w->fd = -1;
	for (size_t i = 0; i < srv->n_watched; i++)
		if (srv->watched[i] == w)
			srv->watched[i] = srv->watched[--srv->n_watched];
}

bool
xip83_h2_watch_listener(Xip83H2Server *srv, Xip83Watch *w, int fd, Xip83WatchFn fire, void *arg)
{
	Xip83Watch **p = realloc(srv->watched, (srv->n_watched + 1) * sizeof(*p));

	if (p == NULL)
		return false;
	srv->watched = p;
	if (!xip83_h2_watch(srv, w, fd, EPOLLIN, fire, arg))
		return false;
	srv->watched[srv->n_watched++] = w;
	return true;
}

/* Resumes the listeners paused for want of descriptors. */
static void
AcceptResume(void *arg)
{
	Xip83H2Server *srv = arg;

	for (H2Listener *l = srv->listeners; l; l = l->next)
		if (l->paused)
		{
			struct epoll_event ev = {.events = EPOLLIN,.data.ptr = &l->poll};

			l->paused = false;
			epoll_ctl(srv->epfd, EPOLL_CTL_ADD, l->fd, &ev);
		}
	for (size_t i = 0; i < srv->n_watched; i++)
	{
		Xip83Watch *w = srv->watched[i];
		struct epoll_event ev = {.events = EPOLLIN,.data.ptr = w};

		if (w->fd >= 0)
			epoll_ctl(srv->epfd, EPOLL_CTL_ADD, w->fd, &ev);
	}
}

/*
 * Out of descriptors (or memory) for a new connection: every listener leaves
 * epoll for a while, as level-triggered it would wake the loop again at
 * once, and connections ending meanwhile give descriptors back.
 */
void
h2_accept_pause(Xip83H2Server *srv)
{
	if (xip83_timer_running(&srv->accept_timer))
		return;
	srv->reached[XIP83_H2_LIMIT_DESCRIPTORS]++;
	for (H2Listener *l = srv->listeners; l; l = l->next)
		if (l->fd >= 0 && !l->paused)
		{
			epoll_ctl(srv->epfd, EPOLL_CTL_DEL, l->fd, NULL);
			l->paused = true;
		}
	for (size_t i = 0; i < srv->n_watched; i++)
		if (srv->watched[i]->fd >= 0)
			epoll_ctl(srv->epfd, EPOLL_CTL_DEL, srv->watched[i]->fd, NULL);
	xip83_timer_start(&srv->timers, &srv->accept_timer, ACCEPT_PAUSE_MS, AcceptResume, srv);
}

int
xip83_h2_accept(Xip83H2Server *srv, int listen_fd)
{
	int			fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM))
	{
		int			saved = errno;

		h2_accept_pause(srv);
		errno = saved;
	}
	return fd;
}

/*
 * Flushes every connection something was queued on since its last flush,
 * and those a flush's callbacks queue on meanwhile. A connection that cannot
 * be written stays off the list until its socket says EPOLLOUT. A turn
 * flushes each connection about twice at most; the rest wait for the next
 * turn, which then does not sleep.
 */
static void
FlushDirty(Xip83H2Server *srv)
{
	for (size_t budget = 2 * srv->n_conns + 2; srv->dirty && budget > 0; budget--)
	{
		H2Conn	   *c = srv->dirty;

		if (!h2_conn_flush(c))
			h2_conn_close(c);
	}
}

bool
xip83_h2_run(Xip83H2Server *srv)
{
	struct epoll_event ev[EVENTS_PER_WAIT];

	xip83_timer_start(&srv->timers, &srv->sweep_timer, srv->sweep_ms, Sweep, srv);
	while (!(srv->draining && (srv->conns == NULL || srv->drained)))
	{
		uint64_t	now = xip83_loop_now_ms();
		int			wait = xip83_timers_wait_ms(&srv->timers, now);
		int			n;

		/* a write after a quiet spell leaves at once; under load, one every write_hold_ms */
		if (srv->dirty != NULL && srv->flush_due == 0)
			srv->flush_due = srv->flushed_at + srv->cfg.write_hold_ms > now
				? srv->flushed_at + srv->cfg.write_hold_ms : now;
		if (srv->dirty != NULL)
		{
			int			hold = srv->flush_due > now ? (int) (srv->flush_due - now) : 0;

			if (wait < 0 || hold < wait)
				wait = hold;
		}
		n = epoll_wait(srv->epfd, ev, EVENTS_PER_WAIT, wait);

		if (n < 0 && errno != EINTR)
			return false;
		for (int i = 0; i < n; i++)
		{
			H2Poll	   *p = ev[i].data.ptr;

			switch (p->kind)
			{
				case H2_POLL_LISTENER:
					if (!srv->draining)
						h2_conn_accept(srv, (H2Listener *) p);
					break;
				case H2_POLL_CONN:
					h2_conn_event((H2Conn *) p, ev[i].events);
					break;
				case H2_POLL_WATCH:
					{
						Xip83Watch *w = (Xip83Watch *) p;

						if (w->fd >= 0)
							w->fire(w->arg, ev[i].events);
					}
					break;
				case H2_POLL_WAKE:
					{
						uint64_t	count;

						if (read(srv->wakefd, &count, sizeof(count)) == sizeof(count))
							xip83_h2_drain(srv);
					}
					break;
			}
		}
		xip83_timers_run(&srv->timers, xip83_loop_now_ms());
		if (srv->flush_due != 0 && (xip83_loop_now_ms() >= srv->flush_due || srv->draining))
		{
			FlushDirty(srv);
			srv->flush_due = 0;
			srv->flushed_at = xip83_loop_now_ms();
		}
	}
	xip83_timer_stop(&srv->timers, &srv->drain_timer);
	xip83_timer_stop(&srv->timers, &srv->sweep_timer);
	return true;
}
