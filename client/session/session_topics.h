/*
 * session_topics.h: a session's topics by their kind-prefixed bytes, and
 * where each one stands: gated in a wave, or live; and per line (v3: the
 * topic's kind; d14n: each originator) the floor it was added with and the
 * highest position delivered for it.
 */
#ifndef XIP83_SESSION_TOPICS_H
#define XIP83_SESSION_TOPICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A position on one line: v3 (kind byte, id), d14n (originator, sequence id).
 * Also a cursor entry. A line with no entry stands at -1: nothing seen (d14n
 * chain originators start at sequence 0).
 */
typedef struct Xip83Pos
{
	int32_t		node;
	int64_t		seq;
} Xip83Pos;

#define XIP83_NOTHING_SEEN (-1)

typedef struct Xip83Line
{
	int32_t		node;
	int64_t		floor;			/* the cursor the topic was added with */
	int64_t		position;		/* highest position delivered for it */
} Xip83Line;

typedef struct Xip83Topic
{
	struct Xip83Topic *next;	/* hash chain */
	unsigned char *bytes;
	size_t		len;
	bool		live;			/* false: gated in wave `wave` */
	uint64_t	wave;
	Xip83Line  *lines;			/* `one` while the topic has one line, or none */
	int			n_lines;
	Xip83Line	one;
	void	   *data;			/* the set owner's, when it is not a session's */
} Xip83Topic;

typedef struct Xip83Topics
{
	Xip83Topic **slots;
	size_t		n_slots;
	size_t		count;
	size_t		bytes;			/* identifiers and lines held: what adds cost in memory */
	/*
	 * Told of every topic entering (added) or leaving the set (may be NULL).
	 * An entry keeps its address from the one call to the other.
	 */
	void		(*watch) (void *arg, Xip83Topic *topic, bool added);
	void	   *watch_arg;
	size_t		emptied;		/* slots xip83_topics_free_some emptied */
} Xip83Topics;

extern Xip83Topic *xip83_topics_get(const Xip83Topics *set, const unsigned char *t, size_t len);
/* The topic's entry, created (gated in no wave, no lines) when absent; NULL when out of memory. */
extern Xip83Topic *xip83_topics_put(Xip83Topics *set, const unsigned char *t, size_t len);
/* Room for n more topics without rehashing as they come; false: out of memory. */
extern bool xip83_topics_reserve(Xip83Topics *set, size_t n);
extern void xip83_topics_del(Xip83Topics *set, const unsigned char *t, size_t len);
extern void xip83_topics_free(Xip83Topics *set);
/*
 * Frees up to about n topics of a set that takes no more (a large set is
 * freed a part at a time); true when it is free (as xip83_topics_free).
 */
extern bool xip83_topics_free_some(Xip83Topics *set, size_t n);

/* The value of a cursor for a line: its entry, or XIP83_NOTHING_SEEN. */
extern int64_t xip83_cursor_at(const Xip83Pos *cursor, size_t n, int32_t node);
/* The topic's line of node, or NULL. */
extern Xip83Line *xip83_topic_line(const Xip83Topic *t, int32_t node);
/* The topic's line of node, created at XIP83_NOTHING_SEEN; NULL when out of memory. */
extern Xip83Line *xip83_topic_line_put(Xip83Topics *set, Xip83Topic *t, int32_t node);
/* Floors and positions become the cursor's (lines it lacks are dropped); false: out of memory. */
extern bool xip83_topic_reset(Xip83Topics *set, Xip83Topic *t, const Xip83Pos *cursor,
							  size_t n);
/* Whether the cursor lies below the topic's floors (by_floor) or positions on some line. */
extern bool xip83_topic_below(const Xip83Topic *t, const Xip83Pos *cursor, size_t n, bool by_floor);

#endif							/* XIP83_SESSION_TOPICS_H */
