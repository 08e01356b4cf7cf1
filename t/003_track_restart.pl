# Tracked node tables across restarts: a clean restart keeps each tracked
# table's published horizons (even when its top rows were deleted), an
# immediate stop reloads them from the table, and a late write into a
# tracked table survives a crash through WAL and still reaches a consumer
# whose late cursor is before it. Tracked tables draw registry entries from
# their own pool: running out of it never stops a database's own feed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('track_restart');
$node->init;
$node->append_conf('postgresql.conf',
	"shared_preload_libraries = 'xip83'\ntimezone = 'UTC'\nxip83.max_tracked_tables = 2");
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION xip83;
CREATE TABLE groups (
    id bigserial PRIMARY KEY, created_at timestamp NOT NULL DEFAULT now(),
    group_id bytea NOT NULL, data bytea NOT NULL, group_id_data_hash bytea NOT NULL UNIQUE,
    is_commit boolean DEFAULT NULL, sender_hmac bytea, should_push boolean);
CREATE INDEX ON groups (group_id, id);
CREATE TABLE meta (
    gateway_time timestamp NOT NULL DEFAULT now(), originator_node_id int NOT NULL,
    originator_sequence_id bigint NOT NULL, topic bytea NOT NULL, payer_id int,
    expiry bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (originator_node_id, originator_sequence_id)) PARTITION BY LIST (originator_node_id);
CREATE INDEX ON meta (topic, originator_node_id, originator_sequence_id) INCLUDE (gateway_time);
CREATE TABLE blob (
    originator_node_id int NOT NULL, originator_sequence_id bigint NOT NULL,
    originator_envelope bytea NOT NULL,
    PRIMARY KEY (originator_node_id, originator_sequence_id)) PARTITION BY LIST (originator_node_id);
CREATE TABLE meta_7 PARTITION OF meta FOR VALUES IN (7);
CREATE TABLE blob_7 PARTITION OF blob FOR VALUES IN (7);
SELECT xip83.track('groups', 'group');
SELECT xip83.track('meta', 'envelope', 'blob');
INSERT INTO groups (group_id, data, group_id_data_hash)
    SELECT 'g', int4send(i), int4send(i) FROM generate_series(1, 20) i;
INSERT INTO meta (originator_node_id, originator_sequence_id, topic)
    SELECT 7, i, 't' FROM generate_series(1, 10) i;
INSERT INTO blob SELECT 7, i, int4send(i) FROM generate_series(1, 10) i;
SQL

sub sql { return $node->safe_psql('postgres', $_[0]); }

is(sql("SELECT xip83.group_horizon('groups')"), '20', 'tracked group horizon at the highest id');
is(sql("SELECT horizon FROM xip83.envelope_horizons('meta') WHERE originator_node_id = 7"),
	'10', 'tracked originator horizon at the highest sequence');

# the top envelopes go; a clean restart keeps what was published
sql("DELETE FROM blob WHERE originator_sequence_id > 8; DELETE FROM meta WHERE originator_sequence_id > 8");
$node->restart;
is(sql("SELECT horizon FROM xip83.envelope_horizons('meta') WHERE originator_node_id = 7"),
	'10', 'after a clean restart the originator horizon did not go back');
is(sql("SELECT xip83.group_horizon('groups')"), '20', 'after a clean restart the group horizon holds');

# a late write, then a crash: WAL brings its ring entry back
my $late = sql("SELECT xip83.late_cursor('groups')");
sql("DELETE FROM groups WHERE id = 5");
sql("INSERT INTO groups (id, group_id, data, group_id_data_hash) VALUES (5, 'g', 'late', 'late')");
$node->stop('immediate');
$node->start;
is(sql("SELECT string_agg(id::text, ',') FROM xip83.live_group_messages(20, 10, $late, 'groups')"),
	'5', 'the late row written before the crash reaches a consumer past it');
cmp_ok(sql("SELECT xip83.group_horizon('groups')"), '>=', 20,
	'after a crash the group horizon is loaded from the table and sequence');
$late = sql("SELECT xip83.late_cursor('groups')");
sql("INSERT INTO groups (group_id, data, group_id_data_hash) VALUES ('g', 'new', 'new')");
is(sql("SELECT string_agg(id::text, ',') FROM xip83.live_group_messages(20, 10, $late, 'groups')"),
	'21', 'writes go on being followed after the crash');

# the tracked pool is full (2): a third table cannot be followed, the database's own feed can
sql(<<'SQL');
CREATE TABLE more_groups (LIKE groups INCLUDING ALL);
ALTER TABLE more_groups ALTER COLUMN id SET DEFAULT nextval('groups_id_seq');
SQL
my ($ret, $out, $err) = $node->psql('postgres', "SELECT xip83.track('more_groups', 'group')");
is($ret, 0, 'tracking a third table is recorded');
($ret, $out, $err) = $node->psql('postgres',
	"INSERT INTO more_groups (group_id, data, group_id_data_hash) VALUES ('m', 'm', 'm')");
like($err, qr/at most 2 tracked tables/, 'its writes are refused while the pool is full');
is(sql("SELECT xip83.group_horizon() >= 0"), 't', "the database's own feed is unaffected");

done_testing();
