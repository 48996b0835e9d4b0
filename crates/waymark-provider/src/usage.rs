//! A reply's usage as it is charged: the figures the provider reported, each one it did not
//! give estimated, and the record marked `estimated` then. A provider's usage is what spending
//! limits are held to, so a missing figure is never taken as zero: one absent, null, or not a
//! whole number (`"5000"`, `5000.5`) is estimated like a usage never sent; one far below what
//! the request and the reply plainly hold (under an eighth of Waymark's estimate: a provider
//! reporting 0 for a long reply) is estimated too. An absurd figure (negative, or past
//! [`MAX_CALL_TOKENS`]) makes the reply a `bad_response`, and the failed call is charged on the
//! estimate by its caller.

use crate::ProviderError;
use waymark_protocol::Usage;

/// The most tokens one model call can plausibly report (input or output); a larger figure
/// is a malformed reply, never arithmetic the runtime trusts.
pub const MAX_CALL_TOKENS: u64 = 100_000_000;

/// A figure reported as `v` (`field` names it in errors): `None` when it is absent, null or
/// not a whole number; an error when it is absurd.
pub(crate) fn figure(
    v: Option<&serde_json::Value>,
    field: &str,
) -> Result<Option<u64>, ProviderError> {
    let absurd = |x: &serde_json::Value| {
        ProviderError::bad_response(format!(
            "the model reported an absurd usage figure `{field}`: {} (accepted: 0 to {MAX_CALL_TOKENS})",
            waymark_protocol::display::clip(&x.to_string())
        ))
    };
    let Some(x @ serde_json::Value::Number(n)) = v else {
        return Ok(None);
    };
    if let Some(n) = n.as_u64() {
        return if n <= MAX_CALL_TOKENS {
            Ok(Some(n))
        } else {
            Err(absurd(x))
        };
    }
    match n.as_f64() {
        Some(f) if f < 0.0 || f > MAX_CALL_TOKENS as f64 => Err(absurd(x)),
        // `5e3` is 5000; `5000.5` is no count of tokens.
        Some(f) if f.fract() == 0.0 => Ok(Some(f as u64)),
        _ => Ok(None),
    }
}

/// Checks a whole usage record against [`MAX_CALL_TOKENS`].
pub(crate) fn check(u: Usage) -> Result<Usage, ProviderError> {
    for (field, n) in [
        ("input_tokens", u.input_tokens),
        ("output_tokens", u.output_tokens),
        ("cached_tokens", u.cached_tokens),
    ] {
        figure(Some(&serde_json::Value::from(n)), field)?;
    }
    Ok(u)
}

/// The figures a provider reported.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reported {
    pub input: Option<u64>,
    pub output: Option<u64>,
    pub cached: Option<u64>,
}

impl Reported {
    /// The usage charged for a reply whose request Waymark estimates at `estimate_input`
    /// tokens and whose text and tool calls at `estimate_output`.
    pub(crate) fn settle(self, estimate_input: u64, estimate_output: u64) -> Usage {
        // Estimates are held to the same bound as reported figures.
        let (estimate_input, estimate_output) = (
            estimate_input.min(MAX_CALL_TOKENS),
            estimate_output.min(MAX_CALL_TOKENS),
        );
        let plausible = |got: Option<u64>, estimate: u64| got.filter(|n| *n >= estimate / 8);
        let input = plausible(self.input, estimate_input);
        let output = plausible(self.output, estimate_output);
        // The cached figure is a part of the input figure: it counts only with the input it
        // belongs to, and never past it (an input estimated because the one reported was
        // not believed cannot be discounted by the cached figure that came with it).
        let cached = match input {
            Some(i) => self.cached.unwrap_or(0).min(i),
            None => 0,
        };
        Usage {
            input_tokens: input.unwrap_or(estimate_input),
            output_tokens: output.unwrap_or(estimate_output),
            cached_tokens: cached,
            estimated: input.is_none() || output.is_none(),
        }
    }
}

/// How far a reply had come: the bytes of text, reasoning and tool-call arguments streamed
/// so far, and the figures the provider had reported by then. Wire clients send it as
/// [`crate::StreamEvent::Progress`] after each event of the stream, so a call that fails or
/// is stopped midway is charged for what it had streamed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub output_bytes: usize,
    pub input: Option<u64>,
    pub output: Option<u64>,
    pub cached: Option<u64>,
    /// The model reasons without streaming it (OpenAI's reasoning models on OpenAI's own
    /// service): what streamed says nothing of what it produced and the provider bills.
    pub reasoning_hidden: bool,
}

impl Progress {
    /// What a call that failed or was stopped after its request went out is charged, marked
    /// estimated (a provider bills a call it began answering): the larger of the request's
    /// estimate (`request_tokens`) and the input the provider reported, and the larger of
    /// what streamed and the output it reported. The cached figure counts only with the
    /// input figure it came with. A model that reasons out of sight, stopped before the
    /// provider reported its output, is charged the output it was allowed (`max_output`):
    /// it may have reasoned up to that, and is billed for it.
    pub fn charge(&self, request_tokens: u64, max_output: u64) -> Usage {
        let request_tokens = request_tokens.min(MAX_CALL_TOKENS);
        let reported_in = self.input.filter(|i| *i >= request_tokens);
        let input = reported_in.unwrap_or(request_tokens);
        // An output of 0 reported before the end (a first usage chunk) says nothing yet.
        let unseen = if self.reasoning_hidden && self.output.unwrap_or(0) == 0 {
            max_output
        } else {
            0
        };
        let output = self
            .output
            .unwrap_or(0)
            .max(crate::estimate_tokens(self.output_bytes))
            .max(unseen)
            .min(MAX_CALL_TOKENS);
        Usage {
            input_tokens: input,
            output_tokens: output,
            cached_tokens: reported_in.map_or(0, |i| self.cached.unwrap_or(0).min(i)),
            estimated: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn figures_read_as_counts_or_as_missing_and_absurd_ones_are_errors() {
        let f = |v: serde_json::Value| figure(Some(&v), "x");
        assert_eq!(f(json!(5000)).unwrap(), Some(5000));
        assert_eq!(f(json!(5e3)).unwrap(), Some(5000));
        assert_eq!(f(json!(5000.0)).unwrap(), Some(5000));
        for missing in [
            json!(5000.5),
            json!("5000"),
            json!(null),
            json!(true),
            json!({}),
        ] {
            assert_eq!(f(missing.clone()).unwrap(), None, "{missing}");
        }
        for absurd in [json!(-1), json!(-0.5), json!(100_000_001), json!(1e300)] {
            assert!(f(absurd.clone()).is_err(), "{absurd}");
        }
        assert_eq!(figure(None, "x").unwrap(), None);
    }

    /// A provider reporting zeros (or one token) for a request and a reply that plainly hold
    /// thousands is not believed: the cap would never fill.
    #[test]
    fn implausibly_low_figures_are_estimated() {
        let zeros = Reported {
            input: Some(0),
            output: Some(1),
            cached: None,
        };
        let u = zeros.settle(4000, 800);
        assert_eq!(
            (u.input_tokens, u.output_tokens, u.estimated),
            (4000, 800, true)
        );
        let fair = Reported {
            input: Some(3000),
            output: Some(500),
            cached: Some(100),
        };
        let u = fair.settle(4000, 800);
        assert_eq!(
            (u.input_tokens, u.output_tokens, u.estimated),
            (3000, 500, false)
        );
        // Fourth red-team: an input figure not believed takes its cached figure with it (it
        // would price the estimate as read from the cache), and a cached figure never passes
        // the input it is part of.
        let u = Reported {
            input: Some(0),
            output: Some(10),
            cached: Some(100_000_000),
        }
        .settle(1200, 10);
        assert_eq!((u.input_tokens, u.cached_tokens), (1200, 0));
        let u = Reported {
            input: Some(3000),
            output: Some(10),
            cached: Some(90_000),
        }
        .settle(1200, 10);
        assert_eq!((u.input_tokens, u.cached_tokens), (3000, 3000));
        // An empty reply reports 0 output honestly.
        let u = Reported {
            input: Some(3000),
            output: Some(0),
            cached: None,
        }
        .settle(4000, 0);
        assert!(!u.estimated);
    }

    /// Fourth red-team: a call that fails or is stopped after streaming is charged for what
    /// streamed (reasoning and tool arguments too) or what the provider reported, whichever
    /// is more; never less than the request.
    #[test]
    fn a_broken_call_is_charged_for_what_it_streamed_or_reported() {
        let p = Progress {
            output_bytes: 32_000,
            input: Some(50_000),
            output: Some(9_000),
            cached: Some(60_000),
            ..Progress::default()
        };
        let u = p.charge(1_183, 8_192);
        assert_eq!(
            (
                u.input_tokens,
                u.output_tokens,
                u.cached_tokens,
                u.estimated
            ),
            (50_000, 9_000, 50_000, true)
        );
        let u = Progress {
            output_bytes: 32_000,
            input: Some(10),
            output: Some(1),
            cached: Some(10),
            ..Progress::default()
        }
        .charge(1_183, 8_192);
        assert_eq!(
            (u.input_tokens, u.output_tokens, u.cached_tokens),
            (1_183, 8_000, 0)
        );
        assert_eq!(Progress::default().charge(500, 8_192).output_tokens, 0);
    }

    /// Fifth red-team: an OpenAI reasoning model stopped while it reasoned out of sight had
    /// streamed nothing and was charged for its input alone. Until the provider reports the
    /// output, it is charged the output it was allowed.
    #[test]
    fn a_model_stopped_while_reasoning_out_of_sight_is_charged_what_it_was_allowed() {
        let hidden = Progress {
            reasoning_hidden: true,
            ..Progress::default()
        };
        assert_eq!(hidden.charge(1_183, 8_192).output_tokens, 8_192);
        // More streamed than allowed (a provider ignoring the bound): what streamed.
        let past = Progress {
            output_bytes: 40_000,
            ..hidden
        };
        assert_eq!(past.charge(1_183, 8_192).output_tokens, 10_000);
        // The provider's own figure, once reported, is believed as for any model.
        let reported = Progress {
            output: Some(300),
            ..hidden
        };
        assert_eq!(reported.charge(1_183, 8_192).output_tokens, 300);
        // Sixth red-team: an early usage chunk saying 0 output does not stop it.
        let early = Progress {
            output: Some(0),
            ..hidden
        };
        assert_eq!(early.charge(1_183, 8_192).output_tokens, 8_192);
        // A model that streams what it produces is charged what streamed.
        assert_eq!(Progress::default().charge(1_183, 8_192).output_tokens, 0);
    }
}
