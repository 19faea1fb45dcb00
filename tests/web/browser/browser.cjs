/* The web leaderboard in a real browser: Debian's Chromium, headless,
 * driven by playwright-core, against the whole platform that
 * tests/web/test_browser.c started (gateway, ranker, CPU worker, Redis,
 * dev broker).
 *
 * Environment: KB_API (http://127.0.0.1:PORT), KB_CLI_ID (a registered
 * user's), KB_SOURCE_DIR, KB_SHOTS (where screenshots go), KB_CHROMIUM
 * (default /usr/bin/chromium). Prints one line per check and a closing
 * "N passed, N failed" line; exits 0 only when every check passed.
 */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const api = process.env.KB_API;
const cli = process.env.KB_CLI_ID;
const src = process.env.KB_SOURCE_DIR;
const shots = process.env.KB_SHOTS || '.';
const exe = process.env.KB_CHROMIUM || '/usr/bin/chromium';
const okFile = path.join(src, 'problems/vectorsum_cpu/submission_ok.c');
let passed = 0, failed = 0;

function check(name, cond, detail) {
  if (cond) { passed++; console.log('ok   ' + name); }
  else { failed++; console.log('FAIL ' + name + (detail ? ': ' + detail : '')); }
}

async function submitFromNode(mode) {
  const fd = new FormData();
  fd.append('file', new Blob([fs.readFileSync(okFile)]), 'submission_ok.c');
  const r = await fetch(`${api}/submission/vectorsum_cpu/CPU/${mode}`, {
    method: 'POST', body: fd, headers: { 'X-Popcorn-Cli-Id': cli },
  });
  const j = await r.json();
  if (r.status !== 202) throw new Error(`submit: HTTP ${r.status} ${JSON.stringify(j)}`);
  return j.details.id;
}

async function main() {
  fs.mkdirSync(shots, { recursive: true });
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-chromium-'));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: exe,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1200, height: 900 },
  });
  const problems = [];
  ctx.on('page', (p) => watch(p));
  function watch(p) {
    p.on('pageerror', (e) => problems.push('pageerror: ' + e.message));
    p.on('console', (m) => {
      if (m.type() === 'error' || /Content Security Policy/.test(m.text())) problems.push('console: ' + m.text());
    });
  }
  const page = ctx.pages()[0] || await ctx.newPage();
  watch(page);
  page.setDefaultTimeout(30000);
  try {
    /* 1. The index lists the boards. */
    await page.goto(api + '/');
    const boards = await page.$$eval('li.board', (l) => l.map((x) => x.getAttribute('data-lb')));
    check('index lists vectorsum_cpu and matmul_cpu',
      boards.includes('vectorsum_cpu') && boards.includes('matmul_cpu'), JSON.stringify(boards));
    check('index shows open/closed and participants',
      (await page.textContent('li.board[data-lb="vectorsum_cpu"] .meta')).match(/open.*participant/) !== null);
    const csp = (await page.request.get(api + '/')).headers()['content-security-policy'] || '';
    check('pages carry a strict CSP', /script-src 'self'/.test(csp), csp);
    await page.screenshot({ path: path.join(shots, 'index.png'), fullPage: true });

    /* 2. A ranked CPU submission appears on the board page live. */
    await page.goto(api + '/web/lb/vectorsum_cpu');
    await page.waitForSelector('html[data-live="connected"]');
    check('board starts empty', (await page.$$('section[data-gpu="CPU"] tr[data-user]')).length === 0);
    await page.evaluate(() => { window.kbNoReload = 42; });
    const id = await submitFromNode('leaderboard');
    await page.waitForSelector('section[data-gpu="CPU"] tr[data-user]', { timeout: 240000 });
    check('ranked submission ' + id + ' appeared without a reload',
      (await page.evaluate(() => window.kbNoReload)) === 42);
    check('the new row is highlighted', (await page.$$('tr.fresh')).length >= 1);
    const score = await page.textContent('section[data-gpu="CPU"] tr[data-user] td[data-seconds]');
    check('score shows a unit', /\d (s|ms|µs|ns)$/.test(score.trim()), score);

    /* 3. The plot renders. */
    const plot = await page.$('section[data-gpu="CPU"] figure.plot svg');
    check('plot is an SVG', plot !== null);
    const d = plot ? await plot.$eval('path.record', (p) => p.getAttribute('d')) : '';
    check('plot draws the record', /^M[\d.]+ [\d.]+/.test(d || ''), d);
    const box = plot ? await plot.boundingBox() : null;
    check('plot has a size', box && box.width > 300 && box.height > 100, JSON.stringify(box));
    check('plot is labelled', plot && (await plot.getAttribute('aria-labelledby')) !== null);
    await page.screenshot({ path: path.join(shots, 'leaderboard.png'), fullPage: true });

    /* 4. Signing in shows the user's own submissions and reports. */
    await page.goto(api + '/web/me');
    await page.fill('#signin-form input[name="cli_id"]', cli);
    await page.click('#signin-form button[type="submit"]');
    await page.waitForSelector('#my-subs tr[data-id="' + id + '"]');
    check('my submissions list the ranked one', true);
    await page.click('#my-subs tr[data-id="' + id + '"] button');
    await page.waitForSelector('#report pre.report');
    const report = await page.textContent('#report pre.report');
    check('a report is shown', report.length > 50, report.slice(0, 80));
    await page.screenshot({ path: path.join(shots, 'me.png'), fullPage: true });

    /* 5. A signed-in submission from the page shows its progress. */
    await page.goto(api + '/web/lb/vectorsum_cpu');
    await page.waitForSelector('#submit-form');
    await page.selectOption('#submit-form select[name="mode"]', 'test');
    await page.setInputFiles('#submit-form input[type="file"]', okFile);
    await page.click('#submit-form button[type="submit"]');
    await page.waitForSelector('ol.progress li');
    await page.waitForSelector('#verdict', { timeout: 180000 });
    const stages = await page.$$eval('ol.progress li', (l) => l.map((x) => x.getAttribute('data-stage')));
    const verdict = await page.textContent('#verdict');
    check('progress shows the stages', stages.includes('queued') && stages.length >= 2, JSON.stringify(stages));
    check('the verdict is shown', /passed/.test(verdict), verdict);
    await page.screenshot({ path: path.join(shots, 'submit.png'), fullPage: true });

    /* 6. The user page: best entries and history. */
    await page.click('section[data-gpu="CPU"] tr[data-user] td a');
    await page.waitForSelector('h1');
    check('user page lists the best entry',
      (await page.textContent('main')).includes('vectorsum_cpu'));
    check('user page plots the history', (await page.$('figure.plot svg path.record')) !== null);
    await page.screenshot({ path: path.join(shots, 'user.png'), fullPage: true });

    /* 7. On a phone: no sideways scrolling of the page itself. */
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(api + '/web/lb/vectorsum_cpu');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check('board fits a phone screen', overflow <= 1, 'overflow ' + overflow + 'px');
    await page.screenshot({ path: path.join(shots, 'leaderboard-phone.png'), fullPage: true });

    check('no script error or CSP violation', problems.length === 0, problems.join(' | '));
  } catch (e) {
    failed++;
    console.log('FAIL ' + (e && e.stack ? e.stack : e));
    await page.screenshot({ path: path.join(shots, 'failure.png'), fullPage: true }).catch(() => {});
  } finally {
    await ctx.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => { console.log('FAIL ' + e); console.log(`${passed} passed, ${failed + 1} failed`); process.exit(1); });
