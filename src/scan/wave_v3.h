/*
 * wave_v3.h: the two v3 message kinds as sources: the columns a wave scan
 * returns (in output order) and the indexes it reads. Shared by the wave
 * scans (wave_v3.c) and the ceilings (ceilings.c).
 */
#ifndef XIP83_WAVE_V3_H
#define XIP83_WAVE_V3_H

#include "fmgr.h"
#include "funcapi.h"

#include "rel/source.h"

/* Positions of the columns every v3 kind shares, in SourceSpec.columns. */
#define V3_COL_ID		0
#define V3_COL_TOPIC	2

extern const SourceSpec WaveV3GroupSource;
extern const SourceSpec WaveV3WelcomeSource;

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

#endif							/* XIP83_WAVE_V3_H */
