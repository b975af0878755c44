#!/usr/bin/env python3
"""Checks that the values tables of the chart README are what values.yaml says.

The "## Parameters" section of helm/llm-stream-exporter/README.md is generated from the
`## @param` comments of values.yaml by @bitnami/readme-generator-for-helm (pinned in
tests/deploy/readmegen/, installed by install_readmegen.sh). This regenerates it into a
copy of the README and fails when the copy differs from the committed file (a value
added, removed, re-described or with a new default, and the table not regenerated), or
when the generator refuses the metadata (a value without `## @param`, a `## @param` for
a value that does not exist).

Usage: python3 tests/deploy/check_chart_readme.py [--chart DIR] [--generator BIN]
Fix:   "$(bash tests/deploy/install_readmegen.sh)" -v helm/llm-stream-exporter/values.yaml \\
           -r helm/llm-stream-exporter/README.md
"""
import argparse
import difflib
import pathlib
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
CHART = HERE.parents[1] / "helm" / "llm-stream-exporter"


def generator(given=None):
    if given:
        return given
    r = subprocess.run(["bash", str(HERE / "install_readmegen.sh")], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("installing the README generator failed:\n" + r.stderr)
    return r.stdout.strip().splitlines()[-1]


def regenerate(gen, chart):
    """-> (ok, generated text or the generator's complaint)"""
    with tempfile.TemporaryDirectory(prefix="lse-readme-") as d:
        copy = pathlib.Path(d) / "README.md"
        shutil.copy(chart / "README.md", copy)
        r = subprocess.run([gen, "--values", str(chart / "values.yaml"), "--readme", str(copy)],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            errors = [l for l in (r.stdout + r.stderr).splitlines() if l.startswith("ERROR")]
            return False, "\n".join(errors) or (r.stdout + r.stderr)[-2000:]
        return True, copy.read_text()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chart", default=str(CHART))
    ap.add_argument("--generator", help="readme-generator binary (default: install the pinned one)")
    args = ap.parse_args()
    chart = pathlib.Path(args.chart)
    have = (chart / "README.md").read_text()
    if "\n## Parameters\n" not in have:
        print("FAIL chart README: no '## Parameters' section for the generated tables")
        return 1
    ok, out = regenerate(generator(args.generator), chart)
    if not ok:
        print("FAIL values.yaml metadata refused by the README generator:\n" + out)
        return 1
    if out != have:
        diff = difflib.unified_diff(have.splitlines(True), out.splitlines(True), "README.md (committed)",
                                    "README.md (regenerated from values.yaml)")
        print("FAIL chart README: the values table is stale; regenerate it (see --help):")
        sys.stdout.writelines(list(diff)[:80])
        return 1
    rows = sum(1 for l in have.splitlines() if l.startswith("| `"))
    print(f"chart README: the values table ({rows} rows) is current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
