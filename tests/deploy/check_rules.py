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
  use the canonical expression of DESIGN §3 (per target, kept per topology, on
  the quantile window [10m]);
- an aggregation (sum/min/max/avg/count/... by or without) drops one of the
  topology labels namespace, cluster, node, location (a `by` list lacks one, a
  `without` list names one, or there is no grouping at all), or an alert's
  description does not name the node and location ($labels.node/.location;
  an absent() alert or a sharding alert at least the words); the sharding
  alerts (on llm_stream_shard_*) instead aggregate by (namespace, cluster,
  job) and so across the nodes and locations of one job's replicas;
- a probe alert (group *.probes) uses a window other than the quantile window
  [10m] (histogram_quantile of the per-gap and TTFT histograms) or the ratio
  window [15m] (the rest, and quantiles of the one-per-probe histograms
  llm_stream_probe_*, which count probes like the ratios), the values of
  the formula at the default interval (docs/runbook.md#alert-windows), or an
  exporter alert does not select the job with job=~"llm-stream-exporter";
- a histogram quantile (expression or annotation query) is not the pair
  `<native> or <classic>` of docs/queries.md: the native histogram first, then
  the classic _bucket series with the same quantile, labels (le aside),
  selector and window, so that the rule works on native histograms when
  present, on classic buckets otherwise, and with metrics.classic: false;
- tests/deploy/rules_test.yaml does not show every alert both firing and not
  firing, feeds a quantile alert no _bucket series, or shows LLMStreamGapP95High
  and LLMStreamProbesFailing nowhere firing for one node of two that differ.

Usage: python3 tests/deploy/check_rules.py [--rules-dir DIR] [--runbook FILE] [--rules-test FILE]
"""
import argparse
import pathlib
import re
import sys

import yaml

import deploylib as lib

TOPOLOGY = {"namespace", "cluster", "node", "location"}
# DESIGN §3: histogram_quantile(0.95, sum by (target, le) (rate(..._bucket[10m]))),
# here with the topology labels added to the `by` list.
CANONICAL = re.compile(r"histogram_quantile\(0\.95, sum by \(([^)]*)\) "
                       r"\(rate\(llm_stream_inter_chunk_gap_seconds_bucket\[10m\]\)\)\)")
AGGREGATIONS = r"sum|min|max|avg|count|group|stddev|stdvar|topk|bottomk|quantile|count_values"
DEFAULT_JOB = 'job=~"llm-stream-exporter"'
# the replica's --shard.index/--shard.count: compared across nodes and locations
SHARD_METRICS = {"llm_stream_shard_index", "llm_stream_shards"}
# alerts that must be shown firing for one node of two in rules_test.yaml
NODE_TESTS = ("LLMStreamGapP95High", "LLMStreamProbesFailing")
REQUIRED_ALERTS = {
    "LLMStreamGapP95High": "warning",
    "LLMStreamGapP95Critical": "critical",
    "LLMStreamStalling": "critical",
    "LLMStreamStallsFrequent": None,
    "LLMStreamBuffered": "warning",
    "LLMStreamTTFTP95High": None,
    "LLMStreamProbesFailing": None,
    "LLMStreamProbesMissing": None,
    "LLMStreamProbesStale": None,
    "LLMStreamExporterAbsent": "critical",
    "LLMStreamExporterDown": "critical",
    "LLMStreamConfigReloadFailed": None,
    "LLMStreamShardingMismatch": "warning",
}


def aggregations(expr):
    """[(operator, 'by'|'without'|None, {labels})] of every aggregation, with the
    grouping written before or after the argument."""
    out = []
    for m in re.finditer(rf"\b({AGGREGATIONS})\s*(?=\(|\bby\b|\bwithout\b)", expr):
        rest = expr[m.end():]
        g = re.match(r"(by|without)\s*\(([^)]*)\)", rest)
        if not g:
            # "sum (x) by (a)": skip the argument to its matching parenthesis
            depth, i = 0, 0
            for i, c in enumerate(rest):
                depth += c == "("
                depth -= c == ")"
                if depth == 0:
                    break
            g = re.match(r"\s*(by|without)\s*\(([^)]*)\)", rest[i + 1:])
        if g:
            out.append((m.group(1), g.group(1), {x.strip() for x in g.group(2).split(",")} - {""}))
        else:
            out.append((m.group(1), None, set()))
    return out


def topology_errors(name, expr):
    errs = []
    if SHARD_METRICS & lib.metric_names(expr):
        # The replicas of one sharded job run on several nodes and locations:
        # the sharding alerts compare them within namespace and cluster.
        for op, kind, labels in aggregations(expr):
            if kind != "by" or not {"namespace", "cluster", "job"} <= labels or (TOPOLOGY - {"namespace", "cluster"}) & labels:
                errs.append(f"{name}: `{op}` of the shard gauges must be `by (namespace, cluster, job)`, "
                            f"across nodes and locations")
        return errs
    for op, kind, labels in aggregations(expr):
        if kind == "by" and not TOPOLOGY <= labels:
            errs.append(f"{name}: `{op} by ({', '.join(sorted(labels))})` drops the topology labels "
                        f"{sorted(TOPOLOGY - labels)}: keep namespace, cluster, node, location")
        elif kind == "without" and TOPOLOGY & labels:
            errs.append(f"{name}: `{op} without (...)` drops the topology labels {sorted(TOPOLOGY & labels)}")
        elif kind is None:
            errs.append(f"{name}: `{op}(...)` without by/without drops the topology labels")
    return errs


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
    allowed = lib.exposed_series_names() | recorded | {"up"}
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
        for e in topology_errors(name, expr):
            err(e)
        for text in [expr] + [str(v) for v in (r.get("annotations") or {}).values()]:
            for e in lib.quantile_fallback_errors(text):
                err(f"{name}: {e} (docs/queries.md)")
        if "record" in r:
            parts = name.split(":")
            if len(parts) != 3 or not all(re.fullmatch(r"[a-z][a-z0-9_]*", p) for p in parts):
                err(f"{name}: not level:metric:operations")
                continue
            level, metric, ops = parts
            groupings = [set(x.strip() for x in g.split(",")) - {"le", ""}
                         for g in re.findall(r"\bby\s*\(([^)]*)\)", expr)]
            # level names are label names joined by "_" (labels here contain no "_"):
            # the labels that identify the series; the topology labels are kept by
            # every rule and may be named or not.
            if not groupings or any(g - TOPOLOGY != set(level.split("_")) - {""} - TOPOLOGY
                                    or not set(level.split("_")) <= g for g in groupings):
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
            desc = ann.get("description", "")
            if "absent(" in expr or SHARD_METRICS & lib.metric_names(expr):
                if not ("node" in desc and "location" in desc):
                    err(f"{name}: description does not mention node and location")
            elif not ("$labels.node" in desc and "$labels.location" in desc):
                err(f"{name}: description does not name $labels.node and $labels.location")
            if r["_group"].endswith(".probes"):
                for metric, window in re.findall(r"\b([a-z_:]+)(?:\{[^}]*\})?\[([^\]]+)\]", expr):
                    # the classic buckets or the native histogram of the same name
                    per_gap = (metric.endswith("_bucket") or metric in lib.HISTOGRAMS) \
                        and not metric.startswith("llm_stream_probe_")
                    want = "10m" if per_gap and "histogram_quantile" in expr else "15m"
                    if window != want:
                        err(f"{name}: window [{window}] of {metric} is not the "
                            f"{'quantile' if want == '10m' else 'ratio'} window [{want}] of the default "
                            f"interval (docs/runbook.md#alert-windows)")
            elif (re.search(r"\bup\b", expr) or SHARD_METRICS & lib.metric_names(expr)) \
                    and DEFAULT_JOB not in expr:
                err(f"{name}: does not select the exporter's job with {DEFAULT_JOB} (the chart fills it in)")
            m = re.search(r">\s*([-+0-9.eE]+)\s*$", expr.strip())
            if m and not re.search(rf"\|\s*`?{name}`?\s*\|[^\n]*{re.escape(m.group(1))}", runbook):
                err(f"{name}: threshold {m.group(1)} is not in the runbook's threshold table")
    alerts = {r["alert"]: r for r in rules if "alert" in r}
    for a in REQUIRED_ALERTS:
        if a not in alerts:
            err(f"required alert {a} is missing")
    for a in ("LLMStreamGapP95High", "LLMStreamGapP95Critical"):
        m = CANONICAL.search(" ".join(alerts[a]["expr"].split())) if a in alerts else None
        if a in alerts and (not m or {x.strip() for x in m.group(1).split(",")} != TOPOLOGY | {"target", "le"}):
            err(f"{a}: does not use the canonical expression histogram_quantile(0.95, sum by "
                f"(namespace, cluster, node, location, target, le) (rate(llm_stream_inter_chunk_gap_seconds_bucket[10m])))")
    if "LLMStreamProbesStale" in alerts and "llm_stream_last_probe_timestamp_seconds" not in alerts["LLMStreamProbesStale"]["expr"]:
        err("LLMStreamProbesStale: must read llm_stream_last_probe_timestamp_seconds")
    if "LLMStreamExporterAbsent" in alerts and not re.search(r"absent\(\s*up\{", alerts["LLMStreamExporterAbsent"]["expr"]):
        err("LLMStreamExporterAbsent: must be absent(up{job=~...})")
    if "LLMStreamExporterDown" in alerts and not re.search(r"\bup\{[^}]*\}\s*==\s*0", alerts["LLMStreamExporterDown"]["expr"]):
        err("LLMStreamExporterDown: must be up{job=~...} == 0")
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
    firing, quiet, one_node = set(), set(), set()
    for t in test.get("tests", []):
        series = " ".join(s["series"] for s in t.get("input_series", []))
        nodes = set(re.findall(r'\bnode="([^"]*)"', series))
        for case in t.get("alert_rule_test", []):
            (firing if case.get("exp_alerts") else quiet).add(case["alertname"])
            fired = {(e.get("exp_labels") or {}).get("node") for e in case.get("exp_alerts") or []}
            if len(nodes) >= 2 and fired and None not in fired and len(fired) < len(nodes):
                one_node.add(case["alertname"])
            a = alerts.get(case["alertname"])
            if a and "histogram_quantile" in a["expr"] and "_bucket{" not in series:
                err(f"rules_test: {case['alertname']} is not fed _bucket series")
    for a in NODE_TESTS:
        if a in alerts and a not in one_node:
            err(f"rules_test: {a} is never shown firing for one node of two (node labels differ)")
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
