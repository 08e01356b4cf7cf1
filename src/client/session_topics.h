/*
 * session_topics.h: a session's topics by their kind-prefixed bytes, and
 * where each one stands: gated in a wave, or live.
 */
#ifndef XIP83_SESSION_TOPICS_H
#define XIP83_SESSION_TOPICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Xip83Topic
{
	struct Xip83Topic *next;	/* hash chain */
	unsigned char *bytes;
	size_t		len;
	bool		live;			/* false: gated in wave `wave` */
	uint64_t	wave;
	int64_t		floor;			/* the cursor the topic was added with */
	int64_t		position;		/* highest id delivered for it */
} Xip83Topic;

typedef struct Xip83Topics
{
	Xip83Topic **slots;
	size_t		n_slots;
	size_t		count;
} Xip83Topics;

extern Xip83Topic *xip83_topics_get(const Xip83Topics *set, const unsigned char *t, size_t len);
/* The topic's entry, created (gated in no wave, floor 0) when absent; NULL when out of memory. */
extern Xip83Topic *xip83_topics_put(Xip83Topics *set, const unsigned char *t, size_t len);
extern void xip83_topics_del(Xip83Topics *set, const unsigned char *t, size_t len);
extern void xip83_topics_free(Xip83Topics *set);

#endif							/* XIP83_SESSION_TOPICS_H */
