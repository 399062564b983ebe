"""Replay: simulate an agent's requests over a recorded history under context policies."""

from .policies import DEFAULT_POLICIES, POLICIES, Policy, Request
from .simulation import PolicyReplay, Prices, Step, replay

__all__ = ["DEFAULT_POLICIES", "POLICIES", "Policy", "PolicyReplay", "Prices", "Request", "Step", "replay"]
