"""The protobuf exposition end to end: a scrape with the Accept header of
Prometheus 2.42 with --enable-feature=native-histograms (and gzip, as it
asks) gets length-delimited io.prometheus.client.MetricFamily messages, and
the native gap histogram in them holds exactly the gaps of the probe's row:
the count and sum, and each gap in bucket ceil(8 * log2(gap)) at schema 3.
The messages are read here with a wire-format reader of a few lines, so the
test needs nothing but Python's standard library; the exact field numbers are
those of proto/prometheus/metrics.proto."""
import gzip
import math
import struct
import unittest
import urllib.request

from harness import Exporter, TempDir, Upstream, render_config, wait_for

# What Prometheus 2.42 sends with --enable-feature=native-histograms.
NATIVE_ACCEPT = ('application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;'
                 'encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,'
                 'application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;'
                 'q=0.5,*/*;q=0.1')
PROTOBUF_TYPE = ('application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; '
                 'encoding=delimited')
GAP = 'llm_stream_inter_chunk_gap_seconds'


def varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def zigzag(v):
    return (v >> 1) ^ -(v & 1)


def fields(buf):
    """A message's fields as {number: [values]}: ints for varints, floats for
    fixed64 (every fixed64 of these messages is a double), bytes otherwise."""
    out, i = {}, 0
    while i < len(buf):
        key, i = varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 1:
            value, i = struct.unpack('<d', buf[i:i + 8])[0], i + 8
        elif wire == 2:
            n, i = varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise AssertionError(f'wire type {wire} in field {number}')
        out.setdefault(number, []).append(value)
    return out


def families(body):
    """The delimited MetricFamily messages of a body: {name: [metric fields]}."""
    out, i = {}, 0
    while i < len(body):
        n, i = varint(body, i)
        f = fields(body[i:i + n])
        i += n
        out[f[1][0].decode()] = [fields(m) for m in f.get(4, [])]
    assert i == len(body), 'the last message overruns the body'
    return out


def labels(metric):
    return {fields(p)[1][0].decode(): fields(p)[2][0].decode() for p in metric.get(1, [])}


def native_buckets(h):
    """{bucket index: count} from positive_span (12) and positive_delta (13)."""
    deltas = [zigzag(d) for d in h.get(13, [])]
    out, index, count, k = {}, 0, 0, 0
    for span in h.get(12, []):
        s = fields(span)
        index += zigzag(s.get(1, [0])[0])
        for _ in range(s.get(2, [0])[0]):
            count += deltas[k]
            k += 1
            out[index] = count
            index += 1
    assert k == len(deltas), 'deltas left over after the spans'
    return out


class ProtobufExposition(unittest.TestCase):
    def test_native_gap_histogram_holds_the_rows_gaps(self):
        with TempDir() as d, Upstream(d) as up:
            # One probe (the next is 60 s away): the scrape and the row see the same gaps.
            cfg = render_config([{'name': 'fast',
                                  'url': up.url('ttft=20,gap=3,jitter=1,chunks=60')}])
            with Exporter(d, cfg) as ex:
                ex.wait_probes('fast', 1)
                row = ex.rows('fast')[0]
                req = urllib.request.Request(ex.base + '/metrics', headers={
                    'Accept': NATIVE_ACCEPT, 'Accept-Encoding': 'gzip'})
                with urllib.request.urlopen(req, timeout=5) as r:
                    self.assertEqual(r.headers['Content-Type'], PROTOBUF_TYPE)
                    self.assertEqual(r.headers['Content-Encoding'], 'gzip')
                    self.assertIn('Accept', r.headers['Vary'])
                    body = gzip.decompress(r.read())
                # A browser or curl still gets text.
                with urllib.request.urlopen(ex.base + '/metrics', timeout=5) as r:
                    self.assertTrue(r.headers['Content-Type'].startswith('text/plain'))

        all_families = families(body)
        self.assertIn('process_open_fds', all_families)
        [gap] = [m for m in all_families[GAP] if labels(m).get('target') == 'fast']
        h = fields(gap[7][0])  # Metric.histogram
        gaps = [g / 1000 for g in row['gaps_ms']]
        self.assertGreater(len(gaps), 50)
        self.assertEqual(h[1][0], len(gaps))                   # sample_count
        self.assertAlmostEqual(h[2][0], sum(gaps), delta=1e-5)  # sample_sum (rows round to 1 us)
        self.assertEqual(zigzag(h[5][0]), 3)                   # schema
        self.assertEqual(h[6][0], 1e-5)                        # zero_threshold
        self.assertEqual(len(h.get(3, [])), 21)                # 20 classic buckets and +Inf
        expected = {}
        for g in gaps:
            i = math.ceil(8 * math.log2(g))
            expected[i] = expected.get(i, 0) + 1
        got = native_buckets(h)
        self.assertEqual(sum(got.values()), len(gaps))
        # Rows keep microseconds: a gap within a microsecond of a bucket
        # boundary may sit on either side of it.
        moved = sum(abs(got.get(i, 0) - expected.get(i, 0)) for i in set(got) | set(expected))
        near = sum(1 for g in gaps
                   if abs(g - 2 ** (round(8 * math.log2(g)) / 8)) < 1.5e-6)
        self.assertLessEqual(moved, 2 * near, f'native buckets {got}, row gaps {expected}')


if __name__ == '__main__':
    unittest.main()
