-- A v3 (MLS) node's message tables, as its own migrations leave them, in
-- schema public: the table history (columns added over time, one added and
-- dropped again) and the SQL insert functions the node calls, several
-- versions side by side. Nothing of xip83 here: this is what a node brings.
-- Apply with psql to a database; tests/nodes/README.md says what it models.

-- First migration: one id sequence for all groups, plain nextval default.
CREATE TABLE public.group_messages (
    id                 bigserial PRIMARY KEY,
    created_at         timestamp NOT NULL DEFAULT now(),
    group_id           bytea     NOT NULL,
    data               bytea     NOT NULL,
    group_id_data_hash bytea     NOT NULL UNIQUE
);
CREATE INDEX group_messages_group_id_id_idx ON public.group_messages (group_id, id);

CREATE TABLE public.welcome_messages (
    id                         bigserial PRIMARY KEY,
    created_at                 timestamp NOT NULL DEFAULT now(),
    installation_key           bytea     NOT NULL,
    data                       bytea     NOT NULL,
    hpke_public_key            bytea,
    installation_key_data_hash bytea     NOT NULL UNIQUE
);
CREATE INDEX welcome_messages_installation_key_id_idx
    ON public.welcome_messages (installation_key, id);

-- A column that came and went: it stays in the catalog as a dropped
-- attribute, so attribute numbers of later columns differ from a fresh table.
ALTER TABLE public.welcome_messages ADD COLUMN message_cursor bigint;
ALTER TABLE public.welcome_messages DROP COLUMN message_cursor;

-- Welcome wrapping and pointers: no CHECK, any smallint is stored.
ALTER TABLE public.welcome_messages
    ADD COLUMN wrapper_algorithm smallint NOT NULL DEFAULT 0,
    ADD COLUMN welcome_metadata  bytea,
    ADD COLUMN message_type      smallint NOT NULL DEFAULT 0;  -- 0 welcome, 1 welcome pointer

-- Added later and nullable: old rows keep NULL.
ALTER TABLE public.group_messages
    ADD COLUMN sender_hmac bytea,
    ADD COLUMN should_push boolean;
ALTER TABLE public.group_messages ADD COLUMN is_commit boolean DEFAULT NULL;
-- The is_commit backfill walks the rows still NULL.
CREATE INDEX group_messages_is_commit_null_idx ON public.group_messages (id)
    WHERE is_commit IS NULL;

-- Insert functions. Each takes a transaction advisory lock on its topic and
-- then INSERTs with the sequence default, so ids commit in order within one
-- topic; across topics a lower id may commit after a higher one. A duplicate
-- hash is success: the stored row is returned.

-- First version: the duplicate is caught as unique_violation (a subtransaction).
CREATE FUNCTION public.insert_group_message(group_id bytea, data bytea, group_id_data_hash bytea)
RETURNS SETOF public.group_messages
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext(encode(insert_group_message.group_id, 'hex')));
    BEGIN
        RETURN QUERY INSERT INTO public.group_messages (group_id, data, group_id_data_hash)
            VALUES (insert_group_message.group_id, insert_group_message.data,
                    insert_group_message.group_id_data_hash)
            RETURNING *;
    EXCEPTION WHEN unique_violation THEN
        RETURN QUERY SELECT * FROM public.group_messages m
            WHERE m.group_id_data_hash = insert_group_message.group_id_data_hash;
    END;
END;
$$;

-- Third version: sender HMAC, push and commit flags; ON CONFLICT instead of the
-- subtransaction.
CREATE FUNCTION public.insert_group_message_v3(group_id bytea, data bytea,
                                               group_id_data_hash bytea, sender_hmac bytea,
                                               should_push boolean, is_commit boolean)
RETURNS SETOF public.group_messages
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext(encode(insert_group_message_v3.group_id, 'hex')));
    RETURN QUERY INSERT INTO public.group_messages
            (group_id, data, group_id_data_hash, sender_hmac, should_push, is_commit)
        VALUES (insert_group_message_v3.group_id, insert_group_message_v3.data,
                insert_group_message_v3.group_id_data_hash, insert_group_message_v3.sender_hmac,
                insert_group_message_v3.should_push, insert_group_message_v3.is_commit)
        ON CONFLICT ON CONSTRAINT group_messages_group_id_data_hash_key DO NOTHING
        RETURNING *;
    IF NOT FOUND THEN
        RETURN QUERY SELECT * FROM public.group_messages m
            WHERE m.group_id_data_hash = insert_group_message_v3.group_id_data_hash;
    END IF;
END;
$$;

-- Second version, kept for older callers: what the third does, without the commit flag.
CREATE FUNCTION public.insert_group_message_v2(group_id bytea, data bytea,
                                               group_id_data_hash bytea, sender_hmac bytea,
                                               should_push boolean)
RETURNS SETOF public.group_messages
LANGUAGE sql AS $$
    SELECT * FROM public.insert_group_message_v3(group_id, data, group_id_data_hash,
                                                 sender_hmac, should_push, NULL);
$$;

-- Second version: wrapper algorithm, metadata and message type, taken as given.
CREATE FUNCTION public.insert_welcome_message_v2(installation_key bytea, data bytea,
                                                 installation_key_data_hash bytea,
                                                 hpke_public_key bytea,
                                                 wrapper_algorithm smallint,
                                                 welcome_metadata bytea,
                                                 message_type smallint)
RETURNS SETOF public.welcome_messages
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(
        hashtext(encode(insert_welcome_message_v2.installation_key, 'hex')));
    RETURN QUERY INSERT INTO public.welcome_messages
            (installation_key, data, installation_key_data_hash, hpke_public_key,
             wrapper_algorithm, welcome_metadata, message_type)
        VALUES (insert_welcome_message_v2.installation_key, insert_welcome_message_v2.data,
                insert_welcome_message_v2.installation_key_data_hash,
                insert_welcome_message_v2.hpke_public_key,
                insert_welcome_message_v2.wrapper_algorithm,
                insert_welcome_message_v2.welcome_metadata,
                insert_welcome_message_v2.message_type)
        ON CONFLICT ON CONSTRAINT welcome_messages_installation_key_data_hash_key DO NOTHING
        RETURNING *;
    IF NOT FOUND THEN
        RETURN QUERY SELECT * FROM public.welcome_messages m
            WHERE m.installation_key_data_hash
                = insert_welcome_message_v2.installation_key_data_hash;
    END IF;
END;
$$;

-- First version, kept for older callers: a plain welcome.
CREATE FUNCTION public.insert_welcome_message(installation_key bytea, data bytea,
                                              installation_key_data_hash bytea,
                                              hpke_public_key bytea)
RETURNS SETOF public.welcome_messages
LANGUAGE sql AS $$
    SELECT * FROM public.insert_welcome_message_v2(installation_key, data,
                                                   installation_key_data_hash, hpke_public_key,
                                                   0::smallint, NULL, 0::smallint);
$$;
