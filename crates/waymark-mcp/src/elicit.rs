//! A form a server sends during a call (`elicitation/create`, form mode), asked as a
//! questionnaire of the session whose call it is. The answer comes through the session (the
//! app, `waymark answer` in this process) or from another process through the store
//! (`waymark answer` while this one runs the call); either way the stored answer is what
//! goes back. A form that ends unanswered (the call stops, times out, or the server
//! withdraws it) is withdrawn.

use crate::handler::{ElicitAnswer, Elicitation, Elicitor};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use waymark_extension::SessionApi;
use waymark_extension::store;
use waymark_protocol::display::{escape_block, escape_line, needs_escape};
use waymark_protocol::form::{Choice, FieldKind, FormError, FormField, MAX_CHOICES, MAX_FIELDS};
use waymark_protocol::{
    Answer, ElicitationQuestion, EventKind, FormReply, Question, QuestionnaireStatus, TypedAnswer,
};

/// The longest message of a form shown (a longer one is cut).
pub const MAX_MESSAGE: usize = 4096;
/// How often the store is read for an answer given by another process.
const POLL: Duration = Duration::from_millis(250);
/// The longest a form waits on the user; then it is withdrawn and the server told it was
/// cancelled (a form nobody will answer must not hold its call for ever).
pub const MAX_WAIT: Duration = Duration::from_secs(15 * 60);

/// The fields of a requested schema, or why it is not a form Waymark can show (then the
/// form is declined without asking).
pub fn fields(schema: &Value) -> Result<Vec<FormField>, FormError> {
    let props = schema
        .get("properties")
        .and_then(|p| p.as_object())
        .ok_or(FormError::from("the form has no properties"))?;
    if props.len() > MAX_FIELDS {
        return Err(format!("the form has {} fields, over {MAX_FIELDS}", props.len()).into());
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(|r| r.as_array())
        .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    for (name, p) in props {
        if name.is_empty() || name.len() > 128 || name.chars().any(needs_escape) {
            return Err(format!("a field is named `{}`", escape_line(name)).into());
        }
        let text = |k: &str| {
            p.get(k)
                .and_then(|v| v.as_str())
                .map(|s| escape_line(&cut(s, 512)))
        };
        let kind = kind(name, p)?;
        let mut field = FormField {
            name: name.clone(),
            title: text("title"),
            description: text("description"),
            required: required.contains(&name.as_str()),
            kind,
            default: None,
        };
        // A default that does not fit its own field is left out, not sent back.
        field.default = p.get("default").and_then(|d| field.check(d).ok());
        out.push(field);
    }
    Ok(out)
}

fn kind(name: &str, p: &Value) -> Result<FieldKind, FormError> {
    let u32_of = |k: &str| {
        p.get(k)
            .and_then(|v| v.as_u64())
            .map(|n| n.min(u32::MAX as u64) as u32)
    };
    let f64_of = |k: &str| p.get(k).and_then(|v| v.as_f64());
    let ty = p.get("type").and_then(|t| t.as_str()).unwrap_or("");
    let choices = |p: &Value| -> Result<Option<Vec<Choice>>, FormError> {
        let mut options = Vec::new();
        if let Some(values) = p.get("enum").and_then(|e| e.as_array()) {
            let names = p.get("enumNames").and_then(|n| n.as_array());
            for (i, v) in values.iter().enumerate() {
                let label = names
                    .and_then(|n| n.get(i))
                    .and_then(|l| l.as_str())
                    .or(v.as_str());
                options.push((v, label));
            }
        } else if let Some(list) = p
            .get("oneOf")
            .or_else(|| p.get("anyOf"))
            .and_then(|e| e.as_array())
        {
            for o in list {
                let v = o.get("const").unwrap_or(&Value::Null);
                options.push((v, o.get("title").and_then(|t| t.as_str()).or(v.as_str())));
            }
        } else {
            return Ok(None);
        }
        if options.len() > MAX_CHOICES {
            return Err(format!("`{name}` offers over {MAX_CHOICES} choices").into());
        }
        options
            .into_iter()
            .map(|(v, label)| match v.as_str() {
                Some(s) if !s.is_empty() && s.len() <= 256 && !s.chars().any(needs_escape) => {
                    Ok(Choice {
                        value: s.to_string(),
                        label: escape_line(&cut(label.unwrap_or(s), 256)),
                    })
                }
                _ => Err(format!("`{name}` offers a choice that is not plain text").into()),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    };
    Ok(match ty {
        "string" => match choices(p)? {
            Some(options) => FieldKind::Choice {
                options,
                multiple: false,
                min_items: None,
                max_items: None,
            },
            None => FieldKind::Text {
                format: p
                    .get("format")
                    .and_then(|f| f.as_str())
                    .filter(|f| matches!(*f, "email" | "uri" | "date" | "date-time"))
                    .map(str::to_string),
                min_length: u32_of("minLength"),
                max_length: u32_of("maxLength"),
            },
        },
        "number" | "integer" => FieldKind::Number {
            integer: ty == "integer",
            minimum: f64_of("minimum"),
            maximum: f64_of("maximum"),
        },
        "boolean" => FieldKind::Boolean,
        "array" => match p.get("items").map(choices).transpose()?.flatten() {
            Some(options) => FieldKind::Choice {
                options,
                multiple: true,
                min_items: u32_of("minItems"),
                max_items: u32_of("maxItems"),
            },
            None => {
                return Err(format!("`{name}` is a list of something other than choices").into());
            }
        },
        other => {
            return Err(format!(
                "`{name}` has type `{}`, which a form cannot take",
                escape_line(&cut(other, 40))
            )
            .into());
        }
    })
}

fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The forms of a session waiting on an answer, by questionnaire id: woken when the answer
/// comes through the session (`Extension::on_answer`).
#[derive(Default)]
pub struct FormWaits {
    waiting: Mutex<HashMap<String, Arc<Notify>>>,
}

impl FormWaits {
    pub fn wake(&self, questionnaire_id: &str) {
        let w = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = w.get(questionnaire_id) {
            n.notify_one();
        }
    }
}

/// What a call knows about itself, for the forms its server sends.
pub(crate) struct CallSite {
    pub server: String,
    pub tool: String,
    pub call_id: String,
    pub turn_id: i64,
    /// Cancelled when the call ends (a form still open is withdrawn).
    pub done: CancellationToken,
    /// Forms this call has asked.
    pub asked: std::sync::atomic::AtomicUsize,
}

/// The most forms one call asks; later ones are declined (a server cannot hold a call, or
/// the user, with one form after another).
pub const MAX_FORMS_PER_CALL: usize = 3;

/// Asks a call's forms as questionnaires of `api`'s session.
pub(crate) fn asker(api: &SessionApi, site: CallSite) -> Elicitor {
    let (api, site) = (api.clone(), Arc::new(site));
    Arc::new(move |e: Elicitation| {
        let (api, site) = (api.clone(), site.clone());
        Box::pin(async move { ask(&api, &site, e).await })
    })
}

/// A form's questionnaire while it is open: withdrawn if it ends without an answer.
struct Open<'a> {
    api: &'a SessionApi,
    id: String,
    waits: Arc<FormWaits>,
    closed: bool,
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.waits
            .waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.id);
        if self.closed {
            return;
        }
        let sid = self.api.id().to_string();
        let id = self.id.clone();
        let r = self.api.write(|tx| {
            if store::questionnaires::get(tx.conn(), &id)?.is_some_and(|q| q.is_pending()) {
                tx.withdraw_questionnaire(&id)?;
                tx.emit(
                    &sid,
                    EventKind::QuestionnaireAnswered {
                        id: id.clone(),
                        kind: waymark_protocol::QuestionnaireKind::Elicitation,
                        answer: Answer::Withdraw,
                    },
                )?;
            }
            Ok(())
        });
        if let Err(e) = r {
            tracing::warn!(questionnaire = %id, "an unanswered form could not be withdrawn: {e}");
        }
    }
}

async fn ask(api: &SessionApi, site: &CallSite, e: Elicitation) -> ElicitAnswer {
    if site.asked.fetch_add(1, std::sync::atomic::Ordering::AcqRel) >= MAX_FORMS_PER_CALL {
        tracing::warn!(server = %site.server, "a form was declined: the call has asked {MAX_FORMS_PER_CALL} already");
        return ElicitAnswer::Decline;
    }
    let fields = match fields(&e.schema) {
        Ok(f) => f,
        Err(why) => {
            tracing::warn!(server = %site.server, "a form was declined without asking: {why}");
            return ElicitAnswer::Decline;
        }
    };
    let question = Question::Elicitation(ElicitationQuestion {
        server: escape_line(&site.server),
        tool: escape_line(&site.tool),
        call_id: site.call_id.clone(),
        message: escape_block(&cut(&e.message, MAX_MESSAGE)),
        fields,
    });
    let (sid, qid) = (api.id().to_string(), api.new_id("q"));
    let waits = api.state::<FormWaits>();
    let notify = Arc::new(Notify::new());
    waits
        .waiting
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(qid.clone(), notify.clone());
    let opened = api.write(|tx| {
        tx.open_questionnaire(&qid, &sid, Some(site.turn_id), &question)?;
        tx.emit(
            &sid,
            EventKind::QuestionnaireOpened {
                id: qid.clone(),
                question: Box::new(question.clone()),
            },
        )?;
        Ok(())
    });
    let mut open = Open {
        api,
        id: qid.clone(),
        waits,
        closed: false,
    };
    if let Err(e) = opened {
        tracing::warn!(server = %site.server, "a form could not be asked: {e}");
        open.closed = true;
        return ElicitAnswer::Decline;
    }
    let until = tokio::time::Instant::now() + MAX_WAIT;
    loop {
        let woken = tokio::select! {
            _ = notify.notified() => true,
            _ = tokio::time::sleep(POLL) => false,
            _ = site.done.cancelled() => return ElicitAnswer::Cancel,
            _ = tokio::time::sleep_until(until) => return ElicitAnswer::Cancel,
        };
        let row = match api.read(|c| Ok(store::questionnaires::get(c, &qid)?)) {
            Ok(Some(r)) => r,
            Ok(None) => {
                open.closed = true;
                return ElicitAnswer::Cancel;
            }
            Err(e) => {
                tracing::warn!("a form's answer could not be read: {e}");
                continue;
            }
        };
        match row.status {
            QuestionnaireStatus::Pending => continue,
            QuestionnaireStatus::Withdrawn => {
                open.closed = true;
                return ElicitAnswer::Cancel;
            }
            QuestionnaireStatus::Answered => {
                open.closed = true;
                let answer = row.answer.clone().unwrap_or(Answer::Cancel);
                if !woken {
                    // Answered by another process: its event is logged, but the front ends
                    // here have not seen it.
                    api.transient(EventKind::QuestionnaireAnswered {
                        id: qid.clone(),
                        kind: row.kind(),
                        answer: answer.clone(),
                    });
                }
                return match row.question.accepts(&answer) {
                    Ok(TypedAnswer::Elicitation(FormReply::Accept(values))) => {
                        ElicitAnswer::Accept(Value::Object(values))
                    }
                    Ok(TypedAnswer::Elicitation(FormReply::Decline)) => ElicitAnswer::Decline,
                    _ => ElicitAnswer::Cancel,
                };
            }
        }
    }
}

/// Withdraws the forms still open in a turn that closes (after a crash nobody waits on
/// them).
pub(crate) fn withdraw_open(
    tx: &mut waymark_extension::store::Tx<'_>,
    session_id: &str,
    turn_id: i64,
) -> waymark_extension::Result<()> {
    for q in store::questionnaires::for_turn(tx.conn(), turn_id)? {
        if q.is_pending() && matches!(q.question, Question::Elicitation(_)) {
            tx.withdraw_questionnaire(&q.id)?;
            tx.emit(
                session_id,
                EventKind::QuestionnaireAnswered {
                    id: q.id.clone(),
                    kind: q.kind(),
                    answer: Answer::Withdraw,
                },
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_schema_becomes_fields_with_their_defaults_checked() {
        let f = fields(&json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "title": "Name\u{1b}[31m", "maxLength": 20},
            "n": {"type": "integer", "minimum": 1, "maximum": 9, "default": 42},
            "pick": {"type": "string", "oneOf": [{"const": "a", "title": "Ay"}]},
            "many": {"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}]}, "default": ["x"]},
            "pet": {"type": "string", "enum": ["p1"], "enumNames": ["Cat"]}
        }}))
        .unwrap();
        let by = |n: &str| f.iter().find(|x| x.name == n).unwrap();
        assert!(by("name").required);
        assert!(!by("name").title.as_ref().unwrap().contains('\u{1b}'));
        assert_eq!(by("n").default, None, "42 is out of 1..9");
        assert_eq!(by("many").default, Some(json!(["x"])));
        let FieldKind::Choice { options, .. } = &by("pet").kind else {
            panic!()
        };
        assert_eq!(options[0].label, "Cat");
    }

    #[test]
    fn forms_waymark_cannot_show_faithfully_are_refused() {
        for schema in [
            json!({}),
            json!({"properties": {"a\u{7}": {"type": "string"}}}),
            json!({"properties": {"o": {"type": "object"}}}),
            json!({"properties": {"c": {"type": "string", "enum": ["a\nb"]}}}),
            json!({"properties": {"l": {"type": "array", "items": {"type": "string"}}}}),
        ] {
            assert!(fields(&schema).is_err(), "{schema}");
        }
        let many: serde_json::Map<String, Value> = (0..=MAX_FIELDS)
            .map(|i| (format!("f{i}"), json!({"type": "boolean"})))
            .collect();
        assert!(fields(&json!({ "properties": many })).is_err());
    }
}
