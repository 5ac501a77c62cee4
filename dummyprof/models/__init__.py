"""Model sources: the synthetic tree, Engram tables, presets, a user's callable, Hugging Face configs."""
