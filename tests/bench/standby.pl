# Read replicas and scale-out, measured (docs/scale-out.md has the numbers).
#
#   bash tests/bench/standby.sh        (a primary and a streaming standby of
#                                       the private install, then N shards)
#
# 1. Fence wait against replay lag: under 8 pgbench writers, a consumer reads
#    (horizon, fence) on the primary, then times on the standby (a) an empty
#    fenced live fetch, which waits for replay to pass the fence, and (b) a
#    loop that polls pg_last_wal_replay_lsn() until it passes the same kind
#    of fence: the replay lag of that position. Both are client-side times of
#    one statement, so the round trip is in both (and shown alone).
# 2. Extra WAL per notice: bytes of xip83 HORIZONS records (pg_waldump
#    --stats=record) over the notices sent in the same WAL range.
# 3. Page cost: a live fetch of 1000 rows on the primary, on the standby with
#    its own horizons, and fenced with a fence already replayed.
# 4. Coordinator merge: a d14n wave over 64 topics from one table, and from
#    N databases holding the envelopes sharded by topic, merged k-way by
#    (originator, sequence) in the client, page by page.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time);
use List::Util qw(sum);

my $SHARDS = $ENV{XIP83_BENCH_SHARDS} // 4;
my $SAMPLES = $ENV{XIP83_BENCH_SAMPLES} // 300;

sub pct
{
	my ($p, @v) = @_;
	@v = sort { $a <=> $b } @v;
	return $v[ int($p / 100 * $#v + 0.5) ];
}

sub ms { return sprintf('%.2f', 1000 * $_[0]); }

my $primary = PostgreSQL::Test::Cluster->new('bench_primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', <<'CONF');
shared_preload_libraries = 'xip83'
max_connections = 60
hot_standby_feedback = on
wal_keep_size = 4GB
CONF
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION xip83; SELECT xip83.group_horizon()');
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('bench_standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;
$standby->poll_query_until('postgres', 'SELECT xip83.group_horizon() >= 0', 't');

my $write = $primary->basedir . '/write.sql';
PostgreSQL::Test::Utils::append_to_file($write, <<'SQL');
\set g random(1, 50)
INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)
    VALUES (int4send(:g), repeat('x', 200)::bytea, uuid_send(gen_random_uuid()));
SQL
my $seconds = 20;
my ($pgb_out, $pgb_err) = ('', '');
my $lsn0 = $primary->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
my $ticks0 = $primary->safe_psql('postgres', 'SELECT ticks FROM xip83.feed_status');
my $pgbench = IPC::Run::start(
	[
		'pgbench', '-n', '-c', '8', '-j', '2', '-T', $seconds, '-f', $write,
		'-h', $primary->host, '-p', $primary->port, 'postgres'
	],
	'>', \$pgb_out, '2>', \$pgb_err);
sleep 1;

my $ps = $primary->background_psql('postgres');
my $ss = $standby->background_psql('postgres');
$ss->query_safe('SET xip83.standby_wait_ms = 60000');

sub timed
{
	my ($s, $sql) = @_;
	my $t = time;
	$s->query_safe($sql);
	return time - $t;
}

my (@fence, @lag, @rt);
my $until = time + $seconds - 4;
while (@fence < $SAMPLES && time < $until)
{
	my ($h, $f) = split /\|/, $ps->query_safe('SELECT horizon, fence FROM xip83.horizon_fence()');
	push @fence, timed($ss,
		"SELECT count(*) FROM xip83.live_group_messages($h, 1, 0, up_to => $h, fence => '$f')");
	($h, $f) = split /\|/, $ps->query_safe('SELECT horizon, fence FROM xip83.horizon_fence()');
	push @lag, timed($ss,
		"DO \$\$BEGIN WHILE pg_last_wal_replay_lsn() < '$f' LOOP PERFORM pg_sleep(0.0001); END LOOP; END\$\$");
	push @rt, timed($ss, 'SELECT 1');
}
$pgbench->finish;
my ($tps) = $pgb_out =~ /tps = ([\d.]+)/;
diag sprintf('fence wait under %d tps (%d samples): fenced fetch p50 %s p99 %s ms;'
	  . ' replay lag of a fence p50 %s p99 %s ms; round trip p50 %s p99 %s ms',
	$tps // 0, scalar(@fence), ms(pct(50, @fence)), ms(pct(99, @fence)),
	ms(pct(50, @lag)), ms(pct(99, @lag)), ms(pct(50, @rt)), ms(pct(99, @rt)));

# 2. WAL of the horizon records per notice
my $lsn1 = $primary->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
my $ticks1 = $primary->safe_psql('postgres', 'SELECT ticks FROM xip83.feed_status');
$primary->safe_psql('postgres', 'SELECT pg_switch_wal()');
my ($dump, $dump_err) = run_command(
	[
		'pg_waldump', '--stats=record', '-p', $primary->data_dir . '/pg_wal',
		'-s', $lsn0, '-e', $lsn1
	]);
my ($n_rec, $rec_bytes) = (0, 0);
note $dump;
for my $line (split /\n/, $dump)
{
	# pg_waldump knows no custom resource manager: HORIZONS is custom128/UNKNOWN (20)
	next unless $line =~ /^custom128\/UNKNOWN \(20\)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)/;
	$n_rec += $1;
	$rec_bytes += $2;
}
diag "pg_waldump: $dump_err" unless $dump =~ /^Total/m;
my ($total_bytes) = $dump =~ /^Total\s+\d+\s+(\d+)/m;
my $notices = $ticks1 - $ticks0;
diag sprintf('WAL: %d xip83 records, %d bytes (record bytes), over %d notices:'
	  . ' %.1f bytes per notice, %.3f%% of the %d bytes of WAL in that range',
	$n_rec, $rec_bytes, $notices, $notices ? $rec_bytes / $notices : 0,
	$total_bytes ? 100 * $rec_bytes / $total_bytes : 0, $total_bytes // 0);

# 3. page cost: 1000 rows, on the primary and on the standby, timed by the server
$primary->wait_for_catchup($standby);

sub server_ms
{
	my ($s, $call) = @_;
	return $s->query_safe("SELECT extract(epoch FROM max(clock_timestamp()) - statement_timestamp())"
		  . " FROM $call");
}
my ($h, $f) = split /\|/, $ps->query_safe('SELECT horizon, fence FROM xip83.horizon_fence()');
my $from = $h - 20000;
my %page;
for my $round (1 .. 30)
{
	my $after = $from + ($round % 10) * 1000;
	push @{ $page{primary} }, server_ms($ps, "xip83.live_group_messages($after, 1000, 0)");
	push @{ $page{standby} }, server_ms($ss, "xip83.live_group_messages($after, 1000, 0)");
	push @{ $page{fenced} }, server_ms($ss,
		"xip83.live_group_messages($after, 1000, 0, up_to => $h, fence => '$f')");
}
diag sprintf('page of 1000 rows, median server ms: primary %s, standby %s, standby fenced %s',
	map { ms(pct(50, @{ $page{$_} })) } qw(primary standby fenced));
$ps->quit;
$ss->quit;
$standby->stop;

# 4. the coordinator merge: one table against $SHARDS databases sharded by topic
my $ENVELOPES = $ENV{XIP83_BENCH_ENVELOPES} // 200000;
my $TOPICS = 2000;
my $ORIGINATORS = 8;
my $load = "SELECT xip83.insert_envelopes(array_agg(o), array_agg(s), array_agg(t), array_agg(e))
  FROM (SELECT 100 + i % $ORIGINATORS AS o, i / $ORIGINATORS + 1 AS s,
               int4send(t) AS t, repeat('e', 100)::bytea AS e
          FROM (SELECT i, ((hashint4(i)::bigint + 2147483648) % $TOPICS)::int AS t
                  FROM generate_series(0, $ENVELOPES - 1) i) g WHERE %s) x";
$primary->safe_psql('postgres', 'CREATE DATABASE single');
$primary->safe_psql('single', 'CREATE EXTENSION xip83');
$primary->safe_psql('single', sprintf($load, 'true'));
for my $s (0 .. $SHARDS - 1)
{
	$primary->safe_psql('postgres', "CREATE DATABASE shard$s");
	$primary->safe_psql("shard$s", 'CREATE EXTENSION xip83');
	$primary->safe_psql("shard$s",
		sprintf($load, "t % $SHARDS = $s"));
}
for my $db ('single', map { "shard$_" } 0 .. $SHARDS - 1)
{
	$primary->safe_psql($db, 'VACUUM ANALYZE');
}

# a subscription of 64 topics, cursors at 0 for every originator
my @topics = map { $_ * 31 % $TOPICS } 1 .. 64;
my @nodes = map { 100 + $_ } 0 .. $ORIGINATORS - 1;

# One wave: pages of 500 from each source, merged k-way by (originator, sequence).
sub wave
{
	my ($conns, $topic_sets) = @_;
	my (@pos, @buf, @done);
	my $rows = 0;
	my $last = '';
	for my $k (0 .. $#$conns)
	{
		$pos[$k] = [ 0, 0 ];
		$buf[$k] = [];
		$done[$k] = @{ $topic_sets->[$k] } == 0;
	}
	my $ceilings = '{' . join(',', @nodes) . '}';
	my $ceil_seq = '{' . join(',', map { 2**40 } @nodes) . '}';
	for (;;)
	{
		# refill every empty buffer that has more to give
		for my $k (0 .. $#$conns)
		{
			next if $done[$k] || @{ $buf[$k] };
			my @ts = @{ $topic_sets->[$k] };
			my (@ct, @cn, @cs);
			for my $t (@ts)
			{
				for my $n (@nodes)
				{
					push @ct, sprintf('\\\\x%08x', $t);
					push @cn, $n;
					push @cs, 0;
				}
			}
			my $out = $conns->[$k]->query_safe(sprintf(
				"SELECT originator_node_id, originator_sequence_id FROM xip83.envelope_wave_scan("
				  . "'{%s}'::bytea[], '{%s}', '{%s}', '%s', '%s', %d, %d, 500)",
				join(',', map { "\"$_\"" } @ct), join(',', @cn), join(',', @cs),
				$ceilings, $ceil_seq, @{ $pos[$k] }));
			my @r = map { [ split /\|/ ] } grep { $_ ne '' } split /\n/, $out;
			$done[$k] = 1 if @r < 500;
			$pos[$k] = $r[-1] if @r;
			$buf[$k] = \@r;
		}
		# take the smallest head
		my $best = -1;
		for my $k (0 .. $#$conns)
		{
			next unless @{ $buf[$k] };
			my ($n, $s) = @{ $buf[$k][0] };
			$best = $k
			  if $best < 0
			  || $n < $buf[$best][0][0]
			  || ($n == $buf[$best][0][0] && $s < $buf[$best][0][1]);
		}
		last if $best < 0;
		my $r = shift @{ $buf[$best] };
		my $key = sprintf('%010d:%020d', @$r);
		die "merge out of order: $last then $key" if $key le $last;
		$last = $key;
		$rows++;
	}
	return $rows;
}

my $single = [ $primary->background_psql('single') ];
my $shards = [ map { $primary->background_psql("shard$_") } 0 .. $SHARDS - 1 ];
my @by_shard = map { my $s = $_; [ grep { ($_ % $SHARDS) == $s } @topics ] } 0 .. $SHARDS - 1;
my (@t1, @tn, $rows1, $rowsn);
for (1 .. 5)
{
	my $t = time;
	$rows1 = wave($single, [ \@topics ]);
	push @t1, time - $t;
	$t = time;
	$rowsn = wave($shards, \@by_shard);
	push @tn, time - $t;
}
is($rowsn, $rows1, "the merged wave over $SHARDS shards returns the single table's rows");
diag sprintf('coordinator merge: a wave of %d rows over 64 topics: one table %s ms,'
	  . ' %d shards merged %s ms (median of 5; ratio %.2f)',
	$rows1, ms(pct(50, @t1)), $SHARDS, ms(pct(50, @tn)), pct(50, @tn) / pct(50, @t1));
$_->quit for @$single, @$shards;

done_testing();
