/*
 * live_notice.h: the LiveNotice payload of NOTIFY xip83_live.
 */
#ifndef XIP83_LIVE_NOTICE_H
#define XIP83_LIVE_NOTICE_H

#include "postgres.h"

#include "xip83/live_notice.pb-c.h"

/* NOTIFY payloads must stay below 8000 bytes; base64 grows 4/3. */
#define LIVE_NOTICE_MAX_PAYLOAD 7999

extern char *LiveNoticeToBase64(const Xip83__V1__LiveNotice *notice);

#endif							/* XIP83_LIVE_NOTICE_H */
