"""Per-flow mode: the component a change reaches, and its exact solve.

Flows are linked through *saturable* resources (the sum of their flows' rate bounds
exceeds the capacity); a resource that can never bind does not connect flows, so the
huge switch-crossing capacities do not merge everything into one component.
"""

from __future__ import annotations

import operator

__all__ = ["by_seq", "component", "solve_component"]

by_seq = operator.attrgetter("seq")


def component(seeds, maxload, satl, res_flows, limit):
    """Flows linked to ``seeds`` through saturable resources (sorted by creation) and
    those resources (sorted); ``(None, None)`` past ``limit`` coupled flows (if set)."""
    comp, sat, seen_res = [], [], set()
    seen = {f for f in seeds if f.active}
    stack = list(seen)
    coupled = 0
    while stack:
        f = stack.pop()
        comp.append(f)
        linked = False
        for r in f.path.res:
            if maxload[r] > satl[r]:
                linked = True
                if r in seen_res:
                    continue
                seen_res.add(r)
                sat.append(r)
                new = [g for g in res_flows[r] if g not in seen]
                if new:
                    seen.update(new)
                    stack.extend(new)
        if linked and limit is not None:
            coupled += 1
            if coupled > limit:
                return None, None
    # a fixed order (flows by creation, resources by index) keeps float sums, and so
    # results, bit-identical from run to run (sets iterate in memory-address order)
    comp.sort(key=by_seq)
    sat.sort()
    return comp, sat


def solve_component(comp, sat, cap, level_tol, jit_after) -> list:
    """Max-min rates of ``comp`` (sorted) over resources ``sat`` (sorted); interpreted
    until the process has done ``jit_after`` filling work, then compiled (same rates)."""
    from .filling import max_min_rates

    idx = {r: j for j, r in enumerate(sat)}
    fi, rj, av = [], [], []
    for i, f in enumerate(comp):
        path = f.path
        for r, a in zip(path.res, path.coef):
            j = idx.get(r)
            if j is not None:
                fi.append(i)
                rj.append(j)
                av.append(a)
    return max_min_rates([f.path.weight for f in comp], [f.path.maxrate for f in comp], fi, rj, av,
                         [cap[r] for r in sat], level_tol, jit_after).tolist()
