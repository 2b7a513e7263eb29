"""SA000: input the tool could not turn into an object (reported by loaders and the model)."""

from ...core.problems import INPUT_ERROR as KIND
from ..base import InputRule

RULE = InputRule(
    id=KIND.id,
    slug="input-error",
    severity=KIND.severity,
    summary="unreadable file, unparseable YAML/JSON, a document that is not an object, a "
    "missing or mistyped required field, or a field the kind does not have",
    description=(
        "Nothing else can be checked on an object that cannot be read, so this is always an "
        "error. The finding names the file, line and column the parser stopped at, and the "
        "field path for structural problems (`spec.pool.generation: Invalid value: \"7\": must "
        "be of type integer`), and a field the kind does not have, worded as the API server's "
        "strict field validation words it (`unknown field \"spec.sharingAffnity\"`, with the "
        "nearest known name): `kubectl apply` fails on it. A claim, claim template or DeviceClass "
        "whose opaque "
        "`parameters` exceed the API server's 10,240 bytes of JSON (`OpaqueParametersMaxLength`) "
        "is one too: no cluster can hold it. Other documents and files are still checked."
    ),
    bad_example=(
        "pool:\n"
        "  name: pool-a\n"
        "  generation: \"7\"   # a string, not an integer\n"
        "  resourceSliceCount: 1"
    ),
    good_example=(
        "pool:\n"
        "  name: pool-a\n"
        "  generation: 7\n"
        "  resourceSliceCount: 1"
    ),
)
