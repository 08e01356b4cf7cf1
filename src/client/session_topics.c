/*
 * session_topics.c: a chained hash table of topics (see session_topics.h).
 */
#include "session_topics.h"

#include <stdlib.h>
#include <string.h>

static size_t
Hash(const unsigned char *t, size_t len)
{
	uint64_t	h = UINT64_C(1469598103934665603);	/* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ t[i]) * UINT64_C(1099511628211);
	return (size_t) h;
}

static Xip83Topic **
Slot(const Xip83Topics *set, const unsigned char *t, size_t len)
{
	Xip83Topic **p = &set->slots[Hash(t, len) & (set->n_slots - 1)];

	while (*p && ((*p)->len != len || memcmp((*p)->bytes, t, len) != 0))
		p = &(*p)->next;
	return p;
}

Xip83Topic *
xip83_topics_get(const Xip83Topics *set, const unsigned char *t, size_t len)
{
	return set->n_slots ? *Slot(set, t, len) : NULL;
}

static bool
Grow(Xip83Topics *set)
{
	size_t		n = set->n_slots ? set->n_slots * 2 : 1024;
	Xip83Topic **slots = calloc(n, sizeof(*slots));

	if (slots == NULL)
		return false;
	for (size_t i = 0; i < set->n_slots; i++)
		for (Xip83Topic *e = set->slots[i], *next; e; e = next)
		{
			size_t		h = Hash(e->bytes, e->len) & (n - 1);

			next = e->next;
			e->next = slots[h];
			slots[h] = e;
		}
	free(set->slots);
	set->slots = slots;
	set->n_slots = n;
	return true;
}

Xip83Topic *
xip83_topics_put(Xip83Topics *set, const unsigned char *t, size_t len)
{
	Xip83Topic **p;
	Xip83Topic *e = xip83_topics_get(set, t, len);

	if (e != NULL)
		return e;
	if (set->count >= set->n_slots && !Grow(set))
		return NULL;
	p = Slot(set, t, len);
	if ((e = calloc(1, sizeof(*e))) == NULL || (e->bytes = malloc(len ? len : 1)) == NULL)
	{
		free(e);
		return NULL;
	}
	memcpy(e->bytes, t, len);
	e->len = len;
	*p = e;
	set->count++;
	return e;
}

void
xip83_topics_del(Xip83Topics *set, const unsigned char *t, size_t len)
{
	Xip83Topic **p;
	Xip83Topic *e;

	if (set->n_slots == 0 || (e = *(p = Slot(set, t, len))) == NULL)
		return;
	*p = e->next;
	free(e->bytes);
	free(e);
	set->count--;
}

void
xip83_topics_free(Xip83Topics *set)
{
	for (size_t i = 0; i < set->n_slots; i++)
		for (Xip83Topic *e = set->slots[i], *next; e; e = next)
		{
			next = e->next;
			free(e->bytes);
			free(e);
		}
	free(set->slots);
	memset(set, 0, sizeof(*set));
}
