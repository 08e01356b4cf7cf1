#!/usr/bin/env bash
# The xip83 test driver: one entry point for a fresh machine, as root or not.
#
#   bash tests/driver.sh check    build, temp-install, throwaway cluster, every test
#   bash tests/driver.sh demo     build, make install, throwaway cluster, the main job
#   bash tests/driver.sh bench [NAME [ARGS]]  build, temp-install, throwaway cluster, tests/bench;
#                                 the figures go to $XIP83_BENCH_OUT (default: bench/ in the
#                                 run directory): performance.md, perf/results.tsv, charts;
#                                 XIP83_BENCH_OUT=docs rewrites the committed ones
#   bash tests/driver.sh shell    a throwaway cluster left running for hand work
#   bash tests/driver.sh package  build the .deb (debian/, pg_buildext), install it,
#                                 CREATE EXTENSION and the pg_regress and isolation
#                                 suites on a fresh cluster of Debian's server, the
#                                 programs on PATH and their man pages, remove it
#
# The server is the one PG_CONFIG names (default: Debian's PostgreSQL
# $PG_MAJOR, 15 unless set, installed when missing). The tests themselves are
# the Makefile's standard targets: installcheck-regress and
# installcheck-isolation (PGXS: sql/, specs/, expected/) and
# installcheck-libpq against this driver's cluster, then installcheck-tap
# (t/*.pl, clusters of their own). What is left here is what PGXS cannot do:
# installing packages, running the server and the TAP tests as an unprivileged
# user, a private install of the server, counting, and the demo.
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
if [ -n "${PG_CONFIG:-}" ]; then
	[ -x "$PG_CONFIG" ] || PG_CONFIG=$(command -v "$PG_CONFIG") || die "PG_CONFIG $PG_CONFIG not found"
	PG_MAJOR=$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
else
	PG_MAJOR=${PG_MAJOR:-15}
	PG_CONFIG=/usr/lib/postgresql/$PG_MAJOR/bin/pg_config
fi
# Debian's own server packages only for a server under /usr/lib/postgresql.
debian_pg() { case "$PG_CONFIG" in /usr/lib/postgresql/*) return 0 ;; esac; return 1; }
need_pkgs() {
	local missing=()
	if debian_pg; then
		[ -x "$PG_CONFIG" ] && [ -d "/usr/include/postgresql/$PG_MAJOR/server" ] \
			|| missing+=("postgresql-server-dev-$PG_MAJOR")
		[ -x "/usr/lib/postgresql/$PG_MAJOR/bin/postgres" ] || missing+=("postgresql-$PG_MAJOR")
	fi
	[ -f /usr/include/postgresql/libpq-fe.h ] || missing+=(libpq-dev)
	[ -f /usr/include/protobuf-c/protobuf-c.h ] || missing+=(libprotobuf-c-dev)
	command -v protoc-c >/dev/null || missing+=(protobuf-c-compiler)
	# protoc --decode checks our frames independently (tests/libpq/t_frames.c)
	command -v protoc >/dev/null || missing+=(protobuf-compiler)
	# the libFuzzer harness over the decoders (tests/fuzz, t_frames_fuzz)
	command -v clang >/dev/null || missing+=(clang)
	# examples/go, built offline against Debian's Go packages (t_node_feed runs it)
	command -v go >/dev/null || missing+=(golang-go)
	[ -d /usr/share/gocode/src/github.com/jackc/pgx/v4 ] || missing+=(golang-github-jackc-pgx-v4-dev)
	# grpc-go, the gateway's server streams tried with another client (tests/grpc/goclient)
	[ -d /usr/share/gocode/src/google.golang.org/grpc ] || missing+=(golang-google-grpc-dev)
	# the gateway's gRPC transport (client/grpc) and its tests (tests/grpc)
	[ -f /usr/include/nghttp2/nghttp2.h ] || missing+=(libnghttp2-dev)
	[ -f /usr/include/openssl/ssl.h ] || missing+=(libssl-dev)
	# browsers' HTTP/1.1 (gRPC-Web) and WebSocket on the same listener (client/http)
	[ -f /usr/include/http_parser.h ] || missing+=(libhttp-parser-dev)
	[ -f /usr/include/wslay/wslay.h ] || missing+=(libwslay-dev)
	command -v openssl >/dev/null || missing+=(openssl)
	/usr/bin/python3 -c 'import grpc' 2>/dev/null || missing+=(python3-grpcio)
	/usr/bin/python3 -c 'import h2, hpack, hyperframe' 2>/dev/null || missing+=(python3-h2)
	command -v pkg-config >/dev/null || missing+=(pkg-config)
	command -v make >/dev/null || missing+=(make)
	command -v gcc >/dev/null || missing+=(gcc)
	command -v runuser >/dev/null || missing+=(util-linux)
	command -v prove >/dev/null || missing+=(perl)
	perl -MIPC::Run -e1 2>/dev/null || missing+=(libipc-run-perl)
	# the browser tests (tests/browser): Chromium driven by puppeteer-core, the
	# client on Node.js, its npm packages by install_npm
	[ -x /usr/bin/chromium ] || missing+=(chromium)
	command -v node >/dev/null || missing+=(nodejs)
	command -v npm >/dev/null || missing+=(npm)
	# the bench run renders docs/performance.md (python3) and its charts (gnuplot)
	[ -x /usr/bin/python3 ] || missing+=(python3)
	if [ "$mode" = bench ]; then command -v gnuplot >/dev/null || missing+=(gnuplot-nox); fi
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

# The npm packages of the browser tests, as tests/browser/package-lock.json
# pins them, into a cache outside the checkout (XIP83_NPM_CACHE), installed
# again only when the lock file changed; no package runs an install script
# (puppeteer-core uses Debian's Chromium, it downloads no browser).
install_npm() {
	local lock=tests/browser/package-lock.json
	if [ -z "${XIP83_NPM_CACHE:-}" ]; then
		if [ "$(id -u)" = 0 ]; then XIP83_NPM_CACHE=/var/cache/xip83/npm
		else XIP83_NPM_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/xip83/npm; fi
	fi
	export XIP83_NPM_CACHE
	cmp -s "$lock" "$XIP83_NPM_CACHE/.xip83-lock" && [ -d "$XIP83_NPM_CACHE/node_modules" ] && return 0
	log "installing the npm packages of tests/browser into $XIP83_NPM_CACHE"
	mkdir -p "$XIP83_NPM_CACHE" || die "cannot create $XIP83_NPM_CACHE"
	rm -f "$XIP83_NPM_CACHE/.xip83-lock"
	cp tests/browser/package.json "$lock" "$XIP83_NPM_CACHE/" || die "cannot write $XIP83_NPM_CACHE"
	npm ci --prefix "$XIP83_NPM_CACHE" --ignore-scripts --no-audit --no-fund --loglevel=error \
		>"$XIP83_NPM_CACHE/install.log" 2>&1 \
		|| { cat "$XIP83_NPM_CACHE/install.log"; die "npm ci failed"; }
	cp "$lock" "$XIP83_NPM_CACHE/.xip83-lock"
}

# ------------------------------------------------------------------ paths
install_deps
case "$mode" in check|shell) install_npm ;; esac
[ -x "$PG_CONFIG" ] || die "no pg_config at $PG_CONFIG"
export PG_CONFIG
PG_BINDIR=$($PG_CONFIG --bindir)
PG_SHAREDIR=$($PG_CONFIG --sharedir)
PG_PKGLIBDIR=$($PG_CONFIG --pkglibdir)
export PATH="$PG_BINDIR:$PATH"
# Runtime state lives outside the checkout, so the server user can reach it
# whatever the checkout's permissions; one directory per checkout and major.
RUN=${XIP83_RUNDIR:-/tmp/xip83-$(printf '%s' "$top" | cksum | cut -d' ' -f1)-pg$PG_MAJOR}
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
# The extension, the tools and the test programs (the test targets build
# them; `make` alone does not).
build() {
	log "building against $PG_CONFIG"
	make -s -j2 PG_CONFIG="$PG_CONFIG" all test-programs >"$RUN/build.log" 2>&1 \
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

# The package's gateway and its systemd unit: both installed, the unit's
# ExecStart naming the installed program, and the unit well-formed
# (systemd-analyze verify on an instance, where systemd-analyze is at hand).
package_gateway_unit() {
	local unit=/lib/systemd/system/xip83-gateway@.service ok=1 tmp
	[ -x "$PG_BINDIR/xip83-gateway" ] || { echo "no $PG_BINDIR/xip83-gateway in the package"; ok=0; }
	[ -f "$unit" ] || { echo "no $unit in the package"; ok=0; }
	if [ "$ok" = 1 ] && ! grep -q "^ExecStart=$PG_BINDIR/xip83-gateway " "$unit"; then
		echo "$unit does not start $PG_BINDIR/xip83-gateway"; ok=0
	fi
	if [ "$ok" = 1 ] && command -v systemd-analyze >/dev/null; then
		tmp=$(mktemp -d)
		cp "$unit" "$tmp/xip83-gateway@check.service"
		if ! out=$(systemd-analyze verify --man=no "$tmp/xip83-gateway@check.service" 2>&1); then
			echo "$out"; ok=0
		fi
		rm -rf "$tmp"
	fi
	if [ "$ok" = 1 ]; then
		PASSED=$((PASSED + 1)); echo "test gateway_unit ... ok"
	else
		FAILED=$((FAILED + 1)); FAILED_NAMES+=(gateway_unit); echo "test gateway_unit ... FAILED"
	fi
}

# The package's programs on a plain PATH (/usr/bin links, not PostgreSQL's
# bindir, which this driver puts first on its own PATH) and their pages where
# man looks by default.
package_on_path() {
	local p got page ok=1
	for p in xip83-tail xip83-session xip83-gateway; do
		got=$(PATH=/usr/local/bin:/usr/bin:/bin command -v "$p")
		if [ "$got" != "/usr/bin/$p" ]; then
			echo "$p on PATH: '${got:-not found}', not /usr/bin/$p"; ok=0
		else
			# runs through the link (--help may exit non-zero: only its usage counts)
			case "$("$got" --help 2>&1)" in
				*"usage: $p"*) ;;
				*) echo "/usr/bin/$p --help prints no usage"; ok=0 ;;
			esac
		fi
		page=$(env -u MANPATH man -w "$p" 2>&1)
		case "$page" in
			/usr/share/man/man1/"$p".1*) ;;
			*) echo "man -w $p: $page"; ok=0 ;;
		esac
	done
	if [ "$ok" = 1 ]; then
		PASSED=$((PASSED + 1)); echo "test programs_on_path ... ok"
	else
		FAILED=$((FAILED + 1)); FAILED_NAMES+=(programs_on_path); echo "test programs_on_path ... FAILED"
	fi
}

# ------------------------------------------------------------------ cluster
DATA=$RUN/data
SOCK=$RUN/sock
PORT=5432
SERVER_LOG=$RUN/server.log

# Settings for the cluster come from tests/xip83.conf (the suites' own) and,
# for one mode, tests/cluster-<mode>.conf.
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
		cat tests/xip83.conf
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
	# Any server program as the server user (a bench's hot standby: pg_basebackup, pg_ctl).
	cat >"$RUN/asserver" <<EOF
#!/usr/bin/env bash
$(declare -f as_server)
SERVER_USER=$SERVER_USER
as_server env PATH="$BINDIR:\$PATH" "\$@"
EOF
	chmod 755 "$RUN/asserver"
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
export XIP83_PGCTL=$RUN/pgctl XIP83_ASSERVER=$RUN/asserver

fresh_db() {
	PGOPTIONS="-c client_min_messages=warning" "$BINDIR/psql" -X -q -d postgres -v ON_ERROR_STOP=1 \
		-c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1" >/dev/null
	"$BINDIR/psql" -X -q -d "$1" -v ON_ERROR_STOP=1 -c "CREATE EXTENSION xip83" >/dev/null
}

# ------------------------------------------------------------------ tests
PASSED=0
FAILED=0
FAILED_NAMES=()

# Counts result lines: pg_regress up to 15 ("test name ... ok" / "... FAILED"),
# pg_regress from 16 ("ok 1 - name" / "not ok 2 - name"), prove ("t/x.pl .. ok"
# per file; a failed file is named in its summary, "t/x.pl (Wstat: ..."),
# tests/libpq/run.sh and tests/house/check_layers.py ("test name ... ok").
count_output() {
	local out=$1 line
	while IFS= read -r line; do
		case "$line" in
			*" ... ok"* | "ok "[0-9]*) PASSED=$((PASSED + 1)) ;;
			*" ... FAILED"* | *" ... failed"* | "not ok "[0-9]*)
				FAILED=$((FAILED + 1))
				FAILED_NAMES+=("$(printf '%s' "$line" | sed -E 's/^ *(test|permutation|not ok [0-9]+ +-)? *//; s/ +(\.\.\.|[0-9]+ ms).*//')") ;;
			t/*.pl\ *.\ ok*) PASSED=$((PASSED + 1)) ;;
			t/*.pl\ *"(Wstat: "*) FAILED=$((FAILED + 1)); FAILED_NAMES+=("${line%% *}") ;;
		esac
	done <"$out"
}

# Runs one make target, shows its output and counts it; a target that failed
# without naming a failed test (it could not start) counts as one failure.
# `as_server` targets run in $RUN/src, a copy of the checkout the server user
# owns: pg_regress and prove write their results beside the tests, and TAP
# clusters cannot run as root.
run_target() {
	local who=$1 target=$2 out=$RUN/$2.out rc before=$FAILED dir=$top
	shift 2
	log "make $target"
	if [ "$who" = as_server ] && [ "$(id -u)" = 0 ]; then
		dir=$RUN/src
		rm -rf "$dir" && mkdir -p "$dir"
		tar -C "$top" --exclude=./.git --exclude=./build --exclude=./results \
			--exclude=./output_iso --exclude=./tmp_check -cf - . | tar -C "$dir" -xf -
		chown -R "$SERVER_USER" "$dir"
		as_server env PATH="$PATH" make -C "$dir" --no-print-directory PG_CONFIG="$PG_CONFIG" \
			bindir="$BINDIR" "$target" "$@" >"$out" 2>&1
	else
		make -C "$dir" --no-print-directory PG_CONFIG="$PG_CONFIG" bindir="$BINDIR" \
			"$target" "$@" >"$out" 2>&1
	fi
	rc=$?
	cat "$out"
	count_output "$out"
	if [ "$rc" != 0 ] && [ "$FAILED" = "$before" ]; then
		FAILED=$((FAILED + 1)); FAILED_NAMES+=("make $target (exit $rc)")
	fi
	for d in "$dir/regression.diffs" "$dir/output_iso/regression.diffs"; do
		[ -s "$d" ] && cat "$d"
	done
	if [ "$target" = installcheck-tap ] && [ "$rc" != 0 ]; then
		for d in "$dir"/tmp_check/log/regress_log_*; do
			[ -f "$d" ] && { echo "--- $d"; tail -n 40 "$d"; }
		done
	fi
	return 0
}

. tests/sanitize/sanitize.sh	# XIP83_SANITIZE=1: ASan + UBSan build and server (see there)

# ------------------------------------------------------------------ modes
case "$mode" in
	check)
		# tests left where the driver used to look would silently not run
		for f in tests/specs/*.spec tests/expected/*.out; do
			[ -e "$f" ] || continue
			FAILED=$((FAILED + 1)); FAILED_NAMES+=("$f: isolation specs belong in specs/, their outputs in expected/")
		done
		build
		temp_install
		# the floors of the source tree (docs/design.md), after the build: it
		# also reads the symbols of the objects
		run_target as_root check-layers
		cluster_init
		cluster_start
		run_target as_server installcheck-regress
		run_target as_server installcheck-isolation
		run_target as_root installcheck-libpq
		cluster_stop
		# TAP tests make their own clusters from the private install
		run_target as_server installcheck-tap
		for n in "${FAILED_NAMES[@]}"; do echo "failed: $n"; done
		echo "pg$PG_MAJOR: $PASSED passed, $FAILED failed"
		[ "$FAILED" = 0 ] && [ "$PASSED" -gt 0 ]
		exit $?
		;;
	bench)
		# where the figures go: a folder of the run directory unless the reader
		# names one; the maintainers name docs/ to regenerate the committed page
		BENCH_OUT=${XIP83_BENCH_OUT:-$RUN/bench}
		mkdir -p "$BENCH_OUT" || die "cannot create $BENCH_OUT"
		BENCH_OUT=$(cd "$BENCH_OUT" && pwd)
		# report.py takes figures into docs/ only from committed code: say so
		# before the run, not after it
		if [ "$BENCH_OUT" = "$top/docs" ] && [ -n "$(git -C "$top" status --porcelain \
			--untracked-files=no -- src control client tests 2>/dev/null)" ]; then
			die "bench: uncommitted changes under src/, control/, client/ or tests/: commit them before writing figures into docs/"
		fi
		build
		make -s -j2 PG_CONFIG="$PG_CONFIG" bench >>"$RUN/build.log" 2>&1 \
			|| { cat "$RUN/build.log"; die "building the benchmarks failed"; }
		temp_install
		cluster_init
		cluster_start
		# `bench NAME [ARGS...]` runs one benchmark, with its arguments
		logs=()
		for b in build/bench/${2:-*}; do
			[ -x "$b" ] || continue
			name=$(basename "$b")
			log "bench: $name"
			# each bench loads its own data into empty tables
			fresh_db xip83_bench
			t0=$(date +%s)
			PGDATABASE=xip83_bench "$b" "${@:3}" | tee "$RUN/$name.log" \
				|| die "benchmark $name failed"
			# the bench's wall time, a figure like its others (report.py: run_time)
			printf 'RESULT\t%s\targs=%s\trun_time\t%s\ts\n' "$name" "${*:3}" \
				"$(($(date +%s) - t0))" | tee -a "$RUN/$name.log"
			logs+=("$RUN/$name.log")
		done
		# the figures into $BENCH_OUT/perf/results.tsv, then its performance.md
		# and charts; into the checkout's docs/ only when asked (XIP83_BENCH_OUT=docs)
		[ ${#logs[@]} -gt 0 ] && { /usr/bin/python3 tests/bench/report.py --out "$BENCH_OUT" collect "${logs[@]}" \
			|| die "tests/bench/report.py failed"; }
		log "figures: $BENCH_OUT/performance.md, $BENCH_OUT/perf/results.tsv"
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
		# the demo is one end-to-end check: it passes when every step did
		if PGDATABASE=xip83_demo bash tests/demo/run.sh "$BINDIR"; then
			echo "demo: 1 passed, 0 failed"
		else
			echo "demo: 0 passed, 1 failed"
			exit 1
		fi
		;;
	package)
		[ "$(id -u)" = 0 ] || die "package: needs root (apt-get, dpkg -i)"
		debian_pg || die "package: needs Debian's PostgreSQL (PG_CONFIG under /usr/lib/postgresql)"
		pkgs=()
		command -v dpkg-buildpackage >/dev/null || pkgs+=(dpkg-dev)
		command -v dh >/dev/null || pkgs+=(debhelper)
		[ -f /usr/share/perl5/Debian/Debhelper/Sequence/pgxs.pm ] || pkgs+=(postgresql-server-dev-all)
		pkg-config --exists libnghttp2 || pkgs+=(libnghttp2-dev)
		pkg-config --exists openssl || pkgs+=(libssl-dev)
		[ -f /usr/include/http_parser.h ] || pkgs+=(libhttp-parser-dev)
		[ -f /usr/include/wslay/wslay.h ] || pkgs+=(libwslay-dev)
		# man -w finds the package's pages (package_on_path)
		command -v man >/dev/null || pkgs+=(man-db)
		if [ ${#pkgs[@]} -gt 0 ]; then
			log "installing: ${pkgs[*]}"
			apt-get update -q >/dev/null || die "apt-get update failed"
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}" \
				>/dev/null || die "apt-get install ${pkgs[*]} failed"
		fi
		# A copy of the checkout: the .deb lands beside the source tree.
		pkgdir=$RUN/pkg
		rm -rf "$pkgdir" && mkdir -p "$pkgdir/xip83"
		tar -C "$top" --exclude=./.git --exclude=./build --exclude='*.o' --exclude='*.so' \
			--exclude='*.bc' --exclude=./results --exclude=./output_iso --exclude=./tmp_check \
			-cf - . | tar -C "$pkgdir/xip83" -xf -
		log "dpkg-buildpackage -us -uc -b (log: $pkgdir/build.log)"
		if (cd "$pkgdir/xip83" && dpkg-buildpackage -us -uc -b) >"$pkgdir/build.log" 2>&1; then
			PASSED=$((PASSED + 1)); echo "test dpkg-buildpackage ... ok"
		else
			tail -n 60 "$pkgdir/build.log"
			echo "test dpkg-buildpackage ... FAILED"
			echo "package: 0 passed, 1 failed"
			exit 1
		fi
		deb=$(ls "$pkgdir"/postgresql-"$PG_MAJOR"-xip83_*.deb)
		dpkg -i "$deb" >"$pkgdir/install.log" 2>&1 || { cat "$pkgdir/install.log"; die "dpkg -i $deb failed"; }
		trap 'cluster_stop; dpkg -r postgresql-'"$PG_MAJOR"'-xip83 >/dev/null 2>&1' EXIT
		log "installed $(basename "$deb"): $(dpkg -S "$PG_PKGLIBDIR/xip83.so")"
		BINDIR=$PG_BINDIR
		cluster_init
		cluster_start
		if fresh_db xip83_pkg && [ "$("$BINDIR/psql" -X -At -d xip83_pkg -c \
			"SELECT extversion FROM pg_extension WHERE extname = 'xip83'")" = 0.2.0 ]; then
			PASSED=$((PASSED + 1)); echo "test create_extension ... ok"
		else
			FAILED=$((FAILED + 1)); FAILED_NAMES+=(create_extension); echo "test create_extension ... FAILED"
		fi
		run_target as_server installcheck-regress
		run_target as_server installcheck-isolation
		cluster_stop
		package_gateway_unit
		package_on_path
		for n in "${FAILED_NAMES[@]}"; do echo "failed: $n"; done
		echo "package: $PASSED passed, $FAILED failed"
		[ "$FAILED" = 0 ]
		exit $?
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
		die "usage: tests/driver.sh check|demo|bench|shell|package"
		;;
esac
