/*
 * t_frame_reader: the bounded frame reader (client/session/frame_reader.h) on
 * its own, both ways in: bytes handed over in pieces (as a gateway's
 * transport would) and a pipe. No server is needed.
 *
 * 1. A stream of messages (empty, one byte, 300 bytes with a two-byte
 *    prefix, one at the limit) cut into pieces at every offset comes out
 *    whole, and each call takes nothing past the message it completes.
 * 2. A prefix over the limit is refused as soon as it is complete, before
 *    the body; refusals stick; a varint over 10 bytes or past 64 bits is
 *    malformed; an end inside a prefix or a body is truncated, between
 *    messages it is a clean end.
 * 3. Through a non-blocking pipe: MORE while the writer is slow, the message
 *    once complete, and the bytes after a refused prefix stay in the pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "badprefix.h"
#include "session/session.h"
#include "testlib.h"

#define LIMIT 1000

/* ---------------------------------------------------------------- 1. pieces */

static size_t
Stream(unsigned char *buf, const size_t *lens, int n)
{
	size_t		off = 0;

	for (int i = 0; i < n; i++)
	{
		off += xip83_varint_put(buf + off, lens[i]);
		for (size_t k = 0; k < lens[i]; k++)
			buf[off++] = (unsigned char) (i * 31 + k);
	}
	return off;
}

static void
TestPieces(void)
{
	static const size_t lens[] = {0, 1, 300, LIMIT, 2};
	const int	n = 5;
	unsigned char buf[4096];
	size_t		total = Stream(buf, lens, n);
	int			bad = 0;

	/* every cut into two pieces, and a byte at a time */
	for (size_t cut = 0; cut <= total + 1; cut++)
	{
		Xip83FrameReader r;
		size_t		off = 0;
		int			got = 0;

		xip83_frame_init(&r, LIMIT);
		while (off < total)
		{
			size_t		end = cut > total ? off + 1 : (off < cut ? cut : total);
			const unsigned char *msg;
			size_t		len;
			size_t		used;
			Xip83FrameStatus st = xip83_frame_feed(&r, buf + off, end - off, &used, &msg, &len);

			off += used;
			if (st == XIP83_FRAME_READY)
			{
				bool		same = got < n && len == lens[got];

				for (size_t k = 0; same && k < len; k++)
					same = msg[k] == (unsigned char) (got * 31 + k);
				/* a message ends exactly where its bytes end: nothing of the next was taken */
				bad += !same;
				got++;
			}
			else if (st != XIP83_FRAME_MORE || used != end - (off - used))
			{
				bad++;
				break;
			}
		}
		{
			size_t		used;
			const unsigned char *msg;
			size_t		len;

			bad += xip83_frame_feed(&r, NULL, 0, &used, &msg, &len) != XIP83_FRAME_END;
		}
		bad += got != n;
		xip83_frame_free(&r);
	}
	TL_CHECK(bad == 0, "pieces: %d cuts went wrong", bad);
}

/* ---------------------------------------------------------------- 2. refusals */

/* Feeds bytes one at a time; the status of the last call and the bytes taken in all. */
static Xip83FrameStatus
FeedBytes(Xip83FrameReader *r, const unsigned char *b, size_t n, size_t *taken)
{
	Xip83FrameStatus st = XIP83_FRAME_MORE;

	*taken = 0;
	for (size_t i = 0; i < n && st == XIP83_FRAME_MORE; i++)
	{
		const unsigned char *msg;
		size_t		len;
		size_t		used;

		st = xip83_frame_feed(r, b + i, 1, &used, &msg, &len);
		*taken += used;
	}
	return st;
}

/*
 * Feeds bytes one at a time and, with end, then the end of the stream: the
 * last status must be expect after expect_taken bytes. A refusal must stick.
 */
static void
Feeds(const char *what, const unsigned char *b, size_t n, bool end, Xip83FrameStatus expect,
	  size_t expect_taken)
{
	Xip83FrameReader r;
	size_t		taken;
	Xip83FrameStatus st;
	const unsigned char *msg;
	size_t		len;
	size_t		used;

	xip83_frame_init(&r, LIMIT);
	st = FeedBytes(&r, b, n, &taken);
	if (end)
		st = xip83_frame_feed(&r, NULL, 0, &used, &msg, &len);
	TL_CHECK(st == expect && taken == expect_taken, "%s: status %d after %zu bytes (expected %d after %zu)",
			 what, st, taken, expect, expect_taken);
	/* the stream cannot resynchronize after a refusal */
	if (expect == XIP83_FRAME_MALFORMED || expect == XIP83_FRAME_TOO_LARGE)
		TL_CHECK(xip83_frame_feed(&r, b, 1, &used, &msg, &len) == expect && used == 0,
				 "%s: the refusal does not stick", what);
	xip83_frame_free(&r);
}

static void
TestRefusals(void)
{
	unsigned char over[16];
	size_t		n = xip83_varint_put(over, LIMIT + 1);
	static const unsigned char cut_prefix[1] = {0x85};
	static const unsigned char cut_body[3] = {0x05, 0x01, 0x02};
	static const unsigned char whole[3] = {0x02, 0x01, 0x02};

	memset(over + n, 0, sizeof(over) - n);
	Feeds("one byte over the limit", over, sizeof(over), false, XIP83_FRAME_TOO_LARGE, n);
	Feeds("2^64 - 1", bp_max64, sizeof(bp_max64), false, XIP83_FRAME_TOO_LARGE, 10);
	Feeds("an 11-byte varint", bp_eleven, sizeof(bp_eleven), false, XIP83_FRAME_MALFORMED, 10);
	Feeds("a varint past 64 bits", bp_bit64, sizeof(bp_bit64), false, XIP83_FRAME_MALFORMED, 10);
	Feeds("an end inside a prefix", cut_prefix, sizeof(cut_prefix), true, XIP83_FRAME_TRUNCATED, 1);
	Feeds("an end inside a body", cut_body, sizeof(cut_body), true, XIP83_FRAME_TRUNCATED, 3);
	Feeds("an end between messages", whole, sizeof(whole), true, XIP83_FRAME_END, 3);
}

/* ---------------------------------------------------------------- 3. a pipe */

static void
TestPipe(void)
{
	Xip83FrameReader r;
	int			fds[2];
	unsigned char msg3[4] = {0x03, 'a', 'b', 'c'};
	unsigned char over[16] = {0};
	size_t		n = xip83_varint_put(over, LIMIT + 1);
	const unsigned char *msg;
	size_t		len;
	Xip83FrameStatus st1,
				st2,
				st3;
	unsigned char rest[32];
	ssize_t		left;

	if (pipe(fds) != 0)
		tl_fatal("pipe: %s", strerror(errno));
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	xip83_frame_init(&r, LIMIT);
	st1 = xip83_frame_read_fd(&r, fds[0], &msg, &len);
	if (write(fds[1], msg3, 2) != 2)
		tl_fatal("write failed");
	st2 = xip83_frame_read_fd(&r, fds[0], &msg, &len);
	if (write(fds[1], msg3 + 2, 2) != 2 || write(fds[1], over, sizeof(over)) != (ssize_t) sizeof(over))
		tl_fatal("write failed");
	st3 = xip83_frame_read_fd(&r, fds[0], &msg, &len);
	TL_CHECK(st1 == XIP83_FRAME_MORE && st2 == XIP83_FRAME_MORE && st3 == XIP83_FRAME_READY
			 && len == 3 && memcmp(msg, "abc", 3) == 0,
			 "pipe: statuses %d %d %d, length %zu", st1, st2, st3, len);
	st1 = xip83_frame_read_fd(&r, fds[0], &msg, &len);
	left = read(fds[0], rest, sizeof(rest));
	TL_CHECK(st1 == XIP83_FRAME_TOO_LARGE && left == (ssize_t) (sizeof(over) - n),
			 "pipe: status %d, %zd bytes left in the pipe (expected %zu)", st1, left,
			 sizeof(over) - n);
	close(fds[1]);
	xip83_frame_free(&r);
	xip83_frame_init(&r, LIMIT);
	TL_CHECK(xip83_frame_read_fd(&r, fds[0], &msg, &len) == XIP83_FRAME_END,
			 "pipe: no clean end after the writer closed");
	xip83_frame_free(&r);
	close(fds[0]);
}

int
main(void)
{
	TestPieces();
	TestRefusals();
	TestPipe();
	return tl_done("t_frame_reader");
}
