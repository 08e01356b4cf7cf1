/*
 * frames.h: ready-to-send XIP-83 frames: wave and live rows encoded as
 * complete SubscribeResponse messages (v3 Messages, d14n Envelopes), each at
 * most max_frame_bytes, never splitting a message.
 *
 * A Framer collects rows of one kind and hands back finished frames; a
 * FrameWave reads the rows of a v3 or d14n wave through the wave engine
 * (wave_v3.c, wave_d14n.c). The entry points that page, stream, fetch by
 * handle (frames_handle.c) and serve the live lane (frames_live.c) are thin
 * loops over the two.
 */
#ifndef XIP83_FRAMES_H
#define XIP83_FRAMES_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "fmgr.h"
#include "utils/snapshot.h"

#include "scan/scan.h"

/* The row kinds a frame carries; the row layouts are the wave scans' columns. */
typedef enum FrameKind
{
	FRAME_GROUP,				/* v3 group messages, Messages.group_messages */
	FRAME_WELCOME,				/* v3 welcomes, Messages.welcome_messages */
	FRAME_ENVELOPE				/* d14n envelopes, Envelopes.envelopes */
} FrameKind;

#define FRAME_DEFAULT_MAX_BYTES (2 * 1024 * 1024)

/* One finished frame. */
typedef struct Frame
{
	bytea	   *bytes;			/* the serialized SubscribeResponse */
	int32		messages;		/* messages it carries */
	int32		last_node;		/* d14n: originator of its last envelope */
	int64		last_position;	/* id, or sequence id, of its last message */
} Frame;

typedef struct Framer Framer;

extern Framer *FramerBegin(FrameKind kind, uint64 mutate_id, int32 max_bytes);
extern bool FramerAdd(Framer *framer, Datum *values, bool *nulls, Frame *out);
extern bool FramerFinish(Framer *framer, Frame *out);
extern void FramerEnd(Framer *framer);

/* A wave of one kind read row by row. */
typedef struct FrameWave
{
	FrameKind	kind;
	Wave	   *v3;
	WaveRun    *d14n;
	bool		done;
} FrameWave;

extern FrameWave *FrameWaveOpen(FunctionCallInfo fcinfo, FrameKind kind, int source_arg,
								int64 row_goal);
extern bool FrameWaveNext(FrameWave *wave, Datum *values, bool *nulls);
extern void FrameWaveClose(FrameWave *wave);
extern bool FrameNextFromWave(Framer *framer, FrameWave *wave, int64 *budget, Frame *out);

/* Argument checks and result rows shared by every frame function. */
extern uint64 FrameArgMutateId(FunctionCallInfo fcinfo, int argno, bool wave);
extern int32 FrameArgMaxBytes(FunctionCallInfo fcinfo, int argno);
extern FrameKind FrameArgKind(FunctionCallInfo fcinfo, int argno, bool d14n);
extern void FrameArgBinding(FunctionCallInfo fcinfo, int argno, bool *d14n);
extern HeapTuple FrameTuple(TupleDesc desc, FrameKind kind, const Frame *frame);
extern void FramePut(FunctionCallInfo fcinfo, FrameKind kind, const Frame *frame);

#endif							/* XIP83_FRAMES_H */
