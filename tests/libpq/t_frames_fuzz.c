/*
 * t_frames_fuzz: runs the libFuzzer harness over the decoders
 * (tests/fuzz/fuzz_decoders.c, AddressSanitizer + LeakSanitizer +
 * UndefinedBehaviorSanitizer) for a bounded time, from seeds the server makes:
 * delivery frames of every kind, control frames, client requests and stored
 * envelopes. Fails when the harness is missing, finds a crash, a leak or
 * undefined behaviour, or did not run.
 *
 * XIP83_FUZZ_SECONDS sets the time (default 20).
 */
#include "testlib.h"
#include "wave_d14n_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define HARNESS "build/fuzz/fuzz_decoders"

/* Selector bytes of the harness: which decoder reads the rest. */
enum
{
	V3_RESPONSE, V3_REQUEST, D14N_RESPONSE, D14N_REQUEST, ENVELOPE
};

/* Seeds: (selector, SQL returning one bytea per row). */
static const struct
{
	int			selector;
	const char *sql;
}			seeds[] = {
	{V3_RESPONSE, "SELECT xip83.control_frame('started', 30000) UNION ALL SELECT xip83.control_frame('ping', 7) "
	"UNION ALL SELECT xip83.control_frame('topics_live', topics => ARRAY['\\x00aa'::bytea, '\\x01bb']) "
	"UNION ALL SELECT xip83.control_frame('catchup_complete', 12)"},
	{V3_RESPONSE, "SELECT frame FROM xip83.group_wave_scan(ARRAY['\\x0a'::bytea, '\\x0b'], "
	"'{0,0}', 0, 1000, 10, 7, 200, 'fz_gm')"},
	{V3_RESPONSE, "SELECT frame FROM xip83.welcome_wave_scan(ARRAY['\\x01aa'::bytea], '{0}', 0, "
	"1000, 10, 3, 2097152, 'fz_wm')"},
	{V3_REQUEST, "SELECT '\\x0a1a0a180a070a02000a1080010a040a0200bb12020101180120ea07'::bytea"},
	{D14N_REQUEST, "SELECT '\\x0a190a170a130a02000a120d0a0508071080010a04080910012003'::bytea "
	"UNION ALL SELECT '\\x0a0412020805'::bytea"},
	{D14N_RESPONSE, "SELECT frame FROM xip83.envelope_wave_scan(ARRAY['\\x00aa'::bytea], '{7}', "
	"'{0}', '{7}', '{10}', 0, 0, 10, 11, 2097152, source => 'fz_meta', blob_source => 'fz_blob')"},
	{ENVELOPE, "SELECT originator_envelope FROM fz_blob"},
};

static const char *setup_sql =
"CREATE TABLE fz_gm (id bigint PRIMARY KEY, created_at timestamp NOT NULL, group_id bytea NOT NULL,"
"  data bytea NOT NULL, is_commit boolean, sender_hmac bytea, should_push boolean);"
"CREATE INDEX ON fz_gm (group_id, id);"
"INSERT INTO fz_gm VALUES (1, '2024-01-01', '\\x0a', '\\x0101', true, '\\xaa', NULL),"
"  (2, '2024-01-02 03:04:05.678', '\\x0b', '\\x02', NULL, NULL, true), (3, '2000-01-01', '\\x0a', '\\x03', false, '\\x', false);"
"CREATE TABLE fz_wm (id bigint PRIMARY KEY, created_at timestamp NOT NULL,"
"  installation_key bytea NOT NULL, data bytea NOT NULL, hpke_public_key bytea,"
"  wrapper_algorithm smallint, welcome_metadata bytea, message_type smallint);"
"CREATE INDEX ON fz_wm (installation_key, id);"
"INSERT INTO fz_wm VALUES (1, '2024-01-01', '\\x01aa', '\\xd1', '\\x0e', 0, '\\x3e', 0),"
"  (2, '2024-01-01', '\\x01aa', '\\xd3', '\\x0f', 2, NULL, 1);"
"CREATE TABLE fz_meta (originator_node_id int, originator_sequence_id bigint, topic bytea,"
"  gateway_time timestamp, PRIMARY KEY (originator_node_id, originator_sequence_id));"
"CREATE INDEX ON fz_meta (topic, originator_node_id, originator_sequence_id);"
"CREATE TABLE fz_blob (originator_node_id int, originator_sequence_id bigint,"
"  originator_envelope bytea, PRIMARY KEY (originator_node_id, originator_sequence_id));"
"INSERT INTO fz_meta VALUES (7, 1, '\\x00aa', '2024-01-01'), (7, 2, '\\x00aa', '2024-01-01');"
/* OriginatorEnvelope{1: Unsigned{1: 7, 2: seq, 4: Payer{1: Client{1: Aad{2: topic}}}}, 3: proof} */
"INSERT INTO fz_blob VALUES"
"  (7, 1, '\\x0a14080710012209 0a070a0512030000aa 1a040a02beef'::bytea),"
"  (7, 2, '\\x0a14080710022209 0a070a0512030000aa 1a040a02beef'::bytea);";

int
main(void)
{
	PGconn	   *conn = tl_connect();
	PGresult   *res;
	char		dir[] = "/tmp/xip83_fuzzXXXXXX";
	char		cmd[512];
	char		line[1024];
	const char *secs = getenv("XIP83_FUZZ_SECONDS");
	int			nseeds = 0;
	long		runs = -1;
	FILE	   *p;
	int			status;
	struct stat st;

	if (stat(HARNESS, &st) != 0)
		tl_fatal("%s is missing: build it with clang (make test-programs)", HARNESS);
	wd_exec_script(conn, setup_sql);
	if (mkdtemp(dir) == NULL)
		tl_fatal("mkdtemp");

	for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++)
	{
		res = tl_exec(conn, seeds[s].sql, 0, NULL);
		TL_CHECK(PQntuples(res) > 0, "seed query %zu returns bytes", s);
		for (int r = 0; r < PQntuples(res); r++)
		{
			size_t		len;
			unsigned char *b = tl_bytea(res, r, 0, &len);
			char		path[256];
			FILE	   *f;

			snprintf(path, sizeof(path), "%s/seed%03d", dir, nseeds++);
			f = fopen(path, "wb");
			if (f == NULL)
				tl_fatal("cannot write %s", path);
			fputc(seeds[s].selector, f);
			fwrite(b, 1, len, f);
			fclose(f);
			PQfreemem(b);
		}
		PQclear(res);
	}
	PQfinish(conn);

	/* the harness leaves crash files in the corpus directory */
	snprintf(cmd, sizeof(cmd),
			 "%s -max_total_time=%s -rss_limit_mb=2048 -artifact_prefix=%s/ -print_final_stats=1 "
			 "%s 2>&1", HARNESS, secs ? secs : "20", dir, dir);
	p = popen(cmd, "r");
	if (p == NULL)
		tl_fatal("popen %s", cmd);
	while (fgets(line, sizeof(line), p))
	{
		long		n;

		if (sscanf(line, "Done %ld runs", &n) == 1)
			runs = n;
		if (strstr(line, "ERROR") || strstr(line, "runtime error") || strstr(line, "SUMMARY"))
			fputs(line, stdout);
	}
	status = pclose(p);
	TL_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			 "the harness found a crash, leak or undefined behaviour (status %d); inputs in %s",
			 status, dir);
	TL_CHECK(runs > 10000, "the harness ran %ld inputs from %d seeds", runs, nseeds);
	printf("fuzz_decoders: %ld runs from %d seeds\n", runs, nseeds);
	if (tl_failures == 0)
	{
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return tl_done("t_frames_fuzz");
}
