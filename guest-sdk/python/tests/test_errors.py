import unittest

from airlock_sdk import FatalError, HostError, HttpError, RetryError
from airlock_sdk.errors import job_error
from airlock_sdk.http import error_from_code, error_from_stream_text


class JobErrorTest(unittest.TestCase):
    def test_sdk_errors(self):
        self.assertEqual(job_error(FatalError("Invalid transaction amount")), ("fatal", "Invalid transaction amount"))
        self.assertEqual(job_error(RetryError("later")), ("retry", "later"))

    def test_any_other_exception_is_retryable_with_its_type(self):
        self.assertEqual(job_error(ValueError("bad")), ("retry", "ValueError: bad"))
        self.assertEqual(job_error(KeyError("id")), ("retry", "KeyError: 'id'"))
        self.assertEqual(job_error(RuntimeError()), ("retry", "RuntimeError"))

    def test_host_errors_word_like_the_rust_sdk(self):
        cases = [
            ("unavailable", "retry", "kv get: redis is down"),
            ("unsupported", "fatal", "kv get unsupported: redis is down"),
            ("invalid", "fatal", "kv get refused: redis is down"),
            ("limit-exceeded", "fatal", "kv get: limit exceeded: redis is down"),
        ]
        for kind, verdict, message in cases:
            with self.subTest(kind=kind):
                e = HostError(kind, "redis is down", "kv get")
                self.assertEqual(e.kind, kind)
                self.assertEqual(job_error(e), (verdict, message))
                self.assertEqual(str(e), message)
        with self.assertRaises(ValueError):
            HostError("nope", "x")

    def test_http_errors(self):
        self.assertEqual(job_error(HttpError("transport", "ErrorCode::ConnectionRefused")),
                         ("retry", "HTTP transport: ErrorCode::ConnectionRefused"))
        self.assertEqual(job_error(HttpError("denied", "no"))[0], "fatal")
        self.assertEqual(job_error(HttpError("limit", "big"))[0], "fatal")
        self.assertEqual(job_error(HttpError("invalid", "url"))[0], "fatal")
        self.assertEqual(job_error(HttpError("decode", "x")), ("fatal", "response body: x"))
        for status, verdict in ((500, "retry"), (503, "retry"), (408, "retry"), (429, "retry"),
                                (404, "fatal"), (400, "fatal"), (401, "fatal")):
            with self.subTest(status=status):
                e = HttpError("status", "body", status=status)
                self.assertEqual(job_error(e), (verdict, f"HTTP status {status}: body"))
                self.assertEqual(e.status, status)

    def test_error_codes(self):
        denied = error_from_code("HttpRequestDenied")
        self.assertEqual(denied.kind, "denied")
        self.assertIn("egress rules", denied.message)
        self.assertEqual(error_from_code("DestinationIpProhibited").kind, "denied")
        limit = error_from_code("HttpResponseBodySize", 1024)
        self.assertEqual((limit.kind, limit.message),
                         ("limit", "HTTP limit: response body larger than the job's limit of 1024 bytes"))
        self.assertEqual(error_from_code("HttpRequestBodySize").message,
                         "HTTP limit: request body larger than the job's limit")
        refused = error_from_code("ConnectionRefused")
        self.assertEqual((refused.kind, refused.retryable), ("transport", True))
        self.assertEqual(refused.message, "HTTP transport: ErrorCode::ConnectionRefused")

    def test_stream_errors(self):
        e = error_from_stream_text("response body", "body size exceeds limit\nstack backtrace: ...")
        self.assertEqual((e.kind, e.message), ("limit", "HTTP limit: response body: body size exceeds limit"))
        e = error_from_stream_text("request body", "connection reset\n...")
        self.assertEqual(e.kind, "transport")


if __name__ == "__main__":
    unittest.main()
