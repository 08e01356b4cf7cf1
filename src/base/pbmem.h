/*
 * pbmem.h: protobuf-c on PostgreSQL memory.
 *
 * Decoding allocates through palloc in CurrentMemoryContext, so a message
 * that fails half-way, or an ERROR thrown while one is in use, leaks nothing
 * past the context's reset.
 */
#ifndef XIP83_PBMEM_H
#define XIP83_PBMEM_H

#include "postgres.h"
#include <protobuf-c/protobuf-c.h>

extern ProtobufCAllocator *PbAllocator(void);
extern bytea *PbPackToBytea(const ProtobufCMessage *msg);

#endif							/* XIP83_PBMEM_H */
