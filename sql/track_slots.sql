-- Who may track a table, and the registry entries that tracked tables in use
-- share across the server (xip83.max_tracked_tables): a role without the
-- grant takes none, a temporary table takes none, a role that may not read a
-- tracked table takes none for it, and an entry is free as soon as the drop
-- or untrack of its table commits.
SET client_min_messages = warning;
CREATE ROLE regress_slot_nobody;
CREATE ROLE regress_slot_node;
GRANT USAGE ON SCHEMA xip83 TO regress_slot_nobody, regress_slot_node;
CREATE SCHEMA slot_nobody AUTHORIZATION regress_slot_nobody;
CREATE SCHEMA slots AUTHORIZATION regress_slot_node;
GRANT USAGE ON SCHEMA slots TO regress_slot_nobody;
GRANT USAGE ON SCHEMA slot_nobody TO regress_slot_node;
-- a v3 group table of the node's layout, owned by the caller
CREATE FUNCTION public.slot_table(name text) RETURNS regclass LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE TABLE %s (id bigserial PRIMARY KEY,'
                   ' created_at timestamp NOT NULL DEFAULT now(), group_id bytea NOT NULL,'
                   ' data bytea NOT NULL, group_id_data_hash bytea NOT NULL UNIQUE,'
                   ' is_commit boolean, sender_hmac bytea, should_push boolean)', name);
    EXECUTE format('CREATE INDEX ON %s (group_id, id)', name);
    RETURN name::regclass;
END $$;
\set VERBOSITY terse

-- A role with nothing but USAGE on the schema (and TEMP) tracks nothing: not
-- a table of its own, not a temporary table.
SET ROLE regress_slot_nobody;
SELECT public.slot_table('slot_nobody.mine');
SELECT xip83.track('slot_nobody.mine', 'group');
SELECT public.slot_table('pg_temp.scratch');
SELECT xip83.track('pg_temp.scratch', 'group');
RESET ROLE;

-- Granted, a role tracks the tables it owns; never a temporary table.
GRANT EXECUTE ON FUNCTION xip83.track(regclass, text, regclass) TO regress_slot_node;
SET ROLE regress_slot_node;
SELECT public.slot_table('pg_temp.scratch2');
SELECT xip83.track('pg_temp.scratch2', 'group');
SELECT xip83.track('slot_nobody.mine', 'group');
SELECT public.slot_table('slots.node_groups');
SELECT xip83.track('slots.node_groups', 'group');
INSERT INTO slots.node_groups (group_id, data, group_id_data_hash) VALUES ('g', 'd', 'h');
SELECT xip83.group_horizon('slots.node_groups');
SELECT source, kind FROM xip83.tracked;
RESET ROLE;

-- Every entry of the tracked pool taken: the last table tracked gets none.
-- Other suites' feeds may hold entries for a minute, so fill what is left.
CREATE FUNCTION public.slot_fill() RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    n int := 0;
BEGIN
    LOOP
        n := n + 1;
        PERFORM xip83.track(public.slot_table(format('slots.t%s', n)), 'group');
        BEGIN
            PERFORM xip83.group_horizon(format('slots.t%s', n)::regclass);
        EXCEPTION WHEN configuration_limit_exceeded THEN
            RETURN n;
        END;
        IF n > 1000 THEN
            RAISE EXCEPTION 'the tracked pool never filled';
        END IF;
    END LOOP;
END $$;
SELECT public.slot_fill() AS last \gset
SELECT :last > 4 AS enough_entries;
SELECT public.slot_table('slots.more') IS NOT NULL AS made;
SELECT xip83.track('slots.more', 'group');
SELECT public.slot_table('slots.more2') IS NOT NULL AS made;
SELECT xip83.track('slots.more2', 'group');
SELECT xip83.group_horizon(('slots.t' || :last)::regclass);

-- A role that may not read a tracked table, or draw its ids, takes no entry
-- for it: each entry freed below goes to the next table read.
DROP TABLE slots.t1;
SET ROLE regress_slot_nobody;
SELECT xip83.late_cursor('slots.more');
RESET ROLE;
SELECT xip83.group_horizon(('slots.t' || :last)::regclass);
DROP TABLE slots.t2;
SET ROLE regress_slot_nobody;
SELECT xip83.next_id('slots.more');
RESET ROLE;
SELECT xip83.group_horizon('slots.more2');

-- A drop rolled back, to a savepoint or whole, keeps the table's entry.
BEGIN;
SAVEPOINT s;
DROP TABLE slots.t3;
ROLLBACK TO SAVEPOINT s;
COMMIT;
BEGIN;
DROP TABLE slots.t3;
ROLLBACK;
SELECT xip83.group_horizon('slots.more');
SELECT xip83.group_horizon('slots.t3');

-- untrack, and a drop in a savepoint that commits, free their entries as
-- they commit.
SELECT xip83.untrack('slots.t3');
SELECT xip83.group_horizon('slots.more');
SELECT public.slot_table('slots.more3') IS NOT NULL AS made;
SELECT xip83.track('slots.more3', 'group');
BEGIN;
SAVEPOINT s;
DROP TABLE slots.t4;
RELEASE SAVEPOINT s;
COMMIT;
SELECT xip83.group_horizon('slots.more3');

-- DROP SCHEMA ... CASCADE, and the drop of a tracked envelope table's blob
-- table, free theirs too: afterwards every entry but the one in use is free.
CREATE SCHEMA slots_later;
CREATE TABLE slots_later.meta (
    originator_node_id int NOT NULL, originator_sequence_id bigint NOT NULL,
    topic bytea NOT NULL, gateway_time timestamp NOT NULL DEFAULT now(),
    expiry bigint NOT NULL DEFAULT 0, payer_id int,
    PRIMARY KEY (originator_node_id, originator_sequence_id));
CREATE INDEX ON slots_later.meta (topic, originator_node_id, originator_sequence_id);
CREATE TABLE slots_later.blob (
    originator_node_id int NOT NULL, originator_sequence_id bigint NOT NULL,
    originator_envelope bytea NOT NULL,
    PRIMARY KEY (originator_node_id, originator_sequence_id));
SELECT xip83.track('slots_later.meta', 'envelope', 'slots_later.blob');
DROP SCHEMA slots CASCADE;
SELECT count(*) FROM xip83.envelope_horizons('slots_later.meta');
DROP TABLE slots_later.blob;
SELECT count(*) FROM xip83.tracked;
CREATE SCHEMA slots AUTHORIZATION regress_slot_node;
SELECT public.slot_fill() = :last + 1 AS every_entry_free;
DROP SCHEMA slots CASCADE;
SELECT count(*) FROM xip83.tracked;

\set VERBOSITY default
DROP TABLE pg_temp.scratch, pg_temp.scratch2;
DROP SCHEMA slots_later, slot_nobody CASCADE;
DROP FUNCTION public.slot_table(text), public.slot_fill();
REVOKE ALL ON FUNCTION xip83.track(regclass, text, regclass) FROM regress_slot_node;
REVOKE USAGE ON SCHEMA xip83 FROM regress_slot_nobody, regress_slot_node;
DROP ROLE regress_slot_nobody;
DROP ROLE regress_slot_node;
