/*
 * layouts.c: the tables xip83 reads, as SourceSpecs: the columns a wave
 * returns (in output order), the indexes it reads, and the position and
 * originator columns. The scans read sources through them and tracking
 * (src/feed/track.c) checks a node's tables against them, so they sit
 * below both.
 */
#include "postgres.h"

#include "catalog/pg_type.h"

#include "rel.h"

static const char *const V3GroupKey[] = {"group_id", "id"};
static const char *const V3WelcomeKey[] = {"installation_key", "id"};
static const char *const V3Walk[] = {"id"};

static const SourceColumn V3GroupColumns[] = {
	{"id", INT8OID}, {"created_at", TIMESTAMPOID}, {"group_id", BYTEAOID},
	{"data", BYTEAOID}, {"is_commit", BOOLOID}, {"sender_hmac", BYTEAOID},
	{"should_push", BOOLOID}
};

static const SourceColumn V3WelcomeColumns[] = {
	{"id", INT8OID}, {"created_at", TIMESTAMPOID}, {"installation_key", BYTEAOID},
	{"data", BYTEAOID}, {"hpke_public_key", BYTEAOID}, {"wrapper_algorithm", INT2OID},
	{"welcome_metadata", BYTEAOID}, {"message_type", INT2OID}
};

const SourceSpec WaveV3GroupSource = {
	.argname = "source",
	.columns = V3GroupColumns, .ncolumns = lengthof(V3GroupColumns),
	.key_columns = V3GroupKey, .nkeys = 2,
	.walk_columns = V3Walk, .nwalk = 1,
	.position_column = "id",
};

const SourceSpec WaveV3WelcomeSource = {
	.argname = "source",
	.columns = V3WelcomeColumns, .ncolumns = lengthof(V3WelcomeColumns),
	.key_columns = V3WelcomeKey, .nkeys = 2,
	.walk_columns = V3Walk, .nwalk = 1,
	.position_column = "id",
};

static const SourceColumn meta_columns[] = {
	{"originator_node_id", INT4OID},
	{"originator_sequence_id", INT8OID},
	{"topic", BYTEAOID},
	{"gateway_time", TIMESTAMPOID},
	{"originator_envelope", BYTEAOID},	/* only without blob_source */
};
static const SourceColumn blob_columns[] = {
	{"originator_node_id", INT4OID},
	{"originator_sequence_id", INT8OID},
	{"originator_envelope", BYTEAOID},
};
static const char *const topic_key[] = {"topic", "originator_node_id", "originator_sequence_id"};
static const char *const envelope_key[] = {"originator_node_id", "originator_sequence_id"};

/* A source holding the payload, and a meta source whose payload is elsewhere. */
static const SourceSpec meta_spec = {
	.argname = "source", .columns = meta_columns, .ncolumns = 5,
	.key_columns = topic_key, .nkeys = 3, .walk_columns = envelope_key, .nwalk = 2,
	.position_column = "originator_sequence_id", .originator_column = "originator_node_id",
};
static const SourceSpec meta_only_spec = {
	.argname = "source", .columns = meta_columns, .ncolumns = 4,
	.key_columns = topic_key, .nkeys = 3, .walk_columns = envelope_key, .nwalk = 2,
	.position_column = "originator_sequence_id", .originator_column = "originator_node_id",
};
static const SourceSpec blob_spec = {
	.argname = "blob_source", .columns = blob_columns, .ncolumns = 3,
	.key_columns = envelope_key, .nkeys = 2,
	.position_column = "originator_sequence_id", .originator_column = "originator_node_id",
};

const SourceSpec *const WaveD14nSpecs[3] = {&meta_spec, &meta_only_spec, &blob_spec};
