# Read replicas: consumers on a streaming hot standby never skip a row.
#
# 16 pgbench writers on the primary commit group messages out of order (a
# random sleep inside each transaction), abort one in ten, and now and then
# write a late row (an explicit id far below the horizon). Three consumers
# read rows on the standby, all starting at the same cursor:
#   fenced        horizon and fence from xip83.horizon_fence() on the
#                 primary, rows from the standby's live fetch given both;
#   standby-only  the standby's own live fetch (its replayed horizons);
#   unfenced      the primary's horizon, then a plain range read of the
#                 standby's table, no wait: it must miss rows, or this test
#                 could not tell the fence from luck.
# Meanwhile replay is paused for seconds, the standby restarted, and at the
# end the standby is promoted and followed on as a primary. Each of the first
# two must see every committed row exactly once, range rows in ascending id
# order, late rows flagged by their late lane. Randomized waves equal their
# plain SQL definition on the primary (with its topic summary ready), on the
# standby (with the summary it builds and follows, t/005_standby_summary.pl),
# and after the promotion, once the promoted node's summary is ready, with
# floors from before it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time);

my $START = 1_000_000;	# range ids start above; late ids are below
my $LIMIT = 2000;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', <<'CONF');
shared_preload_libraries = 'xip83'
timezone = 'UTC'
max_connections = 60
hot_standby_feedback = on
max_standby_streaming_delay = -1
CONF
$primary->start;
$primary->safe_psql('postgres', <<"SQL");
CREATE EXTENSION xip83;
SELECT setval('xip83.group_messages_id_seq', $START);
CREATE SEQUENCE late_ids;
SELECT xip83.group_horizon();
-- a wave of every topic, floors at, near or far below its last id, against
-- the plain SQL definition: 'same', or what differs
CREATE FUNCTION diff_wave(seed float8) RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE topics bytea[]; floors bigint[]; ceil bigint := xip83.group_ceiling(); got bigint[]; want bigint[];
BEGIN
  PERFORM set_config('xip83.max_page_limit', '1000000', true);
  PERFORM setseed(seed);
  SELECT array_agg(t ORDER BY t), array_agg(fl ORDER BY t) INTO topics, floors FROM (
      SELECT group_id t, CASE WHEN random() < 0.5 THEN max(id) WHEN random() < 0.5 THEN max(id) - 3
                              ELSE (max(id) * random())::bigint END fl
        FROM xip83.group_messages WHERE id <= ceil GROUP BY 1) x;
  SELECT array_agg(id ORDER BY id) INTO got FROM xip83.group_wave_scan(topics, floors, 0, ceil, 1000000);
  SELECT array_agg(id ORDER BY id) INTO want FROM xip83.group_messages m WHERE id <= ceil
     AND EXISTS (SELECT 1 FROM unnest(topics, floors) f(t, fl) WHERE f.t = m.group_id AND m.id > f.fl);
  RETURN CASE WHEN got IS NOT DISTINCT FROM want THEN 'same'
              ELSE format('%s rows for %s', cardinality(got), cardinality(want)) END;
END \$\$;
SQL

$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->append_conf('postgresql.conf', "xip83.standby_wait_ms = 60000\n");
$standby->start;

# the standby knows the feed once it replayed the notifier's full record
$standby->poll_query_until('postgres',
	"SELECT xip83.group_horizon() >= $START", 't')
  or die 'the standby never learned the horizons';

sub session
{
	my ($node) = @_;
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	$s->query_safe('\set VERBOSITY verbose');
	return $s;
}

# Runs a query; returns (rows as array refs, error text or '').
sub run_query
{
	my ($s, $sql) = @_;
	my ($out, $ret) = $s->query($sql);
	my $err = $s->{stderr};
	$s->{stderr} = '';
	return ([], $err) if $ret;
	return ([ map { [ split /\|/, $_, -1 ] } grep { $_ ne '' } split /\n/, $out ], '');
}

my $late_start = $primary->safe_psql('postgres', 'SELECT xip83.late_cursor()');
my %consumer = map {
	$_ => { cursor => $START, late => $late_start, seen => {}, order_ok => 1, late_rows => 0,
			dup => 0, errors => {} }
} qw(fenced standby_only unfenced);

my $ps = session($primary);
my $ss = session($standby);

# One page loop of a consumer: rows in (cursor, H], late rows below it.
sub take_rows
{
	my ($c, $rows) = @_;
	for my $r (@$rows)
	{
		my ($id, $late) = @$r;
		$c->{dup}++ if $c->{seen}{$id}++;
		if ($id < $START)
		{
			$c->{late_rows}++;
		}
		else
		{
			$c->{order_ok} = 0 if $id <= $c->{cursor};
			$c->{cursor} = $id;
		}
		$c->{late} = $late if defined $late && $late ne '';
	}
}

sub fetch_standby
{
	my ($name, $extra) = @_;
	my $c = $consumer{$name};
	for (;;)
	{
		my ($rows, $err) = run_query($ss,
			"SELECT id, late_cursor FROM xip83.live_group_messages($c->{cursor}, $LIMIT, $c->{late}$extra)");
		if ($err ne '')
		{
			my ($code) = $err =~ /ERROR:\s+(\w{5}):/;
			$c->{errors}{ $code // $err }++;
			return;
		}
		take_rows($c, $rows);
		return if @$rows < $LIMIT;
	}
}

sub consume_once
{
	my ($rows, $err) = run_query($ps,
		"SELECT horizon, fence FROM xip83.horizon_fence('xip83.group_messages')");
	die "horizon_fence: $err" if $err ne '';
	my ($h, $fence) = @{ $rows->[0] };
	# the unfenced read: the primary's horizon, the standby's rows, no wait
	my $u = $consumer{unfenced};
	($rows, $err) = run_query($ss,
		"SELECT id FROM xip83.group_messages WHERE id > $u->{cursor} AND id <= $h ORDER BY id");
	take_rows($u, $rows) if $err eq '';
	$u->{cursor} = $h if $err eq '' && $h > $u->{cursor};
	fetch_standby('fenced', ", up_to => $h, fence => '$fence'");
	fetch_standby('standby_only', '');
	return $h;
}

# the writers
my $write = $primary->basedir . '/write.sql';
my $late = $primary->basedir . '/late.sql';
PostgreSQL::Test::Utils::append_to_file($write, <<'SQL');
\set g random(1, 50)
\set r random(1, 100)
\set s random(0, 4000)
BEGIN;
INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)
    VALUES (int4send(:g), int4send(:r), uuid_send(gen_random_uuid()));
SELECT pg_sleep(:s / 1000000.0);
\if :r <= 10
ROLLBACK;
\else
COMMIT;
\endif
SQL
PostgreSQL::Test::Utils::append_to_file($late, <<'SQL');
\set s random(0, 4000)
BEGIN;
INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)
    VALUES (nextval('late_ids'), 'late', 'late', uuid_send(gen_random_uuid()));
SELECT pg_sleep(:s / 1000000.0);
COMMIT;
SQL
my $run_seconds = 24;
my ($pgb_out, $pgb_err) = ('', '');
my $pgbench = IPC::Run::start(
	[
		'pgbench', '-n', '-c', '16', '-j', '4', '-T', $run_seconds,
		'-f', "$write\@30", '-f', "$late\@1",
		'-h', $primary->host, '-p', $primary->port, 'postgres'
	],
	'>', \$pgb_out, '2>', \$pgb_err);
my $t0 = time;

sub consume_for
{
	my ($seconds) = @_;
	my $until = time + $seconds;
	consume_once() while time < $until;
}

consume_for(4);

# replay paused for 3 s: the fenced consumer waits, a short wait fails clearly
$ss->query_safe('SELECT pg_wal_replay_pause()');
# only requested until replay stops: a fence taken before that may be replayed anyway
$standby->poll_query_until('postgres', 'SELECT pg_get_wal_replay_pause_state()', 'paused')
  or die 'replay did not pause';
my $paused_at = time;
my ($rows, $err) = run_query($ps, 'SELECT fence FROM xip83.horizon_fence()');
my $fence = $rows->[0][0];
sleep 1;
($rows, $err) = run_query($ss,
	"SET xip83.standby_wait_ms = 200; SELECT count(*) FROM xip83.live_group_messages($START, 10, 0, up_to => $START, fence => '$fence')");
like($err, qr/X83F0/, 'a fenced fetch past its wait fails with X83F0, no short page');
run_query($ss, 'RESET xip83.standby_wait_ms');
($rows, $err) = run_query($ss,
	"SELECT count(*) FROM xip83.live_group_messages($START, 10, 0, up_to => $START + 5)");
like($err, qr/22023/, 'up_to without its fence is refused on a standby');
my $resume = IPC::Run::start(
	[
		'psql', '-XAtq', '-h', $standby->host, '-p', $standby->port, '-d', 'postgres',
		'-c', 'SELECT pg_sleep(2)', '-c', 'SELECT pg_wal_replay_resume()'
	],
	'>', \my $resume_out, '2>', \my $resume_err);
my $wait_t0 = time;
consume_once();			# the unfenced read misses what the pause holds back
my $waited = time - $wait_t0;
$resume->finish;
cmp_ok($waited, '>=', 1.0, "the fenced fetch waited for replay to resume (${waited}s)");
consume_for(3);

# a checkpoint (the notifier writes every horizon after it), then the standby restarts
$primary->safe_psql('postgres', 'CHECKPOINT');
sleep 1;
$ss->quit;
$standby->restart;
$ss = session($standby);
$standby->poll_query_until('postgres', "SELECT xip83.group_horizon() >= $START", 't')
  or die 'the restarted standby never learned the horizons';
consume_for(1) while time < $t0 + $run_seconds;
$pgbench->finish;
like($pgb_out, qr/number of transactions actually processed: [1-9]/, 'the writers ran');

# drain: every consumer reads up to the final horizon, once replay caught up
$primary->wait_for_catchup($standby);
my $final_h = consume_once();
$primary->wait_for_catchup($standby);
sleep 1;
$final_h = consume_once();
consume_once();

my %committed = map { $_ => 1 } split /\n/,
  $primary->safe_psql('postgres', 'SELECT id FROM xip83.group_messages');
my $n_late = grep { $_ < $START } keys %committed;
note "committed rows: " . scalar(keys %committed) . " ($n_late late), final horizon $final_h";
cmp_ok(scalar(keys %committed), '>', 1000, 'the writers committed enough rows to race');
cmp_ok($n_late, '>', 5, 'late rows were written');

for my $name (qw(fenced standby_only))
{
	my $c = $consumer{$name};
	my @missing = grep { !$c->{seen}{$_} } keys %committed;
	my @extra = grep { !$committed{$_} } keys %{ $c->{seen} };
	is(scalar(@missing), 0, "$name: no committed row missed")
	  or diag "missing: @missing[0 .. ($#missing < 9 ? $#missing : 9)]";
	is(scalar(@extra), 0, "$name: no uncommitted row");
	is($c->{dup}, 0, "$name: no row twice");
	ok($c->{order_ok}, "$name: range rows in ascending id order");
	is($c->{late_rows}, $n_late, "$name: every late row through the late lane");
	note "$name errors: " . join(', ', map { "$_ x$c->{errors}{$_}" } sort keys %{ $c->{errors} });
}
is(scalar(keys %{ $consumer{fenced}{errors} }), 0, 'the fenced consumer never failed');
my @unfenced_missed = grep { !$consumer{unfenced}{seen}{$_} && $_ >= $START } keys %committed;
cmp_ok(scalar(@unfenced_missed), '>', 0,
	'the unfenced read (primary horizon, standby rows, no wait) missed rows: '
	  . scalar(@unfenced_missed));

# xip83-tail: --standby (LISTEN and horizons on the primary, rows fenced from
# the standby) and --standby-only (the standby's own horizons, polled)
my $from = $final_h - 300;
my @want = grep { $committed{$_} && $_ > $from } ($from + 1 .. $final_h);
for my $mode (['--standby', $standby->connstr('postgres'), '-d', $primary->connstr('postgres')],
	['--standby-only', '-d', $standby->connstr('postgres')])
{
	my ($tail_out, $tail_err) = ('', '');
	IPC::Run::run(
		[
			'xip83-tail', @$mode, '-k', 'group', '--group-after', $from,
			'--exit-after', scalar(@want) + $n_late
		],
		'>', \$tail_out, '2>', \$tail_err, IPC::Run::timeout(60));
	my @lines = split /\n/, $tail_out;
	my @range = map { (split / /)[2] } grep { !/ late$/ } @lines;
	my @lates = grep { / late$/ } @lines;
	is_deeply(\@range, \@want, "xip83-tail $mode->[0]: every row after the cursor once, in order")
	  or diag $tail_err;
	is(scalar(@lates), $n_late, "xip83-tail $mode->[0]: every late row, flagged");
}

# randomized waves, writers done: on the primary once its summary is ready,
# on the standby (its own summary, late rows raised by replay)
$primary->poll_query_until('postgres',
	"SELECT (SELECT count(*) FROM xip83.group_wave_scan('{x}', '{0}', 0, 1, 1)) >= 0"
	  . " AND summary_states[1] = 'ready' FROM xip83.feed_status", 't')
  or die 'the primary\'s summary never became ready';
$primary->wait_for_catchup($standby);
for my $seed (0.1, 0.2, 0.3)
{
	is($primary->safe_psql('postgres', "SELECT diff_wave($seed)"), 'same',
		"a randomized wave on the primary, summary ready ($seed)");
	is($standby->safe_psql('postgres', "SELECT diff_wave($seed)"), 'same',
		"a randomized wave on the standby ($seed)");
}

# the rest of the read side answers on the standby, read-only
is($standby->safe_psql('postgres',
		'SELECT xip83.group_ceiling() = xip83.group_horizon(), xip83.late_cursor() > 0,'
	  . ' (SELECT count(*) FROM xip83.envelope_horizons()) = 0'),
	't|t|t', 'ceilings, late cursor and envelope horizons answer on the standby');
my ($fs_ret, $fs_out, $fs_err) = $standby->psql('postgres',
	'SELECT group_horizon IS NOT NULL, notifier_pid IS NULL FROM xip83.feed_status');
is($fs_out, 't|t', 'feed_status on the standby: replayed horizons, no notifier')
  or diag $fs_err;
($fs_ret, $fs_out, $fs_err) = $standby->psql('postgres',
	"INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash) VALUES ('s', 's', 's')");
like($fs_err, qr/read-only transaction/, 'writes stay impossible on the standby');

my $tl_before = $primary->safe_psql('postgres', 'SELECT timeline_id FROM xip83.horizon_fence()');

# promotion: the standby serves horizons at once and follows on as a primary
my $standby_h = $standby->safe_psql('postgres', 'SELECT xip83.group_horizon()');
$ss->quit;
$ps->quit;
$primary->stop;
$standby->promote;
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 'f', 'promoted');
cmp_ok($standby->safe_psql('postgres', 'SELECT xip83.group_horizon()'), '>=', $standby_h,
	'the promoted standby serves horizons at once, never below what it served');
my ($fence_tl) = $standby->safe_psql('postgres', 'SELECT timeline_id FROM xip83.horizon_fence()');
cmp_ok($fence_tl, '>', $tl_before, 'horizon_fence reports the new timeline');
$standby->safe_psql('postgres', <<'SQL');
INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)
    SELECT 'after', int4send(i), uuid_send(gen_random_uuid()) FROM generate_series(1, 50) i;
SQL
my $ns = session($standby);
my $c = $consumer{fenced};
my $before = scalar(keys %{ $c->{seen} });
for (1 .. 3)
{
	my ($rows2, $err2) = run_query($ns,
		"SELECT id, late_cursor FROM xip83.live_group_messages($c->{cursor}, $LIMIT, $c->{late})");
	die $err2 if $err2 ne '';
	take_rows($c, $rows2);
}
is(scalar(keys %{ $c->{seen} }) - $before, 50, 'rows written after the promotion reach the consumer once');
is($c->{dup}, 0, 'no duplicates across the promotion');
$ns->quit;

# waves on the promoted node: floors from before the promotion, with its
# summary built by its own pass; then rows written since
$standby->poll_query_until('postgres',
	"SELECT (SELECT count(*) FROM xip83.group_wave_scan('{x}', '{0}', 0, 1, 1)) >= 0"
	  . " AND summary_states[1] = 'ready' FROM xip83.feed_status", 't')
  or die 'the promoted node\'s summary never became ready';
for my $seed (0.4, 0.5)
{
	is($standby->safe_psql('postgres', "SELECT diff_wave($seed)"), 'same',
		"a randomized wave after the promotion, summary ready ($seed)");
}
$standby->safe_psql('postgres', <<'SQL');
UPDATE xip83.group_messages SET group_id = 'moved' WHERE id = (SELECT min(id) FROM xip83.group_messages);
INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)
    SELECT int4send(i % 7), int4send(i), uuid_send(gen_random_uuid()) FROM generate_series(1, 30) i;
SQL
is($standby->safe_psql('postgres', 'SELECT diff_wave(0.6)'), 'same',
	'a randomized wave after writes on the promoted node');

# a split: the old primary comes back and goes on while the promoted node
# serves; its fences name WAL the promoted node never had, so a fenced fetch
# there fails with X83F1 instead of reading up to horizons it cannot vouch for
$primary->start;
my $promoted_end = $standby->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
my ($split_h, $split_fence);
for (1 .. 100)
{
	$primary->safe_psql('postgres', <<'SQL');
INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)
    SELECT 'split', int4send(i), uuid_send(gen_random_uuid()) FROM generate_series(1, 5000) i;
SQL
	($split_h, $split_fence) = split /\|/,
	  $primary->safe_psql('postgres', 'SELECT horizon, fence FROM xip83.horizon_fence()');
	last if $primary->safe_psql('postgres', "SELECT '$split_fence'::pg_lsn > '$promoted_end'") eq 't';
}
cmp_ok($standby->safe_psql('postgres', "SELECT '$split_fence'::pg_lsn > pg_current_wal_insert_lsn()"),
	'eq', 't', 'the old primary wrote past the promoted node\'s WAL');
my ($split_ret, $split_out, $split_err) = $standby->psql('postgres',
	"SELECT count(*) FROM xip83.live_group_messages(0, 10, 0, up_to => $split_h, fence => '$split_fence')",
	extra_params => ['-v', 'VERBOSITY=verbose']);
like($split_err, qr/X83F1/, 'a fenced fetch on the promoted node with the old primary\'s fence fails with X83F1');
is($split_out, '', 'and returns no row');
$primary->stop;
note sprintf('runtime %.1fs', time - $t0);

done_testing();
