"""Starting other work (``ctx.enqueue``, ``ctx.invoke``, ``ctx.invoke_many``,
``ctx.send_event``) and running again later (``ctx.retry_after``,
``ctx.rate_limit``, ``RetryAfterError``, ``retry_on_429``)."""

import unittest
from dataclasses import dataclass
from datetime import timedelta
from unittest import mock

from airlock_sdk import (
    Completed,
    Context,
    Failed,
    FatalError,
    HostError,
    InvokeError,
    JobInfo,
    NewJob,
    RetryAfterError,
    RetryError,
    TimedOut,
    _host,
    parse_retry_after,
    retry_after_from,
)
from airlock_sdk.errors import job_error
from airlock_sdk.http import Response
from airlock_sdk.testing import FakeHost, run

DAY_MS = 24 * 60 * 60 * 1000


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
        self.assertEqual(cm.exception.kind, "invoke")
        return cm.exception


@dataclass
class Charge:
    charge_id: str
    amount: float


class EnqueueTest(Base):
    def test_is_a_step_and_adds_once(self):
        ref = self.ctx.enqueue("mail", "emails", "welcome", {"to": "a@b.c"}, {"attempts": 3})
        self.assertEqual(ref.queue, "emails")
        self.assertTrue(ref.id.startswith("c-"))
        (job,) = self.host.jobs
        self.assertEqual((job.queue, job.name, job.data, job.options, job.id, job.invoked),
                         ("emails", "welcome", {"to": "a@b.c"}, {"attempts": 3}, ref.id, False))
        # Recorded as a step, under the steps' count.
        self.assertEqual(self.host.step_order, ["mail"])
        self.assertEqual(self.host.steps["mail"], f'["emails","{ref.id}"]')
        # A replay gets the recorded ref and adds nothing.
        self.assertEqual(context(self.host).enqueue("mail", "emails", "welcome", {"to": "a@b.c"}), ref)
        self.assertEqual(len(self.host.jobs), 1)

    def test_shares_the_count_of_steps(self):
        self.ctx.step("a", lambda: 1)
        self.ctx.enqueue("a", "q2", "x", None)
        self.ctx.send_event("a", "order.done", {})
        self.assertEqual(self.host.step_order, ["a", "a#2", "a#3"])

    def test_no_options_and_empty_options_go_as_none(self):
        seen = []
        self.host.enqueue = lambda key, job: seen.append(job) or ("q", "id")
        self.ctx.enqueue("x", "q", "n", [1])
        self.ctx.enqueue("y", "q", "n", None, {})
        self.ctx.enqueue("z", "q", "n", Charge("ch", 1), {"delay": 5})
        self.assertEqual(seen, [("q", "n", "[1]", None), ("q", "n", "null", None),
                                ("q", "n", '{"charge_id":"ch","amount":1}', '{"delay":5}')])

    def test_bad_arguments(self):
        with self.assertRaises(FatalError) as cm:
            self.ctx.enqueue("x", "q", "n", {1, 2})
        self.assertTrue(str(cm.exception).startswith("the data of job `n` for queue `q` is not JSON"))
        with self.assertRaises(TypeError):
            self.ctx.enqueue("x", "q", "n", {}, options=[("delay", 1)])
        with self.assertRaises(ValueError):
            self.ctx.enqueue("", "q", "n", {})
        with self.assertRaises(HostError) as cm:
            self.ctx.enqueue("x", "", "n", {})
        self.assertEqual(str(cm.exception), "enqueue refused: a job needs a queue and a name")
        self.assertEqual(self.host.jobs, [])

    def test_a_queue_the_binding_does_not_allow_fails_the_job(self):
        def app(data: dict, ctx: Context) -> dict:
            try:
                ctx.enqueue("e", "refunds", "x", {})
            except Exception:  # the host ends the run: nothing to catch
                return {"caught": True}
            return {}

        host = FakeHost(starts={"queues": ["payments", "mail-*"]})
        out = run(app, {}, host=host, queue="orders")
        message = "refused: queue `refunds` is not in the `starts.queues` of queue `orders`'s binding"
        self.assertEqual((out.status, out.message), ("fatal", message))
        self.assertEqual(host.logs, [("error", message)])
        self.assertEqual(host.jobs, [])
        for queue in ("payments", "mail-eu"):
            ok = FakeHost(starts={"queues": ["payments", "mail-*"]})
            self.assertEqual(run(lambda d, ctx: ctx.enqueue("e", queue, "x", {}).queue, {}, host=ok).value, queue)

    def test_host_errors(self):
        self.host.failures = {"enqueue": ("unavailable", "redis down")}
        with self.assertRaises(HostError) as cm:
            self.ctx.enqueue("e", "q", "n", {})
        self.assertEqual((str(cm.exception), cm.exception.retryable), ("enqueue: redis down", True))


class SendEventTest(Base):
    def test_is_a_step_and_sends_once(self):
        event_id = self.ctx.send_event("notify", "order.reviewed", {"orderId": "o1"})
        self.assertTrue(event_id.startswith("e-"))
        self.assertEqual(self.host.sent_events, [{"name": "order.reviewed", "data": {"orderId": "o1"}, "id": event_id}])
        self.assertEqual(self.host.steps, {"notify": f'"{event_id}"'})
        self.assertEqual(context(self.host).send_event("notify", "order.reviewed", {"orderId": "o1"}), event_id)
        self.assertEqual(len(self.host.sent_events), 1)
        # A second occurrence in the run is another event.
        self.assertNotEqual(self.ctx.send_event("notify", "order.reviewed", {}), event_id)
        self.assertEqual(self.host.step_order, ["notify", "notify#2"])

    def test_refused_and_bad(self):
        host = FakeHost(starts={"events": ["order.*"]})
        out = run(lambda d, ctx: ctx.send_event("n", "user.created", {}), {}, host=host)
        self.assertEqual((out.status, out.message), (
            "fatal", "refused: event `user.created` is not in the `starts.events` of queue `test`'s binding"))
        self.assertEqual(host.sent_events, [])
        self.assertEqual(run(lambda d, ctx: ctx.send_event("n", "order.paid", 1), {}, host=host).status, "completed")
        with self.assertRaises(FatalError):
            self.ctx.send_event("n", "e", float("nan"))
        with self.assertRaises(TypeError):
            self.ctx.send_event("n", 5, {})


class InvokeTest(Base):
    def test_parks_then_returns_the_value(self):
        suspend = self.parked(lambda: self.ctx.invoke("charge", "payments", "charge", {"orderId": "o1"}))
        self.assertEqual(suspend.step_id, "charge")
        (child,) = self.host.jobs
        self.assertEqual((child.queue, child.name, child.data, child.invoked), ("payments", "charge", {"orderId": "o1"}, True))
        # Not a step: nothing recorded under the steps.
        self.assertEqual(self.host.steps, {})
        self.host.complete_child("charge", {"chargeId": "ch_o1", "amount": 5})
        for ctx in (context(self.host), context(self.host)):  # every later run: the same
            self.assertEqual(ctx.invoke("charge", "payments", "charge", {"orderId": "o1"}),
                             {"chargeId": "ch_o1", "amount": 5})
        self.assertEqual(len(self.host.jobs), 1, "the child is added once")
        replay = context(self.host)
        self.assertEqual(replay.invoke("charge", "payments", "charge", {}, returns=Charge), Charge("ch_o1", 5.0))

    def test_a_failed_child_raises_invoke_error(self):
        self.host.fail_child("charge", "card declined", kind="guest_fatal", attempts=1)
        with self.assertRaises(InvokeError) as cm:
            self.ctx.invoke("charge", "payments", "charge", {})
        e = cm.exception
        self.assertEqual((e.kind, e.failure, e.reason), (
            "failed", Failed("card declined", kind="guest_fatal", attempts=1), "card declined"))
        self.assertEqual((e.failure.kind, e.failure.reason, e.failure.attempts), ("guest_fatal", "card declined", 1))
        self.assertEqual(str(e), "the invoked job failed for good after 1 attempt(s): guest_fatal: card declined")
        self.assertIsInstance(e, FatalError)
        self.assertEqual(job_error(e)[0], "fatal")

    def test_a_timeout_raises_invoke_error(self):
        with mock.patch("time.time", return_value=1_000.0):
            suspend = self.parked(lambda: self.ctx.invoke("c", "q", "n", {}, timeout="10m"))
        self.assertEqual(suspend.wake_at_ms, 1_000_000 + 600_000)
        self.assertEqual(self.host.invokes["c"].timeout_ms, 600_000)
        with self.assertRaises(InvokeError) as cm:  # the deadline has passed
            context(self.host).invoke("c", "q", "n", {}, timeout="10m")
        self.assertEqual((cm.exception.kind, cm.exception.failure, str(cm.exception)),
                         ("timed_out", None, "the invoked job did not end in time"))
        # The time-out is recorded: a child's later end reaches nobody.
        self.assertEqual(self.host.child_ends["c"], {0: TimedOut()})

    def test_a_handler_may_catch_it_and_uncaught_it_is_fatal(self):
        def app(data: dict, ctx: Context) -> dict:
            try:
                return {"charge": ctx.invoke("charge", "payments", "charge", data)}
            except InvokeError as e:
                if data.get("catch"):
                    return {"declined": e.failure.reason, "kind": e.kind}
                raise

        declined = lambda job: Failed("card declined", kind="guest_fatal", attempts=2)  # noqa: E731
        out = run(app, {"catch": True}, host=FakeHost(answer_child=declined))
        self.assertEqual((out.value, out.runs), ({"declined": "card declined", "kind": "failed"}, 2))
        out = run(app, {}, host=FakeHost(answer_child=declined))
        self.assertEqual((out.status, out.message), (
            "fatal", "the invoked job failed for good after 2 attempt(s): guest_fatal: card declined"))
        out = run(app, {"amount": 1}, host=FakeHost(answer_child=lambda job: {"id": job.data["amount"]}))
        self.assertEqual((out.value, out.runs), ({"charge": {"id": 1}}, 2))

    def test_run_stops_until_the_child_ended(self):
        def app(data: dict, ctx: Context) -> dict:
            ctx.step("before", lambda: ctx.kv.set("before", str(int(ctx.kv.get("before") or 0) + 1)))
            return {"value": ctx.invoke("child", "kids", "work", data, {"attempts": 3})}

        host = FakeHost()
        out = run(app, {"n": 1}, host=host)
        self.assertEqual((out.status, out.wait_id, out.wake_at_ms), ("suspended", "child", (1 << 64) - 1))
        self.assertEqual(host.jobs[0].options, {"attempts": 3})
        host.complete_child("child", [1, 2])
        out = run(app, {"n": 1}, host=host)
        self.assertEqual(out.value, {"value": [1, 2]})
        self.assertEqual(host.kv["before"], "1", "the step before the invoke ran once")

    def test_host_refusals_and_errors(self):
        with self.assertRaises(HostError) as cm:
            self.ctx.invoke("c", "q", "n", {}, timeout="400d")
        self.assertEqual(cm.exception.kind, "invalid")
        self.host.failures = {"invoke": ("unavailable", "redis down")}
        with self.assertRaises(HostError) as cm:
            self.ctx.invoke("c", "q", "n", {})
        self.assertEqual((str(cm.exception), cm.exception.retryable), ("invoke: redis down", True))
        host = FakeHost(starts={"queues": ["kids*"]})
        out = run(lambda d, ctx: ctx.invoke("c", "adults", "n", {}), {}, host=host)
        self.assertEqual((out.status, out.message), (
            "fatal", "refused: queue `adults` is not in the `starts.queues` of queue `test`'s binding"))

    def test_a_value_that_does_not_fit_is_fatal(self):
        self.host.complete_child("c", {"chargeId": 5})
        with self.assertRaises(FatalError) as cm:
            self.ctx.invoke("c", "q", "n", {}, returns=Charge)
        self.assertTrue(str(cm.exception).startswith("a child's return value of invoke `c` does not fit its type: "))


class InvokeManyTest(Base):
    JOBS = [NewJob("kids", "a", {"i": 0}), ("kids", "b", {"i": 1}), NewJob("kids", "c", {"i": 2}, {"attempts": 2})]

    def test_ends_in_the_order_of_jobs_a_failure_hiding_nothing(self):
        self.parked(lambda: self.ctx.invoke_many("fan", self.JOBS))
        self.assertEqual([j.name for j in self.host.jobs], ["a", "b", "c"])
        self.assertEqual(self.host.jobs[2].options, {"attempts": 2})
        # They end in another order than they were asked for.
        self.host.complete_child("fan", "C", index=2)
        self.host.fail_child("fan", "boom", index=1, kind="guest_retry", attempts=3)
        self.assertFalse(self.host.invoke_ready("fan"))
        self.host.complete_child("fan", {"v": "A"}, index=0)
        self.assertTrue(self.host.invoke_ready("fan"))
        ends = context(self.host).invoke_many("fan", self.JOBS)
        self.assertEqual(ends, [Completed({"v": "A"}), Failed("boom", kind="guest_retry", attempts=3), Completed("C")])
        self.assertEqual([e.value for e in ends if isinstance(e, Completed)], [{"v": "A"}, "C"])

    def test_through_run_with_answered_children(self):
        def app(data: dict, ctx: Context) -> list:
            ends = ctx.invoke_many("fan", [NewJob("kids", "sq", {"n": n}) for n in data["ns"]],
                                   max_running=2, timeout=timedelta(hours=1))
            return [e.value if isinstance(e, Completed) else f"failed: {e.reason}" for e in ends]

        def answer(job):
            n = job.data["n"]
            return Failed(f"{n} is odd") if n % 2 else n * n

        host = FakeHost(answer_child=answer)
        out = run(app, {"ns": [2, 3, 4, 5, 6]}, host=host)
        self.assertEqual(out.value, [4, "failed: 3 is odd", 16, "failed: 5 is odd", 36])
        # Groups of two, each once the one before had ended: a run per group, and the last.
        self.assertEqual(out.runs, 4)
        self.assertEqual(host.invokes["fan"].started, [0, 1, 2, 3, 4])
        self.assertEqual((host.invokes["fan"].max_running, host.invokes["fan"].timeout_ms), (2, 3_600_000))

    def test_max_running_starts_in_groups(self):
        self.parked(lambda: self.ctx.invoke_many("fan", self.JOBS, max_running=2))
        self.assertEqual(self.host.invokes["fan"].started, [0, 1])
        self.host.complete_child("fan", 1, index=0)
        # One of the group is still running: the job is not woken yet.
        self.assertFalse(self.host.invoke_ready("fan"))
        self.host.complete_child("fan", 2, index=1)
        self.assertTrue(self.host.invoke_ready("fan"))
        self.parked(lambda: context(self.host).invoke_many("fan", self.JOBS, max_running=2))
        self.assertEqual(self.host.invokes["fan"].started, [0, 1, 2])
        self.host.time_out_invoke("fan")
        self.assertEqual(context(self.host).invoke_many("fan", self.JOBS, max_running=2),
                         [Completed(1), Completed(2), TimedOut()])

    def test_occurrences_and_no_jobs(self):
        self.assertEqual(self.ctx.invoke_many("fan", []), [])
        self.host.complete_child("fan#2", "x")
        self.host.complete_child("fan#3", "y")
        # Invokes count their ids apart from steps.
        self.ctx.step("fan", lambda: 0)
        self.assertEqual(self.ctx.invoke_many("fan", [("q", "n")]), [Completed("x")])
        self.assertEqual(self.ctx.invoke("fan", "q", "n"), "y")
        self.assertEqual(self.host.step_order, ["fan"])

    def test_bad_arguments(self):
        for jobs in (NewJob("q", "n"), "q", [("q",)], [{"queue": "q"}]):
            with self.assertRaises(TypeError):
                self.ctx.invoke_many("fan", jobs)
        with self.assertRaises(TypeError):
            self.ctx.invoke_many("fan", [("q", "n")], max_running="2")
        with self.assertRaises(HostError) as cm:
            self.ctx.invoke_many("fan", [("q", "n")], max_running=0)
        self.assertEqual(str(cm.exception), "invoke refused: max-running must be at least 1")
        self.assertEqual(self.host.jobs, [])


class RetryAfterTest(Base):
    def test_retry_after_ends_the_run(self):
        def app(data: dict, ctx: Context) -> dict:
            try:
                ctx.retry_after("30s", "the API said 429")
            except Exception:  # nothing to catch: the run ends
                return {"caught": True}
            return {"returned": True}

        host = FakeHost()
        out = run(app, {}, host=host)
        self.assertEqual((out.status, out.delay_ms, out.message), ("retry_after", 30_000, "the API said 429"))
        self.assertEqual(host.retry_afters, [(30_000, "the API said 429")])
        self.assertEqual(host.logs, [("info", "retry after 30000 ms: the API said 429")])
        # Capped at a day.
        out = run(lambda d, ctx: ctx.retry_after(timedelta(days=3), "later"), {})
        self.assertEqual(out.delay_ms, DAY_MS)

    def test_rate_limit_ends_the_run(self):
        host = FakeHost()
        out = run(lambda d, ctx: ctx.rate_limit(2.5, "slow down"), {}, host=host)
        self.assertEqual((out.status, out.delay_ms, out.message), ("rate_limit", 2_500, "slow down"))
        self.assertEqual(host.rate_limits, [(2_500, "slow down")])
        self.assertEqual(host.logs, [("info", "rate limit for 2500 ms: slow down")])

    def test_retry_after_error_out_of_the_handler_or_a_step(self):
        def app(data: dict, ctx: Context) -> dict:
            if data.get("in_step"):
                @ctx.step("call-api")
                def called() -> dict:
                    raise RetryAfterError("busy", "2m")
            raise RetryAfterError("quota", timedelta(seconds=90))

        host = FakeHost()
        out = run(app, {}, host=host)
        self.assertEqual((out.status, out.delay_ms, out.message), ("retry_after", 90_000, "quota"))
        out = run(app, {"in_step": True}, host=host)
        self.assertEqual((out.status, out.delay_ms, out.message), ("retry_after", 120_000, "busy"))
        self.assertEqual(host.steps, {}, "the step recorded nothing")
        self.assertEqual(host.retry_afters, [(90_000, "quota"), (120_000, "busy")])

    def test_retry_after_error_itself(self):
        e = RetryAfterError("busy", "1.5s")
        self.assertEqual((e.reason, e.delay_ms, str(e)), ("busy", 1_500, "busy"))
        self.assertIsInstance(e, RetryError)
        self.assertEqual(job_error(e), ("retry", "busy"))  # if a host ever returned from retry-after
        with self.assertRaises(ValueError):
            RetryAfterError("x", -1)
        with self.assertRaises(TypeError):
            RetryAfterError(5, 1)

    def test_past_a_hundred_the_run_fails_as_retryable(self):
        host = FakeHost()
        app = lambda d, ctx: ctx.retry_after(1, "again")  # noqa: E731
        for _ in range(100):
            self.assertEqual(run(app, {}, host=host).status, "retry_after")
        out = run(app, {}, host=host)
        self.assertEqual((out.status, out.message), ("retry", "asked to retry after 1000 ms more than 100 times: again"))


class Http429Test(unittest.TestCase):
    NOW = 1_445_412_470_000  # Wed, 21 Oct 2015 07:27:50 GMT

    def test_parse_seconds(self):
        self.assertEqual(parse_retry_after("120"), 120_000)
        self.assertEqual(parse_retry_after(" 0 "), 0)
        self.assertEqual(parse_retry_after("1.5"), 1_500)
        self.assertEqual(parse_retry_after("999999"), DAY_MS)  # a day at most

    def test_parse_dates(self):
        for text in ("Wed, 21 Oct 2015 07:28:00 GMT",
                     "Wednesday, 21-Oct-15 07:28:00 GMT",
                     "Wed Oct 21 07:28:00 2015"):
            with self.subTest(text=text):
                self.assertEqual(parse_retry_after(text, now_ms=self.NOW), 10_000)
        self.assertEqual(parse_retry_after("Tue, 20 Oct 2015 07:28:00 GMT", now_ms=self.NOW), 0)  # past
        self.assertEqual(parse_retry_after("Fri, 30 Oct 2015 07:28:00 GMT", now_ms=self.NOW), DAY_MS)
        with mock.patch("time.time", return_value=self.NOW / 1000):
            self.assertEqual(parse_retry_after("Wed, 21 Oct 2015 07:29:00 GMT"), 70_000)

    def test_default_when_missing_or_unparsable(self):
        for text in (None, "", "soon", "-5", "Wed, 31 Feb 2015 07:28:00 GMT", "1e3"):
            with self.subTest(text=text):
                self.assertEqual(parse_retry_after(text, now_ms=self.NOW), 1_000)
        self.assertEqual(parse_retry_after(None, default_ms=5_000), 5_000)

    def test_retry_after_from_a_response(self):
        r = Response(429, [("Retry-After", b"30")], b"slow down", "https://api.test/v1/x?key=1")
        e = retry_after_from(r)
        self.assertEqual((e.delay_ms, e.reason), (30_000, "HTTP 429 from https://api.test/v1/x (Retry-After: 30)"))
        e = retry_after_from(Response(429, [], b"", "https://api.test/"))
        self.assertEqual((e.delay_ms, e.reason), (1_000, "HTTP 429 from https://api.test/ (no Retry-After)"))
        e = retry_after_from(Response(503, [("retry-after", b"soon")], b""))
        self.assertEqual((e.delay_ms, e.reason), (1_000, "HTTP 503 (Retry-After 'soon' does not parse)"))

    def test_retry_on_429_ends_the_run(self):
        def app(data: dict, ctx: Context) -> dict:
            r = ctx.http.get("https://api.test/v1/items", retry_on_429=data["opt_in"])
            return {"status": r.status}

        replies = {
            "seconds": (429, {"retry-after": "7"}, "slow down"),
            "date": (429, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, ""),
            "none": (429, {}, ""),
        }
        for case, reply in replies.items():
            with self.subTest(case=case):
                host = FakeHost(http=lambda r, reply=reply: reply)
                with mock.patch("time.time", return_value=self.NOW / 1000):
                    out = run(app, {"opt_in": True}, host=host)
                self.assertEqual(out.status, "retry_after")
                self.assertEqual(out.delay_ms, {"seconds": 7_000, "date": 10_000, "none": 1_000}[case])
                self.assertTrue(out.message.startswith("HTTP 429 from https://api.test/v1/items ("), out.message)
        # Not asked: the 429 is an answer like any other.
        host = FakeHost(http=lambda r: replies["seconds"])
        self.assertEqual(run(app, {"opt_in": False}, host=host).value, {"status": 429})
        # Other statuses are returned as they are.
        host = FakeHost(http=lambda r: (503, {"retry-after": "7"}, ""))
        self.assertEqual(run(app, {"opt_in": True}, host=host).value, {"status": 503})


if __name__ == "__main__":
    unittest.main()
