/*
 * sessionproc.c: xip83-session as a child process (see sessionproc.h).
 */
#include "sessionproc.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

static int64_t
NowMs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
sp_start(SessionProc *p, const char *argv0, const char *binding, int keepalive_ms)
{
	char		self[4096];
	char		path[4200];
	char		ka[32];
	int			in[2],
				out[2],
				err[2];

	memset(p, 0, sizeof(*p));
	snprintf(self, sizeof(self), "%s", argv0);
	snprintf(path, sizeof(path), "%s/../xip83-session", dirname(self));
	snprintf(ka, sizeof(ka), "%d", keepalive_ms);
	if (access(path, X_OK) != 0)
		tl_fatal("no %s", path);
	if (pipe(in) != 0 || pipe(out) != 0 || pipe(err) != 0)
		tl_fatal("pipe: %s", strerror(errno));
	signal(SIGPIPE, SIG_IGN);
	p->pid = fork();
	if (p->pid < 0)
		tl_fatal("fork: %s", strerror(errno));
	if (p->pid == 0)
	{
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		close(in[1]);
		close(out[0]);
		close(err[0]);
		/* the connection comes from the environment (PGHOST, PGDATABASE...) */
		execl(path, path, "--dsn", "", "--binding", binding, "--keepalive-ms", ka, (char *) NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	p->to_child = in[1];
	p->from_child = out[0];
	p->err_child = err[0];
}

void
sp_send_raw(SessionProc *p, const unsigned char *msg, size_t len)
{
	unsigned char *buf = malloc(len + 10);
	size_t		n = 0;
	uint64_t	v = len;

	while (v >= 0x80)
	{
		buf[n++] = (unsigned char) (v | 0x80);
		v >>= 7;
	}
	buf[n++] = (unsigned char) v;
	memcpy(buf + n, msg, len);
	n += len;
	if (p->hold)
	{
		p->held = realloc(p->held, p->held_len + n);
		memcpy(p->held + p->held_len, buf, n);
		p->held_len += n;
		free(buf);
		return;
	}
	/* a write error means the session already ended: its STATUS tells why */
	for (size_t off = 0; off < n;)
	{
		ssize_t		w = write(p->to_child, buf + off, n - off);

		if (w <= 0)
			break;
		off += (size_t) w;
	}
	free(buf);
}

void
sp_release(SessionProc *p)
{
	unsigned char *held = p->held;
	size_t		len = p->held_len;

	p->hold = false;
	p->held = NULL;
	p->held_len = 0;
	/* one write below PIPE_BUF arrives whole */
	if (len > 0 && write(p->to_child, held, len) != (ssize_t) len)
		tl_fatal("writing held requests failed");
	free(held);
}

static void
SendRequest(SessionProc *p, Xmtp__Mls__Api__V1__SubscribeRequest__V1 *v1)
{
	Xmtp__Mls__Api__V1__SubscribeRequest req = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__INIT;
	size_t		len;
	unsigned char *buf;

	req.version_case = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__VERSION_V1;
	req.v1 = v1;
	len = xmtp__mls__api__v1__subscribe_request__get_packed_size(&req);
	buf = malloc(len + 1);
	xmtp__mls__api__v1__subscribe_request__pack(&req, buf);
	sp_send_raw(p, buf, len);
	free(buf);
}

void
sp_mutate(SessionProc *p, const SpAdd *adds, size_t n_adds, const unsigned char *const *removes,
		  const size_t *remove_lens, size_t n_removes, bool history_only, uint64_t mutate_id)
{
	Xmtp__Mls__Api__V1__SubscribeRequest__V1 v1 = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__INIT;
	Xmtp__Mls__Api__V1__SubscribeRequest__V1__Mutate m =
		XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__MUTATE__INIT;
	Xmtp__Mls__Api__V1__SubscribeRequest__V1__Mutate__Subscription *subs =
		calloc(n_adds + 1, sizeof(*subs));
	Xmtp__Mls__Api__V1__SubscribeRequest__V1__Mutate__Subscription **sp =
		calloc(n_adds + 1, sizeof(*sp));
	ProtobufCBinaryData *rm = calloc(n_removes + 1, sizeof(*rm));

	for (size_t i = 0; i < n_adds; i++)
	{
		xmtp__mls__api__v1__subscribe_request__v1__mutate__subscription__init(&subs[i]);
		subs[i].topic.data = (uint8_t *) adds[i].topic;
		subs[i].topic.len = adds[i].len;
		subs[i].id_cursor = adds[i].cursor;
		sp[i] = &subs[i];
	}
	for (size_t i = 0; i < n_removes; i++)
	{
		rm[i].data = (uint8_t *) removes[i];
		rm[i].len = remove_lens[i];
	}
	m.n_adds = n_adds;
	m.adds = sp;
	m.n_removes = n_removes;
	m.removes = rm;
	m.history_only = history_only;
	m.mutate_id = mutate_id;
	v1.request_case = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__REQUEST_MUTATE;
	v1.mutate = &m;
	SendRequest(p, &v1);
	free(subs);
	free(sp);
	free(rm);
}

/* Ping and Pong carry the same nonce message: only the arm differs. */
static void
SendNonce(SessionProc *p, bool pong, uint64_t nonce)
{
	Xmtp__Mls__Api__V1__SubscribeRequest__V1 v1 = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__INIT;
	Xmtp__Mls__Api__V1__Ping ping = XMTP__MLS__API__V1__PING__INIT;
	Xmtp__Mls__Api__V1__Pong pong_msg = XMTP__MLS__API__V1__PONG__INIT;

	ping.nonce = pong_msg.nonce = nonce;
	v1.request_case = pong ? XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__REQUEST_PONG
		: XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__REQUEST_PING;
	if (pong)
		v1.pong = &pong_msg;
	else
		v1.ping = &ping;
	SendRequest(p, &v1);
}

void
sp_ping(SessionProc *p, uint64_t nonce)
{
	SendNonce(p, false, nonce);
}

void
sp_pong(SessionProc *p, uint64_t nonce)
{
	SendNonce(p, true, nonce);
}

/* A whole response from the buffer, or NULL when more bytes are needed. */
static SpResponse *
Decode(SessionProc *p)
{
	uint64_t	size = 0;
	size_t		i;
	SpResponse *r;

	for (i = 0; i < p->len && i < 10; i++)
	{
		size |= (uint64_t) (p->buf[i] & 0x7f) << (7 * i);
		if (!(p->buf[i] & 0x80))
			break;
	}
	if (i >= p->len || p->len - (i + 1) < size)
		return NULL;
	r = xmtp__mls__api__v1__subscribe_response__unpack(NULL, (size_t) size, p->buf + i + 1);
	if (r == NULL)
		tl_fatal("xip83-session wrote a SubscribeResponse protobuf-c cannot decode");
	memmove(p->buf, p->buf + i + 1 + size, p->len - (i + 1 + size));
	p->len -= i + 1 + size;
	return r;
}

SpResponse *
sp_read(SessionProc *p, int timeout_ms)
{
	int64_t		deadline = NowMs() + timeout_ms;

	for (;;)
	{
		SpResponse *r = Decode(p);
		struct pollfd pfd = {.fd = p->from_child, .events = POLLIN};
		int64_t		left = deadline - NowMs();
		ssize_t		n;

		if (r != NULL)
			return r;
		if (p->eof || left <= 0)
			return NULL;
		if (poll(&pfd, 1, (int) left) <= 0)
			continue;
		if (p->cap - p->len < 65536)
		{
			p->cap = p->cap ? p->cap * 2 : 1 << 20;
			p->buf = realloc(p->buf, p->cap);
		}
		n = read(p->from_child, p->buf + p->len, p->cap - p->len);
		if (n <= 0)
			p->eof = true;
		else
			p->len += (size_t) n;
	}
}

void
sp_free(SpResponse *r)
{
	if (r)
		xmtp__mls__api__v1__subscribe_response__free_unpacked(r, NULL);
}

void
sp_close(SessionProc *p)
{
	if (p->to_child >= 0)
		close(p->to_child);
	p->to_child = -1;
}

void
sp_finish(SessionProc *p, int timeout_ms, void (*on_response) (void *, SpResponse *), void *arg)
{
	int64_t		deadline = NowMs() + timeout_ms;
	char		err[8192];
	size_t		elen = 0;
	int			wstatus = 0;
	char	   *line;
	SpResponse *r;

	while ((r = sp_read(p, (int) (deadline - NowMs()))) != NULL)
	{
		if (on_response)
			on_response(arg, r);
		else
			sp_free(r);
	}
	if (!p->eof)
		kill(p->pid, SIGKILL);
	waitpid(p->pid, &wstatus, 0);
	for (;;)
	{
		ssize_t		n = read(p->err_child, err + elen, sizeof(err) - 1 - elen);

		if (n <= 0)
			break;
		elen += (size_t) n;
	}
	err[elen] = '\0';
	line = strstr(err, "STATUS ");
	snprintf(p->status, sizeof(p->status), "%s", line ? line + 7 : "(no STATUS line)");
	p->status[strcspn(p->status, "\n")] = '\0';
	p->exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
	sp_close(p);
	close(p->from_child);
	close(p->err_child);
	free(p->buf);
	p->buf = NULL;
}
