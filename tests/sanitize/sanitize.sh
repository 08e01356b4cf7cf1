# tests/sanitize/sanitize.sh: AddressSanitizer + UBSan runs, sourced by tests/driver.sh.
#
#   XIP83_SANITIZE=1 bash tests/driver.sh check
#
# builds the extension and the libpq programs with `make SANITIZE=1`, starts
# every server of the run with the ASan runtime preloaded (the server binary
# itself is not instrumented, the extension is), and fails the run on any
# sanitizer report in the server log. The libpq programs are instrumented
# executables: a report aborts them and the driver counts them failed.
#
# Without XIP83_SANITIZE=1 it only makes sure a plain run does not reuse
# objects built with the sanitizers (PGXS keeps src/*/*.o beside the sources and
# does not track flags).
#
# Sourced after the driver's functions are defined; it wraps build,
# cluster_init, cluster_stop and run_target and changes nothing else.

SANITIZE_STAMP=build/.sanitized

if [ "${XIP83_SANITIZE:-0}" != 1 ]; then
	if [ -f "$SANITIZE_STAMP" ]; then
		log "removing objects built with sanitizers"
		make -s clean >/dev/null 2>&1
	fi
	return 0
fi

SANITIZE_ASAN_LIB=$(gcc -print-file-name=libasan.so)
[ -f "$SANITIZE_ASAN_LIB" ] || die "no ASan runtime: $SANITIZE_ASAN_LIB"
# abort_on_error: a report ends the process like a crash, so a backend's report
# also shows as a lost connection. detect_leaks=0: the server frees by memory
# context and exits without freeing; its "leaks" are noise.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:print_stacktrace=1:detect_stack_use_after_return=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

build() {
	if [ ! -f "$SANITIZE_STAMP" ]; then
		log "removing objects built without sanitizers"
		make -s clean >/dev/null 2>&1
	fi
	mkdir -p build && touch "$SANITIZE_STAMP"
	log "building with SANITIZE=1"
	make -s -j2 PG_CONFIG="$PG_CONFIG" SANITIZE=1 all test-programs >"$RUN/build.log" 2>&1 \
		|| { cat "$RUN/build.log"; die "sanitizer build failed"; }
	# temp_install's `make install` must see the same flags
	export SANITIZE=1
	# see asan_first.c: without it the preloaded server hangs at start
	gcc -shared -fPIC -O2 -Wall -Wextra -Werror \
		-Wl,--version-script=tests/sanitize/asan_first.map \
		-o "$RUN/asan_first.so" tests/sanitize/asan_first.c || die "asan_first.so failed"
}

SANITIZE_PRELOAD="$SANITIZE_ASAN_LIB:$RUN/asan_first.so"

# Every start of the server, the tests' restarts included, goes through the
# pgctl helper: preload the runtime there.
eval "sanitize_plain_$(declare -f cluster_init)"
cluster_init() {
	sanitize_plain_cluster_init
	sed -i "2i export LD_PRELOAD='$SANITIZE_PRELOAD' ASAN_OPTIONS='$ASAN_OPTIONS' UBSAN_OPTIONS='$UBSAN_OPTIONS'" \
		"$RUN/pgctl"
	rm -f "$SERVER_LOG"			# reports of an earlier run are not this run's
}

# Counts the sanitizer reports in server logs as failures, showing where they are.
sanitize_scan() {
	local label=$1 n
	shift
	n=$(cat "$@" 2>/dev/null | grep -c -E 'ERROR: AddressSanitizer|runtime error:')
	if [ "$n" != 0 ]; then
		echo "sanitizer reports in $label:"
		grep -E -A 12 'ERROR: AddressSanitizer|runtime error:' "$@" 2>/dev/null | head -n 80
		FAILED=$((FAILED + n)); FAILED_NAMES+=("sanitizer ($n reports in $label)")
	else
		log "no sanitizer reports in $label"
	fi
}

eval "sanitize_plain_$(declare -f cluster_stop)"
cluster_stop() {
	local was=${STARTED:-0}
	sanitize_plain_cluster_stop
	[ "$was" = 1 ] && [ -f "$SERVER_LOG" ] && sanitize_scan "the server log" "$SERVER_LOG"
	return 0
}

# TAP tests start their own servers from the private install: every process
# of the run gets the runtime (asan_first.so keeps psql and the server binaries
# from hanging at start), and their server logs are scanned.
eval "sanitize_plain_$(declare -f run_target)"
run_target() {
	[ "$2" = installcheck-tap ] || { sanitize_plain_run_target "$@"; return; }
	rm -rf "$RUN/src/tmp_check" "$top/tmp_check"
	LD_PRELOAD="$SANITIZE_PRELOAD" sanitize_plain_run_target "$@"
	sanitize_scan "the TAP servers' logs" "$RUN"/src/tmp_check/log/*.log "$top"/tmp_check/log/*.log
}
