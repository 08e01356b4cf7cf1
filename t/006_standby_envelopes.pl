# The topic summary of envelopes on a hot standby: built from the standby's
# own rows, followed per originator as replay advances, never the cause of a
# skipped row.
#
# The standby's envelope summary says 'ready' (xip83.envelopes and a tracked,
# partitioned envelope table), and a caught-up d14n wave of 3,000 idle
# (topic, originator) pairs reads far fewer buffers than it has pairs. Then,
# with replay paused while the primary writes and the standby's floors are
# read, each way a row arrives below what the standby may have summarized: a
# fresh write in an idle pair, a new originator, a late write below its
# originator's horizon, a deleted key written again in another topic, an
# UPDATE of a row's topic, xip83.import, rows brought by ATTACH PARTITION,
# and TRUNCATE. Each wave is compared row for row with its SQL definition,
# as are randomized waves while 4 writers run with several originators, with
# a summary far smaller than the pairs.
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

my $START = 100_000;	# fresh sequence ids start above; old topics and late ids are below

my $primary = start_primary();
$primary->safe_psql('postgres', <<"SQL");
CREATE EXTENSION xip83;
-- 1,000 topics for each of originators 100, 200, 300 above $START, and
-- old topics o1..o20 with sequence ids 1..200: below every late id
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
    SELECT n, i, ('o' || (i % 20 + 1))::bytea, '\\x01'
      FROM generate_series(1, 200) i, unnest('{100,200,300}'::int[]) n;
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
    SELECT n, $START + i, ('t' || i)::bytea, '\\x01'
      FROM generate_series(1, 1000) i, unnest('{100,200,300}'::int[]) n;
CREATE SEQUENCE seq100 START ${\($START + 2000)};
CREATE SEQUENCE seq200 START ${\($START + 2000)};
CREATE SEQUENCE late_ids START 300;

CREATE SCHEMA node;
${\ envelope_table_sql(1000000)}
${\ verdict_sql()}
-- a pair with no row above 460 until the ATTACH below brings some
INSERT INTO node.e (originator_node_id, originator_sequence_id, topic, originator_envelope)
    VALUES (100, 460, 'att', '\\x01'), (200, 460, 'att', '\\x01');

-- a d14n node's table for xip83.import: sequence ids between the old topics and the fresh rows
CREATE TABLE node.ne (
    originator_node_id int NOT NULL, originator_sequence_id bigint NOT NULL,
    topic bytea NOT NULL, gateway_time timestamp NOT NULL DEFAULT now(),
    expiry bigint, payer_id int, originator_envelope bytea NOT NULL,
    PRIMARY KEY (originator_node_id, originator_sequence_id));
INSERT INTO node.ne (originator_node_id, originator_sequence_id, topic, originator_envelope)
    SELECT 200, i, ('o' || (i % 7 + 10))::bytea, '\\x01' FROM generate_series(600, 699) i;

-- floors of a caught-up wave: every (topic, originator) at its last sequence
-- id below below, and 'n1', 'n2' of originators 100 and 400 at 0
CREATE FUNCTION last_env(source regclass, below bigint DEFAULT 9223372036854775807,
                         OUT topics bytea[], OUT nodes int[], OUT floors bigint[])
LANGUAGE plpgsql AS \$\$
BEGIN
  EXECUTE format('SELECT array_agg(t ORDER BY t, n), array_agg(n ORDER BY t, n), array_agg(f ORDER BY t, n) FROM ('
                 ' SELECT topic t, originator_node_id n, max(originator_sequence_id) f FROM %s'
                 '  WHERE originator_sequence_id < \$1 GROUP BY 1, 2'
                 ' UNION ALL SELECT ''n1''::bytea, 100, 0 UNION ALL SELECT ''n2''::bytea, 400, 0) x', source)
    INTO topics, nodes, floors USING below;
END \$\$;
-- the wave from those floors at the current ceilings between two reads of its definition
CREATE FUNCTION diff_env(source regclass, topics bytea[], nodes int[], floors bigint[]) RETURNS text
LANGUAGE plpgsql AS \$\$
DECLARE cn int[]; cs bigint[]; got text[]; before text[]; after text[];
  def text := format('SELECT array_agg(m.originator_node_id || '':'' || m.originator_sequence_id)'
                     ' FROM %s m JOIN unnest(\$4, \$5) c(node, ceil) ON c.node = m.originator_node_id'
                     ' WHERE m.originator_sequence_id <= c.ceil AND EXISTS (SELECT 1 FROM unnest(\$1, \$2, \$3) f(t, n, fl)'
                     '  WHERE f.t = m.topic AND f.n = m.originator_node_id AND m.originator_sequence_id > f.fl)', source);
BEGIN
  PERFORM set_config('xip83.max_page_limit', '1000000', true);
  SELECT array_agg(originator_node_id), array_agg(max_sequence_id) INTO cn, cs
    FROM xip83.originator_ceilings(NULL, source);
  EXECUTE def INTO before USING topics, nodes, floors, cn, cs;
  SELECT array_agg(originator_node_id || ':' || originator_sequence_id) INTO got
    FROM xip83.envelope_wave_scan(topics, nodes, floors, cn, cs, 0, 0, 1000000, source);
  EXECUTE def INTO after USING topics, nodes, floors, cn, cs;
  RETURN verdict(before, got, after);
END \$\$;
-- a randomized wave: floors at, near or far below each pair's last sequence id
CREATE FUNCTION diff_random(source regclass, seed float8) RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE topics bytea[]; nodes int[]; floors bigint[];
BEGIN
  PERFORM setseed(seed);
  EXECUTE format('SELECT array_agg(t ORDER BY t, n), array_agg(n ORDER BY t, n), array_agg(fl ORDER BY t, n) FROM ('
                 ' SELECT topic t, originator_node_id n, CASE WHEN random() < 0.6 THEN max(originator_sequence_id)'
                 '   WHEN random() < 0.5 THEN max(originator_sequence_id) - 2'
                 '   ELSE (max(originator_sequence_id) * random())::bigint END fl FROM %s GROUP BY 1, 2) x', source)
    INTO topics, nodes, floors;
  RETURN diff_env(source, topics, nodes, floors);
END \$\$;
-- the highest sequence id of an originator the standby's ceilings allow
CREATE FUNCTION ceil_of(source regclass, node int) RETURNS bigint LANGUAGE sql AS \$\$
  SELECT max_sequence_id FROM xip83.originator_ceilings(NULL, source) WHERE originator_node_id = node
\$\$;
SQL

my $standby = start_standby($primary, 1);

# the notifier logs a feed's every line after a checkpoint
sub learn_horizons
{
	my ($first) = @_;
	$primary->safe_psql('postgres', "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
	    VALUES (100, $START + 1500, 't1', '\\x01');
	  INSERT INTO node.e (originator_node_id, originator_sequence_id, topic, originator_envelope)
	    VALUES (100, 5000, 'e1', '\\x01'), (200, 5000, 'e2', '\\x01')") if $first;
	$primary->safe_psql('postgres', 'CHECKPOINT');
	$standby->poll_query_until('postgres',
		"SELECT count(*) >= 3 FROM xip83.originator_ceilings(NULL, 'xip83.envelopes')", 't')
	  or die 'the standby never learned the envelope horizons';
	$standby->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM xip83.originator_ceilings(NULL, 'node.e')", 't')
	  or die 'the standby never learned the tracked table\'s horizons';
}
learn_horizons(1);

# Waits until the standby's envelope summary of a feed is ready; a wave asks for the pass.
sub standby_summary_ready
{
	my ($source) = @_;
	my $state = $source eq 'xip83.envelopes'
	  ? 'SELECT summary_states[3] FROM xip83.feed_status'
	  : "SELECT summary_state FROM xip83.tracked WHERE source = '$source'::regclass";
	return summary_ready($standby,
		"xip83.envelope_wave_scan('{x}', '{100}', '{0}', '{100}', '{1}', 0, 0, 1, '$source')", $state);
}

ok(standby_summary_ready('xip83.envelopes'),
	'a 1 kB envelope summary (16 blocks of 7 slots for 3,060 pairs) becomes ready on the standby');

# writers on the primary with two originators (and late ids of a third) while
# randomized waves run on the standby
my $write = $primary->basedir . '/write.sql';
PostgreSQL::Test::Utils::append_to_file($write, <<'SQL');
\set g random(1, 1000)
\set r random(1, 100)
BEGIN;
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
    VALUES (100, nextval('seq100'), convert_to('t' || :g, 'UTF8'), int4send(:r));
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
    VALUES (200, nextval('seq200'), convert_to('t' || (:g * 7 % 1000 + 1), 'UTF8'), int4send(:r));
\if :r <= 3
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
    VALUES (300, nextval('late_ids'), convert_to('l' || :r, 'UTF8'), 'late');
\endif
\if :r >= 4 and :r <= 8
ROLLBACK;
\else
COMMIT;
\endif
SQL

random_waves($primary, $standby, $write, '1 kB summary, writers running', 6, 'xip83.envelopes');

# ------------------------------------------------ the default summary
$standby->stop;
$standby->append_conf('postgresql.conf', "xip83.summary_memory = 1024\n");
$standby->start;
learn_horizons();
ok(standby_summary_ready('xip83.envelopes'), 'the standby builds its envelope summary: ready');
ok(standby_summary_ready('node.e'), 'and the tracked partitioned envelope table\'s: ready');

# Shared buffers a caught-up wave of every pair reads on the standby, and the pairs.
sub wave_buffers
{
	my ($t, $n, $f) = split /\|/, $standby->safe_psql('postgres',
		"SELECT topics, nodes, floors FROM last_env('xip83.envelopes')");
	my $buffers = plan_buffers($standby,
		"SELECT count(*) FROM xip83.envelope_wave_scan('$t', '$n', '$f', "
		  . "(SELECT array_agg(originator_node_id) FROM xip83.originator_ceilings()), "
		  . "(SELECT array_agg(max_sequence_id) FROM xip83.originator_ceilings()), 0, 0, 1000000)");
	my @pairs = split /,/, $n;
	return ($buffers, scalar(@pairs));
}

# What a wave that has not settled reads per originator, and the standby's state.
sub diag_unsettled
{
	my $state = $standby->safe_psql('postgres',
		"SELECT row_to_json(f) FROM xip83.feed_status f");
	my $ceilings = $standby->safe_psql('postgres',
		"SELECT originator_node_id || ':' || max_sequence_id FROM xip83.originator_ceilings()");
	my @per;
	for my $node (split /\n/, $standby->safe_psql('postgres',
		"SELECT originator_node_id FROM xip83.originator_ceilings()"))
	{
		my ($t, $n, $f) = split /\|/, $standby->safe_psql('postgres',
			"SELECT array_agg(t), array_agg(n), array_agg(f) FROM last_env('xip83.envelopes') l,"
			  . " unnest(l.topics, l.nodes, l.floors) u(t, n, f) WHERE n = $node");
		next unless length $t;
		push @per, "$node: " . plan_buffers($standby,
			"SELECT count(*) FROM xip83.envelope_wave_scan('$t', '$n', '$f', "
			  . "(SELECT array_agg(originator_node_id) FROM xip83.originator_ceilings()), "
			  . "(SELECT array_agg(max_sequence_id) FROM xip83.originator_ceilings()), 0, 0, 1000000)");
	}
	diag("not settled: $state\nceilings " . join(' ', split /\n/, $ceilings)
		  . "\nbuffers by originator " . join(', ', @per));
}

# The same once the follower covered what replay brought (a line's "no" is
# trusted only up to what it covers), or after 30 s.
sub settled_wave_buffers
{
	my ($buffers, $pairs);
	for (1 .. 300)
	{
		($buffers, $pairs) = wave_buffers();
		last if $buffers * 2 < $pairs;
		sleep 0.1;
	}
	diag_unsettled() unless $buffers * 2 < $pairs;
	return ($buffers, $pairs);
}

$primary->wait_for_catchup($standby);
sleep 0.5;
my ($buffers, $pairs) = wave_buffers();
cmp_ok($buffers * 2, '<', $pairs,
	"a caught-up d14n wave on the standby skips idle pairs: $buffers buffers for $pairs pairs");

# One case: with replay paused, the primary writes (returning the node and
# sequence id of the row that must come back) and the standby's floors are
# read; replay resumes, and once the standby's ceiling of that originator
# passed the row its wave from those floors must equal its definition and
# hold the row.
sub check_case
{
	my ($name, $source, $write_sql, $below) = @_;
	$below //= '9223372036854775807';
	pause_replay($standby);
	my $floors = $standby->safe_psql('postgres',
		"SELECT topics, nodes, floors FROM last_env('$source', $below)");
	# the last line: what a CALL prints comes before
	my ($node, $seq) = $primary->safe_psql('postgres', $write_sql) =~ /(\d+)\|(\d+)\s*$/;
	$standby->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
	$primary->wait_for_catchup($standby);
	$standby->poll_query_until('postgres', "SELECT ceil_of('$source', $node) >= $seq", 't')
	  or die "$name: the standby's ceiling of $node never reached $seq";
	# the follower's poll
	sleep 0.1;
	my ($t, $n, $f) = split /\|/, $floors;
	my $r = $standby->safe_psql('postgres', "SELECT diff_env('$source', '$t', '$n', '$f')");
	like($r, qr/^[1-9]\d* rows, same$/, "$name: $r");
	my $has = $standby->safe_psql('postgres',
		"SET xip83.max_page_limit = 1000000; SELECT count(*) FROM xip83.envelope_wave_scan('$t', '$n', '$f', "
		  . "'{$node}', ARRAY[ceil_of('$source', $node)], 0, 0, 1000000, '$source') "
		  . "WHERE originator_node_id = $node AND originator_sequence_id = $seq");
	is($has, '1', "$name: row $node:$seq is in the standby's wave");
}

check_case('a fresh write in an idle pair', 'xip83.envelopes',
	"INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
	   VALUES (100, nextval('seq100'), 't432', 'x') RETURNING originator_node_id, originator_sequence_id");
check_case('a new originator', 'xip83.envelopes',
	"INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
	   VALUES (400, 7, 'n2', 'x') RETURNING originator_node_id, originator_sequence_id");
check_case('a late write below its originator\'s horizon', 'xip83.envelopes',
	"INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
	   VALUES (100, 450, 'o3', 'late') RETURNING originator_node_id, originator_sequence_id");
check_case('a deleted key written again in another topic', 'xip83.envelopes',
	"WITH d AS (DELETE FROM xip83.envelopes WHERE (originator_node_id, originator_sequence_id) = (200, $START + 7) RETURNING *)
	   INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
	   SELECT originator_node_id, originator_sequence_id, 'o4', originator_envelope FROM d
	   RETURNING originator_node_id, originator_sequence_id");
check_case('an UPDATE moving a row to another topic', 'xip83.envelopes',
	"UPDATE xip83.envelopes SET topic = 'o5' WHERE (originator_node_id, originator_sequence_id) = (300, $START + 11)
	   RETURNING originator_node_id, originator_sequence_id");
check_case('xip83.import below the horizon', 'xip83.envelopes',
	"CALL xip83.import('node.ne', 'xip83.envelopes', 40); SELECT 200, 650");

# rows brought by ATTACH PARTITION into the gap of a tracked envelope table,
# below its horizons: floors of the pairs' last sequence ids below the gap; the
# 'att' pairs have no other row above their floor, so only a raise finds them
check_case('rows brought by ATTACH PARTITION below the horizons', 'node.e', <<'SQL', 500);
CREATE TABLE node.e_p1 (LIKE node.e INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
INSERT INTO node.e_p1 (originator_node_id, originator_sequence_id, topic, originator_envelope)
    SELECT n, i, CASE WHEN i < 510 THEN 'att' ELSE 'e' || (i * n) % 97 END::bytea, '\x03'
      FROM generate_series(500, 599) i, unnest('{100,200}'::int[]) n;
ALTER TABLE node.e ATTACH PARTITION node.e_p1 FOR VALUES FROM (500) TO (600);
SELECT 100, 505;
SQL

# TRUNCATE: sequence ids start over below what the standby followed
check_case('TRUNCATE of a tracked envelope table, then new rows', 'node.e',
	"TRUNCATE node.e;
	 INSERT INTO node.e (originator_node_id, originator_sequence_id, topic, originator_envelope)
	   SELECT 100, i, ('n' || (i % 2 + 1))::bytea, 'tr' FROM generate_series(1, 30) i;
	 SELECT 100, 30");
isnt($standby->safe_psql('postgres',
		"SELECT summary_state FROM xip83.tracked WHERE source = 'node.e'::regclass"),
	'ready', 'after the TRUNCATE the standby no longer trusts that summary');

random_waves($primary, $standby, $write, 'default summary, writers running', 6, 'xip83.envelopes');

# a crash of the standby while it follows replay: the summary is rebuilt from
# its rows before a wave trusts it again
$standby->stop('immediate');
$standby->start;
$primary->safe_psql('postgres', 'CHECKPOINT');
$standby->poll_query_until('postgres',
	"SELECT count(*) >= 3 FROM xip83.originator_ceilings(NULL, 'xip83.envelopes')", 't')
  or die 'the restarted standby never learned the envelope horizons';
ok(standby_summary_ready('xip83.envelopes'), 'after a crash restart the standby rebuilds its envelope summary');
random_waves($primary, $standby, $write, 'after a crash restart, writers running', 6, 'xip83.envelopes');

# ------------------------------------------------ a crash restart in the middle of the pass
# after a restart: xip83.envelopes' horizons (node.e keeps one originator since its TRUNCATE)
sub learn_envelope_horizons
{
	$primary->safe_psql('postgres', 'CHECKPOINT');
	$standby->poll_query_until('postgres',
		"SELECT count(*) >= 4 FROM xip83.originator_ceilings(NULL, 'xip83.envelopes')", 't')
	  or die 'the restarted standby never learned the envelope horizons';
}

# 10,000 rows of a fifth originator, so that the pass reads in several
# chunks; at 500 rows a second it sleeps after the first
$primary->safe_psql('postgres', "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
    SELECT 500, i, ('c' || i % 500)::bytea, '\\x01' FROM generate_series(1, 10000) i");
$primary->wait_for_catchup($standby);
$standby->append_conf('postgresql.conf', "xip83.summary_pass_rows_per_s = 500\n");
$standby->restart;
learn_envelope_horizons();
ok( $standby->poll_query_until('postgres',
		"SELECT CASE WHEN (SELECT count(*) FROM xip83.envelope_wave_scan('{x}', '{100}', '{0}', '{100}', '{1}', 0, 0, 1)) >= 0 "
		  . "THEN (SELECT summary_states[3] = 'building' AND summary_rows[3] > 0 FROM xip83.feed_status) END", 't'),
	'the standby\'s pass reads');
# rows of every kind the pass must not miss arrive while it reads, then it crashes
$primary->safe_psql('postgres', "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
    VALUES (100, nextval('seq100'), 't3', 'mid'), (300, nextval('late_ids'), 'o4', 'late'), (500, 10001, 'c7', 'mid')");
$primary->wait_for_catchup($standby);
$standby->stop('immediate');
$standby->append_conf('postgresql.conf', "xip83.summary_pass_rows_per_s = 0\n");
$standby->start;
learn_envelope_horizons();
ok(standby_summary_ready('xip83.envelopes'),
	'after a crash restart in the middle of its pass the standby builds its envelope summary again');
($buffers, $pairs) = settled_wave_buffers();
cmp_ok($buffers * 2, '<', $pairs,
	"and a caught-up d14n wave skips idle pairs again: $buffers buffers for $pairs pairs");
random_waves($primary, $standby, $write, 'after a crash restart in the pass, writers running', 4,
	'xip83.envelopes');

# ------------------------------------------------ promotion
# Rows the standby replays above every originator horizon it learned (the
# first after the next notice of the primary's notifier), one of an
# originator the standby never heard of.
hold_horizons($primary, $standby);
my $w1 = $primary->safe_psql('postgres', "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
    VALUES (100, nextval('seq100'), 't1', 'w1') RETURNING originator_sequence_id");
$standby->poll_query_until('postgres', "SELECT ceil_of('xip83.envelopes', 100) >= $w1", 't')
  or die 'the standby never learned the horizon of the last row before the pause';
sleep 0.1;
my $floors = $standby->safe_psql('postgres', "SELECT topics, nodes, floors FROM last_env('xip83.envelopes')");
my $scanned = $standby->safe_psql('postgres', 'SELECT summary_rows[3] FROM xip83.feed_status');
$primary->safe_psql('postgres', <<'SQL');
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
    SELECT n, nextval('seq' || n), ('t' || (900 + i))::bytea, 'w2'
      FROM generate_series(1, 20) i, unnest('{100,200}'::int[]) n;
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
    VALUES (400, 1, 'n2', 'w2');
SQL
$primary->wait_for_catchup($standby);
cmp_ok($standby->safe_psql('postgres', "SELECT ceil_of('xip83.envelopes', 100)"), '<=', $w1,
	'the standby replayed rows above every horizon it learned');
promote_keeping($primary, $standby, 3, 'envelope summary');
for my $i (1 .. 5)
{
	like($standby->safe_psql('postgres', "SELECT diff_random('xip83.envelopes', 0.$i)"),
		qr/same$/, "randomized d14n wave $i right after the promotion");
}
($buffers, $pairs) = settled_wave_buffers();
cmp_ok($buffers * 2, '<', $pairs,
	"a caught-up d14n wave on the promoted node skips idle pairs without a pass: $buffers buffers for $pairs pairs");
is($standby->safe_psql('postgres', 'SELECT summary_states[3], summary_rows[3] FROM xip83.feed_status'),
	"ready|$scanned", 'the envelope summary the standby built, kept: no pass read it again');
my ($t, $n, $f) = split /\|/, $floors;
like($standby->safe_psql('postgres', "SELECT diff_env('xip83.envelopes', '$t', '$n', '$f')"),
	qr/^(4[1-9]|[5-9]\d|\d{3,}) rows, same$/,
	'the rows replayed above the horizons the standby learned, and a new originator\'s, are in the promoted node\'s waves');
$standby->safe_psql('postgres', "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
    VALUES (100, nextval('seq100'), 't950', 'after'), (300, nextval('late_ids'), 'o2', 'late'), (400, 2, 'n2', 'after')");
like($standby->safe_psql('postgres', "SELECT diff_env('xip83.envelopes', '$t', '$n', '$f')"),
	qr/same$/, 'and after fresh and late writes on the promoted node');

$standby->stop;
done_testing();
