/*
 * t_frames: wave and live frames decoded with the protobuf-c code generated
 * from our .proto files, compared field by field with the stored rows read
 * by an independent SQL definition of the wave.
 *
 * Random data on node-layout tables (NULL nullable columns, times down to the
 * microsecond, a few messages far larger than small frame limits, welcomes of
 * both arms and every wrapper algorithm, d14n meta + blob tables with meta
 * rows lacking a blob row); random waves paged with random page and frame
 * limits, through the page functions, the frame stream cursors and wave
 * handles. Frames are checked for their size limit, their tag, and against
 * protoc --decode (an independent decoder) for a sample. A mutation fuzzer
 * feeds broken frames to every SQL decoder: each must parse or fail with
 * 22P03, agreeing with protobuf-c on the client side.
 */
#define _GNU_SOURCE
#include "testlib.h"
#include "wave_d14n_fixture.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xip83/d14n_envelopes.pb-c.h"
#include "xip83/d14n_message_api.pb-c.h"
#include "xip83/mls_api.pb-c.h"

#define GROUP_TOPICS	24
#define WELCOME_TOPICS	12
#define ENV_TOPICS		10
#define ORIGINATORS		5
#define WAVES			150

static PGconn *conn;
static uint64_t rng = 0x8383838383ULL;

/* xorshift64*: reproducible across runs. */
static uint64_t
rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ULL;
}

static int
rnd_int(int n)
{
	return (int) (rnd() % (uint64_t) n);
}

static void
buf_hex(TlBuf *b, const uint8_t *data, size_t len)
{
	for (size_t i = 0; i < len; i++)
		tl_buf_add(b, "%02x", data[i]);
}

/* A topic of kind k, number i: kind byte then the number. */
static void
topic_bytes(int kind, int i, uint8_t *out, size_t *len)
{
	out[0] = (uint8_t) kind;
	out[1] = (uint8_t) (i * 37);
	out[2] = (uint8_t) i;
	*len = 1 + (i % 2) + 1;
}

static bool
bytes_eq(const ProtobufCBinaryData *a, const unsigned char *b, size_t blen)
{
	return a->len == blen && (blen == 0 || memcmp(a->data, b, blen) == 0);
}

/* ------------------------------------------------------------------ data */

static const char *setup_sql =
"SELECT setseed(0.4183);"
"CREATE TABLE gm (id bigint PRIMARY KEY, created_at timestamp NOT NULL, group_id bytea NOT NULL,"
"  data bytea NOT NULL, is_commit boolean, sender_hmac bytea, should_push boolean);"
"CREATE INDEX ON gm (group_id, id);"
"CREATE TABLE wm (id bigint PRIMARY KEY, created_at timestamp NOT NULL,"
"  installation_key bytea NOT NULL, data bytea NOT NULL, hpke_public_key bytea,"
"  wrapper_algorithm smallint, welcome_metadata bytea, message_type smallint);"
"CREATE INDEX ON wm (installation_key, id);"
"CREATE TABLE meta (originator_node_id int, originator_sequence_id bigint, topic bytea NOT NULL,"
"  gateway_time timestamp NOT NULL, PRIMARY KEY (originator_node_id, originator_sequence_id));"
"CREATE INDEX ON meta (topic, originator_node_id, originator_sequence_id);"
"CREATE TABLE blob (originator_node_id int, originator_sequence_id bigint,"
"  originator_envelope bytea, PRIMARY KEY (originator_node_id, originator_sequence_id));"
"CREATE FUNCTION pg_temp.rbytes(n int) RETURNS bytea LANGUAGE sql AS"
"  $$ SELECT coalesce(string_agg(set_byte('\\x00'::bytea, 0, (random() * 255)::int), ''), '\\x')"
"     FROM generate_series(1, n) $$;"
"CREATE FUNCTION pg_temp.topic(kind int, i int) RETURNS bytea LANGUAGE sql AS"
"  $$ SELECT substring(set_byte(set_byte(set_byte('\\x000000'::bytea, 0, kind), 1, (i * 37) % 256), 2, i)"
"     from 1 for 2 + i % 2) $$;"
"INSERT INTO gm SELECT g * 3 + (random() * 2)::int,"
"  timestamp '1970-01-01' + random() * interval '60 years',"
"  pg_temp.topic(0, (random() * 23)::int),"
"  pg_temp.rbytes(CASE WHEN random() < 0.003 THEN 3000 ELSE (random() * 200)::int END),"
"  CASE WHEN random() < 0.3 THEN NULL ELSE random() < 0.5 END,"
"  CASE WHEN random() < 0.3 THEN NULL ELSE pg_temp.rbytes((random() * 3)::int * 16) END,"
"  CASE WHEN random() < 0.3 THEN NULL ELSE random() < 0.5 END"
"  FROM generate_series(1, 3000) g;"
"INSERT INTO wm SELECT g * 2,"
"  timestamp '2020-01-01' + random() * interval '10 years',"
"  pg_temp.topic(1, (random() * 11)::int),"
"  pg_temp.rbytes(CASE WHEN random() < 0.005 THEN 2500 ELSE (random() * 150)::int END),"
"  CASE WHEN random() < 0.3 THEN NULL ELSE pg_temp.rbytes(32) END,"
"  CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 2)::int END,"
"  CASE WHEN random() < 0.4 THEN NULL ELSE pg_temp.rbytes((random() * 40)::int) END,"
"  (random() < 0.4)::int"
"  FROM generate_series(1, 1500) g;"
"ANALYZE gm; ANALYZE wm;";

/* d14n envelopes: real OriginatorEnvelopes, packed here, stored as bytes. */
static void
load_envelopes(void)
{
	for (int node = 1; node <= ORIGINATORS; node++)
	{
		int			n = 150 + rnd_int(250);

		for (int seq = 1; seq <= n; seq++)
		{
			Xmtp__Xmtpv4__Envelopes__AuthenticatedData aad = XMTP__XMTPV4__ENVELOPES__AUTHENTICATED_DATA__INIT;
			Xmtp__Xmtpv4__Envelopes__ClientEnvelope ce = XMTP__XMTPV4__ENVELOPES__CLIENT_ENVELOPE__INIT;
			Xmtp__Xmtpv4__Envelopes__PayerEnvelope pe = XMTP__XMTPV4__ENVELOPES__PAYER_ENVELOPE__INIT;
			Xmtp__Xmtpv4__Envelopes__UnsignedOriginatorEnvelope uoe = XMTP__XMTPV4__ENVELOPES__UNSIGNED_ORIGINATOR_ENVELOPE__INIT;
			Xmtp__Xmtpv4__Envelopes__OriginatorEnvelope oe = XMTP__XMTPV4__ENVELOPES__ORIGINATOR_ENVELOPE__INIT;
			Xmtp__Xmtpv4__Envelopes__BlockchainProof proof = XMTP__XMTPV4__ENVELOPES__BLOCKCHAIN_PROOF__INIT;
			uint8_t		topic[4],
						pad[2000],
						cebuf[4096],
						pebuf[4096],
						uoebuf[4096],
						oebuf[8192];
			size_t		tlen;
			int			t = rnd_int(ENV_TOPICS);
			char		nodes[16],
						seqs[24],
						tops[16];
			TlBuf		env = {0};
			const char *params[5];

			topic_bytes(2, t, topic, &tlen);
			for (size_t i = 0; i < sizeof(pad); i++)
				pad[i] = (uint8_t) rnd();
			aad.target_topic.data = topic;
			aad.target_topic.len = tlen;
			ce.aad = &aad;
			pe.unsigned_client_envelope.data = cebuf;
			pe.unsigned_client_envelope.len = xmtp__xmtpv4__envelopes__client_envelope__pack(&ce, cebuf);
			pe.target_originator = node;
			uoe.originator_node_id = node;
			uoe.originator_sequence_id = seq;
			uoe.originator_ns = (int64_t) rnd() >> 2;
			uoe.payer_envelope_bytes.data = pebuf;
			uoe.payer_envelope_bytes.len = xmtp__xmtpv4__envelopes__payer_envelope__pack(&pe, pebuf);
			uoe.expiry_unixtime = rnd() >> 34;
			oe.unsigned_originator_envelope.data = uoebuf;
			oe.unsigned_originator_envelope.len =
				xmtp__xmtpv4__envelopes__unsigned_originator_envelope__pack(&uoe, uoebuf);
			proof.transaction_hash.data = pad;
			proof.transaction_hash.len = rnd_int(100) == 0 ? 1800 : (size_t) rnd_int(64);
			oe.proof_case = XMTP__XMTPV4__ENVELOPES__ORIGINATOR_ENVELOPE__PROOF_BLOCKCHAIN_PROOF;
			oe.blockchain_proof = &proof;
			tl_buf_add(&env, "\\x");
			buf_hex(&env, oebuf, xmtp__xmtpv4__envelopes__originator_envelope__pack(&oe, oebuf));

			snprintf(nodes, sizeof(nodes), "%d", node);
			snprintf(seqs, sizeof(seqs), "%d", seq);
			snprintf(tops, sizeof(tops), "%d", t);
			params[0] = nodes;
			params[1] = seqs;
			params[2] = tops;
			params[3] = env.s;
			params[4] = rnd_int(10) == 0 ? "f" : "t";	/* a tenth lack their blob */
			PQclear(tl_exec(conn,
							"WITH m AS (INSERT INTO meta VALUES ($1::int, $2::bigint, pg_temp.topic(2, $3::int), "
							"  timestamp '2024-01-01' + $2::bigint * interval '1 ms')) "
							"INSERT INTO blob SELECT $1, $2, $4::bytea WHERE $5::bool",
							5, params));
			free(env.s);
		}
	}
	PQclear(tl_exec(conn, "ANALYZE meta", 0, NULL));
	PQclear(tl_exec(conn, "ANALYZE blob", 0, NULL));
}

/* --------------------------------------------------------------- checks */

/* The reference rows of a v3 wave: an independent SQL definition. */
static PGresult *
v3_reference(bool welcome, const char *topics, const char *floors, const char *cursor,
			 const char *ceiling)
{
	const char *params[4] = {topics, floors, cursor, ceiling};
	char		sql[2048];

	snprintf(sql, sizeof(sql),
			 "WITH w AS (SELECT t, min(f) AS f FROM unnest($1::bytea[], $2::bigint[]) u(t, f)"
			 "           GROUP BY t) "
			 "SELECT m.id, (extract(epoch FROM m.created_at) * 1000000000)::numeric(30, 0), %s "
			 "  FROM %s m JOIN w ON m.%s = w.t AND m.id > w.f "
			 " WHERE m.id > $3 AND m.id <= $4 ORDER BY m.id",
			 welcome ? "installation_key, data, hpke_public_key IS NULL, coalesce(hpke_public_key, '\\x'), "
			 "coalesce(wrapper_algorithm + 1, 0), welcome_metadata IS NULL, "
			 "coalesce(welcome_metadata, '\\x'), message_type"
			 : "group_id, data, coalesce(is_commit, false), coalesce(sender_hmac, '\\x'), "
			 "coalesce(should_push, false)",
			 welcome ? "wm" : "gm", welcome ? "installation_key" : "group_id");
	return tl_exec(conn, sql, 4, params);
}

/* The fields both welcome arms carry, as one view. */
typedef struct WelcomeView
{
	uint64_t	id;
	uint64_t	created_ns;
	const ProtobufCBinaryData *installation_key;
	const ProtobufCBinaryData *data;	/* V1 data, or the pointer */
	const ProtobufCBinaryData *hpke_public_key;
	int			wrapper_algorithm;
	const ProtobufCBinaryData *welcome_metadata;	/* V1 only */
} WelcomeView;

/* Compares one reference bytea column with a decoded field. */
static void
check_bytes(PGresult *ref, int r, int col, const ProtobufCBinaryData *field, const char *what,
			uint64_t id)
{
	size_t		len;
	unsigned char *b = tl_bytea(ref, r, col, &len);

	TL_CHECK(bytes_eq(field, b, len), "%s of %" PRIu64, what, id);
	PQfreemem(b);
}

/* Compares one decoded group message with reference row r. */
static void
check_group(const Xmtp__Mls__Api__V1__GroupMessage *m, PGresult *ref, int r)
{
	const Xmtp__Mls__Api__V1__GroupMessage__V1 *v = m->v1;
	uint64_t	id = (uint64_t) tl_int(ref, r, 0);

	TL_CHECK(m->version_case == XMTP__MLS__API__V1__GROUP_MESSAGE__VERSION_V1, "group arm");
	if (m->version_case != XMTP__MLS__API__V1__GROUP_MESSAGE__VERSION_V1)
		return;
	TL_CHECK(v->id == id, "id %" PRIu64 " vs %" PRIu64, v->id, id);
	TL_CHECK(v->created_ns == strtoull(PQgetvalue(ref, r, 1), NULL, 10),
			 "created_ns %" PRIu64 " vs %s", v->created_ns, PQgetvalue(ref, r, 1));
	check_bytes(ref, r, 2, &v->group_id, "group_id", id);
	check_bytes(ref, r, 3, &v->data, "data", id);
	TL_CHECK(v->is_commit == tl_bool(ref, r, 4), "is_commit of %" PRIu64, id);
	check_bytes(ref, r, 5, &v->sender_hmac, "sender_hmac", id);
	TL_CHECK(v->should_push == tl_bool(ref, r, 6), "should_push of %" PRIu64, id);
}

/* Compares one decoded welcome with reference row r: arm, mapping, NULLs. */
static void
check_welcome(const Xmtp__Mls__Api__V1__WelcomeMessage *m, PGresult *ref, int r)
{
	static const ProtobufCBinaryData none = {0, NULL};
	int			type = (int) tl_int(ref, r, 9);
	uint64_t	id = (uint64_t) tl_int(ref, r, 0);
	WelcomeView v;

	if (m->version_case == XMTP__MLS__API__V1__WELCOME_MESSAGE__VERSION_V1)
		v = (WelcomeView) {m->v1->id, m->v1->created_ns, &m->v1->installation_key, &m->v1->data,
			&m->v1->hpke_public_key, (int) m->v1->wrapper_algorithm, &m->v1->welcome_metadata};
	else if (m->version_case == XMTP__MLS__API__V1__WELCOME_MESSAGE__VERSION_WELCOME_POINTER)
		v = (WelcomeView) {m->welcome_pointer->id, m->welcome_pointer->created_ns,
			&m->welcome_pointer->installation_key, &m->welcome_pointer->welcome_pointer,
			&m->welcome_pointer->hpke_public_key, (int) m->welcome_pointer->wrapper_algorithm, &none};
	else
	{
		TL_CHECK(false, "welcome %" PRIu64 " has no arm", id);
		return;
	}
	TL_CHECK((int) m->version_case == (type == 0 ? XMTP__MLS__API__V1__WELCOME_MESSAGE__VERSION_V1
									   : XMTP__MLS__API__V1__WELCOME_MESSAGE__VERSION_WELCOME_POINTER),
			 "welcome %" PRIu64 " of message_type %d in arm %d", id, type, (int) m->version_case);
	TL_CHECK(v.id == id, "welcome id %" PRIu64 " vs %" PRIu64, v.id, id);
	TL_CHECK(v.created_ns == strtoull(PQgetvalue(ref, r, 1), NULL, 10), "created_ns of %" PRIu64, id);
	check_bytes(ref, r, 2, v.installation_key, "installation_key", id);
	check_bytes(ref, r, 3, v.data, type == 0 ? "data" : "welcome_pointer", id);
	check_bytes(ref, r, 5, v.hpke_public_key, "hpke_public_key", id);
	TL_CHECK(v.wrapper_algorithm == (int) tl_int(ref, r, 6), "wrapper_algorithm of %" PRIu64 ": %d vs %s",
			 id, v.wrapper_algorithm, PQgetvalue(ref, r, 6));
	if (type == 0)
		check_bytes(ref, r, 8, v.welcome_metadata, "welcome_metadata", id);
}

/*
 * Decodes one v3 frame and checks it against the reference from row *next:
 * tag, size limit, message count; advances *next.
 */
static void
check_v3_frame(bool welcome, const unsigned char *frame, size_t len, int messages,
			   int64_t last_id, uint64_t mutate_id, int max_bytes, PGresult *ref, int *next)
{
	Xmtp__Mls__Api__V1__SubscribeResponse *resp =
		xmtp__mls__api__v1__subscribe_response__unpack(NULL, len, frame);
	Xmtp__Mls__Api__V1__SubscribeResponse__V1__Messages *msgs;
	size_t		n;

	TL_CHECK(resp != NULL, "frame of %zu bytes decodes", len);
	if (resp == NULL)
		return;
	TL_CHECK(len <= (size_t) max_bytes || messages == 1,
			 "frame of %zu bytes with %d messages over limit %d", len, messages, max_bytes);
	if (resp->version_case != XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__VERSION_V1 ||
		resp->v1->response_case != XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_MESSAGES)
	{
		TL_CHECK(false, "frame is v1.messages");
		xmtp__mls__api__v1__subscribe_response__free_unpacked(resp, NULL);
		return;
	}
	msgs = resp->v1->messages;
	TL_CHECK(msgs->mutate_id == mutate_id, "mutate_id %" PRIu64 " vs %" PRIu64,
			 msgs->mutate_id, mutate_id);
	n = welcome ? msgs->n_welcome_messages : msgs->n_group_messages;
	TL_CHECK((welcome ? msgs->n_group_messages : msgs->n_welcome_messages) == 0, "one kind per frame");
	TL_CHECK(n == (size_t) messages && n > 0, "frame says %d messages, holds %zu", messages, n);
	for (size_t i = 0; i < n; i++)
	{
		if (*next >= PQntuples(ref))
		{
			TL_CHECK(false, "more messages than the reference (%d)", PQntuples(ref));
			break;
		}
		if (welcome)
			check_welcome(msgs->welcome_messages[i], ref, *next);
		else
			check_group(msgs->group_messages[i], ref, *next);
		(*next)++;
	}
	TL_CHECK(*next > 0 && tl_int(ref, *next - 1, 0) == last_id, "last_id %" PRId64, last_id);
	xmtp__mls__api__v1__subscribe_response__free_unpacked(resp, NULL);
}

/* Builds a random v3 wave's array arguments. */
static void
random_v3_wave(bool welcome, TlBuf *topics, TlBuf *floors, int64_t *ceiling)
{
	int			n = 1 + rnd_int(welcome ? WELCOME_TOPICS : GROUP_TOPICS);
	int64_t		max_id = welcome ? 3000 : 9000;

	tl_buf_add(topics, "{");
	tl_buf_add(floors, "{");
	for (int i = 0; i < n; i++)
	{
		uint8_t		t[4];
		size_t		len;

		topic_bytes(welcome ? 1 : 0, rnd_int((welcome ? WELCOME_TOPICS : GROUP_TOPICS) + 2), t, &len);
		tl_buf_add(topics, "%s\"\\\\x", i ? "," : "");
		buf_hex(topics, t, len);
		tl_buf_add(topics, "\"");
		tl_buf_add(floors, "%s%" PRId64, i ? "," : "", rnd_int(4) == 0 ? rnd() % max_id : 0);
	}
	tl_buf_add(topics, "}");
	tl_buf_add(floors, "}");
	*ceiling = rnd_int(5) == 0 ? (int64_t) (rnd() % max_id) : max_id;
}

static const int frame_limits[] = {20, 64, 300, 1000, 4000, 2097152};

/* Pages random v3 waves as frames and checks them against the reference. */
static void
v3_waves(bool welcome)
{
	for (int w = 0; w < WAVES; w++)
	{
		TlBuf		topics = {0},
					floors = {0};
		int64_t		ceiling;
		char		ceil_s[24],
					cursor_s[24] = "0",
					limit_s[16],
					mutate_s[24],
					max_s[16];
		int			page_limit = 1 + rnd_int(rnd_int(3) == 0 ? 20 : 400);
		int			max_bytes = frame_limits[rnd_int(6)];
		uint64_t	mutate_id = 1 + (rnd() >> 2);
		PGresult   *ref;
		int			next = 0;
		int			mode = rnd_int(3);	/* 0 pages, 1 stream cursor, 2 handle */
		char		sql[512];

		random_v3_wave(welcome, &topics, &floors, &ceiling);
		snprintf(ceil_s, sizeof(ceil_s), "%" PRId64, ceiling);
		snprintf(limit_s, sizeof(limit_s), "%d", page_limit);
		snprintf(mutate_s, sizeof(mutate_s), "%" PRIu64, mutate_id);
		snprintf(max_s, sizeof(max_s), "%d", max_bytes);
		ref = v3_reference(welcome, topics.s, floors.s, "0", ceil_s);

		PQclear(tl_exec(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ", 0, NULL));
		if (mode == 0)
		{
			for (;;)
			{
				const char *p[7] = {topics.s, floors.s, cursor_s, ceil_s, limit_s, mutate_s, max_s};
				PGresult   *res;
				int			got = 0;

				snprintf(sql, sizeof(sql),
						 "SELECT frame, messages, last_id FROM xip83.%s_wave_scan($1, $2, $3, $4, $5, "
						 "$6, $7, '%s')", welcome ? "welcome" : "group", welcome ? "wm" : "gm");
				res = tl_exec(conn, sql, 7, p);
				for (int f = 0; f < PQntuples(res); f++)
				{
					size_t		len;
					unsigned char *frame = tl_bytea(res, f, 0, &len);

					check_v3_frame(welcome, frame, len, (int) tl_int(res, f, 1), tl_int(res, f, 2),
								   mutate_id, max_bytes, ref, &next);
					got += (int) tl_int(res, f, 1);
					PQfreemem(frame);
				}
				if (PQntuples(res) > 0)
					snprintf(cursor_s, sizeof(cursor_s), "%s", PQgetvalue(res, PQntuples(res) - 1, 2));
				PQclear(res);
				TL_CHECK(got <= page_limit, "page of %d messages over limit %d", got, page_limit);
				if (got < page_limit)
					break;
			}
		}
		else
		{
			const char *p[6] = {topics.s, floors.s, ceil_s, mutate_s, max_s, limit_s};
			char		fetch[256];

			if (mode == 1)
			{
				snprintf(sql, sizeof(sql),
						 "DECLARE w CURSOR FOR SELECT * FROM xip83.%s_wave_stream($1, $2, 0, $3, "
						 "$4, $5, '%s')", welcome ? "welcome" : "group", welcome ? "wm" : "gm");
				PQclear(tl_exec(conn, sql, 5, p));
				snprintf(fetch, sizeof(fetch), "FETCH 3 FROM w");
			}
			else
			{
				PGresult   *h;

				snprintf(sql, sizeof(sql), "SELECT xip83.wave_open('%s', $1, $2, 0, $3, '%s')",
						 welcome ? "welcome" : "group", welcome ? "wm" : "gm");
				h = tl_exec(conn, sql, 3, p);
				snprintf(fetch, sizeof(fetch),
						 "SELECT * FROM xip83.%s_wave_scan(%s, %d, %s, %d)",
						 welcome ? "welcome" : "group", PQgetvalue(h, 0, 0), page_limit, mutate_s,
						 max_bytes);
				PQclear(h);
			}
			for (;;)
			{
				PGresult   *res = tl_exec(conn, fetch, 0, NULL);
				int			nframes = PQntuples(res);

				for (int f = 0; f < nframes; f++)
				{
					size_t		len;
					unsigned char *frame = tl_bytea(res, f, 0, &len);

					check_v3_frame(welcome, frame, len, (int) tl_int(res, f, 1), tl_int(res, f, 2),
								   mutate_id, max_bytes, ref, &next);
					PQfreemem(frame);
				}
				PQclear(res);
				if (nframes == 0)
					break;
			}
		}
		PQclear(tl_exec(conn, "COMMIT", 0, NULL));
		TL_CHECK(next == PQntuples(ref), "%s wave (mode %d) delivered %d of %d messages",
				 welcome ? "welcome" : "group", mode, next, PQntuples(ref));
		PQclear(ref);
		free(topics.s);
		free(floors.s);
	}
}

/* Pages random d14n waves over meta + blob and checks every envelope. */
static void
d14n_waves(void)
{
	for (int w = 0; w < WAVES; w++)
	{
		TlBuf		topics = {0},
					nodes = {0},
					floors = {0},
					cnodes = {0},
					ceils = {0};
		int			n = 1 + rnd_int(ENV_TOPICS * 2);
		int			page_limit = 1 + rnd_int(300);
		int			max_bytes = frame_limits[rnd_int(6)];
		uint64_t	mutate_id = 1 + (rnd() >> 3);
		char		limit_s[16],
					mutate_s[24],
					max_s[16],
					snode[16] = "0",
					sseq[24] = "0";
		PGresult   *ref;
		int			next = 0;

		tl_buf_add(&topics, "{");
		tl_buf_add(&nodes, "{");
		tl_buf_add(&floors, "{");
		for (int i = 0; i < n; i++)
		{
			uint8_t		t[4];
			size_t		len;

			topic_bytes(2, rnd_int(ENV_TOPICS), t, &len);
			tl_buf_add(&topics, "%s\"\\\\x", i ? "," : "");
			buf_hex(&topics, t, len);
			tl_buf_add(&topics, "\"");
			tl_buf_add(&nodes, "%s%d", i ? "," : "", 1 + rnd_int(ORIGINATORS));
			tl_buf_add(&floors, "%s%d", i ? "," : "", rnd_int(3) == 0 ? rnd_int(300) : 0);
		}
		tl_buf_add(&topics, "}");
		tl_buf_add(&nodes, "}");
		tl_buf_add(&floors, "}");
		tl_buf_add(&cnodes, "{");
		tl_buf_add(&ceils, "{");
		for (int o = 1; o <= ORIGINATORS; o++)
		{
			tl_buf_add(&cnodes, "%s%d", o > 1 ? "," : "", o);
			tl_buf_add(&ceils, "%s%d", o > 1 ? "," : "", rnd_int(4) == 0 ? rnd_int(400) : 400);
		}
		tl_buf_add(&cnodes, "}");
		tl_buf_add(&ceils, "}");
		snprintf(limit_s, sizeof(limit_s), "%d", page_limit);
		snprintf(mutate_s, sizeof(mutate_s), "%" PRIu64, mutate_id);
		snprintf(max_s, sizeof(max_s), "%d", max_bytes);
		{
			const char *p[5] = {topics.s, nodes.s, floors.s, cnodes.s, ceils.s};

			ref = tl_exec(conn,
						  "WITH f AS (SELECT t, o, min(s) AS s FROM unnest($1::bytea[], $2::int[], "
						  "  $3::bigint[]) u(t, o, s) GROUP BY t, o), "
						  " c AS (SELECT o, min(s) AS s FROM unnest($4::int[], $5::bigint[]) u(o, s) GROUP BY o) "
						  "SELECT m.originator_node_id, m.originator_sequence_id, b.originator_envelope "
						  "  FROM meta m JOIN f ON m.topic = f.t AND m.originator_node_id = f.o "
						  "   AND m.originator_sequence_id > f.s "
						  "  JOIN c ON c.o = m.originator_node_id AND m.originator_sequence_id <= c.s "
						  "  JOIN blob b USING (originator_node_id, originator_sequence_id) "
						  " ORDER BY 1, 2", 5, p);
		}
		PQclear(tl_exec(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ", 0, NULL));
		for (;;)
		{
			const char *p[10] = {topics.s, nodes.s, floors.s, cnodes.s, ceils.s, snode, sseq,
			limit_s, mutate_s, max_s};
			PGresult   *res = tl_exec(conn,
									  "SELECT frame, messages, last_node_id, last_sequence_id "
									  "FROM xip83.envelope_wave_scan($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, "
									  "'meta', 'blob')", 10, p);
			int			got = 0;

			for (int f = 0; f < PQntuples(res); f++)
			{
				size_t		len;
				unsigned char *frame = tl_bytea(res, f, 0, &len);
				Xmtp__Xmtpv4__MessageApi__SubscribeResponse *resp =
					xmtp__xmtpv4__message_api__subscribe_response__unpack(NULL, len, frame);
				Xmtp__Xmtpv4__MessageApi__SubscribeResponse__V1__Envelopes *envs;

				got += (int) tl_int(res, f, 1);
				TL_CHECK(resp != NULL, "d14n frame decodes");
				TL_CHECK(len <= (size_t) max_bytes || tl_int(res, f, 1) == 1,
						 "d14n frame of %zu bytes over %d", len, max_bytes);
				if (resp == NULL || resp->version_case != XMTP__XMTPV4__MESSAGE_API__SUBSCRIBE_RESPONSE__VERSION_V1 ||
					resp->v1->response_case != XMTP__XMTPV4__MESSAGE_API__SUBSCRIBE_RESPONSE__V1__RESPONSE_ENVELOPES)
				{
					TL_CHECK(false, "d14n frame is v1.envelopes");
					PQfreemem(frame);
					continue;
				}
				envs = resp->v1->envelopes;
				TL_CHECK(envs->mutate_id == mutate_id, "d14n mutate_id");
				TL_CHECK(envs->n_envelopes == (size_t) tl_int(res, f, 1), "d14n count");
				for (size_t i = 0; i < envs->n_envelopes && next < PQntuples(ref); i++, next++)
				{
					size_t		slen;
					unsigned char *stored = tl_bytea(ref, next, 2, &slen);
					uint8_t    *again = malloc(slen + 16);
					size_t		alen = xmtp__xmtpv4__envelopes__originator_envelope__pack(envs->envelopes[i], again);

					TL_CHECK(alen == slen && memcmp(again, stored, slen) == 0,
							 "envelope (%s, %s) as stored", PQgetvalue(ref, next, 0),
							 PQgetvalue(ref, next, 1));
					TL_CHECK(memmem(frame, len, stored, slen) != NULL, "stored bytes embedded");
					free(again);
					PQfreemem(stored);
				}
				TL_CHECK(next > 0 && tl_int(ref, next - 1, 0) == tl_int(res, f, 2) &&
						 tl_int(ref, next - 1, 1) == tl_int(res, f, 3), "d14n last position");
				xmtp__xmtpv4__message_api__subscribe_response__free_unpacked(resp, NULL);
				PQfreemem(frame);
			}
			if (PQntuples(res) > 0)
			{
				snprintf(snode, sizeof(snode), "%s", PQgetvalue(res, PQntuples(res) - 1, 2));
				snprintf(sseq, sizeof(sseq), "%s", PQgetvalue(res, PQntuples(res) - 1, 3));
			}
			PQclear(res);
			if (got < page_limit)
				break;
		}
		PQclear(tl_exec(conn, "COMMIT", 0, NULL));
		TL_CHECK(next == PQntuples(ref), "d14n wave delivered %d of %d", next, PQntuples(ref));
		PQclear(ref);
		free(topics.s);
		free(nodes.s);
		free(floors.s);
		free(cnodes.s);
		free(ceils.s);
	}
}

/* ------------------------------------------------------- protoc --decode */

/* Runs protoc --decode=type on bytes; returns its text output (malloc'd). */
static char *
protoc_decode(const char *type, const char *file, const unsigned char *data, size_t len)
{
	char		path[] = "/tmp/xip83_frameXXXXXX";
	int			fd = mkstemp(path);
	char		cmd[512];
	FILE	   *p;
	TlBuf		out = {0};
	char		line[4096];

	if (fd < 0 || write(fd, data, len) != (ssize_t) len)
		tl_fatal("temp file for protoc");
	close(fd);
	snprintf(cmd, sizeof(cmd), "protoc --proto_path=proto --decode=%s %s < %s 2>&1", type, file, path);
	p = popen(cmd, "r");
	if (p == NULL)
		tl_fatal("popen protoc");
	tl_buf_add(&out, "%s", "");	/* allocates: the output may be empty */
	while (fgets(line, sizeof(line), p))
		tl_buf_add(&out, "%s", line);
	TL_CHECK(pclose(p) == 0, "protoc --decode=%s ran: %s", type, out.s);
	unlink(path);
	return out.s;
}

/* Golden checks of our frames by protoc, an independent decoder. */
static void
protoc_golden(void)
{
	PGresult   *res;
	char	   *text;
	size_t		len;
	unsigned char *frame;
	char		want[128];

	res = tl_exec(conn,
				  "SELECT f.frame, (SELECT min(id) FROM wm WHERE message_type = 1) AS pid, "
				  "  (SELECT wrapper_algorithm FROM wm WHERE id = (SELECT min(id) FROM wm WHERE message_type = 1)) "
				  "FROM xip83.welcome_wave_scan("
				  "  ARRAY(SELECT DISTINCT installation_key FROM wm), "
				  "  ARRAY(SELECT 0::bigint FROM (SELECT DISTINCT installation_key FROM wm) k), "
				  "  (SELECT min(id) FROM wm WHERE message_type = 1) - 1, 100000, 1, 424242, "
				  "  2097152, source => 'wm') f", 0, NULL);
	frame = tl_bytea(res, 0, 0, &len);
	text = protoc_decode("xmtp.mls.api.v1.SubscribeResponse", "xip83/mls_api.proto", frame, len);
	TL_CHECK(strstr(text, "mutate_id: 424242") != NULL, "protoc sees mutate_id: %s", text);
	TL_CHECK(strstr(text, "welcome_pointer {") != NULL, "protoc sees the pointer arm: %s", text);
	snprintf(want, sizeof(want), "id: %s\n", PQgetvalue(res, 0, 1));
	TL_CHECK(strstr(text, want) != NULL, "protoc sees %s in %s", want, text);
	if (!PQgetisnull(res, 0, 2))
	{
		static const char *const names[] = {"CURVE25519", "XWING_MLKEM_768_DRAFT_6", "SYMMETRIC_KEY"};

		snprintf(want, sizeof(want), "wrapper_algorithm: WELCOME_POINTER_WRAPPER_ALGORITHM_%s",
				 names[tl_int(res, 0, 2)]);
		TL_CHECK(strstr(text, want) != NULL, "protoc sees %s in %s", want, text);
	}
	free(text);
	PQfreemem(frame);
	PQclear(res);

	res = tl_exec(conn,
				  "SELECT f.frame, g.id, (extract(epoch FROM g.created_at) * 1000000000)::numeric(30,0) "
				  "FROM gm g, xip83.group_wave_scan(ARRAY[g.group_id], '{0}', g.id - 1, g.id, 1, 77, "
				  "  2097152, source => 'gm') f WHERE g.id = (SELECT min(id) FROM gm)", 0, NULL);
	frame = tl_bytea(res, 0, 0, &len);
	text = protoc_decode("xmtp.mls.api.v1.SubscribeResponse", "xip83/mls_api.proto", frame, len);
	snprintf(want, sizeof(want), "created_ns: %s\n", PQgetvalue(res, 0, 2));
	TL_CHECK(strstr(text, want) != NULL, "protoc sees %s in %s", want, text);
	TL_CHECK(strstr(text, "group_messages {") && strstr(text, "mutate_id: 77"), "protoc group frame: %s", text);
	free(text);
	PQfreemem(frame);
	PQclear(res);

	res = tl_exec(conn,
				  "SELECT frame FROM xip83.envelope_wave_scan(ARRAY(SELECT DISTINCT topic FROM meta), "
				  "  ARRAY(SELECT 1 FROM (SELECT DISTINCT topic FROM meta) t), "
				  "  ARRAY(SELECT 0::bigint FROM (SELECT DISTINCT topic FROM meta) t), "
				  "  '{1}', '{1000}', 0, 0, 3, 5, 2097152, source => 'meta', blob_source => 'blob')", 0, NULL);
	frame = tl_bytea(res, 0, 0, &len);
	text = protoc_decode("xmtp.xmtpv4.message_api.SubscribeResponse", "xip83/d14n_message_api.proto",
						 frame, len);
	TL_CHECK(strstr(text, "envelopes {") && strstr(text, "unsigned_originator_envelope:") &&
			 strstr(text, "blockchain_proof {") && strstr(text, "mutate_id: 5"),
			 "protoc d14n frame: %s", text);
	free(text);
	PQfreemem(frame);
	PQclear(res);

	res = tl_exec(conn,
				  "SELECT xip83.control_frame('started', 25000, 'd14n'), xip83.control_frame('catchup_complete', 31, 'd14n'), "
				  "  xip83.control_frame('topics_live', topics => ARRAY['\\x00aa'::bytea]), xip83.control_frame('pong', 12)", 0, NULL);
	{
		static const char *const expect[] = {
			"started {\n    keepalive_interval_ms: 25000", "catchup_complete {\n    mutate_id: 31",
			"topics_live {\n    topics: \"\\000\\252\"", "pong {\n    nonce: 12"
		};

		for (int c = 0; c < 4; c++)
		{
			frame = tl_bytea(res, 0, c, &len);
			text = protoc_decode(c < 2 ? "xmtp.xmtpv4.message_api.SubscribeResponse"
								 : "xmtp.mls.api.v1.SubscribeResponse",
								 c < 2 ? "xip83/d14n_message_api.proto" : "xip83/mls_api.proto",
								 frame, len);
			TL_CHECK(strstr(text, expect[c]) != NULL, "protoc control frame %d: %s", c, text);
			free(text);
			PQfreemem(frame);
		}
	}
	PQclear(res);
}

/* ------------------------------------------------------------- fuzzing */

/*
 * Broken copies of valid frames through every SQL decoder: each parses or
 * fails with 22P03, never anything else, and agrees with protobuf-c here.
 */
static void
fuzz_decoders(void)
{
	PGresult   *seeds = tl_exec(conn,
								"SELECT frame, 'v3', 0 FROM xip83.group_wave_scan("
								"  ARRAY(SELECT DISTINCT group_id FROM gm), "
								"  ARRAY(SELECT 0::bigint FROM (SELECT DISTINCT group_id FROM gm) t), 0, 400, 20, 3, 600, 'gm') "
								"UNION ALL SELECT frame, 'v3', 0 FROM xip83.welcome_wave_scan("
								"  ARRAY(SELECT DISTINCT installation_key FROM wm), "
								"  ARRAY(SELECT 0::bigint FROM (SELECT DISTINCT installation_key FROM wm) t), 0, 400, 20, 3, 600, 'wm') "
								"UNION ALL SELECT frame, 'd14n', 0 FROM xip83.envelope_wave_scan("
								"  ARRAY(SELECT DISTINCT topic FROM meta), ARRAY(SELECT 2 FROM (SELECT DISTINCT topic FROM meta) t), "
								"  ARRAY(SELECT 0::bigint FROM (SELECT DISTINCT topic FROM meta) t), '{2}', '{400}', 0, 0, 4, 9, "
								"  2097152, source => 'meta', blob_source => 'blob') "
								"UNION ALL SELECT '\\x0a1a0a180a070a02000a1080010a040a0200bb12020101180120ea07'::bytea, 'v3', 1 "
								"UNION ALL SELECT '\\x0a190a170a130a02000a120d0a0508071080010a04080910012003'::bytea, 'd14n', 1 "
								"UNION ALL (SELECT originator_envelope, 'd14n', 2 FROM blob LIMIT 5)",
								0, NULL);
	int			nseeds = PQntuples(seeds);
	int			ok = 0,
				bad = 0;

	TL_CHECK(nseeds >= 6, "fuzz seeds: %d", nseeds);
	for (int i = 0; i < 3000 && nseeds > 0; i++)
	{
		int			s = rnd_int(nseeds);
		int			what = (int) tl_int(seeds, s, 2);
		bool		d14n = strcmp(PQgetvalue(seeds, s, 1), "d14n") == 0;
		size_t		len;
		unsigned char *seed = tl_bytea(seeds, s, 0, &len);
		unsigned char *m = malloc(len + 8);
		size_t		mlen = len;
		TlBuf		hex = {0};
		const char *params[2];
		PGresult   *res;
		const char *state;
		ProtobufCMessage *local;
		const ProtobufCMessageDescriptor *desc;

		memcpy(m, seed, len);
		switch (rnd_int(4))
		{
			case 0:				/* flip bits */
				for (int k = 0; k < 1 + rnd_int(3) && mlen > 0; k++)
					m[rnd_int((int) mlen)] ^= (uint8_t) (1 << rnd_int(8));
				break;
			case 1:				/* truncate */
				mlen = mlen > 0 ? (size_t) rnd_int((int) mlen) : 0;
				break;
			case 2:				/* overwrite a byte with a tag/varint-ish value */
				if (mlen > 0)
					m[rnd_int((int) mlen)] = (uint8_t) (rnd_int(2) ? 0xff : rnd_int(0x80));
				break;
			default:			/* append garbage */
				for (int k = 0; k < 1 + rnd_int(7); k++)
					m[mlen++] = (uint8_t) rnd();
				break;
		}
		tl_buf_add(&hex, "\\x");
		buf_hex(&hex, m, mlen);
		params[0] = hex.s;
		params[1] = d14n ? "d14n" : "v3";
		if (what == 0)
		{
			desc = d14n ? &xmtp__xmtpv4__message_api__subscribe_response__descriptor
				: &xmtp__mls__api__v1__subscribe_response__descriptor;
			res = PQexecParams(conn, "SELECT xip83.decode_frame($1, $2)", 2, NULL,
							   params, NULL, NULL, 0);
		}
		else if (what == 1)
		{
			desc = d14n ? &xmtp__xmtpv4__message_api__subscribe_request__descriptor
				: &xmtp__mls__api__v1__subscribe_request__descriptor;
			res = PQexecParams(conn, "SELECT xip83.decode_frame($1, $2, 'request')", 2, NULL,
							   params, NULL, NULL, 0);
		}
		else
		{
			desc = &xmtp__xmtpv4__envelopes__originator_envelope__descriptor;
			res = PQexecParams(conn, "SELECT xip83.envelope_target_topic($1)", 1, NULL,
							   params, NULL, NULL, 0);
		}
		state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		local = protobuf_c_message_unpack(desc, NULL, mlen, m);
		if (PQresultStatus(res) == PGRES_TUPLES_OK)
		{
			ok++;
			TL_CHECK(local != NULL, "server decoded what protobuf-c refuses (decoder %d)", what);
		}
		else
		{
			bad++;
			TL_CHECK(state != NULL && strcmp(state, "22P03") == 0, "decoder %d failed with %s: %s",
					 what, state ? state : "none", PQerrorMessage(conn));
			{
				/*
				 * the server's wire check is stricter than protobuf-c on field numbers,
				 * length prefixes and wire types (protobuf-c reads a bool of any)
				 */
				const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
				bool		stricter = detail && (strstr(detail, "not a valid field number") ||
												  strstr(detail, "is malformed") ||
												  strstr(detail, "truncated or too long") ||
												  strstr(detail, "has wire type"));

				TL_CHECK(what == 2 || local == NULL || stricter,
						 "server refused what protobuf-c decodes: %s", detail ? detail : "");
			}
		}
		if (local)
			protobuf_c_message_free_unpacked(local, NULL);
		PQclear(res);
		free(hex.s);
		free(m);
		PQfreemem(seed);
	}
	TL_CHECK(ok > 100 && bad > 100, "fuzz mixes good and bad inputs: %d ok, %d refused", ok, bad);
	PQclear(seeds);
	/* the server survived and answers */
	PQclear(tl_exec(conn, "SELECT 1", 0, NULL));
}

/* ----------------------------------------------------------------- live */

/*
 * Live envelope frames: the stored envelopes of live_envelopes in its order,
 * tagged 0, with each frame's originators and highest sequence ids.
 */
static void
live_envelope_frames(void)
{
	PGresult   *ref;
	PGresult   *res;
	int			next = 0;

	PQclear(tl_exec(conn,
					"SELECT count(*) FROM xip83.insert_envelopes("
					"  ARRAY(SELECT m.originator_node_id FROM meta m JOIN blob USING (originator_node_id, originator_sequence_id) ORDER BY 1, m.originator_sequence_id), "
					"  ARRAY(SELECT m.originator_sequence_id FROM meta m JOIN blob USING (originator_node_id, originator_sequence_id) ORDER BY m.originator_node_id, 1), "
					"  ARRAY(SELECT m.topic FROM meta m JOIN blob USING (originator_node_id, originator_sequence_id) ORDER BY m.originator_node_id, m.originator_sequence_id), "
					"  ARRAY(SELECT b.originator_envelope FROM meta m JOIN blob b USING (originator_node_id, originator_sequence_id) ORDER BY m.originator_node_id, m.originator_sequence_id))",
					0, NULL));
	ref = tl_exec(conn,
				  "SELECT originator_node_id, originator_sequence_id, originator_envelope, late_cursor "
				  "FROM xip83.live_envelopes('{1,2,3,4,5}', '{0,0,0,0,0}', 1000, 0)", 0, NULL);
	res = tl_exec(conn,
				  "SELECT frame, messages, originator_node_ids, sequence_ids, late_cursor, "
				  "  array_length(originator_node_ids, 1) "
				  "FROM xip83.live_frames('envelope', '{1,2,3,4,5}', '{0,0,0,0,0}', 1000, 0, 4000)", 0, NULL);
	TL_CHECK(PQntuples(res) > 1 && PQntuples(ref) > 100, "live envelope frames: %d for %d rows",
			 PQntuples(res), PQntuples(ref));
	for (int f = 0; f < PQntuples(res); f++)
	{
		size_t		len;
		unsigned char *frame = tl_bytea(res, f, 0, &len);
		Xmtp__Xmtpv4__MessageApi__SubscribeResponse *resp =
			xmtp__xmtpv4__message_api__subscribe_response__unpack(NULL, len, frame);
		char		nodes[256] = "{",
					seqs[512] = "{";
		int			last_node = -1;

		TL_CHECK(resp != NULL && resp->v1 != NULL && resp->v1->response_case ==
				 XMTP__XMTPV4__MESSAGE_API__SUBSCRIBE_RESPONSE__V1__RESPONSE_ENVELOPES &&
				 resp->v1->envelopes->mutate_id == 0, "live envelope frame %d decodes, tagged 0", f);
		if (resp == NULL || resp->v1 == NULL || resp->v1->response_case !=
			XMTP__XMTPV4__MESSAGE_API__SUBSCRIBE_RESPONSE__V1__RESPONSE_ENVELOPES)
			break;
		for (size_t i = 0; i < resp->v1->envelopes->n_envelopes && next < PQntuples(ref); i++, next++)
		{
			size_t		slen;
			unsigned char *stored = tl_bytea(ref, next, 2, &slen);

			TL_CHECK(memmem(frame, len, stored, slen) != NULL, "live envelope %d embedded", next);
			PQfreemem(stored);
			/* rows come by originator: the last of each run is its highest here */
			if (i + 1 == resp->v1->envelopes->n_envelopes || next + 1 >= PQntuples(ref) ||
				tl_int(ref, next + 1, 0) != tl_int(ref, next, 0))
			{
				if ((int) tl_int(ref, next, 0) != last_node)
				{
					snprintf(nodes + strlen(nodes), sizeof(nodes) - strlen(nodes), "%s%s",
							 nodes[1] ? "," : "", PQgetvalue(ref, next, 0));
					snprintf(seqs + strlen(seqs), sizeof(seqs) - strlen(seqs), "%s%s",
							 seqs[1] ? "," : "", PQgetvalue(ref, next, 1));
				}
				last_node = (int) tl_int(ref, next, 0);
			}
		}
		strcat(nodes, "}");
		strcat(seqs, "}");
		TL_CHECK(strcmp(PQgetvalue(res, f, 2), nodes) == 0 && strcmp(PQgetvalue(res, f, 3), seqs) == 0,
				 "frame %d advances %s %s, expected %s %s", f, PQgetvalue(res, f, 2),
				 PQgetvalue(res, f, 3), nodes, seqs);
		TL_CHECK(strcmp(PQgetvalue(res, f, 4), PQgetvalue(ref, next - 1, 3)) == 0,
				 "live envelope frame's late cursor");
		xmtp__xmtpv4__message_api__subscribe_response__free_unpacked(resp, NULL);
		PQfreemem(frame);
	}
	TL_CHECK(next == PQntuples(ref), "live envelopes delivered %d of %d", next, PQntuples(ref));
	PQclear(res);
	PQclear(ref);
}

/* Live frames: the live fetch's rows, tagged 0, for all three kinds. */
static void
live_frames(void)
{
	PGresult   *res;

	PQclear(tl_exec(conn,
					"SELECT count(*) FROM xip83.insert_group_messages("
					"  ARRAY(SELECT pg_temp.topic(0, g % 5) FROM generate_series(1, 300) g), "
					"  ARRAY(SELECT pg_temp.rbytes(g % 90) FROM generate_series(1, 300) g))", 0, NULL));
	PQclear(tl_exec(conn,
					"SELECT count(*) FROM xip83.insert_welcome_messages("
					"  ARRAY(SELECT pg_temp.topic(1, g % 5) FROM generate_series(1, 100) g), "
					"  ARRAY(SELECT pg_temp.rbytes(g % 50 + 1) FROM generate_series(1, 100) g), "
					"  NULL, ARRAY(SELECT (g % 3)::smallint FROM generate_series(1, 100) g), NULL, "
					"  ARRAY(SELECT (g % 2)::smallint FROM generate_series(1, 100) g))", 0, NULL));
	for (int k = 0; k < 2; k++)
	{
		bool		welcome = k == 1;
		char		sql[512];
		int			next = 0;
		PGresult   *ref;

		snprintf(sql, sizeof(sql),
				 "SELECT l.id, (extract(epoch FROM l.created_at) * 1000000000)::numeric(30,0), %s "
				 "FROM xip83.live_%s_messages(0, 1000, 0) l",	/* in fetch order */
				 welcome ? "installation_key, data, hpke_public_key IS NULL, coalesce(hpke_public_key, '\\x'), "
				 "coalesce(wrapper_algorithm + 1, 0), welcome_metadata IS NULL, "
				 "coalesce(welcome_metadata, '\\x'), message_type, late_cursor"
				 : "group_id, data, coalesce(is_commit, false), coalesce(sender_hmac, '\\x'), "
				 "coalesce(should_push, false), late_cursor", welcome ? "welcome" : "group");
		ref = tl_exec(conn, sql, 0, NULL);
		snprintf(sql, sizeof(sql),
				 "SELECT frame, messages, last_id, late_cursor FROM xip83.live_frames('%s', 0, 1000, 0, 900)",
				 welcome ? "welcome" : "group");
		res = tl_exec(conn, sql, 0, NULL);
		TL_CHECK(PQntuples(res) > 1, "live %s frames: %d", welcome ? "welcome" : "group", PQntuples(res));
		for (int f = 0; f < PQntuples(res); f++)
		{
			size_t		len;
			unsigned char *frame = tl_bytea(res, f, 0, &len);

			/* mutate_id 0: the live lane */
			check_v3_frame(welcome, frame, len, (int) tl_int(res, f, 1), tl_int(res, f, 2), 0, 900,
						   ref, &next);
			TL_CHECK(next > 0 && strcmp(PQgetvalue(res, f, 3), PQgetvalue(ref, next - 1, welcome ? 10 : 7)) == 0,
					 "live frame's late cursor %s", PQgetvalue(res, f, 3));
			PQfreemem(frame);
		}
		TL_CHECK(next == PQntuples(ref) && next > 0, "live %s: %d of %d", welcome ? "welcome" : "group",
				 next, PQntuples(ref));
		PQclear(res);
		PQclear(ref);
	}
	live_envelope_frames();
}

int
main(void)
{
	conn = tl_connect();
	PQclear(tl_exec(conn, "SET client_min_messages = error", 0, NULL));
	wd_exec_script(conn, setup_sql);
	load_envelopes();
	v3_waves(false);
	v3_waves(true);
	d14n_waves();
	protoc_golden();
	fuzz_decoders();
	live_frames();
	PQfinish(conn);
	return tl_done("t_frames");
}
