/*
 * errcodes.h: xip83's own SQLSTATEs, shared by the extension and the client
 * programs (client/): the server raises them, clients act on them without
 * parsing messages. Each is written once, as the five-character string a
 * client compares PQresultErrorField(res, PG_DIAG_SQLSTATE) with; with
 * PostgreSQL's elog.h in scope (MAKE_SQLSTATE) the ERRCODE_ form for
 * ereport is made from the same string.
 *
 * Class X83 is not PostgreSQL's: SQLSTATEs starting with X are free for
 * implementations to define.
 */
#ifndef XIP83_ERRCODES_H
#define XIP83_ERRCODES_H

/*
 * Late writes after the consumer's late cursor were dropped (ring overflow,
 * or a server restart since): resynchronize from late_cursor().
 */
#define XIP83_SQLSTATE_LATE_WRITES_LOST		"X83L0"
/* A standby did not replay past the fence within xip83.standby_wait_ms. */
#define XIP83_SQLSTATE_FENCE_TIMEOUT		"X83F0"
/* Recovery ended before replay passed the fence: the rows may not exist here. */
#define XIP83_SQLSTATE_FENCE_UNREACHABLE	"X83F1"

#ifdef MAKE_SQLSTATE
#define XIP83_MAKE_SQLSTATE(s) MAKE_SQLSTATE((s)[0], (s)[1], (s)[2], (s)[3], (s)[4])
#define ERRCODE_XIP83_LATE_WRITES_LOST		XIP83_MAKE_SQLSTATE(XIP83_SQLSTATE_LATE_WRITES_LOST)
#define ERRCODE_XIP83_FENCE_TIMEOUT			XIP83_MAKE_SQLSTATE(XIP83_SQLSTATE_FENCE_TIMEOUT)
#define ERRCODE_XIP83_FENCE_UNREACHABLE		XIP83_MAKE_SQLSTATE(XIP83_SQLSTATE_FENCE_UNREACHABLE)
#endif

#endif							/* XIP83_ERRCODES_H */
