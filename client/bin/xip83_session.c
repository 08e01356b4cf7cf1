/*
 * xip83-session: one XIP-83 Subscribe stream over stdin and stdout.
 *
 *   xip83-session --dsn DSN --binding v3|d14n [--keepalive-ms N]
 *
 * Reads length-delimited SubscribeRequest messages on stdin (end of stdin is
 * the client's half-close) and writes length-delimited SubscribeResponse
 * messages on stdout. Ends with "STATUS OK" on stderr and exit 0 after a
 * clean close, or "STATUS <GRPC_CODE> <message>" and exit 1 after a stream
 * error. Bad options: a message and exit 2.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session/session.h"

static void
Usage(void)
{
	fprintf(stderr, "usage: xip83-session --dsn DSN --binding v3|d14n [--keepalive-ms N]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"dsn", required_argument, NULL, 'd'},
		{"binding", required_argument, NULL, 'b'},
		{"keepalive-ms", required_argument, NULL, 'k'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	Xip83SessionOptions opt = {.conninfo = NULL, .in_fd = 0, .out_fd = 1};
	const char *binding = NULL;
	char		status[600];
	int			c;
	int			rc;

	while ((c = getopt_long(argc, argv, "d:b:k:h", longopts, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				opt.conninfo = optarg;
				break;
			case 'b':
				binding = optarg;
				break;
			case 'k':
				{
					char	   *end;
					long		v;

					errno = 0;
					v = strtol(optarg, &end, 10);
					/* Started advertises at most 30 s */
					if (errno || *end || optarg[0] < '0' || optarg[0] > '9' || v < 1 || v > 30000)
					{
						fprintf(stderr, "xip83-session: --keepalive-ms %s: expected 1 to 30000\n",
								optarg);
						return 2;
					}
					opt.keepalive_ms = (int) v;
					break;
				}
			default:
				Usage();
		}
	}
	if (optind < argc || opt.conninfo == NULL || binding == NULL)
		Usage();
	opt.d14n = strcmp(binding, "d14n") == 0;
	if (!opt.d14n && strcmp(binding, "v3") != 0)
	{
		fprintf(stderr, "xip83-session: --binding %s: expected v3 or d14n\n", binding);
		return 2;
	}
	/* a client that stops reading is a write error, not a signal */
	signal(SIGPIPE, SIG_IGN);
	rc = xip83_session_run(&opt, status, sizeof(status));
	fprintf(stderr, "STATUS %s\n", status);
	return rc;
}
