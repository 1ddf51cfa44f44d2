"""HumanEval+ and MBPP+ as EvalPlus scores them (``--preset evalplus``): the data files, the MBPP+ input decoding and
the base and plus verdicts, each against EvalPlus 0.3.1's own code (the installed package, or its wheel unpacked).

The probe programs are ``tests/parity_evalplus_plus.py``'s (without its timing probes, which take minutes):
float answers near the tolerance, answers that differ only in type, exceptions, load errors, wrong answers only on
plus inputs, EvalPlus's special oracles. EvalPlus runs through its Python API (``check_correctness``, the function
``evalplus.evaluate`` calls per sample), evalsuite through the sandbox.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "evalsuite" / "tasks" / "builtin" / "data"


def test_data_files_are_what_the_readme_records():
    readme = (DATA / "README.md").read_text()
    for name, problems in (("HumanEvalPlus-2023-04.jsonl.gz", 164), ("MbppPlus-2023-11.jsonl.gz", 399)):
        text = gzip.decompress((DATA / name).read_bytes())
        assert hashlib.sha256(text).hexdigest() in readme
        assert len(text.decode().splitlines()) == problems


def test_mbpp_inputs_decode_as_evalplus_decodes_them(evalplus):
    from evalplus.data.mbpp import mbpp_deserialize_inputs as theirs

    from evalsuite.tasks.evalplus_tasks import mbpp_deserialize_inputs as ours

    text = gzip.decompress((DATA / "MbppPlus-2023-11.jsonl.gz").read_bytes())
    rows = [json.loads(line) for line in text.splitlines()]
    for row in rows:
        for field in ("base_input", "plus_input"):
            mine, peer = ours(row["task_id"], json.loads(json.dumps(row[field]))), theirs(row["task_id"], row[field])
            assert repr(mine) == repr(peer), (row["task_id"], field)  # repr: types too (tuple vs list, 1 vs 1.0)


def test_preset_evalplus_swaps_the_plus_tasks_and_keeps_the_others():
    from evalsuite.protocol.presets import load_preset
    from evalsuite.tasks.discovery import TaskRegistry
    from evalsuite.tasks.evalplus_tasks import EvalPlusTask, for_evaluation

    registry = TaskRegistry.discover([])
    evaluation = load_preset("evalplus").evaluation
    assert evaluation == "evalplus" and load_preset("bigcode").evaluation == ""
    swapped = {name: for_evaluation(registry.get(name), evaluation)
               for name in ("humaneval-plus", "mbpp-plus", "humaneval")}
    assert isinstance(swapped["humaneval-plus"], EvalPlusTask) and isinstance(swapped["mbpp-plus"], EvalPlusTask)
    assert not isinstance(swapped["humaneval"], EvalPlusTask)
    assert not isinstance(for_evaluation(registry.get("mbpp-plus"), ""), EvalPlusTask)  # bigcode's check stays
    mbpp = swapped["mbpp-plus"].problems()
    assert len(mbpp) == 399 and mbpp[0].prompt.startswith('"""\nWrite a function to find the shared elements')
    assert "assert similar_elements((3, 4, 5, 6),(5, 7, 4, 10)) == (4, 5)" in mbpp[0].prompt  # the file's first assert


@pytest.mark.parametrize("dataset", ["humaneval", "mbpp"])
def test_probe_programs_get_evalplus_verdicts_base_and_plus(evalplus, dataset):
    import parity_evalplus_plus as parity

    rows = parity.HUMANEVAL_ROWS if dataset == "humaneval" else parity.MBPP_ROWS
    programs = parity.he_programs(slow=False) if dataset == "humaneval" else parity.mbpp_programs()
    report = parity.compare(dataset, rows, programs, workers=2, api=True)
    unexplained = [c for c in report["cases"] if not c["agree_pass"] and not c["known"]]
    assert unexplained == []
    statuses = [c for c in report["cases"] if c["agree_pass"] and not c["agree_status"] and not c.get("known")]
    assert statuses == []
    # the probes do probe: both verdicts occur, and plus fails where base passes
    peer = [c["evalplus"] for c in report["cases"]]
    assert any(p["base"] == "pass" and p["plus"] == "pass" for p in peer)
    assert any(p["base"] == "pass" and p["plus"] != "pass" for p in peer)
    assert sum(p["base"] != "pass" for p in peer) >= 5
    # the known differences are still differences (else the list would hide a fixed one)
    assert all(not c["agree_pass"] for c in report["cases"] if (c["task_id"], c["program"]) in parity.KNOWN)


IO = {"dataset": "mbpp", "entry_point": "similar_elements", "atol": 0, "fast_check": True,
      "sets": [{"name": "base", "inputs": [[[1, 2], [2]], [[3], [3, 4]], [[5], [6]]], "expected": [(2,), (3,), ()],
                "time_limits": [1.0, 1.0, 1.0]},
               {"name": "plus", "inputs": [[[7, 8], [8]]], "expected": [(8,)], "time_limits": [1.0]}]}


def _run_io(candidates: dict[str, str]) -> dict:
    import sandbox

    jobs = [sandbox.Job(i, "io/similar", source, "", "", timeout_s=20, io=IO, io_digest="t")
            for i, source in enumerate(candidates.values())]
    with sandbox.Executor(workers=2, timeout_s=5) as executor:
        outcomes = sorted(executor.run(jobs), key=lambda o: o.job_id)
    return dict(zip(candidates, outcomes))


def test_io_calls_do_not_depend_on_the_answers_and_forged_replies_fail():
    """The sample is called on every input whatever it answered (a wrong answer decides the verdict, as EvalPlus's
    early stop, but the calls go on); a call over its limit is ended by EvalPlus's timer inside the sample. Forged
    frames and a "reduced" reply to a call that did not ask for one are channel tampering; a set reduction of a
    non-plain answer is compared, not trusted."""
    out = _run_io({
        "right": "def similar_elements(a, b):\n    return tuple(set(a) & set(b))\n",
        "wrong": "def similar_elements(a, b):\n    return (99,)\n",
        "filter": "def similar_elements(a, b):\n    return filter(lambda x: x in b, a)\n",
        "slow-second": "import time\nn = 0\ndef similar_elements(a, b):\n    global n\n    n += 1\n"
                       "    if n == 2:\n        time.sleep(3)\n    return tuple(set(a) & set(b))\n",
        "garbage": "import os\nfor fd in range(3, 40):\n    try:\n        os.write(fd, b'\\x00\\x00\\x00\\x05hello')\n"
                   "    except OSError:\n        pass\ndef similar_elements(a, b):\n    return ()\n",
    })
    assert out["right"].passed and out["right"].sets["plus"]["status"] == "pass"
    assert out["wrong"].sets["base"]["status"] == "fail" and out["wrong"].sets["base"]["failed_input"] == 0
    assert out["wrong"].sets["base"]["calls"] == out["right"].sets["base"]["calls"] == 3
    assert out["filter"].passed  # EvalPlus: set(filter(...)) == set(expected)
    slow = out["slow-second"].sets["base"]
    # EvalPlus's timer ends the slow call inside the sample, which goes on answering: every input is still called
    assert (slow["status"], slow["reason"], slow["failed_input"], slow["calls"]) == ("fail", "timed out", 1, 3)
    assert out["slow-second"].sets["plus"]["status"] == "pass"  # plus runs in a fresh process, as in EvalPlus
    assert not out["garbage"].passed and "channel_tampered" in out["garbage"].flags


def test_a_reduced_reply_is_accepted_only_for_a_set_call():
    import os
    import socket
    import time

    from sandbox import channel, wire

    ours, theirs = socket.socketpair()
    client = channel.CallClient(ours.fileno(), deadline=time.monotonic() + 5)
    body = wire.encode(("reduced", 1, {1, 2}))
    os.write(theirs.fileno(), len(body).to_bytes(4, "big") + body)
    with pytest.raises(channel.ChannelFailure):
        client.call("f", (1,), {})  # mode "": a reduced reply is forged
    assert client.failure == ("channel tampered", "channel_tampered")
    ours2, theirs2 = socket.socketpair()
    client = channel.CallClient(ours2.fileno(), deadline=time.monotonic() + 5)
    os.write(theirs2.fileno(), len(body).to_bytes(4, "big") + body)
    assert client.call("f", (1,), {}, mode="set") == {1, 2} and client.reduced
    for sock in (ours, theirs, ours2, theirs2):
        sock.close()


@pytest.mark.parametrize("dataset", ["humaneval", "mbpp"])
def test_real_problems_canonical_and_broken_agree_with_evalplus(evalplus, dataset):
    """A slice of the real data: each problem's ground truth as a program and two broken versions of it."""
    import parity_evalplus_plus as parity

    rows = parity.real_rows(dataset, limit=6)
    report = parity.compare(dataset, rows, parity.real_programs(rows), workers=2, api=True)
    assert all(c["agree_pass"] and c["agree_status"] for c in report["cases"]), \
        [c for c in report["cases"] if not (c["agree_pass"] and c["agree_status"])]
    assert sum(c["evalplus"]["base"] == "pass" for c in report["cases"]) >= 6


def test_base_and_plus_pass_at_k_are_scored_apart_and_reach_the_leaderboard():
    from evalsuite.records import SampleResult, SetVerdict
    from evalsuite.reporting.entries import entry_from_run
    from evalsuite.scoring import score

    def result(task_id: str, base: str, plus: str) -> SampleResult:
        return SampleResult(task_id, 0, base == plus == "pass", "passed" if base == plus == "pass" else "failed", 0.1,
                            sets={"base": SetVerdict(base), "plus": SetVerdict(plus)})

    results = [result("A", "pass", "pass"), result("B", "pass", "fail"), result("C", "fail", "pass"),
               result("D", "fail", "fail")]
    scored = score(results, [1])
    assert scored.pass_at[1].value == 0.25  # EvalPlus's "+": base and plus
    assert scored.sets["base"].pass_at[1].value == 0.5 and scored.sets["plus"].n_passed == 1
    summary = scored.summary_json()
    assert summary["sets"]["base"]["pass@1"] == 0.5 and summary["sets"]["plus"]["pass@1"] == 0.25
    run = {"model": "m", "model_id": "m", "task": "humaneval-plus", "dataset_sha256": "0" * 64,
           "prompt_template": "{prompt}", "sampling": {"n": 1, "temperature": 0.0, "top_p": 1.0, "top_k": 0,
                                                      "max_new_tokens": 768, "seed": 0},
           "run_id": "r", "hardware": "cpu"}
    for form in (scored, summary):
        entry = entry_from_run({**run, "score": form})
        assert entry.metrics["pass@1"].value == 0.25 and entry.base_metrics["pass@1"].value == 0.5
        assert entry.to_json()["base_metrics"]["pass@1"]["value"] == 0.5
    from evalsuite.reporting.views.leaderboard_page import _pct, render_html

    page = render_html([entry])
    assert f"base {_pct(0.5)}" in page and _pct(0.25) in page  # the plus figure ranks, the base one beside it
    plain = [SampleResult(r.task_id, 0, r.passed, r.status, 0.1) for r in results]  # a task scored one way
    assert "base " not in render_html([entry_from_run({**run, "task": "humaneval", "score": score(plain, [1])})])
    from pathlib import Path

    from evalsuite.runs.results import task_score

    where = dict(model="m", model_id="m", task="humaneval-plus", n=1, n_problems_in_task=4, run_id="r",
                 run_dir=Path("r"), summary_path=Path("r/summary.json"), report=Path("r/report.html"))
    printed = task_score(scored, **where).to_json()  # what --json and the Python API give
    assert printed["base_pass_at"]["pass@1"]["value"] == 0.5 and printed["pass_at"]["pass@1"]["value"] == 0.25
    assert "base_pass_at" not in task_score(score(plain, [1]), **where).to_json()
    from evalsuite.reporting.views.contract import RunHeader
    from evalsuite.reporting.views.run_page import render_run_page
    from evalsuite.scoring import ScoreSummary

    for form in (scored.summary(), ScoreSummary.from_json(summary)):  # as scored, and as read back from the file
        run_page = render_run_page(RunHeader(model="m", task="humaneval-plus", run_id="r"), form, [], {})
        assert "base 50.0%" in run_page and "25.0%" in run_page
    plain_page = render_run_page(RunHeader(model="m", task="humaneval", run_id="r"), score(plain, [1]).summary(),
                                 [], {})
    assert "base " not in plain_page


@pytest.mark.parametrize("dataset", ["humaneval", "mbpp"])
def test_evaluate_with_the_evalplus_preset_gives_evalplus_verdicts_on_a_samples_file(evalplus, dataset, tmp_path):
    """``evalsuite evaluate SAMPLES --tasks humaneval-plus --preset evalplus``: an EvalPlus user's samples file
    (``solution`` rows, or ``completion`` rows that EvalPlus runs after the prompt) gets each sample's base and
    plus verdicts from EvalPlus's own code, and pass@k both ways."""
    import tempfile

    import parity_evalplus_plus as parity

    import evalsuite

    rows = parity.real_rows(dataset, limit=4)
    programs = parity.real_programs(rows)
    kinds = [("solution", [{"task_id": t, "solution": p} for t, _, p in programs], programs)]
    if dataset == "humaneval":
        completions = [(r["task_id"], text) for r in rows for text in (r["canonical_solution"], "    return None\n")]
        by_id = {r["task_id"]: r for r in rows}
        kinds.append(("completion", [{"task_id": t, "completion": c} for t, c in completions],
                      [(t, "completion", by_id[t]["prompt"] + c) for t, c in completions]))
    for kind, samples, peer_programs in kinds:
        path = tmp_path / f"{kind}.jsonl"
        path.write_text("".join(json.dumps(sample) + "\n" for sample in samples))
        result = evalsuite.evaluate(str(path), output=str(tmp_path / kind), task=f"{dataset}-plus", preset="evalplus",
                                    quiet=True)
        with tempfile.TemporaryDirectory() as folder:
            data = Path(folder) / f"{dataset}.jsonl.gz"
            parity.write_jsonl_gz(data, rows)
            theirs = parity.run_evalplus_api(dataset, data, peer_programs)
        ours = [json.loads(line) for line in (tmp_path / kind / "results.jsonl").read_text().splitlines()]
        assert [(r["sets"]["base"]["status"], r["sets"]["plus"]["status"]) for r in ours] == \
            [(t["base_status"], t["plus_status"]) for t in theirs], kind
        plus = sum(t["base_status"] == t["plus_status"] == "pass" for t in theirs) / len(theirs)
        base = sum(t["base_status"] == "pass" for t in theirs) / len(theirs)
        score = result.scores[0]
        assert result.ks == [1] and score.n == len(samples) // len(rows)  # the preset's k; every problem's samples
        assert score["pass@1"] == pytest.approx(plus) and score.base_pass_at[1].value == pytest.approx(base)


@pytest.mark.parametrize("out, exp", [
    ([[]], [0.5]), ([[0.5], [0.5]], [0.5]), ([0.5, 0.5], [0.5]), ([], [0.5]), (0.5, [0.5, 0.50000001]),
    ([0.5], 0.5), ([[1.0, 2.0]], [[1.0], [2.0]]), ([1.0, 2.0, 3.0], [1.0, 2.0]), ([[1.0], [2.0, 3.0]], [1.0]),
    (float("nan"), float("nan")), (float("inf"), float("inf")), (float("-inf"), float("inf")), (1 + 2j, 1 + 2j),
    ([True, 2], [1, 2.0000001]), ((1.0, 2.0), [1.0, 2.0]), ([[[]]], []), ([0.1 + 0.2], [0.3]), ("a", "a"),
])
def test_the_numpy_free_allclose_gives_numpys_answer(out, exp):
    """The checker's rule where NumPy is missing follows numpy.allclose, broadcasting included (EvalPlus's
    verdict: ``[[]]`` against ``[0.5]`` compares nothing and passes), so a verdict does not depend on NumPy."""
    numpy = pytest.importorskip("numpy")

    from sandbox.differential import _allclose

    def verdict(function):
        try:
            return bool(function(out, exp, rtol=1e-07, atol=1e-6))
        except (TypeError, ValueError) as exc:
            return "TypeError" if isinstance(exc, TypeError) else "ValueError"  # NumPy: DTypePromotionError...

    theirs = verdict(lambda a, b, rtol, atol: numpy.allclose(a, b, rtol=rtol, atol=atol))
    ours = verdict(lambda a, b, rtol, atol: _allclose(a, b, rtol, atol))
    assert ours == theirs


def test_a_traceback_printed_under_evalplus_guard_is_no_failure(tmp_path):
    """EvalPlus's guard removes open after tokenize was imported (numpy imports it), so printing a traceback
    works there; here tokenize was first imported after it, bound None, and the sample failed (TypeError)."""
    import parity_evalplus_plus as parity

    rows = parity.real_rows("humaneval", limit=24)[23:24]  # HumanEval/23, strlen
    body = ("    import json, traceback, inspect\n    try:\n        json.loads('{bad')\n    except ValueError:\n"
            "        traceback.print_exc()\n    inspect.stack()\n    return len(string)\n")
    program = rows[0]["prompt"] + body
    data = tmp_path / "humaneval.jsonl.gz"
    parity.write_jsonl_gz(data, rows)
    [result] = parity.run_evalsuite("humaneval", data, [(rows[0]["task_id"], "traceback", program)], workers=1)
    assert (result["base"]["status"], result["plus"]["status"]) == ("pass", "pass"), result


def test_counter_and_ordered_dict_expected_outputs_cross_marshal_as_themselves():
    """The ground-truth script (run isolated, apart from its package) tags them, the checker rebuilds them: both
    sides hold the same tag, and a nested Counter with a zero count comes back as a Counter in its order."""
    import collections
    import marshal

    from sandbox import differential, groundtruth

    assert groundtruth.TYPE_TAG == differential.TYPE_TAG
    moved = collections.OrderedDict([("a", 1), ("b", 2)])
    moved.move_to_end("a")
    value = [collections.Counter({"x": 2, "zero": 0}), (moved, collections.defaultdict(int, k=1)), {"plain": [1]}]
    typed = [False]
    back = differential.restore_types(marshal.loads(marshal.dumps(groundtruth.plain(value, typed))))
    assert typed[0] and back == value
    assert type(back[0]) is collections.Counter and back[0] == collections.Counter({"x": 2})
    assert type(back[1][0]) is collections.OrderedDict and list(back[1][0]) == ["b", "a"]
    assert type(back[1][1]) is dict and type(back[2]) is dict
    untyped = [False]
    assert differential.restore_types(groundtruth.plain([{"a": (1,)}], untyped)) == [{"a": (1,)}] and not untyped[0]


def test_an_mbpp_program_sees_evalplus_mbpp_command_line():
    """EvalPlus's command for MBPP+ is ``evalplus.evaluate --dataset mbpp``; the sample's argv said ``humaneval``,
    so a program reading it took the other branch (the twenty-third session's parity round, against the CLI)."""
    reads = ("import argparse\n_p = argparse.ArgumentParser(add_help=False)\n_p.add_argument('--dataset')\n"
             "_d = _p.parse_known_args()[0].dataset\n"
             "def similar_elements(a, b):\n    return tuple(set(a) & set(b)) if _d == {!r} else ()\n")
    outcomes = _run_io({"mbpp": reads.format("mbpp"), "humaneval": reads.format("humaneval")})
    assert outcomes["mbpp"].passed and not outcomes["humaneval"].passed, outcomes
