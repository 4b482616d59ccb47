"""Tests of the handler under plain CPython, against the SDK's fake host:
``.venv/bin/python -m unittest`` (after ``./build.sh`` made .venv)."""

import unittest

from airlock_sdk.testing import FakeHost, run

import app


class AppTest(unittest.TestCase):
    def test_charges_once(self):
        host = FakeHost()
        out = run(app.run, {"orderId": "o1", "amount": 42.5}, host=host)
        self.assertEqual(out.value, {"orderId": "o1", "chargeId": "ch_o1"})
        self.assertEqual(host.logs, [("info", "charging o1 for 42.5")])
        # A retry of the same job replays the recorded step.
        run(app.run, {"orderId": "o1", "amount": 42.5}, host=host)
        self.assertEqual(len(host.logs), 1)

    def test_bad_amount_is_fatal(self):
        out = run(app.run, {"orderId": "o1", "amount": 0})
        self.assertEqual((out.status, out.message), ("fatal", "amount must be positive"))


if __name__ == "__main__":
    unittest.main()
