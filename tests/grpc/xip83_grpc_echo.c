/*
 * xip83_grpc_echo.c: a gRPC test server on the gateway's transport
 * (client/grpc/h2_server.h), for tests/grpc/t_*.py. No database.
 *
 *   xip83-grpc-echo [--h2c HOST:PORT] [--tls HOST:PORT --cert PEM --key PEM]
 *                   [--max-message BYTES] [--max-streams N] [--drain-ms MS]
 *                   [--max-connections N] [--max-memory BYTES] [--max-conn-memory BYTES]
 *                   [--max-conn-input BYTES] [--handshake-timeout-ms MS]
 *                   [--idle-timeout-ms MS] [--request-timeout-ms MS]
 *
 * Prints "h2c PORT" / "tls PORT" for each listener (port 0: a free one), then
 * "ready"; on SIGTERM or SIGINT it drains and exits 0. Methods, all under
 * /xip83.test.Echo/ (any other path, the real gateway's included, answers
 * UNIMPLEMENTED):
 *   Echo    bidi: every message back as it came; OK on half-close.
 *   Stream  server stream: the request is three big-endian uint32 count,
 *           size, hold; count messages of size bytes go out, each starting
 *           with its 8-byte big-endian number and filled with its low byte.
 *           Never more than PRODUCE_CAP bytes are queued: it waits for the
 *           writable callback, as the gateway's core will. OK at the end,
 *           or, with hold set, the stream stays open until cancelled.
 *   Tick    server stream: the request is big-endian uint32 count and
 *           interval_ms; one 8-byte message (its number) every interval, from
 *           a loop timer, then OK. Cancelling stops the timer.
 *   Fail    the request is a big-endian uint32 status and a text: the call
 *           ends with them.
 *   Stats   one message: "connections=N streams=N pending=N peak=N
 *           produced=N rss_kb=N memory=N input=N closed=N cancelled=N
 *           LIMIT=N..." (peak: the most memory ever queued on one stream;
 *           memory and input: the transport's accounts; closed, cancelled:
 *           streams closed, by the flag closed got; LIMIT: each
 *           Xip83H2Limit's name, the times it was reached; produced: the
 *           bytes Stream queued, all streams).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h2_server.h"

#define PRODUCE_CAP (1 << 20)

/* A stream's generator: Stream's, or Tick's with its timer. */
typedef struct Producer
{
	uint32_t	count;
	uint32_t	size;			/* Tick: the interval */
	uint32_t	hold;
	uint32_t	sent;
	unsigned char *buf;
	Xip83Timer	timer;
	Xip83H2Stream *stream;
} Producer;

static Xip83H2Server *server;
static size_t peak_pending;
static uint64_t produced;		/* bytes queued by Stream, all streams */
static uint64_t closed_ok;		/* streams closed after their end was sent */
static uint64_t closed_cancelled;	/* streams closed before it */

static uint32_t
Be32(const unsigned char *p)
{
	return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) | ((uint32_t) p[2] << 8) | p[3];
}

/* Sends s's message and notes the largest queue seen. */
static bool
Send(Xip83H2Stream *s, const void *msg, size_t len)
{
	bool		ok = xip83_h2_send(s, msg, len);

	if (xip83_h2_pending(s) > peak_pending)
		peak_pending = xip83_h2_pending(s);
	return ok;
}

static int
OpenAny(Xip83H2Stream *s, const Xip83H2Header *h, size_t n)
{
	return XIP83_GRPC_OK;
}

static void
ClosedAny(Xip83H2Stream *s, bool cancelled)
{
	Producer   *p = xip83_h2_data(s);

	(*(cancelled ? &closed_cancelled : &closed_ok))++;
	if (p)
	{
		xip83_h2_timer_stop(server, &p->timer);
		free(p->buf);
		free(p);
	}
}

static void
HalfCloseOk(Xip83H2Stream *s)
{
	xip83_h2_finish(s, XIP83_GRPC_OK, NULL);
}

static void
EchoMessage(Xip83H2Stream *s, const unsigned char *msg, size_t len)
{
	if (!Send(s, msg, len))
		xip83_h2_finish(s, XIP83_GRPC_RESOURCE_EXHAUSTED, "out of memory");
}

/* Queues messages up to the cap; the writable callback brings it back. */
static void
Produce(Xip83H2Stream *s)
{
	Producer   *p = xip83_h2_data(s);

	while (p->sent < p->count && xip83_h2_pending(s) < PRODUCE_CAP)
	{
		uint64_t	seq = p->sent;

		for (int i = 0; i < 8 && (size_t) i < p->size; i++)
			p->buf[i] = (unsigned char) (seq >> (56 - 8 * i));
		if (p->size > 8)
			memset(p->buf + 8, (int) (seq & 0xff), p->size - 8);
		if (!Send(s, p->buf, p->size))
			return xip83_h2_finish(s, XIP83_GRPC_RESOURCE_EXHAUSTED, "out of memory");
		p->sent++;
		produced += p->size;
	}
	if (p->sent == p->count && !p->hold)
		xip83_h2_finish(s, XIP83_GRPC_OK, NULL);
}

static void
StreamMessage(Xip83H2Stream *s, const unsigned char *msg, size_t len)
{
	Producer   *p;

	if (xip83_h2_data(s) != NULL || len != 12)
		return xip83_h2_finish(s, XIP83_GRPC_INVALID_ARGUMENT, "want one 12-byte request");
	p = calloc(1, sizeof(*p));
	if (p == NULL || (p->buf = malloc(Be32(msg + 4) + 1)) == NULL)
	{
		free(p);
		return xip83_h2_finish(s, XIP83_GRPC_RESOURCE_EXHAUSTED, "out of memory");
	}
	p->count = Be32(msg);
	p->size = Be32(msg + 4);
	p->hold = Be32(msg + 8);
	xip83_h2_set_data(s, p);
	Produce(s);
}

static void
TickFire(void *arg)
{
	Producer   *p = arg;
	unsigned char msg[8];

	for (int i = 0; i < 8; i++)
		msg[i] = (unsigned char) ((uint64_t) p->sent >> (56 - 8 * i));
	if (!Send(p->stream, msg, sizeof(msg)))
		return xip83_h2_finish(p->stream, XIP83_GRPC_RESOURCE_EXHAUSTED, "out of memory");
	if (++p->sent == p->count)
		return xip83_h2_finish(p->stream, XIP83_GRPC_OK, NULL);
	xip83_h2_timer_start(server, &p->timer, p->size, TickFire, p);
}

static void
TickMessage(Xip83H2Stream *s, const unsigned char *msg, size_t len)
{
	Producer   *p;

	if (xip83_h2_data(s) != NULL || len != 8 || Be32(msg) == 0)
		return xip83_h2_finish(s, XIP83_GRPC_INVALID_ARGUMENT, "want one 8-byte request");
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return xip83_h2_finish(s, XIP83_GRPC_RESOURCE_EXHAUSTED, "out of memory");
	p->count = Be32(msg);
	p->size = Be32(msg + 4);
	p->stream = s;
	xip83_h2_set_data(s, p);
	if (!xip83_h2_timer_start(server, &p->timer, p->size, TickFire, p))
		xip83_h2_finish(s, XIP83_GRPC_RESOURCE_EXHAUSTED, "out of memory");
}

static void
FailMessage(Xip83H2Stream *s, const unsigned char *msg, size_t len)
{
	char	   *text;

	if (len < 4 || (text = strndup((const char *) msg + 4, len - 4)) == NULL)
		return xip83_h2_finish(s, XIP83_GRPC_INVALID_ARGUMENT, "want a status and a text");
	xip83_h2_finish(s, (int) Be32(msg), text);
	free(text);
}

/* The resident set size in kB, from /proc. */
static long
RssKb(void)
{
	FILE	   *f = fopen("/proc/self/status", "r");
	char		line[256];
	long		kb = -1;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static void
StatsMessage(Xip83H2Stream *s, const unsigned char *msg, size_t len)
{
	Xip83H2Stats st;
	char		text[1024];
	int			n;

	xip83_h2_stats(server, &st);
	n = snprintf(text, sizeof(text),
				 "connections=%zu streams=%zu pending=%zu peak=%zu produced=%llu rss_kb=%ld"
				 " memory=%zu input=%zu closed=%llu cancelled=%llu",
				 st.connections, st.streams, st.pending, peak_pending,
				 (unsigned long long) produced, RssKb(), st.memory, st.input,
				 (unsigned long long) closed_ok, (unsigned long long) closed_cancelled);
	for (int i = 0; i < XIP83_H2_LIMITS; i++)
		n += snprintf(text + n, sizeof(text) - (size_t) n, " %s=%llu", xip83_h2_limit_names[i],
					  (unsigned long long) st.reached[i]);
	Send(s, text, (size_t) n);
	xip83_h2_finish(s, XIP83_GRPC_OK, NULL);
}

static const Xip83GrpcMethod methods[] = {
	{.path = "/xip83.test.Echo/Echo",.open = OpenAny,.message = EchoMessage,
	.half_close = HalfCloseOk,.closed = ClosedAny},
	{.path = "/xip83.test.Echo/Stream",.open = OpenAny,.message = StreamMessage,
	.writable = Produce,.closed = ClosedAny},
	{.path = "/xip83.test.Echo/Tick",.open = OpenAny,.message = TickMessage,.closed = ClosedAny},
	{.path = "/xip83.test.Echo/Fail",.open = OpenAny,.message = FailMessage,.closed = ClosedAny},
	{.path = "/xip83.test.Echo/Stats",.open = OpenAny,.message = StatsMessage,.closed = ClosedAny},
};

static void
OnSignal(int sig)
{
	xip83_h2_drain_async(server);
}

/* Splits "HOST:PORT" at its last colon. */
static bool
HostPort(char *arg, char **host, char **port)
{
	char	   *colon = strrchr(arg, ':');

	if (colon == NULL)
		return false;
	*colon = '\0';
	*host = arg;
	*port = colon + 1;
	return true;
}

static void
Usage(void)
{
	fprintf(stderr, "usage: xip83-grpc-echo [--h2c HOST:PORT] [--tls HOST:PORT --cert PEM --key PEM]\n"
			"       [--max-message BYTES] [--max-streams N] [--drain-ms MS]\n"
			"       [--max-connections N] [--max-memory BYTES] [--max-conn-memory BYTES]\n"
			"       [--max-conn-input BYTES] [--handshake-timeout-ms MS] [--idle-timeout-ms MS]\n"
			"       [--request-timeout-ms MS]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	Xip83H2Config cfg = {0};
	char	   *h2c = NULL,
			   *tls = NULL,
			   *cert = NULL,
			   *key = NULL,
			   *host,
			   *port;
	char		err[512];
	struct sigaction sa = {.sa_handler = OnSignal};

	for (int i = 1; i < argc; i++)
	{
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (v == NULL)
			Usage();
		if (strcmp(argv[i], "--h2c") == 0)
			h2c = argv[++i];
		else if (strcmp(argv[i], "--tls") == 0)
			tls = argv[++i];
		else if (strcmp(argv[i], "--cert") == 0)
			cert = argv[++i];
		else if (strcmp(argv[i], "--key") == 0)
			key = argv[++i];
		else if (strcmp(argv[i], "--max-message") == 0)
			cfg.max_message = (uint32_t) strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--max-streams") == 0)
			cfg.max_streams = (uint32_t) strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--drain-ms") == 0)
			cfg.drain_ms = (uint32_t) strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--max-connections") == 0)
			cfg.max_connections = (uint32_t) strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--max-memory") == 0)
			cfg.max_memory = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--max-conn-memory") == 0)
			cfg.max_conn_memory = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--max-conn-input") == 0)
			cfg.max_partial = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--handshake-timeout-ms") == 0)
			cfg.handshake_ms = (uint32_t) strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--idle-timeout-ms") == 0)
			cfg.idle_ms = (uint32_t) strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--request-timeout-ms") == 0)
			cfg.request_ms = (uint32_t) strtoul(argv[++i], NULL, 10);
		else
			Usage();
	}
	if ((h2c == NULL && tls == NULL) || (tls && (cert == NULL || key == NULL)))
		Usage();
	server = xip83_h2_server_new(&cfg, err, sizeof(err));
	if (server == NULL)
	{
		fprintf(stderr, "xip83-grpc-echo: %s\n", err);
		return 1;
	}
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		xip83_h2_register(server, &methods[i]);
	if (tls && !xip83_h2_tls_files(server, cert, key, err, sizeof(err)))
	{
		fprintf(stderr, "xip83-grpc-echo: %s\n", err);
		return 1;
	}
	for (int pass = 0; pass < 2; pass++)
	{
		char	   *spec = pass == 0 ? h2c : tls;
		int			bound;

		if (spec == NULL)
			continue;
		if (!HostPort(spec, &host, &port))
			Usage();
		bound = xip83_h2_listen(server, host, port, pass == 1, err, sizeof(err));
		if (bound < 0)
		{
			fprintf(stderr, "xip83-grpc-echo: %s\n", err);
			return 1;
		}
		printf("%s %d\n", pass == 0 ? "h2c" : "tls", bound);
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	printf("ready\n");
	fflush(stdout);
	if (!xip83_h2_run(server))
	{
		fprintf(stderr, "xip83-grpc-echo: the event loop failed\n");
		return 1;
	}
	xip83_h2_server_free(server);
	printf("drained\n");
	return 0;
}
