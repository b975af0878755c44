"""The exporter behind --web.config.file (exporter-toolkit format), tried with
a real TLS client: a client certificate signed by the configured CA and a
bcrypt hash made by Apache's htpasswd. Without the certificate the TLS
handshake fails; with it, a wrong password is 401 and the right one 200 on
/metrics, /config and /api/v1/probes; POST /-/reload needs the password too."""
import base64
import os
import shutil
import ssl
import subprocess
import unittest
import urllib.error
import urllib.request

from harness import BIN as LSE_BIN, Exporter, TempDir, free_port, make_pki, render_config

USER, PASSWORD = 'prometheus', 'correct horse battery'


def bcrypt_hash(password):
    htpasswd = shutil.which('htpasswd')
    if not htpasswd:
        raise unittest.SkipTest('htpasswd (apache2-utils) missing: scripts/setup.sh installs it')
    out = subprocess.run([htpasswd, '-nbBC', '10', USER, password], check=True,
                         capture_output=True, text=True).stdout.strip()
    return out.split(':', 1)[1]


def write_web_config(tmp, pki):
    path = os.path.join(tmp, 'web.yml')
    with open(path, 'w') as f:
        f.write(f'''tls_server_config:
  cert_file: {pki['server_cert']}
  key_file: {pki['server_key']}
  client_ca_file: {pki['ca']}
  client_auth_type: RequireAndVerifyClientCert
  min_version: TLS12
basic_auth_users:
  {USER}: '{bcrypt_hash(PASSWORD)}'
''')
    return path


def tls_context(pki, with_client_cert):
    ctx = ssl.create_default_context(cafile=pki['ca'])
    if with_client_cert:
        ctx.load_cert_chain(pki['client_cert'], pki['client_key'])
    return ctx


def request(url, ctx, password=None, method='GET'):
    headers = {}
    if password is not None:
        token = base64.b64encode(f'{USER}:{password}'.encode()).decode()
        headers['Authorization'] = f'Basic {token}'
    req = urllib.request.Request(url, headers=headers, method=method,
                                 data=b'' if method == 'POST' else None)
    try:
        with urllib.request.urlopen(req, timeout=5, context=ctx) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


class WebConfig(unittest.TestCase):
    def test_client_certificate_and_basic_auth(self):
        with TempDir() as tmp:
            pki = make_pki(tmp)
            web = write_web_config(tmp, pki)
            cfg = render_config([{'name': 'quiet', 'url': 'http://127.0.0.1:9/v1',
                                  'extra': ['interval: 1h']}])
            with Exporter(tmp, cfg, args=['--web.config.file', web]) as ex:
                base = f'https://localhost:{ex.port}'
                good = tls_context(pki, with_client_cert=True)

                # No client certificate: the handshake (or, with TLS 1.3, the
                # first read after it) fails; nothing is served.
                with self.assertRaises((ssl.SSLError, ConnectionError, urllib.error.URLError)):
                    request(base + '/metrics', tls_context(pki, with_client_cert=False), PASSWORD)

                for path in ('/metrics', '/config', '/api/v1/probes', '/-/healthy'):
                    status, headers, _ = request(base + path, good)
                    self.assertEqual(status, 401, path)
                    self.assertIn('Basic', headers.get('WWW-Authenticate', ''), path)
                    self.assertEqual(request(base + path, good, 'wrong password')[0], 401, path)

                status, _, body = request(base + '/metrics', good, PASSWORD)
                self.assertEqual(status, 200)
                self.assertIn('llm_stream_exporter_build_info', body)
                self.assertEqual(request(base + '/config', good, PASSWORD)[0], 200)
                self.assertEqual(request(base + '/api/v1/probes', good, PASSWORD)[0], 200)
                self.assertEqual(request(base + '/-/reload', good, 'wrong', 'POST')[0], 401)
                self.assertEqual(request(base + '/-/reload', good, PASSWORD, 'POST')[0], 200)

                # Plain HTTP on the TLS port is not served.
                with self.assertRaises((urllib.error.URLError, ConnectionError, OSError)):
                    urllib.request.urlopen(f'http://127.0.0.1:{ex.port}/metrics', timeout=5).read()


class DryRun(unittest.TestCase):
    """`serve --dry-run` checks what a pod's args would run and serves nothing."""

    def run_exporter(self, *args):
        p = subprocess.run([LSE_BIN, *args], capture_output=True, text=True, timeout=20)
        return p.returncode, p.stdout, p.stderr

    def test_checks_flags_config_and_web_config_without_listening(self):
        with TempDir() as tmp:
            pki = make_pki(tmp)
            web = write_web_config(tmp, pki)
            cfg_path = os.path.join(tmp, 'c.yaml')
            with open(cfg_path, 'w') as f:
                f.write(render_config([{'name': 'a', 'url': 'http://127.0.0.1:9/v1',
                                        'extra': ['auth: {bearer_token_env: LSE_DRY_RUN_UNSET_KEY}']}]))
            port = free_port()
            listen = f'127.0.0.1:{port}'
            rc, out, err = self.run_exporter('serve', '--config.file', cfg_path, '--web.listen-address',
                                             listen, '--web.config.file', web,
                                             '--web.external-url=https://llm.example/probe/',
                                             '--web.enable-lifecycle', '--dry-run')
            self.assertEqual(rc, 0, err)
            lines = out.splitlines()
            self.assertRegex(lines[0], r': ok \(1 target, \d+ prompts?, [\d,]+ series at start, at most [\d,]+\)$')
            self.assertEqual(lines[1], f'dry run: would listen on {listen} (TLS from TLS12, client_auth_type '
                             'RequireAndVerifyClientCert, basic auth (1 user)); metrics at '
                             '/probe/metrics; POST /probe/-/reload enabled')
            # Nothing listened: the port is still free to bind.
            import socket
            with socket.socket() as s:
                s.bind(('127.0.0.1', port))

            # The log flags are accepted after the subcommand too (manifests write them there).
            rc, _, err = self.run_exporter('serve', '--config.file', cfg_path, '--log.level=debug',
                                           '--log.format=json', '--dry-run')
            self.assertEqual(rc, 0, err)
            rc, _, err = self.run_exporter('serve', '--config.file', cfg_path, '--log.level=loud', '--dry-run')
            self.assertEqual(rc, 2)
            self.assertIn('loud', err)

            # Each part that would make the pod exit 2 is exit 2 here, with the reason.
            bad_flag = self.run_exporter('--config.file', cfg_path, '--web.max-requests=40', '--dry-run')
            self.assertEqual(bad_flag[0], 2)
            self.assertIn('--web.max-requests=40', bad_flag[2])
            bad_listen = self.run_exporter('--config.file', cfg_path, '--web.listen-address=h:1:2', '--dry-run')
            self.assertEqual(bad_listen[0], 2)
            self.assertIn("--web.listen-address 'h:1:2'", bad_listen[2])
            missing_key = os.path.join(tmp, 'web-missing-key.yml')
            with open(missing_key, 'w') as f:
                f.write(f"tls_server_config: {{cert_file: {pki['server_cert']}, key_file: {tmp}/nope.key}}\n")
            bad_web = self.run_exporter('--config.file', cfg_path, '--web.config.file', missing_key, '--dry-run')
            self.assertEqual(bad_web[0], 2)
            self.assertIn('nope.key', bad_web[2])
            with open(cfg_path, 'a') as f:
                f.write('unknown_key: 1\n')
            bad_cfg = self.run_exporter('--config.file', cfg_path, '--dry-run')
            self.assertEqual(bad_cfg[0], 2)
            self.assertRegex(bad_cfg[2], r'c\.yaml:\d+:1: .*unknown_key')


if __name__ == '__main__':
    unittest.main()
