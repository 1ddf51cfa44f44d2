"""The ``openai`` backend: any OpenAI-compatible server (vLLM, TGI, SGLang, DeepSpeed-MII,
``transformers serve``): ``/v1/completions`` for the base prompt style, ``/v1/chat/completions`` for the
instruct style (the server applies the model's chat template; the message is EvalPlus's, see
:func:`evalsuite.protocol.prompting.server_messages`).

Plain HTTP from the standard library, so the core needs no SDK. Requests run on a thread pool of
``options.concurrency`` workers; completions are yielded as each request returns. Requests answered
429 or 5xx, or not answered at all, are retried with exponential backoff and jitter, honouring a
``Retry-After`` header. The API key is read from the environment variable named by
``options.api_key_env`` at connect time and never appears in :meth:`OpenAIGenerator.describe`.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import queue
import random
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from evalsuite.errors import EvalsuiteError
from evalsuite.generation.base import GenerationOptions, Generator
from evalsuite.records import Completion, GenerationRequest, SamplingParams
from evalsuite.tasks.task import truncate_at_stop
from evalsuite.untrusted import storable

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
_SEED_MASK = (1 << 31) - 1  # servers parse seed as a 32-bit int


MAX_SERVER_WAIT_S = 600.0  # the longest Retry-After honoured (a rate limit's minute, a few): longer is a fault


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 6
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based): 2^attempt times the base delay with +-25%
        jitter, so that concurrent workers do not retry in lockstep, and at least the server's ``Retry-After``.
        Why not the server's word alone: a rate-limited server saying ``Retry-After: 1`` to 8 workers had them
        retry together every second, and the 6 retries were spent in 6 s (red-team round 21)."""
        backoff = min(self.max_delay_s, self.base_delay_s * (2 ** attempt)) * random.uniform(0.75, 1.25)
        if retry_after is not None:  # the server's word, up to a bound of its own: a longer wait is its to ask
            return max(min(max(retry_after, 0.0), MAX_SERVER_WAIT_S) * random.uniform(1.0, 1.25), backoff)
        return backoff


@dataclass(frozen=True)
class Job:
    """One HTTP request: a prompt and the sample indices its ``n`` choices become."""

    request: GenerationRequest
    sample_indices: tuple[int, ...]
    replicate: bool  # greedy: one choice serves every index


class HTTPFailure(Exception):
    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.status is None or self.status in RETRY_STATUSES


def normalise_base_url(base_url: str) -> str:
    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise EvalsuiteError(f"--base-url must look like http://host:port/v1, got {base_url!r}")
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


def redact_url(url: str) -> str:
    """Drop user:password@ from a URL before it is recorded."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class OpenAIGenerator(Generator):
    def __init__(self, model: str, base_url: str, api_key: str | None = None, concurrency: int = 8,
                 timeout_s: float = 600.0, retry: RetryPolicy = RetryPolicy(), samples_per_request: int = 1,
                 api_key_env: str = "OPENAI_API_KEY"):
        if concurrency < 1:
            raise EvalsuiteError(f"--concurrency must be at least 1, got {concurrency}")
        if samples_per_request < 1:
            raise EvalsuiteError(f"samples per request must be at least 1, got {samples_per_request}")
        self.model = model
        self.base_url = normalise_base_url(base_url)
        self._api_key = api_key
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.retry = retry
        self.samples_per_request = samples_per_request
        self.server_models: list[str] | None = None
        self.retries_done = 0
        self.withheld = 0  # answers that came back empty with a finish reason other than stop or length

    @classmethod
    def connect(cls, model: str, options: GenerationOptions) -> OpenAIGenerator:
        """Build from CLI options and check the server answers (a wrong URL fails now, not mid-run)."""
        server = options.openai
        if not server.base_url:
            raise EvalsuiteError("--backend openai needs --base-url, e.g. http://127.0.0.1:8000/v1")
        generator = cls(model, server.base_url, api_key=os.environ.get(server.api_key_env) or None,
                        concurrency=server.concurrency, timeout_s=server.request_timeout_s,
                        retry=RetryPolicy(max_retries=server.max_retries),
                        samples_per_request=server.samples_per_request, api_key_env=server.api_key_env)
        generator.check_server()
        return generator

    # -- HTTP --------------------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """One HTTP exchange; raises HTTPFailure (with the status, if any) on anything but a JSON 2xx."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base_url + path, data=data, method=method, headers=self._headers())
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            retry_after = _parse_retry_after(exc.headers.get("Retry-After") if exc.headers else None)
            detail = _error_detail(exc.read())
            raise HTTPFailure(f"HTTP {exc.code}{': ' + detail if detail else ''}", exc.code, retry_after) from None
        except (TimeoutError, urllib.error.URLError, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise HTTPFailure(f"no answer ({reason})") from None
        try:
            # A lone surrogate ("\\ud800") is valid JSON but not text: kept as its escape, so that the completion
            # that runs is the one completions.jsonl holds.
            parsed = storable(json.loads(payload))
        except json.JSONDecodeError:
            raise HTTPFailure(f"answer is not JSON: {payload[:200]!r}", status=502) from None
        if not isinstance(parsed, dict):
            raise HTTPFailure(f"answer is not a JSON object: {payload[:200]!r}", status=502)
        return parsed

    def _call_with_retries(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        for attempt in range(self.retry.max_retries + 1):
            try:
                return self._call(method, path, body)
            except HTTPFailure as failure:
                if not failure.retryable:
                    raise EvalsuiteError(f"{redact_url(self.base_url)}{path}: {failure}") from None
                if attempt == self.retry.max_retries:
                    raise EvalsuiteError(f"{redact_url(self.base_url)}{path}: still failing after "
                                         f"{self.retry.max_retries} retries: {failure}") from None
                self.retries_done += 1
                time.sleep(self.retry.delay(attempt, failure.retry_after))
        raise AssertionError("unreachable")

    def check_server(self) -> None:
        """GET /models: proves the URL and key work and records what the server serves.

        No answer at all, or 401/403, fails at once; any other error status only means the server does
        not list its models (some do not), which generation does not need.
        """
        try:
            answer = self._call("GET", "/models")
        except HTTPFailure as failure:
            if failure.status in (401, 403):
                raise EvalsuiteError(f"{redact_url(self.base_url)}/models: {failure} (is ${self.api_key_env} "
                                     "set to the server's API key?)") from None
            if failure.status is not None:
                return
            try:
                answer = self._call_with_retries("GET", "/models")
            except EvalsuiteError as exc:
                raise EvalsuiteError(f"cannot reach the OpenAI-compatible server: {exc}") from None
        data = answer.get("data")
        if isinstance(data, list):
            self.server_models = [str(item.get("id")) for item in data if isinstance(item, dict)]

    # -- the contract ------------------------------------------------------------------------------
    def jobs(self, requests: Sequence[GenerationRequest], params: SamplingParams) -> list[Job]:
        jobs = []
        for request in requests:
            indices = tuple(request.sample_indices)
            if not indices:
                continue
            if params.greedy:
                jobs.append(Job(request, indices, replicate=True))
                continue
            step = self.samples_per_request
            jobs.extend(Job(request, indices[i:i + step], replicate=False) for i in range(0, len(indices), step))
        return jobs

    def decide_prompt_style(self, requested: str):
        from evalsuite.protocol.prompting import PromptDecision, decide_style

        if requested == "auto":  # the server's template is not visible from here
            return PromptDecision("auto", "base", "a server's chat template cannot be inspected: auto means base; "
                                  "pass --prompt-style instruct for chat models")
        return decide_style(requested, None, can_chat=True)

    @staticmethod
    def endpoint(job: Job) -> str:
        return "/chat/completions" if job.request.prompt_style == "instruct" else "/completions"

    def request_body(self, job: Job, params: SamplingParams) -> dict[str, Any]:
        from evalsuite.protocol.prompting import server_messages
        from evalsuite.seeding import row_seed

        if job.request.prompt_style == "instruct":
            asked: dict[str, Any] = {"messages": server_messages(job.request.prompt)}
        else:
            asked = {"prompt": job.request.prompt}
        body: dict[str, Any] = {
            "model": self.model,
            **asked,
            "max_tokens": params.max_new_tokens,
            "temperature": params.temperature,
            "n": 1 if job.replicate else len(job.sample_indices),
            "seed": row_seed(params.seed, job.request.task_id, job.sample_indices[0]) & _SEED_MASK,
        }
        if params.top_p < 1.0:
            body["top_p"] = params.top_p
        if params.top_k:
            body["top_k"] = params.top_k  # not in OpenAI's schema; vLLM, SGLang and TGI accept it
        if job.request.stop_sequences:
            body["stop"] = list(job.request.stop_sequences)
        return body

    def complete(self, job: Job, params: SamplingParams) -> list[Completion]:
        path = self.endpoint(job)
        answer = self._call_with_retries("POST", path, self.request_body(job, params))
        choices = answer.get("choices")
        expected = 1 if job.replicate else len(job.sample_indices)
        if not isinstance(choices, list) or len(choices) < expected:
            raise EvalsuiteError(f"{redact_url(self.base_url)}{path}: expected {expected} choice(s) for "
                                 f"{job.request.task_id}, got {json.dumps(answer)[:200]}")
        choices = sorted(choices[:expected], key=lambda c: c.get("index", 0) if isinstance(c, dict) else 0)
        usage = answer.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        counted = usage.get("completion_tokens")
        tokens = counted if expected == 1 and type(counted) is int and counted >= 0 else 0  # a server's odd value
        completions: list[Completion] = []
        for position, choice in enumerate(choices):
            if not isinstance(choice, dict) or ("message" not in choice and "text" not in choice):
                raise EvalsuiteError(f"{redact_url(self.base_url)}{path}: choice {position} for "
                                     f"{job.request.task_id} holds no completion: {json.dumps(choice)[:200]}")
            raw = _choice_text(choice)
            if raw is None:
                raise EvalsuiteError(f"{redact_url(self.base_url)}{path}: choice {position} for "
                                     f"{job.request.task_id} holds no text: {json.dumps(choice)[:200]}")
            text = truncate_at_stop(raw, job.request.stop_sequences)
            server_reason = choice.get("finish_reason")
            finish = "stop" if len(text) < len(raw) else ("length" if server_reason == "length" else "stop")
            withheld = _withheld_reason(choice, raw)
            if withheld is not None:  # an answer with no text the model wrote: said, and kept with its reason
                finish = withheld
                self.withheld += 1
            indices = job.sample_indices if job.replicate else (job.sample_indices[position],)
            completions.extend(Completion(task_id=job.request.task_id, sample_index=index, text=text,
                                          finish_reason=finish, num_tokens=tokens, raw_text=raw)
                               for index in indices)
        return completions

    def generate(self, requests: Sequence[GenerationRequest], params: SamplingParams) -> Iterator[Completion]:
        """Up to ``concurrency`` requests in flight, each answer handed over as it arrives.

        Stopped (Ctrl-C, SIGTERM), the answers that have arrived are handed over first, and the requests still in
        flight are left to daemon threads: a stop no longer waits for them (up to ``--request-timeout``, after
        which a scheduler's SIGKILL came first) only to discard what they brought."""
        jobs = self.jobs(requests, params)
        todo: queue.SimpleQueue[Job] = queue.SimpleQueue()
        for job in jobs:
            todo.put(job)
        answers: queue.SimpleQueue[tuple[list[Completion], BaseException | None]] = queue.SimpleQueue()
        stopping = threading.Event()

        def work() -> None:
            while not stopping.is_set():
                try:
                    job = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    answers.put((self.complete(job, params), None))
                except BaseException as exc:  # noqa: BLE001 - raised where the answers are read
                    answers.put(([], exc))

        for index in range(min(self.concurrency, len(jobs))):
            threading.Thread(target=work, name=f"evalsuite-openai-{index}", daemon=True).start()
        arrived: deque[Completion] = deque()
        waiting = len(jobs)
        try:
            while waiting or arrived:
                if arrived:
                    yield arrived.popleft()
                    continue
                completions, error = answers.get()
                waiting -= 1
                if error is not None:
                    raise error
                arrived.extend(completions)
        except KeyboardInterrupt:
            stopping.set()
            while True:  # what has arrived is kept; what is in flight is not waited for
                try:
                    completions, error = answers.get_nowait()
                except queue.Empty:
                    break
                arrived.extend(completions if error is None else [])
            while arrived:
                yield arrived.popleft()
            raise
        finally:
            stopping.set()
        if self.withheld:
            print(f"warning: {self.withheld} answer(s) from {redact_url(self.base_url)} came back with no answer text "
                  "(content null, a refusal, content_filter, tool_calls...): they are scored as failed samples; "
                  "completions.jsonl keeps each one's reason as its finish_reason", file=sys.stderr)

    def identity(self) -> dict[str, Any]:
        """The server that answers, by its URL (credentials removed): a run against another server under the same
        model name is another run, never resumed from this one's completions."""
        return {"server": redact_url(self.base_url)}

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "openai",
            "model": self.model,
            "base_url": redact_url(self.base_url),
            "server_models": self.server_models,
            "concurrency": self.concurrency,
            "samples_per_request": self.samples_per_request,
            "retry": asdict(self.retry),
            "retries_done": self.retries_done,
            "withheld": self.withheld,
            "api_key_env": self.api_key_env,
            "api_key_set": self._api_key is not None,
        }


def _withheld_reason(choice: dict[str, Any], raw: str) -> str | None:
    """Why a choice holds no text the model wrote, or None. A chat answer whose ``content`` is null is not the empty
    answer of a model that stopped at once: the server refused (``refusal``), filtered, called a tool, or a reasoning
    model spent its whole budget thinking (``length``). Each is scored as a failed sample, never silently."""
    reason = choice.get("finish_reason")
    reason = reason[:40] if isinstance(reason, str) and reason else None
    message = choice.get("message")
    if isinstance(message, dict) and message.get("content") is None:
        if isinstance(message.get("refusal"), str) and message["refusal"]:
            return "refusal"
        if message.get("tool_calls"):
            return "tool_calls"
        return "no_content" if reason in (None, "stop") else reason  # "length": the budget went before any answer
    if not isinstance(message, dict) and choice.get("text") is None:
        return "no_content" if reason in (None, "stop") else reason
    if not raw and reason not in (None, "stop", "length"):
        return reason  # an empty answer the server withheld (content_filter...)
    return None


def _choice_text(choice: dict[str, Any]) -> str | None:
    """A choice's text: ``text`` of /completions, ``message.content`` of /chat/completions (a string, or a list of
    text parts); "" where it is null (:func:`_withheld_reason` says why), None where it is something else: a list
    or a number was run as its ``str()``, ``['a', 'b']``."""
    message = choice.get("message")
    content = message.get("content") if isinstance(message, dict) else choice.get("text")
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list) and all(isinstance(part, dict) and part.get("type") == "text"
                                         and isinstance(part.get("text"), str) for part in content):
        return "".join(part["text"] for part in content)
    return None


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:  # an HTTP date (RFC 9110): the seconds until then
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None  # neither: our own backoff
        if when.tzinfo is None:
            return None
        seconds = (when - datetime.now(timezone.utc)).total_seconds()
    return max(seconds, 0.0) if math.isfinite(seconds) else None  # "nan" reached time.sleep and stopped the run


def _error_detail(payload: bytes) -> str:
    try:
        data = json.loads(payload)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return payload[:200].decode("utf-8", "replace").strip()
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data))
        if isinstance(error, dict):
            error = error.get("message", error)
        return str(error)[:300]
    return str(data)[:300]
