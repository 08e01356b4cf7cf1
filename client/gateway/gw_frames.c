/*
 * gw_frames.c: SubscribeResponse frames and server-streaming requests at the
 * protobuf wire level (see gw_frames.h).
 */
#include "gw_frames.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/session.h"
#include "xip83/d14n_message_api.pb-c.h"
#include "xip83/mls_api.pb-c.h"

/* One field of a message: its number, wire type, and value or body. */
typedef struct PbField
{
	uint32_t	num;
	int			type;			/* 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32 */
	uint64_t	value;
	const unsigned char *body;	/* type 2 */
	size_t		len;
	const unsigned char *start; /* the whole field, tag included */
	size_t		whole;
} PbField;

/* Next's reading; *p is anywhere after a failure. */
static bool
NextField(const unsigned char **p, const unsigned char *end, PbField *f)
{
	uint64_t	tag;

	if (*p >= end || !xip83_pb_varint(p, end, &tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX)
		return false;
	f->num = (uint32_t) (tag >> 3);
	f->type = (int) (tag & 7);
	f->body = NULL;
	f->len = 0;
	switch (f->type)
	{
		case 0:
			if (!xip83_pb_varint(p, end, &f->value))
				return false;
			break;
		case 1:
		case 5:
			f->len = f->type == 1 ? 8 : 4;
			if ((size_t) (end - *p) < f->len)
				return false;
			*p += f->len;
			break;
		case 2:
			if (!xip83_pb_varint(p, end, &f->value) || f->value > (uint64_t) (end - *p))
				return false;
			f->body = *p;
			f->len = (size_t) f->value;
			*p += f->len;
			break;
		default:
			return false;
	}
	return true;
}

/*
 * The next field at *p; false at the end or on malformed bytes, *p then left
 * at the field (*p == end tells which).
 */
static bool
Next(const unsigned char **p, const unsigned char *end, PbField *f)
{
	f->start = *p;
	if (!NextField(p, end, f))
	{
		*p = f->start;
		return false;
	}
	f->whole = (size_t) (*p - f->start);
	return true;
}

/* The response arm of a SubscribeResponse (v1 = 1 { arm }): its number and body. */
static bool
Arm(const unsigned char *frame, size_t len, PbField *arm)
{
	const unsigned char *p = frame;
	PbField		v1;

	while (Next(&p, frame + len, &v1))
		if (v1.num == 1 && v1.type == 2)
		{
			const unsigned char *q = v1.body;

			return Next(&q, v1.body + v1.len, arm) && arm->type == 2;
		}
	return false;
}

size_t
gw_frame_rows(const unsigned char *frame, size_t len)
{
	PbField		arm,
				f;
	const unsigned char *p;
	size_t		n = 0;

	if (!Arm(frame, len, &arm) || arm.num != 1)
		return 0;
	/* v3 Messages: group_messages = 1, welcome_messages = 2; d14n Envelopes: envelopes = 1 */
	for (p = arm.body; Next(&p, arm.body + arm.len, &f);)
		if (f.type == 2 && (f.num == 1 || f.num == 2))
			n++;
	return n;
}

/* A growing message. */
typedef struct Buf
{
	unsigned char *p;
	size_t		len;
	size_t		cap;
	bool		failed;
} Buf;

static void
Put(Buf *b, const void *src, size_t n)
{
	if (b->failed || n == 0)
		return;
	if (b->cap - b->len < n)
	{
		size_t		cap = b->cap ? b->cap : 256;
		unsigned char *np;

		while (cap - b->len < n)
			cap *= 2;
		if ((np = realloc(b->p, cap)) == NULL)
		{
			b->failed = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static void
PutVarint(Buf *b, uint64_t v)
{
	unsigned char tmp[10];

	Put(b, tmp, xip83_varint_put(tmp, v));
}

/* A length-delimited field's tag and length (the body follows). */
static void
PutHead(Buf *b, uint32_t num, size_t len)
{
	PutVarint(b, (uint64_t) num << 3 | 2);
	PutVarint(b, len);
}

/* SubscribeTopicsResponse.status_update = 2 { status = 1 } */
static bool
SendStatus(GwSendFn send, void *arg, int status)
{
	const unsigned char msg[4] = {0x12, 0x02, 0x08, (unsigned char) status};

	return send(arg, msg, sizeof(msg));
}

bool
gw_frame_translate(GwMethodKind kind, const unsigned char *frame, size_t len, GwSendFn send,
				   void *arg)
{
	PbField		arm,
				f;
	const unsigned char *p;
	Buf			b = {0};
	bool		ok = true;

	if (!Arm(frame, len, &arm))
		return false;
	switch (arm.num)
	{
		case 1:					/* rows */
			break;
		case 2:					/* Started */
			return kind != GW_TOPICS || SendStatus(send, arg, 1);
		case 6:					/* CatchupComplete */
			return kind != GW_TOPICS || SendStatus(send, arg, 2);
		default:				/* Ping, Pong, TopicsLive: nothing to say */
			return true;
	}
	if (kind != GW_TOPICS)
	{
		/* one GroupMessage or WelcomeMessage per response, as they are */
		for (p = arm.body; ok && Next(&p, arm.body + arm.len, &f);)
			if (f.type == 2 && (f.num == 1 || f.num == 2))
				ok = send(arg, f.body, f.len);
		return ok;
	}
	/* SubscribeTopicsResponse.envelopes = 1 { envelopes = 1 ... }, without the mutate_id */
	{
		size_t		body = 0;

		for (p = arm.body; Next(&p, arm.body + arm.len, &f);)
			if (f.num == 1 && f.type == 2)
				body += f.whole;
		PutHead(&b, 1, body);
		for (p = arm.body; Next(&p, arm.body + arm.len, &f);)
			if (f.num == 1 && f.type == 2)
				Put(&b, f.start, f.whole);
	}
	ok = !b.failed && send(arg, b.p, b.len);
	free(b.p);
	return ok;
}

const char *
gw_filters_request(GwMethodKind kind, const unsigned char *msg, size_t len, unsigned char **out,
				   size_t *out_len, char *err, size_t err_len)
{
	Buf			adds = {0},
				mutate = {0},
				v1 = {0},
				req = {0};
	const unsigned char *p = msg;
	PbField		f;
	const ProtobufCMessageDescriptor *desc =
		kind == GW_GROUP_MESSAGES ? &xmtp__mls__api__v1__subscribe_group_messages_request__descriptor
		: kind == GW_WELCOME_MESSAGES ? &xmtp__mls__api__v1__subscribe_welcome_messages_request__descriptor
		: &xmtp__xmtpv4__message_api__subscribe_topics_request__descriptor;
	char		why[200];

	/* the walk below reads only the fields it copies: the rest is checked here */
	if (xip83_pb_check(desc, msg, len, why, sizeof(why)) != NULL)
	{
		snprintf(err, err_len, "malformed request: %s", why);
		return "INVALID_ARGUMENT";
	}

	while (Next(&p, msg + len, &f))
	{
		const unsigned char *q;
		PbField		g;
		Buf			add = {0};

		if (f.num != 1 || f.type != 2)
			continue;
		if (kind == GW_TOPICS)
		{
			/* TopicFilter { topic = 1, last_seen = 2 } is a Subscription already */
			Put(&adds, f.start, f.whole);
			continue;
		}
		/* Filter { key = 1, id_cursor = 2 }: the key gains its kind byte */
		for (q = f.body; Next(&q, f.body + f.len, &g);)
		{
			if (g.num == 1 && g.type == 2)
			{
				unsigned char k = kind == GW_WELCOME_MESSAGES ? 0x01 : 0x00;

				PutHead(&add, 1, g.len + 1);
				Put(&add, &k, 1);
				Put(&add, g.body, g.len);
			}
			else
				Put(&add, g.start, g.whole);
		}
		if (q != f.body + f.len)
			add.failed = true;
		PutHead(&adds, 1, add.len);
		Put(&adds, add.p, add.len);
		adds.failed |= add.failed;
		free(add.p);
	}
	if (p != msg + len)
		adds.failed = true;
	/* SubscribeRequest { v1 = 1 { mutate = 1 { adds..., mutate_id = 4: 1 } } } */
	Put(&mutate, adds.p, adds.len);
	Put(&mutate, "\x20\x01", 2);
	PutHead(&v1, 1, mutate.len);
	Put(&v1, mutate.p, mutate.len);
	PutHead(&req, 1, v1.len);
	Put(&req, v1.p, v1.len);
	req.failed |= adds.failed || mutate.failed || v1.failed;
	free(adds.p);
	free(mutate.p);
	free(v1.p);
	if (req.failed)
	{
		free(req.p);
		/* the check above passed: what failed was memory */
		snprintf(err, err_len, "out of memory");
		return "RESOURCE_EXHAUSTED";
	}
	*out = req.p;
	*out_len = req.len;
	return NULL;
}
