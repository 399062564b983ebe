"""Fit a profile's rates against a real tokenizer.

The goal is an estimate that errs high on almost every paragraph while over-counting as little
as possible. Given sample texts (each one a *file*, e.g. one language or one kind of tool
output), `calibrate`:

1. splits every file into paragraphs of at least 200 characters (`split_paragraphs`) and
   measures each paragraph (characters per class and run starts, `char_classes.COMPONENTS`) and its
   exact tokens;
2. solves the linear programme, over tokens-per-unit weights ``w`` (one per class, within
   [1/`MAX_RATE`, 1/`MIN_RATE`]; one per kind of run, within [0, `MAX_RUN`]):

       minimise    mean over files of  estimate / exact
       subject to  estimate / exact >= 1 + margin      for every file,
                   estimate / exact >= 0.90            for every paragraph not set aside,

   with a small primal-dual interior-point method (numpy only; the normal equations are as
   small as the number of weights). At most ``max_under_share`` of the paragraphs are set
   aside, a few at a time, choosing the ones whose constraint costs most (largest dual value):
   these are the paragraphs allowed to stay more than 10% under;
3. returns the profile dict, rates rounded *down* and run weights *up* to 3 decimals so that
   rounding never lowers an estimate. A class with no characters in the sample gets
   `UNSEEN_RATE`; a kind of run that never occurs gets weight 0.

Needs numpy (a dependency of ctxfit) and a tokenizer (the ``exact`` extra).

>>> from ctxfit_cli.counters.tokenizers import get_tokenizer          # doctest: +SKIP
>>> profile = calibrate(texts, get_tokenizer("o200k"), name="mine")  # doctest: +SKIP
>>> profile["rates"]["cyrillic"]                               # doctest: +SKIP
3.1
"""

from __future__ import annotations

import re
from typing import Any

# At the top: the CLI imports this module only for `ctxfit calibrate` (numpy costs start-up).
import numpy as np

from .char_classes import CLASSES, N_CLASSES, N_RUNS, RUNS, class_counts
from .profiles import ProfileCounter
from .seed import Counter

MIN_PARAGRAPH = 200
#: Bounds on a fitted rate (characters per token).
MIN_RATE, MAX_RATE = 0.2, 12.0
#: Rate given to a class that does not occur in the sample (errs high for every script but
#: emoji and rare scripts, which have their own samples in ctxfit's corpus).
UNSEEN_RATE = 1.0
#: Most tokens per run start a fit may give.
MAX_RUN = 5.0
#: Paragraph "under-estimated by more than 10%" line.
UNDER_LINE = 0.90


def split_paragraphs(text: str, *, min_chars: int = MIN_PARAGRAPH) -> list[str]:
    """Blank-line separated blocks, joined with their neighbours until at least `min_chars`.

    A trailing block shorter than `min_chars` joins the paragraph before it.

    >>> [len(p) for p in split_paragraphs("a" * 150 + "\\n\\n" + "b" * 150 + "\\n\\n" + "c" * 250)]
    [302, 250]
    """
    out: list[str] = []
    buffer = ""
    for block in re.split(r"\n[ \t]*\n", text):
        if not block.strip():
            continue
        buffer = f"{buffer}\n\n{block}" if buffer else block
        if len(buffer) >= min_chars:
            out.append(buffer)
            buffer = ""
    if buffer:
        if out:
            out[-1] = f"{out[-1]}\n\n{buffer}"
        elif len(buffer) >= min_chars:
            out.append(buffer)
    return out


def calibrate(
    texts: list[str],
    tokenizer: Counter,
    *,
    name: str,
    description: str = "",
    margin: float = 0.02,
    max_under_share: float = 0.01,
    steps: int = 6,
) -> dict[str, Any]:
    """Fit a profile dict to `texts` (one string per file) counted by `tokenizer`.

    `margin`: how far above its exact count every file must be on the sample (headroom for text
    not in the sample). `max_under_share`: the share of paragraphs allowed to be more than 10%
    under. `steps`: in how many rounds those paragraphs are set aside. Write the result with
    ``json.dump`` and load it with `profiles.load_profile`.

    >>> class ByChars:  # a stand-in tokenizer: one token per 3 characters
    ...     name = "by-chars"
    ...     def measure(self, text): return (-(-len(text) // 3),)
    ...     def tokens(self, vector): return vector[0]
    >>> rates = calibrate(["x" * 3000], ByChars(), name="demo")["rates"]  # doctest: +SKIP
    """
    X, y, XF, yF = _measure(texts, tokenizer)
    seen = (X.sum(axis=0) + XF.sum(axis=0)) > 0
    weights = _fit_weights(X, y, XF, yF, seen, margin, max_under_share, steps)
    rates = {c: (_round_down(1 / float(weights[i])) if seen[i] else UNSEEN_RATE) for i, c in enumerate(CLASSES)}
    runs = {r: _round_up(float(weights[N_CLASSES + i])) for i, r in enumerate(RUNS)}
    r_par, r_file = X @ weights / y, XF @ weights / yF
    profile = {
        "name": name,
        "version": 1,
        "description": description or f"Calibrated against the {tokenizer.name} tokenizer.",
        "tokenizer": tokenizer.name,
        "rates": rates,
        "runs": runs,
        "fit": {
            "files": len(yF),
            "paragraphs": int(len(y)),
            "characters": int(XF[:, :N_CLASSES].sum()),
            "margin": margin,
            "max_under_share": max_under_share,
            "mean_file_over": round(float(r_file.mean()) - 1, 4),
            "paragraphs_under_10": round(float((r_par < UNDER_LINE - 1e-9).mean()), 4),
            "unseen_classes": [c for i, c in enumerate(CLASSES) if not seen[i]],
        },
    }
    ProfileCounter(profile)  # validates
    return profile


#: A class needs this many characters in the recorded growth to get a fitted rate; rarer
#: classes keep the base profile's rate (a few hundred characters cannot pin a rate down).
MIN_CLASS_CHARS = 2000
#: Share of call pairs allowed to stay more than 10% under when fitting from usage: pairs whose
#: recorded growth holds text the log does not (hook output, injected reminders). Measured on
#: the Claude Code logs of ../shared/realworld (bench/real_usage.py, leave one session out):
#: 0.055 keeps the held-out share under 10%; 0.06 lets it reach 10.4%.
GROWTH_UNDER_SHARE = 0.055
#: Most tokens a fit may give one tool call or result for its framing.
MAX_FRAMING = 300.0


def calibrate_from_growth(
    vectors: list[tuple[int, ...]],
    recorded: list[int],
    groups: list[str],
    *,
    name: str,
    base: ProfileCounter,
    blocks: list[int] | None = None,
    description: str = "",
    margin: float = 0.0,
    max_under_share: float = GROWTH_UNDER_SHARE,
    steps: int = 6,
) -> dict[str, Any]:
    """Fit a profile to the growth of recorded prompts between consecutive model calls.

    `vectors[i]` measures (`char_classes.COMPONENTS`) the text of the messages added between two
    calls, `recorded[i]` is what the prompt grew by minus what the estimate adds anyway (message
    overhead, images), `groups[i]` names the log it comes from. `blocks[i]`, when given, counts
    the tool calls and results among those messages: one more weight is fitted, the tokens of
    framing per tool block (the tags a prompt format wraps each call and result in), and the
    profile gets it, rounded up, as ``framing`` of both ``tool_calls`` and ``tool_results`` (a
    call and its result always come together, so the two cannot be told apart; without that
    weight the fit covers a round's fixed cost by inflating character rates, which then
    over-count every large result). The linear programme is the
    one of `calibrate` with call pairs for paragraphs and all logs together for a file: the
    estimate of all the growth at least ``1 + margin`` of the recorded growth, every pair at least 90% of its own but
    for `max_under_share` of them set aside (hook output and injected context make a pair's
    recorded growth larger than anything in the log: those are the pairs set aside), and the
    aggregate over all logs as low as that allows. Classes with fewer than `MIN_CLASS_CHARS` characters
    keep `base`'s rates (their tokens are taken off the target first).
    """
    X = np.array(vectors, dtype=float)
    y = np.array(recorded, dtype=float)
    if len(y) == 0 or not (y > 0).any():
        raise ValueError("no call pairs with recorded growth to fit on")
    framed = blocks is not None and any(blocks)
    if framed:
        X = np.hstack([X, np.array(blocks, dtype=float)[:, None]])
    fitted, weights, kept, target, names = _fit_growth(X, y, groups, base, framed, margin, max_under_share, steps)
    if framed and not np.isfinite(weights).all():
        # No fit found with a framing weight (a Codex log in ../shared/realworld): without it,
        # on all the pairs again (`kept` may hold fewer).
        framed = False
        fitted, weights, kept, target, names = _fit_growth(
            X[:, :-1], y, groups, base, framed, margin, max_under_share, steps
        )
    X = kept
    if not np.isfinite(weights).all():
        raise ValueError("the recorded growth could not be fitted (too few or too similar call pairs)")
    rates = {c: (_round_down(1 / float(weights[i])) if fitted[i] else base.rates[i]) for i, c in enumerate(CLASSES)}
    runs = {r: _round_up(float(weights[N_CLASSES + i])) for i, r in enumerate(RUNS)}
    profile = {
        "name": name,
        "version": 1,
        "description": description or "Calibrated on the growth of recorded prompts.",
        "tokenizer": None,
        "rates": rates,
        "runs": runs,
    }
    if framed:
        per_block = int(np.ceil(float(weights[N_CLASSES + N_RUNS]) - 1e-6))
        profile["framing"] = {"tool_calls": per_block, "tool_results": per_block}
    profile |= {
        "fit": {
            "from": "recorded usage",
            "logs": len(names),
            "call_pairs": int(len(target)),
            "characters": int(X[:, :N_CLASSES].sum()),
            "margin": margin,
            "max_under_share": max_under_share,
            "base": base.profile,
            "base_classes": [c for i, c in enumerate(CLASSES) if not fitted[i]],
        },
    }
    ProfileCounter(profile)  # validates
    return profile


def _fit_growth(
    X: np.ndarray,
    y: np.ndarray,
    groups: list[str],
    base: ProfileCounter,
    framed: bool,
    margin: float,
    max_under_share: float,
    steps: int,
) -> tuple[Any, ...]:
    """`calibrate_from_growth`'s programme: (fitted mask, weights, pairs kept, their targets,
    log names). Weights are not finite when the programme has no solution."""
    base_w = np.array([1 / r for r in base.rates] + list(base.runs) + ([0.0] if framed else []))
    chars = X[:, :N_CLASSES].sum(axis=0)
    fitted = np.concatenate([chars >= MIN_CLASS_CHARS, X[:, N_CLASSES:].sum(axis=0) > 0])
    fixed_part = X[:, ~fitted] @ base_w[~fitted]
    target = y - fixed_part
    keep = target > 0
    X, target, groups_kept = X[keep], target[keep], [g for g, k in zip(groups, keep) if k]
    names = list(dict.fromkeys(groups_kept))
    # One aggregate over all logs, not one per log: a per-log floor lets the log with the most
    # unlogged text (hook output) lift every other log's estimate (held out, 1.27 vs 1.25).
    XF, yF = X.sum(axis=0, keepdims=True), np.array([target.sum()])
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # near-degenerate logs
        weights = _fit_weights(X, target, XF, yF, fitted, margin, max_under_share, steps)
    weights[~fitted] = base_w[~fitted]
    return fitted, weights, X, target, names


def _measure(texts: list[str], tokenizer: Counter) -> tuple[np.ndarray, ...]:
    """(components, exact tokens) of every paragraph, then of every file, as arrays."""
    rows, exact, file_rows, file_exact = [], [], [], []
    for text in texts:
        for paragraph in split_paragraphs(text):
            y = tokenizer.tokens(tokenizer.measure(paragraph))
            if y > 0:
                rows.append(class_counts(paragraph))
                exact.append(y)
        y = tokenizer.tokens(tokenizer.measure(text)) if split_paragraphs(text) else 0
        if y > 0:
            file_rows.append(class_counts(text))
            file_exact.append(y)
    if not rows:
        raise ValueError("calibrate needs at least one paragraph of 200 or more characters")
    return tuple(np.array(a, dtype=float) for a in (rows, exact, file_rows, file_exact))


def _fit_weights(
    X: np.ndarray,
    y: np.ndarray,
    XF: np.ndarray,
    yF: np.ndarray,
    seen: np.ndarray,
    margin: float,
    max_under_share: float,
    steps: int,
) -> np.ndarray:
    """Tokens per unit of every component: the linear programme of the module's docstring,
    setting aside the costliest paragraphs a few at a time. Unseen components get 0."""
    free = np.flatnonzero(seen)  # weights to fit; the others are fixed (unseen classes/runs)
    Z = (X / y[:, None])[:, free]  # estimate / exact = Z @ w
    ZF = (XF / yF[:, None])[:, free]
    is_run = free >= N_CLASSES
    low = np.where(is_run, 0.0, 1 / MAX_RATE)
    high = np.where(is_run, np.where(free >= N_CLASSES + N_RUNS, MAX_FRAMING, MAX_RUN), 1 / MIN_RATE)
    cost = ZF.mean(axis=0)
    m = len(free)
    bounds_G = np.vstack([np.eye(m), -np.eye(m)])
    bounds_h = np.concatenate([low, -high])

    keep = np.ones(len(y), dtype=bool)
    allowed = int(max_under_share * len(y))
    rounds = max(int(steps), 1)
    for r in range(rounds + 1):
        G = np.vstack([Z[keep], ZF, bounds_G])
        h = np.concatenate([np.full(int(keep.sum()), UNDER_LINE), np.full(len(yF), 1 + margin), bounds_h])
        w, dual = _solve_lp(cost, G, h)
        set_aside = int((~keep).sum())
        if r == rounds or set_aside >= allowed:
            break
        take = -(-(allowed - set_aside) // (rounds - r))
        rows_kept = np.flatnonzero(keep)
        keep[rows_kept[np.argsort(-dual[: len(rows_kept)])[:take]]] = False
    weights = np.zeros(X.shape[1])
    weights[free] = np.clip(w, low, high)
    return weights


def _solve_lp(
    c: np.ndarray, G: np.ndarray, h: np.ndarray, iterations: int = 100, tol: float = 1e-9
) -> tuple[np.ndarray, np.ndarray]:
    """min c @ x subject to G @ x >= h, by a primal-dual interior-point method (Mehrotra's
    predictor-corrector) on the normal equations, which are only as large as x. Returns x and
    the dual value of every row of G (how much the optimum would fall per unit of slack)."""
    n, m = G.shape
    x = np.zeros(m)
    s = np.maximum(G @ x - h, 1.0)
    z = np.ones(n)

    def longest(d: np.ndarray, v: np.ndarray) -> float:
        negative = d < 0
        return min(1.0, float(np.min(-v[negative] / d[negative]))) if negative.any() else 1.0

    for _ in range(iterations):
        r_dual = c - G.T @ z
        r_primal = h - G @ x + s
        mu = float(s @ z) / n
        if (
            np.abs(r_dual).max() < tol * (1 + np.abs(c).max())
            and np.abs(r_primal).max() < tol * (1 + np.abs(h).max())
            and mu < tol
        ):
            break
        scale = z / s
        normal = G.T @ (G * scale[:, None])
        normal += 1e-13 * np.trace(normal) * np.eye(m)

        def direction(r_comp: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            # (called only within this iteration: the loop's current values are the ones meant)
            dx = np.linalg.solve(normal, G.T @ ((r_comp + z * r_primal) / s) - r_dual)  # noqa: B023
            ds = G @ dx - r_primal  # noqa: B023
            return dx, ds, (r_comp - z * ds) / s  # noqa: B023

        dx, ds, dz = direction(-s * z)
        step = min(longest(ds, s), longest(dz, z))
        sigma = (float((s + step * ds) @ (z + step * dz)) / n / mu) ** 3
        dx, ds, dz = direction(-s * z + sigma * mu - ds * dz)
        step = 0.99 * min(longest(ds, s), longest(dz, z))
        x, s, z = x + step * dx, s + step * ds, z + step * dz
    return x, z


def _round_down(rate: float) -> float:
    """Rates are stored with 3 decimals, rounded down (a lower rate only raises estimates)."""
    return max(int(rate * 1000) / 1000, 0.001)


def _round_up(weight: float) -> float:
    """Run weights are stored with 3 decimals, rounded up (a higher weight only raises
    estimates); a weight that is 0 but for solver noise stays 0."""
    return 0.0 if weight < 1e-6 else -(-round(weight * 1e6) // 1000) / 1000


def evaluate(texts: list[str], tokenizer: Counter, counter: Counter) -> dict[str, float]:
    """How `counter` compares with `tokenizer` on `texts`: signed whole-text error and
    paragraph statistics (share under-estimated, share under by more than 10%, worst).

    >>> evaluate([], None, None)["paragraphs"]
    0
    """
    under = under10 = n = 0
    worst = 0.0
    est_total = exact_total = 0
    for text in texts:
        est_total += counter.tokens(counter.measure(text)) if text else 0
        exact_total += tokenizer.tokens(tokenizer.measure(text)) if text else 0
        for paragraph in split_paragraphs(text):
            exact = tokenizer.tokens(tokenizer.measure(paragraph))
            if not exact:
                continue
            error = counter.tokens(counter.measure(paragraph)) / exact - 1
            n += 1
            under += error < 0
            under10 += error < -0.10
            worst = min(worst, error)
    return {
        "error": (est_total / exact_total - 1) if exact_total else 0.0,
        "paragraphs": n,
        "under_share": under / n if n else 0.0,
        "under10_share": under10 / n if n else 0.0,
        "worst": worst,
    }


__all__ = ["calibrate", "calibrate_from_growth", "evaluate", "split_paragraphs"]
