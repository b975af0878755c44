"""Shared helpers of the deploy checks: the metric contract, PromQL name
extraction, and walking the dashboards and rule files for expressions.

The metric list below is the table of DESIGN §3 as docs/DESIGN.md records it
(llm_stream_diagnosis, the verdict of §7, and llm_stream_target_info, the
dialect of each target, §9, included). check_dashboards.py checks that the
two name the same metrics, and that ../shared/DESIGN.md (the original
contract, when present) names none unknown here, so a change to the contract
is noticed here.
"""
import json
import pathlib
import re

import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
PROJECT_DESIGN = REPO / "docs" / "DESIGN.md"
GRAFANA_DIR = REPO / "grafana"
RULES_DIR = REPO / "config" / "prometheus"

HISTOGRAMS = {
    "llm_stream_time_to_first_token_seconds",
    "llm_stream_inter_chunk_gap_seconds",
    "llm_stream_probe_gap_p95_seconds",
    "llm_stream_probe_max_gap_seconds",
    "llm_stream_tail_seconds",
    "llm_stream_duration_seconds",
    "llm_stream_phase_seconds",
    "llm_stream_output_tokens_per_second",
    "llm_stream_tokens_per_chunk",  # one per probe: completion tokens / chunks
}
COUNTERS = {
    "llm_stream_probes_total",
    "llm_stream_probe_failures_total",
    "llm_stream_stalls_total",
    "llm_stream_stall_seconds_total",
    "llm_stream_stalled_probes_total",
    "llm_stream_chunks_total",
    "llm_stream_coalesced_chunks_total",
    "llm_stream_output_tokens_total",
    "llm_stream_input_tokens_total",
    "llm_stream_finish_reasons_total",
    "llm_stream_warmup_probes_total",
    "llm_stream_row_write_errors_total",
    "llm_stream_otlp_dropped_total",  # OTLP data points dropped (docs/otlp.md)
    "llm_stream_backoffs_total",  # {target}: rounds postponed by Retry-After
    "llm_stream_unexpected_content_type_total",  # {target}: streams under another Content-Type
    "llm_stream_exporter_config_reloads_total",  # {result}: reload attempts
}
GAUGES = {
    "llm_stream_last_probe_success",
    "llm_stream_last_probe_timestamp_seconds",
    "llm_stream_stall_threshold_seconds",
    # config `alert:` of each target, read by the alerts on what readers feel
    "llm_stream_alert_ttft_seconds",
    "llm_stream_alert_worst_gap_seconds",
    "llm_stream_alert_stall_share",
    "llm_stream_exporter_build_info",
    "llm_stream_exporter_config_last_reload_successful",
    "llm_stream_exporter_config_last_reload_success_timestamp_seconds",
    "llm_stream_diagnosis",  # DESIGN §7 verdict
    "llm_stream_target_info",  # {target, api, model, host} = 1 (DESIGN §9)
    # --shard.index / --shard.count of the replica (0 and 1 when not sharded)
    "llm_stream_shard_index",
    "llm_stream_shards",
}
DESIGN_METRICS = HISTOGRAMS | COUNTERS | GAUGES


def exposed_series_names():
    """Every sample name the exporter can expose. A histogram is one native
    series under its own name (protobuf exposition, metrics.native) and the
    classic _bucket/_sum/_count series (metrics.classic)."""
    names = set(COUNTERS | GAUGES)
    for h in HISTOGRAMS:
        names |= {h, h + "_bucket", h + "_sum", h + "_count"}
    return names


# A quantile over classic buckets: histogram_quantile(q, sum by (..., le)
# (rate(<histogram>_bucket{...}[w]))), rate or increase.
CLASSIC_QUANTILE = re.compile(
    r"histogram_quantile\(\s*([0-9.]+)\s*,\s*sum by \(([^)]*)\)\s*"
    r"\((rate|increase)\((llm_stream_\w+)_bucket((?:\{[^}]*\})?)\[([^\]]+)\]\)\)\)")
# A quantile over a native histogram (no `le`, the histogram's own name).
NATIVE_QUANTILE = re.compile(
    r"histogram_quantile\(\s*([0-9.]+)\s*,\s*sum(?: by \(([^)]*)\))?\s*"
    r"\((rate|increase)\((llm_stream_\w+?)((?:\{[^}]*\})?)\[([^\]]+)\]\)\)\)")


def native_quantile(q, labels, func, metric, selector, window):
    """The native form of a classic quantile: same quantile, labels minus le,
    function, selector and window, on the histogram's own name."""
    inner = f"{func}({metric}{selector}[{window}])"
    if not labels:
        return f"histogram_quantile({q}, sum({inner}))"
    return f"histogram_quantile({q}, sum by ({', '.join(labels)}) ({inner}))"


def quantile_fallback_errors(expr):
    """Every histogram quantile must read the native histogram first and fall
    back to the classic buckets: `<native> or <classic>`, the same quantile,
    labels (le aside), selector and window. `or` keeps the native result for
    a label set both branches have, and the classic one where no native
    series exists (classic-only exporters and scrapes, metrics.native: false),
    so the expression works with metrics.classic: false too."""
    e = " ".join(expr.split())
    errs = []
    for m in CLASSIC_QUANTILE.finditer(e):
        q, by, func, metric, sel, window = m.groups()
        labels = [x.strip() for x in by.split(",") if x.strip() and x.strip() != "le"]
        if "le" not in {x.strip() for x in by.split(",")}:
            errs.append(f"classic quantile without `le` in its `by`: {m.group(0)}")
            continue
        native = native_quantile(q, labels, func, metric, sel, window)
        if not re.search(re.escape(native) + r"\s*\)?\s*or\s*\(?\s*" + re.escape(m.group(0)), e):
            errs.append(f"{m.group(0)} is not preceded by its native form `{native} or`")
    natives = [m for m in NATIVE_QUANTILE.finditer(e) if not m.group(4).endswith("_bucket")]
    for m in natives:
        q, by, func, metric, sel, window = m.groups()
        labels = [x.strip() for x in (by or "").split(",") if x.strip()]
        classic = (f"histogram_quantile({q}, sum by ({', '.join(labels + ['le'])}) "
                   f"({func}({metric}_bucket{sel}[{window}])))")
        if not re.search(re.escape(m.group(0)) + r"\s*\)?\s*or\s*\(?\s*" + re.escape(classic), e):
            errs.append(f"{m.group(0)} has no classic fallback `or {classic}`")
    return errs


def design_metric_names(design_md):
    """Metric names in the table of DESIGN §3 (for the cross-check)."""
    text = pathlib.Path(design_md).read_text()
    sec = text.split("## 3.", 1)[1].split("## 4.", 1)[0]
    names = set()
    for line in sec.splitlines():
        if line.startswith("| `llm_stream_"):
            for m in re.finditer(r"`(llm_stream_[a-z0-9_]+)", line.split("|")[1]):
                names.add(m.group(1))
    return names


KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
    "unless", "offset", "inf", "nan", "Inf", "NaN", "atan2", "start", "end",
}


def strip_variables(expr):
    return re.sub(r"\$\{[^}]*\}|\$\w+|\[\[\w+\]\]", "VAR", expr)


def metric_names(expr):
    """Names of the metrics (series selectors) a PromQL expression reads."""
    e = expr
    e = re.sub(r'"(?:\\.|[^"\\])*"', '""', e)
    e = re.sub(r"'(?:\\.|[^'\\])*'", "''", e)
    e = re.sub(r"`[^`]*`", "``", e)
    e = re.sub(r"\{[^}]*\}", "{}", e)
    e = strip_variables(e)
    e = re.sub(r"\[[^\]]*\]", "[]", e)
    # Grouping clauses go entirely ("sum by (a) (x)" -> "sum  (x)"), so that an
    # aggregation reads as a call and label names never look like metrics.
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"(?<![A-Za-z0-9_:.])[A-Za-z_:][A-Za-z0-9_:]*", e):
        tok = m.group(0)
        rest = e[m.end():].lstrip()
        if rest.startswith("("):
            continue  # function call (or aggregation)
        if tok in KEYWORDS or tok == "VAR":
            continue
        names.add(tok)
    return names


def load_rule_files():
    """[(path, parsed)] for config/prometheus/*.yml, sorted by name."""
    out = []
    for p in sorted(RULES_DIR.glob("*.yml")):
        out.append((p, yaml.safe_load(p.read_text())))
    return out


def rules():
    """Every rule (dict) of every rule file, with "_group" and "_file" added."""
    out = []
    for path, doc in load_rule_files():
        for g in doc.get("groups", []):
            for r in g.get("rules", []):
                r = dict(r)
                r["_group"] = g["name"]
                r["_file"] = path.name
                out.append(r)
    return out


def recorded_names():
    return {r["record"] for r in rules() if "record" in r}


def load_dashboards():
    """[(path, dashboard)] for grafana/*.json."""
    return [(p, json.loads(p.read_text())) for p in sorted(GRAFANA_DIR.glob("*.json"))]


def all_panels(dash):
    """Every panel, rows' nested panels included."""
    out = []
    for p in dash.get("panels", []):
        out.append(p)
        out.extend(p.get("panels", []) or [])
    return out


def label_values_metric(query):
    """The series selector of a label_values(selector, label) variable query,
    or None for label_values(label)."""
    m = re.match(r"\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$", query, re.S)
    if m:
        return m.group(1), m.group(2)
    return None, None


def variable_query_text(var):
    q = var.get("query")
    if isinstance(q, dict):
        q = q.get("query", "")
    return q or var.get("definition", "")


def dashboard_expressions(dash):
    """[(where, expr, panel_title)] of every PromQL expression of a dashboard:
    panel targets and query-variable selectors (label_values(sel, label) ->
    `count by (label) (sel)`)."""
    out = []
    for p in all_panels(dash):
        for t in p.get("targets", []) or []:
            if t.get("expr"):
                out.append((f"panel {p.get('id')} {p.get('title')!r} ref {t.get('refId')}",
                            t["expr"], p.get("title")))
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = variable_query_text(v)
        sel, label = label_values_metric(q)
        if sel is not None:
            out.append((f"variable {v['name']}", f"count by ({label}) ({sel})", None))
        elif q and not q.strip().startswith("label_values("):
            out.append((f"variable {v['name']}", q, None))
    return out


def substitute_variables(expr, dash, rate_interval="1m", interval="15s", range_="5m"):
    """Replaces Grafana variables the way a dashboard would send the query:
    $__rate_interval/$__interval/$__range by durations, constant/custom/textbox
    variables by their value, query variables by '.*' (the "All" value; the
    selectors use =~)."""
    values = {"__rate_interval": rate_interval, "__interval": interval, "__range": range_,
              "__range_s": "300", "__interval_ms": "15000"}
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") in ("constant", "custom", "textbox"):
            cur = v.get("current", {}).get("value")
            values[v["name"]] = str(cur if cur not in (None, "") else v.get("query", ""))
        elif v.get("type") == "query":
            values[v["name"]] = ".*"
        elif v.get("type") == "datasource":
            values[v["name"]] = "prometheus"

    def rep(m):
        name = m.group(1) or m.group(2) or m.group(3)
        name = name.split(":")[0]
        if name not in values:
            raise KeyError(f"unknown dashboard variable ${name} in {expr!r}")
        return values[name]

    return re.sub(r"\$\{([^}]+)\}|\$(\w+)|\[\[(\w+)\]\]", rep, expr)
