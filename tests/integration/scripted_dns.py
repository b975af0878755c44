"""A scripted DNS server (Python stdlib) for test_dns.py: UDP and TCP on one
address and port. Each name in the script is answered with an A record after
its delay, or never; AAAA questions for it get an empty answer after the same
delay; any other name is NXDOMAIN. Every question is logged as a JSON line
(name, type, transport, time) to --log-file.

    scripted_dns.py --host 127.0.0.1 --port 53 \
        --answer fast.lse.test=127.0.0.1@0 --answer slow.lse.test=127.0.0.1@3 \
        --never dead.lse.test --log-file dns.jsonl --ready-file dns.ready
"""
import argparse
import json
import socket
import struct
import threading
import time


def parse_question(msg):
    """(id, name, qtype, end of the question section) or None."""
    if len(msg) < 12:
        return None
    i, labels = 12, []
    while i < len(msg) and msg[i] != 0:
        n = msg[i]
        labels.append(msg[i + 1:i + 1 + n].decode('ascii', 'replace'))
        i += 1 + n
    if i + 5 > len(msg):
        return None
    qtype = struct.unpack('!H', msg[i + 1:i + 3])[0]
    return struct.unpack('!H', msg[:2])[0], '.'.join(labels).lower(), qtype, i + 5


def build_answer(msg, end, qtype, address):
    """The response to `msg`: A `address` for qtype 1, no records for
    others; NXDOMAIN when address is None."""
    flags = 0x8180 if address is not None else 0x8183
    answers = b''
    if address is not None and qtype == 1:
        answers = (b'\xc0\x0c' + struct.pack('!HHIH', 1, 1, 30, 4) + socket.inet_aton(address))
    header = msg[:2] + struct.pack('!HHHHH', flags, 1, 1 if answers else 0, 0, 0)
    return header + msg[12:end] + answers


class Server:
    def __init__(self, host, port, answers, never, log_file):
        self.answers, self.never, self.log_file = answers, never, log_file
        self.lock = threading.Lock()
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind((host, port))
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind((host, port))
        self.tcp.listen(16)

    def log(self, name, qtype, transport):
        if not self.log_file:
            return
        with self.lock, open(self.log_file, 'a') as f:
            f.write(json.dumps({'name': name, 'type': qtype, 'transport': transport,
                                'at': time.time()}) + '\n')

    def respond(self, msg, send, transport):
        q = parse_question(msg)
        if q is None:
            return
        _, name, qtype, end = q
        self.log(name, qtype, transport)
        if name in self.never:
            return
        address, delay = self.answers.get(name, (None, 0.0))
        reply = build_answer(msg, end, qtype, address)
        if delay > 0:
            threading.Timer(delay, send, (reply,)).start()
        else:
            send(reply)

    def serve_udp(self):
        while True:
            msg, peer = self.udp.recvfrom(4096)
            self.respond(msg, lambda r, p=peer: self.udp.sendto(r, p), 'udp')

    def serve_tcp_conn(self, conn):
        with conn:
            try:
                while True:
                    head = conn.recv(2)
                    if len(head) < 2:
                        return
                    n = struct.unpack('!H', head)[0]
                    msg = b''
                    while len(msg) < n:
                        part = conn.recv(n - len(msg))
                        if not part:
                            return
                        msg += part
                    self.respond(msg, lambda r: conn.sendall(struct.pack('!H', len(r)) + r),
                                 'tcp')
            except OSError:
                return

    def serve_tcp(self):
        while True:
            conn, _ = self.tcp.accept()
            threading.Thread(target=self.serve_tcp_conn, args=(conn,), daemon=True).start()


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--host', default='127.0.0.1')
    p.add_argument('--port', type=int, default=53)
    p.add_argument('--answer', action='append', default=[], help='NAME=IPV4@SECONDS')
    p.add_argument('--never', action='append', default=[], help='a name never answered')
    p.add_argument('--log-file')
    p.add_argument('--ready-file', help='written once both sockets listen')
    a = p.parse_args()
    answers = {}
    for spec in a.answer:
        name, rest = spec.split('=', 1)
        address, _, delay = rest.partition('@')
        answers[name.lower()] = (address, float(delay or 0))
    server = Server(a.host, a.port, answers, {n.lower() for n in a.never}, a.log_file)
    threading.Thread(target=server.serve_tcp, daemon=True).start()
    if a.ready_file:
        with open(a.ready_file, 'w') as f:
            f.write('ready\n')
    server.serve_udp()


if __name__ == '__main__':
    main()
