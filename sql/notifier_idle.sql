-- A database's notifier leaves when nothing used the feed there for
-- xip83.notifier_idle_ms, so databases that once touched xip83 do not hold
-- background workers forever; the next use starts it again.
-- Starts from empty tables and fresh ids, whatever ran before in this database.
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes RESTART IDENTITY;
ALTER SYSTEM SET xip83.notifier_idle_ms = 300;
SELECT pg_reload_conf();
CREATE FUNCTION notifiers() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM pg_stat_activity
     WHERE backend_type = 'xip83 notifier' AND datname = current_database() $$;
CREATE PROCEDURE wait_for_notifiers(n bigint) LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. 1000 LOOP
        PERFORM pg_stat_clear_snapshot();
        EXIT WHEN notifiers() = n;
        PERFORM pg_sleep(0.01);
    END LOOP;
END $$;
SELECT xip83.group_horizon() >= 0 AS used;
CALL wait_for_notifiers(1);
SELECT notifiers() AS running_after_use;
CALL wait_for_notifiers(0);
SELECT notifiers() AS running_after_idle;
SELECT xip83.welcome_horizon() >= 0 AS used_again;
CALL wait_for_notifiers(1);
SELECT notifiers() AS running_again;
ALTER SYSTEM RESET xip83.notifier_idle_ms;
SELECT pg_reload_conf();
DROP PROCEDURE wait_for_notifiers(bigint);
DROP FUNCTION notifiers();
