/*
 * session_request.c: decoding and checking a v3 SubscribeRequest (see
 * session_request.h).
 */
#include "session_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_topics.h"
#include "xip83/mls_api.pb-c.h"

#define INVALID "INVALID_ARGUMENT"

static bool
V3Topic(const ProtobufCBinaryData *t)
{
	return t->len >= 1 && (t->data[0] == 0x00 || t->data[0] == 0x01);
}

/* Coalesces duplicate adds in place: first position kept, lowest cursor. */
static bool
Coalesce(Xip83Request *req)
{
	Xip83Topics seen = {0};
	size_t		n = 0;

	for (size_t i = 0; i < req->n_adds; i++)
	{
		Xip83Add   *a = &req->adds[i];
		Xip83Topic *t = xip83_topics_get(&seen, a->topic, a->len);

		if (t != NULL)
		{
			Xip83Add   *first = &req->adds[t->position];

			if (a->cursor < first->cursor)
				first->cursor = a->cursor;
			continue;
		}
		if ((t = xip83_topics_put(&seen, a->topic, a->len)) == NULL)
		{
			xip83_topics_free(&seen);
			return false;
		}
		t->position = (int64_t) n;
		req->adds[n++] = *a;
	}
	req->n_adds = n;
	xip83_topics_free(&seen);
	return true;
}

const char *
xip83_request_parse(const unsigned char *bytes, size_t len, Xip83Request *req, char *err,
					size_t err_len)
{
	Xmtp__Mls__Api__V1__SubscribeRequest *r;
	Xmtp__Mls__Api__V1__SubscribeRequest__V1__Mutate *m;

	memset(req, 0, sizeof(*req));
	r = xmtp__mls__api__v1__subscribe_request__unpack(NULL, len, bytes);
	if (r == NULL)
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
	req->kind = XIP83_REQ_MUTATE;
	req->mutate_id = m->mutate_id;
	req->history_only = m->history_only;
	if (m->n_adds > XIP83_MAX_ADDS)
	{
		snprintf(err, err_len, "%zu adds in one Mutate (at most %d)", m->n_adds, XIP83_MAX_ADDS);
		return "RESOURCE_EXHAUSTED";
	}
	if (m->n_adds > 0 && m->mutate_id == 0)
	{
		snprintf(err, err_len, "Mutate with adds needs a nonzero mutate_id");
		return INVALID;
	}
	req->adds = calloc(m->n_adds + 1, sizeof(Xip83Add));
	req->removes = calloc(m->n_removes + 1, sizeof(*req->removes));
	req->remove_lens = calloc(m->n_removes + 1, sizeof(size_t));
	if (req->adds == NULL || req->removes == NULL || req->remove_lens == NULL)
	{
		snprintf(err, err_len, "out of memory");
		return "RESOURCE_EXHAUSTED";
	}
	for (size_t i = 0; i < m->n_removes; i++)
	{
		if (!V3Topic(&m->removes[i]))
		{
			snprintf(err, err_len, "remove %zu: unknown topic kind", i);
			return INVALID;
		}
		req->removes[i] = m->removes[i].data;
		req->remove_lens[i] = m->removes[i].len;
	}
	req->n_removes = m->n_removes;
	for (size_t i = 0; i < m->n_adds; i++)
	{
		if (!V3Topic(&m->adds[i]->topic))
		{
			snprintf(err, err_len, "add %zu: unknown topic kind", i);
			return INVALID;
		}
		req->adds[i].topic = m->adds[i]->topic.data;
		req->adds[i].len = m->adds[i]->topic.len;
		/* ids are bigint: a cursor past them means "nothing to replay" */
		req->adds[i].cursor = m->adds[i]->id_cursor > INT64_MAX
			? INT64_MAX : (int64_t) m->adds[i]->id_cursor;
	}
	req->n_adds = m->n_adds;
	if (!Coalesce(req))
	{
		snprintf(err, err_len, "out of memory");
		return "RESOURCE_EXHAUSTED";
	}
	return NULL;
}

void
xip83_request_free(Xip83Request *req)
{
	if (req->unpacked)
		xmtp__mls__api__v1__subscribe_request__free_unpacked(req->unpacked, NULL);
	free(req->adds);
	free(req->removes);
	free(req->remove_lens);
	memset(req, 0, sizeof(*req));
}
