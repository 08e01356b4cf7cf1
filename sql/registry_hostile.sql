-- Hostile roles and misuse of the registry's entry points: none may crash a
-- backend, move a horizon, touch a sequence or fill a table of the registry.
-- Starts from empty tables and fresh ids, whatever ran before in this database.
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes RESTART IDENTITY;
SET client_min_messages = warning;
CREATE ROLE xip83_hostile;
GRANT USAGE ON SCHEMA xip83 TO xip83_hostile;
GRANT CREATE ON SCHEMA public TO xip83_hostile;
SELECT xip83.group_horizon() AS g0, xip83.welcome_horizon() AS w0,
       coalesce(pg_sequence_last_value('xip83.welcome_messages_id_seq'), 0) AS wseq0 \gset

-- Anyone may attach the trigger functions (partitions of tracked tables clone
-- them), but they act on xip83's own and tracked tables only: elsewhere they
-- refuse the write.
SET ROLE xip83_hostile;
CREATE TEMP TABLE no_columns ();
CREATE TRIGGER t BEFORE INSERT ON no_columns
    FOR EACH ROW EXECUTE FUNCTION xip83.register_position('group');
INSERT INTO no_columns DEFAULT VALUES;
CREATE TEMP TABLE truncated (id bigint);
CREATE TRIGGER t AFTER TRUNCATE ON truncated
    FOR EACH STATEMENT EXECUTE FUNCTION xip83.reset_positions('group');
TRUNCATE truncated;
-- The id defaults draw only from their own table's sequence.
CREATE TEMP SEQUENCE far START 4611686018427387904;
SELECT xip83.next_group_id('far');
SELECT xip83.next_welcome_id('xip83.group_messages_id_seq');
SELECT xip83.next_group_id(0);
SELECT xip83.next_group_id(NULL);
-- Horizons are facts about tables the role cannot read.
SELECT xip83.group_horizon();
SELECT * FROM xip83.envelope_horizons();
SELECT group_horizon, welcome_horizon, originator_node_ids FROM xip83.feed_status;
-- Calling a trigger function directly is refused.
SELECT xip83.register_position();
RESET ROLE;
DROP SEQUENCE pg_temp.far;
DROP TABLE pg_temp.no_columns, pg_temp.truncated;

-- Even a superuser cannot point the triggers at another table: refused with
-- the trigger-protocol SQLSTATE instead of reading columns that are not there.
CREATE TABLE no_columns ();
CREATE TRIGGER t BEFORE INSERT ON no_columns
    FOR EACH ROW EXECUTE FUNCTION xip83.register_position('group');
INSERT INTO no_columns DEFAULT VALUES;
CREATE TABLE text_id (id text);
CREATE TRIGGER t BEFORE INSERT ON text_id
    FOR EACH ROW EXECUTE FUNCTION xip83.register_position('welcome');
INSERT INTO text_id VALUES ('x');
CREATE TABLE env_like (originator_node_id int, originator_sequence_id bigint);
CREATE TRIGGER t BEFORE INSERT ON env_like
    FOR EACH ROW EXECUTE FUNCTION xip83.register_position('envelope');
INSERT INTO env_like VALUES (1, 9223372036854775807);
CREATE TRIGGER t2 BEFORE INSERT ON env_like
    FOR EACH ROW EXECUTE FUNCTION xip83.register_position('bogus', 'args');
CREATE TRIGGER t3 AFTER INSERT ON env_like
    FOR EACH STATEMENT EXECUTE FUNCTION xip83.register_position('envelope');
DROP TRIGGER t ON env_like;
INSERT INTO env_like VALUES (1, 1);
DROP TRIGGER t2 ON env_like;
INSERT INTO env_like VALUES (1, 1);
CREATE TABLE truncated (id bigint);
CREATE TRIGGER t AFTER TRUNCATE ON truncated
    FOR EACH STATEMENT EXECUTE FUNCTION xip83.reset_positions('group');
TRUNCATE truncated;
-- On xip83's own table, with columns found by name: a trigger with the wrong
-- kind is refused too.
CREATE TRIGGER wrong_kind BEFORE INSERT ON xip83.group_messages
    FOR EACH ROW EXECUTE FUNCTION xip83.register_position('welcome');
INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)
VALUES ('\x01', '\x01', sha256('\x01'));
DROP TRIGGER wrong_kind ON xip83.group_messages;

-- An explicit id far above the sequence, by a writer without UPDATE on the
-- sequence: refused, and the sequence does not move.
CREATE ROLE xip83_writer;
GRANT USAGE ON SCHEMA xip83 TO xip83_writer;
GRANT INSERT ON xip83.welcome_messages TO xip83_writer;
GRANT USAGE ON SEQUENCE xip83.welcome_messages_id_seq TO xip83_writer;
SET ROLE xip83_writer;
BEGIN;
INSERT INTO xip83.welcome_messages (id, installation_key, data, installation_key_data_hash)
VALUES (9223372036854775807, '\x01', '\x01', sha256('\x0101'));
ROLLBACK;
-- a default id works for it
INSERT INTO xip83.welcome_messages (installation_key, data, installation_key_data_hash)
VALUES ('\x01', '\x0102', sha256('\x010102'));
RESET ROLE;

-- Nothing moved: the group horizon where it was, the welcome horizon and
-- sequence only as far as the one welcome written above.
SELECT xip83.group_horizon() = :g0 AS group_unmoved,
       xip83.welcome_horizon() = (SELECT max(id) FROM xip83.welcome_messages) AS welcome_at_new_row,
       pg_sequence_last_value('xip83.welcome_messages_id_seq') = :wseq0 + 1 AS sequence_one_more;

-- Rolled-back writes of many originators, each in its own transaction, do
-- not fill the registry: their lines hold nothing and are reused; nor do they
-- move any horizon.
DO $$
BEGIN
    FOR o IN 1 .. 1100 LOOP
        BEGIN
            INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic,
                                         originator_envelope)
            VALUES (100000 + o, 1, '\x03aa', '\x00');
            RAISE EXCEPTION 'roll back';
        EXCEPTION WHEN raise_exception THEN NULL;
        END;
        COMMIT;
    END LOOP;
END $$;
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
VALUES (200001, 1, '\x03aa', '\x00');
SELECT horizon FROM xip83.envelope_horizons() WHERE originator_node_id = 200001;
SELECT count(*) AS moved FROM xip83.envelope_horizons() WHERE originator_node_id > 100000 AND horizon > 0
   AND originator_node_id <> 200001;
-- One transaction writing more originators than the registry follows fails
-- with a clear limit (53400) instead of going unregistered.
DO $$
BEGIN
    FOR o IN 1 .. 1100 LOOP
        BEGIN
            INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic,
                                         originator_envelope)
            VALUES (300000 + o, 1, '\x03aa', '\x00');
            RAISE EXCEPTION 'roll back';
        EXCEPTION WHEN raise_exception THEN NULL;
        END;
    END LOOP;
END $$;
DELETE FROM xip83.envelopes WHERE originator_node_id = 200001;

DROP TABLE no_columns, text_id, env_like, truncated;
REVOKE ALL ON xip83.welcome_messages FROM xip83_writer;
REVOKE ALL ON SEQUENCE xip83.welcome_messages_id_seq FROM xip83_writer;
REVOKE ALL ON SCHEMA xip83 FROM xip83_writer, xip83_hostile;
REVOKE ALL ON SCHEMA public FROM xip83_hostile;
DROP ROLE xip83_writer;
DROP ROLE xip83_hostile;

-- The first call of a fresh session with no sequence at all is refused, not
-- an internal error.
\c -
SELECT xip83.next_group_id(0);
SELECT xip83.next_welcome_id(0);
