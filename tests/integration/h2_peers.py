"""HTTP/2 peers for the integration tests, each on a free 127.0.0.1 port,
started by the test and stopped after:

  H2Server  the scripted HTTP/2 server h2_server.py (python3-h2): TLS with
            ALPN h2, or h2c with prior knowledge; fault modes by path
  Nghttpx   a real nghttpx (Debian's nghttp2-proxy): TLS front end offering
            h2 and http/1.1 by ALPN, HTTP/1.1 back end to the given upstream
"""
import json
import os
import shutil
import sys

from harness import Proc, free_port, make_pki, read_text, wait_for, wait_listening

HERE = os.path.dirname(os.path.abspath(__file__))
H2_SERVER = os.path.join(HERE, 'h2_server.py')
NGHTTPX = shutil.which('nghttpx') or ('/usr/sbin/nghttpx' if os.path.exists('/usr/sbin/nghttpx') else None)
# python3-h2 is Debian's package: run the server with Debian's interpreter.
PYTHON = '/usr/bin/python3' if os.path.exists('/usr/bin/python3') else sys.executable


def have_python_h2():
    import subprocess
    return subprocess.run([PYTHON, '-c', 'import h2'], capture_output=True).returncode == 0


class H2Server:
    def __init__(self, workdir, tls=True, name=None):
        self.workdir = workdir
        self.tls = tls
        self.name = name or ('h2-tls' if tls else 'h2c')

    def __enter__(self):
        port_file = os.path.join(self.workdir, f'{self.name}.port')
        self.log_file = os.path.join(self.workdir, f'{self.name}.jsonl')
        args = [PYTHON, H2_SERVER, '--port-file', port_file, '--log-file', self.log_file]
        if self.tls:
            self.pki = make_pki(self.workdir)
            args += ['--tls-cert', self.pki['server_cert'], '--tls-key', self.pki['server_key']]
        self.proc = Proc(args, os.path.join(self.workdir, f'{self.name}.log'))
        wait_for(lambda: (os.path.exists(port_file) and read_text(port_file).strip())
                 or (not self.proc.alive() and 'exited'), 10, what=f'{self.name} port file')
        if not self.proc.alive():
            raise AssertionError(f'{self.name} exited:\n' + self.proc.output())
        self.port = int(read_text(port_file).strip())
        self.base = f'{"https" if self.tls else "http"}://127.0.0.1:{self.port}'
        return self

    def url(self, mode, spec):
        return f'{self.base}/h2/{mode}/s/{spec}/v1'

    def streams(self, mode=None):
        """The server's log: one dict per finished stream."""
        if not os.path.exists(self.log_file):
            return []
        with open(self.log_file) as f:
            records = [json.loads(line) for line in f if line.strip()]
        return [r for r in records if mode is None or r['path'].startswith(f'/h2/{mode}/')]

    def __exit__(self, *exc):
        self.proc.stop()


class Nghttpx:
    """nghttpx with one worker, TLS front end (the test PKI's server
    certificate), HTTP/1.1 back end to upstream_port; it relays every
    back-end read to the client at once (no response buffering). It runs at
    SCHED_FIFO when permitted, as the exporter does: its relay is part of
    every gap the tests pair with the upstream's writes."""

    def __init__(self, workdir, upstream_port, pki, name='nghttpx'):
        self.workdir = os.path.join(workdir, name)
        self.upstream_port = upstream_port
        self.pki = pki
        self.name = name

    def __enter__(self):
        os.makedirs(self.workdir, exist_ok=True)
        self.port = free_port()
        conf = os.path.join(self.workdir, 'nghttpx.conf')
        with open(conf, 'w') as f:
            f.write('')  # everything on the command line; not /etc/nghttpx/nghttpx.conf
        self.proc = Proc([NGHTTPX, f'--conf={conf}', f'--frontend=127.0.0.1,{self.port}',
                          f'--backend=127.0.0.1,{self.upstream_port};;proto=http/1.1',
                          '--workers=1', '--no-ocsp', '--no-via', '--backend-keep-alive-timeout=60s',
                          f'--errorlog-file={self.workdir}/error.log',
                          f'--pid-file={self.workdir}/nghttpx.pid',
                          self.pki['server_key'], self.pki['server_cert']],
                         os.path.join(self.workdir, 'nghttpx.out'), realtime=True)
        wait_listening(self.proc, self.port, 10, 'nghttpx')
        self.base = f'https://127.0.0.1:{self.port}'
        return self

    def url(self, spec):
        return f'{self.base}/s/{spec}/v1'

    def __exit__(self, *exc):
        self.proc.stop()
