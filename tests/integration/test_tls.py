"""TLS: verification succeeds with the test CA; a wrong CA or a wrong host
name fails with reason `tls`; a client certificate is presented when set."""
import unittest

from harness import Exporter, TempDir, Upstream, render_config


class Tls(unittest.TestCase):
    def test_verification(self):
        with TempDir() as tmp, Upstream(tmp, tls=True) as up:
            pki = up.pki
            spec = 'ttft=40,gap=10,chunks=10'
            targets = [
                {'name': 'good', 'url': up.url(spec), 'extra': [f'tls: {{ca_file: "{pki["ca"]}"}}']},
                {'name': 'good-localhost', 'url': up.url(spec).replace('127.0.0.1', 'localhost'),
                 'extra': [f'tls: {{ca_file: "{pki["ca"]}"}}']},
                {'name': 'wrong-ca', 'url': up.url(spec), 'extra': [f'tls: {{ca_file: "{pki["other_ca"]}"}}']},
                {'name': 'wrong-name', 'url': up.url(spec),
                 'extra': [f'tls: {{ca_file: "{pki["ca"]}", server_name: "not-the-server.example"}}']},
                {'name': 'skip-verify', 'url': up.url(spec), 'extra': ['tls: {insecure_skip_verify: true}']},
                {'name': 'client-cert', 'url': up.url(spec),
                 'extra': [f'tls: {{ca_file: "{pki["ca"]}", cert_file: "{pki["client_cert"]}", '
                           f'key_file: "{pki["client_key"]}"}}']},
            ]
            with Exporter(tmp, render_config(targets)) as ex:
                for t in targets:
                    ex.wait_probes(t['name'], 1, timeout=15)
                for name in ('good', 'good-localhost', 'skip-verify', 'client-cert'):
                    self.assertEqual(ex.value('llm_stream_probes_total', target=name, result='success'), 1, name)
                    row = ex.rows(name)[0]
                    self.assertEqual(row['chunks'], 10)
                    self.assertIn('tls', row['phases_ms'])
                for name in ('wrong-ca', 'wrong-name'):
                    self.assertEqual(ex.value('llm_stream_probe_failures_total', target=name, reason='tls'), 1, name)
                    self.assertEqual(ex.rows(name)[0]['reason'], 'tls')


if __name__ == '__main__':
    unittest.main()
