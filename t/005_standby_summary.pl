# The topic summary on a hot standby: built there from the standby's own rows,
# kept current as replay advances, and never the cause of a skipped row.
#
# The standby's summary_states say 'ready' (for xip83's group table and for a
# tracked, partitioned group table), and a caught-up wave of 5,000 idle topics
# there reads far fewer buffers than with the summary off. Then, on a standby
# that has not replayed the write yet (replay paused while the primary writes
# and the standby's floors are read), each way a row arrives below what the
# standby may already have summarized: an in-flight write for a topic whose
# floor was just read, a late write below the horizon, a deleted id written
# again, an UPDATE of a row's topic, xip83.import, rows brought by ATTACH
# PARTITION, and TRUNCATE ... RESTART IDENTITY. Each wave is compared row for
# row with its SQL definition, as are randomized waves while 4 writers run,
# with a summary far smaller than the topics, and across a promotion in the
# middle of a wave read by cursor.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(sleep);
use FindBin;
use lib $FindBin::RealBin;
use StandbyWaves;

my $START = 1_000_000;	# fresh ids start above; old topics and late ids are below
my $TOPICS = 5000;

my $primary = start_primary();
$primary->safe_psql('postgres', <<"SQL");
CREATE EXTENSION xip83;
-- old topics o1..o40, ids 1..400: floors below every late id of the cases
INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)
    SELECT i, ('o' || (i % 40 + 1))::bytea, int8send(i), sha256(int8send(i)) FROM generate_series(1, 400) i;
SELECT setval('xip83.group_messages_id_seq', $START);
-- 5,000 topics t1..t5000 written once each, then a few more rows
SELECT count(*) FROM xip83.insert_group_messages(
    ARRAY(SELECT ('t' || i)::bytea FROM generate_series(1, $TOPICS) i),
    ARRAY(SELECT int8send(-i) FROM generate_series(1, $TOPICS) i));
SELECT count(*) FROM xip83.insert_group_messages(
    ARRAY(SELECT ('t' || (i % 300 + 1))::bytea FROM generate_series(1, 2000) i),
    ARRAY(SELECT int8send(-100000 - i) FROM generate_series(1, 2000) i));
CREATE SEQUENCE late_ids START 1000;

-- a node's group table, tracked
CREATE SCHEMA node;
CREATE TABLE node.pg (
    id bigserial, created_at timestamp NOT NULL DEFAULT now(), group_id bytea NOT NULL,
    data bytea NOT NULL, group_id_data_hash bytea NOT NULL, is_commit boolean,
    sender_hmac bytea, should_push boolean, PRIMARY KEY (id));
CREATE INDEX ON node.pg (group_id, id);
INSERT INTO node.pg (id, group_id, data, group_id_data_hash)
    SELECT i, ('o' || (i % 20 + 1))::bytea, int8send(i), sha256(int8send(i)) FROM generate_series(1, 200) i;
SELECT setval('node.pg_id_seq', $START);
SELECT xip83.track('node.pg', 'group');
INSERT INTO node.pg (group_id, data, group_id_data_hash)
    SELECT ('t' || (i % 100 + 1))::bytea, int8send(i), sha256(int8send(-i)) FROM generate_series(1, 500) i;

${\ envelope_table_sql(100000)}
${\ verdict_sql()}
-- (topic, originator) floors at each pair's last sequence id below 500
CREATE FUNCTION last_env(OUT topics bytea[], OUT nodes int[], OUT floors bigint[]) LANGUAGE sql AS \$\$
  SELECT array_agg(topic ORDER BY topic, n), array_agg(n ORDER BY topic, n), array_agg(f ORDER BY topic, n)
    FROM (SELECT topic, originator_node_id n, max(originator_sequence_id) f FROM node.e
           WHERE originator_sequence_id < 500 GROUP BY 1, 2) x
\$\$;
CREATE FUNCTION diff_env(topics bytea[], nodes int[], floors bigint[]) RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE cn int[]; cs bigint[]; got text[]; before text[]; after text[];
  def text := 'SELECT array_agg(m.originator_node_id || '':'' || m.originator_sequence_id)'
              ' FROM node.e m JOIN unnest(\$4, \$5) c(node, ceil) ON c.node = m.originator_node_id'
              ' WHERE m.originator_sequence_id <= c.ceil AND EXISTS (SELECT 1 FROM unnest(\$1, \$2, \$3) f(t, n, fl)'
              '  WHERE f.t = m.topic AND f.n = m.originator_node_id AND m.originator_sequence_id > f.fl)';
BEGIN
  PERFORM set_config('xip83.max_page_limit', '1000000', true);
  SELECT array_agg(originator_node_id), array_agg(max_sequence_id) INTO cn, cs
    FROM xip83.originator_ceilings(NULL, 'node.e');
  EXECUTE def INTO before USING topics, nodes, floors, cn, cs;
  SELECT array_agg(originator_node_id || ':' || originator_sequence_id) INTO got
    FROM xip83.envelope_wave_scan(topics, nodes, floors, cn, cs, 0, 0, 100000, 'node.e');
  EXECUTE def INTO after USING topics, nodes, floors, cn, cs;
  RETURN verdict(before, got, after);
END \$\$;

-- a node's table for xip83.import: ids between the old topics and the fresh rows
CREATE TABLE node.ng (
    id bigserial PRIMARY KEY, created_at timestamp NOT NULL DEFAULT now(),
    group_id bytea NOT NULL, data bytea NOT NULL, group_id_data_hash bytea NOT NULL UNIQUE,
    is_commit boolean, sender_hmac bytea, should_push boolean);
CREATE INDEX ON node.ng (group_id, id);
INSERT INTO node.ng (id, group_id, data, group_id_data_hash)
    SELECT i, ('o' || (i % 7 + 10))::bytea, int8send(i), sha256(int8send(i) || '\\x01')
      FROM generate_series(600, 699) i;

-- every topic's last id (floors of a caught-up wave), and 'n1'..'n3' at 0
CREATE FUNCTION last_ids(source regclass, OUT topics bytea[], OUT floors bigint[])
LANGUAGE plpgsql AS \$\$
BEGIN
  EXECUTE format('SELECT array_agg(t ORDER BY t), array_agg(f ORDER BY t) FROM ('
                 ' SELECT group_id t, max(id) f FROM %s GROUP BY 1'
                 ' UNION ALL SELECT (''n'' || i)::bytea, 0 FROM generate_series(1, 3) i) x', source)
    INTO topics, floors;
END \$\$;
-- the wave from those floors at the current ceiling between two reads of its definition
CREATE FUNCTION diff_floors(source regclass, topics bytea[], floors bigint[]) RETURNS text
LANGUAGE plpgsql AS \$\$
DECLARE ceil bigint := xip83.group_ceiling(source); got bigint[]; before bigint[]; after bigint[];
  def text := format('SELECT array_agg(id) FROM %s m WHERE id <= \$3 AND EXISTS'
                     ' (SELECT 1 FROM unnest(\$1, \$2) f(t, fl) WHERE f.t = m.group_id AND m.id > f.fl)', source);
BEGIN
  PERFORM set_config('xip83.max_page_limit', '1000000', true);
  EXECUTE def INTO before USING topics, floors, ceil;
  SELECT array_agg(id) INTO got FROM xip83.group_wave_scan(topics, floors, 0, ceil, 1000000, source);
  EXECUTE def INTO after USING topics, floors, ceil;
  RETURN verdict(before, got, after);
END \$\$;
-- a randomized wave: floors at, near or far below each topic's last id
CREATE FUNCTION diff_random(source regclass, seed float8) RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE topics bytea[]; floors bigint[];
BEGIN
  PERFORM setseed(seed);
  EXECUTE format('SELECT array_agg(t ORDER BY t), array_agg(fl ORDER BY t) FROM ('
                 ' SELECT group_id t, CASE WHEN random() < 0.6 THEN max(id) WHEN random() < 0.5 THEN max(id) - 2'
                 '   ELSE (max(id) * random())::bigint END fl FROM %s GROUP BY 1) x', source)
    INTO topics, floors;
  RETURN diff_floors(source, topics, floors);
END \$\$;
SQL

my $standby = start_standby($primary, 0);
$standby->poll_query_until('postgres', "SELECT xip83.group_ceiling() > $START", 't')
  or die 'the standby never learned the horizons';
$standby->poll_query_until('postgres',
	"SELECT xip83.group_ceiling('node.pg') > $START", 't')
  or die 'the standby never learned the tracked table\'s horizons';
# the notifier logs a feed's every line after a checkpoint
$primary->safe_psql('postgres', "INSERT INTO node.e (originator_node_id, originator_sequence_id, topic, originator_envelope)
    VALUES (100, 5000, 'e1', '\\x01'), (200, 5000, 'e2', '\\x01'); CHECKPOINT");
$standby->poll_query_until('postgres',
	"SELECT count(*) = 2 FROM xip83.originator_ceilings(NULL, 'node.e')", 't')
  or die 'the standby never learned the envelope table\'s horizons';

# Shared buffers a caught-up wave of every topic reads on the standby.
sub wave_buffers
{
	my ($node) = @_;
	my ($t, $f) = split /\|/, $node->safe_psql('postgres',
		"SELECT topics, floors FROM last_ids('xip83.group_messages')");
	return plan_buffers($node,
		"SELECT count(*) FROM xip83.group_wave_scan('$t', '$f', 0, xip83.group_ceiling(), 1000000)");
}

# Waits until the standby's summary of a feed (xip83's group table or a
# tracked table) is ready; a wave asks for the pass.
sub standby_summary_ready
{
	my ($source) = @_;
	my $state = $source eq 'xip83.group_messages'
	  ? 'SELECT summary_states[1] FROM xip83.feed_status'
	  : "SELECT summary_state FROM xip83.tracked WHERE source = '$source'::regclass";
	return summary_ready($standby, "xip83.group_wave_scan('{x}', '{0}', 0, 1, 1, '$source')", $state);
}

my $off_buffers = wave_buffers($standby);
my $state = $standby->safe_psql('postgres', 'SELECT summary_states[1] FROM xip83.feed_status');
isnt($state, 'ready', "summary off on the standby: state '$state'");

# ------------------------------------------------ a summary far smaller than the topics
$standby->stop;
$standby->append_conf('postgresql.conf', "xip83.summary_memory = 1\n");
$standby->start;
$standby->poll_query_until('postgres', "SELECT xip83.group_ceiling() > $START", 't')
  or die 'the restarted standby never learned the horizons';
ok(standby_summary_ready('xip83.group_messages'),
	'a 1 kB summary (16 blocks of 7 slots for 5,040 topics) becomes ready on the standby');

# writers on the primary while randomized waves run on the standby
my $write = $primary->basedir . '/write.sql';
PostgreSQL::Test::Utils::append_to_file($write, <<'SQL');
\set g random(1, 5000)
\set r random(1, 100)
BEGIN;
INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)
    VALUES (convert_to('t' || :g, 'UTF8'), int4send(:r), uuid_send(gen_random_uuid()));
\if :r <= 3
INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)
    VALUES (nextval('late_ids'), convert_to('l' || :r, 'UTF8'), 'late', uuid_send(gen_random_uuid()));
\endif
\if :r >= 4 and :r <= 8
ROLLBACK;
\else
COMMIT;
\endif
SQL

random_waves($primary, $standby, $write, '1 kB summary, writers running', 6,
	'xip83.group_messages', 'node.pg');

# ------------------------------------------------ the default summary
$standby->stop;
$standby->append_conf('postgresql.conf', "xip83.summary_memory = 1024\n");
$standby->start;
$standby->poll_query_until('postgres', "SELECT xip83.group_ceiling() > $START", 't')
  or die 'the restarted standby never learned the horizons';
ok(standby_summary_ready('xip83.group_messages'), 'the standby builds its summary: ready');
ok(standby_summary_ready('node.pg'), 'and the tracked partitioned table\'s: ready');

$primary->wait_for_catchup($standby);
sleep 0.5;
my $on_buffers = wave_buffers($standby);
cmp_ok($on_buffers * 5, '<', $off_buffers,
	"a caught-up wave of every topic on the standby skips idle topics: "
	  . "$on_buffers buffers with the summary, $off_buffers without");

# One case: with replay paused, the primary writes (returning the id of the
# row that must come back) and the standby's floors are read; replay
# resumes, and once the standby's ceiling passed that id its wave from those
# floors must equal its definition and hold the row.
sub check_case
{
	my ($name, $source, $write_sql) = @_;
	pause_replay($standby);
	my $floors = $standby->safe_psql('postgres', "SELECT topics, floors FROM last_ids('$source')");
	# the last line: what a CALL prints comes before
	my ($id) = $primary->safe_psql('postgres', $write_sql) =~ /(\d+)\s*$/;
	$standby->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
	$primary->wait_for_catchup($standby);
	$standby->poll_query_until('postgres', "SELECT xip83.group_ceiling('$source') >= $id", 't')
	  or die "$name: the standby's ceiling never reached $id";
	# the follower's poll
	sleep 0.1;
	my ($t, $f) = split /\|/, $floors;
	my $r = $standby->safe_psql('postgres', "SELECT diff_floors('$source', '$t', '$f')");
	like($r, qr/^[1-9]\d* rows, same$/, "$name: $r");
	my $has = $standby->safe_psql('postgres',
		"SET xip83.max_page_limit = 1000000; SELECT count(*) FROM xip83.group_wave_scan('$t', '$f', 0, "
		  . "xip83.group_ceiling('$source'), 1000000, '$source') WHERE id = $id");
	is($has, '1', "$name: row $id is in the standby's wave");
}

check_case('a fresh write in an idle topic', 'xip83.group_messages',
	"INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)
	   VALUES ('t4321', 'x', 'h-fresh') RETURNING id");
check_case('a late write below the horizon', 'xip83.group_messages',
	"INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)
	   VALUES (450, 'o3', 'late', 'h-late') RETURNING id");
check_case('a deleted id written again in another topic', 'xip83.group_messages',
	"WITH d AS (DELETE FROM xip83.group_messages WHERE id = $START + 7 RETURNING *)
	   INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)
	   SELECT id, 'o4', data, group_id_data_hash FROM d RETURNING id");
check_case('an UPDATE moving a row to another topic', 'xip83.group_messages',
	"UPDATE xip83.group_messages SET group_id = 'o5' WHERE id = $START + 11 RETURNING id");
check_case('xip83.import below the horizon', 'xip83.group_messages',
	"CALL xip83.import('node.ng', 'xip83.group_messages', 40); SELECT 650");
check_case('a row written while the table was not tracked, then tracked again', 'node.pg',
	"SELECT xip83.untrack('node.pg');
	 INSERT INTO node.pg (id, group_id, data, group_id_data_hash) VALUES (250, 'n1', 'u', 'u');
	 SELECT xip83.track('node.pg', 'group');
	 SELECT 250");

# The same with the track's transaction open while the standby replays the
# reset it logs: the standby's pass starts, waits for that transaction, and
# must then read the table it could not see tracked when it started.
{
	my $floors = $standby->safe_psql('postgres', "SELECT topics, floors FROM last_ids('node.pg')");
	$primary->safe_psql('postgres', "SELECT xip83.untrack('node.pg');
		INSERT INTO node.pg (id, group_id, data, group_id_data_hash) VALUES (251, 'n2', 'u', 'u')");
	my $bg = $primary->background_psql('postgres');
	$bg->query_safe("BEGIN; SELECT xip83.track('node.pg', 'group')");
	# a commit elsewhere sends the open transaction's reset record along
	$primary->safe_psql('postgres', "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)
		VALUES ('t1', 'x', 'h-flush')");
	$primary->wait_for_catchup($standby);
	# the standby's worker begins its pass of the emptied summary meanwhile
	sleep 1.5;
	$bg->query_safe('COMMIT');
	$bg->quit;
	$primary->wait_for_catchup($standby);
	ok(standby_summary_ready('node.pg'), 'tracked again in a transaction held open: ready');
	my ($t, $f) = split /\|/, $floors;
	my $r = $standby->safe_psql('postgres', "SELECT diff_floors('node.pg', '$t', '$f')");
	like($r, qr/^[1-9]\d* rows, same$/, "tracked again in a transaction held open: $r");
	is($standby->safe_psql('postgres', "SELECT count(*) FROM xip83.group_wave_scan('{n2}', '{0}', 0, "
		  . "xip83.group_ceiling('node.pg'), 1000, 'node.pg') WHERE id = 251"),
		'1', 'tracked again in a transaction held open: row 251 is in the standby\'s wave');
}

# rows brought by ATTACH PARTITION into the gap of a tracked envelope table,
# below its horizons
{
	pause_replay($standby);
	my $floors = $standby->safe_psql('postgres', 'SELECT topics, nodes, floors FROM last_env()');
	$primary->safe_psql('postgres', <<'SQL');
CREATE TABLE node.e_p1 (LIKE node.e INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
INSERT INTO node.e_p1 (originator_node_id, originator_sequence_id, topic, originator_envelope)
    SELECT n, i, ('e' || (i * n) % 97)::bytea, '\x03' FROM generate_series(500, 599) i, unnest('{100,200}'::int[]) n;
ALTER TABLE node.e ATTACH PARTITION node.e_p1 FOR VALUES FROM (500) TO (600);
SQL
	$standby->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
	$primary->wait_for_catchup($standby);
	my ($t, $n, $f) = split /\|/, $floors;
	my $r = $standby->safe_psql('postgres', "SELECT diff_env('$t', '$n', '$f')");
	like($r, qr/^[1-9]\d* rows, same$/, "rows brought by ATTACH PARTITION below the horizons: $r");
	like($r, qr/^([2-9]\d\d|1\d\d\d)\b/, 'the attached rows are among them');
}

# an in-flight write: its transaction is open while the standby's floors are read
{
	my $bg = $primary->background_psql('postgres');
	pause_replay($standby);
	my $floors = $standby->safe_psql('postgres',
		"SELECT topics, floors FROM last_ids('xip83.group_messages')");
	my $id = $bg->query_safe(
		"BEGIN; INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)
		   VALUES ('t17', 'x', 'h-inflight') RETURNING id");
	$id =~ s/\D//g;
	$standby->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
	# the standby's floors read again while the write is in flight: replayed, not committed
	$primary->wait_for_catchup($standby);
	my $floors2 = $standby->safe_psql('postgres',
		"SELECT topics, floors FROM last_ids('xip83.group_messages')");
	$bg->query_safe('COMMIT');
	$bg->quit;
	$primary->wait_for_catchup($standby);
	$standby->poll_query_until('postgres', "SELECT xip83.group_ceiling() >= $id", 't')
	  or die 'in-flight: the standby\'s ceiling never reached the row';
	sleep 0.1;
	for my $fl ($floors, $floors2)
	{
		my ($t, $f) = split /\|/, $fl;
		my $r = $standby->safe_psql('postgres',
			"SELECT diff_floors('xip83.group_messages', '$t', '$f')");
		like($r, qr/^[1-9]\d* rows, same$/, "an in-flight write for a topic whose floor was just read: $r");
	}
}

# TRUNCATE ... RESTART IDENTITY: positions start over below what the standby followed
check_case('TRUNCATE RESTART IDENTITY of a tracked table, then new rows', 'node.pg',
	"TRUNCATE node.pg RESTART IDENTITY;
	 INSERT INTO node.pg (group_id, data, group_id_data_hash)
	   SELECT ('n' || (i % 3 + 1))::bytea, int8send(i), 'tr' FROM generate_series(1, 30) i;
	 SELECT max(id) FROM node.pg");
isnt($standby->safe_psql('postgres',
		"SELECT summary_state FROM xip83.tracked WHERE source = 'node.pg'::regclass"),
	'ready', 'after the TRUNCATE the standby no longer trusts that summary');

random_waves($primary, $standby, $write, 'default summary, writers running', 6,
	'xip83.group_messages', 'node.pg');

# ------------------------------------------------ promotion in the middle of a wave
my ($t, $f) = split /\|/, $standby->safe_psql('postgres',
	"SELECT topics, floors FROM last_ids('xip83.group_messages')");
$primary->safe_psql('postgres', <<'SQL');
INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)
    SELECT ('t' || (i * 7 % 5000 + 1))::bytea, 'p', sha256(int8send(i) || '\x02')
      FROM generate_series(1, 300) i;
INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)
    VALUES (470, 'o9', 'late', 'h-late-2');
SQL
$primary->wait_for_catchup($standby);
my $pre = $primary->safe_psql('postgres', 'SELECT xip83.group_ceiling()');
$standby->poll_query_until('postgres', "SELECT xip83.group_ceiling() >= $pre", 't')
  or die 'the standby never caught up before the promotion';
sleep 0.1;
my $cur = $standby->background_psql('postgres');
my $ceil = $standby->safe_psql('postgres', 'SELECT xip83.group_ceiling()');
$cur->query_safe("BEGIN; DECLARE w CURSOR FOR SELECT id FROM xip83.group_wave_stream('$t', '$f', 0, $ceil)");
my @got = split /\n/, $cur->query_safe('FETCH 50 FROM w');

# Rows the standby replays above every horizon it learned, the first after
# the next notice of the primary's notifier.
hold_horizons($primary, $standby);
my $w1 = $primary->safe_psql('postgres', "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)
    VALUES ('t1', 'w1', 'h-w1') RETURNING id");
$standby->poll_query_until('postgres', "SELECT xip83.group_ceiling() >= $w1", 't')
  or die 'the standby never learned the horizon of the last row before the pause';
sleep 0.1;
my ($t2, $f2) = split /\|/, $standby->safe_psql('postgres',
	"SELECT topics, floors FROM last_ids('xip83.group_messages')");
my $scanned = $standby->safe_psql('postgres', 'SELECT summary_rows[1] FROM xip83.feed_status');
my $w2 = $primary->safe_psql('postgres', <<'SQL');
INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)
    SELECT ('t' || (4000 + i))::bytea, 'w2', sha256(int8send(i) || '\x05') FROM generate_series(1, 40) i;
INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash) VALUES ('n2', 'w2', 'h-w2');
SELECT max(id) FROM xip83.group_messages;
SQL
$primary->wait_for_catchup($standby);
cmp_ok($standby->safe_psql('postgres', 'SELECT xip83.group_ceiling()'), '<', $w2 - 40,
	'the standby replayed 41 rows above every horizon it learned');
promote_keeping($primary, $standby, 1, 'summary');
# waves in the first moments after the promotion, while the kept summary
# reads what lies above the horizons it followed
for my $i (1 .. 5)
{
	like($standby->safe_psql('postgres', "SELECT diff_random('xip83.group_messages', 0.$i)"),
		qr/same$/, "randomized wave $i right after the promotion");
}
push @got, split /\n/, $cur->query_safe('FETCH ALL FROM w');
$cur->query_safe('COMMIT');
$cur->quit;
my @want = split /\n/, $standby->safe_psql('postgres',
	"SELECT id FROM xip83.group_messages m WHERE id <= $ceil AND EXISTS
	   (SELECT 1 FROM unnest('$t'::bytea[], '$f'::bigint[]) f(t, fl) WHERE f.t = m.group_id AND m.id > f.fl)
	 ORDER BY id");
ok(@want > 300, 'the wave across the promotion has rows to return: ' . scalar(@want));
is_deeply(\@got, \@want, 'a wave opened on the standby and finished after its promotion equals its definition');
like($standby->safe_psql('postgres', "SELECT diff_floors('xip83.group_messages', '$t', '$f')"),
	qr/same$/, 'a wave after the promotion with floors from before it');
$standby->safe_psql('postgres', <<'SQL');
INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash) VALUES ('t99', 'after', 'h-after');
SQL
like($standby->safe_psql('postgres', "SELECT diff_floors('xip83.group_messages', '$t', '$f')"),
	qr/same$/, 'and after a write on the promoted node');

# the kept summary covers every position once it read the rows above the
# horizons it followed: a caught-up wave skips idle topics, no pass ran
my $promoted_buffers;
for (1 .. 100)
{
	$promoted_buffers = wave_buffers($standby);
	last if $promoted_buffers * 5 < $off_buffers;
	sleep 0.1;
}
cmp_ok($promoted_buffers * 5, '<', $off_buffers,
	"a caught-up wave on the promoted node skips idle topics without a pass: "
	  . "$promoted_buffers buffers, $off_buffers without the summary");
is($standby->safe_psql('postgres', 'SELECT summary_states[1], summary_rows[1] FROM xip83.feed_status'),
	"ready|$scanned", 'the summary the standby built, kept: no pass read it again');
like($standby->safe_psql('postgres', "SELECT diff_floors('xip83.group_messages', '$t2', '$f2')"),
	qr/^(4[1-9]|[5-9]\d|\d{3,}) rows, same$/,
	'the rows replayed above the last horizon the standby learned are in the promoted node\'s waves');

# writers on the promoted node: fresh rows in idle topics, late writes, topic
# UPDATEs and deleted ids written again, then randomized waves, in rounds (a
# wave and its definition read at different moments: rows moved meanwhile
# would differ)
my $moves = $standby->basedir . '/moves.sql';
PostgreSQL::Test::Utils::append_to_file($moves, <<'SQL');
\set g random(1, 5000)
\set r random(4, 9)
\if :r <= 6
UPDATE xip83.group_messages SET group_id = convert_to('o' || :r, 'UTF8')
 WHERE id = (SELECT max(id) FROM xip83.group_messages) - :g;
\else
WITH d AS (DELETE FROM xip83.group_messages WHERE id = (SELECT max(id) FROM xip83.group_messages) - :g RETURNING *)
INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)
    SELECT id, convert_to('o' || :r, 'UTF8'), data, group_id_data_hash FROM d;
\endif
SQL
my ($rounds_bad, $rounds_waves) = (0, 0);
for my $round (1 .. 6)
{
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'pgbench', '-n', '-c', '4', '-j', '2', '-t', '60', '-f', "$write\@4", '-f', "$moves\@1",
			'-h', $standby->host, '-p', $standby->port, 'postgres' ], '>', \$out, '2>', \$err)
	  or die "pgbench on the promoted node: $err";
	for my $seed (1 .. 3)
	{
		my $r = $standby->safe_psql('postgres',
			"SELECT diff_random('xip83.group_messages', 0.$round$seed)");
		$rounds_waves++;
		next if $r =~ /same$/;
		$rounds_bad++;
		diag("promoted node, round $round seed $seed: $r");
	}
}
is($rounds_bad, 0,
	"$rounds_waves randomized waves on the promoted node, after fresh, late, moved and re-inserted rows, equal their definition");

$standby->stop;
done_testing();
