#!/usr/bin/python3
"""The house rules of the source tree, checked from the #include lines.

Prints "test house_layers ... ok" or "... FAILED" (counted by tests/driver.sh)
and exits 1 on any breach:

  - a file includes a header of a higher floor (FLOORS, lowest first);
  - a file includes another subsystem's private header: across folders only
    the folder's API header, <folder>/<folder>.h, may be named (client/grpc:
    the headers in CLIENT_API);
  - the subsystems' include graph has a cycle;
  - a .c file is longer than MAX_LINES lines;
  - an fmgr entry point (PG_FUNCTION_INFO_V1, a PG_FUNCTION_ARGS function)
    is outside src/sql, the one floor that touches fmgr;
  - NotifierEnsureRunning is called outside src/sql and src/feed/notifier.c:
    a read starts the notifier only at its SQL entry point.

When the extension's objects sit beside their sources (an in-tree build) and
nm is at hand, the same floor rule is applied to the symbols each object
takes from the others: a call or a variable reaches up as surely as an
include does.

    python3 tests/house/check_layers.py [TOP]
"""
import os
import re
import shutil
import subprocess
import sys

# Lowest first. A file may include headers of its own folder and the API
# header of any folder on a lower floor. include/xip83 holds what the
# extension and the client programs share; the client has its own floors: the
# transports (client/http below client/grpc) know no database; the live feed
# (client/feed) knows no session; the session engine (client/session) no
# HTTP/2; the gateway (client/gateway) joins the engine to the transport; the
# programs (client/bin) only parse flags and run one of them.
FLOORS = ["include/xip83", "src/base", "src/core", "src/rel", "src/feed",
          "src/scan", "src/frames", "src/sql"]
CLIENT_FLOORS = ["include/xip83", "client/http", "client/grpc", "client/feed",
                 "client/session", "client/gateway", "client/bin"]
# The transport's headers predate the one-header rule: these are its API.
CLIENT_API = {"client/grpc": {"h2_server.h", "grpc_frame.h", "loop_timer.h"}}
MAX_LINES = 900

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# fmgr entry points, and starting the notifier, belong to the SQL floor.
ENTRY_FLOOR = "src/sql"
ENTRY_POINT = re.compile(r'\bPG_FUNCTION_INFO_V1\s*\(|\(\s*PG_FUNCTION_ARGS\s*\)')
NOTIFIER_START = re.compile(r'\bNotifierEnsureRunning\s*\(')
NOTIFIER_FILE = "src/feed/notifier.c"
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)


def folder_floors():
    """Each folder's floor number, per tree (server or client)."""
    out = {}
    for tree, floors in (("server", FLOORS), ("client", CLIENT_FLOORS)):
        for n, f in enumerate(floors):
            out[(tree, f)] = n
    return out


def api_header(folder):
    """The one header of a subsystem that others may include."""
    name = os.path.basename(folder)
    return name + "/" + name + ".h"


def resolve(inc, tree, folder):
    """The floor folder a quoted include names, or None for outside headers.

    Both sides include other folders by name ("core/core.h", with -Isrc and
    -Iinclude; "feed/feed.h", with -Iclient); the gRPC transport's headers
    are named bare (-Iclient/grpc)."""
    if os.path.exists(os.path.join(folder, inc)):
        return folder
    fl = FLOORS if tree == "server" else CLIENT_FLOORS
    first = inc.split("/")[0]
    for fold in fl:
        if "/" in inc and os.path.basename(fold) == first and \
                os.path.exists(os.path.join(os.path.dirname(fold), inc)):
            return fold
    for fold in fl:
        if os.path.exists(os.path.join(fold, inc)):
            return fold
    return None


def main():
    top = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                          os.path.join(os.path.dirname(__file__), "..", ".."))
    os.chdir(top)
    floors = folder_floors()
    errors = []
    files = []
    for tree, fl in (("server", FLOORS), ("client", CLIENT_FLOORS)):
        for folder in fl:
            if not os.path.isdir(folder):
                errors.append("%s: floor folder missing" % folder)
                continue
            for name in sorted(os.listdir(folder)):
                if name.endswith((".c", ".h")):
                    files.append((tree, folder, os.path.join(folder, name)))
    # folders holding sources that no floor names
    for root in ("src", "client", "include"):
        for d, _, names in os.walk(root):
            known = any((t, d) in floors for t in ("server", "client"))
            if not known and any(n.endswith((".c", ".h")) for n in names):
                errors.append("%s: sources in a folder that is on no floor" % d)

    edges = {}
    for tree, folder, path in files:
        mine = floors[(tree, folder)]
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if path.endswith(".c") and text.count("\n") > MAX_LINES:
            errors.append("%s: %d lines, more than %d" % (path, text.count("\n"), MAX_LINES))
        if tree == "server" and folder != ENTRY_FLOOR:
            # comments go, their line breaks stay: reported lines are the file's
            errors += entry_breaches(path, COMMENT.sub(
                lambda m: "\n" * m.group(0).count("\n") or " ", text))
        for inc in INCLUDE.findall(text):
            fold = resolve(inc, tree, folder)
            if fold is None or fold == folder:
                continue            # its own folder, or PostgreSQL, libc, protobuf
            n = floors[(tree, fold)]
            edges.setdefault(folder, set()).add(fold)
            if n > mine:
                errors.append("%s (floor %s) includes %s of the higher floor %s"
                              % (path, folder, inc, fold))
            # the transports' headers are named bare (-Iclient/grpc, -Iclient/http)
            public = {api_header(fold)} if tree == "server" else \
                {api_header(fold), os.path.basename(api_header(fold))} | CLIENT_API.get(fold, set())
            if fold != "include/xip83" and inc not in public:
                errors.append("%s includes %s, private to %s (only %s is public)"
                              % (path, inc, fold, api_header(fold)))

    cycle = find_cycle(edges)
    if cycle:
        errors.append("include cycle between subsystems: " + " -> ".join(cycle))

    errors += check_symbols(floors)

    for e in errors:
        print("house_layers: " + e)
    n_edges = sum(len(v) for v in edges.values())
    print("house_layers: %d files, %d include edges between subsystems" % (len(files), n_edges))
    print("test house_layers ... " + ("FAILED" if errors else "ok"))
    return 1 if errors else 0


def entry_breaches(path, code):
    """Entry points and notifier starts in a server file below src/sql."""
    errors = []
    for m in ENTRY_POINT.finditer(code):
        errors.append("%s:%d: fmgr entry point %s outside %s"
                      % (path, code.count("\n", 0, m.start()) + 1, m.group(0).strip(),
                         ENTRY_FLOOR))
    if path.endswith(".c") and path != NOTIFIER_FILE:
        for m in NOTIFIER_START.finditer(code):
            errors.append("%s:%d: NotifierEnsureRunning called outside %s and %s"
                          % (path, code.count("\n", 0, m.start()) + 1, ENTRY_FLOOR,
                             NOTIFIER_FILE))
    return errors


def find_cycle(edges):
    """A cycle of the folder graph as a list of folders, or None."""
    state = {}
    stack = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(edges):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def check_symbols(floors):
    """Symbols an extension object takes from an object of a higher floor."""
    nm = shutil.which("nm")
    objs = []
    for folder in FLOORS:
        if os.path.isdir(folder):
            # an object whose source is gone (moved, split) is stale, not evidence
            objs += [os.path.join(folder, n) for n in sorted(os.listdir(folder))
                     if n.endswith(".o") and os.path.exists(os.path.join(folder, n[:-2] + ".c"))]
    if not nm or not objs:
        return []
    defined, wanted = {}, {}
    for o in objs:
        out = subprocess.run([nm, o], capture_output=True, text=True).stdout
        wanted[o] = set()
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDBRC":
                defined[p[2]] = o
            elif len(p) == 2 and p[0] == "U":
                wanted[o].add(p[1])
    errors = []
    for o, syms in wanted.items():
        mine = floors[("server", os.path.dirname(o))]
        for s in sorted(syms):
            d = defined.get(s)
            if d and floors[("server", os.path.dirname(d))] > mine:
                errors.append("%s uses %s of the higher floor %s" % (o, s, d))
    return errors


if __name__ == "__main__":
    sys.exit(main())
