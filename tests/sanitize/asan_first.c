/*
 * asan_first.so: preloaded after the ASan runtime into the (uninstrumented)
 * PostgreSQL server binaries by tests/sanitize/sanitize.sh.
 *
 * Why: preloaded, the ASan runtime initializes lazily, on the first malloc.
 * On Debian 12 that first malloc happens in libgpg-error's constructor (pulled
 * in by libsystemd -> libgcrypt), inside bindtextdomain while glibc holds its
 * gettext lock; the runtime's initialization calls dlerror, which takes the
 * same lock again, and every later bindtextdomain (postgres's own, in main)
 * hangs forever. This wrapper runs first: it initializes the runtime with a
 * malloc outside the lock, then calls the real bindtextdomain.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

char	   *bindtextdomain(const char *domain, const char *dir);

char *
bindtextdomain(const char *domain, const char *dir)
{
	static char *(*real) (const char *, const char *);
	void	   *volatile p = malloc(1);

	free(p);
	if (real == NULL)
		real = (char *(*) (const char *, const char *)) dlsym(RTLD_NEXT, "bindtextdomain");
	return real(domain, dir);
}
