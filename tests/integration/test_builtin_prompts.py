"""A config without `prompts:` serves from an empty folder (the README's quick start): the
exporter probes the three built-in prompts, sends the text of config/prompts/*.txt (the
upstream's usage counts exactly those characters), and /config says each came from the binary.
A file prompts/long.txt beside the config overrides that one prompt: it is what the upstream is
sent from then on, and /config names the file."""
import json
import os
import re
import signal
import unittest

from harness import PROMPTS, Exporter, TempDir, Upstream, http_get, wait_for

NAMES = ('short', 'medium', 'long')
OVERRIDE = 'Name the three largest moons of Jupiter.'


def quick_start_config(url):
    # The README's block, with the upstream's URL and a probe interval the test can wait for.
    return ('listen: "127.0.0.1:0"\n'
            'min_interval: 100ms\n'
            'defaults: {interval: 300ms, jitter: 0, warmup: 0, max_tokens: 16}\n'
            'targets:\n'
            '  - name: openai\n'
            f'    url: "{url}"\n'
            '    api: openai-chat\n'
            '    model: gpt-4o-mini\n'
            '    auth: {bearer_token_file: openai.key}\n')


def shipped(name):
    with open(os.path.join(PROMPTS, f'{name}.txt'), encoding='utf-8') as f:
        return f.read().rstrip('\n')


def expected_prompt_tokens(text):
    """What tests/upstream/upstream.py reports for one user message of this text."""
    return max(1, (len(text) + 3) // 4 + 6)


def latest_prompt_tokens(ex):
    """prompt_tokens of each prompt's newest row (rows come newest first)."""
    out = {}
    for row in ex.rows('openai'):
        usage = row.get('usage') or {}
        if usage.get('prompt_tokens') is not None:
            out.setdefault(row.get('prompt'), usage['prompt_tokens'])
    return out


def dumped_prompt(dump, name):
    """(source, text) of one prompt in the /config dump (YAML, as yaml-cpp writes it)."""
    m = re.search(rf'^  {name}:\n    source: (.+)\n    text: (.+)$', dump, re.M)
    if not m:
        return None, None
    text = m.group(2)
    return m.group(1), json.loads(text) if text.startswith('"') else text


class BuiltInPrompts(unittest.TestCase):
    def test_a_config_without_prompts_probes_the_built_in_set_and_a_file_overrides_one(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            with open(os.path.join(tmp, 'openai.key'), 'w') as f:
                f.write('sk-builtin-prompts-0123456789\n')
            self.assertFalse(os.path.exists(os.path.join(tmp, 'prompts')))
            cfg = quick_start_config(up.url('ttft=20,gap=5,chunks=4'))
            with Exporter(tmp, cfg) as ex:
                got = wait_for(lambda: len(latest_prompt_tokens(ex)) == 3 and latest_prompt_tokens(ex),
                               20, what='a row of each built-in prompt')
                self.assertEqual(got, {n: expected_prompt_tokens(shipped(n)) for n in NAMES})
                status, dump = http_get(ex.base + '/config')
                self.assertEqual(status, 200)
                for name in NAMES:
                    self.assertEqual(dumped_prompt(dump, name), ('built in', shipped(name)), dump)

                # An override beside the config, picked up by a reload.
                os.mkdir(os.path.join(tmp, 'prompts'))
                path = os.path.join(tmp, 'prompts', 'long.txt')
                with open(path, 'w') as f:
                    f.write(OVERRIDE + '\n')
                ex.proc.p.send_signal(signal.SIGHUP)
                wait_for(lambda: dumped_prompt(http_get(ex.base + '/config')[1], 'long')[0] == path,
                         10, what='the reload to read prompts/long.txt')
                _, dump = http_get(ex.base + '/config')
                self.assertEqual(dumped_prompt(dump, 'long'), (path, OVERRIDE))
                self.assertEqual(dumped_prompt(dump, 'short'), ('built in', shipped('short')))
                wait_for(lambda: latest_prompt_tokens(ex).get('long') == expected_prompt_tokens(OVERRIDE),
                         20, what='a probe of long with the override text')


if __name__ == '__main__':
    unittest.main()
