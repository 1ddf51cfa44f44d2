"""evalsuite's benchmarks: one entry point, ``python -m benchmarks SUITE [ARGS...]`` (see ``__main__.py``)."""
