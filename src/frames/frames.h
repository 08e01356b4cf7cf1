/*
 * frames.h: ready-to-send XIP-83 frames: wave and live rows encoded as
 * complete SubscribeResponse messages (v3 Messages, d14n Envelopes), each at
 * most max_frame_bytes, never splitting a message.
 *
 * A Framer collects rows of one kind and hands back finished frames; a
 * FrameWave reads the rows of a v3 or d14n wave through the wave engine
 * (wave_v3.c, wave_d14n.c). The entry points that page, stream, fetch by
 * handle and serve the live lane (src/sql: frames.c, wave_handles.c,
 * live_frames.c) are thin loops over the two; the handles themselves are
 * kept here (frames_handle.c).
 */
#ifndef XIP83_FRAMES_H
#define XIP83_FRAMES_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "fmgr.h"
#include "utils/snapshot.h"

#include "base/base.h"
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

/*
 * A frame as a result row; FramePut appends it to the materialized result
 * of the SQL call whose FunctionCallInfo it is given.
 */
extern HeapTuple FrameTuple(TupleDesc desc, FrameKind kind, const Frame *frame);
extern void FramePut(FunctionCallInfo fcinfo, FrameKind kind, const Frame *frame);

/*
 * Control frames (frames_control.c), each one complete SubscribeResponse;
 * argname names the interval's argument in the error when it is out of range.
 */
extern bytea *FrameStarted(int64 interval, const char *argname);
extern bytea *FrameTopicsLive(const ArgArray *topics);
extern bytea *FrameCatchupComplete(uint64 mutate_id);
extern bytea *FramePingPong(int64 nonce, bool pong);

/*
 * Decoding (frames_decode.c): a frame as jsonb, a SubscribeResponse or with
 * response false a SubscribeRequest of the binding (d14n or v3); the target
 * topic of a stored d14n envelope. Malformed bytes are errors (22P03).
 */
extern Datum FrameDecodeJsonb(const bytea *frame, bool d14n, bool response);
extern bytea *EnvelopeTargetTopic(const bytea *raw);

/*
 * Wave handles (frames_handle.c): a wave opened in one statement and read
 * in later ones of its transaction. WaveHandleOpen reads the wave's
 * arguments from the SQL call's fcinfo (as FrameWaveOpen does), and
 * WaveHandleFetch fills the materialized result of the fcinfo it is given.
 */
typedef struct WaveHandle WaveHandle;

extern int32 WaveHandleOpen(FunctionCallInfo fcinfo, FrameKind kind, int narrays,
							int source_arg);
extern WaveHandle *WaveHandleGet(int32 id, FrameKind kind, bool any_kind);
extern void WaveHandleFetch(WaveHandle *h, FunctionCallInfo fcinfo, int64 budget, bool frames,
							uint64 mutate_id, int32 max_bytes);
extern void WaveHandleClose(WaveHandle *h);

#endif							/* XIP83_FRAMES_H */
