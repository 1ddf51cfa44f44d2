"""Renders the leaderboard as one static, self-contained HTML page (``leaderboard/index.html``).

Everything is inline (CSS, a few lines of JS for sorting and filtering, SVG charts), so the page opens
from disk, can be mailed or uploaded as a CI artifact, and never touches the network. Table and charts
are rendered here in Python, not in the browser: the page reads fine with JavaScript off, and every
user-controlled string passes through :func:`html.escape` in one place (:func:`_e`).
"""

from __future__ import annotations

import html
from collections import defaultdict
from pathlib import Path
from typing import Sequence

from evalsuite import __version__
from evalsuite.jsonl import atomic_write_text
from evalsuite.reporting.leaderboard import SCHEMA_VERSION, LeaderboardEntry, describe_settings, display_labels, utc_now_iso

# Colour per k, in order of the ks present (colour-blind-safe Okabe-Ito-like palette).
K_COLOURS = ("#2b6cb0", "#dd8a16", "#2f9e6e", "#8e5bd0", "#c2410c", "#0e7490")


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def _all_ks(entries: Sequence[LeaderboardEntry]) -> list[int]:
    return sorted({k for entry in entries for k in entry.ks()})


def _rank_key(entry: LeaderboardEntry) -> tuple[float, str]:
    """Best first: by the smallest k the entry has (pass@1 when present), then by name."""
    ks = entry.ks()
    return (-entry.metrics[f"pass@{ks[0]}"].value if ks else 0.0, entry.model.casefold())


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
        cells = [f'<td data-sort="{_e(labels[entry.key].casefold())}"><div class="model" title="{_e(labels[entry.key])}">{_e(labels[entry.key])}</div>'
                 f'<div class="sub" title="model id">{_e(entry.model_id)}</div></td>',
                 f'<td data-sort="{_e(entry.task)}"><span class="task">{_e(entry.task)}</span></td>']
        for k in ks:
            metric = entry.metrics.get(f"pass@{k}")
            if metric is None:
                reason = entry.not_computable.get(f"pass@{k}", "not computed")
                cells.append(f'<td class="num missing" data-sort="" title="{_e(reason)}">—</td>')
            else:
                cells.append(
                    f'<td class="num" data-sort="{metric.value:.6f}">'
                    f'<span class="score">{_pct(metric.value)}</span>'
                    f'<span class="ci" title="95% bootstrap confidence interval over problems">'
                    f'{_pct(metric.ci_low)}–{_pct(metric.ci_high)}</span></td>')
        settings = f"{describe_settings(entry.settings)}; key {entry.settings_key}"
        cells += [f'<td class="num" data-sort="{entry.n}" title="{_e(settings)}">{entry.n}</td>',
                  f'<td class="num" data-sort="{entry.temperature}" title="{_e(settings)}">{entry.temperature:g}</td>',
                  f'<td class="num" data-sort="{entry.n_problems}">{entry.n_problems}</td>',
                  f'<td data-sort="{_e(entry.date)}" title="{_e(entry.date)}">{_e(entry.date[:10])}</td>',
                  f'<td class="run" data-sort="{_e(entry.run_id)}" title="run {_e(entry.run_id)} on '
                  f'{_e(entry.hardware)}, evalsuite {_e(entry.evalsuite_version)}"><code>{_e(entry.run_id)}</code>'
                  f'<div class="sub">{_e(entry.hardware)}</div></td>']
        rows.append(f'<tr data-task="{_e(entry.task)}">{"".join(cells)}</tr>')
    return (f'<div class="table-wrap"><table id="board" class="board">'
            f'<thead><tr>{"".join(head)}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


# -- charts ------------------------------------------------------------------------------------------

def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _chart(task: str, entries: Sequence[LeaderboardEntry]) -> str:
    """Horizontal grouped bars: one group per entry, one bar per k, 95% CI as a whisker."""
    ks = _all_ks(entries)
    colour = {k: K_COLOURS[i % len(K_COLOURS)] for i, k in enumerate(ks)}
    labels = display_labels(entries)
    label_w, plot_w, right_pad, top, bar_h, bar_gap, group_gap = 235, 420, 56, 34, 14, 3, 16
    group_h = len(ks) * bar_h + (len(ks) - 1) * bar_gap
    ordered = sorted(entries, key=_rank_key)
    height = top + len(ordered) * (group_h + group_gap) + 28
    width = label_w + plot_w + right_pad
    x = lambda value: label_w + value * plot_w  # noqa: E731 - the one coordinate transform
    parts = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
             f'xmlns="http://www.w3.org/2000/svg" aria-label="{_e(f"pass@k per model on {task}")}">']
    # legend
    lx = label_w
    for k in ks:
        parts.append(f'<rect x="{lx}" y="6" width="12" height="12" rx="2" fill="{colour[k]}"/>'
                     f'<text class="legend" x="{lx + 17}" y="16">pass@{k}</text>')
        lx += 84
    parts.append(f'<text class="legend muted" x="{lx + 8}" y="16">whiskers: 95% CI</text>')
    # grid and axis
    axis_y = height - 22
    for tick in range(0, 101, 20):
        gx = x(tick / 100)
        parts.append(f'<line class="grid" x1="{gx:.1f}" y1="{top - 6}" x2="{gx:.1f}" y2="{axis_y}"/>'
                     f'<text class="tick" x="{gx:.1f}" y="{axis_y + 15}" text-anchor="middle">{tick}%</text>')
    # bars
    y = top
    for entry in ordered:
        label = labels[entry.key]
        parts.append(f'<text class="label" x="{label_w - 10}" y="{y + group_h / 2 + 4:.1f}" text-anchor="end">'
                     f'<title>{_e(label)} ({_e(entry.model_id)})</title>{_e(_truncate(label, 30))}</text>')
        for i, k in enumerate(ks):
            by = y + i * (bar_h + bar_gap)
            metric = entry.metrics.get(f"pass@{k}")
            if metric is None:
                parts.append(f'<text class="tick" x="{label_w + 4}" y="{by + bar_h - 3}">pass@{k}: n/a</text>')
                continue
            tip = (f"{label} — pass@{k} = {_pct(metric.value)}% "
                   f"(95% CI {_pct(metric.ci_low)}–{_pct(metric.ci_high)}%, n={entry.n}, {entry.n_problems} problems)")
            mid = by + bar_h / 2
            parts.append(
                f'<g class="bar"><title>{_e(tip)}</title>'
                f'<rect x="{label_w}" y="{by}" width="{max(metric.value * plot_w, 1.5):.1f}" height="{bar_h}" '
                f'rx="2" fill="{colour[k]}"/>'
                f'<line class="whisker" x1="{x(metric.ci_low):.1f}" y1="{mid}" x2="{x(metric.ci_high):.1f}" y2="{mid}"/>'
                f'<line class="whisker" x1="{x(metric.ci_low):.1f}" y1="{mid - 4}" x2="{x(metric.ci_low):.1f}" y2="{mid + 4}"/>'
                f'<line class="whisker" x1="{x(metric.ci_high):.1f}" y1="{mid - 4}" x2="{x(metric.ci_high):.1f}" '
                f'y2="{mid + 4}"/>'
                f'<text class="value" x="{x(metric.ci_high) + 6:.1f}" y="{by + bar_h - 3}">{_pct(metric.value)}</text></g>')
        y += group_h + group_gap
    parts.append(f'<line class="axis" x1="{label_w}" y1="{top - 6}" x2="{label_w}" y2="{axis_y}"/></svg>')
    return "".join(parts)


def _charts(entries: Sequence[LeaderboardEntry]) -> str:
    by_task: dict[str, list[LeaderboardEntry]] = defaultdict(list)
    for entry in entries:
        by_task[entry.task].append(entry)
    figures = []
    for task in sorted(by_task):
        group = by_task[task]
        n_problems = sorted({e.n_problems for e in group})
        caption = f"{len(group)} result{'s' if len(group) != 1 else ''} · {'/'.join(map(str, n_problems))} problems"
        figures.append(f'<figure class="card" data-task="{_e(task)}"><figcaption><h3>{_e(task)}</h3>'
                       f'<span class="sub">{_e(caption)}</span></figcaption>'
                       f'<div class="chart-wrap">{_chart(task, group)}</div></figure>')
    return "".join(figures)


# -- page --------------------------------------------------------------------------------------------

CSS = """
:root{--bg:#f6f7f9;--card:#fff;--text:#1a202c;--muted:#64748b;--line:#e2e8f0;--head:#f1f5f9;--accent:#2b6cb0;
--hover:#f8fafc;--grid:#e8ecf1}
@media (prefers-color-scheme:dark){:root{--bg:#0f1419;--card:#171d24;--text:#e2e8f0;--muted:#94a3b8;--line:#2a3441;
--head:#1e2630;--accent:#63a4e8;--hover:#1c242d;--grid:#26303b}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--text);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,
"Helvetica Neue",Arial,sans-serif}
header{padding:28px 40px 8px}
h1{margin:0;font-size:24px;font-weight:650;letter-spacing:-.01em}
h2{font-size:16px;font-weight:600;margin:28px 0 12px}
h3{margin:0;font-size:15px;font-weight:600}
main{padding:0 40px 40px;max-width:1400px}
.meta,.sub,.muted{color:var(--muted)}
.meta{margin:4px 0 0}
.sub{font-size:12px}
.toolbar{display:flex;gap:16px;align-items:center;margin:16px 0 10px}
select{font:inherit;padding:4px 8px;border:1px solid var(--line);border-radius:6px;background:var(--card);color:var(--text)}
.table-wrap{overflow-x:auto;background:var(--card);border:1px solid var(--line);border-radius:10px;
box-shadow:0 1px 2px rgba(0,0,0,.04)}
table.board{border-collapse:collapse;width:100%;white-space:nowrap}
.board th{position:sticky;top:0;background:var(--head);text-align:left;font-weight:600;font-size:11.5px;
text-transform:uppercase;letter-spacing:.03em;color:var(--muted);padding:10px 12px;border-bottom:1px solid var(--line);
cursor:pointer;user-select:none}
.board th:hover,.board th:focus{color:var(--text);outline:none}
.board th::after{content:"↕";opacity:.35;margin-left:6px;font-size:11px}
.board th[aria-sort=ascending]::after{content:"▲";opacity:1;color:var(--accent)}
.board th[aria-sort=descending]::after{content:"▼";opacity:1;color:var(--accent)}
.board td{padding:9px 12px;border-bottom:1px solid var(--line);vertical-align:middle}
.board tbody tr:last-child td{border-bottom:0}
.board tbody tr:hover{background:var(--hover)}
.board .num{text-align:right;font-variant-numeric:tabular-nums}
.model{font-weight:600;max-width:280px;overflow:hidden;text-overflow:ellipsis}
.board .sub{max-width:280px;overflow:hidden;text-overflow:ellipsis}
.board td.run code,.board td.run .sub{display:block;max-width:200px;overflow:hidden;text-overflow:ellipsis}
.task{display:inline-block;padding:1px 8px;border-radius:999px;background:var(--head);border:1px solid var(--line);
font-size:12px}
.score{font-weight:600;font-size:15px}
.ci{display:block;font-size:11px;color:var(--muted)}
.missing{color:var(--muted)}
code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;color:var(--muted)}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(540px,1fr));gap:16px;align-items:start}
.card{margin:0;background:var(--card);border:1px solid var(--line);border-radius:10px;padding:16px 18px;
box-shadow:0 1px 2px rgba(0,0,0,.04)}
figcaption{display:flex;align-items:baseline;gap:10px;margin-bottom:8px}
.chart-wrap{overflow-x:auto}
svg.chart{max-width:100%;height:auto;font-family:inherit}
svg .label{font-size:12.5px;fill:var(--text)}
svg .legend{font-size:12px;fill:var(--text)}
svg .legend.muted{fill:var(--muted)}
svg .tick{font-size:11px;fill:var(--muted)}
svg .value{font-size:11px;fill:var(--text);font-variant-numeric:tabular-nums}
svg .grid{stroke:var(--grid);stroke-width:1}
svg .axis{stroke:var(--muted);stroke-width:1}
svg .whisker{stroke:var(--text);stroke-width:1.3;opacity:.75}
svg .bar:hover rect{filter:brightness(1.12)}
.empty{padding:40px;text-align:center;background:var(--card);border:1px dashed var(--line);border-radius:10px}
footer{padding:0 40px 32px;font-size:12px;color:var(--muted);max-width:1400px}
"""

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
  table.setAttribute("data-ready", "true");
})();
"""


def render_html(entries: Sequence[LeaderboardEntry], generated: str | None = None) -> str:
    """The whole page as one string."""
    generated = generated or utc_now_iso()
    ks = _all_ks(entries)
    tasks = sorted({e.task for e in entries})
    models = {e.model for e in entries}
    summary = (f"{len(entries)} result{'s' if len(entries) != 1 else ''} · {len(models)} "
               f"model{'s' if len(models) != 1 else ''} · {len(tasks)} task{'s' if len(tasks) != 1 else ''}")
    if entries:
        options = "".join(f'<option value="{_e(t)}">{_e(t)}</option>' for t in tasks)
        content = (f'<div class="toolbar"><label>Task <select id="task-filter"><option value="">All tasks</option>'
                   f'{options}</select></label><span class="sub">Grouped by task, best first; click a column header to sort. '
                   f'Scores in %, small print: 95% confidence interval.</span></div>'
                   f'{_table(entries, ks)}<h2>pass@k by task</h2><div class="charts">{_charts(entries)}</div>')
    else:
        content = ('<div class="empty"><h3>No results yet</h3><p class="sub">Run <code>evalsuite run</code> '
                   'to add a model to the leaderboard.</p></div>')
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'; '
        'script-src \'unsafe-inline\'; img-src data:">'
        f'<title>evalsuite leaderboard</title><style>{CSS}</style></head><body>'
        f'<header><h1>Code generation leaderboard</h1><p class="meta">{_e(summary)} · updated '
        f'{_e(generated.replace("T", " ").replace("Z", " UTC"))}</p></header>'
        f'<main>{content}</main>'
        '<footer><p>pass@k: unbiased estimator of Chen et al. (2021), averaged over problems; intervals are 95% '
        'percentile-bootstrap intervals resampling problems. One row per model, task and generation settings '
        '(n, temperature, top-p, top-k, max new tokens, prompt template, dataset hash); a new run replaces the row '
        f'with the same settings. Generated by evalsuite {_e(__version__)}, leaderboard schema {SCHEMA_VERSION}.</p>'
        f'</footer><script>{JS}</script></body></html>\n')


def write_html(path: str | Path, entries: Sequence[LeaderboardEntry]) -> Path:
    path = Path(path)
    atomic_write_text(path, render_html(entries))
    return path
