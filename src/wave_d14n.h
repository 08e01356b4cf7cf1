/*
 * wave_d14n.h: what the d14n wave scan and the originator ceilings share: an
 * envelope source (a `source` or `blob_source` relation, plain or partitioned)
 * resolved into leaves, each with the btree index a scan descends and the
 * originator and sequence ranges its partition bounds allow.
 *
 * A leaf's ranges come from the partition bounds along its path from the root
 * (LIST or RANGE on originator_node_id or originator_sequence_id, one column);
 * any other level (hash, default partitions, other keys) leaves the range
 * open. The ranges only ever skip leaves that cannot hold a row: they are a
 * pruning aid, never a filter.
 */
#ifndef XIP83_WAVE_D14N_H
#define XIP83_WAVE_D14N_H

#include "postgres.h"

#include "access/relscan.h"
#include "access/sdir.h"
#include "executor/tuptable.h"
#include "utils/rel.h"

/* Which btree index a scan needs on every leaf. */
typedef enum EnvelopeIndexKind
{
	ENVELOPE_TOPIC_INDEX,		/* (topic, originator_node_id, originator_sequence_id) */
	ENVELOPE_KEY_INDEX			/* (originator_node_id, originator_sequence_id) */
} EnvelopeIndexKind;

/* Which payload columns a source must carry besides the key. */
#define ENVELOPE_NEED_META		0x01	/* topic, gateway_time */
#define ENVELOPE_NEED_BLOB		0x02	/* originator_envelope */

/* One leaf relation of a source, opened with AccessShareLock. */
typedef struct EnvelopeLeaf
{
	Relation	heap;
	Relation	index;
	AttrNumber	originator_att;
	AttrNumber	sequence_att;
	AttrNumber	topic_att;		/* 0 unless ENVELOPE_NEED_META */
	AttrNumber	gateway_time_att;	/* 0 unless ENVELOPE_NEED_META */
	AttrNumber	envelope_att;	/* 0 unless ENVELOPE_NEED_BLOB */
	int64		originator_lo;	/* inclusive range the bounds allow */
	int64		originator_hi;
	int64		sequence_lo;
	int64		sequence_hi;
	IndexScanDesc scan;			/* opened on first use, rescanned after */
	MemoryContext scan_cxt;		/* where the scan lives: the source's context */
	TupleTableSlot *slot;		/* index scan results */
	TupleTableSlot *fetch_slot; /* rows fetched again by TID */
} EnvelopeLeaf;

/* A resolved source: its leaves in partition bound order. */
typedef struct EnvelopeSource
{
	Relation	root;
	int			nleaves;
	EnvelopeLeaf *leaves;
	Snapshot	snapshot;
} EnvelopeSource;

extern EnvelopeSource *EnvelopeSourceOpen(Oid relid, const char *argname, int need,
										  EnvelopeIndexKind kind);
extern void EnvelopeSourceClose(EnvelopeSource *src);
extern bool EnvelopeLeafMayHold(const EnvelopeLeaf *leaf, int32 originator,
								int64 after_sequence, int64 upto_sequence);
extern void EnvelopeLeafScan(EnvelopeLeaf *leaf, ScanKey keys, int nkeys);
extern bool EnvelopeLeafNext(EnvelopeLeaf *leaf, ScanDirection direction);

#endif							/* XIP83_WAVE_D14N_H */
