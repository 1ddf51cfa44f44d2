"""Scoring: per-sample verdicts -> per-problem counts -> exact unbiased pass@k with honest intervals.

:mod:`~evalsuite.scoring.passk` is the estimator, :mod:`~evalsuite.scoring.intervals` the confidence
intervals, :mod:`~evalsuite.scoring.score` the summary of a run.
"""

from evalsuite.scoring.passk import PassAtK, computable_ks, estimate, pass_at_k
from evalsuite.scoring.score import Score, SetScore, score

__all__ = ["PassAtK", "Score", "SetScore", "computable_ks", "estimate", "pass_at_k", "score"]
