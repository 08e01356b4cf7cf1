/*
 * t_tail_options: xip83-tail refuses every bad option with a message naming it
 * on stderr and exit status 2, and --exit-after N prints exactly N rows even
 * when one fetch delivers more. Only option errors and the row count are
 * checked: the line format belongs to the feed.
 */
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libgen.h>
#include <sys/wait.h>
#include <unistd.h>

/* The tail next to the test programs' directory (build/xip83-tail), and a
 * scratch directory for its output. */
static char tail_path[1024];
static char out_path[256];
static char err_path[256];

/*
 * Runs the tail with args for at most `seconds`; returns its exit status (124
 * when it had to be stopped), its stdout lines and its stderr.
 */
static int
RunTail(const char *args, int seconds, int *lines, char *err, size_t errcap)
{
	char		cmd[4096];
	FILE	   *f;
	int			status;
	size_t		n;
	int			c;

	snprintf(cmd, sizeof(cmd), "timeout %d %s %s >%s 2>%s",
			 seconds, tail_path, args, out_path, err_path);
	status = system(cmd);
	*lines = 0;
	if ((f = fopen(out_path, "r")) != NULL)
	{
		while ((c = fgetc(f)) != EOF)
			*lines += c == '\n';
		fclose(f);
	}
	err[0] = '\0';
	if ((f = fopen(err_path, "r")) != NULL)
	{
		n = fread(err, 1, errcap - 1, f);
		err[n] = '\0';
		fclose(f);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A bad option: exit 2, and stderr names the option and the value. */
static void
Refused(const char *args, const char *option, const char *value)
{
	char		err[4096];
	int			lines;
	int			rc = RunTail(args, 10, &lines, err, sizeof(err));

	TL_CHECK(rc == 2, "%s: exit %d, want 2 (stderr: %s)", args, rc, err);
	TL_CHECK(strstr(err, option) != NULL && strstr(err, value) != NULL,
			 "%s: stderr does not name %s and \"%s\": %s", args, option, value, err);
	TL_CHECK(lines == 0, "%s: printed %d rows", args, lines);
}

int
main(int argc, char **argv)
{
	PGconn	   *conn = tl_connect();
	PGresult   *res;
	char		self[900];
	char		scratch[] = "/tmp/t_tail_options.XXXXXX";
	char		err[4096];
	int			lines;
	int			rc;

	(void) argc;
	snprintf(self, sizeof(self), "%s", argv[0]);
	snprintf(tail_path, sizeof(tail_path), "%s/../xip83-tail", dirname(self));
	if (access(tail_path, X_OK) != 0 || mkdtemp(scratch) == NULL)
		tl_fatal("no %s, or no scratch directory", tail_path);
	snprintf(out_path, sizeof(out_path), "%s/out", scratch);
	snprintf(err_path, sizeof(err_path), "%s/err", scratch);

	Refused("--page 99999999999", "--page", "99999999999");
	Refused("--page 0", "--page", "0");
	Refused("--page 10x", "--page", "10x");
	Refused("--group-after abc", "--group-after", "abc");
	Refused("--group-after -5", "--group-after", "-5");
	Refused("--group-after ' 5'", "--group-after", " 5");
	Refused("--group-after 99999999999999999999", "--group-after", "99999999999999999999");
	Refused("--welcome-after ''", "--welcome-after", "\"\"");
	Refused("--originator-after 100:5:6", "--originator-after", "5:6");
	Refused("--originator-after 100", "--originator-after", "100");
	Refused("--originator-after x:5", "--originator-after", "x");
	Refused("--originator-after 99999999999:5", "--originator-after", "99999999999");
	Refused("--exit-after -1", "--exit-after", "-1");
	Refused("--exit-after 0", "--exit-after", "0");
	Refused("--poll-ms 1e3", "--poll-ms", "1e3");
	Refused("--offline-ms 4294967296", "--offline-ms", "4294967296");
	Refused("--kinds group,bogus", "--kinds", "bogus");
	Refused("--kinds ,", "--kinds", ",");
	Refused("stray", "unexpected argument", "stray");

	/* ten rows in one fetch; --exit-after 3 prints three of them */
	res = tl_exec(conn, "SELECT count(*) FROM xip83.insert_group_messages("
				  "ARRAY(SELECT int4send(g) FROM generate_series(1, 10) g), "
				  "ARRAY(SELECT '\\x01'::bytea FROM generate_series(1, 10)))", 0, NULL);
	TL_CHECK(tl_int(res, 0, 0) == 10, "inserted %lld", (long long) tl_int(res, 0, 0));
	PQclear(res);
	rc = RunTail("--from-start --kinds group --exit-after 3", 60, &lines, err, sizeof(err));
	TL_CHECK(rc == 0, "--exit-after 3: exit %d (stderr: %s)", rc, err);
	TL_CHECK(lines == 3, "--exit-after 3 printed %d rows", lines);
	rc = RunTail("--from-start --kinds group --page 4 --exit-after 10", 60, &lines, err, sizeof(err));
	TL_CHECK(rc == 0 && lines == 10, "--page 4 --exit-after 10: exit %d, %d rows", rc, lines);

	PQfinish(conn);
	unlink(out_path);
	unlink(err_path);
	rmdir(scratch);
	return tl_done("t_tail_options");
}
