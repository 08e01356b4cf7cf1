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
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "xip83/d14n_message_api.pb-c.h"

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
	sp_start_stdin(p, argv0, binding, keepalive_ms, -1);
}

void
sp_start_stdin(SessionProc *p, const char *argv0, const char *binding, int keepalive_ms,
			   int stdin_fd)
{
	char		self[4096];
	char		path[4200];
	char		ka[32];
	int			in[2],
				out[2],
				err[2];

	memset(p, 0, sizeof(*p));
	p->d14n = strcmp(binding, "d14n") == 0;
	snprintf(self, sizeof(self), "%s", argv0);
	snprintf(path, sizeof(path), "%s/../xip83-session", dirname(self));
	snprintf(ka, sizeof(ka), "%d", keepalive_ms);
	if (access(path, X_OK) != 0)
		tl_fatal("no %s", path);
	if ((stdin_fd < 0 && pipe(in) != 0) || pipe(out) != 0 || pipe(err) != 0)
		tl_fatal("pipe: %s", strerror(errno));
	/* the child's stdin shares stdin_fd's file offset: the test sees what it read */
	if (stdin_fd >= 0)
	{
		in[0] = dup(stdin_fd);
		in[1] = -1;
	}
	signal(SIGPIPE, SIG_IGN);
	p->pid = fork();
	if (p->pid < 0)
		tl_fatal("fork: %s", strerror(errno));
	if (p->pid == 0)
	{
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		if (in[1] >= 0)
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

void
sp_mutate_cur(SessionProc *p, const SpCurAdd *adds, size_t n_adds,
			  const unsigned char *const *removes, const size_t *remove_lens, size_t n_removes,
			  bool history_only, uint64_t mutate_id)
{
	Xmtp__Xmtpv4__MessageApi__SubscribeRequest req = XMTP__XMTPV4__MESSAGE_API__SUBSCRIBE_REQUEST__INIT;
	Xmtp__Xmtpv4__MessageApi__SubscribeRequest__V1 v1 =
		XMTP__XMTPV4__MESSAGE_API__SUBSCRIBE_REQUEST__V1__INIT;
	Xmtp__Xmtpv4__MessageApi__SubscribeRequest__V1__Mutate m =
		XMTP__XMTPV4__MESSAGE_API__SUBSCRIBE_REQUEST__V1__MUTATE__INIT;
	Xmtp__Xmtpv4__MessageApi__SubscribeRequest__V1__Mutate__Subscription *subs;
	Xmtp__Xmtpv4__MessageApi__SubscribeRequest__V1__Mutate__Subscription **sp;
	Xmtp__Xmtpv4__Envelopes__Cursor *cursors;
	Xmtp__Xmtpv4__Envelopes__Cursor__NodeIdToSequenceIdEntry *entries,
			  **ep;
	ProtobufCBinaryData *rm;
	size_t		n_entries = 0,
				e = 0,
				len;
	unsigned char *buf;

	if (!p->d14n)
	{
		SpAdd	   *v3 = calloc(n_adds + 1, sizeof(SpAdd));

		for (size_t i = 0; i < n_adds; i++)
			v3[i] = (SpAdd) {adds[i].topic, adds[i].len,
			adds[i].n_cursor ? (uint64_t) adds[i].cursor[0].pos : 0};
		sp_mutate(p, v3, n_adds, removes, remove_lens, n_removes, history_only, mutate_id);
		free(v3);
		return;
	}
	for (size_t i = 0; i < n_adds; i++)
		n_entries += adds[i].n_cursor;
	subs = calloc(n_adds + 1, sizeof(*subs));
	sp = calloc(n_adds + 1, sizeof(*sp));
	cursors = calloc(n_adds + 1, sizeof(*cursors));
	entries = calloc(n_entries + 1, sizeof(*entries));
	ep = calloc(n_entries + 1, sizeof(*ep));
	rm = calloc(n_removes + 1, sizeof(*rm));
	for (size_t i = 0; i < n_adds; i++)
	{
		xmtp__xmtpv4__message_api__subscribe_request__v1__mutate__subscription__init(&subs[i]);
		subs[i].topic.data = (uint8_t *) adds[i].topic;
		subs[i].topic.len = adds[i].len;
		xmtp__xmtpv4__envelopes__cursor__init(&cursors[i]);
		cursors[i].node_id_to_sequence_id = ep + e;
		for (size_t j = 0; j < adds[i].n_cursor; j++, e++)
		{
			xmtp__xmtpv4__envelopes__cursor__node_id_to_sequence_id_entry__init(&entries[e]);
			entries[e].key = (uint32_t) adds[i].cursor[j].node;
			entries[e].value = (uint64_t) adds[i].cursor[j].pos;
			ep[e] = &entries[e];
		}
		cursors[i].n_node_id_to_sequence_id = adds[i].n_cursor;
		subs[i].last_seen = &cursors[i];
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
	v1.request_case = XMTP__XMTPV4__MESSAGE_API__SUBSCRIBE_REQUEST__V1__REQUEST_MUTATE;
	v1.mutate = &m;
	req.version_case = XMTP__XMTPV4__MESSAGE_API__SUBSCRIBE_REQUEST__VERSION_V1;
	req.v1 = &v1;
	len = xmtp__xmtpv4__message_api__subscribe_request__get_packed_size(&req);
	buf = malloc(len + 1);
	xmtp__xmtpv4__message_api__subscribe_request__pack(&req, buf);
	sp_send_raw(p, buf, len);
	free(buf);
	free(subs);
	free(sp);
	free(cursors);
	free(entries);
	free(ep);
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

/* Where the next whole response lies in the buffer: false when more bytes are needed. */
static bool
Whole(const SessionProc *p, size_t *off, size_t *size)
{
	uint64_t	v = 0;
	size_t		i;

	for (i = 0; i < p->len && i < 10; i++)
	{
		v |= (uint64_t) (p->buf[i] & 0x7f) << (7 * i);
		if (!(p->buf[i] & 0x80))
			break;
	}
	if (i >= p->len || p->len - (i + 1) < v)
		return false;
	*off = i + 1;
	*size = (size_t) v;
	return true;
}

static void
Consume(SessionProc *p, size_t n)
{
	memmove(p->buf, p->buf + n, p->len - n);
	p->len -= n;
}

/* Waits until a whole response is buffered; false on timeout or end of stream. */
static bool
Fill(SessionProc *p, int timeout_ms, size_t *off, size_t *size)
{
	int64_t		deadline = NowMs() + timeout_ms;

	for (;;)
	{
		struct pollfd pfd = {.fd = p->from_child, .events = POLLIN};
		int64_t		left = deadline - NowMs();
		ssize_t		n;

		if (Whole(p, off, size))
			return true;
		if (p->eof || left <= 0)
			return false;
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

SpResponse *
sp_read(SessionProc *p, int timeout_ms)
{
	size_t		off,
				size;
	SpResponse *r;

	if (!Fill(p, timeout_ms, &off, &size))
		return NULL;
	r = xmtp__mls__api__v1__subscribe_response__unpack(NULL, size, p->buf + off);
	if (r == NULL)
		tl_fatal("xip83-session wrote a SubscribeResponse protobuf-c cannot decode");
	Consume(p, off + size);
	return r;
}

static SpRow *
AddRow(SpEvent *e)
{
	e->rows = realloc(e->rows, (e->n_rows + 1) * sizeof(SpRow));
	memset(&e->rows[e->n_rows], 0, sizeof(SpRow));
	return &e->rows[e->n_rows++];
}

static void
SetTopic(SpRow *r, int kind, const ProtobufCBinaryData *id)
{
	size_t		n = 0;

	if (kind >= 0)
		r->topic[n++] = (uint8_t) kind;
	for (size_t i = 0; i < id->len && n < sizeof(r->topic); i++)
		r->topic[n++] = id->data[i];
	r->topic_len = n;
}

/* An envelope's originator, sequence and target topic, through its nested messages. */
static void
EnvelopeRow(SpRow *r, const Xmtp__Xmtpv4__Envelopes__OriginatorEnvelope *oe)
{
	Xmtp__Xmtpv4__Envelopes__UnsignedOriginatorEnvelope *u =
		xmtp__xmtpv4__envelopes__unsigned_originator_envelope__unpack(NULL,
																	 oe->unsigned_originator_envelope.len, oe->unsigned_originator_envelope.data);
	Xmtp__Xmtpv4__Envelopes__PayerEnvelope *pe;
	Xmtp__Xmtpv4__Envelopes__ClientEnvelope *ce;

	if (u == NULL
		|| (pe = xmtp__xmtpv4__envelopes__payer_envelope__unpack(NULL, u->payer_envelope_bytes.len,
																u->payer_envelope_bytes.data)) == NULL)
		tl_fatal("an envelope the test did not write");
	ce = xmtp__xmtpv4__envelopes__client_envelope__unpack(NULL, pe->unsigned_client_envelope.len,
														  pe->unsigned_client_envelope.data);
	if (ce == NULL || ce->aad == NULL)
		tl_fatal("an envelope without a target topic");
	r->node = (int32_t) u->originator_node_id;
	r->pos = (int64_t) u->originator_sequence_id;
	SetTopic(r, -1, &ce->aad->target_topic);
	xmtp__xmtpv4__envelopes__client_envelope__free_unpacked(ce, NULL);
	xmtp__xmtpv4__envelopes__payer_envelope__free_unpacked(pe, NULL);
	xmtp__xmtpv4__envelopes__unsigned_originator_envelope__free_unpacked(u, NULL);
}

/* A v3 response as an event. */
static void
V3Event(const SpResponse *r, SpEvent *e)
{
	const Xmtp__Mls__Api__V1__SubscribeResponse__V1 *v1 = r->v1;

	if (v1 == NULL)
		tl_fatal("a response without V1");
	e->type = v1->response_case;
	switch (v1->response_case)
	{
		case XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_MESSAGES:
			e->tag = v1->messages->mutate_id;
			for (size_t i = 0; i < v1->messages->n_group_messages; i++)
			{
				const Xmtp__Mls__Api__V1__GroupMessage__V1 *g = v1->messages->group_messages[i]->v1;
				SpRow	   *row = AddRow(e);

				row->pos = (int64_t) g->id;
				SetTopic(row, 0, &g->group_id);
			}
			for (size_t i = 0; i < v1->messages->n_welcome_messages; i++)
			{
				const Xmtp__Mls__Api__V1__WelcomeMessage *w = v1->messages->welcome_messages[i];
				SpRow	   *row = AddRow(e);

				row->node = 1;
				row->pos = (int64_t) (w->v1 ? w->v1->id : w->welcome_pointer->id);
				SetTopic(row, 1, w->v1 ? &w->v1->installation_key
						 : &w->welcome_pointer->installation_key);
			}
			break;
		case SP_STARTED:
			e->keepalive_ms = v1->started->keepalive_interval_ms;
			break;
		case SP_PING:
			e->nonce = v1->ping->nonce;
			break;
		case SP_PONG:
			e->nonce = v1->pong->nonce;
			break;
		case SP_TOPICS_LIVE:
			for (size_t i = 0; i < v1->topics_live->n_topics; i++)
				SetTopic(AddRow(e), -1, &v1->topics_live->topics[i]);
			break;
		case SP_CATCHUP:
			e->tag = v1->catchup_complete->mutate_id;
			break;
		default:
			break;
	}
}

/* A d14n delivery frame (Envelopes) as an event. */
static void
EnvelopesEvent(const Xmtp__Xmtpv4__MessageApi__SubscribeResponse *r, SpEvent *e)
{
	if (r->v1 == NULL || r->v1->response_case != XMTP__XMTPV4__MESSAGE_API__SUBSCRIBE_RESPONSE__V1__RESPONSE_ENVELOPES)
		tl_fatal("not an Envelopes frame");
	e->type = SP_DELIVERY;
	e->tag = r->v1->envelopes->mutate_id;
	for (size_t i = 0; i < r->v1->envelopes->n_envelopes; i++)
		EnvelopeRow(AddRow(e), r->v1->envelopes->envelopes[i]);
}

/* The arm of a buffered response (SP_*), from its first bytes; -1 if it has none. */
static int
Arm(const unsigned char *msg, size_t size)
{
	size_t		i = 1;

	/* SubscribeResponse { v1 = 1 (key 0x0a), length, then the arm's field key } */
	while (i < size && (msg[i] & 0x80))
		i++;
	return size > 2 && msg[0] == 0x0a && i + 1 < size ? msg[i + 1] >> 3 : -1;
}

bool
sp_next(SessionProc *p, int timeout_ms, SpEvent *e)
{
	size_t		off,
				size;

	memset(e, 0, sizeof(*e));
	if (!Fill(p, timeout_ms, &off, &size))
		return false;
	e->wire_len = size;
	/* control frames are byte for byte the same in both packages: read them as v3 */
	if (p->d14n && Arm(p->buf + off, size) == SP_DELIVERY)
	{
		Xmtp__Xmtpv4__MessageApi__SubscribeResponse *r =
			xmtp__xmtpv4__message_api__subscribe_response__unpack(NULL, size, p->buf + off);

		if (r == NULL)
			tl_fatal("xip83-session wrote a d14n SubscribeResponse protobuf-c cannot decode");
		EnvelopesEvent(r, e);
		xmtp__xmtpv4__message_api__subscribe_response__free_unpacked(r, NULL);
	}
	else
	{
		SpResponse *r = xmtp__mls__api__v1__subscribe_response__unpack(NULL, size, p->buf + off);

		if (r == NULL)
			tl_fatal("xip83-session wrote a SubscribeResponse protobuf-c cannot decode");
		V3Event(r, e);
		sp_free(r);
	}
	Consume(p, off + size);
	return true;
}

int
sp_next_arm(SessionProc *p, int timeout_ms)
{
	size_t		off,
				size;
	int			arm;

	if (!Fill(p, timeout_ms, &off, &size))
		return -1;
	arm = Arm(p->buf + off, size);
	Consume(p, off + size);
	return arm;
}

void
sp_event_free(SpEvent *e)
{
	free(e->rows);
	memset(e, 0, sizeof(*e));
}

unsigned char *
sp_envelope(int32_t node, int64_t seq, const unsigned char *topic, size_t topic_len, size_t *len)
{
	Xmtp__Xmtpv4__Envelopes__AuthenticatedData aad = XMTP__XMTPV4__ENVELOPES__AUTHENTICATED_DATA__INIT;
	Xmtp__Xmtpv4__Envelopes__ClientEnvelope ce = XMTP__XMTPV4__ENVELOPES__CLIENT_ENVELOPE__INIT;
	Xmtp__Xmtpv4__Envelopes__PayerEnvelope pe = XMTP__XMTPV4__ENVELOPES__PAYER_ENVELOPE__INIT;
	Xmtp__Xmtpv4__Envelopes__UnsignedOriginatorEnvelope u =
		XMTP__XMTPV4__ENVELOPES__UNSIGNED_ORIGINATOR_ENVELOPE__INIT;
	Xmtp__Xmtpv4__Envelopes__OriginatorEnvelope oe = XMTP__XMTPV4__ENVELOPES__ORIGINATOR_ENVELOPE__INIT;
	unsigned char ceb[256],
				peb[512],
				ub[1024];
	unsigned char *out;

	if (topic_len > 128)
		tl_fatal("sp_envelope: topic too long");
	aad.target_topic.data = (uint8_t *) topic;
	aad.target_topic.len = topic_len;
	ce.aad = &aad;
	pe.unsigned_client_envelope.data = ceb;
	pe.unsigned_client_envelope.len = xmtp__xmtpv4__envelopes__client_envelope__pack(&ce, ceb);
	pe.target_originator = (uint32_t) node;
	u.originator_node_id = (uint32_t) node;
	u.originator_sequence_id = (uint64_t) seq;
	u.payer_envelope_bytes.data = peb;
	u.payer_envelope_bytes.len = xmtp__xmtpv4__envelopes__payer_envelope__pack(&pe, peb);
	oe.unsigned_originator_envelope.data = ub;
	oe.unsigned_originator_envelope.len =
		xmtp__xmtpv4__envelopes__unsigned_originator_envelope__pack(&u, ub);
	*len = xmtp__xmtpv4__envelopes__originator_envelope__get_packed_size(&oe);
	out = malloc(*len + 1);
	xmtp__xmtpv4__envelopes__originator_envelope__pack(&oe, out);
	return out;
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

/* Waits for the exit (killing it when it did not end), reads the STATUS line, closes the pipes. */
static void
Reap(SessionProc *p)
{
	char		err[8192];
	size_t		elen = 0;
	int			wstatus = 0;
	struct rusage ru = {0};
	char	   *line;

	if (!p->eof)
		kill(p->pid, SIGKILL);
	wait4(p->pid, &wstatus, 0, &ru);
	p->maxrss_kb = ru.ru_maxrss;
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

void
sp_finish(SessionProc *p, int timeout_ms, void (*on_response) (void *, SpResponse *), void *arg)
{
	int64_t		deadline = NowMs() + timeout_ms;
	SpResponse *r;

	while ((r = sp_read(p, (int) (deadline - NowMs()))) != NULL)
	{
		if (on_response)
			on_response(arg, r);
		else
			sp_free(r);
	}
	Reap(p);
}

void
sp_finish_events(SessionProc *p, int timeout_ms, void (*on_event) (void *, SpEvent *), void *arg)
{
	int64_t		deadline = NowMs() + timeout_ms;
	SpEvent		e;

	while (sp_next(p, (int) (deadline - NowMs()), &e))
	{
		if (on_event)
			on_event(arg, &e);
		sp_event_free(&e);
	}
	Reap(p);
}

void
sp_bytea_elem(TlBuf *b, const uint8_t *bytes, size_t len)
{
	/* the array parser eats one backslash, bytea input reads the other */
	tl_buf_add(b, "%s\"\\\\x", b->len > 1 ? "," : "");
	for (size_t i = 0; i < len; i++)
		tl_buf_add(b, "%02x", bytes[i]);
	tl_buf_add(b, "\"");
}

void
sp_expect_status(SessionProc *p, const char *code, const char *what)
{
	sp_close(p);
	sp_finish_events(p, 10000, NULL, NULL);
	TL_CHECK(strncmp(p->status, code, strlen(code)) == 0 && p->exit_code == 1,
			 "%s %s: STATUS %s, exit %d (expected %s, exit 1)", p->d14n ? "d14n" : "v3", what,
			 p->status, p->exit_code, code);
}
