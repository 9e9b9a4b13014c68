"""`make plots`: the plots `dvc.yaml` declares, drawn without a network.

`dvc plots show` writes a page that loads Vega from a CDN, which stays blank
offline. This asks DVC for the same plots already filled in
(`dvc plots show --json`: one Vega-Lite specification per plot, the data
inline), draws each to SVG in-process with vl-convert, and writes one page that
needs nothing but a browser:

    python -m pressurebench.reports.dvc_plots [--out dvc_plots/offline.html]
"""

from __future__ import annotations

import argparse
import html
import json
import subprocess
import sys
from pathlib import Path

from ..io import atomic_write_text
from .safety import content_security_policy

DEFAULT_OUT = Path("dvc_plots") / "offline.html"


def plot_specs(dvc_json: dict) -> list[tuple[str, dict]]:
    """(plot id, Vega-Lite specification) for every Vega plot in `dvc plots show --json`."""
    out = []
    for plot_id, renderers in sorted(dvc_json.get("data", {}).items()):
        for renderer in renderers:
            if renderer.get("type") == "vega":
                out.append((plot_id, renderer["content"]))
    return out


def numeric(spec: dict) -> dict:
    """DVC passes CSV values as strings; quantitative fields are given as numbers."""
    fields = set()

    def collect(node):
        if isinstance(node, dict):
            if node.get("type") == "quantitative" and "field" in node:
                fields.add(node["field"])
            for value in node.values():
                collect(value)
        elif isinstance(node, list):
            for value in node:
                collect(value)

    collect(spec)
    fields |= {enc["field"] for layer in spec.get("layer", []) for key, enc in
               layer.get("encoding", {}).items() if key in ("x2", "y2") and "field" in enc}
    values = spec.get("data", {}).get("values", [])
    for row in values:
        for field in fields:
            if isinstance(row.get(field), str):
                try:
                    row[field] = float(row[field])
                except ValueError:
                    row[field] = None
    return spec


def heading(plot_id: str, spec: dict) -> str:
    """The plot's own title and its benchmark (`data/<benchmark>/plots/...`), not a file path."""
    title = spec.get("title")
    text = (title.get("text") if isinstance(title, dict) else title) or Path(plot_id).stem
    parts = Path(plot_id).parts
    return f"{text} · {parts[1]}" if len(parts) > 2 and parts[0] == "data" else text


def render_page(specs: list[tuple[str, dict]]) -> str:
    import vl_convert

    sections = []
    for plot_id, spec in specs:
        svg = vl_convert.vegalite_to_svg(numeric(spec))
        sections.append(f"<section><h2>{html.escape(heading(plot_id, spec))}</h2>\n{svg}\n"
                        "</section>")
    body = "\n".join(sections) or "<p>dvc.yaml declares no plots with data yet.</p>"
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{content_security_policy()}\">"
        "<title>DVC plots</title></head>\n<body>\n"
        f"{body}\n</body></html>\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    proc = subprocess.run([sys.executable, "-m", "dvc", "plots", "show", "--json"],
                          capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        print(f"pressurebench: dvc plots show failed: {proc.stderr.strip()}", file=sys.stderr)
        return 2
    specs = plot_specs(json.loads(proc.stdout))
    atomic_write_text(args.out, render_page(specs))
    print(f"wrote {len(specs)} plot(s) to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
