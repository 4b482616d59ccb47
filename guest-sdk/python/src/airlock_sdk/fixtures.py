"""Drives ``airlock test`` from ``python -m unittest``: the component under
test is the very ``.wasm`` you deploy; the fixtures are the JSON files
``airlock test`` reads (see the README, "Test a handler against fixtures").

It runs the component itself, in the Airlock sandbox: for unit tests of
the Python code under plain CPython, see :mod:`airlock_sdk.testing`. This
module runs on your machine, next to the tests, never inside a
component::

    from airlock_sdk.fixtures import FixtureTests

    class Payments(FixtureTests):
        component = "payment.wasm"
        fixtures = ["fixtures"]
"""

import json
import os
import subprocess
import unittest


def run_fixtures(component, fixtures, airlock=None):
    """Runs ``airlock test --json COMPONENT FIXTURES...``; its outcomes.

    ``airlock`` is the binary (default ``$AIRLOCK_BIN``, else ``airlock`` on
    the PATH). Raises ``RuntimeError`` when the command itself fails.
    """
    binary = airlock or os.environ.get("AIRLOCK_BIN") or "airlock"
    done = subprocess.run(
        [binary, "--json", "test", str(component), *map(str, fixtures)],
        capture_output=True,
        text=True,
        check=False,
    )
    # Exit 1 with the outcomes on stdout: some fixture failed.
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(
            f"airlock test exited {done.returncode}: {done.stderr.strip() or done.stdout.strip()}"
        ) from None


class FixtureTests(unittest.TestCase):
    """One test whose subtests are the fixtures: set ``component`` and
    ``fixtures`` (files or directories) in a subclass."""

    component = None
    fixtures = ()
    airlock = None

    def test_fixtures(self):
        if self.component is None:
            self.skipTest("no component: set `component` in a subclass")
        for outcome in run_fixtures(self.component, self.fixtures, self.airlock):
            with self.subTest(outcome["name"]):
                self.assertTrue(outcome["passed"], "\n".join(outcome["failures"]))
