#!/usr/bin/env python3
"""Live terminal view of a running exporter's /metrics (used by the demo).

Polls /metrics, and per target shows probes, failures, TTFT p50/p95, gap p95
(all estimated from the histograms, as Prometheus' histogram_quantile does),
the largest gap seen and the stall count.
"""
import argparse
import math
import re
import sys
import time
import urllib.request

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse(text):
    out = []
    for line in text.splitlines():
        if not line or line.startswith('#'):
            continue
        m = LINE.match(line)
        if not m:
            continue
        labels = dict(LABEL.findall(m.group(3) or ''))
        out.append((m.group(1), labels, float(m.group(4))))
    return out


def quantile(q, buckets):
    """histogram_quantile over [(le, cumulative count)]."""
    buckets = sorted(buckets)
    if not buckets or buckets[-1][1] == 0:
        return math.nan
    total = buckets[-1][1]
    rank = q * total
    prev_le, prev_c = 0.0, 0.0
    for le, c in buckets:
        if c >= rank:
            if math.isinf(le):
                return prev_le
            return prev_le + (le - prev_le) * ((rank - prev_c) / max(c - prev_c, 1e-12))
        prev_le, prev_c = le, c
    return prev_le


def summarize(samples):
    per = {}
    def slot(t):
        return per.setdefault(t, {'ok': 0, 'fail': 0, 'stalls': 0, 'chunks': 0,
                                  'ttft': {}, 'gap': {}, 'maxgap': {}, 'reasons': {},
                                  'shapes': set()})
    for name, labels, value in samples:
        t = labels.get('target')
        if not t:
            continue
        s = slot(t)
        if name == 'llm_stream_probes_total':
            s['ok' if labels.get('result') == 'success' else 'fail'] += value
        elif name == 'llm_stream_stalls_total':
            s['stalls'] += value
        elif name == 'llm_stream_chunks_total':
            s['chunks'] += value
        elif name == 'llm_stream_diagnosis' and value > 0:
            s['shapes'].add(labels.get('shape', '?'))
        elif name == 'llm_stream_probe_failures_total' and value > 0:
            s['reasons'][labels['reason']] = s['reasons'].get(labels['reason'], 0) + value
        else:
            for metric, key in (('llm_stream_time_to_first_token_seconds_bucket', 'ttft'),
                                ('llm_stream_inter_chunk_gap_seconds_bucket', 'gap'),
                                ('llm_stream_probe_max_gap_seconds_bucket', 'maxgap')):
                if name == metric:
                    le = float(labels['le'].replace('+Inf', 'inf'))
                    s[key][le] = s[key].get(le, 0) + value
    return per


def ms(v):
    return '     -' if math.isnan(v) else f'{v * 1000:6.0f}'


def render(url, per, started):
    rows = [f'llm-stream-exporter live view — {url}  ({time.time() - started:4.0f}s)',
            '',
            f'{"target":<16} {"probes":>6} {"fail":>5} {"ttft p50":>9} {"ttft p95":>9} '
            f'{"gap p95":>8} {"max gap":>8} {"stalls":>7} {"chunks":>7}  diagnosis / failures',
            '-' * 100]
    for t in sorted(per):
        s = per[t]
        rows.append(f'{t:<16} {s["ok"] + s["fail"]:6.0f} {s["fail"]:5.0f} '
                    f'{ms(quantile(.5, s["ttft"].items())):>6} ms {ms(quantile(.95, s["ttft"].items())):>6} ms '
                    f'{ms(quantile(.95, s["gap"].items())):>5} ms {ms(quantile(.99, s["maxgap"].items())):>5} ms '
                    f'{s["stalls"]:7.0f} {s["chunks"]:7.0f}  '
                    + ' '.join(sorted(s['shapes']))
                    + (' ' if s['shapes'] else '')
                    + ', '.join(f'{k}={v:.0f}' for k, v in sorted(s['reasons'].items())))
    rows.append('')
    rows.append('gap p95 and max gap are estimated from histogram buckets (as Prometheus does);')
    rows.append('diagnosis (queue, transport, long_answer, shared_capacity, generation) appears after 5 probes of a prompt.')
    return '\n'.join(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--url', default='http://127.0.0.1:9687/metrics')
    ap.add_argument('--seconds', type=float, default=0, help='stop after this long (0 = until Ctrl-C)')
    ap.add_argument('--interval', type=float, default=2.0)
    args = ap.parse_args()
    started = time.time()
    tty = sys.stdout.isatty()
    try:
        while True:
            try:
                with urllib.request.urlopen(args.url, timeout=5) as r:
                    text = r.read().decode()
                screen = render(args.url, summarize(parse(text)), started)
            except OSError as e:
                screen = f'waiting for {args.url}: {e}'
            if tty:
                sys.stdout.write('\x1b[H\x1b[2J' + screen + '\n')
            else:
                sys.stdout.write(screen + '\n\n')
            sys.stdout.flush()
            if args.seconds and time.time() - started >= args.seconds:
                return 0
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 0


if __name__ == '__main__':
    sys.exit(main())
