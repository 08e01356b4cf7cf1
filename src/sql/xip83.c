/*
 * xip83.c: module entry point: GUCs and, when preloaded, the shared-memory
 * request and the hooks of the horizon registry and the notifier. Nothing
 * else lives here.
 *
 * _PG_init must be safe both from shared_preload_libraries and from a plain
 * LOAD by the first backend that calls one of our functions: everything that
 * needs the postmaster (shared memory, hooks that rely on it) is only set up
 * while process_shared_preload_libraries_in_progress is true. Without it the
 * horizon functions fail with SQLSTATE 55000 and writes go on unregistered.
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "base/base.h"
#include "core/core.h"
#include "feed/feed.h"
#include "scan/scan.h"

PG_MODULE_MAGIC;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static const struct config_enum_entry wave_strategy_options[] = {
	{"auto", MERGE_STRATEGY_AUTO, false},
	{"heap", MERGE_STRATEGY_HEAP, false},
	{"walk", MERGE_STRATEGY_WALK, false},
	{NULL, 0, false}
};

void		_PG_init(void);

/* Refuses unknown xip83.* settings once every one of ours is defined. */
static void
ReservePrefix(void)
{
#if PG_VERSION_NUM >= 150000
	MarkGUCPrefixReserved("xip83");
#else
	EmitWarningsOnPlaceholders("xip83");
#endif
}

/* Asks the postmaster for the registry's and the notifier's memory. */
static void
Xip83ShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RegistryShmemRequest();
	RecentShmemRequest();
	SummaryShmemRequest();
	NotifierShmemRequest();
}

/* Creates (or, in a backend, attaches) our shared memory. */
static void
Xip83ShmemStartup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	RegistryShmemInit();
	RecentShmemInit();
	SummaryShmemInit();
	NotifierShmemInit();
	LWLockRelease(AddinShmemInitLock);
}

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
	DefineCustomIntVariable("xip83.notify_interval_ms",
							"Shortest time between two notices of the live feed.",
							"The notifier sends at most one NOTIFY xip83_live per interval, "
							"folding every horizon advance in between into it; 0 sends one "
							"per wake-up.",
							&xip83_notify_interval_ms,
							1, 0, 60000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("xip83.notify_busy_interval_ms",
							"Longest time between two notices while writes keep coming.",
							"The pause after a notice starts at xip83.notify_interval_ms and "
							"doubles up to this while every pause ends with news waiting; "
							"at or below xip83.notify_interval_ms the pause stays fixed.",
							&xip83_notify_busy_interval_ms,
							5, 0, 60000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("xip83.notify_heartbeat_ms",
							"Longest time the notifier stays silent when no horizon moves.",
							"Consumers treat a feed silent for a few heartbeats as offline and poll.",
							&xip83_notify_heartbeat_ms,
							1000, 10, 3600000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("xip83.notifier_idle_ms",
							"How long a database's notifier stays without any use of the feed before it leaves.",
							"Writes, horizon reads and live fetches are uses; consumers fetch on every "
							"heartbeat, so a followed feed keeps its notifier. 0 keeps it forever.",
							&xip83_notifier_idle_ms,
							60000, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomEnumVariable("xip83.wave_strategy",
							 "How wave scans read: auto, heap (merge per-topic index scans) or walk (filter the id index).",
							 "auto starts with the id walk and switches to the merge when that is cheaper.",
							 &xip83_wave_strategy,
							 MERGE_STRATEGY_AUTO, wave_strategy_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	StandbyDefineGucs();
	DefineCustomIntVariable("xip83.summary_pass_rows_per_s",
							"Rows per second the topic summary's pass reads at most after a start.",
							"The pass reads every stored row of a feed once after it is loaded; "
							"until it ends, waves descend topics the recent-writes tables do not "
							"know. 0: no bound.",
							&xip83_summary_pass_rows_per_s,
							5000000, 0, INT_MAX,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	if (!process_shared_preload_libraries_in_progress)
	{
		ReservePrefix();
		return;
	}
	/* capacities size shared memory: settable only at server start */
	DefineCustomIntVariable("xip83.max_databases",
							"Databases whose horizons the registry follows at once.",
							"An entry idle for a minute, or of a dropped database, is reused.",
							&xip83_max_databases,
							16, 1, 4096,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("xip83.max_tracked_tables",
							"Node tables xip83.track may follow at once, over all databases.",
							"Each is a feed of its own, sized like a database's.",
							&xip83_max_tracked_tables,
							8, 0, 4096,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("xip83.max_originators",
							"Originators per feed whose horizons the registry follows.",
							"A feed is xip83's own tables of one database, or one tracked table.",
							&xip83_max_originators,
							1024, 1, 65000,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("xip83.late_ring_size",
							"Late writes per database the live feed remembers for consumers.",
							"A consumer whose late cursor falls further behind must start over.",
							&xip83_late_ring_size,
							4096, 16, 1048576,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("xip83.recent_entries",
							"Topics per feed and kind whose latest writes waves can skip by.",
							"An entry keeps a topic's 12 highest positions, so that a wave reads them "
							"by position instead of descending the topic's index. There are twice as "
							"many slots as entries, rounded up to a power of two, 16 bytes each, and "
							"48 bytes of positions for every other slot: 80 to 160 bytes an entry, "
							"160 kB per feed and kind at 2048. Allocated for every feed entry and kind "
							"(xip83.max_databases + xip83.max_tracked_tables, times 3). When full, the "
							"older half is dropped and topics below what it held descend their index "
							"again. 0: none, every wave descends every topic.",
							&xip83_recent_entries,
							2048, 0, 16777216,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("xip83.summary_memory",
							"Memory of each feed's topic summary per kind, which lets waves skip idle topics.",
							"Each topic (per originator for envelopes) keeps its highest position in a "
							"slot of a 64-byte block of 7 slots, or the block's overflow word when they "
							"are taken; a wave skips a topic whose slot is at or below its floor. "
							"Allocated for every feed entry and kind (xip83.max_databases + "
							"xip83.max_tracked_tables, times 3). More topics than about 6 per block (100,000 "
							"per MB) make answers coarser, never wrong. 0: none.",
							&xip83_summary_kb,
							128, 0, 64 * 1024 * 1024,
							PGC_POSTMASTER, GUC_UNIT_KB,
							NULL, NULL, NULL);

	/* after the capacities: reserving drops the placeholders they are set through */
	ReservePrefix();

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = Xip83ShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = Xip83ShmemStartup;
	PinsInstallHooks();
	PositionsInstallHooks();
	FeedLoadInstall();
	HorizonInstallHooks();
	TrackInstallHooks();
	RegistryRegisterRmgr();
	NotifierInstallHooks();
}
