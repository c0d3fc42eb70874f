"""The in-process Vizier service behind every VizierStudy: one per storage directory, or one
per in-memory study.

Each storage directory gets its own VizierServicer over a SQLite file in it (Vizier's
default database lives inside site-packages) and its own Pythia service whose policy
factory builds Spica's seeded designers. Keeping the servicer per directory, instead of
Vizier's process-wide one, lets several runs (and tests) use separate databases in one
process. Studies still go through Vizier's real client, datastore and Pythia path.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from spica.study.jax_setup import configure_jax

configure_jax()  # before Vizier/JAX create any array: its GP code needs float64

import jax  # noqa: E402
from vizier import algorithms as vza  # noqa: E402
from vizier import pythia  # noqa: E402
from vizier import pyvizier as vz  # noqa: E402
from vizier.service import clients  # noqa: E402
from vizier.service import pyvizier as svz  # noqa: E402
from vizier.service.protos import study_pb2, vizier_service_pb2  # noqa: E402

from spica.study.fast_designer import FastDesigner, FastSettings, warm_up  # noqa: E402
from spica.study.points import PointSet, SpaceFillingDesigner  # noqa: E402
from spica.study.vizier_internals import gp_ucb_pe, pythia_service, resources, vizier_client, vizier_service  # noqa: E402

OWNER = "spica"
DATABASE_FILE = "vizier.sqlite"


@dataclass(frozen=True)
class DesignerSpec:
    """How to build the designer of one study; registered when the study is opened."""

    algorithm: str
    seed: int
    candidates: PointSet | None
    settings: FastSettings

    def designer(self, problem: vz.ProblemStatement, salt: int) -> vza.Designer:
        """A designer for the call made when the study holds `salt` trials."""
        return DESIGNERS[self.algorithm].make(self, problem, salt)


@dataclass(frozen=True)
class DesignerChoice:
    """One choice of `sweep.designer` (names: spica/study/algorithms.py)."""

    stored_as: str  # the algorithm name kept in the Vizier study (Vizier's own for "default")
    pool_aware: bool  # picks only from the finite candidates, each once
    make: Callable[[DesignerSpec, vz.ProblemStatement, int], vza.Designer]
    warm_up: Callable[..., Future | None] | None = None  # traces its JAX functions ahead (fast_designer.warm_up)


def _fast(spec: DesignerSpec, problem: vz.ProblemStatement, salt: int) -> vza.Designer:
    return FastDesigner(problem, spec.candidates, seed=spec.seed, salt=salt, settings=spec.settings)


def _gp_ucb_pe(spec: DesignerSpec, problem: vz.ProblemStatement, salt: int) -> vza.Designer:
    return gp_ucb_pe.VizierGPUCBPEBandit(problem, rng=jax.random.fold_in(jax.random.PRNGKey(spec.seed), salt))


def _space_filling(quasi: bool) -> Callable[[DesignerSpec, vz.ProblemStatement, int], vza.Designer]:
    def make(spec: DesignerSpec, problem: vz.ProblemStatement, salt: int) -> vza.Designer:
        return SpaceFillingDesigner(problem, spec.candidates, quasi=quasi, seed=spec.seed, salt=salt)

    return make


DESIGNERS = {
    "fast": DesignerChoice("SPICA_FAST", True, _fast, warm_up),
    "default": DesignerChoice("DEFAULT", False, _gp_ucb_pe),
    "random": DesignerChoice("SPICA_RANDOM", True, _space_filling(quasi=False)),
    "quasi_random": DesignerChoice("SPICA_QUASI_RANDOM", True, _space_filling(quasi=True)),
}


class SeededDesignerPolicy(pythia.Policy):
    """Vizier's DesignerPolicy, with the designer seeded per call for reproducible studies."""

    def __init__(self, supporter: pythia.PolicySupporter, make: Callable[[vz.ProblemStatement, int], vza.Designer]):
        self._supporter = supporter
        self._make = make

    def suggest(self, request: pythia.SuggestRequest) -> pythia.SuggestDecision:
        designer = self._make(request.study_config, request.max_trial_id)
        completed = self._supporter.GetTrials(status_matches=vz.TrialStatus.COMPLETED)
        active = self._supporter.GetTrials(status_matches=vz.TrialStatus.ACTIVE)
        designer.update(vza.CompletedTrials(completed), vza.ActiveTrials(active))
        return pythia.SuggestDecision(designer.suggest(request.count), metadata=vz.MetadataDelta())

    def early_stop(self, request: pythia.EarlyStopRequest) -> pythia.EarlyStopDecisions:
        raise NotImplementedError("Spica studies do not stop trials early")

    @property
    def name(self) -> str:
        return "SeededDesignerPolicy"


class SpicaPolicyFactory(pythia.PolicyFactory):
    """Pythia policy factory that knows each open study's designer spec."""

    def __init__(self) -> None:
        self._specs: dict[str, DesignerSpec] = {}

    def register(self, study_name: str, spec: DesignerSpec) -> None:
        self._specs[study_name] = spec

    def __call__(
        self,
        problem_statement: vz.ProblemStatement,
        algorithm: str,
        policy_supporter: pythia.PolicySupporter,
        study_name: str,
    ) -> pythia.Policy:
        if study_name not in self._specs:
            raise KeyError(f"study {study_name!r} was not opened through VizierStudy in this process")
        return SeededDesignerPolicy(policy_supporter, self._specs[study_name].designer)


@dataclass(frozen=True)
class Engine:
    """A Vizier service over one SQLite file, and the policy factory it suggests with."""

    service: vizier_service.VizierServicer
    policies: SpicaPolicyFactory

    def open_study(self, config: svz.StudyConfig, study_id: str, spec: DesignerSpec) -> clients.Study:
        """Creates the study, or loads it (with all its trials) if the id exists."""
        name = resources.StudyResource(OWNER, study_id).name
        self.policies.register(name, spec)
        request = vizier_service_pb2.CreateStudyRequest(
            parent=resources.OwnerResource(OWNER).name,
            study=study_pb2.Study(display_name=study_id, study_spec=config.to_proto()),
        )
        created = self.service.CreateStudy(request)
        return clients.Study(vizier_client.VizierClient(created.name, clients.UNUSED_CLIENT_ID, self.service))


_ENGINES: dict[Path, Engine] = {}
_ENGINES_LOCK = threading.Lock()


def engine_for(storage_dir: Path | None) -> Engine:
    """The engine for `storage_dir` (created on first use; one per directory per process), or
    with None a new one over Vizier's in-memory datastore, for a study that lives for one run."""
    if storage_dir is None:
        return _new_engine(database_url=None)
    directory = Path(storage_dir).expanduser().resolve()
    with _ENGINES_LOCK:
        if directory not in _ENGINES:
            directory.mkdir(parents=True, exist_ok=True)
            _ENGINES[directory] = _new_engine(database_url=f"sqlite:///{directory / DATABASE_FILE}")
        return _ENGINES[directory]


def _new_engine(database_url: str | None) -> Engine:
    service = vizier_service.VizierServicer(database_url=database_url)
    policies = SpicaPolicyFactory()
    service.default_pythia_service = pythia_service.PythiaServicer(service, policies)
    return Engine(service, policies)
