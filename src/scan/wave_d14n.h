/*
 * wave_d14n.h: what the d14n wave scan and the originator ceilings share:
 * point and backward probes of a source's (originator_node_id,
 * originator_sequence_id) index, leaf by leaf (ceilings_d14n.c).
 *
 * A probe set keeps one index scan per leaf, opened on first use and
 * rescanned for every probe with the same number of scan keys (as few as the
 * probe needs: a btree probe checks every key against every item of the leaf
 * page it lands on), in a memory context of its own: the index AM
 * allocates in the current context while it reads (btree's killed items) and
 * frees that at index_endscan, so probes never run in a caller's per-row
 * context. KeyProbesEnd ends every scan and drops every slot.
 */
#ifndef XIP83_WAVE_D14N_H
#define XIP83_WAVE_D14N_H

#include "postgres.h"

#include "access/relscan.h"
#include "access/sdir.h"
#include "access/skey.h"
#include "executor/tuptable.h"
#include "fmgr.h"

#include "rel/source.h"

typedef struct KeyProbes KeyProbes;

/* Layouts: meta with its payload, meta whose payload is in a blob table, the blob table. */
extern const SourceSpec *const WaveD14nSpecs[3];

/* The columns of an envelope source, in the order of the SourceSpecs. */
#define ENVELOPE_COL_ORIGINATOR		0
#define ENVELOPE_COL_SEQUENCE		1
/* The payload's column in the blob table's SourceSpec. */
#define ENVELOPE_COL_BLOB_PAYLOAD	2

extern KeyProbes *KeyProbesBegin(Source *source, Snapshot snapshot, int nkeys);
extern TupleTableSlot *KeyProbeFirst(KeyProbes *probes, SourceLeaf *leaf, ScanKey keys,
									 ScanDirection direction);
extern void KeyProbesEnd(KeyProbes *probes);
/* The row of an exact key in the leaf that holds it (*leaf_out), or NULL. */
extern TupleTableSlot *KeyProbeExact(KeyProbes *probes, int32 originator, int64 sequence,
									 SourceLeaf **leaf_out);
extern bool LeafMayHoldKey(const SourceLeaf *leaf, int32 originator, int64 sequence);

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

#endif							/* XIP83_WAVE_D14N_H */
