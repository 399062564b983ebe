"""Many logs: finding them, reading each on its own (one pure function per file), combining the
results in one place, and the per-session view. The CLI maps the per-file function over local
processes (`--jobs`); a distributed engine can map the same function."""
