/*
 * wave_d14n_fixture.c: the SQL definition loader and wave argument builder
 * shared by t_wave_d14n and bench_wave_d14n.
 */
#include "wave_d14n_fixture.h"

#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads a whole file into a NUL-terminated buffer, or aborts the test. */
static char *
ReadFile(const char *path)
{
	FILE	   *f = fopen(path, "rb");
	long		size;
	char	   *text;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0)
		tl_fatal("cannot read %s (run from the checkout's top directory)", path);
	rewind(f);
	text = malloc(size + 1);
	if (text == NULL || fread(text, 1, size, f) != (size_t) size)
		tl_fatal("cannot read %s", path);
	text[size] = '\0';
	fclose(f);
	return text;
}

void
wd_exec_script(PGconn *conn, const char *sql)
{
	PGresult   *res = PQexec(conn, sql);

	if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
		tl_fatal("%s\n  in: %.300s", PQerrorMessage(conn), sql);
	PQclear(res);
}

void
wd_exec_file(PGconn *conn, const char *path)
{
	char	   *sql = ReadFile(path);

	wd_exec_script(conn, sql);
	free(sql);
}

void
wd_load_reference(PGconn *conn)
{
	wd_exec_file(conn, "tests/wave_d14n_reference.sql");
}

void
wd_wave_init(WdWave *w)
{
	memset(w, 0, sizeof(*w));
}

void
wd_wave_add(WdWave *w, int32_t topic_id, int32_t node, int64_t floor)
{
	if (w->nentries == w->cap)
	{
		w->cap = w->cap ? w->cap * 2 : 64;
		w->topic_ids = realloc(w->topic_ids, sizeof(int32_t) * w->cap);
		w->nodes = realloc(w->nodes, sizeof(int32_t) * w->cap);
		w->floors = realloc(w->floors, sizeof(int64_t) * w->cap);
		if (!w->topic_ids || !w->nodes || !w->floors)
			tl_fatal("out of memory");
	}
	w->topic_ids[w->nentries] = topic_id;
	w->nodes[w->nentries] = node;
	w->floors[w->nentries] = floor;
	w->nentries++;
}

void
wd_wave_free(WdWave *w)
{
	free(w->topic_ids);
	free(w->nodes);
	free(w->floors);
	wd_wave_init(w);
}

void
wd_wave_params(const WdWave *w, char *params[5])
{
	TlBuf		t[5] = {{0}};

	for (int k = 0; k < 5; k++)
		tl_buf_add(&t[k], "{");
	for (int i = 0; i < w->nentries; i++)
	{
		const char *sep = i ? "," : "";

		if (w->topic_ids[i] < 0)	/* the empty topic */
			tl_buf_add(&t[0], "%s\"\"", sep);
		else
			tl_buf_add(&t[0], "%s\"\\\\x00%08x\"", sep, (unsigned) w->topic_ids[i]);
		tl_buf_add(&t[1], "%s%d", sep, w->nodes[i]);
		tl_buf_add(&t[2], "%s%lld", sep, (long long) w->floors[i]);
	}
	for (int i = 0; i < w->nceilings; i++)
	{
		const char *sep = i ? "," : "";

		tl_buf_add(&t[3], "%s%d", sep, w->ceiling_nodes[i]);
		tl_buf_add(&t[4], "%s%lld", sep, (long long) w->ceilings[i]);
	}
	for (int k = 0; k < 5; k++)
	{
		tl_buf_add(&t[k], "}");
		params[k] = t[k].s;
	}
}

void
wd_call_init(WdCall *c, const WdWave *w, int32_t scan_node, int64_t scan_sequence,
			 int limit, const char *source, const char *blob)
{
	int			n = 0;

	wd_wave_params(w, c->arrays);
	for (int k = 0; k < 5; k++)
		c->params[n++] = c->arrays[k];
	c->params[n++] = c->scan_node;
	c->params[n++] = c->scan_sequence;
	wd_call_set_scan(c, scan_node, scan_sequence);
	if (limit > 0)
	{
		snprintf(c->limit, sizeof(c->limit), "%d", limit);
		c->params[n++] = c->limit;
	}
	c->params[n++] = source;
	c->params[n++] = blob;
	c->nparams = n;
}

void
wd_call_set_scan(WdCall *c, int32_t scan_node, int64_t scan_sequence)
{
	snprintf(c->scan_node, sizeof(c->scan_node), "%d", scan_node);
	snprintf(c->scan_sequence, sizeof(c->scan_sequence), "%lld", (long long) scan_sequence);
}

void
wd_call_free(WdCall *c)
{
	for (int k = 0; k < 5; k++)
		free(c->arrays[k]);
}
