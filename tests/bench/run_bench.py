#!/usr/bin/env python3
"""Fidelity and overhead benchmark of llm-stream-exporter (issue 5): one command.

    cmake -S . -B build-bench -DLSE_BUILD_BENCH=ON
    cmake --build build-bench -j2 --target bench_all
    python3 tests/bench/run_bench.py --build-dir build-bench        # full table, ~7 min
    python3 tests/bench/run_bench.py --build-dir build-bench --quick  # subset, ~2 min

What it does (all traffic on 127.0.0.1; every process it starts, it stops):
  * starts the ground-truth upstream (bench_truth_upstream, plain and TLS), which
    sends OpenAI chat.completion.chunk streams on a schedule taken from the URL
    and logs the CLOCK_MONOTONIC instant right before the write(2) of every chunk;
  * per scenario (1 / 100 / 1,000 concurrent streams at 50 chunks/s; plain / TLS;
    with / without a /metrics scrape every 100 ms) runs `llm_stream_exporter serve`
    with N targets (one per concurrent stream: probes of one target never overlap;
    interval = stream length + 0.3 s, jitter 0, warmup 0; `serve` rather than
    `run --concurrency`, because the scrape scenarios and RSS figures are about serve), reads its rows from
    /api/v1/probes and pairs every measured gap with the true gap from the send log;
  * runs the Python standard-library baseline (baseline_client.py) on the same kind
    of streams, and the SO_TIMESTAMPNS experiment client (bench_ts_client);
  * measures CPU per chunk (sum of /proc/PID/task/*/schedstat on-CPU time over the
    steady-state window, divided by the chunks the truth upstream sent to that
    process in the window), RSS idle with 10 targets and peak (VmHWM) at 1,000
    streams, /metrics with 10,000 series end to end, the allocation count of the
    probe hot path, and the Google Benchmark programs (decode, metrics render);
  * prints one table (also written to OUT/table.txt; raw figures to OUT/results.json).

Every stream carries one planted stall (400 ms) and one near miss (180 ms), both
>= 50 ms away from the 250 ms stall threshold; ordinary gaps are 20 ms +/- 5 ms.
The first round of every target (connection set-up of all targets at once) is left
out of the steady-state error figures and reported in its own column.
"""

import argparse
import atexit
import glob
import gzip
import json
import math
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '..', '..'))
PKI_SCRIPT = os.path.join(ROOT, 'tests', 'upstream', 'make_test_pki.sh')

GAP_MS = 20.0           # 50 chunks/s
JITTER_MS = 5.0
STALL_MS = 400.0        # planted stall: 150 ms above the threshold
NEAR_MS = 180.0         # near miss: 70 ms below the threshold
THRESHOLD_MS = 250.0    # the exporter's default stall_threshold
TTFT_MS = 100.0         # + a per-stream offset spreading phases over one gap

# ------------------------------------------------------------------ processes

_procs = []


KEEP_PAIRS = False
SUT_PREFIX = []  # ['chrt', '-f', '5'] when the systems under test run at SCHED_FIFO
SERVE_FLAGS = []  # ['--probe.threads', 'N'] with --probe-threads


class Proc:
    """A child in its own process group; stopped by stop() or at exit."""

    def __init__(self, args, log_path, env=None, sut=False):
        if sut:
            args = SUT_PREFIX + list(args)
        self.args = args
        self.log_path = log_path
        self.log = open(log_path, 'wb')
        self.p = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True)
        self.pid = self.p.pid
        _procs.append(self)

    def alive(self):
        return self.p.poll() is None

    def output(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, 'rb') as f:
            return f.read().decode('utf-8', 'replace')

    def stop(self, sig=signal.SIGTERM, timeout=10):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.p.wait()
        if not self.log.closed:
            self.log.close()
        if self in _procs:
            _procs.remove(self)
        return self.p.returncode


def _stop_all(*_):
    for p in list(_procs):
        p.stop(timeout=3)


atexit.register(_stop_all)


def _on_signal(signum, _frame):
    _stop_all()
    sys.exit(128 + signum)


signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGINT, _on_signal)


def wait_for(pred, timeout, what, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    raise RuntimeError(f'timed out after {timeout}s waiting for {what}')


def cpu_ns(pid):
    """CPU time of process pid in ns, all threads including exited ones: the process's
    CPU-time clock (clock_getcpuclockid: ((~pid) << 3) | CPUCLOCK_SCHED), which is exact
    (scheduler runtime), unlike the tick-sampled utime/stime of /proc/PID/stat."""
    try:
        return time.clock_gettime_ns(((~pid) << 3) | 2)
    except OSError:
        return None


def status_kib(pid, key):
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith(key + ':'):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def http_get(url, timeout=30):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


def http_get_gzip(url, timeout=30):
    """GET asking for gzip as Prometheus does: (the body as sent, whether it is gzip). Not
    decompressed here: this harness runs above the exporter's priority, and inflating 30 MB
    would take a core from the probes it measures."""
    req = urllib.request.Request(url, headers={'Accept-Encoding': 'gzip'})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read(), r.headers.get('Content-Encoding') == 'gzip'


def uncompressed_size(body, gzipped):
    return len(gzip.decompress(body)) if gzipped else len(body)


def wall_minus_mono():
    best = None
    for _ in range(5):
        m1 = time.monotonic()
        w = time.time()
        m2 = time.monotonic()
        if best is None or m2 - m1 < best[0]:
            best = (m2 - m1, w - (m1 + m2) / 2)
    return best[1]


def loadavg():
    try:
        with open('/proc/loadavg') as f:
            return ' '.join(f.read().split()[:3])
    except OSError:
        return '?'


# ------------------------------------------------------------------ statistics

def pct(sorted_vals, q):
    """Nearest-rank percentile of an ascending list (None when empty)."""
    if not sorted_vals:
        return None
    k = max(1, min(len(sorted_vals), math.ceil(q * len(sorted_vals))))
    return sorted_vals[k - 1]


def summary(vals):
    s = sorted(vals)
    return {'n': len(s), 'p50': pct(s, 0.5), 'p99': pct(s, 0.99), 'max': s[-1] if s else None}


# ------------------------------------------------------------------ truth upstream

class Truth:
    def __init__(self, build_dir, workdir, tls, pki, rt, threads=1):
        self.name = 'truth-tls' if tls else 'truth-plain'
        self.workdir = workdir
        self.log_file = os.path.join(workdir, f'{self.name}.jsonl')
        self.offset = 0
        self.records = []
        port_file = os.path.join(workdir, f'{self.name}.port')
        args = [os.path.join(build_dir, 'tests', 'bench', 'bench_truth_upstream'),
                '--port-file', port_file, '--log-file', self.log_file, '--threads', str(threads),
                '--max-seconds', '1800']
        if rt:
            args += ['--rt-priority', '10']
        if tls:
            args += ['--tls-cert', pki['server_cert'], '--tls-key', pki['server_key']]
        self.proc = Proc(args, os.path.join(workdir, f'{self.name}.log'))
        port = wait_for(lambda: os.path.exists(port_file) and open(port_file).read().strip(), 10,
                        'truth upstream port file')
        self.port = int(port)
        self.scheme = 'https' if tls else 'http'

    def url(self, spec):
        return f'{self.scheme}://127.0.0.1:{self.port}/s/{spec}/v1'

    def collect(self):
        """Dumps the records completed so far and returns the new ones."""
        plain_url = f'http://127.0.0.1:{self.port}/_dump'
        if self.scheme == 'https':
            import ssl
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            req = urllib.request.Request(f'https://127.0.0.1:{self.port}/_dump', method='POST', data=b'')
            urllib.request.urlopen(req, timeout=30, context=ctx).read()
        else:
            req = urllib.request.Request(plain_url, method='POST', data=b'')
            urllib.request.urlopen(req, timeout=30).read()
        new = []
        if os.path.exists(self.log_file):
            with open(self.log_file) as f:
                f.seek(self.offset)
                data = f.read()
                self.offset = f.tell()
            for line in data.splitlines():
                if line.strip():
                    new.append(json.loads(line))
        return new

    def stop(self):
        self.proc.stop()


def spec_for(tag, i, n, chunks):
    """Stream i of n: phases spread over one gap; stall and near miss at varying places."""
    ttft = TTFT_MS + GAP_MS * i / max(1, n)
    s_idx = 10 + (i * 37) % (chunks - 20)
    m_idx = 10 + (i * 53 + chunks // 2) % (chunks - 20)
    if m_idx == s_idx:
        m_idx = s_idx + 1
    return (f'id={tag},ttft={ttft:.3f},gap={GAP_MS:g},jitter={JITTER_MS:g},seed={i + 1},'
            f'chunks={chunks},stall={s_idx}:{STALL_MS:g};{m_idx}:{NEAR_MS:g}')


def stream_seconds(chunks):
    return (TTFT_MS + GAP_MS + (chunks - 1) * GAP_MS + STALL_MS + NEAR_MS - 2 * GAP_MS) / 1000.0 + 0.005 * chunks / 10


# ------------------------------------------------------------------ pairing and errors

def true_gaps_ms(rec):
    s = rec['sends']
    return [(s[k + 1] - s[k]) / 1e6 for k in range(len(s) - 1)]


class Fidelity:
    """Gap errors and stall classification for a set of paired streams."""

    def __init__(self):
        self.errors_us = []
        self.errors_first_us = []
        self.planted = self.detected = self.false = 0
        self.planted_first = self.detected_first = self.false_first = 0
        self.streams = self.mismatched = self.unpaired = self.failed = 0
        self.fail_reasons = {}
        self.row_stalls = 0

    def add(self, measured_ms, truth_rec, first_round):
        tg = true_gaps_ms(truth_rec)
        if len(measured_ms) != len(tg):
            self.mismatched += 1
            return
        self.streams += 1
        errs = self.errors_first_us if first_round else self.errors_us
        for m, t in zip(measured_ms, tg):
            errs.append(abs(m - t) * 1000.0)
            if t >= THRESHOLD_MS:
                if first_round:
                    self.planted_first += 1
                    self.detected_first += m >= THRESHOLD_MS
                else:
                    self.planted += 1
                    self.detected += m >= THRESHOLD_MS
            elif m >= THRESHOLD_MS:
                if first_round:
                    self.false_first += 1
                else:
                    self.false += 1

    def result(self):
        steady = summary(self.errors_us)
        allv = summary(self.errors_us + self.errors_first_us)
        return {'paired': self.streams, 'gaps': steady['n'], 'err_p50_us': steady['p50'],
                'err_p99_us': steady['p99'], 'err_max_us': steady['max'],
                'err_p99_all_us': allv['p99'], 'err_max_all_us': allv['max'],
                'planted': self.planted, 'detected': self.detected, 'false': self.false,
                'planted_first': self.planted_first, 'detected_first': self.detected_first,
                'false_first': self.false_first, 'mismatched': self.mismatched,
                'unpaired': self.unpaired, 'failed': self.failed, 'fail_reasons': self.fail_reasons}


PAIRS_OUT = []  # when --keep-pairs: (measured, truth) of every paired stream of the phase


def pair(measured, truth_by_tag, first_round_cut_ns, fid):
    """measured: dicts {tag, start_ns, ok, reason, gaps_ms}. Each successful one is matched
    with the earliest unused successful truth record of the same tag whose request arrived
    at or after its start (probes of one target are sequential, so are both lists; an
    overloaded client may take seconds from probe start to request)."""
    used = set()
    for m in sorted(measured, key=lambda r: r['start_ns']):
        if not m['ok'] and m.get('reason') == 'canceled':
            continue  # in flight when the harness stopped the exporter
        if not m['ok']:
            fid.failed += 1
            fid.fail_reasons[m.get('reason') or '?'] = fid.fail_reasons.get(m.get('reason') or '?', 0) + 1
            continue
        best = None
        for rec in truth_by_tag.get(m['tag'], ()):
            if id(rec) in used or rec['outcome'] != 'done':
                continue
            d = rec['t_request'] - m['start_ns']
            if -100e6 <= d <= 60e9 and (best is None or d < best[0]):
                best = (d, rec)
        if best is None:
            fid.unpaired += 1
            continue
        used.add(id(best[1]))
        fid.add(m['gaps_ms'], best[1], best[1]['t_request'] < first_round_cut_ns)
        if KEEP_PAIRS:
            PAIRS_OUT.append({'tag': m['tag'], 't_request': best[1]['t_request'], 'start_ns': m['start_ns'],
                              'measured_ms': m['gaps_ms'], 'true_ms': true_gaps_ms(best[1]),
                              'sends': best[1]['sends']})


def by_tag(records, prefix):
    out = {}
    for r in records:
        if r['tag'].startswith(prefix):
            out.setdefault(r['tag'], []).append(r)
    for v in out.values():
        v.sort(key=lambda r: r['t_request'])
    return out


CPU_WINDOWS = 3  # the CPU window is also read as this many equal parts: "best of three"


def sleep_sampling_cpu(pid, seconds):
    """Sleeps `seconds`, reading pid's CPU clock and the monotonic clock at the start, at
    every CPU_WINDOWS-th part and at the end: [(cpu_ns, mono_ns), ...]."""
    points = [(cpu_ns(pid), time.monotonic_ns())]
    for _ in range(CPU_WINDOWS):
        time.sleep(seconds / CPU_WINDOWS)
        points.append((cpu_ns(pid), time.monotonic_ns()))
    return points


def cpu_per_chunk_windows(points, chunks_between):
    """CPU us per chunk of each part of a sampled window (None where a part saw no chunk or
    no CPU reading); chunks_between(a_ns, b_ns) counts the chunks of one part."""
    out = []
    for (ca, ta), (cb, tb) in zip(points, points[1:]):
        n = chunks_between(ta, tb)
        out.append((cb - ca) / 1000.0 / n if n and ca is not None and cb is not None else None)
    return out


def cpu_windows_result(points, chunks_between):
    windows = cpu_per_chunk_windows(points, chunks_between)
    return {'cpu_us_per_chunk_windows': windows, 'cpu_us_per_chunk_best': best(windows)}


def best(values):
    vals = [v for v in values if v is not None]
    return min(vals) if vals else None


def sends_in_window(truth_by_tag, a_ns, b_ns):
    n = 0
    for recs in truth_by_tag.values():
        for r in recs:
            for s in r['sends']:
                if a_ns <= s <= b_ns and s:
                    n += 1
    return n


def truth_quality(truth_by_tag):
    late, wdur = [], []
    for recs in truth_by_tag.values():
        for r in recs:
            if r['outcome'] != 'done':
                continue
            late.extend(x / 1000.0 for x in r['late'])
            wdur.extend(x / 1000.0 for x in r['wdur'])
    return {'late_us': summary(late), 'wdur_us': summary(wdur)}


# ------------------------------------------------------------------ system calls and allocations

ALLOC_FUNCS = ('malloc', 'calloc', 'realloc', 'aligned_alloc', 'posix_memalign', 'memalign')
ALLOC_MAGIC = 0x4c5345414c4c4f43  # "LSEALLOC", alloc_count.c


class AllocCounter:
    """The running heap allocation counts of one process, through the LD_PRELOAD shim
    alloc_count.c (libbench_alloc_count.so): it keeps them in a shared mapping of a
    file in /dev/shm named by LSE_ALLOC_COUNT_FILE, one 64-byte slot per function."""

    def __init__(self, lib, name):
        self.lib = lib
        self.path = f'/dev/shm/lse-bench-{os.getpid()}-{name}.allocs'

    def env(self):
        env = dict(os.environ)
        env['LD_PRELOAD'] = ' '.join(x for x in (env.get('LD_PRELOAD'), self.lib) if x)
        env['LSE_ALLOC_COUNT_FILE'] = self.path
        return env

    def read(self):
        """{function: calls so far, 'free': ...}, or None before the shim mapped the file."""
        try:
            with open(self.path, 'rb') as f:
                data = f.read()
        except OSError:
            return None
        if len(data) < 64 * (len(ALLOC_FUNCS) + 2) or struct.unpack_from('<Q', data, 0)[0] != ALLOC_MAGIC:
            return None
        return {name: struct.unpack_from('<Q', data, 64 * (k + 1))[0]
                for k, name in enumerate(ALLOC_FUNCS + ('free',))}

    def close(self):
        try:
            os.unlink(self.path)
        except OSError:
            pass


def allocs_per_chunk(a, b, chunks):
    """Allocation calls (all functions but free) between two reads, per chunk; with the split."""
    if not a or not b or not chunks:
        return None
    by = {k: (b[k] - a[k]) / chunks for k in ALLOC_FUNCS + ('free',)}
    return {'allocs_per_chunk': sum(by[k] for k in ALLOC_FUNCS), 'allocs_by_function_per_chunk': by,
            'chunks_in_alloc_window': chunks}


# The syscalls perf counts one by one (the rest shows as "other": raw_syscalls:sys_enter minus
# these). Not syscalls:sys_enter_* : perf needs ~30 ms per tracepoint to let go of it at exit.
PERF_SYSCALLS = ('read', 'write', 'readv', 'writev', 'recvfrom', 'recvmsg', 'recvmmsg', 'sendto', 'sendmsg',
                 'sendmmsg', 'epoll_wait', 'epoll_pwait', 'epoll_pwait2', 'epoll_ctl', 'poll', 'ppoll', 'select',
                 'pselect6', 'futex', 'brk', 'mmap', 'munmap', 'mremap', 'madvise', 'mprotect', 'socket', 'connect',
                 'accept4', 'close', 'shutdown', 'setsockopt', 'getsockopt', 'getsockname', 'getpeername', 'fcntl',
                 'ioctl', 'openat', 'newfstatat', 'lseek', 'pwrite64', 'timerfd_settime', 'eventfd2',
                 'clock_gettime', 'clock_nanosleep', 'nanosleep', 'sched_yield', 'getrandom', 'io_uring_enter',
                 'rt_sigprocmask', 'getpid', 'gettid')


class SyscallCounter:
    """Counts the system calls of a running process (all its threads) over a window, with
    one of two tools:
      perf:   `perf stat -e raw_syscalls:sys_enter -e syscalls:sys_enter_NAME... -p PID`,
              in-kernel counting of the syscall tracepoints (the process is never stopped),
              enabled and disabled exactly at the window edges through `--control` (-D -1:
              starts disabled);
      strace: `strace -c -f -p PID`, ptrace: every syscall stops the thread twice, so it
              slows the process much more; counts from attach to SIGINT.
    Either way the traced process runs slower than untraced, which is why the harness
    counts in a round of its own after the CPU and error window."""

    def __init__(self, tool, pid, workdir, name):
        self.tool = tool
        self.out = os.path.join(workdir, f'{name}-{tool}.txt')
        if tool == 'perf':
            self.ctl_path = os.path.join(workdir, f'{name}-perf.ctl')
            self.ack_path = os.path.join(workdir, f'{name}-perf.ack')
            for path in (self.ctl_path, self.ack_path):
                if not os.path.exists(path):
                    os.mkfifo(path)
            # O_RDWR: opening a FIFO never blocks then, even if perf failed to start.
            self.ctl = os.open(self.ctl_path, os.O_RDWR)
            self.ack = os.open(self.ack_path, os.O_RDWR)
            known = '/sys/kernel/tracing/events/syscalls'  # tracefs, once perf mounted it
            events = ['raw_syscalls:sys_enter'] + [f'syscalls:sys_enter_{name}' for name in PERF_SYSCALLS
                                                   if not os.path.isdir(known)
                                                   or os.path.isdir(f'{known}/sys_enter_{name}')]
            args = ['perf', 'stat', '-x', ',', '-o', self.out, '-D', '-1',
                    '--control', f'fifo:{self.ctl_path},{self.ack_path}', '-e', ','.join(events), '-p', str(pid)]
        else:
            args = ['strace', '-c', '-f', '-o', self.out, '-p', str(pid)]
        self.proc = Proc(args, os.path.join(workdir, f'{name}-{tool}.log'))
        self.pid = pid

    def _perf_command(self, cmd, timeout=10.0):
        os.write(self.ctl, cmd.encode() + b'\n')
        got = b''
        deadline = time.monotonic() + timeout
        while b'ack' not in got:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.ack], [], [], left)[0]:
                raise RuntimeError(f'perf stat did not acknowledge "{cmd}":\n' + self.proc.output()[-1000:])
            got += os.read(self.ack, 64)

    def start(self):
        """Returns once the counting runs (perf: enabled; strace: attached to every thread,
        which it reports as "Process PID attached [with N threads]" after the last one)."""
        if self.tool == 'perf':
            self._perf_command('enable', timeout=30.0)
        else:
            wait_for(lambda: 'attached' in self.proc.output() or not self.proc.alive(), 30, 'strace attached')
            if not self.proc.alive():
                raise RuntimeError('strace failed:\n' + self.proc.output()[-1000:])

    def stop(self):
        """Stops counting and returns {syscall: calls}, 'total' included."""
        if self.tool == 'perf':
            self._perf_command('disable')
        self.close()
        with open(self.out) as f:
            text = f.read()
        return parse_perf_stat(text) if self.tool == 'perf' else parse_strace_c(text)

    def close(self):
        """Ends the tool (SIGINT: both print their summary then) and closes the FIFOs."""
        self.proc.stop(signal.SIGINT, timeout=60)
        if self.tool == 'perf' and self.ctl is not None:
            os.close(self.ctl)
            os.close(self.ack)
            self.ctl = self.ack = None


def parse_perf_stat(text):
    """`perf stat -x,` lines: value,unit,event,...; syscalls:sys_enter_NAME -> NAME,
    raw_syscalls:sys_enter -> total, and what the named ones leave of it -> other."""
    counts, total = {}, None
    for line in text.splitlines():
        f = line.split(',')
        if len(f) < 3 or not f[0].isdigit():
            continue
        if f[2] == 'raw_syscalls:sys_enter':
            total = int(f[0])
        elif f[2].startswith('syscalls:sys_enter_') and int(f[0]):
            counts[f[2][len('syscalls:sys_enter_'):]] = int(f[0])
    named = sum(counts.values())
    if total is None:
        total = named
    elif total > named:
        counts['other'] = total - named
    counts['total'] = total
    return counts


def parse_strace_c(text):
    """The summary table of `strace -c`: the "calls" column (right-aligned under its header)
    of every syscall row and of the "total" line."""
    counts = {}
    calls_end = None
    for line in text.splitlines():
        if 'calls' in line and 'syscall' in line:
            calls_end = line.index('calls', line.index('usecs/call') + len('usecs/call')) + len('calls')
            continue
        if calls_end is None or not line.strip() or line.lstrip().startswith('-'):
            continue
        name = line.split()[-1]
        for m in re.finditer(r'\d+', line):
            if m.end() == calls_end:
                counts[name] = int(m.group())
                break
    return counts


def syscalls_per_chunk(counts, chunks, tool, window_s, cpu_us_per_chunk):
    if not counts or not chunks:
        return {'syscall_tool': tool}
    top = sorted(((k, v / chunks) for k, v in counts.items() if k != 'total'), key=lambda kv: -kv[1])
    return {'syscalls_per_chunk': counts.get('total', 0) / chunks, 'syscall_tool': tool,
            'syscalls_by_name_per_chunk': dict(top), 'chunks_in_syscall_window': chunks,
            'syscall_window_s': window_s, 'cpu_us_per_chunk_traced': cpu_us_per_chunk}


# ------------------------------------------------------------------ exporter

def yq(s):
    return json.dumps(s)


JITTER = 0.0  # the exporter's `jitter` in the scenarios (--jitter)


def exporter_config(targets, interval_ms, ca_file, rows_path=None, timeout_s=30, jitter=None, target_extra=()):
    """Product defaults except the schedule; rows go to a file (the in-memory ring keeps
    its default size, so RSS is what a default deployment would show)."""
    lines = ['listen: "127.0.0.1:0"', 'defaults:', f'  interval: {int(interval_ms)}ms',
             f'  jitter: {JITTER if jitter is None else jitter:g}',
             '  warmup: 0', '  max_tokens: 256', f'  stall_threshold: {int(THRESHOLD_MS)}ms',
             f'  timeout: {{first_token: {timeout_s}s, idle: {timeout_s}s, total: {timeout_s * 4}s}}',
             'prompts:', '  short: {text: "What is the capital of France?"}',
             # 1,000 targets make ~290 k series: above the default cap (100 k), which is
             # what the scrape scenarios measure.
             'metrics: {max_series: 1000000}']
    if rows_path:
        lines.append(f'rows: {{path: {yq(rows_path)}, max_size: 1GiB}}')
    lines.append('targets:')
    for name, url in targets:
        lines += [f'  - name: {name}', f'    url: {yq(url)}', '    model: bench-model', '    prompts: [short]']
        if ca_file:
            lines.append(f'    tls: {{ca_file: {yq(ca_file)}}}')
        lines += [f'    {x}' for x in target_extra]
    return '\n'.join(lines) + '\n'


class Exporter:
    def __init__(self, binary, workdir, name, config_text, env=None):
        self.config_path = os.path.join(workdir, f'{name}.yaml')
        with open(self.config_path, 'w') as f:
            f.write(config_text)
        self.proc = Proc([binary, '--log.level', 'info', 'serve', '--config', self.config_path] + SERVE_FLAGS,
                         os.path.join(workdir, f'{name}.log'), env=env, sut=True)
        m = wait_for(lambda: re.search(r'msg=listening .* port=(\d+)', self.proc.output())
                     or (not self.proc.alive() and 'exited'), 30, 'exporter listening')
        if m == 'exited':
            raise RuntimeError('exporter exited:\n' + self.proc.output()[-3000:])
        self.port = int(m.group(1))
        self.base = f'http://127.0.0.1:{self.port}'
        self.pid = self.proc.pid

    def rows(self, limit):
        data = json.loads(http_get(f'{self.base}/api/v1/probes?limit={int(limit)}', timeout=60))
        return data.get('probes', [])

    @staticmethod
    def rows_from_file(path):
        out = []
        for p in sorted(glob.glob(path + '*')):
            with open(p) as f:
                out.extend(json.loads(line) for line in f if line.strip())
        return out

    def stop(self):
        return self.proc.stop()


# Scrape intervals of the scenarios (seconds; False: no scrape): --plan's third field.
SCRAPES = {'noscrape': False, 'scrape': 0.1, 'scrape100ms': 0.1, 'scrape1s': 1.0}


def scrape_label(interval):
    return f'{interval:g}s' if interval >= 1 else f'{interval * 1000:g}ms'


class Scraper(threading.Thread):
    """GET /metrics every `interval` seconds (the next one starts at once when a scrape overran)."""

    def __init__(self, url, interval=0.1):
        super().__init__(daemon=True)
        self.url = url
        self.interval = interval
        self.stop_evt = threading.Event()
        self.durations_ms = []
        self.last = (b'', False)
        self.wire_sizes = []
        self.errors = 0
        self.cut_at = None

    def run(self):
        nxt = time.monotonic()
        while not self.stop_evt.is_set():
            t0 = time.perf_counter()
            try:
                # As Prometheus asks: gzip (the exporter compresses as it renders).
                body, gzipped = http_get_gzip(self.url, timeout=30)
                self.durations_ms.append((time.perf_counter() - t0) * 1000)
                self.last = (body, gzipped)
                self.wire_sizes.append(len(body))
            except Exception:  # noqa: BLE001
                self.errors += 1
            nxt += self.interval
            wait = nxt - time.monotonic()
            if wait > 0:
                self.stop_evt.wait(wait)
            else:
                nxt = time.monotonic()

    def cut(self):
        """The figures finish() reports end here; the scrapes go on (for the syscall round)."""
        self.cut_at = (len(self.durations_ms), self.errors)

    def finish(self):
        self.stop_evt.set()
        self.join(35)
        n, errors = self.cut_at or (len(self.durations_ms), self.errors)
        return {'scrapes': n, 'errors': errors, 'ms': summary(self.durations_ms[:n]),
                'bytes': uncompressed_size(*self.last),
                'gzip_bytes': self.wire_sizes[n - 1] if n else 0}


def sleep_sampling_cpu_many(pids, seconds):
    """sleep_sampling_cpu for several processes read at the same instants:
    [(cpu_ns of pids[0], ..., mono_ns), ...]."""
    def point():
        return tuple(cpu_ns(p) for p in pids) + (time.monotonic_ns(),)
    points = [point()]
    for _ in range(CPU_WINDOWS):
        time.sleep(seconds / CPU_WINDOWS)
        points.append(point())
    return points


class Nghttpx:
    """A real nghttpx (Debian's nghttp2-proxy) in front of the plain truth upstream: TLS
    front end offering h2 and http/1.1 by ALPN, HTTP/1.1 back end; one worker, at the
    priority of the systems under test (it relays every chunk both columns measure)."""

    def __init__(self, workdir, phase, upstream_port, pki):
        binary = shutil.which('nghttpx') or '/usr/sbin/nghttpx'
        d = os.path.join(workdir, f'{phase}-nghttpx')
        os.makedirs(d, exist_ok=True)
        conf = os.path.join(d, 'nghttpx.conf')
        with open(conf, 'w') as f:
            f.write('')
        with socket_bound() as (port, _):
            self.port = port
        self.proc = Proc([binary, f'--conf={conf}', f'--frontend=127.0.0.1,{self.port}',
                          f'--backend=127.0.0.1,{upstream_port};;proto=http/1.1', '--workers=1',
                          '--no-ocsp', '--no-via', '--backend-connections-per-host=4096',
                          '--backend-keep-alive-timeout=120s', f'--errorlog-file={d}/error.log',
                          f'--pid-file={d}/nghttpx.pid', pki['server_key'], pki['server_cert']],
                         os.path.join(d, 'nghttpx.out'), sut=True)
        wait_for(lambda: port_open(self.port) or not self.proc.alive(), 10, 'nghttpx listening')
        if not self.proc.alive():
            raise RuntimeError('nghttpx exited:\n' + self.proc.output()[-2000:])
        self.pid = worker_pid(self.proc.pid)

    def url(self, spec):
        return f'https://127.0.0.1:{self.port}/s/{spec}/v1'

    def stop(self):
        self.proc.stop()


class socket_bound:
    """A free 127.0.0.1 port (bound, then released on exit)."""

    def __enter__(self):
        import socket
        self.s = socket.socket()
        self.s.bind(('127.0.0.1', 0))
        return self.s.getsockname()[1], self.s

    def __exit__(self, *exc):
        self.s.close()


def port_open(port):
    import socket
    try:
        socket.create_connection(('127.0.0.1', port), timeout=0.2).close()
        return True
    except OSError:
        return False


def worker_pid(pid):
    """nghttpx's master forks the worker process that relays the streams (chrt execs, so
    pid is the master): the worker's pid, else pid."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            with open(f'/proc/{pid}/task/{pid}/children') as f:
                kids = [int(x) for x in f.read().split()]
        except OSError:
            kids = []
        if kids:
            return kids[0]
        time.sleep(0.05)
    return pid


# ------------------------------------------------------------------ phases

class Bench:
    def __init__(self, args):
        self.args = args
        self.build = os.path.abspath(args.build_dir)
        self.exporter_bin = args.exporter or os.path.join(self.build, 'exporter', 'llm_stream_exporter')
        self.bench_dir = os.path.join(self.build, 'tests', 'bench')
        self.workdir = args.out_dir or tempfile.mkdtemp(prefix='lse-bench-')
        os.makedirs(self.workdir, exist_ok=True)
        self.phase_no = 0
        self.results = {'scenarios': [], 'baseline': [], 'ts_experiment': [], 'overhead': {},
                        'gbench': {}, 'notes': []}
        self.driver = args.driver
        if self.driver == 'serve' and not os.access(self.exporter_bin, os.X_OK):
            self.note(f'exporter binary {self.exporter_bin} not found: using the probe driver '
                      '(bench_probe_driver streams) instead of `serve`; scrape, RSS and /metrics '
                      'figures are not available')
            self.driver = 'probe'
        subprocess.run(['bash', PKI_SCRIPT, os.path.join(self.workdir, 'pki')], check=True)
        pki = os.path.join(self.workdir, 'pki')
        self.pki = {'ca': os.path.join(pki, 'ca.crt'), 'server_cert': os.path.join(pki, 'server.crt'),
                    'server_key': os.path.join(pki, 'server.key')}
        self.rt = not args.no_rt and subprocess.run(['chrt', '-f', '10', 'true'],
                                                    capture_output=True).returncode == 0
        self.truth = {}
        self.alloc_lib = None
        if args.count_allocs:
            lib = os.path.join(self.bench_dir, 'libbench_alloc_count.so')
            if os.path.exists(lib):
                self.alloc_lib = lib
            else:
                self.note(f'{lib} not found (build the bench_all target): no allocation counts')
        self.syscall_tool = args.count_syscalls if args.count_syscalls != 'off' else None
        if self.syscall_tool and not shutil.which(self.syscall_tool):
            self.note(f'{self.syscall_tool} not found: no syscall counts')
            self.syscall_tool = None

    def dump_pairs(self, phase):
        if KEEP_PAIRS and PAIRS_OUT:
            with open(os.path.join(self.workdir, f'{phase}-pairs.jsonl'), 'w') as f:
                for p in PAIRS_OUT:
                    f.write(json.dumps(p) + '\n')
        PAIRS_OUT.clear()

    def note(self, text):
        self.results['notes'].append(text)
        print(f'note: {text}', file=sys.stderr)

    def log(self, text):
        print(f'[{time.strftime("%H:%M:%S")}] {text}', file=sys.stderr, flush=True)

    def upstream(self, tls):
        if tls not in self.truth:
            self.truth[tls] = Truth(self.build, self.workdir, tls, self.pki, self.rt, self.args.truth_threads)
        return self.truth[tls]

    def next_phase(self):
        self.phase_no += 1
        return f'p{self.phase_no}'

    def alloc_counter(self, name):
        return AllocCounter(self.alloc_lib, name) if self.alloc_lib else None

    @staticmethod
    def syscall_window(slen):
        """Length of the syscall round's window: half a stream, 0.4 to 2 s."""
        return max(0.4, min(2.0, 0.5 * slen))

    def syscall_round(self, pid, name, start_ns, window_s):
        """Counts the syscalls of pid from start_ns (monotonic) for window_s; the caller
        divides by the chunks of [a_ns, b_ns] once it has them."""
        tracer = SyscallCounter(self.syscall_tool, pid, self.workdir, name)
        try:
            time.sleep(max(0.0, (start_ns - time.monotonic_ns()) / 1e9))
            tracer.start()
            cpu_a, a_ns = cpu_ns(pid), time.monotonic_ns()
            time.sleep(window_s)
            cpu_b, b_ns = cpu_ns(pid), time.monotonic_ns()
            counts = tracer.stop()
        except (RuntimeError, OSError) as e:
            tracer.close()
            self.note(f'{name}: syscall count with {self.syscall_tool} failed: {e}')
            return None
        return {'counts': counts, 'a_ns': a_ns, 'b_ns': b_ns,
                'cpu_ns': cpu_b - cpu_a if cpu_a is not None and cpu_b is not None else None}

    def syscall_result(self, rnd, chunks):
        if not self.syscall_tool:
            return {}
        if not rnd:
            return {'syscall_tool': self.syscall_tool}
        cpu = rnd['cpu_ns'] / 1000.0 / chunks if rnd['cpu_ns'] is not None and chunks else None
        return syscalls_per_chunk(rnd['counts'], chunks, self.syscall_tool, (rnd['b_ns'] - rnd['a_ns']) / 1e9, cpu)

    def shape(self):
        if self.args.smoke:
            return 40, 2
        if self.args.quick:
            return 100, 3
        return 200, 3

    # -- exporter scenario
    def exporter_scenario(self, n, tls, scrape):
        chunks, rounds = self.shape()
        slen = stream_seconds(chunks)
        interval = slen + 0.3
        phase = self.next_phase()
        up = self.upstream(tls)
        tags = [f'{phase}e{i}' for i in range(n)]
        targets = [(t, up.url(spec_for(t, i, n, chunks))) for i, t in enumerate(tags)]
        seconds = (rounds - 1) * interval + slen + 0.6
        label = f'{n} streams, {"TLS" if tls else "plain"}, {"scrape " + scrape_label(scrape) if scrape else "no scrape"}'
        self.log(f'{phase}: exporter, {label}, {seconds:.1f}s ({rounds} rounds of {chunks} chunks)')
        offset = wall_minus_mono()
        scr = None
        extra = {}
        allocs = None
        if self.driver == 'serve':
            rows_path = os.path.join(self.workdir, f'{phase}-rows.jsonl')
            # The exporter appends to its rows file: rows of an earlier run into the same
            # --out-dir would be read as this phase's (and counted as unpaired).
            if os.path.exists(rows_path):
                os.remove(rows_path)
            allocs = self.alloc_counter(f'{phase}-exporter')
            ex = Exporter(self.exporter_bin, self.workdir, f'{phase}-exporter',
                          exporter_config(targets, interval * 1000, self.pki['ca'] if tls else None,
                                          rows_path=rows_path), env=allocs.env() if allocs else None)
            pid = ex.pid
            if self.args.demote_server_thread and SUT_PREFIX:
                # Experiment for a proposed change: the HTTP server thread (third thread:
                # main, probe, server) below the probe thread, as `nice` would put it.
                tids = sorted(int(t) for t in os.listdir(f'/proc/{pid}/task'))
                if len(tids) >= 3:
                    os.sched_setscheduler(tids[2], os.SCHED_OTHER, os.sched_param(0))
                    extra['server_thread_demoted'] = True
            t0 = time.monotonic_ns()
            if scrape:
                scr = Scraper(f'{ex.base}/metrics', scrape)
                scr.start()
        else:
            if scrape:
                return None
            out = os.path.join(self.workdir, f'{phase}-driver.jsonl')
            url_file = os.path.join(self.workdir, f'{phase}-urls.txt')
            with open(url_file, 'w') as f:
                f.write(''.join(u + '\n' for _, u in targets))
            drv = Proc([os.path.join(self.bench_dir, 'bench_probe_driver'), 'streams',
                        '--url-list', url_file, '--streams', str(n), '--seconds', f'{seconds:.2f}',
                        '--out', out] + (['--ca-file', self.pki['ca']] if tls else []),
                       os.path.join(self.workdir, f'{phase}-driver.log'), sut=True)
            pid = drv.pid
            t0 = time.monotonic_ns()
        time.sleep(interval)
        alloc_a = allocs.read() if allocs else None
        cpu_points = sleep_sampling_cpu(pid, max(0.0, seconds - interval))
        (cpu_a, a_ns), (cpu_b, b_ns) = cpu_points[0], cpu_points[-1]
        alloc_b = allocs.read() if allocs else None
        extra['vm_hwm_kib'] = status_kib(pid, 'VmHWM')
        extra['vm_rss_kib'] = status_kib(pid, 'VmRSS')
        sys_round = None
        tail_ns = None  # probes from here on belong to the syscall round, not to the figures
        if self.driver == 'serve' and self.syscall_tool:
            # The syscall round: one more round of the same targets, counted from 0.5 s after
            # its start (connections and first tokens are past) for half a stream.
            tail_ns = t0 + int((rounds - 0.5) * interval * 1e9)
            if scr:
                scr.cut()
            sys_round = self.syscall_round(pid, f'{phase}-exporter', t0 + int((rounds * interval + 0.5) * 1e9),
                                           self.syscall_window(slen))
        if scr:
            extra['scrape'] = scr.finish()
        measured = []
        if self.driver == 'serve':
            # Give the last round a moment to finish before the rows are read.
            time.sleep(0.3)
            ex.stop()
            if allocs:
                allocs.close()
            rows = Exporter.rows_from_file(rows_path)
            if tail_ns:
                rows = [r for r in rows if (r['ts'] - offset) * 1e9 < tail_ns]
            for r in rows:
                measured.append({'tag': r['target'], 'start_ns': int((r['ts'] - offset) * 1e9),
                                 'ok': r['ok'] and not r.get('warmup'), 'reason': r.get('reason'),
                                 'gaps_ms': r.get('gaps_ms') or []})
        else:
            drv.p.wait(seconds + 60)
            drv.stop()
            with open(out) as f:
                for line in f:
                    r = json.loads(line)
                    measured.append({'tag': f'{phase}e{r["i"]}', 'start_ns': r['start_mono_ns'],
                                     'ok': r['ok'], 'reason': r.get('reason'), 'gaps_ms': r['gaps_ms']})
        time.sleep(0.3)
        truth = by_tag(up.collect(), f'{phase}e')
        fid = Fidelity()
        pair(measured, truth, t0 + int(interval * 0.5e9), fid)
        self.dump_pairs(phase)
        chunks_in_window = sends_in_window(truth, a_ns, b_ns)
        if sys_round:
            extra.update(self.syscall_result(sys_round, sends_in_window(truth, sys_round['a_ns'], sys_round['b_ns'])))
        elif self.syscall_tool:
            extra['syscall_tool'] = self.syscall_tool
        if allocs:
            extra.update(allocs_per_chunk(alloc_a, alloc_b, chunks_in_window) or {})
        res = {'phase': phase, 'streams': n, 'tls': tls, 'scrape': scrape, 'scrape_s': scrape, 'driver': self.driver,
               'seconds': seconds, 'chunks_per_stream': chunks, **fid.result(),
               'cpu_us_per_chunk': (cpu_b - cpu_a) / 1000.0 / chunks_in_window if chunks_in_window else None,
               **cpu_windows_result(cpu_points, lambda x, y: sends_in_window(truth, x, y)),
               'chunks_in_cpu_window': chunks_in_window, 'truth': truth_quality(truth),
               'loadavg': loadavg(), **extra}
        self.results['scenarios'].append(res)
        self.log(f'{phase}: p50/p99/max {fmt_us(res["err_p50_us"])}/{fmt_us(res["err_p99_us"])}/'
                 f'{fmt_us(res["err_max_us"])} us, stalls {res["detected"]}/{res["planted"]} false {res["false"]}, '
                 f'cpu {fmt_f(res["cpu_us_per_chunk"])} us/chunk, syscalls {fmt_f(res.get("syscalls_per_chunk"), 2)}'
                 f'/chunk, allocs {fmt_f(res.get("allocs_per_chunk"), 2)}/chunk, failed {res["failed"]} '
                 f'unpaired {res["unpaired"]} mismatched {res["mismatched"]}')
        return res

    # -- HTTP/2 vs HTTP/1.1 through the same nghttpx hop
    def h2_scenario(self, n):
        """Two exporters side by side on the same schedule: one speaks HTTP/2, the other
        HTTP/1.1, both over TLS to one nghttpx (ALPN h2 or http/1.1 on its front end; its
        back end is HTTP/1.1 to the plain truth upstream, whose send log is the truth)."""
        if self.driver != 'serve':
            self.note('h2 phase: needs the exporter binary (serve); skipped')
            return None
        chunks, rounds = self.shape()
        slen = stream_seconds(chunks)
        interval = slen + 0.3
        phase = self.next_phase()
        up = self.upstream(False)
        front = Nghttpx(self.workdir, phase, up.port, self.pki)
        sides = []
        for proto, version in (('h1', '1.1'), ('h2', '2')):
            tags = [f'{phase}{proto}e{i}' for i in range(n)]
            targets = [(t, front.url(spec_for(t, i, n, chunks))) for i, t in enumerate(tags)]
            rows_path = os.path.join(self.workdir, f'{phase}-{proto}-rows.jsonl')
            if os.path.exists(rows_path):
                os.remove(rows_path)
            cfg = exporter_config(targets, interval * 1000, self.pki['ca'], rows_path=rows_path,
                                  target_extra=[f'http_version: "{version}"'])
            sides.append({'proto': proto, 'version': version, 'rows_path': rows_path,
                          'ex': Exporter(self.exporter_bin, self.workdir, f'{phase}-{proto}-exporter', cfg)})
        seconds = (rounds - 1) * interval + slen + 0.6
        self.log(f'{phase}: HTTP/2 vs HTTP/1.1 via nghttpx (TLS), {n} + {n} streams, {seconds:.1f}s '
                 f'({rounds} rounds of {chunks} chunks)')
        offset = wall_minus_mono()
        t0 = time.monotonic_ns()
        time.sleep(interval)
        points = sleep_sampling_cpu_many([side['ex'].pid for side in sides] + [front.pid],
                                         max(0.0, seconds - interval))
        time.sleep(0.3)
        for side in sides:
            side['ex'].stop()
        front.stop()
        time.sleep(0.3)
        records = up.collect()
        res = {'phase': phase, 'streams': n, 'chunks_per_stream': chunks, 'seconds': seconds,
               'loadavg': loadavg(), 'sides': {}}
        for k, side in enumerate(sides):
            truth = by_tag(records, f'{phase}{side["proto"]}e')
            rows = Exporter.rows_from_file(side['rows_path'])
            versions = {}
            for r in rows:
                versions[r.get('http_version')] = versions.get(r.get('http_version'), 0) + 1
            measured = [{'tag': r['target'], 'start_ns': int((r['ts'] - offset) * 1e9),
                         'ok': r['ok'] and not r.get('warmup'), 'reason': r.get('reason'),
                         'gaps_ms': r.get('gaps_ms') or []} for r in rows]
            fid = Fidelity()
            pair(measured, truth, t0 + int(interval * 0.5e9), fid)
            self.dump_pairs(f'{phase}-{side["proto"]}')
            mine = [(p[k], p[-1]) for p in points]
            chunks_in_window = sends_in_window(truth, points[0][-1], points[-1][-1])
            cpu = mine[-1][0] - mine[0][0] if mine[0][0] is not None and mine[-1][0] is not None else None
            res['sides'][side['version']] = {
                **fid.result(), 'http_versions': versions, 'chunks_in_cpu_window': chunks_in_window,
                'cpu_us_per_chunk': cpu / 1000.0 / chunks_in_window if cpu is not None and chunks_in_window else None,
                **cpu_windows_result(mine, lambda x, y, t=truth: sends_in_window(t, x, y)),
                'truth': truth_quality(truth)}
        a, b = points[0][len(sides)], points[-1][len(sides)]
        all_truth = by_tag(records, f'{phase}h')
        n_all = sends_in_window(all_truth, points[0][-1], points[-1][-1])
        res['nghttpx_cpu_us_per_chunk'] = (b - a) / 1000.0 / n_all if a is not None and b is not None and n_all else None
        self.results.setdefault('h2', []).append(res)
        for version, r in res['sides'].items():
            self.log(f'{phase}: HTTP/{version} p50/p99/max {fmt_us(r["err_p50_us"])}/{fmt_us(r["err_p99_us"])}/'
                     f'{fmt_us(r["err_max_us"])} us, stalls {r["detected"]}/{r["planted"]} false {r["false"]}, '
                     f'cpu {fmt_f(r["cpu_us_per_chunk"])} us/chunk, rows by http_version {r["http_versions"]}, '
                     f'failed {r["failed"]} {r["fail_reasons"]} unpaired {r["unpaired"]} mismatched {r["mismatched"]}')
        return res

    # -- python baseline
    def baseline_scenario(self, n, tls):
        chunks, rounds = self.shape()
        slen = stream_seconds(chunks)
        phase = self.next_phase()
        up = self.upstream(tls)
        seconds = min(rounds, 3) * (slen + 0.4) + 0.3
        url_file = os.path.join(self.workdir, f'{phase}-urls.txt')
        with open(url_file, 'w') as f:
            f.write(''.join(up.url(spec_for(f'{phase}b{i}', i, n, chunks)) + '\n' for i in range(n)))
        out = os.path.join(self.workdir, f'{phase}-baseline.jsonl')
        self.log(f'{phase}: python baseline, {n} streams, {"TLS" if tls else "plain"}, {seconds:.1f}s')
        args = [sys.executable, os.path.join(HERE, 'baseline_client.py'), '--url-list', url_file,
                '--streams', str(n), '--seconds', f'{seconds:.2f}', '--out', out]
        if tls:
            args += ['--ca-file', self.pki['ca']]
        proc = Proc(args, os.path.join(self.workdir, f'{phase}-baseline.log'), sut=True)
        t0 = time.monotonic_ns()
        # Window: after interpreter start-up and the first connections, while every
        # thread is still streaming (each runs up to 3 streams back to back).
        time.sleep(min(1.0, slen * 0.5))
        cpu_a, a_ns = cpu_ns(proc.pid), time.monotonic_ns()
        time.sleep(max(0.5, slen * 1.5 - 0.2))
        cpu_b, b_ns = cpu_ns(proc.pid), time.monotonic_ns()
        try:
            proc.p.wait(seconds + 90)
        except subprocess.TimeoutExpired:
            self.note(f'{phase}: baseline did not finish in time; stopped')
        proc.stop()
        measured = []
        chunks_in_window = 0
        if os.path.exists(out):
            with open(out) as f:
                for line in f:
                    r = json.loads(line)
                    arr = r['arrivals']
                    # What the client processed in the window (it may lag behind the sends).
                    chunks_in_window += sum(1 for t in arr if a_ns <= t <= b_ns)
                    measured.append({'tag': f'{phase}b{r["i"]}', 'start_ns': r['t_start'], 'ok': r['ok'],
                                     'reason': r.get('error', '')[:40],
                                     'gaps_ms': [(arr[k + 1] - arr[k]) / 1e6 for k in range(len(arr) - 1)]})
        time.sleep(0.3)
        truth = by_tag(up.collect(), f'{phase}b')
        fid = Fidelity()
        pair(measured, truth, t0 + int(slen * 0.5e9), fid)
        self.dump_pairs(phase)
        res = {'phase': phase, 'streams': n, 'tls': tls, **fid.result(),
               'cpu_us_per_chunk': (cpu_b - cpu_a) / 1000.0 / chunks_in_window if chunks_in_window else None,
               'chunks_in_cpu_window': chunks_in_window, 'loadavg': loadavg()}
        self.results['baseline'].append(res)
        self.log(f'{phase}: baseline p50/p99/max {fmt_us(res["err_p50_us"])}/{fmt_us(res["err_p99_us"])}/'
                 f'{fmt_us(res["err_max_us"])} us, stalls {res["detected"]}/{res["planted"]} false {res["false"]}, '
                 f'cpu {fmt_f(res["cpu_us_per_chunk"])} us/chunk, failed {res["failed"]}')
        return res

    # -- SO_TIMESTAMPNS experiment
    def ts_experiment(self, n, tls):
        chunks, rounds = self.shape()
        slen = stream_seconds(chunks)
        phase = self.next_phase()
        up = self.upstream(tls)
        seconds = min(rounds, 3) * (slen + 0.1) + 0.3
        url_file = os.path.join(self.workdir, f'{phase}-urls.txt')
        with open(url_file, 'w') as f:
            f.write(''.join(up.url(spec_for(f'{phase}k{i}', i, n, chunks)) + '\n' for i in range(n)))
        out = os.path.join(self.workdir, f'{phase}-ts.jsonl')
        # With a syscall round, one more round of streams after the measured ones; the
        # client starts a stream only if it can finish it by --seconds.
        run_seconds = seconds + (slen + 0.1 if self.syscall_tool else 0.0)
        self.log(f'{phase}: SO_TIMESTAMPNS client, {n} streams, {"TLS" if tls else "plain"}, {run_seconds:.1f}s')
        args = [os.path.join(self.bench_dir, 'bench_ts_client'), '--url-list', url_file, '--streams', str(n),
                '--seconds', f'{run_seconds:.2f}', '--out', out]
        if tls:
            args += ['--ca-file', self.pki['ca']]
        allocs = self.alloc_counter(f'{phase}-ts')
        proc = Proc(args, os.path.join(self.workdir, f'{phase}-ts.log'), env=allocs.env() if allocs else None,
                    sut=True)
        t0 = time.monotonic_ns()
        time.sleep(min(1.0, slen * 0.5))
        alloc_a = allocs.read() if allocs else None
        cpu_points = sleep_sampling_cpu(proc.pid, max(0.5, slen * 1.5 - 0.2))
        (cpu_a, a_ns), (cpu_b, b_ns) = cpu_points[0], cpu_points[-1]
        alloc_b = allocs.read() if allocs else None
        sys_round = None
        tail_ns = None  # streams from here on belong to the syscall round, not to the figures
        if self.syscall_tool:
            # The fourth round starts ~3 stream lengths in; count from ~0.6 s after that.
            tail_ns = t0 + int((seconds - 0.5 * slen) * 1e9)
            sys_round = self.syscall_round(proc.pid, f'{phase}-ts', t0 + int(seconds * 1e9),
                                           self.syscall_window(slen))
        proc.p.wait(run_seconds + 60)
        proc.stop()
        if allocs:
            allocs.close()
        user, kern = [], []
        with open(out) as f:
            for line in f:
                r = json.loads(line)
                if tail_ns and r['start_mono_ns'] >= tail_ns:
                    continue
                u, k = r['user'], r['kern']
                tag = f'{phase}k{r["i"]}'
                user.append({'tag': tag, 'start_ns': r['start_mono_ns'], 'ok': r['ok'],
                             'gaps_ms': [(u[j + 1] - u[j]) / 1e6 for j in range(len(u) - 1)]})
                kern.append({'tag': tag, 'start_ns': r['start_mono_ns'], 'ok': r['ok'] and all(k),
                             'reason': 'no kernel timestamp',
                             'gaps_ms': [(k[j + 1] - k[j]) / 1e6 for j in range(len(k) - 1)]})
        time.sleep(0.3)
        truth = by_tag(up.collect(), f'{phase}k')
        fu, fk = Fidelity(), Fidelity()
        cut = t0 + int(slen * 0.5e9)
        pair(user, truth, cut, fu)
        pair(kern, truth, cut, fk)
        PAIRS_OUT.clear()
        chunks_in_window = chunks_in_sys = 0
        all_stamps = []
        with open(out) as f:
            for line in f:
                stamps = json.loads(line)['user']
                all_stamps.append(stamps)
                chunks_in_window += sum(1 for t in stamps if a_ns <= t <= b_ns)
                if sys_round:
                    chunks_in_sys += sum(1 for t in stamps if sys_round['a_ns'] <= t <= sys_round['b_ns'])

        def stamps_between(x, y):
            return sum(1 for st in all_stamps for t in st if x <= t <= y)
        res = {'phase': phase, 'streams': n, 'tls': tls, 'user': fu.result(), 'kernel': fk.result(),
               'cpu_us_per_chunk': (cpu_b - cpu_a) / 1000.0 / chunks_in_window if chunks_in_window else None,
               **cpu_windows_result(cpu_points, stamps_between),
               'chunks_in_cpu_window': chunks_in_window, **self.syscall_result(sys_round, chunks_in_sys)}
        if allocs:
            res.update(allocs_per_chunk(alloc_a, alloc_b, chunks_in_window) or {})
        self.results['ts_experiment'].append(res)
        self.log(f'{phase}: user p99 {fmt_us(res["user"]["err_p99_us"])} us, kernel p99 '
                 f'{fmt_us(res["kernel"]["err_p99_us"])} us, cpu {fmt_f(res["cpu_us_per_chunk"])} us/chunk, '
                 f'syscalls {fmt_f(res.get("syscalls_per_chunk"), 2)}/chunk, '
                 f'allocs {fmt_f(res.get("allocs_per_chunk"), 2)}/chunk')
        return res

    # -- RSS idle with 10 targets, /metrics with 10,000 series end to end
    def idle_and_metrics(self):
        if self.driver != 'serve':
            return
        phase = self.next_phase()
        up = self.upstream(False)
        targets = [(f'{phase}i{i}', up.url(f'id={phase}i{i},ttft=50,gap=20,chunks=50')) for i in range(10)]
        self.log(f'{phase}: RSS idle with 10 targets')
        ex = Exporter(self.exporter_bin, self.workdir, f'{phase}-idle',
                      exporter_config(targets, 3600 * 1000, None))
        wait_for(lambda: len(ex.rows(100)) >= 10, 20, '10 probes')
        time.sleep(1.0)
        text = http_get(f'{ex.base}/metrics').decode()
        series10 = sum(1 for line in text.splitlines() if line and not line.startswith('#'))
        ov = self.results['overhead']
        ov['idle_rss_kib'] = status_kib(ex.pid, 'VmRSS')
        ov['idle_hwm_kib'] = status_kib(ex.pid, 'VmHWM')
        ov['series_10_targets'] = series10
        ex.stop()
        up.collect()

        per_target = max(1, series10 / 10.0)
        k = int(math.ceil(10000 / per_target)) + 1
        phase = self.next_phase()
        self.log(f'{phase}: /metrics with >= 10,000 series ({k} targets)')
        targets = [(f'{phase}m{i}', up.url(f'id={phase}m{i},ttft=20,gap=5,chunks=20')) for i in range(k)]
        ex = Exporter(self.exporter_bin, self.workdir, f'{phase}-metrics',
                      exporter_config(targets, 3600 * 1000, None))
        wait_for(lambda: len(ex.rows(1000)) >= min(k, 1000), 30, f'{k} probes')
        times = []
        body = b''
        for _ in range(10 if self.args.quick or self.args.smoke else 30):
            t = time.perf_counter()
            body = http_get(f'{ex.base}/metrics')
            times.append((time.perf_counter() - t) * 1000)
        cpu0 = cpu_ns(ex.pid)
        for _ in range(10):
            http_get(f'{ex.base}/metrics')
        cpu_per_scrape_ms = (cpu_ns(ex.pid) - cpu0) / 1e6 / 10
        # As Prometheus asks (gzip, compressed as it is rendered): the same scrape's CPU.
        cpu0 = cpu_ns(ex.pid)
        for _ in range(10):
            wire = len(http_get_gzip(f'{ex.base}/metrics')[0])
        cpu_per_gzip_scrape_ms = (cpu_ns(ex.pid) - cpu0) / 1e6 / 10
        text = body.decode()
        ov['metrics_e2e'] = {'targets': k, 'series': sum(1 for line in text.splitlines()
                                                         if line and not line.startswith('#')),
                             'bytes': len(body), 'ms': summary(times), 'cpu_ms_per_scrape': cpu_per_scrape_ms,
                             'gzip_bytes': wire, 'cpu_ms_per_gzip_scrape': cpu_per_gzip_scrape_ms}
        ex.stop()
        up.collect()

    # -- allocations on the probe hot path
    def alloc_probe_before(self):
        if self.args.before_build_dir:
            self.alloc_probe(os.path.join(self.args.before_build_dir, 'tests', 'bench', 'bench_probe_driver'),
                             'probe_alloc_before')

    def alloc_probe(self, prog=None, key='probe_alloc'):
        prog = prog or os.path.join(self.bench_dir, 'bench_probe_driver')
        if not os.access(prog, os.X_OK):
            return
        up = self.upstream(False)
        phase = self.next_phase()
        self.log(f'{phase}: allocations per chunk on the probe path ({os.path.basename(prog)} alloc, {key})')
        r = subprocess.run([prog, 'alloc',
                            '--url-short', up.url(f'id={phase}s,ttft=5,gap=2,chunks=50'), '--chunks-short', '50',
                            '--url-long', up.url(f'id={phase}l,ttft=5,gap=2,chunks=250'), '--chunks-long', '250',
                            '--probes', '5'], capture_output=True, text=True, timeout=120)
        try:
            self.results['overhead'][key] = json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            self.note('probe alloc run failed: ' + r.stderr[-500:])
        up.collect()

    # -- the probe path of another build (--before-build-dir, e.g. main before a change) vs
    #    this one: same streams, back to back, so a change lands with its before/after figures
    def ab_builds(self, n, tls):
        before = self.args.before_build_dir
        if not before:
            self.note('no --before-build-dir: no before/after figures of the probe path')
            return
        progs = [('before', os.path.join(before, 'tests', 'bench', 'bench_probe_driver')),
                 ('after', os.path.join(self.bench_dir, 'bench_probe_driver'))]
        if not all(os.access(p, os.X_OK) for _, p in progs):
            self.note(f'bench_probe_driver missing in {before} or {self.build}: no before/after figures')
            return
        chunks, rounds = self.shape()
        seconds = 2 * (stream_seconds(chunks) + 0.1) + 0.5
        up = self.upstream(tls)
        out_ab = []
        for what, prog in progs:
            phase = self.next_phase()
            self.log(f'{phase}: probe path {what} ({prog}), {n} streams, {"TLS" if tls else "plain"}, {seconds:.1f}s')
            url_file = os.path.join(self.workdir, f'{phase}-urls.txt')
            with open(url_file, 'w') as f:
                f.write(''.join(up.url(spec_for(f'{phase}d{i}', i, n, chunks)) + '\n' for i in range(n)))
            out = os.path.join(self.workdir, f'{phase}-driver.jsonl')
            t0 = time.monotonic_ns()
            drv = Proc([prog, 'streams', '--url-list', url_file, '--streams', str(n),
                        '--seconds', f'{seconds:.2f}', '--out', out] + (['--ca-file', self.pki['ca']] if tls else []),
                       os.path.join(self.workdir, f'{phase}-driver.log'), sut=True)
            # VmHWM polled while it runs (wait4's ru_maxrss would include the harness's own
            # RSS, inherited at fork and kept across exec); wait4 for the CPU of the whole run.
            hwm = None
            while True:
                wpid, status, ru = os.wait4(drv.pid, os.WNOHANG)
                if wpid:
                    break
                hwm = status_kib(drv.pid, 'VmHWM') or hwm
                time.sleep(0.1)
            drv.p.returncode = os.waitstatus_to_exitcode(status)
            drv.stop()
            measured, total_chunks = [], 0
            with open(out) as f:
                for line in f:
                    r = json.loads(line)
                    total_chunks += r['chunks']
                    measured.append({'tag': f'{phase}d{r["i"]}', 'start_ns': r['start_mono_ns'], 'ok': r['ok'],
                                     'reason': r.get('reason'), 'gaps_ms': r['gaps_ms']})
            time.sleep(0.3)
            truth = by_tag(up.collect(), f'{phase}d')
            fid = Fidelity()
            pair(measured, truth, t0 + int(stream_seconds(chunks) * 0.5e9), fid)
            PAIRS_OUT.clear()
            res = {'what': what, 'streams': n, 'tls': tls, **fid.result(),
                   'cpu_us_per_chunk': (ru.ru_utime + ru.ru_stime) * 1e6 / total_chunks if total_chunks else None,
                   'maxrss_kib': hwm}
            out_ab.append(res)
            self.log(f'{phase}: {what}: err p50/p99 {fmt_us(res["err_p50_us"])}/{fmt_us(res["err_p99_us"])} us, '
                     f'CPU {fmt_f(res["cpu_us_per_chunk"])} us/chunk (whole run), max RSS {mib(res["maxrss_kib"])} MiB')
        self.results['ab'] = out_ab

    # -- `run`: peak memory against targets x --concurrency (issue 11 §2)
    def run_memory(self, targets, concurrency, runs=2):
        """Peak RSS of `llm_stream_exporter run` over `targets` targets at --concurrency, for this
        build and (with --before-build-dir) the build before, in the same run. Short streams
        (20 chunks, 5 ms apart); rows to a file. The process lives under a 6 GiB address-space
        limit and the machine's open-file limit, so a build that needs more fails instead of
        taking the machine; the row says how it ended."""
        builds = [('after', self.exporter_bin)]
        if self.args.before_build_dir:
            builds.insert(0, ('before', os.path.join(self.args.before_build_dir, 'exporter',
                                                     'llm_stream_exporter')))
        up = self.upstream(False)
        out = []
        for what, binary in builds:
            if not os.access(binary, os.X_OK):
                self.note(f'{binary} not found: no `run` memory figure ({what})')
                continue
            phase = self.next_phase()
            self.log(f'{phase}: run memory ({what}), {targets} targets x --concurrency {concurrency}, '
                     f'{runs} runs')
            tl = [(f'{phase}r{i}', up.url(f'id={phase}r{i},ttft=20,gap=5,chunks=20')) for i in range(targets)]
            cfg = os.path.join(self.workdir, f'{phase}-run.yaml')
            with open(cfg, 'w') as f:
                f.write(exporter_config(tl, 1000, None))
            rows = os.path.join(self.workdir, f'{phase}-rows.jsonl')
            if os.path.exists(rows):  # an earlier bench in the same --out-dir
                os.remove(rows)
            cmd = ['prlimit', f'--as={6 << 30}', binary, 'run', '--config', cfg, '--runs', str(runs),
                   '--warmup', '0', '--concurrency', str(concurrency), '--seed', '1', '--out', rows,
                   '--format', 'json']
            t0 = time.monotonic()
            proc = Proc(cmd, os.path.join(self.workdir, f'{phase}-run.log'))
            hwm, ru, status = None, None, 0
            while True:
                wpid, status, ru = os.wait4(proc.pid, os.WNOHANG)
                if wpid:
                    break
                hwm = status_kib(proc.pid, 'VmHWM') or hwm
                if time.monotonic() - t0 > 300:
                    proc.stop(signal.SIGKILL)
                    break
                time.sleep(0.05)
            code = os.waitstatus_to_exitcode(status) if wpid else None
            proc.p.returncode = code
            proc.stop()
            ok_rows = 0
            if os.path.exists(rows):
                with open(rows) as f:
                    ok_rows = sum(1 for line in f if '"ok":true' in line.replace(' ', ''))
            res = {'what': what, 'targets': targets, 'concurrency': concurrency, 'runs': runs,
                   'exit': code, 'seconds': time.monotonic() - t0, 'maxrss_kib': hwm,
                   'ok_rows': ok_rows, 'planned': targets * runs,
                   'cpu_s': (ru.ru_utime + ru.ru_stime) if ru else None}
            if code != 0:
                res['log_tail'] = proc.output()[-400:]
            out.append(res)
            self.log(f'{phase}: {what}: exit {code}, peak RSS {mib(hwm)} MiB, {ok_rows}/{targets * runs} ok rows, '
                     f'{res["seconds"]:.1f} s')
            up.collect()
        self.results.setdefault('run_memory', []).extend(out)

    # -- Google Benchmark programs and the Python decode baseline
    def gbench(self):
        min_time = '0.05' if self.args.quick or self.args.smoke else '0.3'
        for prog in ('bench_decode', 'bench_metrics'):
            self.log(f'google benchmark: {prog}')
            path = os.path.join(self.bench_dir, prog)
            extra = []
            if self.args.smoke:
                extra = ['--benchmark_filter=BM_SseJson_PerEvent/0|BM_MetricsRender']
            r = subprocess.run([path, '--benchmark_format=json', f'--benchmark_min_time={min_time}'] + extra,
                               capture_output=True, text=True, timeout=300)
            try:
                self.results['gbench'][prog] = json.loads(r.stdout)['benchmarks']
            except ValueError:
                self.note(f'{prog} failed: {r.stderr[-500:]}')
        self.results['gbench']['python_decode'] = python_decode_baseline()

    def finish(self):
        for t in self.truth.values():
            t.stop()


def perf_counts_syscalls():
    """Whether `perf stat` can count the syscall tracepoints here (root or a low
    perf_event_paranoid, and tracefs)."""
    try:
        r = subprocess.run(['perf', 'stat', '-x', ',', '-e', 'syscalls:sys_enter_getpid', '--', 'true'],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and re.search(r'^\d+,[^,]*,syscalls:sys_enter_getpid', r.stderr, re.M) is not None


def machine_check():
    """How late a sleeping normal-priority thread wakes up on this machine right now
    (1 ms period for 1 s, a tiny cyclictest): tells whether other load will show up
    in the figures."""
    lat = []
    nxt = time.monotonic_ns()
    for _ in range(1000):
        nxt += 1_000_000
        d = nxt - time.monotonic_ns()
        if d > 0:
            time.sleep(d / 1e9)
        lat.append((time.monotonic_ns() - nxt) / 1000.0)
    s = summary(lat)
    return {'wake_late_us': s, 'loadavg': loadavg()}


def python_decode_baseline():
    """json.loads per data line, the baseline's way, on the synthetic stream (same as decode_bench)."""
    head = ('data: {"id":"chatcmpl-bench0123456789abcdefABCD","object":"chat.completion.chunk",'
            '"created":1700000000,"model":"bench-model","system_fingerprint":"fp_bench",'
            '"choices":[{"index":0,"delta":')
    words = [' Streaming', ' answers', ' arrive', ' chunk', ' by', ',', ' and', ' users']
    s = head + '{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}\n\n'
    for i in range(200):
        s += head + '{"content":"' + words[i % 8] + '"},"logprobs":null,"finish_reason":null}]}\n\n'
    s += head + '{},"logprobs":null,"finish_reason":"stop"}]}\n\n'
    s += ('data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,'
          '"model":"bench-model","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":200,'
          '"total_tokens":212}}\n\n')
    s += 'data: [DONE]\n\n'
    body = s.encode()
    lines = body.splitlines(keepends=True)
    events = reps = 0
    t0 = time.process_time()
    while time.process_time() - t0 < 0.5:
        for line in lines:
            line = line.strip()
            if not line.startswith(b'data:'):
                continue
            data = line[5:].strip()
            if data == b'[DONE]':
                break
            obj = json.loads(data)
            ch = obj.get('choices') or []
            if ch:
                (ch[0].get('delta') or {}).get('content')
            events += 1
        reps += 1
    dt = time.process_time() - t0
    return {'mb_per_s': reps * len(body) / dt / 1e6, 'events_per_s': events / dt}


# ------------------------------------------------------------------ table

def fmt_us(v):
    if v is None:
        return '-'
    return f'{v:.0f}' if v >= 10 else f'{v:.1f}'


def fmt_f(v, nd=1):
    return '-' if v is None else f'{v:.{nd}f}'


def mib(kib):
    return '-' if kib is None else f'{kib / 1024:.1f}'


def over(a, b):
    """a / b, or None when either is missing or b is 0."""
    return a / b if a is not None and b else None


def floor_ratios(s, floor):
    """Exporter row s divided by the bare client's row of the same streams and TLS:
    'cpu/sys/alloc' as printed (- where either side is missing or the floor is 0)."""
    if not floor:
        return '-'
    return '/'.join(fmt_f(over(s.get(k), floor.get(k))) for k in
                    ('cpu_us_per_chunk', 'syscalls_per_chunk', 'allocs_per_chunk'))


def syscall_breakdown(row, top=6):
    by = row.get('syscalls_by_name_per_chunk')
    if not by:
        return '-'
    parts = [f'{k} {v:.2f}' for k, v in list(by.items())[:top]]
    if len(by) > top:
        parts.append(f'other {sum(list(by.values())[top:]):.2f}')
    return ', '.join(parts)


def gb_lookup(res, prog, name_prefix):
    out = []
    for b in res['gbench'].get(prog, []):
        if b['name'].startswith(name_prefix) and b.get('run_type', 'iteration') == 'iteration':
            out.append(b)
    return out


def render(res, args):
    L = []
    L.append(f'llm-stream-exporter fidelity and overhead ({"smoke" if args.smoke else "quick" if args.quick else "full"} run; '
             f'driver: {res["driver"]}; {res["cpus"]} CPUs; load average at start {res["load_start"]}, '
             f'end {res["load_end"]})')
    m = res.get('machine', {}).get('wake_late_us')
    if m:
        L.append(f'machine check before the run (normal priority, 1 ms sleeps): wake-up lateness p50 {m["p50"]:.0f} us, '
                 f'p99 {m["p99"]:.0f} us, max {m["max"]:.0f} us. Systems under test ran at '
                 f'{"SCHED_FIFO 5 (--sut-priority rt)" if res.get("sut_priority") == "rt" else "normal priority"}.')
    L.append(f'streams: 50 chunks/s (gap {GAP_MS:g} ms +/- {JITTER_MS:g}), one {STALL_MS:g} ms stall and one '
             f'{NEAR_MS:g} ms near miss per stream, threshold {THRESHOLD_MS:g} ms. Gap error = |measured - true|, '
             'true from the upstream\'s pre-write(2) stamps; steady state (first round separate).')
    L.append('')
    hdr = (f'{"streams":>7} {"tls":>5} {"scrape":>6} | {"gaps":>7} {"err p50":>7} {"p99":>6} {"max":>7} '
           f'{"p99 1st":>7} | {"stalls det/planted":>18} {"false":>5} | {"CPU us/chunk":>12} '
           f'{"syscalls/chunk":>14} {"allocs/chunk":>12} {"/floor cpu/sys/alloc":>20} | '
           f'{"py err p50":>10} {"p99":>7} {"max":>7} {"py stalls":>11} {"py false":>8} {"py CPU":>7} {"ratio":>6} | '
           f'{"scrape ms p50/max":>17} | {"upstream late p99":>17}')
    L.append(hdr)
    L.append('-' * len(hdr))
    base = {(b['streams'], b['tls']): b for b in res['baseline']}
    floor = {(e['streams'], e['tls']): e for e in res['ts_experiment']}
    for s in res['scenarios']:
        b = base.get((s['streams'], s['tls'])) if not s['scrape'] else None
        ratio = (b['cpu_us_per_chunk'] / s['cpu_us_per_chunk']
                 if b and b.get('cpu_us_per_chunk') and s.get('cpu_us_per_chunk') else None)
        sc = s.get('scrape')
        line = (f'{s["streams"]:>7} {"TLS" if s["tls"] else "plain":>5} {scrape_label(s["scrape_s"]) if s["scrape"] else "no":>6} | '
                f'{s["gaps"]:>7} {fmt_us(s["err_p50_us"]):>7} {fmt_us(s["err_p99_us"]):>6} {fmt_us(s["err_max_us"]):>7} '
                f'{fmt_us(s["err_p99_all_us"]):>7} | {str(s["detected"]) + "/" + str(s["planted"]):>18} {s["false"]:>5} | '
                f'{fmt_f(s["cpu_us_per_chunk"]):>12} {fmt_f(s.get("syscalls_per_chunk"), 2):>14} '
                f'{fmt_f(s.get("allocs_per_chunk"), 2):>12} '
                f'{floor_ratios(s, floor.get((s["streams"], s["tls"]))):>20} | ')
        if b:
            line += (f'{fmt_us(b["err_p50_us"]):>10} {fmt_us(b["err_p99_us"]):>7} {fmt_us(b["err_max_us"]):>7} '
                     f'{str(b["detected"]) + "/" + str(b["planted"]):>11} {b["false"]:>8} '
                     f'{fmt_f(b["cpu_us_per_chunk"]):>7} {fmt_f(ratio):>6} | ')
        else:
            line += f'{"":>10} {"":>7} {"":>7} {"":>11} {"":>8} {"":>7} {"":>6} | '
        line += (f'{fmt_f(sc["ms"]["p50"])}/{fmt_f(sc["ms"]["max"])} ({sc["scrapes"]}x)' if sc else '').rjust(17)
        late = s['truth']['late_us']['p99']
        # The truth upstream runs at the highest priority; when even it is late, the
        # machine itself stalled (other load, the hypervisor) during this scenario.
        line += f' | {fmt_us(late):>10} us{" (!)" if late is not None and late > 1000 else ""}'
        L.append(line)
        if s['failed'] or s['unpaired'] or s['mismatched']:
            L.append(f'{"":>21}   ! failed probes {s["failed"]} {s["fail_reasons"]}, unpaired {s["unpaired"]}, '
                     f'gap-count mismatches {s["mismatched"]}')
    if any(s['truth']['late_us']['p99'] and s['truth']['late_us']['p99'] > 1000 for s in res['scenarios']):
        L.append('(!) the truth upstream (SCHED_FIFO 10, above everything measured) was itself late by > 1 ms at p99: '
                 'the machine stalled in that scenario (other tenants, the hypervisor, or long non-preemptible '
                 'kernel work such as the exporter freeing a 30 MB /metrics render); the send log stays exact, '
                 'but such errors are not the probe path\'s alone.')
    L.append('')
    L.append('Truth upstream (per scenario): send lateness vs schedule p50/p99, write(2) duration p99/max (us):')
    L.append('  ' + '; '.join(
        f'{s["streams"]}{"T" if s["tls"] else "P"}{"S" + scrape_label(s["scrape_s"]) if s["scrape"] else ""}: '
        f'{fmt_us(s["truth"]["late_us"]["p50"])}/{fmt_us(s["truth"]["late_us"]["p99"])}, '
        f'{fmt_us(s["truth"]["wdur_us"]["p99"])}/{fmt_us(s["truth"]["wdur_us"]["max"])}'
        for s in res['scenarios']))

    if res['ts_experiment']:
        L.append('')
        L.append('SO_TIMESTAMPNS experiment (bench_ts_client, one epoll thread like the probe thread):')
        L.append(f'{"streams":>7} {"tls":>5} | {"user-stamp err p50":>18} {"p99":>7} {"max":>7} | '
                 f'{"kernel-stamp err p50":>20} {"p99":>7} {"max":>7} | {"CPU us/chunk":>12} '
                 f'{"syscalls/chunk":>14} {"allocs/chunk":>12}')
        for e in res['ts_experiment']:
            u, k = e['user'], e['kernel']
            L.append(f'{e["streams"]:>7} {"TLS" if e["tls"] else "plain":>5} | {fmt_us(u["err_p50_us"]):>18} '
                     f'{fmt_us(u["err_p99_us"]):>7} {fmt_us(u["err_max_us"]):>7} | {fmt_us(k["err_p50_us"]):>20} '
                     f'{fmt_us(k["err_p99_us"]):>7} {fmt_us(k["err_max_us"]):>7} | {fmt_f(e["cpu_us_per_chunk"]):>12} '
                     f'{fmt_f(e.get("syscalls_per_chunk"), 2):>14} {fmt_f(e.get("allocs_per_chunk"), 2):>12}')

    L.extend(render_syscalls_allocs(res))

    if res.get('ab'):
        L.append('')
        L.append('Probe path alone (bench_probe_driver, N probers on one thread), --before-build-dir vs this build '
                 '(CPU and max RSS of the whole run, start-up included):')
        for a in res['ab']:
            L.append(f'  {a["what"]:<9} {a["streams"]} streams {"TLS" if a["tls"] else "plain"}: err p50/p99/max '
                     f'{fmt_us(a["err_p50_us"])}/{fmt_us(a["err_p99_us"])}/{fmt_us(a["err_max_us"])} us, '
                     f'{fmt_f(a["cpu_us_per_chunk"])} us CPU/chunk, max RSS {mib(a["maxrss_kib"])} MiB')
    ov = res['overhead']
    L.append('')
    L.append('Overhead:')
    if 'idle_rss_kib' in ov:
        L.append(f'  RSS idle, 10 targets: {mib(ov["idle_rss_kib"])} MiB (VmHWM {mib(ov["idle_hwm_kib"])} MiB; '
                 f'{ov["series_10_targets"]} series)')
    for s in res['scenarios']:
        if s['streams'] >= 1000 and s.get('vm_hwm_kib'):
            L.append(f'  RSS peak (VmHWM), {s["streams"]} streams {"TLS" if s["tls"] else "plain"} '
                     f'{"+scrape " + scrape_label(s["scrape_s"]) if s["scrape"] else ""}: {mib(s["vm_hwm_kib"])} MiB')
    for r in res.get('run_memory', []):
        how = 'ok' if r['exit'] == 0 else f'exit {r["exit"]}'
        L.append(f'  `run` {r["targets"]} targets x --concurrency {r["concurrency"]} ({r["what"]}): peak RSS '
                 f'{mib(r["maxrss_kib"])} MiB, {how}, {r["ok_rows"]}/{r["planned"]} ok rows, {r["seconds"]:.1f} s')
    if 'metrics_e2e' in ov:
        m = ov['metrics_e2e']
        L.append(f'  GET /metrics end to end, {m["series"]} series ({m["targets"]} targets, {m["bytes"] / 1e6:.2f} MB): '
                 f'p50 {fmt_f(m["ms"]["p50"])} ms, max {fmt_f(m["ms"]["max"])} ms, exporter CPU '
                 f'{fmt_f(m["cpu_ms_per_scrape"])} ms per scrape'
                 + (f'; with gzip as Prometheus asks ({m["gzip_bytes"] / 1e6:.2f} MB): '
                    f'{fmt_f(m["cpu_ms_per_gzip_scrape"])} ms' if 'gzip_bytes' in m else ''))
    for key, what in (('probe_alloc', 'this build'), ('probe_alloc_before', '--before-build-dir')):
        if key in ov:
            a = ov[key]
            L.append(f'  probe hot path (Prober::run, plain, {what}): {a["allocs_per_extra_chunk"]:.2f} heap '
                     f'allocations per additional chunk ({a["allocs_per_probe_short"]:.0f} per '
                     f'{a["chunks_short"]:.0f}-chunk probe, {a["allocs_per_probe_long"]:.0f} per '
                     f'{a["chunks_long"]:.0f}-chunk probe); {a["cpu_us_per_chunk_long"]:.1f} us CPU per chunk, '
                     'one stream')
    L += render_h2(res)
    L.append('')
    L.append('Google Benchmark (CPU time; the machine is shared, so wall time is higher):')
    for b in gb_lookup(res, 'bench_metrics', 'BM_'):
        L.append(f'  {b["name"]:<42} {b["cpu_time"]:8.2f} ms CPU {b["real_time"]:8.2f} ms wall  '
                 f'series {b.get("series", 0):.0f}')
    for prefix in ('BM_SseJson_PerEvent', 'BM_SseJson_Whole', 'BM_SseOnly_PerEvent', 'BM_NaiveBaseline'):
        for b in gb_lookup(res, 'bench_decode', prefix):
            L.append(f'  {b["name"]:<26} {b.get("label", ""):<42} {b["bytes_per_second"] / 1e6:8.0f} MB/s '
                     f'{b["items_per_second"] / 1e6:6.2f} M events/s  allocs/event {b.get("allocs_per_event", 0):.3f}')
    pd = res['gbench'].get('python_decode')
    if pd:
        L.append(f'  Python json.loads per line (baseline way), synthetic stream: {pd["mb_per_s"]:.1f} MB/s, '
                 f'{pd["events_per_s"] / 1e6:.3f} M events/s')

    L.append('')
    L.append('Targets (issues 5 and 11):')
    for line in targets_verdict(res):
        L.append('  ' + line)
    for n in res['notes']:
        L.append('note: ' + n)
    return '\n'.join(L)


def render_h2(res):
    """The h2 column: HTTP/2 and HTTP/1.1 side by side, same schedule, same run, same hop."""
    L = []
    for h in res.get('h2', []):
        L.append('')
        L.append(f'HTTP/2 vs HTTP/1.1 ({h["streams"]} + {h["streams"]} streams of {h["chunks_per_stream"]} chunks '
                 'at the same time, same schedule; each exporter over TLS to one nghttpx, front end h2 or '
                 'http/1.1 by ALPN, back end HTTP/1.1 to the truth upstream; gap error against the upstream\'s '
                 'write stamps, so both columns include the nghttpx hop):')
        hdr = (f'{"protocol":>9} | {"gaps":>7} {"err p50":>7} {"p99":>7} {"max":>7} | {"stalls det/planted":>18} '
               f'{"false":>5} | {"CPU us/chunk":>12} {"best of 3":>9} | {"rows":>14} | failed')
        L.append(hdr)
        L.append('-' * len(hdr))
        sides = h['sides']
        for version in ('1.1', '2'):
            r = sides.get(version)
            if not r:
                continue
            rows = ','.join(f'{k}:{v}' for k, v in sorted(r['http_versions'].items(), key=str))
            L.append(f'{"HTTP/" + version:>9} | {r["gaps"]:>7} {fmt_us(r["err_p50_us"]):>7} {fmt_us(r["err_p99_us"]):>7} '
                     f'{fmt_us(r["err_max_us"]):>7} | {str(r["detected"]) + "/" + str(r["planted"]):>18} '
                     f'{r["false"]:>5} | {fmt_f(r["cpu_us_per_chunk"]):>12} {fmt_f(r["cpu_us_per_chunk_best"]):>9} | '
                     f'{rows:>14} | {r["failed"]} {r["fail_reasons"] or ""}')
        a, b = sides.get('1.1'), sides.get('2')
        if a and b:
            def ratio(key):
                return fmt_f(b[key] / a[key], 2) if a.get(key) and b.get(key) else '-'
            L.append(f'{"h2 / 1.1":>9} | {"":>7} {ratio("err_p50_us"):>7} {ratio("err_p99_us"):>7} '
                     f'{ratio("err_max_us"):>7} | {"":>18} {"":>5} | {ratio("cpu_us_per_chunk"):>12} '
                     f'{ratio("cpu_us_per_chunk_best"):>9} |')
        L.append(f'  nghttpx worker: {fmt_f(h.get("nghttpx_cpu_us_per_chunk"))} us CPU per chunk relayed '
                 f'(both sides); load average after the phase {h["loadavg"]}')
    return L


def render_syscalls_allocs(res):
    """Where syscalls/chunk and allocs/chunk come from, the syscall breakdown per row and the
    exporter / bare client ratios."""
    rows = [(f'{s["streams"]} {"TLS" if s["tls"] else "plain"}{" +scrape " + scrape_label(s["scrape_s"]) if s["scrape"] else ""}', 'exporter', s)
            for s in res['scenarios']]
    rows += [(f'{e["streams"]} {"TLS" if e["tls"] else "plain"}', 'bare client', e) for e in res['ts_experiment']]
    tools = sorted({r.get('syscall_tool') for _, _, r in rows if r.get('syscall_tool')})
    allocs = any(r.get('allocs_per_chunk') is not None for _, _, r in rows)
    if not tools and not allocs:
        return []
    L = ['']
    if tools:
        L.append(f'System calls per chunk ({" and ".join(tools)}: '
                 + ('perf stat counting the syscalls:sys_enter_* tracepoints' if 'perf' in tools else '')
                 + (', ' if len(tools) > 1 else '')
                 + ('strace -c -f' if 'strace' in tools else '')
                 + '), counted in a separate round right after the CPU window (one more round of the same '
                 'streams, half a stream long), divided by the chunks of that round\'s window; "CPU traced" is the '
                 'CPU per chunk under the tracer, against the untraced figure:')
        for label, what, r in rows:
            if r.get('syscalls_per_chunk') is None:
                continue
            L.append(f'  {label:<17} {what:<11} {r["syscalls_per_chunk"]:6.2f} = {syscall_breakdown(r)} '
                     f'(CPU traced {fmt_f(r.get("cpu_us_per_chunk_traced"))} vs {fmt_f(r.get("cpu_us_per_chunk"))} '
                     f'us/chunk; {r["chunks_in_syscall_window"]} chunks in {r["syscall_window_s"]:.1f} s)')
    if allocs:
        L.append('Heap allocations per chunk (LD_PRELOAD libbench_alloc_count.so: malloc, calloc, realloc, '
                 'aligned_alloc, posix_memalign, memalign; over the CPU window, in the same run):')
        for label, what, r in rows:
            by = r.get('allocs_by_function_per_chunk')
            if not by:
                continue
            split = ', '.join(f'{k} {by[k]:.2f}' for k in ALLOC_FUNCS if by[k])
            L.append(f'  {label:<17} {what:<11} {r["allocs_per_chunk"]:6.2f} = {split or "-"} (free {by["free"]:.2f})')
    floor = {(e['streams'], e['tls']): e for e in res['ts_experiment']}
    pairs = [(s, floor.get((s['streams'], s['tls']))) for s in res['scenarios']]
    pairs = [(s, f) for s, f in pairs if f]
    if pairs:
        L.append('Exporter / bare client (bench_ts_client, same streams and TLS, same run): CPU, syscalls, '
                 'allocations per chunk:')
        for s, f in pairs:
            L.append(f'  {s["streams"]} {"TLS" if s["tls"] else "plain"}{" +scrape " + scrape_label(s["scrape_s"]) if s["scrape"] else "":<14}: '
                     f'CPU {fmt_f(over(s.get("cpu_us_per_chunk"), f.get("cpu_us_per_chunk")))}x '
                     f'(best of {CPU_WINDOWS} windows {fmt_f(over(s.get("cpu_us_per_chunk_best"), f.get("cpu_us_per_chunk_best")))}x: '
                     f'{fmt_f(s.get("cpu_us_per_chunk_best"))} vs {fmt_f(f.get("cpu_us_per_chunk_best"))} us), '
                     f'syscalls {fmt_f(over(s.get("syscalls_per_chunk"), f.get("syscalls_per_chunk")))}x, '
                     f'allocs {fmt_f(over(s.get("allocs_per_chunk"), f.get("allocs_per_chunk")))}x '
                     f'({fmt_f(s.get("allocs_per_chunk"), 2)} vs {fmt_f(f.get("allocs_per_chunk"), 2)})')
    return L


def targets_verdict(res):
    out = []

    def worst(n, key):
        vals = [s[key] for s in res['scenarios'] if s['streams'] == n and s[key] is not None]
        return max(vals) if vals else None

    for n, limit in ((100, 500), (1000, 2000)):
        w = worst(n, 'err_p99_us')
        if w is not None:
            out.append(f'gap error p99 at {n} streams <= {limit} us: worst scenario {w:.0f} us -> '
                       f'{"MET" if w <= limit else f"MISSED by {w - limit:.0f} us"}')
    planted = sum(s['planted'] for s in res['scenarios'])
    detected = sum(s['detected'] for s in res['scenarios'])
    false = sum(s['false'] for s in res['scenarios'])
    out.append(f'planted stalls detected: {detected}/{planted}, false stalls: {false} -> '
               f'{"MET" if planted and detected == planted and false == 0 else "MISSED"}')
    base = {(b['streams'], b['tls']): b for b in res['baseline']}
    for s in res['scenarios']:
        b = base.get((s['streams'], s['tls']))
        if s['scrape'] or not b or not b.get('cpu_us_per_chunk') or not s.get('cpu_us_per_chunk'):
            continue
        r = b['cpu_us_per_chunk'] / s['cpu_us_per_chunk']
        out.append(f'CPU per chunk <= 1/20 of baseline, {s["streams"]} {"TLS" if s["tls"] else "plain"}: '
                   f'{s["cpu_us_per_chunk"]:.1f} vs {b["cpu_us_per_chunk"]:.1f} us (1/{r:.1f}) -> '
                   f'{"MET" if r >= 20 else "MISSED"}')
    # Issue 11 §1: CPU per chunk against the bare client (best of three windows each, same
    # run), syscalls per chunk.
    floor = {(e['streams'], e['tls']): e for e in res['ts_experiment']}
    for s in res['scenarios']:
        f = floor.get((s['streams'], s['tls']))
        if s['scrape'] or s['streams'] < 100 or not f:
            continue
        label = f'{s["streams"]} {"TLS" if s["tls"] else "plain"}'
        r = over(s.get('cpu_us_per_chunk_best'), f.get('cpu_us_per_chunk_best'))
        if r is not None:
            out.append(f'CPU per chunk <= 1.3x the bare client, {label} (best of {CPU_WINDOWS} windows): '
                       f'{s["cpu_us_per_chunk_best"]:.1f} vs {f["cpu_us_per_chunk_best"]:.1f} us ({r:.2f}x) -> '
                       f'{"MET" if r <= 1.3 else "MISSED"}')
        v = s.get('syscalls_per_chunk')
        if v is not None:
            out.append(f'syscalls per chunk <= 1.8, {label}: {v:.2f} -> {"MET" if v <= 1.8 else "MISSED"}')
    # Issue 11 §3: a scrape must not move the clock.
    for n, limit in ((100, 500), (1000, 2000)):
        for sc in (s for s in res['scenarios'] if s['streams'] == n and s.get('scrape_s') == 1.0):
            w = sc['err_p99_us']
            if w is None:
                continue
            ok = w <= limit and sc['false'] == 0 and sc['detected'] == sc['planted']
            out.append(f'{n} streams {"TLS" if sc["tls"] else "plain"} with a 1 s scrape: gap error p99 {w:.0f} us '
                       f'(<= {limit}), stalls {sc["detected"]}/{sc["planted"]}, false {sc["false"]} -> '
                       f'{"MET" if ok else "MISSED"}')
    for sc in (s for s in res['scenarios'] if s['streams'] == 1000 and s.get('scrape_s') == 0.1):
        out.append(f'1000 streams {"TLS" if sc["tls"] else "plain"} with a 100 ms scrape: false stalls {sc["false"]} '
                   f'(0) -> {"MET" if sc["false"] == 0 else "MISSED"}')
    # Issue 11 §2: `run` memory grows with the work.
    for r in res.get('run_memory', []):
        if r['what'] != 'after':
            continue
        limit = {(100, 100): 32, (1000, 1000): 128}.get((r['targets'], r['concurrency']))
        if limit and r['maxrss_kib']:
            v = r['maxrss_kib'] / 1024
            ok = r['exit'] == 0 and r['ok_rows'] == r['planned'] and v <= limit
            out.append(f'`run` {r["targets"]} targets x --concurrency {r["concurrency"]} <= {limit} MiB: {v:.1f} MiB, '
                       f'{r["ok_rows"]}/{r["planned"]} ok rows -> {"MET" if ok else "MISSED"}')
    ov = res['overhead']
    if ov.get('idle_rss_kib'):
        v = ov['idle_rss_kib'] / 1024
        out.append(f'RSS idle with 10 targets <= 16 MiB: {v:.1f} MiB -> {"MET" if v <= 16 else f"MISSED by {v - 16:.1f} MiB"}')
    # Issue 11 §2: `serve` with 1,000 targets, steady (no scrape): <= 96 MiB plain, <= 160 MiB TLS.
    for tls, limit in ((False, 96), (True, 160)):
        peaks = [s['vm_hwm_kib'] / 1024 for s in res['scenarios']
                 if s['streams'] >= 1000 and s['tls'] == tls and not s['scrape'] and s.get('vm_hwm_kib')]
        if peaks:
            v = max(peaks)
            out.append(f'RSS peak at 1,000 {"TLS" if tls else "plain"} streams <= {limit} MiB: {v:.1f} MiB -> '
                       f'{"MET" if v <= limit else f"MISSED by {v - limit:.1f} MiB"}')
    rb = gb_lookup(res, 'bench_metrics', 'BM_MetricsRender')
    if rb:
        v = rb[0]['cpu_time']
        out.append(f'/metrics with {rb[0].get("series", 0):.0f} series rendered <= 20 ms: {v:.1f} ms CPU '
                   f'({rb[0]["real_time"]:.1f} ms wall) -> {"MET" if v <= 20 else f"MISSED by {v - 20:.1f} ms"}')
    return out


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description='llm-stream-exporter fidelity and overhead benchmark (issue 5)')
    ap.add_argument('--build-dir', default=os.path.join(ROOT, 'build-bench'),
                    help='CMake build dir configured with -DLSE_BUILD_BENCH=ON')
    ap.add_argument('--exporter', help='llm_stream_exporter binary (default: BUILD/exporter/llm_stream_exporter)')
    ap.add_argument('--out-dir', help='keep logs, configs and results here (default: a temp dir, removed)')
    ap.add_argument('--quick', action='store_true', help='~2-minute subset')
    ap.add_argument('--smoke', action='store_true', help='< 60 s sanity run (ctest label bench-smoke)')
    ap.add_argument('--driver', choices=['serve', 'probe'], default='serve',
                    help='serve: llm_stream_exporter serve with N targets (default); probe: bench_probe_driver '
                         '(the probe path alone)')
    ap.add_argument('--before-build-dir',
                    help='a bench build of the code before a change (e.g. a worktree of main): the "ab" phase and '
                         'the allocation count run its bench_probe_driver beside this build\'s')
    ap.add_argument('--no-rt', action='store_true', help='do not give the truth upstream SCHED_FIFO')
    ap.add_argument('--sut-priority', choices=['rt', 'normal'], default='rt',
                    help='rt (default when permitted): run the exporter, the baseline and the experiment '
                         'client at SCHED_FIFO 5 (truth upstream 10, this harness 20), so that other load on '
                         'a shared machine does not decide the figures; normal: ordinary scheduling')
    ap.add_argument('--skip-gbench', action='store_true')
    ap.add_argument('--probe-threads', type=int, default=None,
                    help='serve --probe.threads N (default: the exporter\'s default)')
    ap.add_argument('--truth-threads', type=int, default=1,
                    help='worker threads of the truth upstream (default 1: leaves the other core to the '
                         'system under test)')
    ap.add_argument('--jitter', type=float, default=0.0,
                    help="the exporter's jitter in the scenarios (default 0: every target probes on the same "
                         "beat; 0.1 is the product default)")
    ap.add_argument('--demote-server-thread', action='store_true',
                    help='experiment: run the exporter\'s HTTP server thread at normal priority while its '
                         'probe thread stays SCHED_FIFO (what a lower-priority scrape thread would give)')
    ap.add_argument('--keep-pairs', action='store_true',
                    help='write OUT/<phase>-pairs.jsonl: measured and true gaps of every paired stream')
    ap.add_argument('--count-allocs', action=argparse.BooleanOptionalAction, default=None,
                    help='heap allocations per chunk of the exporter and the bare client (LD_PRELOAD '
                         'libbench_alloc_count.so over the CPU window; default: on in the full and quick runs, '
                         'off in --smoke and --plan)')
    ap.add_argument('--count-syscalls', choices=['auto', 'perf', 'strace', 'off'], default=None,
                    help='syscalls per chunk of the exporter and the bare client, counted in a separate round '
                         'after the CPU window: perf (perf stat on the syscall tracepoints, little overhead), '
                         'strace (strace -c -f, ptrace: slows the process), auto (perf if it can count the '
                         'tracepoints here, else strace); default: auto in the full and quick runs, off in '
                         '--smoke and --plan')
    ap.add_argument('--plan', help='only these phases, in order, e.g. "100:plain:noscrape,1000:tls:scrape,1000:plain:scrape1s,'
                    '100:plain:baseline,1000:plain:ts,run:100:100,100:h2" (exporter without/with scrape, Python '
                    'baseline, SO_TIMESTAMPNS client, `run` peak memory over TARGETS x --concurrency, HTTP/2 '
                    'vs HTTP/1.1 through one nghttpx); no overhead phases')
    args = ap.parse_args()
    if args.probe_threads:
        SERVE_FLAGS[:] = ['--probe.threads', str(args.probe_threads)]
    partial = args.smoke or bool(args.plan)
    if args.count_allocs is None:
        args.count_allocs = not partial
    if args.count_syscalls is None:
        args.count_syscalls = 'off' if partial else 'auto'
    if args.count_syscalls == 'auto':
        args.count_syscalls = 'perf' if perf_counts_syscalls() else 'strace'

    keep = bool(args.out_dir)
    global KEEP_PAIRS, JITTER
    KEEP_PAIRS = args.keep_pairs and keep
    JITTER = args.jitter
    machine = machine_check()
    rt_ok = subprocess.run(['chrt', '-f', '5', 'true'], capture_output=True).returncode == 0
    sut_priority = args.sut_priority if rt_ok else 'normal'
    if sut_priority == 'rt':
        SUT_PREFIX[:] = ['chrt', '-f', '5']
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(20))
        except OSError:
            pass
    bench = Bench(args)
    bench.results['machine'] = machine
    bench.results['sut_priority'] = sut_priority
    res = bench.results
    res['cpus'] = os.cpu_count()
    res['load_start'] = loadavg()
    res['driver'] = bench.driver
    res['truth_rt'] = bench.rt
    t_start = time.monotonic()
    try:
        if args.smoke:
            bench.exporter_scenario(10, False, True)
            bench.baseline_scenario(10, False)
        elif args.plan:
            if 'alloc' in args.plan.split(','):
                bench.alloc_probe()
                bench.alloc_probe_before()
            for item in args.plan.split(','):
                if item == 'alloc':
                    continue
                if item == 'ab':
                    bench.ab_builds(1000, False)
                    continue
                if item.startswith('run:'):  # run:TARGETS:CONCURRENCY
                    _, t, c = item.split(':')
                    bench.run_memory(int(t), int(c))
                    continue
                if item.endswith(':h2'):  # N:h2
                    bench.h2_scenario(int(item.split(':')[0]))
                    continue
                n, tls, what = item.split(':')
                if what == 'ts':
                    bench.ts_experiment(int(n), tls == 'tls')
                elif what == 'baseline':
                    bench.baseline_scenario(int(n), tls == 'tls')
                else:  # noscrape, scrape (every 100 ms), scrape1s
                    bench.exporter_scenario(int(n), tls == 'tls', SCRAPES[what])
        else:
            if args.quick:
                plan = [(100, False, False), (1000, False, False), (1000, False, 1.0), (1000, False, 0.1),
                        (1000, True, False)]
                base_plan = [(100, False), (1000, False)]
                ts_plan = [(100, False), (1000, False), (1000, True)]  # the floor of every (streams, TLS) above
            else:
                plan = [(n, tls, scrape) for n in (1, 100, 1000) for tls in (False, True)
                        for scrape in (False, 1.0, 0.1)]
                base_plan = [(n, tls) for n in (1, 100, 1000) for tls in (False, True)]
                ts_plan = [(n, tls) for n in (1, 100, 1000) for tls in (False, True)]
            for n, tls, scrape in plan:
                bench.exporter_scenario(n, tls, scrape)
            for n, tls in base_plan:
                bench.baseline_scenario(n, tls)
            for n, tls in ts_plan:
                bench.ts_experiment(n, tls)
            bench.h2_scenario(100)
            bench.idle_and_metrics()
            bench.run_memory(100, 100)
            bench.run_memory(1000, 1000)
            bench.alloc_probe()
            bench.alloc_probe_before()
            bench.ab_builds(1000, False)
        if not args.skip_gbench:
            bench.gbench()
    finally:
        bench.finish()
    res['load_end'] = loadavg()
    res['elapsed_s'] = time.monotonic() - t_start
    table = render(res, args)
    table += f'\n(elapsed {res["elapsed_s"]:.0f} s; truth upstream SCHED_FIFO: {"yes" if bench.rt else "no"})'
    print(table)
    with open(os.path.join(bench.workdir, 'results.json'), 'w') as f:
        json.dump(res, f, indent=1)
    with open(os.path.join(bench.workdir, 'table.txt'), 'w') as f:
        f.write(table + '\n')
    if keep:
        print(f'(results in {bench.workdir})', file=sys.stderr)
    else:
        shutil.rmtree(bench.workdir, ignore_errors=True)

    if args.smoke:
        s = res['scenarios'][0] if res['scenarios'] else None
        ok = (s is not None and s['paired'] > 0 and s['planted'] > 0 and s['detected'] == s['planted']
              and s['false'] == 0 and s['failed'] == 0 and s['mismatched'] == 0)
        if not ok:
            print('bench-smoke: FAILED (no paired streams, failed probes, or stall misclassification)',
                  file=sys.stderr)
            return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
