#!/usr/bin/env bash
# The xip83 test driver: one entry point for a fresh machine, as root or not.
#
#   bash tests/driver.sh check    build, temp-install, throwaway cluster, every test
#   bash tests/driver.sh demo     build, make install, throwaway cluster, the main job
#   bash tests/driver.sh bench [NAME [ARGS]]  build, temp-install, throwaway cluster, tests/bench
#   bash tests/driver.sh shell    a throwaway cluster left running for hand work
#
# PostgreSQL refuses to run as root, so as root the server runs as the
# `postgres` system user (created as `xip83` when absent); clients connect over
# a Unix socket as role postgres. Nothing listens on TCP, so several checkouts
# can test side by side. The cluster is stopped on every exit path.
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
mode=${1:-check}

log() { printf '== %s\n' "$*" >&2; }
die() { printf 'driver: %s\n' "$*" >&2; exit 2; }

# ------------------------------------------------------------------ deps
# What a fresh Debian machine lacks, installed only when missing.
PG_MAJOR=${PG_MAJOR:-15}
need_pkgs() {
	local missing=()
	command -v pg_config >/dev/null && [ -d "/usr/include/postgresql/$PG_MAJOR/server" ] \
		|| missing+=("postgresql-server-dev-$PG_MAJOR")
	[ -x "/usr/lib/postgresql/$PG_MAJOR/bin/postgres" ] || missing+=("postgresql-$PG_MAJOR")
	[ -f /usr/include/postgresql/libpq-fe.h ] || missing+=(libpq-dev)
	[ -f /usr/include/protobuf-c/protobuf-c.h ] || missing+=(libprotobuf-c-dev)
	command -v protoc-c >/dev/null || missing+=(protobuf-c-compiler)
	# protoc --decode checks our frames independently (tests/libpq/t_frames.c)
	command -v protoc >/dev/null || missing+=(protobuf-compiler)
	# the libFuzzer harness over the decoders (tests/fuzz, t_frames_fuzz)
	command -v clang >/dev/null || missing+=(clang)
	command -v pkg-config >/dev/null || missing+=(pkg-config)
	command -v make >/dev/null || missing+=(make)
	command -v gcc >/dev/null || missing+=(gcc)
	command -v runuser >/dev/null || missing+=(util-linux)
	printf '%s\n' "${missing[@]}"
}
install_deps() {
	local pkgs
	pkgs=$(need_pkgs)
	[ -z "$pkgs" ] && return 0
	[ "$(id -u)" = 0 ] || die "missing packages (install as root): $pkgs"
	log "installing: $(echo $pkgs)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null || die "apt-get update failed"
	# shellcheck disable=SC2086
	apt-get install -y -q --no-install-recommends $pkgs >/dev/null || die "apt-get install failed"
}

# ------------------------------------------------------------------ paths
install_deps
export PATH="/usr/lib/postgresql/$PG_MAJOR/bin:$PATH"
PG_CONFIG=$(command -v pg_config)
PG_BINDIR=$($PG_CONFIG --bindir)
PG_SHAREDIR=$($PG_CONFIG --sharedir)
PG_PKGLIBDIR=$($PG_CONFIG --pkglibdir)
PGXS_DIR=$(dirname "$($PG_CONFIG --pgxs)")/../..
# Runtime state lives outside the checkout, so the server user can reach it
# whatever the checkout's permissions; one directory per checkout.
RUN=${XIP83_RUNDIR:-/tmp/xip83-$(printf '%s' "$top" | cksum | cut -d' ' -f1)}
mkdir -p "$RUN"
chmod 755 "$RUN"

if [ "$(id -u)" = 0 ]; then
	if id postgres >/dev/null 2>&1; then SERVER_USER=postgres; else
		id xip83 >/dev/null 2>&1 || useradd --system --no-create-home xip83 || die "useradd failed"
		SERVER_USER=xip83
	fi
	as_server() { runuser -u "$SERVER_USER" -- "$@"; }
else
	SERVER_USER=$(id -un)
	as_server() { "$@"; }
fi

# ------------------------------------------------------------------ build
build() {
	log "building"
	make -s -j2 PG_CONFIG="$PG_CONFIG" all >"$RUN/build.log" 2>&1 \
		|| { cat "$RUN/build.log"; die "build failed"; }
}

# A private copy of the server, with this checkout's build installed into it
# (as PostgreSQL's own `make check` does): the server finds its share and lib
# directories relative to its binary, so the copy sees only our files.
temp_install() {
	local inst=$RUN/inst
	if [ ! -x "$inst$PG_BINDIR/postgres" ] || [ "$PG_BINDIR/postgres" -nt "$inst$PG_BINDIR/postgres" ]; then
		log "temp install in $inst"
		rm -rf "$inst"
		mkdir -p "$inst$PG_BINDIR" "$inst$PG_SHAREDIR" "$inst$PG_PKGLIBDIR"
		cp -a "$PG_BINDIR/." "$inst$PG_BINDIR/"
		cp -a "$PG_SHAREDIR/." "$inst$PG_SHAREDIR/"
		cp -a "$PG_PKGLIBDIR/." "$inst$PG_PKGLIBDIR/"
	fi
	make -s PG_CONFIG="$PG_CONFIG" install DESTDIR="$inst" >>"$RUN/build.log" 2>&1 \
		|| { cat "$RUN/build.log"; die "install into $inst failed"; }
	BINDIR=$inst$PG_BINDIR
}

# ------------------------------------------------------------------ cluster
DATA=$RUN/data
SOCK=$RUN/sock
PORT=5432
SERVER_LOG=$RUN/server.log

# Extra settings for the cluster come from tests/cluster.conf and, for one mode,
# tests/cluster-<mode>.conf.
cluster_init() {
	log "initdb in $DATA (server user $SERVER_USER)"
	rm -rf "$DATA" "$SOCK"
	mkdir -p "$DATA" "$SOCK"
	chown "$SERVER_USER" "$DATA" "$SOCK" "$RUN"
	chmod 700 "$DATA"
	as_server "$BINDIR/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 --locale=C \
		>"$RUN/initdb.log" 2>&1 || { cat "$RUN/initdb.log"; die "initdb failed"; }
	{
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$SOCK'"
		echo "port = $PORT"
		echo "shared_preload_libraries = 'xip83'"
		echo "timezone = 'UTC'"
		echo "log_timezone = 'UTC'"
		cat tests/cluster.conf
		[ -f "tests/cluster-$mode.conf" ] && cat "tests/cluster-$mode.conf"
	} >>"$DATA/postgresql.conf"
	# A helper for tests that restart or stop the server mid-test.
	cat >"$RUN/pgctl" <<EOF
#!/usr/bin/env bash
$(declare -f as_server)
SERVER_USER=$SERVER_USER
as_server "$BINDIR/pg_ctl" -D "$DATA" -l "$SERVER_LOG" -w -t 60 "\$@"
EOF
	chmod 755 "$RUN/pgctl"
}

cluster_start() {
	log "starting server"
	"$RUN/pgctl" start >/dev/null || { tail -n 30 "$SERVER_LOG"; die "server did not start"; }
	STARTED=1
}

cluster_stop() {
	[ "${STARTED:-0}" = 1 ] || return 0
	"$RUN/pgctl" stop -m fast >/dev/null 2>&1 || "$RUN/pgctl" stop -m immediate >/dev/null 2>&1
	STARTED=0
}
trap cluster_stop EXIT
trap 'cluster_stop; exit 130' INT TERM

export PGHOST=$SOCK PGPORT=$PORT PGUSER=postgres PGTZ=UTC PGAPPNAME=xip83-tests
export XIP83_PGCTL=$RUN/pgctl

fresh_db() {
	PGOPTIONS="-c client_min_messages=warning" "$BINDIR/psql" -X -q -d postgres -v ON_ERROR_STOP=1 \
		-c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1" >/dev/null
	"$BINDIR/psql" -X -q -d "$1" -v ON_ERROR_STOP=1 -c "CREATE EXTENSION xip83" >/dev/null
}

# ------------------------------------------------------------------ tests
PASSED=0
FAILED=0
FAILED_NAMES=()

# Counts pg_regress-style result lines ("name ... ok" / "... FAILED").
count_regress_output() {
	local out=$1 line name
	while IFS= read -r line; do
		case "$line" in
			*" ... ok"*) PASSED=$((PASSED + 1)) ;;
			*" ... FAILED"* | *" ... failed"*)
				FAILED=$((FAILED + 1))
				name=$(printf '%s' "$line" | sed -E 's/^ *(test|permutation)? *//; s/ +\.\.\..*//')
				FAILED_NAMES+=("$name") ;;
		esac
	done <"$out"
}

# Shows a runner's output and counts it; a runner that failed without naming
# a failed test (it could not start) counts as one failure.
step_result() {
	local rc=$1 out=$2 runner=$3 before=$FAILED
	cat "$out"
	count_regress_output "$out"
	if [ "$rc" != 0 ] && [ "$FAILED" = "$before" ]; then
		FAILED=$((FAILED + 1)); FAILED_NAMES+=("$runner (exit $rc)")
	fi
}

run_regress() {
	local tests
	tests=$(ls sql/*.sql 2>/dev/null | xargs -n1 basename 2>/dev/null | sed 's/\.sql$//' | sort)
	[ -n "$tests" ] || return 0
	log "pg_regress: $(echo $tests)"
	rm -rf build/regress && mkdir -p build/regress
	# shellcheck disable=SC2086
	"$PGXS_DIR/src/test/regress/pg_regress" --bindir="$BINDIR" --host="$SOCK" --port="$PORT" \
		--user=postgres --inputdir=. --outputdir=build/regress --dbname=xip83_regress \
		--load-extension=xip83 $tests >build/regress/out.txt 2>&1
	step_result $? build/regress/out.txt pg_regress
	[ -s build/regress/regression.diffs ] && cat build/regress/regression.diffs
	return 0
}

run_isolation() {
	local specs
	specs=$(ls tests/specs/*.spec 2>/dev/null | xargs -n1 basename 2>/dev/null | sed 's/\.spec$//' | sort)
	[ -n "$specs" ] || return 0
	log "isolation: $(echo $specs)"
	rm -rf build/isolation && mkdir -p build/isolation
	# shellcheck disable=SC2086
	"$PGXS_DIR/src/test/isolation/pg_isolation_regress" --bindir="$BINDIR" --host="$SOCK" \
		--port="$PORT" --user=postgres --inputdir=tests --outputdir=build/isolation \
		--dbname=xip83_isolation --load-extension=xip83 $specs >build/isolation/out.txt 2>&1
	step_result $? build/isolation/out.txt pg_isolation_regress
	[ -s build/isolation/regression.diffs ] && cat build/isolation/regression.diffs
	return 0
}

# Each tests/libpq/t_*.c is one program, one test: exit 0 passes. It gets a
# fresh database with the extension and may restart the server via XIP83_PGCTL.
run_libpq() {
	local t name rc
	for t in build/tests/t_*; do
		[ -x "$t" ] || continue
		name=$(basename "$t")
		fresh_db xip83_libpq
		log "libpq: $name"
		PGDATABASE=xip83_libpq timeout "${XIP83_TEST_TIMEOUT:-900}" "$t"
		rc=$?
		if [ $rc = 0 ]; then
			PASSED=$((PASSED + 1)); echo "test $name ... ok"
		else
			FAILED=$((FAILED + 1)); FAILED_NAMES+=("$name"); echo "test $name ... FAILED (exit $rc)"
		fi
		# a test that left the server down must not take the others with it
		"$BINDIR/pg_isready" -q || cluster_start
	done
}

. tests/sanitize/sanitize.sh	# XIP83_SANITIZE=1: ASan + UBSan build and server (see there)

# ------------------------------------------------------------------ modes
case "$mode" in
	check)
		build
		temp_install
		cluster_init
		cluster_start
		run_regress
		run_isolation
		run_libpq
		cluster_stop
		for n in "${FAILED_NAMES[@]}"; do echo "failed: $n"; done
		echo "$PASSED passed, $FAILED failed"
		[ "$FAILED" = 0 ] && [ "$PASSED" -gt 0 ]
		exit $?
		;;
	bench)
		build
		temp_install
		cluster_init
		cluster_start
		fresh_db xip83_bench
		# `bench NAME [ARGS...]` runs one benchmark, with its arguments
		for b in build/bench/${2:-*}; do
			[ -x "$b" ] || continue
			log "bench: $(basename "$b")"
			PGDATABASE=xip83_bench "$b" "${@:3}" || die "benchmark $(basename "$b") failed"
		done
		;;
	demo)
		build
		log "make install into $($PG_CONFIG --pkglibdir)"
		make -s PG_CONFIG="$PG_CONFIG" install >>"$RUN/build.log" 2>&1 \
			|| { cat "$RUN/build.log"; die "make install failed"; }
		BINDIR=$PG_BINDIR
		cluster_init
		cluster_start
		fresh_db xip83_demo
		PGDATABASE=xip83_demo bash tests/demo/run.sh "$BINDIR"
		;;
	shell)
		build
		temp_install
		cluster_init
		cluster_start
		fresh_db xip83_dev
		echo "export PGHOST=$SOCK PGPORT=$PORT PGUSER=postgres PGDATABASE=xip83_dev XIP83_PGCTL=$RUN/pgctl"
		echo "stop with: $RUN/pgctl stop"
		trap - EXIT
		;;
	*)
		die "usage: tests/driver.sh check|demo|bench|shell"
		;;
esac
