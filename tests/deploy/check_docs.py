#!/usr/bin/env python3
"""Checks docs/deploy.md, docs/runbook.md, every config block of README.md and docs/*.md, and the dialects.

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
- a ```yaml block of README.md or docs/*.md does not parse (Helm template blocks, with
  "{{", aside);
- a config block of README.md or docs/*.md (one whose top level has `targets:`), saved
  alone as config.yaml in an empty folder, fails `llm_stream_exporter check-config`. The
  block is written as it stands; each environment variable it names gets a placeholder
  value and each relative key file it names (bearer_token_file, auth/headers `file:`) a
  placeholder file beside it; a block naming an absolute key file (a Secret's mount) is
  checked with --no-env-check, which lists that file as not checked;
- a block that is part of a config (its top-level keys are the config's or a target's, or
  it is a list of targets) does not follow a line `<!-- fragment: why -->`: a new
  fragment is a decision, counted in the summary line, never an accident;
- a config block of README.md or docs/dialects.md is refused by the Helm chart's
  values.schema.json as the chart's `config:` (keys from the environment, for one), since
  users copy those into the chart as they are;
- a dialect the exporter supports has no config block in docs/dialects.md, or not one row
  in each of the two tables of docs/DESIGN.md §9 (request and stream), or a row
  names a dialect the exporter does not know;
- a relative link or #anchor of README.md or docs/*.md points nowhere.
The exporter binary is $LSE_EXPORTER, else $BUILD_DIR/exporter/llm_stream_exporter,
else build/exporter/llm_stream_exporter; without one the config blocks are only
parsed (a note says so).

Usage: python3 tests/deploy/check_docs.py [--readme F] [--dialects F] [--design F] [--exporter BIN]
"""
import argparse
import json
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
CHART = REPO / "helm" / "llm-stream-exporter"
# The pages whose configs a user copies into the Helm chart's `config:` as they are.
CHART_FORM_DOCS = ("README.md", "dialects.md")
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


FRAGMENT = re.compile(r"<!--\s*fragment\b[^>]*-->\s*$")
# The config's keys, for telling a fragment of a config from another YAML format; read from
# the exporter's own "unknown key ... (allowed: ...)" errors when the binary is there.
TOP_KEYS = {"listen", "min_interval", "defaults", "prompts", "targets", "metrics", "buckets",
            "rows", "diagnosis", "limits", "web"}
TARGET_KEYS = {"name", "url", "api", "model", "auth", "prompts", "proxy_url", "body", "interval",
               "jitter", "timeout", "stall_threshold", "warmup", "max_tokens", "temperature",
               "count", "accept_encoding", "client", "headers", "include_usage", "max_event_bytes",
               "proxy_from_environment", "tls", "labels", "alert", "http_version", "http2"}


def config_keys(binary):
    """(top-level keys, target keys) the exporter allows."""
    if not binary:
        return TOP_KEYS, TARGET_KEYS
    with tempfile.TemporaryDirectory() as d:
        p = pathlib.Path(d) / "keys.yaml"
        p.write_text("no_such_key: 1\ntargets: [{name: t, url: 'http://h', model: m, no_such_key: 1}]\n")
        r = subprocess.run([binary, "check-config", str(p)], capture_output=True, text=True)
    found = re.findall(r"\(allowed: ([a-z_, ]+)\)", r.stdout + r.stderr)
    if len(found) != 2:
        return TOP_KEYS, TARGET_KEYS
    return tuple({k.strip() for k in f.split(",")} for f in found)


def yaml_blocks(text):
    """(number, line, body, marked) of each ```yaml block; marked: a fragment line precedes it."""
    for i, m in enumerate(re.finditer(r"^```ya?ml\n(.*?)^```", text, re.S | re.M)):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        yield i + 1, text.count("\n", 0, m.start()) + 1, m.group(1), bool(FRAGMENT.search(before))


def secrets_named(node):
    """(environment variables, key files) a config's auth and headers read."""
    env, files = set(), set()
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("bearer_token_env", "env") and isinstance(v, str):
                env.add(v)
            elif k in ("bearer_token_file", "file") and isinstance(v, str):
                files.add(v)
            else:
                e, f = secrets_named(v)
                env |= e
                files |= f
    elif isinstance(node, list):
        for v in node:
            e, f = secrets_named(v)
            env |= e
            files |= f
    return env, files


def check_config_block(binary, body, data):
    """check-config on one block saved alone in an empty folder; None when valid, else why."""
    env_vars, files = secrets_named(data)
    env = dict(os.environ)
    for name in env_vars:
        env[name] = "docs-check-key"
    # Prompt files a block names are files it needs, not keys: those are the block's to ship.
    prompt_files = {p.get("file") for p in (data.get("prompts") or {}).values() if isinstance(p, dict)}
    with tempfile.TemporaryDirectory() as d:
        folder = pathlib.Path(d)
        (folder / "config.yaml").write_text(body)
        absolute = False
        for f in files - prompt_files:
            if os.path.isabs(f):
                absolute = True
                continue
            key = folder / f
            key.parent.mkdir(parents=True, exist_ok=True)
            key.write_text("docs-check-key\n")
        cmd = [binary, "check-config"] + (["--no-env-check"] if absolute else []) + ["config.yaml"]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=d, timeout=30)
    return None if r.returncode == 0 else (r.stdout + r.stderr).strip()


def merged(base, over):
    """Helm's merge of values: maps merge key by key, anything else is replaced."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = merged(base.get(k), v)
        return out
    return over


def chart_refusal(data):
    """None when the chart's values.schema.json takes the block as its `config:`, else why."""
    import jsonschema  # python3-jsonschema, as validate_chart.py
    schema = json.loads((CHART / "values.schema.json").read_text())
    values = merged(yaml.safe_load((CHART / "values.yaml").read_text()), {"config": data})
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(values), key=lambda e: list(e.path))
    if not errors:
        return None
    return "; ".join(f"{'.'.join(map(str, e.path))}: {e.message[:200]}" for e in errors[:3])


def looks_like_config_part(data, keys):
    """A block a reader could take for (part of) an exporter config."""
    top, target = keys
    if isinstance(data, list):
        return any(isinstance(t, dict) and "url" in t and "name" in t for t in data)
    if not isinstance(data, dict) or "apiVersion" in data or "kind" in data:
        return False
    return bool(set(data) & (top | target))


def check_doc_configs(doc, binary, errors, keys=None, counts=None):
    """The yaml blocks of one Markdown file; returns the api values its configs name."""
    apis = []
    keys = keys or config_keys(binary)
    counts = counts if counts is not None else {"configs": 0, "fragments": 0}
    name = pathlib.Path(doc).name if pathlib.Path(doc).parent != DOCS else f"docs/{pathlib.Path(doc).name}"
    for i, line, body, marked in yaml_blocks(pathlib.Path(doc).read_text()):
        if "{{" in body:
            continue
        where = f"{name}: yaml block {i} (line {line})"
        try:
            data = yaml.safe_load(body)
        except yaml.YAMLError as e:
            errors.append(f"{where} does not parse: {e}")
            continue
        if marked:
            counts["fragments"] += 1
            continue
        if isinstance(data, dict) and "targets" in data:
            counts["configs"] += 1
            apis += [t.get("api", "openai-chat") for t in data["targets"] or [] if isinstance(t, dict)]
            if binary:
                out = check_config_block(binary, body, data)
                if out is not None:
                    errors.append(f"{where} fails check-config as a whole file:\n    "
                                  + out.replace("\n", "\n    "))
            if pathlib.Path(doc).name in CHART_FORM_DOCS:
                refused = chart_refusal(data)
                if refused:
                    errors.append(f"{where}: the Helm chart refuses it as its config: ({refused}); "
                                  "read the key from a file (bearer_token_file, auth.file)")
        elif looks_like_config_part(data, keys):
            errors.append(f"{where} is part of a config, not a whole one: make it a whole config "
                          "file, or mark it with a line <!-- fragment: why --> before it")
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


def check_dialects(dialects, design, binary, errors, counts=None):
    """Every dialect has a whole config in docs/dialects.md and its two rows in DESIGN §9."""
    apis = check_doc_configs(dialects, binary, errors, counts=counts)
    if not binary:
        print("note: no llm_stream_exporter binary: config blocks parsed, not checked; "
              "dialect coverage not checked")
        return
    supported = supported_dialects(binary)
    if not supported:
        errors.append(f"{binary} check-config did not list the supported api values")
        return
    for api in supported:
        if api not in apis:
            errors.append(f"{pathlib.Path(dialects).name}: no config block with api: {api}")
    rows = design_dialect_rows(design)
    for api in supported:
        if rows.get(api, 0) != 2:
            errors.append(f"DESIGN.md §9: {rows.get(api, 0)} table rows for {api}, want 2 "
                          "(request and stream)")
    for api in sorted(set(rows) - set(supported)):
        errors.append(f"DESIGN.md §9: row for {api}, which the exporter does not support")
    print(f"dialects: {len(supported)} supported, configs in {pathlib.Path(dialects).name} for {len(set(apis))}, "
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


def check_links(doc, errors):
    """Relative links and #anchors of one Markdown file point somewhere."""
    doc = pathlib.Path(doc)
    text = doc.read_text()
    name = doc.name if doc.parent != DOCS else f"docs/{doc.name}"
    for m in re.finditer(r"\]\(([^)\s]+)\)", text):
        link = m.group(1)
        if re.match(r"[a-z]+:", link):
            continue
        path, _, frag = link.partition("#")
        target = (doc.parent / path).resolve() if path else doc
        if not target.exists():
            errors.append(f"{name}: link {link} points to a missing file")
            continue
        if frag and target.suffix == ".md" and frag not in anchors(target.read_text()):
            errors.append(f"{name}: link {link}: no heading #{frag}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--readme", default=str(REPO / "README.md"))
    ap.add_argument("--dialects", default=str(DOCS / "dialects.md"))
    ap.add_argument("--design", default=str(DOCS / "DESIGN.md"))
    ap.add_argument("--exporter", help="the llm_stream_exporter binary (default: see above)")
    args = ap.parse_args()
    errors = []
    binary = exporter_binary(args.exporter)
    keys = config_keys(binary)
    counts = {"configs": 0, "fragments": 0}
    docs = [pathlib.Path(args.readme)] + sorted(DOCS.glob("*.md"))
    for doc in docs:
        if doc.resolve() != pathlib.Path(args.dialects).resolve():
            check_doc_configs(doc, binary, errors, keys, counts)
        check_links(doc, errors)
    check_dialects(args.dialects, args.design, binary, errors, counts)
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
    for e in errors:
        print("FAIL " + e)
    print(f"check_docs: {counts['configs']} config blocks of README.md and docs/*.md through "
          f"check-config as whole files, {counts['fragments']} marked fragments; {blocks} yaml "
          f"blocks of deploy.md and runbook.md; {len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
