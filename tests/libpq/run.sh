#!/usr/bin/env bash
# Runs libpq test programs and t_*.sh scripts (make installcheck-libpq): one
# program, one test, exit 0 passes. Each gets a fresh database xip83_libpq with the extension on
# the server at PGHOST/PGPORT (psql and pg_isready from PATH). Tests that
# restart or stop the server do it through XIP83_PGCTL (a pg_ctl wrapper,
# tests/driver.sh writes one); a server left down is started again through it.
# Python tests (tests/grpc/t_*.py: the gateway and its gRPC transport) run
# under /usr/bin/python3 (Debian's grpcio and h2): the transport's with no
# database, the gateway's (t_gateway_*.py) with a fresh one like the others,
# and so the browser tests (tests/browser/t_browser_*.py).
set -uo pipefail
passed=0 failed=0
# Counts one test by its exit status and prints its line.
report() {
	if [ "$2" = 0 ]; then
		passed=$((passed + 1)); echo "test $1 ... ok"
	else
		failed=$((failed + 1)); echo "test $1 ... FAILED (exit $2)"
	fi
}
for t in "$@"; do
	[ -x "$t" ] || [ "${t%.py}" != "$t" ] || continue
	name=$(basename "$t" .sh)
	case "$name" in t_gateway_*.py|t_browser_*.py) ;; *.py)
		timeout "${XIP83_TEST_TIMEOUT:-900}" /usr/bin/python3 "$t"
		report "$name" $?
		continue ;;
	esac
	PGOPTIONS="-c client_min_messages=warning" psql -X -q -d postgres -v ON_ERROR_STOP=1 \
		-c "DROP DATABASE IF EXISTS xip83_libpq" -c "CREATE DATABASE xip83_libpq" >/dev/null \
		&& psql -X -q -d xip83_libpq -v ON_ERROR_STOP=1 -c "CREATE EXTENSION xip83" >/dev/null \
		|| { echo "test $name ... FAILED (no fresh database)"; failed=$((failed + 1)); continue; }
	if [ "${t%.py}" != "$t" ]; then
		PGDATABASE=xip83_libpq timeout "${XIP83_TEST_TIMEOUT:-900}" /usr/bin/python3 "$t"
	else
		PGDATABASE=xip83_libpq timeout "${XIP83_TEST_TIMEOUT:-900}" "$t"
	fi
	report "$name" $?
	# a test that left the server down must not take the others with it
	if ! pg_isready -q && [ -n "${XIP83_PGCTL:-}" ]; then
		"$XIP83_PGCTL" start >/dev/null
	fi
done
echo "libpq: $passed passed, $failed failed"
[ "$failed" = 0 ]
