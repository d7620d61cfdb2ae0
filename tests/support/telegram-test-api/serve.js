// telegram-test-api on 127.0.0.1:<port>, for the Telegram channel's tests
// (tests/support/telegram_emulator.py starts it: `node serve.js <port>`).
//
// One change to the emulator: its getUpdates forgets an update as soon as it has
// returned it, while Telegram keeps every update until a later getUpdates confirms it
// with `offset`. So that a bot killed with a poll's answer in flight meets the real
// API's behaviour, getUpdates here returns every update at or above `offset` and
// forgets only those below it. It still answers at once (no long polling), as the
// emulator does. GET /beamclaw/polls lists when each getUpdates arrived (ms) and
// who sent it (its User-Agent: a node of a cluster names itself there).
'use strict';

const TelegramServer = require('telegram-test-api');
const { routes } = require('telegram-test-api/lib/routes/index');
const original = require('telegram-test-api/lib/routes/bot/getUpdates').getUpdates;
const { handle } = require('telegram-test-api/lib/routes/bot/utils');

const polls = [];

function getUpdates(app, server) {
  handle(app, '/bot:token/getUpdates', (req, res) => {
    const token = req.params.token;
    const offset = Number((req.body && req.body.offset) || (req.query && req.query.offset) || 0);
    polls.push({ at: Date.now(), by: req.get('user-agent') || '' });
    server.storage.userMessages = server.storage.userMessages.filter(
      (update) => update.botToken !== token || update.updateId >= offset,
    );
    const result = server.storage.userMessages
      .filter((update) => update.botToken === token)
      .map((update) => TelegramServer.formatUpdate(update));
    res.sendResult({ ok: true, result });
  });
}

function pollLog(app) {
  app.get('/beamclaw/polls', (_req, res) => res.json({ ok: true, result: polls }));
}

const index = routes.indexOf(original);
if (index < 0) throw new Error('telegram-test-api: getUpdates route not found (a new version?)');
routes[index] = getUpdates;
routes.unshift(pollLog);

const port = Number(process.argv[2]);
const server = new TelegramServer({ port, host: '127.0.0.1', storeTimeout: 3600 });
server.start().then(() => {
  process.stdout.write(`listening ${server.config.apiURL}\n`);
});
process.on('SIGTERM', () => server.stop().then(() => process.exit(0)));
