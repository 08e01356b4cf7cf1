/*
 * sessionproc.h: build/xip83-session as a child process for the libpq
 * tests: real SubscribeRequest bytes in (length-delimited, packed with the
 * protobuf-c code), every SubscribeResponse out, decoded; its STATUS line and
 * exit code at the end.
 */
#ifndef XIP83_SESSIONPROC_H
#define XIP83_SESSIONPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "testlib.h"
#include "xip83/mls_api.pb-c.h"

typedef Xmtp__Mls__Api__V1__SubscribeResponse SpResponse;

/* Response arms: the same numbers in both packages. */
#define SP_DELIVERY		1		/* v3 Messages, d14n Envelopes */
#define SP_STARTED		2
#define SP_PING			3
#define SP_PONG			4
#define SP_TOPICS_LIVE	5
#define SP_CATCHUP		6

/* A position and its topic: v3 (kind byte, id), d14n (originator, sequence). */
typedef struct SpRow
{
	int32_t		node;
	int64_t		pos;
	uint8_t		topic[32];		/* kind-prefixed, cut at 32 bytes */
	size_t		topic_len;
} SpRow;

/* A response of either binding, decoded to what the tests check. */
typedef struct SpEvent
{
	int			type;			/* SP_* */
	uint64_t	tag;			/* delivery: mutate_id; CatchupComplete: its mutate_id */
	uint64_t	nonce;			/* Ping, Pong */
	uint32_t	keepalive_ms;	/* Started */
	SpRow	   *rows;			/* delivery: one per message; TopicsLive: one per topic */
	size_t		n_rows;
	size_t		wire_len;		/* the serialized response */
} SpEvent;

/* An add with a cursor vector (v3: one entry, its seq the id_cursor). */
typedef struct SpCurAdd
{
	const unsigned char *topic;
	size_t		len;
	const SpRow *cursor;		/* node and pos of each entry */
	size_t		n_cursor;
} SpCurAdd;

typedef struct SessionProc
{
	pid_t		pid;
	int			to_child;		/* its stdin; -1 after the half-close */
	int			from_child;		/* its stdout */
	int			err_child;		/* its stderr */
	unsigned char *buf;			/* stdout bytes not decoded yet */
	size_t		len;
	size_t		cap;
	bool		eof;
	bool		hold;			/* sp_send_raw collects instead of writing */
	unsigned char *held;
	size_t		held_len;
	char		status[1024];	/* the STATUS line, after sp_finish */
	int			exit_code;
	long		maxrss_kb;		/* its peak resident memory, after sp_finish */
	bool		d14n;			/* started with --binding d14n */
} SessionProc;

/* One add of a Mutate. */
typedef struct SpAdd
{
	const unsigned char *topic;
	size_t		len;
	uint64_t	cursor;
} SpAdd;

/* Starts the session next to the test program (argv0's ../xip83-session). */
extern void sp_start(SessionProc *p, const char *argv0, const char *binding, int keepalive_ms);
/* sp_start with stdin_fd (a file, a device) as its stdin instead of a pipe (to_child is -1). */
extern void sp_start_stdin(SessionProc *p, const char *argv0, const char *binding,
						   int keepalive_ms, int stdin_fd);
/* Writes one request's bytes with their length prefix. */
extern void sp_send_raw(SessionProc *p, const unsigned char *msg, size_t len);
/* Writes what was collected while hold was set, in one write; clears hold. */
extern void sp_release(SessionProc *p);
/* Packs and sends a Mutate. */
extern void sp_mutate(SessionProc *p, const SpAdd *adds, size_t n_adds,
					  const unsigned char *const *removes, const size_t *remove_lens,
					  size_t n_removes, bool history_only, uint64_t mutate_id);
extern void sp_ping(SessionProc *p, uint64_t nonce);
extern void sp_pong(SessionProc *p, uint64_t nonce);
/* The next response within timeout_ms, or NULL (timeout or end of stream); free with sp_free. */
extern SpResponse *sp_read(SessionProc *p, int timeout_ms);
extern void sp_free(SpResponse *r);
/* Packs and sends a Mutate of the session's binding with cursor vectors. */
extern void sp_mutate_cur(SessionProc *p, const SpCurAdd *adds, size_t n_adds,
						  const unsigned char *const *removes, const size_t *remove_lens,
						  size_t n_removes, bool history_only, uint64_t mutate_id);
/* The next response of either binding within timeout_ms; false on timeout or end of stream. */
extern bool sp_next(SessionProc *p, int timeout_ms, SpEvent *e);
extern void sp_event_free(SpEvent *e);
/* The arm (SP_*) of the next response, read but not decoded; -1 on timeout or end of stream. */
extern int	sp_next_arm(SessionProc *p, int timeout_ms);
/* A real OriginatorEnvelope (node, seq, target topic in its AuthenticatedData); free() it. */
extern unsigned char *sp_envelope(int32_t node, int64_t seq, const unsigned char *topic,
								  size_t topic_len, size_t *len);
/* Appends bytes to a text array literal being built ("{" first) as a bytea element. */
extern void sp_bytea_elem(TlBuf *b, const uint8_t *bytes, size_t len);
/* Half-closes, waits for the end and checks the STATUS starts with code and the exit is 1. */
extern void sp_expect_status(SessionProc *p, const char *code, const char *what);
/* Half-closes (end of stdin). */
extern void sp_close(SessionProc *p);
/*
 * Waits for the process to exit (within timeout_ms, else kills it) and reads
 * its STATUS line; responses still unread are passed to on_response.
 */
extern void sp_finish(SessionProc *p, int timeout_ms, void (*on_response) (void *, SpResponse *),
					  void *arg);
/* sp_finish for either binding: unread responses go to on_event as events. */
extern void sp_finish_events(SessionProc *p, int timeout_ms,
							 void (*on_event) (void *, SpEvent *), void *arg);

#endif							/* XIP83_SESSIONPROC_H */
