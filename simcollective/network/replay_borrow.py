"""Borrowed views of the compiled event loop's arrays: no reference counting in its hot path.

numba counts references to every array it passes around: each array argument of a helper
inlined into the loop (:mod:`.replay_kernels`) is an increment on entry and a decrement on
exit, atomic operations on the array's shared counter, which numba's pruning removes only in
simple control flow. The loop's per-message helpers take a dozen arrays each, so counting
was most of its time. :func:`borrow` gives an array (or a tuple of arrays) with the same
data and no owner record: numba then knows at compile time that there is nothing to count
and emits no counting at all. The views are valid while the caller's arrays live: a kernel
borrows the arrays it was given (which its caller keeps), never the ones it allocates, and
never returns a view.

NOTE: :func:`borrow` is the identity in Python (``NUMBA_DISABLE_JIT=1`` runs the same code);
compiled, it is a numba intrinsic (an LLVM-level copy of the array's header with a null
owner), the one place the loop reaches below numba's public typing.
"""

from __future__ import annotations

from numba.core import cgutils, ir_utils, types
from numba.extending import intrinsic, overload

__all__ = ["borrow"]


def borrow(a):
    """``a`` (an array or a tuple of arrays) to read and write without reference counting."""
    return a


def _unowned(context, builder, ty, value):
    """``value`` of type ``ty`` with the owner record of every array in it set to null."""
    if isinstance(ty, types.Array):
        ary = context.make_array(ty)(context, builder, value=value)
        ary.meminfo = cgutils.get_null_value(ary.meminfo.type)
        ary.parent = cgutils.get_null_value(ary.parent.type)
        return ary._getvalue()
    for i, t in enumerate(ty):
        value = builder.insert_value(value, _unowned(context, builder, t, builder.extract_value(value, i)), i)
    return value


def _borrowable(ty) -> bool:
    if isinstance(ty, types.Array):
        return True
    return isinstance(ty, types.BaseTuple) and all(_borrowable(t) for t in ty)


@intrinsic
def _view(typingctx, a):
    if not _borrowable(a):
        return None

    def codegen(context, builder, sig, args):
        return _unowned(context, builder, sig.args[0], args[0])

    return a(a), codegen


@overload(borrow)
def _borrow(a):
    if _borrowable(a):
        return lambda a: _view(a)
    return None


def _aliases_its_argument(lhs, args, alias_map, arg_aliases):
    """numba's dead-code elimination drops writes to arrays that nothing reads afterwards
    unless they may be (aliases of) the function's arguments: a borrowed view is one."""
    arg_aliases.add(lhs)


ir_utils.alias_func_extensions[("borrow", __name__)] = _aliases_its_argument
