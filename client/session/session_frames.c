/*
 * session_frames.c: SubscribeResponse frames (see session_frames.h).
 * Control frames are packed by protobuf-c; a Messages frame is assembled
 * around already-packed messages, so a batch never holds row pointers that a
 * libpq result owns.
 */
#include "session_frames.h"

#include <stdlib.h>
#include <string.h>

#include "session_wire.h"
#include "xip83/mls_api.pb-c.h"

/* Room for the two wrapping headers and the mutate_id field. */
#define FRAME_OVERHEAD 32

static bool
Send(Xip83Out *out, const unsigned char *frame, size_t len)
{
	if (out->failed)
		return false;
	if (out->write ? !out->write(out->write_arg, frame, len)
		: !xip83_wire_write(out->fd, frame, len))
	{
		out->failed = true;
		return false;
	}
	out->last_send_ms = xip83_now_ms();
	out->frames++;
	return true;
}

bool
xip83_out_sent(Xip83Out *out, bool ok, int64_t now_ms)
{
	if (out->failed)
		return false;
	if (!ok)
	{
		out->failed = true;
		return false;
	}
	out->last_send_ms = now_ms;
	out->frames++;
	return true;
}

static bool
SendResponse(Xip83Out *out, Xmtp__Mls__Api__V1__SubscribeResponse__V1 *v1)
{
	Xmtp__Mls__Api__V1__SubscribeResponse resp = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__INIT;
	size_t		len;
	unsigned char *buf;
	bool		ok;

	resp.version_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__VERSION_V1;
	resp.v1 = v1;
	len = xmtp__mls__api__v1__subscribe_response__get_packed_size(&resp);
	if ((buf = malloc(len ? len : 1)) == NULL)
		return false;
	xmtp__mls__api__v1__subscribe_response__pack(&resp, buf);
	ok = Send(out, buf, len);
	free(buf);
	return ok;
}

bool
xip83_send_started(Xip83Out *out, uint32_t keepalive_ms)
{
	Xmtp__Mls__Api__V1__SubscribeResponse__V1 v1 = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__INIT;
	Xmtp__Mls__Api__V1__SubscribeResponse__V1__Started st =
		XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__STARTED__INIT;

	st.keepalive_interval_ms = keepalive_ms;
	v1.response_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_STARTED;
	v1.started = &st;
	return SendResponse(out, &v1);
}

/* One TopicsLive of n topics. */
static bool
SendTopicsLive(Xip83Out *out, ProtobufCBinaryData *bin, size_t n)
{
	Xmtp__Mls__Api__V1__SubscribeResponse__V1 v1 = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__INIT;
	Xmtp__Mls__Api__V1__SubscribeResponse__V1__TopicsLive tl =
		XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__TOPICS_LIVE__INIT;

	tl.n_topics = n;
	tl.topics = bin;
	v1.response_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_TOPICS_LIVE;
	v1.topics_live = &tl;
	return SendResponse(out, &v1);
}

/*
 * As many TopicsLive as the frame limit takes: the topics of a large Mutate
 * (100,000 of them are 3.4 MiB) would make a message clients refuse.
 */
bool
xip83_send_topics_live(Xip83Out *out, const unsigned char *const *topics, const size_t *lens,
					   size_t n)
{
	ProtobufCBinaryData *bin = calloc(n ? n : 1, sizeof(*bin));
	size_t		first = 0;
	size_t		size = 0;
	bool		ok = true;

	if (bin == NULL)
		return false;
	for (size_t i = 0; ok && i < n; i++)
	{
		size_t		need = 1 + 10 + lens[i];

		if (i > first && size + need + FRAME_OVERHEAD > XIP83_MAX_FRAME)
		{
			ok = SendTopicsLive(out, bin + first, i - first);
			first = i;
			size = 0;
		}
		bin[i].data = (uint8_t *) topics[i];
		bin[i].len = lens[i];
		size += need;
	}
	ok = ok && SendTopicsLive(out, bin + first, n - first);
	free(bin);
	return ok;
}

bool
xip83_send_catchup_complete(Xip83Out *out, uint64_t mutate_id)
{
	Xmtp__Mls__Api__V1__SubscribeResponse__V1 v1 = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__INIT;
	Xmtp__Mls__Api__V1__SubscribeResponse__V1__CatchupComplete cc =
		XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__CATCHUP_COMPLETE__INIT;

	cc.mutate_id = mutate_id;
	v1.response_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_CATCHUP_COMPLETE;
	v1.catchup_complete = &cc;
	return SendResponse(out, &v1);
}

/* Ping and Pong carry the same nonce message: only the arm differs. */
static bool
SendNonce(Xip83Out *out, bool pong, uint64_t nonce)
{
	Xmtp__Mls__Api__V1__SubscribeResponse__V1 v1 = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__INIT;
	Xmtp__Mls__Api__V1__Ping ping = XMTP__MLS__API__V1__PING__INIT;
	Xmtp__Mls__Api__V1__Pong pong_msg = XMTP__MLS__API__V1__PONG__INIT;

	ping.nonce = pong_msg.nonce = nonce;
	if (pong)
	{
		v1.response_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_PONG;
		v1.pong = &pong_msg;
	}
	else
	{
		v1.response_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_PING;
		v1.ping = &ping;
	}
	return SendResponse(out, &v1);
}

bool
xip83_send_ping(Xip83Out *out, uint64_t nonce)
{
	return SendNonce(out, false, nonce);
}

bool
xip83_send_pong(Xip83Out *out, uint64_t nonce)
{
	return SendNonce(out, true, nonce);
}

/* Rows are packed straight into the frame being built: sized first, then packed. */
size_t
xip83_v3_pack(const Xip83V3Row *r, unsigned char *out)
{
	if (r->kind == XIP83_V3_GROUP)
	{
		Xmtp__Mls__Api__V1__GroupMessage m = XMTP__MLS__API__V1__GROUP_MESSAGE__INIT;
		Xmtp__Mls__Api__V1__GroupMessage__V1 v = XMTP__MLS__API__V1__GROUP_MESSAGE__V1__INIT;

		v.id = (uint64_t) r->id;
		v.created_ns = r->created_ns;
		v.group_id = (ProtobufCBinaryData) {r->key_len, (uint8_t *) r->key};
		v.data = (ProtobufCBinaryData) {r->data_len, (uint8_t *) r->data};
		v.sender_hmac = (ProtobufCBinaryData) {r->aux_len, (uint8_t *) r->aux};
		v.should_push = r->should_push;
		v.is_commit = r->is_commit;
		m.version_case = XMTP__MLS__API__V1__GROUP_MESSAGE__VERSION_V1;
		m.v1 = &v;
		return out ? xmtp__mls__api__v1__group_message__pack(&m, out)
			: xmtp__mls__api__v1__group_message__get_packed_size(&m);
	}
	else
	{
		Xmtp__Mls__Api__V1__WelcomeMessage m = XMTP__MLS__API__V1__WELCOME_MESSAGE__INIT;
		Xmtp__Mls__Api__V1__WelcomeMessage__V1 v = XMTP__MLS__API__V1__WELCOME_MESSAGE__V1__INIT;
		Xmtp__Mls__Api__V1__WelcomeMessage__WelcomePointer p =
			XMTP__MLS__API__V1__WELCOME_MESSAGE__WELCOME_POINTER__INIT;

		/* the database numbers wrapper algorithms from 0, the wire from 1 */
		if (r->message_type == 1)
		{
			p.id = (uint64_t) r->id;
			p.created_ns = r->created_ns;
			p.installation_key = (ProtobufCBinaryData) {r->key_len, (uint8_t *) r->key};
			p.welcome_pointer = (ProtobufCBinaryData) {r->data_len, (uint8_t *) r->data};
			p.hpke_public_key = (ProtobufCBinaryData) {r->aux_len, (uint8_t *) r->aux};
			p.wrapper_algorithm = r->wrapper_algorithm + 1;
			m.version_case = XMTP__MLS__API__V1__WELCOME_MESSAGE__VERSION_WELCOME_POINTER;
			m.welcome_pointer = &p;
		}
		else
		{
			v.id = (uint64_t) r->id;
			v.created_ns = r->created_ns;
			v.installation_key = (ProtobufCBinaryData) {r->key_len, (uint8_t *) r->key};
			v.data = (ProtobufCBinaryData) {r->data_len, (uint8_t *) r->data};
			v.hpke_public_key = (ProtobufCBinaryData) {r->aux_len, (uint8_t *) r->aux};
			v.wrapper_algorithm = r->wrapper_algorithm + 1;
			v.welcome_metadata = (ProtobufCBinaryData) {r->metadata_len, (uint8_t *) r->metadata};
			m.version_case = XMTP__MLS__API__V1__WELCOME_MESSAGE__VERSION_V1;
			m.v1 = &v;
		}
		return out ? xmtp__mls__api__v1__welcome_message__pack(&m, out)
			: xmtp__mls__api__v1__welcome_message__get_packed_size(&m);
	}
}

bool
xip83_batch_add(Xip83Out *out, Xip83Batch *b, const Xip83Msg *m)
{
	/* d14n envelopes go as stored: a message field and a bytes field share the wire format */
	size_t		len = m->packed != NULL ? m->packed_len
		: m->v3 != NULL ? xip83_v3_pack(m->v3, NULL) : m->envelope_len;
	size_t		need = 1 + 10 + len;

	if (b->count > 0 && b->len + need + FRAME_OVERHEAD > XIP83_MAX_FRAME
		&& !xip83_batch_flush(out, b))
		return false;
	if (b->cap - b->len < need)
	{
		/* small at first: a live batch per stream, of 100,000 streams, mostly holds a row or two */
		size_t		cap = b->cap ? b->cap : 512;
		unsigned char *nb;

		while (cap - b->len < need)
			cap *= 2;
		if ((nb = realloc(b->buf, cap)) == NULL)
			return false;
		b->buf = nb;
		b->cap = cap;
	}
	/* Messages.group_messages = 1, welcome_messages = 2; Envelopes.envelopes = 1 */
	b->buf[b->len++] = m->v3 != NULL && m->v3->kind == XIP83_V3_WELCOME ? 0x12 : 0x0a;
	b->len += xip83_varint_put(b->buf + b->len, len);
	if (m->packed != NULL)
		memcpy(b->buf + b->len, m->packed, len);
	else if (m->v3 != NULL)
		xip83_v3_pack(m->v3, b->buf + b->len);
	else if (len > 0)
		memcpy(b->buf + b->len, m->envelope, len);
	b->len += len;
	b->count++;
	return true;
}

bool
xip83_batch_flush(Xip83Out *out, Xip83Batch *b)
{
	unsigned char *frame;
	unsigned char local[1024];	/* a live frame of a row or two: no allocation */
	size_t		body = b->len;
	size_t		n = 0;
	unsigned char tail[11];
	size_t		tail_len = 0;
	bool		ok;

	if (b->count == 0)
		return true;
	if (b->mutate_id != 0)
	{
		/* varint Messages.mutate_id = 3, Envelopes.mutate_id = 2 */
		tail[0] = out->d14n ? 0x10 : 0x18;
		tail_len = 1 + xip83_varint_put(tail + 1, b->mutate_id);
	}
	body += tail_len;
	frame = body + FRAME_OVERHEAD <= sizeof(local) ? local : malloc(body + FRAME_OVERHEAD);
	if (frame == NULL)
		return false;
	/* SubscribeResponse.v1 = 1 { V1.messages (d14n: envelopes) = 1 { ... } } */
	{
		unsigned char inner[11];
		size_t		inner_len;

		inner[0] = 0x0a;
		inner_len = 1 + xip83_varint_put(inner + 1, body);
		frame[n++] = 0x0a;
		n += xip83_varint_put(frame + n, inner_len + body);
		memcpy(frame + n, inner, inner_len);
		n += inner_len;
	}
	memcpy(frame + n, b->buf, b->len);
	n += b->len;
	memcpy(frame + n, tail, tail_len);
	n += tail_len;
	ok = Send(out, frame, n);
	if (frame != local)
		free(frame);
	b->len = 0;
	b->count = 0;
	return ok;
}

void
xip83_batch_free(Xip83Batch *b)
{
	free(b->buf);
	memset(b, 0, sizeof(*b));
}
