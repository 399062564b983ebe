"""Fit a profile's characters-per-token rates against a real tokenizer.

The goal is an estimate that errs high on almost every paragraph while over-counting as little
as possible. Given sample texts (each one a *file*, e.g. one language or one kind of tool
output), `calibrate`:

1. splits every file into paragraphs of at least 200 characters (`split_paragraphs`) and counts
   each paragraph's characters per class (`profiles.CLASSES`) and its exact tokens;
2. fits tokens-per-character weights ``w >= 0`` (one per class) minimising

       mean over paragraphs of  estimate / exact
       + A * mean over paragraphs of  hinge(0.93 - estimate / exact)
       + B * mean over files of       hinge(1 + margin - estimate / exact)

   with each file's paragraphs weighing as much as another file's (so a large file does not
   drown a small one). The first term is the over-count to minimise; the paragraph hinge is a
   quantile-style penalty (with ``A = 40`` roughly the lowest 2-3% of paragraphs may stay below
   the line); the file hinge (``B = 1000``) makes "no file under-estimated" practically hard.
   The hinges are smoothed (softplus) and the problem, convex in ``w``, is solved by projected
   gradient descent (Adam) with each rate kept within [`MIN_RATE`, `MAX_RATE`];
3. applies one common scale factor, the smallest that makes the targets hold exactly on the
   sample: every file at least ``1 + margin`` of its exact count, and at most
   ``max_under_share`` of paragraphs under-estimated by more than 10%. The factor may be below 1
   (the fit was already safe: the estimate is lowered) or above;
4. returns the profile dict, rates rounded *down* to 3 decimals so that rounding never lowers
   an estimate. A class with no characters in the sample gets `UNSEEN_RATE`.

Needs numpy (installed with the ``exact`` extra, as is every tokenizer).

>>> from ctxfit_cli.tokenizers import get_tokenizer          # doctest: +SKIP
>>> profile = calibrate(texts, get_tokenizer("o200k"), name="mine")  # doctest: +SKIP
>>> profile["rates"]["cyrillic"]                               # doctest: +SKIP
3.1
"""

from __future__ import annotations

import re
from typing import Any

from .counting import Counter
from .errors import MissingExtra
from .profiles import CLASSES, ProfileCounter, class_counts
from .tokenizers import INSTALL_HINT

MIN_PARAGRAPH = 200
#: Bounds on a fitted rate (characters per token).
MIN_RATE, MAX_RATE = 0.2, 12.0
#: Rate given to a class that does not occur in the sample (errs high for every script but
#: emoji and rare scripts, which have their own samples in ctxfit's corpus).
UNSEEN_RATE = 1.0
#: Paragraph "under-estimated by more than 10%" line, and the hinge's line (a little above).
UNDER_LINE, HINGE_LINE = 0.90, 0.93


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
    max_under_share: float = 0.015,
    paragraph_weight: float = 40.0,
    steps: int = 3000,
) -> dict[str, Any]:
    """Fit a profile dict to `texts` (one string per file) counted by `tokenizer`.

    `margin`: how far above its exact count every file must be on the sample (headroom for text
    not in the sample). `max_under_share`: the share of paragraphs allowed to be more than 10%
    under. Write the result with ``json.dump`` and load it with `profiles.load_profile`.

    >>> class ByChars:  # a stand-in tokenizer: one token per 3 characters
    ...     name = "by-chars"
    ...     def measure(self, text): return (-(-len(text) // 3),)
    ...     def tokens(self, vector): return vector[0]
    >>> rates = calibrate(["x" * 3000], ByChars(), name="demo")["rates"]  # doctest: +SKIP
    """
    try:
        import numpy as np
    except ModuleNotFoundError:
        raise MissingExtra(f"calibrate needs numpy; install it with: {INSTALL_HINT}") from None

    rows, exact, owner, file_rows, file_exact = [], [], [], [], []
    for f, text in enumerate(texts):
        for paragraph in split_paragraphs(text):
            rows.append(class_counts(paragraph))
            exact.append(tokenizer.tokens(tokenizer.measure(paragraph)))
            owner.append(f)
        file_rows.append(class_counts(text))
        file_exact.append(tokenizer.tokens(tokenizer.measure(text)))
    keep = [i for i, y in enumerate(exact) if y > 0]
    if not keep:
        raise ValueError("calibrate needs at least one paragraph of 200 or more characters")
    X = np.array([rows[i] for i in keep], dtype=float)
    y = np.array([exact[i] for i in keep], dtype=float)
    owners = np.array([owner[i] for i in keep])
    files = [f for f in range(len(texts)) if file_exact[f] > 0 and f in set(owners.tolist())]
    XF = np.array([file_rows[f] for f in files], dtype=float)
    yF = np.array([file_exact[f] for f in files], dtype=float)

    Z = X / y[:, None]  # estimate / exact = Z @ w
    ZF = XF / yF[:, None]
    per_file = np.bincount(owners, minlength=len(texts)).astype(float)
    weight = 1.0 / per_file[owners]
    weight /= weight.sum()
    seen = X.sum(axis=0) > 0
    low, high = np.full(len(CLASSES), 1 / MAX_RATE), np.full(len(CLASSES), 1 / MIN_RATE)

    # Start from weighted least squares on estimate/exact = 1 (clipped to the bounds).
    sw = np.sqrt(weight)[:, None]
    w, *_ = np.linalg.lstsq(Z * sw, sw[:, 0], rcond=None)
    w = np.where(seen, np.clip(w, low, high), 1 / UNSEEN_RATE)

    smooth = 0.01
    file_weight = 1000.0 / max(len(files), 1)

    def sigmoid(t):
        return 0.5 * (1 + np.tanh(0.5 * t))

    m = v = np.zeros_like(w)
    lr, b1, b2 = 0.01 * np.where(seen, w, 0), 0.9, 0.999
    for step in range(1, steps + 1):
        r, R = Z @ w, ZF @ w
        grad = weight @ Z
        grad -= paragraph_weight * ((weight * sigmoid((HINGE_LINE - r) / smooth)) @ Z)
        grad -= file_weight * (sigmoid((1 + margin - R) / smooth) @ ZF)
        m = b1 * m + (1 - b1) * grad
        v = b2 * v + (1 - b2) * grad * grad
        step_size = lr * (1 - 0.999 * step / steps)
        w = w - step_size * (m / (1 - b1**step)) / (np.sqrt(v / (1 - b2**step)) + 1e-12)
        w = np.where(seen, np.clip(w, low, high), 1 / UNSEEN_RATE)

    # One scale factor so the targets hold exactly on the sample.
    r, R = Z @ w, ZF @ w
    scale_files = float(np.max((1 + margin) / R)) if len(R) else 0.0
    allowed = int(max_under_share * len(r))
    scale_paragraphs = UNDER_LINE / float(np.sort(r)[allowed])
    scale = max(scale_files, scale_paragraphs)
    w = np.where(seen, np.clip(w * scale, low, high), 1 / UNSEEN_RATE)

    rates = {c: _round_down(1 / float(w[i])) for i, c in enumerate(CLASSES)}
    profile = {
        "name": name,
        "version": 1,
        "description": description or f"Calibrated against the {tokenizer.name} tokenizer.",
        "tokenizer": tokenizer.name,
        "rates": rates,
        "fit": {
            "files": len(files),
            "paragraphs": int(len(y)),
            "characters": int(XF.sum()),
            "scale": round(scale, 4),
            "margin": margin,
            "max_under_share": max_under_share,
            "unseen_classes": [c for i, c in enumerate(CLASSES) if not seen[i]],
        },
    }
    ProfileCounter(profile)  # validates
    return profile


def _round_down(rate: float) -> float:
    """Rates are stored with 3 decimals, rounded down (a lower rate only raises estimates)."""
    return max(int(rate * 1000) / 1000, 0.001)


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


__all__ = ["calibrate", "evaluate", "split_paragraphs"]
