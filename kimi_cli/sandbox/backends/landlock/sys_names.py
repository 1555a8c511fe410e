"""Old names for callers outside the sandbox package (confine_reader.py); the routine lives in restrict.py."""

from __future__ import annotations

from kimi_cli.kernel.restrict import PR_SET_NO_NEW_PRIVS, SYS_LANDLOCK_RESTRICT_SELF, landlock_abi
from kimi_cli.kernel.restrict import Unavailable as LandlockUnavailable
from kimi_cli.kernel.restrict import create_ruleset as _create_ruleset
from kimi_cli.sandbox.backends.landlock.rules import LandlockPlan

__all__ = ["PR_SET_NO_NEW_PRIVS", "SYS_LANDLOCK_RESTRICT_SELF", "LandlockUnavailable", "create_ruleset", "landlock_abi"]


def create_ruleset(plan: LandlockPlan, abi: int) -> int:
    return _create_ruleset(
        abi, plan.handled_fs, plan.handled_net, plan.scoped, [(g.path, g.access) for g in plan.grants]
    )
