/*
 * badprefix.h: varint length prefixes a bounded frame reader must refuse,
 * shared by the tests of the reader and of the session that uses it.
 */
#ifndef XIP83_BADPREFIX_H
#define XIP83_BADPREFIX_H

/* 2^64 - 1: a valid varint, far over any limit */
static const unsigned char bp_max64[10] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
0x01};

/* eleven bytes: no varint is longer than ten */
static const unsigned char bp_eleven[11] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
0x80, 0x01};

/* ten bytes whose last sets bit 64 */
static const unsigned char bp_bit64[10] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
0x02};

#endif							/* XIP83_BADPREFIX_H */
