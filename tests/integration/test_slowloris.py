"""Slowloris (issue 13): half-open connections from the scraper's own address
must not keep /metrics and /-/healthy from answering, and must not leave the
exporter holding more file descriptors or memory once they are gone.

The attack keeps OPEN_AT_ONCE connections to the exporter from 127.0.0.1;
each sends a request line, then one header line every TRICKLE_SECONDS and
never finishes its headers, and is reopened as soon as the exporter closes
it, so the attack opens at least MIN_CONNECTIONS connections in all. A
scraper on the same address asks for /metrics and /-/healthy once a second
meanwhile. The exporter runs with the default `web:` limits: what makes
the scrapes survive is the header deadline and, at the per-address cap,
the eviction of the oldest connection that has not completed a request
(with accepts paced while evicting, so the scraper's request is there by
the time its connection is accepted).
"""
import os
import selectors
import socket
import threading
import time
import unittest

from harness import Exporter, TempDir, Upstream, http_get, render_config, wait_for

ATTACK_SECONDS = 60
WARMUP_SECONDS = 10
OPEN_AT_ONCE = 200
MIN_CONNECTIONS = 1000
TRICKLE_SECONDS = 3
SCRAPE_TIMEOUT = 5
# The default web.max_connections: the exporter never holds more sockets.
MAX_CONNECTIONS = 64
FD_SLACK = 8
RSS_GROWTH_LIMIT = 4 << 20


def fd_count(pid):
    return len(os.listdir(f'/proc/{pid}/fd'))


def rss_bytes(pid):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) * 1024
    raise AssertionError('no VmRSS')


class Attack(threading.Thread):
    """OPEN_AT_ONCE half-open connections, each reopened when closed."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.stop = threading.Event()
        self.opened = 0
        self.closed_by_server = 0
        self.connect_failures = 0
        self.sel = selectors.DefaultSelector()
        self.socks = {}  # socket -> time of its next header line

    def open_one(self):
        s = socket.socket()
        s.settimeout(1)
        try:
            s.connect(('127.0.0.1', self.port))
            s.setblocking(False)
            s.send(b'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n')
        except OSError:
            self.connect_failures += 1
            s.close()
            time.sleep(0.01)
            return
        self.opened += 1
        self.socks[s] = time.monotonic() + TRICKLE_SECONDS
        self.sel.register(s, selectors.EVENT_READ)

    def drop(self, s):
        self.sel.unregister(s)
        del self.socks[s]
        s.close()

    def run(self):
        try:
            while not self.stop.is_set():
                while len(self.socks) < OPEN_AT_ONCE and not self.stop.is_set():
                    self.open_one()
                for key, _ in self.sel.select(timeout=0.2):
                    s = key.fileobj
                    try:
                        data = s.recv(4096)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b''
                    if not data:  # the exporter closed it
                        self.closed_by_server += 1
                        self.drop(s)
                now = time.monotonic()
                for s, due in list(self.socks.items()):
                    if due > now:
                        continue
                    try:
                        s.send(b'X-Slow: 1\r\n')
                        self.socks[s] = now + TRICKLE_SECONDS
                    except BlockingIOError:
                        pass
                    except OSError:
                        self.closed_by_server += 1
                        self.drop(s)
        finally:
            for s in list(self.socks):
                self.drop(s)
            self.sel.close()


class Slowloris(unittest.TestCase):
    def test_scrapes_answer_while_half_open_connections_churn(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            target = {'name': 'alpha', 'url': up.url('ttft=20,gap=5,chunks=5')}
            with Exporter(tmp, render_config([target])) as ex:
                pid = ex.proc.p.pid
                self.assertEqual(http_get(ex.base + '/-/healthy')[0], 200)
                fds_before = fd_count(pid)

                attack = Attack(ex.port)
                attack.start()
                results, fds_seen = [], []
                rss_after_warmup = None
                t0 = time.monotonic()
                try:
                    while time.monotonic() - t0 < ATTACK_SECONDS:
                        tick = time.monotonic()
                        for path in ('/metrics', '/-/healthy'):
                            asked = time.monotonic()
                            status, body = http_get(ex.base + path, timeout=SCRAPE_TIMEOUT)
                            results.append((round(tick - t0, 1), path, status,
                                            body[:80] if status != 200 else '',
                                            time.monotonic() - asked))
                        fds_seen.append(fd_count(pid))
                        if rss_after_warmup is None and tick - t0 >= WARMUP_SECONDS:
                            rss_after_warmup = rss_bytes(pid)
                        time.sleep(max(0.0, 1 - (time.monotonic() - tick)))
                finally:
                    attack.stop.set()
                    attack.join(30)
                self.assertFalse(attack.is_alive(), 'the attack did not stop')

                failed = [r for r in results if r[2] != 200]
                share = 1 - len(failed) / len(results)
                print(f'\nslowloris: {len(results) - len(failed)}/{len(results)} scrapes '
                      f'answered 200 ({share:.1%}); attack opened {attack.opened} connections, '
                      f'{attack.closed_by_server} closed by the exporter, '
                      f'{attack.connect_failures} connects failed; fds before {fds_before}, '
                      f'max during {max(fds_seen)}; slowest scrape '
                      f'{max(r[4] for r in results):.2f}s')
                self.assertGreaterEqual(attack.opened, MIN_CONNECTIONS)
                self.assertGreaterEqual(len(results), 2 * (ATTACK_SECONDS - 5))
                self.assertGreaterEqual(share, 0.99, f'failed scrapes: {failed[:10]}')

                # Bounded while it lasted, and back where it started after.
                self.assertLessEqual(max(fds_seen), fds_before + MAX_CONNECTIONS + FD_SLACK)
                wait_for(lambda: fd_count(pid) <= fds_before + 2, 15,
                         what='the exporter to close the attack\'s connections')
                self.assertEqual(http_get(ex.base + '/-/healthy')[0], 200)
                rss_end = rss_bytes(pid)
                print(f'slowloris: rss after warm-up {rss_after_warmup >> 10} KiB, '
                      f'at the end {rss_end >> 10} KiB')
                self.assertLess(rss_end - rss_after_warmup, RSS_GROWTH_LIMIT)


if __name__ == '__main__':
    unittest.main()
