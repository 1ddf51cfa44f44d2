"""Progress a person can watch: tokens, rate and ETA before the first completion is out, an ETA that
does not say "0 s" while work is left, and one warning when decoding is far below the expected rate."""

from __future__ import annotations

import json
from unittest import mock

from tqdm import tqdm

from evalsuite.cli import main
from evalsuite.progress import TokenProgress


def progress(total: int = 5, max_new_tokens: int = 512, expected: float | None = None) -> TokenProgress:
    return TokenProgress(tqdm(total=total, disable=True), total, max_new_tokens, expected)


def test_eta_before_any_completion_uses_half_the_token_limit(monkeypatch):
    tracker = progress()
    with mock.patch.object(TokenProgress, "rate", lambda self: 2.0):
        tracker.on_tokens(10)
        assert tracker.eta_s() is None  # the first second: the rate still holds the prefill's wait
        monkeypatch.setattr(TokenProgress, "SETTLE_S", 0.0)
        assert tracker.eta_s() == (5 * (2 + 512) / 2 - 10) / 2.0  # 2 tokens a row so far: half-way to the limit


def test_the_short_completions_that_finish_first_do_not_make_the_eta_a_second():
    """64 rows of at most 300 tokens decoding together; the first two to finish took 5 and 8 tokens while the
    others have about 51 each. The mean of the finished said "ETA ~1 s" with 7 s to go (the twentieth session's
    run-path round); they are shorter than the running rows, so they say nothing of them."""
    tracker = progress(total=64, max_new_tokens=300)
    with mock.patch.object(TokenProgress, "rate", lambda self: 1594.0):
        tracker.on_tokens(3181)
        tracker.on_completion(5)
        tracker.on_completion(8)
        assert 4.0 < tracker.eta_s() < 8.0
        for _ in range(30):  # later, long finished ones are what the running ones are expected to take
            tracker.on_completion(120)
        tracker.on_tokens(32 * 120 - 3181 + 32 * 100)
        assert abs(tracker.eta_s() - 32 * 20 / 1594.0) < 1.0


def test_a_short_first_completion_does_not_make_the_eta_zero():
    """5 rows decoding together: one finishes after 40 tokens while 120 more are spread over the other 4."""
    tracker = progress()
    with mock.patch.object(TokenProgress, "rate", lambda self: 1.4):
        tracker.on_tokens(160)
        tracker.on_completion(40)
        eta = tracker.eta_s()
    assert eta > 30  # the four others, each at least as long as it already is (old estimate: 0 s)
    with mock.patch.object(TokenProgress, "rate", lambda self: 1.4):
        for _ in range(4):
            tracker.on_completion(30)
        assert tracker.eta_s() == 0.0


def test_a_backend_that_reports_no_running_tokens_gets_the_completions_pace():
    """A server says nothing until a completion ends: 7-token answers at 1.5 s each under a 512-token limit said
    "ETA ~8 min" for a 10 s job (each running one taken as half-way to the limit)."""
    tracker = progress(total=8, max_new_tokens=512)
    assert tracker.eta_s() is None  # nothing out yet: no pace to go by
    with mock.patch("evalsuite.progress.time.perf_counter", lambda: tracker.started + 3.0):
        tracker.on_completion(7)
        tracker.on_completion(7)
        assert tracker.eta_s() == 6 * 3.0 / 2  # 1.5 s a completion, 6 left


def test_one_warning_when_decoding_is_far_below_the_expected_rate(monkeypatch):
    monkeypatch.setattr(TokenProgress, "SLOW_AFTER_S", 0.0)
    slow = progress(expected=100.0)
    with mock.patch.object(TokenProgress, "rate", lambda self: 5.0):
        slow.on_tokens(5)
        first = slow.slow_warning
        slow.on_tokens(5)
    assert first and "20x below" in first and "busy" in first and slow.slow_warning == first
    fine = progress(expected=10.0)
    with mock.patch.object(TokenProgress, "rate", lambda self: 5.0):
        fine.on_tokens(5)
    assert fine.slow_warning is None  # within the speed model's slack


def test_a_real_cpu_run_shows_rate_and_eta_and_records_threads(tiny_model_dir, tmp_path, capsys):
    model = tiny_model_dir("llama")
    assert main(["run", "--models", str(model), "--limit", "2", "--n", "2", "--temperature", "0.8",
                 "--max-new-tokens", "24", "--device", "cpu", "--threads", "1", "--no-leaderboard",
                 "--output", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "tok/s" in err and "ETA ~" in err
    (record_path,) = tmp_path.glob("*/record.json")
    record = json.loads(record_path.read_text())
    assert record["model"]["cpu_threads"] == 1 and record["generation_options"]["threads"] == 1


def test_ctrl_c_inside_a_batch_keeps_the_rows_that_had_ended(tiny_model_dir):
    """Plain generate decodes a whole batch in one call: a Ctrl-C in it must still keep the rows that had
    ended ('Ctrl-C after 2 minutes kept nothing'), each equal to what an uninterrupted run makes."""
    import pytest

    from evalsuite.generation import GenerationOptions, load_generator

    from evalsuite.models.options import LoadingOptions

    from evalsuite.generation.options import HFOptions
    from evalsuite.records import GenerationRequest, SamplingParams

    generator = load_generator(str(tiny_model_dir("gpt2")),
                               GenerationOptions(loading=LoadingOptions(device="cpu"), hf=HFOptions(batch_size=8, engine="transformers", threads=1)))
    stops = ("e", "a", "o", "i")  # letters a random model writes early: those rows end within a few steps
    requests = [GenerationRequest(task_id=f"t/{i}", prompt=f"def f{i}():\n", sample_indices=(0,),
                                  stop_sequences=(stops[i // 2],) if i % 2 == 0 else ()) for i in range(8)]
    params = SamplingParams(max_new_tokens=48)
    clean = {c.task_id: c for c in generator.generate(requests, params)}
    ended_early = {c.task_id for c in clean.values() if c.finish_reason == "stop" and c.num_tokens < 30}
    assert ended_early, "the stop letters should end some rows early"

    steps = []

    def interrupt_at_step_40(count: int) -> None:
        steps.append(count)
        if len(steps) == 40:
            raise KeyboardInterrupt

    generator.token_listener = interrupt_at_step_40
    kept = []
    with pytest.raises(KeyboardInterrupt):
        for completion in generator.generate(requests, params):
            kept.append(completion)
    assert {c.task_id for c in kept} >= ended_early
    assert all(c == clean[c.task_id] for c in kept)
    assert len(kept) < len(requests)  # the rows still decoding were not made up
