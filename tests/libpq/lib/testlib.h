/*
 * testlib.h: the little the libpq tests share: connecting from the driver's
 * environment (PGHOST, PGPORT, PGUSER, PGDATABASE), running SQL that must
 * succeed, and counting checks. A test program exits 0 only when every check
 * passed; it prints one line per failed check.
 */
#ifndef XIP83_TESTLIB_H
#define XIP83_TESTLIB_H

#include <libpq-fe.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

extern int	tl_checks;
extern int	tl_failures;

/* Records one check; prints the failure with its place and message. */
#define TL_CHECK(cond, ...) \
	tl_check((cond), __FILE__, __LINE__, #cond, __VA_ARGS__)

void		tl_check(bool ok, const char *file, int line, const char *expr,
					 const char *fmt,...) __attribute__((format(printf, 5, 6)));
/* Aborts the test at once: the rest of it would only report noise. */
void		tl_fatal(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));

PGconn	   *tl_connect(void);
/* Runs SQL with text parameters; any status but COMMAND_OK/TUPLES_OK is fatal. */
PGresult   *tl_exec(PGconn *conn, const char *sql, int nparams, const char *const *params);
/* Runs SQL expected to fail with the given SQLSTATE; returns whether it did. */
bool		tl_exec_fails(PGconn *conn, const char *sql, const char *sqlstate);
/* Connects, retrying for a minute while the server restarts; notices are dropped. */
PGconn	   *tl_reconnect(void);
/* tl_reconnect, then runs setup (several statements, no result): a bench's functions. */
PGconn	   *tl_reconnect_setup(const char *setup);
/* The first column of the first row of a query that must succeed. */
int64_t		tl_scalar(PGconn *conn, const char *sql);
/*
 * bench_wave(topics, floors, ceiling, runs): the best ms of `runs` calls of a
 * first page of 500 of a v3 wave over xip83.group_messages, after one call
 * not counted; timed inside the server, the arrays built beforehand.
 */
#define TL_BENCH_WAVE_SQL \
"CREATE OR REPLACE FUNCTION bench_wave(topics bytea[], floors bigint[], ceil bigint, runs int)" \
"  RETURNS float8 LANGUAGE plpgsql AS $$" \
"DECLARE t0 timestamptz; ts float8[] := '{}'; n bigint;" \
"BEGIN FOR i IN 1..runs + 1 LOOP" \
"    t0 := clock_timestamp();" \
"    SELECT count(*) INTO n FROM xip83.group_wave_scan(topics, floors, 0, ceil, 500);" \
"    IF i > 1 THEN ts := ts || extract(epoch FROM clock_timestamp() - t0) * 1000; END IF;" \
"  END LOOP;" \
"  RETURN (SELECT min(x) FROM unnest(ts) x); END $$;"

/* The first column of the first row as a double (timings a bench's plpgsql returns). */
double		tl_scalar_float(PGconn *conn, const char *sql);
/* Runs the driver's pg_ctl wrapper (XIP83_PGCTL) with arguments; fatal on failure. */
void		tl_pgctl(const char *args);
/* A writer thread of the concurrent-writer tests: its number, random seed, connection, rows made. */
typedef struct TlWriter
{
	int			id;
	unsigned int seed;
	PGconn	   *conn;
	int64_t		serial;
} TlWriter;

/* Seconds on the monotonic clock. */
double		tl_now(void);
void		tl_sleep_us(long us);
/*
 * Waits until writers have done the given share of their target (*done counts
 * what they did), or all of them (nwriters) have finished (*finished).
 */
void		tl_wait_share(atomic_llong *done, int64_t target, double share,
						  atomic_int *finished, int nwriters);
/*
 * Per-round ratios of two arms summarized: the median, and the geometric mean
 * with its 90% confidence interval (Student's t over the logs), which says
 * whether rounds that swing by a fifth on a shared machine resolve a target.
 */
typedef struct TlRatios
{
	double		median;
	double		gmean;
	double		lo;				/* the interval; lo = hi = gmean for one round */
	double		hi;
} TlRatios;

TlRatios	tl_ratios(const double *r, int n);

/*
 * One machine-readable benchmark figure beside the human output:
 * "RESULT<TAB>bench<TAB>case<TAB>metric<TAB>value<TAB>unit", case as
 * "key=value,..." (the parameters the figure depends on). tests/bench/report.py
 * collects these lines into docs/perf/results.tsv.
 */
void		tl_result(const char *bench, const char *casefmt, const char *metric, double value,
					  const char *unit,...) __attribute__((format(printf, 2, 6)));

/* The test's exit status, with a summary line. */
int			tl_done(const char *name);

/* A growing string: zero-initialized, appended to with tl_buf_add; free(b.s). */
typedef struct TlBuf
{
	char	   *s;
	size_t		len;
	size_t		cap;
} TlBuf;

void		tl_buf_add(TlBuf *b, const char *fmt,...) __attribute__((format(printf, 2, 3)));
/* Empties it, keeping the memory. */
void		tl_buf_reset(TlBuf *b);

/* Field helpers on a successful result. */
int64_t		tl_int(const PGresult *res, int row, int col);
bool		tl_bool(const PGresult *res, int row, int col);
/* A bytea field in hex text form ("\x..."), decoded; *len gets its length. */
unsigned char *tl_bytea(const PGresult *res, int row, int col, size_t *len);

#endif							/* XIP83_TESTLIB_H */
