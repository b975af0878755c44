"""The soak benchmark's 3-minute version (tests/bench/soak.py --check): `serve`
against a fault mix (healthy, stalls, 500, 429 + Retry-After, FIN and reset
mid-stream, hangs, no answer, SSE errors, bad JSON, a gzip bomb) with a scrape
every second and a reload every 10 s alternating valid and invalid configs.
After a minute of warm-up: RSS growth < 3 MiB over the last two minutes,
non-socket fds and threads exactly as at the reference, sockets bounded, every
scrape answered, every reload answered as it should be. The 30-minute run and
its figures are in tests/bench/PERFORMANCE.md."""
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


class Soak(unittest.TestCase):
    def test_three_minutes_of_faults_stay_flat(self):
        p = subprocess.run([sys.executable, os.path.join(HERE, '..', 'bench', 'soak.py'), '--minutes', '3',
                            '--every', '20', '--warmup', '60', '--check', '--max-growth-mib', '3'],
                           capture_output=True, text=True, timeout=400)
        sys.stderr.write(p.stdout[-5000:] + p.stderr[-3000:])
        self.assertEqual(p.returncode, 0, p.stdout[-2000:])
        self.assertIn('soak: RSS', p.stdout)


if __name__ == '__main__':
    unittest.main()
