# The shared memory xip83 takes is what docs/operations.md ("Shared
# memory") says, byte for byte: pg_shmem_allocations' xip83 entries against
# the formula, at the defaults (at most 32 MB in all) and at other settings.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('shared_memory');
$node->init;
$node->append_conf('postgresql.conf',
	"shared_preload_libraries = 'xip83'\ntimezone = 'UTC'");
$node->start;

sub setting
{
	my ($name) = @_;
	return $node->safe_psql('postgres', "SELECT setting::bigint FROM pg_settings WHERE name = '$name'");
}

# The formula of docs/operations.md, in bytes.
sub expected
{
	my %s = map { $_ => setting($_) }
	  qw(xip83.max_databases xip83.max_tracked_tables xip83.max_originators
	  xip83.late_ring_size xip83.recent_entries xip83.summary_memory max_connections
	  autovacuum_max_workers max_worker_processes max_wal_senders);
	my $feeds = $s{'xip83.max_databases'} + $s{'xip83.max_tracked_tables'};
	# MaxBackends: from 18 the autovacuum slots and two special workers
	my $av_slots = setting('autovacuum_worker_slots');
	my $backends = $s{max_connections} + $s{max_worker_processes} + $s{max_wal_senders}
	  + ($av_slots ne '' ? $av_slots + 2 : $s{autovacuum_max_workers} + 1);
	my $slots = 16;
	$slots *= 2 while $slots < 2 * $s{'xip83.recent_entries'};
	my %e = (
		'xip83 registry' => 40 + $feeds * (96 + 32 * (2 + $s{'xip83.max_originators'})
			  + 32 * $s{'xip83.late_ring_size'}) + 104 * $backends,
		'xip83 notifier' => 24 + 104 * $s{'xip83.max_databases'});
	$e{'xip83 recent'} = 3 * $feeds * (2080 + 40 * $slots) if $s{'xip83.recent_entries'} > 0;
	$e{'xip83 summary'} = 64 + 3 * $feeds * (64 + 1024 * $s{'xip83.summary_memory'})
	  if $s{'xip83.summary_memory'} > 0;
	return \%e;
}

sub measured
{
	my %m = map { split /\|/ } split /\n/,
	  $node->safe_psql('postgres',
		"SELECT name, size FROM pg_shmem_allocations WHERE name LIKE 'xip83%' ORDER BY name");
	return \%m;
}

sub check
{
	my ($what) = @_;
	my ($e, $m) = (expected(), measured());
	is_deeply($m, $e, "$what: pg_shmem_allocations matches the formula")
	  or diag(explain({ measured => $m, formula => $e }));
	my $total = 0;
	$total += $_ foreach values %$m;
	return $total;
}

my $total = check('defaults');
cmp_ok($total, '<=', 32 * 1024 * 1024, "the defaults take at most 32 MB ($total bytes)");

$node->append_conf('postgresql.conf', <<'CONF');
xip83.max_databases = 5
xip83.max_tracked_tables = 3
xip83.max_originators = 100
xip83.late_ring_size = 1000
xip83.recent_entries = 5000
xip83.summary_memory = '1MB'
max_connections = 30
CONF
$node->restart;
my $grown = check('larger tables, fewer feeds');
cmp_ok($grown, '!=', $total, 'the settings size it');

$node->append_conf('postgresql.conf', "xip83.recent_entries = 0\nxip83.summary_memory = 0\n");
$node->restart;
check('recent-writes tables and summaries off');

$node->stop;
done_testing();
