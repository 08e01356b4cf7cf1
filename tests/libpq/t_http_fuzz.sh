#!/usr/bin/env bash
# The gateway's HTTP/1.1 and WebSocket glue (tests/fuzz/fuzz_http.c), from
# their seeds (tests/fuzz/corpus/fuzz_http: requests, gRPC-Web bodies,
# Upgrades followed by WebSocket frames, base64 and CORS lists): see
# lib/fuzz_replay.sh.
exec bash "$(dirname "${BASH_SOURCE[0]}")/lib/fuzz_replay.sh" fuzz_http
