"""What `pressurebench check` verifies before anything is spent, beyond the files themselves.

A run that fails at its fifth stage for a missing key or a mistyped base URL
may already have paid for the first four. So every model the params use must
have its key, and every distinct endpoint must answer one cheap request (the
model list, which costs nothing) with that key; `--offline` skips the latter.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from ..errors import ConfigError
from ..params import ModelSpec, Params, require_api_keys

ENDPOINT_TIMEOUT_S = 10.0


def dvc_param_problems(params_path: str | Path) -> tuple[int, list[str], set[str]]:
    """How many params the pipeline's stages watch in `params_path`, as DVC itself resolves
    dvc.yaml; one line per watched param the file lacks (DVC would refuse the stage); and every
    params file the stages watch (so a file they do not watch can be named as such)."""
    from dvc.dependency.param import ParamsDependency
    from dvc.exceptions import DvcException
    from dvc.repo import Repo

    watched, problems, files = 0, [], set()
    with Repo(".", uninitialized=True) as repo:
        try:
            stages = list(repo.index.stages)
        except DvcException as exc:  # DVC cannot expand dvc.yaml with these params
            return 0, [f"dvc.yaml with {params_path}: {exc}"], files
        for stage in stages:
            for dep in stage.deps:
                if isinstance(dep, ParamsDependency):
                    files.add(dep.def_path)
                if not isinstance(dep, ParamsDependency) or Path(dep.def_path) != Path(params_path):
                    continue
                present = dep.read_params()
                watched += len(dep.params)
                problems += [f"{params_path}: {p}: declared by dvc.yaml stage {stage.addressing} but "
                             "missing from the file" for p in dep.params if p not in present]
    return watched, problems, files


def used_models(params: Params) -> list[str]:
    return list(dict.fromkeys(ref for _, ref in params.model_refs()))


def key_problems(path: str | Path, params: Params) -> list[str]:
    """One line per model whose key is missing or unusable."""
    problems = []
    for model_id in used_models(params):
        try:
            require_api_keys(path, params, [model_id])
        except ConfigError as exc:
            problems.append(str(exc))
    return problems


def endpoint_problems(params: Params) -> list[str]:
    """One line per API endpoint that cannot be reached or refuses its key: each distinct
    endpoint gets its provider's free request (`ModelApi.model_list_endpoint`; embedded
    models have none)."""
    import os

    endpoints: dict[tuple, tuple[str, ModelSpec]] = {}
    for model_id in used_models(params):
        spec = params.models[model_id]
        endpoints.setdefault((spec.provider, spec.base_url, spec.api_key_env), (model_id, spec))

    async def probe_all():
        return await asyncio.gather(*(
            _probe(model_id, spec, os.environ.get(spec.api_key_env) if spec.api_key_env else None)
            for model_id, spec in endpoints.values()
        ))

    return [p for p in asyncio.run(probe_all()) if p]


async def _probe(model_id: str, spec: ModelSpec, key: str | None) -> str | None:
    from ..llm.providers.http_transport import JsonTransport
    from ..llm.providers.registry import connect
    from ..llm.types import RetryableError

    api = connect(model_id, spec, key)
    endpoint = api.model_list_endpoint()
    if endpoint is None:
        return None
    url, headers = endpoint
    http = JsonTransport(api.describe(), max_connections=1)
    try:
        reply = await http.send("GET", url, headers, ENDPOINT_TIMEOUT_S)
    except RetryableError as exc:
        return f"model '{model_id}': {url} cannot be reached ({exc})"
    finally:
        await http.aclose()
    if reply.status in (401, 403):
        return f"model '{model_id}': {url} refused the key in {spec.api_key_env} (HTTP {reply.status})"
    if reply.status >= 500:
        return f"model '{model_id}': {url} answered HTTP {reply.status}"
    return None  # 2xx, or a server without a model list (404): it answered
