//! Wire names of closed sets (statuses, kinds, reasons, modes) taken from their serde
//! derive, so the name in JSON, in the database and on the command line is one and the same.

use serde::de::{DeserializeOwned, IntoDeserializer};
use serde::ser::{self, Impossible, Serialize};

/// The serde name of a unit variant (`GoalStatus::UsageLimited` → `"usage_limited"`).
/// Anything else (a variant with data) has no name: `""`.
pub fn name<T: Serialize + ?Sized>(value: &T) -> &'static str {
    value.serialize(NameOf).unwrap_or("")
}

/// The unit variant with serde name `s`, if there is one.
pub fn parse<T: DeserializeOwned>(s: &str) -> Option<T> {
    let de: serde::de::value::StrDeserializer<'_, serde::de::value::Error> = s.into_deserializer();
    T::deserialize(de).ok()
}

/// A serializer that only answers the name of a unit variant.
struct NameOf;

#[derive(Debug)]
struct NotAUnitVariant;

impl std::fmt::Display for NotAUnitVariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not a unit variant")
    }
}

impl std::error::Error for NotAUnitVariant {}

impl ser::Error for NotAUnitVariant {
    fn custom<M: std::fmt::Display>(_: M) -> Self {
        NotAUnitVariant
    }
}

type Nope = Impossible<&'static str, NotAUnitVariant>;

macro_rules! refuse {
    ($($f:ident($($t:ty),*);)*) => {
        $(fn $f(self, $(_: $t),*) -> Result<&'static str, NotAUnitVariant> { Err(NotAUnitVariant) })*
    };
}

impl ser::Serializer for NameOf {
    type Ok = &'static str;
    type Error = NotAUnitVariant;
    type SerializeSeq = Nope;
    type SerializeTuple = Nope;
    type SerializeTupleStruct = Nope;
    type SerializeTupleVariant = Nope;
    type SerializeMap = Nope;
    type SerializeStruct = Nope;
    type SerializeStructVariant = Nope;

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<&'static str, NotAUnitVariant> {
        Ok(variant)
    }

    refuse! {
        serialize_bool(bool); serialize_i8(i8); serialize_i16(i16); serialize_i32(i32);
        serialize_i64(i64); serialize_u8(u8); serialize_u16(u16); serialize_u32(u32);
        serialize_u64(u64); serialize_f32(f32); serialize_f64(f64); serialize_char(char);
        serialize_str(&str); serialize_bytes(&[u8]); serialize_none(); serialize_unit();
        serialize_unit_struct(&'static str);
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<&'static str, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<&'static str, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<&'static str, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Nope, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
    fn serialize_tuple(self, _: usize) -> Result<Nope, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Nope, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Nope, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Nope, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Nope, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Nope, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{GoalReason, GoalStatus, PermissionMode, QuestionnaireKind};

    #[test]
    fn names_are_the_serde_names_both_ways() {
        assert_eq!(name(&GoalStatus::UsageLimited), "usage_limited");
        assert_eq!(name(&PermissionMode::AutoEdit), "auto-edit");
        assert_eq!(name(&QuestionnaireKind::PlanApproval), "plan_approval");
        assert_eq!(
            parse::<GoalReason>("app_closed"),
            Some(GoalReason::AppClosed)
        );
        assert_eq!(parse::<GoalStatus>("nonsense"), None);
        // The JSON name is the same one.
        assert_eq!(
            serde_json::to_value(GoalStatus::UsageLimited).unwrap(),
            serde_json::json!(name(&GoalStatus::UsageLimited))
        );
    }
}
