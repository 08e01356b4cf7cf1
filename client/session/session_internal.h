/*
 * session_internal.h: what the session engine's files share beyond its API
 * (session.h): the waves, a Mutate being applied, and what each binding's
 * waves do (session_scan_v3.c, session_scan_d14n.c).
 */
#ifndef XIP83_SESSION_INTERNAL_H
#define XIP83_SESSION_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "session.h"
#include "session_params.h"

/*
 * A live message held back in a wave because its topic is gated (owns its
 * bytes). msg.v3 only marks a v3 row: its columns are in v3 (the array of
 * folded rows moves, so no pointer into it is kept).
 */
struct Xip83Folded
{
	Xip83Msg	msg;
	Xip83V3Row	v3;
	unsigned char *mem;
	size_t		size;			/* counted in the session's pending bytes */
	bool		late;			/* the feed's late write */
};

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
	/* the scans' parameters in the making (by pass), from the pin to the passes */
	Xip83ArrayLit lit[2][5];
	int32_t    *nodes;			/* d14n: the originators pinned */
	int			n_nodes;
	size_t		n_params;		/* its topics in lit so far */
	bool		pinned;
};

/*
 * A Mutate being applied a slice at a time (Xip83Session.applying): its
 * removes, then its adds, then the start of its wave.
 */
struct Xip83Apply
{
	Xip83Request req;			/* owns the request's bytes */
	size_t		removed;		/* removes applied so far */
	size_t		added;			/* adds looked at so far */
	bool		opened;			/* the wave of its adds is open (w, or none) */
	Xip83Wave  *w;				/* that wave, in waves but not stepped; NULL: none */
	const Xip83Add **chosen;	/* the adds it replays */
};

/* What a binding's waves do. */
struct Xip83WaveOps
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
};

extern const Xip83WaveOps xip83_wave_v3;
extern const Xip83WaveOps xip83_wave_d14n;

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
