"""The HTML report's style sheet and script, inlined into every page (``report_html``).

The script opens a cell's detail view (a ``<template>`` per failing cell, cloned into one
``<dialog>``; also from the page's ``#d-<report>-<rule>[-c<case>]`` fragment), moves to a
listed case or divergence, and filters the matrix by outcome, profile and a search for a rule or
a case (the index by case with it). A profile's rows fold under its header; rules no report
has a case of, and the rule statements, are folded until asked for, and on a narrow screen an
expected failure's reason shows its first two lines in the cell (whole in the cell's detail view). It uses
nothing but the DOM, so the page works from ``file://`` and without a network.
"""

CSS = """
:root{--pass:#1b5e20;--pass-bg:#e3f4e4;--fail:#b71c1c;--fail-bg:#fde4e4;--xfail:#7a5a00;--xfail-bg:#fff4cc;
--muted:#666;--line:#d9d9d9;--hl:#ffe08a}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d1d1d;background:#fafafa}
header.page{padding:16px 24px;background:#fff;border-bottom:1px solid var(--line)}
header.page h1{margin:0 0 4px;font-size:22px}
header.page p{margin:2px 0;color:var(--muted)}
main{padding:16px 24px}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.summaries{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(360px,100%),1fr));gap:16px}
.summary{background:#fff;border:1px solid var(--line);border-radius:8px;padding:12px 16px;min-width:0}
.summary h2{margin:0 0 8px;font-size:18px}
.summary .columns{display:flex;flex-wrap:wrap;gap:8px 36px;align-items:flex-start}
.summary dl.facts{margin-top:4px}
.badge{display:inline-block;padding:1px 7px;border-radius:10px;font-size:12px;background:#eee;color:#333;
white-space:nowrap;margin:1px 0}
.badge.pass,.cell.pass{background:var(--pass-bg);color:var(--pass)}
.badge.fail,.badge.error,.badge.timeout,.badge.invalid,.cell.fail,.cell.error,.cell.timeout,.cell.invalid
{background:var(--fail-bg);color:var(--fail)}
.badge.expected-fail,.cell.expected-fail,.badge.expected-error,.cell.expected-error{background:var(--xfail-bg);color:var(--xfail)}
.cell.skip,.cell.not-scored,.cell.no-case,.cell.inconclusive,.cell.not-run{color:var(--muted)}
table.scores{border-collapse:collapse;margin:8px 0}
table.scores th,table.scores td{padding:2px 8px;text-align:left}
td.score{font-variant-numeric:tabular-nums;font-weight:600}
.meter{display:inline-block;width:140px;height:8px;background:var(--fail-bg);border-radius:4px;overflow:hidden;
vertical-align:middle}
.meter span{display:block;height:100%;background:#43a047}
dl.facts{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 12px;margin:8px 0}
dl.facts dt{color:var(--muted)}
dl.facts dd{margin:0;overflow-wrap:break-word;min-width:0;overflow-x:auto}
.filters{margin:8px 0 12px;display:flex;gap:16px;align-items:center;flex-wrap:wrap}
#f-count{color:var(--muted)}
table.matrix{border-collapse:collapse;background:#fff;width:100%}
table.matrix th,table.matrix td{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
table.matrix thead th{position:sticky;top:0;background:#f0f0f0;z-index:1}
tr.profile th{background:#263238;color:#fff;font-size:15px}
tr.profile button.fold{all:unset;cursor:pointer;display:block}
tr.profile button.fold::before{content:"\\25BE  "}
tr.profile button.fold[aria-expanded=false]::before{content:"\\25B8  "}
tr.profile button.fold:focus-visible{outline:2px solid #90caf9}
tbody.folded tr.rule,tbody.folded tr.section{display:none}
tr.section th{background:#eceff1;font-weight:600}
td.title a{color:inherit;text-decoration:none;border-bottom:1px dotted #999}
td.cell button{all:unset;cursor:pointer;font-weight:600;text-decoration:underline}
td.cell button:focus-visible{outline:2px solid #1565c0}
td.cell small{font-weight:400}
.reason{display:block;font-size:12px;color:#5d4a00;max-width:520px}
tr.hidden,tbody.hidden,tr.section.hidden{display:none}
#statements article{background:#fff;border:1px solid var(--line);border-radius:6px;padding:4px 14px;margin:6px 0}
#statements article:target{outline:3px solid var(--hl)}
#statements summary{cursor:pointer}
#statements summary h2,#statements summary h3{display:inline}
#statements details.all>summary{margin:16px 0 8px}
#statements h3{margin:4px 0;font-size:15px}
#statements p.section{margin:0;color:var(--muted)}
#statements table,.statement table{border-collapse:collapse}
#statements td,#statements th,.statement td,.statement th{border:1px solid var(--line);padding:2px 6px}
dialog#detail{width:min(1500px,96vw);height:92vh;max-height:92vh;padding:0;border:1px solid #999;border-radius:8px;
overflow:hidden}
dialog#detail[open]{display:flex;flex-direction:column}
dialog#detail::backdrop{background:rgba(0,0,0,.35)}
dialog .bar{flex:none;display:flex;justify-content:space-between;align-items:center;gap:12px;background:#f0f0f0;
padding:6px 12px;border-bottom:1px solid var(--line);margin:0}
dialog .bar-title{font-weight:600}
dialog .body{flex:1 1 auto;min-height:0;overflow:auto;padding:4px 18px 18px}
dialog h2{margin:8px 0 2px;font-size:19px}
nav.case-list{margin:6px 0;display:flex;flex-wrap:wrap;gap:4px 10px}
details.case{border:1px solid var(--line);border-radius:6px;margin:10px 0;padding:6px 10px;background:#fff}
details.case>summary{cursor:pointer;font-weight:600}
.first-divergence{font-weight:600}
.note{background:#fff4cc;padding:4px 8px;border-radius:4px}
.message{white-space:pre-wrap;background:#f5f5f5;padding:6px}
details.lane{margin:6px 0}
details.lane>summary{cursor:pointer}
details.lane>summary span{color:var(--muted)}
table.sbs{border-collapse:collapse;width:100%;table-layout:fixed;margin:4px 0}
table.sbs th,table.sbs td{border:1px solid var(--line);padding:2px 6px;vertical-align:top;text-align:left}
table.sbs thead th:first-child,table.sbs tbody th{width:3.2em;color:var(--muted);font-weight:400}
table.sbs td{white-space:pre-wrap;word-break:break-word}
table.sbs tr.diff td{background:#fff7f7}
table.sbs tr.first td{background:var(--hl);box-shadow:inset 0 0 0 2px #e0a800}
table.sbs tr:target td{outline:2px solid #1565c0}
.step{font-weight:600}
.none{color:var(--muted);font-style:italic}
table.kv{border-collapse:collapse;font-size:90%}
table.kv th,table.kv td{padding:1px 8px 1px 0;text-align:left;border:0}
th{overflow-wrap:normal;word-break:normal;hyphens:manual}
p.failing-rules button.rule-link{font:inherit;font-size:90%;margin:1px;padding:1px 6px;cursor:pointer}
p.legend{color:var(--muted);font-size:90%;margin:4px 0}
table.case-index button{font:inherit;font-size:90%;margin:1px;padding:1px 6px;cursor:pointer}
pre.cmd{background:#263238;color:#eceff1;padding:6px 10px;border-radius:4px;white-space:pre-wrap}
details.scenario pre{max-height:420px;overflow:auto;background:#f5f5f5;padding:6px}
#f-search{font:inherit}
@media (max-width:640px){
header.page,main{padding-left:10px;padding-right:10px}
.summary{padding:10px}
.meter{width:56px}
.wide{overflow-x:auto;max-width:100%}
table.matrix th,table.matrix td{padding:3px 4px}
td.cell .reason{display:-webkit-box;-webkit-box-orient:vertical;-webkit-line-clamp:2;overflow:hidden}
dialog#detail{width:100vw;max-width:100vw;height:100vh;max-height:100vh;border-radius:0}
dialog .body{padding:4px 8px 12px}
table.kv,table.kv tbody,table.kv tr,table.kv th,table.kv td{display:block}
table.kv td{padding-left:12px}
}
"""

JS = """
(function () {
  var dialog = document.getElementById('detail');
  var body = dialog.querySelector('.body');
  function setHash(h) { try { history.replaceState(null, '', h); } catch (e) {} }
  function open(id, focus) {
    var t = document.getElementById(id);
    if (!t || !t.content) return false;
    body.replaceChildren(t.content.cloneNode(true));
    dialog.querySelector('.bar-title').textContent = t.dataset.title || '';
    if (!dialog.open) dialog.showModal();
    setHash('#' + id);
    var target = focus && body.querySelector('[id="' + focus + '"]');
    if (target && target.tagName === 'DETAILS') target.open = true;
    var first = target || body.querySelector('details.case[open] tr.first') || body.querySelector('tr.first');
    if (first) first.scrollIntoView({block: target ? 'start' : 'center'});
    return true;
  }
  document.addEventListener('click', function (e) {
    var b = e.target.closest('[data-detail]');
    if (b) { e.preventDefault(); open(b.dataset.detail, b.dataset.focus || null); return; }
    var c = e.target.closest('[data-case]');
    if (c) {
      e.preventDefault();
      var d = body.querySelector('[id="' + c.dataset.case + '"]');
      if (d) { d.open = true; d.scrollIntoView({block: 'start'}); }
      return;
    }
    var r = e.target.closest('[data-row]');
    if (r) {
      e.preventDefault();
      var row = body.querySelector('[id="' + r.dataset.row + '"]');
      if (row) { var lane = row.closest('details'); if (lane) lane.open = true; row.scrollIntoView({block: 'center'}); }
      return;
    }
    if (e.target.closest('.close-on-nav')) dialog.close();
  });
  dialog.addEventListener('close', function () { setHash(location.pathname + location.search); });
  var fo = document.getElementById('f-outcome'), fp = document.getElementById('f-profile');
  var fs = document.getElementById('f-search');
  // The search box: a rule id (P1 is P1, not P11), words of a rule's title, or part of the id
  // of a case that did not pass, which shows that case's row of the index and its rules.
  function searched() {
    var q = fs.value.trim().toLowerCase(), rules = null;
    if (q) rules = {};
    document.querySelectorAll('#cases tr[data-case]').forEach(function (tr) {
      var ok = !q || tr.dataset.case.toLowerCase().indexOf(q) >= 0;
      tr.classList.toggle('hidden', !ok);
      if (ok && q) tr.querySelectorAll('[data-detail]').forEach(function (b) { rules[b.textContent.trim()] = true; });
    });
    return function (tr) {
      if (!q) return true;
      if (/^p\\d+$/.test(q)) return tr.dataset.rule.toLowerCase() === q || rules[tr.dataset.rule] === true;
      var title = tr.querySelector('td.title');
      return (title && title.textContent.toLowerCase().indexOf(q) >= 0) || rules[tr.dataset.rule] === true;
    };
  }
  var GROUPS = {failing: ['fail', 'error', 'timeout', 'invalid'], expected: ['expected-fail', 'expected-error'],
                unscored: ['skip', 'not-scored', 'no-case']};
  function wanted(tr) {
    var v = fo.value, outcomes = tr.dataset.outcomes.split(' ');
    if (v === 'all') return true;
    if (v === 'differs') return tr.dataset.differs === '1';
    if (GROUPS[v]) return outcomes.some(function (o) { return GROUPS[v].indexOf(o) >= 0; });
    return outcomes.indexOf(v) >= 0;
  }
  // Rules no report has a case of (a selection's other 100-odd) stay folded unless asked for:
  // the box ticked, their outcome chosen, one profile chosen (at most 49 rows) or a search.
  var fn = document.getElementById('f-nocase');
  function caseless(tr) {
    return tr.dataset.nocase === '1' && !(fn && fn.checked) && ['no-case', 'unscored'].indexOf(fo.value) < 0 &&
      fp.value === 'all' && !fs.value.trim();
  }
  function filter() {
    var shown = 0, found = searched(), searching = !!fs.value.trim();
    document.querySelectorAll('table.matrix tbody').forEach(function (tb) {
      var any = false, section = null, sectionAny = false;
      function closeSection() { if (section) section.classList.toggle('hidden', !sectionAny); }
      tb.querySelectorAll('tr').forEach(function (tr) {
        if (tr.classList.contains('section')) { closeSection(); section = tr; sectionAny = false; return; }
        if (!tr.classList.contains('rule')) return;
        var ok = (fp.value === 'all' || tr.dataset.profile === fp.value) && wanted(tr) && found(tr) && !caseless(tr);
        tr.classList.toggle('hidden', !ok);
        if (ok) { any = true; sectionAny = true; shown++; }
      });
      closeSection();
      tb.classList.toggle('hidden', !any);
      if (any && searching) fold(tb, false);  // what a search finds is shown
    });
    document.getElementById('f-count').textContent = shown + ' rules shown';
  }
  function fold(tb, folded) {
    tb.classList.toggle('folded', folded);
    var b = tb.querySelector('button.fold');
    if (b) b.setAttribute('aria-expanded', folded ? 'false' : 'true');
  }
  // A rule's statement, folded at the foot of the page, opens where a link leads to it.
  function statement(hash) {
    var a = hash && hash.indexOf('#rule-') === 0 && document.getElementById(hash.slice(1));
    if (!a || a.tagName !== 'ARTICLE') return;
    a.closest('details.all').open = true;
    a.querySelector('details').open = true;
  }
  document.addEventListener('click', function (e) {
    var f = e.target.closest('button.fold');
    if (f) { var tb = f.closest('tbody'); fold(tb, !tb.classList.contains('folded')); return; }
    var l = e.target.closest('a[href^="#rule-"]');
    if (l) statement(l.getAttribute('href'));
  }, true);
  window.addEventListener('hashchange', function () { statement(location.hash); });
  fo.addEventListener('change', filter); fp.addEventListener('change', filter); fs.addEventListener('input', filter);
  if (fn) fn.addEventListener('change', filter);
  filter();
  statement(location.hash);
  if (location.hash.indexOf('#d-') === 0) {
    var h = location.hash.slice(1), m = h.match(/^(d-\\d+-P\\d+)(-c\\d+.*)?$/);
    if (m) open(m[1], m[2] ? h : null);
  }
})();
"""
