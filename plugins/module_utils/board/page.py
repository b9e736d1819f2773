# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU board as one self-contained HTML page (inline CSS and JavaScript, nothing from a network).

The one page of the board: dralab-board serves it live (its script re-renders
from the server-sent events of `stream`), and the lab_health role writes it as
a static snapshot (the board embedded, the same script, no EventSource). The
script builds every element with textContent, never HTML from the board: claim
and pod names are the seats' words.

The board holds times, not ages: the script writes every age against its clock
(the snapshot's: its time), a sentence's too (words() is the same in Python).

render(board, stream=None) returns the page.
"""

from __future__ import annotations

import html
import json

from ansible_collections.dralab.workshop.plugins.module_utils.values import format_age, parse_time

SCRIPT_ID = 'dralab-board'

CSS = r"""
:root { color-scheme: dark; --bg:#111418; --panel:#1b2027; --text:#e8ecf1; --dim:#9aa5b1; --free:#1f6f43;
  --allocated:#a86b00; --in_use:#b3261e; --tainted:#5b4b8a; --line:#2c333d; }
* { box-sizing: border-box; }
body { margin:0; font:15px/1.35 system-ui, sans-serif; background:var(--bg); color:var(--text); }
header { display:flex; flex-wrap:wrap; gap:.5em 1.5em; align-items:baseline; padding:.6em 1em;
  background:var(--panel); border-bottom:1px solid var(--line); }
header h1 { font-size:1.3em; margin:0; }
.dim { color:var(--dim); }
.counts span { margin-right:1em; white-space:nowrap; }
.dot { display:inline-block; width:.8em; height:.8em; border-radius:.2em; margin-right:.3em; vertical-align:-.05em; }
main { padding:.5em 1em 2em; }
section { margin:1em 0; }
h2 { font-size:1.05em; margin:.2em 0 .5em; }
.node h2 .dim { font-weight:normal; }
.tiles { display:grid; grid-template-columns:repeat(auto-fill, minmax(10.5em, 1fr)); gap:.5em; }
.tile { border-radius:.4em; padding:.45em .6em; min-height:5.2em; border:1px solid rgba(255,255,255,.08); }
.tile .device { font-weight:600; font-size:1.1em; }
.tile .seat { font-size:1.25em; font-weight:700; }
.tile .line { font-size:.85em; overflow-wrap:anywhere; }
.tile .line .figure { white-space:nowrap; }
.free { background:var(--free); } .allocated { background:var(--allocated); }
.in_use { background:var(--in_use); } .tainted { background:var(--tainted); }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:.25em .6em; border-bottom:1px solid var(--line); vertical-align:top; }
th { color:var(--dim); font-weight:600; }
.error { color:#ff8a80; } .warning { color:#ffd180; }
.problems li { margin:.3em 0; }
.evidence { font-size:.85em; } .verdict.never_fits, .verdict.claim_missing, .verdict.pod_unschedulable { color:#ff8a80; }
#status.live { color:#69f0ae; } #status.down { color:#ff8a80; }
.cols { display:grid; grid-template-columns:repeat(auto-fit, minmax(28em, 1fr)); gap:0 2em; }
"""

# The script: render(board) from the embedded board, then from every `model` event of the stream.
SCRIPT = r"""
(function () {
  'use strict';
  var config = JSON.parse(document.getElementById('dralab-board-config').textContent);
  var board = JSON.parse(document.getElementById('dralab-board').textContent);
  var skew = config.stream ? Date.now() - Date.parse(board.generated) : 0;
  var STATE = {free: 'free', allocated: 'allocated', in_use: 'in use', tainted: 'tainted'};

  function now() { return config.stream ? Date.now() - skew : Date.parse(board.generated); }
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  // exact: the words of values.format_age (the ages in sentences), else days alone past two days (tiles).
  function duration(seconds, exact) {
    if (seconds === null || isNaN(seconds)) { return '-'; }
    seconds = Math.max(0, Math.floor(seconds));
    if (seconds < 120) { return seconds + 's'; }
    var minutes = Math.floor(seconds / 60);
    if (minutes < 60) { return minutes + 'm'; }
    var hours = Math.floor(minutes / 60);
    if (hours < 48) { return hours + 'h' + (minutes % 60 ? (minutes % 60) + 'm' : ''); }
    var days = Math.floor(hours / 24);
    return days + 'd' + (exact && days < 7 && hours % 24 ? (hours % 24) + 'h' : '');
  }
  function age(stamp) { return stamp ? duration((now() - Date.parse(stamp)) / 1000) : '-'; }
  // A sentence of the board: its text parts, and for each {since: time} the age it names now (words() in Python).
  function words(parts) {
    return parts.map(function (part) {
      return typeof part === 'string' ? part : duration((now() - Date.parse(part.since)) / 1000, true);
    }).join('');
  }
  function left(stamp) {
    if (!stamp) { return '-'; }
    var seconds = (Date.parse(stamp) - now()) / 1000;
    return seconds <= 0 ? 'expired' : duration(seconds);
  }
  function who(seat, namespace) { return seat || namespace || '-'; }
  function cell(row, text, cls) { row.appendChild(el('td', cls, text)); }
  function table(headers) {
    var t = el('table'), head = el('tr');
    headers.forEach(function (h) { head.appendChild(el('th', null, h)); });
    t.appendChild(head);
    return t;
  }

  function tile(device) {
    var box = el('div', 'tile ' + device.state);
    box.setAttribute('data-device', device.device);
    box.setAttribute('data-node', device.node);
    box.setAttribute('data-state', device.state);
    box.setAttribute('data-seat', device.holders.map(function (h) { return h.seat || ''; }).join(' '));
    box.appendChild(el('div', 'device', device.device + (device.memory ? ' · ' + device.memory : '')));
    if (!device.holders.length) { box.appendChild(el('div', 'line', STATE[device.state])); }
    device.holders.forEach(function (h) {
      box.appendChild(el('div', 'seat', who(h.seat, h.namespace)));
      box.appendChild(el('div', 'line', h.claim + ' · ' + (h.in_use ? 'in use' : 'allocated')));
      box.appendChild(el('div', 'line', 'age ' + age(h.since) + ' · lease ' + left(h.lease_until)));
    });
    // A capacity line wraps between its two figures, never inside one (nor is it cut: no line is).
    device.capacity.forEach(function (c) {
      var line = el('div', 'line');
      line.appendChild(el('span', 'figure', c.name + ' ' + c.used + ' used,'));
      line.appendChild(document.createTextNode(' '));
      line.appendChild(el('span', 'figure', c.free + ' free of ' + c.total));
      box.appendChild(line);
    });
    if (device.taints.length) { box.appendChild(el('div', 'line', 'taint ' + device.taints.join(', '))); }
    return box;
  }

  function render() {
    var s = board.summary;
    document.title = board.title + ' GPU board';
    document.getElementById('title').textContent = board.title + ' · GPU board';
    document.getElementById('view').textContent = board.view === 'public' ? 'projector view' : 'instructor view';
    var counts = document.getElementById('counts');
    counts.textContent = '';
    [['free', s.devices_free], ['in_use', s.devices_in_use], ['allocated', s.devices_allocated],
     ['tainted', s.devices_tainted]].forEach(function (pair) {
      var item = el('span'); item.appendChild(el('span', 'dot ' + pair[0]));
      item.appendChild(document.createTextNode(pair[1] + ' ' + STATE[pair[0]]));
      counts.appendChild(item);
    });
    counts.appendChild(el('span', null, s.devices + ' GPUs · ' + s.pending + ' pending · ' + (s.waiting || 0) +
                          ' in line · ' + s.seats_holding +
                          '/' + s.seats + ' seats hold one · ' + s.errors + ' error(s), ' + s.warnings + ' warning(s)'));
    document.getElementById('generated').textContent = (config.stream ? 'updated ' : 'snapshot of ') + board.generated;

    var nodes = document.getElementById('nodes');
    nodes.textContent = '';
    board.nodes.forEach(function (node) {
      var part = el('section', 'node'), title = el('h2', null, node.name + ' ');
      title.appendChild(el('span', 'dim', node.published + '/' + node.expected + ' devices' +
                           (node.ready === false ? ' · NotReady' : node.ready === null ? ' · no such node' : '')));
      part.appendChild(title);
      var grid = el('div', 'tiles');
      node.devices.forEach(function (device) { grid.appendChild(tile(device)); });
      part.appendChild(grid);
      nodes.appendChild(part);
    });

    var pending = document.getElementById('pending');
    pending.textContent = '';
    if (!board.pending.length) { pending.appendChild(el('p', 'dim', 'No claim waits.')); } else {
      var tp = table(['seat', 'claim', 'waiting', 'why']);
      board.pending.forEach(function (p) {
        var row = el('tr'); row.setAttribute('data-claim', p.namespace + '/' + p.claim);
        cell(row, who(p.seat, p.namespace)); cell(row, p.claim); cell(row, age(p.since));
        var why = el('td');
        if (p.headline) { why.appendChild(el('strong', 'verdict ' + p.verdict, p.headline + ': ')); }
        why.appendChild(el('span', null, words(p.sentence)));
        if (p.scheduler_said) { why.appendChild(el('div', 'dim evidence', 'scheduler said: ' + p.scheduler_said)); }
        row.appendChild(why);
        tp.appendChild(row);
      });
      pending.appendChild(tp);
    }

    var line = document.getElementById('line');
    line.textContent = '';
    var queue = board.line || [];
    if (!queue.length) { line.appendChild(el('p', 'dim', 'Nobody waits in line.')); } else {
      var named = board.view !== 'public';
      var tl = table(['class', 'place'].concat(named ? ['seat'] : []).concat(['waiting', 'expected']));
      queue.forEach(function (q) {
        var row = el('tr'); row.setAttribute('data-line', q.device_class + '/' + q.position);
        cell(row, q.device_class);
        cell(row, q.position === 0 ? 'next: a GPU is free' : q.position === null ? 'at its quota' : '#' + q.position);
        if (named) { cell(row, who(q.seat, q.namespace)); }
        cell(row, age(q.since));
        var until = q.estimate ? left(q.estimate) : null;
        cell(row, until ? (until === 'expired' ? 'any moment' : 'in ' + until) +
                          (named && q.estimate_seat ? ' (' + q.estimate_seat + '\'s lease)' : '') : '-');
        tl.appendChild(row);
      });
      line.appendChild(tl);
    }

    var problems = document.getElementById('problems');
    problems.textContent = '';
    if (!board.problems.length) { problems.appendChild(el('p', 'dim', 'No problem.')); } else {
      var list = el('ul', 'problems');
      board.problems.forEach(function (p) {
        var item = el('li'); item.appendChild(el('strong', p.severity, p.severity.toUpperCase() + ' '));
        item.appendChild(el('span', null, p.object + ': ' + words(p.reason)));
        if (p.scheduler_said) { item.appendChild(el('div', 'dim evidence', 'scheduler said: ' + p.scheduler_said)); }
        list.appendChild(item);
      });
      problems.appendChild(list);
    }

    var seats = document.getElementById('seats');
    seats.textContent = '';
    var instructor = board.view !== 'public';
    var ts = table(instructor ? ['seat', 'person', 'holds', 'pending', 'last activity'] :
                                ['seat', 'holds', 'pending', 'last activity']);
    board.seats.forEach(function (seat) {
      var row = el('tr'); row.setAttribute('data-seat', seat.seat);
      cell(row, seat.seat);
      if (instructor) { cell(row, seat.person || ''); }
      cell(row, seat.devices.length ? seat.devices.join(', ') : '-'); cell(row, seat.pending || '-');
      cell(row, seat.last_activity ? age(seat.last_activity) + ' ago' : '-');
      ts.appendChild(row);
    });
    seats.appendChild(ts);
  }

  render();
  if (config.stream) {
    var status = document.getElementById('status');
    var source = new EventSource(config.stream + window.location.search);
    source.addEventListener('model', function (event) {
      board = JSON.parse(event.data);
      skew = Date.now() - Date.parse(board.generated);
      status.textContent = 'live'; status.className = 'live';
      render();
    });
    source.onerror = function () { status.textContent = 'reconnecting'; status.className = 'down'; };
    window.setInterval(render, 5000);
  }
}());
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="referrer" content="no-referrer">
<title>{title} GPU board</title>
<style>{css}</style>
</head>
<body>
<header>
<h1 id="title">{title} &middot; GPU board</h1>
<span id="view" class="dim"></span>
<span id="counts" class="counts"></span>
<span id="generated" class="dim"></span>
<span id="status" class="dim">{status}</span>
</header>
<main>
<div id="nodes"></div>
<div class="cols">
<section><h2>Waiting claims</h2><div id="pending"></div></section>
<section><h2>Problems</h2><div id="problems"></div></section>
</div>
<section><h2>GPU waitlist</h2><div id="line"></div></section>
<section><h2>Seats</h2><div id="seats"></div></section>
</main>
<script id="dralab-board-config" type="application/json">{config}</script>
<script id="{script_id}" type="application/json">{board}</script>
<script>{script}</script>
<noscript><p>The board needs JavaScript to draw; the data is in the page source (script {script_id}).</p></noscript>
</body>
</html>
"""


def script_json(value):
    """JSON that is safe inside a <script> element (no </script>, no <!--, no HTML entity)."""
    text = json.dumps(value, sort_keys=True, separators=(',', ':'))
    return text.replace('<', '\\u003c').replace('>', '\\u003e').replace('&', '\\u0026')


def render(board, stream=None):
    """The page of a board; with stream (a URL relative to the page), live from its server-sent events."""
    connect = " connect-src 'self';" if stream else ''
    csp = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline';%s img-src data:; "
           "base-uri 'none'; form-action 'none'" % connect)
    return PAGE.format(csp=csp, title=html.escape(str(board.get('title') or 'DRA lab')), css=CSS,
                       status='connecting' if stream else 'snapshot', script_id=SCRIPT_ID,
                       config=script_json({'stream': stream or ''}), board=script_json(board), script=SCRIPT)


def words(sentence, now):
    """The text of a board's sentence (its parts: strings, and {'since': time} for an age) at now, as the page's
    script writes it: each age in values.format_age's words."""
    moment = parse_time(now)
    return ''.join(part if isinstance(part, str) else format_age((moment - parse_time(part['since'])).total_seconds())
                   for part in sentence)
