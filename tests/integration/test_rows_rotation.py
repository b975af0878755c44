"""Rows survive an outside rotation (issue 29): logrotate's `create` (without
a SIGHUP: the exporter notices within a second), `copytruncate`, and a plain
`rm` of the rows file, one after the other while a target is probed. At the
end every probe's row (the ring's ids) is in exactly one file (the `rm`ed
one's rows as read just before the rm), no line is broken and
llm_stream_row_write_errors_total stayed 0.

Each rotation happens right after a row landed, in the ~300 ms before the
next one: `copytruncate` loses a row written between its copy and its
truncate by design (logrotate's manual says so), and so does `rm` between a
reader's last look and the unlink; the test measures the exporter, not that
window."""
import json
import os
import subprocess
import time
import unittest

from harness import Exporter, TempDir, Upstream, render_config, wait_for, yaml_quote


def ids_in(path):
    """The ids of a rows file's lines; asserts every line is a whole row."""
    if not os.path.exists(path):
        return []
    with open(path, 'rb') as f:
        data = f.read()
    assert not data or data.endswith(b'\n'), f'{path} ends mid-line'
    return [json.loads(line)['id'] for line in data.decode().splitlines() if line.strip()]


def logrotate(tmp, rows_path, style):
    conf = os.path.join(tmp, f'logrotate-{style}.conf')
    with open(conf, 'w') as f:
        f.write(f'{rows_path} {{\n  rotate 5\n  missingok\n  {style}\n}}\n')
    r = subprocess.run(['logrotate', '-f', '-s', os.path.join(tmp, 'logrotate.state'), conf],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stderr


class RowsRotation(unittest.TestCase):
    def test_create_copytruncate_and_rm_lose_no_row(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            rows_path = os.path.join(tmp, 'rows.jsonl')
            t = {'name': 'alpha', 'url': up.url('ttft=20,gap=5,chunks=5'),
                 'extra': ['interval: 300ms']}
            cfg = render_config([t], extra=f'rows: {{path: {yaml_quote(rows_path)}}}\n')
            with Exporter(tmp, cfg) as ex:
                def after_a_row(count):
                    """Waits until `count` more rows are in the file at the path, then
                    until the next one lands; returns at once after it."""
                    start = len(ids_in(rows_path))
                    wait_for(lambda: len(ids_in(rows_path)) >= start + count, 20,
                             what=f'{count} rows at {rows_path}')
                    size = os.path.getsize(rows_path)
                    wait_for(lambda: os.path.getsize(rows_path) != size, 10, interval=0.002,
                             what='the next row')

                after_a_row(3)
                logrotate(tmp, rows_path, 'create')  # mv rows.jsonl rows.jsonl.1 + new file
                # No SIGHUP: rows go into .1 for at most a second, then into the new file.
                wait_for(lambda: len(ids_in(rows_path)) >= 3, 10, what='rows after create')
                self.assertGreaterEqual(len(ids_in(rows_path + '.1')), 4)

                after_a_row(1)
                logrotate(tmp, rows_path, 'copytruncate')  # .1 -> .2, copy to .1, truncate
                wait_for(lambda: len(ids_in(rows_path)) >= 3, 10, what='rows after copytruncate')

                after_a_row(1)
                before_rm = ids_in(rows_path)
                os.remove(rows_path)
                wait_for(lambda: len(ids_in(rows_path)) >= 3, 10, what='rows after rm')

                kept = [r['id'] for r in ex.rows(limit=1000)]
                written = {}
                for name in ('', '.1', '.2'):
                    for i in ids_in(rows_path + name):
                        written.setdefault(i, []).append(name or 'rows.jsonl')
                for i in before_rm:
                    written.setdefault(i, []).append('removed rows.jsonl')
                self.assertEqual(ex.value('llm_stream_row_write_errors_total'), 0)

            self.assertGreaterEqual(len(kept), 15)
            missing = [i for i in kept if i not in written]
            self.assertEqual(missing, [], f'rows in no file; files: {written}')
            twice = {i: where for i, where in written.items() if len(where) > 1}
            self.assertEqual(twice, {}, 'rows in more than one file')
            # The file at the path holds only rows written after the rm.
            self.assertFalse(set(ids_in(rows_path)) & set(before_rm))


if __name__ == '__main__':
    unittest.main()
