"""`run` as a command: the MC_* environment mode, the plan (rounds, shuffle,
seed, concurrency), and bad input: an unreachable endpoint, a missing prompt
file, a missing endpoint, an interrupted run. Each bad case gives one clear
message and a non-zero exit; rows already written stay whole and parseable.
"""
import json
import os
import re
import signal
import time
import unittest

from harness import ROOT, Exporter, TempDir, Upstream, free_port, render_config, wait_for
from run_helpers import interrupt, prompt_files, read_rows, run_cli, run_config, start_cli

SECRET = 'sk-test-secret-0123456789'


def read_text(path):
    with open(path) as f:
        return f.read()


class EnvironmentMode(unittest.TestCase):
    def test_prompt_files_and_trailing_run_count(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            files = prompt_files(tmp)
            env = {'MC_BASE_URL': up.url('ttft=40,gap=10,chunks=8'), 'MC_MODEL': 'mc-model', 'MC_API_KEY': SECRET}
            out, report = f'{tmp}/rows.jsonl', f'{tmp}/report.html'
            p = run_cli(['run'] + files + ['6', '--out', out, '--report', report, '--seed', '3'], env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            rows = read_rows(out)
            self.assertEqual(len(rows), 18)
            self.assertEqual(len(up.requests()), 18 + 2)  # 2 warmup probes by default
            self.assertEqual({r['model'] for r in rows}, {'mc-model'})
            self.assertEqual({r['target'] for r in rows}, {'127.0.0.1'})
            # Every round has each prompt once, in a shuffled order.
            order = [r['prompt'] for r in rows]
            rounds = [order[i:i + 3] for i in range(0, 18, 3)]
            for rnd in rounds:
                self.assertEqual(sorted(rnd), ['long', 'medium', 'short'])
            self.assertGreater(len({tuple(r) for r in rounds}), 1, rounds)
            # Progress: one plain line per probe when stderr is not a terminal.
            self.assertIn('run 18/18 target=127.0.0.1', p.stderr)
            self.assertIn('warmup 2/2', p.stderr)
            # The key is a secret: nowhere in what the command printed or wrote.
            for text in (p.stdout, p.stderr, read_text(out), read_text(report)):
                self.assertNotIn(SECRET, text)
            self.assertRegex(p.stdout, r'\n127\.0\.0\.1 +short +6/6 ')
            self.assertIn('gap p95', p.stdout)

            # The same seed gives the same plan.
            out2 = f'{tmp}/rows2.jsonl'
            p = run_cli(['run'] + files + ['6', '--out', out2, '--seed', '3', '--warmup', '0'], env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual([r['prompt'] for r in read_rows(out2)], order)

    def test_concurrency_keeps_that_many_streams_in_flight(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            files = prompt_files(tmp)[:1]
            env = {'MC_BASE_URL': up.url('ttft=100,gap=20,chunks=20'), 'MC_MODEL': 'm'}
            p = run_cli(['run'] + files + ['9', '--concurrency', '3', '--warmup', '0', '--out', f'{tmp}/r.jsonl'],
                        env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            reqs = up.requests()
            self.assertEqual(len(reqs), 9)
            spans = [(r['t_request'], r['end']) for r in reqs]
            most = max(sum(1 for a, b in spans if a <= t < b) for t, _ in spans)
            self.assertEqual(most, 3)
            self.assertEqual(len({r['conn'] for r in reqs}), 3)  # one connection per stream


def demo_config(tmp, upstream_base):
    """config/demo.yaml as scripts/demo.sh writes it: its upstream, its prompt files."""
    with open(os.path.join(ROOT, 'config', 'demo.yaml')) as f:
        text = f.read()
    text = text.replace('UPSTREAM_URL', upstream_base).replace(
        'file: prompts/', f'file: {ROOT}/config/prompts/')
    path = os.path.join(tmp, 'demo.yaml')
    with open(path, 'w') as f:
        f.write(text)
    return path


class Summary(unittest.TestCase):
    # The demo's 13 series and what each is built to show (config/demo.yaml).
    SERIES = {('healthy', p): 'none' for p in ('short', 'medium', 'long')}
    SERIES.update({('stalling-proxy', p): 'transport' for p in ('short', 'medium', 'long')})
    SERIES.update({('pausing-model', p): 'generation' for p in ('short', 'medium')})
    SERIES.update({('queued', 'short'): 'queue'})
    SERIES.update({(t, p): 'none' for t in ('anthropic', 'ollama') for p in ('short', 'medium')})

    def test_demo_summary_is_one_line_per_series_and_one_per_verdict(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            cfg = demo_config(tmp, up.base)
            p = run_cli(['run', '--config', cfg, '--runs', '5', '--concurrency', '6', '--seed', '5',
                         '--out', f'{tmp}/rows.jsonl'], rt=True)
            self.assertEqual(p.returncode, 0, p.stderr[-3000:])
            lines = p.stdout.splitlines()
            self.assertLessEqual(max(len(line) for line in lines), 120, p.stdout)
            self.assertEqual(lines[0].split(), ['target', 'prompt', 'runs', 'ok', 'TTFT', 'p50', 'TTFT',
                                                'p95', 'gap', 'p95', 'worst', 'gap', 'stalls', 'verdict'])
            self.assertTrue(lines[-1].startswith('total: 65 runs, 65 ok, 0 failed; 6 warmup runs discarded'),
                            lines[-1])
            at = lines[0].index('verdict')
            verdicts, evidence, last = {}, {}, None
            for line in lines[1:-1]:
                if line.startswith('    '):
                    shape, text = line.strip().split(': ', 1)
                    evidence.setdefault(last, []).append(shape)
                    self.assertTrue(text, line)
                    continue
                cells = line.split()
                last = (cells[0], cells[1])
                self.assertEqual(cells[2], '5/5', line)
                verdicts[last] = line[at:]
            self.assertEqual(set(verdicts), set(self.SERIES), p.stdout)
            # Exactly the lines the series imply: a header, one per series, one of
            # evidence per shape that holds, the total.
            shapes = {k: [] if v == 'none' else v.split(', ') for k, v in verdicts.items()}
            self.assertEqual(len(lines), 1 + len(verdicts) + sum(len(v) for v in shapes.values()) + 1,
                             p.stdout)
            for key, held in shapes.items():
                self.assertEqual(evidence.get(key, []), held, key)
                # Each series shows the shape it is built to show (load on a shared
                # machine may add "shared capacity" to a series; nothing else).
                planted = self.SERIES[key]
                self.assertEqual([s for s in held if s != 'shared capacity'],
                                 [] if planted == 'none' else [planted], (key, p.stdout))
            # Transport's evidence is chunks held; the pausing model's its stalls.
            self.assertRegex(p.stdout, r'\n    transport: \d+ of \d+ chunks arrived together; '
                                       r'10 of 10 stalls ended in a burst')
            self.assertRegex(p.stdout, r'\n    generation: 5 of 5 probes stalled')
            # Stalls: the planted two per probe, five probes.
            for line in lines:
                if line.startswith(('stalling-proxy ', 'pausing-model ')):
                    self.assertEqual(line[:at].split()[-1], '10', line)

    def test_explain_prints_every_rule(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            cfg = run_config(tmp, [{'name': 'steady', 'url': up.url('ttft=60,gap=10,chunks=12')},
                                   {'name': 'waits', 'url': up.url('ttft=2100,gap=10,chunks=12')}])
            for flag in ('--explain', '-v'):
                p = run_cli(['run', '--config', cfg, '--runs', '5', '--warmup', '0', '--concurrency', '4',
                             '--out', f'{tmp}/rows.jsonl', flag])
                self.assertEqual(p.returncode, 0, p.stderr[-3000:])
                blocks = len(re.findall(r'^target ', p.stdout, re.M))
                self.assertGreaterEqual(blocks, 2, p.stdout)
                self.assertEqual(p.stdout.count('\n  diagnosis: '), blocks, p.stdout)
                self.assertEqual(len(re.findall(r'^    \[[x ?]\] ', p.stdout, re.M)), 5 * blocks, p.stdout)
                self.assertIn('    [x] queue ', p.stdout)
                self.assertIn('    -> queue: ', p.stdout)
                self.assertRegex(p.stdout, r'\n  gap_p95 ')


class CheckConfigBesideARunningExporter(unittest.TestCase):
    def test_the_address_in_use_is_a_warning(self):
        # The usual place to validate before a SIGHUP: the host where the
        # exporter runs on this very config and holds its listen address.
        with TempDir() as tmp, Upstream(tmp) as up:
            port = free_port()
            text = render_config([{'name': 'steady', 'url': up.url('ttft=50,gap=10,chunks=5')}],
                                 listen=f'127.0.0.1:{port}')
            with Exporter(tmp, text) as ex:
                self.assertEqual(ex.port, port)
                p = run_cli(['check-config', ex.config_path])
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stderr,
                                 f'{ex.config_path}:1:9: warning: listen: cannot bind 127.0.0.1:{port}: '
                                 'Address already in use (is the exporter already running? serve cannot '
                                 'start beside it)\n')
                self.assertTrue(p.stdout.startswith(f'{ex.config_path}: ok (1 target'), p.stdout)
            # Stopped: no warning.
            p = run_cli(['check-config', ex.config_path])
            self.assertEqual((p.returncode, p.stderr), (0, ''))


class BadInput(unittest.TestCase):
    def test_unreachable_endpoint(self):
        with TempDir() as tmp:
            files = prompt_files(tmp)[:2]
            port = free_port()
            out = f'{tmp}/rows.jsonl'
            p = run_cli(['run'] + files + ['3', '--out', out, '--warmup', '1'],
                        env={'MC_BASE_URL': f'http://127.0.0.1:{port}/v1', 'MC_MODEL': 'm'})
            self.assertEqual(p.returncode, 1, p.stderr)
            errors = [line for line in p.stderr.splitlines() if line.startswith('run: error')]
            self.assertEqual(len(errors), 1, p.stderr)
            self.assertIn('all 6 runs failed (connect 6', errors[0])
            self.assertIn('failures: connect 3', p.stdout)
            rows = read_rows(out)
            self.assertEqual(len(rows), 6)
            self.assertTrue(all(not r['ok'] and r['reason'] == 'connect' for r in rows))

    def test_rows_that_cannot_be_written_are_surfaced(self):
        # /dev/full: every write(2) fails with ENOSPC, as on a full disk.
        with TempDir() as tmp, Upstream(tmp) as up:
            files = prompt_files(tmp)[:1]
            env = {'MC_BASE_URL': up.url('ttft=10,gap=5,chunks=4'), 'MC_MODEL': 'm'}
            p = run_cli(['run'] + files + ['4', '--out', '/dev/full', '--warmup', '0'], env=env)
            self.assertEqual(p.returncode, 1, p.stderr)
            lines = p.stderr.splitlines()
            write_errors = [line for line in lines if 'cannot append a row' in line]
            self.assertEqual(write_errors,
                             ['run: /dev/full: cannot append a row: write failed: No space left on device'],
                             p.stderr)  # one line per distinct error, not one per row
            self.assertIn('run: error: 4 of 4 rows could not be written to /dev/full '
                          '(1 distinct error, shown above)', lines)
            self.assertIn('run: 0 rows in /dev/full', lines)
            self.assertEqual(len(up.requests()), 4)  # probing went on
            self.assertRegex(p.stdout, r'\n127\.0\.0\.1 +short +4/4 ')  # the summary still comes

    def test_missing_prompt_file(self):
        with TempDir() as tmp:
            p = run_cli(['run', f'{tmp}/nope.txt', '5', '--out', f'{tmp}/r.jsonl'],
                        env={'MC_BASE_URL': 'http://127.0.0.1:9/v1', 'MC_MODEL': 'm'})
            self.assertEqual(p.returncode, 2)
            self.assertEqual(p.stderr.strip(),
                             f"run: cannot read prompt file '{tmp}/nope.txt': No such file or directory")
            self.assertEqual(p.stdout, '')

    def test_no_prompt_files_runs_the_built_in_set(self):
        # Without --config and without prompt files: the three built-in prompts,
        # their text sent byte for byte as config/prompts/*.txt holds it.
        with TempDir() as tmp, Upstream(tmp) as up:
            env = {'MC_BASE_URL': up.url('ttft=10,gap=5,chunks=4'), 'MC_MODEL': 'm'}
            out = f'{tmp}/r.jsonl'
            p = run_cli(['run', '2', '--out', out, '--warmup', '0'], env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            rows = read_rows(out)
            self.assertEqual(sorted(r['prompt'] for r in rows),
                             ['long', 'long', 'medium', 'medium', 'short', 'short'])
            # The upstream reports ~4 characters a token + 6 for one user message.
            for name in ('short', 'medium', 'long'):
                with open(os.path.join(ROOT, 'config', 'prompts', f'{name}.txt')) as f:
                    text = f.read().rstrip('\n')
                want = max(1, (len(text) + 3) // 4 + 6)
                got = {r['usage']['prompt_tokens'] for r in rows if r['prompt'] == name}
                self.assertEqual(got, {want}, name)

    def test_no_endpoint_and_no_config(self):
        with TempDir() as tmp:
            env = {k: '' for k in ('MC_BASE_URL', 'MC_MODEL', 'MC_API_KEY')}
            p = run_cli(['run', f'{tmp}/x.txt'], env=env)
            self.assertEqual(p.returncode, 2)
            self.assertIn('MC_BASE_URL is not set', p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1)

    def test_bad_config_names_file_and_line(self):
        with TempDir() as tmp:
            cfg = f'{tmp}/bad.yaml'
            with open(cfg, 'w') as f:
                f.write('prompts:\n  p: {text: hi}\ntargets:\n  - name: x\n    url: http://127.0.0.1:1/v1\n'
                        '    modle: m\n')
            p = run_cli(['run', '--config', cfg])
            self.assertEqual(p.returncode, 2)
            self.assertRegex(p.stderr, rf'^run: {cfg}:6:\d+: .*modle')

    def interrupted(self, sig, name):
        with TempDir() as tmp, Upstream(tmp) as up:
            files = prompt_files(tmp)[:1]
            out = f'{tmp}/rows.jsonl'
            env = {'MC_BASE_URL': up.url('ttft=50,gap=25,chunks=40'), 'MC_MODEL': 'm'}
            proc = start_cli(['run'] + files + ['50', '--warmup', '0', '--out', out], env=env)
            try:
                wait_for(lambda: os.path.exists(out) and len(read_rows(out)) >= 2, 30, what='two rows')
                time.sleep(0.4)  # mid-stream of the third probe
                t0 = time.monotonic()
                interrupt(proc, sig)
                stdout, stderr = proc.communicate(timeout=10)
            finally:
                if proc.poll() is None:
                    proc.kill()
            self.assertLess(time.monotonic() - t0, 3)
            self.assertEqual(proc.returncode, 130, stderr)
            lines = [line for line in stderr.splitlines() if 'interrupted' in line]
            self.assertEqual(len(lines), 1, stderr)
            rows = read_rows(out)  # every line parses
            # The probe in flight is a row that says so (never lost, never a measurement).
            self.assertEqual([r['ok'] for r in rows], [True] * (len(rows) - 1) + [False])
            self.assertEqual(rows[-1]['reason'], 'canceled')
            self.assertIn(f'run: interrupted by {name} after {len(rows) - 1} of 50 runs: 1 in-flight '
                          'probe canceled (rows with reason canceled)', lines[0])
            self.assertIn(f'{len(rows)} rows kept in {out}', lines[0])
            with open(out, 'rb') as f:
                self.assertTrue(f.read().endswith(b'\n'))
            self.assertIn('total: ', stdout)  # the summary of what finished
            # The upstream saw the canceled stream go away.
            wait_for(lambda: any(r.get('outcome') == 'client_gone' for r in up.requests()), 5,
                     what='client_gone in the upstream log')

    def test_sigint(self):
        self.interrupted(signal.SIGINT, 'SIGINT')

    def test_sigterm(self):
        self.interrupted(signal.SIGTERM, 'SIGTERM')


if __name__ == '__main__':
    unittest.main()
