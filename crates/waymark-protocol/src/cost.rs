//! Money as the wire carries it (G-31): whole micro-dollars (millionths of a USD), so sums
//! are exact, their arithmetic and how people read them, and what a session or a day spent.
//! Prices live with the settings (`waymark_config::pricing`).

use serde::{Deserialize, Serialize};

/// Micro-dollars in a dollar.
pub const MICROS_PER_USD: u64 = 1_000_000;

/// The largest cost budget or daily cap, in USD.
pub const MAX_COST_USD: f64 = 1_000_000.0;

/// Micro-dollars as dollars.
pub fn usd(micros: u64) -> f64 {
    micros as f64 / MICROS_PER_USD as f64
}

/// Dollars as whole micro-dollars, when they are a sane amount (finite, 0 to
/// [`MAX_COST_USD`]).
pub fn micros(usd: f64) -> Option<u64> {
    (usd.is_finite() && (0.0..=MAX_COST_USD).contains(&usd))
        .then(|| (usd * MICROS_PER_USD as f64).round() as u64)
}

/// An amount as people read it: `$0.0123`, `$4.20`, `$1,234.50`.
pub fn label(micros: u64) -> String {
    let usd = usd(micros);
    // Something spent never reads as nothing.
    if micros > 0 && micros < 50 {
        return "<$0.0001".to_string();
    }
    if usd < 1.0 && micros > 0 {
        return format!("${usd:.4}");
    }
    let cents = (micros + 5_000) / 10_000;
    let (whole, cents) = (cents / 100, cents % 100);
    let digits = whole.to_string();
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("${grouped}.{cents:02}")
}

/// What a set of calls cost: the priced part, and how many calls had no price (then the
/// total is unknown).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Spend {
    pub micros: u64,
    pub unpriced_calls: u64,
}

impl Spend {
    /// The total in USD, or `None` when a call had no price.
    pub fn usd(&self) -> Option<f64> {
        (self.unpriced_calls == 0).then(|| usd(self.micros))
    }

    /// As people read it: `$4.20`, or `unknown` when a call had no price (`at least $4.20`
    /// when some had one).
    pub fn label(&self) -> String {
        match (self.unpriced_calls, self.micros) {
            (0, m) => label(m),
            (_, 0) => "unknown (no price for the model)".into(),
            (_, m) => format!("at least {} (some calls had no price)", label(m)),
        }
    }
}

/// Spending across every session on this machine on one local day.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DailySpend {
    /// The local date, `YYYY-MM-DD`.
    pub day: String,
    pub spend: Spend,
    pub cost_usd: Option<f64>,
    /// `limits.daily_cost_usd`, when set.
    pub cap_usd: Option<f64>,
    /// The cap is reached: no model call starts until the next day or a higher cap.
    pub capped: bool,
}
