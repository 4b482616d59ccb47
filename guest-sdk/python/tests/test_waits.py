import unittest
from dataclasses import dataclass
from datetime import timedelta
from unittest import mock

from airlock_sdk import Context, Event, FatalError, HostError, JobInfo, Match, _host
from airlock_sdk.testing import FakeHost, run


def context(host: FakeHost) -> Context:
    _host.install(host)
    return Context(JobInfo("j1", "q", "n", 1, 1, 1_000, 2_000))


class Base(unittest.TestCase):
    def setUp(self):
        self.host = FakeHost()
        self.previous = _host.install(self.host)
        self.ctx = context(self.host)

    def tearDown(self):
        _host.install(self.previous)

    def parked(self, call):
        with self.assertRaises(_host.Suspend) as cm:
            call()
        self.assertEqual(cm.exception.kind, "wait")
        return cm.exception


class KeyTest(Base):
    def test_repeated_ids_count_per_occurrence(self):
        for key in ("x", "x#2", "x#3"):
            self.host.time_out_wait(key)
        for _ in range(3):
            self.assertIsNone(self.ctx.wait_for_token("x", timeout="1h"))
        self.assertEqual([c[1] for c in self.host.wait_calls], ["x", "x#2", "x#3"])

    def test_waits_are_counted_apart_from_steps_and_sleeps(self):
        self.ctx.step("a", lambda: 1)
        self.ctx.sleep_until("a", 1)
        self.host.time_out_wait("a")
        self.ctx.wait_for_event("a", "e", timeout=1)
        self.assertEqual(self.host.wait_calls[0][1], "a")
        self.assertEqual(list(self.host.steps), ["a"])
        self.assertEqual(list(self.host.sleeps), ["a"])
        # ... but events and tokens share one count (both are waits).
        self.host.time_out_wait("a#2")
        self.ctx.wait_for_token("a", timeout=1)
        self.assertEqual(self.host.wait_calls[-1], ("wait_for_token", "a#2", 1_000))

    def test_wait_token_is_that_of_the_next_wait_and_counts_nothing(self):
        first = self.ctx.wait_token("approval")
        self.assertEqual(self.ctx.wait_token("approval"), first)  # asking again changes nothing
        self.host.complete_wait("approval", {"ok": 1})
        self.assertEqual(self.ctx.wait_for_token("approval", timeout="3d"), {"ok": 1})
        second = self.ctx.wait_token("approval")
        self.assertNotEqual(second, first)
        self.assertEqual(self.host.tokens, {"approval": first, "approval#2": second})
        self.assertEqual(
            [c[:2] for c in self.host.wait_calls],
            [("wait_token", "approval"), ("wait_token", "approval"),
             ("wait_for_token", "approval"), ("wait_token", "approval#2")],
        )
        # The same token on every run.
        self.assertEqual(context(self.host).wait_token("approval"), first)

    def test_bad_ids(self):
        for call in (lambda: self.ctx.wait_token(""),
                     lambda: self.ctx.wait_for_token("", timeout=1),
                     lambda: self.ctx.wait_for_event("", "e", timeout=1)):
            with self.assertRaises(ValueError):
                call()
        self.assertEqual(self.host.wait_calls, [])


class EventTest(Base):
    EVENT = {"name": "refund.settled", "data": {"refundId": "r1"}, "id": "evt_9", "ts": 1_700_000_000_000}

    def test_match_value_is_sent_as_json_text(self):
        for i, value in enumerate(("r1", 42, 1.5, True, None, {"a": [1, "é"]})):
            self.host.time_out_wait(f"w{i}")
            self.ctx.wait_for_event(f"w{i}", "refund.settled", match=Match("$.refundId", value), timeout=60)
        self.assertEqual(
            [c[3] for c in self.host.wait_calls],
            [("$.refundId", '"r1"'), ("$.refundId", "42"), ("$.refundId", "1.5"),
             ("$.refundId", "true"), ("$.refundId", "null"), ("$.refundId", '{"a":[1,"é"]}')],
        )
        self.host.time_out_wait("plain")
        self.ctx.wait_for_event("plain", "refund.settled", timeout=60)
        self.assertEqual(self.host.wait_calls[-1], ("wait_for_event", "plain", "refund.settled", None, 60_000))

    def test_match_value_that_is_not_json_is_fatal(self):
        with self.assertRaises(FatalError) as cm:
            self.ctx.wait_for_event("w", "e", match=Match("$.x", {1, 2}), timeout=1)
        self.assertTrue(str(cm.exception).startswith("the match value of wait `w` is not JSON"))
        with self.assertRaises(TypeError):
            self.ctx.wait_for_event("w", "e", match=("$.x", 1), timeout=1)
        self.assertEqual(self.host.wait_calls, [])

    def test_parks_then_returns_the_recorded_event(self):
        with mock.patch("time.time", return_value=1_000.0):
            suspend = self.parked(lambda: self.ctx.wait_for_event("s", "refund.settled", timeout="7d"))
        self.assertEqual((suspend.step_id, suspend.wake_at_ms), ("s", 1_000_000 + 7 * 86_400_000))
        self.assertEqual(self.host.waits["s"].deadline_ms, 1_000_000 + 7 * 86_400_000)
        self.host.complete_wait("s", self.EVENT)
        for ctx in (context(self.host), context(self.host)):  # every later run: the same
            got = ctx.wait_for_event("s", "refund.settled", timeout="7d")
            self.assertEqual(got, Event("refund.settled", {"refundId": "r1"}, "evt_9", 1_700_000_000_000))
        self.assertIsInstance(got.ts, int)

    def test_event_without_data_and_as_an_event_object(self):
        self.host.complete_wait("a", {"name": "ping", "id": "e1", "ts": 5})
        self.assertEqual(self.ctx.wait_for_event("a", "ping", timeout=1), Event("ping", None, "e1", 5))
        self.host.complete_wait("b", Event("ping", [1], "e2", 6))
        self.assertEqual(self.ctx.wait_for_event("b", "ping", timeout=1), Event("ping", [1], "e2", 6))

    def test_an_event_that_does_not_parse_is_fatal(self):
        for i, text in enumerate(('"hi"', '{"name":"e","id":"1"}', '{"name":"e","id":1,"ts":2}',
                                  '{"name":"e","id":"1","ts":true}', "not json")):
            self.host.wait_results[f"w{i}"] = text
            with self.assertRaises(FatalError) as cm:
                self.ctx.wait_for_event(f"w{i}", "e", timeout=1)
            self.assertTrue(str(cm.exception).startswith(f"the event of wait `w{i}` does not parse: "),
                            str(cm.exception))

    def test_none_on_timeout(self):
        self.parked(lambda: self.ctx.wait_for_event("s", "e", timeout=timedelta(hours=1)))
        self.host.time_out_wait("s")
        self.assertIsNone(context(self.host).wait_for_event("s", "e", timeout=timedelta(hours=1)))
        # A deadline that has passed times out by itself.
        self.assertIsNone(self.ctx.wait_for_event("t", "e", timeout=0))
        self.assertIn("t", self.host.wait_results)
        with mock.patch("time.time", return_value=0.0):
            self.parked(lambda: self.ctx.wait_for_event("u", "e", timeout="500ms"))
        self.assertIsNone(context(self.host).wait_for_event("u", "e", timeout="500ms"))

    def test_send_event_reaches_matching_waits_only(self):
        self.parked(lambda: self.ctx.wait_for_event("a", "paid", match=Match("$.order.id", "o1"), timeout="1d"))
        self.parked(lambda: self.ctx.wait_for_event("b", "paid", match=Match("$.n", 1), timeout="1d"))
        self.parked(lambda: self.ctx.wait_for_event("c", "other", timeout="1d"))
        self.host.send_event("paid", {"order": {"id": "o2"}, "n": True})
        self.host.send_event("paid", {"n": 1.0})
        self.assertEqual(self.host.wait_results, {})
        sent = self.host.send_event("paid", {"order": {"id": "o1"}, "n": 1}, id="evt_x", ts=7)
        self.assertEqual(sent, {"name": "paid", "data": {"order": {"id": "o1"}, "n": 1}, "id": "evt_x", "ts": 7})
        ctx = context(self.host)
        self.assertEqual(ctx.wait_for_event("a", "paid", match=Match("$.order.id", "o1"), timeout="1d").id, "evt_x")
        self.assertEqual(ctx.wait_for_event("b", "paid", match=Match("$.n", 1), timeout="1d").id, "evt_x")
        self.assertNotIn("c", self.host.wait_results)


class TokenTest(Base):
    def test_parks_then_returns_the_decoded_body(self):
        token = self.ctx.wait_token("approval")
        suspend = self.parked(lambda: self.ctx.wait_for_token("approval", timeout="3d"))
        self.assertEqual(suspend.step_id, "approval")
        self.assertEqual(self.host.waits["approval"].kind, "token")
        self.assertTrue(self.host.complete_token(token, {"approved": True, "by": "ann"}))
        self.assertFalse(self.host.complete_token(token, {"approved": False}))  # single use
        for ctx in (context(self.host), context(self.host)):
            self.assertEqual(ctx.wait_for_token("approval", timeout="3d"), {"approved": True, "by": "ann"})

    def test_completion_before_the_wait_is_kept(self):
        token = self.ctx.wait_token("t")
        self.assertTrue(self.host.complete_token(token, [1, 2]))
        self.assertEqual(self.ctx.wait_for_token("t", timeout=5), [1, 2])

    def test_none_on_timeout_and_the_token_is_used_up(self):
        token = self.ctx.wait_token("t")
        self.assertIsNone(self.ctx.wait_for_token("t", timeout=0))
        self.assertFalse(self.host.complete_token(token, {"late": True}))
        self.assertIsNone(context(self.host).wait_for_token("t", timeout=0))

    def test_wait_for_token_creates_its_token(self):
        self.parked(lambda: self.ctx.wait_for_token("t", timeout=5))
        self.assertIn("t", self.host.tokens)
        self.assertEqual(context(self.host).wait_token("t"), self.host.tokens["t"])

    def test_returns_decodes_into_a_type(self):
        @dataclass
        class Decision:
            approved: bool
            by: str = ""

        self.host.complete_wait("d", {"approved": False, "by": "bob"})
        self.assertEqual(self.ctx.wait_for_token("d", timeout=1, returns=Decision), Decision(False, "bob"))
        self.host.complete_wait("d#2", {"approved": "maybe"})
        with self.assertRaises(FatalError) as cm:
            self.ctx.wait_for_token("d", timeout=1, returns=Decision)
        self.assertTrue(str(cm.exception).startswith("the result of wait `d` does not fit its type: "))

    def test_timeout_forms(self):
        for i, timeout in enumerate((90, 1.5, timedelta(minutes=2), "7d", "1h30m")):
            self.host.time_out_wait(f"t{i}")
            self.ctx.wait_for_token(f"t{i}", timeout=timeout)
        self.assertEqual([c[2] for c in self.host.wait_calls],
                         [90_000, 1_500, 120_000, 604_800_000, 5_400_000])
        with self.assertRaises(ValueError):
            self.ctx.wait_for_token("x", timeout="-1s")
        with self.assertRaises(TypeError):
            self.ctx.wait_for_event("x", "e", timeout=True)
        with self.assertRaises(TypeError):
            self.ctx.wait_for_token("x")  # the timeout is required


class ErrorTest(Base):
    def test_host_errors_name_the_call(self):
        cases = [
            ("wait_for_event", lambda: self.ctx.wait_for_event("w", "e", timeout=1), "wait for event"),
            ("wait_token", lambda: self.ctx.wait_token("w"), "wait token"),
            ("wait_for_token", lambda: self.ctx.wait_for_token("w", timeout=1), "wait for token"),
        ]
        for call_name, call, what in cases:
            self.host.failures = {call_name: ("unavailable", "redis down")}
            with self.assertRaises(HostError) as cm:
                call()
            self.assertEqual((cm.exception.kind, cm.exception.what, str(cm.exception), cm.exception.retryable),
                             ("unavailable", what, f"{what}: redis down", True))
            self.host.failures = {call_name: ("unsupported", "no events here")}
            with self.assertRaises(HostError) as cm:
                call()
            self.assertEqual((str(cm.exception), cm.exception.retryable),
                             (f"{what} unsupported: no events here", False))

    def test_refusals_are_invalid(self):
        with self.assertRaises(HostError) as cm:
            self.ctx.wait_for_event("w", "e", match=Match("refundId", "r1"), timeout=1)
        self.assertEqual(cm.exception.kind, "invalid")
        self.assertTrue(str(cm.exception).startswith("wait for event refused: match path `refundId`"))
        with self.assertRaises(HostError) as cm:
            self.ctx.wait_for_token("w", timeout="400d")
        self.assertEqual(cm.exception.kind, "invalid")
        self.assertFalse(cm.exception.retryable)

    def test_a_failing_wait_fails_the_job(self):
        def app(data: dict, ctx: Context) -> dict:
            ctx.wait_for_event("w", "e", timeout="1d")
            return {}

        out = run(app, {}, host=FakeHost(failures={"wait_for_event": ("unavailable", "redis down")}))
        self.assertEqual((out.status, out.message), ("retry", "wait for event: redis down"))
        out = run(app, {}, host=FakeHost(failures={"wait_for_event": ("invalid", "bad")}))
        self.assertEqual((out.status, out.message), ("fatal", "wait for event refused: bad"))


class RunTest(unittest.TestCase):
    def test_run_stops_at_a_wait_and_goes_on_after_its_outcome(self):
        def app(data: dict, ctx: Context) -> dict:
            token = ctx.wait_token("ok")
            ctx.progress({"token": token})
            body = ctx.wait_for_token("ok", timeout="1h")
            return {"body": body}

        host = FakeHost()
        out = run(app, {}, host=host)
        self.assertEqual((out.status, out.wait_id), ("suspended", "ok"))
        self.assertEqual(out.wake_at_ms, host.waits["ok"].deadline_ms)
        host.complete_token(host.progress[-1]["token"], "yes")
        out = run(app, {}, host=host)
        self.assertEqual(out.value, {"body": "yes"})
        # skip_waits: a wait without an outcome times out.
        out = run(app, {}, skip_waits=True)
        self.assertEqual((out.status, out.value, out.runs), ("completed", {"body": None}, 2))


if __name__ == "__main__":
    unittest.main()
