"""A seeded mixture-of-experts gate: the bytes every rank's tokens send every expert's rank.

Expert parallelism over P ranks: ``experts_per_rank`` experts per rank (E = P x
experts_per_rank in all, expert e on rank e // experts_per_rank); every rank holds
``tokens`` tokens of ``hidden`` elements of ``dtype``, and each token goes to ``topk``
distinct experts. The gate draws them for every token without replacement, in proportion
to the experts' popularity ``p_e`` (Gumbel top-k, which samples exactly that way):

* ``skew`` = 0: every expert equally likely;
* ``skew`` = s > 0: Zipf popularity ``p_e`` proportional to ``1 / rank_e ** s``, where the
  popularity ranks 1..E are a seeded random permutation of the experts (the hot experts
  land on random GPUs). s = 1 is Zipf's law; larger is more skewed.

One copy of a token is sent per (token, expert) pair (a token routed to two experts of one
rank is sent twice: no de-duplication), so the dispatch matrix sums to exactly
``P x tokens x topk x hidden x itemsize`` bytes, its diagonal the copies that stay on their
rank; the combine (every expert output returns to its token's rank) is its transpose.
The matrix depends only on the figures and the seed (NumPy's PCG64), bit for bit.

>>> spec = parse_moe("tokens=16,hidden=8,topk=2,dtype=float32")
>>> int(moe_sizes(spec, 4, seed=1).sum()) == 4 * 16 * 2 * 8 * 4
True
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..errors import UserInputError

__all__ = ["MoeSpec", "parse_moe", "moe_sizes", "MOE_KEYS", "MOE_DTYPES"]

#: activation element types and their bytes (bfloat16 and float8 have no NumPy dtype: only
#: their size matters here)
MOE_DTYPES = {"float32": 4, "bfloat16": 2, "float16": 2, "float8": 1}
#: the keys of ``--moe``, each with what it is
MOE_KEYS = {
    "tokens": "tokens per rank (its batch x sequence share), >= 1",
    "hidden": "elements per token (the model's hidden size), >= 1",
    "topk": "experts per token, 1..P x experts_per_rank",
    "experts_per_rank": "experts on every rank (default 1)",
    "skew": "Zipf exponent of the experts' popularity, >= 0 (default 0: uniform)",
    "dtype": f"activation type: {', '.join(MOE_DTYPES)} (default bfloat16)",
}


@dataclass(frozen=True)
class MoeSpec:
    """The gate's figures (see the module docstring)."""

    tokens: int
    hidden: int
    topk: int
    experts_per_rank: int = 1
    skew: float = 0.0
    dtype: str = "bfloat16"

    @property
    def token_bytes(self) -> int:
        """Bytes of one token: hidden x the activation's size."""
        return self.hidden * MOE_DTYPES[self.dtype]

    def to_dict(self) -> dict:
        return asdict(self)


def _int_key(key: str, text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < low or value > 2**40:
        raise UserInputError(f"--moe {key}={text!r} must be an integer >= {low} ({MOE_KEYS[key]})")
    return value


def parse_moe(text) -> MoeSpec:
    """``tokens=T,hidden=H,topk=K[,experts_per_rank=X][,skew=S][,dtype=D]`` (or a dict of
    the same keys) as a :class:`MoeSpec`; one-line errors naming the bad key or value."""
    if isinstance(text, MoeSpec):
        return text
    items = dict(text) if isinstance(text, dict) else {}
    if not isinstance(text, dict):
        for part in str(text).split(","):
            key, eq, value = part.partition("=")
            key = key.strip()
            if not eq or not key:
                raise UserInputError(f"--moe {part!r} is not KEY=VALUE; keys: {', '.join(MOE_KEYS)}")
            if key in items:
                raise UserInputError(f"--moe key {key!r} given twice; give each key once")
            items[key] = value.strip()
    for key in items:
        if key not in MOE_KEYS:
            raise UserInputError(f"--moe key {key!r} is unknown; keys: {', '.join(MOE_KEYS)}")
    missing = [k for k in ("tokens", "hidden", "topk") if k not in items]
    if missing:
        raise UserInputError(f"--moe needs {', '.join(missing)} ({'; '.join(MOE_KEYS[k] for k in missing)})")
    kw = {k: _int_key(k, str(items[k]), 1) for k in ("tokens", "hidden", "topk", "experts_per_rank") if k in items}
    if "skew" in items:
        try:
            kw["skew"] = float(items["skew"])
        except ValueError:
            kw["skew"] = -1.0
        if not (0 <= kw["skew"] <= 100):
            raise UserInputError(f"--moe skew={items['skew']!r} must be a number in [0, 100] ({MOE_KEYS['skew']})")
    if "dtype" in items:
        if items["dtype"] not in MOE_DTYPES:
            raise UserInputError(f"--moe dtype={items['dtype']!r} must be one of: {', '.join(MOE_DTYPES)}")
        kw["dtype"] = items["dtype"]
    return MoeSpec(**kw)


def _popularity(E: int, skew: float, rng) -> np.ndarray:
    """Every expert's probability: uniform, or Zipf over a seeded permutation of the experts."""
    if skew == 0:
        return np.full(E, 1.0 / E)
    ranks = rng.permutation(E) + 1.0
    w = ranks ** -skew
    return w / w.sum()


def moe_sizes(spec: MoeSpec, nranks: int, seed: int = 1) -> np.ndarray:
    """The dispatch matrix (bytes, P x P int64): entry [i, j] is what rank i's tokens send
    the experts of rank j. Raises UserInputError if ``topk`` exceeds the experts."""
    P, X = int(nranks), spec.experts_per_rank
    E = P * X
    if spec.topk > E:
        raise UserInputError(f"--moe topk={spec.topk} exceeds the {E} experts ({P} ranks x experts_per_rank={X}); "
                             f"give topk <= {E}")
    rng = np.random.Generator(np.random.PCG64(seed))
    logp = np.log(_popularity(E, spec.skew, rng))
    counts = np.zeros((P, P), dtype=np.int64)
    for i in range(P):
        keys = logp + rng.gumbel(size=(spec.tokens, E))
        chosen = np.argpartition(-keys, spec.topk - 1, axis=1)[:, :spec.topk] if spec.topk < E else \
            np.broadcast_to(np.arange(E), (spec.tokens, E))
        counts[i] = np.bincount((chosen // X).ravel(), minlength=P)
    return counts * spec.token_bytes
