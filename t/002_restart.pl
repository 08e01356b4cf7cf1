# The horizon registry lives in shared memory and starts empty after every
# server start: after an immediate stop (no shutdown checkpoint, crash
# recovery at the next start) and after a backend crash in the middle of a
# write (the postmaster re-creates shared memory), with nothing in flight the
# horizon reaches the highest stored id and never passes the sequence (ids
# drawn for rows never stored, and the sequence's logged-ahead values after a
# crash, may lie between the two).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('restart');
$node->init;
$node->append_conf('postgresql.conf',
	"shared_preload_libraries = 'xip83'\ntimezone = 'UTC'\nrestart_after_crash = on");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION xip83');

sub write_rows
{
	my ($n) = @_;
	$node->safe_psql('postgres',
		"SELECT xip83.insert_group_messages(array_agg(int4send(g)), array_agg(int4send(g)))"
		  . " FROM generate_series(1, $n) g");
}

sub horizon_at_max
{
	my ($when) = @_;
	is( $node->safe_psql('postgres',
			'SELECT xip83.group_horizon() BETWEEN (SELECT max(id) FROM xip83.group_messages)'
			  . ' AND (SELECT last_value FROM xip83.group_messages_id_seq)'),
		't', "$when: the horizon is between the highest stored id and the sequence");
}

write_rows(20);
horizon_at_max('before stopping');

$node->stop('immediate');
$node->start;
horizon_at_max('after an immediate stop');
write_rows(5);
horizon_at_max('after writing again');

# A backend killed with a write in flight: the postmaster restarts every
# process and re-creates shared memory.
my $bg = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $bg->query_safe('SELECT pg_backend_pid()');
$bg->query_safe('BEGIN');
$bg->query_safe(
	"INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash) VALUES ('\\x09', '\\x09', sha256('\\x0909'))"
);
ok(kill('KILL', $pid), 'kill -9 a writer\'s backend');
eval { $bg->quit };
$node->poll_query_until('postgres', 'SELECT 1', '1')
  or die 'the server did not come back after the crash';
horizon_at_max('after a crash');
is($node->safe_psql('postgres', "SELECT count(*) FROM xip83.group_messages WHERE group_id = '\\x09'"),
	'0', 'the killed write is not stored');
like(slurp_file($node->logfile), qr/terminated by signal 9/, 'the server log shows the crash');

$node->stop;
done_testing();
