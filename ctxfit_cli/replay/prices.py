"""What tokens cost, relative to an uncached input token: written to the prompt cache, read from it.

Apart from the simulation so that a many-log job can carry its prices without loading the
replay (issue #10: start-up). The defaults are Anthropic's: a cache write costs 1.25 times an
input token, a cache read a tenth.
"""

from __future__ import annotations

from typing import NamedTuple


class Prices(NamedTuple):
    input: float = 1.0
    cache_write: float = 1.25
    cache_read: float = 0.1

    def cost(self, *, read: int, write: int, uncached: int) -> float:
        return read * self.cache_read + write * self.cache_write + uncached * self.input
