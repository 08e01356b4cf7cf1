/*
 * session_frames.h: the SubscribeResponse frames the session engine sends.
 * Delivery frames are built incrementally: rows are appended to a batch as
 * encoded GroupMessage / WelcomeMessage fields of one v3 Messages, or as the
 * stored OriginatorEnvelope bytes of one d14n Envelopes, and the batch is sent
 * as a frame when it is flushed or when the next row would push the frame
 * past the frame limit (a row is never split; a larger row goes alone).
 * Control frames have the same field numbers in both packages, so the same
 * bytes serve both bindings.
 */
#ifndef XIP83_SESSION_FRAMES_H
#define XIP83_SESSION_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "feed/feed.h"

/* One message either lane delivers, of either binding. */
typedef struct Xip83Msg
{
	int32_t		node;			/* v3: the topic's kind byte; d14n: originator */
	int64_t		position;		/* v3: id; d14n: sequence id */
	const unsigned char *topic; /* kind-prefixed */
	size_t		topic_len;
	const Xip83V3Row *v3;		/* v3: every column; d14n: NULL */
	const unsigned char *envelope;	/* d14n: the stored originator_envelope */
	size_t		envelope_len;
	/*
	 * v3: the row already packed (xip83_v3_pack) by a caller that hands one
	 * row to many batches, so it is encoded once; NULL: packed from v3.
	 * Valid for the call only.
	 */
	const unsigned char *packed;
	size_t		packed_len;
} Xip83Msg;

#define XIP83_MAX_FRAME (2 * 1024 * 1024)

/*
 * Where frames go: a file descriptor (length-delimited), or a writer that
 * takes each whole frame (a gRPC stream); and the time of the last frame
 * (keepalive).
 */
typedef struct Xip83Out
{
	int			fd;
	bool		(*write) (void *arg, const unsigned char *frame, size_t len);
	void	   *write_arg;
	int64_t		last_send_ms;
	bool		failed;			/* a write failed: the client is gone */
	bool		d14n;			/* Envelopes frames (else v3 Messages) */
	int64_t		frames;
} Xip83Out;

typedef struct Xip83Batch
{
	unsigned char *buf;			/* the Messages body so far */
	size_t		len;
	size_t		cap;
	uint64_t	mutate_id;		/* 0: the live lane */
	int			count;
} Xip83Batch;

/*
 * A v3 row as the GroupMessage or WelcomeMessage a Messages frame carries:
 * packed into out, or only sized when out is NULL. Returns its length.
 */
extern size_t xip83_v3_pack(const Xip83V3Row *row, unsigned char *out);
/* Appends a message; flushes first when the frame would grow past the limit. */
extern bool xip83_batch_add(Xip83Out *out, Xip83Batch *batch, const Xip83Msg *msg);
/* Sends the batch as one delivery frame tagged batch->mutate_id, if it holds rows. */
extern bool xip83_batch_flush(Xip83Out *out, Xip83Batch *batch);
extern void xip83_batch_free(Xip83Batch *batch);
/*
 * A frame the caller sent on out's behalf (a shared one, written once for
 * many sessions): counted as Send counts its own, or out fails (ok false).
 */
extern bool xip83_out_sent(Xip83Out *out, bool ok, int64_t now_ms);

extern bool xip83_send_started(Xip83Out *out, uint32_t keepalive_ms);
/* In several TopicsLive when one would pass the frame limit (a topic is never split). */
extern bool xip83_send_topics_live(Xip83Out *out, const unsigned char *const *topics,
								   const size_t *lens, size_t n);
extern bool xip83_send_catchup_complete(Xip83Out *out, uint64_t mutate_id);
extern bool xip83_send_ping(Xip83Out *out, uint64_t nonce);
extern bool xip83_send_pong(Xip83Out *out, uint64_t nonce);

#endif							/* XIP83_SESSION_FRAMES_H */
