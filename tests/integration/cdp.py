"""A headless Chromium driven over the DevTools protocol, Python stdlib only:
a minimal WebSocket client (RFC 6455 text frames) and the few CDP calls the
page checks need (navigate, wait for load, evaluate, screenshot). Chromium
is started on a fresh profile with --remote-debugging-port=0 and stopped
(its profile removed) on exit."""
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request

CHROMIUM = '/usr/bin/chromium'
FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         '--hide-scrollbars', '--remote-debugging-address=127.0.0.1', '--remote-debugging-port=0']


class WebSocket:
    def __init__(self, url, timeout=20):
        assert url.startswith('ws://'), url
        hostport, _, path = url[5:].partition('/')
        host, _, port = hostport.rpartition(':')
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f'GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n'
                           f'Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n'
                           'Sec-WebSocket-Version: 13\r\n\r\n').encode())
        head = b''
        while b'\r\n\r\n' not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError('websocket handshake: connection closed')
            head += chunk
        status = head.split(b'\r\n', 1)[0]
        if b' 101 ' not in status:
            raise ConnectionError(f'websocket handshake refused: {status!r}')
        self.buf = head.split(b'\r\n\r\n', 1)[1]

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        header = bytes([0x81])
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack('>H', n)
        else:
            header += bytes([0x80 | 127]) + struct.pack('>Q', n)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError('websocket closed')
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        """One whole message (continuation frames joined); control frames skipped."""
        message = b''
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack('>H', self._read(2))[0]
            elif n == 127:
                n = struct.unpack('>Q', self._read(8))[0]
            payload = self._read(n)
            opcode = b0 & 0x0F
            if opcode >= 8:  # close, ping, pong
                if opcode == 8:
                    raise ConnectionError('websocket closed by peer')
                continue
            message += payload
            if b0 & 0x80:
                return message.decode()

    def close(self):
        self.sock.close()


class Chromium:
    """with Chromium(width, height) as c: c.open(url); c.evaluate('1+1')"""

    def __init__(self, width=1280, height=800):
        self.width, self.height = width, height
        self.next_id = 0

    def __enter__(self):
        self.profile = tempfile.mkdtemp(prefix='lse-chromium-')
        self.proc = subprocess.Popen([CHROMIUM] + FLAGS + [f'--user-data-dir={self.profile}',
                                                           f'--window-size={self.width},{self.height}',
                                                           'about:blank'],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = os.path.join(self.profile, 'DevToolsActivePort')
        deadline = time.monotonic() + 30
        def read_port_file():
            with open(port_file) as f:
                return f.read()
        while not (os.path.exists(port_file) and read_port_file().count('\n') >= 1):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.__exit__(None, None, None)
                raise RuntimeError('chromium did not open its DevTools port')
            time.sleep(0.05)
        port = int(read_port_file().split('\n')[0])
        with urllib.request.urlopen(f'http://127.0.0.1:{port}/json/list', timeout=10) as r:
            pages = [t for t in json.load(r) if t.get('type') == 'page']
        self.ws = WebSocket(pages[0]['webSocketDebuggerUrl'])
        self.call('Page.enable')
        self.call('Emulation.setDeviceMetricsOverride',
                  {'width': self.width, 'height': self.height, 'deviceScaleFactor': 1, 'mobile': False})
        return self

    def call(self, method, params=None, timeout=20):
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({'id': my_id, 'method': method, 'params': params or {}}))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            if msg.get('id') == my_id:
                if 'error' in msg:
                    raise RuntimeError(f'{method}: {msg["error"]}')
                return msg.get('result', {})
            # Anything else is an event (Page.*): not needed here.
        raise TimeoutError(method)

    def open(self, url, timeout=20):
        """Navigates and waits for the load event."""
        self.call('Page.navigate', {'url': url})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.evaluate('document.readyState') == 'complete':
                return
            time.sleep(0.05)
        raise TimeoutError(f'{url} did not load')

    def evaluate(self, expression):
        result = self.call('Runtime.evaluate', {'expression': expression, 'returnByValue': True})
        if 'exceptionDetails' in result:
            raise RuntimeError(f'{expression}: {result["exceptionDetails"]}')
        return result['result'].get('value')

    def screenshot(self, path, full_page=False):
        params = {'format': 'png'}
        if full_page:
            h = self.evaluate('document.documentElement.scrollHeight')
            params['clip'] = {'x': 0, 'y': 0, 'width': self.width, 'height': h, 'scale': 1}
            params['captureBeyondViewport'] = True
        data = self.call('Page.captureScreenshot', params)['data']
        with open(path, 'wb') as f:
            f.write(base64.b64decode(data))

    def __exit__(self, *exc):
        try:
            if getattr(self, 'ws', None):
                self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)
