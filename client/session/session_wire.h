/*
 * session_wire.h: length-delimited protobuf messages written to a file
 * descriptor: each message is preceded by its length as a protobuf varint
 * (writeDelimited). Reading them is frame_reader.h's job.
 */
#ifndef XIP83_SESSION_WIRE_H
#define XIP83_SESSION_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Writes one message with its length prefix, all of it; false on a write error. */
extern bool xip83_wire_write(int fd, const unsigned char *msg, size_t len);

/* Appends a varint; returns the bytes written (at most 10). */
extern size_t xip83_varint_put(unsigned char *p, uint64_t v);

#endif							/* XIP83_SESSION_WIRE_H */
