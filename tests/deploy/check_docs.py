#!/usr/bin/env python3
"""Checks docs/deploy.md and docs/runbook.md.

Fails (exit 1) when:
- deploy.md lacks a section for standalone, daemonset, sidecar, API keys/secrets,
  the Prometheus Operator or plain Prometheus;
- a ```yaml block does not parse (Helm template blocks, with "{{", aside);
- a Prometheus configuration block (one with scrape_configs) fails
  `promtool check config` (rule_files pointed at config/prometheus/*.yml;
  kubernetes_sd_configs replaced by a static target, as Debian's Prometheus
  has no Kubernetes discovery);
- a relative link or #anchor of either document points nowhere.

Usage: python3 tests/deploy/check_docs.py
"""
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


def main():
    errors = []
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
