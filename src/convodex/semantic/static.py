"""The static embedding model: a vector per vocabulary token, distilled once.

Why static: the contextual MiniLM reads about 10 KB of text a second on one core
(measured by ``bench/bench_quality.py --models``), hours for a year of sessions; its
distilled table embeds megabytes a second and needs only the tokenizer and NumPy at
search time. The distillation follows Model2Vec's recipe: each token alone through
the encoder (``[CLS] token [SEP]``, mean-pooled as the model pools sentences), a PCA
to ``DIMENSIONS`` that also removes the direction every token shares, and a Zipf
weight that lowers the most frequent tokens. It runs once per installed model (about
10 s on one core) and is kept in the model cache, named by the weights' size and
time, so a changed package is distilled again.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convodex import config
from convodex.errors import ConvodexError
from convodex.semantic import PACKAGE

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Array = npt.NDArray[np.float32]

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
INSTALL = "pip install 'convodex[semantic]'"
# The stored vectors' model: another name (or recipe version) means other vectors.
NAME = "minilm-l6-static-128-v2"
# 128 numbers a part: 5% of the corpus holds every vector (256 took 9.5% of the
# benchmark's 64 MB; measured by bench/bench_quality.py).
DIMENSIONS = 128
# Tokens of a text that count (its head): a long tool answer is not averaged flat.
MAX_TOKENS = 512
# Tokens through the encoder at once: 256 keeps its activations near 30 MB.
DISTIL_BATCH = 256
# Model2Vec's SIF coefficient for the Zipf weights.
SIF = 1e-3


class SemanticUnavailable(ConvodexError):
    """The model cannot be used: one line saying why; search stays lexical."""


def model_folder() -> Path:
    """The bundled model's files, or one clear line when the package is missing."""
    try:
        package: Any = importlib.import_module(PACKAGE)
    except ImportError as exc:
        raise SemanticUnavailable(f"semantic search needs its model package: {INSTALL}") from exc
    try:
        folder = package.bundled_model_path(MODEL)
    except Exception as exc:  # a package of another shape: damaged or replaced
        raise SemanticUnavailable(f"the model package {PACKAGE} is damaged: reinstall it") from exc
    if folder is None:
        raise SemanticUnavailable(f"the model package {PACKAGE} holds no {MODEL}: reinstall it")
    return Path(folder)


def cache_folder() -> Path:
    override = os.environ.get("CONVODEX_MODEL_CACHE")
    return Path(override).expanduser() if override else config.cache_root() / "models"


class StaticModel:
    """Texts to unit vectors by the distilled token table."""

    name = NAME
    dimensions = DIMENSIONS

    def __init__(self, tokenizer: Any, table: Array) -> None:
        self.tokenizer = tokenizer
        self.table = table

    def embed(self, texts: Sequence[str]) -> Array:
        """One L2-normalised row per text (a text of no known token: a zero row)."""
        import numpy as np

        out = np.zeros((len(texts), self.table.shape[1]), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        for row, encoding in enumerate(encodings):
            ids = encoding.ids[:MAX_TOKENS]
            if ids:
                out[row] = self.table[ids].sum(0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.asarray(out / np.maximum(norms, 1e-12), dtype=np.float32)


@functools.lru_cache(maxsize=1)
def load() -> StaticModel:
    """The static model (distilled on first use, then read from the model cache)."""
    try:
        import numpy as np
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise SemanticUnavailable(f"semantic search needs NumPy and tokenizers: {INSTALL}") from exc
    folder = model_folder()
    try:
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        weights = folder / "model.safetensors"
        stat = weights.stat()
    except Exception as exc:  # tokenizers raises its own untyped errors
        raise SemanticUnavailable(f"the model package {PACKAGE} is damaged: reinstall it") from exc
    import hashlib  # here, as tempfile below: a no-op index asks only for PACKAGE

    stamp = hashlib.sha256(f"{NAME}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    cached = cache_folder() / f"{NAME}-{stamp}.npy"
    table: Array | None = None
    with contextlib.suppress(OSError, ValueError):
        loaded = np.load(cached, allow_pickle=False)
        if loaded.ndim == 2 and loaded.shape[1] == DIMENSIONS:
            table = loaded.astype(np.float32)
    if table is None:
        try:
            table = distil(folder)
        except Exception as exc:  # truncated or foreign weights: one line, not a traceback
            raise SemanticUnavailable(
                f"the model package {PACKAGE} is damaged: reinstall it"
            ) from exc
        with contextlib.suppress(OSError):
            _save(cached, table)
    return StaticModel(tokenizer, table)


def distil(folder: Path) -> Array:
    """Every token through the encoder, PCA, Zipf weights (see the module's docstring).

    Within a memory budget (issue 28): the tokens go through in small batches into one
    float32 array, the encoder's weights are let go before the PCA, and the PCA is the
    eigenvectors of the covariance, summed and projected a batch at a time in float64
    (an SVD of the whole float64 matrix held it four times over: 626 MiB at its peak).
    """
    import numpy as np

    from convodex.semantic.bert import Encoder, mean_pool

    encoder = Encoder(folder)
    vocabulary = encoder.vocabulary
    cls, sep = _special(folder)
    vectors = np.empty((vocabulary, encoder.hidden), dtype=np.float32)
    for start in range(0, vocabulary, DISTIL_BATCH):
        tokens = np.arange(start, min(start + DISTIL_BATCH, vocabulary), dtype=np.int64)
        ids = np.stack([np.full_like(tokens, cls), tokens, np.full_like(tokens, sep)], axis=1)
        mask = np.ones_like(ids)
        vectors[start : start + len(tokens)] = mean_pool(encoder.forward(ids, mask), mask)
    del encoder  # the weights (90 MB) are not needed past this point
    mean = vectors.mean(0, dtype=np.float64)
    covariance = np.zeros((vectors.shape[1], vectors.shape[1]), dtype=np.float64)
    for start in range(0, vocabulary, DISTIL_BATCH):
        centred = vectors[start : start + DISTIL_BATCH].astype(np.float64) - mean
        covariance += centred.T @ centred
    _, eigenvectors = np.linalg.eigh(covariance)  # ascending: the largest last
    components = np.ascontiguousarray(eigenvectors[:, ::-1][:, :DIMENSIONS].T)
    # An eigenvector's sign is LAPACK's choice: fixed (largest entry positive) so the
    # table is the same wherever it is distilled.
    peaks = np.abs(components).argmax(1)
    components *= np.sign(components[np.arange(DIMENSIONS), peaks])[:, None]
    # Zipf: a token's probability taken from its rank in the vocabulary (WordPiece
    # vocabularies are ordered roughly by frequency).
    ranks = np.arange(1, vocabulary + 1, dtype=np.float64)
    probability = (1.0 / ranks) / (1.0 / ranks).sum()
    weights = SIF / (SIF + probability)
    table = np.empty((vocabulary, DIMENSIONS), dtype=np.float32)
    for start in range(0, vocabulary, DISTIL_BATCH):
        centred = vectors[start : start + DISTIL_BATCH].astype(np.float64) - mean
        reduced = centred @ components.T
        table[start : start + len(reduced)] = reduced * weights[start : start + len(reduced), None]
    return table


def _special(folder: Path) -> tuple[int, int]:
    vocab = (folder / "vocab.txt").read_text("utf-8").splitlines()
    return vocab.index("[CLS]"), vocab.index("[SEP]")


def _save(path: Path, table: Array) -> None:
    """Written whole or not at all: another process may be loading the cache."""
    import tempfile

    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".distil-", suffix=".npy")
    try:
        with os.fdopen(fd, "wb") as out:
            np.save(out, table, allow_pickle=False)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
