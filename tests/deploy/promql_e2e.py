#!/usr/bin/env python3
"""End-to-end check of every PromQL expression of the dashboards and the rules
against real Prometheus servers scraping a running exporter.

It starts two `prometheus` processes (Debian's package) on free 127.0.0.1 ports,
both scraping --exporter-url every second: "plain" loads NO rule files (as a
Prometheus without the recording rules would), "ruled" loads config/prometheus/*.yml.
After --min-scrapes scrapes and the first rule evaluations it evaluates through
the HTTP API:
  - every expression of grafana/*.json (panel queries as instant and range
    queries, variable queries as `count by (label) (selector)`), dashboard
    variables substituted as Grafana would send them ($__rate_interval -> 1m,
    $__range -> 5m, query variables -> ".*" (their "All" value; selectors use
    =~), constants -> their value), on both servers: none errors;
  - the panels that have data (every panel with --fake-exporter, the core panels
    otherwise): each of their queries returns data on the plain server (no rules)
    and on the ruled one, as instant query and over a range (it waits up to
    --wait seconds, since histograms fill as probes complete); and again with the
    variables set to concrete values (the first value of each variable's own
    query, in chain order: job, instance, target), as a user narrowing the
    selection would send them;
  - every query reading a recording rule: on the ruled server the rule's series
    itself returns data and answers the whole panel query (every series carries
    the rule's name: the fallback adds none), and the panel query returns the same
    series (label sets, metric name aside) with values within --tolerance of the
    plain server's raw fallback, at the same evaluation time;
  - every rule expression of config/prometheus/*.yml, and every rule of the
    ruled server evaluates with health "ok".
Both servers are stopped at the end, whatever happened.

With --native both servers run with --enable-feature=native-histograms (and the
fake exporter answers the protobuf exposition, native and classic buckets in
each histogram): Prometheus 2.42 then keeps only the native series, as with
the exporter's metrics.classic: false, and every check above runs on native
histograms alone (docs/queries.md); it also checks that no _bucket series was
ingested. The panels that read classic buckets only (the gap heatmap) are not
required to return data there.

Usage:
  python3 tests/deploy/promql_e2e.py --exporter-url http://127.0.0.1:9687/metrics
  python3 tests/deploy/promql_e2e.py --fake-exporter        # tests/deploy/fake_exporter.py
  python3 tests/deploy/promql_e2e.py --fake-exporter --native   # on native histograms only
Options: --prometheus BIN, --wait S, --min-scrapes N, --core-panels "T1;T2" (or "all"),
  --tolerance R, --keep DIR (keep the servers' config, log and data), -v.
The exporter must be probing an upstream (e.g. tests/upstream) with a short
interval (~1-2 s), so that the histograms of the core panels receive data.
Exit 0 when everything passed; the last line reads "N passed, M failed".
"""
import argparse
import json
import math
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import deploylib as lib

JOB = "llm-stream-exporter"
CORE_PANELS = [
    # overview
    "Exporter scrape status",
    "Targets probed",
    "Last probe succeeded",
    "Failure ratio (time range)",
    "Exporter versions",
    "Failure ratio by reason",
    "Time to first token p50 / p95",
    "Inter-chunk gap p95 vs alert threshold",
    "Stalls per minute",
    "Stalled-probe ratio",
    "Age of last success",
    "Last probe result",
    "Config reload",
    "Targets",
    # target drill-down
    "Inter-chunk gap distribution",
    "Gap p50 / p95 / p99 by prompt",
    "Per-stream gap p95 and max gap",
    "Time to first token p50 / p95 / p99 by prompt",
    "Phases (mean per probe, stacked)",
    "Tail p50 / p95",
    "Duration p50 / p95",
    "Diagnosis",
    "Stall threshold",
    "Probes (time range)",
    "TTFT p95 by location",
    "Stalls and stalled time per minute",
    "Failures by reason",
    "Finish reasons",
    "Chunks and tokens per probe",
]
# Variables set to a concrete value in the "narrowed selection" pass, in chain order.
CONCRETE_VARIABLES = ["cluster", "job", "instance", "target"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Prom:
    def __init__(self, base):
        self.base = base

    def get(self, path, **params):
        url = f"{self.base}{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            body = e.read()
            try:
                return json.loads(body)
            except ValueError:
                return {"status": "error", "error": f"HTTP {e.code}: {body[:200]!r}"}

    def query(self, expr, at=None):
        if at is None:
            return self.get("/api/v1/query", query=expr)
        return self.get("/api/v1/query", query=expr, time=f"{at:.3f}")

    def query_range(self, expr, seconds=60, step=2):
        end = time.time()
        return self.get("/api/v1/query_range", query=expr, start=end - seconds, end=end, step=step)

    def value(self, expr):
        r = self.query(expr)
        res = r.get("data", {}).get("result", []) if r.get("status") == "success" else []
        return float(res[0]["value"][1]) if res else None


def start_prometheus(binary, exporter_url, workdir, scrape_interval, rule_files=True, args=()):
    u = urllib.parse.urlparse(exporter_url)
    if not u.scheme or not u.netloc:
        sys.exit(f"--exporter-url {exporter_url!r}: want http://HOST:PORT[/metrics]")
    port = free_port()
    cfg = {
        "global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval,
                   "scrape_timeout": scrape_interval},
        "rule_files": [str(p) for p in sorted(lib.RULES_DIR.glob("*.yml"))] if rule_files else [],
        "scrape_configs": [{
            "job_name": JOB,
            "scheme": u.scheme,
            "metrics_path": u.path or "/metrics",
            "static_configs": [{"targets": [u.netloc]}],
        }],
    }
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "prometheus.yml").write_text(json.dumps(cfg, indent=2))  # JSON is YAML
    log = open(workdir / "prometheus.log", "w")
    proc = subprocess.Popen(
        [binary, f"--config.file={workdir / 'prometheus.yml'}",
         f"--storage.tsdb.path={workdir / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
         "--storage.tsdb.retention.time=1h", "--log.level=warn", *args],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return proc, Prom(f"http://127.0.0.1:{port}")


def stop(proc):
    if proc and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_for(pred, timeout, interval=0.5):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    return pred()


def substitute(expr, dash, concrete=None):
    """lib.substitute_variables, with some query variables set to a concrete value."""
    for name, value in (concrete or {}).items():
        expr = re.sub(r"\$\{" + name + r"(?::[^}]*)?\}|\$" + name + r"\b|\[\[" + name + r"\]\]",
                      lambda _m, v=value: v, expr)
    return lib.substitute_variables(expr, dash)


def classic_only_panels():
    """Titles of the panels none of whose queries reads a native histogram: a
    _bucket series with no quantile pair (the heatmap of `le` buckets)."""
    titles = set()
    for _, dash in lib.load_dashboards():
        for p in lib.all_panels(dash):
            exprs = [t.get("expr", "") for t in p.get("targets", []) or []]
            if exprs and all("_bucket" in e and "histogram_quantile" not in e for e in exprs):
                titles.add(p.get("title"))
    return titles


def is_flag(expr):
    """A query that shows a series only while a condition holds (no data is healthy)."""
    return 'le!="+Inf"' in expr


def collect(core_titles):
    """Every expression to evaluate, as dicts: where, expr (as written), q (variables
    substituted), dash, core (must return data), range (graph panel), rule (a rule's
    expression), recorded (recording rules it reads)."""
    items = []
    recorded = lib.recorded_names()
    for path, dash in lib.load_dashboards():
        panel_types = {p.get("title"): p.get("type") for p in lib.all_panels(dash)}
        for where, expr, title in lib.dashboard_expressions(dash):
            is_range = title is not None and panel_types.get(title) in ("timeseries", "heatmap", "state-timeline")
            items.append({"where": f"{path.name} {where}", "expr": expr, "dash": dash,
                          "q": lib.substitute_variables(expr, dash),
                          # variable queries always have data (the "All" value of `cluster`
                          # without a cluster label is one series without it)
                          # flag queries show a series only while what they flag
                          # holds (the gap panels' "every gap under the first
                          # bucket", which reads the finite buckets le!="+Inf"):
                          # evaluated, but not required to return data
                          "core": (title in core_titles or title is None) and not is_flag(expr),
                          "range": is_range, "rule": False,
                          "recorded": sorted(lib.metric_names(expr) & recorded)})
    for r in lib.rules():
        items.append({"where": f"{r['_file']} {r.get('record') or r.get('alert')}", "expr": r["expr"],
                      "dash": None, "q": r["expr"], "core": False, "range": False, "rule": True,
                      "recorded": []})
    return items


def result(r):
    return r["data"]["result"] if r.get("status") == "success" else None


def by_labels(res):
    """{frozenset(labels without __name__): value} of an instant vector (or scalar)."""
    if isinstance(res, dict) or (res and not isinstance(res[0], dict)):
        return {frozenset(): float(res[1])}
    return {frozenset((k, v) for k, v in s["metric"].items() if k != "__name__"): float(s["value"][1])
            for s in res}


def close(a, b, tol):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tol * max(abs(a), abs(b)) + 1e-3


def concrete_values(prom, dash):
    """{variable: value} for CONCRETE_VARIABLES: the first value of each variable's
    query, the variables before it already concrete (left out when it has none, e.g.
    no cluster label: the variable stays "All")."""
    values = {}
    variables = {v["name"]: v for v in dash.get("templating", {}).get("list", [])}
    for name in CONCRETE_VARIABLES:
        v = variables.get(name)
        if not v:
            continue
        sel, label = lib.label_values_metric(lib.variable_query_text(v))
        if sel is None:
            continue
        res = result(prom.query(f"count by ({label}) ({substitute(sel, dash, values)})")) or []
        found = sorted(s["metric"][label] for s in res if s["metric"].get(label))
        if found:
            values[name] = found[0]
    return values


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--exporter-url", help="the running exporter's metrics URL")
    src.add_argument("--fake-exporter", action="store_true",
                     help="scrape tests/deploy/fake_exporter.py instead (tests the PromQL itself)")
    ap.add_argument("--prometheus", default=shutil.which("prometheus") or "/usr/bin/prometheus")
    ap.add_argument("--scrape-interval", default="1s")
    ap.add_argument("--min-scrapes", type=int, default=5)
    ap.add_argument("--wait", type=float, default=120, help="seconds to wait for core panel data")
    ap.add_argument("--core-panels", help="';'-separated panel titles that must return data, or "
                    "\"all\" (default: all with --fake-exporter, else " + "; ".join(CORE_PANELS) + ")")
    ap.add_argument("--tolerance", type=float, default=0.15,
                    help="relative difference allowed between a recording rule and its raw fallback")
    ap.add_argument("--native", action="store_true",
                    help="Prometheus with native histograms on (protobuf scrape): native series only")
    ap.add_argument("--keep", help="keep the servers' config, log and data in this folder")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if not shutil.which(args.prometheus) and not os.path.exists(args.prometheus):
        sys.exit(f"prometheus binary not found ({args.prometheus}); Debian: apt-get install prometheus")
    all_titles = [p.get("title") for _, d in lib.load_dashboards() for p in lib.all_panels(d)
                  if p.get("type") != "row" and p.get("targets")]
    spec = args.core_panels or ("all" if args.fake_exporter else ";".join(CORE_PANELS))
    core = all_titles if spec.strip() == "all" else [t.strip() for t in spec.split(";") if t.strip()]
    if args.native:
        core = [t for t in core if t not in classic_only_panels()]

    fake = None
    url = args.exporter_url
    if args.fake_exporter:
        import fake_exporter
        fake, url = fake_exporter.serve(0, probe_interval=0.3, native=args.native)

    workdir = pathlib.Path(args.keep) if args.keep else pathlib.Path(tempfile.mkdtemp(prefix="lse-prom-"))
    workdir.mkdir(parents=True, exist_ok=True)
    passed, failed = 0, []

    def check(ok, what):
        nonlocal passed
        if ok:
            passed += 1
            if args.verbose:
                print(f"ok   {what}")
        else:
            failed.append(what)
            print(f"FAIL {what}")
        return ok

    procs = []
    try:
        servers = {}
        for name, with_rules in (("plain", False), ("ruled", True)):
            proc, prom = start_prometheus(args.prometheus, url, workdir / name, args.scrape_interval,
                                          rule_files=with_rules,
                                          args=["--enable-feature=native-histograms"] if args.native else [])
            procs.append(proc)
            servers[name] = (proc, prom)
        for name, (proc, prom) in servers.items():
            ready = wait_for(lambda: proc.poll() is None and _ok(prom, "/-/ready"), 60)
            if not check(bool(ready), f"{name} prometheus ready on {prom.base}"):
                print((workdir / name / "prometheus.log").read_text()[-3000:])
                return 1
            up = wait_for(lambda: prom.value(f'up{{job="{JOB}"}}') == 1.0, 60)
            if not check(bool(up), f"{name} prometheus scrapes {url} (up == 1)"):
                r = prom.get("/api/v1/targets")
                print(json.dumps(r.get("data", {}).get("activeTargets", []), indent=1)[:2000])
                return 1
        plain, ruled = servers["plain"][1], servers["ruled"][1]
        for name, (_, prom) in servers.items():
            scrapes = wait_for(lambda: (prom.value(f'count_over_time(up{{job="{JOB}"}}[10m])') or 0)
                               >= args.min_scrapes, 60)
            check(bool(scrapes), f"{name}: at least {args.min_scrapes} scrapes")
        check(not (plain.get("/api/v1/rules").get("data", {}).get("groups")),
              "plain prometheus has no rules loaded")
        if args.native:
            native = {h: wait_for(lambda h=h: result(plain.query(f"count({h})")), 30) for h in lib.HISTOGRAMS}
            check(all(native.values()), f"native series ingested: missing {sorted(h for h, v in native.items() if not v)}")
            buckets = result(plain.query('count by (__name__) ({__name__=~"llm_stream_.*_bucket"})'))
            check(buckets == [], f"no classic _bucket series next to the native ones: {buckets}")
        # Rule groups loaded and evaluated.
        rule_groups = {g["name"] for _, doc in lib.load_rule_files() for g in doc["groups"]}
        def rules_evaluated():
            r = ruled.get("/api/v1/rules")
            groups = r.get("data", {}).get("groups", [])
            names = {g["name"] for g in groups}
            if names != rule_groups:
                return None
            if any(not g.get("lastEvaluation") or g["lastEvaluation"].startswith("0001") for g in groups):
                return None
            return groups
        groups = wait_for(rules_evaluated, 30)
        check(bool(groups), f"rule groups loaded and evaluated: {sorted(rule_groups)}")
        for g in groups or []:
            for r in g["rules"]:
                check(r.get("health") == "ok",
                      f"rule {r['name']} evaluates with health ok ({r.get('health')}: {r.get('lastError', '')})")

        items = collect(set(core))
        found_core = {t for t in core if any(f"{t!r}" in i["where"] for i in items)}
        check(found_core == set(core), f"core panels exist: missing {sorted(set(core) - found_core)}")
        core_items = [i for i in items if i["core"]]

        # Panels that have data: wait until each of their queries returns data on both
        # servers (plain: no recording rules, so the raw fallbacks answer).
        def missing_data():
            missing = []
            for i in core_items:
                for name, prom in (("plain", plain), ("ruled", ruled)):
                    if not result(prom.query(i["q"])):
                        missing.append((name, i["where"]))
            return missing
        deadline = time.time() + args.wait
        missing = missing_data()
        while missing and time.time() < deadline:
            time.sleep(2)
            missing = missing_data()
        for i in core_items:
            for name in ("plain", "ruled"):
                check((name, i["where"]) not in missing,
                      f"{name} ({'no rules' if name == 'plain' else 'rules'}): query returns data: {i['where']}")

        # Every expression: no error (instant, and range for graph panels), on both.
        for i in items:
            for name, prom in (("plain", plain), ("ruled", ruled)):
                if i["rule"] and name == "plain" and i["recorded"]:
                    continue
                r = prom.query(i["q"])
                check(r.get("status") == "success",
                      f"{name}: instant query ok: {i['where']}" + ("" if r.get("status") == "success"
                          else f"\n    {i['q']}\n    {r.get('errorType')}: {r.get('error')}"))
                if i["range"]:
                    r = prom.query_range(i["q"])
                    ok = r.get("status") == "success"
                    check(ok, f"{name}: range query ok: {i['where']}" + ("" if ok
                          else f"\n    {i['q']}\n    {r.get('errorType')}: {r.get('error')}"))
                    if ok and i["core"]:
                        check(bool(r["data"]["result"]), f"{name}: range query returns data: {i['where']}")

        # A narrowed selection: the variables set to concrete values, as a user picking
        # a job, an instance and a target sends them (recorded series that aggregated
        # those labels away no longer match, and the raw fallbacks answer).
        for path, dash in lib.load_dashboards():
            values = concrete_values(plain, dash)
            check(all(v in values for v in ("job", "instance", "target")),
                  f"{path.name}: concrete job/instance/target found by the variable queries: {values}")
            for i in core_items:
                if i["dash"] is not dash:
                    continue
                q = substitute(i["expr"], dash, values)
                for name, prom in (("plain", plain), ("ruled", ruled)):
                    check(bool(result(prom.query(q))),
                          f"{name}: query returns data with {values}: {i['where']}")

        # Recording rules and their raw fallbacks agree.
        recorded_items = [i for i in items if i["recorded"] and not i["rule"]]
        for i in recorded_items:
            for rec in i["recorded"]:
                m = re.search(re.escape(rec) + r"\{[^}]*\}", i["expr"])
                sel = lib.substitute_variables(m.group(0), i["dash"]) if m else rec
                if i["core"]:
                    check(bool(wait_for(lambda: result(ruled.query(sel)), 30)),
                          f"ruled: the recording rule's own series returns data: {sel}")

        def compare(i):
            """Problems of one query between the servers, at the same evaluation time."""
            at = time.time() - 1
            a, b = result(plain.query(i["q"], at)), result(ruled.query(i["q"], at))
            if a is None or b is None:
                return "query failed"
            la, lb = by_labels(a), by_labels(b)
            if set(la) != set(lb):
                return (f"different series: only without rules {[dict(x) for x in set(la) - set(lb)][:3]}, "
                        f"only with rules {[dict(x) for x in set(lb) - set(la)][:3]}")
            raw = [s["metric"] for s in b if isinstance(s, dict) and s["metric"].get("__name__") not in i["recorded"]]
            if raw:
                return f"with rules, series not from the recording rule (the fallback doubles them?): {raw[:3]}"
            bad = [(dict(k), la[k], lb[k]) for k in la if not close(la[k], lb[k], args.tolerance)]
            return f"values differ by more than {args.tolerance:.0%}: {bad[:3]}" if bad else None

        # Right after start the windows hold few probes, and the two servers' scrapes
        # differ by a probe or two: give the values time to settle.
        problems = {}
        deadline = time.time() + max(args.wait, 60)
        while True:
            problems = {i["where"]: compare(i) for i in recorded_items}
            problems = {k: v for k, v in problems.items() if v}
            if not problems or time.time() > deadline:
                break
            time.sleep(3)
        for i in recorded_items:
            p = problems.get(i["where"])
            check(not p, f"recorded vs raw: same series and values with and without rules: {i['where']}"
                  + (f"\n    {p}" if p else ""))
        check(bool(recorded_items) or not lib.recorded_names(),
              f"{len(recorded_items)} panel queries read recording rules")
        print(f"promql_e2e: {len(items)} expressions from {len(lib.load_dashboards())} dashboards and "
              f"{len(lib.rules())} rules, {len(core)} panels with data, {len(recorded_items)} queries "
              f"on recording rules, exporter {url}")
    finally:
        for proc in procs:
            stop(proc)
        if fake:
            fake.shutdown()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"{passed} passed, {len(failed)} failed")
    return 1 if failed else 0


def _ok(prom, path):
    try:
        with urllib.request.urlopen(prom.base + path, timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


if __name__ == "__main__":
    sys.exit(main())
