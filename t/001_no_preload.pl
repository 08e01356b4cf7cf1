# Without shared_preload_libraries CREATE EXTENSION is refused with SQLSTATE
# 55000 and a hint naming the setting, and leaves nothing behind. An
# extension created while preloaded, the server then started without it,
# loads the library on demand: batch inserts, wave scans with a given
# ceiling and LiveNotice decoding work; every function that needs the
# horizon registry fails with 55000 and the same hint. Preloaded again
# after a restart, the horizon covers what was written meanwhile.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('no_preload');
$node->init;
$node->append_conf('postgresql.conf', "timezone = 'UTC'");
$node->start;

is($node->safe_psql('postgres', 'SHOW shared_preload_libraries'), '', 'not preloaded');
my ($rc, $stdout, $stderr) =
  $node->psql('postgres', "\\set VERBOSITY verbose\nCREATE EXTENSION xip83");
isnt($rc, 0, 'CREATE EXTENSION without the preload fails');
like($stderr, qr/ERROR:\s+55000:/, 'CREATE EXTENSION: SQLSTATE 55000');
like($stderr, qr/HINT:.*shared_preload_libraries/, 'CREATE EXTENSION: the hint names the setting');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_namespace WHERE nspname = 'xip83'"),
	'0', 'the refused CREATE EXTENSION left nothing behind');

# created while preloaded, then started without the preload
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'xip83'");
$node->restart;
$node->safe_psql('postgres', 'CREATE EXTENSION xip83');
$node->append_conf('postgresql.conf', "shared_preload_libraries = ''");
$node->restart;
is($node->safe_psql('postgres', 'SHOW shared_preload_libraries'), '', 'not preloaded again');
is( $node->safe_psql(
		'postgres',
		"SELECT state FROM xip83.live_notice_decode("
		  . "xip83.live_notice_encode(1, 'live', 0, 0, 0, '{}', '{}'))"),
	'live',
	'LiveNotice decoding works');
my $id = $node->safe_psql('postgres',
	"SELECT id FROM xip83.insert_group_messages(ARRAY['\\x0a01']::bytea[], ARRAY['\\x01']::bytea[])");
cmp_ok($id, '>', 0, 'a batch insert works');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM xip83.group_wave_scan(ARRAY['\\x0a01']::bytea[], ARRAY[0]::bigint[], 0, 1000000, 10)"),
	'1', 'a wave scan with a given ceiling works');

foreach my $sql (
	'SELECT xip83.group_horizon()',
	'SELECT * FROM xip83.envelope_horizons()',
	'SELECT xip83.group_ceiling()',
	'SELECT * FROM xip83.live_group_messages(0, 10, 0)',
	'SELECT * FROM xip83.feed_status')
{
	my ($ret, $out, $err) =
	  $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	isnt($ret, 0, "$sql fails");
	like($err, qr/ERROR:\s+55000:/, "$sql: SQLSTATE 55000");
	like($err, qr/HINT:.*shared_preload_libraries/, "$sql: the hint names the setting");
}

$node->append_conf('postgresql.conf', "shared_preload_libraries = 'xip83'");
$node->restart;
my ($horizon, $ceiling) = split /\|/,
  $node->safe_psql('postgres', 'SELECT xip83.group_horizon(), xip83.group_ceiling()');
cmp_ok($horizon, '>=', $id, 'preloaded again, the horizon covers the row written meanwhile');
cmp_ok($ceiling, '>=', $id, 'and so does the ceiling');

$node->stop;
done_testing();
