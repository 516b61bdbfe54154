"""The facts a run's checks can ever read, from the catalogue: the others are not made.

Every `import numpy` made an "import:numpy" fact and every `os.environ["TOKENIZERS_PARALLELISM"] = ...`
an "env_set:" and an "env_value:" fact, carried in every state after it and in every exposed event's
saved state (vllm: 869,000 import facts and 338,000 env facts of 1.23 million), while the checks
ask only for the imports that freeze a variable (`frozen_by = "import:cupy"`) and the variables the
catalogue names: the rules' own, and those of `unless_env` / `when_env` / `spawn_when_env`.
"""
from __future__ import annotations

from cudalint.core.catalogue import Catalogue


def import_keys(catalogue: Catalogue) -> frozenset[str]:
    """The "import:<module>" facts some variable's freezing reads (cudalint.checks.env)."""
    return frozenset(k for var in catalogue.env for k in var.frozen_keys if k.startswith("import:"))


def judged_env_names(catalogue: Catalogue) -> frozenset[str]:
    """The variables whose writes a check judges (a write of any other one only makes facts)."""
    return frozenset(var.name for var in catalogue.env)


def env_names(catalogue: Catalogue) -> frozenset[str]:
    """The variables whose writes a check or a catalogued condition reads."""
    names = {var.name for var in catalogue.env}
    for api in catalogue.apis:
        for field in ("unless_env", "when_env"):
            names.update(var for var, _value in api.get(field) or ())
        names.update(dict(api.get("spawn_when_env") or ()))
    return frozenset(names)
