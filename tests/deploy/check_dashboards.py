#!/usr/bin/env python3
"""Checks the Grafana dashboards in grafana/*.json.

Fails (exit 1) when:
- a dashboard lacks a fixed uid, a title, or a current schemaVersion (>= 36), or
  two dashboards share a uid;
- panel ids are not unique within a dashboard (rows' nested panels included);
- there is no `datasource` variable of type datasource/prometheus, or any panel,
  query or query variable is not on it (`${datasource}` / `$datasource`), or a
  datasource uid is hard-coded anywhere (also `__inputs` / `${DS_...}`);
- the variables are not datasource -> cluster -> job -> instance -> target ->
  prompt/location, each a label_values query over an exporter metric, chained on
  the variables before it, cluster/job/instance (and a multi-valued target) with
  "All" = a regex that matches the empty value (".*": an absent label still matches);
- a series selector of a panel query does not filter on cluster/job/instance
  (`cluster=~"$cluster"`, ...), or on target/prompt/location where the metric has them;
- a recording rule is read without a raw fallback: `rule{...} or on (<the rule's
  labels>) (<the rule's expression, with the same matchers>)`, so that the panel
  works where the rules are not loaded;
- a panel lacks a description (>= 40 characters) or a "no data" hint
  (fieldConfig.defaults.noValue), or any text of the dashboard refers to
  internal documents ("DESIGN", "§", "issue N");
- the dashboard has no link to the other dashboard with includeVars and keepTime,
  or a link into a dashboard does not carry the datasource, cluster/job/instance,
  the clicked target and the time range; on a dashboard of many targets (target
  variable with "All"), a per-target graph or table has no such data link;
- there is no stat panel at the top showing the exporters' scrape state (`up`);
- a histogram quantile is not `<native> or <classic>` (the native histogram
  first, then the classic _bucket series with the same quantile, labels, selector
  and window), or a histogram's _sum/_count is read without the native
  histogram's histogram_sum/histogram_count (docs/queries.md); the gap
  heatmap alone reads the classic buckets (Grafana's heatmap of `le` buckets);
- a query names a metric that is not in DESIGN §3 or a recording rule of
  config/prometheus/ (histograms: _bucket/_sum/_count);
- deploylib's metric list and the §3 table of docs/DESIGN.md differ, or
  ../shared/DESIGN.md (when present) names a metric deploylib does not know;
- the overview lacks the "Targets" table of llm_stream_target_info;
- a rate()/increase() window is not $__rate_interval (or $__range), except inside a
  recording rule's raw fallback, which repeats the rule's window, or an alert's own
  fixed window ([10m], [15m]: the panel shows what the alert evaluates, whatever the zoom);
- the overview's first row does not answer "are streams stalling, where": the share
  of probes that stall and the typical worst gap per target and location, each
  against the bar read from the target's threshold gauge (llm_stream_alert_*), not
  from a constant;
- a graph over a histogram whose buckets carry exemplars (TTFT, gaps, worst gap)
  does not ask for them (`exemplar: true`);
- the overview has no `exporter_url` variable, or no link opens a target's row on
  the exporter's page through it;
- an alert of config/prometheus/alerting_rules.yml has no runbook link from any
  panel of the dashboards;
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
# Series Prometheus itself writes for every scrape target.
PROMETHEUS_SERIES = {"up"}
# The order of the variables, and what each query variable must be chained on.
VARIABLE_CHAIN = [("cluster", []), ("job", ["cluster"]), ("instance", ["cluster", "job"]),
                  ("target", ["cluster", "job", "instance"]),
                  ("prompt", ["cluster", "job", "instance", "target"]),
                  ("location", ["cluster", "job", "instance", "target"])]
SCOPE_LABELS = ("cluster", "job", "instance")
# Metrics without target/prompt labels (one series per exporter) and with a
# target but no prompt label; every other metric is per probe series.
EXPORTER_LEVEL = {"llm_stream_shard_index", "llm_stream_shards", "llm_stream_exporter_build_info", "llm_stream_exporter_config_last_reload_successful",
                  "llm_stream_exporter_config_last_reload_success_timestamp_seconds",
                  "llm_stream_row_write_errors_total", "llm_stream_otlp_dropped_total",
                  "llm_stream_exporter_config_reloads_total"} | PROMETHEUS_SERIES
TARGET_LEVEL = {"llm_stream_stall_threshold_seconds", "llm_stream_target_info", "llm_stream_backoffs_total",
                "llm_stream_unexpected_content_type_total",
                "llm_stream_alert_ttft_seconds", "llm_stream_alert_worst_gap_seconds",
                "llm_stream_alert_stall_share"}
# Fixed windows a panel may use: those of the alerts it shows.
ALERT_WINDOWS = ("10m", "15m")
EXEMPLAR_HISTOGRAMS = ("llm_stream_time_to_first_token_seconds_bucket",
                       "llm_stream_inter_chunk_gap_seconds_bucket",
                       "llm_stream_probe_max_gap_seconds_bucket")
INTERNAL_REFS = [(re.compile(r"DESIGN"), "DESIGN"), (re.compile("§"), "§"),
                 (re.compile(r"\bissue\s*#?\d", re.I), "issue N")]
MIN_DESCRIPTION = 40
MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:\\.|[^"\\])*)"')
# What a link into a dashboard must carry (any of the spellings).
LINK_CARRIES = {
    "datasource": ("var-datasource=", "${datasource:queryparam}"),
    "cluster": ("var-cluster=", "${cluster:queryparam}"),
    "job": ("var-job=", "${job:queryparam}"),
    "instance": ("var-instance=", "${instance:queryparam}"),
    "time range": ("${__url_time_range}", "from=${__from}"),
}
ROW_TARGET_REFS = ("${__field.labels.target}", "${__value.text}", "${__data.fields.target}")


def selectors(expr):
    """[(metric, {label: (op, value)}, start, end)] of the series selectors of expr."""
    out = []
    for name in lib.metric_names(expr):
        for m in re.finditer(r"(?<![A-Za-z0-9_:.\"])" + re.escape(name) + r"(?![A-Za-z0-9_:])\s*(\{[^}]*\})?", expr):
            if expr[m.end():].lstrip().startswith("("):
                continue
            matchers = {k: (op, v) for k, op, v in MATCHER.findall(m.group(1) or "")}
            out.append((name, matchers, m.start(), m.end()))
    return sorted(out, key=lambda x: x[2])


def required_labels(metric):
    if metric in EXPORTER_LEVEL:
        return SCOPE_LABELS
    if metric in TARGET_LEVEL:
        return SCOPE_LABELS + ("target", "location")
    return SCOPE_LABELS + ("target", "prompt", "location")


def balanced(expr, start):
    """The end (exclusive) of the parenthesised group opening at expr[start]."""
    depth = 0
    for i in range(start, len(expr)):
        if expr[i] == "(":
            depth += 1
        elif expr[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def squash(expr):
    """An expression without label matchers and whitespace, for comparing shapes."""
    return re.sub(r"\s+", "", re.sub(r"\{[^}]*\}", "", expr))


def recording_rule_exprs():
    return {r["record"]: r["expr"] for r in lib.rules() if "record" in r}


def check_fallbacks(where, expr, rules, err):
    """Every recording-rule selector must be followed by its raw fallback (see the
    docstring). Returns expr without the verified fallbacks (for the window check)."""
    rest = expr
    for name, matchers, start, end in reversed(selectors(expr)):
        if name not in rules:
            continue
        m = re.compile(r"\s*or\s+on\s*\(([^)]*)\)\s*\(").match(expr, end)
        if not m:
            err(f"{where}: recording rule {name} has no raw fallback "
                f"(`{name}{{...}} or on (labels) (<the rule's expression>)`)")
            continue
        close = balanced(expr, m.end() - 1)
        fallback = expr[m.end():close - 1] if close else ""
        rule = rules[name]
        if squash(fallback) != squash(rule):
            err(f"{where}: the raw fallback of {name} differs from the rule's expression "
                f"{' '.join(rule.split())!r}")
        by = re.search(r"\bby\s*\(([^)]*)\)", rule)
        want = {x.strip() for x in by.group(1).split(",")} - {"le"} if by else set()
        got = {x.strip() for x in m.group(1).split(",") if x.strip()}
        if got != want:
            err(f"{where}: `or on ({m.group(1)})` after {name} does not match the rule's labels {sorted(want)}")
        for fname, fmatchers, *_ in selectors(fallback):
            missing = {k: v for k, v in matchers.items() if fmatchers.get(k) != v}
            if missing:
                err(f"{where}: the raw fallback of {name} does not filter {fname} like the rule "
                    f"series ({sorted(missing)})")
        rest = rest[:start] + "FALLBACK" + rest[close:] if close else rest
    return rest


def panel_links(p):
    links = list(p.get("links", []) or [])
    fc = p.get("fieldConfig", {}) or {}
    links += (fc.get("defaults", {}) or {}).get("links", []) or []
    for o in fc.get("overrides", []) or []:
        for prop in o.get("properties", []) or []:
            if prop.get("id") == "links":
                links += prop.get("value") or []
    return links


def check_link_url(where, url, err, needs_target):
    if "/d/" not in url:
        return
    for what, spellings in LINK_CARRIES.items():
        if not any(s in url for s in spellings):
            err(f"{where}: link {url!r} does not carry {what}")
    if needs_target and not any("var-target=" + ref in url for ref in ROW_TARGET_REFS):
        err(f"{where}: link {url!r} does not carry the clicked target (var-target=${{__field.labels.target}} ...)")


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


def histogram_part_errors(expr):
    """A histogram's _sum/_count series exist only with metrics.classic: each read
    of one must come with the native histogram's histogram_sum/histogram_count (or,
    for a share of the count, its histogram_fraction)."""
    errs = []
    for m in re.finditer(r"\b(llm_stream_\w+)_(sum|count)\b", expr):
        native = (rf"histogram_{m.group(2)}\(\s*rate\({m.group(1)}\{{|"
                  rf"histogram_fraction\([^,]+,[^,]+,\s*sum by \([^)]*\) \(rate\({m.group(1)}\{{")
        if m.group(1) in lib.HISTOGRAMS and not re.search(native, expr):
            errs.append(f"{m.group(0)} without histogram_{m.group(2)}(rate({m.group(1)}{{...}}[...])) "
                        f"of the native histogram")
    return errs


def check_dashboard(path, dash, allowed, errors):
    def err(msg):
        errors.append(f"{path.name}: {msg}")

    allowed = set(allowed) | PROMETHEUS_SERIES
    rules = recording_rule_exprs()

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
    names = list(variables)
    for name, chain in VARIABLE_CHAIN:
        v = variables.get(name)
        if not v:
            err(f"no `{name}` variable")
            continue
        q = lib.variable_query_text(v)
        sel, label = lib.label_values_metric(q)
        metrics = lib.metric_names(sel) if sel else set()
        if v.get("type") != "query" or label != name or not any(x.startswith("llm_stream_") for x in metrics):
            err(f"variable {name}: not label_values(<exporter metric>, {name}): {q!r}")
        for dep in chain:
            if f'{dep}=~"${dep}"' not in re.sub(r"\s+", "", q):
                err(f"variable {name}: not chained on ${dep} ({dep}=~\"${dep}\" missing in {q!r})")
            elif dep in names and names.index(dep) > names.index(name):
                err(f"variable {name} comes before ${dep}, which it depends on")
        all_required = name in SCOPE_LABELS or (name == "target" and v.get("multi"))
        if all_required or v.get("includeAll"):
            allv = v.get("allValue")
            if not v.get("includeAll") or not isinstance(allv, str) or not allv:
                err(f"variable {name}: needs includeAll with an allValue regex (\".*\")")
            else:
                try:
                    if not re.fullmatch(allv, ""):
                        err(f"variable {name}: allValue {allv!r} does not match an absent label")
                except re.error:
                    err(f"variable {name}: allValue {allv!r} is not a regex")
    if names and names[0] != "datasource":
        err("the datasource variable is not the first one")
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
        if p.get("type") != "row":
            what = f"panel {p.get('id')} {p.get('title')!r}"
            if len((p.get("description") or "").strip()) < MIN_DESCRIPTION:
                err(f"{what}: no description for its reader (>= {MIN_DESCRIPTION} characters)")
            if not str((p.get("fieldConfig", {}).get("defaults", {}) or {}).get("noValue") or "").strip():
                err(f"{what}: no \"no data\" hint (fieldConfig.defaults.noValue)")
            for e in exprs:
                for name, matchers, *_ in selectors(e):
                    for label in required_labels(name):
                        if matchers.get(label) != ("=~", f"${label}"):
                            err(f"{what}: {name} does not filter on {label} ({label}=~\"${label}\")")
            per_target = any(re.search(r"\b(by|on)\s*\([^)]*\btarget\b", e) for e in exprs)
            multi_target = (variables.get("target") or {}).get("includeAll")
            if multi_target and per_target and p.get("type") in ("timeseries", "table", "state-timeline") \
                    and not any("/d/" in (l.get("url") or "") for l in panel_links(p)):
                err(f"{what}: shows targets but has no data link to the target drill-down")
            for i, link in enumerate(panel_links(p)):
                check_link_url(f"{what} link {i}", link.get("url") or "", err, needs_target=True)
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
        for e in lib.quantile_fallback_errors(expr):
            err(f"{where}: {e} (docs/queries.md)")
        for e in histogram_part_errors(expr):
            err(f"{where}: {e} (docs/queries.md)")
        rest = check_fallbacks(where, expr, rules, err)
        for m in re.finditer(r"\b(rate|increase|irate|delta)\s*\((.*?)\[([^\]]*)\]", rest):
            if m.group(3) not in ("$__rate_interval", "$__range") + ALERT_WINDOWS:
                err(f"{where}: {m.group(1)}() window [{m.group(3)}] is not $__rate_interval")

    # Links between the dashboards.
    others = [l for l in dash.get("links", []) or []
              if "/d/" in (l.get("url") or "") and f"/d/{dash.get('uid')}/" not in l.get("url")]
    if not others:
        err("no dashboard link to the other llm-stream dashboard")
    for l in others:
        if not (l.get("includeVars") and l.get("keepTime")):
            err(f"dashboard link {l.get('title')!r} does not keep the variables and time range "
                "(includeVars, keepTime)")

    # No references to documents a Grafana user does not have.
    for where, key, value in walk(dash):
        if isinstance(value, str):
            for rx, what in INTERNAL_REFS:
                if rx.search(value):
                    err(f"{where}.{key}: internal reference {what!r} in {value[:80]!r}")

    # The exporters' scrape state, at the top.
    top = [p for p in lib.all_panels(dash) if p.get("type") == "stat"
           and (p.get("gridPos") or {}).get("y", 99) <= 1
           and any("up" in lib.metric_names(t.get("expr", "")) for t in p.get("targets", []) or [])]
    if not top:
        err("no stat panel at the top showing the exporters' scrape state (up)")

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


def first_row(dash):
    """The panels of the first row (up to the second row panel), and its title."""
    panels = sorted(dash.get("panels", []), key=lambda p: (p["gridPos"]["y"], p["gridPos"]["x"]))
    rows = [p for p in panels if p.get("type") == "row"]
    if not rows:
        return "", panels
    end = rows[1]["gridPos"]["y"] if len(rows) > 1 else 10 ** 6
    return rows[0].get("title", ""), [p for p in panels if p.get("type") != "row"
                                      and rows[0]["gridPos"]["y"] < p["gridPos"]["y"] < end]


def check_stalling_row(path, dash, errors):
    title, panels = first_row(dash)
    exprs = " ".join(t.get("expr", "") for p in panels for t in p.get("targets", []))
    if "stall" not in title.lower():
        errors.append(f"{path.name}: the first row ({title!r}) does not answer whether streams stall")
    for metric, what in (("llm_stream_stalled_probes_total", "the share of probes that stall"),
                         ("llm_stream_probe_max_gap_seconds_bucket", "the typical worst gap"),
                         ("llm_stream_alert_stall_share", "the stall-share bar from its gauge"),
                         ("llm_stream_alert_worst_gap_seconds", "the worst-gap bar from its gauge")):
        if metric not in exprs:
            errors.append(f"{path.name}: the first row does not show {what} ({metric})")
    if not re.search(r"\bby \(target, location", exprs):
        errors.append(f"{path.name}: the first row is not per target and location")
    # Colours at "1" are only allowed on a quotient by a threshold gauge.
    for p in panels:
        if "up" in lib.metric_names(" ".join(t.get("expr", "") for t in p.get("targets", []))):
            continue  # the exporters' scrape state: down > 0 is red, no bar to read
        for o in (p.get("fieldConfig", {}) or {}).get("overrides", []) or []:
            if any(prop.get("id") == "thresholds" for prop in o.get("properties", [])):
                col = o["matcher"]["options"]
                if "÷" not in col:
                    errors.append(f"{path.name}: {p['title']!r} colours {col!r} by a constant")
    variables = {v["name"]: v for v in dash.get("templating", {}).get("list", [])}
    if "exporter_url" not in variables:
        errors.append(f"{path.name}: no exporter_url variable")
    urls = [l.get("url", "") for p in lib.all_panels(dash) for l in panel_links(p)]
    if not any(u.startswith("${exporter_url}/") and "${__value.text}" in u for u in urls):
        errors.append(f"{path.name}: no link opens a target on the exporter's page (${{exporter_url}})")


def check_exemplars(path, dash, errors):
    for p in lib.all_panels(dash):
        if p.get("type") != "timeseries":
            continue
        for t in p.get("targets", []) or []:
            if any(h in t.get("expr", "") for h in EXEMPLAR_HISTOGRAMS) and t.get("exemplar") is not True:
                errors.append(f"{path.name}: {p['title']!r} ref {t.get('refId')}: exemplars not enabled")


def check_runbook_links(dashboards, errors):
    linked = set()
    for _, dash in dashboards:
        for p in lib.all_panels(dash):
            for l in panel_links(p):
                m = re.search(r"docs/runbook\.md#([a-z0-9-]+)$", l.get("url", ""))
                if m:
                    linked.add(m.group(1))
    for r in lib.rules():
        if "alert" in r and r["alert"].lower() not in linked:
            errors.append(f"no dashboard panel links the runbook entry of {r['alert']}")


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
            check_stalling_row(path, dash, errors)
        check_exemplars(path, dash, errors)
        n_panels += len(lib.all_panels(dash))

    check_runbook_links(dashboards, errors)

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
