import unittest
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from unittest import mock

from airlock_sdk import Completed, Context, Failed, FatalError, HostError, JobInfo, JobRef, _host
from airlock_sdk.testing import FakeHost


def context(host: FakeHost) -> Context:
    _host.install(host)
    return Context(JobInfo("j1", "q", "n", 2, 3, 1_000, 2_000, JobRef("pq", "p1")))


@dataclass
class Charge:
    charge_id: str
    amount: float


class Base(unittest.TestCase):
    def setUp(self):
        self.host = FakeHost()
        self.previous = _host.install(self.host)
        self.ctx = context(self.host)

    def tearDown(self):
        _host.install(self.previous)


class StepTest(Base):
    def test_occurrence_keys_like_the_rust_sdk(self):
        self.assertEqual([self.ctx._occurrence_key("step", "a") for _ in range(3)], ["a", "a#2", "a#3"])
        # Steps and sleeps are counted apart; other ids have their own count.
        self.assertEqual(self.ctx._occurrence_key("sleep", "a"), "a")
        self.assertEqual(self.ctx._occurrence_key("step", "b"), "b")
        self.assertEqual(self.ctx._occurrence_key("step", "a"), "a#4")

    def test_runs_once_and_records_json(self):
        calls = []

        def charge():
            calls.append(1)
            return {"chargeId": "ch_1", "amount": 5}

        self.assertEqual(self.ctx.step("charge", charge), {"chargeId": "ch_1", "amount": 5})
        self.assertEqual(self.host.steps, {"charge": '{"chargeId":"ch_1","amount":5}'})
        # A later run of the same job replays the record.
        again = context(self.host)
        self.assertEqual(again.step("charge", charge), {"chargeId": "ch_1", "amount": 5})
        self.assertEqual(len(calls), 1)

    def test_repeated_ids_in_a_loop(self):
        values = [self.ctx.step("item", lambda i=i: i * 10) for i in range(3)]
        self.assertEqual(values, [0, 10, 20])
        self.assertEqual(self.host.step_order, ["item", "item#2", "item#3"])
        replay = context(self.host)
        self.assertEqual([replay.step("item", lambda: 99) for _ in range(4)], [0, 10, 20, 99])

    def test_decorator_binds_the_result(self):
        @self.ctx.step("verify")
        def risk():
            return {"score": 3, "flagged": False}

        self.assertEqual(risk, {"score": 3, "flagged": False})
        self.assertIn("verify", self.host.steps)

    def test_first_run_and_replay_give_the_same_value(self):
        first = self.ctx.step("t", lambda: (1, 2))
        replay = context(self.host).step("t", lambda: (1, 2))
        self.assertEqual(first, [1, 2])
        self.assertEqual(first, replay)

    def test_returns_decodes_into_a_type(self):
        value = self.ctx.step("c", lambda: Charge("ch", 2), returns=Charge)
        self.assertEqual(value, Charge("ch", 2.0))
        self.host.steps["c#2"] = '{"chargeId": 5}'
        with self.assertRaises(FatalError) as cm:
            self.ctx.step("c", lambda: None, returns=Charge)
        self.assertTrue(str(cm.exception).startswith("recorded result of step `c` no longer fits its type"))

    def test_unserialisable_result_is_fatal_and_not_recorded(self):
        with self.assertRaises(FatalError) as cm:
            self.ctx.step("s", lambda: {1, 2})
        self.assertEqual(str(cm.exception), "result of step `s` is not serialisable: Object of type set is not JSON serializable")
        self.assertEqual(self.host.steps, {})

    def test_failing_step_records_nothing(self):
        def boom():
            raise RuntimeError("gateway down")

        with self.assertRaises(RuntimeError):
            self.ctx.step("pay", boom)
        self.assertEqual(self.host.steps, {})
        self.assertEqual(context(self.host).step("pay", lambda: "ok"), "ok")

    def test_host_failures_name_the_call(self):
        self.host.failures["step_lookup"] = ("unavailable", "redis down")
        with self.assertRaises(HostError) as cm:
            self.ctx.step("x", lambda: 1)
        self.assertEqual((cm.exception.kind, str(cm.exception), cm.exception.retryable),
                         ("unavailable", "step lookup: redis down", True))
        del self.host.failures["step_lookup"]
        self.host.failures["step_record"] = ("limit-exceeded", "too many steps")
        with self.assertRaises(HostError) as cm:
            self.ctx.step("y", lambda: 1)
        self.assertEqual(str(cm.exception), "step record: limit exceeded: too many steps")
        self.assertFalse(cm.exception.retryable)


class SleepTest(Base):
    def test_sleep_records_the_wake_up(self):
        with mock.patch("time.time", return_value=1_000.0):
            with self.assertRaises(_host.Suspend) as cm:
                self.ctx.sleep("wait", "24h")
        self.assertEqual(cm.exception.wake_at_ms, 1_000_000 + 86_400_000)
        self.assertEqual(self.host.sleeps, {"wait": 87_400_000})

    def test_sleep_forms(self):
        with mock.patch("time.time", return_value=0.0):
            for i, duration in enumerate((90, timedelta(minutes=2), "1h30m")):
                with self.assertRaises(_host.Suspend):
                    self.ctx.sleep(f"s{i}", duration)
        self.assertEqual(self.host.sleeps, {"s0": 90_000, "s1": 120_000, "s2": 5_400_000})

    def test_sleep_until(self):
        when = datetime(2030, 1, 1, tzinfo=timezone.utc)
        with self.assertRaises(_host.Suspend):
            self.ctx.sleep_until("later", when)
        self.assertEqual(self.host.sleeps["later"], int(when.timestamp() * 1000))
        self.host.woken.add("later")
        self.ctx.sleep_until("other", 5)  # in the past: returns at once
        self.assertEqual(self.host.sleeps["other"], 5)

    def test_repeated_sleep_ids(self):
        self.ctx.sleep_until("nap", 1)
        self.ctx.sleep_until("nap", 2)
        self.assertEqual(self.host.sleeps, {"nap": 1, "nap#2": 2})

    def test_bad_durations(self):
        with self.assertRaises(ValueError):
            self.ctx.sleep("x", "-1s")
        with self.assertRaises(ValueError):
            self.ctx.sleep("", 1)


class ProgressLogTest(Base):
    def test_progress(self):
        self.ctx.progress(10)
        self.ctx.progress(250)
        self.ctx.progress(-3)
        self.ctx.progress({"done": 3, "of": 10})
        self.ctx.progress(True)
        self.ctx.progress({1, 2})  # not JSON: dropped, never fails the job
        self.assertEqual(self.host.progress, [10, 100, 0, {"done": 3, "of": 10}, True])

    def test_log_levels(self):
        self.ctx.log.info("a")
        self.ctx.log.warn("b")
        self.ctx.log.warning("c")
        self.ctx.log.error("d")
        self.ctx.log.debug("e")
        self.ctx.log.trace("f")
        self.ctx.log("g", level="warn")
        self.ctx.log(42)
        self.assertEqual(self.host.logs, [("info", "a"), ("warn", "b"), ("warn", "c"), ("error", "d"),
                                          ("debug", "e"), ("trace", "f"), ("warn", "g"), ("info", "42")])
        with self.assertRaises(ValueError):
            self.ctx.log("x", level="loud")


class KvConfigTest(Base):
    def test_kv(self):
        self.assertIsNone(self.ctx.kv.get("k"))
        self.ctx.kv.set("k", "1")
        self.assertEqual(self.ctx.kv.get("k"), "1")
        self.assertTrue(self.ctx.kv.set_if_absent("once", "x", ttl_ms=500))
        self.assertFalse(self.ctx.kv.set_if_absent("once", "y"))
        self.assertEqual(self.host.kv_ttls["once"], 500)
        self.ctx.kv.set("t", "v", ttl="1h")
        self.assertEqual(self.host.kv_ttls["t"], 3_600_000)
        self.ctx.kv.set("z", "v", ttl_ms=0)
        self.assertEqual(self.host.kv_ttls["z"], 1)  # at least 1 ms, as in Rust
        self.assertTrue(self.ctx.kv.delete("k"))
        self.assertFalse(self.ctx.kv.delete("k"))
        with self.assertRaises(TypeError):
            self.ctx.kv.set("k", 5)
        with self.assertRaises(TypeError):
            self.ctx.kv.set("k", "v", ttl_ms=5, ttl="1s")

    def test_kv_failures(self):
        for call, what in (("kv_get", "kv get"), ("kv_set", "kv set"),
                           ("kv_set_if_absent", "kv set-if-absent"), ("kv_delete", "kv delete")):
            self.host.failures = {call: ("invalid", "empty key")}
            with self.subTest(call=call):
                with self.assertRaises(HostError) as cm:
                    {"kv_get": lambda: self.ctx.kv.get("k"),
                     "kv_set": lambda: self.ctx.kv.set("k", "v"),
                     "kv_set_if_absent": lambda: self.ctx.kv.set_if_absent("k", "v"),
                     "kv_delete": lambda: self.ctx.kv.delete("k")}[call]()
                self.assertEqual(str(cm.exception), f"{what} refused: empty key")

    def test_config(self):
        self.host.config = {"B": "2", "A": "1"}
        self.assertEqual(self.ctx.config.get("A"), "1")
        self.assertIsNone(self.ctx.config.get("C"))
        self.assertEqual(self.ctx.config.get("C", "d"), "d")
        self.assertEqual(self.ctx.config.keys(), ["A", "B"])
        self.assertIn("A", self.ctx.config)
        self.assertEqual(self.ctx.config["B"], "2")
        with self.assertRaises(FatalError) as cm:
            self.ctx.config.require("LEDGER_URL")
        self.assertEqual(str(cm.exception),
                         "configuration `LEDGER_URL` is not set in this queue's binding (config.LEDGER_URL)")

    def test_secrets(self):
        self.host.secrets = {"KEY": "v"}
        self.host.revealable = {"SIGN": "s3"}
        self.assertEqual(self.ctx.secret("KEY"), "airlock-secret:KEY")
        self.assertEqual(self.ctx.reveal_secret("SIGN"), "s3")
        with self.assertRaises(HostError) as cm:
            self.ctx.reveal_secret("KEY")
        self.assertEqual((cm.exception.kind, cm.exception.what), ("invalid", "secret `KEY`"))
        self.assertFalse(cm.exception.retryable)

    def test_children(self):
        self.host.children = [("q", "c1", "completed", '{"n": 1}'), ("q", "c2", "failed", "boom"),
                              ("q", "c3", "completed", "not json")]
        children = self.ctx.children()
        self.assertEqual([c.child for c in children], [JobRef("q", "c1"), JobRef("q", "c2"), JobRef("q", "c3")])
        self.assertEqual([c.outcome for c in children], [Completed({"n": 1}), Failed("boom"), Completed("not json")])
        self.assertEqual(self.ctx.children_values(), [{"n": 1}, "not json"])
        with self.assertRaises(FatalError):
            self.ctx.children_values(returns=dict)

    def test_job_info(self):
        job = self.ctx.job
        self.assertEqual((job.id, job.queue, job.name, job.attempt, job.max_attempts), ("j1", "q", "n", 2, 3))
        self.assertEqual(job.parent, JobRef("pq", "p1"))
        self.assertEqual(job.enqueued_at, datetime(1970, 1, 1, 0, 0, 1, tzinfo=timezone.utc))


if __name__ == "__main__":
    unittest.main()
