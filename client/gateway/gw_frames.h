/*
 * gw_frames.h: what the gateway does with the session engine's bytes at the
 * protobuf wire level, without decoding them into objects:
 *
 * - counts the rows of a SubscribeResponse frame (metrics);
 * - turns SubscribeResponse frames into the responses of the
 *   server-streaming RPCs: MlsApi/SubscribeGroupMessages and
 *   SubscribeWelcomeMessages send each GroupMessage / WelcomeMessage alone;
 *   QueryApi/SubscribeTopics sends SubscribeTopicsResponse (envelopes, and
 *   status updates STARTED and CATCHUP_COMPLETE); the rest of the Subscribe
 *   stream's control frames have no counterpart there and are dropped;
 * - turns a server-streaming request's filters into the one SubscribeRequest
 *   Mutate the engine replays them with (a filter and an add have the same
 *   fields; a v3 filter's group id or installation key gains its kind byte).
 */
#ifndef XIP83_GW_FRAMES_H
#define XIP83_GW_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum GwMethodKind
{
	GW_SUBSCRIBE,				/* bidirectional, the frames as they are */
	GW_GROUP_MESSAGES,			/* server streams */
	GW_WELCOME_MESSAGES,
	GW_TOPICS
} GwMethodKind;

/* Sends one gRPC message; false when it could not be queued. */
typedef bool (*GwSendFn) (void *arg, const unsigned char *msg, size_t len);

/* Rows (messages, welcomes or envelopes) in a SubscribeResponse frame. */
extern size_t gw_frame_rows(const unsigned char *frame, size_t len);

/*
 * Sends a SubscribeResponse frame as the responses of a server-streaming
 * method; false when a send failed or the frame is malformed.
 */
extern bool gw_frame_translate(GwMethodKind kind, const unsigned char *frame, size_t len,
							   GwSendFn send, void *arg);

/*
 * A server-streaming request as a SubscribeRequest of one Mutate
 * (mutate_id 1) adding every filter: malloc'd into *out. NULL, or the
 * status ("INVALID_ARGUMENT" when the request is malformed by pb_check.h's
 * rules, "RESOURCE_EXHAUSTED") with why in err.
 */
extern const char *gw_filters_request(GwMethodKind kind, const unsigned char *msg, size_t len,
									  unsigned char **out, size_t *out_len, char *err,
									  size_t err_len);

#endif
