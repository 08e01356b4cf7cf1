/*
 * grpc_frame.h: gRPC's message framing over an HTTP/2 stream, and the
 * status codes and trailer text that end a call.
 *
 * Each message is a 1-byte compressed flag and a 4-byte big-endian length,
 * then that many bytes. The reader takes a stream's DATA bytes in whatever
 * pieces HTTP/2 delivers them and hands out whole messages. It never holds
 * more than the message it is assembling, grown as its bytes arrive (a peer
 * that announces a large message and sends nothing costs nothing), and it
 * refuses a length over its limit as soon as the 5-byte prefix is complete,
 * before any of the body is read. We offer no compression: a message with
 * the compressed flag set is refused (gRPC answers INTERNAL when the flag is
 * set without a grpc-encoding, and a grpc-encoding other than identity is
 * refused when the stream opens, with UNIMPLEMENTED).
 */
#ifndef XIP83_GRPC_FRAME_H
#define XIP83_GRPC_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XIP83_GRPC_PREFIX 5		/* compressed flag + 4-byte length */

/* gRPC status codes (grpc-status), the ones this project uses */
#define XIP83_GRPC_OK					0
#define XIP83_GRPC_CANCELLED			1
#define XIP83_GRPC_INVALID_ARGUMENT		3
#define XIP83_GRPC_DEADLINE_EXCEEDED	4
#define XIP83_GRPC_RESOURCE_EXHAUSTED	8
#define XIP83_GRPC_ABORTED				10
#define XIP83_GRPC_UNIMPLEMENTED		12
#define XIP83_GRPC_INTERNAL				13
#define XIP83_GRPC_UNAVAILABLE			14
#define XIP83_GRPC_NCODES				17

/* Status names by code, 0 to XIP83_GRPC_NCODES - 1 (the metrics' labels). */
extern const char *const xip83_grpc_codes[XIP83_GRPC_NCODES];

typedef enum Xip83GrpcRead
{
	XIP83_GRPC_READ_MORE,		/* every byte taken, no whole message yet */
	XIP83_GRPC_READ_MESSAGE,	/* a whole message is ready */
	XIP83_GRPC_READ_TOO_LARGE,	/* the announced length is over the limit */
	XIP83_GRPC_READ_COMPRESSED, /* the compressed flag is set */
	XIP83_GRPC_READ_NOMEM		/* out of memory */
} Xip83GrpcRead;

typedef struct Xip83GrpcReader
{
	uint32_t	limit;			/* largest message accepted */
	unsigned char prefix[XIP83_GRPC_PREFIX];
	uint8_t		prefix_len;		/* bytes of the prefix seen */
	uint32_t	need;			/* the message's length, once the prefix is whole */
	uint32_t	have;			/* bytes of its body seen */
	uint32_t	cap;
	unsigned char *body;
	uint32_t	announced;		/* the length refused by READ_TOO_LARGE */
} Xip83GrpcReader;

/* A reader for messages of at most limit bytes. */
extern void xip83_grpc_reader_init(Xip83GrpcReader *r, uint32_t limit);

/*
 * Takes bytes from data[0..len): sets *used to how many it took. On
 * READ_MESSAGE, *msg and *msg_len are the message, valid until the next call;
 * call again with the rest of the data. After TOO_LARGE, COMPRESSED or NOMEM
 * the reader is spent: the stream must end.
 */
extern Xip83GrpcRead xip83_grpc_reader_feed(Xip83GrpcReader *r, const unsigned char *data,
											size_t len, size_t *used,
											const unsigned char **msg, size_t *msg_len);

/* True when a message is partly read (a half-close now cuts it short). */
extern bool xip83_grpc_reader_partial(const Xip83GrpcReader *r);

/* Frees the buffer; the reader may be fed again from a message boundary. */
extern void xip83_grpc_reader_free(Xip83GrpcReader *r);

/* Writes the 5-byte prefix of an uncompressed message of len bytes. */
extern void xip83_grpc_prefix(unsigned char out[XIP83_GRPC_PREFIX], uint32_t len);

/*
 * grpc-message's encoding: bytes outside printable ASCII, and '%', become
 * %XX. Writes at most cap bytes including the terminating NUL, cutting the
 * text (never an escape) short; returns the length written.
 */
extern size_t xip83_grpc_percent_encode(const char *text, char *out, size_t cap);

#endif
