import unittest

from airlock_sdk import Context, FatalError, Http, HttpError, JobInfo, _host
from airlock_sdk.http import Headers, Response, split_url
from airlock_sdk.testing import FakeHost


class SplitUrlTest(unittest.TestCase):
    def test_urls(self):
        self.assertEqual(split_url("http://127.0.0.1:8098/v1/ledger"), ("http", "127.0.0.1:8098", "/v1/ledger"))
        self.assertEqual(split_url("https://api.example.com"), ("https", "api.example.com", "/"))
        self.assertEqual(split_url("https://h/p?a=1", {"b": "x y", "c": None}), ("https", "h", "/p?a=1&b=x+y"))
        self.assertEqual(split_url("HTTPS://h/p?q"), ("https", "h", "/p?q"))

    def test_refusals(self):
        for url, reason in (("h/path", "an absolute http:// or https:// URL"), ("http:///p", "no host")):
            with self.subTest(url=url):
                with self.assertRaises(HttpError) as cm:
                    split_url(url)
                self.assertEqual(cm.exception.kind, "invalid")
                self.assertIn(reason, str(cm.exception))


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.replies = []
        self.host = FakeHost(http=lambda request: self.replies.pop(0))
        self.previous = _host.install(self.host)
        self.ctx = Context(JobInfo("j", "q", "n", 1, 1, 0, 0))

    def tearDown(self):
        _host.install(self.previous)

    def test_post_json(self):
        self.replies.append((201, {"content-type": "application/json"}, {"id": "led_tx_1"}))
        r = self.ctx.http.post("http://ledger:80/v1/ledger", headers={"idempotency-key": "tx_1"},
                               json={"amount": 42.5, "note": "é"}, timeout=10)
        self.assertEqual((r.status, r.status_code, r.ok), (201, 201, True))
        self.assertEqual(r.raise_for_status().json(), {"id": "led_tx_1"})
        self.assertEqual(r.headers["Content-Type"], "application/json")
        sent = self.host.requests[0]
        self.assertEqual((sent.method, sent.url), ("POST", "http://ledger:80/v1/ledger"))
        self.assertEqual(sent.headers, [("idempotency-key", "tx_1"), ("content-type", "application/json")])
        self.assertEqual(sent.body, '{"amount":42.5,"note":"é"}'.encode())
        self.assertEqual(sent.timeout_ns, 10_000_000_000)

    def test_other_bodies_and_bearer(self):
        self.replies += [(200, {}, b"ok")] * 3
        self.ctx.http.put("https://h/x", data=b"\x00\x01")
        self.ctx.http.patch("https://h/x", data={"a": "1 2"}, bearer="airlock-secret:KEY")
        self.ctx.http.request("purge", "https://h/x", data="text", timeout="1500ms")
        put, patch, purge = self.host.requests
        self.assertEqual(put.body, b"\x00\x01")
        self.assertEqual(patch.headers, [("content-type", "application/x-www-form-urlencoded"),
                                         ("authorization", "Bearer airlock-secret:KEY")])
        self.assertEqual(patch.body, b"a=1+2")
        self.assertEqual((purge.method, purge.body, purge.timeout_ns), ("PURGE", b"text", 1_500_000_000))
        with self.assertRaises(HttpError):
            self.ctx.http.post("https://h/", json={}, data=b"")
        with self.assertRaises(HttpError) as cm:
            self.ctx.http.post("https://h/", json={1, 2})
        self.assertEqual(cm.exception.kind, "invalid")

    def test_status_errors(self):
        self.replies += [(503, {}, "x" * 600), (404, {}, "nope")]
        with self.assertRaises(HttpError) as cm:
            self.ctx.http.get("https://h/").raise_for_status()
        self.assertEqual((cm.exception.kind, cm.exception.status, cm.exception.retryable), ("status", 503, True))
        self.assertEqual(len(cm.exception.body), 512)
        with self.assertRaises(HttpError) as cm:
            self.ctx.http.get("https://h/").raise_for_status()
        self.assertFalse(cm.exception.retryable)
        self.assertEqual(str(cm.exception), "HTTP status 404: nope")

    def test_denied_without_egress(self):
        self.host.http = None
        with self.assertRaises(FatalError) as cm:
            self.ctx.http.get("https://example.com/")
        self.assertEqual(str(cm.exception), "HTTP request refused: example.com:443 is not in this queue's egress list")
        self.assertEqual(cm.exception.refusal.kind, "egress-rule")
        self.assertIsInstance(cm.exception.__cause__, HttpError)
        self.assertEqual(cm.exception.__cause__.kind, "denied")
        # An `Http()` of one's own reads no refusals: the bindings' HttpError.
        with self.assertRaises(HttpError) as cm2:
            Http().get("http://example.com:8080/")
        self.assertEqual(cm2.exception.kind, "denied")
        self.assertFalse(cm2.exception.retryable)
        self.assertEqual(self.host.http_refusal_log[-1][1:3], ("http://example.com:8080/", "egress-rule"))

    def test_other_schemes_are_refused_by_the_host(self):
        for url in ("ftp://h/file", "gopher://h:70/x", "ws://h/socket"):
            with self.subTest(url=url):
                with self.assertRaises(FatalError) as cm:
                    self.ctx.http.get(url)
                scheme = url.split(":")[0]
                self.assertEqual(
                    str(cm.exception),
                    f"HTTP request refused: the scheme `{scheme}:` is not http or https; "
                    "only HTTP requests leave the sandbox",
                )
                self.assertEqual(cm.exception.refusal.kind, "scheme")
        self.assertEqual(self.replies, [], "nothing reached the HTTP handler")

    def test_decode_error(self):
        self.replies.append((200, {}, "not json"))
        with self.assertRaises(HttpError) as cm:
            self.ctx.http.get("https://h/").json()
        self.assertEqual(cm.exception.kind, "decode")


class ResponseTest(unittest.TestCase):
    def test_headers_are_case_insensitive(self):
        h = Headers([("Set-Cookie", b"a=1"), ("set-cookie", b"b=2"), ("X-Id", b"7")])
        self.assertEqual(h["set-cookie"], "a=1, b=2")
        self.assertEqual(h.get_all("SET-COOKIE"), ["a=1", "b=2"])
        self.assertEqual(h.get("x-id"), "7")
        self.assertIsNone(h.get("nope"))
        self.assertEqual(sorted(h), ["set-cookie", "x-id"])
        self.assertEqual(len(h), 2)
        self.assertIn("X-ID", h)

    def test_text(self):
        r = Response(200, [], "héllo".encode() + b"\xff")
        self.assertEqual(r.text, "héllo\ufffd")


if __name__ == "__main__":
    unittest.main()
