// The upstream of ratelimit/gateway's express_test.go: a real Express app,
// routed as Express routes (case-insensitive, a trailing slash allowed,
// :params decoded), that counts what reached each handler and keeps the
// identity headers it was sent, so the test can tell what got through.
//
//   node app.js   → prints "listening <port>" once bound to 127.0.0.1:<free port>
'use strict';
const express = require('express');

const app = express();
// Express's req.ip reads X-Forwarded-For from the loopback proxy in front.
app.set('trust proxy', 'loopback');

const counts = { login: 0, items: 0, other: 0 };
const itemIds = {};
const seen = []; // identity headers and req.ip of every request, in order

app.use((req, res, next) => {
  seen.push({
    path: req.originalUrl,
    ip: req.ip,
    xff: req.get('x-forwarded-for') || '',
    xrealip: req.get('x-real-ip') || '',
    forwarded: req.get('forwarded') || '',
    tenant: req.get('x-tenant-id') || '',
    plan: req.get('x-plan') || '',
  });
  next();
});

app.post('/auth/login', (req, res) => {
  counts.login++;
  res.json({ ok: true });
});

app.get('/api/items/:id', (req, res) => {
  counts.items++;
  itemIds[req.params.id] = (itemIds[req.params.id] || 0) + 1;
  res.json({ id: req.params.id });
});

// The test's own view, not behind the gateway (it asks the app directly).
app.get('/__counts', (req, res) => {
  res.json({ counts, itemIds, seen });
});

app.use((req, res) => {
  counts.other++;
  res.status(404).json({ error: 'not found', path: req.originalUrl });
});

const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write('listening ' + server.address().port + '\n');
});
// The test closes stdin (or dies): the app ends with it.
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
