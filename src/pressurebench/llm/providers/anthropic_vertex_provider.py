"""Claude on Google Vertex AI, through the `anthropic` SDK's `AsyncAnthropicVertex` client.

The model is Vertex's name (`claude-sonnet-4-6`, or pinned as `claude-sonnet-4-5@20250929`)
and goes into the URL, `POST /v1/projects/<project>/locations/<region>/publishers/anthropic/
models/<model>:rawPredict`, with `anthropic_version: vertex-2023-10-16` in the body and no
`model` field there. The project and region come from `project_id` and `region`, else from
ANTHROPIC_VERTEX_PROJECT_ID and CLOUD_ML_REGION; credentials from Google's application
default credentials (GOOGLE_APPLICATION_CREDENTIALS, `gcloud auth application-default
login`), or an access token in the variable `api_key_env` names. Needs the `clouds` extra
(`anthropic[vertex]`).
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from .claude_on_cloud import ClaudeOnCloud
from .registry import model_api

if TYPE_CHECKING:
    from anthropic import AsyncAnthropicVertex


@model_api("anthropic-vertex")
class AnthropicVertexProvider(ClaudeOnCloud):
    settings: ClassVar[tuple[str, ...]] = ("region", "project_id")
    distributions: ClassVar[tuple[str, ...]] = ("anthropic", "google-auth")
    price_table_provider: ClassVar[str | None] = "google"

    @property
    def at_list_price_endpoint(self) -> bool:
        """Vertex AI's own endpoints (`<region>-aiplatform.googleapis.com`)."""
        host = self.endpoint_host
        return host is None or host.endswith("aiplatform.googleapis.com")

    @cached_property
    def client(self) -> AsyncAnthropicVertex:
        from anthropic import AsyncAnthropicVertex

        where: dict[str, Any] = {}
        if self.spec.region is not None:
            where["region"] = self.spec.region
        if self.spec.project_id is not None:
            where["project_id"] = self.spec.project_id
        return AsyncAnthropicVertex(**where, access_token=self.api_key, base_url=self.spec.base_url,
                                    max_retries=0, default_headers=self.spec.extra_headers or None)
