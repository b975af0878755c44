"""The exporter's own pages in headless Chromium at 1,280 x 800, against the
real exporter probing the scripted upstream with the demo's targets (short
intervals): the landing page and a probe page have no horizontal overflow
(document.documentElement.scrollWidth <= 1280); the demo's stalling targets
(`stalling-proxy`, `pausing-model`: two stalls in every probe) never read
"ok" and the healthy one does; figures do not wrap; the long endpoint is
shortened with the full one on hover; "probe now" opens the debug timeline
of one probe run then (40 content chunks listed); a target's name opens its last
probe's page, which says the verdict and its evidence on top and draws its
chunks on a time axis. Driven over the DevTools protocol (cdp.py)."""
import os
import re
import unittest

from cdp import CHROMIUM, Chromium
from harness import Exporter, TempDir, Upstream, render_config

# The demo's targets (config/demo.yaml), probed every second.
DEMO = [('healthy', 'ttft=150,gap=25,jitter=5,chunks=40,role_first=1'),
        ('stalling-proxy', 'ttft=180,gap=20,jitter=4,chunks=60,per_write=6,stall=18:450;42:700'),
        ('pausing-model', 'ttft=180,gap=20,jitter=4,chunks=60,stall=15:450;40:700'),
        ('queued', 'ttft=1500,gap=15,jitter=3,chunks=40')]

WIDTH, HEIGHT = 1280, 800

# The verdict, evidence and link of every target row, as the browser lays them out.
ROWS_JS = r'''JSON.stringify(Array.from(document.querySelectorAll('tr[data-target]')).map(function (tr) {
  var link = tr.querySelector('td:nth-child(2) a');
  return {target: tr.getAttribute('data-target'), verdict: tr.getAttribute('data-verdict'),
          shown: tr.querySelector('.verdict').textContent, href: link.getAttribute('href'),
          evidence: tr.querySelector('.evidence').textContent};
}))'''

# Cells of figures that wrapped onto a second line.
WRAPPED_JS = r'''JSON.stringify(Array.from(document.querySelectorAll('td.num, .verdict')).filter(function (el) {
  var r = document.createRange(); r.selectNodeContents(el);
  var lines = new Set(Array.from(r.getClientRects()).map(function (b) { return Math.round(b.top); }));
  return lines.size > 1;
}).map(function (el) { return el.textContent; }))'''


@unittest.skipUnless(os.path.exists(CHROMIUM), f'{CHROMIUM} is not installed (apt-get install chromium)')
class PagesInChromium(unittest.TestCase):
    def test_landing_and_probe_pages_at_1280(self):
        import json
        with TempDir() as tmp, Upstream(tmp) as up:
            targets = [{'name': n, 'url': up.url(spec)} for n, spec in DEMO]
            cfg = render_config(targets, defaults={'interval': '1s'})
            with Exporter(tmp, cfg) as ex, Chromium(WIDTH, HEIGHT) as browser:
                for name, _ in DEMO:
                    ex.wait_probes(name, 2, timeout=40)
                browser.open(ex.base + '/')
                self.assertLessEqual(browser.evaluate('document.documentElement.scrollWidth'), WIDTH)
                self.assertEqual(json.loads(browser.evaluate(WRAPPED_JS)), [])
                rows = {r['target']: r for r in json.loads(browser.evaluate(ROWS_JS))}
                self.assertEqual(sorted(rows), sorted(n for n, _ in DEMO))
                for name in ('stalling-proxy', 'pausing-model'):
                    self.assertNotEqual(rows[name]['shown'], 'ok', rows[name])
                    self.assertIn(rows[name]['verdict'], ('stalling', 'buffered'), rows[name])
                self.assertEqual(rows['stalling-proxy']['verdict'], 'buffered', rows['stalling-proxy'])
                self.assertRegex(rows['stalling-proxy']['evidence'],
                                 r'transport: \d+ of 59 chunks arrived together')
                self.assertEqual(rows['pausing-model']['verdict'], 'stalling', rows['pausing-model'])
                self.assertRegex(rows['pausing-model']['evidence'], r'2 stalls among 59 gaps')
                self.assertEqual(rows['healthy']['shown'], 'ok', rows['healthy'])
                # The long endpoint: shortened on the page, whole on hover.
                endpoint = json.loads(browser.evaluate(
                    'JSON.stringify(Array.from(document.querySelectorAll("code.endpoint"))'
                    '.map(function (c) { return [c.textContent, c.title]; }))'))
                full = up.url(DEMO[1][1])
                self.assertIn([e for e in endpoint if e[1] == full][0][0].count('…'), (1,))

                # "probe now" runs one probe of the target and opens its debug timeline.
                probe_now = json.loads(browser.evaluate(
                    'JSON.stringify(Array.from(document.querySelectorAll('
                    '"tr[data-target=healthy] a.probe-now")).map(function (a) {'
                    ' return a.getAttribute("href"); }))'))
                self.assertEqual(probe_now, ['probe?target=healthy&prompt=short&debug=true'])
                browser.open(ex.base + '/' + probe_now[0])
                timeline = browser.evaluate('document.body.innerText')
                self.assertIn('Events of the stream', timeline)
                self.assertEqual(len(re.findall(r'^\s+\d+\s+\S+\s+\S+\s+\d+\s+content$', timeline,
                                                re.M)), 40, timeline)
                self.assertIn('probe_success 1', timeline)
                browser.open(ex.base + '/')

                # The name opens the last probe's page.
                href = rows['stalling-proxy']['href']
                self.assertRegex(href, r'^probe\?id=[0-9a-f]{16}$')
                browser.open(ex.base + '/' + href)
                self.assertLessEqual(browser.evaluate('document.documentElement.scrollWidth'), WIDTH)
                banner = json.loads(browser.evaluate(
                    'JSON.stringify([document.querySelector(".banner").getAttribute("data-verdict"),'
                    ' document.querySelector(".banner").textContent,'
                    ' document.querySelector(".banner").getBoundingClientRect().top])'))
                self.assertEqual(banner[0], 'buffered')
                self.assertRegex(banner[1], r'transport: \d+ of 59 chunks arrived together')
                self.assertLess(banner[2], HEIGHT / 3)  # on top, seen without scrolling
                counts = json.loads(browser.evaluate(
                    'JSON.stringify({ticks: document.querySelectorAll("svg.arrivals text").length,'
                    ' together: document.querySelectorAll("svg.gaps rect.together").length,'
                    ' stalls: document.querySelectorAll("svg.arrivals rect.band").length,'
                    ' said: document.querySelector("[data-together]").getAttribute("data-together")})'))
                self.assertGreater(counts['ticks'], 3)  # a time axis with labels
                self.assertEqual(counts['stalls'], 2)
                self.assertGreater(counts['together'], 20)  # per_write=6: 5 of every 6 came together
                self.assertEqual(str(counts['together']), counts['said'])
                if os.environ.get('LSE_KEEP_TMP'):
                    browser.screenshot(os.path.join(tmp, 'probe.png'))
                    print('screenshots in', tmp)


if __name__ == '__main__':
    unittest.main()
