import enum
import unittest
from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Optional, Tuple, TypedDict, Union

from airlock_sdk import FatalError, decode, event_payload, to_json
from airlock_sdk.codec import DecodeError, decode_value, validate_type


@dataclass
class Line:
    sku: str
    qty: int = 1


@dataclass
class Order:
    order_id: str
    amount: float
    lines: List[Line] = field(default_factory=list)
    note: Optional[str] = None
    tx: str = field(default="", metadata={"json": "txId"})


class Address(TypedDict, total=False):
    city: str


class Customer(TypedDict):
    name: str
    tags: List[str]
    address: Address


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class DecodeTest(unittest.TestCase):
    def test_dataclass_from_camel_or_snake_keys(self):
        o = decode_value({"orderId": "o1", "amount": 5, "lines": [{"sku": "a"}], "txId": "t"}, Order)
        self.assertEqual(o, Order("o1", 5.0, [Line("a", 1)], None, "t"))
        self.assertIsInstance(o.amount, float)  # an integer fits a float, as f64 in Rust
        o = decode_value({"order_id": "o2", "amount": 1.5, "extra": True}, Order)
        self.assertEqual(o.order_id, "o2")

    def test_errors_name_the_field(self):
        cases = [
            ({"orderId": "o1", "amount": "x"}, "amount", 'invalid type: string "x", expected a number'),
            ({"orderId": "o1", "amount": 1, "lines": [{"sku": "a"}, {"sku": 3}]}, "lines[1].sku",
             "invalid type: integer `3`, expected a string"),
            ({"orderId": "o1", "amount": 1, "lines": [{"qty": 2}]}, "lines[0]", "missing field `sku`"),
            ({"orderId": "o1", "amount": True}, "amount", "invalid type: boolean `true`, expected a number"),
            ({"orderId": None, "amount": 1}, "orderId", "invalid type: null, expected a string"),
        ]
        for value, path, reason in cases:
            with self.subTest(path=path):
                with self.assertRaises(DecodeError) as cm:
                    decode_value(value, Order)
                self.assertEqual((cm.exception.path, cm.exception.reason), (path, reason))
                self.assertEqual(cm.exception.describe(), f"invalid job data at field `{path}`: {reason}")

    def test_missing_top_level_field(self):
        with self.assertRaises(DecodeError) as cm:
            decode_value({"amount": 1}, Order)
        self.assertEqual(cm.exception.describe(), "invalid job data: missing field `orderId`")
        with self.assertRaises(DecodeError) as cm:
            decode_value("nope", Order)
        self.assertEqual(cm.exception.describe(),
                         'invalid job data: invalid type: string "nope", expected an object (Order)')

    def test_typeddict(self):
        value = {"name": "n", "tags": ["a"], "address": {}, "more": 1}
        self.assertEqual(decode_value(value, Customer), value)
        with self.assertRaises(DecodeError) as cm:
            decode_value({"name": "n", "tags": ["a", 2], "address": {}}, Customer)
        self.assertEqual(cm.exception.path, "tags[1]")
        with self.assertRaises(DecodeError) as cm:
            decode_value({"name": "n", "tags": []}, Customer)
        self.assertEqual(cm.exception.reason, "missing field `address`")
        with self.assertRaises(DecodeError) as cm:
            decode_value({"name": "n", "tags": [], "address": {"city": 1}}, Customer)
        self.assertEqual(cm.exception.path, "address.city")

    def test_scalars_unions_literals(self):
        self.assertEqual(decode_value(3, int), 3)
        self.assertEqual(decode_value(3.0, int), 3)
        with self.assertRaises(DecodeError):
            decode_value(3.5, int)
        with self.assertRaises(DecodeError):
            decode_value(True, int)
        self.assertIsNone(decode_value(None, Optional[int]))
        self.assertEqual(decode_value("a", Union[int, str]), "a")
        self.assertEqual(decode_value("a", Literal["a", "b"]), "a")
        with self.assertRaises(DecodeError) as cm:
            decode_value("c", Literal["a", "b"])
        self.assertEqual(cm.exception.reason, 'invalid value: string "c", expected one of "a", "b"')
        self.assertEqual(decode_value("red", Color), Color.RED)
        self.assertEqual(decode_value([1, "x"], Tuple[int, str]), (1, "x"))
        self.assertEqual(decode_value({"a": [1]}, Dict[str, List[int]]), {"a": [1]})
        self.assertEqual(decode_value({"any": object}, Any), {"any": object})

    def test_public_decode_is_fatal(self):
        with self.assertRaises(FatalError) as cm:
            decode({"sku": 1}, Line)
        self.assertEqual(str(cm.exception), "invalid job data at field `sku`: invalid type: integer `1`, expected a string")

    def test_validate_type_refuses_what_cannot_be_decoded(self):
        validate_type(Order)
        validate_type(Customer)
        validate_type(Optional[List[Dict[str, Line]]])
        with self.assertRaises(TypeError):
            validate_type(set)
        with self.assertRaises(TypeError):
            validate_type(List[bytes])


class EventPayloadTest(unittest.TestCase):
    def test_events_are_unwrapped(self):
        self.assertEqual(event_payload({"name": "user.signup", "data": {"id": 1}, "id": "ev_1", "ts": 17}), {"id": 1})
        self.assertIsNone(event_payload({"name": "x", "data": None, "id": "ev", "ts": 0}))

    def test_other_values_pass_through(self):
        for value in (
            {"name": "x", "id": "ev", "ts": 1},  # no data
            {"name": "x", "data": 1, "id": 5, "ts": 1},  # id not a string
            {"name": "x", "data": 1, "id": "ev", "ts": -1},  # ts not u64
            {"name": "x", "data": 1, "id": "ev", "ts": 1.5},
            {"name": "x", "data": 1, "id": "ev", "ts": True},
            [1, 2],
            "text",
        ):
            with self.subTest(value=value):
                self.assertEqual(event_payload(value), value)


class ToJsonTest(unittest.TestCase):
    def test_compact_and_ordered(self):
        self.assertEqual(to_json({"processed": True, "ledgerRecordId": "led_tx_1"}),
                         '{"processed":true,"ledgerRecordId":"led_tx_1"}')
        self.assertEqual(to_json(None), "null")
        self.assertEqual(to_json({}), "{}")
        self.assertEqual(to_json("é"), '"é"')
        self.assertEqual(to_json(42.5), "42.5")

    def test_dataclasses_enums_tuples(self):
        self.assertEqual(to_json(Order("o1", 2.0, [Line("a")], tx="t")),
                         '{"order_id":"o1","amount":2.0,"lines":[{"sku":"a","qty":1}],"note":null,"txId":"t"}')
        self.assertEqual(to_json([Color.BLUE, (1, 2)]), '["blue",[1,2]]')

    def test_refusals(self):
        for bad in (float("nan"), {1, 2}, b"x", object()):
            with self.subTest(bad=bad):
                with self.assertRaises((TypeError, ValueError)):
                    to_json(bad)


if __name__ == "__main__":
    unittest.main()
