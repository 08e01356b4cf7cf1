/*
 * session_wire.h: length-delimited protobuf messages over file descriptors,
 * as the session engine reads and writes them: each message is preceded by
 * its length as a protobuf varint (writeDelimited / parseDelimited).
 */
#ifndef XIP83_SESSION_WIRE_H
#define XIP83_SESSION_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest request accepted: 100,000 adds of long topics fit. */
#define XIP83_WIRE_MAX_IN (64 * 1024 * 1024)

typedef struct Xip83WireIn
{
	int			fd;
	unsigned char *buf;
	size_t		len;
	size_t		cap;
	size_t		consumed;		/* bytes of the message handed out last */
	bool		eof;			/* the peer half-closed */
} Xip83WireIn;

/* Reads what is available without blocking (fd must be O_NONBLOCK); false on a read error. */
extern bool xip83_wire_fill(Xip83WireIn *in);
/*
 * The next whole message: 1 with msg and len set (valid until the next call),
 * 0 when more bytes are needed, -1 when the length prefix is malformed or too large.
 */
extern int	xip83_wire_next(Xip83WireIn *in, const unsigned char **msg, size_t *len);

/* Writes one message with its length prefix, all of it; false on a write error. */
extern bool xip83_wire_write(int fd, const unsigned char *msg, size_t len);

/* Appends a varint; returns the bytes written (at most 10). */
extern size_t xip83_varint_put(unsigned char *p, uint64_t v);

#endif							/* XIP83_SESSION_WIRE_H */
