"""Providers: one module each (`*_provider.py`), registered by name in `registry`.

Each turns a ProviderRequest into a ProviderResponse or a typed error, and owns
its params rules, price, endpoint check and crash hint (`registry.ModelApi`).
"""
