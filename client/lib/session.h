/*
 * session.h: the XIP-83 Subscribe session engine over libpq, for either
 * storage binding: v3 (group messages and welcomes, package xmtp.mls.api.v1)
 * or d14n (envelopes, package xmtp.xmtpv4.message_api).
 *
 * One session serves one Subscribe stream: it reads length-delimited
 * SubscribeRequest messages from in_fd and writes length-delimited
 * SubscribeResponse messages to out_fd until the client half-closes (end of
 * in_fd) and every wave in flight has finished, or until a stream error.
 * It holds two connections: the live feed's (feed.h) and one for the waves.
 */
#ifndef XIP83_SESSION_H
#define XIP83_SESSION_H

#include <stdbool.h>
#include <stddef.h>

typedef struct Xip83SessionOptions
{
	const char *conninfo;		/* libpq connection string */
	bool		d14n;			/* the d14n binding (else v3) */
	int			keepalive_ms;	/* idle time before a Ping; 0 = 30000 */
	int			in_fd;
	int			out_fd;
} Xip83SessionOptions;

/*
 * Runs the stream to its end. Returns 0 after a clean close ("OK" in
 * status), 1 after a stream error: status then holds the gRPC status code
 * and a message ("INVALID_ARGUMENT mutate_id 7 is a wave in flight").
 */
extern int	xip83_session_run(const Xip83SessionOptions *options, char *status,
							  size_t status_len);

#endif							/* XIP83_SESSION_H */
