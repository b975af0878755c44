#!/usr/bin/env python3
"""Renders helm/llm-stream-exporter for every ci/*.yaml values file and checks
every rendered object.

No Helm binary exists here: tests/deploy/helmrender (Go text/template + sprig
from Debian, GOPATH mode) renders the chart the way `helm template` does.

Checks, each failing the run:
  values    the coalesced values validate against values.schema.json (Draft 7);
  schema    every object validates (Draft7Validator) against the Kubernetes v1.31
            or prometheus-operator schema of its kind in tests/deploy/schemas/
            (copies of shared/k8s-schemas, git blob hashes checked against
            SOURCES.md); CRD objects also may only have apiVersion/kind/
            metadata/spec at the top, apiVersion monitoring.coreos.com/v1, and
            metadata valid as ObjectMeta; unknown kinds and Secrets are refused;
  security  every pod: runAsNonRoot, numeric non-root user, readOnlyRootFilesystem,
            allowPrivilegeEscalation false, capabilities drop ALL, seccomp
            RuntimeDefault, no service account token, resources set;
  probes    the exporter container: liveness /-/healthy, readiness /-/ready on its port;
  secrets   no env value from a Secret, no envFrom, no credential-looking plain env,
            secret volumes read-only, every auth *_file in the config lies under a
            mounted Secret, no key-looking string anywhere;
  labels    standard labels on every object, selectors match pod/service labels,
            dashboards labelled grafana_dashboard: "1";
  checksum  checksum/config changes when config or prompt files change, and only then;
  rules     the PrometheusRule equals config/prometheus/*.yml (no overrides) and
            applies threshold/for/severity/labels/enabled/runbook overrides;
  dashboards the dashboard ConfigMaps equal grafana/*.json (thresholds follow overrides);
  sidecar   a sample parent chart including the container template renders and
            validates; the copy-paste snippet of docs/deploy.md merged into a sample
            Deployment validates and keeps the chart's settings;
  negative  every tests/deploy/chart-bad/*.yaml (over ci/standalone-values.yaml) is
            refused with the expected message;
  notes     NOTES.txt renders for every ci file;
  defaults  values.yaml validates, its prompts equal config/prompts/*.txt, and
            appVersion equals the CMake project VERSION.

Usage: python3 tests/deploy/validate_chart.py [--renderer PATH] [--keep DIR] [--chart DIR] [-v]
"""
import argparse
import copy
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import jsonschema
import yaml

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
CHART = REPO / "helm" / "llm-stream-exporter"
SCHEMAS = HERE / "schemas"
EXPORTER = "llm-stream-exporter"

KIND_SCHEMAS = {
    ("apps/v1", "Deployment"): "deployment-apps-v1.json",
    ("apps/v1", "DaemonSet"): "daemonset-apps-v1.json",
    ("v1", "Service"): "service-v1.json",
    ("v1", "ConfigMap"): "configmap-v1.json",
    ("v1", "ServiceAccount"): "serviceaccount-v1.json",
    ("v1", "Pod"): "pod-v1.json",
    ("policy/v1", "PodDisruptionBudget"): "poddisruptionbudget-policy-v1.json",
    ("networking.k8s.io/v1", "NetworkPolicy"): "networkpolicy-networking-v1.json",
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "servicemonitor_v1.json",
    ("monitoring.coreos.com/v1", "PodMonitor"): "podmonitor_v1.json",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "prometheusrule_v1.json",
}
CRD_KINDS = {"ServiceMonitor", "PodMonitor", "PrometheusRule"}
STD_LABELS = ("app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
              "app.kubernetes.io/managed-by", "helm.sh/chart")
KEY_LIKE = re.compile(r"\b(sk-[A-Za-z0-9_-]{16,}|sk-ant-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16})\b")
CREDENTIAL_ENV = re.compile(r"(?i)(key|token|secret|password)")


class Failures:
    def __init__(self, verbose=False):
        self.items = []
        self.passed = 0
        self.verbose = verbose

    def check(self, ok, what):
        if ok:
            self.passed += 1
            if self.verbose:
                print(f"ok   {what}")
        else:
            self.items.append(what)
            print(f"FAIL {what}")
        return ok


# ---------------------------------------------------------------- schemas

def git_blob_hash(path):
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Schemas:
    def __init__(self, f):
        sources = (SCHEMAS / "SOURCES.md").read_text()
        self.validators = {}
        for key, name in KIND_SCHEMAS.items():
            path = SCHEMAS / name
            f.check(git_blob_hash(path) in sources,
                    f"schema {name}: git blob hash matches SOURCES.md")
            schema = json.loads(path.read_text())
            self.validators[key] = jsonschema.Draft7Validator(schema)
        meta = json.loads((SCHEMAS / "configmap-v1.json").read_text())["properties"]["metadata"]
        self.object_meta = jsonschema.Draft7Validator(meta)

    def errors(self, obj):
        key = (obj.get("apiVersion"), obj.get("kind"))
        v = self.validators.get(key)
        if v is None:
            return [f"no schema for {key} (unexpected kind)"]
        errs = [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message[:300]}"
                for e in sorted(v.iter_errors(obj), key=lambda e: list(map(str, e.path)))]
        if obj.get("kind") in CRD_KINDS:
            extra = set(obj) - {"apiVersion", "kind", "metadata", "spec"}
            if extra:
                errs.append(f"unknown top-level keys {sorted(extra)}")
            if obj.get("apiVersion") != "monitoring.coreos.com/v1":
                errs.append(f"apiVersion {obj.get('apiVersion')!r}")
            errs += [f"metadata/{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}"
                     for e in self.object_meta.iter_errors(obj.get("metadata", {}))]
            if "spec" not in obj:
                errs.append("no spec")
        return errs


# ---------------------------------------------------------------- rendering

def build_renderer(out_dir):
    go = shutil.which("go")
    if not go:
        sys.exit("go not found: install golang-go and golang-github-masterminds-sprig-dev "
                 "(bash scripts/setup.sh)")
    out = pathlib.Path(out_dir) / "helmrender"
    gopath = pathlib.Path(out_dir) / "gopath"
    gopath.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GO111MODULE="off", GOPATH=f"{gopath}:/usr/share/gocode", GOFLAGS="")
    if not os.environ.get("GOCACHE") and not os.environ.get("HOME"):
        env["GOCACHE"] = str(pathlib.Path(out_dir) / "gocache")
    r = subprocess.run([go, "build", "-o", str(out), "."], cwd=str(HERE / "helmrender"),
                       env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("building helmrender failed:\n" + r.stderr)
    return str(out)


class Renderer:
    def __init__(self, binary, tmp):
        self.binary = binary
        self.tmp = pathlib.Path(tmp)
        self.n = 0

    def render(self, values_files=(), chart=None, subcharts=(), release="lse",
               namespace="monitoring"):
        """-> (ok, docs, stderr, values, notes)"""
        chart = chart or CHART
        self.n += 1
        vout = self.tmp / f"values-{self.n}.json"
        nout = self.tmp / f"notes-{self.n}.txt"
        cmd = [self.binary, "--chart", str(chart), "--release", release, "--namespace", namespace,
               "--values-out", str(vout), "--notes-out", str(nout)]
        for vf in values_files:
            cmd += ["-f", str(vf)]
        for sc in subcharts:
            cmd += ["--subchart", sc]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            return False, [], r.stderr, None, ""
        docs = [d for d in yaml.safe_load_all(r.stdout) if d]
        return (True, docs, r.stderr, json.loads(vout.read_text()),
                nout.read_text() if nout.exists() else "")

    def values_file(self, data):
        self.n += 1
        p = self.tmp / f"extra-{self.n}.yaml"
        p.write_text(yaml.safe_dump(data))
        return p


# ---------------------------------------------------------------- invariants

def pod_specs(obj):
    """(where, pod metadata, pod spec) of a workload or Pod."""
    kind = obj.get("kind")
    if kind in ("Deployment", "DaemonSet"):
        t = obj["spec"]["template"]
        return [(f"{kind}/{obj['metadata']['name']}", t.get("metadata", {}), t["spec"])]
    if kind == "Pod":
        return [(f"Pod/{obj['metadata']['name']}", obj.get("metadata", {}), obj["spec"])]
    return []


def effective(pod_sc, c_sc, key):
    if key in (c_sc or {}):
        return c_sc[key]
    return (pod_sc or {}).get(key)


def check_pod(f, where, meta, spec, ctx):
    psc = spec.get("securityContext", {}) or {}
    f.check(spec.get("automountServiceAccountToken") is False,
            f"{ctx} {where}: automountServiceAccountToken false")
    names = set()
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        names.add(c["name"])
        csc = c.get("securityContext", {}) or {}
        w = f"{ctx} {where} container {c['name']}"
        f.check(effective(psc, csc, "runAsNonRoot") is True, f"{w}: runAsNonRoot")
        uid = effective(psc, csc, "runAsUser")
        f.check(isinstance(uid, int) and uid > 0, f"{w}: numeric non-root runAsUser ({uid!r})")
        f.check(csc.get("readOnlyRootFilesystem") is True, f"{w}: readOnlyRootFilesystem")
        f.check(csc.get("allowPrivilegeEscalation") is False, f"{w}: allowPrivilegeEscalation false")
        f.check(not csc.get("privileged"), f"{w}: not privileged")
        f.check("ALL" in (csc.get("capabilities", {}) or {}).get("drop", []), f"{w}: capabilities drop ALL")
        seccomp = (csc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        f.check(seccomp == "RuntimeDefault", f"{w}: seccomp RuntimeDefault ({seccomp})")
        f.check(bool((c.get("resources") or {}).get("limits", {}).get("memory")), f"{w}: memory limit")
        f.check(not str(c.get("image", "")).endswith(":latest"), f"{w}: image not :latest")
        # secrets only as files
        for e in c.get("env", []) or []:
            vf = e.get("valueFrom") or {}
            f.check("secretKeyRef" not in vf, f"{w}: env {e['name']} not from a Secret")
            if "value" in e:
                f.check(not CREDENTIAL_ENV.search(e["name"]) and not KEY_LIKE.search(str(e["value"])),
                        f"{w}: env {e['name']} is no plain credential")
        f.check(not any("secretRef" in x for x in c.get("envFrom", []) or []),
                f"{w}: no envFrom secretRef")
    vols = {v["name"]: v for v in spec.get("volumes", []) or []}
    for c in spec.get("containers", []):
        for m in c.get("volumeMounts", []) or []:
            v = vols.get(m["name"])
            f.check(v is not None, f"{ctx} {where} {c['name']}: volume {m['name']} exists")
            if v and "secret" in v:
                f.check(m.get("readOnly") is True,
                        f"{ctx} {where} {c['name']}: secret volume {m['name']} mounted read-only")
    exporters = [c for c in spec.get("containers", []) if c["name"] == EXPORTER]
    if where.startswith("Pod/"):
        return None
    f.check(len(exporters) == 1, f"{ctx} {where}: one {EXPORTER} container")
    if not exporters:
        return None
    c = exporters[0]
    w = f"{ctx} {where} {EXPORTER}"
    ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
    for probe, path in (("livenessProbe", "/-/healthy"), ("readinessProbe", "/-/ready")):
        hg = (c.get(probe) or {}).get("httpGet") or {}
        f.check(hg.get("path") == path, f"{w}: {probe} GET {path} ({hg.get('path')})")
        f.check(hg.get("port") in ports or hg.get("port") in ports.values(),
                f"{w}: {probe} on the exporter's port ({hg.get('port')})")
    f.check(c.get("args", [])[:2] == ["serve", "--config=/etc/llm-stream-exporter/config.yaml"],
            f"{w}: args serve --config=/etc/llm-stream-exporter/config.yaml")
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    cfg = mounts.get("/etc/llm-stream-exporter")
    f.check(cfg is not None and cfg.get("readOnly") is True, f"{w}: config mounted read-only")
    f.check(cfg is not None and "configMap" in vols.get(cfg["name"], {}), f"{w}: config from a ConfigMap")
    tmp = mounts.get("/tmp")
    f.check(tmp is not None and "emptyDir" in vols.get(tmp["name"], {}),
            f"{w}: writable /tmp emptyDir (read-only root filesystem)")
    env = {e["name"]: e for e in c.get("env", [])}
    f.check(((env.get("NODE_NAME") or {}).get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath")
            == "spec.nodeName", f"{w}: NODE_NAME from the downward API")
    secret_paths = [m["mountPath"] for m in c.get("volumeMounts", [])
                    if "secret" in vols.get(m["name"], {})]
    return {"secret_paths": secret_paths, "configmap": vols[cfg["name"]]["configMap"]["name"] if cfg else None}


def auth_files(config):
    """[(target, key, path)] of every *_file / file in targets[].auth."""
    out = []
    for t in (config or {}).get("targets", []) or []:
        for k, v in (t.get("auth") or {}).items():
            if k.endswith("_file") or k == "file":
                out.append((t.get("name"), k, v))
    return out


def check_objects(f, docs, ctx, schemas, values, sidecar_parent=False):
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d.get("kind"), []).append(d)
        name = f"{ctx} {d.get('kind')}/{(d.get('metadata') or {}).get('name')}"
        errs = schemas.errors(d)
        f.check(not errs, f"{name}: validates against its schema" + ("" if not errs else ":\n    " + "\n    ".join(errs[:8])))
        f.check(d.get("kind") != "Secret", f"{name}: the chart renders no Secret")
        labels = (d.get("metadata") or {}).get("labels") or {}
        if not (sidecar_parent and d.get("kind") == "Deployment"):
            missing = [l for l in STD_LABELS if l not in labels]
            f.check(not missing, f"{name}: standard labels ({missing} missing)")
            f.check(labels.get("app.kubernetes.io/managed-by") == "Helm", f"{name}: managed-by Helm")
    text = yaml.safe_dump_all(docs)
    m = KEY_LIKE.search(text)
    f.check(m is None, f"{ctx}: no key-looking string in the output ({m.group(0)[:8] + '...' if m else ''})")

    exporter_info = []
    for d in docs:
        for where, meta, spec in pod_specs(d):
            info = check_pod(f, where, meta, spec, ctx)
            if info:
                exporter_info.append(info)
            if d["kind"] in ("Deployment", "DaemonSet"):
                sel = d["spec"]["selector"]["matchLabels"]
                pl = meta.get("labels", {})
                f.check(all(pl.get(k) == v for k, v in sel.items()),
                        f"{ctx} {where}: selector matches the pod labels")
                f.check(bool((meta.get("annotations") or {}).get("checksum/config" if not sidecar_parent
                                                                 else "checksum/llm-stream-exporter")),
                        f"{ctx} {where}: config checksum annotation")
    pods = [meta.get("labels", {}) for d in docs for _, meta, _ in pod_specs(d) if d["kind"] != "Pod"]
    for s in by_kind.get("Service", []):
        sel = s["spec"]["selector"]
        f.check(any(all(p.get(k) == v for k, v in sel.items()) for p in pods),
                f"{ctx} Service/{s['metadata']['name']}: selector matches a pod template")
        for sm in by_kind.get("ServiceMonitor", []):
            ml = sm["spec"]["selector"]["matchLabels"]
            f.check(all(s["metadata"]["labels"].get(k) == v for k, v in ml.items()),
                    f"{ctx} ServiceMonitor: selects the Service")
            f.check({e["port"] for e in sm["spec"]["endpoints"]} <= {p["name"] for p in s["spec"]["ports"]},
                    f"{ctx} ServiceMonitor: endpoint port is a Service port")
    for pm in by_kind.get("PodMonitor", []):
        ml = pm["spec"]["selector"]["matchLabels"]
        if values.get("mode") != "sidecar" or sidecar_parent:
            f.check(any(all(p.get(k) == v for k, v in ml.items()) for p in pods),
                    f"{ctx} PodMonitor: selects the exporter pods")
    for mon in by_kind.get("ServiceMonitor", []) + by_kind.get("PodMonitor", []):
        eps = mon["spec"].get("endpoints") or mon["spec"].get("podMetricsEndpoints")
        rl = [r for e in eps for r in e.get("relabelings", [])]
        loc = values.get("location", {})
        if loc.get("enabled"):
            f.check(any(r.get("targetLabel") == "location" for r in rl),
                    f"{ctx} {mon['kind']}: relabels a location label")
            if not loc.get("value"):
                f.check(mon["spec"].get("attachMetadata", {}).get("node") is True,
                        f"{ctx} {mon['kind']}: attachMetadata.node for the zone label")
    # secrets only as files: every auth file lies under a mounted Secret
    for cm in by_kind.get("ConfigMap", []):
        if "config.yaml" in (cm.get("data") or {}):
            cfg = yaml.safe_load(cm["data"]["config.yaml"])
            for t in (cfg or {}).get("targets", []) or []:
                auth = t.get("auth") or {}
                f.check(not ({"bearer_token", "bearer_token_env", "api_key"} & set(auth)),
                        f"{ctx} config target {t.get('name')}: no inline or env API key")
            for target, key, path in auth_files(cfg):
                mounted = [p for i in exporter_info for p in i["secret_paths"]]
                f.check(any(path.startswith(p.rstrip("/") + "/") for p in mounted),
                        f"{ctx} config target {target}: auth.{key} {path} is in a mounted Secret")
            for pname, prompt in (cfg.get("prompts") or {}).items():
                f.check(len({"text", "file"} & set(prompt or {})) == 1,
                        f"{ctx} config prompt {pname}: exactly one of text/file")
                if (prompt or {}).get("file", "").startswith("prompts/"):
                    f.check("prompt-" + prompt["file"][len("prompts/"):] in cm["data"],
                            f"{ctx} config prompt {pname}: {prompt['file']} is in the ConfigMap")
            f.check(cfg.get("listen", "").endswith(f":{values.get('port', 9687)}"),
                    f"{ctx} config listen matches the container port")
    for info in exporter_info:
        if values.get("existingConfigMap"):
            f.check(info["configmap"] == values["existingConfigMap"], f"{ctx}: existing ConfigMap mounted")
        else:
            f.check(info["configmap"] in {c["metadata"]["name"] for c in by_kind.get("ConfigMap", [])},
                    f"{ctx}: mounted ConfigMap {info['configmap']} is rendered")
    selectors = [("Service", s["spec"]["selector"]) for s in by_kind.get("Service", [])]
    selectors += [(k, o["spec"]["selector"]["matchLabels"]) for k in ("PodMonitor", "PodDisruptionBudget")
                  for o in by_kind.get(k, [])]
    selectors += [("NetworkPolicy", o["spec"]["podSelector"]["matchLabels"]) for o in by_kind.get("NetworkPolicy", [])]
    for p in by_kind.get("Pod", []):
        f.check((p["metadata"].get("annotations") or {}).get("helm.sh/hook") == "test",
                f"{ctx} Pod/{p['metadata']['name']}: is a helm test hook")
        pl = p["metadata"].get("labels", {})
        for kind, sel in selectors:
            f.check(not all(pl.get(k) == v for k, v in sel.items()),
                    f"{ctx} Pod/{p['metadata']['name']}: not selected by the {kind}")
    for cm in by_kind.get("ConfigMap", []):
        if any(k.endswith(".json") for k in cm.get("data", {})):
            f.check(cm["metadata"]["labels"].get("grafana_dashboard") == "1",
                    f"{ctx} dashboard ConfigMap {cm['metadata']['name']}: grafana_dashboard \"1\"")
    return by_kind


def rules_from_config():
    groups = []
    for p in sorted((REPO / "config" / "prometheus").glob("*.yml")):
        groups += yaml.safe_load(p.read_text())["groups"]
    return groups


def check_rules(f, by_kind, values, ctx):
    pr = values.get("prometheusRule", {})
    rules = by_kind.get("PrometheusRule", [])
    if not pr.get("enabled"):
        f.check(not rules, f"{ctx}: no PrometheusRule when disabled")
        return
    f.check(len(rules) == 1, f"{ctx}: one PrometheusRule")
    if not rules:
        return
    got = rules[0]["spec"]["groups"]
    want = rules_from_config()
    overrides = pr.get("alerts") or {}
    base = "https://github.com/llm-stream-exporter/llm-stream-exporter/blob/main/docs/runbook.md"
    expected = []
    for g in want:
        rs = []
        for r in g["rules"]:
            r = copy.deepcopy(r)
            if "record" in r:
                if pr.get("recordingRules", True):
                    rs.append(r)
                continue
            o = overrides.get(r["alert"], {})
            if o.get("enabled") is False:
                continue
            if "threshold" in o:
                r["expr"] = re.sub(r">\s*[-+0-9.eE]+\s*$", f"> {o['threshold']}", r["expr"].strip())
            if "for" in o:
                r["for"] = o["for"]
            if "severity" in o:
                r["labels"]["severity"] = o["severity"]
            r["labels"].update(o.get("labels", {}))
            if pr.get("runbookBaseUrl"):
                r["annotations"]["runbook_url"] = r["annotations"]["runbook_url"].replace(
                    base, pr["runbookBaseUrl"].rstrip("/"))
            r["annotations"].update(o.get("annotations", {}))
            rs.append(r)
        if rs:
            expected.append({**g, "rules": rs})
    norm = lambda gs: json.loads(json.dumps(gs, sort_keys=True))
    same = norm(got) == norm(expected)
    f.check(same, f"{ctx}: PrometheusRule groups = config/prometheus/*.yml with the overrides applied")
    if not same:
        print("    got:      " + json.dumps(got)[:600])
        print("    expected: " + json.dumps(expected)[:600])
    if not overrides and pr.get("recordingRules", True) and not pr.get("runbookBaseUrl"):
        f.check(norm(got) == norm(want), f"{ctx}: PrometheusRule is exactly the rule files")


def check_dashboards(f, by_kind, values, ctx):
    gd = values.get("grafanaDashboards", {})
    cms = [c for c in by_kind.get("ConfigMap", []) if any(k.endswith(".json") for k in c.get("data", {}))]
    if not gd.get("enabled"):
        f.check(not cms, f"{ctx}: no dashboard ConfigMaps when disabled")
        return
    files = {p.name: p for p in (REPO / "grafana").glob("*.json")}
    got = {k: v for c in cms for k, v in c["data"].items()}
    f.check(set(got) == set(files), f"{ctx}: one dashboard ConfigMap per grafana/*.json ({sorted(got)})")
    alerts = (values.get("prometheusRule") or {}).get("alerts") or {}
    patch = {}
    for var, alert in (("gap_p95_warning", "LLMStreamGapP95High"), ("gap_p95_critical", "LLMStreamGapP95Critical")):
        if "threshold" in alerts.get(alert, {}):
            patch[var] = str(alerts[alert]["threshold"])
    for name, text in got.items():
        if name not in files:
            continue
        want = json.loads(files[name].read_text())
        if not patch:
            f.check(text == files[name].read_text(), f"{ctx}: {name} is byte-identical to grafana/{name}")
        for v in want["templating"]["list"]:
            if v["name"] in patch:
                val = patch[v["name"]]
                v["query"] = val
                v["current"] = {"selected": False, "text": val, "value": val}
                v["options"] = [{"selected": True, "text": val, "value": val}]
        f.check(json.loads(text) == want, f"{ctx}: {name} equals grafana/{name} (thresholds {patch or 'unchanged'})")


# ---------------------------------------------------------------- scenarios

def checksum_of(docs):
    for d in docs:
        if d["kind"] in ("Deployment", "DaemonSet"):
            return d["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
    return None


def check_checksum(f, r, schemas):
    base_file = CHART / "ci" / "standalone-values.yaml"
    _, base, _, _, _ = r.render([base_file])
    c0 = checksum_of(base)
    f.check(bool(c0) and re.fullmatch(r"[0-9a-f]{64}", c0 or "") is not None, "checksum: sha256 annotation")
    cases = [
        ("config.defaults.interval changed", {"config": {"defaults": {"interval": "61s"}}}, True),
        ("a target added", {"config": {"targets": [
            {"name": "a", "url": "https://a.example/v1", "model": "m"},
            {"name": "b", "url": "https://b.example/v1", "model": "m"}]}}, True),
        ("a prompt file added", {"promptFiles": {"x.txt": "hello"}}, True),
        ("resources changed (not config)", {"resources": {"limits": {"memory": "256Mi"}}}, False),
        ("log level changed (not config)", {"log": {"level": "debug"}}, False),
    ]
    for what, data, changes in cases:
        ok, docs, err, _, _ = r.render([base_file, r.values_file(data)])
        f.check(ok, f"checksum: renders with {what}" + ("" if ok else f": {err}"))
        if ok:
            c1 = checksum_of(docs)
            f.check((c1 != c0) == changes,
                    f"checksum: {'changes' if changes else 'stays'} when {what}")
    # the same values twice give the same checksum (stable rendering)
    _, again, _, _, _ = r.render([base_file])
    f.check(checksum_of(again) == c0, "checksum: stable across renders")


def check_negative(f, r, validator):
    for p in sorted((HERE / "chart-bad").glob("*.yaml")):
        head = [l for l in p.read_text().splitlines() if l.startswith("# expect")]
        exp_schema = [l.split(":", 1)[1].strip() for l in head if l.startswith("# expect-schema:")]
        exp_render = [l.split(":", 1)[1].strip() for l in head if l.startswith("# expect-render:")]
        f.check(bool(exp_schema or exp_render), f"negative {p.name}: has an expectation")
        base = CHART / "ci" / "standalone-values.yaml"  # a valid release; the case breaks it
        ok, _, err, values, _ = r.render([base, p])
        if exp_render:
            f.check(not ok and all(e in err for e in exp_render),
                    f"negative {p.name}: rendering fails with {exp_render}" + (f" (got: {err.strip()[:300]})" if ok or not all(e in err for e in exp_render) else ""))
        if exp_schema:
            if values is None:  # rendering failed; merge the values ourselves
                defaults = yaml.safe_load((CHART / "values.yaml").read_text())
                values = merge(merge(defaults, yaml.safe_load(base.read_text())), yaml.safe_load(p.read_text()) or {})
            msgs = [e.message for e in validator.iter_errors(values)]
            f.check(any(all(x in m for x in exp_schema) for m in msgs),
                    f"negative {p.name}: values.schema.json refuses it with {exp_schema} (got: {[m[:160] for m in msgs][:3]})")


def merge(a, b):
    out = copy.deepcopy(a)
    for k, v in b.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def check_sidecar_parent(f, r, schemas):
    parent = HERE / "sidecar-parent"
    ok, docs, err, values, _ = r.render(chart=parent, subcharts=[f"{EXPORTER}={CHART}"], release="gw")
    f.check(ok, "sidecar parent chart renders" + ("" if ok else f": {err}"))
    if not ok:
        return
    sub_values = values[EXPORTER]
    by_kind = check_objects(f, docs, "sidecar-parent", schemas, sub_values, sidecar_parent=True)
    dep = by_kind.get("Deployment", [{}])[0]
    names = [c["name"] for c in dep.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])]
    f.check(names == ["gateway", EXPORTER], f"sidecar parent: gateway + exporter in one pod ({names})")
    f.check(not any(d["kind"] in ("Service", "DaemonSet") or
                    (d["kind"] == "Deployment" and d["metadata"]["name"] != "gw-gateway") for d in docs),
            "sidecar parent: the subchart renders no workload or Service in sidecar mode")


def extract_snippet(md_text, marker):
    m = re.search(r"<!-- " + re.escape(marker) + r" -->\s*```yaml\n(.*?)```", md_text, re.S)
    return m.group(1) if m else None


def check_docs_snippet(f, r, schemas):
    md = (REPO / "docs" / "deploy.md").read_text()
    snippet = extract_snippet(md, "sidecar-snippet")
    f.check(snippet is not None, "docs/deploy.md has the <!-- sidecar-snippet --> YAML block")
    if snippet is None:
        return
    snip = yaml.safe_load(snippet)
    f.check(set(snip) == {"containers", "volumes"}, "sidecar snippet: has containers and volumes")
    sample = yaml.safe_load((HERE / "sidecar" / "sample-deployment.yaml").read_text())
    spec = sample["spec"]["template"]["spec"]
    spec["containers"] += snip.get("containers", [])
    spec.setdefault("volumes", []).extend(snip.get("volumes", []))
    errs = schemas.errors(sample)
    f.check(not errs, "sidecar snippet merged into tests/deploy/sidecar/sample-deployment.yaml validates"
            + ("" if not errs else ":\n    " + "\n    ".join(errs[:8])))
    check_pod(f, "Deployment/" + sample["metadata"]["name"], sample["spec"]["template"]["metadata"], spec,
              "docs snippet")
    # The snippet keeps the chart's settings (same container as the chart renders).
    ok, docs, err, _, _ = r.render([CHART / "ci" / "standalone-values.yaml"])
    chart_c = [c for d in docs if d["kind"] == "Deployment"
               for c in d["spec"]["template"]["spec"]["containers"] if c["name"] == EXPORTER][0]
    snip_c = [c for c in snip["containers"] if c["name"] == EXPORTER][0]
    for key in ("securityContext", "livenessProbe", "readinessProbe", "ports", "resources"):
        f.check(snip_c.get(key) == chart_c.get(key), f"sidecar snippet: {key} as the chart renders it")
    f.check(snip_c.get("args", [])[:2] == chart_c["args"][:2], "sidecar snippet: args as the chart")
    f.check({m["mountPath"] for m in snip_c["volumeMounts"]} >= {"/etc/llm-stream-exporter", "/tmp"},
            "sidecar snippet: config and /tmp mounts")


def check_values_defaults(f, validator):
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    errs = [e.message for e in validator.iter_errors(defaults)]
    f.check(not errs, f"values.yaml validates against values.schema.json {errs[:3]}")
    # The chart's appVersion is the exporter's version (CMake project VERSION).
    m = re.search(r"project\(\s*\w+\s+VERSION\s+([0-9.]+)", (REPO / "CMakeLists.txt").read_text())
    chart_meta = yaml.safe_load((CHART / "Chart.yaml").read_text())
    f.check(m is not None and str(chart_meta.get("appVersion")) == m.group(1),
            f"Chart.yaml appVersion {chart_meta.get('appVersion')} = CMake project VERSION {m and m.group(1)}")
    # The default prompt set is the one the image ships (config/prompts/*.txt).
    files = sorted((REPO / "config" / "prompts").glob("*.txt"))
    f.check(bool(files), "config/prompts/*.txt exist")
    for p in files:
        got = ((defaults.get("config", {}).get("prompts") or {}).get(p.stem) or {}).get("text")
        f.check(got == p.read_text(), f"values.yaml config.prompts.{p.stem}.text equals config/prompts/{p.name}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--renderer", help="prebuilt helmrender binary (default: build it)")
    ap.add_argument("--keep", help="write the rendered manifests of each ci file into this folder")
    ap.add_argument("-v", "--verbose", action="store_true", help="print passing checks too")
    ap.add_argument("--chart", help="chart folder to check (default: helm/llm-stream-exporter; "
                    "test_mutations.py points it at broken copies)")
    args = ap.parse_args()
    global CHART
    if args.chart:
        CHART = pathlib.Path(args.chart).resolve()
    f = Failures(args.verbose)
    tmp = tempfile.mkdtemp(prefix="lse-chart-")
    try:
        renderer = args.renderer or build_renderer(tmp)
        r = Renderer(renderer, tmp)
        schemas = Schemas(f)
        values_schema = json.loads((CHART / "values.schema.json").read_text())
        jsonschema.Draft7Validator.check_schema(values_schema)
        vvalidator = jsonschema.Draft7Validator(values_schema)
        check_values_defaults(f, vvalidator)

        ci_files = sorted((CHART / "ci").glob("*.yaml"))
        modes = set()
        for ci in ci_files:
            ctx = f"ci/{ci.name}"
            ok, docs, err, values, notes = r.render([ci])
            if not f.check(ok, f"{ctx}: renders" + ("" if ok else f": {err}")):
                continue
            modes.add(values["mode"])
            verrs = [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in vvalidator.iter_errors(values)]
            f.check(not verrs, f"{ctx}: values validate against values.schema.json {verrs[:3]}")
            if args.keep:
                pathlib.Path(args.keep).mkdir(parents=True, exist_ok=True)
                (pathlib.Path(args.keep) / ci.name).write_text(yaml.safe_dump_all(docs, sort_keys=False))
            by_kind = check_objects(f, docs, ctx, schemas, values)
            kinds = set(by_kind)
            if values["mode"] == "standalone":
                f.check({"Deployment", "Service"} <= kinds and "DaemonSet" not in kinds, f"{ctx}: Deployment + Service")
            elif values["mode"] == "daemonset":
                f.check({"DaemonSet", "Service"} <= kinds and "Deployment" not in kinds, f"{ctx}: DaemonSet + Service")
            else:
                f.check(not ({"Deployment", "DaemonSet", "Service"} & kinds), f"{ctx}: no workload in sidecar mode")
            check_rules(f, by_kind, values, ctx)
            check_dashboards(f, by_kind, values, ctx)
            f.check(f"mode: {values['mode']}" in notes and len(notes.strip()) > 40, f"{ctx}: NOTES.txt renders")
        f.check(modes == {"standalone", "daemonset", "sidecar"}, f"ci/ covers every mode ({sorted(modes)})")

        check_checksum(f, r, schemas)
        check_negative(f, r, vvalidator)
        check_sidecar_parent(f, r, schemas)
        check_docs_snippet(f, r, schemas)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"validate_chart: {f.passed} passed, {len(f.items)} failed")
    return 1 if f.items else 0


if __name__ == "__main__":
    sys.exit(main())
