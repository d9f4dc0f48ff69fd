"""No silent skips (SPEC X7): a skipped or xfailed test fails unless it is listed.

Every intended skip is named here with a one-line reason; anything else that skips
(a missing prerequisite, a forgotten ``skipif``) turns into a failure that says so.
Loaded by ``conftest.py`` as a plugin, so ``make test`` and CI enforce it alike.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

# test node id (as pytest prints it) -> why skipping it is right
KNOWN_SKIPS: dict[str, str] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    xfailed = hasattr(report, "wasxfail")
    if (report.skipped or xfailed) and item.nodeid not in KNOWN_SKIPS:
        why = "xfailed" if xfailed else "skipped"
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} {why} but is not listed in tests/skips.py KNOWN_SKIPS; "
            "a missing prerequisite must fail with how to install it"
        )
