"""Replay: simulate an agent's requests over a recorded history under context policies.

`policies` (what a policy sends at each request), `simulation` (the walk over a history and
what it does to rejections and to the prompt cache), `prices`, and `validity` (whether each
request would be accepted). Nothing is imported here: a job that only names its policies
should not load them.
"""
