"""The Python examples against the SDK's fake host, under plain CPython
(no component, no host): ``python3 -m unittest discover -s jobs/python``.
The built components are checked with ``airlock run`` (see README.md)."""

import importlib.util
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "guest-sdk" / "python" / "src"))

from airlock_sdk import Failed, HttpError, HttpRefusal  # noqa: E402
from airlock_sdk.testing import FakeHost, run, run_batch  # noqa: E402


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name.replace('-', '_')}", HERE / name / "app.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


payment = load("payment-webhook")
order = load("order-workflow")
noop = load("noop")
refund = load("refund-request")
bulk = load("bulk-insert")


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


class BulkInsertTest(unittest.TestCase):
    """A batch handler: ``run_batch`` runs a batch as the host's ``run-batch``
    does (one outcome per job), ``run`` as its ``run`` export (a batch of one)."""

    BATCH = [
        {"transactionId": "tx_1", "amount": 42.5, "currency": "EUR"},
        {"transactionId": "tx_2", "amount": 0},
        {"transactionId": "tx_3", "amount": 7},
    ]

    @staticmethod
    def ledger(requests):
        def answer(request):
            requests.append(request)
            return (201, {"content-type": "application/json"},
                    {"ids": [f"led_remote_{e['transactionId']}" for e in request.json()["entries"]]})
        return answer

    def test_records_a_batch_locally(self):
        outcomes = run_batch(bulk.insert, self.BATCH)
        self.assertEqual([(o.status, o.value, o.message) for o in outcomes], [
            ("completed", {"processed": True, "ledgerRecordId": "led_tx_1", "batchSize": 3}, None),
            ("fatal", None, "Invalid transaction amount"),
            ("completed", {"processed": True, "ledgerRecordId": "led_tx_3", "batchSize": 3}, None),
        ])
        self.assertEqual(outcomes[0].output, '{"processed":true,"ledgerRecordId":"led_tx_1","batchSize":3}')
        host = outcomes[0].host
        self.assertEqual(host.logs, [("info", "recording 2 of 3 payments")])
        self.assertEqual(host.progress, [100])
        self.assertEqual(host.requests, [])

    def test_bad_data_fails_its_job_alone(self):
        outcomes = run_batch(bulk.insert, [{"transactionId": "tx_1", "amount": 1}, {"amount": 2},
                                           {"transactionId": "tx_3", "amount": -1}])
        self.assertEqual([(o.status, o.message) for o in outcomes], [
            ("completed", None),
            ("fatal", "invalid job data: missing field `transactionId`"),
            ("fatal", "Invalid transaction amount"),
        ])
        self.assertEqual(outcomes[0].value["batchSize"], 2)  # the handler got two jobs
        self.assertEqual(outcomes[0].logs, [("info", "recording 1 of 2 payments")])

    def test_records_the_batch_in_one_request(self):
        requests = []
        host = FakeHost(config={"LEDGER_URL": "http://ledger.test/"}, http=self.ledger(requests))
        outcomes = run_batch(bulk.insert, self.BATCH, host=host)
        self.assertEqual([o.value for o in outcomes], [
            {"processed": True, "ledgerRecordId": "led_remote_tx_1", "batchSize": 3},
            None,
            {"processed": True, "ledgerRecordId": "led_remote_tx_3", "batchSize": 3},
        ])
        (request,) = requests
        self.assertEqual((request.method, request.url), ("POST", "http://ledger.test/v1/ledger/bulk"))
        self.assertEqual(request.json(), {"entries": [
            {"transactionId": "tx_1", "amount": 42.5, "currency": "EUR"},
            {"transactionId": "tx_3", "amount": 7.0, "currency": None},
        ]})

    def test_nothing_valid_sends_nothing(self):
        host = FakeHost(config={"LEDGER_URL": "http://ledger.test"}, http=lambda r: self.fail("no request"))
        outcomes = run_batch(bulk.insert, [{"transactionId": "tx_1", "amount": 0}], host=host)
        self.assertEqual([(o.status, o.message) for o in outcomes], [("fatal", "Invalid transaction amount")])

    def test_a_failed_request_fails_every_job(self):
        host = FakeHost(config={"LEDGER_URL": "http://ledger.test"}, http=lambda r: (503, {}, "busy"))
        outcomes = run_batch(bulk.insert, self.BATCH, host=host)
        self.assertEqual([(o.status, o.message) for o in outcomes], [("retry", "HTTP status 503: busy")] * 3)
        host = FakeHost(config={"LEDGER_URL": "http://ledger.test"},
                        http=lambda r: HttpError("transport", "ErrorCode::ConnectionRefused"))
        self.assertEqual({o.status for o in run_batch(bulk.insert, self.BATCH, host=host)}, {"retry"})
        host = FakeHost(config={"LEDGER_URL": "http://ledger.test"}, http=lambda r: (201, {}, {"ids": ["one"]}))
        outcomes = run_batch(bulk.insert, self.BATCH, host=host)
        self.assertEqual([(o.status, o.message) for o in outcomes],
                         [("retry", "the ledger answered 1 ids for 2 entries")] * 3)
        host = FakeHost(config={"LEDGER_URL": "http://ledger.test"}, http=lambda r: (201, {}, {"nope": 1}))
        outcomes = run_batch(bulk.insert, self.BATCH, host=host)
        self.assertEqual([(o.status, o.message) for o in outcomes],
                         [("fatal", "response body: missing field `ids`")] * 3)
        # Refused by the binding's egress: fatal for all, with the host's reason.
        outcomes = run_batch(bulk.insert, self.BATCH, host=FakeHost(config={"LEDGER_URL": "http://ledger.test"}))
        self.assertEqual({(o.status, o.message) for o in outcomes},
                         {("fatal", "HTTP request refused: ledger.test:80 is not in this queue's egress list")})

    def test_one_job_is_a_batch_of_one(self):
        requests = []
        host = FakeHost(config={"LEDGER_URL": "http://ledger.test"}, http=self.ledger(requests))
        out = run(bulk.insert, self.BATCH[0], host=host)
        self.assertEqual(out.output, '{"processed":true,"ledgerRecordId":"led_remote_tx_1","batchSize":1}')
        self.assertEqual(len(requests), 1)
        out = run(bulk.insert, self.BATCH[1])
        self.assertEqual((out.status, out.message), ("fatal", "Invalid transaction amount"))


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

    def test_a_charge_job_is_the_payment_handler(self):
        host = FakeHost()
        out = run(order.run, {"orderId": "o1", "amount": 99.5}, host=host, name="charge", queue="charges")
        self.assertEqual(out.output, '{"chargeId":"ch_o1","amount":99.5}')
        self.assertEqual(host.step_order, ["charge-payment"])
        self.assertEqual(host.kv, {"charges:o1": "1"})
        self.assertEqual(host.logs, [("info", "charging order o1 for 99.5")])
        self.assertEqual(host.progress, [])
        # Retried or redelivered: the charge replays.
        self.assertEqual(run(order.run, {"orderId": "o1", "amount": 99.5}, host=host, name="charge").output,
                         out.output)
        self.assertEqual(host.kv, {"charges:o1": "1"})

    def test_charge_queue_invokes_the_payment_handler(self):
        charges = FakeHost()  # the payment handler's own host (its own KV)

        def charge(job):
            self.assertEqual((job.queue, job.name, job.data), ("charges", "charge", {"orderId": "o1", "amount": 99.5}))
            paid = run(order.run, job.data, host=charges, name=job.name, queue=job.queue)
            return paid.value

        host = FakeHost(answer_child=charge, starts={"queues": ["charges"]})
        data = {**self.ORDER, "chargeQueue": "charges"}
        out = run(order.run, data, host=host, queue="orders")
        self.assertEqual(out.output, '{"status":"completed","orderId":"o1","chargeId":"ch_o1","reviewRequested":true}')
        self.assertEqual(out.runs, 3)  # parked at the invoke, then at the sleep
        self.assertEqual([(j.queue, j.name, j.invoked) for j in host.jobs], [("charges", "charge", True)])
        self.assertEqual(host.step_order, ["verify-fraud-risk", "send-customer-review-request"])
        self.assertEqual(list(host.invokes), ["charge-payment"])
        self.assertEqual(host.kv, {}, "the order charged nothing itself")
        self.assertEqual(charges.kv, {"charges:o1": "1"})
        self.assertEqual(charges.step_order, ["charge-payment"])
        # The same job again: the invoke's end replays, nothing is charged twice.
        self.assertEqual(run(order.run, data, host=host, queue="orders").output, out.output)
        self.assertEqual(len(host.jobs), 1)
        self.assertEqual(charges.kv, {"charges:o1": "1"})

    def test_a_failed_charge_fails_the_order_fatally(self):
        declined = lambda job: Failed("card declined", kind="guest_fatal", attempts=1)  # noqa: E731
        host = FakeHost(answer_child=declined)
        out = run(order.run, {**self.ORDER, "chargeQueue": "charges"}, host=host)
        self.assertEqual((out.status, out.message), (
            "fatal", "the charge failed: the invoked job failed for good after 1 attempt(s): "
                     "guest_fatal: card declined"))
        self.assertEqual(host.step_order, ["verify-fraud-risk"])
        self.assertEqual(host.sleeps, {})
        # A charges queue the binding does not allow fails the order at once.
        out = run(order.run, {**self.ORDER, "chargeQueue": "charges"}, host=FakeHost(starts={"queues": []}),
                  queue="orders")
        self.assertEqual((out.status, out.message), (
            "fatal", "refused: queue `charges` is not in the `starts.queues` of queue `orders`'s binding"))

    def test_charge_queue_parks_the_order_until_the_charge_ended(self):
        host = FakeHost()
        data = {**self.ORDER, "chargeQueue": "charges"}
        out = run(order.run, data, host=host)
        self.assertEqual((out.status, out.wait_id), ("suspended", "charge-payment"))
        self.assertEqual(host.progress, [])
        host.complete_child("charge-payment", {"chargeId": "ch_remote", "amount": 99.5})
        out = run(order.run, data, host=host)
        self.assertEqual(out.value["chargeId"], "ch_remote")

    def test_notify_event(self):
        host = FakeHost(starts={"events": ["order.*"]})
        data = {**self.ORDER, "notifyEvent": "order.reviewed"}
        out = run(order.run, data, host=host)
        (event,) = host.sent_events
        self.assertEqual((event["name"], event["data"]), ("order.reviewed", {"orderId": "o1", "chargeId": "ch_o1"}))
        self.assertEqual(out.value, {"status": "completed", "orderId": "o1", "chargeId": "ch_o1",
                                     "reviewRequested": True, "notified": event["id"]})
        self.assertEqual(list(out.value), ["status", "orderId", "chargeId", "reviewRequested", "notified"])
        self.assertEqual(host.step_order,
                         ["verify-fraud-risk", "charge-payment", "send-customer-review-request", "notify"])
        # Sent once: a replay gets the recorded id.
        self.assertEqual(run(order.run, data, host=host).value["notified"], event["id"])
        self.assertEqual(len(host.sent_events), 1)
        # An event the binding does not allow fails the order.
        out = run(order.run, {**self.ORDER, "notifyEvent": "user.created"}, host=FakeHost(starts={"events": ["order.*"]}))
        self.assertEqual((out.status, out.message), (
            "fatal", "refused: event `user.created` is not in the `starts.events` of queue `test`'s binding"))
        out = run(order.run, {**self.ORDER, "notifyEvent": 5})
        self.assertEqual(out.status, "fatal")


def approvals(**kwargs):
    """A host whose binding sends approval requests to a service that
    accepts them."""
    return FakeHost(config={"APPROVAL_URL": "http://approvals.test/"},
                    http=lambda request: (201, {}, {"id": "apr_1"}), **kwargs)


class RefundRequestTest(unittest.TestCase):
    REFUND = {"refundId": "r1", "orderId": "o1", "amount": 25.0}

    def approve(self, host, decision):
        """Runs to the approval wait and completes its token with ``decision``."""
        out = run(refund.run, self.REFUND, host=host)
        self.assertEqual((out.status, out.wait_id), ("suspended", "approval"))
        # The token went to the approval service, and only there: not into
        # the progress, a log or a step's result, which readers see.
        (request,) = host.requests
        self.assertEqual((request.method, request.url), ("POST", "http://approvals.test/v1/approvals"))
        token = host.tokens["approval"]
        self.assertEqual(request.json(), {"refundId": "r1", "orderId": "o1", "amount": 25.0, "token": token})
        self.assertEqual(host.progress, [{"stage": "awaiting-approval"}])
        self.assertEqual(host.steps["ask-approval"], "true")
        self.assertNotIn(token, repr((host.progress, host.logs, host.steps)))
        self.assertTrue(host.complete_token(token, decision))
        return token

    def test_needs_an_approval_service(self):
        out = run(refund.run, self.REFUND)
        self.assertEqual((out.status, out.message), (
            "fatal", "the queue binding's config has no `APPROVAL_URL` (where to ask for the approval)"))
        host = FakeHost(config={"APPROVAL_URL": "http://approvals.test"}, http=lambda r: (503, {}, "busy"))
        out = run(refund.run, self.REFUND, host=host)
        self.assertEqual((out.status, out.message), ("retry", "HTTP status 503: busy"))
        self.assertNotIn("ask-approval", host.steps)

    def test_approved_and_settled(self):
        host = approvals()
        self.approve(host, {"approved": True, "by": "ann"})
        out = run(refund.run, self.REFUND, host=host)
        self.assertEqual((out.status, out.wait_id), ("suspended", "settlement"))
        self.assertEqual(host.progress[-1], {"stage": "awaiting-settlement"})
        self.assertEqual(host.waits["settlement"].match, ("$.refundId", '"r1"'))
        self.assertEqual(host.waits["settlement"].timeout_ms, 7 * 24 * 3600 * 1000)
        self.assertEqual(host.waits["approval"].timeout_ms, 3 * 24 * 3600 * 1000)
        host.send_event("refund.settled", {"refundId": "r2"}, id="evt_other")  # another refund's
        host.send_event("order.paid", {"refundId": "r1"}, id="evt_paid")  # another event
        self.assertEqual(run(refund.run, self.REFUND, host=host).status, "suspended")
        host.send_event("refund.settled", {"refundId": "r1", "provider": "psp"}, id="evt_1")
        out = run(refund.run, self.REFUND, host=host)
        self.assertEqual(out.output, '{"status":"settled","refundId":"r1","approvedBy":"ann",'
                                     '"refundRef":"rf_r1","settlement":"evt_1"}')
        self.assertEqual(host.step_order, ["open-refund", "ask-approval", "issue-refund"])
        self.assertEqual(host.steps["issue-refund"], '"rf_r1"')
        self.assertEqual(host.kv, {"refunds:r1": "1"})
        self.assertEqual(host.logs, [("info", "refund r1 of 25 for order o1 opened")])
        self.assertEqual(host.progress[-2:], [{"stage": "awaiting-approval"}, {"stage": "awaiting-settlement"}])
        self.assertEqual(len(host.requests), 1, "the approval is asked for once")
        # The same job again: every step and wait replays, nothing is issued
        # or asked for twice.
        again = run(refund.run, self.REFUND, host=host)
        self.assertEqual(again.output, out.output)
        self.assertEqual(host.kv, {"refunds:r1": "1"})
        self.assertEqual(len(host.requests), 1)

    def test_event_that_came_before_the_wait(self):
        # An event sent while the job still ran, before it parked, is kept
        # for the wait (the host records it as the wait's outcome).
        host = approvals()
        host.complete_wait("settlement", {"name": "refund.settled", "data": {"refundId": "r1"},
                                          "id": "evt_early", "ts": 1})
        self.approve(host, {"approved": True})
        out = run(refund.run, {**self.REFUND, "pauseBeforeSettleMs": 5}, host=host)
        self.assertEqual(out.output, '{"status":"settled","refundId":"r1","refundRef":"rf_r1","settlement":"evt_early"}')

    def test_rejected(self):
        host = approvals()
        self.approve(host, {"approved": False, "by": "bob"})
        out = run(refund.run, self.REFUND, host=host)
        self.assertEqual(out.output, '{"status":"rejected","refundId":"r1","approvedBy":"bob"}')
        self.assertEqual(host.step_order, ["open-refund", "ask-approval"])
        self.assertEqual(host.kv, {})
        self.assertNotIn("settlement", host.waits)
        host = approvals()
        self.approve(host, {"approved": False})
        self.assertEqual(run(refund.run, self.REFUND, host=host).output,
                         '{"status":"rejected","refundId":"r1"}')

    def test_approval_timeout(self):
        host = approvals()
        out = run(refund.run, {**self.REFUND, "approvalTimeoutMs": 0}, host=host)
        self.assertEqual(out.output, '{"status":"expired","refundId":"r1"}')
        self.assertEqual(host.waits["approval"].timeout_ms, 0)
        self.assertEqual(host.step_order, ["open-refund", "ask-approval"])
        self.assertEqual(host.kv, {})
        # The token is used up: a late decision is refused.
        self.assertFalse(host.complete_token(host.tokens["approval"], {"approved": True}))
        # The default 3 days, fast-forwarded.
        out = run(refund.run, self.REFUND, host=approvals(), skip_waits=True)
        self.assertEqual((out.output, out.runs), ('{"status":"expired","refundId":"r1"}', 2))

    def test_settlement_timeout(self):
        host = approvals()
        self.approve(host, {"approved": True, "by": "ann"})
        out = run(refund.run, {**self.REFUND, "settleTimeoutMs": 0}, host=host)
        self.assertEqual(out.output, '{"status":"unsettled","refundId":"r1","approvedBy":"ann","refundRef":"rf_r1"}')
        self.assertEqual(host.kv, {"refunds:r1": "1"})
        self.assertEqual(host.wait_results["settlement"], None)

    def test_bad_input_and_decisions_are_fatal(self):
        cases = [
            ({"orderId": "o1", "amount": 1}, "invalid job data: missing field `refundId`"),
            ({**self.REFUND, "amount": 0}, "refund amount must be positive"),
            ({**self.REFUND, "amount": "x"},
             "invalid job data at field `amount`: invalid type: string \"x\", expected a number"),
            ({**self.REFUND, "settleTimeoutMs": -1},
             "invalid job data at field `settleTimeoutMs`: invalid value: integer `-1`, expected u64"),
            ({**self.REFUND, "pauseBeforeSettleMs": -5},
             "invalid job data at field `pauseBeforeSettleMs`: invalid value: integer `-5`, expected u64"),
        ]
        for data, message in cases:
            host = approvals()
            out = run(refund.run, data, host=host)
            self.assertEqual((out.status, out.message), ("fatal", message))
            self.assertEqual(host.steps, {})
        host = approvals()
        self.approve(host, {"approved": "yes"})
        out = run(refund.run, self.REFUND, host=host)
        self.assertEqual(out.status, "fatal")
        self.assertTrue(out.message.startswith("the result of wait `approval` does not fit its type: "), out.message)

    def test_counter_survives_garbage(self):
        host = approvals(kv={"refunds:r1": "many"})
        host.complete_wait("approval", {"approved": True})
        host.time_out_wait("settlement")
        self.assertEqual(run(refund.run, self.REFUND, host=host).value["status"], "unsettled")
        self.assertEqual(host.kv["refunds:r1"], "1")


class NoopTest(unittest.TestCase):
    def test_returns_an_empty_object(self):
        self.assertEqual(run(noop.run, {"anything": 1}).output, "{}")


class WarmProbeTest(unittest.TestCase):
    """One loaded module is one instance: ``run`` again on it is what a warm
    instance does (``testing.run`` gives each job a fresh host)."""

    def setUp(self):
        self.probe = load("warm-probe")  # a fresh module: a fresh instance

    def test_a_fresh_instance_has_seen_nothing(self):
        self.assertEqual(run(self.probe.run, {"tag": "a"}).value, {"seen": [], "count": 0})

    def test_a_reused_instance_reports_the_jobs_before(self):
        first = run(self.probe.run, {"tag": "a"})
        second = run(self.probe.run, {"tag": "b", "mode": "keep-ctx"})
        third = run(self.probe.run, {"tag": "c"})
        ids = [o.value["seen"][i]["id"] for o, i in ((second, 0), (third, 1))]
        self.assertEqual(first.value, {"seen": [], "count": 0})
        self.assertEqual(second.value, {"seen": [{"id": ids[0], "tag": "a"}], "count": 1})
        self.assertEqual(third.value["seen"], [{"id": ids[0], "tag": "a"}, {"id": ids[1], "tag": "b"}])
        self.assertEqual(third.value["count"], 2)
        self.assertRegex(third.value["staleCtx"],
                         r"^threw: this job \(.+\) has ended; ctx cannot be used after the handler returned \(ctx\.log: ")
        self.assertEqual(third.logs, [], "the stale ctx reached no host")
        self.assertEqual(second.logs, [])

    def test_modes(self):
        out = run(self.probe.run, {"tag": "a", "mode": "retry"})
        self.assertEqual((out.status, out.message), ("retry", "warm-probe: asked to fail"))
        self.assertEqual(run(self.probe.run, {"tag": "b", "mode": "grow"}).value["count"], 1)
        self.assertEqual(len(self.probe.hoard), 1)
        self.assertEqual(len(self.probe.hoard[0]), 1 << 20)
        out = run(self.probe.run, {"mode": "grow"})
        self.assertEqual((out.status, out.message), ("fatal", "invalid job data: missing field `tag`"))


class HttpRefusalProbeTest(unittest.TestCase):
    def setUp(self):
        self.probe = load("http-refusal-probe")

    def test_fetches_and_reads(self):
        host = FakeHost(http=lambda r: (200, {}, "héllo"))
        self.assertEqual(run(self.probe.run, {"url": "https://h/", "read": True}, host=host).value,
                         {"status": 200, "bytes": 6})
        self.assertEqual(run(self.probe.run, {"url": "https://h/", "via": "global"}, host=host).value,
                         {"status": 200, "bytes": 0})

    def test_a_refusal_fails_the_job_fatally_with_the_reason(self):
        out = run(self.probe.run, {"url": "https://api.example.com/v1?x=1"})
        self.assertEqual((out.status, out.message),
                         ("fatal", "HTTP request refused: api.example.com:443 is not in this queue's egress list"))
        cap = "the response body went over maxHttpResponseBytes (65536 bytes)"
        host = FakeHost(http=lambda r: HttpRefusal("response-too-large", r.url, cap))
        out = run(self.probe.run, {"url": "https://h/big", "read": True}, host=host)
        self.assertEqual((out.status, out.message), ("fatal", f"HTTP request refused: {cap}"))

    def test_a_network_error_is_retried(self):
        host = FakeHost(http=lambda r: HttpError("transport", "ErrorCode::ConnectionRefused"))
        out = run(self.probe.run, {"url": "https://h/"}, host=host)
        self.assertEqual((out.status, out.message), ("retry", "HTTP transport: ErrorCode::ConnectionRefused"))


if __name__ == "__main__":
    unittest.main()
