#!/usr/bin/env python3
"""Builds the Grafana dashboards of llm-stream-exporter from one description.

    python3 grafana/build_dashboards.py          # (re)write grafana/*.json
    python3 grafana/build_dashboards.py --check  # exit 1 when a JSON file is stale

The JSON files are what Grafana (and the helm chart's dashboard ConfigMaps)
load; this script is how they are edited, so that panel ids, grid positions,
the datasource variable and the label selectors stay consistent. After
editing, run it and tests/deploy/sync_chart_files.sh (tests/deploy/run_all.sh
checks both). Metric names are those of DESIGN §3, llm_stream_diagnosis and
the recording rules of config/prometheus/recording_rules.yml.
"""
import argparse
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
SCHEMA_VERSION = 39  # Grafana 10.4 / 11.x
DS = {"type": "prometheus", "uid": "${datasource}"}

# Label selectors every query uses.
SEL = 'target=~"$target", prompt=~"$prompt", location=~"$location"'
SEL_T = 'target=~"$target", location=~"$location"'

ALERT_WARNING = "0.25"   # keep equal to LLMStreamGapP95High's threshold
ALERT_CRITICAL = "0.5"   # keep equal to LLMStreamGapP95Critical's threshold


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

    def add(self, panel, w, h, id_last=False):
        """id_last: the panel takes its id after every other panel's (done()), so that
        a panel added later leaves the ids of the existing ones, and links to them, as
        they were."""
        if self.x + w > 24:
            self.newline()
        panel = dict(panel)
        panel["id"] = None if id_last else self._id()
        panel["datasource"] = DS
        panel["gridPos"] = {"h": h, "w": w, "x": self.x, "y": self.y}
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
         text_mode="auto"):
    return {
        "type": "stat", "title": title, "description": description, "targets": tgts,
        "fieldConfig": {
            "defaults": {"unit": unit, "thresholds": thresholds_ or thresholds(),
                         "mappings": mappings or [], "color": {"mode": "thresholds"}},
            "overrides": [],
        },
        "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                    "colorMode": "background", "graphMode": "none", "textMode": text_mode,
                    "justifyMode": "auto", "orientation": "auto"},
    }


def state_timeline(title, description, tgts, mappings, thresholds_):
    return {
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


TARGET_COLUMNS = ["target", "api", "model", "host", "location"]
TARGETS_EXPR = (f'max by ({", ".join(TARGET_COLUMNS)}) '
                f'(llm_stream_target_info{{{SEL_T}}})')
TARGETS_DESCRIPTION = ("Which API dialect (api:), model and upstream host each target speaks to "
                       "(llm_stream_target_info, DESIGN §9), per location.")


def query_var(name, label, query, multi=True, include_all=True):
    v = {
        "name": name, "label": label, "type": "query", "datasource": DS,
        "definition": query, "query": {"query": query, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
        "refresh": 2, "sort": 1, "multi": multi, "includeAll": include_all,
        "current": {}, "options": [], "hide": 0, "regex": "",
    }
    if include_all:
        v["allValue"] = ".*"
        v["current"] = {"selected": True, "text": ["All"], "value": ["$__all"]}
    return v


def datasource_var():
    return {"name": "datasource", "label": "Data source", "type": "datasource",
            "query": "prometheus", "current": {}, "hide": 0, "refresh": 1,
            "regex": "", "options": [], "multi": False, "includeAll": False}


def constant_var(name, label, value, description):
    return {"name": name, "label": label, "type": "constant", "query": value,
            "description": description, "hide": 2,
            "current": {"selected": False, "text": value, "value": value},
            "options": [{"selected": True, "text": value, "value": value}]}


def dashboard(uid, title, description, variables, panels, links):
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


DRILL = "/d/llm-stream-target/llm-stream-target-drill-down"
# A data link on the series: opens the drill-down for the series' target.
DRILL_LINK = [{"title": "Drill down into ${__field.labels.target}",
               "url": DRILL + "?var-datasource=${datasource}&var-target=${__field.labels.target}&${__url_time_range}"}]
# The same from a table cell of the target column.
DRILL_CELL_LINK = [{"title": "Drill down into ${__value.text}",
                    "url": DRILL + "?var-datasource=${datasource}&var-target=${__value.text}&${__url_time_range}"}]


def overview():
    lay = Layout()
    lay.row("Now")
    lay.add(stat("Targets probed", "Targets with probe series (after the target/location filter).",
                 targets((f'count(count by (target) (llm_stream_last_probe_success{{{SEL}}}))', "targets"))), 4, 4)
    lay.add(stat("Last probe succeeded", "Share of target/prompt series whose last probe succeeded.",
                 targets((f'avg(llm_stream_last_probe_success{{{SEL}}})', "ok")),
                 unit="percentunit", thresholds_={"mode": "absolute", "steps": [
                     {"color": "red", "value": None}, {"color": "orange", "value": 0.8},
                     {"color": "green", "value": 1}]}), 5, 4)
    lay.add(stat("Failure ratio (time range)", "Failed probes / all probes over the dashboard's time range.",
                 targets((f'sum(increase(llm_stream_probes_total{{result="failure", {SEL}}}[$__range])) / sum(increase(llm_stream_probes_total{{{SEL}}}[$__range]))', "failed")),
                 unit="percentunit", thresholds_=thresholds((0.05, "orange"), (0.2, "red"))), 5, 4)
    lay.add(stat("Config reload", "llm_stream_exporter_config_last_reload_successful of every exporter (worst shown).",
                 targets(('min(llm_stream_exporter_config_last_reload_successful)', "reload")),
                 mappings=[{"type": "value", "options": {"0": {"text": "FAILED", "color": "red"},
                                                         "1": {"text": "OK", "color": "green"}}}],
                 thresholds_={"mode": "absolute", "steps": [{"color": "red", "value": None},
                                                            {"color": "green", "value": 1}]}), 5, 4)
    lay.add(stat("Exporter versions", "llm_stream_exporter_build_info: exporters per version.",
                 targets(('count by (version, revision) (llm_stream_exporter_build_info)', "{{version}} ({{revision}})")),
                 text_mode="value_and_name"), 5, 4)
    lay.add(info_table("Targets", TARGETS_DESCRIPTION, TARGETS_EXPR, TARGET_COLUMNS,
                       links=DRILL_CELL_LINK), 24, 6, id_last=True)

    lay.row("Latency")
    lay.add(timeseries(
        "Time to first token p50 / p95",
        "Start of the probe to the first content chunk, per target (all selected prompts and locations).",
        targets(
            (f'histogram_quantile(0.50, sum by (target, le) (rate(llm_stream_time_to_first_token_seconds_bucket{{{SEL}}}[$__rate_interval])))', "{{target}} p50"),
            (f'histogram_quantile(0.95, sum by (target, le) (rate(llm_stream_time_to_first_token_seconds_bucket{{{SEL}}}[$__rate_interval])))', "{{target}} p95"),
        ), links=DRILL_LINK), 12, 9)
    lay.add(timeseries(
        "Inter-chunk gap p95 vs alert threshold",
        "The alert's own expression (DESIGN §3, 10 min window, per target, all prompts and locations: "
        "recording rule target:llm_stream_inter_chunk_gap_seconds:p95_rate10m) against the "
        "LLMStreamGapP95High (warning) and LLMStreamGapP95Critical thresholds.",
        targets(
            ('target:llm_stream_inter_chunk_gap_seconds:p95_rate10m{target=~"$target"}', "{{target}}"),
            ('vector($gap_p95_warning)', "warning threshold"),
            ('vector($gap_p95_critical)', "critical threshold"),
        ),
        overrides=[
            {"matcher": {"id": "byName", "options": "warning threshold"}, "properties": [
                {"id": "color", "value": {"mode": "fixed", "fixedColor": "orange"}},
                {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}},
                {"id": "custom.fillOpacity", "value": 0}]},
            {"matcher": {"id": "byName", "options": "critical threshold"}, "properties": [
                {"id": "color", "value": {"mode": "fixed", "fixedColor": "red"}},
                {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}},
                {"id": "custom.fillOpacity", "value": 0}]},
        ], links=DRILL_LINK), 12, 9)

    lay.row("Stalls and failures")
    lay.add(timeseries(
        "Stalls per minute",
        "Gaps at or above the target's stall threshold, per minute.",
        targets((f'60 * sum by (target) (rate(llm_stream_stalls_total{{{SEL}}}[$__rate_interval]))', "{{target}}")),
        unit="short", links=DRILL_LINK), 8, 8)
    lay.add(timeseries(
        "Stalled-probe ratio",
        "Share of probes with at least one stall.",
        targets((f'sum by (target) (rate(llm_stream_stalled_probes_total{{{SEL}}}[$__rate_interval])) / sum by (target) (rate(llm_stream_probes_total{{{SEL}}}[$__rate_interval]))', "{{target}}")),
        unit="percentunit", thresholds_=thresholds((0.2, "orange")), links=DRILL_LINK), 8, 8)
    lay.add(timeseries(
        "Failure ratio by reason",
        "Failed probes by reason (DESIGN §3) as a share of all probes of the target.",
        targets((f'sum by (target, reason) (rate(llm_stream_probe_failures_total{{{SEL}}}[$__rate_interval])) / on (target) group_left () sum by (target) (rate(llm_stream_probes_total{{{SEL}}}[$__rate_interval]))', "{{target}} {{reason}}")),
        unit="percentunit", stack=True, links=DRILL_LINK), 8, 8)

    lay.row("Freshness")
    lay.add(table(
        "Age of last success",
        "Seconds since the last successful probe per target/prompt/location (from "
        "llm_stream_last_probe_timestamp_seconds while llm_stream_last_probe_success is 1, "
        "looking back 24h; empty = no success seen in 24h).",
        [target(f'time() - max by (target, prompt, location) (max_over_time((llm_stream_last_probe_timestamp_seconds{{{SEL}}} and llm_stream_last_probe_success{{{SEL}}} == 1)[24h:]))',
                "{{target}} {{prompt}} {{location}}", fmt="table", instant=True)],
        "s", thresholds((300, "orange"), (900, "red")), links=DRILL_LINK), 12, 8)
    lay.add(state_timeline(
        "Last probe result",
        "llm_stream_last_probe_success per target/prompt/location.",
        targets((f'max by (target, prompt, location) (llm_stream_last_probe_success{{{SEL}}})', "{{target}} {{prompt}} {{location}}")),
        mappings=[{"type": "value", "options": {"0": {"text": "failed", "color": "red"},
                                                "1": {"text": "ok", "color": "green"}}}],
        thresholds_={"mode": "absolute", "steps": [{"color": "red", "value": None},
                                                   {"color": "green", "value": 1}]}), 12, 8)

    variables = [
        datasource_var(),
        query_var("target", "Target", "label_values(llm_stream_last_probe_success, target)"),
        query_var("prompt", "Prompt", 'label_values(llm_stream_last_probe_success{target=~"$target"}, prompt)'),
        query_var("location", "Location", 'label_values(llm_stream_last_probe_success{target=~"$target"}, location)'),
        constant_var("gap_p95_warning", "Gap p95 warning threshold (s)", ALERT_WARNING,
                     "Threshold of LLMStreamGapP95High; the helm chart sets it from prometheusRule.alerts."),
        constant_var("gap_p95_critical", "Gap p95 critical threshold (s)", ALERT_CRITICAL,
                     "Threshold of LLMStreamGapP95Critical; the helm chart sets it from prometheusRule.alerts."),
    ]
    links = [{"title": "Target drill-down", "type": "link", "url": DRILL, "icon": "dashboard",
              "keepTime": True, "includeVars": False, "asDropdown": False, "targetBlank": False,
              "tags": [], "tooltip": ""}]
    return dashboard("llm-stream-overview", "LLM stream / Overview",
                     "All probed LLM targets: time to first token, inter-chunk gaps against the "
                     "alert threshold, stalls, failures and freshness (llm-stream-exporter).",
                     variables, lay.done(), links)


def drilldown():
    lay = Layout()
    lay.row("Verdict")
    lay.add(state_timeline(
        "Diagnosis",
        "The four shapes of DESIGN §7 per prompt (llm_stream_diagnosis): queue = TTFT high, gaps "
        "tight; transport = gap tail fat (proxy buffering); long_answer = flat but long; "
        "shared_capacity = wide spread across identical runs.",
        targets((f'max by (prompt, shape) (llm_stream_diagnosis{{{SEL}}})', "{{prompt}} {{shape}}")),
        mappings=[{"type": "value", "options": {"0": {"text": "-", "color": "transparent"},
                                                "1": {"text": "holds", "color": "orange"}}}],
        thresholds_={"mode": "absolute", "steps": [{"color": "transparent", "value": None},
                                                   {"color": "orange", "value": 1}]}), 18, 8)
    lay.add(stat("Stall threshold", "llm_stream_stall_threshold_seconds of the target.",
                 targets(('max(llm_stream_stall_threshold_seconds{target=~"$target"})', "threshold")),
                 unit="s"), 6, 4)
    lay.add(stat("Probes (time range)", "Probes of the target in the time range, all results.",
                 targets((f'sum(increase(llm_stream_probes_total{{{SEL}}}[$__range]))', "probes")),
                 unit="short"), 6, 4)
    lay.add(info_table("Targets", TARGETS_DESCRIPTION, TARGETS_EXPR, TARGET_COLUMNS), 18, 4,
            id_last=True)

    lay.row("Gaps")
    lay.add({
        "type": "heatmap", "title": "Inter-chunk gap distribution",
        "description": "Every gap between content chunks, per histogram bucket.",
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
    }, 12, 9)
    lay.add(timeseries(
        "Gap p50 / p95 / p99 by prompt",
        "Recording rules target_prompt_location:llm_stream_inter_chunk_gap_seconds:p*_rate5m, "
        "with the target's stall threshold.",
        targets(
            (f'target_prompt_location:llm_stream_inter_chunk_gap_seconds:p50_rate5m{{{SEL}}}', "{{prompt}} {{location}} p50"),
            (f'target_prompt_location:llm_stream_inter_chunk_gap_seconds:p95_rate5m{{{SEL}}}', "{{prompt}} {{location}} p95"),
            (f'target_prompt_location:llm_stream_inter_chunk_gap_seconds:p99_rate5m{{{SEL}}}', "{{prompt}} {{location}} p99"),
            ('max(llm_stream_stall_threshold_seconds{target=~"$target"})', "stall threshold"),
        ),
        overrides=[{"matcher": {"id": "byName", "options": "stall threshold"}, "properties": [
            {"id": "color", "value": {"mode": "fixed", "fixedColor": "red"}},
            {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}},
            {"id": "custom.fillOpacity", "value": 0}]}]), 12, 9)
    lay.add(timeseries(
        "Per-stream gap p95 and max gap",
        "One observation per probe: median of the streams' own gap p95, and p95 of the streams' "
        "largest gap (llm_stream_probe_gap_p95_seconds, llm_stream_probe_max_gap_seconds).",
        targets(
            (f'histogram_quantile(0.50, sum by (prompt, le) (rate(llm_stream_probe_gap_p95_seconds_bucket{{{SEL}}}[$__rate_interval])))', "{{prompt}} median stream gap p95"),
            (f'histogram_quantile(0.95, sum by (prompt, le) (rate(llm_stream_probe_max_gap_seconds_bucket{{{SEL}}}[$__rate_interval])))', "{{prompt}} p95 stream max gap"),
        )), 12, 8)
    lay.add(timeseries(
        "Stalls and stalled time per minute",
        "Stalls (gaps >= stall threshold) per minute and seconds spent stalled per minute, by prompt.",
        targets(
            (f'60 * sum by (prompt) (rate(llm_stream_stalls_total{{{SEL}}}[$__rate_interval]))', "{{prompt}} stalls/min"),
            (f'60 * sum by (prompt) (rate(llm_stream_stall_seconds_total{{{SEL}}}[$__rate_interval]))', "{{prompt}} stalled s/min"),
        ), unit="short"), 12, 8)

    lay.row("Clock")
    lay.add(timeseries(
        "Time to first token p50 / p95 / p99 by prompt",
        "Recording rules target_prompt_location:llm_stream_time_to_first_token_seconds:p*_rate5m.",
        targets(
            (f'target_prompt_location:llm_stream_time_to_first_token_seconds:p50_rate5m{{{SEL}}}', "{{prompt}} {{location}} p50"),
            (f'target_prompt_location:llm_stream_time_to_first_token_seconds:p95_rate5m{{{SEL}}}', "{{prompt}} {{location}} p95"),
            (f'target_prompt_location:llm_stream_time_to_first_token_seconds:p99_rate5m{{{SEL}}}', "{{prompt}} {{location}} p99"),
        )), 12, 8)
    lay.add(timeseries(
        "Phases (mean per probe, stacked)",
        "Mean seconds per probe spent in each phase of DESIGN §2 (resolve, connect, tls, request, "
        "headers, first_token); stacked they add up to the mean time to first token.",
        targets((f'sum by (phase) (rate(llm_stream_phase_seconds_sum{{{SEL}}}[$__rate_interval])) / on () group_left () sum(rate(llm_stream_time_to_first_token_seconds_count{{{SEL}}}[$__rate_interval]))', "{{phase}}")),
        stack=True), 12, 8)
    lay.add(timeseries(
        "TTFT p95 by location",
        "The second-host comparison: the same prompts probed from every node/zone (daemonset mode).",
        targets(
            (f'histogram_quantile(0.95, sum by (location, le) (rate(llm_stream_time_to_first_token_seconds_bucket{{{SEL}}}[$__rate_interval])))', "{{location}} TTFT p95"),
            (f'histogram_quantile(0.95, sum by (location, le) (rate(llm_stream_inter_chunk_gap_seconds_bucket{{{SEL}}}[$__rate_interval])))', "{{location}} gap p95"),
        )), 12, 8)
    lay.add(timeseries(
        "Tail p50 / p95",
        "Last content chunk to the end of the stream.",
        targets(
            (f'histogram_quantile(0.50, sum by (prompt, le) (rate(llm_stream_tail_seconds_bucket{{{SEL}}}[$__rate_interval])))', "{{prompt}} p50"),
            (f'histogram_quantile(0.95, sum by (prompt, le) (rate(llm_stream_tail_seconds_bucket{{{SEL}}}[$__rate_interval])))', "{{prompt}} p95"),
        )), 12, 8)

    lay.row("Answer")
    lay.add(timeseries(
        "Duration p50 / p95",
        "Start of the probe to the end of the stream.",
        targets(
            (f'histogram_quantile(0.50, sum by (prompt, le) (rate(llm_stream_duration_seconds_bucket{{{SEL}}}[$__rate_interval])))', "{{prompt}} p50"),
            (f'histogram_quantile(0.95, sum by (prompt, le) (rate(llm_stream_duration_seconds_bucket{{{SEL}}}[$__rate_interval])))', "{{prompt}} p95"),
        )), 12, 8)
    lay.add(timeseries(
        "Output tokens per second p50 / p10",
        "Completion tokens / (last - first content chunk), when the server reports usage. "
        "The low percentile is the one readers notice.",
        targets(
            (f'histogram_quantile(0.50, sum by (prompt, le) (rate(llm_stream_output_tokens_per_second_bucket{{{SEL}}}[$__rate_interval])))', "{{prompt}} p50"),
            (f'histogram_quantile(0.10, sum by (prompt, le) (rate(llm_stream_output_tokens_per_second_bucket{{{SEL}}}[$__rate_interval])))', "{{prompt}} p10"),
        ), unit="short"), 12, 8)
    lay.add(timeseries(
        "Finish reasons",
        "finish_reason of the streams (stop, length, content_filter, ...).",
        targets((f'sum by (reason) (increase(llm_stream_finish_reasons_total{{{SEL}}}[$__rate_interval]))', "{{reason}}")),
        unit="short", stack=True), 8, 8)
    lay.add(timeseries(
        "Failures by reason",
        "Failed probes by reason (DESIGN §3).",
        targets((f'sum by (reason) (increase(llm_stream_probe_failures_total{{{SEL}}}[$__rate_interval]))', "{{reason}}")),
        unit="short", stack=True), 8, 8)
    lay.add(timeseries(
        "Chunks and tokens per probe",
        "Content chunks, output and input tokens per probe (tokens from usage), and warmup probes discarded.",
        targets(
            (f'sum by (prompt) (rate(llm_stream_chunks_total{{{SEL}}}[$__rate_interval])) / sum by (prompt) (rate(llm_stream_probes_total{{{SEL}}}[$__rate_interval]))', "{{prompt}} chunks"),
            (f'sum by (prompt) (rate(llm_stream_output_tokens_total{{{SEL}}}[$__rate_interval])) / sum by (prompt) (rate(llm_stream_probes_total{{{SEL}}}[$__rate_interval]))', "{{prompt}} output tokens"),
            (f'sum by (prompt) (rate(llm_stream_input_tokens_total{{{SEL}}}[$__rate_interval])) / sum by (prompt) (rate(llm_stream_probes_total{{{SEL}}}[$__rate_interval]))', "{{prompt}} input tokens"),
            (f'sum by (prompt) (increase(llm_stream_warmup_probes_total{{{SEL}}}[$__rate_interval]))', "{{prompt}} warmup probes"),
        ), unit="short"), 8, 8)

    variables = [
        datasource_var(),
        query_var("target", "Target", "label_values(llm_stream_last_probe_success, target)",
                  multi=False, include_all=False),
        query_var("prompt", "Prompt", 'label_values(llm_stream_last_probe_success{target=~"$target"}, prompt)'),
        query_var("location", "Location", 'label_values(llm_stream_last_probe_success{target=~"$target"}, location)'),
    ]
    links = [{"title": "Overview", "type": "link", "url": "/d/llm-stream-overview/llm-stream-overview",
              "icon": "dashboard", "keepTime": True, "includeVars": False, "asDropdown": False,
              "targetBlank": False, "tags": [], "tooltip": ""}]
    return dashboard("llm-stream-target", "LLM stream / Target drill-down",
                     "One target: gap distribution, per-stream gaps, phases, tail, duration, "
                     "tokens/s, finish reasons and the diagnosis of DESIGN §7 (llm-stream-exporter).",
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
