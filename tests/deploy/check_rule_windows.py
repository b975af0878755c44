#!/usr/bin/env python3
"""Checks the alert windows the chart derives from the probe interval
(docs/runbook.md#alert-windows), and provides the same derivation to
validate_chart.py (derive()).

The formula, I = probe interval (the largest of config.defaults.interval and
config.targets[].interval, or prometheusRule.window.interval):
  quantile window W_q = max(10m, 10 * I)      replaces [10m] in the probe alerts
  ratio window    W_r = max(15m, 15 * I)      replaces [15m]
  for             f  -> max(f, (f / 60s) * I)
  probe age       N  -> max(N, (N / 60) * I)  (`time() - ... > N`, seconds)
The static files config/prometheus/*.yml are the result for I = 60s.

Fails (exit 1) when:
- a render at interval 30s, 60s, 1m30s, 2m or 5m (and with a target overriding
  the interval, with prometheusRule.window set explicitly) does not carry the
  expected windows, `for`s and age threshold in the rendered PrometheusRule;
- the static rule files are not the formula at the default interval (60s, the
  chart's config.defaults.interval): a probe alert window other than [10m]/[15m],
  a quantile alert not on W_q, a ratio alert not on W_r;
- the rule file header or docs/runbook.md does not state the formula;
- the exporter alerts do not select the job of the release's monitors
  (ServiceMonitor: Service name; PodMonitor: <namespace>/<name>), or
  prometheusRule.job, or the static default without monitors;
- a rendered rule set fails `promtool check rules`, or a bad duration renders.

Usage: python3 tests/deploy/check_rule_windows.py [--renderer PATH] [--chart DIR] [-v]
"""
import argparse
import copy
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
CHART = REPO / "helm" / "llm-stream-exporter"
DEFAULT_JOB = "llm-stream-exporter"
UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
DUR = re.compile(r"([0-9]+(?:\.[0-9]*)?)(ms|us|µs|ns|d|h|m|s)")


def seconds(text):
    """Go/Prometheus duration -> seconds (float)."""
    text = str(text).strip()
    if not re.fullmatch(r"(?:[0-9]+(?:\.[0-9]*)?(?:ms|us|µs|ns|d|h|m|s))+", text):
        raise ValueError(f"not a duration: {text!r}")
    return sum(float(n) * UNITS[u] for n, u in DUR.findall(text))


def prom_duration(secs):
    secs = int(secs)
    return f"{secs // 60}m" if secs % 60 == 0 else f"{secs}s"


def probe_interval(values):
    """Whole seconds of the interval the windows derive from."""
    pr = values.get("prometheusRule") or {}
    win = pr.get("window") or {}
    if win.get("interval"):
        s = seconds(win["interval"])
    else:
        cfg = values.get("config") or {}
        s = seconds(((cfg.get("defaults") or {}).get("interval")) or "60s")
        for t in cfg.get("targets") or []:
            if isinstance(t, dict) and t.get("interval"):
                s = max(s, seconds(t["interval"]))
    return max(1, int(-(-s // 1)))


def scale(secs, interval):
    """max(d, (d / 60s) * I) in whole seconds (d a multiple of 60 s)."""
    return max(int(secs), int(secs) * interval // 60)


def windows(values):
    """{interval, quantile, ratio} for these chart values."""
    i = probe_interval(values)
    win = ((values.get("prometheusRule") or {}).get("window")) or {}
    return {"interval": i,
            "quantile": win.get("quantile") or prom_duration(scale(600, i)),
            "ratio": win.get("ratio") or prom_duration(scale(900, i))}


def derive(groups, values, job_regex):
    """The rule groups of config/prometheus/*.yml as the chart derives them for
    `values` (before per-alert overrides): probe windows, `for`s, the age
    threshold, and the exporter job matcher."""
    w = windows(values)
    out = copy.deepcopy(groups)
    for g in out:
        probes = g["name"].endswith(".probes")
        for r in g["rules"]:
            if "alert" not in r:
                continue
            if probes:
                def windowed(text):
                    return re.sub(r"\[(10m|15m)\]",
                                  lambda m: f"[{w['quantile'] if m.group(1) == '10m' else w['ratio']}]", text)
                e = windowed(r["expr"])
                r["annotations"] = {k: windowed(v) for k, v in (r.get("annotations") or {}).items()}
                if re.match(r"time\(\)\s*-", e.strip()):
                    m = re.search(r">\s*([0-9]+)\s*$", e.strip())
                    e = e.strip()[:m.start()] + f"> {scale(int(m.group(1)), w['interval'])}"
                r["expr"] = e
                if r.get("for"):
                    r["for"] = prom_duration(scale(seconds(r["for"]), w["interval"]))
            else:
                r["expr"] = r["expr"].replace(f'job=~"{DEFAULT_JOB}"', f'job=~"{job_regex}"')
    return out


def job_regex(by_kind, values):
    """The job names prometheus-operator gives the release's monitors."""
    pr = values.get("prometheusRule") or {}
    if pr.get("job"):
        return pr["job"]
    jobs = [sm["metadata"]["name"] for sm in by_kind.get("ServiceMonitor", [])]
    jobs += [f"{pm['metadata']['namespace']}/{pm['metadata']['name']}" for pm in by_kind.get("PodMonitor", [])]
    return "|".join(jobs) or DEFAULT_JOB


# ---------------------------------------------------------------- checks

def alerts_of(docs):
    out = {}
    for d in docs:
        if d.get("kind") == "PrometheusRule":
            for g in d["spec"]["groups"]:
                for r in g["rules"]:
                    if "alert" in r:
                        out[r["alert"]] = r
    return out


QUANTILE = ("LLMStreamGapP95High", "LLMStreamGapP95Critical", "LLMStreamTTFTP95High")
# LLMStreamStalling: a ratio and the median of a one-per-probe histogram, both over W_r
RATIO = ("LLMStreamStallsFrequent", "LLMStreamProbesFailing", "LLMStreamProbesMissing",
         "LLMStreamBuffered", "LLMStreamStalling")
# I -> (W_q, W_r, {alert: for}, stale age threshold)
EXPECTED = {
    "30s": ("10m", "15m", {"LLMStreamGapP95High": "15m", "LLMStreamGapP95Critical": "10m",
                           "LLMStreamProbesMissing": "5m", "LLMStreamProbesStale": "5m"}, 600),
    "60s": ("10m", "15m", {"LLMStreamGapP95High": "15m", "LLMStreamGapP95Critical": "10m",
                           "LLMStreamProbesMissing": "5m", "LLMStreamProbesStale": "5m"}, 600),
    "1m30s": ("15m", "1350s", {"LLMStreamGapP95High": "1350s", "LLMStreamGapP95Critical": "15m",
                               "LLMStreamProbesMissing": "450s", "LLMStreamProbesStale": "450s"}, 900),
    "2m": ("20m", "30m", {"LLMStreamGapP95High": "30m", "LLMStreamGapP95Critical": "20m",
                          "LLMStreamProbesMissing": "10m", "LLMStreamProbesStale": "10m"}, 1200),
    "5m": ("50m", "75m", {"LLMStreamGapP95High": "75m", "LLMStreamGapP95Critical": "50m",
                          "LLMStreamTTFTP95High": "75m", "LLMStreamStallsFrequent": "25m",
                          "LLMStreamStalling": "75m",
                          "LLMStreamBuffered": "75m",
                          "LLMStreamProbesFailing": "50m", "LLMStreamProbesMissing": "25m",
                          "LLMStreamProbesStale": "25m"}, 3000),
}
FIXED_FOR = {"LLMStreamExporterAbsent": "10m", "LLMStreamExporterDown": "5m",
             "LLMStreamConfigReloadFailed": "10m"}


def check_windows(f, alerts, wq, wr, fors, age, ctx):
    for a in QUANTILE:
        got = re.findall(r"\[([^\]]+)\]", alerts[a]["expr"])
        f(got and set(got) == {wq}, f"{ctx}: {a} window [{wq}] (got {got})")
    for a in RATIO:
        got = re.findall(r"\[([^\]]+)\]", alerts[a]["expr"])
        f(got and set(got) == {wr}, f"{ctx}: {a} window [{wr}] (got {got})")
    # The annotations' queries (LLMStreamStalling's shares and prompts) follow W_r.
    got = set(re.findall(r"\[([0-9]+[smhd])\]", alerts["LLMStreamStalling"]["annotations"]["description"]))
    f(got == {wr}, f"{ctx}: LLMStreamStalling description queries on [{wr}] (got {sorted(got)})")
    for a, want in fors.items():
        f(alerts[a].get("for") == want, f"{ctx}: {a} for {want} (got {alerts[a].get('for')})")
    for a, want in FIXED_FOR.items():
        f(alerts[a].get("for") == want, f"{ctx}: {a} for stays {want} (got {alerts[a].get('for')})")
    m = re.search(r">\s*([0-9]+)\s*$", alerts["LLMStreamProbesStale"]["expr"].strip())
    f(m and int(m.group(1)) == age, f"{ctx}: LLMStreamProbesStale age > {age} (got {m and m.group(1)})")


def promtool_check(f, docs, ctx, tmp):
    if not shutil.which("promtool"):
        return
    groups = [g for d in docs if d.get("kind") == "PrometheusRule" for g in d["spec"]["groups"]]
    p = pathlib.Path(tmp) / "rendered.yml"
    p.write_text(yaml.safe_dump({"groups": groups}))
    r = subprocess.run(["promtool", "check", "rules", str(p)], capture_output=True, text=True)
    f(r.returncode == 0, f"{ctx}: promtool check rules on the rendered groups" +
      ("" if r.returncode == 0 else ": " + (r.stdout + r.stderr)[-400:]))


def check_static(f):
    """The static files are the formula at the default interval."""
    import deploylib as lib
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    f(str(values["config"]["defaults"]["interval"]) == "60s",
      f"values.yaml config.defaults.interval is the 60s the static files assume "
      f"(got {values['config']['defaults']['interval']})")
    w = windows(values)
    f((w["quantile"], w["ratio"]) == ("10m", "15m"),
      f"formula at the default interval gives the static windows 10m/15m (got {w})")
    for r in lib.rules():
        if "alert" not in r or not r["_group"].endswith(".probes"):
            continue
        ranges = set(re.findall(r"\[([^\]]+)\]", r["expr"]))
        per_gap = re.search(r"\bllm_stream_(?!probe_)\w+_bucket\b", r["expr"])
        if "histogram_quantile" in r["expr"] and per_gap:
            f(ranges == {"10m"}, f"static {r['alert']}: quantile alert on W_q [10m] (got {sorted(ranges)})")
        elif ranges:
            f(ranges == {"15m"}, f"static {r['alert']}: ratio alert on W_r [15m] (got {sorted(ranges)})")
        f(r.get("for") is not None and seconds(r["for"]) % 60 == 0,
          f"static {r['alert']}: `for` in whole minutes (scales exactly)")
    head = (lib.RULES_DIR / "alerting_rules.yml").read_text().split("groups:")[0]
    runbook = (REPO / "docs" / "runbook.md").read_text()
    for where, text in (("alerting_rules.yml header", head), ("docs/runbook.md", runbook)):
        for formula in ("max(10m, 10 * I)", "max(15m, 15 * I)", "max(600, 10 * I)"):
            f(formula in text, f"{where} states {formula}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--renderer", help="prebuilt helmrender binary (default: build it)")
    ap.add_argument("--chart", help="chart folder (default: helm/llm-stream-exporter)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    import validate_chart as vc
    chart = pathlib.Path(args.chart).resolve() if args.chart else CHART
    failures, passed = [], [0]

    def f(ok, what):
        if ok:
            passed[0] += 1
            if args.verbose:
                print(f"ok   {what}")
        else:
            failures.append(what)
            print(f"FAIL {what}")
        return ok

    tmp = tempfile.mkdtemp(prefix="lse-windows-")
    try:
        r = vc.Renderer(args.renderer or vc.build_renderer(tmp), tmp)
        base = chart / "ci" / "standalone-values.yaml"
        on = {"prometheusRule": {"enabled": True}}

        def render(ctx, data):
            ok, docs, err, values, _ = r.render([base, r.values_file(data)], chart=chart)
            f(ok, f"{ctx}: renders" + ("" if ok else f": {err.strip()[:300]}"))
            return (docs, values) if ok else (None, None)

        for interval, (wq, wr, fors, age) in EXPECTED.items():
            ctx = f"interval {interval}"
            docs, values = render(ctx, {**on, "config": {"defaults": {"interval": interval}}})
            if docs:
                check_windows(f, alerts_of(docs), wq, wr, fors, age, ctx)
                promtool_check(f, docs, ctx, tmp)
        # the largest per-target interval wins
        docs, _ = render("a target at 5m", {**on, "config": {"defaults": {"interval": "30s"}, "targets": [
            {"name": "a", "url": "https://a.example/v1", "model": "m"},
            {"name": "b", "url": "https://b.example/v1", "model": "m", "interval": "5m"}]}})
        if docs:
            check_windows(f, alerts_of(docs), *EXPECTED["5m"], "a target at 5m")
        # prometheusRule.window.interval replaces the config's intervals
        docs, _ = render("window.interval 2m", {"prometheusRule": {"enabled": True, "window": {"interval": "2m"}}})
        if docs:
            check_windows(f, alerts_of(docs), *EXPECTED["2m"], "window.interval 2m")
        # explicit windows win; `for` still follows the interval
        docs, _ = render("explicit windows", {"prometheusRule": {"enabled": True, "window": {
            "quantile": "12m", "ratio": "20m"}}, "config": {"defaults": {"interval": "5m"}}})
        if docs:
            e = EXPECTED["5m"]
            check_windows(f, alerts_of(docs), "12m", "20m", e[2], e[3], "explicit windows")
        # a per-alert `for`/threshold override wins over the derived one
        docs, _ = render("overrides win", {"prometheusRule": {"enabled": True, "alerts": {
            "LLMStreamGapP95High": {"for": "7m"}, "LLMStreamProbesStale": {"threshold": 999}}},
            "config": {"defaults": {"interval": "5m"}}})
        if docs:
            a = alerts_of(docs)
            f(a["LLMStreamGapP95High"]["for"] == "7m", "overrides win: for 7m")
            f(a["LLMStreamProbesStale"]["expr"].strip().endswith("> 999"), "overrides win: threshold 999")
        # a bad duration is refused
        ok, _, err, _, _ = r.render([base, r.values_file({**on, "config": {"defaults": {"interval": "sixty"}}})],
                                    chart=chart)
        f(not ok and "not a duration" in err, f"interval 'sixty' is refused ({err.strip()[:200]})")

        # the exporter alerts select the release's jobs
        cases = [
            ("ServiceMonitor", {"serviceMonitor": {"enabled": True}}, "lse-llm-stream-exporter"),
            ("PodMonitor in ns obs", {"serviceMonitor": {"enabled": False},
                                      "podMonitor": {"enabled": True, "namespace": "obs"}},
             "obs/lse-llm-stream-exporter"),
            ("both monitors", {"serviceMonitor": {"enabled": True}, "podMonitor": {"enabled": True}},
             "lse-llm-stream-exporter|monitoring/lse-llm-stream-exporter"),
            ("no monitor", {"serviceMonitor": {"enabled": False}}, DEFAULT_JOB),
            ("prometheusRule.job", {"serviceMonitor": {"enabled": True},
                                    "prometheusRule": {"enabled": True, "job": "probes-.*"}}, "probes-.*"),
        ]
        for what, data, job in cases:
            data = {**data, "prometheusRule": {**on["prometheusRule"], **data.get("prometheusRule", {})}}
            docs, values = render(f"job {what}", data)
            if not docs:
                continue
            a = alerts_of(docs)
            by_kind = {}
            for d in docs:
                by_kind.setdefault(d["kind"], []).append(d)
            f(job_regex(by_kind, values) == job, f"job {what}: monitors give job {job!r} "
              f"(got {job_regex(by_kind, values)!r})")
            for name in ("LLMStreamExporterAbsent", "LLMStreamExporterDown"):
                f(f'up{{job=~"{job}"}}' in a[name]["expr"], f"job {what}: {name} selects job=~{job!r} "
                  f"({a[name]['expr']})")

        check_static(f)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"check_rule_windows: {passed[0]} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
