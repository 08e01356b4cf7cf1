/*
 * compat.h: the few server APIs that differ between the supported PostgreSQL
 * major versions (15 and 18 are built and tested; 16 and 17 only through the
 * same guards). Each guard names the version that changed the API.
 *
 * Macros only: each expands at its use site, whose file includes the server
 * header that declares the real function.
 */
#ifndef XIP83_COMPAT_H
#define XIP83_COMPAT_H

#include "postgres.h"

/* 18: index_beginscan takes an IndexScanInstrumentation pointer (may be NULL). */
#if PG_VERSION_NUM >= 180000
#define xip83_index_beginscan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), (norderbys))
#else
#define xip83_index_beginscan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), (nkeys), (norderbys))
#endif

/* 17: IsBackgroundWorker gave way to AmBackgroundWorkerProcess() (miscadmin.h). */
#if PG_VERSION_NUM < 170000
#define AmBackgroundWorkerProcess() (IsBackgroundWorker)
#endif

/* 17: RelationGetPrimaryKeyIndex gained deferrable_ok (utils/relcache.h). */
#if PG_VERSION_NUM >= 170000
#define xip83_primary_key_index(rel) RelationGetPrimaryKeyIndex((rel), false)
#else
#define xip83_primary_key_index(rel) RelationGetPrimaryKeyIndex(rel)
#endif

/* 17: a backend's process number is MyProcNumber (storage/proc.h). */
#if PG_VERSION_NUM >= 170000
#define xip83_my_proc_number() ((int) MyProcNumber)
#else
#define xip83_my_proc_number() (MyProc->pgprocno)
#endif

/* 16: pg_namespace_aclcheck gave way to object_aclcheck (utils/acl.h, catalog/pg_namespace.h). */
#if PG_VERSION_NUM >= 160000
#define xip83_namespace_aclcheck(nsp, role, mode) \
	object_aclcheck(NamespaceRelationId, (nsp), (role), (mode))
#else
#define xip83_namespace_aclcheck(nsp, role, mode) pg_namespace_aclcheck((nsp), (role), (mode))
#endif

/* 16: pg_class_ownercheck gave way to object_ownercheck (utils/acl.h, catalog/pg_class.h). */
#if PG_VERSION_NUM >= 160000
#define xip83_class_ownercheck(relid, role) object_ownercheck(RelationRelationId, (relid), (role))
#else
#define xip83_class_ownercheck(relid, role) pg_class_ownercheck((relid), (role))
#endif

#endif							/* XIP83_COMPAT_H */
