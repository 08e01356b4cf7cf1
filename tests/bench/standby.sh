#!/usr/bin/env bash
# Runs tests/bench/standby.pl (a primary, a streaming standby and shard
# databases made by PostgreSQL's TAP test modules) against a private install
# of this checkout, as a user that may run the server. Numbers go to stderr.
#   bash tests/bench/standby.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
RUN=${XIP83_RUNDIR:-/tmp/xip83-bench-standby-$(id -u)}
BIN=$($PG_CONFIG --bindir)
inst=$RUN/inst
mkdir -p "$inst"
for d in "$BIN" "$($PG_CONFIG --sharedir)" "$($PG_CONFIG --pkglibdir)"; do
	mkdir -p "$inst$d" && cp -a "$d/." "$inst$d/"
done
make -C "$top" -s -j2 PG_CONFIG="$PG_CONFIG" >/dev/null
make -C "$top" -s PG_CONFIG="$PG_CONFIG" install DESTDIR="$inst" >/dev/null
perl_lib=$($PG_CONFIG --pkglibdir)/pgxs/src/test/perl
run() { env PATH="$inst$BIN:$PATH" TESTDIR="$RUN" PG_REGRESS=true prove -I "$perl_lib" "$top/tests/bench/standby.pl"; }
if [ "$(id -u)" = 0 ]; then
	user=$(id -un postgres 2>/dev/null || echo xip83)
	chown -R "$user" "$RUN"
	cd "$RUN" && runuser -u "$user" -- env PATH="$inst$BIN:$PATH" TESTDIR="$RUN" PG_REGRESS=true \
		prove -I "$perl_lib" "$top/tests/bench/standby.pl"
else
	cd "$RUN" && run
fi
