#!/usr/bin/env python3
"""Shows that every deploy check can fail: each test breaks a copy of one input
(chart template, values, rule file, dashboard, Dockerfile) in one way and
asserts that the check reports exactly that problem.

    python3 tests/deploy/test_mutations.py [-v]
"""
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
CHART = REPO / "helm" / "llm-stream-exporter"
sys.path.insert(0, str(HERE))

import check_dashboards  # noqa: E402
import check_docs  # noqa: E402
import deploylib as lib  # noqa: E402
import fake_exporter  # noqa: E402
import validate_chart  # noqa: E402

PY = sys.executable


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return r.returncode, r.stdout + r.stderr


class ChartMutations(unittest.TestCase):
    """validate_chart.py on broken copies of the chart."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = pathlib.Path(tempfile.mkdtemp(prefix="lse-mut-chart-"))
        cls.renderer = validate_chart.build_renderer(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def mutate(self, rel, old, new, expect):
        chart = self.tmp / f"chart-{self.id().split('.')[-1]}"
        shutil.rmtree(chart, ignore_errors=True)
        shutil.copytree(CHART, chart)
        p = chart / rel
        text = p.read_text()
        self.assertIn(old, text, f"mutation anchor not found in {rel}")
        p.write_text(text.replace(old, new, 1))
        code, out = run([PY, str(HERE / "validate_chart.py"), "--renderer", self.renderer, "--chart", str(chart)])
        self.assertNotEqual(code, 0, f"validate_chart passed a broken chart ({rel}: {old!r} -> {new!r})")
        self.assertRegex(out, expect)

    def test_writable_root_filesystem(self):
        self.mutate("values.yaml", "  readOnlyRootFilesystem: true", "  readOnlyRootFilesystem: false",
                    r"FAIL .*readOnlyRootFilesystem")

    def test_root_user(self):
        self.mutate("values.yaml", "  runAsUser: 65532\n  runAsGroup: 65532\n  readOnly",
                    "  runAsUser: 0\n  runAsGroup: 65532\n  readOnly", r"FAIL .*non-root runAsUser")

    def test_capabilities_kept(self):
        self.mutate("values.yaml", "    drop: [ALL]", "    drop: [NET_RAW]", r"FAIL .*drop ALL")

    def test_readiness_path(self):
        self.mutate("templates/_helpers.tpl", "path: /-/ready", "path: /ready",
                    r"FAIL .*readinessProbe GET /-/ready")

    def test_liveness_path(self):
        self.mutate("templates/_helpers.tpl", "path: /-/healthy", "path: /healthz",
                    r"FAIL .*livenessProbe GET /-/healthy")

    def test_no_checksum_annotation(self):
        self.mutate("templates/_helpers.tpl",
                    "    checksum/config: {{ include \"llm-stream-exporter.configChecksum\" . }}\n", "",
                    r"FAIL .*config checksum annotation")

    def test_checksum_ignores_config(self):
        self.mutate("templates/_helpers.tpl",
                    '{{- join "\\n---\\n" $parts | sha256sum -}}', '{{- "constant" | sha256sum -}}',
                    r"FAIL checksum: changes when config")

    def test_secret_as_env(self):
        self.mutate("templates/_helpers.tpl", "    - name: POD_NAME\n",
                    "    - name: OPENAI_API_KEY\n      valueFrom:\n        secretKeyRef: {name: k, key: openai}\n"
                    "    - name: POD_NAME\n", r"FAIL .*env OPENAI_API_KEY from a Secret only as the values ask")

    def test_secret_mount_writable(self):
        self.mutate("templates/_helpers.tpl",
                    "      mountPath: {{ required \"secrets[].mountPath is required\" $s.mountPath }}\n      readOnly: true",
                    "      mountPath: {{ required \"secrets[].mountPath is required\" $s.mountPath }}",
                    r"FAIL .*secret volume .* mounted read-only")

    def test_service_account_token(self):
        self.mutate("templates/_helpers.tpl", "  automountServiceAccountToken: false\n  enableServiceLinks",
                    "  enableServiceLinks", r"FAIL .*automountServiceAccountToken false")

    def test_schema_invalid_field(self):
        self.mutate("templates/deployment.yaml", "  replicas: {{ .Values.replicas }}",
                    "  replica: {{ .Values.replicas }}", r"FAIL .*Deployment/.*validates against its schema")

    def test_crd_unknown_top_level_key(self):
        self.mutate("templates/servicemonitor.yaml", "kind: ServiceMonitor\n",
                    "kind: ServiceMonitor\nspecs: {}\n", r"(?s)FAIL [^\n]*ServiceMonitor[^\n]*\n\s*unknown top-level keys \['specs'\]")

    def test_crd_bad_metadata(self):
        self.mutate("templates/prometheusrule.yaml", "  namespace: {{ .Values.prometheusRule.namespace",
                    "  namespaces: {{ .Values.prometheusRule.namespace", r"(?s)FAIL [^\n]*PrometheusRule[^\n]*\n\s*metadata/: Additional properties")

    def test_rules_copy_drifts(self):
        self.mutate("files/prometheus/alerting_rules.yml", "> 0.25", "> 0.3",
                    r"FAIL .*PrometheusRule groups = config/prometheus")

    def test_dashboard_copy_drifts(self):
        self.mutate("files/grafana/llm-stream-overview.json", '"Stalls per minute"', '"Stalls / min"',
                    r"FAIL .*llm-stream-overview.json (is byte-identical|equals)")

    def test_dashboard_label(self):
        self.mutate("values.yaml", '    grafana_dashboard: "1"', '    grafana_dashboards: "1"',
                    r"FAIL .*grafana_dashboard \"1\"")

    def test_replicas_guard_removed(self):
        # standalone with replicas: 2 would probe every target twice: the refusal must stay
        self.mutate("templates/_helpers.tpl", "{{- if and (gt $replicas 1) (ne $mode \"sharded\") -}}", "{{- if false -}}",
                    r"FAIL refused: replicas 2 in standalone \(every probe twice\): rendering fails with")

    def test_sharded_without_shard_count(self):
        self.mutate("templates/_helpers.tpl", "    - --shard.count={{ include \"llm-stream-exporter.shardCount\" . }}\n", "",
                    r"FAIL ci/sharded-values.yaml StatefulSet/\S+: args --shard.index=auto --shard.count=3 once each")

    def test_sharded_service_not_headless(self):
        self.mutate("templates/service.yaml", "  clusterIP: None\n", "",
                    r"FAIL ci/sharded-values.yaml StatefulSet/\S+: its Service is headless")

    def test_sharded_replicas_ignored(self):
        self.mutate("templates/statefulset.yaml", "  replicas: {{ include \"llm-stream-exporter.shardCount\" . }}", "  replicas: 1",
                    r"FAIL ci/sharded-values.yaml StatefulSet/\S+: replicas 3 \(1\)")

    def test_old_port_name(self):
        self.mutate("templates/service.yaml", "    - name: http-metrics", "    - name: lse-metrics",
                    r"FAIL ci/standalone-values.yaml Service: port http-metrics 9687 -> http-metrics")

    def test_relative_link_in_notes(self):
        self.mutate("templates/NOTES.txt", "(runbooks: {{ $docs }}/runbook.md)", "(runbooks: docs/runbook.md)",
                    r"FAIL NOTES.txt: documents are named by absolute URL \(\['docs/runbook.md'\]\)")

    def test_env_key_unchecked(self):
        # a variable the config reads that nothing sets: the pod would start without its key
        self.mutate("templates/_helpers.tpl", "{{- if not .Values.envFrom -}}", "{{- if false -}}",
                    r"FAIL refused: bearer_token_env nothing sets: rendering fails with")

    def test_readme_example_broken(self):
        # the env example of the chart README names a variable its extraEnv no longer sets
        self.mutate("README.md", "extraEnv:\n  - name: OPENAI_API_KEY\n", "extraEnv:\n  - name: OPENAI_KEY\n",
                    r"FAIL README.md values block 2 \(config, extraEnv\): renders: .*OPENAI_API_KEY but nothing sets it")

    def test_credential_guard_removed(self):
        self.mutate("templates/_helpers.tpl", '{{- if or (hasKey . "bearer_token") (hasKey . "api_key") -}}', "{{- if false -}}",
                    r"FAIL negative plain-token.yaml: rendering fails")


class ChartBinaryMutations(unittest.TestCase):
    """validate_chart.py runs the real exporter on what the chart renders."""
    setUpClass = ChartMutations.__dict__["setUpClass"]
    tearDownClass = ChartMutations.__dict__["tearDownClass"]
    mutate = ChartMutations.mutate

    def setUp(self):
        if not validate_chart.find_exporter(wait=60):
            self.skipTest("no llm_stream_exporter binary (build it, or set LSE_EXPORTER)")

    def test_unknown_extra_arg(self):
        self.mutate("ci/standalone-full-values.yaml", 'extraArgs: ["--web.enable-lifecycle"]',
                    'extraArgs: ["--web.max-requests=40"]',
                    r"FAIL ci/standalone-full-values.yaml: the container args pass .*\(exit 2\):\n.*--web.max-requests=40")

    def test_probe_scheme_ignores_tls(self):
        self.mutate("templates/_helpers.tpl", 'ternary "HTTPS" "HTTP"', 'ternary "HTTP" "HTTP"',
                    r"FAIL scenario tls-only-route-prefix .*livenessProbe scheme HTTPS")

    def test_scrape_timeout_guard_removed(self):
        self.mutate("templates/_helpers.tpl", "{{- if and $m.interval $m.scrapeTimeout -}}", "{{- if false -}}",
                    r"FAIL refused: serviceMonitor scrapeTimeout > interval")

    def test_config_check_config_refuses(self):
        self.mutate("ci/standalone-values.yaml", "      api: openai-chat\n", "      api: openai-chatt\n",
                    r"FAIL ci/standalone-values.yaml: llm_stream_exporter check-config --no-env-check passes "
                    r"on the rendered config.yaml \(exit 2\)")


class ChartReadmeMutations(unittest.TestCase):
    """check_chart_readme.py on copies of the chart whose values.yaml changed."""

    @classmethod
    def setUpClass(cls):
        if not shutil.which("npm"):
            raise unittest.SkipTest("npm not installed")
        # The path is the script's stdout; npm reports its install on stderr.
        r = subprocess.run(["bash", str(HERE / "install_readmegen.sh")], capture_output=True, text=True)
        if r.returncode != 0:
            raise unittest.SkipTest("the README generator could not be installed: " +
                                    (r.stdout + r.stderr)[-300:])
        cls.gen = r.stdout.strip().splitlines()[-1]

    def check(self, old=None, new=None):
        with tempfile.TemporaryDirectory(prefix="lse-mut-readme-") as d:
            chart = pathlib.Path(d) / "chart"
            shutil.copytree(CHART, chart)
            if old is not None:
                p = chart / "values.yaml"
                text = p.read_text()
                self.assertIn(old, text)
                p.write_text(text.replace(old, new, 1))
            return run([PY, str(HERE / "check_chart_readme.py"), "--chart", str(chart), "--generator", self.gen])

    def test_original_is_clean(self):
        code, out = self.check()
        self.assertEqual(code, 0, out)

    def test_stale_default(self):
        code, out = self.check("  type: ClusterIP\n  port: 9687\n", "  type: ClusterIP\n  port: 9688\n")
        self.assertNotEqual(code, 0, out)
        self.assertIn("FAIL chart README: the values table is stale", out)
        self.assertRegex(out, r"\+\| `service.port` .*`9688`")

    def test_stale_description(self):
        code, out = self.check("## @param envFrom Environment from whole Secrets",
                               "## @param envFrom Variables from whole Secrets")
        self.assertNotEqual(code, 0, out)
        self.assertIn("FAIL chart README: the values table is stale", out)

    def test_value_without_metadata(self):
        code, out = self.check("envFrom: []\n", "envFrom: []\nextraInitContainers: []\n")
        self.assertNotEqual(code, 0, out)
        self.assertIn("Missing metadata for key: extraInitContainers", out)


class DashboardMutations(unittest.TestCase):
    """check_dashboards.check_dashboard on broken copies of the overview."""

    def errors(self, mutate):
        path, dash = [(p, d) for p, d in lib.load_dashboards() if p.name == "llm-stream-overview.json"][0]
        dash = json.loads(json.dumps(dash))
        mutate(dash)
        errors = []
        allowed = lib.exposed_series_names() | lib.recorded_names()
        check_dashboards.check_dashboard(path, dash, allowed, errors)
        check_dashboards.check_targets_table(path, dash, errors)
        return "\n".join(errors)

    def panel(self, dash, title):
        return [p for p in lib.all_panels(dash) if p.get("title") == title][0]

    def test_original_is_clean(self):
        self.assertEqual(self.errors(lambda d: None), "")

    # The "are streams stalling, where" row, exemplars, links to the exporter and runbook.
    def errors_all(self, mutate):
        """errors() plus the overview-only and cross-dashboard checks."""
        path, dash = [(p, d) for p, d in lib.load_dashboards() if p.name == "llm-stream-overview.json"][0]
        dash = json.loads(json.dumps(dash))
        mutate(dash)
        errors = []
        check_dashboards.check_stalling_row(path, dash, errors)
        check_dashboards.check_exemplars(path, dash, errors)
        check_dashboards.check_runbook_links([(path, dash)] + [
            (p, d) for p, d in lib.load_dashboards() if p.name != path.name], errors)
        return "\n".join(errors)

    def test_new_checks_clean(self):
        self.assertEqual(self.errors_all(lambda d: None), "")

    def test_panel_quantile_classic_only(self):
        def m(d):
            for t in self.panel(d, "Time to first token p50 / p95")["targets"]:
                t["expr"] = re.sub(r"^\(histogram_quantile\(.*?\)\)\) or ", "(", t["expr"])
        self.assertIn("'Time to first token p50 / p95' ref A: histogram_quantile(0.50, sum by (target, le) "
                      "(rate(llm_stream_time_to_first_token_seconds_bucket{", self.errors(m))

    def test_panel_count_without_native(self):
        def m(d):
            for p in lib.all_panels(d):
                for t in p.get("targets", []):
                    t["expr"] = t["expr"].replace("histogram_fraction(0, 0.001, sum by (target) (rate(",
                                                  "(sum by (target) (rate(")
        self.assertIn("llm_stream_inter_chunk_gap_seconds_count without histogram_count", self.errors(m))

    def test_exemplars_off(self):
        def m(d):
            for t in self.panel(d, "Typical worst gap, against its bar")["targets"]:
                t.pop("exemplar", None)
        self.assertIn("'Typical worst gap, against its bar' ref A: exemplars not enabled", self.errors_all(m))

    def test_bar_from_a_constant(self):
        def m(d):
            for p in lib.all_panels(d):
                for t in p.get("targets", []):
                    t["expr"] = t["expr"].replace("llm_stream_alert_stall_share", "vector(0.2)")
        self.assertIn("does not show the stall-share bar from its gauge", self.errors_all(m))

    def test_cell_coloured_by_a_constant(self):
        def m(d):
            o = self.panel(d, "Streams stalling, where (last 15 minutes)")["fieldConfig"]["overrides"][0]
            o["properties"].append({"id": "thresholds", "value": {"mode": "absolute", "steps": []}})
        self.assertIn("colours 'probes that stall' by a constant", self.errors_all(m))

    def test_first_row_not_about_stalls(self):
        self.assertIn("does not answer whether streams stall", self.errors_all(
            lambda d: [p for p in d["panels"] if p.get("type") == "row"][0].update(title="Now")))

    def test_no_exporter_url(self):
        def m(d):
            d["templating"]["list"] = [v for v in d["templating"]["list"] if v["name"] != "exporter_url"]
        self.assertIn("no exporter_url variable", self.errors_all(m))

    def test_alert_without_runbook_link(self):
        def m(d):
            self.panel(d, "Chunks arriving held together")["links"] = []
        self.assertIn("no dashboard panel links the runbook entry of LLMStreamBuffered", self.errors_all(m))

    def test_duplicate_panel_id(self):
        def m(d):
            d["panels"][2]["id"] = d["panels"][1]["id"]
        self.assertIn("panel ids not unique", self.errors(m))

    def test_hard_coded_datasource(self):
        def m(d):
            self.panel(d, "Stalls per minute")["targets"][0]["datasource"] = {"type": "prometheus", "uid": "P1809F7CD0C75ACF3"}
        self.assertIn("hard-coded datasource", self.errors(m))

    def test_panel_off_the_variable(self):
        def m(d):
            self.panel(d, "Stalls per minute")["datasource"] = None
        self.assertIn("not ${datasource}", self.errors(m))

    def test_unknown_metric(self):
        def m(d):
            self.panel(d, "Stalls per minute")["targets"][0]["expr"] = 'sum(rate(llm_stream_stall_count[$__rate_interval]))'
        self.assertIn("'llm_stream_stall_count' is neither in DESIGN", self.errors(m))

    def test_fixed_rate_window(self):
        def m(d):
            t = self.panel(d, "Stalls per minute")["targets"][0]
            t["expr"] = t["expr"].replace("$__rate_interval", "5m")
        self.assertIn("is not $__rate_interval", self.errors(m))

    def test_seconds_without_unit(self):
        def m(d):
            self.panel(d, "Time to first token p50 / p95")["fieldConfig"]["defaults"]["unit"] = "short"
        self.assertIn("shows seconds but unit is not 's'", self.errors(m))

    def test_no_datasource_variable(self):
        def m(d):
            d["templating"]["list"] = [v for v in d["templating"]["list"] if v["name"] != "datasource"]
        self.assertIn("no `datasource` variable", self.errors(m))

    def test_no_targets_table(self):
        def m(d):
            d["panels"] = [p for p in d["panels"] if p.get("title") != "Targets"]
        self.assertIn('no "Targets" panel', self.errors(m))

    def test_targets_table_drops_a_label(self):
        def m(d):
            t = self.panel(d, "Targets")["targets"][0]
            t["expr"] = t["expr"].replace("api, ", "")
        self.assertIn('"Targets" does not keep the label \'api\'', self.errors(m))

    def test_targets_table_not_instant(self):
        def m(d):
            self.panel(d, "Targets")["targets"][0]["instant"] = False
        self.assertIn('"Targets" query A is not an instant table query', self.errors(m))

    def test_targets_table_unknown_metric(self):
        def m(d):
            t = self.panel(d, "Targets")["targets"][0]
            t["expr"] = t["expr"].replace("llm_stream_target_info", "llm_stream_target_infos")
        self.assertIn("'llm_stream_target_infos' is neither in DESIGN", self.errors(m))

    def test_threshold_constant_drifts(self):
        def m(d):
            [v for v in d["templating"]["list"] if v["name"] == "gap_p95_warning"][0]["query"] = "0.3"
        self.assertIn("differs from LLMStreamGapP95High", self.errors(m))

    # Variables, filters, recording-rule fallbacks, descriptions, links (check_dashboards).
    def test_variable_not_chained(self):
        def m(d):
            v = [v for v in d["templating"]["list"] if v["name"] == "instance"][0]
            v["query"]["query"] = v["definition"] = "label_values(llm_stream_exporter_build_info, instance)"
        self.assertIn("variable instance: not chained on $job", self.errors(m))

    def test_all_value_not_matching_absent_label(self):
        def m(d):
            [v for v in d["templating"]["list"] if v["name"] == "cluster"][0]["allValue"] = ".+"
        self.assertIn("variable cluster: allValue '.+' does not match an absent label", self.errors(m))

    def test_query_without_instance_filter(self):
        def m(d):
            t = self.panel(d, "Stalls per minute")["targets"][0]
            t["expr"] = t["expr"].replace('instance=~"$instance", ', "")
        self.assertIn("llm_stream_stalls_total does not filter on instance", self.errors(m))

    def test_recording_rule_without_fallback(self):
        def m(d):
            t = self.panel(d, "Inter-chunk gap p95 vs alert threshold")["targets"][0]
            t["expr"] = t["expr"].split(" or on ")[0]
        self.assertIn("p95_rate10m has no raw fallback", self.errors(m))

    def test_fallback_differs_from_rule(self):
        def m(d):
            t = self.panel(d, "Inter-chunk gap p95 vs alert threshold")["targets"][0]
            t["expr"] = t["expr"].replace("[10m]", "[5m]")
        self.assertIn("the raw fallback of target:llm_stream_inter_chunk_gap_seconds:p95_rate10m differs", self.errors(m))

    def test_description_missing_or_internal(self):
        self.assertIn("'Stalls per minute': no description",
                      self.errors(lambda d: self.panel(d, "Stalls per minute").update(description="")))
        self.assertIn("internal reference 'DESIGN'", self.errors(
            lambda d: self.panel(d, "Stalls per minute").update(description="See DESIGN for the meaning of stalls here.")))

    def test_no_value_hint_missing(self):
        def m(d):
            del self.panel(d, "Stalls per minute")["fieldConfig"]["defaults"]["noValue"]
        self.assertIn("'Stalls per minute': no \"no data\" hint", self.errors(m))

    def test_drill_link_drops_instance(self):
        def m(d):
            for link in self.panel(d, "Stalls per minute")["fieldConfig"]["defaults"]["links"]:
                link["url"] = link["url"].replace("&${instance:queryparam}", "")
        self.assertRegex(self.errors(m), r"'Stalls per minute' link 0: link .* does not carry instance")

    def test_per_target_panel_without_drill_link(self):
        def m(d):
            del self.panel(d, "Stalls per minute")["fieldConfig"]["defaults"]["links"]
        self.assertIn("'Stalls per minute': shows targets but has no data link", self.errors(m))

    def test_dashboard_link_without_variables(self):
        def m(d):
            d["links"][0]["includeVars"] = False
        self.assertIn("does not keep the variables and time range", self.errors(m))

    def test_no_exporter_status(self):
        def m(d):
            d["panels"] = [p for p in d["panels"] if p.get("title") != "Exporter scrape status"]
        self.assertIn("no stat panel at the top showing the exporters' scrape state", self.errors(m))


class MetricListMutations(unittest.TestCase):
    """deploylib's metric list against docs/DESIGN.md §3 and fake_exporter.py."""

    def design_without(self, row_start):
        d = pathlib.Path(tempfile.mkdtemp(prefix="lse-mut-design-"))
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        text = lib.PROJECT_DESIGN.read_text()
        lines = [line for line in text.splitlines(True) if not line.startswith(row_start)]
        self.assertLess(len(lines), len(text.splitlines(True)), f"no row starting {row_start!r}")
        (d / "DESIGN.md").write_text("".join(lines))
        return str(d / "DESIGN.md")

    def test_original_is_clean(self):
        self.assertEqual(check_dashboards.cross_check_design(str(lib.PROJECT_DESIGN), "/nonexistent"), [])

    def test_design_lacks_target_info(self):
        errors = check_dashboards.cross_check_design(self.design_without("| `llm_stream_target_info"),
                                                     "/nonexistent")
        self.assertIn("lacks metrics deploylib lists: ['llm_stream_target_info']", "\n".join(errors))

    def test_design_names_an_unknown_metric(self):
        saved = set(lib.DESIGN_METRICS)
        lib.DESIGN_METRICS.discard("llm_stream_target_info")
        try:
            errors = check_dashboards.cross_check_design(str(lib.PROJECT_DESIGN), "/nonexistent")
        finally:
            lib.DESIGN_METRICS.clear()
            lib.DESIGN_METRICS.update(saved)
        self.assertIn("names metrics unknown to deploylib: ['llm_stream_target_info']", "\n".join(errors))

    def test_fake_exporter_exposes_every_metric(self):
        fake = fake_exporter.Fake(probe_interval=3600)
        try:
            text = fake.exposition()
            histograms = {name for s in fake.series for name, _, _ in s.histograms()}
        finally:
            fake.stop.set()
        names = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line}
        # the classic series in the text exposition, the native ones (a histogram
        # under its own name) in the protobuf one
        self.assertEqual(lib.exposed_series_names() - names - histograms, set())
        self.assertEqual(histograms, lib.HISTOGRAMS)
        self.assertRegex(text, r'llm_stream_target_info\{target="[^"]+",api="[a-z-]+",model="[^"]+",host="[^"]+"\} 1')


class DocsMutations(unittest.TestCase):
    """check_docs on broken copies of README.md, docs/dialects.md and docs/DESIGN.md."""

    def setUp(self):
        self.binary = check_docs.exporter_binary()
        if not self.binary:
            self.skipTest("no llm_stream_exporter binary (build it, or set LSE_EXPORTER)")
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="lse-mut-docs-"))
        self.readme = self.tmp / "README.md"
        self.dialects = self.tmp / "dialects.md"
        self.design = self.tmp / "DESIGN.md"
        shutil.copy(REPO / "README.md", self.readme)
        shutil.copy(REPO / "docs" / "dialects.md", self.dialects)
        shutil.copy(lib.PROJECT_DESIGN, self.design)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def edit(self, path, old, new):
        text = path.read_text()
        self.assertIn(old, text)
        path.write_text(text.replace(old, new, 1))

    def errors(self):
        errors = []
        check_docs.check_dialects(str(self.dialects), str(self.design), self.binary, errors)
        return "\n".join(errors)

    def readme_errors(self):
        errors, counts = [], {"configs": 0, "fragments": 0}
        check_docs.check_doc_configs(str(self.readme), self.binary, errors, counts=counts)
        return "\n".join(errors), counts

    def test_original_is_clean(self):
        self.assertEqual(self.errors(), "")
        errors, counts = self.readme_errors()
        self.assertEqual(errors, "")
        self.assertGreaterEqual(counts["configs"], 1)

    def test_dialect_config_invalid(self):
        self.edit(self.dialects, "api: anthropic-messages\n", "api: anthropic-message\n")
        self.assertRegex(self.errors(), r"dialects.md: yaml block \d+ \(line \d+\) fails check-config as a "
                                        r"whole file:\n.*unknown api 'anthropic-message'")

    def test_dialects_lack_a_dialect(self):
        self.edit(self.dialects, "    api: gemini\n", "    api: openai-chat\n")
        self.assertIn("dialects.md: no config block with api: gemini", self.errors())

    def test_readme_config_broken(self):
        self.edit(self.readme, "    model: gpt-4o-mini\n", "    modle: gpt-4o-mini\n")
        errors, _ = self.readme_errors()
        self.assertRegex(errors, r"README.md: yaml block 1 \(line \d+\) fails check-config as a whole "
                                 r"file:\n.*unknown key 'modle'")

    def test_block_is_checked_alone(self):
        # A block that needs a file beside it (a prompt file) fails: the check does not supply it.
        self.edit(self.readme, "targets:\n  - name: openai\n",
                  "prompts: {p: {file: prompts/p.txt}}\ntargets:\n  - name: openai\n")
        errors, _ = self.readme_errors()
        self.assertRegex(errors, r"fails check-config as a whole file:\n.*prompts\.p\.file: cannot read "
                                 r"'[^']*prompts/p\.txt': does not exist")

    def test_environment_variable_named_by_a_block_is_supplied(self):
        # A page the chart does not take as is: a key from the environment gets a value.
        other = self.tmp / "other.md"
        other.write_text(self.readme.read_text().replace("auth: {bearer_token_file: openai.key}",
                                                         "auth: {bearer_token_env: LSE_DOCS_KEY}"))
        errors, counts = [], {"configs": 0, "fragments": 0}
        check_docs.check_doc_configs(str(other), self.binary, errors, counts=counts)
        self.assertEqual(errors, [])
        self.assertGreaterEqual(counts["configs"], 1)

    def test_inline_key_is_refused_where_the_chart_takes_the_block(self):
        # The chart takes keys from files or the environment, never written in its values.
        self.edit(self.dialects, "auth: {bearer_token_file: anthropic.key}",
                  "auth: {bearer_token: sk-ant-inline}")
        self.assertRegex(self.errors(), r"dialects.md: yaml block \d+ \(line \d+\): the Helm chart refuses "
                                        r"it as its config: \(config\.targets\.0\.auth: ")

    def test_unmarked_fragment_fails_and_a_marked_one_is_counted(self):
        block = "\n```yaml\nweb: {max_connections: 8}\n```\n"
        self.readme.write_text(self.readme.read_text() + block)
        errors, counts = self.readme_errors()
        self.assertRegex(errors, r"README.md: yaml block \d+ \(line \d+\) is part of a config, not a whole "
                                 r"one: make it a whole config file, or mark it")
        fragments = counts["fragments"]
        self.readme.write_text(self.readme.read_text().replace(block, "\n<!-- fragment: web -->" + block))
        errors, counts = self.readme_errors()
        self.assertEqual(errors, "")
        self.assertEqual(counts["fragments"], fragments + 1)

    def test_list_of_targets_is_a_fragment(self):
        self.readme.write_text(self.readme.read_text() + "\n```yaml\n- {name: a, url: 'http://h', model: m}\n```\n")
        errors, _ = self.readme_errors()
        self.assertIn("is part of a config, not a whole one", errors)

    def test_design_lacks_a_row(self):
        text = self.design.read_text()
        self.design.write_text("".join(line for line in text.splitlines(True)
                                       if not (line.startswith("| `gemini` |") and "SSE" in line)))
        self.assertIn("DESIGN.md §9: 1 table rows for gemini, want 2", self.errors())

    def test_design_row_unknown_dialect(self):
        self.edit(self.design, "| `ollama-generate` | NDJSON |", "| `ollama-generat` | NDJSON |")
        self.assertIn("DESIGN.md §9: row for ollama-generat, which the exporter does not support", self.errors())

    def test_broken_link(self):
        errors = []
        self.edit(self.readme, "(docs/dialects.md)", "(docs/dialect.md)")
        shutil.copytree(REPO / "docs", self.tmp / "docs")
        check_docs.check_links(self.readme, errors)
        self.assertIn("README.md: link docs/dialect.md points to a missing file", "\n".join(errors))


class RuleMutations(unittest.TestCase):
    """check_rules.py and promtool on broken copies of the rule files."""

    def setUp(self):
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="lse-mut-rules-"))
        self.rules = self.tmp / "rules"
        shutil.copytree(REPO / "config" / "prometheus", self.rules)
        test = (HERE / "rules_test.yaml").read_text().replace("../../config/prometheus/", "rules/")
        (self.tmp / "rules_test.yaml").write_text(test)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
        lib.RULES_DIR = REPO / "config" / "prometheus"

    def edit(self, name, old, new):
        p = self.rules / name
        text = p.read_text()
        self.assertIn(old, text)
        p.write_text(text.replace(old, new, 1))

    def lint(self):
        return run([PY, str(HERE / "check_rules.py"), "--rules-dir", str(self.rules),
                    "--rules-test", str(self.tmp / "rules_test.yaml")])

    def test_original_is_clean(self):
        code, out = self.lint()
        self.assertEqual(code, 0, out)
        if shutil.which("promtool"):
            code, out = run(["promtool", "test", "rules", str(self.tmp / "rules_test.yaml")])
            self.assertEqual(code, 0, out)

    def test_promtool_catches_a_page_per_prompt(self):
        # Kept per prompt, the page fires three times for the proxy of three prompts.
        if not shutil.which("promtool"):
            self.skipTest("promtool not installed")
        text = (self.rules / "alerting_rules.yml").read_text()
        start = text.index("      - alert: LLMStreamStalling")
        end = text.index("      - alert: LLMStreamStallsFrequent")
        page = text[start:end].replace("location, target)", "location, target, prompt)") \
                              .replace("location, target, le)", "location, target, prompt, le)")
        (self.rules / "alerting_rules.yml").write_text(text[:start] + page + text[end:])
        code, out = run(["promtool", "test", "rules", str(self.tmp / "rules_test.yaml")])
        self.assertNotEqual(code, 0)
        self.assertIn('alertname="LLMStreamStalling", prompt="code"', out)

    def test_promtool_catches_the_per_target_ttft_bar_ignored(self):
        # A fixed 5 s bar pages the reasoning target (alert.ttft 10 s).
        if not shutil.which("promtool"):
            self.skipTest("promtool not installed")
        self.edit("alerting_rules.yml", "max by (namespace, cluster, node, location, target) (llm_stream_alert_ttft_seconds)",
                  "max by (namespace, cluster, node, location, target) (llm_stream_alert_ttft_seconds) * 0 + 5")
        code, out = run(["promtool", "test", "rules", str(self.tmp / "rules_test.yaml")])
        self.assertNotEqual(code, 0)
        self.assertIn('target="reasoning"', out)

    def test_promtool_catches_a_threshold_change(self):
        if not shutil.which("promtool"):
            self.skipTest("promtool not installed")
        self.edit("alerting_rules.yml", "> 0.25", "> 0.4")
        code, out = run(["promtool", "test", "rules", str(self.tmp / "rules_test.yaml")])
        self.assertNotEqual(code, 0)
        self.assertIn("LLMStreamGapP95High", out)

    def test_missing_runbook_url(self):
        self.edit("alerting_rules.yml",
                  "          runbook_url: https://github.com/llm-stream-exporter/llm-stream-exporter/blob/main/docs/runbook.md#llmstreamttftp95high\n", "")
        code, out = self.lint()
        self.assertNotEqual(code, 0)
        self.assertIn("LLMStreamTTFTP95High: no runbook_url annotation", out)

    def test_bad_runbook_anchor(self):
        self.edit("alerting_rules.yml", "#llmstreamttftp95high", "#ttft")
        code, out = self.lint()
        self.assertIn("#ttft is not a heading", out)

    def test_recording_rule_name(self):
        self.edit("recording_rules.yml", "record: target_prompt_location:llm_stream_stalls:rate5m",
                  "record: llm_stream_stalls_rate5m")
        code, out = self.lint()
        self.assertIn("not level:metric:operations", out)

    def test_recording_rule_level(self):
        self.edit("recording_rules.yml",
                  "sum by (namespace, cluster, node, location, target, prompt) (rate(llm_stream_stalls_total[5m]))",
                  "sum by (namespace, cluster, node, location, target) (rate(llm_stream_stalls_total[5m]))")
        code, out = self.lint()
        self.assertIn("does not match the aggregation labels", out)

    def test_unknown_metric(self):
        self.edit("alerting_rules.yml", "llm_stream_exporter_config_last_reload_successful == 0",
                  "llm_stream_config_reload_ok == 0")
        code, out = self.lint()
        self.assertIn("'llm_stream_config_reload_ok', neither DESIGN", out)

    def test_canonical_expression(self):
        self.edit("alerting_rules.yml", "rate(llm_stream_inter_chunk_gap_seconds_bucket[10m])))\n          ) > 0.25",
                  "rate(llm_stream_inter_chunk_gap_seconds_bucket[5m])))\n          ) > 0.25")
        code, out = self.lint()
        self.assertIn("LLMStreamGapP95High: does not use the canonical expression", out)

    # -- native histograms first, classic buckets as the fallback (docs/queries.md)
    def test_quantile_without_native_branch(self):
        self.edit("alerting_rules.yml",
                  "histogram_quantile(0.95, sum by (namespace, cluster, node, location, target) "
                  "(rate(llm_stream_inter_chunk_gap_seconds[10m])))\n            or\n", "")
        code, out = self.lint()
        self.assertNotEqual(code, 0)
        self.assertIn("LLMStreamGapP95High: histogram_quantile(0.95, sum by (namespace, cluster, node, "
                      "location, target, le) (rate(llm_stream_inter_chunk_gap_seconds_bucket[10m]))) "
                      "is not preceded by its native form", out)

    def test_native_branch_other_window(self):
        # the default bar of LLMStreamTTFTP95High: its native branch on another window
        self.edit("alerting_rules.yml",
                  "0 * (histogram_quantile(0.95, sum by (namespace, cluster, node, location, target) "
                  "(rate(llm_stream_time_to_first_token_seconds[10m])))",
                  "0 * (histogram_quantile(0.95, sum by (namespace, cluster, node, location, target) "
                  "(rate(llm_stream_time_to_first_token_seconds[15m])))")
        code, out = self.lint()
        self.assertNotEqual(code, 0)
        self.assertIn("LLMStreamTTFTP95High: histogram_quantile(0.95, sum by (namespace, cluster, node, "
                      "location, target) (rate(llm_stream_time_to_first_token_seconds[15m]))) has no "
                      "classic fallback", out)

    def test_recording_rule_native_only(self):
        self.edit("recording_rules.yml",
                  "\n          or\n          histogram_quantile(0.99, sum by (namespace, cluster, node, location, "
                  "target, prompt, le) (rate(llm_stream_inter_chunk_gap_seconds_bucket[5m])))", "")
        code, out = self.lint()
        self.assertNotEqual(code, 0)
        self.assertIn("target_prompt_location:llm_stream_inter_chunk_gap_seconds:p99_rate5m: "
                      "histogram_quantile(0.99, sum by (namespace, cluster, node, location, target, prompt) "
                      "(rate(llm_stream_inter_chunk_gap_seconds[5m]))) has no classic fallback", out)

    def test_annotation_query_without_native_branch(self):
        self.edit("alerting_rules.yml",
                  'histogram_quantile(0.5, sum(rate(llm_stream_probe_max_gap_seconds{target=%[1]q,node=%[2]q,'
                  'location=%[3]q}[15m]))) or ', "")
        code, out = self.lint()
        self.assertNotEqual(code, 0)
        self.assertIn("LLMStreamStalling: histogram_quantile(0.5, sum by (le) (rate(llm_stream_probe_max_gap_"
                      "seconds_bucket{target=%[1]q,node=%[2]q,location=%[3]q}[15m]))) is not preceded", out)

    def test_alert_without_test(self):
        test = self.tmp / "rules_test.yaml"
        text = test.read_text()
        text = re.sub(r"      - \{alertname: LLMStreamConfigReloadFailed, eval_time: 10m, exp_alerts: \[\]\}\n", "", text)
        test.write_text(text)
        code, out = self.lint()
        self.assertIn("LLMStreamConfigReloadFailed is never shown not firing", out)

    # -- alerts of the exporter itself, windows, topology (issue: first-class exporter)
    def test_aggregation_drops_topology(self):
        self.edit("alerting_rules.yml", "sum by (namespace, cluster, node, location, target, le) "
                  "(rate(llm_stream_time_to_first_token_seconds_bucket",
                  "sum by (target, le) (rate(llm_stream_time_to_first_token_seconds_bucket")
        code, out = self.lint()
        self.assertNotEqual(code, 0)
        self.assertIn("LLMStreamTTFTP95High: `sum by (le, target)` drops the topology labels", out)

    def test_recording_without_drops_node(self):
        self.edit("recording_rules.yml",
                  "sum by (namespace, cluster, node, location, target, prompt) (rate(llm_stream_stalls_total[5m]))",
                  "sum without (node, instance) (rate(llm_stream_stalls_total[5m]))")
        code, out = self.lint()
        self.assertIn("`sum without (...)` drops the topology labels ['node']", out)

    def test_description_without_node(self):
        self.edit("alerting_rules.yml", 'Scrapes of {{ $labels.instance }} (job {{ $labels.job }}, node {{ or $labels.node "-" }},',
                  "Scrapes of {{ $labels.instance }} (job {{ $labels.job }},")
        code, out = self.lint()
        self.assertIn("LLMStreamExporterDown: description does not name $labels.node and $labels.location", out)

    def test_fixed_window_not_formula(self):
        self.edit("alerting_rules.yml", 'rate(llm_stream_probes_total{result="failure"}[15m])',
                  'rate(llm_stream_probes_total{result="failure"}[20m])')
        code, out = self.lint()
        self.assertIn("LLMStreamProbesFailing: window [20m] of llm_stream_probes_total is not the ratio window [15m]", out)

    def test_new_alert_without_test(self):
        test = self.tmp / "rules_test.yaml"
        text = test.read_text()
        self.assertIn("alertname: LLMStreamProbesStale", text)
        test.write_text(text.replace("alertname: LLMStreamProbesStale", "alertname: LLMStreamProbesStaleX"))
        code, out = self.lint()
        self.assertIn("LLMStreamProbesStale is never shown firing", out)
        self.assertIn("LLMStreamProbesStale is never shown not firing", out)

    def test_no_one_bad_node_test(self):
        test = self.tmp / "rules_test.yaml"
        text = test.read_text()
        self.assertIn("node: node-b, location: zone-1/node-b, target: shared}", text)
        test.write_text(text.replace('node="node-b",location="zone-1/node-b",target="shared"',
                                     'node="node-a",location="zone-1/node-a",target="shared"'))
        code, out = self.lint()
        self.assertIn("LLMStreamGapP95High is never shown firing for one node of two", out)

    def test_runbook_entry_missing(self):
        runbook = self.tmp / "runbook.md"
        text = (REPO / "docs" / "runbook.md").read_text()
        self.assertIn("## LLMStreamExporterAbsent\n", text)
        runbook.write_text(text.replace("## LLMStreamExporterAbsent\n", "## Exporter absent\n"))
        code, out = run([PY, str(HERE / "check_rules.py"), "--rules-dir", str(self.rules),
                         "--rules-test", str(self.tmp / "rules_test.yaml"), "--runbook", str(runbook)])
        self.assertNotEqual(code, 0)
        self.assertIn("LLMStreamExporterAbsent: runbook anchor #llmstreamexporterabsent is not a heading", out)

    def test_promtool_catches_an_exporter_job_change(self):
        if not shutil.which("promtool"):
            self.skipTest("promtool not installed")
        self.edit("alerting_rules.yml", 'expr: up{job=~"llm-stream-exporter"} == 0', 'expr: up{job=~"lse"} == 0')
        code, out = run(["promtool", "test", "rules", str(self.tmp / "rules_test.yaml")])
        self.assertNotEqual(code, 0)
        self.assertIn("LLMStreamExporterDown", out)
        code, out = self.lint()
        self.assertIn('LLMStreamExporterDown: does not select the exporter\'s job', out)


class RuleWindowMutations(unittest.TestCase):
    """check_rule_windows.py on a chart whose template ignores the interval."""

    def test_window_ignores_interval(self):
        tmp = pathlib.Path(tempfile.mkdtemp(prefix="lse-mut-windows-"))
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        chart = tmp / "chart"
        shutil.copytree(CHART, chart)
        p = chart / "templates" / "prometheusrule.yaml"
        text = p.read_text()
        old = '(max 600 (div (mul 600 $I) 60))'
        self.assertIn(old, text)
        p.write_text(text.replace(old, "600", 1))
        renderer = validate_chart.build_renderer(tmp)
        code, out = run([PY, str(HERE / "check_rule_windows.py"), "--renderer", renderer, "--chart", str(chart)])
        self.assertNotEqual(code, 0, out)
        # two ranges: the native half and the classic half of the quantile
        self.assertIn("FAIL interval 5m: LLMStreamGapP95High window [50m] (got ['10m', '10m'])", out)
        self.assertNotIn("FAIL interval 5m: LLMStreamStallsFrequent", out)


class DockerfileMutations(unittest.TestCase):
    """check_dockerfile.py on broken copies of the Dockerfile."""

    def check(self, old, new, expect, lint=False):
        with tempfile.TemporaryDirectory() as d:
            df = pathlib.Path(d) / "Dockerfile"
            text = (REPO / "Dockerfile").read_text()
            self.assertIn(old, text)
            df.write_text(text.replace(old, new, 1))
            cmd = [PY, str(HERE / "check_dockerfile.py"), "--dockerfile", str(df)]
            cmd += ["--install-linter"] if lint else ["--no-lint"]
            code, out = run(cmd)
        self.assertNotEqual(code, 0, out)
        self.assertRegex(out, expect)

    def test_root_user(self):
        self.check("USER 65532:65532", "USER root", r"P3 .*USER root")

    def test_shell_form_entrypoint(self):
        self.check('ENTRYPOINT ["/usr/local/bin/llm_stream_exporter"]',
                   "ENTRYPOINT /usr/local/bin/llm_stream_exporter", r"P5 .*exec")

    def test_wrong_command(self):
        self.check('CMD ["serve", "--config", "/etc/llm-stream-exporter/config.yaml"]', 'CMD ["serve"]',
                   r"P5 ENTRYPOINT\+CMD")

    def test_not_pinned(self):
        self.check("ARG DEBIAN_VERSION=12.11", "ARG DEBIAN_VERSION=latest", r"P1 .*not pinned")

    def test_build_script_not_called(self):
        self.check("bash scripts/setup.sh build", "apt-get update && apt-get install -y --no-install-recommends cmake",
                   r"P2 the build stage does not run")

    def test_port(self):
        self.check("EXPOSE 9687", "EXPOSE 8080", r"P4 no EXPOSE 9687")

    def test_add_url(self):
        self.check("COPY . .", "ADD https://example.org/src.tar.gz /src/", r"P6 .*ADD")

    def test_license_label(self):
        self.check('org.opencontainers.image.licenses="Apache-2.0"', 'org.opencontainers.image.licenses="MIT"',
                   r"P9 LABEL org.opencontainers.image.licenses=MIT: want Apache-2.0")

    def test_revision_label_not_a_build_arg(self):
        self.check('org.opencontainers.image.revision="${REVISION}"', 'org.opencontainers.image.revision="main"',
                   r"P9 LABEL org.opencontainers.image.revision=main: want \$\{REVISION\}")

    def test_source_label_missing(self):
        self.check('org.opencontainers.image.source=', 'org.opencontainers.image.sources=',
                   r"P9 the final stage has no LABEL org.opencontainers.image.source\n")

    def test_revision_not_passed_to_cmake(self):
        self.check('"-DLSE_REVISION=${REVISION}"', "", r"P10 the build stage does not pass its ARG REVISION")

    def test_linter_reports(self):
        if not shutil.which("npm"):
            self.skipTest("npm not installed")
        self.check("EXPOSE 9687", "EXPOSE 9687/sctp-ish", r"lint line \d+:", lint=True)


class PromqlE2EFails(unittest.TestCase):
    """promql_e2e.py fails when a required core panel is missing."""

    def test_unknown_core_panel(self):
        if not shutil.which("prometheus"):
            self.skipTest("prometheus not installed")
        code, out = run([PY, str(HERE / "promql_e2e.py"), "--fake-exporter", "--wait", "5",
                         "--core-panels", "Stalls per minute;No such panel"], timeout=300)
        self.assertNotEqual(code, 0, out)
        self.assertIn("core panels exist: missing ['No such panel']", out)


if __name__ == "__main__":
    unittest.main(verbosity=2 if "-v" in sys.argv else 1)
