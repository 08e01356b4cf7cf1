#!/usr/bin/env bash
# Build PostgreSQL 18 from Debian's source package into a cache outside the
# checkout, for testing the extension against 18 on a bookworm machine.
#
#   bash tests/pg18.sh            build once; prints the pg_config path
#
# Needs root on a fresh machine (apt-get). A warm machine rebuilds nothing: the
# installed tree under $XIP83_PG18_PREFIX (default /var/cache/xip83/pg18) is
# reused when its pg_config answers. The source comes from sid through a
# temporary deb-src entry derived from the machine's own apt sources (same
# mirror, same keyring): no host name lives in this repository, and no binary
# package of another suite is ever made installable.
set -euo pipefail

PREFIX=${XIP83_PG18_PREFIX:-/var/cache/xip83/pg18}
WORK=${XIP83_PG18_WORK:-/var/cache/xip83/pg18-src}
PKG=${XIP83_PG18_PACKAGE:-postgresql-18}	# another name only to test the failure path

log() { printf '== pg18: %s\n' "$*" >&2; }
die() { printf 'pg18: %s\n' "$*" >&2; exit 2; }

built() { [ -x "$PREFIX/bin/pg_config" ] && [ -x "$PREFIX/bin/postgres" ] && [ -f "$PREFIX/.xip83-complete" ]; }
if built; then
	echo "$PREFIX/bin/pg_config"
	exit 0
fi
[ "$(id -u)" = 0 ] || die "PostgreSQL 18 is not built in $PREFIX and building it needs root (apt-get)"
# One build at a time on a machine: checkouts side by side share the cache.
mkdir -p "$(dirname "$PREFIX")" "$(dirname "$WORK")"
exec 9>"$PREFIX.lock"
flock 9
if built; then
	echo "$PREFIX/bin/pg_config"
	exit 0
fi

export DEBIAN_FRONTEND=noninteractive
log "installing build dependencies (bookworm)"
apt-get update -q >/dev/null || die "apt-get update failed"
apt-get install -y -q --no-install-recommends dpkg-dev gcc make bison flex \
	libreadline-dev zlib1g-dev libssl-dev libicu-dev pkg-config libperl-dev \
	libipc-run-perl >/dev/null || die "apt-get install of the build dependencies failed"

# A temporary apt configuration: the machine's own lists plus one deb-src entry
# for sid, on the first Debian mirror the machine already uses.
APTDIR=$(mktemp -d /tmp/xip83-apt.XXXXXX)
trap 'rm -rf "$APTDIR"' EXIT
mirror= keyring=
for f in /etc/apt/sources.list.d/*.sources; do
	[ -f "$f" ] || continue
	# deb822 stanzas: take the first whose suites name a Debian release
	# other than the security archive.
	read -r mirror keyring < <(awk '
		/^URIs:/ {u=$2} /^Suites:/ {s=$0} /^Signed-By:/ {k=$2}
		/^$/ {if (u != "" && s !~ /security/ && s ~ /(bookworm|trixie|sid|stable)/) {print u, k; exit} u=""; s=""; k=""}
		END {if (u != "" && s !~ /security/ && s ~ /(bookworm|trixie|sid|stable)/) print u, k}' "$f") || true
	[ -n "$mirror" ] && break
done
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
	mirror=$(awk '$1 == "deb" && $0 !~ /security/ {for (i=2;i<=NF;i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' /etc/apt/sources.list)
fi
[ -n "$mirror" ] || die "cannot derive a Debian mirror from /etc/apt/sources.list{,.d}: the PostgreSQL 18 source cannot be downloaded"
keyring=${keyring:-/usr/share/keyrings/debian-archive-keyring.gpg}
mkdir -p "$APTDIR/lists/partial" "$APTDIR/sources.list.d"
cat >"$APTDIR/sources.list.d/xip83-sid-src.sources" <<SRC
Types: deb-src
URIs: $mirror
Suites: sid
Components: main
Signed-By: $keyring
SRC
aptopts=(-o "Dir::State::Lists=$APTDIR/lists"
	-o "Dir::Etc::SourceParts=$APTDIR/sources.list.d"
	-o "Dir::Etc::SourceList=/dev/null")

log "fetching the $PKG source package (sid deb-src, temporary)"
apt-get "${aptopts[@]}" update -q >/dev/null 2>"$APTDIR/update.err" \
	|| { cat "$APTDIR/update.err" >&2; die "the $PKG source cannot be downloaded: apt-get update of the temporary sid deb-src entry failed"; }
rm -rf "$WORK"
mkdir -p "$WORK"
( cd "$WORK" && apt-get "${aptopts[@]}" source --download-only -q "$PKG" ) >"$APTDIR/source.log" 2>&1 \
	|| { cat "$APTDIR/source.log" >&2; die "the $PKG source cannot be downloaded (apt-get source $PKG failed)"; }
dsc=$(ls "$WORK"/${PKG}_*.dsc 2>/dev/null | head -n1)
[ -n "$dsc" ] || die "the $PKG source cannot be downloaded: no .dsc in $WORK"
# Debian's patches force system install directories whatever the prefix: skip them.
( cd "$WORK" && dpkg-source -x --skip-patches "$dsc" src ) >/dev/null \
	|| die "dpkg-source -x failed on $dsc"

log "configuring (prefix $PREFIX)"
cd "$WORK/src"
./configure --prefix="$PREFIX" --enable-tap-tests --with-openssl --without-llvm \
	>"$WORK/configure.log" 2>&1 || { tail -n 40 "$WORK/configure.log" >&2; die "configure failed"; }
log "building (make -j2)"
make -s -j2 >"$WORK/build.log" 2>&1 || { tail -n 40 "$WORK/build.log" >&2; die "make failed"; }
rm -rf "$PREFIX"
make -s install >"$WORK/install.log" 2>&1 || { tail -n 40 "$WORK/install.log" >&2; die "make install failed"; }
# isolationtester and pg_isolation_regress, for ISOLATION in PGXS.
make -s -C src/test/isolation install >>"$WORK/install.log" 2>&1 \
	|| { tail -n 40 "$WORK/install.log" >&2; die "make install of src/test/isolation failed"; }
touch "$PREFIX/.xip83-complete"
# The source tree is not needed once installed.
cd / && rm -rf "$WORK"
echo "$PREFIX/bin/pg_config"
