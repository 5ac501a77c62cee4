"""Ways to fill a model: traversal strategies, per-tensor initializers, fp8 table methods, user loaders."""
