"""The importance-sampling estimators of Hazan & Koren (2012) and Kukliansky & Shamir (2015).

Pure functions of the draws and the observed values, so the algorithms and the unbiasedness tests
call exactly the same code. Every draw is made with replacement; a draw is described by its index
and by the weight its value enters the estimate with (1/q_i for a data-point draw, w_j/p_j for an
inner-product draw), fixed when the index was drawn.

- ``estimate_x``: x̃ = (1/k) Σ_r x[i_r]/q[i_r] e_{i_r} (H&K Alg. 1 lines 3-7 with q = 1/d; K&S eq. (1)); ``sum_draws``
  the same with NumPy, for many draws.
- ``estimate_inner``: the mean of (w_j/p_j) x[j] over the inner-product draws, unbiased for <w, x>
  (H&K line 9 with p ∝ w², K&S eq. (5) with any p whose support covers w's). Several draws are
  averaged when the budget is split evenly, as in K&S §5.
- ``genest_phi``: Procedure 3 (GenEst) for AESVR's f' = ½[erf((r-δ)/ε) + erf((r+δ)/ε)], r = <w,x> - y.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

Observed = Mapping[int, float]

TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def estimate_x(draws: Sequence[int], inv_q: Sequence[float], observed: Observed) -> tuple[np.ndarray, np.ndarray]:
    """Sparse x̃ from k draws i_r with weights 1/q[i_r]: (its attributes, in the order of their first draw, and its
    values), one draw at a time (a few draws: ``sum_draws`` gives the same floats with NumPy's calls, which cost more
    than they save below tens of draws)."""
    k = len(draws)
    x_tilde: dict[int, float] = {}
    for i, weight in zip(draws, inv_q, strict=True):
        x_tilde[i] = x_tilde.get(i, 0.0) + observed[i] * weight / k
    return (np.fromiter(x_tilde, dtype=np.intp, count=len(x_tilde)),
            np.fromiter(x_tilde.values(), dtype=np.float64, count=len(x_tilde)))


class Distinct(NamedTuple):
    """The distinct attributes of a block of examples' draws (``distinct_draws``)."""

    attributes: np.ndarray  # each row's, in the order of their first draw, the rows' one after the other
    ends: np.ndarray  # where each row's end in ``attributes``
    slots: np.ndarray  # each draw's index among its row's distinct attributes (rows of draws)
    firsts: np.ndarray  # where each of ``attributes`` was first drawn, among all the draws one row after the other
    counts: np.ndarray  # how many times each of ``attributes`` was drawn in its row


def distinct_draws(drawn: np.ndarray, d: int) -> Distinct:
    """Each row's distinct attributes (of 0..d-1) in the order of their first draw, for all the rows of ``drawn`` (an
    example's draws a row) at once: what ``dict.fromkeys`` of each row lists, each draw's index in it (what
    ``list.index`` finds), and how many times each was drawn. A stable sort of the (row, attribute) keys puts each one's
    draws together, its first draw first."""
    rows, k = drawn.shape
    n = rows * k
    keys = (drawn + np.arange(0, rows * d, d)[:, None]).ravel()
    if rows * d <= 1 << 16:
        keys = keys.astype(np.uint16)  # sorted by radix: a few times faster
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    starts = np.empty(n, dtype=bool)
    starts[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    positions = np.arange(n)
    run = np.where(starts, positions, 0)  # in sorted order, where each draw's key's run starts
    np.maximum.accumulate(run, out=run)
    first = np.empty(n, dtype=np.intp)  # in draw order, where each draw's key was first drawn
    first[order] = order[run]
    firsts = (first == positions).nonzero()[0]
    rank = np.empty(n, dtype=np.intp)  # each draw's key's index among all the rows' distinct ones
    rank[firsts] = np.arange(len(firsts))
    rank = rank[first]
    row_starts = rank[::k]  # a row's first draw is its first distinct attribute
    ends = np.append(row_starts[1:], len(firsts))
    slots = rank.reshape(rows, k) - row_starts[:, None]
    return Distinct(drawn.ravel()[firsts], ends, slots, firsts, np.bincount(rank, minlength=len(firsts)))


def sum_draws(values: np.ndarray, inverse: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """x̃ = (1/k) Σ_r x[i_r]/q[i_r] e_{i_r} at its distinct attributes (in the order of their first draw), from each
    draw's value and weight 1/q_i (``values``, overwritten with the terms, and ``inverse``) and its attribute's index
    among the distinct ones (``slots``, ``distinct_draws``): the floats ``estimate_x``'s loop gives, x̃[i] = x̃.get(i, 0)
    + x[i]·(1/q_i)/k, since ``np.bincount`` adds a repeated attribute's terms in the order drawn, from 0.0, where a
    vectorised sum would reorder them."""
    terms = np.multiply(values, inverse, out=values)
    terms /= len(values)
    sums: np.ndarray = np.bincount(slots, weights=terms)
    return sums


def sum_counted(values: np.ndarray, inverse: np.ndarray, counts: np.ndarray, k: int) -> np.ndarray:
    """``sum_draws`` from each distinct attribute's value, weight 1/q_i and count of draws (``values`` overwritten),
    for counts of at most ``COUNTED_UP_TO``: an attribute's k_i draws add the same term t_i = x[i]·(1/q_i)/k, and
    0 + t + t = 2t, 2t + t = 3t rounded once, so k_i·t_i is the loop's float (but for t_i = -0.0, which the loop's
    0 + t_i makes 0.0: a zero either way, which no step moves)."""
    terms: np.ndarray = np.multiply(values, inverse, out=values)
    terms /= k
    terms *= counts
    return terms


# The most draws of one attribute for which ``sum_counted`` gives the loop's floats.
COUNTED_UP_TO = 3


def estimate_inner(draws: Sequence[int], ratios: Sequence[float], observed: Observed) -> float:
    """Unbiased estimate of <w, x> from draws j_s with weights w[j_s]/p[j_s]; exactly 0 without draws (w = 0)."""
    if not draws:
        return 0.0
    return sum([r * observed[j] for j, r in zip(draws, ratios, strict=True)]) / len(draws)


def mean_products(ratios: Sequence[float], values: Sequence[float], slots: Sequence[int]) -> float:
    """``estimate_inner`` from the draws' weights and where their values are in ``values`` (the same floats): the mean
    of w[j_s]/p[j_s] · x[j_s]."""
    if len(ratios) == 1:  # H&K's one draw: what sum() of its one product makes of it, 0 + r·x (over 1)
        return 0.0 + ratios[0] * values[slots[0]]
    if not ratios:
        return 0.0
    return sum([r * values[s] for r, s in zip(ratios, slots, strict=True)]) / len(ratios)


def squared_loss_gradient(
    x_draws: Sequence[int],
    inv_q: Sequence[float],
    inner_draws: Sequence[int],
    ratios: Sequence[float],
    observed: Observed,
    y: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x̃'s attributes, x̃, g̃ = φ̃ · x̃) with φ̃ = <w,x>~ - y: g̃ is unbiased for (<w,x> - y) x since the two draws are
    independent."""
    at, x_tilde = estimate_x(x_draws, inv_q, observed)
    return at, x_tilde, squared_loss_phi(inner_draws, ratios, observed, y) * x_tilde


def squared_loss_phi(inner_draws: Sequence[int], ratios: Sequence[float], observed: Observed, y: float) -> float:
    """φ̃ = <w,x>~ - y, the squared loss's derivative estimated."""
    return estimate_inner(inner_draws, ratios, observed) - y


# --- GenEst (Hazan & Koren, Procedure 3) --------------------------------------------------------------


def erf_coefficient(n: int) -> float:
    """a_n of erf(x) = Σ a_n x^n: a_{2j+1} = (2/√π)(-1)^j / (j!(2j+1)) (H&K eq. (7)), 0 for even n."""
    if n % 2 == 0:
        return 0.0
    j = (n - 1) // 2
    return float(TWO_OVER_SQRT_PI * (-1) ** j / (math.factorial(j) * (2 * j + 1)))


def genest_group_size(n: int, N: int) -> int:
    """Draws per factor θ̃_r: one while n <= 2 log2 N, else N averaged (Procedure 3 lines 3 and 10)."""
    return 1 if n <= 2 * math.log2(N) else N


def genest_max_order(cap: int, N: int) -> int:
    """The largest n whose n·group_size draws fit in ``cap`` (draws grow with n, so all smaller n fit)."""
    n = 0
    while (n + 1) * genest_group_size(n + 1, N) <= cap:
        n += 1
    return n


def genest_order(uniform: float, n_max: int) -> tuple[int, float]:
    """n with Pr[n] = 2^-(n+1) (Procedure 3 line 2) conditioned on n <= n_max, and that probability."""
    mass = 1.0 - 0.5 ** (n_max + 1)
    target = uniform * mass
    cumulative = 0.0
    for n in range(n_max + 1):
        p = 0.5 ** (n + 1)
        cumulative += p
        if target < cumulative:
            return n, p / mass
    return n_max, 0.5 ** (n_max + 1) / mass


def genest_phi(
    n: int,
    p_n: float,
    groups: Sequence[Sequence[int]],
    ratios: Sequence[Sequence[float]],
    observed: Observed,
    y: float,
    delta: float,
    epsilon: float,
) -> float:
    """½[GenEst(w, x/ε, (y+δ)/ε) + GenEst(w, x/ε, (y-δ)/ε)] for one drawn order n.

    θ̃_r = (<w,x>~_r - y ∓ δ)/ε with <w,x>~_r the group-r inner-product estimate, and each term is
    a_n θ̃_1···θ̃_n / Pr[n]. The two GenEst calls share n and the draws: each term stays unbiased (the
    θ̃_r are independent across r), which halves the attributes they cost.
    """
    a = erf_coefficient(n)
    if a == 0.0:
        return 0.0
    plus = minus = 1.0
    for group, group_ratios in zip(groups, ratios, strict=True):
        inner = estimate_inner(group, group_ratios, observed)
        plus *= (inner - y - delta) / epsilon
        minus *= (inner - y + delta) / epsilon
    return a / p_n * 0.5 * (plus + minus)


def smoothed_derivative(residual: float, delta: float, epsilon: float) -> float:
    """f'_ε(r) = ½[erf((r-δ)/ε) + erf((r+δ)/ε)], the exact derivative GenEst estimates."""
    return 0.5 * (math.erf((residual - delta) / epsilon) + math.erf((residual + delta) / epsilon))


def truncated_smoothed_derivative(residual: float, delta: float, epsilon: float, n_max: int) -> float:
    """What GenEst estimates when the budget caps its order at n_max: erf's series cut after n_max."""

    def series(x: float) -> float:
        return sum(erf_coefficient(n) * x**n for n in range(n_max + 1))

    return 0.5 * (series((residual - delta) / epsilon) + series((residual + delta) / epsilon))
