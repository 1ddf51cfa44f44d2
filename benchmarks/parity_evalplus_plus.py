"""Verdict parity with ``evalplus.evaluate`` (EvalPlus 0.3.1) on base and plus inputs, on probe programs
and real problems.

The comparison is tests/parity_evalplus_plus.py (the tests run a slice of it); this runs it whole, with its own arguments."""

from peer_code import run_from_tests

run_from_tests("parity_evalplus_plus")
