"""A BERT encoder's forward pass in NumPy: what the bundled MiniLM weights compute.

The semantic extra ships no deep-learning framework: the 6-layer, 384-wide MiniLM is
small enough that its forward pass is a page of matrix products. It runs once per
model to distil the static table (``static.py``: every vocabulary token through the
encoder, about 10 s on one core), and in the benchmark as the contextual candidate.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float32]


class Encoder:
    """The weights of one BERT encoder (safetensors) and its forward pass."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file

        config = json.loads((folder / "config.json").read_text("utf-8"))
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.hidden = int(config["hidden_size"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.max_positions = int(config.get("max_position_embeddings", 512))
        raw: dict[str, Any] = load_file(str(folder / "model.safetensors"))
        # Dense weights transposed once and contiguous: a product of a stacked array
        # with a transposed view leaves BLAS for NumPy's own loop (100x slower). Each
        # taken out of ``raw`` as it is converted: one matrix, not the model, is held
        # twice at a time (issue 28).
        linear = ("dense.weight", "query.weight", "key.weight", "value.weight")
        self.w: dict[str, Array] = {}
        for name in list(raw):
            key = name.removeprefix("bert.")
            value = np.asarray(raw.pop(name), dtype=np.float32)
            if key.startswith("encoder.") and key.endswith(linear):
                value = np.ascontiguousarray(value.T)
            self.w[key] = value

    @property
    def vocabulary(self) -> int:
        return int(self.w["embeddings.word_embeddings.weight"].shape[0])

    def _norm(self, x: Array, name: str) -> Array:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        out = (x - mean) / np.sqrt(var + self.eps)
        return np.asarray(out * self.w[f"{name}.weight"] + self.w[f"{name}.bias"], np.float32)

    def _dense(self, x: Array, name: str) -> Array:
        weight = self.w[f"{name}.weight"]  # (in, out): transposed at load
        flat = x.reshape(-1, x.shape[-1]) @ weight + self.w[f"{name}.bias"]
        return flat.reshape(*x.shape[:-1], weight.shape[1])

    def forward(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64]) -> Array:
        """Token states ``(batch, length, hidden)`` of padded ``ids`` (mask 1: a token)."""
        batch, length = ids.shape
        w = self.w
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length][None, :, :]
            + w["embeddings.token_type_embeddings.weight"][0][None, None, :]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        size = self.hidden // self.heads
        blocked = ((1.0 - mask[:, None, None, :].astype(np.float32)) * -1e9).astype(np.float32)
        for i in range(self.layers):
            p = f"encoder.layer.{i}"

            def split(t: Array) -> Array:
                return t.reshape(batch, length, self.heads, size).transpose(0, 2, 1, 3)

            q = split(self._dense(x, f"{p}.attention.self.query"))
            k = split(self._dense(x, f"{p}.attention.self.key"))
            v = split(self._dense(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + blocked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, self.hidden)
            x = self._norm(
                x + self._dense(context, f"{p}.attention.output.dense"),
                f"{p}.attention.output.LayerNorm",
            )
            inner = self._dense(x, f"{p}.intermediate.dense")
            # GELU by its tanh form: within 1e-3 of the exact one, a third of the time
            # of an erf built from exp (NumPy has no erf).
            cubic = inner + 0.044715 * inner * inner * inner
            inner = np.asarray(
                0.5 * inner * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * cubic)), np.float32
            )
            x = self._norm(x + self._dense(inner, f"{p}.output.dense"), f"{p}.output.LayerNorm")
        return x.astype(np.float32)


def mean_pool(states: Array, mask: npt.NDArray[np.int64]) -> Array:
    """Sentence-transformers' mean pooling, L2-normalised: one vector a text."""
    weights = mask[:, :, None].astype(np.float32)
    pooled = (states * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
    return normalise(pooled)


def normalise(vectors: Array) -> Array:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return np.asarray(vectors / np.maximum(norms, 1e-12), dtype=np.float32)
