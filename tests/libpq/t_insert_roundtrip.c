/*
 * t_insert_roundtrip: a node's batch insert over libpq, read back column by
 * column. Payloads are random binary (NUL bytes included); a few elements
 * repeat earlier ones and must come back as the stored row, not a new one.
 */
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 300

typedef struct Msg
{
	unsigned char group[8];
	size_t		group_len;
	unsigned char data[64];
	size_t		data_len;
	bool		is_commit;
	bool		has_hmac;
	unsigned char hmac[4];
	int			should_push;	/* -1 = NULL */
	int			repeat_of;		/* index of the element this repeats, or -1 */
} Msg;

/* Appends bytes as an element of a text-form bytea[] literal: "\\x..." */
static void
append_bytea(char *buf, size_t *pos, const unsigned char *b, size_t len, bool last)
{
	*pos += sprintf(buf + *pos, "\"\\\\x");
	for (size_t i = 0; i < len; i++)
		*pos += sprintf(buf + *pos, "%02x", b[i]);
	*pos += sprintf(buf + *pos, "\"%s", last ? "}" : ",");
}

static Msg	msgs[N];

int
main(void)
{
	PGconn	   *conn = tl_connect();
	static char groups[N * 40], datas[N * 160], commits[N * 8], hmacs[N * 40], pushes[N * 8];
	size_t		gp = 1, dp = 1, cp = 1, hp = 1, pp = 1;
	const char *params[5];
	PGresult   *res;
	PGresult   *back;

	srandom(83);
	groups[0] = datas[0] = commits[0] = hmacs[0] = pushes[0] = '{';
	for (int i = 0; i < N; i++)
	{
		Msg		   *m = &msgs[i];
		bool		last = i == N - 1;

		if (i > 10 && random() % 10 == 0)
		{
			/* same group and payload as an earlier original, other flags */
			int			r = (int) (random() % i);

			while (msgs[r].repeat_of >= 0)
				r = msgs[r].repeat_of;
			*m = msgs[r];
			m->repeat_of = r;
			m->is_commit = !m->is_commit;
		}
		else
		{
			m->repeat_of = -1;
			m->group_len = 1 + random() % 8;
			for (size_t k = 0; k < m->group_len; k++)
				m->group[k] = random() % 4;	/* few distinct groups */
			m->data_len = 8 + random() % 56;	/* long enough that originals never collide */
			for (size_t k = 0; k < m->data_len; k++)
				m->data[k] = random() % 256;
			m->is_commit = random() % 2;
			m->has_hmac = random() % 2;
			for (int k = 0; k < 4; k++)
				m->hmac[k] = random() % 256;
			m->should_push = (int) (random() % 3) - 1;
		}
		append_bytea(groups, &gp, m->group, m->group_len, last);
		append_bytea(datas, &dp, m->data, m->data_len, last);
		cp += sprintf(commits + cp, "%s%s", m->is_commit ? "t" : "f", last ? "}" : ",");
		if (m->has_hmac)
			append_bytea(hmacs, &hp, m->hmac, 4, last);
		else
			hp += sprintf(hmacs + hp, "NULL%s", last ? "}" : ",");
		pp += sprintf(pushes + pp, "%s%s",
					  m->should_push < 0 ? "NULL" : m->should_push ? "t" : "f", last ? "}" : ",");
	}
	params[0] = groups;
	params[1] = datas;
	params[2] = commits;
	params[3] = hmacs;
	params[4] = pushes;
	res = tl_exec(conn,
				  "SELECT id, inserted FROM xip83.insert_group_messages($1, $2, $3, $4, $5)",
				  5, params);
	TL_CHECK(PQntuples(res) == N, "got %d rows", PQntuples(res));

	/* Read back what is stored, in id order, with every column. */
	back = tl_exec(conn,
				   "SELECT id, created_at > now() - interval '1 minute' AND created_at <= now(),"
				   "       group_id, data, group_id_data_hash = sha256(group_id || data),"
				   "       is_commit, sender_hmac IS NULL, sender_hmac, should_push IS NULL, should_push"
				   "  FROM xip83.group_messages ORDER BY id", 0, NULL);

	{
		int			row = 0;
		int64_t		prev_id = 0;

		for (int i = 0; i < N; i++)
		{
			Msg		   *m = &msgs[i];
			int64_t		id = tl_int(res, i, 0);
			bool		inserted = tl_bool(res, i, 1);

			if (m->repeat_of >= 0)
			{
				TL_CHECK(!inserted, "element %d repeats %d", i, m->repeat_of);
				TL_CHECK(id == tl_int(res, m->repeat_of, 0),
						 "element %d got id %lld, its original %lld", i, (long long) id,
						 (long long) tl_int(res, m->repeat_of, 0));
				continue;
			}
			TL_CHECK(inserted, "element %d is new", i);
			TL_CHECK(id > prev_id, "ids follow input order at %d", i);
			prev_id = id;
			if (row >= PQntuples(back))
				tl_fatal("fewer stored rows than new elements");
			{
				size_t		glen, dlen, hlen;
				unsigned char *g = tl_bytea(back, row, 2, &glen);
				unsigned char *d = tl_bytea(back, row, 3, &dlen);

				TL_CHECK(tl_int(back, row, 0) == id, "row %d id", row);
				TL_CHECK(tl_bool(back, row, 1), "row %d created_at is now", row);
				TL_CHECK(glen == m->group_len && memcmp(g, m->group, glen) == 0, "row %d group_id", row);
				TL_CHECK(dlen == m->data_len && memcmp(d, m->data, dlen) == 0, "row %d data", row);
				TL_CHECK(tl_bool(back, row, 4), "row %d hash", row);
				TL_CHECK(tl_bool(back, row, 5) == m->is_commit, "row %d is_commit", row);
				TL_CHECK(tl_bool(back, row, 6) == !m->has_hmac, "row %d sender_hmac null", row);
				if (m->has_hmac)
				{
					unsigned char *h = tl_bytea(back, row, 7, &hlen);

					TL_CHECK(hlen == 4 && memcmp(h, m->hmac, 4) == 0, "row %d sender_hmac", row);
					PQfreemem(h);
				}
				TL_CHECK(tl_bool(back, row, 8) == (m->should_push < 0), "row %d should_push null", row);
				if (m->should_push >= 0)
					TL_CHECK(tl_bool(back, row, 9) == (m->should_push == 1), "row %d should_push", row);
				PQfreemem(g);
				PQfreemem(d);
			}
			row++;
		}
		TL_CHECK(row == PQntuples(back), "stored %d rows, %d new elements", PQntuples(back), row);
	}
	PQclear(res);
	PQclear(back);

	/* A bad batch writes nothing. */
	TL_CHECK(tl_exec_fails(conn, "SELECT * FROM xip83.insert_group_messages("
						   "ARRAY['\\x01', '\\x02']::bytea[], ARRAY['\\x01']::bytea[])", "22023"),
			 "unequal arrays");
	res = tl_exec(conn, "SELECT count(*) FROM xip83.group_messages", 0, NULL);
	{
		int			fresh = 0;

		for (int i = 0; i < N; i++)
			fresh += msgs[i].repeat_of < 0;
		TL_CHECK(tl_int(res, 0, 0) == fresh, "count %lld after a bad batch",
				 (long long) tl_int(res, 0, 0));
	}
	PQclear(res);
	PQfinish(conn);
	return tl_done("t_insert_roundtrip");
}
