"""The handle a handler uses to talk to Airlock while it runs."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Mapping, NoReturn, Optional, Sequence, Tuple, TypeVar, Union, overload

from . import _host
from .codec import DecodeError, decode_value, to_json
from .durations import Duration, Instant, duration_ms, instant_ms
from .errors import FatalError, HostError, InvokeError, RetryError
from .http import Http, Refusals

__all__ = [
    "Context",
    "JobInfo",
    "JobRef",
    "ChildResult",
    "Completed",
    "Failed",
    "TimedOut",
    "ChildEnd",
    "NewJob",
    "Logger",
    "Kv",
    "Config",
    "Event",
    "Match",
]

T = TypeVar("T")


def flush_output() -> None:
    """Flushes ``print``'s buffers into the job log (before a sleep, which
    never returns, and at the end of the run)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed or replaced stream is not worth failing for
            pass


def _call(what: str, fn: Callable[..., T], *args: Any) -> T:
    """Runs a host call; a ``host-error`` becomes :class:`HostError` naming
    ``what`` (``"kv get"``)."""
    try:
        return fn(*args)
    except _host.HostFailure as e:
        raise HostError(e.kind, e.detail, what) from None  # type: ignore[arg-type]


class _Lifetime:
    """Whether a job's run has returned, shared by its :class:`Context` and
    what the context hands out (``ctx.log``, ``ctx.kv``, ``ctx.config``,
    ``ctx.http``). Every host call goes through :meth:`host`, which refuses
    once the job has ended: on a reused (warm) instance a ``ctx`` kept in a
    global must not act in a later job's name."""

    __slots__ = ("job_id", "ended")

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id
        self.ended = False

    def host(self, call: str) -> _host.Host:
        """The host, for ``call`` (``"ctx.kv.get"``); a :class:`FatalError`
        naming the job once it has ended."""
        if self.ended:
            raise FatalError(
                f"this job ({self.job_id}) has ended; ctx cannot be used after the handler "
                f"returned ({call}: a ctx kept in a global and used by a later job)"
            )
        return _host.current()


def _live_host(lifetime: Optional[_Lifetime], call: str) -> _host.Host:
    """The host for ``call`` through ``lifetime`` (none: always live)."""
    return _host.current() if lifetime is None else lifetime.host(call)


@dataclass(frozen=True)
class JobRef:
    """Points at a job in some queue."""

    queue: str
    id: str


@dataclass(frozen=True)
class JobInfo:
    """What the handler knows about the job it is running."""

    id: str
    queue: str
    name: str
    #: This attempt, starting at 1 (a resumption after a sleep is not a new one).
    attempt: int
    max_attempts: int
    enqueued_at_ms: int
    started_at_ms: int
    #: The flow parent, when this job is a child.
    parent: Optional[JobRef] = None

    @property
    def enqueued_at(self) -> datetime:
        """When the job was enqueued (UTC)."""
        return datetime.fromtimestamp(self.enqueued_at_ms / 1000, tz=timezone.utc)

    @property
    def started_at(self) -> datetime:
        """When this run started (UTC)."""
        return datetime.fromtimestamp(self.started_at_ms / 1000, tz=timezone.utc)


@dataclass(frozen=True)
class Completed:
    """A child completed (a flow child, or one :meth:`Context.invoke_many`
    started); its return value (decoded JSON)."""

    value: Any


@dataclass(frozen=True)
class Failed:
    """A child failed: a flow child the flow was told to go on regardless
    of (``reason`` only), or one :meth:`Context.invoke_many` started that
    failed for good — its retries used, or a fatal error — with ``kind``
    (its failure kind: ``guest_fatal``, ``guest_retry``, ``timeout``,
    ``fuel_exhausted``, ...) and ``attempts`` (how many it made) set."""

    reason: str
    #: The failure kind of an invoked child (``None`` for a flow child).
    kind: Optional[str] = None
    #: How many attempts an invoked child made (``None`` for a flow child).
    attempts: Optional[int] = None


@dataclass(frozen=True)
class TimedOut:
    """An invoked child had not ended when the invoke's timeout ran out
    (one that started is left to run, and what it returns later reaches
    nobody; one of a ``max_running`` group not started yet never runs)."""


#: How a child :meth:`Context.invoke_many` started ended.
ChildEnd = Union[Completed, Failed, TimedOut]


@dataclass(frozen=True)
class NewJob:
    """A job to start on another queue (:meth:`Context.invoke_many`).

    ``data`` is any JSON value (a dataclass is written as an object);
    ``options`` BullMQ job options (``delay``, ``priority``, ``attempts``,
    ``backoff``, ``lifo``, ``removeOnComplete``, ``removeOnFail``) over the
    target queue's ``defaultJobOptions``. The job id is always Airlock's."""

    queue: str
    name: str
    data: Any = None
    options: Optional[Mapping[str, Any]] = None


@dataclass(frozen=True)
class ChildResult:
    """One child of a flow parent and its outcome."""

    child: JobRef
    outcome: Union[Completed, Failed]

    @property
    def completed(self) -> bool:
        return isinstance(self.outcome, Completed)


@dataclass(frozen=True)
class Event:
    """An event a :meth:`Context.wait_for_event` received: what ``POST
    /v1/events`` was sent, the same form an event-triggered job's data has."""

    #: Its name (``"order.paid"``).
    name: str
    #: Its payload (decoded JSON; ``None`` for ``null`` or none).
    data: Any
    #: Its id (given by the sender, or generated).
    id: str
    #: When Airlock received it, in milliseconds since the Unix epoch.
    ts: int


@dataclass(frozen=True)
class Match:
    """Which events a :meth:`Context.wait_for_event` accepts beyond their
    name: those whose data holds ``value`` at ``path``.

    ``path`` is a JSON path into the event's ``data``: ``$`` then 1 to 16
    ``.name`` segments of letters, digits, ``_`` or ``-`` (``"$.refundId"``,
    ``"$.order.id"``). ``value`` is any JSON value (``"r1"``, ``42``, a
    dict); the SDK sends it to the host as JSON text and the host compares
    it as a JSON value, not as text."""

    path: str
    value: Any


def _parse_event(text: str, wait_id: str) -> Event:
    """The event a wait returned (JSON text) as an :class:`Event`; fatal when
    it is not one (the Rust SDK's message)."""
    try:
        value = json.loads(text)
        if not isinstance(value, dict):
            raise ValueError(f"expected an object, got {_json_kind(value)}")
        for key in ("name", "id"):
            if not isinstance(value.get(key), str):
                raise ValueError(f"field `{key}` is missing or not a string")
        ts = value.get("ts")
        if isinstance(ts, bool) or not isinstance(ts, int) or ts < 0:
            raise ValueError("field `ts` is missing or not a whole number of milliseconds")
    except ValueError as e:
        raise FatalError(f"the event of wait `{wait_id}` does not parse: {e}") from None
    return Event(name=value["name"], data=value.get("data"), id=value["id"], ts=ts)


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"


# u64: the contract's timeouts. Longer ones saturate, as in the Rust SDK
# (the host refuses any over a year anyway).
_U64_MAX = (1 << 64) - 1


def _timeout_ms(timeout: Duration) -> int:
    return min(duration_ms(timeout), _U64_MAX)


def _wait_id(wait_id: Any) -> str:
    if not isinstance(wait_id, str) or not wait_id:
        raise ValueError("a wait id is a non-empty string")
    return wait_id


_U32_MAX = (1 << 32) - 1


def _step_id(step_id: Any, what: str = "a step id") -> str:
    if not isinstance(step_id, str) or not step_id:
        raise ValueError(f"{what} is a non-empty string")
    return step_id


def _job_args(job: Any) -> Tuple[str, str, str, Optional[str]]:
    """A :class:`NewJob` (or a ``(queue, name[, data[, options]])`` tuple)
    as the host takes it; the data and options as JSON text."""
    if isinstance(job, tuple) and 2 <= len(job) <= 4:
        job = NewJob(*job)
    if not isinstance(job, NewJob):
        raise TypeError(
            f"a job to start is an airlock_sdk.NewJob or a (queue, name, data) tuple, "
            f"not {type(job).__name__}"
        )
    queue = _text(job.queue, "a job's queue")
    name = _text(job.name, "a job's name")
    try:
        data = to_json(job.data)
    except (TypeError, ValueError) as e:
        raise FatalError(f"the data of job `{name}` for queue `{queue}` is not JSON: {e}") from None
    options: Optional[str] = None
    if job.options is not None:
        if not isinstance(job.options, Mapping):
            raise TypeError(
                f"a job's options are a dict of BullMQ job options, not {type(job.options).__name__}"
            )
        if job.options:
            try:
                options = to_json(dict(job.options))
            except (TypeError, ValueError) as e:
                raise FatalError(
                    f"the options of job `{name}` for queue `{queue}` are not JSON: {e}"
                ) from None
    return (queue, name, data, options)


def _later_ms(value: Duration) -> int:
    return min(duration_ms(value), _U64_MAX)


class Logger:
    """``ctx.log``: job log lines (``ctx.log.info("...")``, or
    ``ctx.log("...", level="warn")``). ``print`` and ``sys.stderr`` land in
    the same log. Logs are capped per run; lines past the cap are dropped."""

    LEVELS = ("trace", "debug", "info", "warn", "error")

    def __init__(self, lifetime: Optional[_Lifetime] = None) -> None:
        self._lifetime = lifetime

    def _live(self, call: str) -> _host.Host:
        return _live_host(self._lifetime, call)

    def __call__(self, message: Any, level: str = "info") -> None:
        if level == "warning":
            level = "warn"
        if level not in self.LEVELS:
            raise ValueError(f"log level {level!r} is not one of {', '.join(self.LEVELS)}")
        self._live("ctx.log").log(level, message if isinstance(message, str) else str(message))

    def trace(self, message: Any) -> None:
        self(message, "trace")

    def debug(self, message: Any) -> None:
        self(message, "debug")

    def info(self, message: Any) -> None:
        self(message, "info")

    def warn(self, message: Any) -> None:
        self(message, "warn")

    warning = warn

    def error(self, message: Any) -> None:
        self(message, "error")


def _ttl(ttl_ms: Optional[int], ttl: Optional[Duration]) -> Optional[int]:
    if ttl_ms is not None and ttl is not None:
        raise TypeError("give ttl_ms or ttl, not both")
    if ttl is not None:
        ttl_ms = duration_ms(ttl)
    if ttl_ms is None:
        return None
    if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int):
        raise TypeError("ttl_ms is a whole number of milliseconds")
    return max(1, ttl_ms)


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return value


class Kv:
    """``ctx.kv``: a small key-value store, namespaced per handler name, with
    optional expiry. Keys and values are strings. The classic use is
    idempotency: the first :meth:`set_if_absent` of a key wins."""

    def __init__(self, lifetime: Optional[_Lifetime] = None) -> None:
        self._lifetime = lifetime

    def _live(self, call: str) -> _host.Host:
        return _live_host(self._lifetime, call)

    def get(self, key: str) -> Optional[str]:
        """The value under ``key``, or ``None``."""
        return _call("kv get", self._live("ctx.kv.get").kv_get, _text(key, "key"))

    def set(self, key: str, value: str, ttl_ms: Optional[int] = None, *, ttl: Optional[Duration] = None) -> None:
        """Stores ``value`` under ``key``, expiring after ``ttl_ms``
        milliseconds (or ``ttl``: seconds, ``timedelta``, ``"1h"``) when given."""
        host = self._live("ctx.kv.set")
        _call("kv set", host.kv_set, _text(key, "key"), _text(value, "value"), _ttl(ttl_ms, ttl))

    def set_if_absent(
        self, key: str, value: str, ttl_ms: Optional[int] = None, *, ttl: Optional[Duration] = None
    ) -> bool:
        """Stores ``value`` only when ``key`` is absent; ``True`` when this
        call stored it."""
        return _call(
            "kv set-if-absent",
            self._live("ctx.kv.set_if_absent").kv_set_if_absent,
            _text(key, "key"),
            _text(value, "value"),
            _ttl(ttl_ms, ttl),
        )

    def delete(self, key: str) -> bool:
        """Deletes ``key``; ``True`` when it existed."""
        return _call("kv delete", self._live("ctx.kv.delete").kv_delete, _text(key, "key"))


class Config:
    """``ctx.config``: the queue binding's ``config`` map (URLs and settings a
    handler should not hard-code)."""

    def __init__(self, lifetime: Optional[_Lifetime] = None) -> None:
        self._lifetime = lifetime

    def _live(self) -> _host.Host:
        return _live_host(self._lifetime, "ctx.config")

    def get(self, key: str, default: Optional[str] = None) -> Optional[str]:
        """The value of ``key``, or ``default`` when the binding does not set it."""
        value = self._live().config_get(key)
        return default if value is None else value

    def require(self, key: str) -> str:
        """The value of ``key``; a :class:`FatalError` naming the key when it
        is not set."""
        value = self._live().config_get(key)
        if value is None:
            raise FatalError(
                f"configuration `{key}` is not set in this queue's binding (config.{key})"
            )
        return value

    def keys(self) -> List[str]:
        """The keys the binding sets, sorted."""
        return list(self._live().config_keys())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._live().config_get(key) is not None

    def __getitem__(self, key: str) -> str:
        value = self._live().config_get(key)
        if value is None:
            raise KeyError(key)
        return value


def _occurrence(step_id: str, n: int) -> str:
    """The record key of occurrence ``n`` (from 1) of ``step_id`` in one run."""
    return step_id if n == 1 else f"{step_id}#{n}"


class Context:
    """The running job's link to Airlock: ``job``, ``step``, ``sleep``,
    waits, starting other work (``enqueue``, ``invoke``, ``invoke_many``,
    ``send_event``), running again later (``retry_after``,
    ``rate_limit``), ``progress``, ``log``, ``kv``, ``children``,
    ``config``, secrets and ``http``. One per run, passed to the handler.

    It works while the job's run lasts: once the handler has returned (or
    raised), every call through it — and through its ``log``, ``kv``,
    ``config`` and ``http`` — raises :class:`FatalError` (``this job (<id>)
    has ended; ...``) without reaching the host. Keep no ``ctx`` past its
    job: on a warm instance a later job would otherwise find it in a global.
    ``ctx.job`` stays readable."""

    def __init__(self, job: JobInfo) -> None:
        self.job: JobInfo = job
        self._lifetime = _Lifetime(job.id)
        self.log: Logger = Logger(self._lifetime)
        self.kv: Kv = Kv(self._lifetime)
        self.config: Config = Config(self._lifetime)
        live = lambda: self._lifetime.host("ctx.http")  # noqa: E731
        # This job's refusals: none used yet, also on a warm instance.
        self.http: Http = Http(live, Refusals(live))
        # How often each step, sleep or wait id was used in this run, so a
        # repeated id (a step in a loop) gets a distinct, stable record.
        self._occurrences: Dict[str, int] = {}

    def _end(self) -> None:
        """Ends this context: its job's run has returned. Called by the
        SDK's ``run`` glue; every later call through it raises."""
        self._lifetime.ended = True

    def _live(self, call: str) -> _host.Host:
        return self._lifetime.host(call)

    # -- progress ---------------------------------------------------------

    def progress(self, value: Any) -> None:
        """Reports progress: an ``int`` is a percentage (clamped to 0–100),
        anything else is stored as JSON (an object with counters, say).
        Best effort: a failure to store it never fails the job."""
        host = self._live("ctx.progress")
        if isinstance(value, int) and not isinstance(value, bool):
            host.report_progress_percent(min(100, max(0, value)))
            return
        try:
            text = to_json(value)
        except (TypeError, ValueError):
            return
        host.report_progress_json(text)

    # -- durable steps and sleeps ---------------------------------------

    def _occurrence_key(self, kind: str, step_id: str) -> str:
        """``id`` for its first use in this run, ``id#2``, ``id#3``, ...
        afterwards (counted separately for steps, sleeps and waits)."""
        slot = f"{kind}:{step_id}"
        n = self._occurrences.get(slot, 0) + 1
        self._occurrences[slot] = n
        return _occurrence(step_id, n)

    def _next_occurrence_key(self, kind: str, step_id: str) -> str:
        """The key the next :meth:`_occurrence_key` call will give, without
        counting it."""
        return _occurrence(step_id, self._occurrences.get(f"{kind}:{step_id}", 0) + 1)

    @overload
    def step(self, step_id: str, fn: Callable[[], T], *, returns: None = None) -> Any: ...

    @overload
    def step(self, step_id: str, fn: Callable[[], Any], *, returns: type) -> Any: ...

    @overload
    def step(self, step_id: str, fn: None = None, *, returns: Optional[type] = None) -> Callable[[Callable[[], Any]], Any]: ...

    def step(
        self,
        step_id: str,
        fn: Optional[Callable[[], Any]] = None,
        *,
        returns: Optional[type] = None,
    ) -> Any:
        """Runs ``fn`` until its result is recorded, then never again for
        this job (durably, at least once), and returns its result.

        The first time the job gets here, ``fn()`` runs and its result is
        recorded as JSON. Any later run of the same job (a retry, the
        resumption after a :meth:`sleep`, the recovery after a host crash)
        gets the recorded result back without running ``fn``. If ``fn``
        raises, nothing is recorded and the exception fails this attempt. A
        host that dies after ``fn`` ran but before its result was recorded
        runs it again: give a side effect that must not repeat an
        idempotency key (the job id and the step id).

        The result is always what the JSON round trip gives (dicts, lists,
        strings, numbers), on the first run as on a replay, so code after
        the step behaves the same either way; pass ``returns=SomeDataclass``
        to decode it into a type. Also a decorator, which runs the function
        at once and binds its name to the result::

            @ctx.step("charge-payment")
            def charge():
                return {"chargeId": "ch_1"}
            # charge == {"chargeId": "ch_1"}
        """
        if fn is None:
            return lambda f: self.step(step_id, f, returns=returns)
        if not isinstance(step_id, str) or not step_id:
            raise ValueError("a step id is a non-empty string")
        host = self._live("ctx.step")
        key = self._occurrence_key("step", step_id)
        recorded = _call("step lookup", host.step_lookup, key)
        if recorded is None:
            value = fn()
            try:
                recorded = to_json(value)
            except (TypeError, ValueError) as e:
                raise FatalError(f"result of step `{step_id}` is not serialisable: {e}") from None
            _call("step record", host.step_record, key, recorded)
        try:
            decoded = json.loads(recorded)
            return decoded if returns is None else decode_value(decoded, returns)
        except (ValueError, DecodeError) as e:
            raise FatalError(
                f"recorded result of step `{step_id}` no longer fits its type: {e}"
            ) from None

    def sleep(self, step_id: str, duration: Duration) -> None:
        """Durable sleep for ``duration`` (seconds, ``timedelta`` or a string
        like ``"24h"``, ``"1h30m"``, ``"500ms"``).

        The job is parked as delayed until the wake-up time, without holding
        a worker slot and without using up an attempt; then it runs again
        from the start, replaying finished steps, and continues after this
        call. Code before a sleep that is not inside a step runs again on
        wake-up, so keep side effects in steps. The first recorded wake-up
        time wins on every replay.
        """
        self.sleep_until(step_id, time.time() * 1000 + duration_ms(duration))

    def sleep_until(self, step_id: str, when: Instant) -> None:
        """Durable sleep until ``when`` (an aware ``datetime``, a naive one
        taken as UTC, or milliseconds since the Unix epoch); see :meth:`sleep`."""
        if not isinstance(step_id, str) or not step_id:
            raise ValueError("a sleep id is a non-empty string")
        wake_at_ms = instant_ms(when)
        key = self._occurrence_key("sleep", step_id)
        flush_output()
        _call("sleep", self._live("ctx.sleep").sleep_until, key, wake_at_ms)

    # -- durable waits ----------------------------------------------------

    def wait_for_event(
        self,
        wait_id: str,
        event: str,
        *,
        match: Optional[Match] = None,
        timeout: Duration,
    ) -> Optional[Event]:
        """Durable wait for an event (Inngest's ``waitForEvent``): the first
        event named ``event`` — and, with ``match``, holding ``match.value``
        at ``match.path`` of its data — sent to ``POST /v1/events`` since
        the job became ready to run that no other wait of this job
        received. Returns it as an
        :class:`Event`, or ``None`` when ``timeout`` (seconds, a
        ``timedelta`` or a string like ``"7d"``, counted from the first time
        the job got here) passes first::

            settled = ctx.wait_for_event(
                "settlement", "refund.settled",
                match=Match("$.refundId", refund_id), timeout="7d",
            )

        Like :meth:`sleep`, the job is parked meanwhile (this call does not
        return), holding no worker slot and using up no attempt, and runs
        again from the start when the event comes or the timeout passes;
        this call then returns the outcome. An event sent before the wait
        (while the job is still running, say) is not lost: the fleet keeps
        its last ~10,000 events (of at most 64 KiB), and a wait looks back
        at the newest 1,000 sent since its job became ready. The outcome is
        recorded: every later run gets the same one. An event sent with a
        producer token reaches only jobs that token enqueued.

        Waits are counted apart from steps and sleeps: an id used twice in
        one run is ``id``, then ``id#2``, ... A bad match path or value, or
        a timeout over a year, is a :class:`HostError` (``invalid``); waits
        for this event name already matching on 32 other paths,
        ``limit-exceeded``; under ``airlock run``, which receives no
        events, ``unsupported``.
        """
        wait_id = _wait_id(wait_id)
        event = _text(event, "event")
        timeout_ms = _timeout_ms(timeout)
        matching: Optional[Tuple[str, str]] = None
        if match is not None:
            if not isinstance(match, Match):
                raise TypeError(f"match must be an airlock_sdk.Match, not {type(match).__name__}")
            try:
                value = to_json(match.value)
            except (TypeError, ValueError) as e:
                raise FatalError(f"the match value of wait `{wait_id}` is not JSON: {e}") from None
            matching = (_text(match.path, "match path"), value)
        key = self._occurrence_key("wait", wait_id)
        flush_output()
        host = self._live("ctx.wait_for_event")
        got = _call("wait for event", host.wait_for_event, key, event, matching, timeout_ms)
        return None if got is None else _parse_event(got, wait_id)

    def wait_token(self, wait_id: str) -> str:
        """The completion token of the next :meth:`wait_for_token` with this
        id (Trigger.dev's waitpoint tokens), the same on every run: hand it
        out (in an approval link, as a callback URL) before waiting. Whoever
        holds it completes the wait once with ``POST
        /v1/tokens/{token}/complete`` and a JSON body, no other credential
        needed; a completion that comes before the wait is kept for it.

        Call it before the :meth:`wait_for_token` with the same id; it does
        not count as an occurrence of the id (the token of the second wait
        ``approval`` in a run is that of ``approval#2``)."""
        wait_id = _wait_id(wait_id)
        key = self._next_occurrence_key("wait", wait_id)
        return _call("wait token", self._live("ctx.wait_token").wait_token, key)

    def wait_for_token(
        self,
        wait_id: str,
        *,
        timeout: Duration,
        returns: Optional[type] = None,
    ) -> Any:
        """Durable wait for the completion of this wait's token (see
        :meth:`wait_token`; created here if it was not asked for): parks the
        job like :meth:`wait_for_event` and returns the JSON body the token
        was completed with, decoded (into ``returns`` when given; a body
        that does not fit is fatal), or ``None`` once ``timeout`` (as for
        :meth:`wait_for_event`) has passed since the job first got here.
        The outcome is recorded: every later run gets the same one. The
        token is used up either way: a completion after the timeout is
        refused."""
        wait_id = _wait_id(wait_id)
        timeout_ms = _timeout_ms(timeout)
        key = self._occurrence_key("wait", wait_id)
        flush_output()
        got = _call("wait for token", self._live("ctx.wait_for_token").wait_for_token, key, timeout_ms)
        if got is None:
            return None
        try:
            decoded = json.loads(got)
            return decoded if returns is None else decode_value(decoded, returns)
        except (ValueError, DecodeError) as e:
            raise FatalError(f"the result of wait `{wait_id}` does not fit its type: {e}") from None

    # -- starting other work ----------------------------------------------

    def enqueue(
        self,
        step_id: str,
        queue: str,
        name: str,
        data: Any = None,
        options: Optional[Mapping[str, Any]] = None,
    ) -> JobRef:
        """Adds a job named ``name`` with ``data`` (any JSON value) to
        ``queue``, durably and once (fire and forget), and returns where it
        went (:class:`JobRef`: ``queue``, ``id``).

        A step: its answer is recorded under ``step_id`` (counted with
        :meth:`step`'s ids: ``id``, ``id#2``, ...), and the job's id is
        derived from this job's and the step's, so a replay — or a rerun
        after a crash between the add and its record — adds nothing new.
        ``options`` are BullMQ job options (``delay``, ``priority``,
        ``attempts``, ``backoff``, ...) over the target queue's defaults.
        The job belongs to this job's producer and continues its trace. A
        queue the binding's ``starts.queues`` does not allow fails this job
        at once, fatally, saying why (the call does not return); data or
        options the host refuses are a :class:`HostError` (``invalid``)."""
        step_id = _step_id(step_id)
        job = _job_args(NewJob(queue, name, data, options))
        key = self._occurrence_key("step", step_id)
        queue_out, job_id = _call("enqueue", self._live("ctx.enqueue").enqueue, key, job)
        return JobRef(queue_out, job_id)

    def invoke(
        self,
        step_id: str,
        queue: str,
        name: str,
        data: Any = None,
        options: Optional[Mapping[str, Any]] = None,
        timeout: Optional[Duration] = None,
        *,
        returns: Optional[type] = None,
    ) -> Any:
        """Starts a job named ``name`` with ``data`` on ``queue`` as a child
        of this one and waits until it has ended (its retries first):
        returns its return value, decoded (into ``returns`` when given; a
        value that does not fit is fatal)::

            charge = ctx.invoke("charge-payment", "payments", "charge",
                                {"orderId": order_id, "amount": 5})

        Like a durable wait, the first call parks the job (it does not
        return), holding no worker slot and no instance and using up no
        attempt; when the child has ended, the job runs again from the
        start, replays its steps, and this call returns. Keep side effects
        before it in steps. The child is added once (its id is derived
        from this job's and ``step_id``; invokes count their ids apart
        from steps: ``id``, ``id#2``, ...).

        Raises :class:`InvokeError` when the child failed for good
        (``kind="failed"``, ``failure`` with its ``kind``, ``reason`` and
        ``attempts``) or had not ended within ``timeout`` (seconds, a
        ``timedelta`` or ``"10m"``, from the first call; ``kind="timed_out"``;
        the child is left to run). Catch it to carry on; uncaught it fails
        the job fatally. A queue the binding's ``starts.queues`` does not
        allow fails the job at once, saying why."""
        ends = self.invoke_many(
            step_id, [NewJob(queue, name, data, options)], timeout=timeout, returns=returns
        )
        if len(ends) != 1:
            raise RetryError(f"invoke `{step_id}` answered {len(ends)} ends for one job")
        end = ends[0]
        if isinstance(end, Completed):
            return end.value
        if isinstance(end, Failed):
            raise InvokeError("failed", end)
        raise InvokeError("timed_out")

    def invoke_many(
        self,
        step_id: str,
        jobs: Sequence[Union[NewJob, Tuple[Any, ...]]],
        max_running: Optional[int] = None,
        timeout: Optional[Duration] = None,
        *,
        returns: Optional[type] = None,
    ) -> List[ChildEnd]:
        """Starts ``jobs`` (:class:`NewJob`, or ``(queue, name, data[,
        options])`` tuples) as children of this job — a fan-out — and waits
        until every one has ended: their ends in the order of ``jobs``,
        each :class:`Completed` (``value``, decoded into ``returns`` when
        given), :class:`Failed` (``reason``, ``kind``, ``attempts``: it
        failed for good) or :class:`TimedOut`. A failed child does not
        hide the others' values, and nothing is raised for it::

            ends = ctx.invoke_many("resize", [NewJob("images", "resize", {"id": i}) for i in ids],
                                   max_running=10, timeout="1h")
            done = [e.value for e in ends if isinstance(e, Completed)]

        The job parks as for :meth:`invoke`. With ``max_running``, at most
        that many children run at once: they start in groups of that size,
        each once the one before has ended. Past ``timeout`` from the first
        call, every child not ended yet ends as :class:`TimedOut` (those
        started are left to run; those of a group not started yet never
        run). At most 10,000 jobs; none: ``[]`` at once."""
        step_id = _step_id(step_id, "an invoke id")
        if isinstance(jobs, (str, bytes, NewJob)) or not isinstance(jobs, Sequence):
            raise TypeError("jobs is a list of airlock_sdk.NewJob (or (queue, name, data) tuples)")
        args = [_job_args(job) for job in jobs]
        if max_running is not None:
            if isinstance(max_running, bool) or not isinstance(max_running, int):
                raise TypeError("max_running is a whole number of children")
            max_running = min(max(max_running, 0), _U32_MAX)
        timeout_ms = None if timeout is None else _timeout_ms(timeout)
        key = self._occurrence_key("invoke", step_id)
        flush_output()
        host = self._live("ctx.invoke")
        answered = _call("invoke", host.invoke, key, args, max_running, timeout_ms)
        ends: List[ChildEnd] = []
        for end in answered:
            if end[0] == "completed":
                try:
                    value = json.loads(end[1])
                    ends.append(Completed(value if returns is None else decode_value(value, returns)))
                except (ValueError, DecodeError) as e:
                    raise FatalError(
                        f"a child's return value of invoke `{step_id}` does not fit its type: {e}"
                    ) from None
            elif end[0] == "failed":
                _, kind, reason, attempts = end
                ends.append(Failed(reason, kind=kind, attempts=attempts))
            else:
                ends.append(TimedOut())
        return ends

    def send_event(self, step_id: str, name: str, data: Any = None) -> str:
        """Sends event ``name`` with ``data`` (any JSON value), durably and
        once, and returns its id: it reaches the queues subscribed to
        ``name`` and the jobs waiting for it, as ``POST /v1/events`` does,
        sent as this job's producer.

        A step like :meth:`enqueue` (recorded under ``step_id``, counted
        with the steps' ids); the event's id is derived from this job's and
        the step's, so a replay sends nothing new. An event the binding's
        ``starts.events`` does not allow fails the job at once, fatally,
        saying why."""
        step_id = _step_id(step_id)
        name = _text(name, "an event name")
        try:
            text = to_json(data)
        except (TypeError, ValueError) as e:
            raise FatalError(f"the data of event `{name}` is not JSON: {e}") from None
        key = self._occurrence_key("step", step_id)
        return _call("send event", self._live("ctx.send_event").send_event_step, key, name, text)

    # -- running again later ----------------------------------------------

    def retry_after(self, delay: Duration, reason: str) -> NoReturn:
        """Ends this run; the job runs again from the start after ``delay``
        (seconds, a ``timedelta`` or ``"30s"``; a day at most), using up no
        attempt (BullMQ's ``DelayedError``), and ``reason`` goes to its log.
        For a rate-limited API's ``Retry-After`` (see ``retry_on_429`` of
        ``ctx.http``). A job may ask this 100 times; past that the run
        fails as an ordinary retryable error, which uses an attempt. Never
        returns (raising :class:`RetryAfterError` does the same)."""
        delay_ms = _later_ms(delay)
        reason = _text(reason, "reason")
        host = self._live("ctx.retry_after")
        flush_output()
        host.retry_after(delay_ms, reason)
        raise RetryError(f"the host did not end the run at retry-after: {reason}")

    def rate_limit(self, duration: Duration, reason: str) -> NoReturn:
        """Ends this run, pauses the whole queue for ``duration`` (a day
        at most) across the fleet, and puts the job back in the wait list,
        using up no attempt (BullMQ's ``worker.rateLimit``). The pause
        holds where the queue's binding has a ``rateLimit``; elsewhere only
        this job waits, as with :meth:`retry_after`, and its log says so.
        Never returns."""
        duration_ms_ = _later_ms(duration)
        reason = _text(reason, "reason")
        host = self._live("ctx.rate_limit")
        flush_output()
        host.rate_limit(duration_ms_, reason)
        raise RetryError(f"the host did not end the run at rate-limit: {reason}")

    # -- flows, secrets ---------------------------------------------------

    def children(self) -> List[ChildResult]:
        """Outcomes of this job's flow children (empty for a job without any)."""
        results = _call("children results", self._live("ctx.children").children_results)
        out = []
        for queue, job_id, kind, payload in results:
            if kind == "completed":
                try:
                    outcome: Union[Completed, Failed] = Completed(json.loads(payload))
                except ValueError:
                    outcome = Completed(payload)
            else:
                outcome = Failed(payload)
            out.append(ChildResult(JobRef(queue, job_id), outcome))
        return out

    def children_values(self, returns: Optional[type] = None) -> List[Any]:
        """The return values of the children that completed (decoded into
        ``returns`` when given; a mismatch is fatal)."""
        values = [c.outcome.value for c in self.children() if isinstance(c.outcome, Completed)]
        if returns is None:
            return values
        try:
            return [decode_value(v, returns) for v in values]
        except DecodeError as e:
            raise FatalError(f"a child's result does not fit: {e}") from None

    def secret(self, name: str) -> str:
        """A placeholder for the queue's secret ``name``: put it in a request
        header (or body, when the secret allows) and the host sends the value
        instead, to the secret's destinations only."""
        return _call(f"secret `{name}`", self._live("ctx.secret").secret, name)

    def reveal_secret(self, name: str) -> str:
        """The value of secret ``name`` itself, for computing with it
        (signing a payload). Only secrets set with ``reveal`` give it; the
        value is then redacted from the job's logs, output and step records."""
        return _call(f"secret `{name}`", self._live("ctx.reveal_secret").reveal_secret, name)
