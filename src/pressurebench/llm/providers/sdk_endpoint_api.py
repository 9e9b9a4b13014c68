"""A provider whose calls go as JSON over the package's own transport (`JsonTransport`) to the
URL, and with the headers, that the provider's SDK forms: the SDK keeps its rules for base
URLs, auth, API versions and the environment variables it honours, without sending the calls
itself (see `openai_provider` for what that saves)."""

from __future__ import annotations

from functools import cached_property
from typing import Any, ClassVar

from .registry import ModelApi


class SdkEndpointApi(ModelApi):
    """URL and headers of the call and of the model list, as the provider's SDK forms them."""

    # Below the SDK's base URL: where a call goes, and the free request that lists models.
    call_path: ClassVar[str] = ""
    models_path: ClassVar[str] = ""

    def _sdk(self) -> Any:
        """The provider's SDK client, made only to read the URL and headers it would send."""
        raise NotImplementedError

    def _endpoint(self, path: str) -> tuple[str, dict[str, str]]:
        from .http_transport import sdk_endpoint

        return sdk_endpoint(self._sdk(), path)

    def model_list_endpoint(self) -> tuple[str, dict[str, str]] | None:
        return self._endpoint(self.models_path)

    @cached_property
    def _call_endpoint(self) -> tuple[str, dict[str, str]]:
        return self._endpoint(self.call_path)

    @cached_property
    def url(self) -> str:
        return self._call_endpoint[0]

    @cached_property
    def headers(self) -> dict[str, str]:
        return self._call_endpoint[1]

    @cached_property
    def _http(self):
        from .http_transport import JsonTransport

        return JsonTransport(self.describe(), max_connections=self.concurrency)
