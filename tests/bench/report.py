#!/usr/bin/python3
"""Benchmark results: docs/performance.md, its charts and the README's figures.

  report.py [--out DIR] collect LOG...   take the RESULT lines of bench logs into
                             DIR/perf/results.tsv, dated, with the commit measured,
                             then render
  report.py [--out DIR] render   write DIR/performance.md and DIR/perf/*.svg
                             (gnuplot) from DIR/perf/results.tsv; with DIR the
                             checkout's docs/, also the figures block of README.md
  report.py check            fail, printing the diff, when docs/performance.md or
                             README.md's figures block is not what render writes
                             from docs/perf/results.tsv

DIR is the checkout's docs/ unless --out names another folder (tests/driver.sh
bench writes to XIP83_BENCH_OUT, by default a folder of its run directory, so a
reader's run never rewrites tracked files). Figures go into the checkout's
docs/ only from committed code: a tree with uncommitted changes under src/,
control/, client/ or tests/ is refused there.

A bench prints "RESULT<TAB>bench<TAB>case<TAB>metric<TAB>value<TAB>unit" lines
(tl_result in tests/libpq/lib). results.tsv keeps the latest figure of every
(bench, case, metric), in the order the benches printed them; a new run of a
bench replaces its own lines and leaves the others. Older figures live in git.
The page is generated, never edited, so it always says which commit and day
each table measured. Figures measured on uncommitted code (commit "...+changes")
are kept in results.tsv but never shown.
"""
import csv
import difflib
import os
import re
import subprocess
import sys
from collections import OrderedDict

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(TOP, "docs")
README = os.path.join(TOP, "README.md")
BENCH_CONF = os.path.join(TOP, "tests", "cluster-bench.conf")
FIELDS = ["date", "commit", "bench", "case", "metric", "value", "unit"]
DIRTY = "+changes"
# The wall time of a whole bench, which tests/driver.sh adds to its log.
RUN_TIME = "run_time"

# What each bench measures, for the reader of the page.
ABOUT = OrderedDict([
    ("bench_wave_v3", "v3 wave pages and whole waves against the merged keyset SQL nodes run "
     "(\"sql\"), per-topic LATERAL batches (\"lateral\") and a caught-up reconnect."),
    ("bench_wave_d14n", "d14n wave pages, whole waves and ceilings against the d14n node's SQL "
     "(tests/wave_d14n_reference.sql), in production's partitioned layout and a plain table."),
    ("bench_recent", "reconnect waves over 10,000 topics with the recent-writes tables, against "
     "the same call with every floor at the ceiling (caught up) or the page's rows fetched by "
     "primary key (95%), the tables switched off, and the plain SQL."),
    ("bench_live", "the live feed: writers with the feed against no feed and a per-row "
     "pg_notify trigger; latency from commit to xip83-tail's print; rows an `id > last` "
     "poller and xip83-tail never see."),
    ("bench_frames", "one page of 500 group messages as rows, as frames from the server, and "
     "as rows encoded by a C client."),
    ("bench_session", "the session engine (xip83-session): a 1,000-topic wave against the bare "
     "replay of the same scans, and live latency p99."),
    ("bench_node_writers", "writer throughput into node tables tracked against untracked, and "
     "xip83's own table against a plain copy."),
    ("bench_summary", "caught-up reconnect waves over 1M rows and 100,000 topics with the topic "
     "summary: (a) floors from before a restart, (b) on a hot standby, (c) every topic idle past "
     "the recent-writes window; against the same call with floors at the ceiling, the same wave "
     "recently written, and no summary; the pass's time and memory."),
    ("bench_summary_10m_rows", "the same waves of bench_summary over 10M rows (the same 100,000 topics)."),
    ("bench_gateway", "the gateway, xip83-gateway, under a load client on nghttp2 (with `--proto`, also as "
     "browsers reach it, each protocol on a gateway of its own: \"grpc-web\", SubscribeGroupMessages "
     "over HTTP/1.1, and \"ws\", Subscribe over a WebSocket, one connection a stream; \"h2\" the "
     "same streams over HTTP/2): streams opened and caught "
     "up, the gateway's RSS and database connections, then live rows on random topics: latency "
     "from insert to frame read, and the gateway's CPU (CPU seconds per second: 1 is one core "
     "busy) beside the database's."),
])

# How to run a bench beyond what its figures show: a paragraph after what it measures.
HOW = {
    "bench_gateway": "With `XIP83_ANCHOR` naming its binary, every phase runs again on the anchor, "
    "a node-style Go server (grpc-go serving the v3 Subscribe the way the v3 node does: a 25 ms "
    "poller, a topic dispatcher, LATERAL catch-ups), with the same arguments; the bench prints "
    "both servers' figures and the ratios anchor / gateway of CPU per delivery, RSS and p99 (its "
    "cases say `server=anchor`; HTTP/2 live phases only, not `--storm` or `--proto grpc-web,ws`). "
    "The anchor lives outside this repository; its own README says how to build it offline from "
    "Debian's Go packages. Then: `XIP83_ANCHOR=/tmp/xip83-anchor/anchor bash tests/driver.sh bench "
    "bench_gateway --streams 10000 --rate 1000 --seconds 20`.",
}

# The unit of a figure printed without one.
UNITLESS = [
    (re.compile(r"_share$"), "cores"),
    (re.compile(r"_ratio$"), "ratio"),
    (re.compile(r"^db_connections$"), "connections"),
]

# Case keys shown with their values in words.
KEY_WORDS = {"rows": "rows", "topics": "topics", "rate": "rows/s", "streams": "streams"}

# Charts. A series is (label, case filter, metric) or (label, case filter,
# numerator metric, denominator metric): the ratio of two figures of the same
# case. Every case a series draws on must differ in the x key alone: a chart
# that would mix data sizes on one line fails to render.
CHARTS = [
    {"file": "wave_page_topics.svg", "bench": "bench_wave_v3", "x": "topics",
     "title": "v3 waves (group messages): plain SQL time / xip83 time, by topics in the wave",
     "xlabel": "topics in the wave", "ylabel": "SQL time / xip83 time (log; below 1: xip83 slower)",
     "logy": True, "one": True,
     "series": [("first page, 200,000 rows", {"kind": "group", "rows": "200000"},
                 "first_page_sql", "first_page_ours"),
                ("first page, 1,000,000 rows", {"kind": "group", "rows": "1000000"},
                 "first_page_sql", "first_page_ours"),
                ("first page, 2,000,000 rows", {"kind": "group", "rows": "2000000"},
                 "first_page_sql", "first_page_ours"),
                ("whole wave, 2,000,000 rows", {"kind": "group", "rows": "2000000"},
                 "whole_wave_sql", "whole_wave_stream")]},
    {"file": "wave_page_rows.svg", "bench": "bench_wave_v3", "x": "rows",
     "title": "v3 first page of a 1,000-topic wave (group messages): plain SQL time / xip83 time, by rows stored",
     "xlabel": "rows stored", "ylabel": "SQL time / xip83 time (log)", "logy": True, "one": True,
     "series": [("first page, 1,000 topics", {"kind": "group", "topics": "1000"},
                 "first_page_sql", "first_page_ours")]},
    {"file": "reconnect_topics.svg", "bench": "bench_wave_v3", "x": "topics",
     "title": "caught-up reconnect, nothing new (group messages): plain SQL time / xip83 time, by topics",
     "xlabel": "topics in the wave", "ylabel": "SQL time / xip83 time (log)", "logy": True, "one": True,
     "series": [("%s rows" % n, {"kind": "group", "rows": r}, "caught_up_sql", "caught_up_ours")
                for n, r in (("200,000", "200000"), ("1,000,000", "1000000"), ("2,000,000", "2000000"))]},
    {"file": "live_latency_rate.svg", "bench": "bench_live", "x": "rate",
     "title": "live feed: latency from commit to xip83-tail's print, by write rate",
     "xlabel": "write rate (rows/s)", "ylabel": "latency (ms)", "logy": False, "one": False,
     "series": [("p50", {}, "latency_p50"), ("p99", {}, "latency_p99")]},
    {"file": "fanout_p99_rate.svg", "bench": "bench_gateway", "x": "rate",
     "title": "gateway fan-out, 100,000 streams of 10 topics over 10,000: commit to frame p99, by rows/s",
     "xlabel": "rows written per second (each to about 100 streams)", "ylabel": "p99 (ms)", "logy": False,
     "one": False,
     "series": [("%s" % label, {"streams": "100000", "topics": "10", "loops": n}, "live_p99_ms")
                for label, n in (("1 loop", "1"), ("2 loops", "2"))]},
    {"file": "fanout_cpu_rate.svg", "bench": "bench_gateway", "x": "rate",
     "title": "gateway fan-out, 100,000 streams: gateway CPU per delivery, by rows/s",
     "xlabel": "rows written per second (each to about 100 streams)", "ylabel": "CPU per delivery (us)",
     "logy": False, "one": False,
     "series": [("%s" % label, {"streams": "100000", "topics": "10", "loops": n},
                 "live_cpu_us_per_delivery") for label, n in (("1 loop", "1"), ("2 loops", "2"))]},
]


def paths(out):
    return {"tsv": os.path.join(out, "perf", "results.tsv"),
            "page": os.path.join(out, "performance.md"),
            "svg": os.path.join(out, "perf")}


def read_tsv(tsv):
    if not os.path.exists(tsv):
        return []
    with open(tsv, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def write_tsv(tsv, rows):
    os.makedirs(os.path.dirname(tsv), exist_ok=True)
    with open(tsv, "w", newline="") as f:
        w = csv.DictWriter(f, FIELDS, delimiter="\t", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def git(*args):
    return subprocess.run(["git", "-C", TOP] + list(args), capture_output=True, text=True).stdout.strip()


def collect(out, logs):
    commit = git("rev-parse", "--short=12", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no", "--", "src", "control", "client", "tests"):
        if os.path.realpath(out) == os.path.realpath(DOCS):
            sys.exit("report.py: uncommitted changes under src/, control/, client/ or tests/: "
                     "commit them before writing figures into docs/ (or choose another --out)")
        commit += DIRTY
    date = subprocess.run(["date", "-u", "+%Y-%m-%d"], capture_output=True, text=True).stdout.strip()
    new = []
    for log in logs:
        with open(log, errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 6 or parts[0] != "RESULT":
                    continue
                _, bench, case, metric, value, unit = (p.strip() for p in parts)
                new.append({"date": date, "commit": commit, "bench": bench, "case": case,
                            "metric": metric, "value": value, "unit": unit})
    if not new:
        sys.exit("report.py: no RESULT lines in " + " ".join(logs))
    tsv = paths(out)["tsv"]
    rows = read_tsv(tsv)
    # a bench's new run replaces its figures of the same case and metric, in place
    index = {(r["bench"], r["case"], r["metric"]): i for i, r in enumerate(rows)}
    for r in new:
        key = (r["bench"], r["case"], r["metric"])
        if key in index:
            rows[index[key]] = r
        else:
            index[key] = len(rows)
            rows.append(r)
    write_tsv(tsv, rows)
    print("report.py: %d figures from %d log(s) into %s" % (len(new), len(logs), tsv))


def case_dict(case):
    """'k=v,k=v' as an ordered dict; a comma not followed by 'key=' is part of the value."""
    d = OrderedDict()
    for part in re.split(r",(?=\s*[A-Za-z_][A-Za-z0-9_]*=)", case):
        if "=" not in part:
            return None
        k, v = part.split("=", 1)
        d[k.strip()] = v.strip()
    return d


def fmt(value):
    v = float(value)
    if v == 0:
        return "0"
    if v == int(v) and abs(v) < 1e6:
        return "{:,d}".format(int(v))
    if abs(v) >= 100:
        return "{:,.0f}".format(v)
    if abs(v) >= 10:
        return "%.1f" % v
    if abs(v) >= 1:
        return "%.2f" % v
    return "%.3g" % v


def number(text):
    """A parameter as the page shows it: 200000 as 200,000."""
    return "{:,d}".format(int(text)) if re.fullmatch(r"\d{4,}", text) else text


def unit_of(metric, unit):
    if unit:
        return unit
    for pattern, u in UNITLESS:
        if pattern.search(metric):
            return u
    return ""


def shown(rows):
    """The figures measured on committed code."""
    return [r for r in rows if not r["commit"].endswith(DIRTY)]


def chart_points(rows, chart):
    """([(x, {label: y})] sorted by x, the x values the chart's data span)."""
    points = {}
    for s in chart["series"]:
        label, want, metrics = s[0], s[1], s[2:]
        seen = {}
        for r in rows:
            if r["bench"] != chart["bench"] or r["metric"] not in metrics:
                continue
            c = case_dict(r["case"]) or {}
            if chart["x"] not in c or any(c.get(k) != v for k, v in want.items()):
                continue
            seen.setdefault(r["case"], (c, {}))[1][r["metric"]] = float(r["value"])
        for case, (c, m) in seen.items():
            if len(metrics) == 1 and metrics[0] in m:
                y = m[metrics[0]]
            elif len(metrics) == 2 and metrics[0] in m and m.get(metrics[1]):
                y = m[metrics[0]] / m[metrics[1]]
            else:
                continue
            x = float(c[chart["x"]])
            if label in points.get(x, {}):
                sys.exit("report.py: chart %s, series '%s': two cases at %s=%s (%s): the series "
                         "needs a narrower filter" % (chart["file"], label, chart["x"], c[chart["x"]], case))
            points.setdefault(x, OrderedDict())[label] = y
    return sorted(points.items())


def bench_settings():
    """The lines of tests/cluster-bench.conf that set something."""
    lines = []
    if os.path.exists(BENCH_CONF):
        for line in open(BENCH_CONF):
            line = line.split("#", 1)[0].strip()
            if line:
                lines.append("`" + re.sub(r"\s*=\s*", " = ", line) + "`")
    return lines


def table_of(bench, mine):
    """Markdown tables of one bench: one per set of metrics its cases share, the
    case's parameters as columns, and a column naming the run when the table's
    rows come from several."""
    cases = OrderedDict()
    for r in mine:
        cases.setdefault(r["case"], OrderedDict())[r["metric"]] = r
    # a case with fewer figures joins a table of the same parameters whose
    # figures include its own (blank cells), rather than making a table of its own
    groups = []
    for case, metrics in cases.items():
        keys = tuple(case_dict(case) or ())
        for g in groups:
            if g[0] == keys and (set(metrics) <= set(g[1]) or set(metrics) >= set(g[1])):
                g[1] = list(OrderedDict.fromkeys(list(g[1]) + list(metrics)))
                g[2].append(case)
                break
        else:
            groups.append([keys, list(metrics), [case]])
    out = []
    for _, metrics, group in groups:
        parsed = [case_dict(c) for c in group]
        if all(parsed):
            keys = list(OrderedDict.fromkeys(k for p in parsed for k in p))
        else:
            keys = None
        runs = OrderedDict.fromkeys("%s `%s`" % (cases[c][m]["date"], cases[c][m]["commit"])
                                    for c in group for m in metrics if m in cases[c])
        units = OrderedDict()
        for c in group:
            for m in metrics:
                if m in cases[c]:
                    units.setdefault(m, unit_of(m, cases[c][m]["unit"]))
        head = (keys if keys else ["case"]) + ["%s (%s)" % (m, units[m]) if units[m] else m for m in metrics]
        if len(runs) > 1:
            head.append("measured")
        out.append("| " + " | ".join(head) + " |")
        out.append("|---" * len(head) + "|")
        for c, p in zip(group, parsed):
            cells = [number(p.get(k, "")) for k in keys] if keys else [c]
            cells = [x.replace("|", "\\|") for x in cells]
            cells += [fmt(cases[c][m]["value"]) if m in cases[c] else "" for m in metrics]
            if len(runs) > 1:
                first = next(iter(cases[c].values()))
                cells.append("%s `%s`" % (first["date"], first["commit"]))
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return out


def render_page(rows):
    hidden = OrderedDict()
    for r in rows:
        if r["commit"].endswith(DIRTY):
            hidden.setdefault(r["bench"], set()).add(r["commit"])
    rows = shown(rows)
    timed = [r for r in rows if r["metric"] == RUN_TIME]
    rows = [r for r in rows if r["metric"] != RUN_TIME]
    out = ["# Performance", "",
           "Generated by `tests/bench/report.py` from [perf/results.tsv](perf/results.tsv); do not",
           "edit. Each bench compares xip83 with the SQL node servers run today on the same data in",
           "the same run: read the ratios, not the absolute times, which depend on the machine (the",
           "figures here come from a shared 2-core virtual machine). Every table says the day and",
           "the commit it measured; figures from earlier runs are in the git history of",
           "`results.tsv`.", "",
           "## Running the benchmarks", "",
           "```sh",
           "bash tests/driver.sh bench                      # every bench",
           "bash tests/driver.sh bench bench_live           # one, with its own arguments after the name",
           "XIP83_BENCH_OUT=/tmp/mybench bash tests/driver.sh bench bench_frames",
           "```", "",
           "The driver builds the benchmarks in `tests/bench/`, starts a throwaway cluster (a",
           "private copy of the server with this checkout installed), loads each bench's data into",
           "a fresh database and writes `performance.md`, `perf/results.tsv` and the charts into",
           "`$XIP83_BENCH_OUT`: by default `bench/` in the driver's run directory",
           "(`/tmp/xip83-<checkout>-pg15/bench`, printed at the end), never into the checkout. A",
           "second run into the same folder replaces the figures of the benches it ran and keeps",
           "the others. The maintainers regenerate this page with `XIP83_BENCH_OUT=docs`, which",
           "`report.py` accepts only from committed code.", "",
           "How long: the driver times each bench and records it as its `run_time`"]
    if timed:
        out[-1] += " (below). The cluster runs with"
    else:
        out[-1] += " (none of the figures below has one yet: they predate it). The cluster runs with"
    out += [
           "`tests/xip83.conf` (the test suites' settings: `shared_preload_libraries = 'xip83'`,",
           "xip83's defaults) and then `tests/cluster-bench.conf`, which measures what production",
           "runs: " + ", ".join(bench_settings()) + ".", ""]
    if timed:
        out += ["| bench | arguments | run time (min) | measured |", "|---|---|---|---|"]
        for r in timed:
            out.append("| %s | %s | %.1f | %s `%s` |" % (r["bench"], (case_dict(r["case"]) or {}).get("args", ""),
                                                         float(r["value"]) / 60, r["date"], r["commit"]))
        out.append("")
    if hidden:
        out += ["Not shown: the figures of " + ", ".join(
            "%s (at `%s`)" % (b, "`, `".join(sorted(c))) for b, c in hidden.items()) +
            ", measured on uncommitted code; the next run of those benches replaces them.", ""]
    charts = [c for c in CHARTS if len(chart_points(rows, c)) >= 2]
    if charts:
        out += ["## Charts", ""]
        for c in charts:
            out += ["![%s](perf/%s)" % (c["title"], c["file"]), ""]
    benches = list(OrderedDict.fromkeys(r["bench"] for r in rows))
    benches.sort(key=lambda b: list(ABOUT).index(b) if b in ABOUT else len(ABOUT))
    for bench in benches:
        mine = [r for r in rows if r["bench"] == bench]
        runs = sorted({(r["date"], r["commit"]) for r in mine})
        out += ["## " + bench, ""]
        if bench in ABOUT:
            out += [ABOUT[bench][0].upper() + ABOUT[bench][1:], ""]
        if bench in HOW:
            out += [HOW[bench], ""]
        out += ["Measured " + "; ".join("%s at commit `%s`" % run for run in runs) + ".", ""]
        out += table_of(bench, mine)
    return "\n".join(out)


def render_svgs(rows, svg_dir):
    rows = shown(rows)
    os.makedirs(svg_dir, exist_ok=True)
    for c in CHARTS:
        path = os.path.join(svg_dir, c["file"])
        pts = chart_points(rows, c)
        if len(pts) < 2:
            if os.path.exists(path):
                os.remove(path)
            continue
        # only the series this run measured (a bench may run a subset of its cases)
        labels = [s[0] for s in c["series"] if any(s[0] in ys for _, ys in pts)]
        data = "\n".join(" ".join([repr(x)] + [repr(ys[l]) if l in ys else "NaN" for l in labels])
                         for x, ys in pts)
        xs = [x for x, _ in pts]
        ys = [y for _, v in pts for y in v.values()]
        # axes from the data: x from the first figure to the last, y around them
        script = ["set terminal svg size 760,440 dynamic font 'sans,12' background rgb 'white'",
                  "set output '%s'" % path,
                  "set title \"%s\"" % c["title"],
                  "set xlabel '%s'" % c["xlabel"], "set ylabel '%s'" % c["ylabel"],
                  "set logscale x", "set xrange [%r:%r]" % (min(xs) / 1.1, max(xs) * 1.1),
                  "set xtics (%s)" % ", ".join("'%s' %r" % ("{:,.0f}".format(x), x) for x in xs),
                  "set key left top", "set grid", "set datafile missing 'NaN'"]
        if c["logy"]:
            lo, hi = min(ys + [1.0] if c["one"] else ys), max(ys)
            script += ["set logscale y", "set yrange [%r:%r]" % (lo / 1.5, hi * 1.5)]
        else:
            script.append("set yrange [0:%r]" % (max(ys) * 1.1))
        if c["one"]:
            # the line where both take as long
            script.append("set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2")
        script.append("$d << EOD\n" + data + "\nEOD")
        script.append("plot " + ", ".join("$d using 1:%d with linespoints title '%s'" % (i + 2, l)
                                           for i, l in enumerate(labels)))
        subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True, check=True)


# ---------------------------------------------------------------- README figures
# The README's figures, each from results.tsv: (what, node's SQL, xip83,
# comparison). A row whose figures results.tsv lacks (or holds only from
# uncommitted code) is left out.
README_BEGIN = "<!-- figures: generated by tests/bench/report.py from docs/perf/results.tsv; do not edit -->"
README_END = "<!-- end of figures -->"


def readme_block(rows):
    rows = shown(rows)
    fig = {(r["bench"], r["case"], r["metric"]): float(r["value"]) for r in rows}
    runs = set()

    def get(bench, case, metric):
        v = fig.get((bench, case, metric))
        if v is None:
            raise KeyError
        runs.update((r["date"], r["commit"]) for r in rows
                    if (r["bench"], r["case"], r["metric"]) == (bench, case, metric))
        return v

    def ms(v):
        return fmt(v) + " ms"

    def times(sql, ours):
        r = sql / ours
        if r < 1:
            return "%.2f×: xip83 **slower**" % r
        return fmt(r) + "× faster"

    def wave(topics, rows_):
        case = "kind=group,rows=%d,topics=%d" % (rows_, topics)
        sql, ours = get("bench_wave_v3", case, "first_page_sql"), get("bench_wave_v3", case, "first_page_ours")
        return ("first page of a %s-topic v3 wave, %s rows stored" % (fmt(topics), fmt(rows_)),
                "merged keyset query: " + ms(sql), "`group_wave_scan`: " + ms(ours), times(sql, ours))

    def whole(topics, rows_):
        case = "kind=group,rows=%d,topics=%d" % (rows_, topics)
        sql, lat, ours = (get("bench_wave_v3", case, m) for m in
                          ("whole_wave_sql", "whole_wave_lateral", "whole_wave_stream"))
        return ("a whole %s-topic v3 wave, %s rows stored" % (fmt(topics), fmt(rows_)),
                "keyset pages: %s; LATERAL batches: %s" % (ms(sql), ms(lat)),
                "`group_wave_stream`: " + ms(ours),
                "%s / %s" % (times(sql, ours), times(lat, ours)))

    def reconnect():
        case = "case=10k caught up vs floors = ceiling"
        sql, ours = get("bench_recent", case, "sql"), get("bench_recent", case, "ours")
        return ("reconnect of 10,000 topics with nothing new", "plain SQL: " + ms(sql),
                "recent-writes tables: " + ms(ours), times(sql, ours))

    def ceilings():
        cells = []
        for layout in ("partitioned", "plain"):
            case = "layout=%s,case=originator_ceilings(NULL) vs GROUP BY max()" % layout
            sql, ours = get("bench_wave_d14n", case, "sql"), get("bench_wave_d14n", case, "ours")
            cells.append((layout, sql, ours))
        return ("d14n ceilings of every originator (partitioned table; plain table)",
                "`GROUP BY max()`: " + "; ".join(ms(s) for _, s, _ in cells),
                "`originator_ceilings(NULL)`: " + "; ".join(ms(o) for _, _, o in cells),
                "; ".join(times(s, o) for _, s, o in cells))

    def writers():
        feed = get("bench_live", "writers=16", "feed_vs_no_feed")
        notify = get("bench_live", "writers=16", "pg_notify_vs_no_feed")
        return ("rows/s of 16 writers, as a share of the same writers with no feed",
                "a `pg_notify` per row: %.0f%%" % (notify * 100), "live feed: %.0f%%" % (feed * 100), "")

    def tracked():
        v3 = get("bench_node_writers", "pair=v3 node table, tracked / untracked", "throughput_ratio")
        d14n = get("bench_node_writers", "pair=d14n node tables, tracked / untracked", "throughput_ratio")
        return ("rows/s into a node's own tables once tracked, as a share of untracked (v3; d14n)",
                "untracked: 100%", "tracked: %.0f%%; %.0f%%" % (v3 * 100, d14n * 100), "")

    def missed():
        poller = get("bench_live", "writers=16", "missed_poller")
        tail = get("bench_live", "writers=16", "missed_tail")
        return ("rows never seen under out-of-order commits",
                "an `id > last` poller: %s%%" % fmt(poller), "`xip83-tail`: %s%%" % fmt(tail), "")

    def latency(rate):
        p99 = get("bench_live", "rate=%d" % rate, "latency_p99")
        p50 = get("bench_live", "rate=%d" % rate, "latency_p50")
        return ("commit to consumer at %s rows/s" % fmt(rate), "a poller: its poll interval",
                "p50 %s, p99 %s" % (ms(p50), ms(p99)), "")

    makers = [lambda: wave(100, 200000), lambda: wave(1000, 2000000), lambda: wave(5000, 2000000),
              lambda: whole(1000, 2000000), reconnect, ceilings, writers, tracked, missed,
              lambda: latency(2000), lambda: latency(10000)]
    lines = []
    for make in makers:
        try:
            lines.append("| %s |" % " | ".join(make()))
        except KeyError:
            continue
    out = [README_BEGIN,
           "| | node's SQL today | xip83 | |",
           "|---|---|---|---|"] + lines
    if runs:
        first, last = min(d for d, _ in runs), max(d for d, _ in runs)
        out += ["", "Measured %s on a shared 2-core machine, at commits %s." % (
            "on " + first if first == last else "from %s to %s" % (first, last),
            ", ".join("`%s`" % c for c in sorted({c for _, c in runs})))]
    out.append(README_END)
    return "\n".join(out)


def readme_with(text, block):
    begin, end = text.find(README_BEGIN), text.find(README_END)
    if begin < 0 or end < begin:
        return None
    return text[:begin] + block + text[end + len(README_END):]


def main():
    args = sys.argv[1:]
    out = DOCS
    if len(args) >= 2 and args[0] == "--out":
        out = os.path.abspath(args[1])
        args = args[2:]
    if not args:
        sys.exit(__doc__)
    cmd = args[0]
    p = paths(out)
    if cmd == "collect":
        collect(out, args[1:])
        cmd = "render"
    rows = read_tsv(p["tsv"])
    page = render_page(rows)
    in_docs = os.path.realpath(out) == os.path.realpath(DOCS)
    if cmd == "render":
        os.makedirs(out, exist_ok=True)
        with open(p["page"], "w") as f:
            f.write(page)
        render_svgs(rows, p["svg"])
        if in_docs:
            text = open(README).read()
            new = readme_with(text, readme_block(rows))
            if new is None:
                sys.exit("report.py: README.md has no figures block (%s ... %s)" % (README_BEGIN, README_END))
            with open(README, "w") as f:
                f.write(new)
        print("report.py: wrote %s" % p["page"])
    elif cmd == "check":
        failed = False
        have = open(p["page"]).read() if os.path.exists(p["page"]) else ""
        if have != page:
            sys.stdout.writelines(difflib.unified_diff(
                have.splitlines(True), page.splitlines(True),
                "docs/performance.md (committed)", "docs/performance.md (rendered)"))
            print("docs/performance.md is not what tests/bench/report.py renders from "
                  "docs/perf/results.tsv: run `python3 tests/bench/report.py render`")
            failed = True
        text = open(README).read()
        new = readme_with(text, readme_block(rows))
        if new is None:
            print("README.md has no figures block (%s ... %s)" % (README_BEGIN, README_END))
            failed = True
        elif new != text:
            sys.stdout.writelines(difflib.unified_diff(
                text.splitlines(True), new.splitlines(True), "README.md (committed)", "README.md (rendered)"))
            print("README.md's figures are not what tests/bench/report.py renders from "
                  "docs/perf/results.tsv: run `python3 tests/bench/report.py render`")
            failed = True
        if failed:
            sys.exit(1)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
