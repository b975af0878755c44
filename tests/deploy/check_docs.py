#!/usr/bin/env python3
"""Checks docs/deploy.md, docs/runbook.md, and the dialects in README.md and docs/DESIGN.md.

Fails (exit 1) when:
- deploy.md lacks a section for standalone, daemonset, sidecar, API keys/secrets,
  the Prometheus Operator or plain Prometheus;
- a ```yaml block does not parse (Helm template blocks, with "{{", aside);
- a Prometheus configuration block (one with scrape_configs) fails
  `promtool check config` (rule_files pointed at config/prometheus/*.yml;
  kubernetes_sd_configs replaced by a static target, as Debian's Prometheus
  has no Kubernetes discovery);
- an Alertmanager configuration block (one with route or inhibit_rules) fails
  `amtool check-config` (Debian: prometheus-alertmanager), or its inhibit
  rules name an alert that config/prometheus/alerting_rules.yml does not have;
- a relative link or #anchor of either document points nowhere;
- a ```yaml block of README.md does not parse, or one with `targets:` fails
  `llm_stream_exporter check-config` (a `prompts:` section, `listen: 127.0.0.1:0`
  and the environment variables it names are supplied when it has none);
- a dialect the exporter supports has no README.md config block, or not one row
  in each of the two tables of docs/DESIGN.md §9 (request and stream), or a row
  names a dialect the exporter does not know.
The exporter binary is $LSE_EXPORTER, else $BUILD_DIR/exporter/llm_stream_exporter,
else build/exporter/llm_stream_exporter; without one the README configs are only
parsed (a note says so).

Usage: python3 tests/deploy/check_docs.py [--readme F] [--design F] [--exporter BIN]
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
SECTIONS = {
    "standalone": r"^###? Standalone",
    "daemonset": r"^###? .*daemonset",
    "sidecar": r"^###? Sidecar",
    "secrets": r"^###? API keys \(Secrets\)",
    "Prometheus Operator": r"^###? Prometheus Operator",
    "plain Prometheus": r"^###? Plain Prometheus",
    "Grafana": r"^###? Grafana",
}


def anchor(heading):
    a = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return a.replace(" ", "-")


def anchors(md):
    return {anchor(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*$", md, re.M)}


def exporter_binary(given=None):
    build = os.environ.get("BUILD_DIR", "")
    for cand in (given, os.environ.get("LSE_EXPORTER"),
                 build and str(pathlib.Path(build) / "exporter" / "llm_stream_exporter"),
                 str(REPO / "build" / "exporter" / "llm_stream_exporter")):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def supported_dialects(binary):
    """The exporter's api values, from its error for an unknown one."""
    with tempfile.TemporaryDirectory() as d:
        p = pathlib.Path(d) / "probe.yaml"
        p.write_text("listen: '127.0.0.1:0'\nprompts: {p: {text: hi}}\n"
                     "targets: [{name: t, url: 'http://127.0.0.1:1', model: m, api: no-such-api}]\n")
        r = subprocess.run([binary, "check-config", str(p)], capture_output=True, text=True)
    m = re.search(r"supported: ([a-z0-9, -]+)\)", r.stdout + r.stderr)
    return [s.strip() for s in m.group(1).split(",")] if m else None


def env_names(node):
    """Environment variables a config's auth blocks read."""
    out = set()
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("bearer_token_env", "env") and isinstance(v, str):
                out.add(v)
            out |= env_names(v)
    elif isinstance(node, list):
        for v in node:
            out |= env_names(v)
    return out


def check_config_block(binary, data):
    """check-config on one README block; None when valid, else the output."""
    data = dict(data)
    data.setdefault("prompts", {"short": {"text": "What is the capital of France?"}})
    # check-config may try the listen address; the default :9687 may be taken
    # by a running exporter, which says nothing about the block.
    data.setdefault("listen", "127.0.0.1:0")
    env = dict(os.environ)
    for name in env_names(data):
        env[name] = "docs-check-key"
    with tempfile.TemporaryDirectory() as d:
        p = pathlib.Path(d) / "readme.yaml"
        p.write_text(yaml.safe_dump(data, sort_keys=False))
        r = subprocess.run([binary, "check-config", str(p)], capture_output=True, text=True, env=env)
    return None if r.returncode == 0 else (r.stdout + r.stderr).strip()


def check_readme(readme, binary, errors):
    """README's yaml blocks; returns the api values its configs name."""
    apis = []
    text = pathlib.Path(readme).read_text()
    for i, m in enumerate(re.finditer(r"```yaml\n(.*?)```", text, re.S)):
        try:
            data = yaml.safe_load(m.group(1))
        except yaml.YAMLError as e:
            errors.append(f"README.md: yaml block {i + 1} does not parse: {e}")
            continue
        if not isinstance(data, dict) or "targets" not in data:
            continue
        apis += [t.get("api", "openai-chat") for t in data["targets"] or [] if isinstance(t, dict)]
        if binary:
            out = check_config_block(binary, data)
            if out is not None:
                errors.append(f"README.md: yaml block {i + 1} fails check-config:\n    {out}")
    return apis


def design_dialect_rows(design):
    """{api: number of rows} in the tables of DESIGN §9."""
    text = pathlib.Path(design).read_text()
    if "\n## 9." not in text:
        return {}
    sec = text.split("\n## 9.", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for m in re.finditer(r"^\| `([a-z0-9-]+)` \|", sec, re.M):
        rows[m.group(1)] = rows.get(m.group(1), 0) + 1
    return rows


def check_dialects(readme, design, binary, errors):
    apis = check_readme(readme, binary, errors)
    if not binary:
        print("note: no llm_stream_exporter binary: README configs parsed, not checked; "
              "dialect coverage not checked")
        return
    supported = supported_dialects(binary)
    if not supported:
        errors.append(f"{binary} check-config did not list the supported api values")
        return
    for api in supported:
        if api not in apis:
            errors.append(f"README.md: no config block with api: {api}")
    rows = design_dialect_rows(design)
    for api in supported:
        if rows.get(api, 0) != 2:
            errors.append(f"DESIGN.md §9: {rows.get(api, 0)} table rows for {api}, want 2 "
                          "(request and stream)")
    for api in sorted(set(rows) - set(supported)):
        errors.append(f"DESIGN.md §9: row for {api}, which the exporter does not support")
    print(f"dialects: {len(supported)} supported, README configs for {len(set(apis))}, "
          f"DESIGN §9 rows for {len(rows)} ({binary})")


def check_alertmanager(data):
    """amtool check-config on the block; the alert names its matchers use exist."""
    errs = []
    if not shutil.which("amtool"):
        return ["amtool not installed (Debian: prometheus-alertmanager)"]
    with tempfile.TemporaryDirectory() as d:
        p = pathlib.Path(d) / "alertmanager.yml"
        p.write_text(yaml.safe_dump(data))
        r = subprocess.run(["amtool", "check-config", str(p)], capture_output=True, text=True)
        if r.returncode != 0:
            errs.append("fails amtool check-config:\n" + r.stdout + r.stderr)
    rules = yaml.safe_load((REPO / "config" / "prometheus" / "alerting_rules.yml").read_text())
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    for rule in data.get("inhibit_rules") or []:
        for m in rule.get("source_matchers", []) + rule.get("target_matchers", []):
            k, _, v = re.match(r'(\w+)\s*(=~|=)\s*"(.*)"', m).groups()
            if k != "alertname":
                continue
            named = {a for a in alerts if re.fullmatch(v, a)}
            if not named:
                errs.append(f"inhibit matcher {m} matches no alert")
            group = re.fullmatch(r"(LLMStream)\((.*)\)", v)
            words = [group.group(1) + w for w in group.group(2).split("|")] if group else v.split("|")
            for word in words:
                if word not in alerts:
                    errs.append(f"inhibit matcher {m} names {word}, which is not an alert")
    return errs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--readme", default=str(REPO / "README.md"))
    ap.add_argument("--design", default=str(DOCS / "DESIGN.md"))
    ap.add_argument("--exporter", help="the llm_stream_exporter binary (default: see above)")
    args = ap.parse_args()
    errors = []
    check_dialects(args.readme, args.design, exporter_binary(args.exporter), errors)
    deploy = (DOCS / "deploy.md").read_text()
    for name, rx in SECTIONS.items():
        if not re.search(rx, deploy, re.M | re.I):
            errors.append(f"deploy.md: no section on {name}")
    blocks = 0
    for doc in ("deploy.md", "runbook.md"):
        text = (DOCS / doc).read_text()
        for i, m in enumerate(re.finditer(r"```yaml\n(.*?)```", text, re.S)):
            body = m.group(1)
            if "{{" in body:
                continue
            blocks += 1
            try:
                data = yaml.safe_load(body)
            except yaml.YAMLError as e:
                errors.append(f"{doc}: yaml block {i + 1} does not parse: {e}")
                continue
            if isinstance(data, dict) and "scrape_configs" in data:
                if not shutil.which("promtool"):
                    errors.append("promtool not installed (Debian: prometheus)")
                    continue
                data["rule_files"] = [str(REPO / "config" / "prometheus" / "*.yml")]
                # Debian's Prometheus is built without Kubernetes discovery: check
                # the rest of such a job (relabeling) with a static target instead.
                for job in data["scrape_configs"]:
                    if job.pop("kubernetes_sd_configs", None) is not None:
                        job["static_configs"] = [{"targets": ["127.0.0.1:9687"]}]
                with tempfile.TemporaryDirectory() as d:
                    p = pathlib.Path(d) / "prometheus.yml"
                    p.write_text(yaml.safe_dump(data))
                    r = subprocess.run(["promtool", "check", "config", str(p)], capture_output=True, text=True)
                    if r.returncode != 0:
                        errors.append(f"{doc}: Prometheus config block {i + 1} fails promtool check config:\n"
                                      + r.stdout + r.stderr)
            if isinstance(data, dict) and ("route" in data or "inhibit_rules" in data):
                errors.extend(f"{doc}: Alertmanager block {i + 1}: {e}" for e in check_alertmanager(data))
        for m in re.finditer(r"\]\(([^)\s]+)\)", text):
            link = m.group(1)
            if re.match(r"[a-z]+://", link):
                continue
            path, _, frag = link.partition("#")
            target = (DOCS / path).resolve() if path else DOCS / doc
            if not target.exists():
                errors.append(f"{doc}: link {link} points to a missing file")
                continue
            if frag and target.suffix == ".md" and frag not in anchors(target.read_text()):
                errors.append(f"{doc}: link {link}: no heading #{frag}")
    for e in errors:
        print("FAIL " + e)
    print(f"check_docs: {blocks} yaml blocks, {len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
