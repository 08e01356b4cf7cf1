/*
 * scan.h: the API of src/scan, reading rows: the merge engine (merge.c,
 * merge_walk.c), wave scans (wave_v3.c, wave_d14n.c), ceilings
 * (ceilings.c, ceilings_d14n.c) and the live fetch (live.c). Waves read
 * sources through src/rel and horizons through src/feed; the frames
 * (src/frames) encode the rows of the iterators below.
 */
#ifndef XIP83_SCAN_H
#define XIP83_SCAN_H

#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"

#include "rel/rel.h"

/* How a merge produces rows. */
typedef enum MergeStrategy
{
	MERGE_STRATEGY_AUTO,		/* probe with the dense walk, switch when the heap is cheaper */
	MERGE_STRATEGY_HEAP,		/* always the per-stream heap */
	MERGE_STRATEGY_WALK			/* always the dense walk when one is set up */
} MergeStrategy;

/* xip83.wave_strategy, a MergeStrategy. */
extern int	xip83_wave_strategy;

/*
 * A wave as a row iterator (wave_v3.c), for the scans and for callers that
 * encode its rows (frames.c). WaveOpen reads topics, floors, scan_cursor and
 * ceiling from arguments 0..3 of fcinfo and the source from source_arg,
 * checks them, and registers its snapshot on CurrentResourceOwner; row_goal
 * is the rows the caller expects to read (0: the whole wave). WaveNext
 * projects the next row into the spec's columns (valid until the next call).
 */
typedef struct Wave Wave;

extern Wave *WaveOpen(FunctionCallInfo fcinfo, const SourceSpec *spec, int source_arg,
					  int64 row_goal);
extern bool WaveNext(Wave *wave, Datum *values, bool *nulls);
extern void WaveClose(Wave *wave);
extern FuncCallContext *WaveRowsFirstCall(FunctionCallInfo fcinfo, MemoryContext *old);


/*
 * A d14n wave as a row iterator (wave_d14n.c), for the scan, the stream and
 * callers that encode its rows (frames.c). WaveRunBegin reads the wave's
 * arguments 0..6 of fcinfo (cursor_topics .. scan_sequence_id), the source
 * at source_arg and the blob source at source_arg + 1, and returns at most
 * limit rows (-1: all). WaveRunNext fills the 5 columns
 * (originator_node_id, originator_sequence_id, gateway_time, topic,
 * originator_envelope), valid until the next call.
 */
typedef struct WaveRun WaveRun;

extern WaveRun *WaveRunBegin(FunctionCallInfo fcinfo, int64 limit, int source_arg);
extern bool WaveRunNext(WaveRun *run, Datum *values, bool *nulls);
extern void WaveRunEnd(WaveRun *run);

#endif							/* XIP83_SCAN_H */
