"""The sampling engine against plain transformers generate, on tiny random models of every covered family.

Equivalence means token for token: greedy ids equal ``model.generate``'s (left-padded batch, mixed prompt
lengths), sampled ids equal generate's with the seeded sampler, whatever the engine's batch size, row
assignment or admission order.
"""

from __future__ import annotations

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, LogitsProcessorList

from evalsuite.engine import Engine, EngineOptions
from evalsuite.engine.sampling import SeededSampler, row_seeds
from evalsuite.records import GenerationRequest, SamplingParams

VOCAB = 256
# Large init spread: with transformers' default (0.02) tiny random models repeat one token forever,
# which would hide position and attention bugs.
INIT = 0.5
PROMPTS = [[5, 6, 7, 8, 9, 10, 11, 12, 13], [20, 21, 22], [30, 31, 32, 33, 34, 35], [40]]


def _configs() -> dict:
    """family -> tiny config exercising that family's features (see each comment)."""
    import transformers as tf

    common = dict(vocab_size=VOCAB, bos_token_id=0, eos_token_id=1, initializer_range=INIT)
    llama_like = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=512, **common)
    return {
        # partial interleaved rotary: 8 of 16 dims per head; attention and MLP in parallel off one LayerNorm
        "gptj": lambda: tf.GPTJConfig(n_positions=512, n_embd=64, n_layer=2, n_head=4, rotary_dim=8, **common),
        # grouped-query attention: 4 query heads share 2 kv heads
        "llama": lambda: tf.LlamaConfig(**llama_like),
        # ALiBi, fused [heads, 3, head_dim] projection, LayerNorm after the embedding
        "bloom": lambda: tf.BloomConfig(hidden_size=64, n_layer=2, n_head=4, **common),
        # a sliding window (6) shorter than prompt + completion, in every layer
        "mistral": lambda: tf.MistralConfig(**llama_like, sliding_window=6, head_dim=16),
        # q/k/v biases, tied embeddings, sliding window on layers >= max_window_layers only
        "qwen2": lambda: tf.Qwen2Config(**llama_like, tie_word_embeddings=True, use_sliding_window=True,
                                        sliding_window=5, max_window_layers=1),
        # (1 + w) RMSNorms before and after attention and MLP, embeddings x sqrt(hidden), query_pre_attn_scalar,
        # attention and final logit soft-capping, sliding window on alternate layers
        "gemma2": lambda: tf.Gemma2Config(**{**llama_like, "num_hidden_layers": 3}, head_dim=16,
                                          query_pre_attn_scalar=24, attn_logit_softcapping=3.0,
                                          final_logit_softcapping=4.0, sliding_window=5,
                                          hidden_activation="gelu_pytorch_tanh"),
        # q/k RMSNorm per head, local and global rotary bases per layer type, linear rope scaling on global layers
        "gemma3": lambda: tf.Gemma3TextConfig(
            **{**llama_like, "num_hidden_layers": 3}, head_dim=16, query_pre_attn_scalar=16, sliding_window=5,
            tie_word_embeddings=False,  # tied, x sqrt(hidden) embeddings make a random model repeat its input
            layer_types=["sliding_attention", "full_attention", "sliding_attention"],
            rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                             "full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 100000.0}}),
        # LayerNorms and biases everywhere, GELU MLP, GQA, sliding window
        "starcoder2": lambda: tf.Starcoder2Config(**llama_like, sliding_window=7, use_bias=True),
        # fused [q | k | v] projection with GQA, fused gate/up MLP, partial rotary (half of each head)
        "phi3": lambda: tf.Phi3Config(**llama_like, pad_token_id=0, rope_parameters={
            "rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}),
        # partial rotate-half rotary (a quarter of each head), parallel residual with two LayerNorms
        "gpt_neox": lambda: tf.GPTNeoXConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                             intermediate_size=128, max_position_embeddings=512,
                                             rotary_pct=0.25, **common),
        "gpt_neox_sequential": lambda: tf.GPTNeoXConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                        intermediate_size=128, max_position_embeddings=512,
                                                        rotary_pct=0.5, use_parallel_residual=False, **common),
        # multi-query attention (one kv head), learned absolute positions, fused [q | k | v]
        "gpt_bigcode": lambda: tf.GPTBigCodeConfig(n_embd=64, n_layer=2, n_head=4, n_positions=512,
                                                   multi_query=True, **common),
        "gpt_bigcode_mha": lambda: tf.GPTBigCodeConfig(n_embd=64, n_layer=2, n_head=4, n_positions=512,
                                                       multi_query=False, **common),
    }


FAMILIES = tuple(_configs())


def _tiny(family: str):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(FAMILIES.index(family) + 1)
    return AutoModelForCausalLM.from_config(_configs()[family]()).eval()


@pytest.fixture(scope="module", params=FAMILIES)
def tiny(request):
    return _tiny(request.param)


def _text(ids) -> str:
    return " ".join(map(str, ids))


def _ids(text: str) -> list[int]:
    return [int(t) for t in text.split()]


def _left_padded(prompts):
    width = max(map(len, prompts))
    ids = torch.tensor([[0] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    return ids, mask, width


def _hf_generate(model, prompts, max_new, processors=None, eos=None):
    ids, mask, width = _left_padded(prompts)
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new, do_sample=False,
                             pad_token_id=0, eos_token_id=eos, logits_processor=processors)
    return [row[width:].tolist() for row in out]


def _requests(prompts, samples=(0,), stops=()):
    return [GenerationRequest(task_id=f"t/{i}", prompt="", sample_indices=tuple(samples), stop_sequences=stops)
            for i in range(len(prompts))]


def _engine(model, rows=512, eos=()):
    return Engine(model, decode_tokens=_text, eos_token_ids=list(eos), options=EngineOptions(max_rows=rows))


def _run(engine, prompts, params, samples=(0,), stops=(), **kwargs):
    completions = engine.generate(_requests(prompts, samples, stops), params, prompt_ids=prompts, **kwargs)
    return {(c.task_id, c.sample_index): c for c in completions}


def test_greedy_tokens_equal_transformers_generate(tiny):
    expected = _hf_generate(tiny, PROMPTS, 24)
    got = _run(_engine(tiny), PROMPTS, SamplingParams(max_new_tokens=24))
    for i, want in enumerate(expected):
        assert _ids(got[(f"t/{i}", 0)].text) == want, f"prompt {i}"
    assert all(c.finish_reason == "length" and c.num_tokens == 24 for c in got.values())


def test_sampled_tokens_equal_seeded_generate_at_any_batch_size(tiny):
    params = SamplingParams(n=5, temperature=0.8, top_p=0.95, max_new_tokens=12, seed=7)
    prompts, samples = PROMPTS[:3], range(5)
    expected = {}
    for i, prompt in enumerate(prompts):
        seeds = row_seeds(params.seed, f"t/{i}", list(samples))
        sampler = SeededSampler(seeds, params, prompt_length=len(prompt))
        rows = _hf_generate(tiny, [prompt] * len(seeds), 12, LogitsProcessorList([sampler]))
        expected.update({(f"t/{i}", s): row for s, row in zip(samples, rows)})
    # 3 rows for 15 samples: samples wait, take freed rows, and finish in a different order
    for rows in (512, 3):
        got = _run(_engine(tiny, rows=rows), prompts, params, samples=samples)
        assert {key: _ids(c.text) for key, c in got.items()} == expected, f"rows={rows}"
    assert len({tuple(v) for v in expected.values()}) > 10, "samples of one prompt must differ"


def test_prompts_packed_into_one_forward_give_the_tokens_of_one_prompt_at_a_time(tiny):
    """Prompts run through the model together (one sequence, each prompt masked off from the others) where the
    family allows; their keys, values and first tokens are those of running each alone: same completions.
    Short prompts (within every sliding window) pack; the others run alone."""
    prompts = [[5, 6, 7], [20, 21], [30, 31, 32, 33], [40], [50, 51, 52, 53, 54, 55, 56, 57, 58]]
    params = SamplingParams(n=3, temperature=0.9, max_new_tokens=10, seed=11)
    packed_engine = _engine(tiny)
    packed = _run(packed_engine, prompts, params, samples=range(3))
    alone_engine = Engine(tiny, decode_tokens=_text, eos_token_ids=[], options=EngineOptions(pack_prompts=False))
    alone = _run(alone_engine, prompts, params, samples=range(3))
    assert {k: c.text for k, c in packed.items()} == {k: c.text for k, c in alone.items()}
    stats = packed_engine.stats
    assert stats.prefills == len(prompts) and alone_engine.stats.prefill_forwards == len(prompts)
    expected_forwards = 5 if packed_engine.adapter.layout.positions == "alibi" else (
        1 + sum(not packed_engine.adapter.packs_prompts(len(p)) for p in prompts))
    assert stats.prefill_forwards == min(expected_forwards, 5)


def test_a_prefill_takes_the_next_waiting_prompts_into_its_forward_while_slots_are_free(tiny):
    """Many samples a prompt and few rows: a prompt's first sample is admitted long after the run starts.
    Its prefill joins an earlier one's forward, into a free prompt slot, instead of running alone when it is
    needed (one forward per prompt held up the decode steps each time); the completions do not change."""
    prompts = [[5, 6, 7], [20, 21], [30, 31, 32, 33], [40, 41], [50, 51, 52]]
    params = SamplingParams(n=6, temperature=0.9, max_new_tokens=6, seed=3)
    ahead = _engine(tiny, rows=4)
    got = _run(ahead, prompts, params, samples=range(6))
    alone = Engine(tiny, decode_tokens=_text, eos_token_ids=[], options=EngineOptions(max_rows=4,
                                                                                      pack_prompts=False))
    want = _run(alone, prompts, params, samples=range(6))
    assert {k: c.text for k, c in got.items()} == {k: c.text for k, c in want.items()}
    assert alone.stats.prefill_forwards == len(prompts) == ahead.stats.prefills
    if ahead.adapter.packs_prompts(4):
        # 4 rows, 6 samples a prompt: 4 prompt slots (kv_cache.plan_cache), so prompts 0-3 share the first
        # forward and prompt 4 takes the slot prompt 0 frees
        assert ahead.stats.prefill_forwards == 2

def test_a_pack_attends_prompt_by_prompt_where_the_model_uses_sdpa_and_through_a_dense_mask_otherwise(tiny):
    """Packed prompts under SDPA attend in right-padded batches of similar lengths (packed_attention.py), at each
    prompt's own length's cost; under eager attention (Gemma 2's soft-capping) through the dense mask. Either
    way each prompt's logits, keys and values are those of the prompt run alone, and the model's attention
    implementation is its own again after the forward."""
    from evalsuite.engine import packed_attention

    adapter = _engine(tiny).adapter
    if not adapter.packs_prompts(4):
        return
    prompts = [[5, 6, 7], [20, 21], [30, 31, 32, 33], [40], [50, 51, 52, 53], [60, 61, 62]]
    calls = []
    original = packed_attention.packed_sdpa

    def counted(*args, **kwargs):
        calls.append(len(kwargs[packed_attention.KWARG].batches))
        return original(*args, **kwargs)

    implementation = tiny.config._attn_implementation
    packed_attention.packed_sdpa = counted
    from transformers import AttentionInterface

    AttentionInterface.register(packed_attention.NAME, counted)
    try:
        packed = adapter.prefill(prompts)
    finally:
        AttentionInterface.register(packed_attention.NAME, original)
        packed_attention.packed_sdpa = original
    assert tiny.config._attn_implementation == implementation
    layers = adapter.num_layers
    if implementation == "sdpa" and not getattr(tiny.config, "attn_logit_softcapping", None):
        assert calls == [3] * layers  # lengths 4, 4, 3, 3, 2, 1: batches {4, 4, 3, 3}, {2}, {1}
    else:  # eager attention, or scores soft-capped (Gemma 2)
        assert calls == []
    for i, prompt in enumerate(prompts):
        alone = adapter.prefill([prompt])
        torch.testing.assert_close(packed.logits[i], alone.logits[-1], rtol=1e-4, atol=1e-4)
        own = packed.owners == i
        for (keys, values), (keys1, values1) in zip(packed.layers, alone.layers):
            torch.testing.assert_close(keys[:, own], keys1, rtol=1e-4, atol=1e-4)
            torch.testing.assert_close(values[:, own], values1, rtol=1e-4, atol=1e-4)


def test_padded_batches_of_a_pack_group_similar_lengths_and_gather_every_token_back_to_its_place():
    from evalsuite.engine.packed_attention import PackedBatches

    lengths = [30, 600, 7, 1, 450, 44, 29, 100, 2, 598]
    pack = PackedBatches.of(lengths, torch.device("cpu"))
    sizes = [(batch.rows, batch.length) for batch in pack.batches]
    assert sizes == [(3, 600), (1, 100), (2, 44), (1, 29), (1, 7), (1, 2), (1, 1)]  # each within 1.5x of its first
    assert sum(rows * length ** 2 for rows, length in sizes) <= 1.5 ** 2 * sum(n * n for n in lengths)  # work
    # each batch position reads a token of its own prompt (padding repeats the prompt's last token), and
    # gathering the batches' outputs back by gather_back returns the pack's tokens in order
    owner = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))
    laid_out = torch.cat([batch.index for batch in pack.batches])
    assert torch.equal(laid_out[pack.gather_back], torch.arange(sum(lengths)))
    for batch in pack.batches:
        rows = owner[batch.index].view(batch.rows, batch.length)
        assert torch.equal(rows, rows[:, :1].expand_as(rows))


def test_packed_attention_is_not_used_where_scores_are_soft_capped_or_attention_is_eager():
    """Gemma 2 soft-caps its attention scores; transformers 5.17 gives it SDPA (5.24 refuses), so the
    implementation's name alone does not tell: the soft-cap keeps the dense mask."""
    from evalsuite.engine import packed_attention

    model = _tiny("llama")
    assert model.config._attn_implementation == "sdpa" and packed_attention.usable(model)
    model.config.attn_logit_softcapping = 3.0
    assert not packed_attention.usable(model)
    model.config.attn_logit_softcapping = None
    model.config._attn_implementation = "eager"
    assert not packed_attention.usable(model)


def test_packed_attention_refuses_to_run_without_the_packs_layout():
    from evalsuite.engine.packed_attention import packed_sdpa
    from evalsuite.errors import EvalsuiteError

    q = torch.zeros(1, 2, 5, 4)
    with pytest.raises(EvalsuiteError, match="without the pack"):
        packed_sdpa(None, q, q, q, None)


def test_prompts_are_packed_only_under_attention_that_takes_a_dense_mask(tiny):
    adapter = _engine(tiny).adapter
    if adapter.layout.positions == "alibi":
        assert not adapter.packs_prompts(1)
        return
    original = tiny.config._attn_implementation
    assert original in ("eager", "sdpa") and adapter.packs_prompts(1)
    tiny.config._attn_implementation = "flash_attention_2"
    try:
        assert not adapter.packs_prompts(1)
    finally:
        tiny.config._attn_implementation = original


def test_batch_invariant_runs_each_prompt_alone(tiny):
    """A packed forward's products are as wide as the pack: under batch invariance a prompt's first token
    must not depend on which prompts share its forward, so none do."""
    engine = Engine(tiny, decode_tokens=_text, eos_token_ids=[], options=EngineOptions(batch_invariant=True,
                                                                                        invariant_rows=8))
    _run(engine, PROMPTS, SamplingParams(max_new_tokens=3))
    assert engine.stats.prefill_forwards == engine.stats.prefills == len(PROMPTS)


def test_a_pack_holds_at_most_pack_tokens(tiny):
    engine = _engine(tiny)
    engine.pack_tokens = 7
    jobs = engine._jobs(_requests(PROMPTS * 2), PROMPTS * 2, SamplingParams(max_new_tokens=4), None)
    packs = list(engine._packs(jobs))
    assert sorted((p for pack in packs for p in pack), key=lambda p: p.first_sample) == jobs  # each once
    assert all(len(pack) == 1 or sum(len(p.ids) for p in pack) <= 7 for pack in packs)
    if engine.adapter.packs_prompts(3):
        assert any(len(pack) > 1 for pack in packs)


def test_resumed_subset_and_uneven_lengths_reproduce_the_full_run(tiny):
    params = SamplingParams(n=8, temperature=1.0, max_new_tokens=20, seed=3)
    lengths = {s: 3 + (7 * s) % 17 for s in range(8)}  # rows finish at different steps

    def forced(task_id, sample_index):
        return lengths[sample_index]

    full = _run(_engine(tiny, rows=4), PROMPTS, params, samples=range(8), forced_lengths=forced)
    part = _run(_engine(tiny, rows=2), PROMPTS, params, samples=(6, 2, 5), forced_lengths=forced)
    for key, completion in part.items():
        assert completion == full[key]
    assert {c.num_tokens for c in full.values()} == set(lengths.values())


def test_eos_ends_a_sample_and_is_not_in_the_text(tiny):
    reference = _hf_generate(tiny, PROMPTS[:1], 16)[0]
    eos = reference[5]  # a token greedy decoding is known to produce at step 5 (or earlier)
    got = _run(_engine(tiny, eos=[eos]), PROMPTS[:1], SamplingParams(max_new_tokens=16))[("t/0", 0)]
    cut = reference.index(eos)
    assert got.finish_reason == "eos"
    assert _ids(got.text) == reference[:cut]
    assert got.num_tokens == cut + 1
    assert _hf_generate(tiny, PROMPTS[:1], 16, eos=eos)[0][:cut + 1] == reference[:cut + 1]


def test_stop_sequence_truncates_exactly_at_its_first_occurrence(tiny):
    reference = _hf_generate(tiny, PROMPTS[:1], 30)[0]
    full_text = _text(reference)
    stop = " " + _text(reference[10:12])  # spans two tokens
    first = full_text.find(stop)
    engine = _engine(tiny)
    engine.options = EngineOptions(stop_check_every=3)
    got = _run(engine, PROMPTS[:1], SamplingParams(max_new_tokens=30), stops=(stop, "never there"))[("t/0", 0)]
    assert got.finish_reason == "stop"
    assert got.text == full_text[:first]
    tokens_needed = next(m for m in range(1, 31) if stop in _text(reference[:m]))
    assert got.num_tokens == tokens_needed


def test_tokens_read_a_step_late_give_the_same_completions(tiny, monkeypatch):
    """On CUDA the host reads each step's tokens while the next step runs, so a read can bring a token for a
    sample that already ended (skipped) or whose row moved (compaction). The CPU path reads at once; here it is
    made to lag a step as CUDA does: every completion must stay the same (ends, stops, freed and reused rows)."""
    from evalsuite.engine import engine as engine_module

    reference = _hf_generate(tiny, PROMPTS[:1], 12)[0]
    params = SamplingParams(n=6, temperature=0.9, max_new_tokens=16, seed=5)
    stops = (" " + _text(reference[4:6]),)
    lengths = {s: 2 + (5 * s) % 13 for s in range(6)}

    def run():
        engine = Engine(tiny, decode_tokens=_text, eos_token_ids=[reference[7]], options=EngineOptions(
            max_rows=8, stop_check_every=2))
        return _run(engine, PROMPTS, params, samples=range(6), stops=stops,
                    forced_lengths=lambda task, index: lengths[index] if task != "t/0" else None)

    at_once = run()
    monkeypatch.setattr(engine_module._Loop, "_done", lambda self, launched: False)
    late = run()
    assert late == at_once
    assert len({c.finish_reason for c in at_once.values()}) >= 2  # samples end in more than one way


def test_supports_only_covered_architectures(tiny):
    assert Engine.supports(tiny)
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=1, n_head=2))
    assert not Engine.supports(gpt2)
    assert "GPT2LMHeadModel" in Engine.unsupported_reason(gpt2)


def test_greedy_samples_of_a_prompt_are_decoded_once_and_masked_ids_never_appear(tiny):
    reference = _hf_generate(tiny, PROMPTS[:1], 10)[0]
    banned = max(reference)  # mask every id from the largest one greedy decoding picks
    engine = Engine(tiny, decode_tokens=_text, eos_token_ids=[], vocab_limit=banned)
    got = _run(engine, PROMPTS[:1], SamplingParams(n=3, max_new_tokens=10), samples=(0, 1, 2))
    assert engine.stats.steps <= 10  # one row, not three
    texts = {c.text for c in got.values()}
    assert len(got) == 3 and len(texts) == 1
    assert all(t < banned for t in _ids(texts.pop()))


def test_fused_projections_are_views_and_follow_replaced_weights():
    """GPT-J's q, k, v and fc_in run as one matrix product over one weight tensor per layer, of which the
    modules' own weights are views (no second copy); weights replaced after the engine was built (as
    ``model.to`` does) are fused again at the next step, and the tokens stay transformers' own."""
    model = _tiny("gptj")
    engine = _engine(model)
    attn, mlp = model.transformer.h[0].attn, model.transformer.h[0].mlp
    fused = engine.adapter._fused[0]
    assert engine.adapter.fuse and fused.weight.shape[0] == 3 * attn.q_proj.weight.shape[0] + mlp.fc_in.weight.shape[0]
    assert attn.k_proj.weight.untyped_storage().data_ptr() == fused.weight.untyped_storage().data_ptr()
    assert mlp.fc_in.bias.untyped_storage().data_ptr() == fused.bias.untyped_storage().data_ptr()
    expected = _hf_generate(model, PROMPTS, 12)
    got = _run(engine, PROMPTS, SamplingParams(max_new_tokens=12))
    assert [_ids(got[(f"t/{i}", 0)].text) for i in range(len(PROMPTS))] == expected
    for parameter in model.parameters():  # what model.to(...) does to every parameter
        parameter.data = parameter.data.clone()
    assert not fused.current()
    got = _run(engine, PROMPTS, SamplingParams(max_new_tokens=12))
    assert [_ids(got[(f"t/{i}", 0)].text) for i in range(len(PROMPTS))] == expected
    assert engine.adapter._fused[0].current()


@pytest.mark.parametrize("family", ["llama", "gemma2"])
def test_llama_like_q_k_v_and_gate_up_are_one_product_each(family):
    """Llama-like blocks run q, k, v as one product and a gated MLP's gate and up as another, over weights of
    which the modules' own are views; replaced weights are fused again; the tokens stay transformers' own."""
    model = _tiny(family)
    engine = _engine(model)
    block = model.model.layers[0]
    qkv, gate_up = engine.adapter._fused[0], engine.adapter._fused_mlp[0]
    assert qkv.sizes == (block.self_attn.q_proj.weight.shape[0], block.self_attn.k_proj.weight.shape[0],
                         block.self_attn.v_proj.weight.shape[0])
    assert gate_up.weight.shape[0] == 2 * block.mlp.gate_proj.weight.shape[0]
    assert block.mlp.up_proj.weight.untyped_storage().data_ptr() == gate_up.weight.untyped_storage().data_ptr()
    expected = _hf_generate(model, PROMPTS, 12)
    got = _run(engine, PROMPTS, SamplingParams(max_new_tokens=12))
    assert [_ids(got[(f"t/{i}", 0)].text) for i in range(len(PROMPTS))] == expected
    block.mlp.gate_proj.weight.data = block.mlp.gate_proj.weight.data.clone()  # as model.to(...) replaces it
    assert not gate_up.current()
    got = _run(engine, PROMPTS, SamplingParams(max_new_tokens=12))
    assert [_ids(got[(f"t/{i}", 0)].text) for i in range(len(PROMPTS))] == expected
    assert engine.adapter._fused_mlp[0].current()


def test_batch_invariant_steps_are_always_full_width_and_shards_reproduce_the_whole_run():
    """Under ``batch_invariant`` every step computes ``invariant_rows`` rows (idle ones padded), however few
    samples are left, so the prompts split in two engine calls (as two data-parallel ranks would run them)
    give the whole run's tokens."""
    model = _tiny("llama")
    params = SamplingParams(n=5, temperature=0.9, max_new_tokens=14, seed=11)
    lengths = {s: 2 + (5 * s) % 13 for s in range(5)}  # the batch empties unevenly

    def engine():
        return Engine(model, decode_tokens=_text, eos_token_ids=[],
                      options=EngineOptions(batch_invariant=True, invariant_rows=8, max_rows=512))

    def run(prompt_indices):
        requests = [GenerationRequest(task_id=f"t/{i}", prompt="", sample_indices=tuple(range(5)))
                    for i in prompt_indices]
        made = engine()
        got = {(c.task_id, c.sample_index): c for c in made.generate(
            requests, params, prompt_ids=[PROMPTS[i] for i in prompt_indices],
            forced_lengths=lambda task_id, sample: lengths[sample])}
        return got, made.stats

    whole, stats = run(range(4))
    assert stats.steps > 0 and stats.row_steps == 8 * stats.steps  # never a smaller bucket at the end
    first, _ = run([0, 2])
    second, stats = run([3, 1])
    assert stats.row_steps == 8 * stats.steps
    assert {**first, **second} == whole
    assert Engine(model, decode_tokens=_text, options=EngineOptions(batch_invariant=True)).decode_width(3) == 256
    assert _engine(model).decode_width(3) == 3


def test_norms_the_engine_fuses_are_llamas_rms_norm():
    """add_then_norm computes LlamaRMSNorm's forward in one kernel for the classes it names: each must still
    be that forward in the installed transformers (a family that changes its norm drops out of the list)."""
    import importlib
    import inspect

    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    from evalsuite.engine.fused_ops import PLAIN_RMS_NORMS

    for name in PLAIN_RMS_NORMS:
        family = name.removesuffix("RMSNorm").lower()
        module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
        assert inspect.getsource(getattr(module, name).forward) == inspect.getsource(LlamaRMSNorm.forward), name


def test_the_step_floor_counts_each_prompts_keys_once_and_each_rows_own():
    """EngineStats.context_tokens (the keys and values a step must read, for the benchmarks' floor): the samples
    of one prompt share its stored keys, so a step reads them once, however many of its rows are busy."""
    import numpy as np

    from evalsuite.engine.scheduler import FinishRule, PromptJob, RowTable, SampleJob, TokenBook

    prompts = [PromptJob(GenerationRequest(f"t/{i}", "", (0, 1, 2)), ids=[1] * length, first_sample=3 * i)
               for i, length in enumerate((10, 7))]
    jobs = [SampleJob(index=3 * i + s, prompt=prompt, sample_index=s, limit=50) for i, prompt in enumerate(prompts)
            for s in range(3)]
    rows = RowTable(8, len(jobs))
    book = TokenBook(rows, jobs, FinishRule(eos_ids=frozenset(), ignore_eos=True, decode=lambda *a: "",
                                            decode_tokens=lambda ids: ""))
    for job in jobs[:5]:  # prompt 0's three samples, two of prompt 1's; row 5 onwards idle
        book.start(rows.take(job))
    step = np.array([0, 1, 2, 3, 4, -1, -1, -1])
    appended, context, _ = book.append(step, np.full(8, 5))
    assert (appended, context) == (5, 5 * 1 + 10 + 7)  # each row's one generated token, each prompt once
    book.finish(jobs[0])
    appended, context, _ = book.append(step, np.full(8, 5))
    assert (appended, context) == (4, 4 * 2 + 10 + 7)
    for job in jobs[1:3]:
        book.finish(job)
    appended, context, _ = book.append(step, np.full(8, 5))
    assert (appended, context) == (2, 2 * 3 + 7)  # prompt 0 has no busy row left: its keys are not read


def test_a_runs_record_carries_its_mean_steps_cost_and_its_floor_at_a_devices_rates():
    """Engine.step_cost (in every record's ``model.engine.step_cost``): the mean decode step's weights, keys and
    values, and arithmetic, from the run's own counts; its floor at a device's rates is memory-bound for a few
    rows of a tiny model and compute-bound once the products dominate."""
    from dataclasses import replace

    from evalsuite.engine.kv_cache import kv_bytes_per_token
    from evalsuite.engine.step_cost import StepCost

    model = _tiny("gptj")
    engine = _engine(model, rows=4)
    assert engine.step_cost() is None  # no step yet
    _run(engine, PROMPTS, SamplingParams(n=3, temperature=0.8, max_new_tokens=12, seed=3), samples=(0, 1, 2))
    stats, cost = engine.stats, engine.step_cost()
    parameters = sum(p.numel() for p in model.parameters())
    assert cost.steps == stats.steps > 0
    assert cost.weight_bytes == parameters * 4  # float32, each parameter once
    per_token = kv_bytes_per_token(engine.adapter.spec, engine.adapter.num_layers, torch.float32)
    assert cost.kv_bytes == pytest.approx(per_token * stats.context_tokens / stats.steps) and cost.kv_bytes > 0
    assert cost.flops == pytest.approx(2 * parameters * stats.row_steps / stats.steps)
    assert cost.decode_ms == pytest.approx(1000 * (stats.loop_s - stats.prefill_s) / stats.steps, abs=1e-3)
    assert StepCost(**engine.describe()["step_cost"]) == cost  # what a record carries rebuilds the same cost

    floor = cost.floor(bytes_per_s=3e12, flops_per_s=67e12)
    assert floor.memory_ms == pytest.approx(1000 * (cost.weight_bytes + cost.kv_bytes) / 3e12)
    assert floor.bound == "memory" and floor.floor_ms == floor.memory_ms  # a tiny model at a few rows
    wide = replace(cost, flops=cost.flops * 1e6).floor(bytes_per_s=3e12, flops_per_s=989e12)
    assert wide.bound == "compute" and wide.floor_ms == wide.compute_ms > wide.memory_ms
    assert f"floor {floor.floor_ms:.3f}" in floor.note() and floor.of_floor == floor.floor_ms / cost.decode_ms


def test_attention_programs_start_with_the_rows_that_read_the_most_keys():
    """The launch order of the decode attention (kernels.longest_rows_first): a permutation of the rows, most keys
    first, ties in row order; over a shared prompt a row's program reads only its own keys, else the prompt's too."""
    from evalsuite.engine.kernels import longest_rows_first

    p_len = torch.tensor([5, 40, 0, 40, 5, 12], dtype=torch.int32)
    g_len = torch.tensor([30, 1, 1, 9, 30, 2], dtype=torch.int32)
    own = longest_rows_first(p_len, g_len, shared_prefix=True)
    assert own.dtype == torch.int32 and own.tolist() == [0, 4, 3, 5, 1, 2]
    assert longest_rows_first(p_len, g_len, shared_prefix=False).tolist() == [3, 1, 0, 4, 5, 2]


def test_balanced_work_lists_every_part_of_every_row_once_within_twice_the_rows():
    """On random long-tailed lengths (kernels.balanced_work, plain torch): each (row, part < parts[row]) exactly once,
    a row's parts consecutive from first[row], in the given order, no part longer than the chunk, the lists within
    the room a spread allows, every cut row among those merged."""
    from evalsuite.engine.kernels import balanced_work, longest_rows_first

    g = torch.Generator().manual_seed(3)
    for trial in range(40):
        batch = int(torch.randint(1, 300, (1,), generator=g))
        g_len = (torch.distributions.Gamma(2.0, 2.0 / 150).sample((batch,)).clamp(1, 512)).to(torch.int32)
        p_len = torch.randint(0, 400, (batch,), generator=g, dtype=torch.int32)
        shared = trial % 2 == 0
        order = longest_rows_first(p_len, g_len, shared)
        block = (1, 16, 32)[trial % 3]
        work = balanced_work(p_len, g_len, shared, order, block, spread=1 + trial % 3)
        spread = 1 + trial % 3
        cut = -(-batch // spread)
        assert work.row.shape == (batch + cut,) and work.merged.tolist() == order[:cut].tolist()
        assert all(int(work.parts[r]) == 1 for r in order[cut:].tolist())  # every cut row is in merged
        keys = (g_len if shared else g_len + p_len).long()
        live = work.row >= 0
        pairs = sorted(zip(work.row[live].tolist(), work.part[live].tolist()))
        assert pairs == sorted((r, p) for r in range(batch) for p in range(int(work.parts[r])))
        for r in range(batch):
            f = int(work.first[r])
            assert work.row[f:f + int(work.parts[r])].tolist() == [r] * int(work.parts[r])
            assert work.part[f:f + int(work.parts[r])].tolist() == list(range(int(work.parts[r])))
        assert [r for r in work.row.tolist() if r >= 0] == [r for r in order.tolist()
                                                            for _ in range(int(work.parts[r]))]
        mean = -(-int(keys.sum()) * (1 + trial % 3) // batch)
        chunk = max(block, -(-mean // block) * block)
        assert torch.equal(work.parts.long(), torch.clamp(-(-keys // chunk), min=1))


@pytest.mark.parametrize("read_late", [False, True])
def test_samples_that_outgrow_their_blocks_or_are_evicted_give_the_same_completions(read_late, monkeypatch):
    """The arena (kv_cache.py): a sample starts in a small block and moves to larger ones as it grows; when no
    block is left the youngest sample is evicted and starts again. With an arena far smaller than a full
    capacity per row, both happen often, and every completion must be the one a roomy arena gives (the
    tokens of an evicted sample's earlier run, still in flight when it is evicted, are dropped)."""
    from evalsuite.engine import engine as engine_module
    from evalsuite.engine import kv_cache
    from evalsuite.engine.kv_cache import kv_bytes_per_token

    model = _tiny("gptj")
    params = SamplingParams(n=6, temperature=0.9, max_new_tokens=40, seed=11)
    lengths = {s: 4 + (11 * s) % 37 for s in range(6)}  # 4 to 40 tokens

    def run(budget=None):
        engine = Engine(model, decode_tokens=_text, eos_token_ids=[], options=EngineOptions(
            max_rows=8, first_block=4, cache_budget_bytes=budget))
        got = _run(engine, PROMPTS, params, samples=range(6), forced_lengths=lambda task, index: lengths[index])
        return got, engine.stats

    roomy, roomy_stats = run()
    assert roomy_stats.evictions == 0
    monkeypatch.setattr(kv_cache, "PLANNED_TOKENS_PER_ROW", 8)
    if read_late:
        monkeypatch.setattr(engine_module._Loop, "_done", lambda self, launched: False)
    per_token = kv_bytes_per_token(Engine(model, decode_tokens=_text).adapter.spec, 2, torch.float32)
    # 4 prompt slots of 9 tokens, an arena of 128 tokens (8 rows x 64 would be a full capacity each), scratch
    tight, stats = run(per_token * (4 * 9 + 128 + 64))
    assert stats.rows == 8 and stats.evictions > 0 and stats.moves > 0
    assert tight == roomy
    assert stats.tokens == sum(c.num_tokens for c in tight.values())  # an evicted run's tokens are not counted


def test_greedy_tokens_equal_transformers_generate_while_samples_move_to_larger_blocks(tiny):
    """A sample starting in a 4-token block fills it and moves on (4, 8, 16, 32 tokens): every key written
    before and after a move is read back where it belongs, so greedy tokens stay those of transformers."""
    expected = _hf_generate(tiny, PROMPTS, 24)
    engine = Engine(tiny, decode_tokens=_text, eos_token_ids=[], options=EngineOptions(first_block=4))
    got = _run(engine, PROMPTS, SamplingParams(max_new_tokens=24))
    assert [_ids(got[(f"t/{i}", 0)].text) for i in range(len(PROMPTS))] == expected
    assert engine.stats.grown >= len(PROMPTS) * 3  # every sample's block doubled at 4, 8 and 16 tokens
