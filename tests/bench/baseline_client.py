#!/usr/bin/env python3
"""Baseline for the fidelity benchmark (issue 5): a stream timer written the
way a typical one-file Python harness does it.

Python 3.11 standard library only: urllib.request per stream (a new
connection each time, as urlopen does), iterate the response line by line,
json.loads every data line, time.perf_counter_ns() *after* parsing, one
thread per concurrent stream.

Usage:
  baseline_client.py (--url-template URL | --url-list FILE) --streams N --seconds S
                     --out rows.jsonl [--ca-file CA] [--max-tokens 256]

  URL may contain {i} (the stream/thread index), e.g.
    http://127.0.0.1:PORT/s/id=b{i},gap=20,chunks=100/v1
  FILE holds one base URL per line; thread i uses line i.
  Each thread streams from its URL again and again until S seconds have
  passed (it does not start a stream it cannot finish: the first stream's
  duration is the estimate), then writes one JSON line per stream:
    {"i", "ok", "error", "t_start", "arrivals"}
  t_start / arrivals are time.perf_counter_ns(), which on Linux is
  CLOCK_MONOTONIC, the clock of the truth upstream's send log.
"""

import argparse
import json
import ssl
import sys
import threading
import time
import urllib.request


def stream_once(url, body, ctx, timeout):
    req = urllib.request.Request(url + '/chat/completions', data=body, method='POST',
                                 headers={'Content-Type': 'application/json',
                                          'Accept': 'text/event-stream'})
    arrivals = []
    with urllib.request.urlopen(req, timeout=timeout, context=ctx) as resp:
        for line in resp:
            line = line.strip()
            if not line.startswith(b'data:'):
                continue
            data = line[5:].strip()
            if data == b'[DONE]':
                break
            obj = json.loads(data)
            choices = obj.get('choices') or []
            if choices and (choices[0].get('delta') or {}).get('content'):
                arrivals.append(time.perf_counter_ns())
    return arrivals


def worker(i, url, args, ctx, deadline, results, lock):
    body = json.dumps({'model': 'bench-model', 'stream': True, 'max_tokens': args.max_tokens,
                       'messages': [{'role': 'user', 'content': 'What is the capital of France?'}]}).encode()
    longest = 0.0
    mine = []
    while True:
        now = time.perf_counter()
        if now + longest > deadline:
            break
        t_start = time.perf_counter_ns()
        row = {'i': i, 'ok': True, 'error': '', 't_start': t_start, 'arrivals': []}
        try:
            row['arrivals'] = stream_once(url, body, ctx, args.timeout)
        except Exception as e:  # noqa: BLE001 - a benchmark records every failure
            row['ok'] = False
            row['error'] = f'{type(e).__name__}: {e}'[:200]
            time.sleep(0.1)
        longest = max(longest, time.perf_counter() - now)
        mine.append(row)
    with lock:
        results.extend(mine)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--url-template')
    ap.add_argument('--url-list')
    ap.add_argument('--streams', type=int, default=1)
    ap.add_argument('--seconds', type=float, default=10)
    ap.add_argument('--out', required=True)
    ap.add_argument('--ca-file')
    ap.add_argument('--max-tokens', type=int, default=256)
    ap.add_argument('--timeout', type=float, default=30)
    args = ap.parse_args()

    if args.url_list:
        with open(args.url_list) as f:
            urls = [line.strip() for line in f if line.strip()]
    elif args.url_template:
        urls = [args.url_template.replace('{i}', str(i)) for i in range(args.streams)]
    else:
        ap.error('--url-template or --url-list is required')
    if len(urls) < args.streams:
        ap.error(f'{len(urls)} URLs for {args.streams} streams')
    ctx = ssl.create_default_context(cafile=args.ca_file) if args.ca_file else None
    threading.stack_size(256 * 1024)
    deadline = time.perf_counter() + args.seconds
    results, lock = [], threading.Lock()
    threads = [threading.Thread(target=worker, args=(i, urls[i], args, ctx, deadline, results, lock),
                                daemon=True)
               for i in range(args.streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(args.seconds + args.timeout + 30)
    with open(args.out, 'w') as f:
        for r in results:
            f.write(json.dumps(r) + '\n')
    print(f'baseline: {len(results)} streams, '
          f'{sum(len(r["arrivals"]) for r in results)} chunks, '
          f'{sum(1 for r in results if not r["ok"])} failed', file=sys.stderr)


if __name__ == '__main__':
    main()
