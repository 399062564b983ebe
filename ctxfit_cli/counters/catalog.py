"""What the providers list: each model's context window and prices, from a maintained source, for
the models ctxfit's own tables (`models.py` for windows, `replay/model_prices.json` for prices)
do not name.

The catalog (`catalog.json`, shipped, dated) is generated from **genai-prices** (pydantic's
maintained table of 2,000+ models, MIT): its bundled data, for the providers that make the
models agents run. It is consulted after the hand-checked tables and before a family's
fallback, so that a model the provider lists is never window-less or unpriced (issue #34 item 5).
Against ccusage's offline table (which ctxfit's own price table copies) it agrees on 40 of the
42 models both name; `docs/cost.md` says where they differ.

To refresh it (a maintainer's step; genai-prices is not a runtime dependency, its import alone
costs ~230 ms and brings pydantic and an HTTP client):

    pip install 'ctxfit[maintain]' && python -m ctxfit_cli.counters.catalog

>>> entry = lookup("anthropic/claude-haiku-4-5-20251001")
>>> entry.name, entry.window, entry.prices["output"]
('claude-haiku-4-5', 200000, 5.0)
>>> lookup("my-own-model") is None
True
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

CATALOG = Path(__file__).with_name("catalog.json")
#: The providers whose own models are kept (a reseller's copy of another's model is not).
PROVIDERS = (
    "anthropic",
    "openai",
    "google",
    "deepseek",
    "mistral",
    "x-ai",
    "moonshotai",
    "minimax",
    "zai",
    "cohere",
    "meta",
)
KINDS = ("input", "cache_write", "cache_read", "output", "cache_write_1h")


class Entry(NamedTuple):
    name: str
    provider: str
    #: Input context window in tokens, where the source gives it.
    window: int | None
    #: Dollars per million tokens of each kind (`KINDS`), and `above_200k` where a model has
    #: long-context rates; empty where the source gives no price.
    prices: dict[str, Any]


class Catalog(NamedTuple):
    date: str
    source: str
    models: dict[str, Entry]


@cache
def load() -> Catalog:
    """The shipped catalog (read once per process)."""
    document = json.loads(CATALOG.read_text(encoding="utf-8"))
    models = {
        name: Entry(name, row["provider"], row.get("window"), row.get("prices") or {})
        for name, row in document["models"].items()
    }
    return Catalog(document["date"], document["source"], models)


def key(model: str) -> str:
    """A model name as the catalog names it: lower case, no provider prefix, no date suffix.

    >>> key("openrouter/anthropic/claude-sonnet-4.5-20250929"), key("gpt-5.4-2026-03-05")
    ('claude-sonnet-4-5', 'gpt-5.4')
    """
    name = model.lower().strip().rsplit("/", 1)[-1]
    return claude_dashes(re.sub(r"(@|-)(\d{8}|\d{4}-\d{2}-\d{2}|latest)$", "", name))


_VERSION_DOT = re.compile(r"(?<=\d)\.(?=\d)")


def claude_dashes(model: str) -> str:
    """A Claude model's version with dashes, as Anthropic names it (some agents write dots:
    GitHub Copilot CLI's `claude-sonnet-4.6`); any other model as it is (OpenAI's and Google's
    names have dots of their own).

    >>> claude_dashes("claude-sonnet-4.6"), claude_dashes("gpt-5.2"), claude_dashes("claude-opus-4-7")
    ('claude-sonnet-4-6', 'gpt-5.2', 'claude-opus-4-7')
    """
    return _VERSION_DOT.sub("-", model) if "claude" in model.lower() else model


def lookup(model: str) -> Entry | None:
    """The catalog's entry for a model: its own, else the longest name it extends at a dash
    (`gpt-5.2-codex-max` is priced as `gpt-5.2-codex`), else None."""
    models = load().models
    name = key(model)
    for exact in (name, name + "-0"):  # (claude-opus-4 is listed as claude-opus-4-0)
        if exact in models:
            return models[exact]
    best = max((n for n in models if name.startswith(n + "-")), key=len, default=None)
    return models[best] if best is not None else None


def describe_source() -> str:
    """Where the catalog came from, for a report ("genai-prices 0.2.5, 2026-12-07")."""
    catalog = load()
    return f"{catalog.source}, {catalog.date}"


def _generate() -> dict[str, Any]:  # pragma: no cover (a maintainer's step: needs genai-prices)
    """The catalog from genai-prices' bundled data."""
    import datetime

    import genai_prices  # type: ignore[import-not-found]
    from genai_prices import data
    from genai_prices.types import TieredPrices  # type: ignore[import-not-found]

    def rate(value: object) -> tuple[float | None, float | None]:
        """(base, over 200k) dollars per million tokens."""
        if value is None:
            return None, None
        if isinstance(value, TieredPrices):
            long = [float(t.price) for t in value.tiers if t.start == 200_000]
            return float(value.base), (long[0] if long else None)
        return float(value), None  # type: ignore[arg-type]

    models: dict[str, dict[str, Any]] = {}
    for provider in data.providers:
        if provider.id not in PROVIDERS:
            continue
        for model in provider.models:
            prices = model.prices
            if isinstance(prices, list):  # prices that changed on a date: the latest
                prices = prices[-1].prices
            fields = {
                "input": prices.input_mtok,
                "cache_write": prices.cache_write_mtok,
                "cache_read": prices.cache_read_mtok,
                "output": prices.output_mtok,
            }
            base = {kind: rate(value) for kind, value in fields.items()}
            row: dict[str, Any] = {"provider": provider.id, "window": model.context_window}
            if base["input"][0] is not None and base["output"][0] is not None:
                price: dict[str, Any] = {
                    kind: (b if b is not None else base["input"][0]) for kind, (b, _) in base.items()
                }
                if provider.id == "anthropic":  # an hour's cache write is twice the input price
                    price["cache_write_1h"] = 2 * price["input"]
                if all(long is not None for kind, (_, long) in base.items() if fields[kind] is not None):
                    price["above_200k"] = {kind: long for kind, (_, long) in base.items() if long is not None}
                row["prices"] = price
            models.setdefault(key(model.id), row)
    return {
        "date": datetime.date.today().isoformat(),
        "source": f"genai-prices {genai_prices.__version__}",
        "unit": "USD per million tokens; window: input tokens",
        "models": dict(sorted(models.items())),
    }


if __name__ == "__main__":  # pragma: no cover
    CATALOG.write_text(json.dumps(_generate(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {CATALOG}")
