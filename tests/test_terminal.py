"""The one terminal table formatter every command prints with."""

from evalsuite.reporting.terminal import Table, key_values


def test_columns_two_spaces_apart_numbers_right_rule_and_free_last_column():
    table = Table([("gpt-j", "0.120", "a note"), ("m", "1.5", "")], ("model", "pass@1", "note"),
                  right=frozenset({1}), rule=True, pad_last=False)
    assert table.lines() == ["model  pass@1  note",
                             "-----  ------  ------",
                             "gpt-j   0.120  a note",
                             "m         1.5  "]
    assert table.offset(2) == len("model  pass@1  ")


def test_padded_last_column_and_key_values():
    assert Table([("a", "bb")], ("xyz", "c")).render() == "xyz  c \na    bb"
    assert key_values([("samples", "3"), ("problems", "2 of 164")]) == "samples   3\nproblems  2 of 164"
