/*
 * testlib.c: connection, SQL and check helpers for the libpq tests.
 */
#include "testlib.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int			tl_checks;
int			tl_failures;

void
tl_check(bool ok, const char *file, int line, const char *expr, const char *fmt,...)
{
	va_list		ap;

	tl_checks++;
	if (ok)
		return;
	tl_failures++;
	fprintf(stderr, "not ok: %s:%d: %s: ", file, line, expr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void
tl_fatal(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "fatal: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

PGconn *
tl_connect(void)
{
	PGconn	   *conn = PQconnectdb("");

	if (PQstatus(conn) != CONNECTION_OK)
		tl_fatal("connect: %s", PQerrorMessage(conn));
	return conn;
}

PGresult *
tl_exec(PGconn *conn, const char *sql, int nparams, const char *const *params)
{
	PGresult   *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		tl_fatal("%s\n  in: %s", PQerrorMessage(conn), sql);
	return res;
}

bool
tl_exec_fails(PGconn *conn, const char *sql, const char *sqlstate)
{
	PGresult   *res = PQexec(conn, sql);
	const char *got = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	bool		ok = PQresultStatus(res) == PGRES_FATAL_ERROR && got && strcmp(got, sqlstate) == 0;

	if (!ok)
		fprintf(stderr, "expected SQLSTATE %s, got %s (%s) from: %s\n",
				sqlstate, got ? got : "none", PQresStatus(PQresultStatus(res)), sql);
	PQclear(res);
	return ok;
}

void
tl_result(const char *bench, const char *casefmt, const char *metric, double value,
		  const char *unit,...)
{
	char		c[256];
	va_list		ap;

	va_start(ap, unit);
	vsnprintf(c, sizeof(c), casefmt, ap);
	va_end(ap);
	printf("RESULT\t%s\t%s\t%s\t%.6g\t%s\n", bench, c, metric, value, unit);
}

int
tl_done(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, tl_checks, tl_failures);
	return tl_failures == 0 && tl_checks > 0 ? 0 : 1;
}

int64_t
tl_int(const PGresult *res, int row, int col)
{
	return strtoll(PQgetvalue(res, row, col), NULL, 10);
}

bool
tl_bool(const PGresult *res, int row, int col)
{
	return PQgetvalue(res, row, col)[0] == 't';
}

unsigned char *
tl_bytea(const PGresult *res, int row, int col, size_t *len)
{
	return PQunescapeBytea((const unsigned char *) PQgetvalue(res, row, col), len);
}

/* Swallows server notices and the warnings sent when a server goes down. */
static void
tl_quiet(void *arg, const char *message)
{
	(void) arg;
	(void) message;
}

PGconn *
tl_reconnect(void)
{
	for (int i = 0; i < 600; i++)
	{
		PGconn	   *c = PQconnectdb("");

		PQsetNoticeProcessor(c, tl_quiet, NULL);
		if (PQstatus(c) == CONNECTION_OK)
			return c;
		PQfinish(c);
		usleep(100000);
	}
	tl_fatal("could not reconnect");
}

void
tl_buf_add(TlBuf *b, const char *fmt,...)
{
	va_list		ap;
	int			n;

	for (;;)
	{
		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			tl_fatal("vsnprintf failed");
		if (b->s && b->len + n < b->cap)
			break;
		b->cap = (b->cap + n + 1) * 2;
		b->s = realloc(b->s, b->cap);
		if (b->s == NULL)
			tl_fatal("out of memory");
	}
	b->len += n;
}

void
tl_buf_reset(TlBuf *b)
{
	b->len = 0;
	if (b->s)
		b->s[0] = '\0';
}

int64_t
tl_scalar(PGconn *conn, const char *sql)
{
	PGresult   *res = tl_exec(conn, sql, 0, NULL);
	int64_t		v = tl_int(res, 0, 0);

	PQclear(res);
	return v;
}

double
tl_scalar_float(PGconn *conn, const char *sql)
{
	PGresult   *res = tl_exec(conn, sql, 0, NULL);
	double		v = atof(PQgetvalue(res, 0, 0));

	PQclear(res);
	return v;
}

PGconn *
tl_reconnect_setup(const char *setup)
{
	PGconn	   *c = tl_reconnect();
	PGresult   *r = PQexec(c, setup);

	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		tl_fatal("setup: %s", PQerrorMessage(c));
	PQclear(r);
	return c;
}

void
tl_pgctl(const char *args)
{
	const char *pgctl = getenv("XIP83_PGCTL");
	char		cmd[1024];

	if (pgctl == NULL)
		tl_fatal("XIP83_PGCTL is not set");
	snprintf(cmd, sizeof(cmd), "%s %s >/dev/null", pgctl, args);
	if (system(cmd) != 0)
		tl_fatal("pg_ctl %s failed", args);
}

double
tl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int
CompareDouble(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

TlRatios
tl_ratios(const double *r, int n)
{
	/* two-sided 90% t quantiles for 1..30 degrees of freedom; then 1.645 */
	static const double t90[] = {6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860,
		1.833, 1.812, 1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725,
	1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697};
	TlRatios	out = {0, 0, 0, 0};
	double	   *sorted;
	double		mean = 0,
				var = 0,
				half = 0;

	if (n <= 0)
		return out;
	for (int i = 0; i < n; i++)
		mean += log(r[i]) / n;
	for (int i = 0; i < n && n > 1; i++)
		var += (log(r[i]) - mean) * (log(r[i]) - mean) / (n - 1);
	if (n > 1)
		half = (n - 1 <= 30 ? t90[n - 2] : 1.645) * sqrt(var / n);
	out.gmean = exp(mean);
	out.lo = exp(mean - half);
	out.hi = exp(mean + half);
	sorted = malloc(sizeof(double) * n);
	memcpy(sorted, r, sizeof(double) * n);
	qsort(sorted, n, sizeof(double), CompareDouble);
	out.median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
	free(sorted);
	return out;
}

void
tl_sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};

	nanosleep(&ts, NULL);
}

void
tl_wait_share(atomic_llong *done, int64_t target, double share, atomic_int *finished,
			  int nwriters)
{
	while (atomic_load(done) < (int64_t) (target * share) && atomic_load(finished) < nwriters)
		tl_sleep_us(10000);
}
