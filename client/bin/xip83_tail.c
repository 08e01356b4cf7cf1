/*
 * xip83_tail.c: xip83-tail, follow the live feed and print one line per row:
 *
 *     <kind> <topic hex> <position> <bytes>
 *
 * kind is group, welcome or envelope; the topic is kind-prefixed (0x00 group,
 * 0x01 welcome, envelopes as stored); the position is the id, or
 * originator:sequence for envelopes; bytes is the payload's length. Status
 * goes to stderr: "feed live", "feed offline (why)", "feed back". With
 * --standby the rows come from a hot standby, fenced; with --standby-only
 * --dbname is a standby and the feed polls it. Built on
 * client/feed/feed.c; see there for LISTEN, polling and reconnects.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "feed/feed.h"

/* Option limits: a day for intervals, the server's largest page setting. */
#define MAX_MS		86400000
#define MAX_PAGE	1000000

static volatile sig_atomic_t stop_requested = 0;

typedef struct TailOutput
{
	bool		timestamps;		/* prefix lines with CLOCK_MONOTONIC microseconds */
	int64_t		max_rows;		/* exit after this many rows; 0 = never */
	int64_t		printed;
} TailOutput;

/* SIGINT/SIGTERM: finish the current step and exit. */
static void
OnSignal(int sig)
{
	(void) sig;
	stop_requested = 1;
}

/* Prints one row; none past --exit-after, though a fetch may deliver more. */
static void
PrintRow(void *arg, const Xip83FeedRow *row)
{
	TailOutput *out = arg;
	static const char *const kinds[] = {"", "group", "welcome", "", "envelope"};

	if (out->max_rows > 0 && out->printed >= out->max_rows)
		return;
	if (out->timestamps)
	{
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		printf("%lld ", (long long) ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
	}
	fputs(kinds[row->kind], stdout);
	putchar(' ');
	for (size_t i = 0; i < row->topic_len; i++)
		printf("%02x", row->topic[i]);
	if (row->kind == XIP83_FEED_ENVELOPE)
		printf(" %d:%lld %zu%s\n", row->originator_node_id, (long long) row->position, row->data_len,
			   row->late ? " late" : "");
	else
		printf(" %lld %zu%s\n", (long long) row->position, row->data_len, row->late ? " late" : "");
	out->printed++;
}

/* Reports availability on stderr. */
static void
PrintStatus(void *arg, const char *status, const char *detail)
{
	(void) arg;
	fprintf(stderr, "feed %s (%s)\n", status, detail);
}

static void
Usage(void)
{
	fprintf(stderr,
			"usage: xip83-tail [options]\n"
			"  -d, --dbname CONNINFO     connection string (default: PG* environment)\n"
			"  -k, --kinds LIST          group,welcome,envelope (default: all)\n"
			"      --from-start          print every stored row first (default: from now)\n"
			"      --group-after ID      start group messages after this id\n"
			"      --welcome-after ID    start welcomes after this id\n"
			"      --originator-after N:S  start originator N after sequence S (repeatable)\n"
			"      --poll-ms MS          poll interval while the feed is offline (50)\n"
			"      --offline-ms MS       silence that means offline (3000)\n"
			"      --page ROWS           rows per fetch (1000)\n"
			"      --exit-after ROWS     exit after printing this many rows\n"
			"      --timestamps          prefix lines with monotonic microseconds\n"
			"      --source TABLE        read the one kind of --kinds from a table xip83.track follows\n"
			"      --group-source TABLE, --welcome-source TABLE, --envelope-source TABLE\n"
			"                            the same per kind (default: xip83's own tables)\n"
			"      --blob-source TABLE   the blob table the envelope table was tracked with\n"
			"      --standby CONNINFO    read rows from this hot standby, fenced: notices and\n"
			"                            horizons from --dbname (the primary); no row skipped\n"
			"      --standby-only        --dbname is a standby: poll its own replayed horizons\n");
}

/* Refuses a bad option value: a clear message on stderr, exit 2. */
static void
BadOption(const char *option, const char *value, const char *expected)
{
	fprintf(stderr, "xip83-tail: invalid value \"%s\" for %s: expected %s\n",
			value, option, expected);
	exit(2);
}

/*
 * Parses a whole decimal number in [min, max]: digits only (no sign, space or
 * trailing text), no overflow. Anything else exits 2 naming the option.
 */
static int64_t
ParseNumber(const char *option, const char *s, int64_t min, int64_t max)
{
	char		expected[96];
	char	   *end;
	long long	v;

	snprintf(expected, sizeof(expected), "a whole number from %lld to %lld",
			 (long long) min, (long long) max);
	if (s[0] < '0' || s[0] > '9')
		BadOption(option, s, expected);
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		BadOption(option, s, expected);
	return v;
}

/* Parses --originator-after N:S: an originator node id and a sequence id. */
static void
ParseOriginatorAfter(const char *s, int32_t *node, int64_t *after)
{
	const char *colon = strchr(s, ':');
	char		nodepart[16];

	if (colon == NULL || colon - s >= (long) sizeof(nodepart))
		BadOption("--originator-after", s, "NODE:SEQUENCE, e.g. 100:5");
	memcpy(nodepart, s, colon - s);
	nodepart[colon - s] = '\0';
	*node = (int32_t) ParseNumber("--originator-after (node)", nodepart, 0, INT32_MAX);
	*after = ParseNumber("--originator-after (sequence)", colon + 1, 0, INT64_MAX);
}

/* Parses a comma-separated kind list. */
static int
ParseKinds(const char *s)
{
	int			kinds = 0;
	char	   *copy = strdup(s);

	if (strspn(s, ",") == strlen(s))
		BadOption("--kinds", s, "a list of group, welcome, envelope");
	for (char *t = strtok(copy, ","); t; t = strtok(NULL, ","))
	{
		if (strcmp(t, "group") == 0)
			kinds |= XIP83_FEED_GROUP;
		else if (strcmp(t, "welcome") == 0)
			kinds |= XIP83_FEED_WELCOME;
		else if (strcmp(t, "envelope") == 0)
			kinds |= XIP83_FEED_ENVELOPE;
		else
			BadOption("--kinds", t, "group, welcome or envelope");
	}
	free(copy);
	return kinds;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"dbname", required_argument, NULL, 'd'},
		{"kinds", required_argument, NULL, 'k'},
		{"from-start", no_argument, NULL, 1},
		{"group-after", required_argument, NULL, 2},
		{"welcome-after", required_argument, NULL, 3},
		{"originator-after", required_argument, NULL, 4},
		{"poll-ms", required_argument, NULL, 5},
		{"offline-ms", required_argument, NULL, 6},
		{"page", required_argument, NULL, 7},
		{"exit-after", required_argument, NULL, 8},
		{"timestamps", no_argument, NULL, 9},
		{"source", required_argument, NULL, 10},
		{"group-source", required_argument, NULL, 11},
		{"welcome-source", required_argument, NULL, 12},
		{"envelope-source", required_argument, NULL, 13},
		{"blob-source", required_argument, NULL, 14},
		{"standby", required_argument, NULL, 15},
		{"standby-only", no_argument, NULL, 16},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	Xip83FeedOptions opt = {0};
	TailOutput	out = {0};
	Xip83Feed  *feed;
	bool		from_start = false;
	bool		explicit_cursor = false;
	int64_t		group_after = -1;
	int64_t		welcome_after = -1;
	int32_t    *orig_nodes = NULL;
	int64_t    *orig_afters = NULL;
	int			n_orig = 0;
	const char *source = NULL;
	int			c;

	opt.conninfo = "";
	opt.application_name = "xip83-tail";
	while ((c = getopt_long(argc, argv, "d:k:h", longopts, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				opt.conninfo = optarg;
				break;
			case 'k':
				opt.kinds = ParseKinds(optarg);
				break;
			case 1:
				from_start = true;
				break;
			case 2:
				group_after = ParseNumber("--group-after", optarg, 0, INT64_MAX);
				explicit_cursor = true;
				break;
			case 3:
				welcome_after = ParseNumber("--welcome-after", optarg, 0, INT64_MAX);
				explicit_cursor = true;
				break;
			case 4:
				{
					int32_t    *nodes = realloc(orig_nodes, sizeof(int32_t) * (n_orig + 1));
					int64_t    *afters = nodes == NULL ? NULL
						: realloc(orig_afters, sizeof(int64_t) * (n_orig + 1));

					if (nodes == NULL || afters == NULL)
					{
						fprintf(stderr, "xip83-tail: out of memory\n");
						return 1;
					}
					orig_nodes = nodes;
					orig_afters = afters;
				}
				ParseOriginatorAfter(optarg, &orig_nodes[n_orig], &orig_afters[n_orig]);
				n_orig++;
				explicit_cursor = true;
				break;
			case 5:
				opt.poll_ms = (int) ParseNumber("--poll-ms", optarg, 1, MAX_MS);
				break;
			case 6:
				opt.offline_after_ms = (int) ParseNumber("--offline-ms", optarg, 1, MAX_MS);
				break;
			case 7:
				opt.page_rows = (int) ParseNumber("--page", optarg, 1, MAX_PAGE);
				break;
			case 8:
				out.max_rows = ParseNumber("--exit-after", optarg, 1, INT64_MAX);
				break;
			case 9:
				out.timestamps = true;
				break;
			case 10:
				source = optarg;
				break;
			case 11:
				opt.group_source = optarg;
				break;
			case 12:
				opt.welcome_source = optarg;
				break;
			case 13:
				opt.envelope_source = optarg;
				break;
			case 14:
				opt.blob_source = optarg;
				break;
			case 15:
				opt.standby_conninfo = optarg;
				break;
			case 16:
				opt.standby_only = true;
				break;
			default:
				Usage();
				return c == 'h' ? 0 : 2;
		}
	}
	if (optind < argc)
	{
		fprintf(stderr, "xip83-tail: unexpected argument \"%s\"\n", argv[optind]);
		Usage();
		return 2;
	}
	if (opt.standby_only && opt.standby_conninfo != NULL)
		BadOption("--standby-only", "", "either --standby CONNINFO or --standby-only, not both");
	if (source != NULL)
	{
		/* the table of the one kind followed */
		if (opt.kinds == XIP83_FEED_GROUP)
			opt.group_source = source;
		else if (opt.kinds == XIP83_FEED_WELCOME)
			opt.welcome_source = source;
		else if (opt.kinds == XIP83_FEED_ENVELOPE)
			opt.envelope_source = source;
		else
			BadOption("--source", source, "one kind in --kinds (or --group-source etc.)");
	}
	opt.on_row = PrintRow;
	opt.on_status = PrintStatus;
	opt.arg = &out;
	signal(SIGINT, OnSignal);
	signal(SIGTERM, OnSignal);
	signal(SIGPIPE, SIG_IGN);

	feed = xip83_feed_new(&opt);
	if (!from_start && !explicit_cursor)
	{
		/* follow from now; retry until the server answers */
		while (!stop_requested && !xip83_feed_start_at_horizon(feed))
		{
			struct timespec nap = {0, 200 * 1000000};

			nanosleep(&nap, NULL);
		}
	}
	if (group_after >= 0)
		xip83_feed_set_cursor(feed, XIP83_FEED_GROUP, 0, group_after);
	if (welcome_after >= 0)
		xip83_feed_set_cursor(feed, XIP83_FEED_WELCOME, 0, welcome_after);
	for (int i = 0; i < n_orig; i++)
		xip83_feed_set_cursor(feed, XIP83_FEED_ENVELOPE, orig_nodes[i], orig_afters[i]);

	while (!stop_requested && (out.max_rows == 0 || out.printed < out.max_rows))
	{
		if (xip83_feed_step(feed, 200) < 0)
		{
			xip83_feed_free(feed);
			return 1;
		}
		fflush(stdout);
	}
	xip83_feed_free(feed);
	free(orig_nodes);
	free(orig_afters);
	return 0;
}
