/*
 * compat.h: the few server APIs that changed between the PostgreSQL majors
 * xip83 builds against, behind one name each.
 */
#ifndef XIP83_COMPAT_H
#define XIP83_COMPAT_H

#include "postgres.h"

#include "access/genam.h"
#include "storage/proc.h"
#include "utils/rel.h"
#include "utils/relcache.h"

/* index_beginscan gained an instrumentation argument in 18. */
#if PG_VERSION_NUM >= 180000
#define compat_index_beginscan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), (norderbys))
#else
#define compat_index_beginscan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), (nkeys), (norderbys))
#endif

/* RelationGetPrimaryKeyIndex gained deferrable_ok in 17. */
#if PG_VERSION_NUM >= 170000
#define compat_primary_key_index(rel) RelationGetPrimaryKeyIndex((rel), false)
#else
#define compat_primary_key_index(rel) RelationGetPrimaryKeyIndex(rel)
#endif

/* The process number of this backend (MyProcNumber since 17). */
#if PG_VERSION_NUM >= 170000
#define compat_my_proc_number() ((int) MyProcNumber)
#else
#define compat_my_proc_number() (MyProc->pgprocno)
#endif

/* Background worker test (IsBackgroundWorker is gone since 17). */
#if PG_VERSION_NUM >= 170000
#define compat_am_background_worker() AmBackgroundWorkerProcess()
#else
#define compat_am_background_worker() IsBackgroundWorker
#endif

#endif							/* XIP83_COMPAT_H */
