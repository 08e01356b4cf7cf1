/*
 * t_session_input: what xip83-session takes from its stdin is bounded by the
 * request it is reading, whatever stdin is: a device, a file, a pipe.
 *
 * 1. /dev/zero as stdin (an endless run of empty requests) ends at once with
 *    INVALID_ARGUMENT for the first one, the session's peak memory under
 *    100 MB.
 * 2. A 70 MiB file whose first prefix declares 70 MiB, and a file whose
 *    prefix declares one byte over the 4 MiB limit after a Ping: each ends
 *    with RESOURCE_EXHAUSTED having read nothing past that prefix (the file
 *    offset the test shares with the session says so); the Ping before it
 *    is answered.
 * 3. Prefixes through a pipe, the pipe left open: one over the limit ends
 *    the stream by itself with RESOURCE_EXHAUSTED, not "malformed"; one of
 *    2^64 - 1 likewise; a varint longer than 10 bytes and one past 64 bits
 *    are malformed (INVALID_ARGUMENT).
 * 4. A request of exactly 4 MiB (a Mutate removing one long topic) is
 *    accepted: acked, and the stream closes OK.
 * 5. What adds leave behind is bounded in bytes, not only in topics: 80
 *    Mutates each adding one topic of 4 MiB end the stream with
 *    RESOURCE_EXHAUSTED.
 *
 * A watcher kills a session whose resident memory passes 400 MB (1.6 GB in
 * 5), so a reader that takes everything fails the test without taking the
 * machine.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "badprefix.h"
#include "session/session.h"
#include "sessionproc.h"
#include "testlib.h"

#define XIP83_TEST_MAX_REQUEST (4 * 1024 * 1024)	/* the largest request the engine takes */
#define PEAK_KB (100 * 1024)
#define LONG_TOPICS 80
#define WATCH_KB (400 * 1024)

static const char *argv0;

/* ---------------------------------------------------------------- memory watch */

typedef struct Watch
{
	pthread_t	thread;
	pid_t		pid;
	long		cap_kb;
	atomic_bool stop;
	atomic_bool killed;
} Watch;

/* VmRSS of pid in kB; -1 once it is gone or a zombie. */
static long
RssKb(pid_t pid)
{
	char		path[64];
	char		line[256];
	long		kb = -1;
	FILE	   *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static void *
WatchMain(void *arg)
{
	Watch	   *w = arg;
	long		kb;

	while (!atomic_load(&w->stop) && (kb = RssKb(w->pid)) >= 0)
	{
		if (kb > w->cap_kb)
		{
			atomic_store(&w->killed, true);
			kill(w->pid, SIGKILL);
			break;
		}
		tl_sleep_us(2000);
	}
	return NULL;
}

static void
WatchStart(Watch *w, pid_t pid, long cap_kb)
{
	w->pid = pid;
	w->cap_kb = cap_kb;
	atomic_store(&w->stop, false);
	atomic_store(&w->killed, false);
	if (pthread_create(&w->thread, NULL, WatchMain, w) != 0)
		tl_fatal("pthread_create failed");
}

/* Stops the watch; whether it had to kill the session. */
static bool
WatchStop(Watch *w)
{
	atomic_store(&w->stop, true);
	pthread_join(w->thread, NULL);
	return atomic_load(&w->killed);
}

/* ---------------------------------------------------------------- helpers */

/* A request's bytes with their prefix, as the session would get them. */
static unsigned char *
PingFrame(size_t *len)
{
	SessionProc h = {.hold = true};

	sp_ping(&h, 7);
	*len = h.held_len;
	return h.held;
}

/* Writes all of it unless the session ended (its STATUS then says why). */
static void
WriteAll(SessionProc *p, const unsigned char *buf, size_t len)
{
	for (size_t off = 0; off < len;)
	{
		ssize_t		w = write(p->to_child, buf + off, len - off);

		if (w <= 0)
			break;
		off += (size_t) w;
	}
}

static void
CountPongs(void *arg, SpEvent *e)
{
	if (e->type == SP_PONG)
		(*(int *) arg)++;
	sp_event_free(e);
}

/* Runs the session on stdin_fd until it ends by itself; the Pongs it sent. */
static int
RunOn(SessionProc *p, int stdin_fd, bool *killed, double *secs)
{
	Watch		w;
	int			pongs = 0;
	double		t0 = tl_now();

	sp_start_stdin(p, argv0, "v3", 30000, stdin_fd);
	WatchStart(&w, p->pid, WATCH_KB);
	sp_finish_events(p, 15000, CountPongs, &pongs);
	*killed = WatchStop(&w);
	*secs = tl_now() - t0;
	return pongs;
}

/* ---------------------------------------------------------------- 1. a device */

static void
TestDevZero(void)
{
	SessionProc p;
	bool		killed;
	double		secs;
	int			fd = open("/dev/zero", O_RDONLY);

	if (fd < 0)
		tl_fatal("/dev/zero: %s", strerror(errno));
	RunOn(&p, fd, &killed, &secs);
	TL_CHECK(!killed && p.exit_code == 1 && strncmp(p.status, "INVALID_ARGUMENT", 16) == 0
			 && strstr(p.status, "version") != NULL,
			 "/dev/zero: STATUS %s, exit %d, killed over %d kB: %d", p.status, p.exit_code,
			 WATCH_KB, killed);
	TL_CHECK(secs < 5, "/dev/zero: ended after %.1f s", secs);
	TL_CHECK(p.maxrss_kb < PEAK_KB, "/dev/zero: peak memory %ld kB (at most %d)", p.maxrss_kb,
			 PEAK_KB);
	close(fd);
}

/* ---------------------------------------------------------------- 2. files */

/*
 * A file of head, then a prefix declaring declared bytes, then zeros up to
 * that many (a hole: nothing is written): the session must end with
 * RESOURCE_EXHAUSTED having read head and the prefix only.
 */
static void
RefusedFile(const char *what, const unsigned char *head, size_t head_len, uint64_t declared,
			int expect_pongs)
{
	SessionProc p;
	unsigned char prefix[10];
	size_t		n = xip83_varint_put(prefix, declared);
	FILE	   *f = tmpfile();
	int			fd;
	bool		killed;
	double		secs;
	int			pongs;
	off_t		offset;

	if (f == NULL)
		tl_fatal("tmpfile: %s", strerror(errno));
	fd = fileno(f);
	if ((head_len > 0 && write(fd, head, head_len) != (ssize_t) head_len)
		|| write(fd, prefix, n) != (ssize_t) n
		|| ftruncate(fd, (off_t) (head_len + n + declared)) != 0
		|| lseek(fd, 0, SEEK_SET) != 0)
		tl_fatal("%s: writing the file failed: %s", what, strerror(errno));
	pongs = RunOn(&p, fd, &killed, &secs);
	offset = lseek(fd, 0, SEEK_CUR);
	TL_CHECK(!killed && p.exit_code == 1 && strncmp(p.status, "RESOURCE_EXHAUSTED", 18) == 0
			 && strstr(p.status, "request of") != NULL,
			 "%s: STATUS %s, exit %d, killed over %d kB: %d", what, p.status, p.exit_code,
			 WATCH_KB, killed);
	TL_CHECK(offset == (off_t) (head_len + n), "%s: the session read %lld bytes (expected %zu)",
			 what, (long long) offset, head_len + n);
	TL_CHECK(pongs == expect_pongs, "%s: %d Pongs (expected %d)", what, pongs, expect_pongs);
	TL_CHECK(secs < 5 && p.maxrss_kb < PEAK_KB, "%s: ended after %.1f s, peak memory %ld kB",
			 what, secs, p.maxrss_kb);
	fclose(f);
}

static void
TestFiles(void)
{
	size_t		ping_len;
	unsigned char *ping = PingFrame(&ping_len);

	RefusedFile("70 MiB file", NULL, 0, 70 * 1024 * 1024, 0);
	RefusedFile("a Ping, then one byte over the limit", ping, ping_len,
				XIP83_TEST_MAX_REQUEST + 1, 1);
	free(ping);
}

/* ---------------------------------------------------------------- 3. pipes */

/* Writes bytes and leaves the pipe open: the session must end by itself. */
static void
PipePrefix(const char *what, const unsigned char *bytes, size_t len, const char *code,
		   const char *text)
{
	SessionProc p;
	unsigned char body[4096] = {0};
	double		t0 = tl_now();

	sp_start(&p, argv0, "v3", 30000);
	if (write(p.to_child, bytes, len) != (ssize_t) len)
		tl_fatal("%s: write failed", what);
	/* body bytes after it, which a refused prefix leaves unread (the write may fail) */
	(void) !write(p.to_child, body, sizeof(body));
	sp_finish(&p, 10000, NULL, NULL);
	TL_CHECK(p.eof && p.exit_code == 1 && strncmp(p.status, code, strlen(code)) == 0
			 && strstr(p.status, text) != NULL,
			 "%s: STATUS %s, exit %d, ended by itself %d (expected %s ... %s)", what, p.status,
			 p.exit_code, p.eof, code, text);
	TL_CHECK(tl_now() - t0 < 5, "%s: ended after %.1f s", what, tl_now() - t0);
}

static void
TestPipes(void)
{
	unsigned char over[10];
	size_t		n = xip83_varint_put(over, XIP83_TEST_MAX_REQUEST + 1);

	PipePrefix("one byte over the limit", over, n, "RESOURCE_EXHAUSTED", "request of 4194305 bytes");
	PipePrefix("2^64 - 1 bytes", bp_max64, sizeof(bp_max64), "RESOURCE_EXHAUSTED",
			   "request of 18446744073709551615 bytes");
	PipePrefix("an 11-byte varint", bp_eleven, sizeof(bp_eleven), "INVALID_ARGUMENT",
			   "malformed length prefix");
	PipePrefix("a varint past 64 bits", bp_bit64, sizeof(bp_bit64), "INVALID_ARGUMENT",
			   "malformed length prefix");
}

/* ---------------------------------------------------------------- 4. the limit itself */

static void
TestAtLimit(void)
{
	Xmtp__Mls__Api__V1__SubscribeRequest req = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__INIT;
	Xmtp__Mls__Api__V1__SubscribeRequest__V1 v1 = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__INIT;
	Xmtp__Mls__Api__V1__SubscribeRequest__V1__Mutate m =
		XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__MUTATE__INIT;
	ProtobufCBinaryData topic;
	SessionProc p;
	SpEvent		e;
	unsigned char *buf;
	size_t		size;
	size_t		n;
	bool		acked = false;

	/* a Mutate removing one topic of a kind-0 id that makes the request 4 MiB exactly */
	req.version_case = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__VERSION_V1;
	req.v1 = &v1;
	v1.request_case = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__REQUEST_MUTATE;
	v1.mutate = &m;
	m.n_removes = 1;
	m.removes = &topic;
	topic.len = XIP83_TEST_MAX_REQUEST;
	topic.data = calloc(XIP83_TEST_MAX_REQUEST, 1);
	while ((size = xmtp__mls__api__v1__subscribe_request__get_packed_size(&req))
		   != XIP83_TEST_MAX_REQUEST)
		topic.len -= size - XIP83_TEST_MAX_REQUEST;
	buf = malloc(10 + size);
	n = xip83_varint_put(buf, size);
	xmtp__mls__api__v1__subscribe_request__pack(&req, buf + n);
	free(topic.data);

	sp_start(&p, argv0, "v3", 30000);
	WriteAll(&p, buf, n + size);
	free(buf);
	while (!acked && sp_next(&p, 30000, &e))
	{
		acked = e.type == SP_CATCHUP && e.tag == 0;
		sp_event_free(&e);
	}
	sp_close(&p);
	sp_finish(&p, 10000, NULL, NULL);
	TL_CHECK(acked && strcmp(p.status, "OK") == 0 && p.exit_code == 0,
			 "a request of %d bytes: acked %d, STATUS %s, exit %d", XIP83_TEST_MAX_REQUEST, acked,
			 p.status, p.exit_code);
}

/* ---------------------------------------------------------------- 5. long topics */

typedef struct LongTopics
{
	pthread_t	thread;
	int			fd;				/* the session's stdin, closed when all is written */
} LongTopics;

/* Writes the Mutates while the test reads what they bring (TopicsLive names every topic). */
static void *
LongTopicsWriter(void *arg)
{
	LongTopics *lt = arg;
	Xmtp__Mls__Api__V1__SubscribeRequest req = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__INIT;
	Xmtp__Mls__Api__V1__SubscribeRequest__V1 v1 = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__INIT;
	Xmtp__Mls__Api__V1__SubscribeRequest__V1__Mutate m =
		XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__MUTATE__INIT;
	Xmtp__Mls__Api__V1__SubscribeRequest__V1__Mutate__Subscription add =
		XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__MUTATE__SUBSCRIPTION__INIT;
	Xmtp__Mls__Api__V1__SubscribeRequest__V1__Mutate__Subscription *adds[1] = {&add};
	SessionProc to = {.to_child = lt->fd};
	unsigned char *buf;

	req.version_case = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__VERSION_V1;
	req.v1 = &v1;
	v1.request_case = XMTP__MLS__API__V1__SUBSCRIBE_REQUEST__V1__REQUEST_MUTATE;
	v1.mutate = &m;
	m.n_adds = 1;
	m.adds = adds;
	add.topic.len = XIP83_TEST_MAX_REQUEST - 64;
	add.topic.data = calloc(add.topic.len, 1);
	buf = malloc(16 + xmtp__mls__api__v1__subscribe_request__get_packed_size(&req) + 16);
	for (int i = 1; i <= LONG_TOPICS; i++)
	{
		size_t		size;
		size_t		n;

		/* kind 0, a different group each time */
		add.topic.data[1] = (uint8_t) i;
		m.mutate_id = (uint64_t) i;
		size = xmtp__mls__api__v1__subscribe_request__get_packed_size(&req);
		n = xip83_varint_put(buf, size);
		xmtp__mls__api__v1__subscribe_request__pack(&req, buf + n);
		WriteAll(&to, buf, n + size);
	}
	free(buf);
	free(add.topic.data);
	close(lt->fd);
	return NULL;
}

/*
 * Topics are at most 1,000,000, but one may be as long as a request: 80
 * Mutates each adding one topic of 4 MiB would leave 320 MiB of identifiers
 * in the topic set. The stream ends with RESOURCE_EXHAUSTED instead.
 */
static void
TestLongTopics(void)
{
	SessionProc p;
	LongTopics	lt;
	Watch		w;

	sp_start(&p, argv0, "v3", 30000);
	WatchStart(&w, p.pid, 4 * WATCH_KB);
	/* the writer owns the session's stdin from here */
	lt.fd = p.to_child;
	p.to_child = -1;
	if (pthread_create(&lt.thread, NULL, LongTopicsWriter, &lt) != 0)
		tl_fatal("pthread_create failed");
	sp_finish(&p, 60000, NULL, NULL);
	pthread_join(lt.thread, NULL);
	TL_CHECK(!WatchStop(&w) && p.exit_code == 1 && strncmp(p.status, "RESOURCE_EXHAUSTED", 18) == 0
			 && strstr(p.status, "topics take more than") != NULL,
			 "topics of 4 MiB: STATUS %s, exit %d, peak memory %ld kB", p.status,
			 p.exit_code, p.maxrss_kb);
}

int
main(int argc, char **argv)
{
	(void) argc;
	argv0 = argv[0];
	TestDevZero();
	TestFiles();
	TestPipes();
	TestAtLimit();
	TestLongTopics();
	return tl_done("t_session_input");
}
