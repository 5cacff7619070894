"""Plain data and history: imports neither torch nor Qt."""
