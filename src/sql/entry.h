/*
 * entry.h, private to src/sql: what the entry-point files share: the first
 * call of a value-per-call result set, and the checked reading of the frame
 * functions' arguments (mutate_id, max_frame_bytes, kind, binding).
 *
 * These read arguments and set up fmgr's result plumbing, which is this
 * floor's work alone; the libraries below take the values they return.
 */
#ifndef XIP83_SQL_ENTRY_H
#define XIP83_SQL_ENTRY_H

#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"

#include "frames/frames.h"

extern FuncCallContext *WaveRowsFirstCall(FunctionCallInfo fcinfo, MemoryContext *old);

extern uint64 FrameArgMutateId(FunctionCallInfo fcinfo, int argno, bool wave);
extern int32 FrameArgMaxBytes(FunctionCallInfo fcinfo, int argno);
extern FrameKind FrameArgKind(FunctionCallInfo fcinfo, int argno, bool d14n);
extern void FrameArgBinding(FunctionCallInfo fcinfo, int argno, bool *d14n);

#endif							/* XIP83_SQL_ENTRY_H */
