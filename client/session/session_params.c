/*
 * session_params.c: array literals for the wave scans (see session_params.h).
 */
#include "session_params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool
Append(Xip83ArrayLit *a, const char *p, size_t n)
{
	if (a->cap - a->len < n + 2)
	{
		size_t		cap = a->cap ? a->cap : 256;
		char	   *ns;

		while (cap - a->len < n + 2)
			cap *= 2;
		if ((ns = realloc(a->s, cap)) == NULL)
			return false;
		a->s = ns;
		a->cap = cap;
	}
	memcpy(a->s + a->len, p, n);
	a->len += n;
	a->s[a->len] = '\0';
	return true;
}

/* The opening brace or the separator before the next element. */
static bool
Next(Xip83ArrayLit *a)
{
	return Append(a, a->n++ ? "," : "{", 1);
}

bool
xip83_lit_bytes(Xip83ArrayLit *a, const unsigned char *bytes, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	char		pair[2];
	/* the array parser eats one backslash, bytea input reads the other */
	bool		ok = Next(a) && Append(a, "\"\\\\x", 4);

	for (size_t i = 0; ok && i < len; i++)
	{
		pair[0] = hex[bytes[i] >> 4];
		pair[1] = hex[bytes[i] & 15];
		ok = Append(a, pair, 2);
	}
	return ok && Append(a, "\"", 1);
}

bool
xip83_lit_int(Xip83ArrayLit *a, int64_t v)
{
	char		num[24];
	int			n = snprintf(num, sizeof(num), "%lld", (long long) v);

	return Next(a) && Append(a, num, (size_t) n);
}

char *
xip83_lit_finish(Xip83ArrayLit *a)
{
	char	   *s;

	if ((a->n == 0 && !Append(a, "{", 1)) || !Append(a, "}", 1))
	{
		free(a->s);
		s = NULL;
	}
	else
		s = a->s;
	memset(a, 0, sizeof(*a));
	return s;
}
