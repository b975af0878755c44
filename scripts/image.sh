#!/usr/bin/env bash
# Builds the container image from the repository's Dockerfile, then checks the
# image it built (docs/deploy.md, "Container image").
#
# Usage: scripts/image.sh [build|check|all]          (default: all)
#   build  tags llm-stream-exporter:<version> and :latest (version = CMakeLists.txt's
#          project VERSION), with `docker build` when a Docker engine answers, else
#          with buildah (vfs storage, chroot isolation: no daemon). Build args
#          VERSION, REVISION (git rev-parse --short=12 HEAD) and CREATED set the OCI
#          labels and what --version reports. A base image the Dockerfile names
#          that is neither local nor pullable (no registry access) is made once
#          with `debootstrap --variant=minbase` from this machine's Debian mirror
#          (debian:<v> plain, debian:<v>-slim without docs/man/locales, as
#          debian-slim is) and committed under that name; later runs reuse it.
#   check  runs the image as its USER (65532) with a read-only root against the
#          bundled scripted upstream (tests/upstream, as scripts/demo.sh starts
#          it) on 127.0.0.1 free ports, and fails unless: a write to / fails
#          with "Read-only file system"; the exporter process runs as the image's
#          uid on a read-only root; /metrics has TTFT series for the demo targets
#          (the healthy target's mean TTFT near its scripted 150 ms); --version
#          is this tree's version and revision; every OCI label is set.
# Prints the build time and the image's size. Stops everything it started.
# Skips (exit 0, with the reason) only when neither docker nor buildah can run.
# Environment: IMAGE_ENGINE=docker|buildah (default: detected), IMAGE_NAME
# (llm-stream-exporter), IMAGE_REVISION (default: git rev-parse --short=12 HEAD;
# for sources without .git), DEBIAN_MIRROR / DEBIAN_SECURITY_MIRROR (default:
# the ones /etc/apt/sources.list{,.d} use), IMAGE_CHECK_SECONDS (60).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODE=${1:-all}
case "$MODE" in build | check | all) ;; *) sed -n '2,28p' "$0" >&2; exit 2 ;; esac

NAME=${IMAGE_NAME:-llm-stream-exporter}
VERSION=$(sed -nE 's/^project\([^)]*VERSION ([0-9][0-9A-Za-z.+-]*).*/\1/p' CMakeLists.txt)
REVISION=${IMAGE_REVISION:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
IMAGE=$NAME:$VERSION
LICENSE_ID=Apache-2.0
PATH_ENV=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

say() { echo "image: $*"; }
die() { echo "image: FAIL: $*" >&2; exit 1; }
b() { buildah --storage-driver vfs "$@"; }

CLEANUP=()  # commands run on exit, last first
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  local i
  for ((i = ${#CLEANUP[@]} - 1; i >= 0; i--)); do eval "${CLEANUP[i]}" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

detect_engine() {
  if [ -n "${IMAGE_ENGINE:-}" ]; then ENGINE=$IMAGE_ENGINE; return; fi
  if command -v docker >/dev/null && timeout 20 docker info >/dev/null 2>&1; then
    ENGINE=docker
  elif command -v buildah >/dev/null && b images >/dev/null 2>&1; then
    ENGINE=buildah
  else
    say "skipped: no Docker engine answers (docker info) and buildah cannot run" \
      "(install it: scripts/setup.sh)"
    exit 0
  fi
}

# --- base images -------------------------------------------------------------

# The FROM images of the Dockerfile, ARG defaults resolved (stage names skipped).
base_images() {
  python3 - "$ROOT/Dockerfile" <<'EOF'
import re, sys
args, stages = {}, set()
for line in open(sys.argv[1]):
    m = re.match(r"\s*ARG\s+(\w+)=(\S+)", line)
    if m and m.group(1) not in args:
        args[m.group(1)] = m.group(2).strip('"')
    m = re.match(r"\s*FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?", line, re.I)
    if m:
        img = re.sub(r"\$\{?(\w+)\}?", lambda v: args.get(v.group(1), v.group(0)), m.group(1))
        if img not in stages and img != "scratch":
            print(img)
        if m.group(2):
            stages.add(m.group(2))
EOF
}

image_present() {
  if [ "$ENGINE" = docker ]; then docker image inspect "$1" >/dev/null 2>&1
  else b inspect --type image "$1" >/dev/null 2>&1; fi
}

try_pull() {
  if [ "$ENGINE" = docker ]; then timeout 300 docker pull -q "$1" >/dev/null 2>&1
  else timeout 300 b pull -q "docker.io/library/$1" >/dev/null 2>&1; fi
}

# The first Debian archive (or security archive, $1 = security) apt uses here.
host_mirror() {
  local want='/debian/?$' m
  [ "${1:-}" = security ] && want='/debian-security/?$'
  m=$({ grep -hsE '^\s*URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}'
        grep -hsE '^\s*deb\s' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
          sed -E 's/\[[^]]*\]//' | awk '{print $2}'; } | grep -E "$want" | head -n 1 || true)
  if [ -n "$m" ]; then echo "${m%/}"
  elif [ "${1:-}" = security ]; then echo http://deb.debian.org/debian-security
  else echo http://deb.debian.org/debian; fi
}

debian_suite() {
  case "$1" in
    11* | bullseye*) echo bullseye ;;
    12* | bookworm*) echo bookworm ;;
    13* | trixie*) echo trixie ;;
    *) die "no Debian suite known for debian:$1" ;;
  esac
}

# A root apt can use inside the image: the mirror as deb822 sources (as Debian's
# images have them), no caches, no host files left by debootstrap.
configure_root() { # root suite
  local r=$1 suite=$2 mirror security
  mirror=${DEBIAN_MIRROR:-$(host_mirror)}
  security=${DEBIAN_SECURITY_MIRROR:-$(host_mirror security)}
  rm -f "$r/etc/apt/sources.list"
  mkdir -p "$r/etc/apt/sources.list.d"
  cat >"$r/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $suite $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: $suite-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  test -s "$r/usr/share/keyrings/debian-archive-keyring.gpg" || die "debootstrap root has no archive keyring"
  minimize_root "$r"
  rm -rf "$r"/var/lib/apt/lists/* "$r"/var/cache/apt/*.bin "$r"/var/cache/apt/archives/*.deb
  rm -f "$r"/var/log/*.log "$r"/var/log/apt/*
  : >"$r/etc/resolv.conf"
  echo localhost >"$r/etc/hostname"
}

# The apt and dpkg settings of Debian's official images (debuerreotype's
# minimizing config): no package caches or translations left behind by an
# apt-get in a RUN, no fsync per file while unpacking, no services started.
minimize_root() { # root
  local r=$1 clean='"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"'
  cat >"$r/etc/apt/apt.conf.d/docker-clean" <<EOF
DPkg::Post-Invoke { $clean; };
APT::Update::Post-Invoke { $clean; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  echo 'Acquire::Languages "none";' >"$r/etc/apt/apt.conf.d/docker-no-languages"
  echo 'Acquire::GzipIndexes "true";' >"$r/etc/apt/apt.conf.d/docker-gzip-indexes"
  echo 'Apt::AutoRemove::SuggestsImportant "false";' >"$r/etc/apt/apt.conf.d/docker-autoremove-suggests"
  echo force-unsafe-io >"$r/etc/dpkg/dpkg.cfg.d/docker-apt-speedup"
  printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
  chmod 0755 "$r/usr/sbin/policy-rc.d"
}

# debian-slim: what debuerreotype's slimify removes, and the dpkg path
# excludes that keep later installs from bringing it back.
slimify_root() { # root
  local r=$1 d
  cat >"$r/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
# As debian-slim: no documentation, manual pages or translations.
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
EOF
  find "$r/usr/share/doc" -mindepth 2 ! -type d ! -name copyright -delete
  find "$r/usr/share/doc" -mindepth 1 -depth -type d -empty -delete
  for d in groff info linda lintian/overrides locale man; do rm -rf "${r:?}/usr/share/$d"/*; done
}

commit_root() { # root name
  local ctr mnt what
  # Says where the base came from (the image built on it sets its own).
  what="org.opencontainers.image.description=$2 made by scripts/image.sh: debootstrap --variant=minbase"
  what+=" $(debian_suite "${2#*:}") $(date -u +%Y-%m-%d) from ${DEBIAN_MIRROR:-$(host_mirror)}"
  if [ "$ENGINE" = docker ]; then
    tar -C "$1" -c . | docker import --change 'CMD ["bash"]' --change "ENV PATH=$PATH_ENV" \
      --change "LABEL \"${what%%=*}\"=\"${what#*=}\"" - "$2" >/dev/null
    return
  fi
  ctr=$(b from scratch)
  CLEANUP+=("buildah --storage-driver vfs rm $ctr")
  mnt=$(b mount "$ctr")
  tar -C "$1" -cf - . | tar -C "$mnt" -xpf - --numeric-owner
  b umount "$ctr" >/dev/null
  b config --cmd '["bash"]' --env "PATH=$PATH_ENV" --label "$what" --os linux \
    --arch "$(dpkg --print-architecture)" "$ctr"
  b commit -q "$ctr" "$2" >/dev/null
  b rm "$ctr" >/dev/null
}

make_bases() { # names... (all of one Debian version)
  local tag=${1#*:} suite tmp name dir t0=$SECONDS
  tag=${tag%-slim}
  suite=$(debian_suite "$tag")
  command -v debootstrap >/dev/null || die "cannot pull $* and debootstrap is not installed (scripts/setup.sh)"
  tmp=$(mktemp -d /var/tmp/lse-base.XXXXXX)
  CLEANUP+=("rm -rf $tmp")
  say "making $* with debootstrap --variant=minbase $suite from $(host_mirror)"
  debootstrap --variant=minbase "$suite" "$tmp/root" "${DEBIAN_MIRROR:-$(host_mirror)}" \
    >"$tmp/debootstrap.log" 2>&1 || { tail -n 30 "$tmp/debootstrap.log" >&2; die "debootstrap failed"; }
  configure_root "$tmp/root" "$suite"
  for name; do
    dir=$tmp/root
    if [[ "$name" == *-slim ]]; then
      dir=$tmp/slim
      rm -rf "$dir" && cp -a "$tmp/root" "$dir"
      slimify_root "$dir"
    fi
    commit_root "$dir" "$name"
    say "base $name committed ($(du -sm "$dir" | cut -f1) MB)"
  done
  rm -rf "$tmp"
  say "bases made in $((SECONDS - t0)) s"
}

ensure_bases() {
  local img missing=()
  for img in $(base_images); do
    image_present "$img" && continue
    try_pull "$img" && { say "pulled $img"; continue; }
    [[ "$img" == debian:* ]] || die "base image $img is not local and cannot be pulled"
    missing+=("$img")
  done
  [ ${#missing[@]} -eq 0 ] && { say "base images present: $(base_images | xargs)"; return; }
  make_bases "${missing[@]}"
}

# --- build ---------------------------------------------------------------------

build_image() {
  local created t0 args
  created=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  git diff --quiet HEAD 2>/dev/null || say "note: the tree has uncommitted changes; labels say revision $REVISION"
  args=(--build-arg "VERSION=$VERSION" --build-arg "REVISION=$REVISION" --build-arg "CREATED=$created"
        -t "$IMAGE" -t "$NAME:latest" -f Dockerfile .)
  say "building $IMAGE (revision $REVISION) with $ENGINE"
  t0=$SECONDS
  if [ "$ENGINE" = docker ]; then
    docker build "${args[@]}"
  else
    local before id
    before=$(b images -q --filter dangling=true)
    b bud --isolation chroot --pull=never --layers=false "${args[@]}"
    # Untagged by this build (the previous image, the build stage): removed.
    for id in $(b images -q --filter dangling=true); do
      grep -qx "$id" <<<"$before" || b rmi "$id" >/dev/null 2>&1 || true
    done
  fi
  BUILD_SECONDS=$((SECONDS - t0))
  say "built $IMAGE in ${BUILD_SECONDS} s"
}

image_size() {
  if [ "$ENGINE" = docker ]; then
    docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1 / 1e6}'
  else
    b images --format '{{.Size}}' "$IMAGE" | head -n 1
  fi
}

image_config() { # one field of the image's config (User, Labels, ...) as JSON
  if [ "$ENGINE" = docker ]; then docker image inspect -f "{{json .Config.$1}}" "$IMAGE"
  else
    b inspect --type image "$IMAGE" |
      python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["OCIv1"]["config"].get(sys.argv[1])))' "$1"
  fi
}

main() {
  if [ "$(id -u)" -ne 0 ] && [ "${IMAGE_ENGINE:-}" != docker ] && command -v sudo >/dev/null &&
     ! (command -v docker >/dev/null && timeout 20 docker info >/dev/null 2>&1); then
    exec sudo -E bash "$ROOT/scripts/image.sh" "$@"  # buildah's chroot isolation and debootstrap need root
  fi
  detect_engine
  if [ "$MODE" != check ]; then
    ensure_bases
    build_image
  fi
  if [ "$MODE" != build ]; then
    image_present "$IMAGE" || die "$IMAGE is not built (scripts/image.sh build)"
    check_image
  fi
  say "$IMAGE: $(image_size)${BUILD_SECONDS:+, built in ${BUILD_SECONDS} s}"
}

# --- check ---------------------------------------------------------------------

CONFIG_PATH=/etc/llm-stream-exporter/config.yaml
WORK='' CTR='' MNT='' DOCKER_NAME=''

# Runs "$@" in the image as user $1 as a user would run it: read-only root,
# the host's network, a tmpfs on /tmp, the config file mounted read-only.
# buildah run has no --read-only: it runs in a private mount namespace where
# the container's root is bind-mounted read-only over itself, with a tmpfs on
# /run (buildah run makes and removes its /run/.containerenv marker there).
in_image() { # user cmd...
  local user=$1
  shift
  if [ "$ENGINE" = docker ]; then
    docker run --rm ${DOCKER_NAME:+--name "$DOCKER_NAME"} --read-only --tmpfs /tmp --network host \
      --user "$user" -v "$WORK/config.yaml:$CONFIG_PATH:ro" --entrypoint "$1" "$IMAGE" "${@:2}"
  else
    unshare --mount --propagation private -- sh -c \
      'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" &&
       mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$1/run" && shift && exec "$@"' sh "$MNT" \
      buildah --storage-driver vfs run --isolation chroot --user "$user" \
      --mount type=tmpfs,destination=/tmp -v "$WORK/config.yaml:$CONFIG_PATH:ro" "$CTR" -- "$@"
  fi
}

check_labels() {
  image_config Labels | python3 -c '
import json, re, sys
labels = json.load(sys.stdin) or {}
version, revision, license = sys.argv[1:4]
want = {"title": "llm-stream-exporter", "version": version, "revision": revision, "licenses": license}
bad = []
for key in ("title", "description", "version", "revision", "source", "licenses", "created"):
    v = labels.get("org.opencontainers.image." + key, "")
    if not v or v == "unknown" or (key in want and v != want[key]):
        bad.append(f"{key}={v!r}" + (f" (want {want[key]!r})" if key in want else ""))
if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", labels.get("org.opencontainers.image.created", "")):
    bad.append("created is not an RFC 3339 UTC time")
if not labels.get("org.opencontainers.image.source", "").startswith("https://"):
    bad.append("source is not an https URL")
if bad:
    sys.exit("OCI labels wrong: " + "; ".join(bad))
shown = [f"{k[25:]}={v}" for k, v in sorted(labels.items())
         if k.startswith("org.opencontainers.image.") and not k.endswith("description")]
print("image: labels: " + ", ".join(shown))
' "$VERSION" "$REVISION" "$LICENSE_ID" || die "labels (built from another revision? bash scripts/image.sh build)"
}

# The image's USER (numeric, non-root) and its ENTRYPOINT + CMD (into RUN_ARGS).
read_run_config() {
  IMAGE_USER=$(image_config User | python3 -c 'import json, sys; print(json.load(sys.stdin) or "")')
  [[ "$IMAGE_USER" =~ ^[1-9][0-9]*(:[1-9][0-9]*)?$ ]] ||
    die "the image's USER is '$IMAGE_USER': want a numeric non-root uid:gid"
  mapfile -t RUN_ARGS < <({ image_config Entrypoint; image_config Cmd; } |
    python3 -c 'import json, sys; [print(a) for l in sys.stdin for a in (json.loads(l) or [])]')
  [[ " ${RUN_ARGS[*]} " == *" $CONFIG_PATH "* ]] ||
    die "the image's command (${RUN_ARGS[*]}) does not read $CONFIG_PATH"
}

start_upstream() {
  python3 tests/upstream/upstream.py --host 127.0.0.1 --port 0 --port-file "$WORK/upstream.port" \
    2>"$WORK/upstream.log" &
  CLEANUP+=("kill $!")
  for _ in $(seq 100); do [ -s "$WORK/upstream.port" ] && break; sleep 0.05; done
  [ -s "$WORK/upstream.port" ] || die "the scripted upstream did not start: $(cat "$WORK/upstream.log")"
  EXPORTER_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # The demo config as it is, but for the upstream's URL and the listen port;
  # its prompt files resolve next to the config: the image's default prompts.
  sed -e "s#UPSTREAM_URL#http://127.0.0.1:$(cat "$WORK/upstream.port")#g" \
    -e "s#127.0.0.1:9687#127.0.0.1:$EXPORTER_PORT#" config/demo.yaml >"$WORK/config.yaml"
  chmod 0755 "$WORK"
  chmod 0644 "$WORK/config.yaml"
}

check_read_only() {
  local out
  if out=$(in_image 0:0 sh -c 'echo x > /lse-write-probe' 2>&1); then
    die "a write to / as root succeeded: the root is not read-only"
  fi
  [[ "$out" == *"Read-only file system"* ]] || die "a write to / failed, but not as read-only: $out"
  say "read-only root: as root in the image, $(grep -m 1 'Read-only file system' <<<"$out")"
}

check_version() {
  local out want="llm_stream_exporter $VERSION (revision $REVISION)"
  out=$(in_image "$IMAGE_USER" "${RUN_ARGS[0]}" --version 2>&1) || die "--version failed: $out"
  [ "$out" = "$want" ] || die "--version says '$out', want '$want'"
  say "--version: $out"
}

# The exporter's own process: the image's uid, on a read-only root.
check_process() {
  local pid uid root_opts
  pid=$(ss -Hltnp "sport = :$EXPORTER_PORT" | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2)
  [ -n "$pid" ] || die "nothing listens on 127.0.0.1:$EXPORTER_PORT"
  uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
  [ "$uid" = "${IMAGE_USER%%:*}" ] || die "the exporter (pid $pid) runs as uid $uid, want ${IMAGE_USER%%:*}"
  root_opts=$(awk '$5 == "/" {o = $6} END {print o}' "/proc/$pid/mountinfo")
  [[ ",$root_opts," == *,ro,* ]] || die "the exporter's root is mounted '$root_opts', want ro"
  say "exporter: pid $pid, uid $uid, root mounted $root_opts, listening on 127.0.0.1:$EXPORTER_PORT"
}

# /metrics must show TTFT series for one target of each dialect, and the
# healthy target's mean TTFT must be its scripted 150 ms (0.14-0.6 s: CI load).
check_metrics() {
  python3 - "http://127.0.0.1:$EXPORTER_PORT/metrics" "${IMAGE_CHECK_SECONDS:-60}" <<'PY'
import re, sys, time, urllib.request
url, seconds = sys.argv[1], float(sys.argv[2])
rx = re.compile(r'^llm_stream_time_to_first_token_seconds_(count|sum)\{([^}]*)\} (\S+)$')
want, t0, error = {"healthy", "anthropic", "ollama"}, time.time(), ""
while True:
    try:
        text, error = urllib.request.urlopen(url, timeout=5).read().decode(), ""
    except OSError as e:
        text, error = "", str(e)
    series = {"count": {}, "sum": {}}
    for m in filter(None, map(rx.match, text.splitlines())):
        target = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2))).get("target")
        series[m.group(1)][target] = series[m.group(1)].get(target, 0) + float(m.group(3))
    counts = series["count"]
    if all(counts.get(t, 0) > 0 for t in want) or time.time() - t0 > seconds:
        break
    time.sleep(1)
print("image: /metrics after %.0f s: TTFT probes per target: %s" % (
    time.time() - t0, ", ".join(f"{t}={n:.0f}" for t, n in sorted(counts.items())) or "none"))
missing = sorted(t for t in want if counts.get(t, 0) <= 0)
if missing:
    sys.exit(f"image: FAIL: no TTFT probes for {missing} within {seconds:.0f} s {error}")
mean = series["sum"]["healthy"] / counts["healthy"]
if not 0.14 <= mean <= 0.6:
    sys.exit(f"image: FAIL: healthy's mean TTFT is {mean:.3f} s; its upstream script says 0.150 s")
print(f"image: healthy's mean TTFT {mean * 1000:.0f} ms (scripted 150 ms)")
PY
}

stop_group() { # pgid: TERM, then wait up to 5 s for every process in it to end
  kill -- "-$1" 2>/dev/null || return 0
  for _ in $(seq 50); do kill -0 -- "-$1" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL -- "-$1" 2>/dev/null || true
}

start_exporter() {
  local pid
  DOCKER_NAME=lse-image-check-$$
  setsid bash -c "$(declare -f in_image); $(declare -p ENGINE IMAGE WORK CONFIG_PATH MNT CTR DOCKER_NAME)"'
    in_image "$@"' sh "$IMAGE_USER" "${RUN_ARGS[@]}" >"$WORK/exporter.log" 2>&1 &
  pid=$!
  CLEANUP+=("stop_group $pid")
  [ "$ENGINE" = docker ] && CLEANUP+=("docker rm -f $DOCKER_NAME")
  for _ in $(seq 150); do
    ss -Hltn "sport = :$EXPORTER_PORT" | grep -q . && return 0
    kill -0 "$pid" 2>/dev/null || die "the exporter exited: $(tail -n 20 "$WORK/exporter.log")"
    sleep 0.1
  done
  die "the exporter did not listen on 127.0.0.1:$EXPORTER_PORT: $(tail -n 20 "$WORK/exporter.log")"
}

check_image() {
  local t0=$SECONDS
  WORK=$(mktemp -d /tmp/lse-image-check.XXXXXX)
  CLEANUP+=("rm -rf $WORK")
  check_labels
  read_run_config
  if [ "$ENGINE" = buildah ]; then
    CTR=$(b from --pull=never "$IMAGE")
    CLEANUP+=("buildah --storage-driver vfs rm $CTR")
    MNT=$(b mount "$CTR")
    # Mount points buildah run binds files onto (docker makes them in its
    # init layer): in the working container, before its root turns read-only.
    for f in "$CONFIG_PATH" /etc/hosts /etc/hostname /etc/resolv.conf; do
      [ -e "$MNT$f" ] || touch "$MNT$f"
    done
  fi
  start_upstream
  check_read_only
  check_version
  start_exporter
  check_process
  check_metrics || die "$(tail -n 20 "$WORK/exporter.log")"
  say "check passed in $((SECONDS - t0)) s"
}

# One line, read whole before it runs: editing this file during a build is safe.
main "$@"; exit $?
