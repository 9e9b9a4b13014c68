"""pressurebench: how LLM assistants behave under realistic multi-turn pressure."""

from __future__ import annotations

from importlib import import_module

__version__ = "0.1.0"


def lazy_face(package: str, face: dict[str, str]):
    """A package's public face: `from pressurebench.<package> import name` for every name of
    `face` (name -> the package's module defining it), each module imported on first use.

    A stage process then imports only what it reads (importing a face costs nothing), and a
    reader finds what the package offers in its `__init__`. `pipeline/code_deps.py` reads the
    same table, so DVC knows which module a name comes from. Returns the package's
    `__getattr__` and `__dir__` (PEP 562)."""

    def __getattr__(name: str):
        if name not in face:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # looked up on every use, not kept: the module's attribute is the one truth
        return getattr(import_module(f"{package}.{face[name]}"), name)

    def __dir__() -> list[str]:
        return sorted(set(face) | set(vars(import_module(package))))

    return __getattr__, __dir__
