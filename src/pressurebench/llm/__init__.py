"""One client for every model call: providers, structured output, cache, limits, retries, usage.

Importing the package imports none of them: the params check each model by its provider's rules
(`providers.registry`) without loading the client, its cache, batcher or spending ledger.
"""

from .. import lazy_face

FACE = {
    "CallResult": "client",
    "ModelClient": "client",
    "run_sync": "client",
    "ProviderAuthError": "types",
    "ProviderNotFound": "types",
    "recorded_spending": "spending",
}
__getattr__, __dir__ = lazy_face(__name__, FACE)
