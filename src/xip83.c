/*
 * xip83.c: module entry point: GUCs and, when preloaded, the shared-memory
 * request. Nothing else lives here.
 *
 * _PG_init must be safe both from shared_preload_libraries and from a plain
 * LOAD by the first backend that calls one of our functions: everything that
 * needs the postmaster (shared memory, background workers) is only requested
 * while process_shared_preload_libraries_in_progress is true.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "merge.h"
#include "xip83.h"

PG_MODULE_MAGIC;

int			xip83_max_page_limit = 10000;
int			xip83_wave_strategy = MERGE_STRATEGY_AUTO;

static const struct config_enum_entry wave_strategy_options[] = {
	{"auto", MERGE_STRATEGY_AUTO, false},
	{"heap", MERGE_STRATEGY_HEAP, false},
	{"walk", MERGE_STRATEGY_WALK, false},
	{NULL, 0, false}
};

void		_PG_init(void);

/* Registers GUCs; requests preload-only resources when preloading. */
void
_PG_init(void)
{
	DefineCustomIntVariable("xip83.max_page_limit",
							"Largest page a wave scan or live fetch may ask for.",
							"Bounds the rows one call can return, and so its memory.",
							&xip83_max_page_limit,
							10000, 1, 1000000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	DefineCustomEnumVariable("xip83.wave_strategy",
							 "How wave scans read: auto, heap (merge per-topic index scans) or walk (filter the id index).",
							 "auto starts with the id walk and switches to the merge when that is cheaper.",
							 &xip83_wave_strategy,
							 MERGE_STRATEGY_AUTO, wave_strategy_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

#if PG_VERSION_NUM >= 150000
	MarkGUCPrefixReserved("xip83");
#else
	EmitWarningsOnPlaceholders("xip83");
#endif
}
