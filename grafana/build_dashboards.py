#!/usr/bin/env python3
"""Builds the Grafana dashboards of llm-stream-exporter from one description.

    python3 grafana/build_dashboards.py          # (re)write grafana/*.json
    python3 grafana/build_dashboards.py --check  # exit 1 when a JSON file is stale

The JSON files are what Grafana (and the helm chart's dashboard ConfigMaps)
load; this script is how they are edited, so that panel ids, grid positions,
the template variables, the label selectors and the links stay consistent.
After editing, run it and tests/deploy/sync_chart_files.sh (tests/deploy/run_all.sh
checks both).

Conventions (tests/deploy/check_dashboards.py enforces them):
- variables datasource -> cluster -> job -> instance -> target -> prompt/location,
  each query variable chained on the ones before it, label_values over an exporter
  metric, "All" = ".*" (so that an absent label, e.g. no `cluster`, still matches);
- every series selector of every panel filters on cluster/job/instance (and on
  target/prompt/location where the metric has them);
- a panel reading a recording rule of config/prometheus/recording_rules.yml falls
  back to the rule's own expression (`recorded{...} or on (labels) (expr)`), so the
  dashboards work where the rules are not loaded; the fallback is generated from
  the rule file, so the two cannot drift;
- every panel has a description written for its reader and a "no data" hint.
Metric names are those of the exporter's metrics contract (tests/deploy/deploylib.py).
"""
import argparse
import json
import pathlib
import re
import sys

import yaml

HERE = pathlib.Path(__file__).resolve().parent
RULES = HERE.parent / "config" / "prometheus" / "recording_rules.yml"
SCHEMA_VERSION = 39  # Grafana 10.4 / 11.x
DS = {"type": "prometheus", "uid": "${datasource}"}

# Label selectors. SCOPE: which Prometheus scrape target(s) (every series has
# these; `cluster` is often absent, and ".*" matches the empty value).
SCOPE = 'cluster=~"$cluster", job=~"$job", instance=~"$instance"'
# Per-target series (llm_stream_target_info, stall threshold, back-offs).
SEL_T = SCOPE + ', target=~"$target", location=~"$location"'
# Per-probe series (target/model/prompt) and the recording rules over them.
SEL = SCOPE + ', target=~"$target", prompt=~"$prompt", location=~"$location"'

ALERT_WARNING = "0.25"   # keep equal to LLMStreamGapP95High's threshold
ALERT_CRITICAL = "0.5"   # keep equal to LLMStreamGapP95Critical's threshold

# "No data" hints (fieldConfig.defaults.noValue).
NO_EXPORTER = ("No exporter seen: is Prometheus scraping llm-stream-exporter (ServiceMonitor/PodMonitor "
               "or scrape config), and do the cluster/job/instance filters match it?")
NO_PROBES = ("No probe data for this selection: check \"Exporter scrape status\" at the top, then the "
             "cluster/job/instance/target filters.")
NO_SUCCESS = ("No successful probe in this window: see \"Last probe result\" and the failure panels "
              "(a target that only fails has no latency data), or \"Exporter scrape status\".")
NO_STALL = ("No stall data for this selection: no probe completed yet, or the exporter is not scraped "
            "(see \"Exporter scrape status\").")



# A 0/1 value shown red below 1, green at 1; and its two words.
RED_BELOW_1 = {"mode": "absolute", "steps": [{"color": "red", "value": None},
                                             {"color": "green", "value": 1}]}


def zero_one(zero_text, one_text):
    return [{"type": "value", "options": {"0": {"text": zero_text, "color": "red"},
                                          "1": {"text": one_text, "color": "green"}}}]

def recording_rules():
    doc = yaml.safe_load(RULES.read_text())
    return {r["record"]: " ".join(r["expr"].split())
            for g in doc["groups"] for r in g["rules"] if "record" in r}


def with_matchers(expr, matchers):
    """Adds `matchers` to every llm_stream_* selector of `expr`."""
    def rep(m):
        inner = (m.group(2) or "{}")[1:-1].strip()
        return m.group(1) + "{" + (inner + ", " if inner else "") + matchers + "}"
    return re.sub(r"\b(llm_stream_[a-z0-9_]+)(\{[^}]*\})?", rep, expr)


def recorded(name, matchers=SEL):
    """A recording rule's series, or where the rule is not loaded (or the filters
    select labels the rule aggregated away), the rule's own expression on the raw
    series. `or on (<the rule's labels>)` keeps one series per label set."""
    expr = recording_rules()[name]
    m = re.search(r"\bby \(([^)]*)\)", expr)
    labels = [x.strip() for x in m.group(1).split(",") if x.strip() != "le"]
    return (f"{name}{{{matchers}}} or on ({', '.join(labels)}) "
            f"({with_matchers(expr, matchers)})")


def quantile(q, metric, by, window="$__rate_interval", matchers=SEL):
    """A quantile of a histogram, on the native histogram when Prometheus has it
    and on the classic buckets otherwise (docs/queries.md): `or` keeps the
    native result for a label set both branches have, so a Prometheus keeping
    both shows the resolved value, and the panel still works with
    metrics.classic: false (no _bucket series) or a text-only scrape."""
    labels = [x.strip() for x in by.split(",") if x.strip()]
    rate = f"rate({metric}{{{matchers}}}[{window}])"
    native = (f"histogram_quantile({q}, sum by ({', '.join(labels)}) ({rate}))" if labels
              else f"histogram_quantile({q}, sum({rate}))")
    classic = (f"histogram_quantile({q}, sum by ({', '.join(labels + ['le'])}) "
               f"(rate({metric}_bucket{{{matchers}}}[{window}])))")
    return f"({native} or {classic})"


def rate_of(part, metric, by, window="$__rate_interval", matchers=SEL):
    """Per-second rate of a histogram's sum or count (`part`), native first:
    histogram_sum/histogram_count of the native histogram, or the classic
    _sum/_count series."""
    grouping = f"sum by ({by})" if by else "sum"
    return (f"({grouping} (histogram_{part}(rate({metric}{{{matchers}}}[{window}]))) or "
            f"{grouping} (rate({metric}_{part}{{{matchers}}}[{window}])))")


def target(expr, legend="", ref="A", fmt=None, instant=False):
    t = {
        "datasource": DS,
        "editorMode": "code",
        "expr": expr,
        "legendFormat": legend or "__auto",
        "range": not instant,
        "instant": instant,
        "refId": ref,
    }
    if fmt:
        t["format"] = fmt
    return t


def targets(*specs):
    out = []
    for i, spec in enumerate(specs):
        expr, legend = spec[0], spec[1] if len(spec) > 1 else ""
        out.append(target(expr, legend, ref=chr(ord("A") + i)))
    return out


class Layout:
    """Places panels left to right on Grafana's 24-column grid."""

    def __init__(self):
        self.x = 0
        self.y = 0
        self.row_h = 0
        self.next_id = 1
        self.panels = []

    def _id(self):
        i = self.next_id
        self.next_id += 1
        return i

    def row(self, title):
        self.newline()
        self.panels.append({
            "id": self._id(), "type": "row", "title": title, "collapsed": False,
            "datasource": DS, "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y},
            "panels": [],
        })
        self.y += 1

    def newline(self):
        if self.x:
            self.y += self.row_h
            self.x = 0
            self.row_h = 0

    def add(self, panel, w, h, id_last=False, no_value=NO_PROBES):
        """id_last: the panel takes its id after every other panel's (done()), so that
        a panel added later leaves the ids of the existing ones, and links to them, as
        they were. no_value: the text Grafana shows instead of "No data"."""
        if self.x + w > 24:
            self.newline()
        panel = dict(panel)
        panel["id"] = None if id_last else self._id()
        panel["datasource"] = DS
        panel["gridPos"] = {"h": h, "w": w, "x": self.x, "y": self.y}
        panel.setdefault("fieldConfig", {"defaults": {}, "overrides": []})
        panel["fieldConfig"]["defaults"].setdefault("noValue", no_value)
        self.x += w
        self.row_h = max(self.row_h, h)
        self.panels.append(panel)
        return panel

    def done(self):
        for p in self.panels:
            if p["id"] is None:
                p["id"] = self._id()
        return self.panels


def thresholds(*steps):
    out = [{"color": "green", "value": None}]
    for value, color in steps:
        out.append({"color": color, "value": value})
    return {"mode": "absolute", "steps": out}


def timeseries(title, description, tgts, unit="s", stack=False, thresholds_=None,
               min_=0, overrides=None, links=None):
    custom = {
        "drawStyle": "line", "lineWidth": 1, "fillOpacity": 10 if not stack else 60,
        "showPoints": "never", "spanNulls": True,
        "stacking": {"mode": "normal" if stack else "none", "group": "A"},
    }
    if thresholds_:
        custom["thresholdsStyle"] = {"mode": "dashed"}
    p = {
        "type": "timeseries", "title": title, "description": description,
        "targets": tgts,
        "fieldConfig": {
            "defaults": {
                "unit": unit, "min": min_, "custom": custom,
                "thresholds": thresholds_ or thresholds(),
                "color": {"mode": "palette-classic"},
            },
            "overrides": overrides or [],
        },
        "options": {
            "legend": {"displayMode": "table", "placement": "bottom",
                       "calcs": ["lastNotNull", "max"]},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
    }
    if links:
        p["fieldConfig"]["defaults"]["links"] = links  # data links: ${__field.labels.*} works here
    return p


def stat(title, description, tgts, unit="none", thresholds_=None, mappings=None,
         text_mode="auto", overrides=None):
    return {
        "type": "stat", "title": title, "description": description, "targets": tgts,
        "fieldConfig": {
            "defaults": {"unit": unit, "thresholds": thresholds_ or thresholds(),
                         "mappings": mappings or [], "color": {"mode": "thresholds"}},
            "overrides": overrides or [],
        },
        "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                    "colorMode": "background", "graphMode": "none", "textMode": text_mode,
                    "justifyMode": "auto", "orientation": "auto"},
    }


def state_timeline(title, description, tgts, mappings, thresholds_, links=None):
    p = {
        "type": "state-timeline", "title": title, "description": description,
        "targets": tgts,
        "fieldConfig": {
            "defaults": {"unit": "none", "mappings": mappings, "thresholds": thresholds_,
                         "color": {"mode": "thresholds"},
                         "custom": {"fillOpacity": 80, "lineWidth": 0}},
            "overrides": [],
        },
        "options": {"mergeValues": True, "showValue": "auto", "alignValue": "left",
                    "rowHeight": 0.9, "legend": {"displayMode": "list", "placement": "bottom"},
                    "tooltip": {"mode": "single", "sort": "none"}},
    }
    if links:
        p["fieldConfig"]["defaults"]["links"] = links
    return p


def table(title, description, tgts, unit, thresholds_, links=None):
    p = {
        "type": "table", "title": title, "description": description, "targets": tgts,
        "fieldConfig": {
            "defaults": {"unit": unit, "thresholds": thresholds_,
                         "custom": {"align": "auto", "cellOptions": {"type": "color-background"}}},
            "overrides": [],
        },
        "options": {"showHeader": True, "sortBy": [{"displayName": "Value", "desc": True}]},
        "transformations": [{"id": "organize", "options": {
            "excludeByName": {"Time": True}, "renameByName": {"Value": "Value"}}}],
    }
    if links:
        p["fieldConfig"]["defaults"]["links"] = links
    return p


def info_table(title, description, expr, columns, links=None):
    """A table of an info metric: one row per series, its labels as columns (in
    `columns` order), the constant value and the timestamp hidden."""
    overrides = []
    if links:
        overrides.append({"matcher": {"id": "byName", "options": columns[0]},
                          "properties": [{"id": "links", "value": links}]})
    return {
        "type": "table", "title": title, "description": description,
        "targets": [target(expr, "", fmt="table", instant=True)],
        "fieldConfig": {
            "defaults": {"custom": {"align": "auto", "cellOptions": {"type": "auto"}}},
            "overrides": overrides,
        },
        "options": {"showHeader": True, "cellHeight": "sm",
                    "sortBy": [{"displayName": columns[0], "desc": False}]},
        "transformations": [{"id": "organize", "options": {
            "excludeByName": {"Time": True, "Value": True},
            "indexByName": {c: i for i, c in enumerate(columns)}, "renameByName": {}}}],
    }


TARGET_COLUMNS = ["target", "api", "model", "host", "http_version", "location"]
TARGETS_EXPR = (f'max by ({", ".join(TARGET_COLUMNS)}) '
                f'(llm_stream_target_info{{{SEL_T}}})')
TARGETS_DESCRIPTION = (
    "One row per probed target: the API dialect it speaks, the model, the upstream host, the HTTP "
    "version its latest answered probe spoke (1.1 or 2) "
    "(and the prober location when probing from several nodes/zones). Use it to tell which "
    "provider or gateway a target name stands for before paging its owner. A target missing "
    "here is not in the exporter's configuration (or its exporter is not scraped).")

# The exporter(s) behind the selection, as Prometheus' scrape sees them: `up` of
# every scrape target that exposed llm_stream_exporter_build_info in the last day
# (so that other jobs never count, and an exporter that went down still does).
EXPORTER_UP = (f'up{{{SCOPE}}} and on (cluster, job, instance) '
               f'last_over_time(llm_stream_exporter_build_info{{{SCOPE}}}[1d])')


def exporter_status():
    return stat(
        "Exporter scrape status",
        "How many llm-stream-exporter instances of this selection Prometheus scrapes successfully "
        "(up) and how many it cannot reach (down). Good: down = 0. When down > 0 every other panel "
        "goes stale for that exporter: check the exporter pod/process and its /-/healthy endpoint, "
        "then the scrape config or ServiceMonitor (owner: whoever runs the exporter and Prometheus). "
        "When this panel itself shows no data, Prometheus has never scraped an exporter matching "
        "the cluster/job/instance filters.",
        targets((f'sum({EXPORTER_UP})', "up"),
                (f'count({EXPORTER_UP}) - sum({EXPORTER_UP})', "down")),
        thresholds_=RED_BELOW_1,
        text_mode="value_and_name",
        overrides=[{"matcher": {"id": "byName", "options": "down"}, "properties": [
            {"id": "thresholds", "value": thresholds((1, "red"))}]}])


def query_var(name, label, query, description, multi=True, include_all=True):
    v = {
        "name": name, "label": label, "type": "query", "datasource": DS,
        "description": description,
        "definition": query, "query": {"query": query, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
        "refresh": 2, "sort": 1, "multi": multi, "includeAll": include_all,
        "current": {}, "options": [], "hide": 0, "regex": "",
    }
    if include_all:
        # ".*" also matches an absent label (e.g. no `cluster` label at all).
        v["allValue"] = ".*"
        v["current"] = {"selected": True, "text": ["All"], "value": ["$__all"]}
    return v


def datasource_var():
    return {"name": "datasource", "label": "Data source", "type": "datasource",
            "description": "The Prometheus that scrapes llm-stream-exporter.",
            "query": "prometheus", "current": {}, "hide": 0, "refresh": 1,
            "regex": "", "options": [], "multi": False, "includeAll": False}


def scope_vars():
    """cluster -> job -> instance, each listing what the one before allows."""
    return [
        query_var("cluster", "Cluster", "label_values(llm_stream_exporter_build_info, cluster)",
                  "The `cluster` label of the exporters' series, when your Prometheus (or Thanos/Mimir) "
                  "adds one; empty otherwise, and \"All\" then matches every series."),
        query_var("job", "Job", 'label_values(llm_stream_exporter_build_info{cluster=~"$cluster"}, job)',
                  "The Prometheus scrape job(s) of llm-stream-exporter in the selected cluster(s)."),
        query_var("instance", "Instance",
                  'label_values(llm_stream_exporter_build_info{cluster=~"$cluster", job=~"$job"}, instance)',
                  "The exporter instance(s) (host:port) of the selected job(s)."),
    ]


def probe_vars(target_multi):
    target_q = f"label_values(llm_stream_target_info{{{SCOPE}}}, target)"
    return [
        query_var("target", "Target", target_q,
                  "The configured target(s) the selected exporter instances probe.",
                  multi=target_multi, include_all=target_multi),
        query_var("prompt", "Prompt",
                  f'label_values(llm_stream_last_probe_success{{{SCOPE}, target=~"$target"}}, prompt)',
                  "The prompt(s) of the selected target(s)."),
        query_var("location", "Location",
                  f'label_values(llm_stream_last_probe_success{{{SCOPE}, target=~"$target"}}, location)',
                  "Where the probes run from (node/zone), when the scrape adds a `location` label; "
                  "empty for a single prober."),
    ]


def exporter_url_var():
    return {"name": "exporter_url", "label": "Exporter URL", "type": "textbox",
            "query": EXPORTER_URL_DEFAULT, "hide": 0,
            "description": "Where your browser reaches the exporter's own pages (landing page, "
                           "probe pages): the targets' links open there.",
            "current": {"selected": False, "text": EXPORTER_URL_DEFAULT,
                        "value": EXPORTER_URL_DEFAULT},
            "options": [{"selected": True, "text": EXPORTER_URL_DEFAULT,
                         "value": EXPORTER_URL_DEFAULT}]}


def constant_var(name, label, value, description):
    return {"name": name, "label": label, "type": "constant", "query": value,
            "description": description, "hide": 2,
            "current": {"selected": False, "text": value, "value": value},
            "options": [{"selected": True, "text": value, "value": value}]}


# Which alerts a panel shows the value of: the panel links their runbook entries.
PANEL_ALERTS = {
    "Exporter scrape status": ("LLMStreamExporterDown", "LLMStreamExporterAbsent"),
    "Config reload": ("LLMStreamConfigReloadFailed",),
    "Shards answering": ("LLMStreamShardsMissing", "LLMStreamShardingMismatch"),
    "Time to first token p50 / p95": ("LLMStreamTTFTP95High",),
    "Inter-chunk gap p95 vs alert threshold": ("LLMStreamGapP95High", "LLMStreamGapP95Critical"),
    "Stalled-probe ratio": ("LLMStreamStalling", "LLMStreamStallsFrequent"),
    "Share of probes that stall, against its bar": ("LLMStreamStalling", "LLMStreamStallsFrequent"),
    "Typical worst gap, against its bar": ("LLMStreamStalling",),
    "Chunks arriving held together": ("LLMStreamBuffered",),
    "Failure ratio by reason": ("LLMStreamProbesFailing",),
    "Age of last success": ("LLMStreamProbesMissing", "LLMStreamProbesStale"),
}
# Histograms whose buckets carry a probe_id exemplar (the probe behind the bucket).
EXEMPLAR_HISTOGRAMS = ("llm_stream_time_to_first_token_seconds_bucket",
                       "llm_stream_inter_chunk_gap_seconds_bucket",
                       "llm_stream_probe_max_gap_seconds_bucket")


def finish_panels(panels):
    """Runbook links per alert; exemplars on every graph over an exemplar histogram."""
    for p in panels:
        if p.get("title") in PANEL_ALERTS and not p.get("links"):
            p["links"] = runbook_links(*PANEL_ALERTS[p["title"]])
        if p.get("type") != "timeseries":
            continue
        for t in p.get("targets", []):
            if any(h in t["expr"] for h in EXEMPLAR_HISTOGRAMS):
                t["exemplar"] = True
    return panels


def dashboard(uid, title, description, variables, panels, links):
    panels = finish_panels(panels)
    links = links + [{"title": "Runbook", "type": "link", "url": RUNBOOK, "icon": "doc",
                      "keepTime": False, "includeVars": False, "asDropdown": False,
                      "targetBlank": True, "tags": [],
                      "tooltip": "What each alert means and what to do (one entry per alert)"}]
    return {
        "uid": uid, "title": title, "description": description,
        "tags": ["llm", "llm-stream-exporter", "streaming"],
        "editable": True, "graphTooltip": 1, "timezone": "browser",
        "schemaVersion": SCHEMA_VERSION, "version": 1, "refresh": "1m",
        "time": {"from": "now-6h", "to": "now"}, "fiscalYearStartMonth": 0,
        "liveNow": False, "weekStart": "",
        "annotations": {"list": []},
        "templating": {"list": variables},
        "links": links,
        "panels": panels,
    }


OVERVIEW = "/d/llm-stream-overview/llm-stream-overview"
DRILL = "/d/llm-stream-target/llm-stream-target-drill-down"
# What a link to the drill-down carries besides the target: the data source, the
# scope and prompt/location selection, and the time range.
DRILL_VARS = ("var-datasource=${datasource}&${cluster:queryparam}&${job:queryparam}"
              "&${instance:queryparam}&${prompt:queryparam}&${location:queryparam}&${__url_time_range}")


def drill_link(target_ref, title_ref):
    return [{"title": f"Drill down into {title_ref}", "targetBlank": False,
             "url": f"{DRILL}?var-target={target_ref}&{DRILL_VARS}"}]


# A data link on a series (timeseries, state timeline): the series' target label.
DRILL_LINK = drill_link("${__field.labels.target}", "${__field.labels.target}")
# From a table row (instant query, format table): the row's target column.
DRILL_ROW_LINK = drill_link("${__data.fields.target}", "${__data.fields.target}")
# From a table cell of the target column.
DRILL_CELL_LINK = drill_link("${__value.text}", "${__value.text}")


# The exporter's own pages, from the `exporter_url` variable: a target's row on
# the landing page, and one probe's page (what an exemplar's probe_id names).
EXPORTER_URL_DEFAULT = "http://llm-stream-exporter:9687"
LANDING_CELL_LINK = [{"title": "${__value.text} on the exporter's page", "targetBlank": True,
                      "url": "${exporter_url}/#target-${__value.text}"}]
RUNBOOK = "https://github.com/llm-stream-exporter/llm-stream-exporter/blob/main/docs/runbook.md"


def runbook_links(*alerts):
    """Panel links to the runbook entry of each alert the panel shows."""
    return [{"title": f"Runbook: {a}", "targetBlank": True, "url": f"{RUNBOOK}#{a.lower()}"}
            for a in alerts]


# The alerts' own windows: a panel that shows what an alert evaluates uses its
# fixed window, so the value does not change with the zoom level.
RATIO_WINDOW = "15m"
# Per target and location, every selected prompt together: what LLMStreamStalling reads.
BY_TL = "target, location"
STALL_SHARE = (f'sum by ({BY_TL}) (increase(llm_stream_stalled_probes_total{{{SEL}}}[{RATIO_WINDOW}])) '
               f'/ sum by ({BY_TL}) (increase(llm_stream_probes_total{{{SEL}}}[{RATIO_WINDOW}]))')
WORST_GAP = quantile("0.5", "llm_stream_probe_max_gap_seconds", BY_TL, window=RATIO_WINDOW)
STALL_SHARE_BAR = f'max by ({BY_TL}) (llm_stream_alert_stall_share{{{SEL_T}}})'
WORST_GAP_BAR = f'max by ({BY_TL}) (llm_stream_alert_worst_gap_seconds{{{SEL_T}}})'
TTFT_BAR = f'max by ({BY_TL}) (llm_stream_alert_ttft_seconds{{{SEL_T}}})'
# Green below the bar, red at or above it: the bar itself comes from the
# target's threshold gauge (the quotient's 1 is "at the bar", not a threshold).
AT_THE_BAR = thresholds((1, "red"))


def stalling_table():
    cols = {"Value #A": ("probes that stall", "percentunit"),
            "Value #B": ("its bar (alert.stall_share)", "percentunit"),
            "Value #C": ("share ÷ bar", "none"),
            "Value #D": ("typical worst gap", "s"),
            "Value #E": ("its bar (alert.worst_gap)", "s"),
            "Value #F": ("worst gap ÷ bar", "none")}
    overrides = [{"matcher": {"id": "byName", "options": name},
                  "properties": [{"id": "unit", "value": unit}, {"id": "decimals", "value": 2}]
                  + ([{"id": "thresholds", "value": AT_THE_BAR},
                      {"id": "custom.cellOptions", "value": {"type": "color-background"}}]
                     if "÷" in name else [])}
                 for name, unit in cols.values()]
    overrides.append({"matcher": {"id": "byName", "options": "target"},
                      "properties": [{"id": "links", "value": DRILL_CELL_LINK + LANDING_CELL_LINK}]})
    exprs = [STALL_SHARE, STALL_SHARE_BAR,
             f"({STALL_SHARE}) / on ({BY_TL}) group_left () ({STALL_SHARE_BAR})",
             WORST_GAP, WORST_GAP_BAR,
             f"({WORST_GAP}) / on ({BY_TL}) group_left () ({WORST_GAP_BAR})"]
    return {
        "type": "table", "title": "Streams stalling, where (last 15 minutes)",
        "description": (
            "Per target and prober location, every prompt together, over the last 15 minutes (the "
            "window the stall alerts evaluate): the share of probes with at least one stall, and "
            "the typical probe's largest pause (the median over probes of each stream's worst "
            "gap), each next to the target's own bar from the exporter's configuration (alert: "
            "stall_share and worst_gap). A red \"÷ bar\" cell is at or above the bar: the "
            "stalling page fires after 15 minutes of it. Good: every cell green. Click a target "
            "to drill down, or to open its row on the exporter's page (set the Exporter URL "
            "variable)."),
        "targets": [target(e, "", ref=chr(ord("A") + i), fmt="table", instant=True)
                    for i, e in enumerate(exprs)],
        "fieldConfig": {"defaults": {"unit": "s",
                                     "custom": {"align": "auto", "cellOptions": {"type": "auto"}}},
                        "overrides": overrides},
        "options": {"showHeader": True, "cellHeight": "sm",
                    "sortBy": [{"displayName": "share ÷ bar", "desc": True}]},
        "transformations": [
            {"id": "merge", "options": {}},
            {"id": "organize", "options": {
                "excludeByName": {"Time": True},
                "indexByName": {"target": 0, "location": 1,
                                **{k: i + 2 for i, k in enumerate(cols)}},
                "renameByName": {k: v[0] for k, v in cols.items()}}}],
        "links": runbook_links("LLMStreamStalling", "LLMStreamStallsFrequent"),
    }


def bar_lines(legend_regex):
    """The threshold series (a target's bar) drawn dashed, without fill."""
    return [{"matcher": {"id": "byRegexp", "options": legend_regex},
             "properties": THRESHOLD_LINE}]


def dashboard_link(title, url, tooltip):
    return {"title": title, "type": "link", "url": url, "icon": "dashboard",
            "keepTime": True, "includeVars": True, "asDropdown": False,
            "targetBlank": False, "tags": [], "tooltip": tooltip}


THRESHOLD_LINE = [
    {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}},
    {"id": "custom.fillOpacity", "value": 0}]

# A gap percentile of a stream whose chunks arrive together is interpolated
# inside the first bucket (a few ms) although every gap is 0: it looks like
# the healthiest target. The flag repeats the percentile as red points where
# >= 95 % of the window's gaps fell in the first bucket. Buckets are
# cumulative, so the smallest finite bucket's count is the first bucket's,
# whatever the configured boundaries are.
FIRST_BUCKET_LEGEND = "every gap under the first bucket"
FIRST_BUCKET_FLAG = [{"matcher": {"id": "byRegexp", "options": f"/{FIRST_BUCKET_LEGEND}/"},
                      "properties": [
                          {"id": "color", "value": {"mode": "fixed", "fixedColor": "red"}},
                          {"id": "custom.drawStyle", "value": "points"},
                          {"id": "custom.pointSize", "value": 9}]}]


# On a native histogram the percentile is not interpolated in a wide bucket, and
# a fast server's 2-5 ms gaps are real: the flag there is the share of gaps
# under 1 ms, chunks that came in the same read (histogram_fraction).
HELD_TOGETHER = "0.001"


def first_bucket_flag(value_expr, by, window):
    """value_expr where >= 95 % of the gaps (per `by`) fell in the first bucket
    (classic) or under HELD_TOGETHER (native; the native share wins where both
    exist, as in quantile())."""
    native = (f'histogram_fraction(0, {HELD_TOGETHER}, sum by ({by}) '
              f'(rate(llm_stream_inter_chunk_gap_seconds{{{SEL}}}[{window}])))')
    classic = (f'min by ({by}) (sum by ({by}, le) (rate(llm_stream_inter_chunk_gap_seconds_bucket'
               f'{{{SEL},le!="+Inf"}}[{window}]))) / sum by ({by}) (rate('
               f'llm_stream_inter_chunk_gap_seconds_count{{{SEL}}}[{window}]))')
    return f'({value_expr}) and on ({by}) (({native} or {classic}) >= 0.95)'


def overview():
    lay = Layout()
    lay.row("Are streams stalling, where")
    lay.add(exporter_status(), 4, 4, id_last=True, no_value=NO_EXPORTER)
    lay.add(stalling_table(), 20, 7, id_last=True, no_value=NO_STALL)
    lay.add(timeseries(
        "Share of probes that stall, against its bar",
        "Per target and location, every prompt together: the share of probes with at least one "
        "stall over the last 15 minutes at each point in time (the stalling alerts' window, so "
        "zooming does not change it), and dashed, each target's own bar (alert.stall_share). "
        "Above its bar for 15 minutes the stalling page fires, after 5 the warning. Good: well "
        "below. Click a series to drill down.",
        targets((STALL_SHARE, "{{target}} {{location}}"),
                (STALL_SHARE_BAR, "{{target}} {{location}} bar")),
        unit="percentunit", overrides=bar_lines("/ bar$/"), links=DRILL_LINK), 12, 8,
        id_last=True, no_value=NO_STALL)
    lay.add(timeseries(
        "Typical worst gap, against its bar",
        "Per target and location: the median over the last 15 minutes' probes of each stream's "
        "largest pause, and dashed, the target's own bar (alert.worst_gap). A reader of a typical "
        "answer sees this freeze once. Above the bar for 15 minutes the stalling page fires. "
        "The dots are exemplars: each names the probe behind a bucket; with the data source's "
        "exemplar link set up (runbook), a click opens that probe's gap timeline on the exporter. "
        "Click a series to drill down.",
        targets((WORST_GAP, "{{target}} {{location}}"),
                (WORST_GAP_BAR, "{{target}} {{location}} bar")),
        overrides=bar_lines("/ bar$/"), links=DRILL_LINK), 12, 8, id_last=True,
        no_value=NO_SUCCESS)
    lay.row("Now")
    lay.add(stat(
        "Targets probed",
        "How many configured targets of this selection have probe series. It should equal the "
        "number of targets in the exporter's configuration; fewer means a target was removed, "
        "renamed, or its exporter is not scraped (see \"Exporter scrape status\").",
        targets((f'count(count by (target) (llm_stream_last_probe_success{{{SEL}}}))', "targets"))), 4, 4)
    lay.add(stat(
        "Last probe succeeded",
        "Share of target/prompt series whose most recent probe succeeded. Good: 100 %. Below "
        "100 % some endpoint is failing right now: \"Last probe result\" shows which, \"Failure "
        "ratio by reason\" why (auth and quota errors point to the credentials owner, 5xx and "
        "timeouts to the provider or gateway owner).",
        targets((f'avg(llm_stream_last_probe_success{{{SEL}}})', "ok")),
        unit="percentunit", thresholds_={"mode": "absolute", "steps": [
            {"color": "red", "value": None}, {"color": "orange", "value": 0.8},
            {"color": "green", "value": 1}]}), 4, 4)
    lay.add(stat(
        "Failure ratio (time range)",
        "Failed probes divided by all probes over the dashboard's time range. Good: close to 0. "
        "Above 5 % (orange) users of the same endpoint likely see errors too; above 20 % (red) the "
        "failing-probes alert fires. Break it down with \"Failure ratio by reason\".",
        targets((f'sum(increase(llm_stream_probes_total{{result="failure", {SEL}}}[$__range])) / sum(increase(llm_stream_probes_total{{{SEL}}}[$__range]))', "failed")),
        unit="percentunit", thresholds_=thresholds((0.05, "orange"), (0.2, "red"))), 4, 4,
        no_value="No probes completed in the time range: widen the time range, or check "
                 "\"Exporter scrape status\" and the filters.")
    lay.add(stat(
        "Config reload",
        "Whether the last configuration reload of every selected exporter succeeded (the worst is "
        "shown). FAILED means the exporter kept probing with its previous configuration: fix the "
        "config file or ConfigMap (see the exporter's log or its /config page); owner: whoever "
        "maintains the exporter's configuration.",
        targets((f'min(llm_stream_exporter_config_last_reload_successful{{{SCOPE}}})', "reload")),
        mappings=zero_one("FAILED", "OK"),
        thresholds_=RED_BELOW_1), 4, 4,
        no_value=NO_EXPORTER)
    lay.add(stat(
        "Exporter versions",
        "How many selected exporters run each version (revision). After a rollout there should be "
        "one version; several for long means a rollout is stuck.",
        targets((f'count by (version, revision) (llm_stream_exporter_build_info{{{SCOPE}}})', "{{version}} ({{revision}})")),
        text_mode="value_and_name"), 4, 4, no_value=NO_EXPORTER)
    lay.add(stat(
        "Shards answering",
        "Sharded replicas (--shard.count, docs/deploy.md \"Scaling out: sharding\"): how many "
        "distinct shard indexes answer, of the shard count the replicas export; one exporter "
        "shows 1 of 1. Fewer answering than the count: the missing shards' targets are probed by "
        "no one (LLMStreamShardsMissing). Replicas exporting different counts split the targets "
        "two ways (LLMStreamShardingMismatch); owner: whoever runs the exporter's deployment.",
        targets((f'count(count_values("shard", llm_stream_shard_index{{{SCOPE}}}))', "answering"),
                (f'max(llm_stream_shards{{{SCOPE}}})', "of count")),
        text_mode="value_and_name"), 4, 4, no_value=NO_EXPORTER)
    lay.add(info_table("Targets", TARGETS_DESCRIPTION + " Click a target to open its drill-down.",
                       TARGETS_EXPR, TARGET_COLUMNS, links=DRILL_CELL_LINK), 24, 6, id_last=True)

    lay.row("Latency")
    lay.add(timeseries(
        "Time to first token p50 / p95",
        "How long readers wait for the first words: probe start to the first content chunk, per "
        "target (selected prompts and locations together). Good: steady and well below the "
        "target's own bar (dashed: alert.ttft of the exporter's configuration, 5 s unless set; "
        "a reasoning model may have a higher one). A rising p95 with a steady p50 means some requests queue at the "
        "provider; both rising means the model serving is slow or saturated (owner: provider or "
        "model-serving team). Click a series to drill down into the target.",
        targets(
            (quantile('0.50', 'llm_stream_time_to_first_token_seconds', 'target'), "{{target}} p50"),
            (quantile('0.95', 'llm_stream_time_to_first_token_seconds', 'target'), "{{target}} p95"),
            (TTFT_BAR, "{{target}} {{location}} bar"),
        ), overrides=bar_lines("/ bar$/"), links=DRILL_LINK), 12, 9, no_value=NO_SUCCESS)
    lay.add(timeseries(
        "Inter-chunk gap p95 vs alert threshold",
        "The 95th percentile of the pauses between streamed chunks over 10 minutes, per target "
        "(and prober location, when there are several), against the warning (orange) and critical (red) alert thresholds. With every prompt and "
        "location selected this is exactly the value the gap alerts evaluate. Good: well under "
        "the orange line. Above it readers see the answer stutter; a sudden jump usually follows "
        "a change on the network path (proxy buffering, load balancer: owner network/platform "
        "team), a slow climb points to provider load. Red points: 95 % or more of the target's "
        "gaps fell in the first bucket, so its p95 is interpolated and its chunks most likely "
        "arrive held together (see Buffering): not healthy, buffered. Click a series to drill down.",
        targets(
            (recorded("target:llm_stream_inter_chunk_gap_seconds:p95_rate10m"), "{{target}} {{location}}"),
            ('vector($gap_p95_warning)', "warning threshold"),
            ('vector($gap_p95_critical)', "critical threshold"),
            (first_bucket_flag(recorded("target:llm_stream_inter_chunk_gap_seconds:p95_rate10m"),
                               "target", "$__rate_interval"), "{{target}} " + FIRST_BUCKET_LEGEND),
        ),
        overrides=FIRST_BUCKET_FLAG + [
            {"matcher": {"id": "byName", "options": "warning threshold"}, "properties": [
                {"id": "color", "value": {"mode": "fixed", "fixedColor": "orange"}}] + THRESHOLD_LINE},
            {"matcher": {"id": "byName", "options": "critical threshold"}, "properties": [
                {"id": "color", "value": {"mode": "fixed", "fixedColor": "red"}}] + THRESHOLD_LINE},
        ], links=DRILL_LINK), 12, 9, no_value=NO_SUCCESS)

    lay.row("Stalls and failures")
    lay.add(timeseries(
        "Stalls per minute",
        "Pauses between chunks at or above the target's stall threshold, per minute, per target. "
        "Good: near 0. Many stalls on one target point to its provider or the path to it; stalls "
        "on every target at once point to the prober's own network (owner: platform team). "
        "Click a series to drill down.",
        targets((f'60 * sum by (target) (rate(llm_stream_stalls_total{{{SEL}}}[$__rate_interval]))', "{{target}}")),
        unit="short", links=DRILL_LINK), 8, 8, no_value=NO_STALL)
    lay.add(timeseries(
        "Stalled-probe ratio",
        "Share of probes with at least one stall, per target, at the resolution of the graph. "
        "Good: under a few percent. Each target's own bar (alert.stall_share, 20 % unless set) "
        "and the 15-minute share the alerts evaluate are in the first row (\"Share of probes "
        "that stall, against its bar\"); above it users regularly see answers freeze "
        "mid-sentence. Click a series to drill down.",
        targets((f'sum by (target) (rate(llm_stream_stalled_probes_total{{{SEL}}}[$__rate_interval])) / sum by (target) (rate(llm_stream_probes_total{{{SEL}}}[$__rate_interval]))', "{{target}}")),
        unit="percentunit", links=DRILL_LINK), 8, 8,
        no_value=NO_STALL)
    lay.add(timeseries(
        "Failure ratio by reason",
        "Failed probes by reason as a share of all probes of the target. Good: empty or near 0. "
        "http_4xx: credentials or request rejected (owner: whoever manages the API key); "
        "http_429: rate limit or quota; http_5xx, upstream_error: the provider or gateway; "
        "dns/connect/tls: DNS, network or certificates (platform team); timeout_*: the "
        "provider is overloaded or the path hangs. Click a series to drill down.",
        targets((f'sum by (target, reason) (rate(llm_stream_probe_failures_total{{{SEL}}}[$__rate_interval])) / on (target) group_left () sum by (target) (rate(llm_stream_probes_total{{{SEL}}}[$__rate_interval]))', "{{target}} {{reason}}")),
        unit="percentunit", stack=True, links=DRILL_LINK), 8, 8)

    lay.row("Buffering")
    lay.add(timeseries(
        "Chunks arriving held together",
        "Share of streamed chunks that arrived in the same network read as the chunk before them, "
        "per target. Good: near 0, each chunk arrives on its own as the model writes it. Above "
        "50 % (dashed line) something on the path holds the stream and releases it in batches "
        "or all at once: compression of the stream (nginx gzip, caddy encode), proxy buffering "
        "or haproxy's batching. The gap panels then look excellent because the gaps are 0, and "
        "the buffered-stream alert fires (owner: network/proxy team). Click a series to drill "
        "down.",
        targets((f'sum by (target) (rate(llm_stream_coalesced_chunks_total{{{SEL}}}[$__rate_interval])) / sum by (target) (rate(llm_stream_chunks_total{{{SEL}}}[$__rate_interval]))', "{{target}}")),
        unit="percentunit", thresholds_=thresholds((0.5, "orange")), links=DRILL_LINK), 24, 7,
        no_value=NO_SUCCESS)

    lay.row("Freshness")
    lay.add(table(
        "Age of last success",
        "Seconds since the last successful probe, per target/prompt/location, looking back 24 h. "
        "Good: about one probe interval. Orange after 5 minutes, red after 15 (when the "
        "missing-probes alert fires): the endpoint fails every probe, or the exporter stopped "
        "probing it. A row missing entirely had no success in 24 h. Click a row to drill down.",
        [target(f'time() - max by (target, prompt, location) (max_over_time((llm_stream_last_probe_timestamp_seconds{{{SEL}}} and llm_stream_last_probe_success{{{SEL}}} == 1)[24h:]))',
                "{{target}} {{prompt}} {{location}}", fmt="table", instant=True)],
        "s", thresholds((300, "orange"), (900, "red")), links=DRILL_ROW_LINK), 12, 8,
        no_value="No successful probe in the last 24 h for this selection: see \"Last probe "
                 "result\", or \"Exporter scrape status\" if that is empty too.")
    lay.add(state_timeline(
        "Last probe result",
        "The result of the most recent probe of each target/prompt/location over time: green ok, "
        "red failed. Good: all green. A red band that starts at the same time on every target "
        "points to the prober's network or credentials; on one target, to that provider. "
        "Click a row to drill down.",
        targets((f'max by (target, prompt, location) (llm_stream_last_probe_success{{{SEL}}})', "{{target}} {{prompt}} {{location}}")),
        mappings=zero_one("failed", "ok"),
        thresholds_=RED_BELOW_1,
        links=DRILL_LINK), 12, 8)

    variables = [datasource_var()] + scope_vars() + probe_vars(target_multi=True) + [
        exporter_url_var(),
        constant_var("gap_p95_warning", "Gap p95 warning threshold (s)", ALERT_WARNING,
                     "Threshold of LLMStreamGapP95High; the helm chart sets it from prometheusRule.alerts."),
        constant_var("gap_p95_critical", "Gap p95 critical threshold (s)", ALERT_CRITICAL,
                     "Threshold of LLMStreamGapP95Critical; the helm chart sets it from prometheusRule.alerts."),
    ]
    links = [dashboard_link("Target drill-down", DRILL,
                            "One target in detail, with this dashboard's filters and time range")]
    return dashboard("llm-stream-overview", "LLM stream / Overview",
                     "All probed LLM streaming endpoints: time to first token, pauses between "
                     "chunks against the alert thresholds, stalls, failures and freshness "
                     "(llm-stream-exporter). Start at the top: if \"Exporter scrape status\" "
                     "shows an exporter down, the other panels are stale.",
                     variables, lay.done(), links)


def drilldown():
    lay = Layout()
    lay.row("Verdict")
    lay.add(exporter_status(), 4, 4, id_last=True, no_value=NO_EXPORTER)
    lay.add(stat(
        "Stall threshold",
        "The target's configured stall threshold: a pause between chunks at least this long "
        "counts as a stall. Set in the exporter's configuration (stall_threshold).",
        targets((f'max(llm_stream_stall_threshold_seconds{{{SEL_T}}})', "threshold")),
        unit="s"), 4, 4)
    lay.add(stat(
        "Probes (time range)",
        "How many probes of the target (selected prompts, all results) completed in the time "
        "range. It should match the configured interval; much lower means the exporter backs "
        "off (rate limits) or was down.",
        targets((f'sum(increase(llm_stream_probes_total{{{SEL}}}[$__range]))', "probes")),
        unit="short"), 4, 4)
    lay.add(info_table("Targets", TARGETS_DESCRIPTION + " Click the target to open its row on "
                       "the exporter's page (set the Exporter URL variable).",
                       TARGETS_EXPR, TARGET_COLUMNS, links=LANDING_CELL_LINK), 12, 4,
            id_last=True)
    lay.add(state_timeline(
        "Diagnosis",
        "Which of five typical shapes the target's recent probes show, per prompt (orange = "
        "holds). queue: time to first token high while the gaps stay tight, the provider queues "
        "requests (owner: provider or model-serving capacity). transport: long gaps that end in "
        "bursts of held chunks, or answers that arrive all at once: something on the path "
        "buffers the stream, e.g. compression or proxy buffering (owner: network/proxy team). "
        "generation: long gaps after which the stream resumes at its normal pace: the model or "
        "server pauses mid-answer (owner: provider or model-serving team). long_answer: flat, steady stream that is simply long, look at the "
        "prompt or max tokens (owner: the application/prompt owner). shared_capacity: wide spread "
        "between identical runs, the endpoint's capacity is shared with other load (owner: "
        "provider). Grey \"cannot tell\": too few probes, or a hop on the path hides the shape "
        "(docs/diagnosis.md). Good: nothing orange.",
        targets((f'max by (prompt, shape) (llm_stream_diagnosis{{{SEL}}})', "{{prompt}} {{shape}}")),
        mappings=[{"type": "value", "options": {"0": {"text": "-", "color": "transparent"},
                                                "1": {"text": "holds", "color": "orange"}}},
                  # NaN: the exporter cannot tell (too few probes, or a hop hides it).
                  {"type": "special", "options": {"match": "nan",
                                                  "result": {"text": "cannot tell", "color": "text"}}}],
        thresholds_={"mode": "absolute", "steps": [{"color": "transparent", "value": None},
                                                   {"color": "orange", "value": 1}]}), 24, 8)

    lay.row("Gaps")
    lay.add({
        "type": "heatmap", "title": "Inter-chunk gap distribution",
        "description": "Every pause between content chunks, per histogram bucket over time (darker "
                       "= more gaps). Good: one tight band at the bottom. A second band of long "
                       "gaps means chunks are held and released together (proxy or load balancer "
                       "buffering: network/platform team); a band that drifts upward means the "
                       "provider generates more slowly (provider). Drawn from the classic "
                       "buckets (metrics.classic, on by default): empty where the exporter "
                       "exposes native histograms only; the percentile panels read both.",
        "targets": [target(f'sum by (le) (increase(llm_stream_inter_chunk_gap_seconds_bucket{{{SEL}}}[$__rate_interval]))',
                           "{{le}}", fmt="heatmap")],
        "fieldConfig": {"defaults": {"unit": "s", "custom": {"hideFrom": {"legend": False, "tooltip": False, "viz": False},
                                                             "scaleDistribution": {"type": "linear"}}},
                        "overrides": []},
        "options": {"calculate": False, "cellGap": 1, "yAxis": {"axisPlacement": "left", "unit": "s"},
                    "rowsFrame": {"layout": "auto"},
                    "color": {"mode": "scheme", "scheme": "Oranges", "steps": 64, "exponent": 0.5,
                              "fill": "dark-orange", "reverse": False},
                    "cellValues": {"unit": "short"}, "legend": {"show": True},
                    "tooltip": {"mode": "single", "yHistogram": True, "showColorScale": False},
                    "filterValues": {"le": 1e-9}},
    }, 12, 9, no_value=NO_SUCCESS)
    lay.add(timeseries(
        "Gap p50 / p95 / p99 by prompt",
        "Percentiles of the pauses between chunks over 5 minutes, per prompt and location, with "
        "the target's stall threshold (red dashed). Good: p95 well below the threshold. p99 "
        "above it with a low p50 means occasional stalls (path or provider hiccups); everything "
        "rising together means the provider generates slowly. Red points: 95 % or more of the "
        "gaps fell in the first bucket, the percentiles are interpolated inside it and the "
        "chunks most likely arrive held together (see the coalesced chunks and the diagnosis).",
        targets(
            (recorded("target_prompt_location:llm_stream_inter_chunk_gap_seconds:p50_rate5m"), "{{prompt}} {{location}} p50"),
            (recorded("target_prompt_location:llm_stream_inter_chunk_gap_seconds:p95_rate5m"), "{{prompt}} {{location}} p95"),
            (recorded("target_prompt_location:llm_stream_inter_chunk_gap_seconds:p99_rate5m"), "{{prompt}} {{location}} p99"),
            (f'max(llm_stream_stall_threshold_seconds{{{SEL_T}}})', "stall threshold"),
            (first_bucket_flag(recorded("target_prompt_location:llm_stream_inter_chunk_gap_seconds:p95_rate5m"),
                               "target, prompt, location", "$__rate_interval"),
             "{{prompt}} {{location}} p95: " + FIRST_BUCKET_LEGEND),
        ),
        overrides=FIRST_BUCKET_FLAG + [{"matcher": {"id": "byName", "options": "stall threshold"}, "properties": [
            {"id": "color", "value": {"mode": "fixed", "fixedColor": "red"}}] + THRESHOLD_LINE}]),
        12, 9, no_value=NO_SUCCESS)
    lay.add(timeseries(
        "Per-stream gap p95 and max gap",
        "Each probe contributes its own gap p95 and its largest gap: the median of the streams' "
        "gap p95, and the 95th percentile of their largest gap. Tells one bad stream in many "
        "(max gap high, median low: sporadic, often the path) from every stream being slow "
        "(both high: the provider).",
        targets(
            (quantile('0.50', 'llm_stream_probe_gap_p95_seconds', 'prompt'), "{{prompt}} median stream gap p95"),
            (quantile('0.95', 'llm_stream_probe_max_gap_seconds', 'prompt'), "{{prompt}} p95 stream max gap"),
        )), 12, 8, no_value=NO_SUCCESS)
    lay.add(timeseries(
        "Stalls and stalled time per minute",
        "Stalls (pauses at or above the stall threshold) per minute, and seconds spent stalled per "
        "minute, by prompt. Good: near 0. Many short stalls suggest buffering on the path; few "
        "long ones suggest the provider pausing generation.",
        targets(
            (f'60 * sum by (prompt) (rate(llm_stream_stalls_total{{{SEL}}}[$__rate_interval]))', "{{prompt}} stalls/min"),
            (f'60 * sum by (prompt) (rate(llm_stream_stall_seconds_total{{{SEL}}}[$__rate_interval]))', "{{prompt}} stalled s/min"),
        ), unit="short"), 12, 8, no_value=NO_STALL)

    lay.row("Clock")
    lay.add(timeseries(
        "Time to first token p50 / p95 / p99 by prompt",
        "How long readers wait for the first words, over 5 minutes, per prompt and location. "
        "Good: steady, p95 under the 5 s alert threshold. Long prompts take longer by nature; "
        "a rise on every prompt at once points to provider queueing (owner: provider or "
        "model-serving capacity). \"Phases\" shows which part grew.",
        targets(
            (recorded("target_prompt_location:llm_stream_time_to_first_token_seconds:p50_rate5m"), "{{prompt}} {{location}} p50"),
            (recorded("target_prompt_location:llm_stream_time_to_first_token_seconds:p95_rate5m"), "{{prompt}} {{location}} p95"),
            (recorded("target_prompt_location:llm_stream_time_to_first_token_seconds:p99_rate5m"), "{{prompt}} {{location}} p99"),
        )), 12, 8, no_value=NO_SUCCESS)
    lay.add(timeseries(
        "Phases (mean per probe, stacked)",
        "Mean seconds per probe in each phase before the first token: resolve (DNS), connect "
        "(TCP), tls (handshake), request (sending), headers (until the response headers) and "
        "first_token (headers to first content). Stacked they add up to the mean time to first "
        "token. dns/connect/tls growing: DNS, network or certificates (platform team); "
        "headers or first_token growing: the provider's queue or model (provider).",
        targets((rate_of("sum", "llm_stream_phase_seconds", "phase") + " / on () group_left () "
                 + rate_of("count", "llm_stream_time_to_first_token_seconds", ""), "{{phase}}")),
        stack=True), 12, 8, no_value=NO_SUCCESS)
    lay.add(timeseries(
        "TTFT p95 by location",
        "Time to first token p95 and gap p95 per prober location (node/zone), for the same "
        "prompts. Good: all locations alike. Only some locations worse: their network path or "
        "egress (platform team); all worse: the provider. A single unnamed line means one "
        "prober without a location label.",
        targets(
            (quantile('0.95', 'llm_stream_time_to_first_token_seconds', 'location'), "{{location}} TTFT p95"),
            (quantile('0.95', 'llm_stream_inter_chunk_gap_seconds', 'location'), "{{location}} gap p95"),
        )), 12, 8, no_value=NO_SUCCESS)
    lay.add(timeseries(
        "Tail p50 / p95",
        "From the last content chunk to the end of the stream. Good: a few milliseconds. A long "
        "tail means the server (or a proxy) holds the connection open after the answer, which "
        "delays clients waiting for the end (provider or proxy owner).",
        targets(
            (quantile('0.50', 'llm_stream_tail_seconds', 'prompt'), "{{prompt}} p50"),
            (quantile('0.95', 'llm_stream_tail_seconds', 'prompt'), "{{prompt}} p95"),
        )), 12, 8, no_value=NO_SUCCESS)

    lay.row("Answer")
    lay.add(timeseries(
        "Duration p50 / p95",
        "From the start of the probe to the end of the stream, per prompt. Depends on the "
        "answer's length: compare with \"Chunks and tokens per probe\" before blaming the "
        "provider. Growing with the same token count: slower generation (provider).",
        targets(
            (quantile('0.50', 'llm_stream_duration_seconds', 'prompt'), "{{prompt}} p50"),
            (quantile('0.95', 'llm_stream_duration_seconds', 'prompt'), "{{prompt}} p95"),
        )), 8, 8, no_value=NO_SUCCESS)
    lay.add(timeseries(
        "Output tokens per second p50 / p10",
        "Generation speed as readers feel it: completion tokens divided by the time from the "
        "first to the last content chunk, per prompt. The slow end (p10) is what readers notice. "
        "Good: steady. Dropping: the provider is loaded or serves a slower model.",
        targets(
            (quantile('0.50', 'llm_stream_output_tokens_per_second', 'prompt'), "{{prompt}} p50"),
            (quantile('0.10', 'llm_stream_output_tokens_per_second', 'prompt'), "{{prompt}} p10"),
        ), unit="short"), 8, 8,
        no_value="No token speed: the server does not report token usage in the stream for this "
                 "target, or no probe succeeded (see \"Probes (time range)\").")
    lay.add(timeseries(
        "Tokens per chunk p50 / p95",
        "Completion tokens per content chunk, one value per probe, per prompt (when the server "
        "reports usage). Good: 1, a token per chunk, and the gap panels show the time between "
        "tokens. Above 1 the server (vLLM under load) or a proxy sends several tokens per "
        "chunk: each gap spans that many tokens, so the time per token is the gap divided by "
        "this figure, and the diagnosis notes \"the server sends N tokens per chunk\".",
        targets(
            (quantile('0.50', 'llm_stream_tokens_per_chunk', 'prompt'), "{{prompt}} p50"),
            (quantile('0.95', 'llm_stream_tokens_per_chunk', 'prompt'), "{{prompt}} p95"),
        ), unit="short"), 8, 8,
        no_value="No tokens per chunk: the server does not report token usage in the stream for "
                 "this target, or no probe succeeded (see \"Probes (time range)\").")
    lay.add(timeseries(
        "Finish reasons",
        "Why the streams ended (stop, length, content_filter, ...), per probe interval. Good: "
        "almost all stop. length: answers are cut at the token limit (prompt/application "
        "owner); content_filter: the provider's filter intervened.",
        targets((f'sum by (reason) (increase(llm_stream_finish_reasons_total{{{SEL}}}[$__rate_interval]))', "{{reason}}")),
        unit="short", stack=True), 8, 8, no_value=NO_SUCCESS)
    lay.add(timeseries(
        "Failures by reason",
        "Failed probes by reason. Good: empty. http_4xx: the API key or request is rejected "
        "(credentials owner); http_429: rate limit or quota; http_5xx, upstream_error: provider "
        "or gateway; dns/connect/tls: DNS, network or certificates (platform team); "
        "timeout_*: overloaded provider or a hanging path; truncated/protocol: the stream broke "
        "or is malformed (proxy or provider); reset: the server or edge reset the HTTP/2 stream "
        "(the row's h2_error names the code).",
        targets((f'sum by (reason) (increase(llm_stream_probe_failures_total{{{SEL}}}[$__rate_interval]))', "{{reason}}")),
        unit="short", stack=True), 8, 8)
    lay.add(timeseries(
        "Chunks and tokens per probe",
        "Content chunks, output and input tokens per probe (tokens when the server reports usage), "
        "and warmup probes discarded. A change here explains a change in duration: longer "
        "answers take longer. Many chunks per token is normal; very few chunks per answer "
        "means something buffers the stream.",
        targets(
            (f'sum by (prompt) (rate(llm_stream_chunks_total{{{SEL}}}[$__rate_interval])) / sum by (prompt) (rate(llm_stream_probes_total{{{SEL}}}[$__rate_interval]))', "{{prompt}} chunks"),
            (f'sum by (prompt) (rate(llm_stream_output_tokens_total{{{SEL}}}[$__rate_interval])) / sum by (prompt) (rate(llm_stream_probes_total{{{SEL}}}[$__rate_interval]))', "{{prompt}} output tokens"),
            (f'sum by (prompt) (rate(llm_stream_input_tokens_total{{{SEL}}}[$__rate_interval])) / sum by (prompt) (rate(llm_stream_probes_total{{{SEL}}}[$__rate_interval]))', "{{prompt}} input tokens"),
            (f'sum by (prompt) (increase(llm_stream_warmup_probes_total{{{SEL}}}[$__rate_interval]))', "{{prompt}} warmup probes"),
        ), unit="short"), 8, 8)

    variables = [datasource_var()] + scope_vars() + probe_vars(target_multi=False) + [exporter_url_var()]
    links = [dashboard_link("Overview", OVERVIEW,
                            "Every target, with this dashboard's filters and time range")]
    return dashboard("llm-stream-target", "LLM stream / Target drill-down",
                     "One probed LLM streaming endpoint in detail: the diagnosis of its shape, "
                     "the gap distribution, per-stream gaps, the phases before the first token, "
                     "tail, duration, tokens per second and finish reasons (llm-stream-exporter).",
                     variables, lay.done(), links)


DASHBOARDS = {
    "llm-stream-overview.json": overview,
    "llm-stream-target.json": drilldown,
}


def render(fn):
    return json.dumps(fn(), indent=2, ensure_ascii=False) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="fail when a committed JSON file differs")
    ap.add_argument("--out", default=str(HERE), help="output folder (default: grafana/)")
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    stale = []
    for name, fn in DASHBOARDS.items():
        text = render(fn)
        path = out / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path))
        else:
            path.write_text(text)
            print(f"wrote {path}")
    if stale:
        print("stale dashboards (run python3 grafana/build_dashboards.py): " + ", ".join(stale),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
