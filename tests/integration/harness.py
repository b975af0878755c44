"""Test harness: starts the scripted upstream, the exporter, nginx and
Prometheus on 127.0.0.1 free ports, and stops them afterwards.

Environment: LSE_BIN (exporter binary), defaults to build/exporter/llm_stream_exporter.
"""
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
BIN = os.environ.get('LSE_BIN', os.path.join(ROOT, 'build', 'exporter', 'llm_stream_exporter'))
UPSTREAM = os.path.join(ROOT, 'tests', 'upstream', 'upstream.py')
PKI_SCRIPT = os.path.join(ROOT, 'tests', 'upstream', 'make_test_pki.sh')
PROMPTS = os.path.join(ROOT, 'config', 'prompts')

sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import live_view  # noqa: E402  (metrics text parser and histogram_quantile)


def read_text(path):
    with open(path) as f:
        return f.read()


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout, interval=0.05, what='condition'):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f'timed out after {timeout}s waiting for {what} (last: {last!r})')


def wait_listening(proc, port, timeout, name):
    """Waits until 127.0.0.1:port accepts connections; fails with the
    process's output when it exits first."""
    def up():
        try:
            socket.create_connection(('127.0.0.1', port), timeout=0.2).close()
            return True
        except OSError:
            return not proc.alive() and 'exited'
    if wait_for(up, timeout, what=f'{name} listening') == 'exited':
        raise AssertionError(f'{name} exited:\n' + proc.output())


def http_get(url, timeout=5, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode('utf-8', 'replace')
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode('utf-8', 'replace')
    except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
        return 0, str(e)


def http_post(url, body=b'', timeout=10):
    req = urllib.request.Request(url, data=body, method='POST')
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def realtime_best_effort():
    """preexec_fn: SCHED_FIFO 5 for a measuring process, when permitted.

    The upstream (the reference clock) runs SCHED_FIFO 10; on a shared 2-core
    machine a normal-priority exporter is sometimes woken 10-20 ms late, which
    is the machine's noise, not the exporter's clock. The exporter sleeps in
    epoll almost all the time; the kernel's RT throttling still bounds it.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(5))
    except (AttributeError, OSError):
        pass


class Proc:
    """A child process in its own process group, killed on exit."""

    def __init__(self, args, log_path, env=None, cwd=None, realtime=False):
        self.log_path = log_path
        self.log = open(log_path, 'wb')
        self.p = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                  cwd=cwd, start_new_session=True,
                                  preexec_fn=realtime_best_effort if realtime else None)

    def alive(self):
        return self.p.poll() is None

    def output(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, 'rb') as f:
            return f.read().decode('utf-8', 'replace')

    def stop(self, sig=signal.SIGTERM, timeout=5):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait()
        self.log.close()
        return self.p.returncode


class Upstream:
    def __init__(self, workdir, tls=False, name='upstream'):
        self.workdir = workdir
        self.tls = tls
        self.name = name

    def __enter__(self):
        port_file = os.path.join(self.workdir, f'{self.name}.port')
        self.log_file = os.path.join(self.workdir, f'{self.name}.jsonl')
        args = [sys.executable, UPSTREAM, '--host', '127.0.0.1', '--port', '0',
                '--port-file', port_file, '--log-file', self.log_file]
        if self.tls:
            self.pki = make_pki(self.workdir)
            args += ['--tls-cert', self.pki['server_cert'], '--tls-key', self.pki['server_key']]
        self.proc = Proc(args, os.path.join(self.workdir, f'{self.name}.log'))
        wait_for(lambda: os.path.exists(port_file) and read_text(port_file).strip(), 10,
                 what='upstream port file')
        self.port = int(read_text(port_file).strip())
        scheme = 'https' if self.tls else 'http'
        self.base = f'{scheme}://127.0.0.1:{self.port}'
        return self

    def url(self, spec=None):
        return f'{self.base}/s/{spec}/v1' if spec else f'{self.base}/v1'

    def requests(self):
        if not os.path.exists(self.log_file):
            return []
        with open(self.log_file) as f:
            return [json.loads(line) for line in f if line.strip()]

    def __exit__(self, *exc):
        self.proc.stop()


def make_pki(workdir):
    out = os.path.join(workdir, 'pki')
    subprocess.run(['bash', PKI_SCRIPT, out], check=True)
    names = {}
    for f in os.listdir(out):
        names[f] = os.path.join(out, f)
    return {
        'ca': os.path.join(out, 'ca.crt'),
        'other_ca': os.path.join(out, 'other-ca.crt'),
        'server_cert': os.path.join(out, 'server.crt'),
        'server_key': os.path.join(out, 'server.key'),
        'client_cert': os.path.join(out, 'client.crt'),
        'client_key': os.path.join(out, 'client.key'),
    }


def yaml_quote(s):
    return json.dumps(s)  # JSON strings are valid YAML double-quoted scalars


def render_config(targets, defaults=None, listen='127.0.0.1:0', extra=''):
    """targets: list of dicts with name, url and optional raw YAML lines under 'extra'."""
    d = {'interval': '60s', 'jitter': 0, 'warmup': 0, 'max_tokens': 64,
         'timeout': '{first_token: 5s, idle: 5s, total: 20s}'}
    d.update(defaults or {})
    # Tests probe every 200 ms to 4 s: below the product's 1 s floor on purpose.
    lines = [f'listen: {yaml_quote(listen)}', 'min_interval: 100ms', 'defaults:']
    for k, v in d.items():
        lines.append(f'  {k}: {v}')
    lines += ['prompts:',
              f'  short: {{file: {yaml_quote(os.path.join(PROMPTS, "short.txt"))}}}',
              f'  long: {{file: {yaml_quote(os.path.join(PROMPTS, "long.txt"))}}}',
              'targets:']
    for t in targets:
        lines.append(f'  - name: {t["name"]}')
        lines.append(f'    url: {yaml_quote(t["url"])}')
        lines.append(f'    model: {t.get("model", "test-model")}')
        lines.append(f'    prompts: [{t.get("prompts", "short")}]')
        for raw in t.get('extra', []):
            lines.append(f'    {raw}')
    return '\n'.join(lines) + '\n' + extra


class Exporter:
    def __init__(self, workdir, config_text, args=(), env=None, name='exporter'):
        self.workdir = workdir
        self.config_path = os.path.join(workdir, f'{name}.yaml')
        self.name = name
        self.args = list(args)
        self.env = env
        self.write_config(config_text)

    def write_config(self, text):
        with open(self.config_path, 'w') as f:
            f.write(text)

    def __enter__(self):
        env = dict(os.environ)
        env.update(self.env or {})
        # --web.enable-lifecycle: the reload tests POST /-/reload (off by default).
        self.proc = Proc([BIN, '--log.level', 'debug', 'serve', '--config', self.config_path,
                          '--web.enable-lifecycle'] + self.args,
                         os.path.join(self.workdir, f'{self.name}.log'), env=env, realtime=True)
        m = wait_for(lambda: re.search(r'msg=listening .* port=(\d+)', self.proc.output())
                     or (not self.proc.alive() and 'exited'), 10, what='exporter listening')
        if m == 'exited':
            raise AssertionError('exporter exited:\n' + self.proc.output())
        self.port = int(m.group(1))
        self.base = f'http://127.0.0.1:{self.port}'
        return self

    def metrics_text(self):
        status, text = http_get(self.base + '/metrics')
        assert status == 200, status
        return text

    def samples(self):
        return live_view.parse(self.metrics_text())

    def value(self, name, **labels):
        total = None
        for n, l, v in self.samples():
            if n == name and all(l.get(k) == str(val) for k, val in labels.items()):
                total = (total or 0) + v
        return total

    def rows(self, target='', limit=1000):
        status, body = http_get(f'{self.base}/api/v1/probes?target={target}&limit={limit}')
        assert status == 200, body
        return json.loads(body)['probes']

    def wait_probes(self, target, count, timeout=30, result=None):
        def done():
            labels = {'target': target}
            if result:
                labels['result'] = result
            v = self.value('llm_stream_probes_total', **labels) or 0
            return v >= count and v
        return wait_for(done, timeout, what=f'{count} probes of {target}')

    def __exit__(self, *exc):
        if exc[0] is not None:
            sys.stderr.write(f'--- {self.name} log ---\n{self.proc.output()[-6000:]}\n')
        self.rc = self.proc.stop()


def histogram(samples, name, **labels):
    """Returns {le: cumulative count} summed over matching series."""
    out = {}
    for n, l, v in samples:
        if n == name + '_bucket' and all(l.get(k) == str(val) for k, val in labels.items()):
            le = float(l['le'].replace('+Inf', 'inf'))
            out[le] = out.get(le, 0) + v
    return out


class TempDir:
    def __enter__(self):
        self.path = tempfile.mkdtemp(prefix='lse-test-')
        return self.path

    def __exit__(self, *exc):
        if exc[0] is None or not os.environ.get('LSE_KEEP_TMP'):
            shutil.rmtree(self.path, ignore_errors=True)


class Nginx:
    """A real nginx (Debian's) in front of the upstream, on a free port.

    locations: {prefix: [directives]}; each proxies to `upstream_base`.
    tls: a make_pki() dict: the server speaks TLS with its server certificate;
    then http2=True offers h2 by ALPN (nginx 1.22: `listen ... ssl http2`), and
    a second listener on plain_tls_port serves the same locations without
    http2 (ALPN http/1.1 only). realtime: nginx runs at SCHED_FIFO when
    permitted, as the exporter does (a hop whose relay timing a test pairs
    with the upstream's writes).
    """

    def __init__(self, workdir, upstream_base, locations, tls=None, http2=False, name='nginx',
                 realtime=False):
        self.workdir = os.path.join(workdir, name)
        self.upstream_base = upstream_base
        self.locations = locations
        self.tls = tls
        self.http2 = http2
        self.realtime = realtime

    def __enter__(self):
        os.makedirs(os.path.join(self.workdir, 'logs'), exist_ok=True)
        self.port = free_port()
        blocks = []
        for prefix, directives in self.locations.items():
            body = '\n'.join(f'      {d};' for d in directives)
            blocks.append(f'''    location /{prefix}/ {{
      proxy_pass {self.upstream_base}/;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
{body}
    }}''')
        listen = f'listen 127.0.0.1:{self.port};'
        if self.tls:
            self.plain_tls_port = free_port()
            listen = '\n    '.join([
                f'listen 127.0.0.1:{self.port} ssl{" http2" if self.http2 else ""};',
                f'listen 127.0.0.1:{self.plain_tls_port} ssl;',
                f'ssl_certificate {self.tls["server_cert"]};',
                f'ssl_certificate_key {self.tls["server_key"]};'])
        conf = textwrap.dedent('''\
            worker_processes 1;
            events { worker_connections 256; }
            http {
              access_log off;
              client_body_temp_path %(w)s/tmp-body;
              proxy_temp_path %(w)s/tmp-proxy;
              fastcgi_temp_path %(w)s/tmp-fcgi;
              uwsgi_temp_path %(w)s/tmp-uwsgi;
              scgi_temp_path %(w)s/tmp-scgi;
              server {
                %(listen)s
            %(blocks)s
              }
            }
            ''') % {'w': self.workdir, 'listen': listen, 'blocks': '\n'.join(blocks)}
        self.conf = os.path.join(self.workdir, 'nginx.conf')
        with open(self.conf, 'w') as f:
            f.write(conf)
        nginx = shutil.which('nginx') or '/usr/sbin/nginx'
        self.proc = Proc([nginx, '-p', self.workdir, '-c', self.conf, '-g',
                          f'daemon off; pid {self.workdir}/nginx.pid; error_log stderr warn;'],
                         os.path.join(self.workdir, 'nginx.out'), realtime=self.realtime)

        wait_listening(self.proc, self.port, 10, 'nginx')
        self.base = f'{"https" if self.tls else "http"}://127.0.0.1:{self.port}'
        if self.tls:
            self.plain_tls_base = f'https://127.0.0.1:{self.plain_tls_port}'
        return self

    def url(self, prefix, spec, base=None):
        return f'{base or self.base}/{prefix}/s/{spec}/v1'

    def __exit__(self, *exc):
        self.proc.stop(signal.SIGQUIT)


class Prometheus:
    """A real Prometheus (Debian's) scraping the given targets every second."""

    def __init__(self, workdir, scrape_targets, rule_files=(), args=()):
        self.workdir = os.path.join(workdir, 'prometheus')
        self.scrape_targets = scrape_targets
        self.rule_files = list(rule_files)
        self.args = list(args)  # e.g. --enable-feature=exemplar-storage

    def __enter__(self):
        os.makedirs(self.workdir, exist_ok=True)
        self.port = free_port()
        cfg = os.path.join(self.workdir, 'prometheus.yml')
        targets = ', '.join(f'"{t}"' for t in self.scrape_targets)
        rules = ''.join(f'\n  - "{r}"' for r in self.rule_files)
        with open(cfg, 'w') as f:
            f.write(f'global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n'
                    f'rule_files:{rules if rules else " []"}\n'
                    f'scrape_configs:\n  - job_name: llm-stream-exporter\n'
                    f'    static_configs: [{{targets: [{targets}]}}]\n')
        binary = shutil.which('prometheus') or '/usr/bin/prometheus'
        self.proc = Proc([binary, f'--config.file={cfg}', f'--storage.tsdb.path={self.workdir}/data',
                          f'--web.listen-address=127.0.0.1:{self.port}', '--log.level=warn']
                         + self.args,
                         os.path.join(self.workdir, 'prometheus.log'))
        self.base = f'http://127.0.0.1:{self.port}'
        wait_for(lambda: http_get(self.base + '/-/ready', timeout=1)[0] == 200
                 if self.proc.alive() else 'exited', 30, what='prometheus ready')
        if not self.proc.alive():
            raise AssertionError('prometheus exited:\n' + self.proc.output())
        return self

    def query(self, expr):
        import urllib.parse
        status, body = http_get(self.base + '/api/v1/query?' + urllib.parse.urlencode({'query': expr}))
        data = json.loads(body)
        if data.get('status') != 'success':
            raise AssertionError(f'query failed: {expr}: {body}')
        return data['data']['result']

    def __exit__(self, *exc):
        self.proc.stop()


def promtool_findings(text):
    """`promtool check metrics` on an exposition: (exit code, its findings).
    A clean exposition gives (0, [])."""
    promtool = shutil.which('promtool') or '/usr/bin/promtool'
    check = subprocess.run([promtool, 'check', 'metrics'], input=text.encode(),
                           capture_output=True)
    lines = (check.stdout + check.stderr).decode('utf-8', 'replace').splitlines()
    return check.returncode, [line for line in lines if line.strip()]
