/*
 * session_internal.h: what the session engine's files share beyond its API
 * (session.h): the waves, and what each binding's waves do
 * (session_scan_v3.c, session_scan_d14n.c).
 */
#ifndef XIP83_SESSION_INTERNAL_H
#define XIP83_SESSION_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "session.h"

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

struct Xip83Wave
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
};

struct Xip83WaveOps
{
	/* Pins the ceilings and builds the passes from the adds the wave replays. */
	bool		(*prepare) (Xip83Session *s, Xip83Wave *w, const Xip83Add *const *adds, size_t n);
	/* Sends the query of pass p's next page (xip83_wave_send); false after a stream error. */
	bool		(*page) (Xip83Session *s, Xip83Wave *w, int p);
	/* The position of row r of a page of pass p. */
	Xip83Pos	(*position) (const PGresult *res, int r, int p);
	/* Row r of a page: hands it to xip83_wave_scanned. */
	bool		(*row) (Xip83Session *s, Xip83Wave *w, int p, const PGresult *res, int r);
};

extern const Xip83WaveOps xip83_wave_v3;
extern const Xip83WaveOps xip83_wave_d14n;

/* A v3 row as a message; its topic is built in the session's scratch buffer. */
extern bool xip83_msg_v3(Xip83Session *s, Xip83Msg *m, const Xip83V3Row *row);

/*
 * Sends a page query of wave w's pass p on the wave connection (binary
 * results); stmt (below XIP83_WAVE_STMTS) names sql for the prepared path.
 */
#define XIP83_WAVE_STMTS 3
extern bool xip83_wave_send(Xip83Session *s, Xip83Wave *w, int p, int stmt, const char *sql,
							int n_params, const char *const *params);
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
