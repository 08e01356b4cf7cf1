/*
 * gw_router.h: the gateway's topic → subscribers index. The live feed's rows
 * are routed through it: one lookup per row, then the subscribers of that
 * topic, instead of every stream looking at every row. A subscriber is
 * whatever the caller registers (the gateway: its streams); a topic is in
 * the index while at least one subscriber holds it.
 */
#ifndef XIP83_GW_ROUTER_H
#define XIP83_GW_ROUTER_H

#include <stdbool.h>
#include <stddef.h>

#include "session/session.h"

typedef struct GwRouter
{
	Xip83Topics topics;			/* each topic's data: its GwSubs */
	size_t		subscriptions;	/* (topic, subscriber) pairs */
} GwRouter;

/* A subscriber, and its own entry of the topic (the subscriber's topic table's). */
typedef struct GwSub
{
	void	   *sub;
	Xip83Topic *topic;
} GwSub;

typedef struct GwSubs
{
	GwSub	   *subs;
	size_t		n;
	size_t		cap;
} GwSubs;

/* Adds sub to the topic's subscribers; false when out of memory. */
extern bool gw_router_add(GwRouter *r, const unsigned char *t, size_t len, void *sub,
						  Xip83Topic *topic);
/* Removes sub from the topic's subscribers (the topic goes with its last one). */
extern void gw_router_del(GwRouter *r, const unsigned char *t, size_t len, const void *sub);
/* The topic's subscribers, or NULL when nobody holds it. */
extern const GwSubs *gw_router_get(const GwRouter *r, const unsigned char *t, size_t len);
extern void gw_router_free(GwRouter *r);

#endif
