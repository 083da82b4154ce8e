# The one message of googleapis-common-protos' google/rpc/status.proto that the project builds
# (engine/errors.py packs a Dex error into its details). The package ships no py.typed and
# types-protobuf's google-stubs cover google.protobuf only, so mypy needs this stub.
from collections.abc import Iterable

from google.protobuf import any_pb2, message
from google.protobuf.internal import containers

class Status(message.Message):
    """``google.rpc.Status``: a gRPC status code, its message and typed details."""

    code: int
    message: str
    @property
    def details(self) -> containers.RepeatedCompositeFieldContainer[any_pb2.Any]: ...
    def __init__(self, *, code: int | None = ..., message: str | None = ...,
                 details: Iterable[any_pb2.Any] | None = ...) -> None: ...
