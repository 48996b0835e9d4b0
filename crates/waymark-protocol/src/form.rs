//! Forms a tool server asks the user to fill in (MCP `elicitation/create`, form mode): the
//! fields as front ends draw them, and the check an answer passes before it goes back.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The most fields a form may have; a longer form is declined without asking.
pub const MAX_FIELDS: usize = 64;
/// The most choices a field may offer.
pub const MAX_CHOICES: usize = 256;
/// The longest text a field takes when the form sets no shorter limit.
pub const MAX_TEXT: usize = 16 * 1024;

/// Why a value or a form does not fit (names the field).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FormError(pub String);

impl From<String> for FormError {
    fn from(s: String) -> Self {
        FormError(s)
    }
}

impl From<&str> for FormError {
    fn from(s: &str) -> Self {
        FormError(s.to_string())
    }
}

/// One field of a form. Texts (title, description, labels) are escaped for display.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct FormField {
    /// The key the answer carries the value under.
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub required: bool,
    pub kind: FieldKind,
    /// The value the field starts with (the server's `default`), already checked.
    #[serde(default)]
    pub default: Option<Value>,
}

/// What a field takes.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FieldKind {
    Text {
        /// `email`, `uri`, `date` or `date-time`, when the server named one.
        #[serde(default)]
        format: Option<String>,
        #[serde(default)]
        min_length: Option<u32>,
        #[serde(default)]
        max_length: Option<u32>,
    },
    Number {
        integer: bool,
        #[serde(default)]
        minimum: Option<f64>,
        #[serde(default)]
        maximum: Option<f64>,
    },
    Boolean,
    /// One of the options, or (`multiple`) a list of them.
    Choice {
        options: Vec<Choice>,
        multiple: bool,
        #[serde(default)]
        min_items: Option<u32>,
        #[serde(default)]
        max_items: Option<u32>,
    },
}

/// An option of a choice: the value sent back and the label shown.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Choice {
    pub value: String,
    pub label: String,
}

impl FormField {
    /// The field's value from `given` (a string is read as the field's type, so a value
    /// typed on a command line works), or why it is not one.
    pub fn check(&self, given: &Value) -> Result<Value, FormError> {
        let name = &self.name;
        match &self.kind {
            FieldKind::Text {
                format,
                min_length,
                max_length,
            } => {
                let Value::String(s) = given else {
                    return Err(format!("`{name}` takes text").into());
                };
                let n = s.chars().count();
                let max = max_length
                    .map(|m| m as usize)
                    .unwrap_or(MAX_TEXT)
                    .min(MAX_TEXT);
                if n > max {
                    return Err(format!("`{name}` takes at most {max} characters").into());
                }
                if let Some(min) = min_length
                    && n < *min as usize
                {
                    return Err(format!("`{name}` takes at least {min} characters").into());
                }
                if let Some(f) = format
                    && !matches_format(f, s)
                {
                    return Err(format!("`{name}` takes {}", format_words(f)).into());
                }
                Ok(given.clone())
            }
            FieldKind::Number {
                integer,
                minimum,
                maximum,
            } => {
                let n = match given {
                    Value::Number(n) => n.as_f64(),
                    Value::String(s) => s.trim().parse::<f64>().ok(),
                    _ => None,
                }
                .filter(|n| n.is_finite())
                .ok_or_else(|| FormError(format!("`{name}` takes a number")))?;
                if *integer && n.fract() != 0.0 {
                    return Err(format!("`{name}` takes a whole number").into());
                }
                if minimum.is_some_and(|m| n < m) || maximum.is_some_and(|m| n > m) {
                    return Err(format!(
                        "`{name}` takes a number from {} to {}",
                        minimum.map_or("any".into(), |m| m.to_string()),
                        maximum.map_or("any".into(), |m| m.to_string())
                    )
                    .into());
                }
                if *integer && n.abs() < 9.0e15 {
                    return Ok(Value::from(n as i64));
                }
                serde_json::Number::from_f64(n)
                    .map(Value::Number)
                    .ok_or_else(|| format!("`{name}` takes a number").into())
            }
            FieldKind::Boolean => match given {
                Value::Bool(b) => Ok(Value::Bool(*b)),
                Value::String(s) if matches!(s.as_str(), "true" | "yes" | "y") => Ok(true.into()),
                Value::String(s) if matches!(s.as_str(), "false" | "no" | "n") => Ok(false.into()),
                _ => Err(format!("`{name}` takes true or false").into()),
            },
            FieldKind::Choice {
                options,
                multiple,
                min_items,
                max_items,
            } => {
                let one = |v: &Value| -> Result<Value, FormError> {
                    match v {
                        Value::String(s) if options.iter().any(|o| &o.value == s) => Ok(v.clone()),
                        _ => Err(format!(
                            "`{name}` takes one of: {}",
                            options
                                .iter()
                                .map(|o| o.value.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                        .into()),
                    }
                };
                if !multiple {
                    return one(given);
                }
                let items: Vec<Value> = match given {
                    Value::Array(a) => a.clone(),
                    // `a,b` typed on a command line.
                    Value::String(s) => s
                        .split(',')
                        .map(|p| p.trim())
                        .filter(|p| !p.is_empty())
                        .map(|p| Value::String(p.to_string()))
                        .collect(),
                    _ => return Err(format!("`{name}` takes a list").into()),
                };
                let items = items.iter().map(one).collect::<Result<Vec<_>, _>>()?;
                if min_items.is_some_and(|m| items.len() < m as usize)
                    || max_items.is_some_and(|m| items.len() > m as usize)
                {
                    return Err(format!(
                        "`{name}` takes from {} to {} choices",
                        min_items.unwrap_or(0),
                        max_items.map_or("any".into(), |m| m.to_string())
                    )
                    .into());
                }
                Ok(Value::Array(items))
            }
        }
    }
}

/// Checks a whole answer against the form: every value checked, every required field
/// present, nothing the form did not ask for. Returns the values as the server gets them.
pub fn check_answer(
    fields: &[FormField],
    content: &Value,
) -> Result<Map<String, Value>, FormError> {
    let given = match content {
        Value::Object(m) => m,
        Value::Null => &Map::new(),
        _ => return Err("the answer's content is an object of field values".into()),
    };
    if let Some(k) = given.keys().find(|k| !fields.iter().any(|f| &f.name == *k)) {
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        return Err(format!(
            "the form has no field `{}`; its fields are: {}",
            crate::display::escape_line(k),
            names.join(", ")
        )
        .into());
    }
    let mut out = Map::new();
    for f in fields {
        match given.get(&f.name) {
            Some(v) => {
                out.insert(f.name.clone(), f.check(v)?);
            }
            None if f.required => return Err(format!("`{}` is required", f.name).into()),
            None => {}
        }
    }
    Ok(out)
}

fn matches_format(format: &str, s: &str) -> bool {
    let digits = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_digit());
    let date = |d: &str| {
        let p: Vec<&str> = d.split('-').collect();
        p.len() == 3 && digits(p[0], 4) && digits(p[1], 2) && digits(p[2], 2)
    };
    match format {
        "email" => s.split_once('@').is_some_and(|(a, b)| {
            !a.is_empty() && b.contains('.') && !s.contains(char::is_whitespace)
        }),
        "uri" => s.split_once(':').is_some_and(|(scheme, rest)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && !rest.is_empty()
                && !s.contains(char::is_whitespace)
        }),
        "date" => date(s),
        "date-time" => s
            .split_once(['T', 't'])
            .is_some_and(|(d, t)| date(d) && t.len() >= 8 && t.as_bytes()[2] == b':'),
        _ => true,
    }
}

fn format_words(format: &str) -> &'static str {
    match format {
        "email" => "an email address",
        "uri" => "a URI (scheme:…)",
        "date" => "a date (YYYY-MM-DD)",
        "date-time" => "a date and time (YYYY-MM-DDTHH:MM:SS…)",
        _ => "text",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(name: &str, kind: FieldKind, required: bool) -> FormField {
        FormField {
            name: name.into(),
            title: None,
            description: None,
            required,
            kind,
            default: None,
        }
    }

    fn form() -> Vec<FormField> {
        vec![
            field(
                "name",
                FieldKind::Text {
                    format: None,
                    min_length: None,
                    max_length: Some(5),
                },
                true,
            ),
            field(
                "age",
                FieldKind::Number {
                    integer: true,
                    minimum: Some(1.0),
                    maximum: Some(100.0),
                },
                false,
            ),
            field("ok", FieldKind::Boolean, false),
            field(
                "tags",
                FieldKind::Choice {
                    options: vec![
                        Choice {
                            value: "a".into(),
                            label: "A".into(),
                        },
                        Choice {
                            value: "b".into(),
                            label: "B".into(),
                        },
                    ],
                    multiple: true,
                    min_items: Some(1),
                    max_items: Some(2),
                },
                false,
            ),
        ]
    }

    #[test]
    fn values_typed_as_text_are_read_as_the_fields_type() {
        let got = check_answer(
            &form(),
            &json!({"name": "Ann", "age": "30", "ok": "yes", "tags": "a,b"}),
        )
        .unwrap();
        assert_eq!(
            Value::Object(got),
            json!({"name": "Ann", "age": 30, "ok": true, "tags": ["a", "b"]})
        );
    }

    #[test]
    fn an_answer_outside_the_form_is_refused_with_the_field_named() {
        let f = form();
        for (content, says) in [
            (json!({}), "`name` is required"),
            (json!({"name": "toolong"}), "at most 5"),
            (json!({"name": "a", "age": 0}), "from 1 to 100"),
            (json!({"name": "a", "age": 2.5}), "whole number"),
            (json!({"name": "a", "tags": ["c"]}), "one of: a, b"),
            (json!({"name": "a", "tags": []}), "from 1 to 2"),
            (json!({"name": "a", "extra": 1}), "no field `extra`"),
            (json!({"name": "a", "ok": "maybe"}), "true or false"),
            (json!(["name"]), "object"),
        ] {
            let e = check_answer(&f, &content).unwrap_err();
            assert!(e.0.contains(says), "{content}: {e}");
        }
    }

    #[test]
    fn formats_are_checked() {
        assert!(matches_format("email", "a@b.c"));
        assert!(!matches_format("email", "a b@c.d"));
        assert!(matches_format("uri", "https://x"));
        assert!(!matches_format("uri", "not a uri"));
        assert!(matches_format("date", "2026-12-03"));
        assert!(!matches_format("date", "3 Dec"));
        assert!(matches_format("date-time", "2026-12-03T10:00:00Z"));
    }
}
