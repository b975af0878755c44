#!/usr/bin/env bash
# Copies the single sources of truth into the helm chart, which cannot read
# files outside its own folder (.Files) and packages symlinks poorly:
#   config/prometheus/*.yml -> helm/llm-stream-exporter/files/prometheus/
#   grafana/*.json          -> helm/llm-stream-exporter/files/grafana/
# `--check` only compares and exits 1 on any difference (run_all.sh runs it).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
chart="$root/helm/llm-stream-exporter/files"
check=0
[ "${1:-}" = "--check" ] && check=1
status=0
sync_dir() {  # src_dir pattern dst_dir
  local src="$1" pat="$2" dst="$3" f
  mkdir -p "$dst"
  for f in "$src"/$pat; do
    if [ $check -eq 1 ]; then
      cmp -s "$f" "$dst/$(basename "$f")" || { echo "FAIL $dst/$(basename "$f") differs from $f"; status=1; }
    else
      cp "$f" "$dst/"
    fi
  done
  for f in "$dst"/$pat; do
    [ -e "$f" ] || continue
    if [ ! -e "$src/$(basename "$f")" ]; then
      if [ $check -eq 1 ]; then echo "FAIL $f has no source in $src"; status=1; else rm -f "$f"; fi
    fi
  done
}
sync_dir "$root/config/prometheus" '*.yml' "$chart/prometheus"
sync_dir "$root/grafana" '*.json' "$chart/grafana"
if [ $check -eq 1 ]; then
  [ $status -eq 0 ] && echo "chart files in sync with config/prometheus and grafana"
else
  echo "synced chart files from config/prometheus and grafana"
fi
exit $status
