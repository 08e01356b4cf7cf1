/*
 * nodes.h: the tables a node-writer test or benchmark writes to and follows,
 * chosen by one setting: xip83's own tables, or the node schemas of
 * tests/nodes/ (applied to the test database), tracked with xip83.track or
 * left untracked. Writers go through the node's own insert functions there,
 * and through the same pattern (a per-topic advisory lock, then INSERT with
 * the id default; envelope batches with ON CONFLICT DO NOTHING) on xip83's
 * tables.
 */
#ifndef XIP83_NODES_H
#define XIP83_NODES_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum NodeMode
{
	NODE_OWN,					/* xip83.group_messages, xip83.envelopes */
	NODE_TRACKED,				/* tests/nodes/ tables, tracked */
	NODE_UNTRACKED				/* tests/nodes/ tables, not tracked */
} NodeMode;

/*
 * XIP83_NODE_TABLES (own or tracked) picks what the exactly-once test runs
 * against; this is its default.
 */
#define NODE_TABLES_DEFAULT "tracked"

typedef struct NodeTables
{
	NodeMode	mode;
	/* the source (and blob source) consumers pass; NULL: xip83's own table */
	const char *group_source;
	const char *envelope_source;
	const char *envelope_blob;
	/* one group message: $1 topic, $2 data (text-form bytea) */
	const char *group_insert[3];	/* node function versions, any of them */
	/* one batch: $1 int[] originators, $2 bigint[] sequences, $3 bytea[] topics, $4 bytea[] envelopes */
	const char *envelope_insert;
	/* every stored position, ascending: ids; envelopes as nodes_envelope_key */
	const char *group_positions;
	const char *envelope_positions;
	/* the lowest sequence id an originator may write (0 where chain originators are stored) */
	int64_t		first_sequence;
} NodeTables;

/* The mode named by XIP83_NODE_TABLES (default NODE_TABLES_DEFAULT); fatal when unknown. */
NodeMode	nodes_mode_from_env(void);
/* Prepares the database for a mode (applies and tracks the node schemas) and describes it. */
NodeTables	nodes_setup(PGconn *conn, NodeMode mode);
/* Tracks (or untracks) the node schemas' tables: the benchmark switches between rounds. */
void		nodes_track(PGconn *conn, bool track);
/* An envelope's position as one number: originator in the high bits. */
int64_t		nodes_envelope_key(int32_t node, int64_t sequence);

#endif							/* XIP83_NODES_H */
