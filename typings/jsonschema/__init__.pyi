# The part of jsonschema's API the adapter kit uses (the package ships no type information).
from collections.abc import Iterator, Mapping

class ValidationError(Exception):
    message: str
    json_path: str

class Draft202012Validator:
    def __init__(self, schema: Mapping[str, object]) -> None: ...
    def iter_errors(self, instance: object) -> Iterator[ValidationError]: ...
