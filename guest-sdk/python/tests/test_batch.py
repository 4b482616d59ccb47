"""Batch handlers (``@batch_handler``): the ``batch-handler`` world's
``run-batch`` (many jobs, one outcome per job) and ``run`` (a batch of
one), with the semantics of the Rust SDK's ``batch_handler!``."""

import sys
import types
from pathlib import Path
import unittest
from dataclasses import dataclass
from typing import Any, List, Optional
from unittest import mock

from airlock_sdk import (
    BatchJob,
    Context,
    FatalError,
    HostError,
    RetryAfterError,
    RetryError,
    _host,
    batch,
    batch_handler,
    handler,
)
from airlock_sdk import _runtime, build
from airlock_sdk.batch import batch_spec_of, batch_world_for, execute_batch
from airlock_sdk.context import JobInfo
from airlock_sdk.testing import FakeHost, run, run_batch

ONE_JOB_ONLY = (
    "`{}` is not available in a batch run: a batch has no durable state of its own "
    "(steps, sleeps, waits, children and starts belong to one job); bind the queue "
    "without `batch` to use it"
)


@dataclass
class Row:
    id: str
    amount: float
    note: Optional[str] = None


def job(n: int) -> JobInfo:
    return JobInfo(f"j{n}", "q", "n", 1, 1, 0, 0)


def wit_job(n: int, data: str) -> Any:
    """A job as the bindings give it (the contract's `job` record)."""
    return types.SimpleNamespace(id=f"j{n}", queue="q", name="n", data=data, attempt=1,
                                 max_attempts=3, enqueued_at_ms=0, started_at_ms=0, parent=None)


class ExecuteBatchTest(unittest.TestCase):
    def setUp(self):
        self.host = FakeHost()
        self.previous = _host.install(self.host)

    def tearDown(self):
        _host.install(self.previous)

    def test_each_jobs_data_is_decoded_alone(self):
        got = []

        def insert(jobs: List[BatchJob[Row]], ctx: Context) -> list:
            got.extend((j.job.id, j.data) for j in jobs)
            got.append(("ctx", ctx.job.id))
            return [j.data.amount for j in jobs]

        outcomes = execute_batch(batch_spec_of(insert), [
            (job(1), '{"id":"a","amount":1}'),
            (job(2), "{nope"),
            (job(3), '{"id":"c","amount":"x"}'),
            (job(4), '{"amount":4}'),
            (job(5), '{"id":"e","amount":5.5,"note":"n"}'),
        ])
        self.assertEqual(got, [("j1", Row("a", 1)), ("j5", Row("e", 5.5, "n")), ("ctx", "j1")])
        self.assertEqual(outcomes[0], ("ok", "1.0"))  # decoded into a float
        self.assertEqual(outcomes[1][0], "fatal")
        self.assertTrue(outcomes[1][1].startswith("invalid job data: "), outcomes[1][1])
        self.assertEqual(outcomes[2], ("fatal", 'invalid job data at field `amount`: invalid type: '
                                                'string "x", expected a number'))
        self.assertEqual(outcomes[3], ("fatal", "invalid job data: missing field `id`"))
        self.assertEqual(outcomes[4], ("ok", "5.5"))

    def test_ctx_is_the_first_jobs_even_when_its_data_did_not_decode(self):
        seen = []
        outcomes = execute_batch(batch_spec_of(lambda jobs, ctx: seen.append(ctx.job.id) or [1]),
                                 [(job(1), "{bad"), (job(2), "{}")])
        self.assertEqual(seen, ["j1"])
        self.assertEqual(outcomes[1], ("ok", "1"))

    def test_untyped_jobs_get_the_json_value(self):
        def insert(jobs):
            return [{"echo": j.data, "id": j.job.id} for j in jobs]

        self.assertEqual(execute_batch(batch_spec_of(insert), [(job(1), "[1,2]"), (job(2), "null")]),
                         [("ok", '{"echo":[1,2],"id":"j1"}'), ("ok", '{"echo":null,"id":"j2"}')])

    def test_items_end_their_own_job(self):
        def insert(jobs, ctx):
            return [
                {"ok": True},
                FatalError("Invalid transaction amount"),
                RetryError("ledger busy"),
                ValueError("bad thing"),
                HostError("unavailable", "redis down", "kv get"),
                HostError("invalid", "no", "kv get"),
                {1, 2},
                Row("r", 2.5),
                None,
                RetryAfterError("slow down", "30s"),
            ]

        outcomes = execute_batch(batch_spec_of(insert), [(job(n), "{}") for n in range(10)])
        self.assertEqual(outcomes, [
            ("ok", '{"ok":true}'),
            ("fatal", "Invalid transaction amount"),
            ("retry", "ledger busy"),
            ("retry", "ValueError: bad thing"),
            ("retry", "kv get: redis down"),
            ("fatal", "kv get refused: no"),
            ("fatal", "handler output could not be encoded as JSON: Object of type set is not JSON serializable"),
            ("ok", '{"id":"r","amount":2.5,"note":null}'),
            ("ok", "null"),
            ("retry", "slow down"),
        ])
        self.assertEqual(self.host.retry_afters, [], "an item asks the host for nothing")
        self.assertEqual(self.host.logs, [])

    def test_a_list_of_another_length_fails_every_job(self):
        reason = "the batch handler returned 1 outcomes for 2 jobs"
        outcomes = execute_batch(batch_spec_of(lambda jobs: [1]),
                                 [(job(1), "{}"), (job(2), "{bad"), (job(3), "{}")])
        self.assertEqual(outcomes, [("fatal", reason)] * 3)
        outcomes = execute_batch(batch_spec_of(lambda jobs: [1, 2, 3]), [(job(1), "{}"), (job(2), "{}")])
        self.assertEqual(outcomes, [("fatal", "the batch handler returned 3 outcomes for 2 jobs")] * 2)

    def test_something_else_than_a_list_fails_every_job(self):
        outcomes = execute_batch(batch_spec_of(lambda jobs: None), [(job(1), "{}"), (job(2), "{}")])
        self.assertEqual(outcomes, [("fatal", "the batch handler returned NoneType, not a list of 2 outcomes")] * 2)
        outcomes = execute_batch(batch_spec_of(lambda jobs: (x for x in [1])), [(job(1), "{}")])
        self.assertEqual(outcomes, [("fatal", "the batch handler returned generator, not a list of 1 outcomes")])
        self.assertEqual(execute_batch(batch_spec_of(lambda jobs: ("a",)), [(job(1), "{}")]), [("ok", '"a"')])

    def test_a_raised_exception_fails_every_job_with_its_kind(self):
        def fatal(jobs):
            raise FatalError("the ledger refused the batch")

        outcomes = execute_batch(batch_spec_of(fatal), [(job(1), "{}"), (job(2), "{bad")])
        self.assertEqual(outcomes, [("fatal", "the ledger refused the batch")] * 2)
        self.assertEqual(self.host.logs, [])

        def broken(jobs, ctx):
            return jobs[0].data["missing"]

        outcomes = execute_batch(batch_spec_of(broken), [(job(1), "{}"), (job(2), "{}")])
        self.assertEqual(outcomes, [("retry", "KeyError: 'missing'")] * 2)
        level, text = self.host.logs[-1]
        self.assertEqual(level, "error")
        self.assertIn("Traceback", text)

    def test_a_raised_retry_after_is_a_plain_retry(self):
        def slow(jobs):
            raise RetryAfterError("rate limited upstream", "1m")

        outcomes = execute_batch(batch_spec_of(slow), [(job(1), "{}"), (job(2), "{}")])
        self.assertEqual(outcomes, [("retry", "rate limited upstream")] * 2)
        self.assertEqual(self.host.retry_afters, [])

    def test_memory_error_propagates(self):
        def hog(jobs):
            raise MemoryError()

        with self.assertRaises(MemoryError):
            execute_batch(batch_spec_of(hog), [(job(1), "{}")])

    def test_the_function_is_not_called_without_a_job_to_give(self):
        calls = []
        spec = batch_spec_of(lambda jobs: calls.append(jobs) or [])
        self.assertEqual(execute_batch(spec, []), [])
        self.assertEqual(execute_batch(spec, [(job(1), "{bad")])[0][0], "fatal")
        self.assertEqual(calls, [])

    def test_the_ctx_ends_with_the_batch(self):
        kept = []
        execute_batch(batch_spec_of(lambda jobs, ctx: kept.append(ctx) or [None]), [(job(1), "{}")])
        with self.assertRaises(FatalError) as cm:
            kept[0].log.info("late")
        self.assertTrue(str(cm.exception).startswith("this job (j1) has ended"))
        self.assertEqual(self.host.logs, [])


class BatchModeTest(unittest.TestCase):
    """``testing.run_batch``: the fake host refuses what the host refuses in a batch."""

    def test_logs_progress_kv_config_and_http_work(self):
        def insert(jobs, ctx):
            ctx.progress(50)
            ctx.log.info(f"{len(jobs)} jobs")
            ctx.kv.set("seen", str(len(jobs)))
            status = ctx.http.post(f"{ctx.config.require('URL')}/bulk", json=[j.data for j in jobs]).status
            return [{"status": status, "n": j.data} for j in jobs]

        host = FakeHost(config={"URL": "http://svc.test"}, http=lambda r: (201, {}, ""))
        outcomes = run_batch(insert, [1, 2], host=host)
        self.assertEqual([(o.status, o.value) for o in outcomes],
                         [("completed", {"status": 201, "n": 1}), ("completed", {"status": 201, "n": 2})])
        self.assertEqual((host.progress, host.logs, host.kv), ([50], [("info", "2 jobs")], {"seen": "2"}))
        self.assertEqual([r.json() for r in host.requests], [[1, 2]])
        self.assertFalse(host.batch, "batch mode ends with the batch")

    def test_a_step_fails_the_whole_batch_naming_the_call(self):
        def insert(jobs, ctx):
            try:
                ctx.step("save", lambda: 1)
            except HostError as e:
                self.assertEqual(e.kind, "invalid")
            return [1 for _ in jobs]  # the guest goes on: the batch fails all the same

        host = FakeHost()
        outcomes = run_batch(insert, [{}, {}], host=host)
        reason = ONE_JOB_ONLY.format("step-lookup")
        self.assertEqual([(o.status, o.message) for o in outcomes], [("fatal", reason)] * 2)
        self.assertEqual(host.logs, [("error", reason)])
        self.assertEqual(host.steps, {})

    def test_calls_that_stop_the_guest(self):
        cases = {
            "sleep-until": lambda ctx: ctx.sleep("nap", "1h"),
            "wait-for-event": lambda ctx: ctx.wait_for_event("w", "e", timeout="1h"),
            "wait-token": lambda ctx: ctx.wait_token("t"),
            "wait-for-token": lambda ctx: ctx.wait_for_token("t", timeout="1h"),
            "enqueue": lambda ctx: ctx.enqueue("e", "q2", "n", {}),
            "invoke": lambda ctx: ctx.invoke("i", "q2", "n", {}),
            "send-event": lambda ctx: ctx.send_event("s", "evt", {}),
            "retry-after": lambda ctx: ctx.retry_after("1m", "later"),
            "rate-limit": lambda ctx: ctx.rate_limit("1m", "slow"),
            "children-results": lambda ctx: ctx.children(),
        }
        for call, act in cases.items():
            with self.subTest(call=call):
                host = FakeHost()
                outcomes = run_batch(lambda jobs, ctx: act(ctx) or [None] * len(jobs), [1, 2, 3], host=host)
                reason = ONE_JOB_ONLY.format(call)
                self.assertEqual([(o.status, o.message) for o in outcomes], [("fatal", reason)] * 3)
                self.assertEqual(host.logs, [("error", reason)])
                self.assertEqual((host.jobs, host.sent_events, host.retry_afters, host.rate_limits),
                                 ([], [], [], []))

    def test_raw_data_and_a_batch_of_one_job(self):
        outcomes = run_batch(lambda jobs: [j.data for j in jobs], raw_data=['{"a":1}', "{bad"])
        self.assertEqual(outcomes[0].value, {"a": 1})
        self.assertEqual(outcomes[1].status, "fatal")
        self.assertEqual(run_batch(lambda jobs: [], []), [])


class RunExportTest(unittest.TestCase):
    """``run`` of a batch handler: a batch of one."""

    def setUp(self):
        self.module = types.ModuleType("fake_batch_app")
        sys.modules["fake_batch_app"] = self.module
        self.host = FakeHost()
        self.previous = _host.install(self.host)

    def tearDown(self):
        _host.install(self.previous)
        del sys.modules["fake_batch_app"]

    def decorate(self, fn):
        fn.__module__ = "fake_batch_app"
        self.assertIs(batch_handler(fn), fn)
        return self.module.WitWorld

    def test_wit_world_serves_run_batch_and_run(self):
        def insert(jobs: List[BatchJob[Row]], ctx: Context) -> list:
            return [FatalError("no") if j.data.amount <= 0 else {"id": j.data.id, "size": len(jobs)} for j in jobs]

        world = self.decorate(insert)()
        outcomes = world.run_batch([wit_job(1, '{"id":"a","amount":1}'), wit_job(2, '{"id":"b","amount":0}'),
                                    wit_job(3, '{"id":"c"}')])
        self.assertEqual(outcomes, [("ok", '{"id":"a","size":2}'), ("fatal", "no"),
                                    ("fatal", "invalid job data: missing field `amount`")])
        self.assertEqual(world.run_batch([]), [])
        self.assertEqual(world.run(wit_job(1, '{"id":"a","amount":1}')), '{"id":"a","size":1}')
        with self.assertRaises(RuntimeError) as cm:  # FakeHost.job_error
            world.run(wit_job(1, '{"id":"a","amount":-1}'))
        self.assertEqual(str(cm.exception), "fatal: no")
        with self.assertRaises(RuntimeError) as cm:
            world.run(wit_job(1, "{bad"))
        self.assertTrue(str(cm.exception).startswith("fatal: invalid job data"))

    def test_run_raises_the_outcome_of_a_wrong_length_or_a_raise(self):
        world = self.decorate(lambda jobs: [])()
        with self.assertRaises(RuntimeError) as cm:
            world.run(wit_job(1, "{}"))
        self.assertEqual(str(cm.exception), "fatal: the batch handler returned 0 outcomes for 1 jobs")

        def busy(jobs):
            raise RetryError("busy")

        del self.module.WitWorld
        world = self.decorate(busy)()
        with self.assertRaises(RuntimeError) as cm:
            world.run(wit_job(1, "{}"))
        self.assertEqual(str(cm.exception), "retry: busy")

    def test_testing_run_is_a_batch_of_one_outside_batch_mode(self):
        def insert(jobs, ctx):
            done = ctx.step("save", lambda: len(jobs))  # a single run may record steps
            ctx.sleep("nap", "1h")
            return [{"saved": done, "id": j.job.id == ctx.job.id} for j in jobs]

        insert.__module__ = "fake_batch_app"
        batch_handler(insert)
        out = run(insert, {"a": 1})
        self.assertEqual((out.status, out.value, out.runs), ("completed", {"saved": 1, "id": True}, 2))
        self.assertEqual(out.host.step_order, ["save"])
        out = run(lambda jobs: 1, {})  # not a batch handler: a plain one
        self.assertEqual(out.value, 1)

    def test_one_handler_per_module(self):
        def first(jobs):
            return []

        self.decorate(first)

        def second(data):
            return None

        second.__module__ = "fake_batch_app"
        with self.assertRaises(RuntimeError):
            handler(second)
        with self.assertRaises(RuntimeError):
            batch_handler(second)


class SignatureTest(unittest.TestCase):
    def test_signatures_and_annotations(self):
        self.assertIs(batch_spec_of(lambda jobs: []).input_type, Any)
        self.assertFalse(batch_spec_of(lambda jobs: []).wants_context)

        def typed(jobs: List[BatchJob[Row]], ctx: Context) -> list:
            return []

        spec = batch_spec_of(typed)
        self.assertEqual((spec.input_type, spec.wants_context), (Row, True))

        def builtin(jobs: "list[BatchJob[dict]]"):
            return []

        self.assertIs(batch_spec_of(builtin).input_type, dict)

        def bare(jobs: List[BatchJob]):
            return []

        self.assertIs(batch_spec_of(bare).input_type, Any)
        for bad in (lambda: [], lambda a, b, c: []):
            with self.assertRaises(TypeError):
                batch_spec_of(bad)

        def not_a_list(jobs: dict):
            return []

        def not_jobs(jobs: List[Row]):
            return []

        def undecodable(jobs: List[BatchJob[set]]):
            return []

        for bad in (not_a_list, not_jobs, undecodable):
            with self.subTest(fn=bad.__name__), self.assertRaises(TypeError):
                batch_spec_of(bad)

    def test_each_decorator_wants_its_own_world(self):
        class HandlerWorld:  # the handler world's bindings: `run` only
            def run(self, job):
                raise NotImplementedError

        class BatchWorld(HandlerWorld):  # the batch-handler world's
            def run_batch(self, jobs):
                raise NotImplementedError

        spec = batch_spec_of(lambda jobs: [])
        with mock.patch.object(batch, "_WorldBase", HandlerWorld):
            with self.assertRaisesRegex(TypeError, "build it with --batch"):
                batch_world_for(spec)
        with mock.patch.object(batch, "_WorldBase", BatchWorld):
            self.assertTrue(issubclass(batch_world_for(spec), BatchWorld))
        one = _runtime.spec_of(lambda data: None)
        with mock.patch.object(_runtime, "_WorldBase", BatchWorld):
            with self.assertRaisesRegex(TypeError, "with @batch_handler, or build without --batch"):
                _runtime.world_for(one)
        with mock.patch.object(_runtime, "_WorldBase", HandlerWorld):
            self.assertTrue(issubclass(_runtime.world_for(one), HandlerWorld))


class BuildTest(unittest.TestCase):
    """``--batch`` selects the SDK's ``batch-handler`` world; the stamp
    tells the two builds apart."""

    def test_batch_selects_the_batch_world_and_changes_the_stamp(self):
        self.assertEqual(build.wit_args()[4:6], ["-w", "airlock:python-sdk/handler@0.6.0"])
        self.assertEqual(build.wit_args(batch=True)[4:6], ["-w", "airlock:python-sdk/batch-handler@0.6.0"])
        world_wit = (Path(build.SDK_ROOT) / "wit" / "world.wit").read_text()
        self.assertIn("world batch-handler {\n    include airlock:job/batch-handler@0.6.0;", world_wit)
        app = Path(__file__).resolve().parent  # any folder with files

        def stamp(batch: bool) -> str:
            return build.digest(app, "app", ["componentize-py"] + build.wit_args(batch) + ["componentize"])

        self.assertEqual(stamp(False), stamp(False))
        self.assertNotEqual(stamp(False), stamp(True))

    def test_the_command_line_takes_batch(self):
        calls = []
        with mock.patch.object(build, "build", lambda *args: calls.append(args)):
            self.assertEqual(build.main(["app_dir", "-o", "out.wasm", "--batch"]), 0)
            self.assertEqual(build.main(["app_dir", "-o", "out.wasm"]), 0)
        self.assertEqual([c[-1] for c in calls], [True, False])


if __name__ == "__main__":
    unittest.main()
