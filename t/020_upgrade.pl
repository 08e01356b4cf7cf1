# ALTER EXTENSION xip83 UPDATE from 0.1.0 leaves exactly what a fresh install
# of the current version creates, object by object, and keeps the rows.
#
# The comparison is generic on purpose: every extension member by
# pg_describe_object, every function's full definition (pg_get_functiondef:
# body, volatility, parallel safety, SET clauses, SECURITY) with its ACL and
# comment, every relation's columns (type, nullability, default, ACL,
# comment), constraints, indexes, triggers (with their enabled state),
# sequences, views, the schema's ACL, the extension's configuration tables,
# and every dependency of a member. Any difference is listed and fails.
# Then every 0.1.0 function a node could call is called after the update:
# the names 0.2.0 replaced are deprecated wrappers with the privileges they
# had, which return what their replacements return and warn once per session.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('upgrade');
$node->init;
$node->append_conf('postgresql.conf',
	"shared_preload_libraries = 'xip83'\ntimezone = 'UTC'");
$node->start;

my $default_version = $node->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'xip83'");

# One line per fact about the extension's objects; sorted, OID-free.
my $describe = <<'SQL';
WITH ext AS (SELECT oid FROM pg_extension WHERE extname = 'xip83'),
members AS (
    SELECT d.classid, d.objid, d.objsubid
      FROM pg_depend d, ext
     WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'),
rels AS (
    SELECT c.oid, c.oid::regclass::text AS name, c.relkind
      FROM pg_class c JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid),
lines AS (
    SELECT 'member ' || pg_describe_object(classid, objid, objsubid) FROM members
    UNION ALL
    SELECT 'extension ' || e.extversion || ' relocatable ' || e.extrelocatable
           || ' config ' || coalesce((SELECT string_agg(c::regclass::text, ',' ORDER BY c::regclass::text)
                                        FROM unnest(e.extconfig) c), '')
           || ' conditions ' || coalesce(array_to_string(e.extcondition, '|'), '')
      FROM pg_extension e WHERE e.extname = 'xip83'
    UNION ALL
    SELECT 'schema ' || n.nspname || ' owner ' || pg_get_userbyid(n.nspowner)
           || ' acl ' || coalesce(n.nspacl::text, 'default')
      FROM pg_namespace n WHERE n.nspname = 'xip83'
    UNION ALL
    SELECT 'function ' || p.oid::regprocedure || E'\n' || pg_get_functiondef(p.oid)
           || ' acl ' || coalesce(p.proacl::text, 'default')
           || ' owner ' || pg_get_userbyid(p.proowner)
      FROM pg_proc p JOIN members m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
     WHERE p.prokind <> 'a'
    UNION ALL
    SELECT 'aggregate ' || p.oid::regprocedure
      FROM pg_proc p JOIN members m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
     WHERE p.prokind = 'a'
    UNION ALL
    SELECT 'relation ' || r.name || ' kind ' || c.relkind::text || ' persistence ' || c.relpersistence::text
           || ' options ' || coalesce(c.reloptions::text, '') || ' rls ' || c.relrowsecurity
           || ' acl ' || coalesce(c.relacl::text, 'default') || ' owner ' || pg_get_userbyid(c.relowner)
           || ' replica ' || c.relreplident::text
           || CASE WHEN c.relkind IN ('v', 'm') THEN E'\n' || pg_get_viewdef(c.oid) ELSE '' END
      FROM rels r JOIN pg_class c ON c.oid = r.oid
    UNION ALL
    SELECT 'column ' || r.name || '.' || a.attname
           || ' position ' || row_number() OVER (PARTITION BY r.oid ORDER BY a.attnum)
           || ' type ' || format_type(a.atttypid, a.atttypmod)
           || ' notnull ' || a.attnotnull
           || ' default ' || coalesce(pg_get_expr(ad.adbin, ad.adrelid), 'none')
           || ' identity ' || a.attidentity::text || ' generated ' || a.attgenerated::text
           || ' collation ' || coalesce((SELECT collname FROM pg_collation WHERE oid = a.attcollation), '')
           || ' storage ' || a.attstorage::text || ' stats ' || a.attstattarget
           || ' acl ' || coalesce(a.attacl::text, 'default')
           || ' comment ' || coalesce(col_description(r.oid, a.attnum), '')
      FROM rels r JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
      LEFT JOIN pg_attrdef ad ON ad.adrelid = r.oid AND ad.adnum = a.attnum
    UNION ALL
    SELECT 'constraint ' || r.name || ' ' || co.conname || ' ' || co.contype::text || ' '
           || pg_get_constraintdef(co.oid) || ' deferrable ' || co.condeferrable
           || ' deferred ' || co.condeferred || ' validated ' || co.convalidated
      FROM rels r JOIN pg_constraint co ON co.conrelid = r.oid
    UNION ALL
    SELECT 'index ' || pg_get_indexdef(i.indexrelid) || ' valid ' || i.indisvalid
           || ' clustered ' || i.indisclustered
      FROM rels r JOIN pg_index i ON i.indrelid = r.oid
    UNION ALL
    SELECT 'trigger ' || r.name || ' ' || pg_get_triggerdef(t.oid) || ' enabled ' || t.tgenabled::text
      FROM rels r JOIN pg_trigger t ON t.tgrelid = r.oid AND NOT t.tgisinternal
    UNION ALL
    SELECT 'policy ' || r.name || ' ' || po.polname || ' ' || po.polcmd::text || ' '
           || coalesce(pg_get_expr(po.polqual, po.polrelid), '') || ' '
           || coalesce(pg_get_expr(po.polwithcheck, po.polrelid), '')
      FROM rels r JOIN pg_policy po ON po.polrelid = r.oid
    UNION ALL
    SELECT 'rule ' || r.name || ' ' || pg_get_ruledef(ru.oid)
      FROM rels r JOIN pg_rewrite ru ON ru.ev_class = r.oid
    UNION ALL
    SELECT 'sequence ' || r.name || ' type ' || format_type(s.seqtypid, NULL)
           || ' start ' || s.seqstart || ' increment ' || s.seqincrement || ' min ' || s.seqmin
           || ' max ' || s.seqmax || ' cache ' || s.seqcache || ' cycle ' || s.seqcycle
      FROM rels r JOIN pg_sequence s ON s.seqrelid = r.oid
    UNION ALL
    SELECT 'type ' || format_type(t.oid, NULL) || ' ' || t.typtype::text
      FROM pg_type t JOIN members m ON m.classid = 'pg_type'::regclass AND m.objid = t.oid
    UNION ALL
    -- comments on members and their sub-objects (columns)
    SELECT 'comment ' || pg_describe_object(de.classoid, de.objoid, de.objsubid) || ': ' || de.description
      FROM pg_description de
     WHERE EXISTS (SELECT FROM members m WHERE m.classid = de.classoid AND m.objid = de.objoid)
        OR (de.classoid = 'pg_namespace'::regclass
            AND de.objoid = (SELECT oid FROM pg_namespace WHERE nspname = 'xip83'))
    UNION ALL
    -- every dependency of a member, of its columns' defaults, constraints,
    -- indexes and triggers (sequence ownership, functions a default calls, ...)
    SELECT 'depend ' || pg_describe_object(d.classid, d.objid, d.objsubid) || ' -> '
           || pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid) || ' ' || d.deptype::text
      FROM pg_depend d
     WHERE d.deptype <> 'e'
       AND (EXISTS (SELECT FROM members m WHERE m.classid = d.classid AND m.objid = d.objid)
            OR (d.classid = 'pg_attrdef'::regclass
                AND d.objid IN (SELECT ad.oid FROM pg_attrdef ad JOIN rels r ON r.oid = ad.adrelid))
            OR (d.classid = 'pg_constraint'::regclass
                AND d.objid IN (SELECT co.oid FROM pg_constraint co JOIN rels r ON r.oid = co.conrelid))
            OR (d.classid = 'pg_trigger'::regclass
                AND d.objid IN (SELECT t.oid FROM pg_trigger t JOIN rels r ON r.oid = t.tgrelid))
            OR (d.classid = 'pg_class'::regclass
                AND d.objid IN (SELECT i.indexrelid FROM pg_index i JOIN rels r ON r.oid = i.indrelid)))
)
SELECT l FROM lines AS x(l) ORDER BY 1
SQL

sub describe
{
	my ($db) = @_;
	my $out = $node->safe_psql($db, $describe);
	# a fact is one or more lines; facts start with a lower-case keyword
	my @facts = split /\n(?=(?:member|extension|schema|function|aggregate|relation|column|constraint|index|trigger|policy|rule|sequence|type|comment|depend) )/,
	  $out;
	return @facts;
}

sub compare
{
	my ($what, $a, $b) = @_;
	my (%in_a, %in_b);
	$in_a{$_}++ foreach @$a;
	$in_b{$_}++ foreach @$b;
	my @only_a = grep { ($in_a{$_} // 0) > ($in_b{$_} // 0) } sort keys %in_a;
	my @only_b = grep { ($in_b{$_} // 0) > ($in_a{$_} // 0) } sort keys %in_b;
	diag("only in the fresh install:\n  " . join("\n  ", @only_a)) if @only_a;
	diag("only after the update:\n  " . join("\n  ", @only_b)) if @only_b;
	ok(!@only_a && !@only_b, $what);
}

# The fresh install.
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION xip83');
is($node->safe_psql('fresh', "SELECT extversion FROM pg_extension WHERE extname = 'xip83'"),
	$default_version, "fresh install at $default_version");
my @fresh = describe('fresh');
cmp_ok(scalar(@fresh), '>', 200, 'the description covers the schema (' . scalar(@fresh) . ' facts)');

# 0.1.0 with rows, then the update.
$node->safe_psql('postgres', 'CREATE DATABASE updated');
$node->safe_psql('updated', "CREATE EXTENSION xip83 VERSION '0.1.0'");
my @old = describe('updated');
# 0.1.0's functions and their privileges, to call every one after the update
my $old_functions_sql = "SELECT p.oid::regprocedure::text || ' ' || coalesce(p.proacl::text, 'default')"
  . " FROM pg_proc p WHERE p.pronamespace = 'xip83'::regnamespace ORDER BY 1";
my @old_functions = split /\n/, $node->safe_psql('updated', $old_functions_sql);
$node->safe_psql('updated', <<'SQL');
SELECT count(*) FROM xip83.insert_group_messages(
    ARRAY['\x0a01', '\x0a02', '\x0a01']::bytea[], ARRAY['\x01', '\x02', '\x03']::bytea[],
    ARRAY[true, false, false], ARRAY['\x99', NULL, NULL]::bytea[], ARRAY[true, NULL, false]);
INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)
VALUES ('\x0a03', '\x04', sha256('\x0a0304'::bytea));
SELECT count(*) FROM xip83.insert_welcome_messages(
    ARRAY['\x1001', '\x1002']::bytea[], ARRAY['\x01', '\x02']::bytea[],
    ARRAY['\x0f', NULL]::bytea[], ARRAY[1, 2]::smallint[], ARRAY[NULL, '\x77']::bytea[],
    ARRAY[0, 1]::smallint[]);
SELECT count(*) FROM xip83.insert_envelopes(
    ARRAY[100, 100, 200], ARRAY[1, 2, 1]::bigint[], ARRAY['\x0001', '\x0002', '\x0001']::bytea[],
    ARRAY['\xe1', '\xe2', '\xe3']::bytea[], ARRAY[10, NULL, 30]::bigint[], ARRAY[7, 7, NULL]);
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
VALUES (200, 2, '\x0003', '\xe4');
SQL
my %rows = (
	group => 'SELECT id, created_at, group_id, data, group_id_data_hash, is_commit, sender_hmac,'
	  . ' should_push FROM xip83.group_messages ORDER BY id',
	welcome => 'SELECT * FROM xip83.welcome_messages ORDER BY id',
	envelope => 'SELECT originator_node_id, originator_sequence_id, topic, gateway_time,'
	  . ' coalesce(expiry, 0), payer_id, originator_envelope FROM xip83.envelopes ORDER BY 1, 2');
my %before = map { $_ => $node->safe_psql('updated', $rows{$_}) } keys %rows;
my $horizon_before = $node->safe_psql('updated', 'SELECT xip83.group_horizon()');

my ($ret, $out, $err) =
  $node->psql('updated', "ALTER EXTENSION xip83 UPDATE TO '$default_version'");
is($ret, 0, "ALTER EXTENSION xip83 UPDATE TO '$default_version'") or diag($err);
like($err, qr/2 rows without an expiry now have expiry 0/, 'the update says which rows got expiry 0');
is($node->safe_psql('updated', "SELECT extversion FROM pg_extension WHERE extname = 'xip83'"),
	$default_version, "updated to $default_version");

compare('the updated extension equals a fresh install, object by object', \@fresh,
	[ describe('updated') ]);

# The comparison sees a difference: 0.1.0 differs from the fresh install.
my %fresh_set = map { $_ => 1 } @fresh;
ok((grep { !$fresh_set{$_} } @old) > 0, 'the description tells 0.1.0 from the current version');

# Every row survived, expiry NULL read as 0; the live feed still covers them.
foreach my $kind (sort keys %rows)
{
	is($node->safe_psql('updated', $rows{$kind}), $before{$kind}, "$kind rows unchanged by the update");
}
is($node->safe_psql('updated', 'SELECT count(*) FROM xip83.envelopes WHERE expiry = 0'),
	'2', 'the envelopes without an expiry have 0');
cmp_ok($node->safe_psql('updated', 'SELECT xip83.group_horizon()'), '>=', $horizon_before,
	'the group horizon did not go back');

# The updated tables take the node shapes and the old rows come out of the scans.
$node->safe_psql('updated', <<'SQL');
SELECT count(*) FROM xip83.insert_group_messages(ARRAY['']::bytea[], ARRAY['\x05']::bytea[]);
SELECT count(*) FROM xip83.insert_envelopes(ARRAY[0], ARRAY[0]::bigint[], ARRAY['']::bytea[],
                                            ARRAY['\xe0']::bytea[]);
SQL
is( $node->safe_psql(
		'updated',
		"SELECT string_agg(encode(group_id, 'hex') || ':' || encode(data, 'hex') || ':' || coalesce(is_commit::text, 'null'), ' ' ORDER BY id)"
		  . " FROM xip83.group_wave_scan(ARRAY['\\x0a01', '']::bytea[], '{0,0}', 0, xip83.group_ceiling(), 100)"),
	'0a01:01:true 0a01:03:false :05:null',
	'old and new group messages through the wave scan');
is( $node->safe_psql(
		'updated',
		"SELECT string_agg(originator_node_id || ':' || originator_sequence_id, ' ')"
		  . " FROM xip83.envelope_wave_scan(ARRAY['\\x0001', '\\x0001', '']::bytea[], '{100,200,0}', '{0,0,-1}',"
		  . " '{0,100,200}', '{0,10,10}', 0, -1, 100)"),
	'0:0 100:1 200:1',
	'old envelopes and sequence 0 through the wave scan');
is( $node->safe_psql('updated',
		"SELECT nextval('xip83.group_messages_id_seq') > (SELECT max(id) FROM xip83.group_messages)"),
	't', 'the id sequence goes on above the stored ids');

# Every 0.1.0 function a node could call still answers after the update, as
# a deprecated wrapper: the same rows or bytes as its replacement, with the
# privileges it had, and one WARNING per session naming the replacement.
my $g = q{ARRAY['\x0a01', '\x0a02', '']::bytea[], '{0,0,0}', 0, xip83.group_ceiling()};
my $w = q{ARRAY['\x1001', '\x1002']::bytea[], '{0,0}', 0, xip83.welcome_ceiling()};
my $e = q{ARRAY['\x0001', '\x0002', '\x0001', '']::bytea[], '{100,100,200,0}', '{0,0,0,-1}',}
  . q{ '{0,100,200}', '{0,10,10}', 0, -1};
my %calls = (
	group_wave_rows => [ "xip83.group_wave_rows($g, 'xip83.group_messages')",
		"xip83.group_wave_stream($g)" ],
	group_wave_open => [ "xip83.group_wave_fetch(xip83.group_wave_open($g), 100)",
		"xip83.group_wave_scan(xip83.wave_open('group', $g), 100)" ],
	group_wave_frames => [ "xip83.group_wave_frames($g, 100, 7)",
		"xip83.group_wave_scan($g, 100, 7, 2097152)" ],
	group_wave_frames_fetch => [ "xip83.group_wave_frames_fetch(xip83.group_wave_open($g), 100, 7)",
		"xip83.group_wave_scan(xip83.wave_open('group', $g), 100, 7, 2097152)" ],
	group_wave_frames_rows => [
		"xip83.group_wave_frames_rows($g, 7, 2097152, 'xip83.group_messages')",
		"xip83.group_wave_stream($g, 7, 2097152)" ],
	group_wave_frames_stream => [ "xip83.group_wave_frames_stream($g, 7)",
		"xip83.group_wave_stream($g, 7, 2097152)" ],
	welcome_wave_rows => [ "xip83.welcome_wave_rows($w, 'xip83.welcome_messages')",
		"xip83.welcome_wave_stream($w)" ],
	welcome_wave_open => [ "xip83.welcome_wave_fetch(xip83.welcome_wave_open($w), 100)",
		"xip83.welcome_wave_scan(xip83.wave_open('welcome', $w), 100)" ],
	welcome_wave_frames => [ "xip83.welcome_wave_frames($w, 100, 7)",
		"xip83.welcome_wave_scan($w, 100, 7, 2097152)" ],
	welcome_wave_frames_fetch => [
		"xip83.welcome_wave_frames_fetch(xip83.welcome_wave_open($w), 100, 7)",
		"xip83.welcome_wave_scan(xip83.wave_open('welcome', $w), 100, 7, 2097152)" ],
	welcome_wave_frames_rows => [
		"xip83.welcome_wave_frames_rows($w, 7, 2097152, 'xip83.welcome_messages')",
		"xip83.welcome_wave_stream($w, 7, 2097152)" ],
	welcome_wave_frames_stream => [ "xip83.welcome_wave_frames_stream($w, 7)",
		"xip83.welcome_wave_stream($w, 7, 2097152)" ],
	envelope_wave_rows => [ "xip83.envelope_wave_rows($e, 'xip83.envelopes', NULL)",
		"xip83.envelope_wave_stream($e)" ],
	envelope_wave_open => [ "xip83.envelope_wave_fetch(xip83.envelope_wave_open($e), 100)",
		"xip83.envelope_wave_scan(xip83.wave_open('envelope', $e), 100)" ],
	envelope_wave_frames => [ "xip83.envelope_wave_frames($e, 100, 7)",
		"xip83.envelope_wave_scan($e, 100, 7, 2097152, 'xip83.envelopes')" ],
	envelope_wave_frames_fetch => [
		"xip83.envelope_wave_frames_fetch(xip83.envelope_wave_open($e), 100, 7)",
		"xip83.envelope_wave_scan(xip83.wave_open('envelope', $e), 100, 7, 2097152)" ],
	envelope_wave_frames_rows => [
		"xip83.envelope_wave_frames_rows($e, 7, 2097152, 'xip83.envelopes', NULL)",
		"xip83.envelope_wave_stream($e, 7, 2097152, 'xip83.envelopes')" ],
	envelope_wave_frames_stream => [ "xip83.envelope_wave_frames_stream($e, 7)",
		"xip83.envelope_wave_stream($e, 7, 2097152, 'xip83.envelopes')" ],
	live_group_frames => [ "xip83.live_group_frames(0, 100, 0)",
		"xip83.live_frames('group', 0, 100, 0, 2097152)" ],
	live_welcome_frames => [ "xip83.live_welcome_frames(0, 100, 0)",
		"xip83.live_frames('welcome', 0, 100, 0, 2097152)" ],
	live_envelope_frames => [ "xip83.live_envelope_frames('{0,100,200}', '{-1,0,0}', 100, 0)",
		"xip83.live_frames('envelope', '{0,100,200}', '{-1,0,0}', 100, 0, 2097152)" ],
	frame_started => [ "xip83.frame_started(30000, 'd14n')",
		"xip83.control_frame('started', 30000, 'd14n')" ],
	frame_topics_live => [ "xip83.frame_topics_live(ARRAY['\\x0a01'::bytea, ''])",
		"xip83.control_frame('topics_live', topics => ARRAY['\\x0a01'::bytea, ''])" ],
	frame_catchup_complete => [ "xip83.frame_catchup_complete(9)",
		"xip83.control_frame('catchup_complete', 9)" ],
	frame_ping => [ "xip83.frame_ping(-5)", "xip83.control_frame('ping', -5)" ],
	frame_pong => [ "xip83.frame_pong(5, 'd14n')", "xip83.control_frame('pong', 5, 'd14n')" ],
	decode_subscribe_request => [ "xip83.decode_subscribe_request('\\x0a00', 'v3')",
		"xip83.decode_frame('\\x0a00', 'v3', 'request')" ],
	decode_subscribe_response => [ "xip83.decode_subscribe_response(xip83.control_frame('ping', 3), 'v3')",
		"xip83.decode_frame(xip83.control_frame('ping', 3), 'v3')" ]);
# the handle forms' fetch functions are called with their open
$calls{group_wave_fetch} = $calls{group_wave_open};
$calls{welcome_wave_fetch} = $calls{welcome_wave_open};
$calls{envelope_wave_fetch} = $calls{envelope_wave_open};

my %now = map { (split / /, $_, 2)[0] => 1 }
  split /\n/, $node->safe_psql('updated', $old_functions_sql);
my %now_names = map { /^xip83\.(\w+)\(/ ? ($1 => 1) : () } keys %now;
my ($covered, %kept, %deprecated_names) = (0);
foreach my $line (@old_functions)
{
	my ($function, $acl) = split / /, $line, 2;
	my ($name) = $function =~ /^xip83\.(\w+)\(/;
	# check_batch_topics was internal to 0.1.0's batch inserts (no PUBLIC
	# EXECUTE, no node calls it): gone with them
	next if $name eq 'check_batch_topics';
	ok($now_names{$name}, "$name exists after the update") or next;
	$kept{$name} = 1;
	# the names 0.2.0 kept are its own functions (their 0.1.0 calls resolve
	# through new defaults); the others are wrappers of the same signature
	next unless $now{$function};
	my $deprecated = $node->safe_psql('updated',
		"SELECT obj_description('$function'::regprocedure, 'pg_proc') LIKE 'Deprecated:%'");
	next if $deprecated ne 't';
	$deprecated_names{$name} = 1;
	is( $node->safe_psql('updated',
			"SELECT coalesce(proacl::text, 'default') FROM pg_proc WHERE oid = '$function'::regprocedure"),
		$acl, "$function keeps its privileges");
	next if $calls{$name} && $calls{$name}[2]++;    # each pair once
	my ($old, $new) = @{ $calls{$name} // [] };
	ok(defined $old, "$function is called by this test") or next;
	$covered++;
	my $sql = "SELECT * FROM %s AS r";
	my ($ret, $got, $stderr) = $node->psql('updated', sprintf($sql, $old) . ";\n" . sprintf($sql, $old));
	is($ret, 0, "$name: the 0.1.0 call works") or diag($stderr);
	my $want = $node->safe_psql('updated', sprintf($sql, $new));
	isnt($want, '', "$name: the replacement returns something");
	my @got = split /\n/, $got;
	is(join("\n", @got[ 0 .. $#got / 2 ]), $want, "$name: the same result as the replacement");
	my @warnings = $stderr =~ /WARNING:  xip83\.(\w+) is deprecated/g;
	ok(@warnings >= 1 && @warnings == scalar(keys %{ { map { $_ => 1 } @warnings } }),
		"$name: one WARNING per session and name (@warnings)");
	like($stderr, qr/HINT:  Call xip83\./, "$name: the hint names the replacement");
}
is(scalar(keys %kept), 63, 'every 0.1.0 name but one internal helper is kept');
is(scalar(keys %deprecated_names), 31, 'the 31 names 0.2.0 replaced are deprecated wrappers');
is($covered, 28, "the calls cover them ($covered calls: an open and its fetch share one)");

$node->stop;
done_testing();
