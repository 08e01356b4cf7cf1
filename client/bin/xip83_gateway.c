/*
 * xip83-gateway: the XIP-83 Subscribe RPCs over gRPC for real XMTP clients,
 * many streams in one process, backed by xip83 over libpq.
 *
 *   xip83-gateway --dsn DSN --listen HOST:PORT [--pool N] [--tls-cert F --tls-key F]
 *                 [--metrics HOST:PORT] [--keepalive-ms N] [--drain-ms N]
 *                 [--standby-dsn DSN] [--poll-ms N] [--fence-wait-ms N]
 *                 [--max-connection-topic-mib N] [--max-topic-mib N]
 *
 * Read replicas: with --standby-dsn the waves and live rows are read on that
 * hot standby, fenced by the horizons of --dsn, the primary (which the feed
 * LISTENs on). A --dsn in recovery is served alone: the feed polls its
 * replayed horizons every --poll-ms, and LISTENs once it is promoted.
 *
 * Serves h2c on --listen, or TLS (ALPN h2) with --tls-cert and --tls-key.
 * Prints "h2c PORT" or "tls PORT" (and "metrics PORT") once listening (port 0: a free
 * one), then "ready". SIGTERM or SIGINT drains: listeners close, every
 * stream ends UNAVAILABLE, connections get GOAWAY; exit 0. Exit 1 when the
 * database or a listener cannot be set up, 2 on bad options.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gw_core.h"
#include "gw_metrics.h"
#include "h2_server.h"

static Xip83H2Server *server;
static Xip83Gateway *gateway;
static GwMetrics *metrics;

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
			" [--max-connection-topic-mib N] [--max-topic-mib N]\n");
	exit(2);
}

static void
OnSignal(int sig)
{
	(void) sig;
	xip83_h2_drain_async(server);
}

static void
OnDrain(void *arg)
{
	(void) arg;
	gw_metrics_close(metrics);
	xip83_gateway_drain(gateway);
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
		{"max-connection-topic-mib", required_argument, NULL, 256},
		{"max-topic-mib", required_argument, NULL, 257},
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
	char		err[512];
	int			c,
				bound;
	bool		ok;

	HugePages(argv);
	while ((c = getopt_long(argc, argv, "d:l:p:c:k:m:K:D:s:P:F:h", longopts, NULL)) != -1)
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
			case 256:
				go.max_connection_topic_bytes =
					(size_t) Number("--max-connection-topic-mib", optarg, 1, 1 << 20) << 20;
				break;
			case 257:
				go.max_topic_bytes = (size_t) Number("--max-topic-mib", optarg, 1, 1 << 20) << 20;
				break;
			default:
				Usage();
		}
	}
	if (optind < argc || go.conninfo == NULL || listen == NULL || (cert == NULL) != (key == NULL))
		Usage();
	signal(SIGPIPE, SIG_IGN);
	cfg.on_drain = OnDrain;
	if ((server = xip83_h2_server_new(&cfg, err, sizeof(err))) == NULL
		|| (cert && !xip83_h2_tls_files(server, cert, key, err, sizeof(err))))
	{
		fprintf(stderr, "xip83-gateway: %s\n", err);
		return 1;
	}
	if ((gateway = xip83_gateway_new(server, &go, err, sizeof(err))) == NULL)
	{
		fprintf(stderr, "xip83-gateway: %s\n", err);
		return 1;
	}
	Split("--listen", listen, &host, &port);
	bound = xip83_h2_listen(server, host, port, cert != NULL, err, sizeof(err));
	free(host);
	free(port);
	if (bound < 0)
	{
		fprintf(stderr, "xip83-gateway: %s\n", err);
		return 1;
	}
	printf("%s %d\n", cert ? "tls" : "h2c", bound);
	if (metrics_at)
	{
		Split("--metrics", metrics_at, &host, &port);
		metrics = gw_metrics_listen(server, gateway, host, port, &bound, err, sizeof(err));
		free(host);
		free(port);
		if (metrics == NULL)
		{
			fprintf(stderr, "xip83-gateway: metrics: %s\n", err);
			return 1;
		}
		printf("metrics %d\n", bound);
	}
	printf("ready\n");
	fflush(stdout);
	signal(SIGTERM, OnSignal);
	signal(SIGINT, OnSignal);
	ok = xip83_h2_run(server);
	/* the streams' closed callbacks still use the gateway */
	xip83_h2_server_free(server);
	xip83_gateway_free(gateway);
	gw_metrics_free(metrics);
	return ok ? 0 : 1;
}
