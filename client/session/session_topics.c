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

/* A topic's lines, unless they are the one held in its entry. */
static void
FreeLines(Xip83Topic *t)
{
	if (t->lines != &t->one)
		free(t->lines);
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

/* Rehashes into at least `want` slots (a power of two). */
static bool
Grow(Xip83Topics *set, size_t want)
{
	size_t		n = set->n_slots ? set->n_slots * 2 : 16;
	Xip83Topic **slots;

	while (n < want)
		n *= 2;
	if ((slots = calloc(n, sizeof(*slots))) == NULL)
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
	if (set->count >= set->n_slots && !Grow(set, 0))
		return NULL;
	p = Slot(set, t, len);
	/* the identifier lives behind its entry: one allocation per topic */
	if ((e = calloc(1, sizeof(*e) + len)) == NULL)
		return NULL;
	e->bytes = (unsigned char *) (e + 1);
	memcpy(e->bytes, t, len);
	e->len = len;
	*p = e;
	set->count++;
	set->bytes += len;
	if (set->watch)
		set->watch(set->watch_arg, e, true);
	return e;
}

bool
xip83_topics_reserve(Xip83Topics *set, size_t n)
{
	return set->count + n <= set->n_slots || Grow(set, set->count + n);
}

/* Frees e, out of its slot already. */
static void
Drop(Xip83Topics *set, Xip83Topic *e)
{
	if (set->watch)
		set->watch(set->watch_arg, e, false);
	set->bytes -= e->len + sizeof(Xip83Line) * (size_t) e->n_lines;
	FreeLines(e);
	free(e);
	set->count--;
}

void
xip83_topics_del(Xip83Topics *set, const unsigned char *t, size_t len)
{
	Xip83Topic **p;
	Xip83Topic *e;

	if (set->n_slots == 0 || (e = *(p = Slot(set, t, len))) == NULL)
		return;
	*p = e->next;
	Drop(set, e);
}

void
xip83_topics_free(Xip83Topics *set)
{
	for (size_t i = 0; i < set->n_slots; i++)
		for (Xip83Topic *e = set->slots[i], *next; e; e = next)
		{
			next = e->next;
			Drop(set, e);
		}
	free(set->slots);
	memset(set, 0, sizeof(*set));
}

bool
xip83_topics_free_some(Xip83Topics *set, size_t n)
{
	for (; set->emptied < set->n_slots && n > 0; set->emptied++)
		for (Xip83Topic *e = set->slots[set->emptied], *next; e; e = next, n -= n > 0)
		{
			next = e->next;
			set->slots[set->emptied] = next;
			Drop(set, e);
		}
	if (set->emptied < set->n_slots)
		return false;
	xip83_topics_free(set);
	return true;
}

int64_t
xip83_cursor_at(const Xip83Pos *cursor, size_t n, int32_t node)
{
	for (size_t i = 0; i < n; i++)
		if (cursor[i].node == node)
			return cursor[i].seq;
	return XIP83_NOTHING_SEEN;
}

Xip83Line *
xip83_topic_line(const Xip83Topic *t, int32_t node)
{
	for (int i = 0; i < t->n_lines; i++)
		if (t->lines[i].node == node)
			return &t->lines[i];
	return NULL;
}

Xip83Line *
xip83_topic_line_put(Xip83Topics *set, Xip83Topic *t, int32_t node)
{
	Xip83Line  *l = xip83_topic_line(t, node);
	Xip83Line  *lines;

	if (l != NULL)
		return l;
	if (t->n_lines == 0)
		lines = &t->one;
	else if (t->lines == &t->one)
	{
		if ((lines = malloc(sizeof(Xip83Line) * 2)) == NULL)
			return NULL;
		lines[0] = t->one;
	}
	else if ((lines = realloc(t->lines, sizeof(Xip83Line) * (size_t) (t->n_lines + 1))) == NULL)
		return NULL;
	t->lines = lines;
	set->bytes += sizeof(Xip83Line);
	l = &t->lines[t->n_lines++];
	l->node = node;
	l->floor = l->position = XIP83_NOTHING_SEEN;
	return l;
}

bool
xip83_topic_reset(Xip83Topics *set, Xip83Topic *t, const Xip83Pos *cursor, size_t n)
{
	/* a v3 topic has one line: it stays in the entry, no allocation */
	Xip83Line  *lines = n > 1 ? malloc(sizeof(Xip83Line) * n) : n ? &t->one : NULL;

	if (n && lines == NULL)
		return false;
	FreeLines(t);
	for (size_t i = 0; i < n; i++)
	{
		lines[i].node = cursor[i].node;
		lines[i].floor = lines[i].position = cursor[i].seq;
	}
	set->bytes += sizeof(Xip83Line) * n - sizeof(Xip83Line) * (size_t) t->n_lines;
	t->lines = lines;
	t->n_lines = (int) n;
	return true;
}

bool
xip83_topic_below(const Xip83Topic *t, const Xip83Pos *cursor, size_t n, bool by_floor)
{
	/* a line the topic lacks stands at nothing seen: no cursor lies below it */
	for (int i = 0; i < t->n_lines; i++)
		if (xip83_cursor_at(cursor, n, t->lines[i].node)
			< (by_floor ? t->lines[i].floor : t->lines[i].position))
			return true;
	return false;
}
