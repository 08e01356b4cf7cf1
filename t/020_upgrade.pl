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

$node->stop;
done_testing();
