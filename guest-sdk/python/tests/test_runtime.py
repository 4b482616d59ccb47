import sys
import types
import unittest
from dataclasses import dataclass
from typing import Any, Optional

from airlock_sdk import Context, FatalError, HostError, RetryError, _host, handler
from airlock_sdk._runtime import execute, spec_of
from airlock_sdk.context import JobInfo
from airlock_sdk.testing import FakeHost, run


@dataclass
class Payment:
    transaction_id: str
    amount: float
    currency: Optional[str] = None


def pay(data: Payment, ctx: Context) -> dict:
    ctx.progress(10)
    if data.amount <= 0:
        raise FatalError("Invalid transaction amount")
    return {"processed": True, "ledgerRecordId": f"led_{data.transaction_id}"}


JOB = JobInfo("j", "q", "n", 1, 1, 0, 0)


class ExecuteTest(unittest.TestCase):
    def setUp(self):
        self.host = FakeHost()
        self.previous = _host.install(self.host)

    def tearDown(self):
        _host.install(self.previous)

    def test_output_is_compact_json(self):
        self.assertEqual(execute(spec_of(pay), JOB, '{"transactionId":"tx_1","amount":42.5}'),
                         ("ok", '{"processed":true,"ledgerRecordId":"led_tx_1"}'))

    def test_none_is_null(self):
        self.assertEqual(execute(spec_of(lambda data, ctx: None), JOB, "{}"), ("ok", "null"))
        self.assertEqual(execute(spec_of(lambda data: {}), JOB, "{}"), ("ok", "{}"))

    def test_fatal_and_retry(self):
        self.assertEqual(execute(spec_of(pay), JOB, '{"transactionId":"t","amount":0}'),
                         ("fatal", "Invalid transaction amount"))

        def retry(data, ctx):
            raise RetryError("gateway busy")

        self.assertEqual(execute(spec_of(retry), JOB, "{}"), ("retry", "gateway busy"))

        def host_down(data, ctx):
            raise HostError("unavailable", "redis down", "kv get")

        self.assertEqual(execute(spec_of(host_down), JOB, "{}"), ("retry", "kv get: redis down"))

    def test_other_exceptions_retry_and_log_a_traceback(self):
        def broken(data, ctx):
            return data["missing"]

        self.assertEqual(execute(spec_of(broken), JOB, "{}"), ("retry", "KeyError: 'missing'"))
        level, text = self.host.logs[-1]
        self.assertEqual(level, "error")
        self.assertIn("Traceback", text)
        self.assertIn("KeyError: 'missing'", text)

    def test_invalid_data_is_fatal(self):
        self.assertEqual(execute(spec_of(pay), JOB, '{"amount":1}'),
                         ("fatal", "invalid job data: missing field `transactionId`"))
        self.assertEqual(execute(spec_of(pay), JOB, '{"transactionId":"t","amount":"x"}'),
                         ("fatal", 'invalid job data at field `amount`: invalid type: string "x", expected a number'))
        kind, message = execute(spec_of(pay), JOB, "{nope")
        self.assertEqual(kind, "fatal")
        self.assertTrue(message.startswith("invalid job data: "))

    def test_unencodable_output_is_fatal(self):
        kind, message = execute(spec_of(lambda d, c: {1}), JOB, "{}")
        self.assertEqual((kind, message),
                         ("fatal", "handler output could not be encoded as JSON: Object of type set is not JSON serializable"))

    def test_memory_error_propagates(self):
        def hog(data, ctx):
            raise MemoryError()

        with self.assertRaises(MemoryError):
            execute(spec_of(hog), JOB, "{}")


class DecoratorTest(unittest.TestCase):
    def test_signature_is_checked(self):
        with self.assertRaises(TypeError):
            spec_of(lambda: None)
        with self.assertRaises(TypeError):
            spec_of(lambda a, b, c: None)

        def bad(data: set, ctx):  # a set cannot come from JSON
            pass

        with self.assertRaises(TypeError):
            spec_of(bad)

    def test_handler_defines_wit_world_in_its_module(self):
        module = types.ModuleType("fake_app")
        sys.modules["fake_app"] = module
        try:
            def run_it(data: Any, ctx: Context) -> Any:
                return {"echo": data}

            run_it.__module__ = "fake_app"
            self.assertIs(handler(run_it), run_it)
            world = module.WitWorld
            host = FakeHost()
            previous = _host.install(host)
            try:
                job = types.SimpleNamespace(id="j", queue="q", name="n", data='{"a":1}', attempt=1,
                                            max_attempts=1, enqueued_at_ms=0, started_at_ms=0, parent=None)
                self.assertEqual(world().run(job), '{"echo":{"a":1}}')
                job.data = "{bad"
                with self.assertRaises(RuntimeError) as cm:  # FakeHost.job_error
                    world().run(job)
                self.assertTrue(str(cm.exception).startswith("fatal: invalid job data"))
            finally:
                _host.install(previous)

            def other(data, ctx):
                return None

            other.__module__ = "fake_app"
            with self.assertRaises(RuntimeError):
                handler(other)
        finally:
            del sys.modules["fake_app"]


class TestingRunTest(unittest.TestCase):
    def test_sleeps_replay_steps(self):
        calls = []

        def flow(data, ctx):
            a = ctx.step("a", lambda: calls.append("a") or 1)
            ctx.sleep("nap", "1h")
            b = ctx.step("b", lambda: calls.append("b") or 2)
            return a + b

        out = run(flow, {})
        self.assertEqual((out.status, out.value, out.runs), ("completed", 3, 2))
        self.assertEqual(calls, ["a", "b"])
        parked = run(flow, {}, skip_sleeps=False)
        self.assertEqual(parked.status, "suspended")
        self.assertIsNotNone(parked.wake_at_ms)

    def test_no_host_outside_a_component(self):
        with self.assertRaises(RuntimeError):
            _host.current()


if __name__ == "__main__":
    unittest.main()
