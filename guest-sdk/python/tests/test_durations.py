import unittest
from datetime import datetime, timedelta, timezone

from airlock_sdk.durations import duration_ms, instant_ms


class DurationTest(unittest.TestCase):
    def test_numbers_are_seconds(self):
        self.assertEqual(duration_ms(90), 90_000)
        self.assertEqual(duration_ms(1.5), 1_500)
        self.assertEqual(duration_ms(0), 0)

    def test_timedelta(self):
        self.assertEqual(duration_ms(timedelta(hours=24)), 86_400_000)
        self.assertEqual(duration_ms(timedelta(milliseconds=1500)), 1_500)

    def test_strings(self):
        cases = {
            "500ms": 500,
            "30s": 30_000,
            "15m": 900_000,
            "24h": 86_400_000,
            "2d": 172_800_000,
            "1w": 604_800_000,
            "1h30m": 5_400_000,
            "1d 12h": 129_600_000,
            "1.5h": 5_400_000,
            "10 minutes": 600_000,
            "45": 45_000,
            " 2H ": 7_200_000,
        }
        for text, ms in cases.items():
            with self.subTest(text=text):
                self.assertEqual(duration_ms(text), ms)

    def test_refusals(self):
        for bad in ("", "soon", "5 parsecs", "1h and", "-5s"):
            with self.subTest(bad=bad):
                with self.assertRaises(ValueError):
                    duration_ms(bad)
        with self.assertRaises(ValueError):
            duration_ms(-1)
        with self.assertRaises(ValueError):
            duration_ms(timedelta(seconds=-1))
        with self.assertRaises(ValueError):
            duration_ms(float("inf"))
        with self.assertRaises(TypeError):
            duration_ms(True)
        with self.assertRaises(TypeError):
            duration_ms([1])


class InstantTest(unittest.TestCase):
    def test_datetimes(self):
        aware = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
        self.assertEqual(instant_ms(aware), 1893553445000)
        self.assertEqual(instant_ms(aware.replace(tzinfo=None)), 1893553445000)  # naive is UTC
        plus_one = aware.astimezone(timezone(timedelta(hours=1)))
        self.assertEqual(instant_ms(plus_one), 1893553445000)

    def test_milliseconds(self):
        self.assertEqual(instant_ms(1_700_000_000_123), 1_700_000_000_123)
        self.assertEqual(instant_ms(-5), 0)  # before the epoch is 0, as in Rust

    def test_refusals(self):
        with self.assertRaises(TypeError):
            instant_ms("tomorrow")
        with self.assertRaises(TypeError):
            instant_ms(False)


if __name__ == "__main__":
    unittest.main()
