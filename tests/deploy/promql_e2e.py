#!/usr/bin/env python3
"""End-to-end check of every PromQL expression of the dashboards and the rules
against a real Prometheus scraping a running exporter.

It starts `prometheus` (Debian's package) on a free 127.0.0.1 port with a
temporary config that scrapes --exporter-url every second and loads
config/prometheus/*.yml, waits for --min-scrapes scrapes and for the recording
rules, then evaluates through the HTTP API:
  - every expression of grafana/*.json (panel queries as instant and range
    queries, variable queries), dashboard variables substituted as Grafana
    would send them ($__rate_interval -> 1m, $__range -> 5m, query variables ->
    ".*" (their "All" value; selectors use =~), constants -> their value);
  - every rule expression of config/prometheus/*.yml;
and asserts that none errors, that every rule evaluates with health "ok", and
that every query of the core panels returns data (it waits up to --wait
seconds for that, since histograms fill as probes complete). Prometheus is
stopped at the end, whatever happened.

Usage:
  python3 tests/deploy/promql_e2e.py --exporter-url http://127.0.0.1:9687/metrics
  python3 tests/deploy/promql_e2e.py --fake-exporter        # tests/deploy/fake_exporter.py
Options: --prometheus BIN, --wait S, --min-scrapes N, --core-panels "T1;T2",
  --keep DIR (keep Prometheus' config, log and data), -v.
The exporter must be probing an upstream (e.g. tests/upstream) with a short
interval (~1-2 s), so that the histograms of the core panels receive data.
Exit 0 when everything passed; the last line reads "N passed, M failed".
"""
import argparse
import json
import os
import pathlib
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
]


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

    def query(self, expr):
        return self.get("/api/v1/query", query=expr)

    def query_range(self, expr, seconds=60, step=2):
        end = time.time()
        return self.get("/api/v1/query_range", query=expr, start=end - seconds, end=end, step=step)

    def value(self, expr):
        r = self.query(expr)
        res = r.get("data", {}).get("result", []) if r.get("status") == "success" else []
        return float(res[0]["value"][1]) if res else None


def start_prometheus(binary, exporter_url, workdir, scrape_interval):
    u = urllib.parse.urlparse(exporter_url)
    if not u.scheme or not u.netloc:
        sys.exit(f"--exporter-url {exporter_url!r}: want http://HOST:PORT[/metrics]")
    port = free_port()
    cfg = {
        "global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval,
                   "scrape_timeout": scrape_interval},
        "rule_files": [str(p) for p in sorted(lib.RULES_DIR.glob("*.yml"))],
        "scrape_configs": [{
            "job_name": JOB,
            "scheme": u.scheme,
            "metrics_path": u.path or "/metrics",
            "static_configs": [{"targets": [u.netloc]}],
        }],
    }
    (workdir / "prometheus.yml").write_text(json.dumps(cfg, indent=2))  # JSON is YAML
    log = open(workdir / "prometheus.log", "w")
    proc = subprocess.Popen(
        [binary, f"--config.file={workdir / 'prometheus.yml'}",
         f"--storage.tsdb.path={workdir / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
         "--storage.tsdb.retention.time=1h", "--log.level=warn"],
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


def collect(core_titles):
    """[(where, expr, core?, range?)] of every expression to evaluate."""
    items = []
    for path, dash in lib.load_dashboards():
        panel_types = {p.get("title"): p.get("type") for p in lib.all_panels(dash)}
        for where, expr, title in lib.dashboard_expressions(dash):
            q = lib.substitute_variables(expr, dash)
            is_range = title is not None and panel_types.get(title) in ("timeseries", "heatmap", "state-timeline")
            items.append((f"{path.name} {where}", q, title in core_titles, is_range))
    for r in lib.rules():
        items.append((f"{r['_file']} {r.get('record') or r.get('alert')}", r["expr"], False, False))
    return items


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
    ap.add_argument("--core-panels", help="';'-separated panel titles that must return data "
                    "(default: " + "; ".join(CORE_PANELS) + ")")
    ap.add_argument("--keep", help="keep Prometheus' config, log and data in this folder")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if not shutil.which(args.prometheus) and not os.path.exists(args.prometheus):
        sys.exit(f"prometheus binary not found ({args.prometheus}); Debian: apt-get install prometheus")
    core = [t.strip() for t in (args.core_panels.split(";") if args.core_panels else CORE_PANELS) if t.strip()]

    fake = None
    url = args.exporter_url
    if args.fake_exporter:
        import fake_exporter
        fake, url = fake_exporter.serve(0, probe_interval=0.3)

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

    proc = None
    try:
        proc, prom = start_prometheus(args.prometheus, url, workdir, args.scrape_interval)
        ready = wait_for(lambda: proc.poll() is None and _ok(prom, "/-/ready"), 60)
        if not check(bool(ready), f"prometheus ready on {prom.base}"):
            print((workdir / "prometheus.log").read_text()[-3000:])
            return 1
        up = wait_for(lambda: prom.value(f'up{{job="{JOB}"}}') == 1.0, 60)
        if not check(bool(up), f"scrapes {url} (up == 1)"):
            r = prom.get("/api/v1/targets")
            print(json.dumps(r.get("data", {}).get("activeTargets", []), indent=1)[:2000])
            return 1
        scrapes = wait_for(lambda: (prom.value(f'count_over_time(up{{job="{JOB}"}}[10m])') or 0)
                           >= args.min_scrapes, 60)
        check(bool(scrapes), f"at least {args.min_scrapes} scrapes")
        # Rule groups loaded and evaluated.
        rule_groups = {g["name"] for _, doc in lib.load_rule_files() for g in doc["groups"]}
        def rules_evaluated():
            r = prom.get("/api/v1/rules")
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
        titles = {i[0] for i in items}
        found_core = {t for t in core if any(f"{t!r}" in w for w, *_ in items)}
        check(found_core == set(core), f"core panels exist: missing {sorted(set(core) - found_core)}")

        # Core panels: wait until each of their queries returns data.
        def core_status():
            missing = []
            for where, q, is_core, _ in items:
                if is_core:
                    r = prom.query(q)
                    if r.get("status") != "success" or not r["data"]["result"]:
                        missing.append(where)
            return missing
        deadline = time.time() + args.wait
        missing = core_status()
        while missing and time.time() < deadline:
            time.sleep(2)
            missing = core_status()
        for where, q, is_core, _ in items:
            if is_core:
                check(where not in missing, f"core panel query returns data: {where}")

        # Every expression: no error (instant, and range for graph panels).
        for where, q, is_core, is_range in items:
            r = prom.query(q)
            check(r.get("status") == "success",
                  f"instant query ok: {where}" + ("" if r.get("status") == "success"
                                                  else f"\n    {q}\n    {r.get('errorType')}: {r.get('error')}"))
            if is_range:
                r = prom.query_range(q)
                check(r.get("status") == "success",
                      f"range query ok: {where}" + ("" if r.get("status") == "success"
                                                    else f"\n    {q}\n    {r.get('errorType')}: {r.get('error')}"))
        print(f"promql_e2e: {len(items)} expressions from {len(lib.load_dashboards())} dashboards and "
              f"{len(lib.rules())} rules, {len(core)} core panels, exporter {url}")
    finally:
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
