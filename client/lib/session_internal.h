/*
 * session_internal.h: the state the session engine's files share: the
 * session (topics, lanes, keepalive) and its waves, and what each binding's
 * waves do (session_scan_v3.c, session_scan_d14n.c).
 */
#ifndef XIP83_SESSION_INTERNAL_H
#define XIP83_SESSION_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "feed.h"
#include "session.h"
#include "session_frames.h"
#include "session_params.h"
#include "session_request.h"
#include "session_topics.h"

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

/*
 * A live message held back in a wave because its topic is gated (owns its
 * bytes). msg.v3 only marks a v3 row: its columns are in v3 (the array of
 * folded rows moves, so no pointer into it is kept).
 */
typedef struct Xip83Folded
{
	Xip83Msg	msg;
	Xip83V3Row	v3;
	unsigned char *mem;
	size_t		size;			/* counted in the session's pending bytes */
	bool		late;			/* the feed's late write */
} Xip83Folded;

/*
 * One merged pass of a wave in position order, from its floors up to its
 * pinned ceilings: v3 has one per kind, d14n one over every originator.
 */
typedef struct Xip83Pass
{
	char	   *params[5];		/* the scan's array parameters, built at wave start */
	int64_t		ceiling;		/* v3: the kind's ceiling */
	Xip83Pos	scan;			/* the last position scanned */
	bool		done;
} Xip83Pass;

typedef struct Xip83Wave
{
	uint64_t	mutate_id;
	bool		history_only;
	Xip83Pass	pass[2];
	int			n_passes;
	Xip83Pos   *delivered;		/* positions sent by the scans, ascending */
	size_t		n_delivered;
	size_t		cap_delivered;
	unsigned char **topics;		/* every topic it started with, kind-prefixed */
	size_t	   *topic_lens;
	size_t		n_topics;
	Xip83Folded *folded;
	size_t		n_folded;
	size_t		cap_folded;
	Xip83Batch	batch;
	size_t		held;			/* bytes of its topics and scan parameters */
	PGresult   *prefetched;		/* the next page of pass prefetched_pass, read ahead */
	int			prefetched_pass;
	int			pages_lost;		/* pages asked again after a lost connection */
	uint64_t	seam;			/* the caller's fetch round it waits for (seam_ticket); 0: none */
	/* the scans' parameters in the making (by pass), from the pin to the passes */
	Xip83ArrayLit lit[2][5];
	int32_t    *nodes;			/* d14n: the originators pinned */
	int			n_nodes;
	size_t		n_params;		/* its topics in lit so far */
	bool		pinned;
} Xip83Wave;

typedef struct Xip83Session Xip83Session;

/*
 * A Mutate being applied a slice at a time (Xip83Session.applying): its
 * removes, then its adds, then the start of its wave.
 */
typedef struct Xip83Apply
{
	Xip83Request req;			/* owns the request's bytes */
	size_t		removed;		/* removes applied so far */
	size_t		added;			/* adds looked at so far */
	bool		opened;			/* the wave of its adds is open (w, or none) */
	Xip83Wave  *w;				/* that wave, in waves but not stepped; NULL: none */
	const Xip83Add **chosen;	/* the adds it replays */
} Xip83Apply;

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

/* What a binding's waves do. */
typedef struct Xip83WaveOps
{
	/*
	 * A wave starts in three steps, so that a large one can take several
	 * slices: pin the ceilings, append each add it replays to the scans'
	 * parameters (lit), build the passes from them.
	 */
	bool		(*pin) (Xip83Session *s, Xip83Wave *w);
	bool		(*param) (Xip83Session *s, Xip83Wave *w, const Xip83Add *add);
	bool		(*passes) (Xip83Session *s, Xip83Wave *w);
	/* Sends the query of pass p's next page (xip83_wave_send); false after a stream error. */
	bool		(*page) (Xip83Session *s, Xip83Wave *w, int p);
	/* The position of row r of a page of pass p. */
	Xip83Pos	(*position) (const PGresult *res, int r, int p);
	/* Row r of a page: hands it to xip83_wave_scanned. */
	bool		(*row) (Xip83Session *s, Xip83Wave *w, int p, const PGresult *res, int r);
} Xip83WaveOps;

extern const Xip83WaveOps xip83_wave_v3;
extern const Xip83WaveOps xip83_wave_d14n;

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

/* A v3 row as a message; its topic is built in the session's scratch buffer. */
extern bool xip83_msg_v3(Xip83Session *s, Xip83Msg *m, const Xip83V3Row *row);

/*
 * The wave lane (session_wave.c). A Mutate's wave: opened before its adds,
 * which it gates one by one, and started (ceilings pinned, scans built)
 * after the last; a Mutate that replays nothing is acked there at once.
 */
extern bool xip83_wave_open(Xip83Session *s, Xip83Apply *a);
extern bool xip83_wave_add(Xip83Session *s, Xip83Apply *a, const Xip83Add *add);
/* Pins and builds the scans' parameters of up to *budget adds; true when it is done (or failed). */
extern bool xip83_wave_close(Xip83Session *s, Xip83Apply *a, size_t *budget);
/* Keeps a copy of a message in an array of held ones, counted in pending_bytes. */
extern bool xip83_msg_keep(Xip83Session *s, Xip83Folded **arr, size_t *n, size_t *cap,
						   const Xip83Msg *m, bool late);
/*
 * Sends a page query of wave w's pass p on the wave connection (binary
 * results); stmt (below XIP83_WAVE_STMTS) names sql for the prepared path.
 */
#define XIP83_WAVE_STMTS 3
extern bool xip83_wave_send(Xip83Session *s, Xip83Wave *w, int p, int stmt, const char *sql,
							int n_params, const char *const *params);
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
/* A row a scan returned: remembered, and sent if its topic is still gated in w. */
extern bool xip83_wave_scanned(Xip83Session *s, Xip83Wave *w, const Xip83Msg *m);
/* A live row of a topic gated in wave w: held until the wave ends. */
extern bool xip83_wave_fold(Xip83Session *s, Xip83Wave *w, const Xip83Msg *m);
extern Xip83Wave *xip83_wave_find(Xip83Session *s, uint64_t mutate_id);
extern void xip83_wave_free(Xip83Wave *w);

/* A wave takes the feed's cursors as its ceilings (ceilings_lsn). */
static inline void
xip83_ceilings_from_feed(Xip83Session *s)
{
	uint64_t	lsn = xip83_feed_replay_lsn(s->feed);

	if (lsn > s->ceilings_lsn)
		s->ceilings_lsn = lsn;
}

#endif							/* XIP83_SESSION_INTERNAL_H */
