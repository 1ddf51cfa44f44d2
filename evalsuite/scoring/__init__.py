"""Scoring: per-sample verdicts -> per-problem counts -> exact unbiased pass@k with honest intervals.

:mod:`~evalsuite.scoring.passk` is the estimator, :mod:`~evalsuite.scoring.intervals` the confidence
intervals, :mod:`~evalsuite.scoring.score` the score of a run, :mod:`~evalsuite.scoring.summary` the typed summary
it hands on (and its file, summary.json).
"""

from evalsuite.scoring.passk import PassAtK, computable_ks, estimate, pass_at_k
from evalsuite.scoring.score import Score, score
from evalsuite.scoring.summary import ProblemTally, ScoreSummary, SetScore, tallies_from_json

__all__ = ["PassAtK", "ProblemTally", "Score", "ScoreSummary", "SetScore", "computable_ks", "estimate", "pass_at_k",
           "score", "tallies_from_json"]
