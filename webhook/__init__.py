"""The validating admission webhook: the third door onto `policies` (after `lint` and `cel`).

Nothing here decides anything about a ResourceSlice; it turns an AdmissionReview into model
objects, asks `policies.rules.engine`, and renders the findings the way the API server renders field
errors. The rest is serving: TLS with hot-reloaded certificates, health, metrics, JSON logs.
"""
