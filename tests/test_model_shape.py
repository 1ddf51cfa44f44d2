"""One reader of a model's shape: the batcher and the planner size the KV cache by the same rule."""

from types import SimpleNamespace

import pytest

from evalsuite.generation.hf.batching import kv_bytes_per_token
from evalsuite.models.shape import config_shape


def config(**fields):
    base = dict(hidden_size=64, num_attention_heads=8, num_hidden_layers=2, vocab_size=100)
    return SimpleNamespace(**{**base, **fields})


@pytest.mark.parametrize("fields, kv_heads", [
    # GQA with multi_query also set: the old batcher said 1 head, the planner 2; the explicit count wins.
    (dict(num_key_value_heads=2, multi_query=True), 2),
    # An old RefinedWeb config's n_head_kv: the old planner ignored it (8 heads).
    (dict(n_head_kv=2, multi_query=False), 2),
    # Falcon-40B: new decoder architecture, num_kv_heads=4, multi_query left True: both old rules said 1.
    (dict(new_decoder_architecture=True, num_kv_heads=4, multi_query=True), 4),
    # Falcon-7B: multi-query, num_kv_heads filled with the head count by FalconConfig: one head.
    (dict(new_decoder_architecture=False, num_kv_heads=8, multi_query=True), 1),
    (dict(), 8),
])
def test_kv_heads_follow_one_rule(fields, kv_heads):
    shape = config_shape(config(**fields))
    assert shape.num_kv_heads == kv_heads
    assert kv_bytes_per_token(config(**fields), 2) == 2 * 2 * kv_heads * 8 * 2
