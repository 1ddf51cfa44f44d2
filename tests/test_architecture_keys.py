"""What a string key used to decide: the engine's workspace is planned by the model's class (Gemma 3's text
config says ``gemma3_text``), and the sandbox preflight asks the jail the user chose, not the default one."""

from __future__ import annotations

import pytest

from evalsuite.errors import EvalsuiteError


def test_the_engine_workspace_is_planned_for_gemma3_text_configs():
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    from evalsuite.planner.ladder import engine_workspace_bytes
    from evalsuite.planner.memory import shape_from_config

    config = transformers.Gemma3TextConfig(vocab_size=512, hidden_size=64, intermediate_size=128,
                                           num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                           head_dim=16, max_position_embeddings=256)
    shape = shape_from_config(config)
    assert shape.model_type == "gemma3_text" and shape.architecture == "Gemma3ForCausalLM"
    assert engine_workspace_bytes(shape, batch=8, weight_bytes=10 << 20) > 8 * 512 * 48
    gpt2 = shape_from_config(transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512))
    assert engine_workspace_bytes(gpt2, batch=8, weight_bytes=10 << 20) == 0  # a family the engine does not cover


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
