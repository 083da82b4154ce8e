"""Request decoding and bounds, applied to every served call before its handler runs.

grpcio decodes a request before any handler sees it, and answers INTERNAL when that fails. The
:class:`RequestChecks` interceptor takes decoding over: an undecodable request (corrupt bytes,
invalid UTF-8 in a string field, nesting past protobuf's recursion limit) gets INVALID_ARGUMENT.
A decoded unary request is then checked whole: an enum field holding a value its enum does not
define (``id_reuse_policy=99``) and an id longer than :data:`MAX_ID_CHARS` are refused the same
way, so no handler ever acts on them. Stream requests (``PollWorkerTask``) are only decoded
here: their frames come from the SDK's Worker, which the dispatcher already treats defensively.

Page and resume tokens are parsed by :func:`parse_token`, which refuses numbers SQLite cannot hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import grpc
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

from .errors import clip, invalid

MAX_ID_CHARS = 1024
"""Longest id accepted: any string field named ``*_id`` and the names in :data:`ID_FIELDS`."""
ID_FIELDS = frozenset({"flow_type", "step_type", "rpc_name", "stream_name", "channel_name", "queue"})
MAX_TOKEN_DIGITS = 18
"""Page and resume tokens are decimal sequence numbers below 10**18 (they fit SQLite's integers)."""
SKIPPED_MESSAGES = frozenset({"dex.Value"})
"""Payload messages not walked (they hold application values, neither enums nor ids of ours)."""


class BadRequest(Exception):
    """A request that cannot be served as sent; its text is the INVALID_ARGUMENT detail."""


def parse_token(token: str, what: str) -> int:
    """A page or resume token's sequence number; ``""`` is 0.

    Raises:
        ServiceError: INVALID_ARGUMENT when it is not a decimal number of at most MAX_TOKEN_DIGITS digits.
    """
    if not token:
        return 0
    if not token.isascii() or not token.isdigit() or len(token) > MAX_TOKEN_DIGITS:
        raise invalid(f"invalid {what}: {clip(token)!r}")
    return int(token)


def check_message(message: Message) -> None:
    """Refuse unknown enum values and over-long ids anywhere in ``message``.

    Raises:
        BadRequest: naming the first offending field.
    """
    if message.DESCRIPTOR.full_name in SKIPPED_MESSAGES:
        return
    for field, value in message.ListFields():
        values = list(value) if field.is_repeated else [value]
        if field.type == FieldDescriptor.TYPE_ENUM:
            enum = field.enum_type
            assert enum is not None
            for number in values:
                if number not in enum.values_by_number:
                    raise BadRequest(f"{field.name}: {number} is not a {enum.name} value")
        elif field.type == FieldDescriptor.TYPE_STRING and (field.name.endswith("_id") or field.name in ID_FIELDS):
            for text in values:
                if len(text) > MAX_ID_CHARS:
                    raise BadRequest(f"{field.name} is {len(text)} characters long; the limit is {MAX_ID_CHARS}")
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                values = list(value.values())
            for nested in values:
                if isinstance(nested, Message):
                    check_message(nested)


def decode(raw: bytes, deserializer: Callable[[bytes], Any] | None) -> Any:
    """The request decoded by the method's own deserializer.

    Raises:
        BadRequest: the bytes are not a valid request message.
    """
    if deserializer is None:
        return raw
    try:
        return deserializer(raw)
    except (DecodeError, RecursionError, UnicodeDecodeError, ValueError) as error:
        raise BadRequest(f"request could not be decoded: {clip(str(error)) or type(error).__name__}") from error


def _refuse(context: grpc.ServicerContext, error: BadRequest) -> NoReturn:
    context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
    raise AssertionError("abort returned")


class RequestChecks(grpc.ServerInterceptor):
    """Decodes requests itself (see the module docstring) for every served method."""

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        deserializer = handler.request_deserializer
        for behaviour, checked, rewrap in (
            (handler.unary_unary, _unary, grpc.unary_unary_rpc_method_handler),
            (handler.unary_stream, _unary, grpc.unary_stream_rpc_method_handler),
            (handler.stream_stream, _streaming, grpc.stream_stream_rpc_method_handler),
            (handler.stream_unary, _streaming, grpc.stream_unary_rpc_method_handler),
        ):
            if behaviour is not None:
                return rewrap(checked(behaviour, deserializer), response_serializer=handler.response_serializer)
        return handler


def _unary(behaviour: Callable[[Any, grpc.ServicerContext], Any],
           deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes, grpc.ServicerContext], Any]:
    def checked(raw: bytes, context: grpc.ServicerContext) -> Any:
        try:
            request = decode(raw, deserializer)
            if isinstance(request, Message):
                check_message(request)
        except BadRequest as error:
            _refuse(context, error)
        return behaviour(request, context)
    return checked


class MalformedFrameError(grpc.RpcError):
    """Raised to the stream's reader at a frame that cannot be decoded: to the reader the stream
    broke (it did not end cleanly), and the call is then refused with INVALID_ARGUMENT."""


class _DecodedFrames:
    """Decodes a request stream frame by frame; a bad frame ends it (``MalformedFrameError``) and is
    remembered."""

    def __init__(self, frames: Iterator[bytes], deserializer: Callable[[bytes], Any] | None) -> None:
        self._frames = frames
        self._deserializer = deserializer
        self.error: BadRequest | None = None

    def __iter__(self) -> _DecodedFrames:
        return self

    def __next__(self) -> Any:
        if self.error is not None:
            raise MalformedFrameError(str(self.error))
        raw = next(self._frames)
        try:
            return decode(raw, self._deserializer)
        except BadRequest as error:
            self.error = error
            raise MalformedFrameError(str(error)) from error


def _streaming(behaviour: Callable[[Any, grpc.ServicerContext], Any],
               deserializer: Callable[[bytes], Any] | None) -> Callable[[Iterator[bytes], grpc.ServicerContext], Any]:
    def checked(frames: Iterator[bytes], context: grpc.ServicerContext) -> Any:
        decoded = _DecodedFrames(frames, deserializer)
        result = behaviour(decoded, context)
        if isinstance(result, Iterator):
            return _then_refuse(result, decoded, context)
        if decoded.error is not None:
            _refuse(context, decoded.error)
        return result
    return checked


def _then_refuse(responses: Iterator[Any], decoded: _DecodedFrames, context: grpc.ServicerContext) -> Iterator[Any]:
    """The handler's responses; then INVALID_ARGUMENT if the stream ended on an undecodable frame."""
    yield from responses
    if decoded.error is not None:
        _refuse(context, decoded.error)

