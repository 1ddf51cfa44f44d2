"""Execution: turn samples into sandboxed jobs (:mod:`sandbox`) and verdicts, with per-problem timeouts."""
