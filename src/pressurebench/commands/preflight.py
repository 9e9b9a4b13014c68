"""What `pressurebench check` verifies before anything is spent, beyond the files themselves.

A run that fails at its fifth stage for a missing key or a mistyped base URL
may already have paid for the first four. So every model the params use must
have its key, and every distinct endpoint must answer one cheap request (the
model list, which costs nothing) with that key; `--offline` skips the latter.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from urllib.parse import quote

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

    watched, problems = 0, []
    files: set[str] = set()
    with Repo(".", uninitialized=True) as repo:
        try:
            stages = list(repo.index.stages)
        except DvcException as exc:  # DVC cannot expand dvc.yaml with these params
            return 0, [f"dvc.yaml with {params_path}: {exc}"], files
        for stage in stages:
            for dep in stage.deps:
                if isinstance(dep, ParamsDependency):
                    files.add(dep.def_path)
                # The same file, also through a link (`pressurebench use`).
                if not isinstance(dep, ParamsDependency) or (
                        Path(dep.def_path).resolve() != Path(params_path).resolve()):
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


def endpoint_problems(params: Params) -> tuple[list[str], list[str]]:
    """The problems: one line per API endpoint that cannot be reached, refuses its key or has no
    model list where its provider serves one, and per model whose name that list does not hold.
    And the warnings: one line per endpoint that answers but lists no model, whose models'
    names could not be checked. Each distinct endpoint gets its provider's free request
    (`ModelApi.model_list_endpoint`; embedded models have none).

    A name the list lacks is an error, not a warning: a server that lists models serves those
    (OpenAI, Anthropic, vLLM, Ollama and LiteLLM list every name they take, and an alias the
    list does not spell out is asked for by itself first), so every call to it would be
    refused with a 404. A server that lists none (some gateways and OpenAI-compatible servers
    answer with an empty list) gives nothing to compare with, so its models are named as
    unchecked instead of failing the check: stopping there would leave `--offline`, which
    also skips every key and endpoint, as the only way on."""
    import os

    endpoints: dict[tuple, list[tuple[str, ModelSpec]]] = {}
    for model_id in used_models(params):
        spec = params.models[model_id]
        endpoints.setdefault((spec.provider, spec.base_url, spec.api_key_env), []).append(
            (model_id, spec))

    async def probe_all():
        return await asyncio.gather(*(
            _probe(users, os.environ.get(env) if (env := users[0][1].api_key_env) else None)
            for users in endpoints.values()
        ))

    found = asyncio.run(probe_all())
    return [p for problems, _ in found for p in problems], [w for _, w in found if w]


async def _probe(users: list[tuple[str, ModelSpec]], key: str | None
                 ) -> tuple[list[str], str | None]:
    """Ask one endpoint for its model list, then check every model that uses it against it: the
    problems, and the warning of an endpoint that lists no model (None where it lists some).

    The list is paged where the service pages it (Anthropic: `has_more`, `after_id`); a name
    the list lacks is asked for by itself (`GET .../models/<name>`, which resolves Anthropic's
    aliases) before it is reported.
    """
    from ..llm.providers.http_transport import JsonTransport
    from ..llm.providers.registry import connect
    from ..llm.types import RetryableError

    model_id, spec = users[0]
    api = connect(model_id, spec, key)
    endpoint = api.model_list_endpoint()
    if endpoint is None:
        return [], None
    url, headers = endpoint
    names = ", ".join(f"'{m}'" for m, _ in users)
    which = f"model{'s' if len(users) > 1 else ''} {names}"
    http = JsonTransport(api.describe(), max_connections=1)
    try:
        listed: list[str] | None = []
        page_url = url
        while True:
            reply = await http.send("GET", page_url, headers, ENDPOINT_TIMEOUT_S)
            problem = _status_problem(which, page_url, reply.status, spec, api.base_url_hint)
            if problem:
                return [problem], None
            page = _model_page(reply.body)
            if page is None:
                listed = None  # a server that answers but lists no models
                break
            ids, after = page
            assert listed is not None, "set to None only on leaving the loop"
            if after in listed:  # a cursor seen before: the list would never end
                after = None
            listed += ids
            if after is None:
                break
            page_url = api.model_page_url(url, after)
        if not listed:
            return [], (f"{which}: {url} answers but lists no model, so the model name"
                        f"{'s' if len(users) > 1 else ''} "
                        f"{', '.join(repr(s.model) for _, s in users)} could not be checked "
                        "against it; a misspelled one fails at the first call (HTTP 404)")
        problems = []
        for model_id, spec in users:
            if spec.model in listed:
                continue
            one = f"{url.rstrip('/')}/{quote(spec.model, safe='')}"
            if (await http.send("GET", one, headers, ENDPOINT_TIMEOUT_S)).status == 200:
                continue  # an alias the list does not spell out
            shown = ", ".join(listed[:8]) + (", ..." if len(listed) > 8 else "")
            problems.append(
                f"model '{model_id}': '{spec.model}' is not among the {len(listed)} models "
                f"{url} lists ({shown}); set models.{model_id}.model to a name it "
                "lists, or base_url to the server that serves it"
            )
        return problems, None
    except RetryableError as exc:
        return [f"{which}: {url} cannot be reached ({exc})"], None
    finally:
        await http.aclose()


def _status_problem(which: str, url: str, status: int, spec: ModelSpec,
                    hint: str | None) -> str | None:
    if status in (401, 403):
        return f"{which}: {url} refused the key in {spec.api_key_env} (HTTP {status})"
    if status == 404:
        where = f"base_url {spec.base_url}" if spec.base_url else "the client's default base URL"
        return (f"{which}: GET {url} answered HTTP 404 (not found), so {where} does not lead "
                f"to the {spec.provider} API; {hint or 'check base_url'}")
    if not 200 <= status < 300:
        return f"{which}: GET {url} answered HTTP {status}"
    return None


def _model_page(body: bytes) -> tuple[list[str], str | None] | None:
    """The model ids of a model-list page, and the cursor of the next page (None: the last);
    None when the body is no model list. OpenAI and Anthropic answer `{"data": [{"id": ...},
    ...]}`, Anthropic adding `has_more` and `last_id`; Gemini answers `{"models": [{"name":
    "models/<id>"}, ...], "nextPageToken": ...}`."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if isinstance(data, dict) and isinstance(data.get("models"), list):
        names = [x["name"] for x in data["models"] if isinstance(x, dict) and isinstance(x.get("name"), str)]
        token = data.get("nextPageToken")
        return [n.removeprefix("models/") for n in names], token if isinstance(token, str) and token else None
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return None
    ids = [x["id"] for x in items if isinstance(x, dict) and isinstance(x.get("id"), str)]
    after = data.get("last_id") if data.get("has_more") is True else None
    return ids, after if isinstance(after, str) and ids else None
