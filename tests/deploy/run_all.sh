#!/usr/bin/env bash
# Runs the deployment checks of issue 4 (docs/deploy.md, "Checks").
#
#   bash tests/deploy/run_all.sh            # every check below except promql-fake
#   bash tests/deploy/run_all.sh chart rules-test   # only these
#
# Checks:
#   sync        chart copies of config/prometheus/*.yml and grafana/*.json are identical
#   rules-check promtool check rules config/prometheus/*.yml
#   rules-test  promtool test rules tests/deploy/rules_test.yaml
#   rules-lint  check_rules.py (names, annotations, runbook anchors, test coverage)
#   rule-windows check_rule_windows.py (chart windows from the probe interval, job matcher)
#   dashboards  check_dashboards.py
#   docs        check_docs.py (sections, YAML blocks, promtool on scrape configs, links)
#   renderer    go test of tests/deploy/helmrender (Helm's values merging and functions)
#   chart       validate_chart.py (render every ci/ file + schemas + invariants)
#   chart-readme check_chart_readme.py (the chart README's values table is current;
#               pinned @bitnami/readme-generator-for-helm from npm)
#   dockerfile  check_dockerfile.py (policy + pinned npm linter)
#   mutations   test_mutations.py (each check above fails on a broken input)
#   promql-fake promql_e2e.py --fake-exporter (real Prometheus, fake exporter; the
#               e2e against the real exporter is promql_e2e.py --exporter-url URL)
#   promql-native promql_e2e.py --fake-exporter --native (the same on native
#               histograms only: Prometheus with native histograms on, protobuf scrape)
#   deb         check_deb.py (cpack -G DEB from the build tree $BUILD_DIR or build/,
#               lintian, systemd-analyze, the packaged binary serving the demo)
# Exit status: non-zero when any check failed. Last line: "N passed, M failed".
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

# A Python with PyYAML and jsonschema: $PYTHON, python3, or Debian's.
py=""
for cand in ${PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import yaml, jsonschema' 2>/dev/null; then
    py="$cand"; break
  fi
done
if [ -z "$py" ]; then
  echo "no python3 with PyYAML and jsonschema (Debian: python3-yaml python3-jsonschema)" >&2
  exit 2
fi

run_check() {
  case "$1" in
    sync)        bash "$here/sync_chart_files.sh" --check ;;
    rules-check) promtool check rules config/prometheus/*.yml ;;
    rules-test)  promtool test rules "$here/rules_test.yaml" ;;
    rules-lint)  "$py" "$here/check_rules.py" ;;
    rule-windows) "$py" "$here/check_rule_windows.py" ;;
    dashboards)  "$py" "$here/check_dashboards.py" ;;
    docs)        "$py" "$here/check_docs.py" ;;
    renderer)    (cd "$here/helmrender" \
                  && { out="$(gofmt -l .)"; [ -z "$out" ] || { echo "gofmt would change: $out"; exit 1; }; } \
                  && GO111MODULE=off GOFLAGS= GOPATH=/usr/share/gocode go vet . \
                  && GO111MODULE=off GOFLAGS= GOPATH=/usr/share/gocode go test -count=1 -v .) ;;
    chart)       "$py" "$here/validate_chart.py" ;;
    chart-readme) "$py" "$here/check_chart_readme.py" ;;
    dockerfile)  "$py" "$here/check_dockerfile.py" --install-linter ;;
    mutations)   "$py" "$here/test_mutations.py" ;;
    promql-fake) "$py" "$here/promql_e2e.py" --fake-exporter ;;
    promql-native) "$py" "$here/promql_e2e.py" --fake-exporter --native ;;
    deb)         "$py" "$here/check_deb.py" ;;
    *) echo "unknown check: $1" >&2; return 2 ;;
  esac
}

checks=("$@")
[ ${#checks[@]} -eq 0 ] && checks=(sync rules-check rules-test rules-lint rule-windows dashboards docs renderer chart chart-readme dockerfile mutations deb)
passed=0; failed=0; failures=()
for c in "${checks[@]}"; do
  echo "=== $c"
  if run_check "$c"; then
    passed=$((passed + 1)); echo "--- $c: ok"
  else
    failed=$((failed + 1)); failures+=("$c"); echo "--- $c: FAILED"
  fi
done
[ $failed -gt 0 ] && echo "failed: ${failures[*]}"
echo "deploy: $passed passed, $failed failed"
[ $failed -eq 0 ]
