#!/usr/bin/env bash
# cppcheck over include/, src/ and client/ (the extension and the client library), with the
# PostgreSQL include paths: `make cppcheck` or `bash tests/cppcheck.sh`.
# Exits 1 on any finding. Takes about a minute on two cores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PG_CONFIG=${PG_CONFIG:-pg_config}
PGINC_SERVER=$($PG_CONFIG --includedir-server)
PGINC=$($PG_CONFIG --includedir)

# the generated protobuf-c headers the sources include
for p in $(find proto -name '*.proto'); do
	h=build/${p%.proto}.pb-c.h
	make -s PG_CONFIG="$PG_CONFIG" "$h" >/dev/null
done

# One configuration: gcc on x86-64, as we build. Without -D cppcheck tries
# every #ifdef combination of the PostgreSQL headers (over ten minutes here).
#
# PROTOBUF_C_VERSION_NUMBER: the generated headers check it against
# <protobuf-c/protobuf-c.h>; system headers are not given to cppcheck (below),
# so it is defined here from the installed header.
protobuf_version=$(awk '/define PROTOBUF_C_VERSION_NUMBER/ { print $3; exit }' \
	/usr/include/protobuf-c/protobuf-c.h)

# Suppressions:
#   missingIncludeSystem  libc and other system headers are not parsed: they
#                         slow cppcheck down and are not ours to check
#   *:$PGINC_SERVER/*     findings inside PostgreSQL's headers (e.g. its
#                         Assert-then-dereference in pg_list.h) are not ours
#   *:build/proto/*       protoc-c's generated code is never edited
#   shadowFunction        utils/fmgrprotos.h declares a C function for every
#                         built-in SQL function (now, int4, textin, ...): a
#                         local `now`, idiomatic in PostgreSQL, "shadows" one
cppcheck --error-exitcode=1 -q -j2 --std=c11 \
	--enable=warning,style,performance,portability \
	--max-configs=1 -D__GNUC__=12 -D__x86_64__ \
	-DPROTOBUF_C_VERSION_NUMBER="$protobuf_version" \
	-I include -I src -I client -I client/grpc -I client/http -I build/proto -I "$PGINC_SERVER" -I "$PGINC" \
	--suppress=missingIncludeSystem \
	--suppress="*:$PGINC_SERVER/*" \
	--suppress="*:build/proto/*" \
	--suppress=shadowFunction \
	--inline-suppr \
	include src client
echo "cppcheck: include/, src/ and client/ clean"
