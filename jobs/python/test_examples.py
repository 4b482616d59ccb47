"""The Python examples against the SDK's fake host, under plain CPython
(no component, no host): ``python3 -m unittest discover -s jobs/python``.
The built components are checked with ``airlock run`` (see README.md)."""

import importlib.util
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "guest-sdk" / "python" / "src"))

from airlock_sdk import HttpError  # noqa: E402
from airlock_sdk.testing import FakeHost, run  # noqa: E402


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name.replace('-', '_')}", HERE / name / "app.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


payment = load("payment-webhook")
order = load("order-workflow")
noop = load("noop")


class PaymentWebhookTest(unittest.TestCase):
    def test_processes_a_payment(self):
        out = run(payment.run, {"transactionId": "tx_1", "amount": 42.5, "currency": "EUR"})
        self.assertEqual(out.output, '{"processed":true,"ledgerRecordId":"led_tx_1"}')
        self.assertEqual(out.progress, [10, 50, 100])
        self.assertEqual(out.logs, [("info", "processing transaction tx_1 for 42.5 EUR"),
                                    ("info", "recorded ledger entry led_tx_1")])

    def test_integral_amounts_and_default_currency_log_like_rust(self):
        out = run(payment.run, {"transactionId": "tx_2", "amount": 100})
        self.assertEqual(out.logs[0], ("info", "processing transaction tx_2 for 100 USD"))

    def test_invalid_amount_is_fatal(self):
        for amount in (0, -5):
            out = run(payment.run, {"transactionId": "tx_1", "amount": amount})
            self.assertEqual((out.status, out.message), ("fatal", "Invalid transaction amount"))
            self.assertEqual(out.progress, [10])

    def test_records_in_the_ledger(self):
        host = FakeHost(config={"LEDGER_URL": "http://ledger.test/"},
                        http=lambda request: (201, {"content-type": "application/json"}, {"id": "led_remote"}))
        out = run(payment.run, {"transactionId": "tx_1", "amount": 42.5}, host=host)
        self.assertEqual(out.value, {"processed": True, "ledgerRecordId": "led_remote"})
        (request,) = host.requests
        self.assertEqual((request.method, request.url), ("POST", "http://ledger.test/v1/ledger"))
        self.assertEqual(request.header("idempotency-key"), "tx_1")
        self.assertEqual(request.json(), {"transactionId": "tx_1", "amount": 42.5, "currency": "USD"})

    def test_ledger_failures(self):
        host = FakeHost(config={"LEDGER_URL": "http://ledger.test"}, http=lambda r: (503, {}, "busy"))
        out = run(payment.run, {"transactionId": "tx_1", "amount": 1}, host=host)
        self.assertEqual((out.status, out.message), ("retry", "HTTP status 503: busy"))
        host = FakeHost(config={"LEDGER_URL": "http://ledger.test"}, http=lambda r: (201, {}, {"nope": 1}))
        out = run(payment.run, {"transactionId": "tx_1", "amount": 1}, host=host)
        self.assertEqual((out.status, out.message), ("fatal", "response body: missing field `id`"))
        host = FakeHost(config={"LEDGER_URL": "http://ledger.test"},
                        http=lambda r: HttpError("transport", "ErrorCode::ConnectionRefused"))
        out = run(payment.run, {"transactionId": "tx_1", "amount": 1}, host=host)
        self.assertEqual(out.status, "retry")


class OrderWorkflowTest(unittest.TestCase):
    ORDER = {"orderId": "o1", "amount": 99.5, "customerEmail": "c@example.com"}

    def test_completes_and_charges_once(self):
        host = FakeHost()
        out = run(order.run, self.ORDER, host=host)
        self.assertEqual(out.output, '{"status":"completed","orderId":"o1","chargeId":"ch_o1","reviewRequested":true}')
        self.assertEqual(out.runs, 2)  # parked once at the sleep, then resumed
        self.assertEqual(host.step_order, ["verify-fraud-risk", "charge-payment", "send-customer-review-request"])
        self.assertEqual(list(host.sleeps), ["wait-before-review"])
        self.assertEqual(host.kv, {"charges:o1": "1"})
        self.assertEqual(host.steps["charge-payment"], '{"chargeId":"ch_o1","amount":99.5}')
        self.assertEqual(host.progress, [50, 50, 100])
        self.assertEqual([m for _, m in host.logs], [
            "order o1 risk score 1",
            "charging order o1 for 99.5",
            "review request for order o1 sent to c@example.com",
        ])
        # The same job again (a retry, a redelivery): every step replays.
        again = run(order.run, self.ORDER, host=host)
        self.assertEqual(again.output, out.output)
        self.assertEqual(host.kv, {"charges:o1": "1"})

    def test_review_delay(self):
        host = FakeHost()
        out = run(order.run, {**self.ORDER, "reviewDelayMs": 1500}, host=host, skip_sleeps=False)
        self.assertEqual(out.status, "suspended")
        self.assertEqual(host.step_order, ["verify-fraud-risk", "charge-payment"])

    def test_risky_order_is_flagged(self):
        host = FakeHost()
        out = run(order.run, {"orderId": "o2", "amount": 7000}, host=host)
        self.assertEqual(out.output, '{"status":"flagged_for_review","orderId":"o2","reviewRequested":false}')
        self.assertEqual(host.step_order, ["verify-fraud-risk", "flag-order-for-review"])
        self.assertEqual(host.logs[-1], ("warn", "order o2 flagged for manual review"))
        self.assertEqual(host.kv, {})

    def test_bad_orders_are_fatal(self):
        out = run(order.run, {"orderId": "o3", "amount": 0})
        self.assertEqual((out.status, out.message), ("fatal", "order amount must be positive"))
        out = run(order.run, {"orderId": "o3"})
        self.assertEqual((out.status, out.message), ("fatal", "invalid job data: missing field `amount`"))

    def test_counter_survives_garbage(self):
        host = FakeHost(kv={"charges:o4": "many"})
        run(order.run, {"orderId": "o4", "amount": 1}, host=host)
        self.assertEqual(host.kv["charges:o4"], "1")


class NoopTest(unittest.TestCase):
    def test_returns_an_empty_object(self):
        self.assertEqual(run(noop.run, {"anything": 1}).output, "{}")


if __name__ == "__main__":
    unittest.main()
