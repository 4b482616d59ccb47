"""Warm instances: the host may call ``run`` again, for the next job, on the
instance the last job used, so module-level state persists (the handler's
and the SDK's). These tests run several jobs through one ``WitWorld`` (the
SDK's own ``run`` glue), each with a host of its own, and check that nothing
of the SDK's per-job state leaks into the next job."""

import io
import json
import sys
import types
import unittest
from typing import Any, Callable, List, Optional

from airlock_sdk import Context, FatalError, _host
from airlock_sdk._runtime import spec_of, world_for
from airlock_sdk.testing import FakeHost

ENDED = r"^this job \(job-1\) has ended; ctx cannot be used after the handler returned \(ctx\.[a-z_.]+: "


class RecordingHost:
    """A :class:`FakeHost` that records the name of every call made to it."""

    def __init__(self) -> None:
        self.fake = FakeHost(config={"A": "1"}, secrets={"S": "s"})
        self.calls: List[str] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.fake, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return attr(*args, **kwargs)

        return call


class Instance:
    """One instance: one ``WitWorld``, whose ``run`` is called once per job
    (``job-1``, ``job-2``, ...) with a host of the job's own installed."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.world = world_for(spec_of(fn))()
        self.hosts: List[RecordingHost] = []

    def job(self, data: str = "{}") -> str:
        host = RecordingHost()
        self.hosts.append(host)
        job = types.SimpleNamespace(
            id=f"job-{len(self.hosts)}", queue="q", name="n", data=data, attempt=1,
            max_attempts=1, enqueued_at_ms=0, started_at_ms=0, parent=None,
        )
        previous = _host.install(host)
        try:
            return self.world.run(job)
        finally:
            _host.install(previous)


class WarmInstanceTest(unittest.TestCase):
    def test_steps_sleeps_and_waits_count_from_one_again(self):
        def probe(data: Any, ctx: Context) -> Any:
            out = [ctx.step("repeat", lambda: i) for i in range(2)]
            ctx.sleep("nap", 0)
            ctx.sleep("nap", 0)
            ctx.wait_token("approval")
            return out

        instance = Instance(probe)
        for i in range(2):
            self.assertEqual(instance.job(), "[0,1]")
            fake = instance.hosts[i].fake
            self.assertEqual(fake.step_order, ["repeat", "repeat#2"], f"job {i + 1}")
            self.assertEqual(list(fake.sleeps), ["nap", "nap#2"])
            self.assertEqual(fake.wait_calls, [("wait_token", "approval")])

    def test_logs_go_to_the_current_jobs_host_and_print_is_flushed_per_job(self):
        flushed: List[str] = []

        class Stdout(io.StringIO):
            def flush(self) -> None:
                flushed.append(self.getvalue())
                super().flush()

        def probe(data: Any, ctx: Context) -> None:
            print(f"print {ctx.job.id}")
            ctx.log.info(f"ctx {ctx.job.id}")

        instance = Instance(probe)
        saved = sys.stdout
        sys.stdout = Stdout()
        try:
            instance.job()
            self.assertEqual(flushed[-1:], ["print job-1\n"], "job 1's print is flushed before its run returns")
            instance.job()
            self.assertEqual(flushed[-1:], ["print job-1\nprint job-2\n"])
            self.assertIsInstance(sys.stdout, Stdout, "the SDK leaves sys.stdout alone")
        finally:
            sys.stdout = saved
        self.assertEqual([h.fake.logs for h in instance.hosts],
                         [[("info", "ctx job-1")], [("info", "ctx job-2")]])

    def test_a_ctx_kept_from_job_1_raises_and_reaches_neither_host(self):
        kept: List[Context] = []

        def probe(data: Any, ctx: Context) -> Any:
            if not kept:
                kept.append(ctx)
                return "kept"
            old = kept[0]
            errors = []
            for attempt in (
                lambda: old.log.info("stale"),
                lambda: old.log("stale", level="warn"),
                lambda: old.kv.get("k"),
                lambda: old.kv.set("k", "v"),
                lambda: old.kv.set_if_absent("k", "v"),
                lambda: old.kv.delete("k"),
                lambda: old.step("s", lambda: 1),
                lambda: old.sleep("z", 0),
                lambda: old.wait_token("w"),
                lambda: old.wait_for_token("w", timeout=1),
                lambda: old.progress(5),
                lambda: old.config.get("A"),
                lambda: "A" in old.config,
                lambda: old.children(),
                lambda: old.secret("S"),
                lambda: old.enqueue("e", "q", "n", {}),
                lambda: old.invoke("i", "q", "n", {}),
                lambda: old.invoke_many("i", [("q", "n")]),
                lambda: old.send_event("e", "ev", {}),
                lambda: old.retry_after(1, "r"),
                lambda: old.rate_limit(1, "r"),
                lambda: old.http.get("https://example.com/"),
            ):
                try:
                    attempt()
                    errors.append("worked")
                except FatalError as e:
                    errors.append(str(e))
                except Exception as e:  # the SDK must not get this far
                    errors.append(f"{type(e).__name__}: {e}")
            ctx.log.info("job 2 itself")
            return errors

        instance = Instance(probe)
        self.assertEqual(instance.job(), '"kept"')
        job1_calls = list(instance.hosts[0].calls)
        errors = json.loads(instance.job())
        self.assertEqual(len(errors), 22)
        for message in errors:
            self.assertRegex(message, ENDED)
        self.assertRegex(errors[0], r"\(ctx\.log: ")
        self.assertRegex(errors[2], r"\(ctx\.kv\.get: ")
        self.assertRegex(errors[-1], r"\(ctx\.http: ")
        self.assertEqual(instance.hosts[0].calls, job1_calls, "no call reached job 1's host")
        self.assertEqual(instance.hosts[1].calls, ["log"], "no stale call reached job 2's host")
        self.assertEqual(instance.hosts[1].fake.logs, [("info", "job 2 itself")])
        self.assertEqual(kept[0].job.id, "job-1", "ctx.job stays readable")

    def test_a_ctx_is_dead_once_its_job_failed_too(self):
        kept: List[Optional[Context]] = [None]

        def probe(data: Any, ctx: Context) -> None:
            kept[0] = ctx
            raise ValueError("boom")

        instance = Instance(probe)
        with self.assertRaises(RuntimeError):  # FakeHost.job_error: the run's `retry` error
            instance.job()
        calls = list(instance.hosts[0].calls)
        with self.assertRaisesRegex(FatalError, ENDED):
            kept[0].kv.get("k")
        self.assertEqual(instance.hosts[0].calls, calls)


if __name__ == "__main__":
    unittest.main()
