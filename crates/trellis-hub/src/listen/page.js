// The approvals page: the hub's pending requests, each answered once. Every text on it
// came from an agent and goes in as text, never as markup. The token lives in this
// browser's storage and travels only in the Authorization header.
'use strict';
const KEY = 'trellis-token';
const $ = (s) => document.querySelector(s);
let token = localStorage.getItem(KEY) || '';
let busy = false;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function say(text) { $('#status').textContent = text; }

async function api(method, path, body) {
  const headers = { 'Authorization': 'Bearer ' + token };
  if (body) headers['Content-Type'] = 'application/json';
  const r = await fetch(path, { method, headers, body: body ? JSON.stringify(body) : undefined, cache: 'no-store' });
  let v = {};
  try { v = await r.json(); } catch (e) { v = { message: r.statusText }; }
  return { status: r.status, v };
}

function operationId() {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

function showLogin(why) {
  $('#login').hidden = false;
  $('#forget').hidden = true;
  say(why);
}

// The request whose reason is being written ('session/request'): the list is not redrawn
// under the user's fingers while it is still pending.
let composing = null;

async function answer(li, row, p, o, buttons, reason) {
  buttons.forEach((b) => { b.disabled = true; });
  const said = li.querySelector('.said');
  const body = { session: row.session, request_id: p.request_id, option_id: o[0], operation_id: operationId() };
  if (reason !== undefined) body.reason = reason;
  const { status, v } = await api('POST', '/api/decide', body);
  if (status === 200) {
    said.textContent = 'Answered: ' + o[1] + (reason !== undefined ? ' — your reason goes to the agent when its turn ends' : '');
  } else {
    said.textContent = v.message || ('failed (' + status + ')');
    buttons.forEach((b) => { b.disabled = false; });
  }
  li.dataset.answered = status === 200 ? 'yes' : 'no';
  if (status === 200) composing = null;
  setTimeout(refresh, 800);
}

// "Reject with a reason": a line of text the agent is told as the next message.
const REASON_LIMIT = 2000;
function reasonForm(li, row, p, buttons) {
  const key = row.session + '/' + p.request_id;
  const reject = p.options.find((o) => o[0] === p.reject_once);
  const box = el('div', 'why');
  const open = el('button', 'reason', 'Reject with a reason…');
  open.type = 'button';
  const form = el('form', 'reasonform');
  form.hidden = true;
  const label = el('label', '', 'Why (the agent reads this as your next message)');
  const input = el('input');
  input.type = 'text';
  input.maxLength = REASON_LIMIT;
  input.name = 'reason';
  input.autocomplete = 'off';
  label.append(input);
  const send = el('button', '', 'Reject and send');
  send.type = 'submit';
  const back = el('button', '', 'Back');
  back.type = 'button';
  form.append(label, send, back);
  open.addEventListener('click', () => {
    composing = key;
    form.hidden = false;
    open.hidden = true;
    input.focus();
  });
  back.addEventListener('click', () => {
    composing = null;
    form.hidden = true;
    open.hidden = false;
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text) { input.focus(); return; }
    answer(li, row, p, reject, buttons.concat([open, send, back]), text);
  });
  buttons.push(open);
  box.append(open, form);
  return box;
}

// How long a request has waited, in words.
function waited(s) {
  if (s === undefined || s === null) return '';
  if (s < 60) return 'waiting ' + s + ' s';
  if (s < 3600) return 'waiting ' + Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
  return 'waiting ' + Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
}

// How many of a diff's lines show before "Show all".
const DIFF_LINES = 12;

// What the user opened stays open across refreshes (by session and request).
const expanded = new Set();
const opened = new Set();

// A diff as lines of text, each coloured by what it is; the first few, then all on a tap.
function diffView(text, key) {
  const lines = text.replace(/\n$/, '').split('\n');
  const pre = el('pre', 'diff');
  const fill = (n) => {
    pre.replaceChildren();
    for (const line of lines.slice(0, n)) {
      const cls = line.startsWith('@@') ? 'hunk'
        : (line.startsWith('+') && !line.startsWith('+++')) ? 'add'
        : (line.startsWith('-') && !line.startsWith('---')) ? 'del' : '';
      pre.append(el('span', cls, line + '\n'));
    }
  };
  const all = expanded.has(key);
  fill(all ? lines.length : DIFF_LINES);
  const box = el('div', 'diffbox');
  box.append(pre);
  if (lines.length > DIFF_LINES && !all) {
    const more = el('button', 'more', 'Show all ' + lines.length + ' lines');
    more.type = 'button';
    more.addEventListener('click', () => { expanded.add(key); fill(lines.length); more.remove(); });
    box.append(more);
  }
  return box;
}

function render(data) {
  $('#hub').textContent = data.hub ? 'hub ' + data.hub : '';
  const list = $('#pending');
  list.replaceChildren();
  let n = 0;
  for (const row of data.sessions) {
    for (const p of row.pending) {
      n += 1;
      const li = el('li', 'request');
      li.dataset.request = p.request_id;
      li.append(el('div', 'where', 'session ' + row.session + ' · ' + row.agent + ' · ' + row.title + ' · ' + row.cwd + (row.branch ? ' · ' + row.branch : '')));
      li.append(el('div', 'subject', (p.kind === 'question' ? 'Question: ' : '') + p.subject));
      if (p.waited_s !== undefined) li.append(el('div', 'waited', waited(p.waited_s)));
      const key = row.session + '/' + p.request_id;
      if (p.diff) li.append(diffView(p.diff, key));
      if (p.input) {
        const d = el('details');
        d.open = opened.has(key);
        d.addEventListener('toggle', () => { if (d.open) opened.add(key); else opened.delete(key); });
        d.append(el('summary', '', 'Input'), el('pre', 'input', p.input));
        li.append(d);
      }
      const choices = el('div', 'choices');
      const buttons = [];
      for (const o of p.options) {
        const b = el('button', /allow|accept|yes/i.test(o[0] + ' ' + o[1]) ? 'allow' : '', o[1]);
        b.type = 'button';
        b.dataset.option = o[0];
        b.addEventListener('click', () => answer(li, row, p, o, buttons));
        buttons.push(b);
        choices.append(b);
      }
      if (p.kind === 'question') choices.append(el('span', 'said', 'answer questions in the session (trellis attach)'));
      const why = p.reject_once ? reasonForm(li, row, p, buttons) : null;
      const note = el('div', 'said');
      if (p.claimed_by) {
        // Someone is answering it elsewhere: their claim holds until they answer or it lapses.
        buttons.forEach((b) => { b.disabled = true; });
        note.textContent = p.claimed_by + ' is answering it';
      }
      li.append(choices);
      if (why) li.append(why);
      li.append(note);
      list.append(li);
    }
  }
  say(n === 0 ? 'Nothing waits for you.' : n + (n === 1 ? ' request waits' : ' requests wait') + ' for you.');
}

async function refresh() {
  if (busy || !token) return;
  busy = true;
  try {
    const { status, v } = await api('GET', '/api/pending');
    if (status === 200) {
      $('#login').hidden = true;
      $('#forget').hidden = false;
      // A reason being written stays under the user's fingers while its request waits.
      const waiting = (v.sessions || []).some((row) => row.pending.some((p) => row.session + '/' + p.request_id === composing));
      if (composing && waiting) return;
      composing = null;
      render(v);
    } else if (status === 401 || status === 403) {
      localStorage.removeItem(KEY);
      token = '';
      showLogin(v.message || 'This token is not accepted.');
    } else {
      say(v.message || ('The hub did not answer (' + status + ').'));
    }
  } catch (e) {
    say('The hub cannot be reached.');
  } finally {
    busy = false;
  }
}

async function pairFromFragment() {
  const m = /(?:^|[#&])pair=([A-Za-z0-9_-]+)/.exec(location.hash);
  // The code leaves the address bar (and the history) at once.
  history.replaceState(null, '', location.pathname);
  if (!m) return;
  say('Pairing…');
  const r = await fetch('/api/pair', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ code: m[1] }), cache: 'no-store',
  });
  let v = {};
  try { v = await r.json(); } catch (e) { v = {}; }
  if (r.status === 200 && v.token) {
    token = v.token;
    localStorage.setItem(KEY, token);
  } else {
    showLogin(v.message || 'Pairing failed.');
  }
}

document.addEventListener('DOMContentLoaded', async () => {
  $('#login').addEventListener('submit', (e) => {
    e.preventDefault();
    token = $('#token').value.trim();
    $('#token').value = '';
    if (token) localStorage.setItem(KEY, token);
    refresh();
  });
  $('#forget').addEventListener('click', () => {
    localStorage.removeItem(KEY);
    token = '';
    $('#pending').replaceChildren();
    showLogin('Forgotten. Pair again with trellis pair.');
  });
  await pairFromFragment();
  if (!token) {
    if ($('#login').hidden) showLogin('Pair this device: run trellis pair and open its address.');
    return;
  }
  await refresh();
  setInterval(refresh, 3000);
});
