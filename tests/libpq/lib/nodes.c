/* nodes.c: see nodes.h. */
#include "nodes.h"

#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "wave_d14n_fixture.h"

/* The node's batch insert with its other columns filled as a node would. */
#define NODE_ENVELOPE_BATCH \
	"SELECT public.insert_gateway_envelopes($1::int[], $2::bigint[], $3::bytea[]," \
	" array_fill(NULL::int, ARRAY[cardinality($1::int[])])," \
	" array_fill(NULL::timestamp, ARRAY[cardinality($1::int[])])," \
	" array_fill(3600::bigint, ARRAY[cardinality($1::int[])]), $4::bytea[])"

static const NodeTables own_tables = {
	.mode = NODE_OWN,
	.group_insert = {
		"WITH l AS (SELECT pg_advisory_xact_lock(hashtext(encode($1::bytea, 'hex'))))"
		" INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
		" SELECT $1, $2, sha256($1::bytea || $2::bytea) FROM l"
		" ON CONFLICT (group_id_data_hash) DO NOTHING",
	},
	.envelope_insert =
	"INSERT INTO xip83.envelopes"
	" (originator_node_id, originator_sequence_id, topic, expiry, originator_envelope)"
	" SELECT n, s, t, 3600, e FROM unnest($1::int[], $2::bigint[], $3::bytea[], $4::bytea[])"
	" AS b(n, s, t, e) ON CONFLICT DO NOTHING",
	.group_positions = "SELECT id FROM xip83.group_messages ORDER BY 1",
	.envelope_positions = "SELECT (originator_node_id::bigint << 40) | originator_sequence_id"
	" FROM xip83.envelopes ORDER BY 1",
	.first_sequence = 1,
};

static const NodeTables node_tables = {
	.group_source = "public.group_messages",
	.envelope_source = "public.gateway_envelopes_meta",
	.envelope_blob = "public.gateway_envelopes_blob",
	.group_insert = {
		"SELECT id FROM public.insert_group_message($1, $2, sha256($1::bytea || $2::bytea))",
		"SELECT id FROM public.insert_group_message_v2($1, $2, sha256($1::bytea || $2::bytea),"
		" NULL, true)",
		"SELECT id FROM public.insert_group_message_v3($1, $2, sha256($1::bytea || $2::bytea),"
		" '\\x5a', NULL, NULL)",
	},
	.envelope_insert = NODE_ENVELOPE_BATCH,
	.group_positions = "SELECT id FROM public.group_messages ORDER BY 1",
	/* a meta row without its blob row is not served: count what a join returns */
	.envelope_positions = "SELECT (originator_node_id::bigint << 40) | originator_sequence_id"
	" FROM public.gateway_envelopes_meta JOIN public.gateway_envelopes_blob"
	" USING (originator_node_id, originator_sequence_id) ORDER BY 1",
	.first_sequence = 0,
};

NodeMode
nodes_mode_from_env(void)
{
	const char *v = getenv("XIP83_NODE_TABLES");

	if (v == NULL || *v == '\0')
		v = NODE_TABLES_DEFAULT;
	if (strcmp(v, "own") == 0)
		return NODE_OWN;
	if (strcmp(v, "tracked") == 0)
		return NODE_TRACKED;
	tl_fatal("XIP83_NODE_TABLES must be own or tracked, not \"%s\"", v);
}

void
nodes_track(PGconn *conn, bool track)
{
	wd_exec_script(conn, track
				   ? "SELECT xip83.track('public.group_messages', 'group');"
				   " SELECT xip83.track('public.gateway_envelopes_meta', 'envelope',"
				   " 'public.gateway_envelopes_blob')"
				   : "SELECT xip83.untrack('public.group_messages');"
				   " SELECT xip83.untrack('public.gateway_envelopes_meta')");
}

NodeTables
nodes_setup(PGconn *conn, NodeMode mode)
{
	NodeTables	t;

	if (mode == NODE_OWN)
		return own_tables;
	wd_exec_file(conn, "tests/nodes/v3_node.sql");
	wd_exec_file(conn, "tests/nodes/d14n_node.sql");
	if (mode == NODE_TRACKED)
		nodes_track(conn, true);
	t = node_tables;
	t.mode = mode;
	return t;
}

int64_t
nodes_envelope_key(int32_t node, int64_t sequence)
{
	return ((int64_t) node << 40) | sequence;
}
