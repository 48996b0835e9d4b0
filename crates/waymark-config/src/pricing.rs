//! What model calls cost (G-31): prices per million tokens by model pattern, the built-in
//! defaults, and the price of one call. Money is counted in whole micro-dollars
//! ([`waymark_protocol::cost`]); a model with no price has an unknown cost, never $0.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use waymark_protocol::Usage;

/// The largest price per million tokens a setting may give, in USD.
pub const MAX_PRICE_PER_MTOK: f64 = 10_000.0;

/// The smallest price above nothing a setting may give, in USD per million tokens. The
/// cheapest list price is about $0.005 (cached input); below $0.001 a price is a mistake,
/// most often a price per token pasted where a price per million goes (`0.000003` for $3),
/// which would make a model all but free while it looked priced. Give 0 to say a model is
/// free.
pub const MIN_PRICE_PER_MTOK: f64 = 0.001;

/// What a model charges, in USD per million tokens.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    /// Input read from the provider's prompt cache; the input price when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_per_mtok: Option<f64>,
}

impl Price {
    const fn of(input: f64, cached: f64, output: f64) -> Price {
        Price {
            input_per_mtok: input,
            output_per_mtok: output,
            cached_input_per_mtok: Some(cached),
        }
    }

    /// What one call with `usage` costs, in micro-dollars (the input includes the cached
    /// part, as both providers report it). Saturates rather than overflow.
    pub fn cost_micros(&self, usage: &Usage) -> u64 {
        let cached = usage.cached_tokens.min(usage.input_tokens);
        let fresh = usage.input_tokens - cached;
        // Tokens × USD per million tokens is micro-dollars.
        let micros = fresh as f64 * self.input_per_mtok
            + cached as f64 * self.cached_input_per_mtok.unwrap_or(self.input_per_mtok)
            + usage.output_tokens as f64 * self.output_per_mtok;
        if micros.is_finite() && micros > 0.0 {
            // Up: a priced call never costs nothing.
            micros.ceil().min(u64::MAX as f64) as u64
        } else {
            0
        }
    }

    /// Why the price is not one a setting may give, if it is not: the field, and what is
    /// wrong with it.
    pub fn invalid(&self) -> Option<(&'static str, String)> {
        let fields = [
            ("input_per_mtok", Some(self.input_per_mtok)),
            ("output_per_mtok", Some(self.output_per_mtok)),
            ("cached_input_per_mtok", self.cached_input_per_mtok),
        ];
        let out_of_range = fields.into_iter().find_map(|(name, v)| {
            let v = v?;
            let in_range = v.is_finite()
                && (v == 0.0 || (MIN_PRICE_PER_MTOK..=MAX_PRICE_PER_MTOK).contains(&v));
            (!in_range).then(|| {
                (
                    name,
                    format!(
                        "must be a number of USD per million tokens: 0 (free), or from {MIN_PRICE_PER_MTOK} to {MAX_PRICE_PER_MTOK} (got {v}; a price per token is a million times smaller: $3 per million is 3, not 0.000003)"
                    ),
                )
            })
        });
        // Cached input is a discount on input: priced above it, a limit's check (which
        // prices a request's input at the input price) would let calls through that cost
        // more than it reckoned.
        out_of_range.or_else(|| {
            let cached = self.cached_input_per_mtok?;
            (cached > self.input_per_mtok).then(|| {
                (
                    "cached_input_per_mtok",
                    format!(
                        "must not be more than input_per_mtok ({}): cached input is input read from the provider's cache, never dearer (got {cached})",
                        self.input_per_mtok
                    ),
                )
            })
        })
    }
}

/// The built-in prices: list prices in USD per million tokens as the providers published them
/// on their pricing pages (openai.com/api/pricing, anthropic.com/pricing), taken on
/// 2025-11-24. The user's `pricing` entries win over these. Local models (Ollama) cost
/// nothing per token.
pub const BUILTIN_PRICES: &[(&str, Price)] = &[
    ("openai:gpt-5", Price::of(1.25, 0.125, 10.0)),
    ("openai:gpt-5-*", Price::of(1.25, 0.125, 10.0)),
    ("openai:gpt-5-mini*", Price::of(0.25, 0.025, 2.0)),
    ("openai:gpt-5-nano*", Price::of(0.05, 0.005, 0.4)),
    // The pro model has no cached price: cached input costs the input price.
    ("openai:gpt-5-pro*", Price::of(15.0, 15.0, 120.0)),
    ("openai:gpt-4.1", Price::of(2.0, 0.5, 8.0)),
    ("openai:gpt-4.1-2*", Price::of(2.0, 0.5, 8.0)),
    ("openai:gpt-4.1-mini*", Price::of(0.4, 0.1, 1.6)),
    ("openai:gpt-4.1-nano*", Price::of(0.1, 0.025, 0.4)),
    ("openai:gpt-4o", Price::of(2.5, 1.25, 10.0)),
    ("openai:gpt-4o-2*", Price::of(2.5, 1.25, 10.0)),
    ("openai:gpt-4o-2024-05-13", Price::of(5.0, 5.0, 15.0)),
    ("openai:gpt-4o-mini*", Price::of(0.15, 0.075, 0.6)),
    ("openai:o3", Price::of(2.0, 0.5, 8.0)),
    ("openai:o3-2*", Price::of(2.0, 0.5, 8.0)),
    ("openai:o4-mini*", Price::of(1.1, 0.275, 4.4)),
    ("anthropic:claude-opus-4-5*", Price::of(5.0, 0.5, 25.0)),
    ("anthropic:claude-opus-4-1*", Price::of(15.0, 1.5, 75.0)),
    ("anthropic:claude-opus-4-2*", Price::of(15.0, 1.5, 75.0)),
    ("anthropic:claude-sonnet-4*", Price::of(3.0, 0.3, 15.0)),
    ("anthropic:claude-3-7-sonnet*", Price::of(3.0, 0.3, 15.0)),
    ("anthropic:claude-haiku-4-5*", Price::of(1.0, 0.1, 5.0)),
    ("anthropic:claude-3-5-haiku*", Price::of(0.8, 0.08, 4.0)),
    ("ollama:*", Price::of(0.0, 0.0, 0.0)),
];

/// The longest model pattern a `pricing` key may be.
const MAX_PATTERN: usize = 200;

/// Why `pattern` cannot be a `pricing` key, if it cannot: empty, too long, or holding
/// characters that are never in a model spec (blanks, control characters).
pub fn invalid_pattern(pattern: &str) -> Option<String> {
    if pattern.is_empty() || pattern.len() > MAX_PATTERN {
        return Some(format!(
            "a model pattern has 1 to {MAX_PATTERN} characters (`openai:gpt-4.1*`, `kimi:*`)"
        ));
    }
    pattern
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
        .then(|| "a model pattern holds no blanks or control characters".to_string())
}

/// Whether `spec` matches `pattern`, where `*` stands for any run of characters (and is
/// the only special character).
pub fn matches(pattern: &str, spec: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let Some((first, rest)) = parts.split_first() else {
        return false;
    };
    let Some(mut left) = spec.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return left.is_empty();
    };
    for part in middle {
        match left.find(part) {
            Some(i) => left = &left[i + part.len()..],
            None => return false,
        }
    }
    left.len() >= last.len() && left.ends_with(last)
}

/// The most specific of `entries` matching `spec`, with how specific it is: the one with the
/// most characters that are not `*` (the first of those in order on a tie).
fn best<'a>(
    entries: impl Iterator<Item = (&'a str, &'a Price)>,
    spec: &str,
) -> Option<(usize, Price)> {
    let mut found: Option<(usize, Price)> = None;
    for (pattern, price) in entries {
        if !matches(pattern, spec) {
            continue;
        }
        let weight = pattern.chars().filter(|c| *c != '*').count();
        if found.is_none_or(|(w, _)| weight > w) {
            found = Some((weight, *price));
        }
    }
    found
}

/// The price of model `spec` (`openai:gpt-4.1`): the most specific pattern that matches it,
/// the user's entries and the built-in ones taken together, the user's winning a tie; `None`
/// when none names it (its cost is then unknown). So a broad entry of the user's (`*` at $0,
/// for a free local server) never prices a model the built-in list names more exactly. The
/// built-in price of nothing for Ollama's models holds only where the model runs on this
/// machine or the local network (`local`): an `ollama:` spec pointed at a paid service
/// elsewhere is unpriced.
pub fn price_of(spec: &str, user: &BTreeMap<String, Price>, local: bool) -> Option<Price> {
    let mine = best(user.iter().map(|(k, v)| (k.as_str(), v)), spec);
    let builtin = best(
        BUILTIN_PRICES
            .iter()
            .filter(|(k, _)| local || !k.starts_with("ollama:"))
            .map(|(k, v)| (*k, v)),
        spec,
    );
    match (mine, builtin) {
        (Some((w, p)), Some((b, _))) if w >= b => Some(p),
        (_, Some((_, p))) | (Some((_, p)), None) => Some(p),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use waymark_protocol::cost::{Spend, label, micros};

    #[test]
    fn a_call_costs_its_tokens_at_the_price_to_the_micro_dollar() {
        let p = Price::of(2.0, 0.5, 8.0);
        let u = Usage {
            input_tokens: 1_200_000,
            output_tokens: 300_000,
            cached_tokens: 200_000,
            estimated: false,
        };
        // 1,000,000 fresh × $2 + 200,000 cached × $0.50 + 300,000 out × $8 = $4.50.
        assert_eq!(p.cost_micros(&u), 4_500_000);
        assert_eq!(label(p.cost_micros(&u)), "$4.50");
        // No cached price: cached input costs the input price.
        let plain = Price {
            cached_input_per_mtok: None,
            ..p
        };
        assert_eq!(plain.cost_micros(&u), 4_800_000);
        // Absurd usage saturates instead of wrapping.
        let huge = Usage {
            input_tokens: u64::MAX,
            output_tokens: u64::MAX,
            cached_tokens: 0,
            estimated: false,
        };
        assert_eq!(
            Price::of(10_000.0, 0.0, 10_000.0).cost_micros(&huge),
            u64::MAX
        );
    }

    #[test]
    fn patterns_match_with_stars_and_the_most_specific_wins() {
        assert!(matches("openai:gpt-4.1*", "openai:gpt-4.1-mini"));
        assert!(matches("kimi:*", "kimi:moonshot-v1"));
        assert!(matches("a*b*c", "axxbyyc"));
        assert!(!matches("a*b*c", "axxbyy"));
        assert!(!matches("openai:gpt-4.1", "openai:gpt-4.1-mini"));
        assert!(matches("*", "anything"));
        let mut user = BTreeMap::new();
        user.insert("openai:*".to_string(), Price::of(1.0, 1.0, 1.0));
        user.insert("openai:gpt-4.1*".to_string(), Price::of(9.0, 9.0, 9.0));
        assert_eq!(
            price_of("openai:gpt-4.1-turbo", &user, false)
                .unwrap()
                .input_per_mtok,
            9.0
        );
        // The built-in entry more specific than any of the user's.
        assert_eq!(
            price_of("openai:gpt-4.1-mini", &user, false)
                .unwrap()
                .input_per_mtok,
            0.4
        );
        // Fourth red-team: a broad entry of the user's (`openai:*`, `*` at $0) never prices a
        // model the built-in list names more exactly; an entry as specific as the built-in
        // one wins (a negotiated price).
        assert_eq!(
            price_of("openai:gpt-4o", &user, false)
                .unwrap()
                .input_per_mtok,
            2.5
        );
        let mut free = BTreeMap::new();
        free.insert("*".to_string(), Price::of(0.0, 0.0, 0.0));
        assert_eq!(
            price_of("openai:gpt-5-pro", &free, false).map(|p| p.output_per_mtok),
            Some(120.0)
        );
        assert_eq!(
            price_of("kimi:moonshot-v1", &free, false).map(|p| p.output_per_mtok),
            Some(0.0)
        );
        free.insert("openai:gpt-5-pro*".to_string(), Price::of(7.0, 7.0, 70.0));
        assert_eq!(
            price_of("openai:gpt-5-pro", &free, false).map(|p| p.output_per_mtok),
            Some(70.0)
        );
        let none = BTreeMap::new();
        assert_eq!(
            price_of("openai:gpt-4.1-mini", &none, false)
                .unwrap()
                .input_per_mtok,
            0.4
        );
        assert_eq!(
            price_of("anthropic:claude-sonnet-4-5", &none, false)
                .unwrap()
                .output_per_mtok,
            15.0
        );
        // Unknown stays unknown.
        assert_eq!(price_of("kimi:moonshot-v1", &none, false), None);
        assert_eq!(price_of("scripted:/tmp/x.json", &none, false), None);
        // The third red-team's findings: Ollama is free only on this machine or the local
        // network, and the pro and the first GPT-4o models have prices of their own.
        assert_eq!(
            price_of("ollama:llama3", &none, true).map(|p| p.output_per_mtok),
            Some(0.0)
        );
        assert_eq!(price_of("ollama:llama3", &none, false), None);
        assert_eq!(
            price_of("openai:gpt-5-pro", &none, false).map(|p| p.output_per_mtok),
            Some(120.0)
        );
        assert_eq!(
            price_of("openai:gpt-4o-2024-05-13", &none, false).map(|p| p.input_per_mtok),
            Some(5.0)
        );
        assert_eq!(
            price_of("openai:gpt-4o-2024-08-06", &none, false).map(|p| p.input_per_mtok),
            Some(2.5)
        );
    }

    #[test]
    fn amounts_read_as_money_and_unknown_is_never_zero() {
        assert_eq!(label(0), "$0.00");
        assert_eq!(label(12_300), "$0.0123");
        assert_eq!(label(30), "<$0.0001");
        assert_eq!(label(50), "$0.0001");
        assert_eq!(label(1_234_500_000), "$1,234.50");
        assert_eq!(micros(0.01), Some(10_000));
        assert_eq!(micros(-1.0), None);
        assert_eq!(micros(f64::NAN), None);
        let unknown = Spend {
            micros: 0,
            unpriced_calls: 2,
        };
        assert_eq!(unknown.usd(), None);
        assert!(unknown.label().starts_with("unknown"));
        assert!(Price::of(f64::INFINITY, 0.0, 0.0).invalid().is_some());
        assert_eq!(
            Price::of(1.0, -0.5, 1.0).invalid().map(|(f, _)| f),
            Some("cached_input_per_mtok")
        );
        assert_eq!(
            Price::of(1.0, 0.0, -2.0).invalid().map(|(f, _)| f),
            Some("output_per_mtok")
        );
        assert_eq!(Price::of(3.0, 0.3, 15.0).invalid(), None);
        // Fourth red-team: cached input dearer than input is refused, named.
        assert_eq!(
            Price::of(1.0, 10_000.0, 1.0).invalid().map(|(f, _)| f),
            Some("cached_input_per_mtok")
        );
        assert_eq!(Price::of(1.0, 1.0, 1.0).invalid(), None);
        // Fifth red-team: a price of 1e-300 made a listed model free while it looked priced.
        assert_eq!(
            Price::of(1e-300, 0.0, 0.0).invalid().map(|(f, _)| f),
            Some("input_per_mtok")
        );
        assert_eq!(
            Price::of(1.0, 0.0, 1e-9).invalid().map(|(f, _)| f),
            Some("output_per_mtok")
        );
        assert_eq!(Price::of(0.0, 0.0, 0.0).invalid(), None, "free, said so");
        // Sixth red-team: a price per token pasted in (OpenRouter's figures) made a model
        // nearly free: refused, and a priced call never costs nothing.
        assert_eq!(
            Price::of(0.000_003, 0.0, 0.000_015)
                .invalid()
                .map(|(f, _)| f),
            Some("input_per_mtok")
        );
        assert_eq!(Price::of(0.005, 0.001, 0.01).invalid(), None);
        let cheap = Price::of(0.005, 0.005, 0.005);
        let one = Usage {
            input_tokens: 1,
            ..Default::default()
        };
        assert_eq!(cheap.cost_micros(&one), 1);
    }
}
