/*
 * v3row.h: one v3 row (group message or welcome) with every column a frame
 * needs, read from a binary-format libpq result. The wave scans and the live
 * fetch functions return these columns in the same order, so one reader
 * serves both lanes and both encode the same bytes.
 */
#ifndef XIP83_V3ROW_H
#define XIP83_V3ROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#define XIP83_V3_GROUP		0x00	/* topic kind byte of group messages */
#define XIP83_V3_WELCOME	0x01	/* topic kind byte of welcomes */

/* Byte fields point into the result; NULL columns read as empty / 0 / false. */
typedef struct Xip83V3Row
{
	int			kind;			/* XIP83_V3_GROUP or XIP83_V3_WELCOME */
	int64_t		id;
	uint64_t	created_ns;		/* created_at since the Unix epoch; 0 before it */
	const unsigned char *key;	/* group_id or installation_key (no kind byte) */
	size_t		key_len;
	const unsigned char *data;
	size_t		data_len;
	const unsigned char *aux;	/* sender_hmac / hpke_public_key */
	size_t		aux_len;
	const unsigned char *metadata;	/* welcome_metadata */
	size_t		metadata_len;
	bool		should_push;
	bool		is_commit;
	int			wrapper_algorithm;	/* database numbering */
	int			message_type;	/* 0 welcome, 1 welcome pointer */
} Xip83V3Row;

/*
 * Column numbers in the result, in the order of the scan functions:
 * group: id, created_at, group_id, data, is_commit, sender_hmac, should_push;
 * welcome: id, created_at, installation_key, data, hpke_public_key,
 * wrapper_algorithm, welcome_metadata, message_type.
 */
typedef struct Xip83V3Cols
{
	int			col[8];
} Xip83V3Cols;

extern const Xip83V3Cols xip83_v3_scan_cols;

/* A binary int2/int4/int8 column, sign-extended; 0 when NULL. */
extern int64_t xip83_result_int(const PGresult *res, int row, int col);

extern void xip83_v3row_read(const PGresult *res, int row, int kind, const Xip83V3Cols *cols,
							 Xip83V3Row *out);

#endif							/* XIP83_V3ROW_H */
