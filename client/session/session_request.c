/*
 * session_request.c: decoding and checking a SubscribeRequest of either
 * binding (see session_request.h). The two packages share every field
 * number but the cursor of an add, so each has a short unpacking step and the
 * checks are common.
 */
#include "session_request.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pb_check.h"
#include "xip83/d14n_message_api.pb-c.h"
#include "xip83/mls_api.pb-c.h"

#define INVALID "INVALID_ARGUMENT"

/*
 * The unpacked request lives in an arena, freed at once: a Mutate of 100,000
 * adds is 200,000 allocations otherwise, each made and freed on the loop of
 * a caller that serves other streams meanwhile.
 */
typedef struct ArenaBlock
{
	struct ArenaBlock *next;
	size_t		used;
	size_t		cap;
	max_align_t data[];
} ArenaBlock;

#define ARENA_FIRST (64 * 1024)
#define ARENA_MAX (1024 * 1024)

static void *
ArenaAlloc(void *arg, size_t size)
{
	ArenaBlock **head = arg;
	ArenaBlock *b = *head;

	size = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (b == NULL || b->cap - b->used < size)
	{
		size_t		cap = b == NULL ? ARENA_FIRST : b->cap < ARENA_MAX ? b->cap * 2 : ARENA_MAX;

		if (cap < size)
			cap = size;
		if ((b = malloc(sizeof(ArenaBlock) + cap)) == NULL)
			return NULL;
		b->used = 0;
		b->cap = cap;
		/* a block for one large allocation goes behind the current one, which stays in use */
		if (*head != NULL && cap == size)
		{
			b->next = (*head)->next;
			(*head)->next = b;
		}
		else
		{
			b->next = *head;
			*head = b;
		}
	}
	b->used += size;
	return (unsigned char *) b->data + b->used - size;
}

static void
ArenaFree(void *arg, void *p)
{
	(void) arg;
	(void) p;					/* freed with the arena */
}

static void
ArenaDestroy(ArenaBlock *b)
{
	while (b != NULL)
	{
		ArenaBlock *next = b->next;

		free(b);
		b = next;
	}
}

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

/* A varint at *p (before end); false when it is cut or longer than 64 bits. */
static bool
WireVarint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; *p < end && shift < 64; shift += 7)
	{
		unsigned char b = *(*p)++;

		*v |= (uint64_t) (b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/*
 * Walks the fields of the message in [p, end): counts[f] counts the
 * length-delimited fields numbered f (1 or 2), and *sub, *sub_end are the
 * body of the last one numbered 1. False when the bytes are no message (the
 * unpacking says so then).
 */
static bool
WireWalk(const unsigned char *p, const unsigned char *end, size_t counts[3],
		 const unsigned char **sub, const unsigned char **sub_end)
{
	*sub = *sub_end = NULL;
	while (p < end)
	{
		uint64_t	tag,
					v;

		if (!WireVarint(&p, end, &tag))
			return false;
		switch (tag & 7)
		{
			case 0:
				if (!WireVarint(&p, end, &v))
					return false;
				break;
			case 1:
			case 5:
				if ((size_t) (end - p) < ((tag & 7) == 1 ? 8u : 4u))
					return false;
				p += (tag & 7) == 1 ? 8 : 4;
				break;
			case 2:
				if (!WireVarint(&p, end, &v) || v > (uint64_t) (end - p))
					return false;
				if ((tag >> 3) == 1 || (tag >> 3) == 2)
					counts[tag >> 3]++;
				if ((tag >> 3) == 1)
				{
					*sub = p;
					*sub_end = p + v;
				}
				p += v;
				break;
			default:
				return false;
		}
	}
	return true;
}

/*
 * A Mutate's adds and removes counted on the wire, before protobuf-c
 * allocates an entry for each: a request of a few MiB can hold millions of
 * empty removes. SubscribeRequest.v1 = 1 { V1.mutate = 1 { adds = 1,
 * removes = 2 } } in both packages; false when the counts are not known
 * (no Mutate, or bytes the unpacking refuses).
 */
static bool
WireCounts(const unsigned char *bytes, size_t len, size_t *n_adds, size_t *n_removes)
{
	const unsigned char *p = bytes,
			   *end = bytes + len;
	size_t		counts[3];

	for (int depth = 0; depth < 3; depth++)
	{
		memset(counts, 0, sizeof(counts));
		if (p == NULL || !WireWalk(p, end, counts, &p, &end))
			return false;
	}
	*n_adds = counts[1];
	*n_removes = counts[2];
	return true;
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
	ProtobufCAllocator arena = {ArenaAlloc, ArenaFree, &req->arena};

	if (Malformed(&xmtp__mls__api__v1__subscribe_request__descriptor, bytes, len, err, err_len))
		return INVALID;
	if ((r = xmtp__mls__api__v1__subscribe_request__unpack(&arena, len, bytes)) == NULL)
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
	ProtobufCAllocator arena = {ArenaAlloc, ArenaFree, &req->arena};

	if (Malformed(&xmtp__xmtpv4__message_api__subscribe_request__descriptor, bytes, len, err,
				  err_len))
		return INVALID;
	if ((r = xmtp__xmtpv4__message_api__subscribe_request__unpack(&arena, len, bytes)) == NULL)
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

static uint64_t
TopicHash(const unsigned char *t, size_t len)
{
	uint64_t	h = UINT64_C(1469598103934665603);	/* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ t[i]) * UINT64_C(1099511628211);
	return h;
}

/*
 * Coalesces duplicate adds in place: first position kept, lowest cursor.
 * An open-addressing table of the first adds finds them in one pass: a storm
 * of reconnecting streams passes every topic of every Mutate through here,
 * and a Mutate of 100,000 adds is parsed on a loop that serves others.
 */
static bool
Coalesce(Xip83Request *req)
{
	size_t		n_slots = 16;
	size_t	   *slots;			/* where a first add is kept, + 1; 0: empty */
	size_t		n = 0;

	if (req->n_adds < 2)
		return true;
	while (n_slots < 2 * req->n_adds)
		n_slots *= 2;
	if ((slots = calloc(n_slots, sizeof(*slots))) == NULL)
		return false;
	for (size_t i = 0; i < req->n_adds; i++)
	{
		Xip83Add   *a = &req->adds[i];
		size_t		h = (size_t) TopicHash(a->topic, a->len) & (n_slots - 1);

		for (;; h = (h + 1) & (n_slots - 1))
		{
			Xip83Add   *first;

			if (slots[h] == 0)
			{
				/* kept at n: every add before it there was looked at already */
				req->adds[n++] = *a;
				slots[h] = n;
				break;
			}
			first = &req->adds[slots[h] - 1];
			if (first->len == a->len && memcmp(first->topic, a->topic, a->len) == 0)
			{
				LowestCursor(first, a);
				break;
			}
		}
	}
	free(slots);
	req->n_adds = n;
	return true;
}

const char *
xip83_request_parse(Xip83BindingKind binding, const unsigned char *bytes, size_t len,
					Xip83Request *req, char *err, size_t err_len)
{
	const char *code;

	size_t		n_adds,
				n_removes;

	memset(req, 0, sizeof(*req));
	req->binding = binding;
	if (WireCounts(bytes, len, &n_adds, &n_removes))
	{
		if (n_removes > XIP83_MAX_REMOVES)
		{
			snprintf(err, err_len, "%zu removes in one Mutate (at most %d)", n_removes,
					 XIP83_MAX_REMOVES);
			return "RESOURCE_EXHAUSTED";
		}
		if (n_adds > XIP83_MAX_ADDS)
		{
			snprintf(err, err_len, "%zu adds in one Mutate (at most %d)", n_adds,
					 XIP83_MAX_ADDS);
			return "RESOURCE_EXHAUSTED";
		}
	}
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
	ArenaDestroy(req->arena);
	free(req->adds);
	free(req->entries);
	free(req->removes);
	free(req->remove_lens);
	memset(req, 0, sizeof(*req));
}
