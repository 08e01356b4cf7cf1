/*
 * gw_router.c: the topic → subscribers index (see gw_router.h), kept in the
 * session engine's topic table with a subscriber array per topic.
 */
#include "gw_router.h"

#include <stdlib.h>

bool
gw_router_add(GwRouter *r, const unsigned char *t, size_t len, void *sub, Xip83Topic *topic)
{
	Xip83Topic *e = xip83_topics_put(&r->topics, t, len);
	GwSubs	   *s;

	if (e == NULL)
		return false;
	if ((s = e->data) == NULL && (s = e->data = calloc(1, sizeof(GwSubs))) == NULL)
	{
		xip83_topics_del(&r->topics, t, len);
		return false;
	}
	if (s->n == s->cap)
	{
		size_t		cap = s->cap ? s->cap * 2 : 2;
		GwSub	   *subs = realloc(s->subs, cap * sizeof(*subs));

		if (subs == NULL)
		{
			if (s->n == 0)
			{
				free(s);
				e->data = NULL;
				xip83_topics_del(&r->topics, t, len);
			}
			return false;
		}
		s->subs = subs;
		s->cap = cap;
	}
	s->subs[s->n].sub = sub;
	s->subs[s->n++].topic = topic;
	r->subscriptions++;
	return true;
}

void
gw_router_del(GwRouter *r, const unsigned char *t, size_t len, const void *sub)
{
	Xip83Topic *e = xip83_topics_get(&r->topics, t, len);
	GwSubs	   *s = e ? e->data : NULL;

	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++)
		if (s->subs[i].sub == sub)
		{
			/* order among a topic's subscribers does not matter */
			s->subs[i] = s->subs[--s->n];
			r->subscriptions--;
			break;
		}
	if (s->n == 0)
	{
		free(s->subs);
		free(s);
		e->data = NULL;
		xip83_topics_del(&r->topics, t, len);
	}
}

const GwSubs *
gw_router_get(const GwRouter *r, const unsigned char *t, size_t len)
{
	Xip83Topic *e = xip83_topics_get(&r->topics, t, len);

	return e ? e->data : NULL;
}

void
gw_router_free(GwRouter *r)
{
	for (size_t i = 0; i < r->topics.n_slots; i++)
		for (Xip83Topic *e = r->topics.slots[i]; e; e = e->next)
		{
			GwSubs	   *s = e->data;

			if (s)
				free(s->subs);
			free(s);
		}
	xip83_topics_free(&r->topics);
	r->subscriptions = 0;
}
