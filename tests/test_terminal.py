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


def test_wide_characters_take_two_columns_and_the_columns_stay_aligned():
    """A model named "模型 α" (two wide characters) misaligned every column after its own by two."""
    from evalsuite.reporting.terminal import Table, display_width

    assert display_width("模型 α") == 6 and display_width("e\u0301") == 1
    lines = Table([["模型 α", "0.5"], ["gpt2", "0.25"]], header=["model", "pass@1"], right=frozenset({1})).lines()
    assert [display_width(line) for line in lines] == [14, 14, 14]
