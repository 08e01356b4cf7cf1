/*
 * session_params.h: array parameters of the wave scans as text literals
 * ("{...}"), built once when a wave starts and passed with every page.
 */
#ifndef XIP83_SESSION_PARAMS_H
#define XIP83_SESSION_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growing array literal; s is NULL until the first append. */
typedef struct Xip83ArrayLit
{
	char	   *s;
	size_t		len;
	size_t		cap;
	size_t		n;				/* elements */
} Xip83ArrayLit;

/* Appends a bytea element ("\\x..."); false when out of memory. */
extern bool xip83_lit_bytes(Xip83ArrayLit *a, const unsigned char *bytes, size_t len);
/* Appends an integer element. */
extern bool xip83_lit_int(Xip83ArrayLit *a, int64_t v);
/* Closes the literal ("}") and hands its string over (the caller frees it); NULL when out of memory. */
extern char *xip83_lit_finish(Xip83ArrayLit *a);

#endif							/* XIP83_SESSION_PARAMS_H */
