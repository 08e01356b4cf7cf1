/*
 * pbmem.c: protobuf-c allocator over palloc, and packing into a bytea.
 */
#include "postgres.h"

#include "utils/memutils.h"
#if PG_VERSION_NUM >= 160000
#include "varatt.h"			/* VARSIZE and friends left postgres.h in 16 */
#endif

#include "base.h"

static void *
PbAlloc(void *allocator_data, size_t size)
{
	return palloc_extended(size, MCXT_ALLOC_HUGE);
}

static void
PbFree(void *allocator_data, void *pointer)
{
	if (pointer != NULL)
		pfree(pointer);
}

static ProtobufCAllocator pb_allocator = {PbAlloc, PbFree, NULL};

/* The allocator to pass to every *__unpack and *__free_unpacked call. */
ProtobufCAllocator *
PbAllocator(void)
{
	return &pb_allocator;
}

/* Serializes msg into a new bytea in CurrentMemoryContext. */
bytea *
PbPackToBytea(const ProtobufCMessage *msg)
{
	size_t		len = protobuf_c_message_get_packed_size(msg);
	bytea	   *result;

	if (len > MaxAllocSize - VARHDRSZ)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("protobuf message of %zu bytes is too large", len)));
	result = palloc(VARHDRSZ + len);
	SET_VARSIZE(result, VARHDRSZ + len);
	protobuf_c_message_pack(msg, (uint8_t *) VARDATA(result));
	return result;
}
