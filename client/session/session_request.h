/*
 * session_request.h: a client's SubscribeRequest (v3 package
 * xmtp.mls.api.v1 or d14n package xmtp.xmtpv4.message_api), decoded and
 * checked against the rules that need no session state: one version arm (V1)
 * and one request arm; a Mutate with adds has a nonzero mutate_id; every
 * topic is kind-prefixed with a kind of the binding (v3: 0x00 group
 * messages, 0x01 welcomes; d14n: 0x00 to 0x05); at most XIP83_MAX_ADDS adds
 * and XIP83_MAX_REMOVES removes, counted before anything is unpacked.
 *
 * Cursors are vectors of positions (session_topics.h): a v3 id_cursor is one
 * entry on the topic's kind line; a d14n last_seen is one entry per
 * originator it names (an originator it omits: nothing seen). Duplicate adds
 * are coalesced here, in the order of their first appearance, the lowest
 * cursor winning line by line.
 */
#ifndef XIP83_SESSION_REQUEST_H
#define XIP83_SESSION_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session_topics.h"

#define XIP83_MAX_ADDS 100000
#define XIP83_MAX_REMOVES 100000

typedef enum
{
	XIP83_BINDING_V3,
	XIP83_BINDING_D14N
} Xip83BindingKind;

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
	Xip83Pos   *cursor;			/* replay positions above these */
	size_t		n_cursor;
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
	Xip83Pos   *entries;		/* every add's cursor entries */
	void	   *unpacked;		/* the pointers point into it */
	void	   *arena;			/* owns it */
	Xip83BindingKind binding;
} Xip83Request;

/*
 * Decodes and checks one request. Returns NULL on success, else the gRPC
 * status code (a static string) with a message in err.
 */
extern const char *xip83_request_parse(Xip83BindingKind binding, const unsigned char *bytes,
									   size_t len, Xip83Request *req, char *err, size_t err_len);
extern void xip83_request_free(Xip83Request *req);

#endif							/* XIP83_SESSION_REQUEST_H */
