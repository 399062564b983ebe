"""ctxfit: keep long LLM-agent conversations inside the model's context window."""
