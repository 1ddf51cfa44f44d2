"""Reporting, from a finished run to what people read:

* :mod:`.model` (what an entry is, its settings key), :mod:`.entries` (an entry built from a run),
  :mod:`.labels` (how every view names an entry);
* :mod:`.store` (``leaderboard.json``: read, validate, merge, write; renders nothing) and its JSON Schema
  (:mod:`.schema`);
* :mod:`.gate` (``--fail-under``);
* :mod:`.views` (the pages, registered in one place) and :mod:`.publish` (store, then redraw);
* :mod:`.terminal` (the one formatter of the terminal tables).

Scoring (:mod:`evalsuite.scoring`) never imports from here; reporting reads scores, never the reverse.
"""
