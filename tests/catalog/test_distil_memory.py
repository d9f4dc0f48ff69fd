"""The static model's one-time distillation stays within a memory budget (issue 28):
the bundled MiniLM's every token through its encoder and a PCA, measured as the
kernel's peak RSS of a real process that distils into an empty model cache. Its table
becomes the run's cached one, so the tests of hybrid search do not distil again."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from convodex.semantic.static import DIMENSIONS, NAME

# An SVD of the whole float64 matrix peaked at 626 MiB (the weights, the activations
# of 2,048 tokens and four copies of the vocabulary's vectors); now 202 MiB.
BUDGET_MIB = 256


def test_distillation_peaks_under_the_budget(tmp_path: Path, model_cache: Path) -> None:
    cold = tmp_path / "models"
    env = {**os.environ, "CONVODEX_MODEL_CACHE": str(cold)}
    code = "from convodex.semantic.static import load; load()"
    proc = subprocess.Popen([sys.executable, "-c", code], env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0
    tables = sorted(cold.glob(f"{NAME}-*.npy"))
    assert len(tables) == 1, "the distilled table was not cached"
    peak_mib = usage.ru_maxrss / 1024  # KiB on Linux
    assert peak_mib <= BUDGET_MIB, f"distilling peaked at {peak_mib:.0f} MiB"
    table = np.load(tables[0])
    assert table.shape[1] == DIMENSIONS and table.dtype == np.float32
    assert np.isfinite(table).all() and np.abs(table).max() > 0
    model_cache.mkdir(parents=True, exist_ok=True)
    if not (model_cache / tables[0].name).exists():  # the run's cache: distilled once
        shutil.copy(tables[0], model_cache / tables[0].name)
