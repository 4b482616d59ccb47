"""Refusals that say why: a request the host refused or cut off (its
``http-refusals``, here :meth:`FakeHost.refuse` or an :class:`HttpRefusal`
reply) fails through ``ctx.http`` with a :class:`FatalError` carrying the
host's reason, while any other failure keeps its :class:`HttpError`."""

import types
import unittest
from typing import Any, List

from airlock_sdk import Context, FatalError, HttpError, HttpRefusal, JobInfo, _host
from airlock_sdk._runtime import spec_of, world_for
from airlock_sdk.testing import FakeHost, run

EGRESS = "api.example.com:443 is not in this queue's egress list"
NETWORK = HttpError("transport", "ErrorCode::ConnectionRefused")


class ClientRefusalTest(unittest.TestCase):
    def setUp(self):
        self.replies: List[Any] = []
        self.host = FakeHost(http=lambda request: self.replies.pop(0))
        self.previous = _host.install(self.host)
        self.ctx = Context(JobInfo("j", "q", "n", 1, 1, 0, 0))

    def tearDown(self):
        _host.install(self.previous)

    def failure(self, url: str = "https://api.example.com/v1/x") -> BaseException:
        with self.assertRaises(Exception) as cm:
            self.ctx.http.get(url)
        return cm.exception

    def test_a_refused_request_is_fatal_with_the_hosts_reason(self):
        self.replies.append(HttpRefusal("egress-rule", "https://api.example.com/v1/x", EGRESS))
        e = self.failure("https://api.example.com/v1/x?key=1")
        self.assertIsInstance(e, FatalError)
        self.assertEqual(str(e), f"HTTP request refused: {EGRESS}")
        self.assertFalse(e.retryable)
        self.assertEqual(e.refusal, HttpRefusal("egress-rule", "https://api.example.com/v1/x", EGRESS))
        self.assertIsInstance(e.__cause__, HttpError)
        self.assertEqual(e.__cause__.kind, "denied")

    def test_every_kind_maps(self):
        kinds = ["egress-rule", "operator", "address", "scheme", "too-many-requests",
                 "request-too-large", "response-too-large", "timeout"]
        causes = []
        for i, kind in enumerate(kinds):
            self.replies.append(HttpRefusal(kind, f"https://h{i}.example.com/", f"reason {i}"))
            e = self.failure(f"https://h{i}.example.com/")
            self.assertIsInstance(e, FatalError, kind)
            self.assertEqual((str(e), e.refusal.kind), (f"HTTP request refused: reason {i}", kind))
            causes.append(e.__cause__.kind)
        self.assertEqual(causes, ["denied"] * 5 + ["limit", "limit", "transport"])

    def test_a_cap_while_reading_the_body_is_fatal(self):
        cap = "the response body went over maxHttpResponseBytes (65536 bytes)"

        def cut_off(request):
            # As the bindings see it: the body stream fails mid-read.
            self.host.refuse(request.url, "response-too-large", cap)
            return HttpError("limit", "response body: body size exceeds limit")

        self.host.http = cut_off
        e = self.failure()
        self.assertIsInstance(e, FatalError)
        self.assertEqual(str(e), f"HTTP request refused: {cap}")
        self.replies.append(HttpRefusal("timeout", "https://api.example.com/v1/x", "no response within httpTimeoutMs (10000 ms)"))
        self.host.http = lambda request: self.replies.pop(0)
        self.assertEqual(str(self.failure()), "HTTP request refused: no response within httpTimeoutMs (10000 ms)")

    def test_a_network_error_with_no_new_refusal_keeps_its_http_error(self):
        self.replies.append(NETWORK)
        e = self.failure()
        self.assertIs(e, NETWORK)
        self.assertTrue(e.retryable)

    def test_a_refusal_is_used_once(self):
        self.replies += [HttpRefusal("egress-rule", "https://api.example.com/v1/x", EGRESS), NETWORK]
        self.assertIsInstance(self.failure(), FatalError)
        self.assertIs(self.failure(), NETWORK, "the earlier refusal is not blamed for it")

    def test_the_newest_for_the_url_wins_else_the_newest_new_one(self):
        self.host.refuse("https://a.example.com/x", "egress-rule", "a, older")
        self.host.refuse("https://A.example.com:443/x?q=1", "operator", "a, newer")
        self.host.refuse("https://b.example.com:8443/y", "address", "b")
        self.replies += [NETWORK] * 4
        self.assertEqual(str(self.failure("https://a.example.com/x?page=2")), "HTTP request refused: a, newer")
        self.assertEqual(str(self.failure("https://b.example.com:8443/y")), "HTTP request refused: b")
        self.host.refuse("https://redirected.example.com/", "egress-rule", "the redirect's hop")
        self.assertEqual(str(self.failure("https://c.example.com")), "HTTP request refused: the redirect's hop")
        self.assertIs(self.failure("https://a.example.com/x"), NETWORK, "a's older one counts as used")

    def test_the_fake_keeps_the_newest_32(self):
        for i in range(40):
            self.host.refuse(f"https://h/{i}", "timeout", str(i))
        log = self.host.http_refusals()
        self.assertEqual((len(log), log[0][0], log[-1][0]), (32, 9, 40))
        with self.assertRaises(ValueError):
            self.host.refuse("https://h/", "nope", "x")


def refusing_handler(data: Any, ctx: Context) -> Any:
    def first() -> Any:
        try:
            ctx.http.get(data["first"])
        except FatalError as e:
            return str(e)

    caught = ctx.step("first", first)  # run 2 replays it: no request
    ctx.sleep("nap", "1h")
    return {"caught": caught, "status": ctx.http.get(data["url"]).status}


class JobRefusalTest(unittest.TestCase):
    def test_the_job_fails_fatally_with_the_reason(self):
        out = run(lambda data, ctx: ctx.http.get("https://api.example.com/").status, {})
        self.assertEqual((out.status, out.message), ("fatal", f"HTTP request refused: {EGRESS}"))

    def test_a_network_error_retries(self):
        host = FakeHost(http=lambda r: NETWORK)
        out = run(lambda data, ctx: ctx.http.get("https://api.example.com/").status, {}, host=host)
        self.assertEqual((out.status, out.message), ("retry", "HTTP transport: ErrorCode::ConnectionRefused"))

    def test_each_run_counts_its_refusals_afresh(self):
        # Run 1 catches a refusal, then sleeps; run 2 (a new run: the fake's
        # list is emptied, as the host's is) must not blame run 1's refusal
        # for its network error.
        replies = {"https://refused.example.com/": HttpRefusal("egress-rule", "https://refused.example.com/", "no")}
        host = FakeHost(http=lambda r: replies.get(r.url, NETWORK))
        out = run(refusing_handler, {"first": "https://refused.example.com/", "url": "https://down.example.com/"},
                  host=host)
        self.assertEqual((out.status, out.message, out.runs), ("retry", "HTTP transport: ErrorCode::ConnectionRefused", 2))
        self.assertEqual(host.steps["first"], '"HTTP request refused: no"')


class WarmRefusalTest(unittest.TestCase):
    """One ``WitWorld`` running several jobs, each with a host of its own."""

    def job(self, world: Any, job_id: str, host: FakeHost, data: str) -> Any:
        job = types.SimpleNamespace(id=job_id, queue="q", name="n", data=data, attempt=1,
                                    max_attempts=1, enqueued_at_ms=0, started_at_ms=0, parent=None)
        previous = _host.install(host)
        try:
            return world.run(job)
        except RuntimeError as e:  # FakeHost.job_error
            return str(e)
        finally:
            _host.install(previous)

    def test_a_later_job_counts_from_one_again(self):
        def probe(data: Any, ctx: Context) -> Any:
            try:
                ctx.http.get("https://a.example.com/")
            except FatalError as e:
                return str(e)

        world = world_for(spec_of(probe))()
        hosts = [FakeHost(http=lambda r, n=n: HttpRefusal("egress-rule", r.url, f"refused in job-{n}"))
                 for n in (1, 2)]
        self.assertEqual(self.job(world, "job-1", hosts[0], "{}"), '"HTTP request refused: refused in job-1"')
        self.assertEqual(self.job(world, "job-2", hosts[1], "{}"), '"HTTP request refused: refused in job-2"')
        self.assertEqual(hosts[1].http_refusal_log[0][0], 1, "seq 1 again, not taken as used by job 1")
        # Job 3's own list is empty: its network error stays one.
        down = FakeHost(http=lambda r: NETWORK)
        self.assertEqual(self.job(world, "job-3", down, "{}"), "retry: HTTP transport: ErrorCode::ConnectionRefused")


if __name__ == "__main__":
    unittest.main()
