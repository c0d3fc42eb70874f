"""The embedded default search's GP functions, exported at setup (bin/setup runs this module,
after spica/bytecode.py; like it, a setup step beside the app, not part of the search package).

A model-based study's GP functions are traced and compiled once per machine and kept in Spica's
cache (spica/study/exported.py). Without this step the first search on a machine does that
while its first rounds replay, and its first model-based ask waits for it: `bin/spica` on an
empty cache spent 3.9 s of its 7.4 s wall choosing with no replay running (52.8 %), the next
run 0.3 s of 3.9 s. Opening the default search's studies here and waiting for their warm-ups
does it once per install; a search whose GP arrays have other sizes (two objectives, larger
rounds) still exports its own on first use.
"""

from __future__ import annotations

from spica.cli.hydra_app import compose
from spica.plan import compile_plan
from spica.search.branches import branches_for
from spica.search.run import open_searches
from spica.study.fast_designer import wait_for_warm_ups


def export_default_search() -> None:
    config = compose([])[0]
    open_searches(compile_plan(config), branches_for(config))
    wait_for_warm_ups()


if __name__ == "__main__":
    export_default_search()
