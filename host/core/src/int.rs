//! Integers in JSON the way JSON Schema counts them: `5` and `5.0` are the
//! same integer (the OpenAPI document says `integer`, and a schema's
//! `integer` accepts any number with a zero fraction), so request fields
//! that are integers accept both. `5.5`, negatives and values past the
//! field's range are refused, naming the value.
//!
//! Use with `#[serde(default, deserialize_with = "int::opt")]` on
//! `Option<u64 | u32 | usize>` fields, `deserialize_with = "int::one"`
//! on plain ones and `deserialize_with = "int::map"` on maps of them.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserializer;
use serde::de::{self, Visitor};

/// Largest float that is still an exact integer.
const MAX_EXACT: f64 = 9_007_199_254_740_992.0;

struct IntVisitor<T>(PhantomData<T>);

impl<T: TryFrom<u64>> IntVisitor<T> {
    fn fit<E: de::Error>(v: u64) -> Result<T, E> {
        T::try_from(v).map_err(|_| E::custom(format!("{v} is out of range")))
    }
}

impl<'de, T: TryFrom<u64>> Visitor<'de> for IntVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a non-negative integer")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        Self::fit(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        match u64::try_from(v) {
            Ok(v) => Self::fit(v),
            Err(_) => Err(E::custom(format!("{v} is negative"))),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        if v.fract() != 0.0 || !v.is_finite() {
            return Err(E::custom(format!("{v} is not an integer")));
        }
        if v < 0.0 {
            return Err(E::custom(format!("{v} is negative")));
        }
        if v > MAX_EXACT {
            return Err(E::custom(format!("{v} is out of range")));
        }
        Self::fit(v as u64)
    }
}

/// An optional integer query parameter: query strings carry text, so `5`
/// and `5.0` arrive as strings and are read as the integer they spell.
pub fn query_opt<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<u64>,
{
    let text: Option<String> = serde::Deserialize::deserialize(d)?;
    let Some(text) = text else { return Ok(None) };
    let visitor = IntVisitor::<T>(PhantomData);
    if let Ok(v) = text.parse::<u64>() {
        return visitor.visit_u64(v).map(Some);
    }
    match text.parse::<f64>() {
        Ok(v) => visitor.visit_f64(v).map(Some),
        Err(_) => Err(de::Error::custom(format!("`{text}` is not an integer"))),
    }
}

/// A required integer field.
pub fn one<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<u64>,
{
    d.deserialize_any(IntVisitor(PhantomData))
}

/// An optional integer field (`null` or absent is `None`).
pub fn opt<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<u64>,
{
    struct OptVisitor<T>(PhantomData<T>);
    impl<'de, T: TryFrom<u64>> Visitor<'de> for OptVisitor<T> {
        type Value = Option<T>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a non-negative integer or null")
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            one(d).map(Some)
        }
    }
    d.deserialize_option(OptVisitor(PhantomData))
}

/// An integer that deserializes as above, for containers of them.
struct Int<T>(T);

impl<'de, T: TryFrom<u64>> serde::Deserialize<'de> for Int<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IntVisitor(PhantomData)).map(Int)
    }
}

/// A JSON object of integers (`{"acme": 3.0}` is `{"acme": 3}`).
pub fn map<'de, D, T>(d: D) -> Result<std::collections::BTreeMap<String, T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<u64>,
{
    let raw: std::collections::BTreeMap<String, Int<T>> = serde::Deserialize::deserialize(d)?;
    Ok(raw.into_iter().map(|(k, v)| (k, v.0)).collect())
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Deserialize, Debug, PartialEq)]
    struct T {
        #[serde(default, deserialize_with = "super::opt")]
        a: Option<u32>,
        #[serde(deserialize_with = "super::one")]
        b: u64,
    }

    #[derive(Deserialize, Debug, PartialEq)]
    struct M {
        #[serde(deserialize_with = "super::map")]
        m: std::collections::BTreeMap<String, u32>,
    }

    #[test]
    fn integral_floats_are_integers() {
        let t: T = serde_json::from_str(r#"{"a": 5.0, "b": 7}"#).unwrap();
        assert_eq!(t, T { a: Some(5), b: 7 });
        let t: T = serde_json::from_str(r#"{"a": null, "b": 1e3}"#).unwrap();
        assert_eq!(t, T { a: None, b: 1000 });
        let t: T = serde_json::from_str(r#"{"b": 0}"#).unwrap();
        assert_eq!(t.a, None);
        let m: M = serde_json::from_str(r#"{"m": {"x": 3.0, "y": 4}}"#).unwrap();
        assert_eq!(m.m, [("x".to_string(), 3), ("y".to_string(), 4)].into());
        assert!(serde_json::from_str::<M>(r#"{"m": {"x": 3.5}}"#).is_err());
        assert!(serde_json::from_str::<M>(r#"{"m": {"x": -3}}"#).is_err());
        for bad in [
            r#"{"b": 5.5}"#,
            r#"{"b": -1}"#,
            r#"{"b": "5"}"#,
            r#"{"a": 4294967296, "b": 1}"#,
            r#"{"b": 1e300}"#,
        ] {
            assert!(serde_json::from_str::<T>(bad).is_err(), "{bad}");
        }
    }
}
