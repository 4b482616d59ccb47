//! JSON objects stay objects. serde's derived `Deserialize` for a struct
//! also accepts a JSON array, filling the fields in by position
//! (serde-rs/serde#1587): `["welcome", {...}]` would be read as
//! `{"name": "welcome", "data": {...}}`. The OpenAPI document says
//! `type: object`, so a request must not get further with an array.
//!
//! [`Strict`] wraps any deserializer and refuses a sequence wherever a
//! struct (or a struct variant) is asked for, at every depth: it wraps the
//! visitors, map and sequence accessors and seeds it hands on, so nested
//! fields are held to the same rule. Everything else passes through
//! unchanged, paths from `serde_path_to_error` included.
//!
//! What it cannot see: a type that buffers its input first (tagged and
//! `untagged` enums, `flatten`) deserializes its parts from serde's private
//! buffer, not through this wrapper, and that buffer fills structs from
//! arrays too. Such types read themselves through [`buffered`], which
//! refuses an array before serde buffers anything.

use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Unexpected,
    VariantAccess, Visitor,
};

/// A deserializer (or accessor, or seed) whose structs must be maps.
pub struct Strict<T>(pub T);

/// Deserializes `T` from JSON text, refusing arrays for objects.
pub fn from_slice<T: de::DeserializeOwned>(bytes: &[u8]) -> Result<T, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = T::deserialize(Strict(&mut de))?;
    de.end()?;
    Ok(value)
}

/// For a type serde buffers before reading it (a tagged or untagged enum):
/// reads the value, refuses an array (`expected` says what is wanted
/// instead), then reads `T` from it under [`Strict`].
pub fn buffered<'de, D, T>(d: D, expected: &'static str) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: de::DeserializeOwned,
{
    use serde::Deserialize;
    let value = serde_json::Value::deserialize(d)?;
    if value.is_array() {
        return Err(de::Error::invalid_type(Unexpected::Seq, &expected));
    }
    T::deserialize(Strict(value)).map_err(de::Error::custom)
}

/// A visitor that refuses a sequence when it builds a struct.
struct Guard<V> {
    inner: V,
    is_struct: bool,
}

impl<V> Guard<V> {
    fn any(inner: V) -> Self {
        Guard {
            inner,
            is_struct: false,
        }
    }

    fn object(inner: V) -> Self {
        Guard {
            inner,
            is_struct: true,
        }
    }
}

macro_rules! forward_deserialize {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.0.$method($($arg,)* Guard::any(visitor))
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Strict<D> {
    type Error = D::Error;

    forward_deserialize! {
        deserialize_any();
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_f32();
        deserialize_f64();
        deserialize_char();
        deserialize_str();
        deserialize_string();
        deserialize_bytes();
        deserialize_byte_buf();
        deserialize_option();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str);
        deserialize_seq();
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map();
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier();
        deserialize_ignored_any();
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_struct(name, fields, Guard::object(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

macro_rules! forward_visit {
    ($($method:ident($ty:ty);)*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
            self.inner.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Guard<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.inner.expecting(f)
    }

    forward_visit! {
        visit_bool(bool);
        visit_i8(i8);
        visit_i16(i16);
        visit_i32(i32);
        visit_i64(i64);
        visit_i128(i128);
        visit_u8(u8);
        visit_u16(u16);
        visit_u32(u32);
        visit_u64(u64);
        visit_u128(u128);
        visit_f32(f32);
        visit_f64(f64);
        visit_char(char);
        visit_str(&str);
        visit_borrowed_str(&'de str);
        visit_string(String);
        visit_bytes(&[u8]);
        visit_borrowed_bytes(&'de [u8]);
        visit_byte_buf(Vec<u8>);
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.inner.visit_some(Strict(d))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.inner.visit_newtype_struct(Strict(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        if self.is_struct {
            return Err(de::Error::invalid_type(Unexpected::Seq, &ObjectExpected));
        }
        self.inner.visit_seq(Strict(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(Strict(map))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner.visit_enum(Strict(data))
    }
}

/// What the error says was expected instead of the array.
struct ObjectExpected;

impl de::Expected for ObjectExpected {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Strict<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Strict(d))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Strict<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Strict(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Strict<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(Strict(seed))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(Strict(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Strict<A> {
    type Error = A::Error;
    type Variant = Strict<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), A::Error> {
        let (value, variant) = self.0.variant_seed(Strict(seed))?;
        Ok((value, Strict(variant)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Strict<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Strict(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Guard::any(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.struct_variant(fields, Guard::object(visitor))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::from_slice;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Inner {
        a: u32,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Outer {
        name: String,
        inner: Option<Inner>,
        list: Option<Vec<Inner>>,
        tuple: Option<(u32, u32)>,
    }

    #[test]
    fn objects_are_read_as_before() {
        let v: Outer =
            from_slice(br#"{"name":"x","inner":{"a":1},"list":[{"a":2}],"tuple":[1,2]}"#).unwrap();
        assert_eq!(v.inner, Some(Inner { a: 1 }));
        assert_eq!(v.list, Some(vec![Inner { a: 2 }]));
        assert_eq!(v.tuple, Some((1, 2)));
    }

    #[test]
    fn an_array_for_an_object_is_refused_at_every_depth() {
        for doc in [
            r#"["x", null, null, null]"#,
            r#"{"name":"x","inner":[1]}"#,
            r#"{"name":"x","list":[[2]]}"#,
        ] {
            let err = from_slice::<Outer>(doc.as_bytes()).unwrap_err();
            assert!(
                err.to_string()
                    .contains("invalid type: sequence, expected an object"),
                "{doc}: {err}"
            );
        }
        // The same documents without the wrapper: serde fills in by position.
        assert!(serde_json::from_str::<Outer>(r#"{"name":"x","inner":[1]}"#).is_ok());
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(tag = "type", rename_all = "lowercase")]
    enum Tagged {
        Fixed { delay: u64 },
    }

    #[derive(Debug, PartialEq)]
    struct ViaBuffer(Tagged);

    impl<'de> Deserialize<'de> for ViaBuffer {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            super::buffered(d, "an object {type, delay}").map(ViaBuffer)
        }
    }

    #[test]
    fn a_buffered_type_refuses_an_array_too() {
        let ok: ViaBuffer = from_slice(br#"{"type":"fixed","delay":5}"#).unwrap();
        assert_eq!(ok, ViaBuffer(Tagged::Fixed { delay: 5 }));
        let err = from_slice::<ViaBuffer>(br#"["fixed", 5]"#).unwrap_err();
        assert!(
            err.to_string().contains("expected an object {type, delay}"),
            "{err}"
        );
        // serde's own buffer takes the array.
        assert!(serde_json::from_str::<Tagged>(r#"["fixed", 5]"#).is_ok());
    }

    #[test]
    fn trailing_bytes_are_an_error() {
        assert!(from_slice::<Inner>(br#"{"a":1} x"#).is_err());
    }
}
