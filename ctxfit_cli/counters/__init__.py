"""Counters: text -> tokens. The seed rule (DESIGN §3), calibrated profiles, real tokenizers,
calibration, and image/document estimates. They know nothing of conversations."""
