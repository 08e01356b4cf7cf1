/*
 * asan_first.so: preloaded after the ASan runtime into the (uninstrumented)
 * PostgreSQL server binaries by tests/sanitize/sanitize.sh.
 *
 * Why: preloaded, the ASan runtime initializes lazily, on the first malloc.
 * On Debian 12 that first malloc happens in libgpg-error's constructor (pulled
 * in by libsystemd -> libgcrypt), inside bindtextdomain while glibc holds its
 * gettext lock; the runtime's initialization calls dlerror, which takes the
 * same lock again, and every later bindtextdomain (postgres's own, in main)
 * hangs forever. These wrappers run first: they initialize the runtime with
 * a malloc outside the lock, then call the real function. newlocale has the
 * same story with the setlocale lock (libp11-kit's constructor, in psql).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <locale.h>
#include <stdlib.h>

char	   *bindtextdomain(const char *domain, const char *dir);
locale_t	newlocale(int mask, const char *locale, locale_t base);

/* The runtime initializes on its first malloc: make that one happen here. */
static void
InitRuntime(void)
{
	void	   *volatile p = malloc(1);

	free(p);
}

char *
bindtextdomain(const char *domain, const char *dir)
{
	static char *(*real) (const char *, const char *);

	InitRuntime();
	if (real == NULL)
		real = (char *(*) (const char *, const char *)) dlsym(RTLD_NEXT, "bindtextdomain");
	return real(domain, dir);
}

/* The same hang through the setlocale lock: libp11-kit's constructor (psql). */
locale_t
newlocale(int mask, const char *locale, locale_t base)
{
	static locale_t (*real) (int, const char *, locale_t);

	InitRuntime();
	if (real == NULL)
		real = (locale_t (*) (int, const char *, locale_t)) dlsym(RTLD_NEXT, "newlocale");
	return real(mask, locale, base);
}
