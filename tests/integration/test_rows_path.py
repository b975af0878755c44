"""A rows path that cannot take rows (issue 29) is refused without blocking:
`check-config` names rows.path's file:line:col for a FIFO and for a
read-only file; `serve` with a FIFO exits 2 at once instead of hanging
before it listens; a reload to a FIFO is refused at once, the old rows file
stays in use, and /metrics and probing go on."""
import os
import subprocess
import time
import unittest

from harness import (BIN, Exporter, TempDir, Upstream, http_post, render_config, wait_for,
                     yaml_quote)


def config_with_rows(up, rows_path):
    t = {'name': 'alpha', 'url': up.url('ttft=20,gap=5,chunks=5'), 'extra': ['interval: 300ms']}
    return render_config([t], extra=f'rows: {{path: {yaml_quote(rows_path)}}}\n')


def rows_line(cfg_text):
    """1-based line of `rows:` in a rendered config, and the column of its path."""
    lines = cfg_text.splitlines()
    n = next(k for k, l in enumerate(lines) if l.startswith('rows:'))
    return n + 1, lines[n].index('"') + 1


def line_count(path):
    with open(path, 'rb') as f:
        return f.read().count(b'\n')


def check_config(path):
    t0 = time.monotonic()
    r = subprocess.run([BIN, 'check-config', path], capture_output=True, text=True, timeout=10)
    return r, time.monotonic() - t0


class RowsPath(unittest.TestCase):
    def test_check_config_refuses_a_fifo_and_a_read_only_file(self):
        with TempDir() as tmp:
            fifo = os.path.join(tmp, 'rows.fifo')
            os.mkfifo(fifo)
            cfg_path = os.path.join(tmp, 'fifo.yaml')
            text = config_with_rows(FakeUp(), fifo)
            with open(cfg_path, 'w') as f:
                f.write(text)
            r, took = check_config(cfg_path)
            line, col = rows_line(text)
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertIn(f'{cfg_path}:{line}:{col}: rows.path: {fifo} is not a regular file (FIFO)',
                          r.stderr)
            self.assertLess(took, 5)

            # Root writes through permission bits: a read-only tmpfs refuses everyone.
            ro = os.path.join(tmp, 'ro')
            os.makedirs(ro)
            if subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', ro],
                              capture_output=True).returncode != 0:
                self.skipTest('cannot mount a tmpfs for a read-only rows file')
            try:
                with open(os.path.join(ro, 'rows.jsonl'), 'w') as f:
                    f.write('{}\n')
                subprocess.run(['mount', '-o', 'remount,ro', ro], check=True)
                ro_rows = os.path.join(ro, 'rows.jsonl')
                text = config_with_rows(FakeUp(), ro_rows)
                with open(cfg_path, 'w') as f:
                    f.write(text)
                r, _ = check_config(cfg_path)
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertIn(f'{cfg_path}:{line}:{col}: rows.path: {ro_rows} cannot be written: '
                              'Read-only file system', r.stderr)
            finally:
                subprocess.run(['umount', ro], check=False)

    def test_serve_with_a_fifo_exits_at_once(self):
        with TempDir() as tmp:
            fifo = os.path.join(tmp, 'rows.fifo')
            os.mkfifo(fifo)
            cfg_path = os.path.join(tmp, 'serve.yaml')
            with open(cfg_path, 'w') as f:
                f.write(config_with_rows(FakeUp(), fifo))
            t0 = time.monotonic()
            r = subprocess.run([BIN, 'serve', '--config', cfg_path], capture_output=True,
                               text=True, timeout=10)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertLess(time.monotonic() - t0, 5)
            self.assertIn('is not a regular file (FIFO)', r.stderr)

    def test_reload_to_a_fifo_is_refused_at_once(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            rows_path = os.path.join(tmp, 'rows.jsonl')
            fifo = os.path.join(tmp, 'rows.fifo')
            os.mkfifo(fifo)
            with Exporter(tmp, config_with_rows(up, rows_path)) as ex:
                ex.wait_probes('alpha', 1)
                ex.write_config(config_with_rows(up, fifo))
                t0 = time.monotonic()
                status, body = http_post(ex.base + '/-/reload', timeout=5)
                self.assertLess(time.monotonic() - t0, 2)
                self.assertEqual(status, 500, body)
                self.assertIn('is not a regular file (FIFO)', body)
                self.assertEqual(ex.value('llm_stream_exporter_config_last_reload_successful'), 0)
                # The old file goes on taking every probe's row.
                probes = ex.value('llm_stream_probes_total', target='alpha')
                ex.wait_probes('alpha', probes + 2, timeout=10)
                wait_for(lambda: line_count(rows_path) >=
                         ex.value('llm_stream_probes_total', target='alpha') - 1, 5,
                         what='rows in the old file')


class FakeUp:
    """A URL for configs that are only checked, never probed."""

    @staticmethod
    def url(_spec):
        return 'http://127.0.0.1:9/v1'


if __name__ == '__main__':
    unittest.main()
