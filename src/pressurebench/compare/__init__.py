"""Two runs side by side: `pressurebench compare A B` (rates, differences with intervals, what changed)."""
