/*
 * frame_reader.h: a bounded reader of length-delimited messages (each one
 * preceded by its length as a protobuf varint, as writeDelimited writes
 * them) from a peer that is not trusted.
 *
 * The rule: take only what the message in progress still needs. The prefix
 * is taken one byte at a time (its length is known only at its last byte),
 * then the body up to the length it declares, never a byte of the next
 * message. A prefix declaring more than the limit is refused as soon as it
 * is complete, before any of its body is taken, and told apart from a prefix
 * that is no varint at all. The body's buffer grows with the bytes that
 * actually arrived, so a peer that declares a large message and sends little
 * costs little; the reader never holds more than one message, at most the
 * limit. What a consumer does between messages (handle each before taking
 * the next) is what bounds it: input it has not taken stays with the sender.
 *
 * Bytes come from a file descriptor (xip83_frame_read_fd) or from a
 * transport that hands them over in pieces of its own (xip83_frame_feed);
 * both apply the same rule, so a gateway reuses it for its own transport.
 */
#ifndef XIP83_FRAME_READER_H
#define XIP83_FRAME_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum Xip83FrameStatus
{
	XIP83_FRAME_MORE,			/* the message is incomplete: wait for more bytes */
	XIP83_FRAME_READY,			/* a whole message (valid until the next call) */
	XIP83_FRAME_END,			/* the peer closed between messages */
	XIP83_FRAME_TRUNCATED,		/* the peer closed inside a message */
	XIP83_FRAME_MALFORMED,		/* the prefix is no varint of at most 64 bits */
	XIP83_FRAME_TOO_LARGE,		/* the prefix declares more than the limit */
	XIP83_FRAME_READ_ERROR,		/* read() failed: see errno */
	XIP83_FRAME_NO_MEMORY
} Xip83FrameStatus;

typedef struct Xip83FrameReader
{
	size_t		limit;			/* the largest message accepted */
	unsigned char byte;			/* the prefix byte being taken */
	int			prefix_len;		/* prefix bytes taken */
	bool		sized;			/* the prefix is complete */
	uint64_t	size;			/* the length it declares (as far as taken) */
	unsigned char *body;
	size_t		len;			/* body bytes taken */
	size_t		cap;
	bool		handed_out;		/* the last call returned READY */
	Xip83FrameStatus refused;	/* MALFORMED or TOO_LARGE, which stick; else MORE */
} Xip83FrameReader;

extern void xip83_frame_init(Xip83FrameReader *r, size_t limit);
extern void xip83_frame_free(Xip83FrameReader *r);

/*
 * Reads from fd (which should be O_NONBLOCK) at most what the message in
 * progress needs. MORE when fd has nothing more for now; READY with msg and
 * len set; END or TRUNCATED at end of file; otherwise a refusal.
 */
extern Xip83FrameStatus xip83_frame_read_fd(Xip83FrameReader *r, int fd,
											const unsigned char **msg, size_t *len);

/*
 * Takes bytes from data (n of them) up to the end of the message in
 * progress; *used says how many were taken (the rest belongs to the next
 * message). MORE when all n were taken and the message is incomplete; READY
 * with msg and len set; otherwise a refusal. n == 0 means the peer closed:
 * END or TRUNCATED.
 */
extern Xip83FrameStatus xip83_frame_feed(Xip83FrameReader *r, const unsigned char *data,
										 size_t n, size_t *used, const unsigned char **msg,
										 size_t *len);

#endif							/* XIP83_FRAME_READER_H */
