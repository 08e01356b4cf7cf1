/*
 * frame_reader.c: the bounded reader of length-delimited messages (see
 * frame_reader.h). Both entry points ask Space where the next bytes go and
 * how many the message in progress still takes, and tell Took how many came.
 */
#include "frame_reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The body's first allocation; it doubles as bytes arrive, up to the declared length. */
#define FIRST_CAP (64 * 1024)
/* A body buffer larger than this is not kept between messages: an idle stream holds little. */
#define KEEP_CAP (1024 * 1024)

void
xip83_frame_init(Xip83FrameReader *r, size_t limit)
{
	memset(r, 0, sizeof(*r));
	r->limit = limit;
	r->refused = XIP83_FRAME_MORE;
}

void
xip83_frame_free(Xip83FrameReader *r)
{
	free(r->body);
	r->body = NULL;
	r->cap = 0;
}

/* Drops the message handed out by the last call: the next one starts. */
static void
Restart(Xip83FrameReader *r)
{
	if (!r->handed_out)
		return;
	r->handed_out = false;
	r->prefix_len = 0;
	r->sized = false;
	r->size = 0;
	r->len = 0;
	if (r->cap > KEEP_CAP)
		xip83_frame_free(r);
}

/* Where the next bytes go and how many the message in progress takes there. */
static Xip83FrameStatus
Space(Xip83FrameReader *r, unsigned char **dst, size_t *room)
{
	if (!r->sized)
	{
		/* the prefix's length is known only at its last byte */
		*dst = &r->byte;
		*room = 1;
		return XIP83_FRAME_MORE;
	}
	if (r->len == r->cap)
	{
		size_t		cap = r->cap ? r->cap * 2 : FIRST_CAP;
		unsigned char *b;

		if (cap > r->size)
			cap = (size_t) r->size;
		if ((b = realloc(r->body, cap)) == NULL)
			return XIP83_FRAME_NO_MEMORY;
		r->body = b;
		r->cap = cap;
	}
	*dst = r->body + r->len;
	*room = (size_t) r->size - r->len < r->cap - r->len ? (size_t) r->size - r->len
		: r->cap - r->len;
	return XIP83_FRAME_MORE;
}

/* n bytes arrived where Space said. */
static Xip83FrameStatus
Took(Xip83FrameReader *r, size_t n, const unsigned char **msg, size_t *len)
{
	if (!r->sized)
	{
		unsigned char b = r->byte;

		/* the tenth byte holds bit 63 only, and ends the varint */
		if (r->prefix_len == 9 && b > 1)
			return r->refused = XIP83_FRAME_MALFORMED;
		r->size |= (uint64_t) (b & 0x7f) << (7 * r->prefix_len);
		r->prefix_len++;
		if (b & 0x80)
			return XIP83_FRAME_MORE;
		r->sized = true;
		if (r->size > r->limit)
			return r->refused = XIP83_FRAME_TOO_LARGE;
	}
	else
		r->len += n;
	if (r->len < r->size)
		return XIP83_FRAME_MORE;
	/* an empty message has no buffer: any valid pointer does */
	*msg = r->body ? r->body : &r->byte;
	*len = r->len;
	r->handed_out = true;
	return XIP83_FRAME_READY;
}

static Xip83FrameStatus
AtEnd(const Xip83FrameReader *r)
{
	return r->prefix_len == 0 ? XIP83_FRAME_END : XIP83_FRAME_TRUNCATED;
}

Xip83FrameStatus
xip83_frame_read_fd(Xip83FrameReader *r, int fd, const unsigned char **msg, size_t *len)
{
	Restart(r);
	if (r->refused != XIP83_FRAME_MORE)
		return r->refused;
	for (;;)
	{
		unsigned char *dst;
		size_t		room;
		ssize_t		n;
		Xip83FrameStatus st;

		if ((st = Space(r, &dst, &room)) != XIP83_FRAME_MORE)
			return st;
		n = read(fd, dst, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? XIP83_FRAME_MORE
				: XIP83_FRAME_READ_ERROR;
		if (n == 0)
			return AtEnd(r);
		if ((st = Took(r, (size_t) n, msg, len)) != XIP83_FRAME_MORE)
			return st;
	}
}

Xip83FrameStatus
xip83_frame_feed(Xip83FrameReader *r, const unsigned char *data, size_t n, size_t *used,
				 const unsigned char **msg, size_t *len)
{
	*used = 0;
	Restart(r);
	if (r->refused != XIP83_FRAME_MORE)
		return r->refused;
	if (n == 0)
		return AtEnd(r);
	while (*used < n)
	{
		unsigned char *dst;
		size_t		room;
		Xip83FrameStatus st;

		if ((st = Space(r, &dst, &room)) != XIP83_FRAME_MORE)
			return st;
		if (room > n - *used)
			room = n - *used;
		memcpy(dst, data + *used, room);
		*used += room;
		if ((st = Took(r, room, msg, len)) != XIP83_FRAME_MORE)
			return st;
	}
	return XIP83_FRAME_MORE;
}
