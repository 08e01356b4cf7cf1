/*
 * xip83-gateway: the XIP-83 Subscribe RPCs over gRPC for real XMTP clients,
 * many streams in one process, backed by xip83 over libpq.
 *
 *   xip83-gateway --dsn DSN --listen HOST:PORT [--pool N] [--tls-cert F --tls-key F]
 *                 [--metrics HOST:PORT] [--keepalive-ms N] [--drain-ms N]
 *                 [--standby-dsn DSN] [--poll-ms N] [--fence-wait-ms N] [--max-waves N]
 *                 [--max-connections N] [--max-memory BYTES] [--max-conn-memory BYTES]
 *                 [--max-conn-input BYTES] [--handshake-timeout-ms N]
 *                 [--idle-timeout-ms N] [--request-timeout-ms N]
 *                 [--max-connection-topic-mib N] [--max-topic-mib N]
 *                 [--cors-origin LIST] [--loops N] [--write-hold-ms N]
 *
 * --loops runs N event loops, each on a thread of its own with its share of
 * the connections (the kernel spreads them, SO_REUSEPORT), of the pool and
 * of the process's bounds; one live feed serves them all. Default: the
 * cores the process may run on, at most --pool.
 *
 * --write-hold-ms: under load a loop writes to its clients at most once in
 * N ms (0: after every turn), a write after a quiet spell at once: fewer,
 * larger writes for up to that much latency.
 *
 * Read replicas: with --standby-dsn the waves and live rows are read on that
 * hot standby, fenced by the horizons of --dsn, the primary (which the feed
 * LISTENs on). A --dsn in recovery is served alone: the feed polls its
 * replayed horizons every --poll-ms, and LISTENs once it is promoted. A
 * standby that has replayed no horizons of its primary yet is served all the
 * same: requests wait until the feed has them.
 *
 * --max-waves bounds the waves (catch-ups) in flight of all streams together
 * (1048576), and each client connection may have 1024: a Mutate past either
 * ends its stream RESOURCE_EXHAUSTED.
 *
 * Serves h2c on --listen, or TLS (ALPN h2) with --tls-cert and --tls-key;
 * browsers on the same listener (HTTP/1.1, or ALPN http/1.1): gRPC-Web for
 * the server streams, Subscribe over a WebSocket (subprotocol xip83.v1).
 * --cors-origin lists the web origins whose pages may call (none by
 * default; "*" any).
 * Prints "h2c PORT" or "tls PORT" (and "metrics PORT") once listening (port 0: a free
 * one), then "ready". SIGTERM or SIGINT drains: listeners close, every
 * stream ends UNAVAILABLE, connections get GOAWAY; exit 0. Exit 1 when the
 * database or a listener cannot be set up, 2 on bad options.
 *
 * Bounds (h2_server.h): --max-connections defaults to the descriptors the
 * process may open less a reserve for the database's and its own;
 * --max-memory to half the machine's (or the cgroup's) memory. BYTES take a
 * k, M or G suffix (powers of 1024).
 */
/* sched_getaffinity */
#define _GNU_SOURCE

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "gateway/gateway.h"
#include "h2_server.h"

/* the loops, each a server and a gateway on a thread of its own (the first: main's) */
static int	loops;
static Xip83H2Server **servers;
static Xip83Gateway **gateways;
static pthread_t *threads;
static Xip83GatewayFeed *feed;
static GwMetrics *metrics;

/* the bidirectional methods: a browser reaches them over a WebSocket only */
static const char *websocket_paths[XIP83_GATEWAY_METHODS + 1];

/*
 * A stream's state is a few small allocations spread over the heap, so with
 * 100,000 streams each row or Ping touches pages far apart; where TLB misses
 * are dear (in a VM) they were the larger part of the gateway's own CPU.
 * glibc backs its heap with transparent huge pages only when told so at
 * start (GLIBC_TUNABLES), so unless the environment already says anything of
 * glibc.malloc.hugetlb and the kernel gives huge pages on madvise, the
 * gateway runs itself again with glibc.malloc.hugetlb=1. Where it cannot, it
 * runs on as it is.
 */
static void
HugePages(char **argv)
{
	const char *old = getenv("GLIBC_TUNABLES");
	char		mode[128] = "";
	char		val[1024];
	FILE	   *f;

	if (old != NULL && strstr(old, "glibc.malloc.hugetlb") != NULL)
		return;
	if ((f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r")) == NULL)
		return;
	if (fgets(mode, sizeof(mode), f) == NULL)
		mode[0] = '\0';
	fclose(f);
	if (strstr(mode, "[madvise]") == NULL)
		return;
	if (snprintf(val, sizeof(val), "%s%sglibc.malloc.hugetlb=1", old ? old : "",
				 old && *old ? ":" : "") >= (int) sizeof(val))
		return;
	if (setenv("GLIBC_TUNABLES", val, 1) != 0)
		return;
	execv("/proc/self/exe", argv);
	if (old != NULL)
		setenv("GLIBC_TUNABLES", old, 1);
	else
		unsetenv("GLIBC_TUNABLES");
}

static void
Usage(void)
{
	fprintf(stderr, "usage: xip83-gateway --dsn DSN --listen HOST:PORT [--pool N]"
			" [--tls-cert FILE --tls-key FILE] [--metrics HOST:PORT] [--keepalive-ms N]"
			" [--drain-ms N] [--standby-dsn DSN] [--poll-ms N] [--fence-wait-ms N]"
			" [--max-connections N] [--max-memory BYTES] [--max-conn-memory BYTES]"
			" [--max-conn-input BYTES] [--handshake-timeout-ms N] [--idle-timeout-ms N]"
			" [--request-timeout-ms N] [--max-waves N]"
			" [--max-connection-topic-mib N] [--max-topic-mib N]"
			" [--cors-origin ORIGIN[,ORIGIN...]] [--loops N] [--write-hold-ms N]\n");
	exit(2);
}

static void
OnSignal(int sig)
{
	(void) sig;
	for (int i = 0; i < loops; i++)
		xip83_h2_drain_async(servers[i]);
}

/*
 * A loop began its drain: its gateway ends its streams, and every other loop
 * drains too (a loop never drains alone).
 */
static void
OnDrain(void *arg)
{
	int			self = (int) ((Xip83H2Server **) arg - servers);

	for (int i = 0; i < loops; i++)
		if (i == self)
		{
			if (i == 0)
				gw_metrics_close(metrics);
			xip83_gateway_drain(gateways[i]);
		}
		else
			xip83_h2_drain_async(servers[i]);
}

static void *
RunLoop(void *arg)
{
	return xip83_h2_run(arg) ? arg : NULL;
}

/* The cores this process may run on. */
static int
Cores(void)
{
	cpu_set_t	set;
	int			n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && (n = CPU_COUNT(&set)) > 0)
		return n;
	n = (int) sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? n : 1;
}

/* HOST:PORT (the last colon splits; [v6]:port works) into host and port. */
static void
Split(const char *opt, const char *arg, char **host, char **port)
{
	const char *colon = strrchr(arg, ':');

	if (colon == NULL || colon == arg || colon[1] == '\0')
	{
		fprintf(stderr, "xip83-gateway: %s %s: expected HOST:PORT\n", opt, arg);
		exit(2);
	}
	*host = strndup(arg, (size_t) (colon - arg));
	*port = strdup(colon + 1);
	if ((*host)[0] == '[' && (*host)[strlen(*host) - 1] == ']')
	{
		memmove(*host, *host + 1, strlen(*host));
		(*host)[strlen(*host) - 1] = '\0';
	}
}

static int
Number(const char *opt, const char *arg, long lo, long hi)
{
	char	   *end;
	long		v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || *end || end == arg || v < lo || v > hi)
	{
		fprintf(stderr, "xip83-gateway: %s %s: expected %ld to %ld\n", opt, arg, lo, hi);
		exit(2);
	}
	return (int) v;
}

/* A size in bytes, with an optional k, M or G suffix (powers of 1024). */
static size_t
Bytes(const char *opt, const char *arg, size_t lo)
{
	char	   *end;
	unsigned long long v;
	int			shift = 0;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (*end == 'k' || *end == 'K')
		shift = 10;
	else if (*end == 'M')
		shift = 20;
	else if (*end == 'G')
		shift = 30;
	if (shift)
		end++;
	if (errno || *end || end == arg || arg[0] == '-' || v > (SIZE_MAX >> shift) || (v << shift) < lo)
	{
		fprintf(stderr, "xip83-gateway: %s %s: expected a size of at least %zu bytes"
				" (k, M, G: KiB, MiB, GiB)\n", opt, arg, lo);
		exit(2);
	}
	return (size_t) (v << shift);
}

/*
 * --max-connections' default: the descriptors this process may open, less
 * the database's (the pool's, on the primary and a standby, and the feed's)
 * and the transport's own reserve (h2_server.c's, for listeners, scrapes
 * and logs).
 */
static uint32_t
DefaultConnections(int pool, int n_loops)
{
	struct rlimit rl;
	/* and each loop's own: its epoll, its wake-up and the feed's signal */
	rlim_t		keep = 64 + 2 * ((rlim_t) (pool > 0 ? pool : 4) + 1) + 4 * (rlim_t) n_loops;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return 0;				/* the transport's own default */
	if (rl.rlim_cur < keep + 16)
		return 16;
	return rl.rlim_cur - keep > UINT32_MAX ? UINT32_MAX : (uint32_t) (rl.rlim_cur - keep);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"dsn", required_argument, NULL, 'd'},
		{"listen", required_argument, NULL, 'l'},
		{"pool", required_argument, NULL, 'p'},
		{"tls-cert", required_argument, NULL, 'c'},
		{"tls-key", required_argument, NULL, 'k'},
		{"metrics", required_argument, NULL, 'm'},
		{"keepalive-ms", required_argument, NULL, 'K'},
		{"drain-ms", required_argument, NULL, 'D'},
		{"standby-dsn", required_argument, NULL, 's'},
		{"poll-ms", required_argument, NULL, 'P'},
		{"fence-wait-ms", required_argument, NULL, 'F'},
		{"max-connections", required_argument, NULL, 'C'},
		{"max-memory", required_argument, NULL, 'M'},
		{"max-conn-memory", required_argument, NULL, 'N'},
		{"max-conn-input", required_argument, NULL, 'I'},
		{"handshake-timeout-ms", required_argument, NULL, 'H'},
		{"idle-timeout-ms", required_argument, NULL, 'L'},
		{"request-timeout-ms", required_argument, NULL, 'R'},
		{"max-waves", required_argument, NULL, 'W'},
		{"max-connection-topic-mib", required_argument, NULL, 256},
		{"max-topic-mib", required_argument, NULL, 257},
		{"cors-origin", required_argument, NULL, 'O'},
		{"loops", required_argument, NULL, 258},
		{"write-hold-ms", required_argument, NULL, 259},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	Xip83GatewayOptions go = {0};
	Xip83H2Config cfg = {0};
	const char *listen = NULL,
			   *metrics_at = NULL,
			   *cert = NULL,
			   *key = NULL;
	char	   *host,
			   *port;
	char		err[512],
				name[24];		/* a thread name takes 15; loops are at most 256 */
	int			c,
				bound = 0;
	bool		ok;

	HugePages(argv);
	loops = Cores();
	for (int i = 0, n = 0; i < XIP83_GATEWAY_METHODS; i++)
		if (xip83_gateway_methods[i].kind == GW_SUBSCRIBE)
			websocket_paths[n++] = xip83_gateway_methods[i].path;
	while ((c = getopt_long(argc, argv, "d:l:p:c:k:m:K:D:s:P:F:C:M:N:I:H:L:R:W:O:h", longopts, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				go.conninfo = optarg;
				break;
			case 'l':
				listen = optarg;
				break;
			case 'p':
				go.pool = Number("--pool", optarg, 1, 1000);
				break;
			case 'c':
				cert = optarg;
				break;
			case 'k':
				key = optarg;
				break;
			case 'm':
				metrics_at = optarg;
				break;
			case 'K':
				/* Started advertises at most 30 s */
				go.keepalive_ms = Number("--keepalive-ms", optarg, 1, 30000);
				break;
			case 'D':
				cfg.drain_ms = (uint32_t) Number("--drain-ms", optarg, 1, 3600000);
				break;
			case 's':
				go.standby_conninfo = optarg;
				break;
			case 'P':
				go.poll_ms = Number("--poll-ms", optarg, 1, 60000);
				break;
			case 'F':
				go.fence_wait_ms = Number("--fence-wait-ms", optarg, 1, 60000);
				break;
			case 'C':
				cfg.max_connections = (uint32_t) Number("--max-connections", optarg, 1, 10000000);
				break;
			case 'M':
				cfg.max_memory = Bytes("--max-memory", optarg, 1 << 20);
				break;
			case 'N':
				cfg.max_conn_memory = Bytes("--max-conn-memory", optarg, 64 << 10);
				break;
			case 'I':
				cfg.max_partial = Bytes("--max-conn-input", optarg, 1 << 10);
				break;
			case 'H':
				cfg.handshake_ms = (uint32_t) Number("--handshake-timeout-ms", optarg, 1, 3600000);
				break;
			case 'L':
				cfg.idle_ms = (uint32_t) Number("--idle-timeout-ms", optarg, 1, 86400000);
				break;
			case 'R':
				cfg.request_ms = (uint32_t) Number("--request-timeout-ms", optarg, 1, 3600000);
				break;
			case 'W':
				go.max_waves = Number("--max-waves", optarg, 1, 100000000);
				break;
			case 256:
				go.max_connection_topic_bytes =
					(size_t) Number("--max-connection-topic-mib", optarg, 1, 1 << 20) << 20;
				break;
			case 257:
				go.max_topic_bytes = (size_t) Number("--max-topic-mib", optarg, 1, 1 << 20) << 20;
				break;
			case 'O':
				cfg.cors_origins = optarg;
				break;
			case 258:
				loops = Number("--loops", optarg, 1, XIP83_GATEWAY_MAX_LOOPS);
				break;
			case 259:
				cfg.write_hold_ms = (uint32_t) Number("--write-hold-ms", optarg, 0, 100);
				break;
			default:
				Usage();
		}
	}
	if (optind < argc || go.conninfo == NULL || listen == NULL || (cert == NULL) != (key == NULL))
		Usage();
	signal(SIGPIPE, SIG_IGN);
	/* a loop with no wave connection of its own could serve no wave */
	if (loops > (go.pool > 0 ? go.pool : 4))
		loops = go.pool > 0 ? go.pool : 4;
	if (cfg.max_connections == 0)
		cfg.max_connections = DefaultConnections(go.pool, loops);
	cfg.on_drain = OnDrain;
	cfg.websocket_paths = websocket_paths;
	cfg.loops = (uint32_t) loops;
	go.loops = loops;
	if ((servers = calloc((size_t) loops, sizeof(*servers))) == NULL
		|| (gateways = calloc((size_t) loops, sizeof(*gateways))) == NULL
		|| (threads = calloc((size_t) loops, sizeof(*threads))) == NULL)
	{
		fprintf(stderr, "xip83-gateway: out of memory\n");
		return 1;
	}
	if ((feed = xip83_gateway_feed_new(&go, loops, err, sizeof(err))) == NULL)
	{
		fprintf(stderr, "xip83-gateway: %s\n", err);
		return 1;
	}
	Split("--listen", listen, &host, &port);
	if (loops > 1 && strcmp(port, "0") != 0)
	{
		/*
		 * The loops' listeners share the port (SO_REUSEPORT), which would
		 * let them share it with another process's too: a port in use is
		 * refused first, as a single listener would be.
		 */
		int			probe = xip83_tcp_listen(host, port, &bound, err, sizeof(err));

		if (probe < 0)
		{
			fprintf(stderr, "xip83-gateway: %s\n", err);
			return 1;
		}
		close(probe);
	}
	for (int i = 0; i < loops; i++)
	{
		char		shared_port[16];

		go.loop = i;
		cfg.drain_arg = &servers[i];
		if ((servers[i] = xip83_h2_server_new(&cfg, err, sizeof(err))) == NULL
			|| (cert && !xip83_h2_tls_files(servers[i], cert, key, err, sizeof(err)))
			|| (gateways[i] = xip83_gateway_new(servers[i], &go, feed, err, sizeof(err))) == NULL)
		{
			fprintf(stderr, "xip83-gateway: %s\n", err);
			return 1;
		}
		/* the first loop binds (a free port for 0), the others share its port */
		snprintf(shared_port, sizeof(shared_port), "%d", bound);
		bound = xip83_h2_listen(servers[i], host, i == 0 ? port : shared_port, cert != NULL,
								err, sizeof(err));
		if (bound < 0)
		{
			fprintf(stderr, "xip83-gateway: %s\n", err);
			return 1;
		}
	}
	free(host);
	free(port);
	printf("%s %d\n", cert ? "tls" : "h2c", bound);
	if (metrics_at)
	{
		int			mbound;

		Split("--metrics", metrics_at, &host, &port);
		metrics = gw_metrics_listen(servers[0], gateways, loops, host, port, &mbound, err,
									sizeof(err));
		free(host);
		free(port);
		if (metrics == NULL)
		{
			fprintf(stderr, "xip83-gateway: metrics: %s\n", err);
			return 1;
		}
		printf("metrics %d\n", mbound);
	}
	if (!xip83_gateway_feed_run(feed, err, sizeof(err)))
	{
		fprintf(stderr, "xip83-gateway: %s\n", err);
		return 1;
	}
	for (int i = 1; i < loops; i++)
	{
		if (pthread_create(&threads[i], NULL, RunLoop, servers[i]) != 0)
		{
			fprintf(stderr, "xip83-gateway: cannot start loop %d's thread\n", i);
			return 1;
		}
		/* loop 0 is the main thread, named as the process */
		snprintf(name, sizeof(name), "xip83-loop-%d", i);
		pthread_setname_np(threads[i], name);
	}
	printf("ready\n");
	fflush(stdout);
	signal(SIGTERM, OnSignal);
	signal(SIGINT, OnSignal);
	ok = xip83_h2_run(servers[0]);
	for (int i = 1; i < loops; i++)
	{
		void	   *r;

		pthread_join(threads[i], &r);
		ok = ok && r != NULL;
	}
	/*
	 * The feed stops before the loops' gateways go: a thread stuck in a
	 * query could still signal them, so then everything stays as it is.
	 */
	if (!xip83_gateway_feed_stop(feed))
		return ok ? 0 : 1;
	for (int i = 0; i < loops; i++)
	{
		/* the streams' closed callbacks still use the gateway */
		xip83_h2_server_free(servers[i]);
		xip83_gateway_free(gateways[i]);
	}
	gw_metrics_free(metrics);
	xip83_gateway_feed_free(feed);
	return ok ? 0 : 1;
}
