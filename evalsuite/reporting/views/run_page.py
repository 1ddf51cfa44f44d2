"""One run's report page (``report.html`` next to its record): pass@k and its curve over k, per-problem pass
rates, and every sample (prompt, raw output, the program that ran, verdict, error message, duration) with
filters for failed, timed out and flagged samples.

Built from the run's typed score summary (:class:`~evalsuite.scoring.ScoreSummary`, what ``summary.json`` holds), its
samples and the prompts, so ``evalsuite run`` and ``evaluate`` make the same page. Everything a sample wrote is untrusted text: it is
escaped by :func:`~evalsuite.reporting.views.style.esc` (or ``esc_block`` for the program, the output and the
error message, where an escape for a hidden code point such as ``\u202e`` is marked), never put into the page as
markup or as a raw control or bidi character.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from evalsuite.jsonl import atomic_write_text
from evalsuite.reporting.views.contract import DETAIL_FIELDS, RunHeader, RunView, SampleView, count_of, detail_of
from evalsuite.reporting.views.style import ci_text, footer, pct, safe_href, shell
from evalsuite.reporting.views.style import esc as _e
from evalsuite.reporting.views.style import esc_block as _block
from evalsuite.scoring.passk import pass_at_k
from evalsuite.scoring.summary import ProblemTally, ScoreSummary

PAGE_FILE = "report.html"
MAX_SAMPLES_PER_PROBLEM = 10  # shown on the page; all of them stay in the run's JSONL files
MAX_TEXT_CHARS = 20_000  # per text shown (a runaway completion must not make a 100 MB page)


def _clip(text: str) -> str:
    if len(text) <= MAX_TEXT_CHARS:
        return text
    return text[:MAX_TEXT_CHARS] + f"\n… ({len(text) - MAX_TEXT_CHARS:,} more characters in the run's JSONL files)"


def _shown(samples: Sequence[SampleView]) -> list[SampleView]:
    """At most MAX_SAMPLES_PER_PROBLEM per problem: flagged, then failed or timed out, then passed."""
    by_problem: dict[str, list[SampleView]] = {}
    for sample in samples:
        by_problem.setdefault(sample.task_id, []).append(sample)
    order = {"passed": 2, "failed": 1, "timed out": 1}
    shown = []
    for group in by_problem.values():
        ranked = sorted(group, key=lambda s: (0 if s.flags else order.get(s.status, 1), s.completion_id))
        shown += sorted(ranked[:MAX_SAMPLES_PER_PROBLEM], key=lambda s: s.completion_id)
    return shown


# -- pieces ------------------------------------------------------------------------------------------

def _stats(summary: ScoreSummary, n_flagged: int) -> str:
    cards = []
    base_set = summary.sets.get("base")  # EvalPlus-style tasks: pass@k is base and plus
    base = base_set.pass_at if base_set else {}
    for k, figure in sorted(summary.pass_at.items()):
        name = f"pass@{k}"
        base_html = (f'<div class="sub" title="EvalPlus base inputs alone">base {pct(base[k].value)}%</div>'
                     if k in base else "")
        cards.append(f'<div class="card stat"><div class="what">{_e(name)}</div><div class="big">{pct(figure.value)}%'
                     f'</div><div class="sub">95% CI {_e(ci_text(figure.ci_low, figure.ci_high, figure.ci_method))}'
                     f'</div>{base_html}</div>')
    for k, reason in sorted(summary.not_computable.items()):
        cards.append(f'<div class="card stat"><div class="what">{_e(f"pass@{k}")}</div><div class="big">—</div>'
                     f'<div class="sub">{_e(reason)}</div></div>')
    verdicts = (f'<div class="card stat"><div class="what">samples</div><div class="big">{_e(summary.n_samples)}</div>'
                f'<div class="sub"><span class="verdict passed">{_e(summary.n_passed)} passed</span> · '
                f'<span class="verdict failed">{_e(summary.n_failed)} failed</span> · '
                f'<span class="verdict timed">{_e(summary.n_timed_out)} timed out</span>'
                + (f' · <span class="flag">{n_flagged} flagged</span>' if n_flagged else "") + '</div></div>')
    return f'<div class="stats">{"".join(cards)}{verdicts}</div>'


def _curve(summary: ScoreSummary) -> str:
    """pass@k for every k from 1 to n (log axis), the reported ks with their intervals."""
    counts = [(tally.n, tally.passed) for tally in summary.per_problem.values()]
    if not counts:
        return ""
    n_min = min(n for n, _ in counts)
    ks = sorted({k for k in (1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000) if k <= n_min} | {n_min})
    values = [(k, sum(pass_at_k(n, c, k) for n, c in counts) / len(counts)) for k in ks]
    width, height, left, right, top, bottom = 480, 230, 42, 16, 12, 42
    span = math.log(max(ks[-1], 2))
    x = lambda k: left + (width - left - right) * (math.log(k) / span)  # noqa: E731
    y = lambda v: top + (height - top - bottom) * (1 - v)  # noqa: E731
    parts = [f'<svg class="curve" viewBox="0 0 {width} {height}" role="img" aria-label="pass@k over k">']
    for tick in (0, 0.25, 0.5, 0.75, 1):
        parts.append(f'<line class="grid" x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" y2="{y(tick):.1f}"/>'
                     f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{int(tick * 100)}%</text>')
    for k in ks:
        parts.append(f'<text x="{x(k):.1f}" y="{height - bottom + 16}" text-anchor="middle">{k}</text>')
    points = " ".join(f"{x(k):.1f},{y(v):.1f}" for k, v in values)
    if len(values) > 1:
        parts.append(f'<polyline class="line" points="{points}"/>')
    for k, v in values:
        parts.append(f'<circle class="dot" cx="{x(k):.1f}" cy="{y(v):.1f}" r="3.5"><title>pass@{k} = {pct(v)}%</title></circle>')
        reported = summary.pass_at.get(k)
        if reported:
            parts.append(f'<line class="ciw" x1="{x(k):.1f}" x2="{x(k):.1f}" y1="{y(reported.ci_low):.1f}" '
                         f'y2="{y(reported.ci_high):.1f}"/>')
    parts.append(f'<text x="{(left + width - right) / 2:.0f}" y="{height - 4}" text-anchor="middle">k (samples drawn)</text></svg>')
    note = ("" if n_min > 1 else '<p class="sub">One sample per problem: pass@1 only. Sample with n &gt; 1 and a '
            'temperature above 0 for a curve.</p>')
    return (f'<section class="card"><h3>pass@k over k</h3><p class="sub">Unbiased estimate from every problem\'s '
            f'n samples; bars: 95% intervals of the reported k.</p>{"".join(parts)}{note}</section>')


def _colour(rate: float) -> str:
    """Red (0) through amber to green (1); the same scale as the legend."""
    hue = 0 + 130 * rate
    return f"hsl({hue:.0f},62%,{52 - 8 * rate:.0f}%)"


def _problems(per_problem: Mapping[str, ProblemTally], timed_out: Mapping[str, int],
              flagged: Mapping[str, int]) -> str:
    chips = []
    for task_id, tally in per_problem.items():
        n, c = tally.n, tally.passed
        extra = "".join([f", {timed_out[task_id]} timed out" if timed_out.get(task_id) else "",
                         f", {flagged[task_id]} flagged" if flagged.get(task_id) else ""])
        chips.append(f'<button type="button" class="chip" data-problem="{_e(task_id)}" '
                     f'style="background:{_colour(c / n if n else 0)}" title="{_e(f"{task_id}: {c}/{n} passed{extra}")}" '
                     f'aria-label="{_e(f"{task_id}: {c}/{n} passed")}"></button>')
    rows = "".join(f'<tr><td><a href="#problem={_e(task_id)}" data-problem-link="{_e(task_id)}">{_e(task_id)}</a></td>'
                   f'<td class="num">{v.passed}/{v.n}</td><td class="num">{pct(v.passed / v.n if v.n else 0)}%'
                   f' <span class="rate" style="width:{40 * (v.passed / v.n if v.n else 0):.0f}px"></span></td>'
                   f'<td class="num">{timed_out.get(task_id, 0) or ""}</td><td class="num">{flagged.get(task_id, 0) or ""}</td></tr>'
                   for task_id, v in per_problem.items())
    table = (f'<details><summary class="sub">Per-problem pass rates (table)</summary><table class="rates"><thead><tr>'
             f'<th>Problem</th><th class="num">passed</th><th class="num">rate</th><th class="num">timed out</th>'
             f'<th class="num">flagged</th></tr></thead><tbody>{rows}</tbody></table></details>')
    solved = sum(1 for v in per_problem.values() if v.passed > 0)
    scale = "".join(f'<span><i style="background:{_colour(r)}"></i>{label}</span>'
                    for r, label in ((0, "none passed"), (0.5, "half"), (1, "all passed")))
    return (f'<section class="card"><h3>Problems</h3><p class="sub">{solved} of {len(per_problem)} solved by at least '
            f'one sample. Each square is a problem, coloured by its pass rate; click one to see its samples.</p>'
            f'<div class="chips" id="chips">{"".join(chips)}</div><div class="scale">{scale}</div>{table}</section>')


def _sample(sample: SampleView, prompt_block: str) -> str:
    """One sample's viewer; ``prompt_block`` is its problem's prompt as a block (escaped once per problem)."""
    status_cls = {"passed": "passed", "failed": "failed", "timed out": "timed"}.get(sample.status, "failed")
    flags = "".join(f' <span class="flag">⚑ {_e(flag)}</span>' for flag in sample.flags)
    error = sample.sample_error
    count = count_of(sample.num_tokens)
    tokens = f" · {_e(count)} tokens" if count else ""
    finish = f" · ended by {_e(sample.finish_reason)}" if sample.finish_reason else ""
    body = [f'<dl class="kv"><dt>verdict</dt><dd class="sample-verdict">{_e(sample.result)}</dd>'
            f'<dt>duration</dt><dd>{sample.duration_s:.3f} s</dd>'
            + (f'<dt>flags</dt><dd>{_e(", ".join(sample.flags))}</dd>' if sample.flags else "") + '</dl>']
    detail = detail_of(sample.failure_detail)
    if detail:
        rows = "".join(f'<dt>{_e(label)}</dt><dd><code class="detail-{_e(key)}">{_block(detail[key])}</code></dd>'
                       for key, label in DETAIL_FIELDS if key in detail)
        body.append(f'<div><h4>Where it failed (the trusted checker\'s account)</h4><dl class="kv failure-detail">'
                    f'{rows}</dl></div>')
    if error:
        body.append(f'<div><h4>Error message (the sample\'s own text)</h4><pre class="sample-error">{_block(_clip(error))}'
                    '</pre></div>')
    body.append(f'<div><h4>Program that ran</h4><pre class="program">{_block(_clip(sample.program))}</pre></div>')
    body.append(f'<div><h4>Raw model output{tokens}{finish}</h4><pre class="raw">{_block(_clip(sample.raw))}</pre></div>')
    body.append(f'<details><summary class="sub">Prompt</summary><pre class="prompt">{prompt_block}</pre></details>')
    return (f'<details class="sample" data-status="{_e(sample.status)}" data-flagged="{"1" if sample.flags else "0"}" '
            f'data-problem="{_e(sample.task_id)}" id="{_e(f"s-{sample.task_id}-{sample.completion_id}")}">'
            f'<summary><span class="id">{_e(sample.task_id)} #{_e(sample.completion_id)}</span>'
            f'<span class="verdict {status_cls}">{_e(sample.status)}</span>'
            f'<span class="sub">{_e(sample.result if sample.status != "passed" else "")}</span>'
            f'<span class="sub">{sample.duration_s:.2f} s</span>{flags}</summary>'
            f'<div class="body">{"".join(body)}</div></details>')


def _viewer(samples: Sequence[SampleView], prompts: Mapping[str, str]) -> str:
    shown = _shown(samples)
    counts = {"all": len(shown), "failed": sum(s.status == "failed" for s in shown),
              "timed out": sum(s.status == "timed out" for s in shown), "flagged": sum(bool(s.flags) for s in shown),
              "passed": sum(s.status == "passed" for s in shown)}
    buttons = "".join(f'<button type="button" data-filter="{_e(key)}" aria-pressed="{"true" if key == "all" else "false"}">'
                      f'{_e(key.capitalize())} <span class="sub">{counts[key]}</span></button>'
                      for key in ("all", "failed", "timed out", "flagged", "passed"))
    note = ("" if len(shown) == len(samples) else
            f'<p class="sub">Showing {len(shown)} of {len(samples)} samples: at most {MAX_SAMPLES_PER_PROBLEM} per '
            'problem, flagged, failed and timed out first. Every sample is in completions.jsonl and results.jsonl.</p>')
    prompt_blocks = {task_id: _block(_clip(prompts.get(task_id, ""))) for task_id in {s.task_id for s in shown}}
    items = "".join(_sample(s, prompt_blocks[s.task_id]) for s in shown)
    options = "".join(f'<option value="{_e(task_id)}">' for task_id in prompts)
    return (f'<h2 id="samples">Samples</h2><div class="toolbar"><div class="filters" id="filters">{buttons}</div>'
            f'<label>Problem <input type="search" id="problem" placeholder="e.g. HumanEval/3" list="problem-ids">'
            f'</label><span class="sub" id="shown-count"></span></div>{note}'
            f'<datalist id="problem-ids">{options}</datalist>'
            f'<div id="sample-list">{items}</div>'
            '<p class="empty" id="no-samples" hidden>No sample matches these filters.</p>')


JS = """
(function () {
  var filter = "all", problem = "";
  var samples = Array.prototype.slice.call(document.querySelectorAll("details.sample"));
  var buttons = Array.prototype.slice.call(document.querySelectorAll("#filters button"));
  var search = document.getElementById("problem"), count = document.getElementById("shown-count");
  function matches(node) {
    var status = node.getAttribute("data-status");
    var ok = filter === "all" || (filter === "flagged" ? node.getAttribute("data-flagged") === "1" : status === filter);
    return ok && (!problem || node.getAttribute("data-problem") === problem);
  }
  function apply() {
    var shown = 0;
    samples.forEach(function (node) { var ok = matches(node); node.hidden = !ok; if (ok) shown++; });
    buttons.forEach(function (b) { b.setAttribute("aria-pressed", b.getAttribute("data-filter") === filter ? "true" : "false"); });
    document.querySelectorAll(".chip").forEach(function (chip) {
      chip.classList.toggle("active", chip.getAttribute("data-problem") === problem);
    });
    count.textContent = shown + " shown";
    document.getElementById("no-samples").hidden = shown > 0;
    var hash = "#filter=" + encodeURIComponent(filter) + (problem ? "&problem=" + encodeURIComponent(problem) : "");
    try { history.replaceState(null, "", hash); } catch (e) { /* file:// in some browsers */ }
  }
  buttons.forEach(function (b) { b.addEventListener("click", function () { filter = b.getAttribute("data-filter"); apply(); }); });
  search.addEventListener("input", function () { problem = search.value.trim(); apply(); });
  document.querySelectorAll(".chip").forEach(function (chip) {
    chip.addEventListener("click", function () {
      var id = chip.getAttribute("data-problem");
      problem = problem === id ? "" : id; search.value = problem; filter = "all"; apply();
      document.getElementById("samples").scrollIntoView();
    });
  });
  document.querySelectorAll("[data-problem-link]").forEach(function (a) {
    a.addEventListener("click", function (event) {
      event.preventDefault(); problem = a.getAttribute("data-problem-link"); search.value = problem; filter = "all"; apply();
      document.getElementById("samples").scrollIntoView();
    });
  });
  location.hash.replace(/^#/, "").split("&").forEach(function (part) {  // links: report.html#filter=failed&problem=X
    var kv = part.split("="), value = decodeURIComponent(kv[1] || "");
    if (kv[0] === "filter" && ["all", "failed", "timed out", "flagged", "passed"].indexOf(value) >= 0) filter = value;
    if (kv[0] === "problem") { problem = value; search.value = value; }
  });
  apply();
  document.body.setAttribute("data-ready", "true");
})();
"""


def render_run_page(header: RunHeader, summary: ScoreSummary, samples: Sequence[SampleView],
                    prompts: Mapping[str, str]) -> str:
    flagged: dict[str, int] = {}
    for sample in samples:
        if sample.flags:
            flagged[sample.task_id] = flagged.get(sample.task_id, 0) + 1
    badges = "".join(f'<span class="badge {"partial" if b.startswith("partial") else "setting"}">{_e(b)}</span>'
                     for b in header.badges)
    back = safe_href(header.leaderboard_page)
    crumb = f'<p class="crumb"><a href="{_e(back)}">← Leaderboard</a></p>' if back else ""
    details = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in header.details.items())
    body = (f'<header>{crumb}<h1>{_e(header.model)}{badges}</h1><p class="meta">{_e(header.task)} · run '
            f'<code>{_e(header.run_id)}</code>' + (f' · {_e(header.model_id)}' if header.model_id else "") + '</p></header>'
            f'<main>{_stats(summary, sum(flagged.values()))}'
            f'<div class="row2">{_curve(summary)}'
            f'{_problems(summary.per_problem, summary.timed_out_per_problem, flagged)}</div>'
            f'{_viewer(samples, prompts)}'
            + (f'<h2>Run</h2><section class="card"><dl class="kv">{details}</dl></section>' if details else "")
            + '</main>' + footer("Verdicts come from the trusted checker outside the sandbox; an error message is the "
                                 "sample's own text, shown as text. "))
    return shell(f"{header.model} on {header.task} · evalsuite", body, JS)


def write_run_page(folder: str | Path, header: RunHeader, summary: ScoreSummary, samples: Sequence[SampleView],
                   prompts: Mapping[str, str]) -> Path:
    path = Path(folder) / PAGE_FILE
    atomic_write_text(path, render_run_page(header, summary, samples, prompts))
    return path


VIEW = RunView("run page", PAGE_FILE, lambda report: render_run_page(report.header, report.summary, report.samples,
                                                                     report.prompts))
