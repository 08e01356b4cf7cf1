/*
 * session_internal.h: the state the session engine's files share: the
 * session (topics, lanes, keepalive) and its waves.
 */
#ifndef XIP83_SESSION_INTERNAL_H
#define XIP83_SESSION_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "feed.h"
#include "session.h"
#include "session_frames.h"
#include "session_request.h"
#include "session_topics.h"

#define XIP83_MAX_WAVES 256
#define XIP83_MAX_TOPICS 1000000
#define XIP83_MAX_PENDING_BYTES (64 * 1024 * 1024)

/* A live row held back in a wave because its topic is gated (owns its bytes). */
typedef struct Xip83Folded
{
	Xip83V3Row	row;
	unsigned char *mem;
} Xip83Folded;

/* Per kind (0 group messages, 1 welcomes) state of a wave's merged pass. */
typedef struct Xip83WaveKind
{
	int			n_topics;		/* topics of this kind at wave start */
	char	   *topics_param;	/* bytea[] literal of their keys */
	char	   *floors_param;	/* bigint[] literal of their cursors */
	int64_t		ceiling;		/* pinned at wave start */
	int64_t		scan_cursor;	/* last id scanned */
	bool		done;
	int64_t    *delivered;		/* ids sent by the scan, ascending */
	size_t		n_delivered;
	size_t		cap_delivered;
} Xip83WaveKind;

typedef struct Xip83Wave
{
	uint64_t	mutate_id;
	bool		history_only;
	Xip83WaveKind kind[2];
	unsigned char **topics;		/* every topic it started with, kind-prefixed */
	size_t	   *topic_lens;
	size_t		n_topics;
	Xip83Folded *folded;
	size_t		n_folded;
	size_t		cap_folded;
	Xip83Batch	batch;
} Xip83Wave;

typedef struct Xip83Session
{
	Xip83SessionOptions opt;
	PGconn	   *wave_conn;
	Xip83Feed  *feed;
	Xip83Out	out;
	Xip83Batch	live;			/* the live lane's frame in the making */
	Xip83Topics topics;
	Xip83Wave  *waves[XIP83_MAX_WAVES];
	int			n_waves;
	int			next_wave;		/* round robin */
	size_t		pending_bytes;	/* folded rows held in all waves */
	/* the first stream error wins; later ones are consequences */
	char		status[512];
	bool		failed;
	bool		late_lost;
} Xip83Session;

/* Records a stream error (first one wins); always returns false. */
extern bool xip83_session_fail(Xip83Session *s, const char *code, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* The wave lane (session_wave.c). */
extern bool xip83_wave_start(Xip83Session *s, const Xip83Request *req);
/* One page of one wave; finishes it when it is complete. false on a stream error. */
extern bool xip83_wave_step(Xip83Session *s);
/* A live row of a topic gated in wave w: held until the wave ends. */
extern bool xip83_wave_fold(Xip83Session *s, Xip83Wave *w, const Xip83V3Row *row);
extern Xip83Wave *xip83_wave_find(Xip83Session *s, uint64_t mutate_id);
extern void xip83_wave_free(Xip83Wave *w);

#endif							/* XIP83_SESSION_INTERNAL_H */
