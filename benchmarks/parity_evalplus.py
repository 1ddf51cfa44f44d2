"""Verdict parity with EvalPlus 0.3.1's ``untrusted_check`` on whole programs, on HumanEval's base tests.

The comparison is tests/parity_evalplus.py (the tests run a slice of it); this runs it whole, with its own arguments."""

from peer_code import run_from_tests

run_from_tests("parity_evalplus")
