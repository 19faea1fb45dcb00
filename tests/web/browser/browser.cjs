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

async function submitFromNode(mode, lb = 'vectorsum_cpu', gpu = 'CPU', name = 'submission_ok.c',
  code = fs.readFileSync(okFile)) {
  const fd = new FormData();
  fd.append('file', new Blob([code]), name);
  const r = await fetch(`${api}/submission/${lb}/${gpu}/${mode}`, {
    method: 'POST', body: fd, headers: { 'X-Popcorn-Cli-Id': cli },
  });
  const j = await r.json();
  if (r.status !== 202) throw new Error(`submit: HTTP ${r.status} ${JSON.stringify(j)}`);
  return j.details.id;
}

/* As an admin: the only way to submit to a board past its deadline. */
async function adminSubmit(lb, gpu, mode) {
  const fd = new FormData();
  fd.append('file', new Blob([fs.readFileSync(okFile)]), 'submission_ok.c');
  const r = await fetch(`${api}/admin/submission/${lb}/${gpu}/${mode}`, {
    method: 'POST', body: fd,
    headers: { 'X-Popcorn-Cli-Id': cli, Authorization: 'Bearer ' + process.env.KB_ADMIN_TOKEN },
  });
  const j = await r.json();
  if (r.status !== 202) throw new Error(`admin submit: HTTP ${r.status} ${JSON.stringify(j)}`);
  return j.details.id;
}

/* Code after the deadline only (issue 35 item 7b): none linked on the
   open board (its code page answers 403); on the past board each entry
   links its code, which opens beside the ranking. */
async function codeLinks(page, openId, pastId) {
  await page.goto(api + '/web/lb/vectorsum_cpu');
  check('an open board links no code', (await page.$$('a.code-link')).length === 0);
  const early = await page.request.get(api + '/web/lb/vectorsum_cpu/code/' + openId);
  check('code before the deadline: 403', early.status() === 403, String(early.status()));
  await page.goto(api + '/web/lb/vectorsum_past');
  await page.waitForSelector('a.code-link', { timeout: 240000 });
  await page.click('a.code-link');
  await page.waitForSelector('#code-view pre.code');
  const code = await page.textContent('#code-view pre.code');
  check('past the deadline: the code opens beside the ranking', code.includes('custom_kernel'),
    code.slice(0, 120));
  await page.screenshot({ path: path.join(shots, 'code-viewer.png'), fullPage: false });
  await page.keyboard.press('Escape');
  check('the code panel closes with Escape', !(await page.isVisible('#code-view')));
  const href = await page.getAttribute('a.code-link', 'href');
  check('the link names the ranked submission', href === '/web/lb/vectorsum_past/code/' + pastId, href);
  const r = await page.request.get(api + href);
  check('the code page works alone', r.status() === 200 && (await r.text()).includes('custom_kernel'),
    String(r.status()));
}

/* On the board with one ranked user (issue 35 item 7): medals, the
   leader's line above the record, the plot's choices applied without a
   reload, the reference tab and the Markdown description. */
async function boardExtras(page) {
  const cpu = 'section[data-gpu="CPU"]';
  check('rank 1 carries a gold medal in words',
    (await page.textContent(cpu + ' tr[data-user] .medal')).trim() === 'gold');
  const lines = await page.$$eval(cpu + ' figure.plot path.line', (l) => l.map((x) => x.getAttribute('class')));
  check("the leader's line is drawn after (above) the record's",
    lines.length >= 2 && lines[lines.length - 1] === 'line s1' && lines.indexOf('line record') < lines.length - 1,
    JSON.stringify(lines));

  await page.selectOption(cpu + ' form.plot-opts select[name="view"]', 'raw');
  await page.waitForSelector(cpu + ' figure.plot[data-view="raw"]');
  check('every run: dots drawn', (await page.$$(cpu + ' figure.plot circle.dot')).length >= 1);
  await page.selectOption(cpu + ' form.plot-opts select[name="scale"]', 'log');
  await page.waitForSelector(cpu + ' figure.plot[data-scale="log"]');
  const user = await page.getAttribute(cpu + ' tr[data-user]', 'data-user');
  await page.selectOption(cpu + ' form.plot-opts select[name="user"]', user);
  /* "selected" is in the server's markup only: the swap came. */
  await page.waitForSelector(cpu + ' form.plot-opts select[name="user"] option[value="' + user + '"][selected]', { state: 'attached' });
  await page.selectOption(cpu + ' form.plot-opts select[name="range"]', '1d');
  await page.waitForSelector(cpu + ' form.plot-opts select[name="range"] option[value="1d"][selected]', { state: 'attached' });
  check('plot choices applied without a reload', (await page.evaluate(() => window.kbNoReload)) === 42);
  const url = page.url();
  check('the address keeps the choices', /view=raw/.test(url) && /scale=log/.test(url) &&
    /range=1d/.test(url) && url.includes('user=' + encodeURIComponent(user)), url);
  check('one contestant: the legend names the record and one user',
    (await page.$$(cpu + ' ul.legend li')).length === 2);
  await page.screenshot({ path: path.join(shots, 'plot-choices.png'), fullPage: true });
  await page.goto(api + '/web/lb/vectorsum_cpu');

  check('description is Markdown: a code block and a list',
    (await page.$('#problem .desc pre code')) !== null && (await page.$$('#problem .desc li')).length >= 2);
  check('tabs: only the problem shows first', await page.isVisible('#problem') && !(await page.isVisible('#reference')));
  await page.click('nav.tabs a[href="#reference"]');
  const ref = await page.textContent('#reference');
  check('the reference tab shows the task reference', await page.isVisible('#reference') &&
    !(await page.isVisible('#problem')) && /problem\.c/.test(ref) &&
    ref.includes('custom_kernel'), ref.slice(0, 200));
  await page.screenshot({ path: path.join(shots, 'reference.png'), fullPage: true });
}

/* Without JavaScript: the plot's form still works (a GET the server
   draws) and every tab's section shows. */
async function noScript(opts) {
  const browser = await chromium.launch(opts);
  try {
    const c = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1200, height: 900 } });
    const p = await c.newPage();
    p.setDefaultTimeout(30000);
    await p.goto(api + '/web/lb/vectorsum_cpu');
    const cpu = 'section[data-gpu="CPU"]';
    check('no JS: the plot form has an Apply button', await p.isVisible(cpu + ' form.plot-opts button'));
    await p.selectOption(cpu + ' form.plot-opts select[name="view"]', 'raw');
    await Promise.all([p.waitForNavigation(), p.click(cpu + ' form.plot-opts button')]);
    check('no JS: the chosen view is drawn by the server',
      (await p.$(cpu + ' figure.plot[data-view="raw"] circle.dot')) !== null, p.url());
    check('no JS: problem, reference and templates all show', await p.isVisible('#problem') &&
      await p.isVisible('#reference') && await p.isVisible('#templates'));
    await p.screenshot({ path: path.join(shots, 'nojs.png'), fullPage: true });
  } finally {
    await browser.close();
  }
}

/* At 400 px wide the plot's text stays readable (at least 9 px) and
   inside the plot. */
async function narrowPlot(page) {
  await page.setViewportSize({ width: 400, height: 800 });
  await page.goto(api + '/web/lb/vectorsum_cpu');
  const m = await page.$eval('section[data-gpu="CPU"] figure.plot svg', (svg) => {
    const box = svg.getBoundingClientRect();
    const t = Array.from(svg.querySelectorAll('.axis text')).map((x) => x.getBoundingClientRect());
    return { n: t.length, minH: Math.min(...t.map((r) => r.height)),
      out: t.filter((r) => r.left < box.left - 1 || r.right > box.right + 1).length };
  });
  check('plot text readable at 400 px', m.n > 0 && m.minH >= 9, JSON.stringify(m));
  check('plot text inside the plot at 400 px', m.out === 0, JSON.stringify(m));
  await page.screenshot({ path: path.join(shots, 'leaderboard-400.png'), fullPage: true });
  await page.setViewportSize({ width: 1200, height: 900 });
}

async function main() {
  fs.mkdirSync(shots, { recursive: true });
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-chromium-'));
  const browserOpts = {
    executablePath: exe,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  };
  const ctx = await chromium.launchPersistentContext(profile,
    Object.assign({ viewport: { width: 1200, height: 900 } }, browserOpts));
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
    const pastId = await adminSubmit('vectorsum_past', 'CPU', 'leaderboard');

    /* 3. The plot renders. */
    const plot = await page.$('section[data-gpu="CPU"] figure.plot svg');
    check('plot is an SVG', plot !== null);
    const d = plot ? await plot.$eval('path.record', (p) => p.getAttribute('d')) : '';
    check('plot draws the record', /^M[\d.]+ [\d.]+/.test(d || ''), d);
    const box = plot ? await plot.boundingBox() : null;
    check('plot has a size', box && box.width > 300 && box.height > 100, JSON.stringify(box));
    check('plot is labelled', plot && (await plot.getAttribute('aria-labelledby')) !== null);
    await page.screenshot({ path: path.join(shots, 'leaderboard.png'), fullPage: true });
    await boardExtras(page);
    /* The index once a board has a ranked row (docs/web.md's picture). */
    await page.goto(api + '/');
    check('index shows the ranked row',
      (await page.textContent('li.board[data-lb="vectorsum_cpu"]')).includes('1 participant'));
    await page.screenshot({ path: path.join(shots, 'index.png'), fullPage: true });

    /* 4. Signing in shows the user's own submissions and reports; a
       queued one (H100: no worker here) as a readable pending view. */
    const queued = await submitFromNode('leaderboard', 'vectoradd_py', 'H100', 'submission.py',
      '#!POPCORN leaderboard vectoradd_py\ndef custom_kernel(data):\n    return data  # SECRET_CODE_MARK\n');
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
    await page.click('#my-subs tr[data-id="' + queued + '"] button');
    await page.waitForSelector('#report #pending');
    const pending = await page.textContent('#report');
    check('a queued submission shows a pending view', /Waiting in the queue for a H100 worker/.test(pending) &&
      /vectoradd_py/.test(pending), pending.slice(0, 200));
    check('the pending view shows no code and no raw record',
      !/SECRET_CODE_MARK|custom_kernel|[{}]/.test(pending), pending.slice(0, 300));
    await page.screenshot({ path: path.join(shots, 'me-pending.png'), fullPage: true });

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

    await codeLinks(page, id, pastId);

    /* The index: boards with participants first; the notice names the
       gpus without a worker (H100 here), not CPU. */
    await page.goto(api + '/');
    const order = await page.$$eval('li.board', (l) => l.map((x) => x.getAttribute('data-lb')));
    check('index shows the active board with participants first', order[0] === 'vectorsum_cpu',
      JSON.stringify(order));
    const notice = (await page.textContent('#live p.notice').catch(() => '')) || '';
    check('index says which gpus have no worker', /No worker online for .*H100/.test(notice) &&
      !/CPU/.test(notice), notice);
    check('index shows a podium with a medal',
      (await page.$$('li.board[data-lb="vectorsum_cpu"] ol.podium .medal.gold')).length === 1);

    await noScript(browserOpts);
    await narrowPlot(page);

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
