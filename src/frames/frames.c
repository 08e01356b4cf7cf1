/*
 * frames.c: wave rows encoded as ready-to-send XIP-83 frames, and the wave
 * scans' frame form: the *_wave_scan overloads that take mutate_id and
 * max_frame_bytes (a page, or with the limit NULL a whole wave for a cursor).
 *
 * A frame is one complete SubscribeResponse{v1{messages|envelopes}} tagged
 * with the wave's mutate_id (0: the live lane). Messages are added in wave
 * order; a frame closes when the next message would take it past
 * max_frame_bytes, so a frame never splits a message, and a message that
 * alone is larger than the limit gets a frame of its own and a WARNING.
 * Frame sizes are computed exactly before packing (every tag here is one
 * byte, every length a varint), so no frame is packed twice.
 *
 * Row to message:
 *   - created_ns is created_at (timestamp without time zone, read as UTC) in
 *     nanoseconds since the Unix epoch; infinite or pre-1970 times and
 *     negative ids cannot be sent and are errors (22008, 22003).
 *   - A NULL column is an absent field (proto3: a client reads the default).
 *   - Welcomes: message_type 0 is the V1 arm, 1 the WelcomePointer arm with
 *     data as welcome_pointer (no welcome_metadata: the arm has none); any
 *     other type is an error (22000). wrapper_algorithm is numbered from 0 in
 *     the database and from 1 on the wire (0 = unspecified): wire = db + 1,
 *     for every stored value, so an unknown algorithm stays an unknown enum
 *     value for the client rather than an error that stalls its wave.
 *   - d14n: the stored originator_envelope is embedded as-is, through the
 *     send-side view xip83.frames.EnvelopeFrame (same bytes as the public
 *     SubscribeResponse).
 *
 * Memory: a frame's messages live in the framer's context, reset after each
 * frame; a row's bytes are copied there because the wave's slot moves on.
 * Finished frames are allocated in the caller's context.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "base/base.h"
#include "frames.h"
#include "xip83/d14n_envelope_frame.pb-c.h"
#include "xip83/mls_api.pb-c.h"

PG_FUNCTION_INFO_V1(group_wave_frames);
PG_FUNCTION_INFO_V1(welcome_wave_frames);
PG_FUNCTION_INFO_V1(envelope_wave_frames);
/* 0.1.0's frame streams: a 0.1.0 install (the start of every update) names them */
PG_FUNCTION_INFO_V1(group_wave_frames_rows);
PG_FUNCTION_INFO_V1(welcome_wave_frames_rows);
PG_FUNCTION_INFO_V1(envelope_wave_frames_rows);

/* Column positions of the rows, as the wave scans return them. */
enum
{
	GROUP_ID, GROUP_CREATED_AT, GROUP_GROUP_ID, GROUP_DATA, GROUP_IS_COMMIT,
	GROUP_SENDER_HMAC, GROUP_SHOULD_PUSH, GROUP_NCOLS
};
enum
{
	WELCOME_ID, WELCOME_CREATED_AT, WELCOME_INSTALLATION_KEY, WELCOME_DATA,
	WELCOME_HPKE_PUBLIC_KEY, WELCOME_WRAPPER_ALGORITHM, WELCOME_METADATA,
	WELCOME_MESSAGE_TYPE, WELCOME_NCOLS
};
enum
{
	ENVELOPE_NODE, ENVELOPE_SEQUENCE, ENVELOPE_GATEWAY_TIME, ENVELOPE_TOPIC,
	ENVELOPE_BYTES, ENVELOPE_NCOLS
};

#define FRAME_MAX_COLS 8

struct Framer
{
	FrameKind	kind;
	uint64		mutate_id;
	int32		max_bytes;
	MemoryContext cxt;			/* the current frame's messages */
	void	  **messages;		/* v3: GroupMessage / WelcomeMessage pointers */
	ProtobufCBinaryData *envelopes; /* d14n: stored envelopes */
	int			n;
	int			cap;
	uint64		body;			/* encoded repeated fields so far */
	int32		last_node;
	int64		last_position;
};

/* Bytes of v as a protobuf varint. */
static inline uint64
VarintSize(uint64 v)
{
	uint64		n = 1;

	while (v >= 0x80)
	{
		v >>= 7;
		n++;
	}
	return n;
}

/* Bytes of a length-delimited field with a one-byte tag. */
static inline uint64
DelimitedSize(uint64 len)
{
	return 1 + VarintSize(len) + len;
}

/*
 * The size of a frame whose repeated field holds `body` bytes:
 * SubscribeResponse{v1 = 1: V1{messages|envelopes = 1: {..., mutate_id}}}.
 */
static uint64
FrameSize(uint64 body, uint64 mutate_id)
{
	uint64		inner = body + (mutate_id != 0 ? 1 + VarintSize(mutate_id) : 0);

	return DelimitedSize(DelimitedSize(inner));
}

/* Starts collecting rows of `kind` into frames of at most max_bytes. */
Framer *
FramerBegin(FrameKind kind, uint64 mutate_id, int32 max_bytes)
{
	Framer	   *framer = palloc0(sizeof(Framer));

	framer->kind = kind;
	framer->mutate_id = mutate_id;
	framer->max_bytes = max_bytes;
	framer->cxt = AllocSetContextCreate(CurrentMemoryContext, "xip83 frame",
										ALLOCSET_DEFAULT_SIZES);
	framer->cap = 64;
	if (kind == FRAME_ENVELOPE)
		framer->envelopes = palloc(sizeof(ProtobufCBinaryData) * framer->cap);
	else
		framer->messages = palloc(sizeof(void *) * framer->cap);
	return framer;
}

/* Frees the framer and its context. */
void
FramerEnd(Framer *framer)
{
	MemoryContextDelete(framer->cxt);
	if (framer->envelopes)
		pfree(framer->envelopes);
	if (framer->messages)
		pfree(framer->messages);
	pfree(framer);
}

/* A bytea column's bytes, copied into the current context; absent when NULL. */
static ProtobufCBinaryData
CopyBytes(Datum value, bool isnull)
{
	ProtobufCBinaryData result = {0, NULL};
	bytea	   *b;

	if (isnull)
		return result;
	b = PG_DETOAST_DATUM_PACKED(value);
	result.len = VARSIZE_ANY_EXHDR(b);
	if ((Pointer) b != DatumGetPointer(value))
		result.data = (uint8_t *) VARDATA_ANY(b);	/* already a fresh copy */
	else
	{
		result.data = palloc(Max(result.len, 1));
		memcpy(result.data, VARDATA_ANY(b), result.len);
	}
	return result;
}

/* A message id as the wire's uint64; negative ids cannot be sent. */
static uint64
WireId(Datum value, bool isnull)
{
	int64		id = isnull ? 0 : DatumGetInt64(value);

	if (id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("message id " INT64_FORMAT " cannot be sent in a frame", id),
				 errdetail("Frames carry ids as unsigned 64-bit integers.")));
	return (uint64) id;
}

/* created_at (UTC) as nanoseconds since the Unix epoch; NULL is absent (0). */
static uint64
CreatedNs(Datum value, bool isnull, uint64 id)
{
	Timestamp	ts;
	int64		unix_us;

	if (isnull)
		return 0;
	ts = DatumGetTimestamp(value);
	unix_us = TIMESTAMP_NOT_FINITE(ts) ? -1
		: ts + (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
	if (unix_us < 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("created_at of message " UINT64_FORMAT " cannot be sent in a frame", id),
				 errdetail("created_ns counts nanoseconds from 1970-01-01 as an unsigned integer; "
						   "the time is infinite or earlier.")));
	return (uint64) unix_us * 1000;
}

/* A group message row as a GroupMessage; returns its encoded size. */
static uint64
GroupItem(Datum *values, bool *nulls, void **item)
{
	Xmtp__Mls__Api__V1__GroupMessage *m = palloc(sizeof(*m));
	Xmtp__Mls__Api__V1__GroupMessage__V1 *v1 = palloc(sizeof(*v1));

	xmtp__mls__api__v1__group_message__init(m);
	xmtp__mls__api__v1__group_message__v1__init(v1);
	m->version_case = XMTP__MLS__API__V1__GROUP_MESSAGE__VERSION_V1;
	m->v1 = v1;
	v1->id = WireId(values[GROUP_ID], nulls[GROUP_ID]);
	v1->created_ns = CreatedNs(values[GROUP_CREATED_AT], nulls[GROUP_CREATED_AT], v1->id);
	v1->group_id = CopyBytes(values[GROUP_GROUP_ID], nulls[GROUP_GROUP_ID]);
	v1->data = CopyBytes(values[GROUP_DATA], nulls[GROUP_DATA]);
	v1->sender_hmac = CopyBytes(values[GROUP_SENDER_HMAC], nulls[GROUP_SENDER_HMAC]);
	v1->should_push = !nulls[GROUP_SHOULD_PUSH] && DatumGetBool(values[GROUP_SHOULD_PUSH]);
	v1->is_commit = !nulls[GROUP_IS_COMMIT] && DatumGetBool(values[GROUP_IS_COMMIT]);
	*item = m;
	return protobuf_c_message_get_packed_size(&m->base);
}

/* A welcome row as a WelcomeMessage in the arm its message_type names. */
static uint64
WelcomeItem(Datum *values, bool *nulls, void **item)
{
	Xmtp__Mls__Api__V1__WelcomeMessage *m = palloc(sizeof(*m));
	uint64		id = WireId(values[WELCOME_ID], nulls[WELCOME_ID]);
	uint64		created_ns = CreatedNs(values[WELCOME_CREATED_AT],
									   nulls[WELCOME_CREATED_AT], id);
	int			type = nulls[WELCOME_MESSAGE_TYPE] ? -1
		: DatumGetInt16(values[WELCOME_MESSAGE_TYPE]);
	/* wire numbering = database numbering + 1; NULL is unspecified (0) */
	int			algorithm = nulls[WELCOME_WRAPPER_ALGORITHM] ? 0
		: DatumGetInt16(values[WELCOME_WRAPPER_ALGORITHM]) + 1;

	xmtp__mls__api__v1__welcome_message__init(m);
	if (type == 0)
	{
		Xmtp__Mls__Api__V1__WelcomeMessage__V1 *v1 = palloc(sizeof(*v1));

		xmtp__mls__api__v1__welcome_message__v1__init(v1);
		v1->id = id;
		v1->created_ns = created_ns;
		v1->installation_key = CopyBytes(values[WELCOME_INSTALLATION_KEY],
										 nulls[WELCOME_INSTALLATION_KEY]);
		v1->data = CopyBytes(values[WELCOME_DATA], nulls[WELCOME_DATA]);
		v1->hpke_public_key = CopyBytes(values[WELCOME_HPKE_PUBLIC_KEY],
										nulls[WELCOME_HPKE_PUBLIC_KEY]);
		v1->wrapper_algorithm = algorithm;
		v1->welcome_metadata = CopyBytes(values[WELCOME_METADATA], nulls[WELCOME_METADATA]);
		m->version_case = XMTP__MLS__API__V1__WELCOME_MESSAGE__VERSION_V1;
		m->v1 = v1;
	}
	else if (type == 1)
	{
		Xmtp__Mls__Api__V1__WelcomeMessage__WelcomePointer *p = palloc(sizeof(*p));

		xmtp__mls__api__v1__welcome_message__welcome_pointer__init(p);
		p->id = id;
		p->created_ns = created_ns;
		p->installation_key = CopyBytes(values[WELCOME_INSTALLATION_KEY],
										nulls[WELCOME_INSTALLATION_KEY]);
		p->welcome_pointer = CopyBytes(values[WELCOME_DATA], nulls[WELCOME_DATA]);
		p->hpke_public_key = CopyBytes(values[WELCOME_HPKE_PUBLIC_KEY],
									   nulls[WELCOME_HPKE_PUBLIC_KEY]);
		p->wrapper_algorithm = algorithm;
		m->version_case = XMTP__MLS__API__V1__WELCOME_MESSAGE__VERSION_WELCOME_POINTER;
		m->welcome_pointer = p;
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("welcome " UINT64_FORMAT " has message_type %s", id,
						type < 0 ? "NULL" : psprintf("%d", type)),
				 errdetail("A welcome is sent as message_type 0 (welcome) or 1 (welcome pointer).")));
	*item = m;
	return protobuf_c_message_get_packed_size(&m->base);
}

/* An envelope row as its stored bytes. */
static uint64
EnvelopeItem(Datum *values, bool *nulls, ProtobufCBinaryData *item)
{
	if (nulls[ENVELOPE_BYTES])
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("envelope (%d, " INT64_FORMAT ") has a NULL originator_envelope",
						DatumGetInt32(values[ENVELOPE_NODE]),
						DatumGetInt64(values[ENVELOPE_SEQUENCE]))));
	*item = CopyBytes(values[ENVELOPE_BYTES], false);
	return item->len;
}

/* Builds the row's message in the framer's context at index n; its size. */
static uint64
FramerItem(Framer *framer, Datum *values, bool *nulls)
{
	MemoryContext old = MemoryContextSwitchTo(framer->cxt);
	uint64		size;

	if (framer->n == framer->cap)
	{
		framer->cap *= 2;
		if (framer->envelopes)
			framer->envelopes = repalloc(framer->envelopes,
										 sizeof(ProtobufCBinaryData) * framer->cap);
		else
			framer->messages = repalloc(framer->messages, sizeof(void *) * framer->cap);
	}
	switch (framer->kind)
	{
		case FRAME_GROUP:
			size = GroupItem(values, nulls, &framer->messages[framer->n]);
			break;
		case FRAME_WELCOME:
			size = WelcomeItem(values, nulls, &framer->messages[framer->n]);
			break;
		default:
			size = EnvelopeItem(values, nulls, &framer->envelopes[framer->n]);
			break;
	}
	MemoryContextSwitchTo(old);
	return size;
}

/* Packs the collected messages into one frame (caller's context) and starts over. */
static void
FramerPack(Framer *framer, Frame *out)
{
	uint64		expected = FrameSize(framer->body, framer->mutate_id);

	if (framer->kind == FRAME_ENVELOPE)
	{
		Xip83__Frames__EnvelopeFrame frame = XIP83__FRAMES__ENVELOPE_FRAME__INIT;
		Xip83__Frames__EnvelopeFrame__V1 v1 = XIP83__FRAMES__ENVELOPE_FRAME__V1__INIT;
		Xip83__Frames__EnvelopeFrame__V1__Envelopes body =
			XIP83__FRAMES__ENVELOPE_FRAME__V1__ENVELOPES__INIT;

		body.n_envelopes = framer->n;
		body.envelopes = framer->envelopes;
		body.mutate_id = framer->mutate_id;
		v1.response_case = XIP83__FRAMES__ENVELOPE_FRAME__V1__RESPONSE_ENVELOPES;
		v1.envelopes = &body;
		/* cppcheck-suppress unreadVariable ; packing reads it through .base */
		frame.version_case = XIP83__FRAMES__ENVELOPE_FRAME__VERSION_V1;
		frame.v1 = &v1;
		out->bytes = PbPackToBytea(&frame.base);
	}
	else
	{
		Xmtp__Mls__Api__V1__SubscribeResponse frame = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__INIT;
		Xmtp__Mls__Api__V1__SubscribeResponse__V1 v1 =
			XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__INIT;
		Xmtp__Mls__Api__V1__SubscribeResponse__V1__Messages body =
			XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__MESSAGES__INIT;

		if (framer->kind == FRAME_GROUP)
		{
			body.n_group_messages = framer->n;
			body.group_messages = (Xmtp__Mls__Api__V1__GroupMessage **) framer->messages;
		}
		else
		{
			body.n_welcome_messages = framer->n;
			body.welcome_messages = (Xmtp__Mls__Api__V1__WelcomeMessage **) framer->messages;
		}
		body.mutate_id = framer->mutate_id;
		v1.response_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_MESSAGES;
		v1.messages = &body;
		/* cppcheck-suppress unreadVariable ; packing reads it through .base */
		frame.version_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__VERSION_V1;
		frame.v1 = &v1;
		out->bytes = PbPackToBytea(&frame.base);
	}
	if (VARSIZE(out->bytes) - VARHDRSZ != expected)
		elog(ERROR, "frame of %u bytes, computed " UINT64_FORMAT,
			 (unsigned) (VARSIZE(out->bytes) - VARHDRSZ), expected);
	out->messages = framer->n;
	out->last_node = framer->last_node;
	out->last_position = framer->last_position;
	framer->n = 0;
	framer->body = 0;
	MemoryContextReset(framer->cxt);
}

/*
 * Adds a row. When it does not fit the frame being built, that frame is
 * finished into *out first (true) and the row starts the next one.
 */
bool
FramerAdd(Framer *framer, Datum *values, bool *nulls, Frame *out)
{
	uint64		size = FramerItem(framer, values, nulls);
	bool		finished = false;

	if (framer->n > 0 &&
		FrameSize(framer->body + DelimitedSize(size), framer->mutate_id) > (uint64) framer->max_bytes)
	{
		FramerPack(framer, out);
		size = FramerItem(framer, values, nulls);	/* the reset took it along */
		finished = true;
	}
	framer->n++;
	framer->body += DelimitedSize(size);
	if (framer->kind == FRAME_ENVELOPE)
	{
		framer->last_node = DatumGetInt32(values[ENVELOPE_NODE]);
		framer->last_position = DatumGetInt64(values[ENVELOPE_SEQUENCE]);
	}
	else
		framer->last_position = DatumGetInt64(values[0]);
	if (framer->n == 1 && FrameSize(framer->body, framer->mutate_id) > (uint64) framer->max_bytes)
		ereport(WARNING,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("message %s" INT64_FORMAT " takes a frame of " UINT64_FORMAT " bytes, over max_frame_bytes %d",
						framer->kind == FRAME_ENVELOPE ? psprintf("%d:", framer->last_node) : "",
						framer->last_position,
						FrameSize(framer->body, framer->mutate_id), framer->max_bytes),
				 errdetail("A message is never split: it is sent in a frame of its own.")));
	return finished;
}

/* Finishes the last frame into *out; false when no message is pending. */
bool
FramerFinish(Framer *framer, Frame *out)
{
	if (framer->n == 0)
		return false;
	FramerPack(framer, out);
	return true;
}

/*
 * Opens a wave of `kind` from the wave arguments of fcinfo (see WaveOpen and
 * WaveRunBegin), the source at source_arg (d14n: the blob source after it).
 */
FrameWave *
FrameWaveOpen(FunctionCallInfo fcinfo, FrameKind kind, int source_arg, int64 row_goal)
{
	FrameWave  *wave = palloc0(sizeof(FrameWave));

	wave->kind = kind;
	if (kind == FRAME_ENVELOPE)
		wave->d14n = WaveRunBegin(fcinfo, row_goal > 0 ? row_goal : -1, source_arg);
	else
		wave->v3 = WaveOpen(fcinfo, kind == FRAME_GROUP ? &WaveV3GroupSource
							: &WaveV3WelcomeSource, source_arg, row_goal);
	return wave;
}

/* The wave's next row in the kind's column layout; false at its end. */
bool
FrameWaveNext(FrameWave *wave, Datum *values, bool *nulls)
{
	if (wave->done)
		return false;
	if (wave->d14n ? WaveRunNext(wave->d14n, values, nulls)
		: WaveNext(wave->v3, values, nulls))
		return true;
	wave->done = true;
	return false;
}

/* Releases the wave's scans, relations and snapshot. */
void
FrameWaveClose(FrameWave *wave)
{
	if (wave->d14n)
		WaveRunEnd(wave->d14n);
	else if (wave->v3)
		WaveClose(wave->v3);
	wave->d14n = NULL;
	wave->v3 = NULL;
	wave->done = true;
}

/*
 * The next frame of a wave read up to *budget rows (-1: no limit), counting
 * them off; false when the rows (or the budget) ran out and no frame is left.
 */
bool
FrameNextFromWave(Framer *framer, FrameWave *wave, int64 *budget, Frame *out)
{
	Datum		values[FRAME_MAX_COLS];
	bool		nulls[FRAME_MAX_COLS];

	while (*budget != 0 && FrameWaveNext(wave, values, nulls))
	{
		if (*budget > 0)
			(*budget)--;
		CHECK_FOR_INTERRUPTS();
		if (FramerAdd(framer, values, nulls, out))
			return true;
	}
	return FramerFinish(framer, out);
}

/*
 * A mutate_id argument: a wave's must be positive (0 tags the live lane),
 * a CatchupComplete's may be 0; never negative.
 */
uint64
FrameArgMutateId(FunctionCallInfo fcinfo, int argno, bool wave)
{
	int64		v;

	ArgRequire(fcinfo, argno, "mutate_id");
	v = PG_GETARG_INT64(argno);
	if (v < 0 || (wave && v == 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"mutate_id\" must be %s", wave ? "positive" : "non-negative"),
				 errdetail("It is " INT64_FORMAT ".", v),
				 wave ? errhint("mutate_id 0 tags the live lane; a wave is tagged with its Mutate's nonzero id.") : 0));
	return (uint64) v;
}

/*
 * The kind argument of xip83.wave_open and xip83.live_frames: 'group' or
 * 'welcome' with the v3 arguments, 'envelope' with the d14n ones.
 */
FrameKind
FrameArgKind(FunctionCallInfo fcinfo, int argno, bool d14n)
{
	char	   *kind;

	ArgRequire(fcinfo, argno, "kind");
	kind = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (!d14n && strcmp(kind, "group") == 0)
		return FRAME_GROUP;
	if (!d14n && strcmp(kind, "welcome") == 0)
		return FRAME_WELCOME;
	if (d14n && strcmp(kind, "envelope") == 0)
		return FRAME_ENVELOPE;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid kind \"%s\" for the %s arguments", kind, d14n ? "d14n" : "v3"),
			 errhint(d14n ? "The d14n arguments (node ids and sequence ids) go with kind 'envelope'."
					 : "The v3 arguments go with kind 'group' or 'welcome'; 'envelope' takes the d14n ones.")));
	return FRAME_GROUP;			/* keep compiler quiet */
}

/* The max_frame_bytes argument: positive. */
int32
FrameArgMaxBytes(FunctionCallInfo fcinfo, int argno)
{
	int32		v;

	ArgRequire(fcinfo, argno, "max_frame_bytes");
	v = PG_GETARG_INT32(argno);
	if (v < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"max_frame_bytes\" must be positive"),
				 errdetail("It is %d.", v)));
	return v;
}

/* A frame as a result row: (frame, messages, last_id) or, d14n,
 * (frame, messages, last_node_id, last_sequence_id). */
HeapTuple
FrameTuple(TupleDesc desc, FrameKind kind, const Frame *frame)
{
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};
	int			i = 0;

	values[i++] = PointerGetDatum(frame->bytes);
	values[i++] = Int32GetDatum(frame->messages);
	if (kind == FRAME_ENVELOPE)
		values[i++] = Int32GetDatum(frame->last_node);
	values[i++] = Int64GetDatum(frame->last_position);
	Assert(i == desc->natts);
	return heap_form_tuple(desc, values, nulls);
}

/* Appends a frame to a materialized result and frees its bytes. */
void
FramePut(FunctionCallInfo fcinfo, FrameKind kind, const Frame *frame)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HeapTuple	tuple = FrameTuple(rsinfo->setDesc, kind, frame);

	tuplestore_puttuple(rsinfo->setResult, tuple);
	heap_freetuple(tuple);
	pfree(frame->bytes);
}

/* A frame stream's state across calls. */
typedef struct FrameStream
{
	FrameWave  *wave;
	Framer	   *framer;
} FrameStream;

/* Releases a frame stream when its query stops reading before the end. */
static void
FrameStreamShutdown(Datum arg)
{
	FrameStream *stream = (FrameStream *) DatumGetPointer(arg);

	if (stream->wave != NULL)
		FrameWaveClose(stream->wave);
	stream->wave = NULL;
}

/*
 * A whole wave as frames, one frame per call (value per call), for the
 * *_wave_stream cursors: mutate_id at mutate_arg, then max_frame_bytes, then
 * the source(s).
 */
static Datum
WaveFramesRows(FunctionCallInfo fcinfo, FrameKind kind, int mutate_arg)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	FuncCallContext *funcctx;
	FrameStream *stream;
	Frame		frame;
	int64		budget = -1;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext old;

		funcctx = WaveRowsFirstCall(fcinfo, &old);
		stream = palloc0(sizeof(FrameStream));
		stream->framer = FramerBegin(kind, FrameArgMutateId(fcinfo, mutate_arg, true),
									 FrameArgMaxBytes(fcinfo, mutate_arg + 1));
		stream->wave = FrameWaveOpen(fcinfo, kind, mutate_arg + 2, 0);
		funcctx->user_fctx = stream;
		RegisterExprContextCallback(rsinfo->econtext, FrameStreamShutdown,
									PointerGetDatum(stream));
		MemoryContextSwitchTo(old);
	}
	funcctx = SRF_PERCALL_SETUP();
	stream = (FrameStream *) funcctx->user_fctx;
	if (stream->wave != NULL && FrameNextFromWave(stream->framer, stream->wave, &budget, &frame))
		SRF_RETURN_NEXT(funcctx,
						HeapTupleGetDatum(FrameTuple(funcctx->tuple_desc, kind, &frame)));
	UnregisterExprContextCallback(rsinfo->econtext, FrameStreamShutdown, PointerGetDatum(stream));
	FrameStreamShutdown(PointerGetDatum(stream));
	SRF_RETURN_DONE(funcctx);
}

/* 0.1.0's group_wave_frames_rows: a whole group wave as frames, one per call. */
Datum
group_wave_frames_rows(PG_FUNCTION_ARGS)
{
	return WaveFramesRows(fcinfo, FRAME_GROUP, 4);
}

/* 0.1.0's welcome_wave_frames_rows */
Datum
welcome_wave_frames_rows(PG_FUNCTION_ARGS)
{
	return WaveFramesRows(fcinfo, FRAME_WELCOME, 4);
}

/* 0.1.0's envelope_wave_frames_rows */
Datum
envelope_wave_frames_rows(PG_FUNCTION_ARGS)
{
	return WaveFramesRows(fcinfo, FRAME_ENVELOPE, 7);
}

/*
 * One page of a wave as frames: the page's rows (at most page_limit), as the
 * wave scan returns them, in frames of at most max_frame_bytes. With the
 * limit NULL, the whole wave one frame per call, as the scans stream rows.
 */
static Datum
WaveFramesPage(FunctionCallInfo fcinfo, FrameKind kind)
{
	bool		d14n = kind == FRAME_ENVELOPE;
	int			first = d14n ? 7 : 4;	/* page_limit, mutate_id, max_frame_bytes, source */
	int64		budget;
	uint64		mutate_id;
	int32		max_bytes;
	FrameWave  *wave;
	Framer	   *framer;
	Frame		frame;

	if (PG_ARGISNULL(first))
		return WaveFramesRows(fcinfo, kind, first + 1);
	budget = ArgGetPageLimit(fcinfo, first, d14n ? "row_limit" : "page_limit");
	mutate_id = FrameArgMutateId(fcinfo, first + 1, true);
	max_bytes = FrameArgMaxBytes(fcinfo, first + 2);
	InitMaterializedSRF(fcinfo, 0);
	wave = FrameWaveOpen(fcinfo, kind, first + 3, budget);
	framer = FramerBegin(kind, mutate_id, max_bytes);
	while (FrameNextFromWave(framer, wave, &budget, &frame))
		FramePut(fcinfo, kind, &frame);
	FramerEnd(framer);
	FrameWaveClose(wave);
	return (Datum) 0;
}

/* xip83.group_wave_scan(..., page_limit, mutate_id, max_frame_bytes, source) */
Datum
group_wave_frames(PG_FUNCTION_ARGS)
{
	return WaveFramesPage(fcinfo, FRAME_GROUP);
}

/* xip83.welcome_wave_scan(..., page_limit, mutate_id, max_frame_bytes, source) */
Datum
welcome_wave_frames(PG_FUNCTION_ARGS)
{
	return WaveFramesPage(fcinfo, FRAME_WELCOME);
}

/* xip83.envelope_wave_scan(..., row_limit, mutate_id, max_frame_bytes, source, blob_source) */
Datum
envelope_wave_frames(PG_FUNCTION_ARGS)
{
	return WaveFramesPage(fcinfo, FRAME_ENVELOPE);
}
