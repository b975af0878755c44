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
- a query names a metric that is not in DESIGN §3 or a recording rule of
  config/prometheus/ (histograms: _bucket/_sum/_count);
- deploylib's metric list and the §3 table of docs/DESIGN.md differ, or
  ../shared/DESIGN.md (when present) names a metric deploylib does not know;
- the overview lacks the "Targets" table of llm_stream_target_info;
- a rate()/increase() window is not $__rate_interval (or $__range);
- a panel showing seconds (a *_seconds quantile or recording rule) is not in unit "s";
- the hidden threshold constants differ from the alert thresholds;
- grafana/build_dashboards.py would write something else (stale JSON).

Usage: python3 tests/deploy/check_dashboards.py [--project-design docs/DESIGN.md]
                                                [--design ../shared/DESIGN.md]
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


def cross_check_design(project_design, shared_design):
    """deploylib's metric list against the §3 tables (see the docstring)."""
    errors = []
    names = lib.design_metric_names(project_design)
    # DESIGN writes output/input tokens on one row; both are in the list.
    for what, diff in (("names metrics unknown to deploylib", names - lib.DESIGN_METRICS),
                       ("lacks metrics deploylib lists", lib.DESIGN_METRICS - names)):
        if diff:
            errors.append(f"{project_design} §3 {what}: {sorted(diff)}")
    print(f"cross-checked {len(names)} metric names with {project_design}")
    try:
        missing = lib.design_metric_names(shared_design) - lib.DESIGN_METRICS
        if missing:
            errors.append(f"{shared_design} §3 names metrics unknown to deploylib: {sorted(missing)}")
        print(f"cross-checked the metric names of {shared_design}")
    except FileNotFoundError:
        print(f"note: {shared_design} not found; not cross-checked")
    return errors


def check_targets_table(path, dash, errors):
    """The overview's "Targets" table: one row per target from llm_stream_target_info,
    with its api, model and host as columns."""
    panels = [p for p in lib.all_panels(dash) if p.get("title") == "Targets"]
    if not panels:
        errors.append(f"{path.name}: no \"Targets\" panel")
        return
    p = panels[0]
    exprs = [t.get("expr", "") for t in p.get("targets", []) or []]
    if p.get("type") != "table" or not any("llm_stream_target_info" in e for e in exprs):
        errors.append(f"{path.name}: \"Targets\" is not a table of llm_stream_target_info")
    for t in p.get("targets", []) or []:
        if t.get("format") != "table" or not t.get("instant"):
            errors.append(f"{path.name}: \"Targets\" query {t.get('refId')} is not an instant table query")
    labels = re.findall(r"by \(([^)]*)\)", " ".join(exprs))
    shown = {x.strip() for group in labels for x in group.split(",")}
    for label in ("target", "api", "model", "host"):
        if label not in shown:
            errors.append(f"{path.name}: \"Targets\" does not keep the label {label!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--design", default=str(lib.REPO.parent / "shared" / "DESIGN.md"),
                    help="the original contract: names no metric unknown here (skipped if absent)")
    ap.add_argument("--project-design", default=str(lib.PROJECT_DESIGN),
                    help="the project's DESIGN.md: its §3 table names exactly deploylib's metrics")
    args = ap.parse_args()
    errors = []

    allowed = lib.exposed_series_names() | lib.recorded_names()
    errors += cross_check_design(args.project_design, args.design)

    dashboards = lib.load_dashboards()
    if len(dashboards) < 2:
        errors.append("expected the overview and the target drill-down dashboards in grafana/")
    uids = [d.get("uid") for _, d in dashboards]
    if len(set(uids)) != len(uids):
        errors.append(f"dashboard uids not unique: {uids}")
    n_panels = 0
    for path, dash in dashboards:
        check_dashboard(path, dash, allowed, errors)
        if path.name == "llm-stream-overview.json":
            check_targets_table(path, dash, errors)
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
