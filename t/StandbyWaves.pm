# StandbyWaves: what the hot-standby summary tests share (t/005, t/006).
#
# A primary writes through pgbench while waves run on its standby, replay is
# paused around single writes, and a plan's shared buffers tell whether a
# wave skipped idle topics. Each test defines its own SQL helpers
# (diff_random and the like) in the database.
package StandbyWaves;

use strict;
use warnings;
use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Cluster;
use Test::More;
use Time::HiRes qw(sleep);

our @EXPORT = qw(start_primary start_standby envelope_table_sql verdict_sql plan_buffers summary_ready pause_replay random_waves hold_horizons promote_keeping);

# A primary with xip83 preloaded that a standby can stream from, started.
sub start_primary
{
	my $primary = PostgreSQL::Test::Cluster->new('primary');
	$primary->init(allows_streaming => 1);
	$primary->append_conf('postgresql.conf', <<'CONF');
shared_preload_libraries = 'xip83'
timezone = 'UTC'
max_connections = 40
hot_standby_feedback = on
CONF
	$primary->start;
	return $primary;
}

# A streaming standby of a fresh backup of $primary, with that summary_memory (kB), started.
sub start_standby
{
	my ($primary, $summary_kb) = @_;
	$primary->backup('base');
	my $standby = PostgreSQL::Test::Cluster->new('standby');
	$standby->init_from_backup($primary, 'base', has_streaming => 1);
	$standby->append_conf('postgresql.conf', "xip83.summary_memory = $summary_kb\n");
	$standby->start;
	return $standby;
}

# A node's envelope table node.e, RANGE partitioned by sequence id with a gap
# (500 to 600) below $upper, rows of originators 100 and 200, tracked.
sub envelope_table_sql
{
	my ($upper) = @_;
	return <<"SQL";
CREATE TABLE node.e (
    originator_node_id int NOT NULL, originator_sequence_id bigint NOT NULL,
    topic bytea NOT NULL, gateway_time timestamp NOT NULL DEFAULT now(),
    expiry bigint NOT NULL DEFAULT 0, payer_id int, originator_envelope bytea NOT NULL,
    PRIMARY KEY (originator_node_id, originator_sequence_id)) PARTITION BY RANGE (originator_sequence_id);
CREATE INDEX ON node.e (topic, originator_node_id, originator_sequence_id);
CREATE TABLE node.e_p0 PARTITION OF node.e FOR VALUES FROM (0) TO (500);
CREATE TABLE node.e_p2 PARTITION OF node.e FOR VALUES FROM (600) TO ($upper);
INSERT INTO node.e (originator_node_id, originator_sequence_id, topic, originator_envelope)
    SELECT n, i, ('e' || (i * n) % 97)::bytea, '\\x01'
      FROM generate_series(1, 1000) i, unnest('{100,200}'::int[]) n WHERE i < 450 OR i >= 600;
SELECT xip83.track('node.e', 'envelope');
SQL
}

# verdict(before, got, after): a wave (got) read between two reads of its
# definition, "N rows, same" when it holds every row of the first read, only
# rows of the second (N), none twice. Rows the second read adds at or below
# the ceiling are late writes that committed meanwhile: a wave need not have
# them, the live feed's late lane brings them. A fresh row at or below the
# ceiling committed before the ceiling was read, so the first read has it.
sub verdict_sql
{
	return <<'SQL';
CREATE FUNCTION verdict(before anyarray, got anyarray, after anyarray) RETURNS text LANGUAGE sql AS $$
  SELECT format('%s rows, %s', coalesce(cardinality(after), 0),
                CASE WHEN missing = '{}' AND extra = '{}' AND twice = 0 THEN 'same'
                     ELSE format('DIFFERENT: missing %s, extra %s, %s twice', missing, extra, twice) END)
    FROM (SELECT ARRAY(SELECT unnest(before) EXCEPT SELECT unnest(got))::text missing,
                 ARRAY(SELECT unnest(got) EXCEPT SELECT unnest(after))::text extra,
                 coalesce(cardinality(got), 0) - (SELECT count(DISTINCT g) FROM unnest(got) g) twice) v
$$;
SQL
}

# Shared buffers (hit and read) a query's plan touched on a node.
sub plan_buffers
{
	my ($node, $query) = @_;
	my $plan = $node->safe_psql('postgres',
		"SET xip83.max_page_limit = 1000000; "
		  . "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON, COSTS OFF) $query");
	my ($hit) = $plan =~ /"Shared Hit Blocks": (\d+)/;
	my ($read) = $plan =~ /"Shared Read Blocks": (\d+)/;
	return ($hit // 0) + ($read // 0);
}

# Waits until $state (a query) reads 'ready'; the wave asks for the pass.
sub summary_ready
{
	my ($node, $wave, $state) = @_;
	return $node->poll_query_until('postgres',
		"SELECT CASE WHEN (SELECT count(*) FROM $wave) >= 0 THEN ($state) END", 'ready');
}

sub pause_replay
{
	my ($standby) = @_;
	$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
	$standby->poll_query_until('postgres', 'SELECT pg_get_wal_replay_pause_state()', 'paused')
	  or die 'replay did not pause';
}

# Before a promotion: rows the primary writes from now on reach the standby
# above every horizon it learned (the primary's notifier pauses a minute
# after its next notice and sends no heartbeat), and a pass on the standby
# would read 1 row a second, so a summary that stays ready was kept, not
# rebuilt.
sub hold_horizons
{
	my ($primary, $standby) = @_;
	$standby->append_conf('postgresql.conf', "xip83.summary_pass_rows_per_s = 1\n");
	$standby->reload;
	$primary->append_conf('postgresql.conf',
		"xip83.notify_interval_ms = 60000\nxip83.notify_busy_interval_ms = 60000\n"
		  . "xip83.notify_heartbeat_ms = 3600000\n");
	$primary->reload;
	sleep 0.5;
	return;
}

# Stops the primary at once and promotes the standby, checking that the
# summary in column $col of feed_status.summary_states ($what) is ready
# before and right after the promotion.
sub promote_keeping
{
	my ($primary, $standby, $col, $what) = @_;
	my $state = "SELECT summary_states[$col] FROM xip83.feed_status";
	Test::More::is($standby->safe_psql('postgres', $state), 'ready',
		"the standby's $what is ready before the promotion");
	$primary->stop('immediate');
	$standby->promote;
	Test::More::is($standby->safe_psql('postgres', $state), 'ready',
		"the promoted node's $what is ready right after the promotion");
	return;
}

# For $seconds, pgbench runs $script on the primary (4 clients) while the
# standby compares randomized waves of each source with their definition
# (diff_random(source, seed) ends in "same" when they agree).
sub random_waves
{
	my ($primary, $standby, $script, $label, $seconds, @sources) = @_;
	my ($out, $err) = ('', '');
	my $pgbench = IPC::Run::start(
		[
			'pgbench', '-n', '-c', '4', '-j', '2', '-T', $seconds, '-f', $script,
			'-h', $primary->host, '-p', $primary->port, 'postgres'
		],
		'>', \$out, '2>', \$err);
	my ($waves, $bad) = (0, 0);
	my $until = time + $seconds;
	while (time < $until)
	{
		my $seed = ($waves % 97) / 100.0;
		for my $source (@sources)
		{
			my $r = $standby->safe_psql('postgres', "SELECT diff_random('$source', $seed)");
			$waves++;
			if ($r !~ /same$/)
			{
				$bad++;
				diag("$label: $source seed $seed: $r");
			}
		}
	}
	$pgbench->finish;
	is($bad, 0, "$label: $waves randomized waves on the standby equal their definition");
}

1;
