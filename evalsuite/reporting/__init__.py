"""Reporting: the leaderboard file (:mod:`.leaderboard`), its JSON Schema (:mod:`.schema`), the static
leaderboard page (:mod:`.pages`) and the per-run report page (:mod:`.run_page`).

Scoring (:mod:`evalsuite.scoring`) never imports from here; reporting reads scores, never the reverse.
"""
