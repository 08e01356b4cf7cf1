/*
 * session_request.c: decoding and checking a SubscribeRequest of either
 * binding (see session_request.h). The two packages share every field
 * number but the cursor of an add, so each has a short unpacking step and the
 * checks are common.
 */
#include "session_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pb_check.h"
#include "xip83/d14n_message_api.pb-c.h"
#include "xip83/mls_api.pb-c.h"

#define INVALID "INVALID_ARGUMENT"

/* Positions are bigint: a cursor past them means "nothing to replay". */
static int64_t
Clamp(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t) v;
}

static bool
KindOk(Xip83BindingKind binding, const ProtobufCBinaryData *t)
{
	return t->len >= 1 && t->data[0] <= (binding == XIP83_BINDING_V3 ? 0x01 : 0x05);
}

/* The Mutate's limits and removes; allocates adds and n_entries cursor entries. */
static const char *
MutateHead(Xip83Request *req, uint64_t mutate_id, bool history_only, size_t n_adds,
		   size_t n_entries, const ProtobufCBinaryData *removes, size_t n_removes, char *err,
		   size_t err_len)
{
	req->kind = XIP83_REQ_MUTATE;
	req->mutate_id = mutate_id;
	req->history_only = history_only;
	if (n_adds > XIP83_MAX_ADDS)
	{
		snprintf(err, err_len, "%zu adds in one Mutate (at most %d)", n_adds, XIP83_MAX_ADDS);
		return "RESOURCE_EXHAUSTED";
	}
	if (n_adds > 0 && mutate_id == 0)
	{
		snprintf(err, err_len, "Mutate with adds needs a nonzero mutate_id");
		return INVALID;
	}
	req->adds = calloc(n_adds + 1, sizeof(Xip83Add));
	req->entries = calloc(n_entries + 1, sizeof(Xip83Pos));
	req->removes = calloc(n_removes + 1, sizeof(*req->removes));
	req->remove_lens = calloc(n_removes + 1, sizeof(size_t));
	if (req->adds == NULL || req->entries == NULL || req->removes == NULL
		|| req->remove_lens == NULL)
	{
		snprintf(err, err_len, "out of memory");
		return "RESOURCE_EXHAUSTED";
	}
	for (size_t i = 0; i < n_removes; i++)
	{
		if (!KindOk(req->binding, &removes[i]))
		{
			snprintf(err, err_len, "remove %zu: unknown topic kind", i);
			return INVALID;
		}
		req->removes[i] = removes[i].data;
		req->remove_lens[i] = removes[i].len;
	}
	req->n_removes = n_removes;
	return NULL;
}

/* Records add i's topic after checking its kind. */
static const char *
AddTopic(Xip83Request *req, size_t i, const ProtobufCBinaryData *topic, char *err,
		 size_t err_len)
{
	if (!KindOk(req->binding, topic))
	{
		snprintf(err, err_len, "add %zu: unknown topic kind", i);
		return INVALID;
	}
	req->adds[i].topic = topic->data;
	req->adds[i].len = topic->len;
	req->n_adds = i + 1;
	return NULL;
}

/*
 * Bytes protobuf-c would read but the wire format forbids are refused too,
 * and each refusal says what is wrong where.
 */
static bool
Malformed(const ProtobufCMessageDescriptor *desc, const unsigned char *bytes, size_t len,
		  char *err, size_t err_len)
{
	char		why[200];

	if (xip83_pb_check(desc, bytes, len, why, sizeof(why)) == NULL)
		return false;
	snprintf(err, err_len, "malformed SubscribeRequest: %s", why);
	return true;
}

static const char *
UnpackV3(const unsigned char *bytes, size_t len, Xip83Request *req, char *err, size_t err_len)
{
	Xmtp__Mls__Api__V1__SubscribeRequest *r;
	Xmtp__Mls__Api__V1__SubscribeRequest__V1__Mutate *m;
	const char *code;

	if (Malformed(&xmtp__mls__api__v1__subscribe_request__descriptor, bytes, len, err, err_len))
		return INVALID;
	if ((r = xmtp__mls__api__v1__subscribe_request__unpack(NULL, len, bytes)) == NULL)
	{
		snprintf(err, err_len, "malformed SubscribeRequest");
		return INVALID;
	}
	req->unpacked = r;
	if (r->version_case != XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__VERSION_V1)
	{
		snprintf(err, err_len, "unknown SubscribeRequest version");
		return INVALID;
	}
	switch (r->v1->request_case)
	{
		case XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__REQUEST_PING:
			req->kind = XIP83_REQ_PING;
			req->nonce = r->v1->ping->nonce;
			return NULL;
		case XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__REQUEST_PONG:
			req->kind = XIP83_REQ_PONG;
			req->nonce = r->v1->pong->nonce;
			return NULL;
		case XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__REQUEST_MUTATE:
			break;
		default:
			snprintf(err, err_len, "SubscribeRequest without a request");
			return INVALID;
	}
	m = r->v1->mutate;
	if ((code = MutateHead(req, m->mutate_id, m->history_only, m->n_adds, m->n_adds, m->removes,
						   m->n_removes, err, err_len)) != NULL)
		return code;
	for (size_t i = 0; i < m->n_adds; i++)
	{
		if ((code = AddTopic(req, i, &m->adds[i]->topic, err, err_len)) != NULL)
			return code;
		/* one line: the topic's kind */
		req->entries[i].node = m->adds[i]->topic.data[0];
		req->entries[i].seq = Clamp(m->adds[i]->id_cursor);
		req->adds[i].cursor = &req->entries[i];
		req->adds[i].n_cursor = 1;
	}
	return NULL;
}

static const char *
UnpackD14n(const unsigned char *bytes, size_t len, Xip83Request *req, char *err,
		   size_t err_len)
{
	Xmtp__Xmtpv4__MessageApi__SubscribeRequest *r;
	Xmtp__Xmtpv4__MessageApi__SubscribeRequest__V1__Mutate *m;
	const char *code;
	size_t		n_entries = 0;
	size_t		e = 0;

	if (Malformed(&xmtp__xmtpv4__message_api__subscribe_request__descriptor, bytes, len, err,
				  err_len))
		return INVALID;
	if ((r = xmtp__xmtpv4__message_api__subscribe_request__unpack(NULL, len, bytes)) == NULL)
	{
		snprintf(err, err_len, "malformed SubscribeRequest");
		return INVALID;
	}
	req->unpacked = r;
	if (r->version_case != XMTP__XMTPV4__MESSAGE_API__SUBSCRIBE_REQUEST__VERSION_V1)
	{
		snprintf(err, err_len, "unknown SubscribeRequest version");
		return INVALID;
	}
	switch (r->v1->request_case)
	{
		case XMTP__XMTPV4__MESSAGE_API__SUBSCRIBE_REQUEST__V1__REQUEST_PING:
			req->kind = XIP83_REQ_PING;
			req->nonce = r->v1->ping->nonce;
			return NULL;
		case XMTP__XMTPV4__MESSAGE_API__SUBSCRIBE_REQUEST__V1__REQUEST_PONG:
			req->kind = XIP83_REQ_PONG;
			req->nonce = r->v1->pong->nonce;
			return NULL;
		case XMTP__XMTPV4__MESSAGE_API__SUBSCRIBE_REQUEST__V1__REQUEST_MUTATE:
			break;
		default:
			snprintf(err, err_len, "SubscribeRequest without a request");
			return INVALID;
	}
	m = r->v1->mutate;
	for (size_t i = 0; i < m->n_adds && m->n_adds <= XIP83_MAX_ADDS; i++)
		if (m->adds[i]->last_seen != NULL)
			n_entries += m->adds[i]->last_seen->n_node_id_to_sequence_id;
	if ((code = MutateHead(req, m->mutate_id, m->history_only, m->n_adds, n_entries, m->removes,
						   m->n_removes, err, err_len)) != NULL)
		return code;
	for (size_t i = 0; i < m->n_adds; i++)
	{
		const Xmtp__Xmtpv4__Envelopes__Cursor *c = m->adds[i]->last_seen;
		Xip83Add   *a = &req->adds[i];

		if ((code = AddTopic(req, i, &m->adds[i]->topic, err, err_len)) != NULL)
			return code;
		a->cursor = &req->entries[e];
		for (size_t j = 0; c != NULL && j < c->n_node_id_to_sequence_id; j++)
		{
			/* node ids are int in the tables; a repeated map key: the last one wins */
			int32_t		node = (int32_t) c->node_id_to_sequence_id[j]->key;
			size_t		k = 0;

			while (k < a->n_cursor && a->cursor[k].node != node)
				k++;
			a->cursor[k].node = node;
			a->cursor[k].seq = Clamp(c->node_id_to_sequence_id[j]->value);
			if (k == a->n_cursor)
			{
				a->n_cursor++;
				e++;
			}
		}
	}
	return NULL;
}

/* Merges cursor b into a line by line, the lowest winning (a line b lacks is nothing seen). */
static void
LowestCursor(Xip83Add *a, const Xip83Add *b)
{
	for (size_t i = 0; i < a->n_cursor;)
	{
		int64_t		v = xip83_cursor_at(b->cursor, b->n_cursor, a->cursor[i].node);

		if (v == XIP83_NOTHING_SEEN)
		{
			a->cursor[i] = a->cursor[--a->n_cursor];
			continue;
		}
		if (v < a->cursor[i].seq)
			a->cursor[i].seq = v;
		i++;
	}
}

/* Orders adds by topic, then by where they stand in the Mutate. */
static int
AddOrder(const void *x, const void *y)
{
	const Xip83Add *a = *(const Xip83Add *const *) x;
	const Xip83Add *b = *(const Xip83Add *const *) y;
	int			c;

	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	if ((c = memcmp(a->topic, b->topic, a->len)) != 0)
		return c;
	return a < b ? -1 : a > b;
}

/*
 * Coalesces duplicate adds in place: first position kept, lowest cursor.
 * Sorted pointers find them with one allocation: a storm of reconnecting
 * streams passes every topic of every Mutate through here.
 */
static bool
Coalesce(Xip83Request *req)
{
	Xip83Add  **by_topic;
	size_t		n = 0;

	if (req->n_adds < 2)
		return true;
	if ((by_topic = malloc(req->n_adds * sizeof(*by_topic))) == NULL)
		return false;
	for (size_t i = 0; i < req->n_adds; i++)
		by_topic[i] = &req->adds[i];
	qsort(by_topic, req->n_adds, sizeof(*by_topic), AddOrder);
	for (size_t i = 1, first = 0; i < req->n_adds; i++)
	{
		/* sorted: a topic's first add heads its run */
		if (by_topic[first]->len == by_topic[i]->len
			&& memcmp(by_topic[first]->topic, by_topic[i]->topic, by_topic[i]->len) == 0)
		{
			LowestCursor(by_topic[first], by_topic[i]);
			by_topic[i]->topic = NULL;	/* a duplicate: dropped below */
		}
		else
			first = i;
	}
	free(by_topic);
	for (size_t i = 0; i < req->n_adds; i++)
		if (req->adds[i].topic != NULL)
			req->adds[n++] = req->adds[i];
	req->n_adds = n;
	return true;
}

const char *
xip83_request_parse(Xip83BindingKind binding, const unsigned char *bytes, size_t len,
					Xip83Request *req, char *err, size_t err_len)
{
	const char *code;

	memset(req, 0, sizeof(*req));
	req->binding = binding;
	code = binding == XIP83_BINDING_V3 ? UnpackV3(bytes, len, req, err, err_len)
		: UnpackD14n(bytes, len, req, err, err_len);
	if (code == NULL && req->kind == XIP83_REQ_MUTATE && !Coalesce(req))
	{
		snprintf(err, err_len, "out of memory");
		return "RESOURCE_EXHAUSTED";
	}
	return code;
}

void
xip83_request_free(Xip83Request *req)
{
	if (req->unpacked && req->binding == XIP83_BINDING_V3)
		xmtp__mls__api__v1__subscribe_request__free_unpacked(req->unpacked, NULL);
	else if (req->unpacked)
		xmtp__xmtpv4__message_api__subscribe_request__free_unpacked(req->unpacked, NULL);
	free(req->adds);
	free(req->entries);
	free(req->removes);
	free(req->remove_lens);
	memset(req, 0, sizeof(*req));
}
