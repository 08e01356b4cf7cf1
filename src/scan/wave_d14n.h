/*
 * wave_d14n.h, private to src/scan: what the d14n wave scan, the originator
 * ceilings and the live fetch share:
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

#include "rel/rel.h"

typedef struct KeyProbes KeyProbes;


extern KeyProbes *KeyProbesBegin(Source *source, Snapshot snapshot, int nkeys);
extern TupleTableSlot *KeyProbeFirst(KeyProbes *probes, SourceLeaf *leaf, ScanKey keys,
									 ScanDirection direction);
extern void KeyProbesEnd(KeyProbes *probes);
/* The row of an exact key in the leaf that holds it (*leaf_out), or NULL. */
extern TupleTableSlot *KeyProbeExact(KeyProbes *probes, int32 originator, int64 sequence,
									 SourceLeaf **leaf_out);
extern bool LeafMayHoldKey(const SourceLeaf *leaf, int32 originator, int64 sequence);


#endif							/* XIP83_WAVE_D14N_H */
