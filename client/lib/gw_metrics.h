/*
 * gw_metrics.h: the gateway's Prometheus metrics (text exposition format
 * 0.0.4) over plain HTTP on a listener of their own, on the gateway's loop.
 * Any request gets the page; a scrape costs one pass over the streams.
 */
#ifndef XIP83_GW_METRICS_H
#define XIP83_GW_METRICS_H

#include <stddef.h>

#include "gw_core.h"

typedef struct GwMetrics GwMetrics;

/* Listens on host:port for scrapes; *bound: the port. NULL with err set. */
extern GwMetrics *gw_metrics_listen(Xip83H2Server *srv, Xip83Gateway *gw, const char *host,
									const char *port, int *bound, char *err, size_t errlen);
/* Stops listening (on drain). */
extern void gw_metrics_close(GwMetrics *m);
extern void gw_metrics_free(GwMetrics *m);
/* The page, malloc'd (NULL when out of memory). */
extern char *gw_metrics_page(Xip83Gateway *gw, size_t *len);

#endif
