#!/usr/bin/env python3
"""Checks the Grafana dashboards in grafana/*.json.

Fails (exit 1) when:
- a dashboard lacks a fixed uid, a title, or a current schemaVersion (>= 36), or
  two dashboards share a uid;
- panel ids are not unique within a dashboard (rows' nested panels included);
- there is no `datasource` variable of type datasource/prometheus, or any panel,
  query or query variable is not on it (`${datasource}` / `$datasource`), or a
  datasource uid is hard-coded anywhere (also `__inputs` / `${DS_...}`);
- the target/prompt/location variables are missing;
- a query names a metric that is not in DESIGN §3 (+ llm_stream_diagnosis) or a
  recording rule of config/prometheus/ (histograms: _bucket/_sum/_count);
- a rate()/increase() window is not $__rate_interval (or $__range);
- a panel showing seconds (a *_seconds quantile or recording rule) is not in unit "s";
- the hidden threshold constants differ from the alert thresholds;
- grafana/build_dashboards.py would write something else (stale JSON).

Usage: python3 tests/deploy/check_dashboards.py [--design ../shared/DESIGN.md]
"""
import argparse
import re
import subprocess
import sys

import deploylib as lib

DS_REFS = {"${datasource}", "$datasource"}


def walk(node, path="$"):
    if isinstance(node, dict):
        for k, v in node.items():
            yield path, k, v
            yield from walk(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, f"{path}[{i}]")


def alert_threshold(name):
    for r in lib.rules():
        if r.get("alert") == name:
            m = re.search(r">\s*([0-9.eE+-]+)\s*$", r["expr"].strip())
            return m.group(1) if m else None
    return None


def check_dashboard(path, dash, allowed, errors):
    def err(msg):
        errors.append(f"{path.name}: {msg}")

    if not dash.get("uid") or not re.fullmatch(r"[a-z0-9-]{1,40}", dash["uid"]):
        err(f"uid must be fixed, lower-case, <= 40 chars: {dash.get('uid')!r}")
    if not dash.get("title"):
        err("no title")
    if not isinstance(dash.get("schemaVersion"), int) or dash["schemaVersion"] < 36:
        err(f"schemaVersion {dash.get('schemaVersion')} is not current (>= 36)")
    if "__inputs" in dash or "__requires" in dash:
        err("exported with __inputs/__requires: provisioning needs the datasource variable instead")

    variables = {v["name"]: v for v in dash.get("templating", {}).get("list", [])}
    ds = variables.get("datasource")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        err("no `datasource` variable of type datasource with query prometheus")
    for name in ("target", "prompt", "location"):
        if name not in variables:
            err(f"no `{name}` variable")
    for v in variables.values():
        if v.get("type") == "query":
            d = v.get("datasource")
            uid = d.get("uid") if isinstance(d, dict) else d
            if uid not in DS_REFS:
                err(f"variable {v['name']} not on the datasource variable: {d!r}")

    # No hard-coded datasource anywhere.
    for where, key, value in walk(dash):
        if key == "datasource":
            uid = value.get("uid") if isinstance(value, dict) else value
            if isinstance(value, dict) and value.get("type") not in (None, "prometheus", "datasource"):
                err(f"{where}: datasource type {value.get('type')!r}")
            if uid is not None and uid not in DS_REFS:
                err(f"{where}: hard-coded datasource {value!r}")
        if isinstance(value, str) and "${DS_" in value:
            err(f"{where}.{key}: exported datasource input {value!r}")

    ids = []
    for p in lib.all_panels(dash):
        ids.append(p.get("id"))
        d = p.get("datasource")
        if not isinstance(d, dict) or d.get("uid") not in DS_REFS:
            err(f"panel {p.get('id')} {p.get('title')!r}: datasource is {d!r}, not ${{datasource}}")
        if not p.get("gridPos"):
            err(f"panel {p.get('id')} {p.get('title')!r}: no gridPos")
        if p.get("type") != "row" and not p.get("targets"):
            err(f"panel {p.get('id')} {p.get('title')!r}: no queries")
        for t in p.get("targets", []) or []:
            td = t.get("datasource")
            if not isinstance(td, dict) or td.get("uid") not in DS_REFS:
                err(f"panel {p.get('id')} ref {t.get('refId')}: query datasource is {td!r}")
        exprs = [t.get("expr", "") for t in p.get("targets", []) or []]
        seconds = any(
            re.search(r"histogram_quantile\([^,]+,.*_seconds_bucket", e)
            or re.search(r"^[a-z_]+:[a-z0-9_]*_seconds:", e) for e in exprs)
        if seconds and p.get("fieldConfig", {}).get("defaults", {}).get("unit") != "s":
            err(f"panel {p.get('id')} {p.get('title')!r}: shows seconds but unit is not 's'")
    dup = sorted({i for i in ids if ids.count(i) > 1}, key=str)
    if dup or None in ids:
        err(f"panel ids not unique or missing: {dup}")

    for where, expr, _ in lib.dashboard_expressions(dash):
        for name in sorted(lib.metric_names(expr)):
            if name not in allowed:
                err(f"{where}: metric {name!r} is neither in DESIGN §3 nor a recording rule")
        for m in re.finditer(r"\b(rate|increase|irate|delta)\s*\((.*?)\[([^\]]*)\]", expr):
            if m.group(3) not in ("$__rate_interval", "$__range"):
                err(f"{where}: {m.group(1)}() window [{m.group(3)}] is not $__rate_interval")

    for var, alert in (("gap_p95_warning", "LLMStreamGapP95High"),
                       ("gap_p95_critical", "LLMStreamGapP95Critical")):
        if var in variables:
            want = alert_threshold(alert)
            if want is None or float(variables[var]["query"]) != float(want):
                err(f"variable {var}={variables[var]['query']} differs from {alert}'s threshold {want}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--design", default=str(lib.REPO.parent / "shared" / "DESIGN.md"),
                    help="DESIGN.md to cross-check the metric list against (skipped if absent)")
    args = ap.parse_args()
    errors = []

    allowed = lib.exposed_series_names() | lib.recorded_names()
    try:
        names = lib.design_metric_names(args.design)
        missing = {n for n in names if n not in lib.DESIGN_METRICS}
        # DESIGN writes output/input tokens on one row; both are in the list.
        if missing:
            errors.append(f"DESIGN §3 names metrics unknown to deploylib: {sorted(missing)}")
        print(f"cross-checked {len(names)} metric names with {args.design}")
    except FileNotFoundError:
        print(f"note: {args.design} not found; metric list not cross-checked")

    dashboards = lib.load_dashboards()
    if len(dashboards) < 2:
        errors.append("expected the overview and the target drill-down dashboards in grafana/")
    uids = [d.get("uid") for _, d in dashboards]
    if len(set(uids)) != len(uids):
        errors.append(f"dashboard uids not unique: {uids}")
    n_panels = 0
    for path, dash in dashboards:
        check_dashboard(path, dash, allowed, errors)
        n_panels += len(lib.all_panels(dash))

    gen = subprocess.run([sys.executable, str(lib.GRAFANA_DIR / "build_dashboards.py"), "--check"],
                         capture_output=True, text=True)
    if gen.returncode != 0:
        errors.append("grafana JSON is stale: " + gen.stderr.strip())

    for e in errors:
        print("FAIL " + e)
    print(f"check_dashboards: {len(dashboards)} dashboards, {n_panels} panels, "
          f"{len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
