"""The host as the component sees it: an adapter from :class:`_host.Host` to
the bindings componentize-py generates at build time from
``guest-sdk/python/wit/world.wit`` (the ``airlock:job@0.6.0`` handler or
batch-handler world plus ``wasi:http/outgoing-handler@0.2.12``; both have
the same imports, which is all this module uses).

Imported by ``airlock_sdk/__init__.py`` only when ``wit_world`` exists, i.e.
while componentize-py builds the component. Everything is imported at the
top: componentize-py snapshots the interpreter after the app's imports, and
a module first imported at run time is not in the component.

The build passes ``--import-interface-name airlock:job/types@0.6.0=airlock_types``
and ``wasi:http/types@0.2.12=http_types`` (both interfaces are named
``types``), so the module names below are stable.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from componentize_py_types import Err, Ok
from wit_world.imports import airlock_types as wit
from wit_world.imports import config as wit_config
from wit_world.imports import context as wit_context
from wit_world.imports import http_types as wit_http
from wit_world.imports import outgoing_handler as wit_outgoing
from wit_world.imports import streams as wit_streams

from ._host import Headers, HostFailure, NewJobArgs
from .errors import HttpError
from .http import error_from_code, error_from_stream_text

__all__ = ["WitHost"]

# `blocking-write-and-flush` accepts at most 4096 bytes per call.
_WRITE_CHUNK = 4096
_READ_CHUNK = 64 << 10

_LEVELS = {
    "trace": wit.LogLevel.TRACE,
    "debug": wit.LogLevel.DEBUG,
    "info": wit.LogLevel.INFO,
    "warn": wit.LogLevel.WARN,
    "error": wit.LogLevel.ERROR,
}

_HOST_ERROR_KINDS = {
    "HostError_Unsupported": "unsupported",
    "HostError_Invalid": "invalid",
    "HostError_LimitExceeded": "limit-exceeded",
    "HostError_Unavailable": "unavailable",
}

_METHODS = {
    "GET": wit_http.Method_Get,
    "HEAD": wit_http.Method_Head,
    "POST": wit_http.Method_Post,
    "PUT": wit_http.Method_Put,
    "DELETE": wit_http.Method_Delete,
    "CONNECT": wit_http.Method_Connect,
    "OPTIONS": wit_http.Method_Options,
    "TRACE": wit_http.Method_Trace,
    "PATCH": wit_http.Method_Patch,
}


def _failure(err: Err) -> HostFailure:
    value = err.value
    kind = _HOST_ERROR_KINDS.get(type(value).__name__, "unavailable")
    return HostFailure(kind, str(getattr(value, "value", value)))


def _new_job(job: NewJobArgs) -> Any:
    queue, name, data, options = job
    return wit.NewJob(queue, name, data, options)


def _child_end(end: Any) -> Tuple[Any, ...]:
    if isinstance(end, wit.ChildEnd_Completed):
        return ("completed", end.value)
    if isinstance(end, wit.ChildEnd_Failed):
        failure = end.value
        return ("failed", failure.kind, failure.reason, failure.attempts)
    return ("timed_out",)


def _code_error(code: Any) -> HttpError:
    name = type(code).__name__
    if name.startswith("ErrorCode_"):
        name = name[len("ErrorCode_"):]
    return error_from_code(name, getattr(code, "value", None))


def _stream_error(what: str, err: Any) -> HttpError:
    if isinstance(err, wit_streams.StreamError_Closed):
        return HttpError("transport", f"{what}: stream closed")
    io_error = err.value
    code = wit_http.http_error_code(io_error)
    if code is not None:
        return _code_error(code)
    return error_from_stream_text(what, io_error.to_debug_string())


def _refusal(future: Any) -> Optional[HttpError]:
    """The error the response future resolved with, if it did."""
    with future:
        with future.subscribe() as pollable:
            pollable.block()
        answer = future.get()
    if answer is not None and not isinstance(answer, Err) and isinstance(answer.value, Err):
        return _code_error(answer.value.value)
    return None


class WitHost:
    """:class:`airlock_sdk._host.Host` over the generated bindings."""

    def report_progress_percent(self, percent: int) -> None:
        wit_context.report_progress(wit.Progress_Percent(percent))

    def report_progress_json(self, text: str) -> None:
        wit_context.report_progress(wit.Progress_Json(text))

    def log(self, level: str, message: str) -> None:
        wit_context.log(_LEVELS.get(level, wit.LogLevel.INFO), message)

    def step_lookup(self, step_id: str) -> Optional[str]:
        try:
            return wit_context.step_lookup(step_id)
        except Err as e:
            raise _failure(e) from None

    def step_record(self, step_id: str, output: str) -> None:
        try:
            wit_context.step_record(step_id, output)
        except Err as e:
            raise _failure(e) from None

    def sleep_until(self, step_id: str, wake_at_ms: int) -> None:
        try:
            wit_context.sleep_until(step_id, wake_at_ms)
        except Err as e:
            raise _failure(e) from None

    def wait_for_event(
        self,
        step_id: str,
        event: str,
        match: Optional[Tuple[str, str]],
        timeout_ms: int,
    ) -> Optional[str]:
        matching = None if match is None else wit.EventMatch(match[0], match[1])
        try:
            return wit_context.wait_for_event(step_id, event, matching, timeout_ms)
        except Err as e:
            raise _failure(e) from None

    def wait_token(self, step_id: str) -> str:
        try:
            return wit_context.wait_token(step_id)
        except Err as e:
            raise _failure(e) from None

    def wait_for_token(self, step_id: str, timeout_ms: int) -> Optional[str]:
        try:
            return wit_context.wait_for_token(step_id, timeout_ms)
        except Err as e:
            raise _failure(e) from None

    def children_results(self) -> List[Tuple[str, str, str, str]]:
        try:
            results = wit_context.children_results()
        except Err as e:
            raise _failure(e) from None
        out = []
        for r in results:
            kind = "completed" if isinstance(r.outcome, wit.ChildOutcome_Completed) else "failed"
            out.append((r.child.queue, r.child.id, kind, r.outcome.value))
        return out

    def enqueue(self, step_id: str, job: NewJobArgs) -> Tuple[str, str]:
        try:
            ref = wit_context.enqueue(step_id, _new_job(job))
        except Err as e:
            raise _failure(e) from None
        return (ref.queue, ref.id)

    def invoke(
        self,
        step_id: str,
        jobs: List[NewJobArgs],
        max_running: Optional[int],
        timeout_ms: Optional[int],
    ) -> List[Tuple[Any, ...]]:
        try:
            ends = wit_context.invoke(step_id, [_new_job(job) for job in jobs], max_running, timeout_ms)
        except Err as e:
            raise _failure(e) from None
        return [_child_end(end) for end in ends]

    def send_event_step(self, step_id: str, name: str, data: str) -> str:
        try:
            return wit_context.send_event(step_id, name, data)
        except Err as e:
            raise _failure(e) from None

    def retry_after(self, delay_ms: int, reason: str) -> None:
        wit_context.retry_after(delay_ms, reason)

    def rate_limit(self, duration_ms: int, reason: str) -> None:
        wit_context.rate_limit(duration_ms, reason)

    def kv_get(self, key: str) -> Optional[str]:
        try:
            return wit_context.kv_get(key)
        except Err as e:
            raise _failure(e) from None

    def kv_set(self, key: str, value: str, ttl_ms: Optional[int]) -> None:
        try:
            wit_context.kv_set(key, value, ttl_ms)
        except Err as e:
            raise _failure(e) from None

    def kv_set_if_absent(self, key: str, value: str, ttl_ms: Optional[int]) -> bool:
        try:
            return wit_context.kv_set_if_absent(key, value, ttl_ms)
        except Err as e:
            raise _failure(e) from None

    def kv_delete(self, key: str) -> bool:
        try:
            return wit_context.kv_delete(key)
        except Err as e:
            raise _failure(e) from None

    def config_get(self, key: str) -> Optional[str]:
        return wit_config.get(key)

    def config_keys(self) -> List[str]:
        return list(wit_config.keys())

    def secret(self, name: str) -> str:
        try:
            return wit_config.secret(name)
        except Err as e:
            raise _failure(e) from None

    def reveal_secret(self, name: str) -> str:
        try:
            return wit_config.reveal_secret(name)
        except Err as e:
            raise _failure(e) from None

    def http_refusals(self) -> List[Tuple[int, str, str, str]]:
        # The enum's cases by name: `EGRESS_RULE` is the contract's `egress-rule`.
        return [
            (r.seq, r.url, r.kind.name.lower().replace("_", "-"), r.reason)
            for r in wit_context.http_refusals()
        ]

    def job_error(self, kind: str, message: str) -> BaseException:
        if kind == "fatal":
            return Err(wit.JobError_Fatal(message))
        return Err(wit.JobError_Retry(message))

    def batch_outcome(self, kind: str, text: str) -> Any:
        if kind == "ok":
            return Ok(text)
        if kind == "fatal":
            return Err(wit.JobError_Fatal(text))
        return Err(wit.JobError_Retry(text))

    def http_send(
        self,
        method: str,
        scheme: str,
        authority: str,
        path_with_query: str,
        headers: Headers,
        body: bytes,
        timeout_ns: Optional[int],
    ) -> Tuple[int, Headers, bytes]:
        def refused(what: str) -> HttpError:
            return HttpError("invalid", f"{what} refused by wasi:http")

        fields = wit_http.Fields()
        for name, value in headers:
            try:
                fields.append(name, value)
            except Err as e:
                raise HttpError(
                    "invalid", f"header `{name}`: {type(e.value).__name__.split('_')[-1]}"
                ) from None
        request = wit_http.OutgoingRequest(fields)
        method_case = _METHODS.get(method)
        try:
            request.set_method(method_case() if method_case else wit_http.Method_Other(method))
        except Err:
            raise refused("method") from None
        try:
            if scheme == "https":
                request.set_scheme(wit_http.Scheme_Https())
            elif scheme == "http":
                request.set_scheme(wit_http.Scheme_Http())
            else:
                # The host refuses it (a refusal of kind "scheme").
                request.set_scheme(wit_http.Scheme_Other(scheme))
        except Err:
            raise refused("scheme") from None
        try:
            request.set_authority(authority)
        except Err:
            raise refused("authority") from None
        try:
            request.set_path_with_query(path_with_query)
        except Err:
            raise refused("path") from None
        options = None
        if timeout_ns is not None:
            options = wit_http.RequestOptions()
            for setter in (
                options.set_connect_timeout,
                options.set_first_byte_timeout,
                options.set_between_bytes_timeout,
            ):
                try:
                    setter(timeout_ns)
                except Err:
                    pass
        try:
            outgoing = request.body()
        except Err:
            raise refused("body") from None
        try:
            future = wit_outgoing.handle(request, options)
        except Err as e:
            raise _code_error(e.value) from None
        try:
            stream = outgoing.write()
        except Err:
            raise refused("body stream") from None
        with stream:
            for start in range(0, len(body), _WRITE_CHUNK):
                try:
                    stream.blocking_write_and_flush(body[start : start + _WRITE_CHUNK])
                except Err as e:
                    failure = _stream_error("request body", e.value)
                    break
            else:
                failure = None
        if failure is not None:
            # A request the host refuses (egress rules, request cap) closes
            # the body stream; the reason is the response future's error.
            raise _refusal(future) or failure
        try:
            wit_http.OutgoingBody.finish(outgoing, None)
        except Err as e:
            raise _code_error(e.value) from None

        with future:
            with future.subscribe() as pollable:
                pollable.block()
            answer = future.get()
        if answer is None or isinstance(answer, Err):
            raise HttpError("transport", "the response was already taken")
        inner = answer.value
        if isinstance(inner, Err):
            raise _code_error(inner.value)
        response = inner.value
        with response:
            status = response.status()
            with response.headers() as fields_in:
                entries = list(fields_in.entries())
            try:
                incoming = response.consume()
            except Err:
                raise HttpError("transport", "response body unavailable") from None
            chunks: List[bytes] = []
            try:
                stream_in = incoming.stream()
            except Err:
                raise HttpError("transport", "response body unavailable") from None
            with stream_in:
                while True:
                    try:
                        chunks.append(stream_in.blocking_read(_READ_CHUNK))
                    except Err as e:
                        if isinstance(e.value, wit_streams.StreamError_Closed):
                            break
                        raise _stream_error("response body", e.value) from None
            trailers = wit_http.IncomingBody.finish(incoming)
            trailers.__exit__(None, None, None)
        return status, entries, b"".join(chunks)
