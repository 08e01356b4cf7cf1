/*
 * session_request.h: a client's v3 SubscribeRequest, decoded and checked
 * against the rules that need no session state: one version arm (V1) and one
 * request arm; a Mutate with adds has a nonzero mutate_id; every topic is
 * kind-prefixed with a v3 kind (0x00 group messages, 0x01 welcomes); at most
 * XIP83_MAX_ADDS adds. Duplicate adds are coalesced here, the lowest cursor
 * winning, in the order of their first appearance.
 */
#ifndef XIP83_SESSION_REQUEST_H
#define XIP83_SESSION_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XIP83_MAX_ADDS 100000

typedef enum
{
	XIP83_REQ_MUTATE,
	XIP83_REQ_PING,
	XIP83_REQ_PONG
} Xip83RequestKind;

typedef struct Xip83Add
{
	const unsigned char *topic; /* kind-prefixed */
	size_t		len;
	int64_t		cursor;			/* replay ids above this */
} Xip83Add;

typedef struct Xip83Request
{
	Xip83RequestKind kind;
	uint64_t	nonce;			/* Ping, Pong */
	uint64_t	mutate_id;
	bool		history_only;
	Xip83Add   *adds;			/* coalesced */
	size_t		n_adds;
	const unsigned char **removes;
	size_t	   *remove_lens;
	size_t		n_removes;
	void	   *unpacked;		/* owns the bytes the pointers point into */
} Xip83Request;

/*
 * Decodes and checks one request. Returns NULL on success, else the gRPC
 * status code (a static string) with a message in err.
 */
extern const char *xip83_request_parse(const unsigned char *bytes, size_t len, Xip83Request *req,
									   char *err, size_t err_len);
extern void xip83_request_free(Xip83Request *req);

#endif							/* XIP83_SESSION_REQUEST_H */
