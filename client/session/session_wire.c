/*
 * session_wire.c: length-delimited messages written to file descriptors.
 */
#include "session_wire.h"

#include <errno.h>
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
