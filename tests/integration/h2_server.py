#!/usr/bin/python3
"""A scripted HTTP/2 server (python3-h2) for the exporter's HTTP/2 tests.

    h2_server.py --port-file F [--host 127.0.0.1] [--log-file L.jsonl]
                 [--tls-cert C --tls-key K]

With --tls-cert/--tls-key it speaks TLS and selects ALPN "h2" (a client that
does not offer h2 is refused by the handshake); without them it speaks h2c
with prior knowledge on plain TCP. It binds a free port, writes it to
--port-file once listening, and serves until SIGTERM.

It answers POST {fault}/s/<spec>/v1/chat/completions with the same OpenAI
chat.completion.chunk SSE stream as tests/upstream/upstream.py (whose spec
language and event builders it imports: ttft, gap, chunks, stall, per_write,
role_first, ...), every write's bytes sent as HTTP/2 DATA frames. {fault} is
empty or /h2/<mode>, where <mode> is one of:

  plain        as without a mode
  split        every write goes out as three DATA frames in three socket
               writes, 2 ms and 1 ms before its scheduled time and at it, cut
               at a third and two thirds of its bytes (so inside an event's
               JSON, and with per_write=N the first frame carries several whole
               events at once)
  rst:N        at the time content chunk N is due, RST_STREAM INTERNAL_ERROR on
               the stream (the connection stays open and usable)
  goaway:N     at the time content chunk N is due, GOAWAY INTERNAL_ERROR whose
               last_stream_id is below the stream, then the connection closes
  window0      the server never opens its flow-control window for this stream
               or the connection (no WINDOW_UPDATE, ever): a request body larger
               than the initial 65,535-byte connection window cannot be sent; no
               answer comes
  tinyframe:B  every write goes out as DATA frames of at most B bytes (1..16384),
               all of them in one socket write (the server announces
               SETTINGS_MAX_FRAME_SIZE 16384, the RFC's minimum)

Content chunk times count from the moment the request's END_STREAM arrived,
as upstream.py counts from the request fully read. A connection serves its
streams one after another (the exporter sends one stream per probe).

--log-file gets one JSON line per stream when it ends: connection number, the
stream's index on its connection (1 = the first), stream id, mode, path, the
request's content-length header (null when absent) and the body bytes
received, the CLOCK_MONOTONIC time the request ended ("t_request") and of
each content chunk's last write ("sends"), and how it ended ("outcome"); the
client's flow control: its SETTINGS_INITIAL_WINDOW_SIZE
("client_stream_window"), its connection window so far (65,535 plus its
WINDOW_UPDATEs on stream 0: "client_connection_window") and the WINDOW_UPDATE
frames it sent on the stream ("window_updates").
"""
import argparse
import json
import os
import select
import signal
import socket
import ssl
import sys
import threading
import time

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'upstream'))
import upstream  # noqa: E402  (spec language and the OpenAI chat events)


class ClientGone(Exception):
    pass


class StreamGone(Exception):
    """The client reset the stream being answered (e.g. its probe timed out)."""


def parse_mode(path):
    """'/h2/rst:5/s/x/v1/chat/completions' -> (('rst', 5), '/s/x/v1/chat/completions')."""
    if not path.startswith('/h2/'):
        return ('plain', None), path
    mode, _, rest = path[len('/h2/'):].partition('/')
    name, _, arg = mode.partition(':')
    if name in ('plain', 'split', 'window0') and not arg:
        return (name, None), '/' + rest
    if name in ('rst', 'goaway') and arg.isdigit():
        return (name, int(arg)), '/' + rest
    if name == 'tinyframe' and arg.isdigit() and 1 <= int(arg) <= 16384:
        return (name, int(arg)), '/' + rest
    raise upstream.SpecError(f'unknown fault mode {mode!r}')


class Stream:
    def __init__(self, sid, index, headers):
        self.sid = sid
        self.index = index
        self.headers = headers
        self.body = bytearray()
        self.ended = False
        self.reset_by_client = None
        self.record = {'stream_index': index, 'stream_id': sid, 'path': headers.get(':path'),
                       'method': headers.get(':method'),
                       'content_length': headers.get('content-length'), 'sends': [],
                       'window_updates': 0}
        try:
            self.mode, self.rest = parse_mode(headers.get(':path', '').split('?', 1)[0])
        except upstream.SpecError as e:
            self.mode, self.rest = ('bad', str(e)), None
        self.record['mode'] = self.mode[0]


class Connection:
    """One client connection, served on its own thread."""

    def __init__(self, server, sock, number):
        self.server = server
        self.sock = sock
        self.number = number
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=False, header_encoding='utf-8'))
        self.streams = {}
        self.ready = []     # streams whose request ended, in order
        self.closed = False
        # The client's flow control as announced: SETTINGS_INITIAL_WINDOW_SIZE and
        # the connection window (65,535 plus its WINDOW_UPDATEs on stream 0).
        self.client_stream_window = 65535
        self.client_connection_window = 65535

    # ---- I/O
    def flush(self):
        data = self.conn.data_to_send()
        if data:
            try:
                self.sock.sendall(data)
            except OSError:
                self.closed = True
                raise ClientGone() from None

    def pump(self, timeout):
        """Waits up to `timeout` s for bytes from the client and handles them."""
        pending = isinstance(self.sock, ssl.SSLSocket) and self.sock.pending()
        if not pending:
            r, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
            if not r:
                return
        try:
            data = self.sock.recv(65536)
        except (OSError, ssl.SSLError):
            data = b''
        if not data:
            self.closed = True
            raise ClientGone()
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.flush()
            self.closed = True
            raise ClientGone() from None
        for ev in events:
            self.on_event(ev)
        self.flush()

    def wait_until(self, deadline):
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self.pump(left)

    def on_event(self, ev):
        if isinstance(ev, h2.events.RequestReceived):
            headers = dict(ev.headers)
            s = Stream(ev.stream_id, len(self.streams) + 1, headers)
            self.streams[ev.stream_id] = s
        elif isinstance(ev, h2.events.DataReceived):
            s = self.streams.get(ev.stream_id)
            if s is not None:
                s.body += ev.data
                if s.mode[0] != 'window0':
                    self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
        elif isinstance(ev, h2.events.StreamEnded):
            s = self.streams.get(ev.stream_id)
            if s is not None:
                s.ended = True
                s.t_request = time.monotonic()
                s.record['t_request'] = s.t_request
                self.ready.append(s)
        elif isinstance(ev, h2.events.StreamReset):
            s = self.streams.get(ev.stream_id)
            if s is not None:
                s.reset_by_client = int(ev.error_code)
                if not s.ended or s.record.get('outcome') is None:
                    self.finish(s, f'reset by client ({int(ev.error_code)})')
        elif isinstance(ev, h2.events.ConnectionTerminated):
            self.closed = True
        elif isinstance(ev, h2.events.RemoteSettingsChanged):
            changed = ev.changed_settings.get(h2.settings.SettingCodes.INITIAL_WINDOW_SIZE)
            if changed is not None:
                self.client_stream_window = changed.new_value
        elif isinstance(ev, h2.events.WindowUpdated):
            if ev.stream_id == 0:
                self.client_connection_window += ev.delta
            elif ev.stream_id in self.streams:
                self.streams[ev.stream_id].record['window_updates'] += 1

    def finish(self, s, outcome):
        if s.record.get('outcome') is None:
            s.record['outcome'] = outcome
            s.record['body_bytes'] = len(s.body)
            s.record['conn'] = self.number
            s.record['client_stream_window'] = self.client_stream_window
            s.record['client_connection_window'] = self.client_connection_window
            self.server.log(s.record)

    # ---- serving
    def run(self):
        try:
            self.conn.initiate_connection()
            self.flush()
            while not self.closed and not self.server.stopping:
                if not self.ready:
                    self.pump(0.2)
                    continue
                try:
                    self.serve(self.ready.pop(0))
                except (StreamGone, h2.exceptions.StreamClosedError):
                    self.flush()
        except ClientGone:
            pass
        finally:
            for s in self.streams.values():
                self.finish(s, 'connection closed')
            try:
                self.sock.close()
            except OSError:
                pass

    def respond_error(self, s, status, body):
        self.conn.send_headers(s.sid, [(':status', str(status)), ('content-type', 'application/json'),
                                       ('content-length', str(len(body)))])
        self.conn.send_data(s.sid, body, end_stream=True)
        self.flush()
        self.finish(s, f'status {status}')

    def serve(self, s):
        if s.reset_by_client is not None:
            return
        if s.mode[0] == 'bad' or s.headers.get(':method') != 'POST':
            return self.respond_error(s, 400 if s.mode[0] == 'bad' else 405,
                                      json.dumps({'error': s.rest or 'POST only'}).encode())
        routed = upstream.route(s.rest)
        if routed is None or routed[0] != 'chat':
            return self.respond_error(s, 404, b'{"error":"only /v1/chat/completions"}')
        try:
            script = upstream.parse_spec(routed[1])
            body = json.loads(bytes(s.body) or b'{}')
        except (upstream.SpecError, ValueError) as e:
            return self.respond_error(s, 400, json.dumps({'error': str(e)}).encode())
        self.stream_answer(s, script, body)

    def stream_answer(self, s, script, body):
        import random
        model = body.get('model') or 'test-model'
        d = upstream.OpenAIChat(None, script, body, 'chat', model,
                                upstream.estimate_prompt_tokens(body, 'chat'))
        offsets = script.content_offsets(random.Random(script.seed))
        t0 = s.t_request
        self.conn.send_headers(s.sid, [(':status', '200'), ('content-type', 'text/event-stream'),
                                       ('cache-control', 'no-cache'), ('server', 'lse-h2-test')])
        self.flush()
        if script.role_first:
            self.write(s, b''.join(d.role_first()), time.monotonic())
        kind, arg = s.mode
        i = 0
        while i < script.chunks:
            last = min(i + script.per_write, script.chunks)
            due = t0 + offsets[last - 1]
            if kind in ('rst', 'goaway') and i <= arg < last:
                return self.cut(s, kind, t0 + offsets[arg])
            self.write(s, b''.join(b''.join(d.content(k)) for k in range(i, last)), due)
            s.record['sends'] += [time.monotonic()] * (last - i)
            i = last
        if kind in ('rst', 'goaway') and arg >= script.chunks:
            return self.cut(s, kind, t0 + script.end_offset(offsets))
        self.write(s, b''.join(d.closing(False)), t0 + script.end_offset(offsets), end=True)
        self.finish(s, 'complete')

    def cut(self, s, kind, due):
        self.wait_until(due)
        if s.reset_by_client is not None:
            raise StreamGone()
        if kind == 'rst':
            self.conn.reset_stream(s.sid, h2.errors.ErrorCodes.INTERNAL_ERROR)
            self.flush()
            self.finish(s, 'rst INTERNAL_ERROR')
            return
        self.conn.close_connection(h2.errors.ErrorCodes.INTERNAL_ERROR, last_stream_id=max(0, s.sid - 2))
        self.flush()
        self.finish(s, 'goaway INTERNAL_ERROR')
        time.sleep(0.05)
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def pieces(self, s, data, due):
        """(time, [frame payloads]) per socket write of one scheduled write."""
        kind, arg = s.mode
        if kind == 'split' and len(data) >= 3:
            a, b = len(data) // 3, 2 * len(data) // 3
            return [(due - 0.002, [data[:a]]), (due - 0.001, [data[a:b]]), (due, [data[b:]])]
        if kind == 'tinyframe':
            return [(due, [data[k:k + arg] for k in range(0, len(data), arg)])]
        return [(due, [data])]

    def write(self, s, data, due, end=False):
        plan = self.pieces(s, data, due)
        for n, (at, frames) in enumerate(plan):
            self.wait_until(at)
            for k, frame in enumerate(frames):
                while s.reset_by_client is None and self.conn.local_flow_control_window(s.sid) < len(frame):
                    self.pump(1.0)  # the client's WINDOW_UPDATE
                if s.reset_by_client is not None:
                    raise StreamGone()
                last = end and n == len(plan) - 1 and k == len(frames) - 1
                self.conn.send_data(s.sid, frame, end_stream=last)
            self.flush()
        if end and not data:
            self.conn.end_stream(s.sid)
            self.flush()


class Server:
    def __init__(self, args):
        self.args = args
        self.stopping = False
        self.lock = threading.Lock()
        self.log_file = open(args.log_file, 'a') if args.log_file else None
        self.ctx = None
        if args.tls_cert:
            self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.ctx.load_cert_chain(args.tls_cert, args.tls_key)
            self.ctx.set_alpn_protocols(['h2'])

    def log(self, record):
        if self.log_file:
            with self.lock:
                self.log_file.write(json.dumps(record) + '\n')
                self.log_file.flush()

    def handle(self, raw, number):
        sock = raw
        try:
            if self.ctx:
                raw.settimeout(10)
                sock = self.ctx.wrap_socket(raw, server_side=True)
                if sock.selected_alpn_protocol() != 'h2':
                    sock.close()
                    return
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except (OSError, ssl.SSLError):
            raw.close()
            return
        Connection(self, sock, number).run()

    def serve(self):
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.args.host, self.args.port))
        listener.listen(64)
        port = listener.getsockname()[1]
        if self.args.port_file:
            tmp = f'{self.args.port_file}.tmp.{os.getpid()}'
            with open(tmp, 'w') as f:
                f.write(f'{port}\n')
            os.replace(tmp, self.args.port_file)
        number = 0
        while not self.stopping:
            r, _, _ = select.select([listener], [], [], 0.2)
            if not r:
                continue
            raw, _ = listener.accept()
            number += 1
            threading.Thread(target=self.handle, args=(raw, number), daemon=True).start()
        listener.close()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--host', default='127.0.0.1')
    p.add_argument('--port', type=int, default=0)
    p.add_argument('--port-file')
    p.add_argument('--log-file')
    p.add_argument('--tls-cert')
    p.add_argument('--tls-key')
    args = p.parse_args(argv)
    upstream.enter_realtime()
    server = Server(args)

    def stop(*_):
        server.stopping = True
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve()
    return 0


if __name__ == '__main__':
    sys.exit(main())
