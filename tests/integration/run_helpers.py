"""Helpers for the experiment-CLI tests (`run`, `compare`, the HTML report).

Builds on harness.py (which these tests import but do not change): runs the
exporter binary as a one-shot command, reads rows files, and provides a
HoldingFront, an HTTP front that holds every Nth request before passing it to
the upstream (a shared gateway where identical requests sometimes wait behind
other tenants' work: the "shared capacity" shape).
"""
import asyncio
import json
import os
import signal
import subprocess
import threading

from harness import BIN, PROMPTS, realtime_best_effort, render_config, wait_for  # noqa: F401  (re-exported)


def realtime():
    """preexec_fn: SCHED_FIFO for the measuring process, best effort (see harness)."""
    realtime_best_effort()


def run_cli(args, env=None, timeout=240, cwd=None, rt=False):
    """Runs `llm_stream_exporter ARGS...`, returns CompletedProcess (text)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([BIN] + list(args), env=full_env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=realtime if rt else None)


def start_cli(args, env=None, cwd=None):
    """Starts the exporter in its own session; returns the Popen (text pipes)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.Popen([BIN] + list(args), env=full_env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def prompt_files(tmp):
    """Three prompt files (short, medium, long) in tmp, for `run FILES... N`."""
    paths = []
    for name, text in (('short', 'What is the capital of France?'),
                       ('medium', 'Explain how TCP slow start works.'),
                       ('long', 'Write a structured guide to HTTP caching.')):
        path = os.path.join(tmp, f'{name}.txt')
        with open(path, 'w') as f:
            f.write(text + '\n')
        paths.append(path)
    return paths


def read_rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def run_config(tmp, targets, defaults=None, extra='', name='run.yaml'):
    """Writes a harness-style config (interval/jitter are irrelevant to `run`)."""
    path = os.path.join(tmp, name)
    with open(path, 'w') as f:
        f.write(render_config(targets, defaults=defaults, extra=extra))
    return path


def series(summary_json, target, prompt='short'):
    for s in summary_json['series']:
        if s['target'] == target and s['prompt'] == prompt:
            return s
    raise AssertionError(f'no series {target}/{prompt} in {[x["target"] for x in summary_json["series"]]}')


def held_shapes(series_json):
    return sorted(v['shape'] for v in series_json['diagnosis'] if v['holds'])


def content_sends(upstream_record):
    """Monotonic send times of the content chunks of one upstream log record."""
    sends = upstream_record.get('sends') or []
    return sends[upstream_record.get('reasoning', 0) or 0:]


class HoldingFront:
    """HTTP/1.1 front on a free 127.0.0.1 port: request n (0-based, counted
    over all connections) is held hold_ms before it is forwarded when
    n % every == every - 1; every request goes to the upstream on a fresh
    connection with Connection: close and the answer is piped back as it
    arrives (the client sees Connection: close and reconnects)."""

    def __init__(self, upstream_port, every, hold_ms):
        self.upstream_port = upstream_port
        self.every = every
        self.hold = hold_ms / 1000.0
        self.count = 0
        self.held = []

    def __enter__(self):
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        async def start():
            self.server = await asyncio.start_server(self._handle, '127.0.0.1', 0)
            self.port = self.server.sockets[0].getsockname()[1]
            ready.set()

        self.thread = threading.Thread(target=lambda: (self.loop.run_until_complete(start()),
                                                       self.loop.run_forever()), daemon=True)
        self.thread.start()
        if not ready.wait(10):
            raise AssertionError('holding front did not start')
        self.base = f'http://127.0.0.1:{self.port}'
        return self

    def url(self, spec):
        return f'{self.base}/s/{spec}/v1'

    async def _handle(self, reader, writer):
        try:
            while True:
                try:
                    head = await reader.readuntil(b'\r\n\r\n')
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode('latin-1').split('\r\n')
                length = 0
                kept = [lines[0]]
                for line in lines[1:]:
                    if not line:
                        continue
                    name = line.split(':', 1)[0].strip().lower()
                    if name == 'content-length':
                        length = int(line.split(':', 1)[1])
                    if name in ('connection', 'keep-alive'):
                        continue
                    kept.append(line)
                kept.append('Connection: close')
                body = await reader.readexactly(length) if length else b''
                n = self.count
                self.count += 1
                if n % self.every == self.every - 1:
                    self.held.append(n)
                    await asyncio.sleep(self.hold)
                up_r, up_w = await asyncio.open_connection('127.0.0.1', self.upstream_port)
                up_w.write(('\r\n'.join(kept) + '\r\n\r\n').encode('latin-1') + body)
                await up_w.drain()
                while True:
                    data = await up_r.read(65536)
                    if not data:
                        break
                    writer.write(data)
                    await writer.drain()
                up_w.close()
                return  # the answer carried Connection: close
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    def __exit__(self, *exc):
        def stop():
            self.server.close()
            self.loop.stop()
        self.loop.call_soon_threadsafe(stop)
        self.thread.join(5)


def interrupt(proc, sig=signal.SIGINT):
    os.killpg(proc.pid, sig)
