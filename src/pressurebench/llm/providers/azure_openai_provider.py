"""OpenAI models on Azure (Azure OpenAI / Azure AI Foundry), through the `openai` SDK's
`AsyncAzureOpenAI` client.

`model` is the deployment's name, which goes into the URL,
`POST <endpoint>/openai/deployments/<deployment>/chat/completions?api-version=<version>`,
with the key in the `api-key` header. The endpoint is `base_url` (the resource's root, as
https://<resource>.openai.azure.com is), else AZURE_OPENAI_ENDPOINT; the API version is
`api_version`, else OPENAI_API_VERSION; the key is in the variable `api_key_env` names
(conventionally AZURE_OPENAI_API_KEY). Requests follow the OpenAI rules (a reasoning
deployment is recognised by the model name in it, or `reasoning:`). Its price is Azure's
list price for the model the table matches by the deployment's name: name deployments after
their model, or set the prices in the params.
"""

from __future__ import annotations

import os
from typing import ClassVar
from urllib.parse import urlencode

from ..types import ProviderStop
from .openai_provider import OpenAIProvider
from .registry import model_api

AZURE_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")


@model_api("azure-openai")
class AzureOpenAIProvider(OpenAIProvider):
    settings: ClassVar[tuple[str, ...]] = (*OpenAIProvider.settings, "api_version")
    price_table_provider: ClassVar[str | None] = "azure"
    batch_price_factor: ClassVar[float | None] = None  # Azure's batch deployments are separate
    base_url_hint: ClassVar[str | None] = (
        "an Azure OpenAI base_url is the resource's root, as https://<resource>.openai.azure.com is "
        "(the client adds /openai/deployments/<deployment>)"
    )

    @property
    def at_openai(self) -> bool:
        """Azure's OpenAI endpoints take the OpenAI API's fields (strict schemas,
        max_completion_tokens)."""
        return True

    @property
    def at_list_price_endpoint(self) -> bool:
        host = self.endpoint_host
        return host is None or host.endswith(AZURE_HOSTS)

    def _endpoint(self, path: str) -> tuple[str, dict[str, str]]:
        """URL and headers as `AsyncAzureOpenAI` forms them for the deployment: its base URL,
        the `api-version` query and the `api-key` header."""
        import openai

        from .http_transport import sdk_endpoint

        endpoint = self.spec.base_url or os.environ.get("AZURE_OPENAI_ENDPOINT")
        if not endpoint:
            raise ProviderStop(f"{self.describe()}: no Azure endpoint: set the model's base_url (the "
                              "resource's root, https://<resource>.openai.azure.com) or AZURE_OPENAI_ENDPOINT")
        sdk = openai.AsyncAzureOpenAI(api_key=self.api_key or "unused", azure_endpoint=endpoint,
                                      api_version=self.spec.api_version, azure_deployment=self.spec.model,
                                      default_headers=self.spec.extra_headers or None)
        url, headers = sdk_endpoint(sdk, path)
        query = {k: v for k, v in sdk._custom_query.items() if isinstance(v, str)}
        return (f"{url}?{urlencode(query)}" if query else url), headers

    def model_list_endpoint(self) -> tuple[str, dict[str, str]] | None:
        """None: a deployment is checked by its first call, not a model list."""
        return None
