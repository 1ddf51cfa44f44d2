"""The openai backend against real HTTP servers on 127.0.0.1.

* ``transformers serve`` running a tiny GPT-2-family checkpoint on CPU: the same greedy completions as
  our hf backend gives for that checkpoint, stop sequences applied, n samples per prompt.
* a scripted ``http.server`` for what a healthy model server rarely does on demand: 429/5xx answers
  (retried with backoff), 4xx answers (not retried), slow answers (concurrency limit), API keys.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.generation import GenerationOptions, load_generator
from evalsuite.generation.options import OpenAIOptions
from evalsuite.models.options import LoadingOptions
from evalsuite.generation.openai_backend import OpenAIGenerator, RetryPolicy
from evalsuite.records import GenerationRequest, SamplingParams
from evalsuite.tasks.task import DEFAULT_STOP_SEQUENCES
from tiny_models import humaneval_prompts

SERVE_STARTUP_S = 90


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def served_gpt2(tiny_model_dir, tmp_path_factory):
    """``transformers serve <tiny gpt2 dir>`` on a free port; yields (base_url, model_dir)."""
    pytest.importorskip("fastapi", reason="transformers serve needs the 'serve' extra (transformers[serving])")
    pytest.importorskip("uvicorn", reason="transformers serve needs the 'serve' extra (transformers[serving])")
    model_dir = tiny_model_dir("gpt2")
    port = free_port()
    cache = tmp_path_factory.mktemp("hf-cache")  # an empty hub cache: /v1/models scans it
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache), "TRANSFORMERS_VERBOSITY": "error"}
    log = open(tmp_path_factory.mktemp("serve-log") / "serve.log", "w+")
    command = [str(Path(sys.executable).parent / "transformers"), "serve", str(model_dir), "--host", "127.0.0.1",
               "--port", str(port), "--device", "cpu", "--log-level", "error"]
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + SERVE_STARTUP_S
        while True:
            if process.poll() is not None:
                log.seek(0)
                pytest.fail(f"transformers serve exited with {process.returncode}:\n{log.read()[-3000:]}")
            try:
                urllib.request.urlopen(base_url + "/models", timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("transformers serve did not answer within {SERVE_STARTUP_S} s")
                time.sleep(0.3)
        yield base_url, model_dir
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def prompts(count: int) -> list[tuple[str, str]]:
    return list(humaneval_prompts()[:count])


def test_greedy_matches_the_hf_backend_on_the_same_checkpoint(served_gpt2):
    base_url, model_dir = served_gpt2
    params = SamplingParams(n=2, max_new_tokens=16)
    local_generator = load_generator(str(model_dir), GenerationOptions(loading=LoadingOptions(device="cpu")))
    free = list(local_generator.generate([GenerationRequest(tid, p, (0,)) for tid, p in prompts(4)], params))
    text = max((c.text for c in free), key=len)
    stop = next(text[k:k + 2] for k in range(3, len(text)) if text[k:k + 2].isascii() and text[k:k + 2].strip()
                and text[k:k + 2].isprintable() and text.find(text[k:k + 2]) == k)  # a stop it really emits
    requests = [GenerationRequest(tid, p, (0, 1), stop_sequences=DEFAULT_STOP_SEQUENCES + (stop,))
                for tid, p in prompts(4)]
    served = load_generator(str(model_dir), GenerationOptions(backend="openai", openai=OpenAIOptions(base_url=base_url, concurrency=2)))
    remote = {(c.task_id, c.sample_index): c for c in served.generate(requests, params)}
    local = {(c.task_id, c.sample_index): c for c in local_generator.generate(requests, params)}
    assert len(remote) == 8
    assert {k: c.text for k, c in remote.items()} == {k: c.text for k, c in local.items()}
    assert any(c.finish_reason == "stop" and c.text != "" for c in remote.values())
    for completion in remote.values():
        assert not any(s in completion.text for s in requests[0].stop_sequences)
    described = served.describe()
    assert described["backend"] == "openai" and described["base_url"] == base_url


def test_sampling_gives_n_completions_per_prompt(served_gpt2):
    base_url, model_dir = served_gpt2
    served = load_generator(str(model_dir), GenerationOptions(backend="openai", openai=OpenAIOptions(base_url=base_url)))
    params = SamplingParams(n=3, temperature=0.9, max_new_tokens=8, seed=1)
    requests = [GenerationRequest(tid, p, (0, 1, 2)) for tid, p in prompts(2)]
    out = list(served.generate(requests, params))
    assert sorted((c.task_id, c.sample_index) for c in out) == [(tid, i) for tid, _ in prompts(2) for i in range(3)]
    assert all(c.num_tokens > 0 for c in out)


# -- a scripted server ------------------------------------------------------------------------------
class ScriptedServer:
    """A real HTTP server on 127.0.0.1: answers POST /v1/completions with the next status in ``script``
    (then 200s), records every request and how many were in flight at once."""

    def __init__(self, script=(), delay_s: float = 0.0, retry_after: str | None = None,
                 text: str = "    return {i}\ndef more():", choice=None, usage=None, delays=()):
        self.script = list(script)
        self.delays = list(delays)  # per request, in arrival order (then delay_s)
        self.text = text
        self.choice = choice  # index -> the choice to send (default: text, finish_reason stop)
        self.usage = {"completion_tokens": 5} if usage is None else usage
        self.delay_s = delay_s
        self.retry_after = retry_after
        self.requests: list[tuple[dict, dict]] = []
        self.paths: list[str] = []
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, payload, headers=()):
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for key, value in headers:
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self._send(200, {"object": "list", "data": [{"id": "scripted"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append((dict(self.headers), body))
                    server.paths.append(self.path)
                    status = server.script.pop(0) if server.script else 200
                    delay = server.delays.pop(0) if server.delays else server.delay_s
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    time.sleep(delay)
                    if status != 200:
                        headers = [("Retry-After", server.retry_after)] if server.retry_after and status == 429 else []
                        self._send(status, {"error": {"message": f"scripted {status}"}}, headers)
                        return
                    if self.path.endswith("/chat/completions"):
                        answer = f"Sure:\n```python\ndef f():\n    return 7\n```\nprint(f())"
                        choices = [{"index": i, "message": {"role": "assistant", "content": answer},
                                    "finish_reason": "stop"} for i in range(body.get("n", 1))]
                    elif server.choice is not None:
                        choices = [server.choice(i) for i in range(body.get("n", 1))]
                    else:
                        choices = [{"index": i, "text": server.text.format(i=i), "finish_reason": "stop"}
                                   for i in range(body.get("n", 1))]
                    self._send(200, {"choices": choices, "usage": server.usage})
                finally:
                    with server.lock:
                        server.in_flight -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def one_request(n=1):
    return [GenerationRequest("t/0", "def f():\n", tuple(range(n)), stop_sequences=("\ndef",))]


def test_429_and_5xx_are_retried_with_backoff():
    with ScriptedServer(script=[429, 503, 502], retry_after="0.2") as server:
        generator = OpenAIGenerator("scripted", server.base_url, retry=RetryPolicy(base_delay_s=0.05))
        started = time.monotonic()
        [completion] = generator.generate(one_request(), SamplingParams())
        elapsed = time.monotonic() - started
    assert completion.text == "    return 0" and completion.finish_reason == "stop"
    assert len(server.requests) == 4 and generator.retries_done == 3
    assert elapsed >= 0.2 + 0.05 * 0.75 + 0.1 * 0.75  # Retry-After honoured, then exponential backoff


def test_retries_are_bounded_and_client_errors_are_not_retried():
    with ScriptedServer(script=[500] * 10) as server:
        generator = OpenAIGenerator("scripted", server.base_url, retry=RetryPolicy(max_retries=2, base_delay_s=0.01))
        with pytest.raises(EvalsuiteError, match="still failing after 2 retries: HTTP 500: scripted 500"):
            list(generator.generate(one_request(), SamplingParams()))
        assert len(server.requests) == 3
    with ScriptedServer(script=[400]) as server:
        generator = OpenAIGenerator("scripted", server.base_url, retry=RetryPolicy(base_delay_s=0.01))
        with pytest.raises(EvalsuiteError, match="HTTP 400: scripted 400"):
            list(generator.generate(one_request(), SamplingParams()))
        assert len(server.requests) == 1


def test_concurrency_limit_and_api_key_never_recorded(monkeypatch):
    monkeypatch.setenv("EVALSUITE_TEST_KEY", "sk-secret-123")
    with ScriptedServer(delay_s=0.15) as server:
        options = GenerationOptions(backend="openai", openai=OpenAIOptions(base_url=server.base_url, concurrency=3, api_key_env="EVALSUITE_TEST_KEY"))
        generator = load_generator("scripted", options)
        requests = [GenerationRequest(f"t/{i}", "x", (0, 1)) for i in range(6)]
        out = list(generator.generate(requests, SamplingParams(n=2, temperature=0.5)))
    assert len(out) == 12 and len(server.requests) == 12  # one request per sample (its own seed)
    assert server.max_in_flight == 3
    assert all(headers["Authorization"] == "Bearer sk-secret-123" for headers, _ in server.requests)
    assert len({body["seed"] for _, body in server.requests}) == 12
    assert "sk-secret-123" not in json.dumps(generator.describe())
    assert generator.describe()["api_key_set"] is True


def test_a_lone_surrogate_in_an_answer_is_kept_as_its_escape():
    """Valid JSON, not text: the completion that runs must be the one completions.jsonl can hold."""
    with ScriptedServer(text="    return '\ud800\u202e'") as server:
        [completion] = OpenAIGenerator("scripted", server.base_url).generate(one_request(), SamplingParams())
    assert completion.text == "    return '\\ud800\u202e'"  # the bidi character is text, and kept
    completion.text.encode("utf-8")


def test_an_answer_the_server_withheld_is_said_and_kept_with_its_reason(capsys):
    """An empty answer with finish_reason content_filter was saved as an ordinary "stop" completion and scored as a
    failure without a word; a choice with no completion at all was an empty sample too."""
    withheld = {"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": "content_filter"}
    with ScriptedServer(choice=lambda i: withheld, usage={"completion_tokens": "lots"}) as server:
        generator = OpenAIGenerator("scripted", server.base_url)
        [completion] = generator.generate(one_request(), SamplingParams())
    assert completion.text == "" and completion.finish_reason == "content_filter" and completion.num_tokens == 0
    assert generator.describe()["withheld"] == 1
    assert "1 answer(s)" in capsys.readouterr().err
    with ScriptedServer(choice=lambda i: {"index": i}) as server:
        with pytest.raises(EvalsuiteError, match="choice 0 for t/0 holds no completion"):
            list(OpenAIGenerator("scripted", server.base_url).generate(one_request(), SamplingParams()))


@pytest.mark.parametrize("message, reason, expected", [
    ({"content": None}, "stop", "no_content"),
    ({"content": None, "refusal": "I can't help with that."}, "stop", "refusal"),
    ({"content": None, "tool_calls": [{"id": "c", "type": "function"}]}, "tool_calls", "tool_calls"),
    ({"content": None, "reasoning_content": "Let me think"}, "length", "length"),
    ({"content": ""}, "stop", None),
    ({"content": "    return 1\n"}, "stop", None),
])
def test_a_chat_answer_with_null_content_is_said_and_kept_with_its_reason(capsys, message, reason, expected):
    """A chat answer whose content is null (a refusal, a tool call, a reasoning model out of budget) was stored as an
    ordinary empty "stop" completion and scored as a failure without a word. An empty string is the model's own
    answer and is not flagged."""
    choice = {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": reason}
    with ScriptedServer(choice=lambda i: choice) as server:
        generator = OpenAIGenerator("scripted", server.base_url)
        [completion] = generator.generate(one_request(), SamplingParams())
    err = capsys.readouterr().err
    if expected is None:
        assert generator.describe()["withheld"] == 0 and "no answer text" not in err
        assert completion.text == (message["content"] or "")
    else:
        assert completion.text == "" and completion.finish_reason == expected
        assert generator.describe()["withheld"] == 1 and "1 answer(s)" in err and "no answer text" in err


@pytest.mark.parametrize("choice, text, reason", [
    ({"index": 0, "text": ["    return 1", "\n"], "finish_reason": "stop"}, None, None),
    ({"index": 0, "text": 7, "finish_reason": "stop"}, None, None),
    ({"index": 0, "message": {"role": "assistant", "content": {"a": 1}}, "finish_reason": "stop"}, None, None),
    ({"index": 0, "text": None, "finish_reason": "stop"}, "", "no_content"),
    ({"index": 0, "message": {"role": "assistant", "content": [{"type": "text", "text": "    return 1"}]},
      "finish_reason": "stop"}, "    return 1", "stop"),
])
def test_an_answer_whose_text_is_not_a_string_is_refused_and_a_null_one_is_said(capsys, choice, text, reason):
    """A /completions choice whose text was a list ran as its str(), "['    return 1', '\\n']"; a null text was an
    ordinary empty completion without a word (the twentieth session's run-path round). Text parts are joined."""
    with ScriptedServer(choice=lambda i: choice) as server:
        generator = OpenAIGenerator("scripted", server.base_url)
        if text is None:
            with pytest.raises(EvalsuiteError, match="choice 0 for t/0 holds no text"):
                list(generator.generate(one_request(), SamplingParams()))
            return
        [completion] = generator.generate(one_request(), SamplingParams())
    assert (completion.text, completion.finish_reason) == (text, reason)
    assert ("no answer text" in capsys.readouterr().err) == (reason == "no_content")


@pytest.mark.parametrize("header", ["nan", "inf", "-inf", "1e999"])
def test_a_retry_after_that_is_no_number_of_seconds_falls_back_to_the_backoff(header):
    """Retry-After: nan reached time.sleep and stopped the run with a traceback."""
    with ScriptedServer(script=[429], retry_after=header) as server:
        generator = OpenAIGenerator("scripted", server.base_url, retry=RetryPolicy(base_delay_s=0.01))
        [completion] = generator.generate(one_request(), SamplingParams())
    assert completion.text == "    return 0" and generator.retries_done == 1


def test_samples_per_request_uses_n():
    with ScriptedServer() as server:
        generator = OpenAIGenerator("scripted", server.base_url, samples_per_request=4)
        out = list(generator.generate(one_request(n=6), SamplingParams(n=6, temperature=1.0)))
    assert sorted(c.sample_index for c in out) == list(range(6))
    assert [body["n"] for _, body in server.requests] in ([4, 2], [2, 4])


def test_unreachable_server_fails_clearly():
    port = free_port()
    options = GenerationOptions(backend="openai", openai=OpenAIOptions(base_url=f"http://127.0.0.1:{port}/v1", max_retries=1))
    with pytest.raises(EvalsuiteError, match="cannot reach the OpenAI-compatible server"):
        load_generator("m", options)
    with pytest.raises(EvalsuiteError, match="needs --base-url"):
        load_generator("m", GenerationOptions(backend="openai"))


def test_run_end_to_end_against_transformers_serve(served_gpt2, tmp_path):
    """The same `evalsuite run` flow, the model behind a real local server."""
    from evalsuite.cli import main as cli_main
    from test_generation_e2e import RUN_FLAGS, check_run_records, only_run_dir

    base_url, model_dir = served_gpt2
    output = tmp_path / "runs"
    argv = ["run", "--backend", "openai", "--base-url", base_url, "--models", str(model_dir),
            "--output", str(output), *RUN_FLAGS]
    assert cli_main(argv) == 0
    record = check_run_records(only_run_dir(output), "openai")
    assert record["model"]["base_url"] == base_url


def test_instruct_style_uses_chat_completions_with_the_evalplus_message():
    from evalsuite.protocol.extraction import extract_program
    from evalsuite.protocol.prompting import server_messages

    with ScriptedServer() as server:
        generator = OpenAIGenerator("scripted", server.base_url)
        request = GenerationRequest("t/0", "def f():\n    \"\"\"Seven.\"\"\"\n", (0,), prompt_style="instruct")
        [completion] = generator.generate([request], SamplingParams(max_new_tokens=64))
        assert generator.decide_prompt_style("auto").style == "base"  # a server's template is not visible
        assert generator.decide_prompt_style("instruct").style == "instruct"
        [plain] = generator.generate(one_request(), SamplingParams())
    assert server.paths == ["/v1/chat/completions", "/v1/completions"]
    body = server.requests[0][1]
    assert body["messages"] == server_messages(request.prompt) and "prompt" not in body
    assert completion.raw_text.startswith("Sure:") and plain.text == "    return 0"
    assert extract_program(completion.raw_text, "f") == "def f():\n    return 7"


def test_another_server_is_another_run():
    """A second server under the same model name silently reused the first's completions (0 requests sent)."""
    first = OpenAIGenerator("served", "http://127.0.0.1:9401/v1").identity()
    assert first != OpenAIGenerator("served", "http://127.0.0.1:9402/v1").identity()
    assert first == OpenAIGenerator("served", "http://127.0.0.1:9401/v1/").identity()  # one server, spelled otherwise
    assert "hunter2" not in json.dumps(OpenAIGenerator("served", "http://u:hunter2@127.0.0.1:9401/v1").identity())


def test_a_stop_hands_over_the_answers_that_arrived_and_does_not_wait_for_the_rest():
    """Stopped, the backend waited for every request in flight (up to --request-timeout) and then discarded what
    they brought; now the answers that arrived are handed over and the stop goes on at once."""
    from evalsuite.runs.generate import finished_before

    requests = [GenerationRequest(f"t/{i}", f"def f{i}():\n", (0,), stop_sequences=()) for i in range(4)]
    with ScriptedServer(delays=[0, 0, 60, 60]) as server:
        stream = OpenAIGenerator("scripted", server.base_url, concurrency=4).generate(requests, SamplingParams())
        first = next(stream)
        deadline = time.monotonic() + 10
        while len(server.requests) < 4 and time.monotonic() < deadline:  # all four in flight
            time.sleep(0.05)
        time.sleep(0.5)  # the second quick answer arrives while the caller is busy
        started = time.monotonic()
        kept = list(finished_before(stream, KeyboardInterrupt()))
        assert time.monotonic() - started < 5
    assert len([first, *kept]) == 2 and {c.task_id for c in [first, *kept]} <= {"t/0", "t/1", "t/2", "t/3"}


def test_ctrl_c_while_waiting_for_answers_stops_at_once():
    import signal

    requests = [GenerationRequest(f"t/{i}", f"def f{i}():\n", (0,), stop_sequences=()) for i in range(2)]
    with ScriptedServer(delay_s=60) as server:
        stream = OpenAIGenerator("scripted", server.base_url, concurrency=2).generate(requests, SamplingParams())
        timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
        started = time.monotonic()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            list(stream)
        assert time.monotonic() - started < 6


def test_a_servers_retry_after_is_a_floor_under_a_growing_jittered_backoff():
    """A rate-limited server answering 429 with Retry-After: 1 to 8 workers: waiting its word alone had them retry
    together every second, and the 6 retries were spent in 6 s (red-team round 21). The wait is at least the
    server's word, grows with the attempt, and spreads the workers."""
    policy = RetryPolicy(base_delay_s=0.5, max_delay_s=30.0)
    waits = [[policy.delay(attempt, retry_after=1.0) for _ in range(200)] for attempt in range(6)]
    assert all(wait >= 1.0 for row in waits for wait in row)
    assert all(len({round(wait, 6) for wait in row}) > 100 for row in waits)  # not in lockstep
    assert min(waits[5]) >= 0.5 * 2 ** 5 * 0.75  # the backoff grows past the server's second
    assert sum(max(row) for row in waits) > 30  # six retries span more than the server's six seconds
    # a longer wait asked is honoured (up to MAX_SERVER_WAIT_S), still spread (round 22: 120 s gave 30 s, in lockstep)
    long_waits = [policy.delay(0, retry_after=120.0) for _ in range(50)]
    assert min(long_waits) >= 120.0 and len({round(w, 6) for w in long_waits}) > 40
    assert max(policy.delay(9, retry_after=1e6) for _ in range(20)) <= 600.0 * 1.25


def test_a_retry_after_given_as_an_http_date_is_the_seconds_until_then():
    """An HTTP-date Retry-After (RFC 9110) was ignored: the 6 retries were spent in ~31 s (red-team round 22)."""
    from email.utils import format_datetime

    from evalsuite.generation.openai_backend import _parse_retry_after

    soon = datetime.now(timezone.utc) + timedelta(seconds=90)
    assert 80 <= _parse_retry_after(format_datetime(soon, usegmt=True)) <= 91
    assert _parse_retry_after(format_datetime(datetime.now(timezone.utc) - timedelta(seconds=5), usegmt=True)) == 0.0
    assert _parse_retry_after("not a date") is None and _parse_retry_after("2.5") == 2.5
