// A user's Node.js gateway in front of the upstream: express with the
// `compression` middleware, proxying every request with Node's http client
// and writing each upstream chunk as it comes (what a hand-written SSE relay
// does). Usage: node proxy.js PORT UPSTREAM_BASE [THRESHOLD_BYTES]
// THRESHOLD_BYTES is compression's `threshold` (its default, 1 kB, when absent).
'use strict';
const express = require('express');
const compression = require('compression');
const http = require('http');

const [port, upstream, threshold] = [Number(process.argv[2]), process.argv[3], process.argv[4]];
const app = express();
app.use(threshold === undefined ? compression() : compression({ threshold: Number(threshold) }));
app.all('*', (req, res) => {
  const url = new URL(req.originalUrl, upstream);
  const headers = { ...req.headers, host: url.host, 'accept-encoding': 'identity' };
  const out = http.request(url, { method: req.method, headers }, (up) => {
    res.status(up.statusCode);
    for (const [k, v] of Object.entries(up.headers))
      if (!['content-length', 'connection', 'transfer-encoding', 'keep-alive'].includes(k)) res.setHeader(k, v);
    up.on('data', (d) => res.write(d));
    up.on('end', () => res.end());
  });
  out.on('error', () => res.destroy());
  req.pipe(out);
});
app.listen(port, '127.0.0.1', () => console.log(`listening on ${port}`));
