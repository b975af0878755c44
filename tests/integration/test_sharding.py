"""Sharding (--shard.index, --shard.count): two exporters on one config of
eight targets probe disjoint sets of targets whose union is the config, each
the set the documented hash (FNV-1a 64 of the name, mod the count) gives; a
reload recomputes the split for the new config; --shard.index=auto reads the
ordinal of POD_NAME; a shard without targets serves its gauges; bad flags
exit 2 naming what was read."""
import os
import signal
import subprocess
import unittest

from harness import BIN, Exporter, TempDir, Upstream, http_get, http_post, render_config, wait_for

SPEC = 'ttft=10,gap=5,chunks=3'
NAMES = ['openai-mini', 'anthropic-haiku', 'gemini-flash', 'mistral-small', 'llama-70b',
         'qwen-coder', 'deepseek-chat', 'grok-mini']
MORE = ['azure-gpt', 'bedrock-claude', 'vertex-gemini', 'groq-llama']


def fnv1a64(name):
    """The hash docs/deploy.md documents, written out independently."""
    h = 14695981039346656037
    for b in name.encode():
        h ^= b
        h = (h * 1099511628211) % 2**64
    return h


def expected(names, index, count):
    return {n for n in names if fnv1a64(n) % count == index}


def config(up, names):
    # interval 60s: each target is probed once at start, then not again
    # within the test, so the upstream's log counts who probed it.
    return render_config([{'name': n, 'url': up.url(SPEC), 'model': n} for n in names])


def metric_targets(ex):
    return {l['target'] for n, l, v in ex.samples() if n == 'llm_stream_target_info'}


def probed_targets(ex):
    return {r['target'] for r in ex.rows()}


def shard_args(index, count):
    return ['--shard.index', str(index), '--shard.count', str(count)]


class Sharding(unittest.TestCase):
    def assert_split(self, up, exporters, names):
        """Each exporter exposes, probes and shows exactly its hash's share."""
        for k, ex in enumerate(exporters):
            mine = expected(names, k, len(exporters))
            self.assertEqual(metric_targets(ex), mine, f'shard {k} /metrics')
            wait_for(lambda: probed_targets(ex) == mine, 20, what=f'shard {k} probes {mine}')
            self.assertEqual(ex.value('llm_stream_shard_index'), k)
            self.assertEqual(ex.value('llm_stream_shards'), len(exporters))
            status, page = http_get(ex.base + '/')
            self.assertEqual(status, 200)
            for n in names:
                (self.assertIn if n in mine else self.assertNotIn)(f'>{n}<', page, f'shard {k} /')
        shares = [metric_targets(ex) for ex in exporters]
        self.assertEqual(set().union(*shares), set(names))
        self.assertEqual(sum(len(s) for s in shares), len(names), 'a target in two shards')

    def assert_requested_once(self, up, names):
        # The upstream logs a response when it has ended, maybe after the row.
        models = lambda: sorted(r['model'] for r in up.requests())  # noqa: E731
        wait_for(lambda: len(models()) >= len(names), 10, what=f'{len(names)} requests')
        self.assertEqual(models(), sorted(names))

    def test_two_replicas_split_the_targets_and_follow_a_reload(self):
        # Both shards hold targets of either config (else the test proves little).
        for names in (NAMES, NAMES + MORE):
            self.assertTrue(expected(names, 0, 2) and expected(names, 1, 2))
        with TempDir() as tmp, Upstream(tmp) as up:
            text = config(up, NAMES)
            with Exporter(tmp, text, shard_args(0, 2), name='shard0') as ex0, \
                    Exporter(tmp, text, shard_args(1, 2), name='shard1') as ex1:
                self.assert_split(up, [ex0, ex1], NAMES)
                # The upstream saw every target once: none dropped, none doubled.
                self.assert_requested_once(up, NAMES)

                # One reloads by POST /-/reload, the other by SIGHUP.
                ex0.write_config(config(up, NAMES + MORE))
                status, body = http_post(ex0.base + '/-/reload')
                self.assertEqual(status, 200, body)
                ex1.write_config(config(up, NAMES + MORE))
                ex1.proc.p.send_signal(signal.SIGHUP)
                wait_for(lambda: ex1.value('llm_stream_exporter_config_reloads_total',
                                           result='success') == 1, 10, what='reload by SIGHUP')
                self.assert_split(up, [ex0, ex1], NAMES + MORE)
                self.assert_requested_once(up, NAMES + MORE)

    def test_auto_takes_the_ordinal_of_pod_name_and_an_empty_shard_serves(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            text = config(up, NAMES[:3])
            env = {'POD_NAME': 'llm-stream-exporter-1'}
            args = ['--shard.index=auto', '--shard.count=2']
            with Exporter(tmp, text, args, env=env, name='auto') as ex:
                self.assertEqual(ex.value('llm_stream_shard_index'), 1)
                self.assertEqual(ex.value('llm_stream_shards'), 2)
                self.assertEqual(metric_targets(ex), expected(NAMES[:3], 1, 2))
            # A count with a shard that holds none of the three.
            count = 8
            empty = next(k for k in range(count) if not expected(NAMES[:3], k, count))
            with Exporter(tmp, text, shard_args(empty, count), name='empty') as ex:
                self.assertEqual(metric_targets(ex), set())
                self.assertEqual(ex.value('llm_stream_shard_index'), empty)
                self.assertEqual(ex.value('llm_stream_shards'), count)
                self.assertEqual(http_get(ex.base + '/-/ready')[0], 200)
                log = ex.proc.output()
                self.assertEqual(log.count('no target of the config is in this shard'), 1, log)

    def test_bad_flags_exit_2_naming_the_value(self):
        with TempDir() as tmp:
            path = os.path.join(tmp, 'c.yaml')
            with open(path, 'w') as f:
                f.write(render_config([{'name': 'a', 'url': 'http://127.0.0.1:1/v1'}]))
            cases = [
                (shard_args(2, 2), {}, '--shard.index 2 is not below --shard.count 2'),
                (shard_args(0, 0), {}, '--shard.count 0: at least 1'),
                (['--shard.index=auto', '--shard.count=2'], {'POD_NAME': 'exporter'},
                 "env POD_NAME 'exporter' does not end in -<ordinal>"),
                (['--shard.index=auto', '--shard.count=2'], {'POD_NAME': 'exporter-2'},
                 "the ordinal 2 of env POD_NAME 'exporter-2' is not below --shard.count 2"),
            ]
            for args, env, message in cases:
                run = subprocess.run([BIN, 'serve', '--config', path] + args,
                                     env=dict(os.environ, **env), capture_output=True, timeout=10,
                                     text=True)
                self.assertEqual(run.returncode, 2, (args, run.stderr))
                self.assertIn(message, run.stderr, args)
            # check-config shows the split the replicas will make.
            run = subprocess.run([BIN, 'check-config', path, '--shard.count', '2'],
                                 capture_output=True, timeout=10, text=True)
            self.assertEqual(run.returncode, 0, run.stderr)
            shard = fnv1a64('a') % 2
            self.assertIn(f'(shard {shard} of 2)', run.stdout)
            self.assertRegex(run.stdout, rf'shard {shard} of 2: 1 target, [\d,]+ series')
            self.assertRegex(run.stdout, rf'shard {1 - shard} of 2: 0 targets, [\d,]+ series')


if __name__ == '__main__':
    unittest.main()
