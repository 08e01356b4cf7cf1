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
#include <stdint.h>

#include <libpq-fe.h>

#include "feed/feed.h"
#include "frame_reader.h"
#include "pb_check.h"
#include "session_frames.h"
#include "session_request.h"
#include "session_topics.h"
#include "session_wire.h"

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

/*
 * The engine itself, for a caller that drives many sessions over its own
 * connections (the gateway): the session, its limits and its lanes. The
 * waves' insides are the engine's own (session_internal.h).
 */
#define XIP83_MAX_WAVES 256
#define XIP83_MAX_TOPICS 1000000
#define XIP83_MAX_PENDING_BYTES (64 * 1024 * 1024)
/*
 * The largest request: gRPC's default receive limit, which clients already
 * keep to. A Mutate of 100,000 adds with long d14n cursors is larger: the
 * client splits it into several Mutates.
 */
#define XIP83_MAX_REQUEST (4 * 1024 * 1024)
/*
 * What the topics of a stream may hold: identifiers and cursor lines of the
 * topic set, and the waves' copies and scan parameters. Counting topics is
 * not enough, as an identifier may be as long as a request; 1,000,000
 * topics of 33 bytes with one line each take 57 MB of it.
 */
#define XIP83_MAX_TOPIC_BYTES (256 * 1024 * 1024)
#define XIP83_PAGE_ROWS 1000

typedef struct Xip83Wave Xip83Wave;
typedef struct Xip83WaveOps Xip83WaveOps;
typedef struct Xip83Folded Xip83Folded;
typedef struct Xip83Apply Xip83Apply;
typedef struct Xip83Session Xip83Session;

/* Ping after an idle interval; a Ping unanswered for another interval ends the stream. */
typedef struct Xip83Keepalive
{
	int			interval_ms;
	/*
	 * A Ping may go this much before the interval is up: a caller with many
	 * streams pings a connection's together, on a grid of this step.
	 */
	int			slack_ms;
	bool		outstanding;
	uint64_t	nonce;
	int64_t		sent_ms;
} Xip83Keepalive;

struct Xip83Session
{
	Xip83SessionOptions opt;
	const Xip83WaveOps *ops;
	PGconn	   *wave_conn;
	/*
	 * The page statements wave_conn holds prepared (bit per statement id),
	 * owned by whoever owns the connection and cleared when it reconnects;
	 * NULL: each page is an unnamed statement, parsed and planned anew.
	 */
	unsigned   *wave_prepared;
	Xip83Feed  *feed;
	Xip83Out	out;
	Xip83Batch	live;			/* the live lane's frame in the making */
	Xip83Topics topics;
	Xip83Wave  *waves[XIP83_MAX_WAVES];
	int			n_waves;
	Xip83Wave  *ahead;			/* whose page query is in flight on wave_conn */
	int			ahead_pass;
	int			next_wave;		/* round robin */
	size_t		pending_bytes;	/* folded rows held in all waves */
	size_t		held_by_waves;	/* the waves' held bytes */
	unsigned char *scratch;		/* a kind-prefixed v3 topic */
	size_t		scratch_len;
	Xip83Keepalive ka;
	/*
	 * A wave step sends a page it has no result for and returns, instead of
	 * waiting: the caller collects it (xip83_wave_conn_idle) once the wave
	 * connection has it, and steps again. Set by a caller that multiplexes
	 * many sessions over a few connections.
	 */
	bool		async_pages;
	/*
	 * With async_pages, a page whose statement wave_conn has not prepared
	 * goes out unnamed (no blocking PQprepare) and names its statement here
	 * (sql NULL: none): the caller prepares it when the connection is idle
	 * (xip83_wave_prepare_send), so the next page there binds it.
	 */
	int			unprepared_stmt;
	const char *unprepared_sql;
	int			unprepared_n_params;
	/*
	 * A page whose connection was lost (a restart, a crash) is asked again
	 * by the next step, on the connection the caller gives it then, instead
	 * of failing the stream: a page is a function of its pass's cursor and
	 * pinned ceiling alone, and the rows at or below a ceiling were flushed
	 * before it was published, so they outlive a crash. Set by a caller that
	 * reconnects its wave connections.
	 */
	bool		redo_lost_pages;
	/*
	 * The seam's feed fetch done by the caller, once for many sessions: when
	 * set, a wave whose scans are done asks seam_ticket for the round of
	 * fetch that will do (the caller runs one soon), and finishes once
	 * seam_done says that round has completed; its steps until then do
	 * nothing. NULL: the wave step fetches the feed itself.
	 */
	/*
	 * A wave's ceilings are the feed's cursors when it starts, not horizons
	 * read with a query: they are horizons the feed read, and every row above
	 * them is still to come through the feed (and is folded). For a caller
	 * whose feed is shared by many sessions, so a Mutate costs no query.
	 */
	bool		ceilings_from_feed;
	/*
	 * The highest xip83_feed_replay_lsn of those ceilings: a hot standby
	 * serving this session's pages must have replayed it first (the caller
	 * checks; a restarted standby may be behind).
	 */
	uint64_t	ceilings_lsn;
	uint64_t	(*seam_ticket) (void *arg);
	bool		(*seam_done) (void *arg, uint64_t ticket);
	void	   *seam_arg;
	/*
	 * Topics per slice of a Mutate; 0: a Mutate is applied whole. A caller
	 * serving many streams on one loop applies a large Mutate a slice at a
	 * time (xip83_session_apply) between other work. Until it is whole its
	 * stream's waves do not step, the caller holds back its next requests,
	 * and the rows of its live topics are deferred and handled at the end
	 * as rows that came after it: the client sees the Mutate applied at
	 * once. A row of a topic gated already is folded as always; one of a
	 * topic its adds have not reached yet lies below the ceilings, which are
	 * pinned once every add is gated, so the scans read it.
	 */
	int			mutate_slice;
	Xip83Apply *applying;
	Xip83Folded *deferred;		/* counted in pending_bytes */
	size_t		n_deferred;
	size_t		cap_deferred;
	/* the first stream error wins; later ones are consequences */
	char		status[512];
	bool		failed;
};

/*
 * A session without connections (the caller sets wave_conn and feed), or
 * NULL when out of memory; freed with xip83_session_free, which leaves
 * wave_conn and feed alone.
 */
extern Xip83Session *xip83_session_new(const Xip83SessionOptions *options);
extern void xip83_session_free(Xip83Session *s);
/* The feed's callbacks (the feed's arg is the session). */
extern void xip83_session_on_row(void *arg, const Xip83FeedRow *row);
extern void xip83_session_on_status(void *arg, const char *status, const char *detail);
/*
 * A row of the feed for a caller that hands one row to many sessions: t is
 * the row's topic in the session's table (looked up by the caller's own
 * index), packed the v3 message already packed (xip83_v3_pack) or NULL.
 */
extern void xip83_session_on_topic_row(Xip83Session *s, Xip83Topic *t, const Xip83FeedRow *row,
									   const unsigned char *packed, size_t packed_len);
/*
 * The same for a caller that sends the row itself, one frame for many
 * sessions (xip83_live_frame): the engine's rules are applied and the row's
 * position taken, and true says the row goes out live now, on its own,
 * after whatever the session sent before (the caller records the send with
 * xip83_out_sent). false: nothing to send (seen, held for a wave, failed).
 */
extern bool xip83_session_take_row(Xip83Session *s, Xip83Topic *t, const Xip83FeedRow *row,
								   const unsigned char *packed, size_t packed_len);
/* Writes the live frame of row alone to out: what xip83_session_take_row's caller sends. */
extern bool xip83_live_frame(Xip83Out *out, const Xip83FeedRow *row, const unsigned char *packed,
							 size_t packed_len);
/* The topics the session's waves started with, every wave together. */
extern size_t xip83_session_wave_topics(const Xip83Session *s);
/* One whole SubscribeRequest from the client; false after a stream error. */
extern bool xip83_session_request(Xip83Session *s, const unsigned char *msg, size_t len);
/*
 * A decoded Mutate (removes, then the wave of its adds), taking the
 * request's contents: applied whole, or its first slice (mutate_slice);
 * false after a stream error.
 */
extern bool xip83_session_mutate(Xip83Session *s, Xip83Request *req);
/* The next slice of the Mutate being applied (none: true); false after a stream error. */
extern bool xip83_session_apply(Xip83Session *s);
/* Pings an idle client, fails a silent one; half_closed: the client sends nothing more. */
extern bool xip83_session_keepalive(Xip83Session *s, bool half_closed);

/* Records a stream error (first one wins); always returns false. */
extern bool xip83_session_fail(Xip83Session *s, const char *code, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* Collects a page query in flight into its wave, so the wave connection can run another query. */
extern void xip83_wave_conn_idle(Xip83Session *s);
/*
 * Sends, on the idle conn, the prepare of the statement the last page there
 * went out without (unprepared_sql); its id (the bit of wave_prepared to set
 * once it succeeded), or -1 when there is none or the send failed.
 */
extern int	xip83_wave_prepare_send(Xip83Session *s, PGconn *conn);
/* One page of one wave; finishes it when it is complete. false on a stream error. */
extern bool xip83_wave_step(Xip83Session *s);

#endif							/* XIP83_SESSION_H */
