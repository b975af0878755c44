"""Rows-file write errors are surfaced, not dropped: with the rows file on a
full filesystem every probe's row fails, llm_stream_row_write_errors_total
counts each of them, and the log says it once per distinct error."""
import errno
import os
import subprocess
import unittest

from harness import Exporter, TempDir, Upstream, render_config, wait_for, yaml_quote


def mount_full_tmpfs(path):
    """A 64 KiB tmpfs at `path`, filled up. Root ignores permission bits, so a
    read-only directory would not stop its writes; a full filesystem does."""
    os.makedirs(path)
    r = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise unittest.SkipTest(f'cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): '
                                f'{r.stderr.strip()}')
    try:
        with open(os.path.join(path, 'filler'), 'wb') as f:
            while True:
                f.write(b'x' * 4096)
                f.flush()
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise


class RowWriteErrors(unittest.TestCase):
    def test_full_disk_counts_every_lost_row_and_logs_once(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            fs_dir = os.path.join(tmp, 'rows-fs')
            mount_full_tmpfs(fs_dir)
            try:
                self.run_exporter(tmp, up, os.path.join(fs_dir, 'rows.jsonl'))
            finally:
                subprocess.run(['umount', fs_dir], check=False)

    def run_exporter(self, tmp, up, rows_path):
        # A slow first token, so the first scrape comes before the first row.
        t = {'name': 'alpha', 'url': up.url('ttft=400,gap=2,chunks=3'),
             'extra': ['interval: 200ms']}
        cfg = render_config([t], extra=f'rows: {{path: {yaml_quote(rows_path)}}}\n')
        with Exporter(tmp, cfg) as ex:
            self.assertEqual(ex.value('llm_stream_row_write_errors_total'), 0)  # from startup
            ex.wait_probes('alpha', 3, timeout=30)

            # Every probe is one row, and on a full disk every row fails.
            # A scrape may fall between a probe's metrics and its row, so
            # wait for the two counters to agree.
            def agree():
                probes = ex.value('llm_stream_probes_total', target='alpha')
                errors = ex.value('llm_stream_row_write_errors_total')
                return probes >= 3 and probes == errors and (probes, errors)
            probes, errors = wait_for(agree, 15, what='one write error per probe')
            self.assertGreaterEqual(errors, 3)
            self.assertEqual(os.path.getsize(rows_path), 0)

            lines = [l for l in ex.proc.output().splitlines() if 'rows file error' in l]
            self.assertEqual(len(lines), 1, lines)
            self.assertIn('No space left on device', lines[0])
            self.assertIn(rows_path, lines[0])


if __name__ == '__main__':
    unittest.main()
