#!/usr/bin/env bash
# The gateway's parsers (tests/fuzz/fuzz_gateway.c), from their seeds
# (tests/fuzz/corpus/fuzz_gateway: valid requests and frames of every kind,
# and their truncations): see lib/fuzz_replay.sh.
exec bash "$(dirname "${BASH_SOURCE[0]}")/lib/fuzz_replay.sh" fuzz_gateway
