"""Claude on AWS Bedrock, through the `anthropic` SDK's `AsyncAnthropicBedrock` client.

The model is Bedrock's model id (`anthropic.claude-sonnet-4-6`, or an inference profile such
as `us.anthropic.claude-sonnet-4-5-20250929-v1:0`) and goes into the URL,
`POST /model/<id>/invoke`, with `anthropic_version: bedrock-2023-05-31` in the body and no
`model` field there. Credentials come from the AWS environment as boto3 finds them
(AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, AWS_PROFILE, a role), the
region from `region` or AWS_REGION; a Bedrock API key instead, when `api_key_env` names its
variable. Needs the `clouds` extra (`anthropic[bedrock]`).
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, ClassVar

from .claude_on_cloud import ClaudeOnCloud
from .registry import model_api

if TYPE_CHECKING:
    from anthropic import AsyncAnthropicBedrock


@model_api("anthropic-bedrock")
class AnthropicBedrockProvider(ClaudeOnCloud):
    settings: ClassVar[tuple[str, ...]] = ("region",)
    distributions: ClassVar[tuple[str, ...]] = ("anthropic", "boto3")
    price_table_provider: ClassVar[str | None] = "aws"

    @property
    def at_list_price_endpoint(self) -> bool:
        """Bedrock's own regional endpoints (`bedrock-runtime.<region>.amazonaws.com`)."""
        host = self.endpoint_host
        return host is None or (host.startswith("bedrock-runtime.") and host.endswith(".amazonaws.com"))

    @cached_property
    def client(self) -> AsyncAnthropicBedrock:
        from anthropic import AsyncAnthropicBedrock

        return AsyncAnthropicBedrock(aws_region=self.spec.region, api_key=self.api_key,
                                     base_url=self.spec.base_url, max_retries=0,
                                     default_headers=self.spec.extra_headers or None)
