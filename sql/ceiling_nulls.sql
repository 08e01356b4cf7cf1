-- Ceilings over a node's table whose id (or sequence id) is nullable: an
-- ascending btree keeps NULLs last, where a backward probe starts. The
-- ceiling is the highest non-NULL position, never 0 because of NULL rows.
CREATE TABLE public.nullable_gm (id bigint, created_at timestamp NOT NULL DEFAULT now(),
                                 group_id bytea NOT NULL, data bytea NOT NULL,
                                 is_commit boolean, sender_hmac bytea, should_push boolean);
CREATE UNIQUE INDEX ON public.nullable_gm (id);
CREATE INDEX ON public.nullable_gm (group_id, id);
INSERT INTO public.nullable_gm (id, group_id, data)
VALUES (10, '\x0a', '\x01'), (42, '\x0b', '\x02'), (NULL, '\x0a', '\x03'), (NULL, '\x0b', '\x04');
SELECT xip83.group_ceiling('public.nullable_gm');
-- only NULL ids: nothing to pin
DELETE FROM public.nullable_gm WHERE id IS NOT NULL;
SELECT xip83.group_ceiling('public.nullable_gm');

CREATE TABLE public.nullable_env (originator_node_id int, originator_sequence_id bigint,
                                  topic bytea, gateway_time timestamp DEFAULT now(),
                                  originator_envelope bytea);
CREATE UNIQUE INDEX ON public.nullable_env (originator_node_id, originator_sequence_id);
CREATE INDEX ON public.nullable_env (topic, originator_node_id, originator_sequence_id);
INSERT INTO public.nullable_env (originator_node_id, originator_sequence_id, topic)
VALUES (100, 5, '\x01'), (100, 7, '\x01'), (100, NULL, '\x01'), (100, NULL, '\x02'),
       (200, 3, '\x01'), (200, NULL, '\x01'),
       (300, NULL, '\x01'),                   -- an originator with no sequence at all
       (NULL, 9, '\x01');
SELECT * FROM xip83.originator_ceilings(NULL, 'public.nullable_env');
SELECT * FROM xip83.originator_ceilings('{100,200,300,400}', 'public.nullable_env');

DROP TABLE public.nullable_gm, public.nullable_env;
