/*
 * summary.c: the topic summary of each feed and kind (core.h has the model).
 *
 * Layout: per registry entry and kind one Summary header and an array of
 * blocks, 64 bytes (one cache line) each: 7 slots and the overflow word
 * (core.h). A key's block is chosen by multiply-shift over the block count
 * (any count, no power of two): a writer touches one cache line, a reader
 * loads one. A slot is a tag and a position in one word, so a claim and each
 * raise are one compare-and-swap, and a reader sees a slot whole.
 *
 * The state word is gen << 2 | state. Only a reset writes zeros, and it first
 * moves the word to (gen + 1, RESETTING), so a reader that began on READY and
 * finds the word unchanged afterwards read no zeroed slot; a pass starts
 * only from EMPTY (after the zeros) and ends READY only if the word still
 * names its own pass.
 */
#include "postgres.h"

#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "core.h"
#include "registry.h"

int			xip83_summary_kb = 128;

#define SUMMARY_BLOCK_BYTES 64

struct Summary
{
	pg_atomic_uint64 word;		/* gen << 2 | SummaryState */
	pg_atomic_uint64 scanned;	/* rows the newest pass read so far */
	pg_atomic_uint64 pass_ms;	/* how long the last completed pass took */
	pg_atomic_uint64 started_ms;	/* when the newest pass began */
	pg_atomic_uint64 covered;	/* highest position vouched for (core.h), 0 when none */
	pg_atomic_uint32 standby_off;	/* 1: this standby cannot follow it (core.h) */
	uint64		nblocks;
	pg_atomic_uint64 *blocks;	/* nblocks * SUMMARY_WORDS_PER_BLOCK */
};

static Summary *Summaries = NULL;	/* RegistryEntries() * 3 */

static uint64
BlocksPer(void)
{
	return (uint64) xip83_summary_kb * 1024 / SUMMARY_BLOCK_BYTES;
}

static int
NSummaries(void)
{
	return BlocksPer() > 0 ? RegistryEntries() * 3 : 0;
}

Size
SummaryShmemSize(void)
{
	Size		size;

	if (NSummaries() == 0)
		return 0;
	size = MAXALIGN(mul_size(sizeof(Summary), NSummaries()));
	/* room to align the blocks on a cache line */
	size = add_size(size, SUMMARY_BLOCK_BYTES);
	return add_size(size, mul_size(mul_size(BlocksPer(), SUMMARY_BLOCK_BYTES), NSummaries()));
}

void
SummaryShmemRequest(void)
{
	if (NSummaries() > 0)
		RequestAddinShmemSpace(SummaryShmemSize());
}

/*
 * Creates or attaches the summaries (AddinShmemInitLock held). Blocks are
 * not zeroed here: the segment is new and zero, and an entry's load empties
 * them (SummaryReset) before the summary can answer.
 */
void
SummaryShmemInit(void)
{
	bool		found;
	char	   *p;
	char	   *blocks;

	if (NSummaries() == 0)
		return;
	p = ShmemInitStruct("xip83 summary", SummaryShmemSize(), &found);
	Summaries = (Summary *) p;
	if (found)
		return;
	blocks = (char *) TYPEALIGN(SUMMARY_BLOCK_BYTES, p + MAXALIGN(sizeof(Summary) * NSummaries()));
	for (int i = 0; i < NSummaries(); i++)
	{
		Summary    *s = &Summaries[i];

		pg_atomic_init_u64(&s->word, SUMMARY_EMPTY);
		pg_atomic_init_u64(&s->scanned, 0);
		pg_atomic_init_u64(&s->pass_ms, 0);
		pg_atomic_init_u64(&s->started_ms, 0);
		pg_atomic_init_u64(&s->covered, 0);
		pg_atomic_init_u32(&s->standby_off, 0);
		s->nblocks = BlocksPer();
		s->blocks = (pg_atomic_uint64 *) (blocks + (Size) i * BlocksPer() * SUMMARY_BLOCK_BYTES);
	}
}

bool
SummaryReady(void)
{
	return Reg != NULL && Summaries != NULL;
}

Summary *
SummaryOf(const RegistryDb *db, PositionKind kind)
{
	if (Summaries == NULL || db == NULL)
		return NULL;
	return &Summaries[(db - Reg->dbs) * 3 + (int) kind];
}

/* Raises a word to at least v; a slot's tag stays as it is (v carries it). */
static inline void
WordMax(pg_atomic_uint64 *w, uint64 v)
{
	uint64		cur = pg_atomic_read_u64(w);

	while (cur < v)
		if (pg_atomic_compare_exchange_u64(w, &cur, v))
			break;
}

void
SummaryNote(Summary *s, uint32 key, uint64 position)
{
	pg_atomic_uint64 *block = &s->blocks[SummaryBlock(key, s->nblocks) * SUMMARY_WORDS_PER_BLOCK];
	uint64		tag = SummaryTag(key);
	uint64		v = tag | Min(position, SUMMARY_POSITION_MAX);

	/*
	 * A compare-and-swap is a full barrier: the slot is stored before the row
	 * is inserted. The first slot with the tag, or the first empty one: a
	 * failed claim rereads the slot, so no empty slot is ever passed, and a
	 * tag has at most one slot.
	 */
	for (int i = 0; i < SUMMARY_SLOTS; i++)
	{
		uint64		cur = pg_atomic_read_u64(&block[i]);

		while (cur == 0)
			if (pg_atomic_compare_exchange_u64(&block[i], &cur, v))
				return;
		if ((cur & ~SUMMARY_POSITION_MAX) == tag)
		{
			WordMax(&block[i], v);
			return;
		}
	}
	WordMax(&block[SUMMARY_SLOTS], position);
}

SummaryState
SummaryStateOf(const Summary *s, uint64 *gen)
{
	uint64		w = pg_atomic_read_u64((pg_atomic_uint64 *) &s->word);

	if (gen != NULL)
		*gen = w >> 2;
	return (SummaryState) (w & 3);
}

void
SummaryReset(Summary *s)
{
	uint64		w = pg_atomic_read_u64(&s->word);
	uint64		gen;

	/*
	 * Readers stop trusting it, and no pass can start, before any zero is
	 * written. One reset at a time: zeros written late by an earlier one
	 * could land after a pass that began once a later one ended.
	 */
	for (;;)
	{
		if ((w & 3) == SUMMARY_RESETTING)
		{
			pg_usleep(1000L);
			w = pg_atomic_read_u64(&s->word);
			continue;
		}
		gen = (w >> 2) + 1;
		if (pg_atomic_compare_exchange_u64(&s->word, &w, gen << 2 | SUMMARY_RESETTING))
			break;
	}
	pg_atomic_write_u64(&s->covered, 0);
	for (uint64 i = 0; i < s->nblocks * SUMMARY_WORDS_PER_BLOCK; i++)
		pg_atomic_write_u64(&s->blocks[i], 0);
	pg_atomic_write_u64(&s->scanned, 0);
	pg_write_barrier();
	/* cppcheck-suppress badBitmaskCheck ; the state is named even where it is 0 */
	pg_atomic_write_u64(&s->word, gen << 2 | SUMMARY_EMPTY);
}

void
SummaryResetKind(RegistryDb *db, PositionKind kind)
{
	Summary    *s = SummaryOf(db, kind);

	if (s != NULL)
		SummaryReset(s);
}

static uint64
NowMs(void)
{
	return (uint64) (GetCurrentTimestamp() / 1000);
}

bool
SummaryPassBegin(Summary *s, uint64 *gen)
{
	uint64		w = pg_atomic_read_u64(&s->word);

	if ((w & 3) != SUMMARY_EMPTY)
		return false;
	if (!pg_atomic_compare_exchange_u64(&s->word, &w, (w & ~UINT64CONST(3)) | SUMMARY_BUILDING))
		return false;
	*gen = w >> 2;
	pg_atomic_write_u64(&s->scanned, 0);
	pg_atomic_write_u64(&s->started_ms, NowMs());
	return true;
}

void
SummaryPassProgress(Summary *s, uint64 rows)
{
	pg_atomic_fetch_add_u64(&s->scanned, rows);
}

bool
SummaryPassEnd(Summary *s, uint64 gen, bool done, uint64 covered)
{
	uint64		w = gen << 2 | SUMMARY_BUILDING;
	bool		ok;

	/*
	 * Every slot the pass raised, and what it covers, are stored before
	 * the state says so. A pass that lost to a reset may leave its covered
	 * behind on the emptied summary: the next pass writes its own before
	 * READY, and nothing reads it before.
	 */
	if (done)
		pg_atomic_write_u64(&s->covered, covered);
	pg_write_barrier();
	ok = pg_atomic_compare_exchange_u64(&s->word, &w,
										gen << 2 | (done ? SUMMARY_READY : SUMMARY_EMPTY));
	if (ok && done)
		pg_atomic_write_u64(&s->pass_ms, NowMs() - pg_atomic_read_u64(&s->started_ms));
	return ok && done;
}

void
SummaryAdvance(Summary *s, uint64 gen, uint64 covered)
{
	/* the slots raised up to it are stored before it says so */
	pg_write_barrier();
	if (pg_atomic_read_u64(&s->word) == (gen << 2 | SUMMARY_READY) &&
		pg_atomic_read_u64(&s->covered) < covered)
		pg_atomic_write_u64(&s->covered, covered);
}

void
SummaryCoverLine(RegistryDb *db, int line, uint64 covered)
{
	/* the slots raised up to it are stored before it says so */
	pg_write_barrier();
	pg_atomic_write_u64(&db->lines[line].summary_covered, covered);
}

uint64
SummaryLineCovered(RegistryDb *db, int line)
{
	return pg_atomic_read_u64(&db->lines[line].summary_covered);
}

uint64
SummaryCoveredOf(const Summary *s)
{
	return pg_atomic_read_u64((pg_atomic_uint64 *) &s->covered);
}

void
SummarySetStandbyOff(Summary *s)
{
	pg_atomic_write_u32(&s->standby_off, 1);
	pg_memory_barrier();
}

bool
SummaryStandbyOff(const Summary *s)
{
	return pg_atomic_read_u32((pg_atomic_uint32 *) &s->standby_off) != 0;
}

bool
SummaryAskBegin(const Summary *s, SummaryAsk *ask)
{
	if (s == NULL)
		return false;
	ask->summary = s;
	ask->word = pg_atomic_read_u64((pg_atomic_uint64 *) &s->word);
	ask->covered = pg_atomic_read_u64((pg_atomic_uint64 *) &s->covered);
	ask->blocks = s->blocks;
	ask->nblocks = s->nblocks;
	/* the slots are read after the state and the covered position that vouch for them */
	pg_read_barrier();
	return (ask->word & 3) == SUMMARY_READY;
}

bool
SummaryAskStillValid(const SummaryAsk *ask)
{
	pg_read_barrier();
	return pg_atomic_read_u64((pg_atomic_uint64 *) &ask->summary->word) == ask->word;
}

int
SummaryMayHaveMany(const Summary *s, RegistryDb *db, int32 node, int64 ceiling, int n,
				   const uint32 *keys, const uint64 *floors, bool *may)
{
	SummaryAsk	ask = {0};
	bool	   *mine;
	int			count = 0;
	bool		covers = SummaryAskBegin(s, &ask) && ask.covered == SUMMARY_COVERS_ALL;

	if (!covers && (ask.word & 3) == SUMMARY_READY && ask.covered == SUMMARY_COVERS_LINES &&
		db != NULL)
	{
		/* a standby's envelopes: what was followed of this originator, read before the slots */
		int			line = RegistryFindOriginator(db, node);

		covers = ceiling <= 0 ||
			(line >= 0 && SummaryLineCovered(db, line) >= (uint64) ceiling);
		pg_read_barrier();
	}
	if (!covers)
	{
		for (int i = 0; i < n; i++)
			count += may[i];
		return count;
	}
	mine = palloc(sizeof(bool) * Max(n, 1));
	for (int i = 0; i < n; i++)
		SummaryAskPrefetch(&ask, keys[i]);
	for (int i = 0; i < n; i++)
		mine[i] = may[i] && SummaryAskMay(&ask, keys[i], floors[i]);
	/* reset meanwhile: its answers are void, the others stand */
	if (SummaryAskStillValid(&ask))
		memcpy(may, mine, sizeof(bool) * n);
	for (int i = 0; i < n; i++)
		count += may[i];
	pfree(mine);
	return count;
}

bool
SummaryStatsOf(const RegistryDb *db, PositionKind kind, SummaryState *state, int64 *scanned,
			   int64 *pass_ms)
{
	Summary    *s;

	/* a standby's feeds are never loaded: replay fills them */
	if (Summaries == NULL || db == NULL || !(db->ready || db->horizons_replayed))
		return false;
	s = SummaryOf(db, kind);
	*state = SummaryStateOf(s, NULL);
	*scanned = (int64) pg_atomic_read_u64(&s->scanned);
	*pass_ms = (int64) pg_atomic_read_u64(&s->pass_ms);
	return true;
}
