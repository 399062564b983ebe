"""The core: the transcript model, estimation, the plan and the fitter, validation, the notes.

Plain data in, plain data out: nothing here prints, exits, reads a stream or knows a dialect's
wire format beyond what `validate` checks."""
