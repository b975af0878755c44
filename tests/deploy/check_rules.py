#!/usr/bin/env python3
"""Checks config/prometheus/*.yml beyond what promtool checks.

Fails (exit 1) when:
- a recording rule is not named level:metric:operations, its level does not
  list exactly the labels it aggregates by (le aside), or its metric part is not
  a DESIGN §3 metric;
- an expression names a metric outside DESIGN §3 (+ llm_stream_diagnosis) and
  the recording rules;
- an alert lacks severity (warning|critical), summary, description or a
  runbook_url whose #anchor is a heading of docs/runbook.md, or docs/runbook.md
  has no entry for it, or its threshold is not in the runbook's threshold table;
- one of the alerts the issue asks for is missing, or the gap p95 alerts do not
  use the canonical expression of DESIGN §3;
- tests/deploy/rules_test.yaml does not show every alert both firing and not
  firing, or feeds a quantile alert no _bucket series.

Usage: python3 tests/deploy/check_rules.py [--rules-dir DIR] [--runbook FILE] [--rules-test FILE]
"""
import argparse
import pathlib
import re
import sys

import yaml

import deploylib as lib

CANONICAL = ("histogram_quantile(0.95, sum by (target, le) "
             "(rate(llm_stream_inter_chunk_gap_seconds_bucket[10m])))")
REQUIRED_ALERTS = {
    "LLMStreamGapP95High": "warning",
    "LLMStreamGapP95Critical": "critical",
    "LLMStreamStallsFrequent": None,
    "LLMStreamTTFTP95High": None,
    "LLMStreamProbesFailing": None,
    "LLMStreamProbesMissing": None,
    "LLMStreamConfigReloadFailed": None,
}


def github_anchor(heading):
    a = heading.strip().lower()
    a = re.sub(r"[^\w\- ]", "", a)
    return a.replace(" ", "-")


def base_metric(name):
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and name[: -len(suffix)] in lib.HISTOGRAMS:
            return name[: -len(suffix)]
    return name


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rules-dir", default=str(lib.RULES_DIR))
    ap.add_argument("--runbook", default=str(lib.REPO / "docs" / "runbook.md"))
    ap.add_argument("--rules-test", default=str(pathlib.Path(__file__).parent / "rules_test.yaml"))
    args = ap.parse_args()
    lib.RULES_DIR = pathlib.Path(args.rules_dir)
    errors = []
    err = errors.append

    rules = lib.rules()
    recorded = lib.recorded_names()
    allowed = lib.exposed_series_names() | recorded
    runbook = pathlib.Path(args.runbook).read_text()
    headings = {github_anchor(m.group(1)): m.group(1)
                for m in re.finditer(r"^#{2,3}\s+(.+?)\s*$", runbook, re.M)}

    names = [r.get("record") or r.get("alert") for r in rules]
    dup = {n for n in names if names.count(n) > 1 and n and n in {r.get("alert") for r in rules}}
    if dup:
        err(f"alert names not unique: {sorted(dup)}")

    for r in rules:
        name = r.get("record") or r.get("alert")
        expr = r.get("expr", "")
        for m in sorted(lib.metric_names(expr)):
            if m not in allowed:
                err(f"{name}: expression names {m!r}, neither DESIGN §3 nor a recording rule")
        if "record" in r:
            parts = name.split(":")
            if len(parts) != 3 or not all(re.fullmatch(r"[a-z][a-z0-9_]*", p) for p in parts):
                err(f"{name}: not level:metric:operations")
                continue
            level, metric, ops = parts
            groupings = [set(x.strip() for x in g.split(",")) - {"le", ""}
                         for g in re.findall(r"\bby\s*\(([^)]*)\)", expr)]
            if not groupings or any(g != set(level.split("_")) - {""} for g in groupings):
                # level names are label names joined by "_"; labels here contain no "_"
                err(f"{name}: level {level!r} does not match the aggregation labels {groupings}")
            used = {base_metric(m) for m in lib.metric_names(expr)}
            stem = {m[:-len('_total')] if m.endswith('_total') else m for m in used}
            if metric not in used | stem:
                err(f"{name}: metric part {metric!r} is not the metric it reads ({sorted(used)})")
            if not re.search(r"(p50|p95|p99|rate|ratio)", ops):
                err(f"{name}: operations {ops!r} say nothing about the computation")
        else:
            labels = r.get("labels", {}) or {}
            ann = r.get("annotations", {}) or {}
            if labels.get("severity") not in ("warning", "critical"):
                err(f"{name}: severity {labels.get('severity')!r}")
            want = REQUIRED_ALERTS.get(name)
            if want and labels.get("severity") != want:
                err(f"{name}: severity should be {want}")
            for a in ("summary", "description", "runbook_url"):
                if not ann.get(a):
                    err(f"{name}: no {a} annotation")
            url = ann.get("runbook_url", "")
            if "#" not in url or not url.split("#")[0].endswith("docs/runbook.md"):
                err(f"{name}: runbook_url {url!r} is not an anchor of docs/runbook.md")
            elif url.split("#", 1)[1] not in headings:
                err(f"{name}: runbook anchor #{url.split('#', 1)[1]} is not a heading of docs/runbook.md")
            if github_anchor(name) not in headings:
                err(f"{name}: no runbook entry (heading '## {name}') in docs/runbook.md")
            if not r.get("for"):
                err(f"{name}: no `for` (alerts should not fire on one evaluation)")
            m = re.search(r">\s*([-+0-9.eE]+)\s*$", expr.strip())
            if m and not re.search(rf"\|\s*`?{name}`?\s*\|[^\n]*{re.escape(m.group(1))}", runbook):
                err(f"{name}: threshold {m.group(1)} is not in the runbook's threshold table")
    alerts = {r["alert"]: r for r in rules if "alert" in r}
    for a in REQUIRED_ALERTS:
        if a not in alerts:
            err(f"required alert {a} is missing")
    for a in ("LLMStreamGapP95High", "LLMStreamGapP95Critical"):
        if a in alerts and CANONICAL not in " ".join(alerts[a]["expr"].split()):
            err(f"{a}: does not use the canonical expression {CANONICAL}")
    if "LLMStreamProbesMissing" in alerts and not re.search(
            r"llm_stream_(probes_total|last_probe_timestamp_seconds|last_probe_success)",
            alerts["LLMStreamProbesMissing"]["expr"]):
        err("LLMStreamProbesMissing: must read the probe counters or last-probe gauges")

    # rules_test.yaml coverage
    test = yaml.safe_load(pathlib.Path(args.rules_test).read_text())
    rules_dir = pathlib.Path(args.rules_test).parent
    files = {(rules_dir / f).resolve() for f in test.get("rule_files", [])}
    for p in sorted(lib.RULES_DIR.glob("*.yml")):
        if p.resolve() not in files:
            err(f"rules_test.yaml does not load {p.name}")
    firing, quiet = set(), set()
    for t in test.get("tests", []):
        series = " ".join(s["series"] for s in t.get("input_series", []))
        for case in t.get("alert_rule_test", []):
            (firing if case.get("exp_alerts") else quiet).add(case["alertname"])
            a = alerts.get(case["alertname"])
            if a and "histogram_quantile" in a["expr"] and "_bucket{" not in series:
                err(f"rules_test: {case['alertname']} is not fed _bucket series")
    for a in alerts:
        if a not in firing:
            err(f"rules_test: {a} is never shown firing")
        if a not in quiet:
            err(f"rules_test: {a} is never shown not firing (exp_alerts: [])")

    for e in errors:
        print("FAIL " + e)
    print(f"check_rules: {len(rules)} rules ({len(recorded)} recording, {len(alerts)} alerting), "
          f"{len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
