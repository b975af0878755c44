"""Structured logs (issue 9 §2): --log.format=json writes one JSON object per
line with real fields (ts, level, msg, target, reason, ...), logfmt writes
key=value pairs with the same keys, and the level names are the flag's."""
import json
import os
import re
import unittest

from harness import BIN, Proc, TempDir, free_port, render_config, wait_for

TS = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$')
LOGFMT_PAIR = re.compile(r'(\w[\w.-]*)=("(?:[^"\\]|\\.)*"|\S*)')


def logfmt(line):
    out = {}
    for key, value in LOGFMT_PAIR.findall(line):
        out[key] = json.loads(value) if value.startswith('"') else value
    return out


def run_dead_target(tmp, log_format, level='info'):
    """The exporter with one target whose port refuses connections, until it
    has logged a failed probe; returns its stderr lines."""
    dead_port = free_port()  # bound and closed again: nothing listens there
    path = os.path.join(tmp, 'config.yaml')
    with open(path, 'w') as f:
        f.write(render_config([{'name': 'dead', 'url': f'http://127.0.0.1:{dead_port}/v1',
                                'extra': ['interval: 1s']}]))
    proc = Proc([BIN, '--log.format', log_format, '--log.level', level, 'serve',
                 '--config.file', path], os.path.join(tmp, f'exporter-{log_format}.log'))
    try:
        wait_for(lambda: 'probe failed' in proc.output(), 15, what='a failed probe logged')
    finally:
        proc.stop()
    return [line for line in proc.output().splitlines() if line.strip()]


class StructuredLogs(unittest.TestCase):
    def test_json_lines_have_real_fields(self):
        with TempDir() as tmp:
            lines = run_dead_target(tmp, 'json')
        events = [json.loads(line) for line in lines]  # every line is one JSON object
        for e in events:
            self.assertRegex(e['ts'], TS)
            self.assertIn(e['level'], ('debug', 'info', 'warn', 'error'))
        failed = [e for e in events if e['msg'] == 'probe failed']
        self.assertTrue(failed, lines)
        self.assertEqual(failed[0]['level'], 'warn')
        self.assertEqual(failed[0]['target'], 'dead')
        self.assertEqual(failed[0]['prompt'], 'short')
        self.assertEqual(failed[0]['reason'], 'connect')
        self.assertRegex(failed[0]['probe_id'], r'^[0-9a-f]{16}$')
        self.assertIsInstance(failed[0]['warmup'], bool)
        listening = [e for e in events if e['msg'] == 'listening']
        self.assertEqual(len(listening), 1, lines)
        self.assertIsInstance(listening[0]['port'], int)
        self.assertGreater(listening[0]['port'], 0)
        self.assertEqual(listening[0]['targets'], 1)

    def test_logfmt_has_the_same_keys(self):
        with TempDir() as tmp:
            lines = run_dead_target(tmp, 'logfmt')
        events = [logfmt(line) for line in lines]
        for e in events:
            self.assertRegex(e['ts'], TS)
            self.assertIn('msg', e)
        failed = [e for e in events if e['msg'] == 'probe failed']
        self.assertTrue(failed, lines)
        self.assertEqual((failed[0]['level'], failed[0]['target'], failed[0]['reason']),
                         ('warn', 'dead', 'connect'))
        self.assertTrue(any(e['msg'] == 'listening' and int(e['port']) > 0 for e in events))

    def test_level_flag_filters_and_names_levels(self):
        with TempDir() as tmp:
            lines = run_dead_target(tmp, 'json', level='warn')
        levels = {json.loads(line)['level'] for line in lines}
        self.assertEqual(levels - {'warn', 'error'}, set(), lines)
        self.assertIn('warn', levels)


if __name__ == '__main__':
    unittest.main()
