"""Text from an upstream is data, never log syntax or a secret.

A gateway that refuses a key often repeats it: whole in an SSE error event's
message, as a hint ("sk-...CRET", "****CRET"), in a 401 JSON body, in a
response header (Content-Type, shown in the failure detail), or in a field
that is stored as is (finish_reason). Here an upstream echoes the bearer token
it was sent in each of those ways, with a forged log line and an ANSI escape in
the SSE message besides; `serve` and `run` probe it with the token from the
environment. The token and its last 8 characters must appear nowhere: not in
the exporter's log, /metrics, the landing page, /api/v1/probes, the rows file,
nor in what `run` prints, its rows and its HTML report. The forged log line
stays inside one escaped log value.
"""
import http.server
import json
import os
import threading
import unittest

from harness import Exporter, TempDir, http_get, render_config
from run_helpers import read_rows, run_cli

TOKEN = 'sk-test-0123456789abcdefSECRET'
FORGED = 'boom\nts=2024-01-01T00:00:00.000Z level=error msg="FORGED" \x1b[31mred\x1b[0m'
KINDS = ('sse', 'json401', 'header', 'finish')


def chunk(delta, finish=None):
    return {'id': 'c1', 'object': 'chat.completion.chunk', 'model': 'm',
            'choices': [{'index': 0, 'delta': delta, 'finish_reason': finish}]}


class EchoHandler(http.server.BaseHTTPRequestHandler):
    """POST /<kind>/v1/chat/completions: repeats the bearer token back."""
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def send(self, status, content_type, body, headers=None):
        # Close-delimited, as many streaming gateways answer.
        data = body.encode()
        self.send_response(status)
        self.send_header('Content-Type', content_type)
        self.send_header('Connection', 'close')
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def do_POST(self):
        self.rfile.read(int(self.headers.get('Content-Length') or 0))
        auth = self.headers.get('Authorization', '')
        token = auth[len('Bearer '):] if auth.startswith('Bearer ') else auth
        self.server.tokens.append(token)
        kind = self.path.split('/')[1]
        echo = {'X-Echo-Key': token}
        if kind == 'sse':
            message = (f'Incorrect API key provided: {token}. Keys look like sk-...{token[-4:]} '
                       f'or ****{token[-4:]}; {FORGED}')
            event = json.dumps({'error': {'message': message, 'type': 'invalid_request_error'}})
            self.send(200, 'text/event-stream', f'event: error\ndata: {event}\n\n', echo)
        elif kind == 'json401':
            body = json.dumps({'error': {'message': f'Incorrect API key provided: {token}',
                                         'code': 'invalid_api_key'}})
            self.send(401, 'application/json', body,
                      dict(echo, **{'WWW-Authenticate': f'Bearer error="{token}"'}))
        elif kind == 'header':
            self.send(200, f'text/plain; key={token}', 'not a stream', echo)
        else:
            events = [chunk({'role': 'assistant', 'content': 'hi'}),
                      chunk({}, finish=f'stop_{token}')]
            body = ''.join(f'data: {json.dumps(e)}\n\n' for e in events) + 'data: [DONE]\n\n'
            self.send(200, 'text/event-stream', body, echo)


class EchoUpstream:
    def __enter__(self):
        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), EchoHandler)
        self.server.daemon_threads = True
        self.server.tokens = []
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base = f'http://127.0.0.1:{self.server.server_address[1]}'
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def config(upstream, rows_path):
    targets = [{'name': kind, 'url': f'{upstream.base}/{kind}/v1',
                'extra': ['auth: {bearer_token_env: LSE_ECHO_TOKEN}']} for kind in KINDS]
    return render_config(targets, defaults={'interval': '1s'},
                         extra=f'rows: {{path: {json.dumps(rows_path)}}}\n')


def read_text(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        return f.read()


class SecretEcho(unittest.TestCase):
    def assert_no_secret(self, where, text):
        # The whole token, its last 8 characters, and its last 4 after "...".
        for piece in (TOKEN, TOKEN[-8:], f'...{TOKEN[-4:]}', f'****{TOKEN[-4:]}'):
            self.assertNotIn(piece, text, f'{piece!r} leaked into {where}')

    def test_serve_masks_what_the_upstream_echoes(self):
        with TempDir() as tmp, EchoUpstream() as up:
            rows_path = os.path.join(tmp, 'rows.jsonl')
            with Exporter(tmp, config(up, rows_path), env={'LSE_ECHO_TOKEN': TOKEN}) as ex:
                for kind in KINDS:
                    ex.wait_probes(kind, 2, timeout=30)
                self.assertIn(TOKEN, up.server.tokens)  # it was sent, and echoed
                pages = {
                    '/metrics': ex.metrics_text(),
                    '/': http_get(ex.base + '/')[1],
                    '/api/v1/probes': http_get(ex.base + '/api/v1/probes?limit=1000')[1],
                }
                probes = ex.rows()
            log = ex.proc.output()
            rows_text = read_text(rows_path)
            for where, text in dict(pages, log=log, rows=rows_text).items():
                self.assert_no_secret(where, text)

            # The echoes were there and were masked, not lost: the SSE message
            # keeps its words, the header its name, finish_reason its stem.
            by_target = {}
            for p in probes:
                by_target.setdefault(p['target'], []).append(p)
            sse = by_target['sse'][0]
            self.assertFalse(sse['ok'])
            self.assertTrue(sse['error'].startswith('Incorrect API key provided: <redacted>.'),
                            sse['error'])
            self.assertIn('Keys look like <redacted> or <redacted>;', sse['error'])
            self.assertIn('msg="FORGED"', sse['error'])
            self.assertEqual(by_target['json401'][0]['http_status'], 401)
            # The 401's body is kept after the status, the key in it masked.
            self.assertTrue(by_target['json401'][0]['error'].startswith(
                'HTTP 401: {"error": {"message": "Incorrect API key provided: <redacted>"'),
                by_target['json401'][0]['error'])
            self.assertIn('key=<redacted>', by_target['header'][0]['error'])
            self.assertEqual(by_target['finish'][0]['finish_reason'], 'stop_<redacted>')
            self.assertIn('<redacted>', rows_text)

            # The forged line stays one escaped value of the "probe failed" line.
            lines = log.splitlines()
            self.assertFalse([l for l in lines if l.startswith('ts=2024-01-01')], log[-3000:])
            self.assertNotIn('\x1b', log)
            failed = [l for l in lines if 'msg="probe failed"' in l and 'target=sse' in l]
            self.assertGreaterEqual(len(failed), 2, log[-3000:])
            for line in failed:
                # Escaped once where the upstream's text is taken in (one_line:
                # the newline and ESC as visible \n, \x1b), then by logfmt.
                self.assertIn(r'boom\\nts=2024-01-01T00:00:00.000Z level=error msg=\"FORGED\" '
                              r'\\x1b[31mred\\x1b[0m', line)

    def test_run_masks_what_the_upstream_echoes(self):
        with TempDir() as tmp, EchoUpstream() as up:
            cfg = os.path.join(tmp, 'run.yaml')
            with open(cfg, 'w') as f:
                f.write(config(up, os.path.join(tmp, 'unused.jsonl')))
            out, report = os.path.join(tmp, 'rows.jsonl'), os.path.join(tmp, 'report.html')
            p = run_cli(['run', '--config', cfg, '--runs', '2', '--out', out, '--report', report],
                        env={'LSE_ECHO_TOKEN': TOKEN}, timeout=120)
            self.assertIn(TOKEN, up.server.tokens)
            self.assertTrue(os.path.exists(report), p.stderr)
            for where, text in (('stdout', p.stdout), ('stderr', p.stderr),
                                ('rows', read_text(out)), ('report', read_text(report))):
                self.assert_no_secret(where, text)
            rows = read_rows(out)
            self.assertEqual(len(rows), 2 * len(KINDS), p.stderr)
            sse = [r for r in rows if r['target'] == 'sse']
            self.assertTrue(all(r['error'].startswith('Incorrect API key provided: <redacted>.')
                                for r in sse), sse)
            self.assertEqual({r['finish_reason'] for r in rows if r['target'] == 'finish'},
                             {'stop_<redacted>'})
            self.assertIn('<redacted>', p.stderr)  # the progress lines name the failure


if __name__ == '__main__':
    unittest.main()
