#!/usr/bin/env bash
# Runs libpq test programs and t_*.sh scripts (make installcheck-libpq): one
# program, one test, exit 0 passes. Each gets a fresh database xip83_libpq with the extension on
# the server at PGHOST/PGPORT (psql and pg_isready from PATH). Tests that
# restart or stop the server do it through XIP83_PGCTL (a pg_ctl wrapper,
# tests/driver.sh writes one); a server left down is started again through it.
set -uo pipefail
passed=0 failed=0
for t in "$@"; do
	[ -x "$t" ] || continue
	name=$(basename "$t" .sh)
	PGOPTIONS="-c client_min_messages=warning" psql -X -q -d postgres -v ON_ERROR_STOP=1 \
		-c "DROP DATABASE IF EXISTS xip83_libpq" -c "CREATE DATABASE xip83_libpq" >/dev/null \
		&& psql -X -q -d xip83_libpq -v ON_ERROR_STOP=1 -c "CREATE EXTENSION xip83" >/dev/null \
		|| { echo "test $name ... FAILED (no fresh database)"; failed=$((failed + 1)); continue; }
	PGDATABASE=xip83_libpq timeout "${XIP83_TEST_TIMEOUT:-900}" "$t"
	rc=$?
	if [ $rc = 0 ]; then
		passed=$((passed + 1)); echo "test $name ... ok"
	else
		failed=$((failed + 1)); echo "test $name ... FAILED (exit $rc)"
	fi
	# a test that left the server down must not take the others with it
	if ! pg_isready -q && [ -n "${XIP83_PGCTL:-}" ]; then
		"$XIP83_PGCTL" start >/dev/null
	fi
done
echo "libpq: $passed passed, $failed failed"
[ "$failed" = 0 ]
