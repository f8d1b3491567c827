"""The verification walk (``data/verify.py``) against its rule stated directly: every part
cut at the piece boundaries it crosses, on random part/piece layouts (parts within one
piece, parts spanning pieces, empty parts and pieces, wrong positions, results too long or
too short, parts shared between ranks and nested outputs). The walk's stretches, and the
first VerificationError's text, are the rule's."""

from operator import attrgetter

from hypothesis import given, settings
from hypothesis import strategies as st

from simcollective.data.blocks import iter_parts
from simcollective.data.collectives import Piece
from simcollective.data.symbolic import SymbolicArray, format_ranks
from simcollective.data.verify import symbolic_extent, verify_pieces, walk
from simcollective.errors import VerificationError


def rule_walk(output, pieces, extent, seen=None, positions=None):
    """The stretches :func:`walk` must yield, computed piece by piece for every part."""
    bounds, acc = [], 0
    for p in pieces:
        bounds.append((acc, acc + p.hi - p.lo, p))
        acc += p.hi - p.lo
    total, pos = acc, 0
    for i, part in enumerate(iter_parts(output)):
        size = extent(i, part)
        end = pos + size
        if end > total:
            raise VerificationError(f"result is longer than {total} elements (part {i} ends at {end})")
        if len(pieces) == 1:    # one piece: every part is one stretch, empty parts included
            cuts = [(0, size, pieces[0], pieces[0].lo + pos)]
        else:                   # several: one stretch per piece the part overlaps
            cuts = [(max(s, pos) - pos, min(e, end) - pos, p, p.lo + max(s, pos) - s)
                    for s, e, p in bounds if max(s, pos) < min(e, end)]
        for a, b, piece, lo in cuts:
            start = positions(part) if positions is not None else None
            if start is not None and start + a != lo:
                raise VerificationError(f"part {i} covers elements [{start + a}, {start + b}) but element {lo} comes next")
            key = (id(part), piece.source, lo)
            if seen is None or key not in seen:
                # marked seen as it is yielded (one piece) or once its check passed (several)
                if seen is not None and len(pieces) == 1:
                    seen.add(key)
                yield i, part, a, b, piece, lo
                if seen is not None:
                    seen.add(key)
        pos = end
    if pos != total:
        raise VerificationError(f"result covers elements [0, {pos}) of [0, {total})")


def rule_symbolic(output, pieces, seen):
    """:func:`verify_pieces`' size-only check over :func:`rule_walk`: the first segment
    overlapping a stretch that holds other ranks than the expected ones is named."""
    for i, part, a, b, piece, lo in rule_walk(output, pieces, symbolic_extent, seen, attrgetter("start")):
        ga, gb, want = part.start + a, part.start + b, piece.source
        bad = [(max(s, ga), min(e, gb), want & ~m, m & ~want) for s, e, m in part.segments
               if e > ga and s < gb and m != want]
        if bad:
            s, e, missing, extra = bad[0]
            said = [f"missing rank(s) {format_ranks(missing)}"] * bool(missing) + \
                [f"unexpected rank(s) {format_ranks(extra)}"] * bool(extra)
            raise VerificationError(f"part {i}: elements [{s}, {e}): {'; '.join(said)}")


def outcome(stretches):
    """The stretches yielded (parts by identity) and the error's text, if any."""
    got = []
    try:
        for i, part, a, b, piece, lo in stretches:
            got.append((i, id(part), a, b, piece, lo))
    except VerificationError as exc:
        return got, str(exc)
    return got, None


def error_of(call):
    try:
        call()
    except VerificationError as exc:
        return str(exc)
    return None


@st.composite
def layouts(draw):
    """Pieces, and one rank's parts cut from a result of about their length."""
    pieces = [Piece(lo, lo + n, src) for lo, n, src in draw(st.lists(
        st.tuples(st.integers(0, 30), st.integers(0, 8), st.integers(1, 7)), min_size=1, max_size=6))]
    total = sum(p.hi - p.lo for p in pieces)
    length = max(0, total + draw(st.sampled_from([0, 0, 0, -2, -1, 1, 3])))
    cuts = sorted(draw(st.lists(st.integers(0, length), max_size=8)))
    edges = [0, *cuts, length]
    at = []   # the global index expected at each result position
    for p in pieces:
        at.extend(range(p.lo, p.hi))
    parts = []
    for a, b in zip(edges, edges[1:]):
        shared = [q for q in parts if q.stop - q.start == b - a]
        if shared and draw(st.integers(0, 5)) == 0:
            parts.append(draw(st.sampled_from(shared)))     # the very part again
            continue
        start = at[a] if a < len(at) else draw(st.integers(0, 40))
        start = max(0, start + draw(st.sampled_from([0, 0, 0, 0, -1, 2])))
        mask = draw(st.sampled_from([p.source for p in pieces] + [8, 3]))
        if b - a >= 2 and draw(st.booleans()):
            cut = start + draw(st.integers(1, b - a - 1))
            segs = [(start, cut, mask), (cut, start + b - a, draw(st.integers(1, 9)))]
        else:
            segs = [(start, start + b - a, mask)]
        parts.append(SymbolicArray(start, start + b - a, "float32", segs))
    if parts and draw(st.booleans()):       # nest a run of parts (a list of parts as a part)
        i = draw(st.integers(0, len(parts) - 1))
        j = draw(st.integers(i, len(parts)))
        parts = [*parts[:i], parts[i:j], *parts[j:]]
    return pieces, parts


def starts_or_none(part):
    return None if part.start % 3 == 0 else part.start


@settings(max_examples=400, deadline=None)
@given(layouts(), st.sampled_from([None, attrgetter("start"), starts_or_none]), st.booleans())
def test_walk_yields_the_rules_stretches_and_errors(layout, positions, shared_seen):
    pieces, parts = layout
    seen_walk, seen_rule = (set(), set()) if shared_seen else (None, None)
    for out in (parts, parts[::-1], parts):     # three ranks; with a shared set, parts seen skip
        got = outcome(walk(out, pieces, symbolic_extent, seen_walk, positions))
        want = outcome(rule_walk(out, pieces, symbolic_extent, seen_rule, positions))
        assert got == want
        assert seen_walk == seen_rule


@settings(max_examples=400, deadline=None)
@given(layouts())
def test_size_only_verification_gives_the_rules_first_error(layout):
    pieces, parts = layout
    seen_walk, seen_rule = set(), set()
    for out in (parts, parts[::-1]):
        got = error_of(lambda: verify_pieces(out, pieces, None, "symbolic", seen_walk))
        assert got == error_of(lambda: rule_symbolic(out, pieces, seen_rule))


def test_a_part_within_one_piece_and_a_part_across_two():
    pieces = [Piece(10, 14, 1), Piece(0, 4, 2)]
    inside, across = SymbolicArray(10, 13, "float32", [(10, 13, 1)]), SymbolicArray(13, 18, "float32", [(13, 18, 1)])
    got = [(i, a, b, p, lo) for i, _, a, b, p, lo in walk([inside, across], pieces, symbolic_extent)]
    assert got == [(0, 0, 3, pieces[0], 10), (1, 0, 1, pieces[0], 13), (1, 1, 5, pieces[1], 0)]
    msg = error_of(lambda: list(walk([inside, across], pieces, symbolic_extent, None, attrgetter("start"))))
    assert msg == "part 1 covers elements [14, 18) but element 0 comes next"
