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
  ports     one container and one Service port, named http-metrics, on service.port (the
            deprecated top-level `port` still wins, NOTES.txt says it is deprecated);
  secrets   env from a Secret (secretKeyRef, envFrom secretRef) only as the values ask,
            no credential-looking plain env, secret volumes read-only, every auth *_file
            in the config lies under a mounted Secret, every variable the config reads is
            set by the container, no key-looking string anywhere;
  sharded   a StatefulSet of `replicas` pods with --shard.index=auto --shard.count=N and
            POD_NAME from metadata.name, a headless serviceName Service (the only one),
            monitors and PDB selecting every replica; replicas > 1 elsewhere is refused;
  sharded pods (once the binary has --shard.*) three replicas of the rendered StatefulSet
            container run against tests/upstream, POD_NAME <name>-I: each exposes exactly
            the targets whose FNV-1a 64 hash mod 3 is I, and its shard gauges;
  examples  every values block of the chart README and docs/deploy.md renders and validates;
  metadata  Chart.yaml home, sources, maintainers, icon, keywords, license annotation;
            absolute links in the chart README and NOTES.txt; the memory limit covers the
            measured footprint;
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
import base64
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
import time
import urllib.parse

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
    ("apps/v1", "StatefulSet"): "statefulset-apps-v1.json",
    ("v1", "Service"): "service-v1.json",
    ("v1", "ConfigMap"): "configmap-v1.json",
    ("v1", "Secret"): "secret-v1.json",
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
WORKLOADS = ("Deployment", "DaemonSet", "StatefulSet")
PORT_NAME = "http-metrics"


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
    if kind in WORKLOADS:
        t = obj["spec"]["template"]
        return [(f"{kind}/{obj['metadata']['name']}", t.get("metadata", {}), t["spec"])]
    if kind == "Pod":
        return [(f"Pod/{obj['metadata']['name']}", obj.get("metadata", {}), obj["spec"])]
    return []


def effective(pod_sc, c_sc, key):
    if key in (c_sc or {}):
        return c_sc[key]
    return (pod_sc or {}).get(key)


def check_pod(f, where, meta, spec, ctx, values=None):
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
        # keys from Secrets (files, or env the values ask for), never plain values
        asked = {e["name"]: e for e in (values or {}).get("env", []) + (values or {}).get("extraEnv", [])} \
            if c["name"] == EXPORTER else {}
        for e in c.get("env", []) or []:
            vf = e.get("valueFrom") or {}
            if "secretKeyRef" in vf:
                f.check(asked.get(e["name"], {}).get("valueFrom") == vf,
                        f"{w}: env {e['name']} from a Secret only as the values ask (extraEnv)")
            if "value" in e:
                f.check(not CREDENTIAL_ENV.search(e["name"]) and not KEY_LIKE.search(str(e["value"])),
                        f"{w}: env {e['name']} is no plain credential")
        want_from = (values or {}).get("envFrom", []) if c["name"] == EXPORTER else []
        f.check(all(x in want_from for x in c.get("envFrom", []) or [] if "secretRef" in x),
                f"{w}: envFrom secretRef only as the values ask (envFrom)")
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
    if values:
        f.check(ports == {PORT_NAME: expected_port(values)},
                f"{w}: one container port {PORT_NAME}: {expected_port(values)} ({ports})")
    web = web_expectations(values or {})
    for probe, path in (("livenessProbe", "/-/healthy"), ("readinessProbe", "/-/ready")):
        path = web["prefix"] + path
        if web["auth"]:  # the kubelet cannot authenticate: a TCP check
            tcp = (c.get(probe) or {}).get("tcpSocket") or {}
            f.check("httpGet" not in (c.get(probe) or {}) and (tcp.get("port") in ports or tcp.get("port") in ports.values()),
                    f"{w}: {probe} is a TCP check on the exporter's port (web config asks for authentication)")
            continue
        hg = (c.get(probe) or {}).get("httpGet") or {}
        f.check(hg.get("path") == path, f"{w}: {probe} GET {path} ({hg.get('path')})")
        f.check(hg.get("port") in ports or hg.get("port") in ports.values(),
                f"{w}: {probe} on the exporter's port ({hg.get('port')})")
        scheme = "HTTPS" if web["tls"] else "HTTP"
        f.check(hg.get("scheme", "HTTP") == scheme, f"{w}: {probe} scheme {scheme} ({hg.get('scheme')})")
    a = c.get("args", [])
    f.check(a[2:4] == ["serve", "--config.file=/etc/llm-stream-exporter/config.yaml"]
            and all(x.startswith("--log.") for x in a[:2]),
            f"{w}: args --log.level, --log.format (program flags first), serve --config.file=/etc/llm-stream-exporter/config.yaml")
    f.check(not any(a.startswith("--config=") for a in c.get("args", [])), f"{w}: no --config= (--config.file=)")
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
    # --web.* flags and the web config follow the values
    args = c.get("args", [])
    wcf = [a.split("=", 1)[1] for a in args if a.startswith("--web.config.file=")]
    wmount = mounts.get(WEB_CONFIG_DIR)
    wvol = vols.get(wmount["name"], {}) if wmount else {}
    web_secret = (wvol.get("secret") or {}).get("secretName")
    if web["enabled"]:
        f.check(wcf == [f"{WEB_CONFIG_DIR}/{web['key']}"], f"{w}: --web.config.file={WEB_CONFIG_DIR}/{web['key']} ({wcf})")
        f.check(wmount is not None and wmount.get("readOnly") is True and "secret" in wvol,
                f"{w}: the web config is a Secret mounted read-only at {WEB_CONFIG_DIR}")
        if web["existing"]:
            f.check(web_secret == web["existing"], f"{w}: webConfig.existingSecret {web['existing']} mounted ({web_secret})")
    else:
        f.check(not wcf and wmount is None, f"{w}: no --web.config.file without webConfig")
    lifecycle = web["lifecycle"] or "--web.enable-lifecycle" in (values or {}).get("extraArgs", [])
    f.check(args.count("--web.enable-lifecycle") == (1 if lifecycle else 0),
            f"{w}: --web.enable-lifecycle once iff web.enableLifecycle/extraArgs ask for it")
    for flag, key in (("--web.external-url", "externalUrl"), ("--web.route-prefix", "routePrefix")):
        want = ((values or {}).get("web") or {}).get(key)
        got = [a.split("=", 1)[1] for a in args if a.startswith(flag + "=")]
        f.check(got == ([want] if want else []), f"{w}: {flag} follows web.{key} ({got})")
    if values:
        want = expected_image(values)
        f.check(c.get("image") == want, f"{w}: image {want} ({c.get('image')})")
    return {"secret_paths": secret_paths, "configmap": vols[cfg["name"]]["configMap"]["name"] if cfg else None,
            "web_secret": web_secret, "container": c, "spec": spec}


WEB_CONFIG_DIR = "/etc/llm-stream-exporter-web"
BCRYPT = re.compile(r"^\$2[aby]\$[0-9]{2}\$[./A-Za-z0-9]{53}$")


def expected_port(values):
    """service.port; the deprecated top-level `port` still wins (chart 0.2.x)."""
    return int(values.get("port") or (values.get("service") or {}).get("port") or 9687)


def app_version():
    return str(yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"])


def expected_image(values):
    """<registry>/<repository>[@digest | :tag]: global.imageRegistry wins over image.registry."""
    img = values.get("image") or {}
    reg = ((values.get("global") or {}).get("imageRegistry") or img.get("registry") or "").rstrip("/")
    repo = f"{reg}/{img['repository']}" if reg else img["repository"]
    return f"{repo}@{img['digest']}" if img.get("digest") else f"{repo}:{img.get('tag') or app_version()}"


def web_expectations(values):
    """What the web/webConfig values should turn into (an independent reading of them)."""
    web = values.get("web") or {}
    wc = values.get("webConfig") or {}
    cfg = wc.get("config") or {}
    prefix = web.get("routePrefix") or (urllib.parse.urlsplit(web["externalUrl"]).path
                                        if web.get("externalUrl") else "")
    prefix = prefix.strip("/")
    prefix = "/" + prefix if prefix else ""
    tls_cfg = cfg.get("tls_server_config") or {}
    basic = bool(cfg.get("basic_auth_users"))
    client = tls_cfg.get("client_auth_type") in ("RequireAnyClientCert", "RequireAndVerifyClientCert")
    return {"prefix": prefix, "metrics": prefix + (web.get("telemetryPath") or "/metrics"),
            "tls": bool(wc.get("tls")) or "tls_server_config" in cfg, "basic": basic,
            "auth": bool(wc.get("auth")) or basic or client, "enabled": bool(cfg or wc.get("existingSecret")),
            "key": wc.get("key") or "web-config.yml", "existing": wc.get("existingSecret") or "",
            "lifecycle": bool(web.get("enableLifecycle"))}


def check_web_config_secret(f, d, values, name):
    """The one Secret the chart may render: webConfig.config, bcrypt hashes only, no PEM."""
    wc = (values or {}).get("webConfig") or {}
    key = wc.get("key") or "web-config.yml"
    f.check(bool(wc.get("config")) and not wc.get("existingSecret"),
            f"{name}: a Secret only for an inline webConfig.config")
    data = {k: base64.b64decode(v).decode() for k, v in (d.get("data") or {}).items()}
    data.update(d.get("stringData") or {})
    f.check(set(data) == {key} and d["metadata"]["name"].endswith("-web-config"),
            f"{name}: is the web config Secret with only {key} ({sorted(data)})")
    parsed = yaml.safe_load(data.get(key, "")) or {}
    f.check(parsed == wc.get("config"), f"{name}: {key} equals webConfig.config")
    for user, h in (parsed.get("basic_auth_users") or {}).items():
        f.check(BCRYPT.match(str(h)) is not None, f"{name}: basic_auth_users.{user} is a bcrypt hash")
    f.check("PRIVATE KEY" not in data.get(key, ""), f"{name}: no inline private key (certificates come from a Secret)")


def auth_files(config):
    """[(target, key, path)] of every *_file / file in targets[].auth."""
    out = []
    for t in (config or {}).get("targets", []) or []:
        for k, v in (t.get("auth") or {}).items():
            if k.endswith("_file") or k == "file":
                out.append((t.get("name"), k, v))
    return out


def config_env_names(target):
    """The environment variables a target's config reads (auth and {env: NAME} headers)."""
    auth = target.get("auth") or {}
    names = [auth[k] for k in ("bearer_token_env", "env") if k in auth]
    names += [h["env"] for h in (target.get("headers") or {}).values() if isinstance(h, dict) and "env" in h]
    return names


def check_objects(f, docs, ctx, schemas, values, sidecar_parent=False, exporters_out=None):
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d.get("kind"), []).append(d)
        name = f"{ctx} {d.get('kind')}/{(d.get('metadata') or {}).get('name')}"
        errs = schemas.errors(d)
        f.check(not errs, f"{name}: validates against its schema" + ("" if not errs else ":\n    " + "\n    ".join(errs[:8])))
        if d.get("kind") == "Secret":
            check_web_config_secret(f, d, values, name)
        labels = (d.get("metadata") or {}).get("labels") or {}
        if not (sidecar_parent and d.get("kind") == "Deployment"):
            missing = [l for l in STD_LABELS if l not in labels]
            f.check(not missing, f"{name}: standard labels ({missing} missing)")
            f.check(labels.get("app.kubernetes.io/managed-by") == "Helm", f"{name}: managed-by Helm")
    text = yaml.safe_dump_all(docs)
    m = KEY_LIKE.search(text)
    f.check(m is None, f"{ctx}: no key-looking string in the output ({m.group(0)[:8] + '...' if m else ''})")

    exporter_info = exporters_out if exporters_out is not None else []
    for d in docs:
        for where, meta, spec in pod_specs(d):
            info = check_pod(f, where, meta, spec, ctx, values)
            if info:
                info["where"] = where
                exporter_info.append(info)
            if d["kind"] in WORKLOADS:
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
        sp = [(p["name"], p["port"], p.get("targetPort")) for p in s["spec"]["ports"]]
        f.check(sp == [(PORT_NAME, expected_port(values), PORT_NAME)],
                f"{ctx} Service: port {PORT_NAME} {expected_port(values)} -> {PORT_NAME} ({sp})")
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
            env_names = {e["name"] for i in exporter_info for e in i["container"].get("env", [])}
            env_from = any(i["container"].get("envFrom") for i in exporter_info)
            for t in (cfg or {}).get("targets", []) or []:
                auth = t.get("auth") or {}
                f.check(not ({"bearer_token", "api_key"} & set(auth)),
                        f"{ctx} config target {t.get('name')}: no inline API key")
                if exporter_info:  # the container sets every variable the config reads
                    for var in config_env_names(t):
                        f.check(var in env_names or env_from,
                                f"{ctx} config target {t.get('name')}: ${var} is set by the container (env/envFrom)")
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
            f.check(cfg.get("listen", "").endswith(f":{expected_port(values)}"),
                    f"{ctx} config listen matches the container port")
    secrets = {s["metadata"]["name"] for s in by_kind.get("Secret", [])}
    web = web_expectations(values)
    f.check(bool(secrets) == (bool((values.get("webConfig") or {}).get("config")) and not web["existing"]),
            f"{ctx}: a web config Secret iff webConfig.config ({sorted(secrets)})")
    for info in exporter_info:
        if web["enabled"] and not web["existing"]:
            f.check(info["web_secret"] in secrets, f"{ctx}: the mounted web config Secret {info['web_secret']} is rendered")
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


def duration_ms(s):
    units = {"ms": 1, "s": 1000, "m": 60000, "h": 3600000, "d": 86400000, "w": 604800000, "y": 31536000000}
    return sum(int(n) * units[u] for n, u in re.findall(r"([0-9]+)(ms|y|w|d|h|m|s)", str(s)))


def check_monitors(f, by_kind, values, ctx):
    """ServiceMonitor/PodMonitor fields equal their values; the scrape matches the web config."""
    web = web_expectations(values)
    services = by_kind.get("Service", [])
    pods = [meta.get("labels", {}) for k in WORKLOADS for d in by_kind.get(k, []) for _, meta, _ in pod_specs(d)]
    for kind, key, tl, eps_key in (("ServiceMonitor", "serviceMonitor", "targetLabels", "endpoints"),
                                   ("PodMonitor", "podMonitor", "podTargetLabels", "podMetricsEndpoints")):
        m = values.get(key) or {}
        for mon in by_kind.get(kind, []):
            w = f"{ctx} {kind}"
            spec = mon["spec"]
            labels = mon["metadata"].get("labels") or {}
            f.check(all(labels.get(k) == v for k, v in (m.get("labels") or {}).items()),
                    f"{w}: metadata labels include {key}.labels {m.get('labels')}")
            f.check(spec.get("jobLabel") == (m.get("jobLabel") or None), f"{w}: jobLabel = {key}.jobLabel")
            f.check(spec.get(tl) == (m.get(tl) or None), f"{w}: {tl} = {key}.{tl}")
            f.check(spec.get("sampleLimit") == (m.get("sampleLimit") or None), f"{w}: sampleLimit = {key}.sampleLimit")
            # the labels named must exist where the operator reads them
            have = [s["metadata"].get("labels") or {} for s in services] if kind == "ServiceMonitor" else pods
            named = ([m["jobLabel"]] if m.get("jobLabel") else []) + list(m.get(tl) or [])
            if have:
                f.check(all(any(n in h for h in have) for n in named),
                        f"{w}: jobLabel/{tl} {named} are labels of the {'Service' if kind == 'ServiceMonitor' else 'pods'}")
            for ep in spec.get(eps_key, []):
                f.check(bool(ep.get("honorLabels", False)) == bool(m.get("honorLabels")), f"{w}: honorLabels = {key}.honorLabels")
                f.check(ep.get("interval") == (m.get("interval") or None) and
                        ep.get("scrapeTimeout") == (m.get("scrapeTimeout") or None), f"{w}: interval/scrapeTimeout as set")
                if ep.get("interval") and ep.get("scrapeTimeout"):
                    f.check(duration_ms(ep["scrapeTimeout"]) <= duration_ms(ep["interval"]),
                            f"{w}: scrapeTimeout {ep['scrapeTimeout']} <= interval {ep['interval']}")
                f.check(ep.get("tlsConfig") == (m.get("tlsConfig") or None), f"{w}: tlsConfig = {key}.tlsConfig")
                f.check(ep.get("basicAuth") == (m.get("basicAuth") or None), f"{w}: basicAuth = {key}.basicAuth")
                scheme = "https" if (m.get("tlsConfig") or web["tls"]) else "http"
                f.check(ep.get("scheme") == scheme, f"{w}: scheme {scheme} ({ep.get('scheme')})")
                f.check(ep.get("path") == web["metrics"], f"{w}: path {web['metrics']} ({ep.get('path')})")
                if web["basic"]:
                    f.check(bool(ep.get("basicAuth")), f"{w}: basicAuth set (the web config asks for basic auth)")


def check_sharded(f, by_kind, values, ctx):
    """mode sharded: a StatefulSet of N replicas, each with --shard.index=auto --shard.count=N and
    POD_NAME (the ordinal's source), its serviceName a headless Service that selects them all,
    monitors that select every replica."""
    n = int(values.get("replicas") or 1)
    kinds = set(by_kind)
    f.check("StatefulSet" in kinds and not {"Deployment", "DaemonSet"} & kinds, f"{ctx}: StatefulSet, no Deployment/DaemonSet")
    for sts in by_kind.get("StatefulSet", []):
        spec = sts["spec"]
        w = f"{ctx} StatefulSet/{sts['metadata']['name']}"
        f.check(spec.get("replicas") == n, f"{w}: replicas {n} ({spec.get('replicas')})")
        pod = spec["template"]
        c = [c for c in pod["spec"]["containers"] if c["name"] == EXPORTER][0]
        args = c.get("args", [])
        f.check(args.count("--shard.index=auto") == 1 and args.count(f"--shard.count={n}") == 1
                and not [a for a in args if a.startswith("--shard.") and a not in ("--shard.index=auto", f"--shard.count={n}")],
                f"{w}: args --shard.index=auto --shard.count={n} once each ({[a for a in args if 'shard' in a]})")
        f.check(args.index("--shard.index=auto") > args.index("serve") if "serve" in args and "--shard.index=auto" in args else False,
                f"{w}: the shard flags are serve's (after the subcommand)")
        env = {e["name"]: e for e in c.get("env", [])}
        f.check(((env.get("POD_NAME") or {}).get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath") == "metadata.name",
                f"{w}: POD_NAME from fieldRef metadata.name (--shard.index=auto reads its -<ordinal>)")
        f.check(c.get("ports", [{}])[0].get("name") == PORT_NAME, f"{w}: port {PORT_NAME}")
        svcs = [s for s in by_kind.get("Service", []) if s["metadata"]["name"] == spec.get("serviceName")]
        f.check(len(svcs) == 1, f"{w}: serviceName {spec.get('serviceName')} is a rendered Service")
        for s in svcs:
            f.check(s["spec"].get("clusterIP") == "None", f"{w}: its Service is headless (clusterIP None)")
            sel = s["spec"]["selector"]
            f.check(all(pod["metadata"]["labels"].get(k) == v for k, v in sel.items()),
                    f"{w}: the headless Service selects the replicas")
        for mon in by_kind.get("ServiceMonitor", []):
            f.check(mon["spec"]["selector"]["matchLabels"].items() <= svcs[0]["metadata"]["labels"].items() if svcs else False,
                    f"{w}: the ServiceMonitor selects the headless Service (every replica)")
        for mon in by_kind.get("PodMonitor", []):
            f.check(mon["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items(),
                    f"{w}: the PodMonitor selects every replica")
        for pdb in by_kind.get("PodDisruptionBudget", []):
            f.check(pdb["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items(),
                    f"{w}: the PodDisruptionBudget covers the replicas")
    services = by_kind.get("Service", [])
    f.check(len(services) == 1, f"{ctx}: one Service (a second one would make the ServiceMonitor scrape each shard twice)")


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
    # windows/for from the probe interval, the exporter job from the monitors
    # (docs/runbook.md#alert-windows; check_rule_windows.py tests the numbers)
    import check_rule_windows as crw
    want = crw.derive(rules_from_config(), values, crw.job_regex(by_kind, values))
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
                e = r["expr"].strip()
                if re.search(r">\s*[-+0-9.eE]+\s*$", e):
                    r["expr"] = re.sub(r">\s*[-+0-9.eE]+\s*$", f"> {o['threshold']}", e)
                else:  # the default of a per-target threshold gauge
                    r["expr"] = re.sub(r"\+\s*[-+0-9.eE]+\s*\)\s*$", f"+ {o['threshold']}\n)", e)
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


# ---------------------------------------------------------------- the real binary

PLACEHOLDER_CONFIG = """# placeholder for a ConfigMap the chart does not render (existingConfigMap)
listen: ":{port}"
prompts: {{p: {{text: hi}}}}
targets:
  - {{name: placeholder, url: "https://llm.example.org/v1", api: openai-chat, model: m}}
"""
PLACEHOLDER_HASH = "$2y$10$KFG4l80cPB1sRzsCrMd5M.bh7g.pkvI9a.VRpizrD0lUPizkJp/1G"


def find_exporter(given=None, wait=90):
    """$LSE_EXPORTER, $BUILD_DIR/exporter/llm_stream_exporter or build/...; waits while a rebuild
    has it missing."""
    build = os.environ.get("BUILD_DIR", "")
    cands = [given, os.environ.get("LSE_EXPORTER"),
             build and str(pathlib.Path(build) / "exporter" / "llm_stream_exporter"),
             str(REPO / "build" / "exporter" / "llm_stream_exporter")]
    deadline = time.time() + wait
    while True:
        for c in cands:
            if c and os.access(c, os.X_OK):
                return c
        if time.time() > deadline or not (REPO / "build").is_dir():
            return None
        time.sleep(10)


class Exporter:
    """Runs llm_stream_exporter on what the chart renders: check-config on the ConfigMap's
    config.yaml, and the container's args through `serve ... --dry-run` (the binary's own flag
    parser, config and web config checks), with every mounted file materialised in a temp dir."""

    def __init__(self, binary, tmp):
        self.binary = binary
        self.tmp = pathlib.Path(tmp)
        self.n = 0
        top = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
        serve = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True).stdout
        self.dry_run = "--dry-run" in serve
        self.shards = "--shard.count" in serve
        if not self.shards:
            print(f"note: {binary} has no --shard.index/--shard.count yet: the sharded args are run "
                  "through it without them (the chart's invariants still check them)")
        self.known_flags = set(re.findall(r"(--[a-z][a-z0-9.-]*)", top + serve))
        if not self.dry_run:
            print(f"note: {binary} has no `serve --dry-run` yet: args are checked with --help "
                  "and against the flags `serve --help` lists")

    def run(self, cmd, cwd, env=None):
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=60, env=env)
        return r.returncode, (r.stdout + r.stderr).strip()

    @staticmethod
    def relocate(text, mounts, root):
        """Points absolute paths under a mount at its materialised copy (one pass)."""
        if not mounts:
            return text
        alt = "|".join(re.escape(m.rstrip("/")) for m in sorted(mounts, key=len, reverse=True))
        return re.sub(r"(?<![\w./-])(" + alt + r")(?=/|$|[\s\"'])", lambda m: str(root) + m.group(1), text)

    def tls_pair(self, crt, key):
        crt.parent.mkdir(parents=True, exist_ok=True)
        key.parent.mkdir(parents=True, exist_ok=True)
        r = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                            "-nodes", "-days", "2", "-subj", "/CN=llm-stream-exporter", "-keyout", str(key),
                            "-out", str(crt)], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("openssl: " + r.stderr)

    def materialise(self, by_kind, values, container, spec):
        """-> (root, mounts {mountPath: local dir}, notes)"""
        self.n += 1
        root = self.tmp / f"pod-{self.n}"
        vols = {v["name"]: v for v in spec.get("volumes", []) or []}
        cms = {c["metadata"]["name"]: c for c in by_kind.get("ConfigMap", [])}
        secrets = {s["metadata"]["name"]: s for s in by_kind.get("Secret", [])}
        mounts, unrendered, notes = {}, [], []
        for m in container.get("volumeMounts", []) or []:
            local = root / m["mountPath"].lstrip("/")
            local.mkdir(parents=True, exist_ok=True)
            mounts[m["mountPath"]] = local
            v = vols.get(m["name"], {})
            if "configMap" in v:
                cm = cms.get(v["configMap"]["name"])
                if cm is None:
                    notes.append(f"placeholder config.yaml for ConfigMap {v['configMap']['name']}")
                data = cm["data"] if cm else {"config.yaml": PLACEHOLDER_CONFIG.format(port=expected_port(values))}
                for it in v["configMap"].get("items") or [{"key": k, "path": k} for k in data]:
                    (local / it["path"]).parent.mkdir(parents=True, exist_ok=True)
                    (local / it["path"]).write_text(data[it["key"]])
            elif "secret" in v:
                s = secrets.get(v["secret"]["secretName"])
                if s is None:
                    unrendered.append(m["mountPath"])
                    continue
                for k, val in (s.get("data") or {}).items():
                    (local / k).write_bytes(base64.b64decode(val))
                for k, val in (s.get("stringData") or {}).items():
                    (local / k).write_text(val)
        # a web config in a Secret the chart does not render: one as webConfig describes it
        web = web_expectations(values)
        wpath = root / WEB_CONFIG_DIR.lstrip("/") / web["key"]
        if web["existing"] and not wpath.exists():
            wc = {}
            if web["tls"]:
                wc["tls_server_config"] = {"cert_file": "tls.crt", "key_file": "tls.key"}
                self.tls_pair(wpath.parent / "tls.crt", wpath.parent / "tls.key")
            if web["auth"]:
                wc["basic_auth_users"] = {"prometheus": PLACEHOLDER_HASH}
            wpath.write_text(yaml.safe_dump(wc))
            notes.append(f"placeholder web config for Secret {web['existing']} (tls={web['tls']}, auth={web['auth']})")
        # rewrite absolute paths of the config and the web config to the copies
        for f in list(root.rglob("*")):
            if f.is_file() and f.suffix in (".yaml", ".yml"):
                f.write_text(self.relocate(f.read_text(), mounts, root))
        # TLS material named by the web config, from Secrets not rendered: a fresh key pair
        if wpath.exists():
            tls = (yaml.safe_load(wpath.read_text()) or {}).get("tls_server_config") or {}
            res = lambda p: pathlib.Path(p) if os.path.isabs(p) else wpath.parent / p
            if tls.get("cert_file") and tls.get("key_file") and not res(tls["cert_file"]).exists():
                self.tls_pair(res(tls["cert_file"]), res(tls["key_file"]))
                notes.append(f"generated a certificate for {tls['cert_file']}")
                if tls.get("client_ca_file") and not res(tls["client_ca_file"]).exists():
                    shutil.copy(res(tls["cert_file"]), res(tls["client_ca_file"]))
        # any other file the configs name under an unrendered Secret (API keys): a placeholder
        for f in list(root.rglob("*")):
            if f.is_file() and f.suffix in (".yaml", ".yml"):
                for path in re.findall(re.escape(str(root)) + r"[^\s\"',}\]]*", f.read_text()):
                    pp = pathlib.Path(path)
                    if not pp.exists() and any(str(pp).startswith(str(root) + u + "/") for u in unrendered):
                        pp.parent.mkdir(parents=True, exist_ok=True)
                        pp.write_text("placeholder-not-a-key\n")
        return root, mounts, notes

    def check_config(self, f, ctx, cfg_path, cwd):
        cmd = [self.binary, "check-config", "--no-env-check", str(cfg_path)]
        code, out = self.run(cmd, cwd)
        if code != 0 and re.search(r"(?i)bind|address already in use|listen", out):
            # the rendered listen port is busy on this machine: not the chart's fault
            alt = cfg_path.with_name("config-freeport.yaml")
            alt.write_text(re.sub(r"(?m)^listen:.*$", "listen: 127.0.0.1:0", cfg_path.read_text()))
            code2, out2 = self.run([self.binary, "check-config", "--no-env-check", str(alt)], cwd)
            if code2 == 0:
                print(f"note: {ctx}: the listen port is busy here; check-config passes with listen 127.0.0.1:0")
                code, out = code2, out2
        f.check(code == 0, f"{ctx}: llm_stream_exporter check-config --no-env-check passes on the rendered "
                f"config.yaml" + ("" if code == 0 else f" (exit {code}):\n    " + out.replace("\n", "\n    ")[:1500]))
        return code == 0

    def check_pod(self, f, ctx, by_kind, values, info):
        c = info["container"]
        root, mounts, notes = self.materialise(by_kind, values, c, info["spec"])
        for n in notes:
            if f.verbose:
                print(f"note: {ctx}: {n}")
        args = [self.relocate(a, mounts, root) for a in c.get("args", [])]
        if not self.shards:
            args = [a for a in args if not a.startswith("--shard.")]
        cfg = [a.split("=", 1)[1] for a in args if re.match(r"--config(\.file)?=", a)]
        if cfg:
            self.check_config(f, ctx, pathlib.Path(cfg[-1]), root)
        web = web_expectations(values)
        # the downward API's variables, as the pod has them (a StatefulSet's pod is <name>-<ordinal>)
        kind, _, name = info.get("where", "Deployment/lse").partition("/")
        pod_env = dict(os.environ, NODE_NAME="node-a", POD_NAMESPACE="monitoring",
                       POD_NAME=f"{name}-0" if kind == "StatefulSet" else f"{name}-7d9f8b6c5-x2x4q")
        if self.dry_run:
            code, out = self.run([self.binary] + args + ["--dry-run"], root, env=pod_env)
            f.check(code == 0, f"{ctx}: the container args pass `llm_stream_exporter {' '.join(c.get('args', []))} "
                    f"--dry-run`" + ("" if code == 0 else f" (exit {code}):\n    " + out.replace("\n", "\n    ")[:1500]))
            if code != 0:
                return
            m = re.search(r"metrics at (\S+?);", out)
            f.check(m is not None and m.group(1) == web["metrics"],
                    f"{ctx}: dry run serves metrics at {web['metrics']}, where the monitors scrape ({m and m.group(1)})")
            lc = re.search(r"/-/reload (enabled|disabled)", out)
            want = "enabled" if "--web.enable-lifecycle" in args else "disabled"
            f.check(lc is not None and lc.group(1) == want, f"{ctx}: dry run: POST /-/reload {want}")
            f.check(("TLS from" in out) == web["tls"], f"{ctx}: dry run serves {'TLS' if web['tls'] else 'plain HTTP'}")
            f.check(("basic auth" in out) == (web["basic"] or (web["existing"] != "" and web["auth"])),
                    f"{ctx}: dry run: basic auth {'on' if web['basic'] or web['auth'] and web['existing'] else 'off'}")
        else:
            code, out = self.run([self.binary] + args + ["--help"], root)
            f.check(code == 0, f"{ctx}: the container args parse (`... --help`)" + ("" if code == 0 else f": {out[:600]}"))
            unknown = [a for a in args if a.startswith("--") and a.split("=", 1)[0] not in self.known_flags]
            f.check(not unknown, f"{ctx}: the container args are flags the exporter knows (unknown: {unknown})")


def check_with_binary(f, exporter, by_kind, values, ctx, exporter_info):
    if exporter is None:
        return
    if exporter_info:
        for info in exporter_info:
            exporter.check_pod(f, ctx, by_kind, values, info)
        return
    # sidecar mode: no container here; the rendered config alone
    for cm in by_kind.get("ConfigMap", []):
        if "config.yaml" in (cm.get("data") or {}):
            exporter.n += 1
            d = exporter.tmp / f"cm-{exporter.n}"
            d.mkdir(parents=True)
            (d / "config.yaml").write_text(cm["data"]["config.yaml"])
            for k, v in cm["data"].items():
                if k.startswith("prompt-"):
                    (d / "prompts").mkdir(exist_ok=True)
                    (d / "prompts" / k[len("prompt-"):]).write_text(v)
            exporter.check_config(f, ctx, d / "config.yaml", d)


# ---------------------------------------------------------------- scenarios

def checksum_of(docs):
    for d in docs:
        if d["kind"] in WORKLOADS:
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


def check_sidecar_parent(f, r, schemas, exporter=None):
    parent = HERE / "sidecar-parent"
    # helm dependency build refuses a dependency whose version is not the chart's
    version = str(yaml.safe_load((CHART / "Chart.yaml").read_text())["version"])
    deps = yaml.safe_load((parent / "Chart.yaml").read_text()).get("dependencies", [])
    f.check([str(d.get("version")) for d in deps if d["name"] == EXPORTER] == [version],
            f"sidecar parent: depends on llm-stream-exporter {version}")
    m = re.search(r"- name: llm-stream-exporter\n\s+version: (\S+)", (REPO / "docs" / "deploy.md").read_text())
    f.check(m is not None and m.group(1) == version, f"docs/deploy.md: the dependency example names version {version}")
    ok, docs, err, values, _ = r.render(chart=parent, subcharts=[f"{EXPORTER}={CHART}"], release="gw")
    f.check(ok, "sidecar parent chart renders" + ("" if ok else f": {err}"))
    if not ok:
        return
    sub_values = values[EXPORTER]
    infos = []
    by_kind = check_objects(f, docs, "sidecar-parent", schemas, sub_values, sidecar_parent=True, exporters_out=infos)
    check_with_binary(f, exporter, by_kind, sub_values, "sidecar-parent", infos)
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
    f.check(snip_c.get("args", [])[:4] == chart_c["args"][:4], "sidecar snippet: args as the chart")
    f.check({m["mountPath"] for m in snip_c["volumeMounts"]} >= {"/etc/llm-stream-exporter", "/tmp"},
            "sidecar snippet: config and /tmp mounts")


# Value combinations rendered and checked like a ci file.
SCENARIOS = [
    ("tls-only-route-prefix", {
        "secrets": [{"name": "llm-api-keys", "mountPath": "/var/run/secrets/llm"},
                    {"name": "lse-tls", "mountPath": "/etc/llm-stream-exporter-tls"}],
        "webConfig": {"config": {"tls_server_config": {"cert_file": "/etc/llm-stream-exporter-tls/tls.crt",
                                                       "key_file": "/etc/llm-stream-exporter-tls/tls.key"}}},
        "web": {"routePrefix": "/lse/", "telemetryPath": "/probe-metrics"},
        "serviceMonitor": {"tlsConfig": {"ca": {"secret": {"name": "lse-tls", "key": "ca.crt"}}}}}),
]


# Values the chart must refuse when rendering (over ci/standalone-values.yaml): (what, values, message).
RENDER_REFUSES = [
    ("serviceMonitor scrapeTimeout > interval", {"serviceMonitor": {"interval": "30s", "scrapeTimeout": "1m"}},
     "serviceMonitor.scrapeTimeout 1m exceeds serviceMonitor.interval 30s"),
    ("podMonitor scrapeTimeout > interval", {"podMonitor": {"enabled": True, "interval": "1m", "scrapeTimeout": "1m500ms"}},
     "podMonitor.scrapeTimeout 1m500ms exceeds podMonitor.interval 1m"),
    ("tlsConfig against plain HTTP", {"serviceMonitor": {"tlsConfig": {"insecureSkipVerify": True}}},
     "serviceMonitor.tlsConfig is set but the exporter serves plain HTTP"),
    ("basic auth without the monitor's basicAuth",
     {"webConfig": {"config": {"basic_auth_users": {"prometheus": PLACEHOLDER_HASH}}}},
     "serviceMonitor.basicAuth is required"),
    ("webConfig config and existingSecret", {"webConfig": {"config": {"basic_auth_users": {"p": PLACEHOLDER_HASH}},
                                                           "existingSecret": "x"}},
     "webConfig: set either config"),
    ("extraArgs sets --config.file", {"extraArgs": ["--config.file=/x.yaml"]}, "extraArgs: --config.file=/x.yaml is set by the chart"),
    ("extraArgs sets --web.external-url", {"extraArgs": ["--web.external-url=https://x/"]}, "is set by the chart"),
    ("--web.enable-lifecycle twice", {"web": {"enableLifecycle": True}, "extraArgs": ["--web.enable-lifecycle"]},
     "--web.enable-lifecycle twice"),
    ("replicas 2 in standalone (every probe twice)", {"replicas": 2},
     "replicas: 2 in mode standalone would run every probe 2 times"),
    ("replicas 3 in daemonset", {"mode": "daemonset", "replicas": 3}, "set mode: sharded to split the targets over 3 replicas"),
    ("sharded with replicas 0", {"mode": "sharded", "replicas": 0}, "mode sharded needs replicas >= 1 (the number of shards), not 0"),
    ("extraArgs sets --shard.count", {"extraArgs": ["--shard.count=2"]}, "extraArgs: --shard.count=2 is set by the chart: use mode: sharded"),
    ("sharded behind a NodePort", {"mode": "sharded", "replicas": 2, "service": {"type": "NodePort"}},
     "mode sharded renders a headless Service (clusterIP: None): service.type must be ClusterIP"),
    ("bearer_token_env nothing sets", {"config": {"targets": [{"name": "o", "url": "https://api.openai.com/v1", "model": "m",
                                                               "auth": {"bearer_token_env": "OPENAI_API_KEY"}}]}},
     "config names the environment variable OPENAI_API_KEY but nothing sets it"),
    ("a header {env: NAME} nothing sets", {"extraEnv": [{"name": "OTHER", "value": "x"}],
                                           "config": {"targets": [{"name": "o", "url": "https://api.openai.com/v1", "model": "m",
                                                                   "headers": {"x-portkey-api-key": {"env": "PORTKEY_API_KEY"}}}]}},
     "config names the environment variable PORTKEY_API_KEY but nothing sets it"),
    ("POD_NAME overridden in extraEnv", {"mode": "sharded", "replicas": 2, "extraEnv": [{"name": "POD_NAME", "value": "x-0"}]},
     "extraEnv POD_NAME is set by the chart from the downward API"),
    ("a plain credential in extraEnv", {"extraEnv": [{"name": "OPENAI_API_KEY", "value": "not-a-key"}]},
     "extraEnv OPENAI_API_KEY looks like a credential in plain text"),
    ("service.port against config.listen", {"service": {"port": 9100}, "config": {"listen": ":9687"}},
     "config.listen \":9687\" does not use port 9100 (set service.port instead)"),
]
# Values values.schema.json must refuse: (what, values, text in a message).
SCHEMA_REFUSES = [
    ("a plain password in basic_auth_users", {"webConfig": {"config": {"basic_auth_users": {"p": "hunter2"}}}}, "does not match"),
    ("a decimal scrape interval (not a Prometheus duration)", {"serviceMonitor": {"interval": "1.5s"}}, "does not match"),
    ("a tag in image.repository", {"image": {"repository": "ghcr.io/x/y:1.0"}}, "does not match"),
    ("an unknown tlsConfig key", {"serviceMonitor": {"tlsConfig": {"caFile": "/x"}}}, "Additional properties"),
    ("a negative sampleLimit", {"podMonitor": {"sampleLimit": -1}}, "less than the minimum"),
    ("an unknown web key", {"web": {"maxRequests": 40}}, "Additional properties"),
]
# image.registry / global.imageRegistry -> the image string (over ci/standalone-values.yaml).
IMAGE_CASES = [
    ({}, "ghcr.io/llm-stream-exporter/llm-stream-exporter:{app}"),
    ({"image": {"registry": "registry.example.org:5000"}}, "registry.example.org:5000/llm-stream-exporter/llm-stream-exporter:{app}"),
    ({"global": {"imageRegistry": "mirror.example.org/ghcr"}, "image": {"registry": "quay.io", "tag": "0.2.0"}},
     "mirror.example.org/ghcr/llm-stream-exporter/llm-stream-exporter:0.2.0"),
    ({"image": {"registry": "", "repository": "ghcr.io/acme/lse", "digest": "sha256:" + "a" * 64}},
     "ghcr.io/acme/lse@sha256:" + "a" * 64),
    ({"global": {"imageRegistry": "mirror.example.org"}, "image": {"digest": "sha256:" + "b" * 64}},
     "mirror.example.org/llm-stream-exporter/llm-stream-exporter@sha256:" + "b" * 64),
]


def check_new_values(f, r, validator):
    base = CHART / "ci" / "standalone-values.yaml"
    for what, data, msg in RENDER_REFUSES:
        ok, _, err, _, _ = r.render([base, r.values_file(data)])
        f.check(not ok and msg in err, f"refused: {what}: rendering fails with {msg!r}"
                + ("" if not ok and msg in err else f" (got: {'rendered' if ok else err.strip()[:300]})"))
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    for what, data, msg in SCHEMA_REFUSES:
        values = merge(merge(defaults, yaml.safe_load(base.read_text())), data)
        msgs = [e.message for e in validator.iter_errors(values)]
        f.check(any(msg in m for m in msgs), f"refused: {what}: values.schema.json says {msg!r} ({[m[:120] for m in msgs][:2]})")
    for data, want in IMAGE_CASES:
        want = want.format(app=app_version())
        ok, docs, err, values, _ = r.render([base, r.values_file(data)])
        imgs = [c["image"] for d in docs for _, _, s in pod_specs(d) if d["kind"] == "Deployment"
                for c in s["containers"] if c["name"] == EXPORTER] if ok else []
        f.check(imgs == [want], f"image: {json.dumps(data)} -> {want} ({imgs or err.strip()[:200]})")
        if ok:
            verrs = [e.message for e in validator.iter_errors(values)]
            f.check(not verrs, f"image: {json.dumps(data)} validates against values.schema.json {verrs[:2]}")
    # the helm test pod follows global.imageRegistry too
    ok, docs, err, _, _ = r.render([base, r.values_file({"global": {"imageRegistry": "mirror.example.org"}})])
    tests = [c["image"] for d in docs if d["kind"] == "Pod" for c in d["spec"]["containers"]]
    f.check(ok and tests and all(i.startswith("mirror.example.org/") for i in tests),
            f"image: the helm test pod follows global.imageRegistry ({tests})")


def render_one(f, r, what, data, base=None):
    base = base or CHART / "ci" / "standalone-values.yaml"
    ok, docs, err, values, notes = r.render([base, r.values_file(data)])
    f.check(ok, f"{what}: renders" + ("" if ok else f": {err.strip()[-400:]}"))
    return ok, docs, values, notes


def check_ports(f, r, validator):
    """service.port sets the container port, the Service port, listen and the helm test URL;
    the deprecated `port` still does (with a notice in NOTES.txt) and wins."""
    for what, data, port, deprecated in (
            ("default port", {}, 9687, False),
            ("service.port 9100", {"service": {"port": 9100}}, 9100, False),
            ("deprecated port 9200", {"port": 9200}, 9200, True),
            ("deprecated port 9200 beside service.port 9100", {"port": 9200, "service": {"port": 9100}}, 9200, True)):
        ok, docs, values, notes = render_one(f, r, f"ports: {what}", data)
        if not ok:
            continue
        dep = [d for d in docs if d["kind"] == "Deployment"][0]
        c = [c for c in dep["spec"]["template"]["spec"]["containers"] if c["name"] == EXPORTER][0]
        svc = [d for d in docs if d["kind"] == "Service"][0]
        cm = [d for d in docs if d["kind"] == "ConfigMap" and "config.yaml" in d["data"]][0]
        test = " ".join(a for d in docs if d["kind"] == "Pod" for x in d["spec"]["containers"] for a in x["args"])
        got = (c["ports"], svc["spec"]["ports"], yaml.safe_load(cm["data"]["config.yaml"])["listen"])
        want = ([{"name": PORT_NAME, "containerPort": port, "protocol": "TCP"}],
                [{"name": PORT_NAME, "port": port, "targetPort": PORT_NAME, "protocol": "TCP"}], f":{port}")
        f.check(got == want, f"ports: {what}: container, Service and listen on {PORT_NAME} {port} ({got})")
        f.check(f".svc:{port}/" in test, f"ports: {what}: the helm test fetches port {port}")
        f.check(("DEPRECATED: the top-level value `port`" in notes) == deprecated,
                f"ports: {what}: NOTES.txt {'says' if deprecated else 'does not say'} `port` is deprecated")
        verrs = [e.message for e in validator.iter_errors(values)]
        f.check(not verrs, f"ports: {what}: values validate {verrs[:2]}")
    ok, docs, values, notes = render_one(f, r, "deprecated env", {"env": [{"name": "HTTPS_PROXY", "value": "http://p:3128"}]})
    if ok:
        envs = [e["name"] for d in docs if d["kind"] == "Deployment"
                for c in d["spec"]["template"]["spec"]["containers"] for e in c.get("env", [])]
        f.check("HTTPS_PROXY" in envs and "DEPRECATED: the value `env`" in notes,
                "deprecated env: still passed, NOTES.txt says it is deprecated")


def check_sharding_values(f, r, schemas, validator, exporter):
    """replicas N in mode sharded -> N everywhere; N = 1 still a StatefulSet with count 1."""
    for n in (1, 2, 5):
        ctx = f"sharded replicas {n}"
        ok, docs, values, notes = render_one(f, r, ctx, {"mode": "sharded", "replicas": n, "podMonitor": {"enabled": True}})
        if not ok:
            continue
        infos = []
        by_kind = check_objects(f, docs, ctx, schemas, values, exporters_out=infos)
        check_sharded(f, by_kind, values, ctx)
        check_monitors(f, by_kind, values, ctx)
        f.check(f"--shard.count={n})" in notes.replace("\n", " ") and f"-{n - 1}." in notes,
                f"{ctx}: NOTES.txt names the {n} shards")
        verrs = [e.message for e in validator.iter_errors(values)]
        f.check(not verrs, f"{ctx}: values validate {verrs[:2]}")
        if n == 2:
            check_with_binary(f, exporter, by_kind, values, ctx, infos)


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=2):
    import urllib.request
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.read().decode()


def fnv1a64(name):
    """The shard hash (shared interface): FNV-1a 64-bit of the target name's UTF-8 bytes."""
    h = 0xcbf29ce484222325
    for b in name.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def check_sharded_pods(f, r, exporter, force=False):
    """The pods of mode sharded, run: the StatefulSet's container as rendered (args, POD_NAME
    <fullname>-I as the StatefulSet names its pods, the mounted config), three replicas against
    the bundled upstream on 127.0.0.1. Each must expose llm_stream_target_info for a disjoint
    set of the 12 targets, the union all of them, and the shard gauges its own index and 3."""
    if exporter is None or not (exporter.shards or force):
        print("note: sharded pods not run (the exporter has no --shard.count yet)")
        return
    import signal
    work = exporter.tmp / "sharded-run"
    work.mkdir()
    up = subprocess.Popen([sys.executable, str(REPO / "tests" / "upstream" / "upstream.py"), "--host", "127.0.0.1",
                           "--port", "0", "--port-file", str(work / "upstream.port"), "--quiet"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs = []
    try:
        deadline = time.time() + 10
        while not (work / "upstream.port").exists() and time.time() < deadline:
            time.sleep(0.05)
        base = f"http://127.0.0.1:{(work / 'upstream.port').read_text().strip()}/s/ttft=20,gap=5,chunks=5/v1"
        names = [f"t{i:02d}-{w}" for i, w in enumerate(["alpha", "beta", "gamma", "delta"] * 3)]
        data = {"mode": "sharded", "replicas": 3, "helmTest": {"enabled": False},
                "config": {"defaults": {"interval": "1h", "warmup": 0},
                           "targets": [{"name": n, "url": base, "api": "openai-chat", "model": "m", "prompts": ["short"]}
                                       for n in names]}}
        ok, docs, values, _ = render_one(f, r, "sharded pods", data)
        if not ok:
            return
        by_kind = {}
        for d in docs:
            by_kind.setdefault(d["kind"], []).append(d)
        sts = by_kind["StatefulSet"][0]
        spec = sts["spec"]["template"]["spec"]
        c = [c for c in spec["containers"] if c["name"] == EXPORTER][0]
        ports = []
        for i in range(sts["spec"]["replicas"]):
            root, mounts, _ = exporter.materialise(by_kind, values, c, spec)
            port = free_port()
            cfg = root / "etc/llm-stream-exporter/config.yaml"
            cfg.write_text(re.sub(r"(?m)^listen:.*$", f"listen: 127.0.0.1:{port}", cfg.read_text()))
            args = [exporter.relocate(a, mounts, root) for a in c["args"]]
            if not exporter.shards:  # force: show the check fails on replicas that each probe everything
                args = [a for a in args if not a.startswith("--shard.")]
            # the downward API's POD_NAME: the StatefulSet's pod name <name>-<ordinal>
            env = dict(os.environ, POD_NAME=f"{sts['metadata']['name']}-{i}", NODE_NAME="node-a", POD_NAMESPACE="monitoring")
            procs.append(subprocess.Popen([exporter.binary] + args, cwd=root, env=env,
                                          stdout=subprocess.DEVNULL, stderr=open(root / "stderr.log", "w")))
            ports.append(port)
        seen = []
        for i, port in enumerate(ports):
            text, deadline = "", time.time() + 20
            while time.time() < deadline:
                try:
                    http_get(f"http://127.0.0.1:{port}/-/ready")
                    text = http_get(f"http://127.0.0.1:{port}/metrics")
                    break
                except Exception:
                    time.sleep(0.1)
            mine = set(re.findall(r'^llm_stream_target_info\{[^}]*target="([^"]+)"', text, re.M))
            want = {n for n in names if fnv1a64(n) % 3 == i}
            f.check(mine == want, f"sharded pods: replica {i} exposes exactly the targets whose FNV-1a 64 hash mod 3 "
                    f"is {i} ({sorted(mine)[:6]} vs {sorted(want)[:6]})")
            idx = re.findall(r"^llm_stream_shard_index(?:\{\})? (\S+)$", text, re.M)
            cnt = re.findall(r"^llm_stream_shards(?:\{\})? (\S+)$", text, re.M)
            f.check([float(x) for x in idx] == [i] and [float(x) for x in cnt] == [3], f"sharded pods: replica {i} shows llm_stream_shard_index {i}, "
                    f"llm_stream_shards 3 ({idx}, {cnt})")
            seen.append(mine)
        overlap = [n for n in names if sum(n in s for s in seen) > 1]
        f.check(not overlap, f"sharded pods: no target on two replicas ({overlap[:4]})")
        f.check(set().union(*seen) == set(names), f"sharded pods: the replicas together expose all {len(names)} targets "
                f"({sorted(set(names) - set().union(*seen))[:4]} missing)")
    finally:
        for pr in procs + [up]:
            pr.send_signal(signal.SIGTERM)
        for pr in procs + [up]:
            try:
                pr.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pr.kill()


def check_doc_values(f, r, validator):
    """Every YAML block of the chart README and docs/deploy.md made of chart values (its
    top-level keys are values.schema.json properties) renders over ci/standalone-values.yaml
    and validates: the examples users copy work as written."""
    props = set(json.loads((CHART / "values.schema.json").read_text())["properties"])
    for doc in (CHART / "README.md", REPO / "docs" / "deploy.md"):
        for i, m in enumerate(re.finditer(r"```yaml\n(.*?)```", doc.read_text(), re.S)):
            if "{{" in m.group(1):
                continue
            data = yaml.safe_load(m.group(1))
            if not isinstance(data, dict) or not set(data) <= props:
                continue
            what = f"{doc.name} values block {i + 1} ({', '.join(sorted(data))})"
            ok, docs, values, _ = render_one(f, r, what, data)
            if ok:
                verrs = [e.message for e in validator.iter_errors(values)]
                f.check(not verrs, f"{what}: values validate {verrs[:2]}")


CHART_HOME = "https://github.com/llm-stream-exporter/llm-stream-exporter"


def check_chart_metadata(f):
    """Chart.yaml as prometheus-community charts have it; links that survive packaging."""
    meta = yaml.safe_load((CHART / "Chart.yaml").read_text())
    f.check(meta.get("home") == CHART_HOME, f"Chart.yaml: home {CHART_HOME} ({meta.get('home')})")
    f.check(CHART_HOME in (meta.get("sources") or []), "Chart.yaml: sources name the repository")
    f.check(bool(meta.get("maintainers")) and all(m.get("name") for m in meta["maintainers"]), "Chart.yaml: maintainers")
    icon = str(meta.get("icon", ""))
    f.check(icon.startswith("https://"), f"Chart.yaml: icon is a URL ({icon})")
    raw = "https://raw.githubusercontent.com/llm-stream-exporter/llm-stream-exporter/main/"
    if icon.startswith(raw):
        f.check((REPO / icon[len(raw):]).is_file(), f"Chart.yaml: the icon {icon[len(raw):]} is in the repository")
    f.check({"prometheus", "exporter", "llm"} <= set(meta.get("keywords") or []), "Chart.yaml: keywords")
    f.check((meta.get("annotations") or {}).get("artifacthub.io/license") == "Apache-2.0",
            "Chart.yaml: annotation artifacthub.io/license Apache-2.0")
    f.check(re.fullmatch(r"0\.([2-9]|[1-9][0-9]+)\.[0-9]+", str(meta.get("version"))) is not None,
            f"Chart.yaml: version bumped past 0.1.x ({meta.get('version')})")
    # README and NOTES.txt links are absolute: a packaged chart has no ../../README.md
    readme = (CHART / "README.md").read_text()
    rel = [m for m in re.findall(r"\]\(([^)\s]+)\)", readme) if not re.match(r"https?://|#", m)]
    f.check(not rel, f"chart README: every link is absolute ({rel[:5]})")
    notes = (CHART / "templates" / "NOTES.txt").read_text()
    bare = [m.group(0) for m in re.finditer(r"(?<![\w/.])(docs/[\w.-]+\.md|README\.md)", notes)]
    f.check(not bare, f"NOTES.txt: documents are named by absolute URL ({bare[:5]})")
    f.check("## Parameters" in readme and "| `service.port`" in readme, "chart README: a Parameters table")
    for h in ("## Install", "## Upgrade", "## Uninstall", "## Modes"):
        f.check(h in readme, f"chart README: section {h!r}")
    # default resources cover the measured footprint (121-151 MiB RSS at 1,000 TLS targets, scraped)
    res = yaml.safe_load((CHART / "values.yaml").read_text())["resources"]
    mib = lambda q: int(re.fullmatch(r"([0-9]+)Mi", q).group(1))
    f.check(mib(res["limits"]["memory"]) >= 151 and mib(res["requests"]["memory"]) <= mib(res["limits"]["memory"]),
            f"values.yaml: memory limit {res['limits']['memory']} >= 151Mi measured at 1,000 TLS targets")


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
    # Every shipped alert can be tuned by prometheusRule.alerts: the schema's
    # names are exactly the alerts of config/prometheus/*.yml.
    schema = json.loads((CHART / "values.schema.json").read_text())
    tunable = set(schema["properties"]["prometheusRule"]["properties"]["alerts"]["propertyNames"]["enum"])
    shipped = {r["alert"] for g in rules_from_config() for r in g["rules"] if "alert" in r}
    f.check(tunable == shipped, "values.schema.json prometheusRule.alerts names = the shipped alerts "
            f"(missing {sorted(shipped - tunable)}, unknown {sorted(tunable - shipped)})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--renderer", help="prebuilt helmrender binary (default: build it)")
    ap.add_argument("--keep", help="write the rendered manifests of each ci file into this folder")
    ap.add_argument("-v", "--verbose", action="store_true", help="print passing checks too")
    ap.add_argument("--exporter", help="llm_stream_exporter binary (default: $LSE_EXPORTER, "
                    "$BUILD_DIR/exporter/llm_stream_exporter, build/exporter/llm_stream_exporter)")
    ap.add_argument("--no-binary", action="store_true", help="skip the checks that run the exporter binary")
    ap.add_argument("--force-shard-run", action="store_true",
                    help="run the sharded pods even with a binary without --shard.* (they must then fail)")
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
        exporter = None
        if not args.no_binary:
            binary = find_exporter(args.exporter)
            if not f.check(binary is not None, "llm_stream_exporter binary found ($LSE_EXPORTER, $BUILD_DIR or "
                           "build/; --no-binary skips the checks that run it)"):
                binary = None
            exporter = Exporter(binary, tmp) if binary else None
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
            infos = []
            by_kind = check_objects(f, docs, ctx, schemas, values, exporters_out=infos)
            kinds = set(by_kind)
            check_monitors(f, by_kind, values, ctx)
            check_with_binary(f, exporter, by_kind, values, ctx, infos)
            if values["mode"] == "standalone":
                f.check({"Deployment", "Service"} <= kinds and not {"DaemonSet", "StatefulSet"} & kinds,
                        f"{ctx}: Deployment + Service")
                f.check([d["spec"]["replicas"] for d in by_kind.get("Deployment", [])] == [1],
                        f"{ctx}: one replica (more would repeat every probe)")
            elif values["mode"] == "daemonset":
                f.check({"DaemonSet", "Service"} <= kinds and not {"Deployment", "StatefulSet"} & kinds,
                        f"{ctx}: DaemonSet + Service")
            elif values["mode"] == "sharded":
                check_sharded(f, by_kind, values, ctx)
            else:
                f.check(not ({"Deployment", "DaemonSet", "StatefulSet", "Service"} & kinds),
                        f"{ctx}: no workload in sidecar mode")
            check_rules(f, by_kind, values, ctx)
            check_dashboards(f, by_kind, values, ctx)
            f.check(f"mode: {values['mode']}" in notes and len(notes.strip()) > 40, f"{ctx}: NOTES.txt renders")
        f.check(modes == {"standalone", "daemonset", "sidecar", "sharded"}, f"ci/ covers every mode ({sorted(modes)})")
        # value combinations no ci file has, checked the same way (over ci/standalone-values.yaml)
        for name, data in SCENARIOS:
            ctx = f"scenario {name}"
            ok, docs, err, values, _ = r.render([CHART / "ci" / "standalone-values.yaml", r.values_file(data)])
            if not f.check(ok, f"{ctx}: renders" + ("" if ok else f": {err}")):
                continue
            verrs = [e.message for e in vvalidator.iter_errors(values)]
            f.check(not verrs, f"{ctx}: values validate against values.schema.json {verrs[:3]}")
            infos = []
            by_kind = check_objects(f, docs, ctx, schemas, values, exporters_out=infos)
            check_monitors(f, by_kind, values, ctx)
            check_with_binary(f, exporter, by_kind, values, ctx, infos)
            tests = [a for d in by_kind.get("Pod", []) for c in d["spec"]["containers"] for a in c.get("args", [])]
            web = web_expectations(values)
            url = ("https://" if web["tls"] else "http://") + f"lse-llm-stream-exporter.monitoring.svc:9687{web['prefix']}/-/ready"
            f.check(any(url in a for a in tests), f"{ctx}: the helm test fetches {url}")

        check_checksum(f, r, schemas)
        check_ports(f, r, vvalidator)
        check_sharding_values(f, r, schemas, vvalidator, exporter)
        check_sharded_pods(f, r, exporter, force=args.force_shard_run)
        check_chart_metadata(f)
        check_doc_values(f, r, vvalidator)
        check_negative(f, r, vvalidator)
        check_sidecar_parent(f, r, schemas, exporter)
        check_new_values(f, r, vvalidator)
        check_docs_snippet(f, r, schemas)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"validate_chart: {f.passed} passed, {len(f.items)} failed")
    return 1 if f.items else 0


if __name__ == "__main__":
    sys.exit(main())
