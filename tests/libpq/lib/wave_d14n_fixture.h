/*
 * wave_d14n_fixture.h: what the d14n wave test and benchmark share: loading
 * the SQL definition and layout helpers of tests/wave_d14n_reference.sql, and
 * building the text-form array arguments of a wave.
 */
#ifndef XIP83_WAVE_D14N_FIXTURE_H
#define XIP83_WAVE_D14N_FIXTURE_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

/* One wave: cursor entries and ceilings, as the SQL functions take them. */
typedef struct WdWave
{
	int			nentries;
	int			cap;
	int32_t    *topic_ids;		/* topic = '\x00' || int4send(topic_id) */
	int32_t    *nodes;
	int64_t    *floors;
	int			nceilings;
	int32_t		ceiling_nodes[64];
	int64_t		ceilings[64];
} WdWave;

/* Runs SQL of several statements (simple protocol); any error is fatal. */
void		wd_exec_script(PGconn *conn, const char *sql);
/* Runs a file of SQL statements (path from the checkout's top directory). */
void		wd_exec_file(PGconn *conn, const char *path);
/* Runs tests/wave_d14n_reference.sql (from the checkout's top directory). */
void		wd_load_reference(PGconn *conn);

void		wd_wave_init(WdWave *w);
void		wd_wave_add(WdWave *w, int32_t topic_id, int32_t node, int64_t floor);
void		wd_wave_free(WdWave *w);

/*
 * The five array arguments of a wave in text form (topics, nodes, floors,
 * ceiling nodes, ceilings); free each with free().
 */
void		wd_wave_params(const WdWave *w, char *params[5]);

/*
 * The text parameters of a call over a wave: $1..$5 the wave's arrays, $6 and
 * $7 the scan cursor, then the row limit (a page) unless limit <= 0 (a
 * stream), then source and blob_source.
 */
typedef struct WdCall
{
	char	   *arrays[5];
	char		scan_node[16];
	char		scan_sequence[24];
	char		limit[16];
	const char *params[10];
	int			nparams;
} WdCall;

void		wd_call_init(WdCall *c, const WdWave *w, int32_t scan_node, int64_t scan_sequence,
						 int limit, const char *source, const char *blob);
/* Moves the scan cursor of a call (the next keyset page). */
void		wd_call_set_scan(WdCall *c, int32_t scan_node, int64_t scan_sequence);
void		wd_call_free(WdCall *c);

#endif							/* XIP83_WAVE_D14N_FIXTURE_H */
