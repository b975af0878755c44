#!/usr/bin/env bash
# Lists the longest functions under exporter/ (lines from the signature to the
# closing brace, lambdas counted in the function that holds them) and fails
# when one is longer than the limit (issue 14: a reader holds a function in
# their head). Usage: scripts/function_lengths.sh [LIMIT=80] [SHOW=15]
set -euo pipefail
cd "$(dirname "$0")/.."
limit=${1:-80}
show=${2:-15}
command -v ctags >/dev/null || { echo "function_lengths: needs universal-ctags" >&2; exit 2; }
list=$(ctags -x --_xformat='%{end} %n %N %F' --fields=+ne --kinds-c++=f -R --languages=c++ exporter |
  awk '$1 != "" && $2 != "" {print $1-$2+1, $3, $4":"$2}' | sort -rn)
echo "longest functions in exporter/ (limit $limit lines):"
head -n "$show" <<<"$list" | sed "s/^/  /"
over=$(awk -v l="$limit" '$1 > l' <<<"$list" | wc -l)
if [ "$over" -gt 0 ]; then
  echo "function_lengths: $over function(s) over $limit lines" >&2
  exit 1
fi
echo "function_lengths: ok"
