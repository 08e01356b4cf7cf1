# xip83.import moves a node's rows into xip83's tables: v3 group and welcome
# messages, d14n envelopes from a plain table and from production's meta +
# blob pair (LIST by originator, RANGE bands). Every row shape the nodes store
# goes in (empty topics, NULL is_commit, any wrapper_algorithm and
# message_type, sequence 0). A run cancelled mid-way, a backend killed
# mid-run and a batch that fails and rolls back are each finished by running
# the import again; the target then holds exactly the source's rows, compared
# in full. A writer role needs exactly the documented grants.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('import');
$node->init;
$node->append_conf('postgresql.conf',
	"shared_preload_libraries = 'xip83'\ntimezone = 'UTC'");
$node->start;
my $db = 'postgres';
$node->safe_psql($db, 'CREATE EXTENSION xip83');

# The nodes' tables, filled with every shape they store.
$node->safe_psql($db, <<'SQL');
CREATE SCHEMA node;
CREATE TABLE node.group_messages (
    id bigserial PRIMARY KEY, created_at timestamp NOT NULL DEFAULT now(),
    group_id bytea NOT NULL, data bytea NOT NULL, group_id_data_hash bytea NOT NULL UNIQUE,
    sender_hmac bytea, should_push boolean, is_commit boolean DEFAULT NULL);
CREATE INDEX ON node.group_messages (group_id, id);
INSERT INTO node.group_messages (group_id, data, group_id_data_hash, sender_hmac, should_push, is_commit)
SELECT g, d, sha256(g || d), CASE WHEN i % 2 = 0 THEN int4send(i) END,
       CASE WHEN i % 5 = 0 THEN NULL ELSE i % 3 = 0 END,
       CASE WHEN i % 4 = 0 THEN NULL ELSE i % 7 = 0 END
  FROM (SELECT i, CASE WHEN i % 9 = 0 THEN ''::bytea ELSE int4send(i % 50) END g, int8send(i) d
          FROM generate_series(1, 20000) i) s;
-- ids have gaps, as retention deletes leave them
DELETE FROM node.group_messages WHERE id % 101 = 0;

CREATE TABLE node.welcome_messages (
    id bigserial PRIMARY KEY, created_at timestamp NOT NULL DEFAULT now(),
    installation_key bytea NOT NULL, data bytea NOT NULL, hpke_public_key bytea,
    installation_key_data_hash bytea NOT NULL UNIQUE, wrapper_algorithm smallint NOT NULL DEFAULT 0,
    welcome_metadata bytea, message_type smallint NOT NULL DEFAULT 0);
INSERT INTO node.welcome_messages (installation_key, data, hpke_public_key, installation_key_data_hash,
                                   wrapper_algorithm, welcome_metadata, message_type)
SELECT k, d, CASE WHEN i % 2 = 0 THEN int4send(i) END, sha256(k || d), (i % 5) - 1,
       CASE WHEN i % 3 = 0 THEN int4send(i) END, i % 4
  FROM (SELECT i, CASE WHEN i % 11 = 0 THEN ''::bytea ELSE int4send(i % 30) END k, int8send(i) d
          FROM generate_series(1, 3000) i) s;

CREATE TABLE node.envelopes (
    originator_node_id int NOT NULL, originator_sequence_id bigint NOT NULL, topic bytea NOT NULL,
    gateway_time timestamp NOT NULL DEFAULT now(), expiry bigint NOT NULL, payer_id int,
    originator_envelope bytea NOT NULL, PRIMARY KEY (originator_node_id, originator_sequence_id));
INSERT INTO node.envelopes
SELECT o, s, CASE WHEN s % 6 = 0 THEN ''::bytea ELSE '\x00'::bytea || int4send(s % 40) END,
       timestamp '2026-01-01' + s * interval '1 s', 1800000000 + s, CASE WHEN s % 2 = 0 THEN 7 END,
       int4send(o) || int8send(s)
  FROM unnest('{0,1,100,200}'::int[]) o, generate_series(0, 2999) s
 WHERE o <> 200 OR s % 3 = 0;   -- a sparse originator
SQL
$node->safe_psql($db, slurp_file('tests/wave_d14n_reference.sql'));
$node->safe_psql($db, <<'SQL');
SELECT wave_d14n_production_layout('node.meta', 'node.blob');
-- sequences spread over two bands of 1,000,000
CREATE TEMP TABLE spread AS
SELECT originator_node_id, originator_sequence_id * 700 AS originator_sequence_id, topic,
       gateway_time, expiry, payer_id, originator_envelope FROM node.envelopes;
SELECT wave_d14n_load_split('spread', 'node.meta', 'node.blob');
-- a meta row without its blob row is not served, so not imported
DELETE FROM node.blob WHERE originator_sequence_id = 700 * 5 AND originator_node_id = 1;
SQL

# The full contents of a table, in key order, as one digest and a count.
sub contents
{
	my ($sql) = @_;
	return $node->safe_psql($db,
		"SELECT count(*) || ' ' || md5(coalesce(string_agg(r::text, '|' ORDER BY r::text), '')) FROM ($sql) r");
}
my %group = (
	source => 'SELECT id, created_at, group_id, data, group_id_data_hash, is_commit, sender_hmac, should_push FROM node.group_messages',
	target => 'SELECT id, created_at, group_id, data, group_id_data_hash, is_commit, sender_hmac, should_push FROM xip83.group_messages');

# A run slowed down (one second per ten batches) and cancelled mid-way, then
# run again.
$node->safe_psql($db, <<'SQL');
CREATE FUNCTION public.slow() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN PERFORM pg_sleep(0.1); RETURN NULL; END $$;
CREATE TRIGGER slow AFTER INSERT ON xip83.group_messages FOR EACH STATEMENT EXECUTE FUNCTION public.slow();
SQL
my $bg = $node->background_psql($db, on_error_stop => 0);
my $pid = $bg->query_safe('SELECT pg_backend_pid()');
$bg->query_until(qr/started/, "\\echo started\nCALL xip83.import('node.group_messages', 'xip83.group_messages', 500);\n");
$node->poll_query_until($db, 'SELECT count(*) >= 2000 FROM xip83.group_messages')
  or die 'the import did not start';
$node->safe_psql($db, "SELECT pg_cancel_backend($pid)");
$bg->quit;
my $part = $node->safe_psql($db, 'SELECT count(*) FROM xip83.group_messages');
cmp_ok($part, '<', 19802, "cancelled mid-way with $part of 19802 rows copied");
is($node->safe_psql($db, 'SELECT count(*) % 500 FROM xip83.group_messages'), '0',
	'whole batches only: each commits on its own');
$node->safe_psql($db, 'DROP TRIGGER slow ON xip83.group_messages');

# A batch that fails part way rolls back; the next run goes on from there.
$node->safe_psql($db, <<'SQL');
CREATE FUNCTION public.fail_once() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN IF NEW.id = 15000 THEN RAISE EXCEPTION 'planted failure'; END IF; RETURN NEW; END $$;
CREATE TRIGGER fail_once BEFORE INSERT ON xip83.group_messages FOR EACH ROW EXECUTE FUNCTION public.fail_once();
SQL
my ($ret, $out, $err) =
  $node->psql($db, "CALL xip83.import('node.group_messages', 'xip83.group_messages', 700)");
isnt($ret, 0, 'a run with a failing batch fails');
like($err, qr/planted failure/, 'with the batch\'s error');
is( $node->safe_psql($db, 'SELECT max(id) < 15000 AND count(*) > ' . $part . ' FROM xip83.group_messages'),
	't', 'the batches before it stayed, the failing one left nothing');
$node->safe_psql($db, 'DROP TRIGGER fail_once ON xip83.group_messages');

# A batch rolled back by the caller: import_step in a transaction that aborts.
$node->safe_psql($db,
	"BEGIN; SELECT * FROM xip83.import_step('node.group_messages', 'xip83.group_messages', 900, NULL, true,"
	  . " NULL, NULL, NULL, NULL); ROLLBACK;");

($ret, $out, $err) =
  $node->psql($db, "CALL xip83.import('node.group_messages', 'xip83.group_messages', 700)");
is($ret, 0, 'the next run finishes') or diag($err);
like($err, qr/NOTICE:  xip83\.import into xip83\.group_messages: \d+ rows read/, 'a NOTICE per batch');
is(contents($group{target}), contents($group{source}), 'group messages: the target holds exactly the source');
is($node->safe_psql($db, "CALL xip83.import('node.group_messages', 'xip83.group_messages')"),
	'0|0', 'a run after the end reads and inserts nothing');
is($node->safe_psql($db, "CALL xip83.import('node.group_messages', 'xip83.group_messages', resume => false)"),
	'19802|0', 'resume => false reads everything again and inserts nothing');
is( $node->safe_psql($db,
		"SELECT last_value >= (SELECT max(id) FROM node.group_messages) FROM xip83.group_messages_id_seq"),
	't', 'the id sequence moved up past the imported ids');
ok( $node->poll_query_until($db,
		'SELECT xip83.group_horizon() = (SELECT max(id) FROM xip83.group_messages)'),
	'the group horizon covers the imported ids');

# The same rows come out of the wave scans as out of the node's table.
is( $node->safe_psql($db,
		"SELECT md5(string_agg(id || ':' || coalesce(is_commit::text, 'n'), ',' ORDER BY id)) FROM xip83.group_wave_scan("
		  . "ARRAY['', int4send(3), int4send(7)], '{0,0,0}', 0, xip83.group_ceiling(), 10000)"),
	$node->safe_psql($db,
		"SELECT md5(string_agg(id || ':' || coalesce(is_commit::text, 'n'), ',' ORDER BY id)) FROM xip83.group_wave_scan("
		  . "ARRAY['', int4send(3), int4send(7)], '{0,0,0}', 0, xip83.group_ceiling('node.group_messages'), 10000,"
		  . " 'node.group_messages')"),
	'a wave with the empty topic returns the same rows from both tables');

# A message stored under another id in the target is a conflict, never skipped.
$node->safe_psql($db,
	"INSERT INTO node.group_messages (group_id, data, group_id_data_hash) VALUES ('\\x0a', '\\x0b', sha256('\\x0a0b'));"
	  . "INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)"
	  . " VALUES (90000, '\\x0a', '\\x0b', sha256('\\x0a0b'))");
($ret, $out, $err) = $node->psql($db,
	"\\set VERBOSITY verbose\nCALL xip83.import('node.group_messages', 'xip83.group_messages')");
like($err, qr/23505: xip83\.import: source row id \d+ of node\.group_messages conflicts/,
	'a message the target holds under another id fails with 23505');

# Welcomes: odd wrapper algorithms and message types go in as they are.
is($node->safe_psql($db, "CALL xip83.import('node.welcome_messages', 'xip83.welcome_messages', 1000)"),
	'3000|3000', 'welcomes imported');
is( contents('SELECT * FROM xip83.welcome_messages'),
	contents('SELECT * FROM node.welcome_messages'),
	'welcomes: the target holds exactly the source');

# Envelopes from the meta + blob pair, killed mid-run, then finished.
$node->safe_psql($db, <<'SQL');
CREATE TRIGGER slow AFTER INSERT ON xip83.envelopes FOR EACH STATEMENT EXECUTE FUNCTION public.slow();
SQL
$bg = $node->background_psql($db, on_error_stop => 0);
$pid = $bg->query_safe('SELECT pg_backend_pid()');
$bg->query_until(qr/started/,
	"\\echo started\nCALL xip83.import('node.meta', 'xip83.envelopes', 400, blob_source => 'node.blob');\n");
$node->poll_query_until($db, 'SELECT count(*) >= 3000 FROM xip83.envelopes')
  or die 'the envelope import did not start';
$node->safe_psql($db, "SELECT pg_terminate_backend($pid)");
eval { $bg->quit };
$part = $node->safe_psql($db, 'SELECT count(*) FROM xip83.envelopes');
cmp_ok($part, '<', 10000, "killed mid-run with $part envelopes copied");
$node->safe_psql($db, 'DROP TRIGGER slow ON xip83.envelopes');
($ret, $out, $err) = $node->psql($db,
	"CALL xip83.import('node.meta', 'xip83.envelopes', 400, blob_source => 'node.blob')");
is($ret, 0, 'the next run finishes') or diag($err);
my $served = 'SELECT m.originator_node_id, m.originator_sequence_id, m.topic, m.gateway_time, m.expiry,'
  . ' m.payer_id, b.originator_envelope FROM node.meta m JOIN node.blob b USING (originator_node_id, originator_sequence_id)';
my $stored = 'SELECT originator_node_id, originator_sequence_id, topic, gateway_time, expiry, payer_id,'
  . ' originator_envelope FROM xip83.envelopes';
is(contents($stored), contents($served), 'meta + blob: the target holds exactly what the node serves');
is($node->safe_psql($db, 'SELECT count(*) FROM xip83.envelopes WHERE originator_sequence_id = 0'),
	'4', 'sequence 0 of every originator came along');

# The same through the plain table into an emptied target, in one go.
$node->safe_psql($db, 'TRUNCATE xip83.envelopes');
is($node->safe_psql($db, "CALL xip83.import('node.envelopes', 'xip83.envelopes', 1000)"),
	'10000|10000', 'plain envelope table imported');
is(contents($stored), contents('SELECT * FROM node.envelopes'), 'envelopes: the target holds exactly the source');
is( $node->safe_psql($db,
		"SELECT string_agg(originator_node_id || ':' || originator_sequence_id, ' ')"
		  . " FROM xip83.envelope_wave_scan(ARRAY['', '']::bytea[], '{0,200}', '{-1,0}', '{0,200}', '{6,6}', 0, -1, 100)"),
	'0:0 0:6 200:6',
	'the empty topic and sequence 0 through the d14n wave scan (0 seen for originator 200)');

# Privileges: what docs/adopting.md lists, and no more.
$node->safe_psql($db, <<'SQL');
TRUNCATE xip83.welcome_messages RESTART IDENTITY;
CREATE ROLE importer;
GRANT USAGE ON SCHEMA node, xip83 TO importer;
GRANT SELECT ON node.welcome_messages TO importer;
GRANT SELECT, INSERT ON xip83.welcome_messages TO importer;
GRANT EXECUTE ON FUNCTION xip83.import_step(regclass, regclass, int, regclass, boolean, int, bigint, bigint, bigint) TO importer;
SQL
($ret, $out, $err) = $node->psql($db,
	"SET ROLE importer; CALL xip83.import('node.welcome_messages', 'xip83.welcome_messages', 1000)");
like($err, qr/permission denied for sequence welcome_messages_id_seq/,
	'without USAGE and UPDATE on the id sequence the ids cannot move it');
$node->safe_psql($db, 'GRANT USAGE, UPDATE ON SEQUENCE xip83.welcome_messages_id_seq TO importer');
is( $node->safe_psql($db,
		"SET ROLE importer; CALL xip83.import('node.welcome_messages', 'xip83.welcome_messages', 1000)"),
	'3000|3000', 'with it the role imports');
$node->safe_psql($db, 'REVOKE SELECT ON node.welcome_messages FROM importer');
($ret, $out, $err) = $node->psql($db,
	"SET ROLE importer; CALL xip83.import('node.welcome_messages', 'xip83.welcome_messages', 1000, resume => false)");
like($err, qr/permission denied for table welcome_messages/, 'without SELECT on the source: refused');

$node->stop;
done_testing();
