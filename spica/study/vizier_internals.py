"""Vizier's unexported modules Spica builds on, imported here and nowhere else.

Vizier's public API runs a study through its client with Vizier's own designers; Spica's
designers reuse pieces of Vizier's GP and serve studies in-process with their own policies,
which the public modules do not export. Each import below says what the public API lacks,
so a Vizier upgrade that moves one of them breaks here, in one place.
"""

from __future__ import annotations

from spica.study.jax_setup import configure_jax

configure_jax()  # before Vizier/JAX create any array: its GP code needs float64

# The random, quasi-random and GP-UCB-PE designers: vizier.algorithms.designers exports them,
# but importing it imports every designer, and BOCS's needs cvxpy (not installed). GP-UCB-PE's
# acquisition parts (UCBPEConfig, UCBScoreFunction, PEScoreFunction) are not exported at all.
from vizier._src.algorithms.designers import gp_ucb_pe  # noqa: E402
from vizier._src.algorithms.designers import quasi_random  # noqa: E402
from vizier._src.algorithms.designers import random as random_designer  # noqa: E402

# The label warping GP designers apply before fitting: not exported.
from vizier._src.algorithms.designers.gp import output_warpers  # noqa: E402

# The GP's array types (ModelData, ModelInput, PaddedArray, ...): vizier.jax exports none.
from vizier._src.jax import types  # noqa: E402

# A model with fitted parameters, a model coroutine bound to data, the ensemble predictive:
# vizier.jax.models exports the model and its constraints, not these.
from vizier._src.jax import stochastic_process_model  # noqa: E402

# An in-process service whose Pythia policies Spica supplies: vizier.service.servers only
# starts gRPC servers, with Vizier's own policy factory.
from vizier._src.service import pythia_service, resources, vizier_client, vizier_service  # noqa: E402

__all__ = [
    "gp_ucb_pe",
    "output_warpers",
    "pythia_service",
    "quasi_random",
    "random_designer",
    "resources",
    "stochastic_process_model",
    "types",
    "vizier_client",
    "vizier_service",
]
