"""pass@k against exact rational arithmetic: 1 - C(n-c, k) / C(n, k) computed with fractions."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.scoring.passk import computable_ks, estimate, pass_at_k


def exact(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(comb(n - c, k), comb(n, k))


GRID = [(n, c, k) for n in (1, 2, 3, 5, 10, 20, 37, 100, 200) for c in sorted({0, 1, 2, n // 3, n // 2, n - 1, n})
        if 0 <= c <= n for k in sorted({1, 2, 5, 10, 50, 100, n}) if k <= n]


@pytest.mark.parametrize("n,c,k", GRID)
def test_matches_exact_fraction(n, c, k):
    assert pass_at_k(n, c, k) == pytest.approx(float(exact(n, c, k)), rel=1e-12, abs=1e-15)


def test_large_n_is_stable_where_binomials_overflow_floats():
    n, c, k = 2000, 3, 1000  # C(2000, 1000) ~ 1e600 does not fit in a float
    assert pass_at_k(n, c, k) == pytest.approx(float(exact(n, c, k)), rel=1e-12)


def test_edges():
    assert pass_at_k(10, 0, 1) == 0.0
    assert pass_at_k(10, 10, 10) == 1.0
    assert pass_at_k(10, 1, 10) == 1.0  # n - c < k: every draw of k contains the pass
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)


def test_k_greater_than_n_is_a_clear_error():
    with pytest.raises(EvalsuiteError, match=r"pass@11 needs at least 11 samples"):
        pass_at_k(10, 3, 11)


@pytest.mark.parametrize("n,c,k", [(5, 6, 1), (5, -1, 1), (5, 2, 0)])
def test_invalid_counts(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_estimate_is_the_mean_over_problems_and_ks_split_by_smallest_n():
    counts = {"a": (10, 2), "b": (10, 10), "c": (20, 0)}
    result = estimate(counts, 1)
    assert result.value == pytest.approx((0.2 + 1.0 + 0.0) / 3)
    assert result.ci_low <= result.value <= result.ci_high
    ok, skipped = computable_ks([1, 10, 100], counts)
    assert ok == [1, 10] and list(skipped) == [100]
    assert "smallest n is 10" in skipped[100]


def test_intervals_stay_honest_when_every_problem_has_the_same_value():
    """All failed or all solved: the bootstrap collapses to a point; the Wilson interval does not claim certainty."""
    from evalsuite.scoring.intervals import wilson_interval

    none_solved = estimate({f"p{i}": (1, 0) for i in range(10)}, 1)
    assert none_solved.value == 0.0 and none_solved.ci_method == "wilson"
    assert none_solved.ci_low == 0.0 and 0.25 < none_solved.ci_high < 0.31
    all_solved = estimate({f"p{i}": (5, 5) for i in range(164)}, 1)
    assert all_solved.ci_method == "wilson" and all_solved.ci_high > 0.9999 and 0.97 < all_solved.ci_low < 0.98
    mixed = estimate({f"p{i}": (4, i % 3) for i in range(30)}, 1)
    assert mixed.ci_method == "bootstrap" and mixed.ci_low < mixed.value < mixed.ci_high
    low, high = wilson_interval(0.5, 100)
    assert abs(low - 0.4038) < 1e-3 and abs(high - 0.5962) < 1e-3  # the textbook values
    # one rate reached through different counts (1 of 3, 2 of 6, 3 of 9) differs only in its last bits: the
    # bootstrap gave [0.3333, 0.3333] and called it "bootstrap"
    thirds = estimate({"a": (3, 1), "b": (6, 2), "c": (9, 3)}, 1)
    assert thirds.ci_method == "wilson" and thirds.ci_low < 0.2 and thirds.ci_high > 0.6


def test_score_summary_is_summary_json_and_reads_back_to_the_same_bytes():
    """The typed summary the scoring stage hands on writes summary.json key for key, in the file's order, and a
    file read back writes the same bytes: pass@k, intervals and methods, what was not computable, verdict counts,
    timeouts, flags, EvalPlus sets, the per-problem tallies, then the command's own fields."""
    import json

    from evalsuite.records import SampleResult, SetVerdict
    from evalsuite.scoring import ProblemTally, ScoreSummary, score

    def result(task_id, j, base, plus):
        sets = {"base": SetVerdict("pass" if base else "fail"), "plus": SetVerdict("pass" if plus else "fail")}
        return SampleResult(task_id, j, base and plus, "passed" if base and plus else "failed: plus", 0.1,
                            flags=("non_plain_value",) if j == 1 else (), sets=sets)

    results = [result(f"T/{i}", j, (i + j) % 2 == 0, (i * j) % 3 == 0) for i in range(5) for j in range(3)]
    results.append(SampleResult("T/0", 3, False, "timed out", 3.0))
    results.append(SampleResult("T/1", 3, False, "timed out", 3.0))
    results.append(SampleResult("T/2", 3, False, "timed out", 3.0))
    results += [SampleResult(f"T/{i}", 3, True, "passed", 0.1) for i in range(3, 5)]
    scored = score(results, [1, 2, 10], bootstrap=50)
    fields = {"run_id": "r", "model": "m", "n": 4, "execution": {"mode": "bwrap"}}
    summary = scored.summary(fields)
    data = summary.to_json()
    assert list(data) == ["pass@1", "pass@2", "ci95", "ci_method", "not_computable", "n_samples", "n_problems",
                          "n_passed", "n_failed", "n_timed_out", "timed_out_per_problem", "flags", "sets",
                          "per_problem", "run_id", "model", "n", "execution"]
    assert data == {**scored.summary_json(), **fields}
    assert data["per_problem"]["T/0"] == {"n": 4, "c": scored.per_problem["T/0"]["c"]}
    assert summary.per_problem["T/0"] == ProblemTally(passed=scored.per_problem["T/0"]["c"], n=4)
    assert summary.n_timed_out == 3 and summary.timed_out_per_problem == {"T/0": 1, "T/1": 1, "T/2": 1}
    assert summary.not_computable == {10: "needs n >= 10 samples per problem; the smallest n is 4"}
    text = json.dumps(data, indent=2)
    again = ScoreSummary.from_json(json.loads(text))
    assert json.dumps(again.to_json(), indent=2) == text
    assert again.pass_at == summary.pass_at and again.per_problem == summary.per_problem
    assert again.fields == fields and again.sets["base"].n_passed == summary.sets["base"].n_passed
    assert "per_problem" not in summary.to_json(per_problem=False)
    with pytest.raises(EvalsuiteError, match="pass@1 but no ci95"):
        ScoreSummary.from_json({"pass@1": 0.5})


def test_the_interval_does_not_depend_on_the_order_the_problems_came_in():
    """The same verdicts in another order gave another bootstrap interval (red-team round 19)."""
    from evalsuite.scoring.passk import estimate

    counts = {f"t/{i}": (4, (i * 7) % 5) for i in range(20)}
    shuffled = dict(sorted(counts.items(), key=lambda item: hash(item[0]) % 97))
    assert list(shuffled) != list(counts)
    assert estimate(counts, 1) == estimate(shuffled, 1)
