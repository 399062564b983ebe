"""Issue #34 item 5: windows and prices that keep up. The providers' catalog (from genai-prices)
answers for a model ctxfit's own tables do not name; a family's newest model for one the catalog
lacks too; and every report says where a price came from."""

from __future__ import annotations

import json

import pytest
from conftest import REALWORLD, needs_realworld
from typer.testing import CliRunner

from ctxfit_cli.cli.app import app
from ctxfit_cli.counters import catalog
from ctxfit_cli.counters.models import window_for
from ctxfit_cli.fleet.sessions import session_cost
from ctxfit_cli.replay.model_prices import SHIPPED, load_prices

runner = CliRunner()
#: Where the catalog and ccusage's table (which ctxfit's own copies) disagree, looked up on the
#: providers' pages: ccusage prices Codex fast mode's cache writes at 0.2, genai-prices at 0.25
#: (gpt-5.6-luna); fast mode (`claude-opus-4-8-fast`, ccusage's name) is not a model to genai-prices;
#: genai-prices gives Gemini 1.5 Pro no cache discount (1.25), Google's page 0.3125.
KNOWN_DIFFERENCES = {"gpt-5.6-luna", "claude-opus-4-8-fast", "gemini-1.5-pro"}


def test_the_catalog_agrees_with_ccusage_on_the_models_both_price():
    own = json.loads(SHIPPED.read_text())["models"]
    both = agree = 0
    for name, row in own.items():
        entry = catalog.lookup(name)
        if entry is None or not entry.prices or name in KNOWN_DIFFERENCES:
            continue
        both += 1
        kinds = ("input", "cache_read", "output")
        agree += all(abs(entry.prices[k] - row[k]) < 1e-9 for k in kinds)
    assert both >= 40
    assert agree == both


def test_a_model_only_the_catalog_lists_is_priced_and_given_its_window():
    table = load_prices()
    price = table.price("deepseek-chat")
    assert price is not None and price.source.startswith("deepseek-chat in genai-prices")
    assert window_for(["deepseek/deepseek-chat"]) == (64_000, f"deepseek-chat window ({catalog.describe_source()})")
    # The hand-checked tables come first: a model they name keeps their figures.
    assert table.price("claude-opus-4-6").source == ""
    assert window_for(["claude-opus-4-6"])[1] == "Claude 4.6 and older window (2026-12 table)"


def test_a_newer_model_of_a_family_is_priced_as_its_newest_and_says_so():
    price = load_prices().price("claude-opus-9-1")
    assert price is not None
    newest = max((n for n in catalog.load().models if n.startswith("claude-opus-")), key=lambda n: n.split("-")[2:])
    assert price.name == newest
    assert price.source == f"priced as {newest}, its family's newest (not in the table or the catalog)"
    assert load_prices().price("totally-unknown") is None


def test_the_cost_of_a_session_names_where_each_price_came_from():
    tally = {("claude-opus-4-6", False): [10, 0, 0, 10, 0], ("deepseek-chat", False): [1_000_000, 0, 0, 0, 0]}
    cost = session_cost(tally, load_prices())
    assert cost["unpriced"] == []
    assert set(cost["priced_by"]) == {"deepseek-chat"}
    assert cost["by_model"]["deepseek-chat"] == pytest.approx(catalog.lookup("deepseek-chat").prices["input"])


def test_a_prices_file_still_overrides_the_catalog(tmp_path):
    given = tmp_path / "prices.json"
    given.write_text(json.dumps({"date": "2026-12-01", "models": {"deepseek-chat": {"input": 1, "cache_read": 0.1, "output": 2}}}))
    price = load_prices(str(given)).price("deepseek-chat")
    assert (price.rates.input, price.source) == (1.0, "")


@needs_realworld
def test_every_model_of_the_shared_real_logs_is_priced():
    """The models the real logs name: each priced by ctxfit's table, the catalog or its family,
    except those no source lists (a provider's own model names), which are said to be unpriced."""
    result = runner.invoke(app, ["sessions", "--json", "--no-cache", str(REALWORLD)], catch_exceptions=False)
    assert result.exit_code in (0, 5), result.output
    rows = json.loads(result.stdout)["sessions"]
    unpriced = {m for row in rows for m in row["cost"]["unpriced"]}
    listed = {m for row in rows for m in row["models"]}
    assert listed  # (the logs name models)
    assert unpriced == set(), unpriced
