/* KernelBot web pages: live updates, sign-in, submissions. No framework,
 * no build step, no third-party code. The pages work without it (they
 * are server-rendered); this adds:
 *   - live: an EventSource on /web/events; on a "board" or "workers" event
 *     (or when the page's generation is behind), the live part (#live) is
 *     fetched again and swapped in, new rows highlighted;
 *   - sign-in: the CLI id the API uses, kept in localStorage on this
 *     device only, sent as X-Popcorn-Cli-Id to the same API the CLI calls;
 *   - a submit form on board pages, with live progress read from the
 *     streaming endpoint POST /{lb}/{gpu}/{mode};
 *   - /web/me: the signed-in user's submissions and their reports (a
 *     queued one as a readable pending view);
 *   - the plot's choices applied at once, without a reload;
 *   - after a board's deadline, its entries' code in a side panel;
 *   - the board's problem / reference / templates sections as tabs.
 */
'use strict';
(function () {
  var KEY = 'kb_cli_id';
  document.documentElement.classList.add('js');

  function $(sel, root) { return (root || document).querySelector(sel); }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function cliId() { try { return localStorage.getItem(KEY) || ''; } catch (e) { return ''; } }
  function setCliId(v) {
    try { if (v) localStorage.setItem(KEY, v); else localStorage.removeItem(KEY); } catch (e) { /* private mode */ }
  }
  function api(path, opts) {
    opts = opts || {};
    opts.headers = opts.headers || {};
    opts.headers['X-Popcorn-Cli-Id'] = cliId();
    return fetch(path, opts);
  }
  function score(s) {
    if (!(s > 0)) return '–';
    var u = [[1, 's'], [1e-3, 'ms'], [1e-6, 'µs'], [1e-9, 'ns']], i = 0;
    while (i < 3 && s < u[i][0]) i++;
    var x = s / u[i][0];
    return x.toFixed(x >= 100 ? 1 : x >= 10 ? 2 : 3) + ' ' + u[i][1];
  }

  /* ---- live updates ---- */
  function rowKey(tr) {
    var sec = tr.closest('section');
    return (sec ? sec.getAttribute('data-gpu') : '') + '|' + tr.getAttribute('data-user');
  }
  function rowVal(tr) {
    var td = tr.querySelector('td[data-seconds]');
    return td ? td.getAttribute('data-seconds') : '';
  }
  /* The live part again, from the page's own address (its query holds
     the plot's choices), swapped in; rows that changed are highlighted.
     One fetch at a time; a request during one runs after it. */
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.pathname + location.search, { cache: 'no-store' }).then(function (r) { return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, 'text/html');
        var fresh = doc.getElementById('live'), cur = $('#live');
        if (!fresh || !cur) return;
        var seen = {}, focus = focused(cur);
        cur.querySelectorAll('tr[data-user]').forEach(function (tr) { seen[rowKey(tr)] = rowVal(tr); });
        cur.replaceWith(fresh);
        fresh.querySelectorAll('tr[data-user]').forEach(function (tr) {
          if (seen[rowKey(tr)] !== rowVal(tr)) tr.classList.add('fresh');
        });
        if (focus) { var f = fresh.querySelector(focus); if (f) f.focus(); }
        document.dispatchEvent(new CustomEvent('kb:live', { detail: { gen: fresh.getAttribute('data-gen') } }));
      })
      .catch(function () { /* the next event retries */ })
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  /* A selector for the focused control of the live part, so that it
     keeps the focus across a swap (keyboard users change the plot). */
  function focused(root) {
    var a = document.activeElement;
    if (!a || !root.contains(a) || !a.name) return null;
    var sec = a.closest('section[id]');
    return sec ? '#' + sec.id + ' [name="' + a.name + '"]' : null;
  }
  function startLive() {
    var live = $('#live');
    if (!live || !window.EventSource) return;
    var feed = live.getAttribute('data-feed');
    var url = '/web/events' + (feed ? '?lb=' + encodeURIComponent(feed) : '');
    var es = new EventSource(url);
    es.addEventListener('hello', function (ev) {
      var d = JSON.parse(ev.data), cur = $('#live');
      if (cur && String(d.gen) !== cur.getAttribute('data-gen')) refresh();
      document.documentElement.setAttribute('data-live', 'connected');
    });
    es.addEventListener('board', function () { refresh(); });
    /* A gpu gained its first worker or lost its last (or their count
       moved): the pages say so. */
    es.addEventListener('workers', function () { refresh(); });
  }

  /* ---- the plot's choices ---- */
  /* The form works without this (a GET the server draws); here a change
     applies at once: the address takes the choices (so a reload or a
     live update keeps them) and the live part is fetched again. */
  function plotChoices() {
    document.addEventListener('change', function (ev) {
      var f = ev.target.closest && ev.target.closest('form.plot-opts');
      if (!f) return;
      var q = new URLSearchParams(new FormData(f)).toString();
      var sec = f.closest('section[id]');
      history.replaceState(null, '', f.getAttribute('action') + '?' + q + (sec ? '#' + sec.id : ''));
      refresh();
    });
  }

  /* ---- the code viewer ---- */
  /* After a board's deadline its ranking links each entry's code page;
     here the page opens in a panel beside the ranking instead (the link
     still opens it as a page with a modifier key, or without this). */
  function codeViewer() {
    var last = null;
    function close() {
      var aside = $('#code-view');
      if (aside) aside.hidden = true;
      if (last) last.focus();
    }
    document.addEventListener('keydown', function (ev) { if (ev.key === 'Escape') close(); });
    document.addEventListener('click', function (ev) {
      var a = ev.target.closest && ev.target.closest('a.code-link');
      if (!a || ev.button !== 0 || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.altKey) return;
      ev.preventDefault();
      last = a;
      var aside = $('#code-view');
      if (!aside) {
        aside = el('aside', { id: 'code-view', 'aria-label': 'Submission code', tabindex: '-1' });
        document.body.appendChild(aside);
      }
      aside.hidden = false;
      aside.textContent = 'Loading…';
      fetch(a.href).then(function (r) { return r.text(); }).then(function (html) {
        var doc = new DOMParser().parseFromString(html, 'text/html');
        aside.textContent = '';
        var b = el('button', { type: 'button', class: 'quiet', id: 'code-close' }, 'Close');
        b.addEventListener('click', close);
        aside.appendChild(b);
        /* The page's own heading, line and code (or its error), as the
           server escaped them. */
        doc.querySelectorAll('main > h1, main > p.meta, main > h2, main > pre.code, main > p')
          .forEach(function (n) { aside.appendChild(document.importNode(n, true)); });
        aside.appendChild(el('a', { href: a.href }, 'Open as a page'));
        aside.focus();
      }).catch(function (e) { aside.textContent = e.message; });
    });
  }

  /* ---- tabs: problem, reference, templates ---- */
  /* Without this they are sections one below the other, each a link
     away; with it, one shows at a time. */
  function tabs(box) {
    var links = box.querySelectorAll('nav.tabs a'), panels = box.querySelectorAll('section.tab');
    function show(id) {
      panels.forEach(function (p) { p.hidden = p.id !== id; });
      links.forEach(function (a) {
        a.setAttribute('aria-selected', a.getAttribute('href') === '#' + id ? 'true' : 'false');
      });
    }
    box.querySelector('nav.tabs').setAttribute('role', 'tablist');
    panels.forEach(function (p) { p.setAttribute('role', 'tabpanel'); });
    links.forEach(function (a) {
      a.setAttribute('role', 'tab');
      a.addEventListener('click', function (ev) {
        ev.preventDefault();
        show(a.getAttribute('href').slice(1));
        history.replaceState(null, '', a.getAttribute('href'));
      });
    });
    var want = location.hash.slice(1);
    show(box.querySelector('section.tab[id="' + want + '"]') ? want : panels[0].id);
  }

  /* ---- the streaming submission: POST /{lb}/{gpu}/{mode} ---- */
  function readEvents(resp, onEvent) {
    var reader = resp.body.getReader(), dec = new TextDecoder(), buf = '';
    function pump() {
      return reader.read().then(function (r) {
        if (r.done) return;
        buf += dec.decode(r.value, { stream: true }).replace(/\r\n/g, '\n');
        var i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          var block = buf.slice(0, i), name = 'message', data = [];
          buf = buf.slice(i + 2);
          block.split('\n').forEach(function (line) {
            if (line.indexOf('event:') === 0) name = line.slice(6).trim();
            else if (line.indexOf('data:') === 0) data.push(line.slice(5).replace(/^ /, ''));
          });
          if (data.length) onEvent(name, JSON.parse(data.join('\n')));
        }
        return pump();
      });
    }
    return pump();
  }

  function submitForm(sec) {
    var lb = sec.getAttribute('data-lb'), gpus = sec.getAttribute('data-gpus').split(',');
    sec.textContent = '';
    sec.appendChild(el('h2', {}, 'Submit'));
    if (!cliId()) {
      var p = el('p');
      p.appendChild(document.createTextNode('To submit from this page, '));
      p.appendChild(el('a', { href: '/web/me' }, 'sign in with your CLI id'));
      p.appendChild(document.createTextNode(', or use the kb / popcorn-cli client.'));
      sec.appendChild(p);
      return;
    }
    var f = el('form', { class: 'stack', id: 'submit-form' });
    var lg = el('label', {}, 'GPU'), sg = el('select', { name: 'gpu' });
    gpus.forEach(function (g) { sg.appendChild(el('option', { value: g }, g)); });
    lg.appendChild(sg);
    var lm = el('label', {}, 'Mode'), sm = el('select', { name: 'mode' });
    ['test', 'benchmark', 'leaderboard', 'profile'].forEach(function (m) { sm.appendChild(el('option', { value: m }, m)); });
    sm.value = 'leaderboard';
    lm.appendChild(sm);
    var lf = el('label', {}, 'File'), fi = el('input', { type: 'file', name: 'file', required: '' });
    lf.appendChild(fi);
    var btn = el('button', { type: 'submit' }, 'Submit');
    [lg, lm, lf, btn].forEach(function (x) { f.appendChild(x); });
    var out = el('div', { id: 'progress', 'aria-live': 'polite' });
    sec.appendChild(f);
    sec.appendChild(out);
    f.addEventListener('submit', function (ev) {
      ev.preventDefault();
      if (!fi.files.length) return;
      btn.disabled = true;
      out.textContent = '';
      var list = el('ol', { class: 'progress' });
      out.appendChild(list);
      var fd = new FormData();
      fd.append('file', fi.files[0], fi.files[0].name);
      var path = '/' + encodeURIComponent(lb) + '/' + encodeURIComponent(sg.value) + '/' + encodeURIComponent(sm.value);
      api(path, { method: 'POST', body: fd }).then(function (resp) {
        if (!resp.ok) {
          return resp.json().then(function (j) { throw new Error(j.detail || ('HTTP ' + resp.status)); });
        }
        return readEvents(resp, function (name, d) {
          if (name === 'status') {
            var last = list.lastElementChild;
            if (last) last.classList.add('done');
            list.appendChild(el('li', { 'data-stage': d.stage }, d.message));
          } else if (name === 'result') {
            var v = d.verdict || 'unknown';
            var p = el('p', { class: 'verdict-' + (v === 'passed' ? 'passed' : 'failed'), id: 'verdict' },
              'Submission ' + d.submission_id + ': ' + v + (d.score ? ' — score ' + score(d.score) : ''));
            out.appendChild(p);
            if (d.reports && d.reports[0]) out.appendChild(el('pre', { class: 'report' }, d.reports[0]));
          } else if (name === 'error') {
            out.appendChild(el('p', { class: 'error', id: 'verdict' }, d.detail));
          }
        });
      }).catch(function (e) {
        out.appendChild(el('p', { class: 'error', id: 'verdict' }, e.message));
      }).then(function () { btn.disabled = false; });
    });
  }

  /* ---- /web/me ---- */
  function signin(sec, mine) {
    sec.textContent = '';
    if (cliId()) {
      var p = el('p', {}, 'Signed in on this device. ');
      var out = el('button', { type: 'button', class: 'quiet', id: 'signout' }, 'Sign out');
      out.addEventListener('click', function () { setCliId(''); signin(sec, mine); });
      p.appendChild(out);
      sec.appendChild(p);
      listMine(mine);
      return;
    }
    mine.textContent = '';
    var f = el('form', { class: 'stack', id: 'signin-form' });
    f.appendChild(el('p', {}, 'Sign in with the CLI id your kb or popcorn-cli client uses (cli_id in ~/.popcorn.yaml). ' +
      'It stays in this browser (localStorage) and is sent only to this site\'s API.'));
    var l = el('label', {}, 'CLI id'), i = el('input', { name: 'cli_id', autocomplete: 'off', required: '', spellcheck: 'false' });
    l.appendChild(i);
    f.appendChild(l);
    f.appendChild(el('button', { type: 'submit' }, 'Sign in'));
    var msg = el('p', { class: 'error', role: 'alert' });
    f.appendChild(msg);
    f.addEventListener('submit', function (ev) {
      ev.preventDefault();
      var v = i.value.trim();
      fetch('/user/submissions?limit=1', { headers: { 'X-Popcorn-Cli-Id': v } }).then(function (r) {
        if (r.status === 200) { setCliId(v); signin(sec, mine); }
        else return r.json().then(function (j) { msg.textContent = j.detail || ('HTTP ' + r.status); });
      }).catch(function (e) { msg.textContent = e.message; });
    });
    sec.appendChild(f);
  }

  /* A submission without a report yet (queued or running) or without
     one at all (refused, given up): what it is waiting for, in words.
     Never the raw record: it holds the code. */
  function noReport(j) {
    var box = el('div', { class: 'pending', id: 'pending' });
    var waiting = j.status === 'queued' || j.status === 'running';
    var said = j.status === 'queued' ? 'Waiting in the queue for a ' + (j.gpu || '') + ' worker.'
      : j.status === 'running' ? 'Running on a ' + (j.gpu || '') + ' worker' + (j.stage ? ' (' + j.stage + ').' : '.')
        : (j.job && j.job.error) || j.error || j.detail || 'No report for this submission.';
    box.appendChild(el('p', { class: waiting ? '' : 'error' }, said));
    var dl = el('dl', { class: 'pending' });
    [['status', j.job ? j.job.status : j.status], ['leaderboard', j.leaderboard_name], ['GPU', j.gpu],
      ['mode', j.mode], ['file', j.file_name],
      ['submitted', (j.submission_time || '').replace('T', ' ').replace(/\.\d+Z$/, ' UTC')],
      ['waiting for', waiting && j.elapsed_ms > 0 ? Math.round(j.elapsed_ms / 1000) + ' s' : null]
    ].forEach(function (kv) {
      if (kv[1] === null || kv[1] === undefined || kv[1] === '') return;
      dl.appendChild(el('dt', {}, kv[0]));
      dl.appendChild(el('dd', {}, kv[1]));
    });
    box.appendChild(dl);
    if (waiting) box.appendChild(el('p', {}, 'The report appears here once it has run: press "report" again.'));
    return box;
  }

  function listMine(mine) {
    mine.textContent = 'Loading…';
    api('/user/submissions?limit=50').then(function (r) {
      if (r.status === 401) { setCliId(''); location.reload(); return null; }
      return r.json();
    }).then(function (list) {
      if (!list) return;
      mine.textContent = '';
      mine.appendChild(el('h2', {}, 'Your submissions'));
      if (!list.length) { mine.appendChild(el('p', {}, 'None yet: submit from a leaderboard\'s page.')); return; }
      var wrap = el('div', { class: 'scroll' }), t = el('table', { class: 'ranking', id: 'my-subs' });
      var hr = el('tr');
      ['id', 'leaderboard', 'GPU', 'mode', 'status', 'score', 'submitted', ''].forEach(function (h) { hr.appendChild(el('th', { scope: 'col' }, h)); });
      var th = el('thead'); th.appendChild(hr); t.appendChild(th);
      var tb = el('tbody');
      var report = el('div', { id: 'report', 'aria-live': 'polite' });
      list.forEach(function (s) {
        var tr = el('tr', { 'data-id': s.id });
        tr.appendChild(el('td', { class: 'num' }, s.id));
        var tdl = el('td'); tdl.appendChild(el('a', { href: '/web/lb/' + encodeURIComponent(s.leaderboard_name) }, s.leaderboard_name));
        tr.appendChild(tdl);
        tr.appendChild(el('td', {}, s.gpu_type));
        tr.appendChild(el('td', {}, s.mode));
        tr.appendChild(el('td', {}, s.verdict || s.stage || s.status));
        tr.appendChild(el('td', { class: 'num' }, s.score ? score(s.score) : '–'));
        tr.appendChild(el('td', {}, (s.submission_time || '').replace('T', ' ').replace(/\.\d+Z$/, ' UTC')));
        var b = el('button', { type: 'button', class: 'quiet' }, 'report');
        b.addEventListener('click', function () {
          report.textContent = 'Loading…';
          api('/user/submissions/' + s.id).then(function (r) { return r.json(); }).then(function (j) {
            report.textContent = '';
            report.appendChild(el('h3', {}, 'Submission ' + s.id));
            if (j.report) report.appendChild(el('pre', { class: 'report' }, j.report));
            else report.appendChild(noReport(j));
            report.scrollIntoView({ block: 'nearest' });
          });
        });
        var tdb = el('td'); tdb.appendChild(b); tr.appendChild(tdb);
        tb.appendChild(tr);
      });
      t.appendChild(tb);
      wrap.appendChild(t);
      mine.appendChild(wrap);
      mine.appendChild(report);
    }).catch(function (e) { mine.textContent = e.message; });
  }

  document.addEventListener('DOMContentLoaded', function () {
    startLive();
    plotChoices();
    codeViewer();
    document.querySelectorAll('.tabbed').forEach(tabs);
    var sub = $('#submit');
    if (sub) submitForm(sub);
    var si = $('#signin');
    if (si) signin(si, $('#mine'));
    if (cliId()) { var me = $('#me-link'); if (me) me.textContent = 'My submissions (signed in)'; }
  });
})();
