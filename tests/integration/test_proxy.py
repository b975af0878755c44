"""Proxies like every client (issue 12): `run` in MC_* mode honours
HTTP_PROXY / HTTPS_PROXY / NO_PROXY as curl and the SDKs do, `--no-proxy`
bypasses them, and the header line says which proxy from which variable
(never its userinfo); a failing proxy is named as the proxy in rows and on
stderr; `serve` logs once when the variables are set but targets ignore them.

A real squid (Debian's) is the proxy: started here on 127.0.0.1 and a free
port with a minimal config in the temp dir, in the foreground, and stopped
after. Its access log proves which requests went through it. Skipped, with a
message, only when there is no squid binary.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import unittest

from harness import wait_listening, BIN, Proc, TempDir, Upstream, free_port, http_post, render_config, wait_for

SQUID = shutil.which('squid') or ('/usr/sbin/squid' if os.path.exists('/usr/sbin/squid') else None)
PROXY_VARS = ('HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy', 'NO_PROXY', 'no_proxy',
              'ALL_PROXY', 'all_proxy')
SECRET = 's3cret-proxy-pw'


def clean_env(extra):
    """The test's environment without any proxy variable of the machine, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS}
    env.update(extra)
    return env


def run(args, env, timeout=60):
    return subprocess.run([BIN] + list(args), env=clean_env(env), capture_output=True, text=True,
                          timeout=timeout)


def read_rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class Squid:
    """A real squid forward proxy on 127.0.0.1:<free port>, everything in `workdir`."""

    def __init__(self, workdir):
        self.dir = os.path.join(workdir, 'squid')

    def __enter__(self):
        os.makedirs(self.dir)
        # As root squid drops to its own user (proxy), which writes the logs here.
        os.chmod(os.path.dirname(self.dir), 0o755)
        os.chmod(self.dir, 0o777)
        self.port = free_port()
        self.access_log = os.path.join(self.dir, 'access.log')
        conf = os.path.join(self.dir, 'squid.conf')
        with open(conf, 'w') as f:
            f.write(textwrap.dedent(f'''\
                http_port 127.0.0.1:{self.port}
                acl lse_client src 127.0.0.1/32
                http_access allow lse_client
                http_access deny all
                cache deny all
                pid_filename {self.dir}/squid.pid
                access_log stdio:{self.access_log}
                cache_log {self.dir}/cache.log
                cache_store_log none
                coredump_dir {self.dir}
                netdb_filename none
                pinger_enable off
                dns_nameservers 127.0.0.1
                forward_max_tries 1
                connect_retries 0
                shutdown_lifetime 0 seconds
                visible_hostname lse-test-proxy
                '''))
        self.proc = Proc([SQUID, '-N', '-f', conf], os.path.join(self.dir, 'squid.out'))

        wait_listening(self.proc, self.port, 15, 'squid')
        self.url = f'http://127.0.0.1:{self.port}'
        return self

    def entries(self, containing=''):
        """The access log's lines (one per transaction, written when squid
        closes it, which may be a moment after the client is done)."""
        if not os.path.exists(self.access_log):
            return []
        with open(self.access_log) as f:
            return [line for line in f if line.strip() and containing in line]

    def wait_entries(self, containing, count):
        wait_for(lambda: len(self.entries(containing)) >= count, 10,
                 what=f'{count} squid access log lines with {containing}')
        time.sleep(0.3)  # and no more than that
        return self.entries(containing)

    def assert_untouched(self, test, containing):
        time.sleep(1.0)  # what squid saw would be logged by now
        test.assertEqual(self.entries(containing), [])

    def __exit__(self, *exc):
        self.proc.stop(signal.SIGTERM, timeout=10)


def prompt_file(tmp):
    path = os.path.join(tmp, 'short.txt')
    with open(path, 'w') as f:
        f.write('What is the capital of France?\n')
    return path


@unittest.skipUnless(SQUID, 'squid is not installed (apt-get install squid): proxy tests skipped')
class RunThroughSquid(unittest.TestCase):
    """`run` in MC_* mode with the proxy variables, through a real squid."""

    @classmethod
    def setUpClass(cls):
        cls.tmp_ctx = TempDir()
        cls.tmp = cls.tmp_ctx.__enter__()
        cls.up_ctx = Upstream(cls.tmp)
        cls.up = cls.up_ctx.__enter__()
        cls.squid_ctx = Squid(cls.tmp)
        cls.squid = cls.squid_ctx.__enter__()
        cls.prompt = prompt_file(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        cls.squid_ctx.__exit__(None, None, None)
        cls.up_ctx.__exit__(None, None, None)
        cls.tmp_ctx.__exit__(None, None, None)

    def mc_env(self, seed, **extra):
        """The upstream's URL is unique per test (seed=N), so squid's log tells them apart."""
        return dict({'MC_BASE_URL': self.up.url(f'ttft=20,gap=5,chunks=6,seed={seed}'),
                     'MC_MODEL': 'm'}, **extra)

    def marker(self, seed):
        return f'POST http://127.0.0.1:{self.up.port}/s/ttft=20,gap=5,chunks=6,seed={seed}/v1/chat/completions '

    def run_three(self, name, env, *flags):
        out = os.path.join(self.tmp, f'{name}.jsonl')
        p = run(['run', self.prompt, '3', '--warmup', '0', '--out', out] + list(flags), env)
        return p, out

    def test_http_proxy_is_used_and_named_without_its_password(self):
        env = self.mc_env(1, HTTP_PROXY=f'http://lse:{SECRET}@127.0.0.1:{self.squid.port}')
        p, out = self.run_three('via', env)
        self.assertEqual(p.returncode, 0, p.stderr)
        header = p.stderr.splitlines()[0]
        self.assertIn(f'; proxy http://127.0.0.1:{self.squid.port} (from HTTP_PROXY)', header)
        self.assertNotIn(SECRET, p.stderr + p.stdout)
        rows = read_rows(out)
        self.assertEqual(len(rows), 3)
        self.assertTrue(all(r['ok'] and r['via_proxy'] is True for r in rows), rows)
        # squid saw each of them: the absolute-form POST of a proxied http request.
        self.assertEqual(len(self.squid.wait_entries(self.marker(1), 3)), 3)

    def test_lower_case_variable_works_too(self):
        p, out = self.run_three('lower', self.mc_env(2, http_proxy=self.squid.url))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('(from http_proxy)', p.stderr.splitlines()[0])
        self.assertTrue(all(r['via_proxy'] for r in read_rows(out)))
        self.assertEqual(len(self.squid.wait_entries(self.marker(2), 3)), 3)

    def test_no_proxy_flag_goes_direct(self):
        p, out = self.run_three('flag', self.mc_env(3, HTTP_PROXY=self.squid.url), '--no-proxy')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('; no proxy (--no-proxy)', p.stderr.splitlines()[0])
        rows = read_rows(out)
        self.assertTrue(all(r['ok'] and r['via_proxy'] is False for r in rows), rows)
        self.squid.assert_untouched(self, self.marker(3))

    def test_no_proxy_variable_matching_the_upstream_bypasses(self):
        p, out = self.run_three('bypass', self.mc_env(4, HTTP_PROXY=self.squid.url,
                                                      NO_PROXY='localhost,127.0.0.1'))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('; no proxy (NO_PROXY matches 127.0.0.1)', p.stderr.splitlines()[0])
        self.assertTrue(all(r['ok'] and r['via_proxy'] is False for r in read_rows(out)))
        self.squid.assert_untouched(self, self.marker(4))

    def test_https_proxy_tunnels_with_connect(self):
        """An https upstream through HTTPS_PROXY: squid logs the CONNECT tunnel
        (config mode: proxy_from_environment and the test CA)."""
        with Upstream(self.tmp, tls=True, name='tls-upstream') as up:
            config = os.path.join(self.tmp, 'tls.yaml')
            with open(config, 'w') as f:
                f.write(render_config([{'name': 'tls', 'url': up.url('ttft=20,gap=5,chunks=6'),
                                        'extra': [f'tls: {{ca_file: "{up.pki["ca"]}"}}',
                                                  'proxy_from_environment: true']}]))
            out = os.path.join(self.tmp, 'tls.jsonl')
            p = run(['run', '--config', config, '--runs', '2', '--warmup', '0', '--out', out],
                    {'HTTPS_PROXY': f'http://lse:{SECRET}@127.0.0.1:{self.squid.port}'})
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(f'proxy http://127.0.0.1:{self.squid.port} (from HTTPS_PROXY)',
                          p.stderr.splitlines()[0])
            self.assertNotIn(SECRET, p.stderr + p.stdout)
            rows = read_rows(out)
            self.assertTrue(all(r['ok'] and r['via_proxy'] for r in rows), rows)
            self.squid.wait_entries(f'CONNECT 127.0.0.1:{up.port} ', 1)

    def test_a_dead_proxy_is_named_as_the_proxy(self):
        dead = free_port()  # bound and released: nothing listens there
        p, out = self.run_three('dead', self.mc_env(5, HTTP_PROXY=f'http://lse:{SECRET}@127.0.0.1:{dead}'))
        self.assertEqual(p.returncode, 1, p.stderr)
        rows = read_rows(out)
        self.assertEqual(len(rows), 3)
        for r in rows:
            self.assertFalse(r['ok'])
            self.assertEqual(r['reason'], 'connect')
            self.assertTrue(r['via_proxy'])
            self.assertEqual(r['error'], f'proxy 127.0.0.1:{dead}: connect: Connection refused')
        self.assertIn(f'proxy 127.0.0.1:{dead}: connect: Connection refused', p.stderr)
        with open(out) as f:
            self.assertNotIn(SECRET, p.stderr + p.stdout + f.read())

    def test_a_connect_the_proxy_refuses_names_its_answer(self):
        """squid cannot reach the https target: its non-2xx answer to CONNECT is in the row."""
        dead = free_port()
        out = os.path.join(self.tmp, 'refused.jsonl')
        env = {'MC_BASE_URL': f'https://127.0.0.1:{dead}/v1', 'MC_MODEL': 'm',
               'HTTPS_PROXY': self.squid.url}
        p = run(['run', self.prompt, '1', '--warmup', '0', '--out', out], env)
        self.assertEqual(p.returncode, 1, p.stderr)
        [row] = read_rows(out)
        self.assertEqual(row['reason'], 'connect')
        self.assertRegex(row['error'], rf'^proxy 127\.0\.0\.1:{self.squid.port} answered [45]\d\d '
                                       rf'\([^)]*\) to CONNECT 127\.0\.0\.1:{dead}$')
        self.assertIn(row['error'], p.stderr)


class ServeLogsIgnoredProxyVariables(unittest.TestCase):
    """serve: one structured event when proxy variables are set but targets do
    not use them; again at a reload only when that changes. No squid needed."""

    def write(self, path, targets):
        with open(path, 'w') as f:
            f.write(render_config(targets, defaults={'interval': '60s'}))

    def test_logged_once_naming_targets_and_variables(self):
        with TempDir() as tmp:
            dead = free_port()
            base = f'http://127.0.0.1:{dead}/v1'
            targets = [{'name': 'direct', 'url': base},
                       {'name': 'env', 'url': base, 'extra': ['proxy_from_environment: true']},
                       {'name': 'excluded', 'url': f'http://localhost:{dead}/v1'},
                       {'name': 'tls', 'url': f'https://127.0.0.1:{dead}/v1'}]
            path = os.path.join(tmp, 'serve.yaml')
            self.write(path, targets)
            env = clean_env({'HTTP_PROXY': f'http://lse:{SECRET}@127.0.0.1:{free_port()}',
                             'NO_PROXY': 'localhost'})
            proc = Proc([BIN, '--log.format', 'json', 'serve', '--config.file', path,
                         '--web.enable-lifecycle'], os.path.join(tmp, 'serve.log'), env=env)
            try:
                m = wait_for(lambda: re.search(r'"msg":"listening".*?"port":(\d+)', proc.output())
                             or (not proc.alive() and 'exited'), 15, what='serve listening')
                self.assertNotEqual(m, 'exited', proc.output())
                base_url = f'http://127.0.0.1:{m.group(1)}'

                def events(msg):
                    lines = [json.loads(x) for x in proc.output().splitlines() if x.startswith('{')]
                    return [e for e in lines if e['msg'] == msg]
                [e] = events('proxy variables set but not used')
                self.assertEqual(e['level'], 'info')
                # The https target has no HTTPS_PROXY, "excluded" is in NO_PROXY,
                # "env" uses the variables: only "direct" ignores one.
                self.assertEqual(e['targets'], 'direct')
                self.assertEqual(e['variables'], 'HTTP_PROXY')
                self.assertIn('proxy_from_environment', e['hint'])
                # serve's probes read the variables the same way: "env" goes to the
                # (dead) proxy and its failure names it; "direct" does not.
                wait_for(lambda: {'env', 'direct'} <= {f['target'] for f in events('probe failed')},
                         15, what='first probes of env and direct')
                failed = {f['target']: f['detail'] for f in events('probe failed')}
                self.assertRegex(failed['env'], r'^proxy 127\.0\.0\.1:\d+: connect: ')
                self.assertNotIn('proxy', failed['direct'])
                self.assertNotIn(SECRET, proc.output())

                # A reload that changes nothing logs nothing more ...
                self.assertEqual(http_post(base_url + '/-/reload')[0], 200)
                wait_for(lambda: len(events('config reloaded')) == 1, 10, what='reload 1')
                self.assertEqual(len(events('proxy variables set but not used')), 1)
                # ... one that changes the set logs it again.
                targets.append({'name': 'direct2', 'url': base})
                self.write(path, targets)
                self.assertEqual(http_post(base_url + '/-/reload')[0], 200)
                wait_for(lambda: len(events('config reloaded')) == 2, 10, what='reload 2')
                later = events('proxy variables set but not used')
                self.assertEqual(len(later), 2, later)
                self.assertEqual(later[1]['targets'], 'direct,direct2')
                self.assertNotIn(SECRET, proc.output())
            finally:
                proc.stop()


if __name__ == '__main__':
    if not SQUID:
        sys.stderr.write('test_proxy: squid is not installed, the squid tests are skipped\n')
    unittest.main()
