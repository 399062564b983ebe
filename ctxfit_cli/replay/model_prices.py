"""What tokens cost in dollars, per model: a dated table shipped with ctxfit (`model_prices.json`),
which `--prices FILE` overrides model by model.

Each model has four prices per million tokens: uncached `input`, `cache_write` (tokens written
to the prompt cache), `cache_read` and `output` (reasoning included, as the providers bill it);
some have a second set, `above_200k`, for a call whose prompt is over 200,000 tokens (Anthropic's
and Google's long-context rates apply to the whole call then), and Claude models `cache_write_1h`
for writes kept an hour. The numbers are ccusage's own
(the table its `--offline` mode ships) on the date the file gives; `docs/cost.md` says how they
were read and how ctxfit's costs compare with ccusage's.

>>> table = load_prices()
>>> price = table.price("claude-sonnet-4-5-20250929")
>>> price.name, round(price.cost(input=100, cache_write=1_000, cache_read=10_000, output=500), 6)
('claude-sonnet-4-5', 0.01455)
>>> table.price("anthropic/claude-opus-4-6").name, table.price("my-own-model") is None
('claude-opus-4-6', True)
>>> table.price("deepseek-chat").source
'deepseek-chat in genai-prices 0.2.5, 2026-12-07'
>>> table.price("claude-opus-9-1").source
"priced as claude-opus-5-5, its family's newest (not in the table or the catalog)"
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import NamedTuple

from ..errors import UsageProblem

SHIPPED = Path(__file__).with_name("model_prices.json")
KINDS = ("input", "cache_write", "cache_read", "output", "cache_write_1h")
#: A prompt over this many tokens is billed at the `above_200k` rates, where a model has them.
LONG_CONTEXT = 200_000


class Rates(NamedTuple):
    """Dollars per million tokens of each kind."""

    input: float
    cache_write: float
    cache_read: float
    output: float
    #: Anthropic's one-hour cache writes (twice the input price); where not given, `cache_write`.
    cache_write_1h: float


class ModelPrice(NamedTuple):
    name: str
    rates: Rates
    long: Rates | None = None
    #: Where the price came from when not the table itself: the providers' catalog, or a
    #: family's newest model (`PriceTable.price`); "" for the table's own entry.
    source: str = ""

    def cost(
        self, *, input: int, cache_write: int, cache_read: int, output: int, cache_write_1h: int = 0, long: bool = False
    ) -> float:
        """Dollars for these tokens (`cache_write` of them written for five minutes,
        `cache_write_1h` for an hour); `long`: the calls' prompts were over `LONG_CONTEXT`."""
        rates = self.long if long and self.long is not None else self.rates
        return (
            input * rates.input
            + cache_write * rates.cache_write
            + cache_read * rates.cache_read
            + output * rates.output
            + cache_write_1h * rates.cache_write_1h
        ) / 1e6


class PriceTable(NamedTuple):
    date: str
    models: dict[str, ModelPrice]
    #: Where the table came from: "shipped", or the --prices file that changed it.
    source: str = "shipped"

    def price(self, model: str) -> ModelPrice | None:
        """The price of a model as logs name it (provider prefix, date suffix): the table's own,
        else the providers' catalog's (`counters/catalog.py`), else its family's newest model's
        (`claude-opus-9` as the newest `claude-opus-*`), the source said; None for a model of no
        known family."""
        return self._own(model) or _listed(model) or self._family_newest(model)

    def _own(self, model: str) -> ModelPrice | None:
        name = model_key(model)
        return self.models.get(name) or self.models.get(re.sub(r"-\d{4}-?\d{2}-?\d{2}$", "", name))

    def _family_newest(self, model: str) -> ModelPrice | None:
        from ..counters import catalog

        name = catalog.key(model)
        version = _VERSION.search(name)
        if version is None:
            return None
        shape = re.compile(
            re.escape(name[: version.start()]) + _VERSION.pattern + re.escape(name[version.end() :]) + "$"
        )
        listed = {n for n, e in catalog.load().models.items() if e.prices}
        kin = [n for n in {*self.models, *listed} if shape.match(n) and n != name]
        if not kin:
            return None
        newest = max(kin, key=_version_order)
        price = self._own(newest) or _listed(newest)
        assert price is not None  # (a name of the table or a priced catalog entry)
        return price._replace(source=f"priced as {newest}, its family's newest (not in the table or the catalog)")


#: A model's version inside its name: "4-8" of claude-opus-4-8, "5.4" of gpt-5.4, "3.1" of gemini-3.1-pro.
_VERSION = re.compile(r"(?<![a-z])\d+(?:[.-]\d+)*(?![a-z])")


def _version_order(name: str) -> tuple[int, ...]:
    found = _VERSION.search(name)
    return tuple(int(n) for n in re.split(r"[.-]", found[0])) if found else ()


def _listed(model: str) -> ModelPrice | None:
    """A model's price from the providers' catalog, with the catalog named as its source."""
    from ..counters import catalog

    entry = catalog.lookup(model)
    if entry is None or not entry.prices:
        return None
    prices = entry.prices
    long = _rates(prices["above_200k"], entry.name) if "above_200k" in prices else None
    return ModelPrice(entry.name, _rates(prices, entry.name), long, f"{entry.name} in {catalog.describe_source()}")


def model_key(model: str) -> str:
    """'anthropic/claude-sonnet-4-20250514' -> 'claude-sonnet-4'; 'openai/gpt-5' -> 'gpt-5': the
    catalog's rule (`counters/catalog.key`), so that both tables name a model alike."""
    from ..counters.catalog import key

    return key(model)


def load_prices(path: str | None = None) -> PriceTable:
    """The shipped table, with the models of `path` (the same JSON shape) added or replacing
    the shipped ones; a bad file is a usage error naming what is wrong."""
    shipped = _parse(json.loads(SHIPPED.read_text(encoding="utf-8")), str(SHIPPED))
    if path is None:
        return shipped
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UsageProblem(f"--prices {path}: cannot read it as JSON ({error})") from None
    given = _parse(document, f"--prices {path}")
    return PriceTable(given.date or shipped.date, {**shipped.models, **given.models}, path)


def _parse(document: object, where: str) -> PriceTable:
    models = document.get("models") if isinstance(document, dict) else None
    if not isinstance(models, dict):
        raise UsageProblem(
            f'{where}: expected {{"date": "YYYY-MM-DD", "models": {{"model-name": '
            f'{{"input": 3, "cache_write": 3.75, "cache_read": 0.3, "output": 15}}}}}} '
            "(dollars per million tokens)"
        )
    table = {}
    for name, entry in models.items():
        table[model_key(name)] = ModelPrice(
            model_key(name),
            _rates(entry, f"{where}: {name}"),
            _rates(entry["above_200k"], f"{where}: {name}.above_200k")
            if isinstance(entry, dict) and "above_200k" in entry
            else None,
        )
    assert isinstance(document, dict)  # (models was found in it)
    return PriceTable(str(document.get("date") or ""), table)


def _rates(entry: object, where: str) -> Rates:
    if not isinstance(entry, dict):
        raise UsageProblem(f"{where}: expected an object with {', '.join(KINDS)}")
    values: dict[str, float] = {}
    for kind in KINDS:
        # (a cache write not given costs the input price; an hour's write, the cache write's)
        value = entry.get(kind, values.get({"cache_write": "input", "cache_write_1h": "cache_write"}.get(kind, kind)))
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise UsageProblem(f"{where}: {kind} must be a price in dollars per million tokens (a number ≥ 0)")
        values[kind] = float(value)
    return Rates(**values)
