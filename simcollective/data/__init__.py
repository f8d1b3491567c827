"""Real and symbolic payloads, sparse streams, workloads and result verification.

Algorithms code against this package:

* dense data: :func:`dense_input`, :class:`DenseReference`, :func:`verify_dense`;
* size-only data: :func:`symbolic_input`, :class:`SymbolicArray`, :func:`verify_symbolic`;
* sparse data: :class:`SparseStream` (``merge``/``+``, ``split``, ``split_at``,
  ``sparse_concat``, ``to_dense``, ``drop_zeros``, ``topk``), :func:`make_workload`,
  :func:`verify_sparse_result`;
* any payload: :class:`Parts` (a lazy concatenation sized like the real one),
  :func:`concat`, :func:`add`, :func:`block_bounds`.

Every payload is immutable and has ``.nbytes`` (its size on the wire).
"""

from .blocks import block_bounds, iter_parts, sub_bounds
from .dense import (
    DTYPES,
    DenseReference,
    Reference,
    as_reference,
    check_dtype,
    dense_input,
    freeze,
)
from .parts import Parts, add, concat
from .sparse import (
    DENSIFY_POLICIES,
    HEADER_BYTES,
    INDEX_BYTES,
    SparseStream,
    concat_is_dense,
    merge,
    split,
    split_at,
    turns_dense,
)
from .sparse import concat as sparse_concat
from .verify import verify_dense, verify_symbolic
from .symbolic import SymbolicArray, format_ranks, symbolic_input
from .workloads import (
    WORKLOADS,
    NpyWorkload,
    TopkWorkload,
    UniformWorkload,
    Workload,
    expected_union,
    make_workload,
    sparse_k,
    verify_sparse_result,
)

__all__ = [
    "block_bounds",
    "sub_bounds",
    "iter_parts",
    "DTYPES",
    "check_dtype",
    "freeze",
    "dense_input",
    "Reference",
    "DenseReference",
    "as_reference",
    "verify_dense",
    "SymbolicArray",
    "symbolic_input",
    "verify_symbolic",
    "format_ranks",
    "HEADER_BYTES",
    "INDEX_BYTES",
    "DENSIFY_POLICIES",
    "turns_dense",
    "SparseStream",
    "merge",
    "split",
    "split_at",
    "sparse_concat",
    "concat_is_dense",
    "Parts",
    "concat",
    "add",
    "WORKLOADS",
    "sparse_k",
    "expected_union",
    "Workload",
    "UniformWorkload",
    "TopkWorkload",
    "NpyWorkload",
    "make_workload",
    "verify_sparse_result",
]
