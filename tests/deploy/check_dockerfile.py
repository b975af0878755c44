#!/usr/bin/env python3
"""Checks the Dockerfile without a Docker engine (none runs on CI).

Policy checks (documented, each a failure):
  P1  multi-stage: a build stage FROM debian bookworm (debian:12.x / bookworm),
      the final stage FROM a slim Debian 12 image; every FROM pinned to an
      explicit version (no bare image, no :latest; ARG defaults resolved);
  P2  the build stage runs `bash scripts/setup.sh build` and `bash scripts/build.sh`,
      which exist, and which CI runs too (followed from .ci/run through the
      scripts it calls); setup.sh knows the `build` profile; build.sh builds into
      build/ (the binary the Dockerfile copies, build/exporter/llm_stream_exporter);
  P3  the final stage runs as a numeric non-root USER (uid:gid), set before ENTRYPOINT;
  P4  EXPOSE 9687;
  P5  ENTRYPOINT in exec (JSON) form, and ENTRYPOINT + CMD =
      llm_stream_exporter serve --config /etc/llm-stream-exporter/config.yaml;
  P6  no ADD (COPY only; never ADD of a URL); COPY --from names an earlier stage;
  P7  apt-get: update and install in the same RUN, --no-install-recommends,
      lists removed in the final stage; no sudo; no curl|sh;
  P8  nothing in the final stage needs a writable root filesystem (no VOLUME, no
      chown/chmod of paths at run time) and .dockerignore keeps the sources
      the build needs;
  P9  the final stage labels the image with the OCI annotations title,
      description, version, revision, created, source and licenses; version,
      revision and created come from build ARGs of that stage (scripts/image.sh
      passes them); licenses is Apache-2.0, the LICENSE at the repository root,
      which the image carries (COPY LICENSE);
  P10 the build stage passes its ARG REVISION to CMake (-DLSE_REVISION), so
      --version reports the revision the labels name (the context has no .git).
Lint: dockerfile-utils (npm, pinned in tests/deploy/dockerlint, installed by
install_dockerlint.sh); any diagnostic fails.
Staging (S), when a built binary exists ($BUILD_DIR/exporter/llm_stream_exporter
or --binary): the build stage's staging RUN runs here (same Debian release) and
must stage the binary and list runtime packages that apt knows.

Usage: python3 tests/deploy/check_dockerfile.py [--dockerfile F] [--repo DIR]
           [--linter PATH | --install-linter | --no-lint]
"""
import argparse
import fnmatch
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
EXPECTED_CMD = ["serve", "--config", "/etc/llm-stream-exporter/config.yaml"]


def parse(text):
    """[(lineno, INSTRUCTION, args)] with continuation lines joined."""
    out, buf, start = [], "", None
    escape = "\\"
    for i, raw in enumerate(text.splitlines(), 1):
        m = re.match(r"#\s*escape\s*=\s*(\S)", raw)
        if m and not out and not buf:
            escape = m.group(1)
        line = raw.rstrip()
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if buf and line.lstrip().startswith("#"):
            continue  # comment inside a continued instruction
        if start is None:
            start = i
        if line.endswith(escape):
            buf += line[:-1] + " "
            continue
        buf += line
        m = re.match(r"\s*(\w+)\s*(.*)", buf, re.S)
        out.append((start, m.group(1).upper(), m.group(2).strip()))
        buf, start = "", None
    return out


def exec_form(args):
    try:
        v = json.loads(args)
        return v if isinstance(v, list) and all(isinstance(x, str) for x in v) else None
    except ValueError:
        return None


def ci_scripts(repo):
    """Scripts CI runs: .ci/run and every scripts/*.sh it calls, transitively."""
    seen, todo = set(), [repo / ".ci" / "run"]
    while todo:
        p = todo.pop()
        if p in seen or not p.exists():
            continue
        seen.add(p)
        for m in re.finditer(r"(?:bash|sh|\./|\")\s*\"?(scripts/[\w.-]+\.sh)", p.read_text()):
            todo.append(repo / m.group(1))
    return {str(p.relative_to(repo)) for p in seen}


OCI_LABELS = ("title", "description", "version", "revision", "created", "source", "licenses")
LICENSE_ID = "Apache-2.0"


def stage_args(stage):
    return {a.partition("=")[0].strip() for _, op, a in stage["ins"] if op == "ARG"}


def check_labels(stages, repo, err):
    """P9 (OCI labels, license) and P10 (the revision reaches CMake)."""
    if len(stages) < 2:
        return
    final, build = stages[-1], stages[0]
    labels = {}
    for _, op, a in final["ins"]:
        if op == "LABEL":
            for word in shlex.split(a):
                k, _, v = word.partition("=")
                labels[k] = v
    for key in OCI_LABELS:
        if not labels.get("org.opencontainers.image." + key):
            err(f"P9 the final stage has no LABEL org.opencontainers.image.{key}")
    for key, arg in (("version", "VERSION"), ("revision", "REVISION"), ("created", "CREATED")):
        v = labels.get("org.opencontainers.image." + key, "")
        if v and not re.fullmatch(r"\$\{?" + arg + r"\}?", v):
            err(f"P9 LABEL org.opencontainers.image.{key}={v}: want ${{{arg}}} (a build arg)")
        if arg not in stage_args(final):
            err(f"P9 the final stage declares no ARG {arg}")
    lic = labels.get("org.opencontainers.image.licenses")
    if lic and lic != LICENSE_ID:
        err(f"P9 LABEL org.opencontainers.image.licenses={lic}: want {LICENSE_ID}")
    license_file = repo / "LICENSE"
    if not license_file.exists() or "Apache License" not in license_file.read_text()[:200]:
        err("P9 LICENSE at the repository root is missing or not the Apache License 2.0 text")
    if not any(op == "COPY" and a.split()[0] == "LICENSE" for _, op, a in final["ins"]):
        err("P9 the final stage does not COPY LICENSE into the image")
    runs = " ".join(a for _, op, a in build["ins"] if op == "RUN")
    if "REVISION" not in stage_args(build) or not re.search(r"-DLSE_REVISION=\$\{?REVISION\}?", runs):
        err("P10 the build stage does not pass its ARG REVISION to CMake as -DLSE_REVISION=${REVISION}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=str(HERE.parents[1]))
    ap.add_argument("--dockerfile", help="default: <repo>/Dockerfile")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--linter", help="path of dockerfile-utils")
    g.add_argument("--install-linter", action="store_true", help="install the pinned linter with npm ci first")
    g.add_argument("--no-lint", action="store_true", help="policy checks only")
    ap.add_argument("--binary", help="a built llm_stream_exporter: run the build stage's staging step "
                    "against it (default: $BUILD_DIR/exporter/llm_stream_exporter if it exists)")
    args = ap.parse_args()
    repo = pathlib.Path(args.repo).resolve()
    if args.binary is None:
        bd = pathlib.Path(os.environ.get("BUILD_DIR", "build"))
        args.binary = str((bd if bd.is_absolute() else repo / bd) / "exporter" / "llm_stream_exporter")
    dockerfile = pathlib.Path(args.dockerfile or repo / "Dockerfile")
    errors = []
    err = errors.append

    ins = parse(dockerfile.read_text())
    args_default = {}
    stages = []  # dicts: name, image, instructions
    for ln, op, a in ins:
        if op == "ARG" and not stages:
            k, _, v = a.partition("=")
            args_default[k.strip()] = v.strip().strip('"')
            continue
        if op == "FROM":
            parts = a.split()
            flags = [p for p in parts if p.startswith("--")]
            rest = [p for p in parts if not p.startswith("--")]
            image = re.sub(r"\$\{?(\w+)\}?", lambda m: args_default.get(m.group(1), m.group(0)), rest[0])
            name = rest[2] if len(rest) >= 3 and rest[1].upper() == "AS" else None
            stages.append({"line": ln, "image": image, "name": name, "ins": [], "flags": flags})
            continue
        if not stages:
            err(f"line {ln}: {op} before the first FROM")
            continue
        stages[-1]["ins"].append((ln, op, a))

    # P1
    if len(stages) < 2:
        err("P1 not multi-stage")
    for s in stages:
        img = s["image"]
        if "$" in img:
            err(f"P1 line {s['line']}: FROM {img}: unresolved variable")
        last = img.split("@")[0].split("/")[-1]
        tag = last.split(":", 1)[1] if ":" in last else ""
        if "@sha256:" not in img and (not tag or tag == "latest"):
            err(f"P1 line {s['line']}: FROM {img} is not pinned to a version")
    if stages:
        b, f = stages[0], stages[-1]
        if not re.fullmatch(r"debian:(12(\.\d+)?|bookworm(-\d{8})?)", b["image"].split("@")[0]):
            err(f"P1 build stage FROM {b['image']}: want debian bookworm (debian:12.x)")
        if not b["name"]:
            err("P1 build stage has no name (FROM ... AS build)")
        if not re.fullmatch(r"debian:(12(\.\d+)?|bookworm(-\d{8})?)-slim", f["image"].split("@")[0]):
            err(f"P1 final stage FROM {f['image']}: want debian bookworm slim")
    # P2
    build_runs = " ".join(a for s in stages[:-1] for _, op, a in s["ins"] if op == "RUN")
    wanted = {"scripts/setup.sh": r"\bbash\s+scripts/setup\.sh\s+build\b",
              "scripts/build.sh": r"\bbash\s+scripts/build\.sh\b"}
    ci = ci_scripts(repo)
    for script, rx in wanted.items():
        if not re.search(rx, build_runs):
            err(f"P2 the build stage does not run `{rx}`")
        if not (repo / script).exists():
            err(f"P2 {script} does not exist")
        if script not in ci:
            err(f"P2 CI (.ci/run and the scripts it calls: {sorted(ci)}) does not run {script}")
    setup = (repo / "scripts" / "setup.sh")
    if setup.exists() and '"build"' not in setup.read_text():
        err("P2 scripts/setup.sh has no `build` profile")
    build = repo / "scripts" / "build.sh"
    if build.exists() and not re.search(r"BUILD_DIR:-build\b|-B\s+build\b", build.read_text()):
        err("P2 scripts/build.sh does not build into build/ (the Dockerfile copies build/exporter/...)")
    if "build/exporter/llm_stream_exporter" not in build_runs + " ".join(
            a for s in stages for _, op, a in s["ins"] if op == "COPY"):
        err("P2 the Dockerfile does not take build/exporter/llm_stream_exporter")
    # P3-P5 on the final stage
    final = stages[-1]["ins"] if stages else []
    users = [(ln, a) for ln, op, a in final if op == "USER"]
    entry = [(ln, a) for ln, op, a in final if op == "ENTRYPOINT"]
    cmd = [(ln, a) for ln, op, a in final if op == "CMD"]
    if not users:
        err("P3 the final stage sets no USER")
    else:
        ln, u = users[-1]
        m = re.fullmatch(r"(\d+)(?::(\d+))?", u)
        if not m or int(m.group(1)) == 0 or (m.group(2) and int(m.group(2)) == 0):
            err(f"P3 line {ln}: USER {u} is not a numeric non-root uid:gid")
        if entry and ln > entry[-1][0]:
            err("P3 USER comes after ENTRYPOINT")
    if not any(op == "EXPOSE" and "9687" in re.split(r"[\s/]+", a) for _, op, a in final):
        err("P4 no EXPOSE 9687 in the final stage")
    if not entry:
        err("P5 no ENTRYPOINT")
    else:
        e = exec_form(entry[-1][1])
        c = exec_form(cmd[-1][1]) if cmd else []
        if e is None or (cmd and c is None):
            err("P5 ENTRYPOINT/CMD not in exec (JSON) form")
        else:
            full = e + c
            if not (full and full[0].endswith("llm_stream_exporter") and full[1:] == EXPECTED_CMD):
                err(f"P5 ENTRYPOINT+CMD is {full}, want llm_stream_exporter {' '.join(EXPECTED_CMD)}")
    # P6, P7
    names = set()
    for s in stages:
        for ln, op, a in s["ins"]:
            if op == "ADD":
                err(f"P6 line {ln}: ADD (use COPY; never ADD a URL)")
            if op == "COPY":
                m = re.search(r"--from=(\S+)", a)
                if m and m.group(1) not in names:
                    err(f"P6 line {ln}: COPY --from={m.group(1)} is not an earlier stage")
            if op == "RUN":
                if re.search(r"\bsudo\b", a):
                    err(f"P7 line {ln}: sudo")
                if re.search(r"(curl|wget)[^|]*\|\s*(ba)?sh", a):
                    err(f"P7 line {ln}: piping a download into a shell")
                if re.search(r"apt-get\s+(-\S+\s+)*install", a):
                    if "apt-get update" not in a:
                        err(f"P7 line {ln}: apt-get install without apt-get update in the same RUN")
                    if "--no-install-recommends" not in a:
                        err(f"P7 line {ln}: apt-get install without --no-install-recommends")
                    if s is stages[-1] and "rm -rf /var/lib/apt/lists" not in a:
                        err(f"P7 line {ln}: apt lists not removed in the same RUN")
                if re.fullmatch(r"apt-get\s+update", a.strip()):
                    err(f"P7 line {ln}: apt-get update alone in a RUN")
        if s["name"]:
            names.add(s["name"])
    # P8
    for ln, op, a in final:
        if op == "VOLUME":
            err(f"P8 line {ln}: VOLUME in the final stage (the chart mounts what it needs)")
    di = repo / ".dockerignore"
    if di.exists():
        pats = [l.strip() for l in di.read_text().splitlines() if l.strip() and not l.startswith("#")]
        for needed in ("scripts/setup.sh", "scripts/build.sh", "CMakeLists.txt", "exporter/main.cpp",
                       "config/prompts/short.txt"):
            if any(fnmatch.fnmatch(needed, p.rstrip("/")) or needed.startswith(p.rstrip("/") + "/")
                   for p in pats if not p.startswith("!")):
                err(f"P8 .dockerignore excludes {needed}, which the build needs")

    check_labels(stages, repo, err)

    n_policy = 10
    # Staging simulation: this machine is the build stage's Debian release, so the
    # build stage's last RUN (binary, prompts, ldd -> dpkg -S package list) can run
    # here against a built binary; every package it lists must exist in the archive.
    staging_note = "staging not simulated (no built binary)"
    binary = pathlib.Path(args.binary) if args.binary else None
    if binary and binary.exists() and len(stages) >= 2:
        runs = [a for _, op, a in stages[0]["ins"] if op == "RUN"]
        staging = [a for a in runs if "/out/" in a]
        if not staging:
            err("S the build stage has no staging RUN writing /out/")
        else:
            import tempfile
            with tempfile.TemporaryDirectory() as d:
                src = pathlib.Path(d) / "src"
                (src / "build" / "exporter").mkdir(parents=True)
                (src / "build" / "exporter" / "llm_stream_exporter").symlink_to(binary.resolve())
                (src / "config").symlink_to(repo / "config")
                cmd = staging[-1].replace("/out/", f"{d}/out/")
                r = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], cwd=src, capture_output=True, text=True)
                pkgs_file = pathlib.Path(d) / "out" / "runtime-packages"
                if r.returncode != 0 or not pkgs_file.exists():
                    err(f"S the staging RUN fails here: {r.stderr.strip()[-800:]}")
                else:
                    pkgs = pkgs_file.read_text().split()
                    libs = subprocess.run(["ldd", str(binary)], capture_output=True, text=True).stdout
                    n_libs = len([l for l in libs.splitlines() if "=> /" in l])
                    missing = [p for p in pkgs if subprocess.run(
                        ["apt-cache", "show", p], capture_output=True).returncode != 0]
                    if missing:
                        err(f"S runtime packages unknown to apt: {missing}")
                    if not (pathlib.Path(d) / "out" / "usr" / "local" / "bin" / "llm_stream_exporter").exists():
                        err("S the staging RUN did not stage the binary")
                    staging_note = (f"staging simulated on {binary}: {n_libs} shared libraries -> "
                                    f"{len(pkgs)} packages ({' '.join(pkgs)})")
    # Lint
    lint_note = "skipped (--no-lint)"
    if not args.no_lint:
        linter = args.linter
        if args.install_linter or not linter:
            r = subprocess.run(["bash", str(HERE / "install_dockerlint.sh")], capture_output=True, text=True)
            if r.returncode != 0:
                err("lint: installing dockerfile-utils failed:\n" + r.stderr.strip())
                linter = None
            else:
                linter = r.stdout.strip().splitlines()[-1]
        if linter:
            r = subprocess.run([linter, "lint", "--json", str(dockerfile)], capture_output=True, text=True)
            try:
                diags = json.loads(r.stdout or "[]")
            except ValueError:
                diags = None
                err(f"lint: unreadable output: {r.stdout[:300]} {r.stderr[:300]}")
            if diags:
                for d in diags:
                    line = d.get("range", {}).get("start", {}).get("line", -1) + 1
                    err(f"lint line {line}: {d.get('message')} (code {d.get('code')}, severity {d.get('severity')})")
            lint_note = f"dockerfile-utils: {len(diags or [])} diagnostic(s)"

    for e in errors:
        print("FAIL " + e)
    print(f"check_dockerfile: {len(stages)} stages, policy P1-P{n_policy}, {lint_note}; {staging_note}; "
          f"{len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
