"""Pipeline stages. Each exposes `run(...)`, called by its notebook, writing validated artifacts."""
