"""The no-silent-skips rule itself: an unlisted skip or xfail fails the run."""

from __future__ import annotations

import pytest


def test_an_unlisted_skip_or_xfail_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        def test_skipped():
            pytest.skip("no browser")

        @pytest.mark.xfail(reason="flaky")
        def test_xfailed():
            assert False

        def test_fine():
            pass
        """
    )
    result = pytester.runpytest("-p", "skips")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*test_skipped skipped but is not listed*KNOWN_SKIPS*"])
    result.stdout.fnmatch_lines(["*test_xfailed xfailed but is not listed*"])


def test_a_listed_skip_passes(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    import skips

    pytester.makepyfile("import pytest\n\ndef test_skipped():\n    pytest.skip('intended')\n")
    monkeypatch.setitem(skips.KNOWN_SKIPS, "test_a_listed_skip_passes.py::test_skipped", "demo")
    result = pytester.runpytest_inprocess("-p", "skips")
    result.assert_outcomes(skipped=1)
