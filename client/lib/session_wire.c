/*
 * session_wire.c: length-delimited messages over file descriptors.
 */
#include "session_wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

size_t
xip83_varint_put(unsigned char *p, uint64_t v)
{
	size_t		n = 0;

	while (v >= 0x80)
	{
		p[n++] = (unsigned char) (v | 0x80);
		v >>= 7;
	}
	p[n++] = (unsigned char) v;
	return n;
}

bool
xip83_wire_fill(Xip83WireIn *in)
{
	for (;;)
	{
		ssize_t		n;

		if (in->cap - in->len < 65536)
		{
			size_t		cap = in->cap ? in->cap * 2 : 131072;
			unsigned char *b = realloc(in->buf, cap);

			if (b == NULL)
				return false;
			in->buf = b;
			in->cap = cap;
		}
		n = read(in->fd, in->buf + in->len, in->cap - in->len);
		if (n > 0)
		{
			in->len += (size_t) n;
			continue;
		}
		if (n == 0)
			in->eof = true;
		else if (errno == EINTR)
			continue;
		else if (errno != EAGAIN && errno != EWOULDBLOCK)
			return false;
		return true;
	}
}

int
xip83_wire_next(Xip83WireIn *in, const unsigned char **msg, size_t *len)
{
	uint64_t	size = 0;
	size_t		i;

	/* drop the message handed out last time */
	if (in->consumed > 0)
	{
		memmove(in->buf, in->buf + in->consumed, in->len - in->consumed);
		in->len -= in->consumed;
		in->consumed = 0;
	}
	for (i = 0; i < in->len && i < 10; i++)
	{
		size |= (uint64_t) (in->buf[i] & 0x7f) << (7 * i);
		if (!(in->buf[i] & 0x80))
			break;
	}
	if (i == 10 || (i < in->len && size > XIP83_WIRE_MAX_IN))
		return -1;
	if (i == in->len || in->len - (i + 1) < size)
		return 0;
	*msg = in->buf + i + 1;
	*len = (size_t) size;
	in->consumed = i + 1 + (size_t) size;
	return 1;
}

bool
xip83_wire_write(int fd, const unsigned char *msg, size_t len)
{
	unsigned char prefix[10];
	size_t		n = xip83_varint_put(prefix, len);
	const unsigned char *parts[2] = {prefix, msg};
	const size_t lens[2] = {n, len};

	for (int k = 0; k < 2; k++)
	{
		size_t		off = 0;

		while (off < lens[k])
		{
			ssize_t		w = write(fd, parts[k] + off, lens[k] - off);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return false;
			off += (size_t) w;
		}
	}
	return true;
}
