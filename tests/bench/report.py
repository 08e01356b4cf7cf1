#!/usr/bin/python3
"""Benchmark results for docs/performance.md.

  report.py collect LOG...   take the RESULT lines of bench logs into
                             docs/perf/results.tsv, dated, with the commit measured
  report.py render           write docs/performance.md and docs/perf/*.svg (gnuplot)
  report.py check            fail, printing the diff, when docs/performance.md is
                             not what render writes from docs/perf/results.tsv

A bench prints "RESULT<TAB>bench<TAB>case<TAB>metric<TAB>value<TAB>unit" lines
(tl_result in tests/libpq/lib). results.tsv keeps the latest figure of every
(bench, case, metric), in the order the benches printed them; a new run of a
bench replaces its own lines and leaves the others. Older figures live in git.
The page is generated, never edited, so it always says which commit and day
each table measured.
"""
import csv
import difflib
import os
import subprocess
import sys
from collections import OrderedDict

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TSV = os.path.join(TOP, "docs", "perf", "results.tsv")
PAGE = os.path.join(TOP, "docs", "performance.md")
SVG_DIR = os.path.join(TOP, "docs", "perf")
FIELDS = ["date", "commit", "bench", "case", "metric", "value", "unit"]

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
    ("bench_gateway", "xip83-gateway under a load client on nghttp2: streams opened and caught "
     "up, the gateway's RSS and database connections, then live rows on random topics: latency "
     "from insert to frame read, and the gateway's CPU share."),
])

# Charts: (file, title, bench, filter on the case, x key, series, y label, log y).
# A series is (label, metric) or (label, numerator metric, denominator metric):
# the ratio of two figures of the same case.
CHARTS = [
    ("wave_page_topics.svg", "v3 first page: plain SQL time / xip83 time, by wave topics",
     "bench_wave_v3", {"kind": "group"}, "topics",
     [("first page", "first_page_sql", "first_page_ours"),
      ("whole wave", "whole_wave_sql", "whole_wave_stream")], "times faster than the SQL", True),
    ("wave_page_rows.svg", "v3 first page of 1,000 topics: plain SQL time / xip83 time, by rows stored",
     "bench_wave_v3", {"kind": "group", "topics": "1000"}, "rows",
     [("first page", "first_page_sql", "first_page_ours")], "times faster than the SQL", True),
    ("reconnect_topics.svg", "caught-up reconnect (nothing new): plain SQL time / xip83 time, by topics",
     "bench_wave_v3", {"kind": "group"}, "topics",
     [("group", "caught_up_sql", "caught_up_ours")], "times faster than the SQL", True),
    ("live_latency_rate.svg", "live feed: commit to xip83-tail's print, by write rate",
     "bench_live", {}, "rate",
     [("p50", "latency_p50"), ("p99", "latency_p99")], "ms", False),
]


def read_tsv():
    if not os.path.exists(TSV):
        return []
    with open(TSV, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def write_tsv(rows):
    os.makedirs(os.path.dirname(TSV), exist_ok=True)
    with open(TSV, "w", newline="") as f:
        w = csv.DictWriter(f, FIELDS, delimiter="\t", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def git(*args):
    return subprocess.run(["git", "-C", TOP] + list(args), capture_output=True, text=True).stdout.strip()


def collect(logs):
    commit = git("rev-parse", "--short=12", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no", "--", "src", "control", "tests"):
        commit += "+changes"
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
    rows = read_tsv()
    # a bench's new run replaces its figures of the same case and metric, in place
    index = {(r["bench"], r["case"], r["metric"]): i for i, r in enumerate(rows)}
    for r in new:
        key = (r["bench"], r["case"], r["metric"])
        if key in index:
            rows[index[key]] = r
        else:
            index[key] = len(rows)
            rows.append(r)
    write_tsv(rows)
    print("report.py: %d figures from %d log(s) into %s" % (len(new), len(logs), os.path.relpath(TSV, TOP)))


def case_dict(case):
    d = {}
    for part in case.split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            d[k] = v
    return d


def fmt(value):
    v = float(value)
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return "{:,.0f}".format(v)
    if abs(v) >= 10:
        return "%.1f" % v
    if abs(v) >= 1:
        return "%.2f" % v
    return "%.3g" % v


def chart_points(rows, chart):
    """(x, {label: y}) for every x of the chart, sorted by x."""
    _, _, bench, want, xkey, series, _, _ = chart
    by_case = OrderedDict()
    for r in rows:
        if r["bench"] != bench:
            continue
        c = case_dict(r["case"])
        if any(c.get(k) != v for k, v in want.items()) or xkey not in c:
            continue
        by_case.setdefault(r["case"], (c, {}))[1][r["metric"]] = float(r["value"])
    points = {}
    for c, metrics in by_case.values():
        x = float(c[xkey])
        for s in series:
            label = s[0]
            if len(s) == 2 and s[1] in metrics:
                y = metrics[s[1]]
            elif len(s) == 3 and s[1] in metrics and metrics.get(s[2]):
                y = metrics[s[1]] / metrics[s[2]]
            else:
                continue
            # several cases may share an x (another parameter differs): keep the first
            points.setdefault(x, OrderedDict()).setdefault(label, y)
    return sorted(points.items())


def render_page(rows):
    out = ["# Performance", "",
           "Generated by `tests/bench/report.py` from [perf/results.tsv](perf/results.tsv); do not",
           "edit. `bash tests/driver.sh bench [NAME [ARGS]]` runs the benchmarks in `tests/bench/`",
           "on a throwaway cluster, takes their figures into `results.tsv` (a bench run replaces",
           "its own figures) and writes this page and the charts again. Every table says the day",
           "and the commit it measured; figures from earlier runs are in the git history of",
           "`results.tsv`. Each bench compares xip83 with the SQL node servers run today on the",
           "same data in the same run: read the ratios, not the absolute times, which depend on",
           "the machine (the figures here come from a shared 2-core virtual machine).", ""]
    charts = [c for c in CHARTS if len(chart_points(rows, c)) >= 2]
    if charts:
        out += ["## Charts", ""]
        for c in charts:
            out += ["![%s](perf/%s)" % (c[1], c[0]), ""]
    benches = list(OrderedDict.fromkeys(r["bench"] for r in rows))
    benches.sort(key=lambda b: list(ABOUT).index(b) if b in ABOUT else len(ABOUT))
    for bench in benches:
        mine = [r for r in rows if r["bench"] == bench]
        runs = sorted({(r["date"], r["commit"]) for r in mine})
        out += ["## " + bench, ""]
        if bench in ABOUT:
            out += [ABOUT[bench][0].upper() + ABOUT[bench][1:], ""]
        out += ["Measured " + "; ".join("%s at commit `%s`" % run for run in runs) + ".", ""]
        metrics = list(OrderedDict.fromkeys((r["metric"], r["unit"]) for r in mine))
        table = OrderedDict()
        for r in mine:
            table.setdefault(r["case"], {})[r["metric"]] = r["value"]
        out.append("| case | " + " | ".join("%s (%s)" % m for m in metrics) + " |")
        out.append("|---" * (len(metrics) + 1) + "|")
        for case, vals in table.items():
            cells = [fmt(vals[m]) if m in vals else "" for m, _ in metrics]
            out.append("| %s | %s |" % (case.replace("|", "\\|"), " | ".join(cells)))
        out.append("")
    return "\n".join(out)


def render_svgs(rows):
    for c in CHARTS:
        path = os.path.join(SVG_DIR, c[0])
        pts = chart_points(rows, c)
        if len(pts) < 2:
            if os.path.exists(path):
                os.remove(path)
            continue
        fname, title, _, _, xkey, series, ylabel, logy = c
        # only the series this run measured (a bench may run a subset of its cases)
        labels = [s[0] for s in series if any(s[0] in ys for _, ys in pts)]
        data = "\n".join(" ".join([repr(x)] + [repr(ys[l]) if l in ys else "NaN" for l in labels])
                         for x, ys in pts)
        script = ["set terminal svg size 720,420 dynamic font 'sans,12' background rgb 'white'",
                  "set output '%s'" % path,
                  "set title \"%s\"" % title,
                  "set xlabel '%s'" % xkey, "set ylabel '%s'" % ylabel,
                  "set logscale x", "set key left top", "set grid",
                  "set datafile missing 'NaN'"]
        if logy:
            script.append("set logscale y")
        script.append("$d << EOD\n" + data + "\nEOD")
        script.append("plot " + ", ".join("$d using 1:%d with linespoints title '%s'" % (i + 2, l)
                                           for i, l in enumerate(labels)))
        subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True, check=True)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd = sys.argv[1]
    if cmd == "collect":
        collect(sys.argv[2:])
        cmd = "render"
    rows = read_tsv()
    page = render_page(rows)
    if cmd == "render":
        with open(PAGE, "w") as f:
            f.write(page)
        render_svgs(rows)
    elif cmd == "check":
        have = open(PAGE).read() if os.path.exists(PAGE) else ""
        if have != page:
            sys.stdout.writelines(difflib.unified_diff(
                have.splitlines(True), page.splitlines(True),
                "docs/performance.md (committed)", "docs/performance.md (rendered)"))
            print("docs/performance.md is not what tests/bench/report.py renders from "
                  "docs/perf/results.tsv: run `python3 tests/bench/report.py render`")
            sys.exit(1)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
