#!/usr/bin/env python3
"""Soak: `serve` against a fault mix, its RSS, fds and threads printed every minute.

    python3 tests/bench/soak.py [--minutes 30] [--every 60] [--check]

Everything runs on 127.0.0.1: the scripted upstream (tests/upstream/upstream.py),
a hostile server in this process (connection reset mid-stream; a gzip bomb:
256 MiB of one byte, 256 KiB on the wire) and the exporter (LSE_BIN, default
build/exporter/llm_stream_exporter) probing every target each second. Meanwhile
/metrics is scraped every second and the config reloaded every 10 s,
alternating a valid config (one target's labels change) and an invalid one
(refused with file:line:col, the old config kept).

Targets: healthy, stalling, http 500, http 429 with Retry-After, a FIN
mid-stream, a hang after 5 chunks (idle timeout), no answer (first-token
timeout), an SSE error event, a bad JSON line, a reset, a gzip bomb.

Every --every seconds one line: minute, RSS, fds (sockets / others), threads,
probes so far, scrapes ok/failed, reloads ok/refused. The first sample after
--warmup seconds (default: a third of the run, at most 5 min) is the
reference. With --check (CI runs a 3-minute version: tests/integration/
test_soak.py) the run fails unless: RSS grew < --max-growth-mib (default 2)
from the reference to the end, the non-socket fds are exactly the
reference's, sockets stay <= targets + 4, threads equal, every scrape
answered, every valid reload accepted and every invalid one refused.
Exit 0 when the checks hold (or without --check), 1 otherwise.
"""
import argparse
import gzip
import os
import socket
import socketserver
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'integration'))
from harness import Exporter, TempDir, Upstream, http_get, http_post, render_config  # noqa: E402

SSE_HEAD = (b'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n'
            b'Transfer-Encoding: chunked\r\n\r\n')


def chunk(data):
    return b'%x\r\n%s\r\n' % (len(data), data)


def event(word):
    return b'data: {"choices":[{"index":0,"delta":{"content":"%s "}}]}\n\n' % word.encode()


class Hostile(socketserver.ThreadingTCPServer):
    """/rst/...: two chunks, then a reset. /bomb/...: a gzip bomb as the SSE body."""
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self):
        super().__init__(('127.0.0.1', 0), HostileHandler)
        self.bomb = gzip.compress(b'A' * (256 << 20), compresslevel=9)

    def start(self):
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self.server_address[1]


class HostileHandler(socketserver.BaseRequestHandler):
    def handle(self):
        s = self.request
        data = b''
        while b'\r\n\r\n' not in data:
            got = s.recv(65536)
            if not got:
                return
            data += got
        head, _, body = data.partition(b'\r\n\r\n')
        length = 0
        for line in head.split(b'\r\n')[1:]:
            k, _, v = line.partition(b':')
            if k.strip().lower() == b'content-length':
                length = int(v.strip())
        while len(body) < length:
            got = s.recv(65536)
            if not got:
                return
            body += got
        path = head.split(b' ')[1]
        if path.startswith(b'/rst/'):
            s.sendall(SSE_HEAD + chunk(event('one')))
            time.sleep(0.05)
            s.sendall(chunk(event('two')))
            time.sleep(0.05)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b'\x01\x00\x00\x00\x00\x00\x00\x00')
            s.close()
        elif path.startswith(b'/bomb/'):
            bomb = self.server.bomb
            s.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n'
                      b'Content-Length: %d\r\n\r\n' % len(bomb))
            try:
                s.sendall(bomb)
            except OSError:
                pass  # the exporter gave up early: what it should do


def targets(up, hostile_port, labels_variant):
    t = [
        ('healthy', up.url('ttft=30,gap=10,chunks=20')),
        ('stalling', up.url('ttft=30,gap=10,chunks=20,stall=10:300')),
        ('http500', up.url('status=500')),
        ('http429', up.url('status=429')),
        ('fin', up.url('ttft=30,gap=10,chunks=20,close_after=5')),
        ('hang', up.url('ttft=30,gap=10,chunks=20,hang_after=5')),
        ('silent', up.url('no_answer=1')),
        ('sse_error', up.url('ttft=30,gap=10,chunks=20,error_after=5')),
        ('bad_json', up.url('ttft=30,gap=10,chunks=20,bad_json_after=5')),
        ('reset', f'http://127.0.0.1:{hostile_port}/rst/v1'),
        ('gzip_bomb', f'http://127.0.0.1:{hostile_port}/bomb/v1'),
    ]
    out = []
    for name, url in t:
        extra = []
        if name == 'gzip_bomb':
            extra.append('accept_encoding: [gzip]')
        if name == 'healthy':
            extra.append(f'labels: {{variant: "{labels_variant}"}}')
        out.append({'name': name, 'url': url, 'extra': extra})
    return out


def config(up, hostile_port, variant, rows):
    return render_config(targets(up, hostile_port, variant),
                         {'interval': '1s', 'timeout': '{first_token: 1s, idle: 1s, total: 3s}'},
                         extra=f'rows: {{path: "{rows}", max_size: 2000000, keep: 1}}\n')


def proc_stats(pid):
    with open(f'/proc/{pid}/status') as f:
        status = dict(line.split(':', 1) for line in f if ':' in line)
    rss_kib = int(status['VmRSS'].split()[0])
    threads = int(status['Threads'])
    sockets = others = 0
    for fd in os.listdir(f'/proc/{pid}/fd'):
        try:
            target = os.readlink(f'/proc/{pid}/fd/{fd}')
        except OSError:
            continue
        if target.startswith('socket:'):
            sockets += 1
        else:
            others += 1
    return {'rss_kib': rss_kib, 'threads': threads, 'sockets': sockets, 'others': others}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--minutes', type=float, default=30)
    ap.add_argument('--every', type=float, default=60, help='seconds between samples (default 60)')
    ap.add_argument('--warmup', type=float, default=None, help='seconds before the reference sample')
    ap.add_argument('--check', action='store_true', help='fail unless the stats stayed flat')
    ap.add_argument('--max-growth-mib', type=float, default=2.0)
    args = ap.parse_args()
    duration = args.minutes * 60
    warmup = args.warmup if args.warmup is not None else min(300.0, duration / 3)

    hostile = Hostile()
    hostile_port = hostile.start()
    problems = []
    with TempDir() as tmp, Upstream(tmp) as up:
        rows = os.path.join(tmp, 'rows.jsonl')
        n_targets = len(targets(up, hostile_port, 'a'))
        ex = Exporter(tmp, config(up, hostile_port, 'a', rows))
        with ex:
            pid = ex.proc.p.pid
            counts = {'scrape_ok': 0, 'scrape_failed': 0, 'reload_ok': 0, 'reload_refused': 0,
                      'reload_wrong': 0}
            start = time.monotonic()
            next_sample = start + min(args.every, warmup)
            next_reload = start + 10
            reloads = 0
            reference = None
            samples = []
            print(f'soak: {args.minutes:g} min, sample every {args.every:g} s, reference after {warmup:g} s, '
                  f'pid {pid}', flush=True)
            print('   t(s)   RSS(MiB)  sockets  other-fds  threads  probes  scrapes ok/failed  reloads ok/refused',
                  flush=True)
            while True:
                now = time.monotonic()
                if now - start >= duration:
                    break
                status, _ = http_get(ex.base + '/metrics', timeout=5)
                counts['scrape_ok' if status == 200 else 'scrape_failed'] += 1
                if now >= next_reload:
                    reloads += 1
                    valid = reloads % 2 == 0
                    if valid:
                        ex.write_config(config(up, hostile_port, f'v{reloads}', rows))
                    else:
                        ex.write_config('targets:\n  - name: [broken\n')
                    code, _ = http_post(ex.base + '/-/reload')
                    if valid:
                        counts['reload_ok' if code == 200 else 'reload_wrong'] += 1
                    else:
                        counts['reload_refused' if code != 200 else 'reload_wrong'] += 1
                    next_reload += 10
                if now >= next_sample:
                    s = proc_stats(pid)
                    s['t'] = now - start
                    s['probes'] = ex.value('llm_stream_probes_total') or 0
                    samples.append(s)
                    if reference is None and s['t'] >= warmup - 0.5:
                        reference = s
                    print(f"{s['t']:7.0f}  {s['rss_kib'] / 1024:9.2f}  {s['sockets']:7d}  {s['others']:9d}  "
                          f"{s['threads']:7d}  {s['probes']:6.0f}  {counts['scrape_ok']:8d}/{counts['scrape_failed']:<8d}"
                          f"  {counts['reload_ok']:7d}/{counts['reload_refused']}", flush=True)
                    next_sample += args.every
                time.sleep(max(0.0, 1.0 - (time.monotonic() - now)))
            end = proc_stats(pid)
            end['t'] = time.monotonic() - start
    hostile.shutdown()

    ref = reference or (samples[0] if samples else end)
    growth_mib = (end['rss_kib'] - ref['rss_kib']) / 1024
    print(f"soak: RSS {ref['rss_kib'] / 1024:.2f} MiB at {ref['t']:.0f} s -> {end['rss_kib'] / 1024:.2f} MiB at "
          f"{end['t']:.0f} s ({growth_mib:+.2f} MiB); non-socket fds {ref['others']} -> {end['others']}; "
          f"sockets {ref['sockets']} -> {end['sockets']}; threads {ref['threads']} -> {end['threads']}; "
          f"scrapes {counts['scrape_ok']} ok, {counts['scrape_failed']} failed; reloads {counts['reload_ok']} "
          f"accepted, {counts['reload_refused']} refused, {counts['reload_wrong']} wrong; exit {ex.rc}",
          flush=True)
    if args.check:
        if growth_mib >= args.max_growth_mib:
            problems.append(f'RSS grew {growth_mib:.2f} MiB >= {args.max_growth_mib} MiB')
        if end['others'] != ref['others']:
            problems.append(f"non-socket fds {ref['others']} -> {end['others']}")
        if max(s['sockets'] for s in samples + [end]) > n_targets + 4:
            problems.append(f"sockets reached {max(s['sockets'] for s in samples + [end])} > {n_targets + 4}")
        if end['threads'] != ref['threads']:
            problems.append(f"threads {ref['threads']} -> {end['threads']}")
        if counts['scrape_failed']:
            problems.append(f"{counts['scrape_failed']} scrapes failed")
        if counts['reload_wrong']:
            problems.append(f"{counts['reload_wrong']} reloads answered wrongly")
        if ex.rc != 0:
            problems.append(f'exporter exit code {ex.rc}')
    for p in problems:
        print(f'soak: FAIL {p}', flush=True)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
