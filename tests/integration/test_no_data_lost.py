"""No data lost when the exporter is stopped (issue 13 §6).

- `serve` on SIGTERM: the probe in flight measured nothing and is no failure
  (issue 29): no row of it, the rows file ends with a whole line and every line
  parses; the exporter exits 0 within its drain time.
- `run` killed with SIGKILL while it writes: whatever the file holds, `compare`
  and `report` read it; a last line cut mid-row is skipped with a warning
  naming FILE:LINE, never a failure.
"""
import json
import os
import signal
import time
import unittest

from harness import BIN, Exporter, TempDir, Upstream, render_config, wait_for
from run_helpers import prompt_files, run_cli, start_cli


def read_lines(path):
    with open(path, 'rb') as f:
        return f.read()


class ServeStop(unittest.TestCase):
    def test_sigterm_leaves_whole_rows_and_no_failure_of_the_probe_in_flight(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            rows_path = os.path.join(tmp, 'rows.jsonl')
            # 40 chunks 100 ms apart: each probe streams for ~4 s.
            targets = [{'name': 'slow', 'url': up.url('ttft=50,gap=100,chunks=40')}]
            cfg = render_config(targets, {'interval': '200ms'},
                                extra=f'rows: {{path: {json.dumps(rows_path)}}}\n')
            ex = Exporter(tmp, cfg)
            with ex:
                ex.wait_probes('slow', 1, timeout=20)
                # The second probe is mid-stream once the upstream has seen it.
                wait_for(lambda: len(up.requests()) >= 1 and ex.value('llm_stream_probes_total',
                                                                        target='slow') == 1, 10,
                         what='one probe done')
                time.sleep(1.0)
                t0 = time.monotonic()
                ex.proc.p.send_signal(signal.SIGTERM)
                ex.proc.p.wait(10)
                elapsed = time.monotonic() - t0
            self.assertEqual(ex.rc, 0, ex.proc.output()[-3000:])
            self.assertLess(elapsed, 5)
            data = read_lines(rows_path)
            self.assertTrue(data.endswith(b'\n'))
            rows = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
            self.assertEqual([(r['target'], r['ok']) for r in rows], [('slow', True)])


class KilledWriter(unittest.TestCase):
    def test_a_row_cut_by_kill_9_is_skipped_with_a_warning(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            out = f'{tmp}/rows.jsonl'
            env = {'MC_BASE_URL': up.url('ttft=20,gap=5,chunks=10'), 'MC_MODEL': 'm'}
            proc = start_cli(['run'] + prompt_files(tmp)[:1] + ['200', '--warmup', '0', '--out', out],
                             env=env)
            try:
                wait_for(lambda: os.path.exists(out) and read_lines(out).count(b'\n') >= 6, 30,
                         what='six rows')
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(10)
            finally:
                if proc.poll() is None:
                    proc.kill()
            data = read_lines(out)
            whole = data.count(b'\n')
            # What kill -9 in the middle of a row's write leaves: half a row, no newline.
            last = data.rstrip(b'\n').split(b'\n')[-1]
            with open(out, 'ab') as f:
                f.write(last[:len(last) // 2])
            cut_line = whole + 1

            p = run_cli(['compare', out, out])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(f'compare: warning: {out}:{cut_line}: the last line', p.stderr)
            self.assertIn('stopped mid-row; skipped', p.stderr)

            html = f'{tmp}/report.html'
            p = run_cli(['report', out, '--out', html])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(f'report: warning: {out}:{cut_line}: the last line', p.stderr)
            with open(html) as f:
                self.assertIn(f'data-expected-runs="{whole}"', f.read())  # every whole row, no more


if __name__ == '__main__':
    unittest.main()
