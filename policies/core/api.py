"""The Kubernetes API group every object this tool reads belongs to, spelled once."""

RESOURCE_GROUP = "resource.k8s.io"
"""DRA's API group (ResourceSlice, ResourceClaim, DeviceClass)."""
