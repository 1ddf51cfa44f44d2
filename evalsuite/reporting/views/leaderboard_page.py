"""The static leaderboard page (``leaderboard/index.html``): a table, pass@k bars per task, and a side-by-side
comparison of two models on the same problems; each entry links to its run's own page (:mod:`.run_page`).

Table and charts are rendered here in Python (the page reads fine with JavaScript off); the script only
sorts, filters and fills the comparison from data embedded as JSON. Escaping lives in :mod:`.style`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from evalsuite.reporting.labels import describe_settings, display_labels, is_partial
from evalsuite.reporting.model import LeaderboardEntry, utc_now_iso
from evalsuite.reporting.schema import SCHEMA_VERSION
from evalsuite.reporting.views.contract import LeaderboardData, LeaderboardView, ProblemTally
from evalsuite.reporting.views.style import ci_text, footer, json_for_script, safe_href, shell
from evalsuite.reporting.views.style import esc as _e
from evalsuite.reporting.views.style import pct as _pct

HTML_FILE = "index.html"
# Colour per k, in order of the ks present (colour-blind-safe Okabe-Ito-like palette).
K_COLOURS = ("#2b6cb0", "#dd8a16", "#2f9e6e", "#8e5bd0", "#c2410c", "#0e7490")


def _all_ks(entries: Sequence[LeaderboardEntry]) -> list[int]:
    return sorted({k for entry in entries for k in entry.ks()})


def _rank_key(entry: LeaderboardEntry) -> tuple[float, str]:
    """Best first: by the smallest k the entry has (pass@1 when present), then by name."""
    ks = entry.ks()
    return (-entry.metrics[f"pass@{ks[0]}"].value if ks else 0.0, entry.model.casefold())


def _name_html(entry: LeaderboardEntry, label: str) -> str:
    """The model's name (never cut: it wraps), linked to its run page, with badges for what sets it apart."""
    name = _e(entry.model)
    if safe_href(entry.run_page):
        name = f'<a href="{_e(safe_href(entry.run_page))}" class="run-link">{name}</a>'
    badges = "".join(f'<span class="badge {"partial" if part.startswith("partial") else "setting"}">{_e(part)}</span>'
                     for part in _label_parts(entry, label))
    return f'<div class="model" title="{_e(label)}">{name}{badges}</div>'


def _label_parts(entry: LeaderboardEntry, label: str) -> list[str]:
    """The parenthesised settings of a display label, e.g. ``["partial 10/164", "T=0.8"]``."""
    if label == entry.model or not label.startswith(entry.model + " ("):
        return []
    return [part for part in label[len(entry.model) + 2:-1].split(", ") if part]


# -- table -------------------------------------------------------------------------------------------

def _table(entries: Sequence[LeaderboardEntry], ks: list[int]) -> str:
    head = ['<th scope="col" data-key="model" data-type="text">Model</th>',
            '<th scope="col" data-key="task" data-type="text">Task</th>']
    head += [f'<th scope="col" data-key="pass@{k}" data-type="num" class="num">pass@{k}</th>' for k in ks]
    head += ['<th scope="col" data-key="n" data-type="num" class="num" title="samples per problem">n</th>',
             '<th scope="col" data-key="T" data-type="num" class="num" title="sampling temperature">T</th>',
             '<th scope="col" data-key="problems" data-type="num" class="num">Problems</th>',
             '<th scope="col" data-key="date" data-type="text">Date</th>',
             '<th scope="col" data-key="run" data-type="text">Run · hardware</th>']
    rows = []
    labels = display_labels(entries)
    for entry in sorted(entries, key=lambda e: (e.task, _rank_key(e))):
        label = labels[entry.key]
        cells = [f'<td class="first" data-sort="{_e(label.casefold())}">{_name_html(entry, label)}'
                 f'<div class="sub" title="model id">{_e(entry.model_id)}</div></td>',
                 f'<td data-label="Task" data-sort="{_e(entry.task)}"><span class="task">{_e(entry.task)}</span></td>']
        for k in ks:
            metric = entry.metrics.get(f"pass@{k}")
            if metric is None:
                reason = entry.not_computable.get(f"pass@{k}", "not computed")
                cells.append(f'<td class="num missing" data-label="pass@{k}" data-sort="" title="{_e(reason)}">—</td>')
            else:
                how = ("Wilson score interval (every problem scored the same)" if metric.ci_method == "wilson"
                       else "95% bootstrap confidence interval over problems")
                base = entry.base_metrics.get(f"pass@{k}")  # EvalPlus-style tasks: pass@k is the plus figure
                base_html = (f'<div class="sub" title="EvalPlus base inputs alone (the figure above: base and plus)">'
                             f'base {_pct(base.value)}</div>' if base is not None else "")
                cells.append(
                    f'<td class="num" data-label="pass@{k}" data-sort="{metric.value:.6f}"><span class="metric">'
                    f'<span class="score">{_pct(metric.value)}</span>'
                    f'<span class="ci" title="{_e(how)}">{_e(ci_text(metric.ci_low, metric.ci_high, metric.ci_method))}'
                    f'</span></span>{base_html}</td>')
        settings = f"{describe_settings(entry.settings)}; key {entry.settings_key}"
        subset = entry.settings.problem_set
        problems = f'{entry.n_problems}/{subset.of}' if subset is not None else str(entry.n_problems)
        cells += [f'<td class="num" data-label="n" data-sort="{_e(entry.n)}" title="{_e(settings)}">{_e(entry.n)}</td>',
                  f'<td class="num" data-label="T" data-sort="{_e(entry.temperature)}" title="{_e(settings)}">'
                  f'{entry.temperature:g}</td>',
                  f'<td class="num" data-label="Problems" data-sort="{_e(entry.n_problems)}">{_e(problems)}</td>',
                  f'<td class="date" data-label="Date" data-sort="{_e(entry.date)}" title="{_e(entry.date)}">{_e(entry.date[:10])}</td>',
                  f'<td class="run" data-label="Run" data-sort="{_e(entry.run_id)}" title="run {_e(entry.run_id)} on '
                  f'{_e(entry.hardware)}, evalsuite {_e(entry.evalsuite_version)}"><code>{_e(entry.run_id)}</code>'
                  f'<div class="sub">{_e(entry.hardware)}</div></td>']
        partial = ' data-partial="true"' if is_partial(entry) else ""
        rows.append(f'<tr data-task="{_e(entry.task)}"{partial}>{"".join(cells)}</tr>')
    return (f'<div class="table-wrap"><table id="board" class="board">'
            f'<thead><tr>{"".join(head)}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


# -- charts ------------------------------------------------------------------------------------------

def _bars(entry: LeaderboardEntry, label: str, ks: list[int], colour: dict[int, str]) -> str:
    bars = []
    for k in ks:
        metric = entry.metrics.get(f"pass@{k}")
        if metric is None:
            bars.append(f'<div class="sub">pass@{k}: n/a</div>')
            continue
        tip = (f"{label}: pass@{k} = {_pct(metric.value)}% (95% CI {ci_text(metric.ci_low, metric.ci_high, metric.ci_method)}"
               f", n={entry.n}, {entry.n_problems} problems)")
        bars.append(
            f'<div class="track" title="{_e(tip)}">'
            f'<div class="fill" style="width:{100 * metric.value:.2f}%;background:{colour[k]}"></div>'
            f'<div class="whisker" style="left:{100 * metric.ci_low:.2f}%;width:{100 * (metric.ci_high - metric.ci_low):.2f}%">'
            f'</div><span class="val">{_pct(metric.value)}'
            + ('<span class="wilson">W</span>' if metric.ci_method == "wilson" else "") + '</span></div>')
    return "".join(bars)


def _chart(task: str, entries: Sequence[LeaderboardEntry], labels: dict) -> str:
    """One group per entry (name beside its bars, one bar per k, the 95% interval as a whisker); partial
    runs come after the full ones, under their own heading, with hatched bars."""
    ks = _all_ks(entries)
    colour = {k: K_COLOURS[i % len(K_COLOURS)] for i, k in enumerate(ks)}
    legend = "".join(f'<span><i style="background:{colour[k]}"></i>pass@{k}</span>' for k in ks)
    legend += '<span class="muted">whiskers: 95% CI · W: Wilson interval</span>'
    parts = [f'<div class="legend">{legend}</div>']
    full = sorted((e for e in entries if not is_partial(e)), key=_rank_key)
    partial = sorted((e for e in entries if is_partial(e)), key=_rank_key)
    for group, heading in ((full, ""), (partial, "Partial runs (--limit): other problem sets, not comparable")):
        if not group:
            continue
        if heading:
            parts.append(f'<div class="subhead">{_e(heading)}</div>')
        for entry in group:
            label = labels[entry.key]
            cls = "bars partial-bars" if is_partial(entry) else "bars"
            parts.append(f'<div class="group"><div class="label">{_name_html(entry, label)}</div>'
                         f'<div class="{cls}">{_bars(entry, label, ks, colour)}</div></div>')
    return "".join(parts)


def _charts(entries: Sequence[LeaderboardEntry]) -> str:
    by_task: dict[str, list[LeaderboardEntry]] = defaultdict(list)
    for entry in entries:
        by_task[entry.task].append(entry)
    figures = []
    for task in sorted(by_task):
        group = by_task[task]
        labels = display_labels(group)
        n_problems = sorted({e.n_problems for e in group})
        caption = f"{len(group)} result{'s' if len(group) != 1 else ''} · {'/'.join(map(str, n_problems))} problems"
        figures.append(f'<figure class="card" data-task="{_e(task)}"><figcaption><h3>{_e(task)}</h3>'
                       f'<span class="sub">{_e(caption)}</span></figcaption>{_chart(task, group, labels)}</figure>')
    return "".join(figures)


# -- side by side ------------------------------------------------------------------------------------

def _compare(entries: Sequence[LeaderboardEntry], tallies: Mapping[tuple[str, str, str],
             Mapping[str, ProblemTally]]) -> str:
    labels = display_labels(entries)
    data: list[dict[str, Any]] = []
    for entry in sorted(entries, key=lambda e: (e.task, _rank_key(e))):
        per_problem = tallies.get(entry.key)
        if per_problem:
            data.append({"label": labels[entry.key], "task": entry.task, "page": safe_href(entry.run_page),
                         "problems": {tid: [t.passed, t.n] for tid, t in per_problem.items()}})
    if len(data) < 2:
        return ""
    return ('<h2 id="compare">Side by side</h2><section class="card" id="compare-card">'
            '<p class="sub" style="margin-top:0">Two results on the same task: which problems one solves and the '
            'other does not (a problem counts as solved when any of its samples passed). Only problems both ran '
            'are compared.</p><div class="compare-pick"><label>A <select id="cmp-a"></select></label>'
            '<label>B <select id="cmp-b"></select></label></div><div id="cmp-out"></div></section>'
            f'<script type="application/json" id="compare-data">{json_for_script(data)}</script>')


# -- page --------------------------------------------------------------------------------------------

JS = """
(function () {
  var table = document.getElementById("board");
  if (!table) return;
  var body = table.tBodies[0];
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  function value(row, i, numeric) {
    var cell = row.cells[i];
    var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent;
    if (raw === "") return null;
    return numeric ? parseFloat(raw) : raw.toLowerCase();
  }
  function sortBy(i, direction) {
    var numeric = heads[i].getAttribute("data-type") === "num";
    var sign = direction === "ascending" ? 1 : -1;
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = value(a, i, numeric), y = value(b, i, numeric);
      if (x === null || y === null) return x === y ? 0 : (x === null ? 1 : -1);
      return x < y ? -sign : x > y ? sign : 0;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    heads.forEach(function (th, j) {
      if (j === i) th.setAttribute("aria-sort", direction); else th.removeAttribute("aria-sort");
    });
    var hash = "#sort=" + encodeURIComponent(heads[i].getAttribute("data-key")) + "-" + direction.slice(0, -6);
    try { history.replaceState(null, "", hash); } catch (e) { /* some browsers refuse on file:// */ }
  }
  function sortFromHash() {  // shareable sorted views: index.html#sort=pass@1-desc
    var match = /^#sort=(.+)-(asc|desc)$/.exec(location.hash);
    if (!match) return;
    var key = decodeURIComponent(match[1]);
    var i = heads.findIndex(function (th) { return th.getAttribute("data-key") === key; });
    if (i >= 0) sortBy(i, match[2] + "ending");
  }
  heads.forEach(function (th, i) {
    th.tabIndex = 0;
    function toggle() {
      var now = th.getAttribute("aria-sort");
      var first = th.getAttribute("data-type") === "num" ? "descending" : "ascending";
      sortBy(i, now ? (now === "ascending" ? "descending" : "ascending") : first);
    }
    th.addEventListener("click", toggle);
    th.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); toggle(); }
    });
  });
  sortFromHash();
  var filter = document.getElementById("task-filter");
  if (filter) filter.addEventListener("change", function () {
    var task = filter.value;
    document.querySelectorAll("[data-task]").forEach(function (node) {
      node.hidden = task !== "" && node.getAttribute("data-task") !== task;
    });
  });
  var dataNode = document.getElementById("compare-data");
  if (dataNode) compare(JSON.parse(dataNode.textContent));
  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (cls) node.className = cls;
    return node;
  }
  function link(run, id, text) {  // to the problem's samples on that run's page
    if (!run.page) return el("span", text);
    var a = el("a", text);
    a.href = run.page + "#problem=" + encodeURIComponent(id);
    return a;
  }
  function compare(runs) {
    var a = document.getElementById("cmp-a"), b = document.getElementById("cmp-b");
    var out = document.getElementById("cmp-out");
    runs.forEach(function (run, i) {
      [a, b].forEach(function (select) { var o = el("option", run.label + " · " + run.task); o.value = i; select.appendChild(o); });
    });
    var first = 0, second = 1;
    outer: for (var i = 0; i < runs.length; i++) for (var j = i + 1; j < runs.length; j++)
      if (runs[i].task === runs[j].task) { first = i; second = j; break outer; }
    a.value = first; b.value = second;
    function render() {
      var x = runs[+a.value], y = runs[+b.value];
      out.textContent = "";
      if (x.task !== y.task) { out.appendChild(el("p", "Pick two results on the same task.", "sub")); return; }
      var ids = Object.keys(x.problems).filter(function (id) { return id in y.problems; })
        .sort(function (p, q) { return p.localeCompare(q, undefined, {numeric: true}); });
      var groups = {a: [], b: [], both: [], neither: []};
      ids.forEach(function (id) {
        var sa = x.problems[id][0] > 0, sb = y.problems[id][0] > 0;
        groups[sa && sb ? "both" : sa ? "a" : sb ? "b" : "neither"].push(id);
      });
      var tally = el("div", null, "tally");
      [["only A solves", groups.a.length], ["only B solves", groups.b.length], ["both", groups.both.length],
       ["neither", groups.neither.length], ["problems compared", ids.length]].forEach(function (item) {
        var span = el("span"); span.appendChild(el("b", String(item[1]))); span.appendChild(document.createTextNode(" " + item[0]));
        tally.appendChild(span);
      });
      out.appendChild(tally);
      var table = el("table", null, "compare-table"), head = el("tr");
      ["Problem", "A", "B", ""].forEach(function (t, k) { head.appendChild(el("th", t, k === 1 || k === 2 ? "num" : "")); });
      var thead = el("thead"); thead.appendChild(head); table.appendChild(thead);
      var body = el("tbody");
      [["a", "only A"], ["b", "only B"]].forEach(function (g) {
        groups[g[0]].forEach(function (id) {
          var row = el("tr"), cell = el("td"); cell.appendChild(link(x, id, id)); row.appendChild(cell);
          [x, y].forEach(function (run) { var td = el("td", null, "num"); td.appendChild(link(run, id, run.problems[id][0] + "/" + run.problems[id][1])); row.appendChild(td); });
          row.appendChild(el("td", g[1], "sub")); body.appendChild(row);
        });
      });
      if (!body.rows.length) { var r = el("tr"), c = el("td", "Both solve the same problems."); c.colSpan = 4; r.appendChild(c); body.appendChild(r); }
      table.appendChild(body); out.appendChild(table);
    }
    a.addEventListener("change", render); b.addEventListener("change", render);
    render();
  }
  table.setAttribute("data-ready", "true");
})();
"""


def render_html(data: LeaderboardData | Sequence[LeaderboardEntry], generated: str | None = None) -> str:
    """The whole page as one string, from the entries and their runs' problem tallies (the side-by-side view
    needs those; bare entries draw the page without it)."""
    data = data if isinstance(data, LeaderboardData) else LeaderboardData(entries=list(data))
    entries = data.entries
    # the newest entry's date, so that the same board renders the same page (a CI that commits it sees no churn)
    generated = generated or max((e.date for e in entries), default=None) or utc_now_iso()
    ks = _all_ks(entries)
    tasks = sorted({e.task for e in entries})
    models = {e.model for e in entries}
    summary = (f"{len(entries)} result{'s' if len(entries) != 1 else ''} · {len(models)} "
               f"model{'s' if len(models) != 1 else ''} · {len(tasks)} task{'s' if len(tasks) != 1 else ''}")
    partial = sum(is_partial(e) for e in entries)
    if partial:
        summary += f" · {partial} partial (--limit)"
    if entries:
        options = "".join(f'<option value="{_e(t)}">{_e(t)}</option>' for t in tasks)
        content = (f'<div class="toolbar"><label>Task <select id="task-filter"><option value="">All tasks</option>'
                   f'{options}</select></label><span class="sub">Best first within a task; click a header to sort, '
                   f'a model to open its run: every problem and sample. Scores in %, small print: 95% interval.'
                   f'</span></div>{_table(entries, ks)}<h2>pass@k by task</h2><div class="charts">{_charts(entries)}</div>'
                   f'{_compare(entries, data.tallies)}')
    else:
        content = ('<div class="empty"><h3>No results yet</h3><p class="sub">Run <code>evalsuite run</code> '
                   'to add a model to the leaderboard.</p></div>')
    body = (f'<header><h1>Code generation leaderboard</h1><p class="meta">{_e(summary)} · updated '
            f'{_e(generated.replace("T", " ").replace("Z", " UTC"))}</p></header><main>{content}</main>'
            + footer('One row per model, task and generation settings (n, temperature, top-p, top-k, max new '
                     'tokens, prompt template, dataset hash; a <span class="badge partial">partial</span> run is '
                     'its own row); a new run replaces the row with the same settings. '
                     f'Leaderboard schema {SCHEMA_VERSION}. '))
    return shell("evalsuite leaderboard", body, JS)


VIEW = LeaderboardView("leaderboard page", HTML_FILE, render_html)
