//! The budget syntax (G-8) that the `/goal` command, the model's goal tools, an approved
//! plan and the settings share: tokens as `50K`, `1.5M`, `200000`; turns as a plain integer;
//! time as `90s`, `45m`, `2h`; cost as `$5` or `0.50` (USD). Invalid values are refused with
//! the accepted forms, values out of range with the accepted range; every path that sets a
//! budget goes through [`check`]. A goal's check commands are bounded here too.

use waymark_protocol::cost::{MAX_COST_USD, micros};
use waymark_protocol::{BudgetChange, Limit};

/// Largest token budget (the same bound as `goal.budget.default_tokens`).
pub const MAX_TOKENS: u64 = 1_000_000_000_000;
/// Largest turn budget.
pub const MAX_TURNS: u64 = 1_000_000;
/// Largest time budget in seconds (a year).
pub const MAX_SECONDS: u64 = 365 * 24 * 3600;

/// A budget value that could not be read or is out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetSyntaxError {
    #[error("`{value}` is not a valid {what}; use {forms}")]
    Syntax {
        value: String,
        what: &'static str,
        forms: &'static str,
    },
    #[error("the {what} must be between 1 and {max} (got {value})")]
    Range {
        what: &'static str,
        max: u64,
        value: String,
    },
    #[error("`{key}=` is given twice; give each of tokens=, turns=, time= and cost= at most once")]
    Twice { key: &'static str },
    /// The words do not follow the `/goal` grammar (a command word with words after it, an
    /// unclosed quote); the text says how to write it.
    #[error("{0}")]
    Grammar(String),
}

/// The most checks one goal carries.
pub const MAX_CHECKS: usize = 10;

/// The longest check command, in characters.
pub const MAX_CHECK_CHARS: usize = 2000;

/// Refuses a check command that is empty, too long, or holds a line break or NUL.
pub fn check_command(c: &str) -> Result<(), BudgetSyntaxError> {
    if c.trim().is_empty() {
        return Err(BudgetSyntaxError::Grammar(
            "a check is an empty command".into(),
        ));
    }
    if c.chars().count() > MAX_CHECK_CHARS {
        return Err(BudgetSyntaxError::Grammar(format!(
            "a check is at most {MAX_CHECK_CHARS} characters (got {})",
            c.chars().count()
        )));
    }
    if c.contains(['\n', '\r', '\0']) {
        return Err(BudgetSyntaxError::Grammar(
            "a check is one line: join several commands with && or put them in a script".into(),
        ));
    }
    Ok(())
}

const TOKEN_FORMS: &str = "a number of tokens such as 200000, 50K or 1.5M";
const TURN_FORMS: &str = "a whole number of turns such as 20";
const TIME_FORMS: &str = "a duration such as 90s, 45m or 2h";
const COST_FORMS: &str = "an amount of USD such as $5, 0.50 or $0.01";

fn err(value: &str, what: &'static str, forms: &'static str) -> BudgetSyntaxError {
    BudgetSyntaxError::Syntax {
        value: value.to_string(),
        what,
        forms,
    }
}

/// The dimensions of a budget, for range checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tokens,
    Turns,
    Seconds,
}

impl Kind {
    fn what(self) -> &'static str {
        match self {
            Kind::Tokens => "token budget",
            Kind::Turns => "turn budget",
            Kind::Seconds => "time budget in seconds",
        }
    }

    fn max(self) -> u64 {
        match self {
            Kind::Tokens => MAX_TOKENS,
            Kind::Turns => MAX_TURNS,
            Kind::Seconds => MAX_SECONDS,
        }
    }
}

/// Checks a budget value against its accepted range (1 to the dimension's maximum).
pub fn check(kind: Kind, value: u64) -> Result<u64, BudgetSyntaxError> {
    if (1..=kind.max()).contains(&value) {
        Ok(value)
    } else {
        Err(BudgetSyntaxError::Range {
            what: kind.what(),
            max: kind.max(),
            value: value.to_string(),
        })
    }
}

/// A time budget in seconds, checked, as milliseconds.
pub fn seconds_to_ms(seconds: u64) -> Result<u64, BudgetSyntaxError> {
    // In range, seconds × 1000 stays far below u64::MAX.
    Ok(check(Kind::Seconds, seconds)? * 1000)
}

/// Tokens: `200000`, `50K`, `1.5M` (K = 1,000, M = 1,000,000).
pub fn parse_tokens(s: &str) -> Result<u64, BudgetSyntaxError> {
    let t = s.trim();
    let bad = || err(s, "token budget", TOKEN_FORMS);
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1_000.0),
        Some('m' | 'M') => (&t[..t.len() - 1], 1_000_000.0),
        _ => (t, 1.0),
    };
    if num.is_empty()
        || !num.chars().all(|c| c.is_ascii_digit() || c == '.')
        || num.matches('.').count() > 1
    {
        return Err(bad());
    }
    if mult == 1.0 && num.contains('.') {
        return Err(bad());
    }
    let v: f64 = num.parse().map_err(|_| bad())?;
    let tokens = (v * mult).round();
    if tokens < 1.0 {
        return Err(bad());
    }
    if tokens > MAX_TOKENS as f64 {
        return Err(BudgetSyntaxError::Range {
            what: Kind::Tokens.what(),
            max: MAX_TOKENS,
            value: t.to_string(),
        });
    }
    Ok(tokens as u64)
}

/// Turns: a positive whole number.
pub fn parse_turns(s: &str) -> Result<u64, BudgetSyntaxError> {
    let t = s.trim();
    if t.is_empty() || !t.chars().all(|c| c.is_ascii_digit()) {
        return Err(err(s, "turn budget", TURN_FORMS));
    }
    match t.parse::<u64>() {
        Ok(0) => Err(err(s, "turn budget", TURN_FORMS)),
        Ok(n) => check(Kind::Turns, n),
        Err(_) => Err(BudgetSyntaxError::Range {
            what: Kind::Turns.what(),
            max: MAX_TURNS,
            value: t.to_string(),
        }),
    }
}

/// Time: `90s`, `45m`, `2h`; returns seconds.
pub fn parse_seconds(s: &str) -> Result<u64, BudgetSyntaxError> {
    let t = s.trim();
    let bad = || err(s, "time budget", TIME_FORMS);
    let (num, mult) = match t.chars().last() {
        Some('s') => (&t[..t.len() - 1], 1u64),
        Some('m') => (&t[..t.len() - 1], 60),
        Some('h') => (&t[..t.len() - 1], 3600),
        _ => return Err(bad()),
    };
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit()) {
        return Err(bad());
    }
    let too_big = || BudgetSyntaxError::Range {
        what: Kind::Seconds.what(),
        max: MAX_SECONDS,
        value: t.to_string(),
    };
    match num.parse::<u64>() {
        Ok(0) => Err(bad()),
        Ok(n) => check(Kind::Seconds, n.checked_mul(mult).ok_or_else(too_big)?),
        Err(_) => Err(too_big()),
    }
}

/// Cost: `$5`, `5`, `0.50`, `$0.01` (USD, at most a cent's hundredth below a
/// micro-dollar is rounded); returns micro-dollars.
pub fn parse_cost(s: &str) -> Result<u64, BudgetSyntaxError> {
    let t = s.trim();
    let bad = || err(s, "cost budget", COST_FORMS);
    let num = t.strip_prefix('$').unwrap_or(t);
    if num.is_empty()
        || !num.chars().all(|c| c.is_ascii_digit() || c == '.')
        || num.matches('.').count() > 1
        || num.starts_with('.')
    {
        return Err(bad());
    }
    let v: f64 = num.parse().map_err(|_| bad())?;
    if v > MAX_COST_USD {
        return Err(BudgetSyntaxError::Range {
            what: "cost budget in USD",
            max: MAX_COST_USD as u64,
            value: t.to_string(),
        });
    }
    match micros(v) {
        Some(m) if m >= 1 => Ok(m),
        _ => Err(bad()),
    }
}

/// Budget changes in `tokens=… turns=… time=… cost=…` form (`budget=` is an older name for
/// `tokens=`, still read): `None` leaves a dimension,
/// `Some(None)` clears it (`clear`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct BudgetArgs {
    pub tokens: Option<Option<u64>>,
    pub turns: Option<Option<u64>>,
    pub time_ms: Option<Option<u64>>,
    /// In micro-dollars.
    pub cost: Option<Option<u64>>,
}

/// Splits `args` into the objective words and budget settings. An objective in double
/// quotes is taken whole (a command word or `tokens=` inside it is just a word); only budget
/// settings may follow it.
pub fn split_args(args: &str) -> Result<(String, BudgetArgs), BudgetSyntaxError> {
    let t = args.trim_start();
    if let Some(inner) = t.strip_prefix('"') {
        let Some((quoted, after)) = inner.split_once('"') else {
            return Err(BudgetSyntaxError::Grammar(
                "the objective's opening quote is never closed: write /goal \"…\" with a closing quote".into(),
            ));
        };
        let (extra, b) = settings(after)?;
        if !extra.is_empty() {
            return Err(BudgetSyntaxError::Grammar(format!(
                "only budget settings (tokens=, turns=, time=, cost=) may follow the quoted objective, not `{extra}`"
            )));
        }
        return Ok((quoted.trim().to_string(), b));
    }
    settings(t)
}

/// The words of `args` that are not budget settings, and the settings.
fn settings(args: &str) -> Result<(String, BudgetArgs), BudgetSyntaxError> {
    let mut words = Vec::new();
    let mut b = BudgetArgs::default();
    for w in args.split_whitespace() {
        let setting = |v: &str,
                       parse: fn(&str) -> Result<u64, BudgetSyntaxError>|
         -> Result<Option<u64>, BudgetSyntaxError> {
            if v == "clear" {
                Ok(None)
            } else {
                parse(v).map(Some)
            }
        };
        // A key given twice is refused: `tokens=5K budget=6K` must not hide one value
        // behind the other.
        let once = |key: &'static str, set: bool| -> Result<(), BudgetSyntaxError> {
            if set {
                return Err(BudgetSyntaxError::Twice { key });
            }
            Ok(())
        };
        if let Some(v) = w
            .strip_prefix("tokens=")
            .or_else(|| w.strip_prefix("budget="))
        {
            once("tokens", b.tokens.is_some())?;
            b.tokens = Some(setting(v, parse_tokens)?);
        } else if let Some(v) = w.strip_prefix("turns=") {
            once("turns", b.turns.is_some())?;
            b.turns = Some(setting(v, parse_turns)?);
        } else if let Some(v) = w.strip_prefix("time=") {
            once("time", b.time_ms.is_some())?;
            b.time_ms = Some(setting(v, parse_seconds)?.map(|s| s * 1000)); // ≤ a year: no overflow
        } else if let Some(v) = w.strip_prefix("cost=") {
            once("cost", b.cost.is_some())?;
            b.cost = Some(setting(v, parse_cost)?);
        } else {
            words.push(w);
        }
    }
    Ok((words.join(" "), b))
}

/// `BudgetArgs` as a typed change (what `/goal … tokens=…` asks for).
pub fn change_of(b: &BudgetArgs) -> BudgetChange {
    let limit = |v: Option<Option<u64>>| v.map(|x| x.map_or(Limit::Clear, Limit::To));
    BudgetChange {
        tokens: limit(b.tokens),
        turns: limit(b.turns),
        seconds: limit(b.time_ms.map(|t| t.map(|ms| ms / 1000))),
        cost: limit(b.cost),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_8_accepted_forms() {
        assert_eq!(parse_tokens("50K").unwrap(), 50_000);
        assert_eq!(parse_tokens("1.5M").unwrap(), 1_500_000);
        assert_eq!(parse_tokens("200000").unwrap(), 200_000);
        assert_eq!(parse_tokens("2k").unwrap(), 2_000);
        assert_eq!(parse_turns("20").unwrap(), 20);
        assert_eq!(parse_seconds("90s").unwrap(), 90);
        assert_eq!(parse_seconds("45m").unwrap(), 2700);
        assert_eq!(parse_seconds("2h").unwrap(), 7200);
    }

    #[test]
    fn g_8_invalid_values_show_the_accepted_forms() {
        for bad in ["", "K", "1.5", "-5", "5G", "1..5K", "0", "abc"] {
            let e = parse_tokens(bad).unwrap_err();
            assert!(e.to_string().contains("50K or 1.5M"), "{bad}: {e}");
        }
        for bad in ["0", "1.5", "ten", ""] {
            assert!(
                parse_turns(bad)
                    .unwrap_err()
                    .to_string()
                    .contains("whole number")
            );
        }
        for bad in ["90", "1d", "0s", "s", "1.5h", "-5s"] {
            assert!(
                parse_seconds(bad)
                    .unwrap_err()
                    .to_string()
                    .contains("90s, 45m or 2h"),
                "{bad}"
            );
        }
    }

    #[test]
    fn absurd_budgets_are_refused_with_the_range_named() {
        for (e, range) in [
            (
                parse_tokens("99999999999999999999999").unwrap_err(),
                "1000000000000",
            ),
            (parse_tokens("2000000M").unwrap_err(), "1000000000000"),
            (parse_turns("18446744073709551616").unwrap_err(), "1000000"),
            (parse_turns("1000001").unwrap_err(), "1000000"),
            (
                parse_seconds("99999999999999999999h").unwrap_err(),
                "31536000",
            ),
            (parse_seconds("5124095576030431h").unwrap_err(), "31536000"),
            (check(Kind::Tokens, u64::MAX).unwrap_err(), "1000000000000"),
            (seconds_to_ms(u64::MAX).unwrap_err(), "31536000"),
        ] {
            let msg = e.to_string();
            assert!(msg.contains(&format!("between 1 and {range}")), "{msg}");
        }
        assert_eq!(seconds_to_ms(MAX_SECONDS).unwrap(), MAX_SECONDS * 1000);
    }

    #[test]
    fn g_9_budget_words_are_split_from_the_objective() {
        let (o, b) = split_args("fix the build budget=50K turns=10 time=2h").unwrap();
        assert_eq!(o, "fix the build");
        assert_eq!(
            b,
            BudgetArgs {
                tokens: Some(Some(50_000)),
                turns: Some(Some(10)),
                time_ms: Some(Some(7_200_000)),
                cost: None,
            }
        );
        let (o, b) = split_args("budget=clear").unwrap();
        assert_eq!((o.as_str(), b.tokens), ("", Some(None)));
        // `tokens=` is the word the form, the gauges and the plan use; `budget=` is kept.
        let (o, b) = split_args("fix it tokens=40K").unwrap();
        assert_eq!((o.as_str(), b.tokens), ("fix it", Some(Some(40_000))));
        let e = split_args("tokens=5K budget=6K").unwrap_err().to_string();
        assert!(e.contains("`tokens=` is given twice"), "{e}");
        assert!(
            split_args("x budget=lots")
                .unwrap_err()
                .to_string()
                .contains("50K or 1.5M")
        );
    }

    /// Issue 38, item 3 (G-40): command words are commands, never objectives.

    #[test]
    fn g_32_a_cost_budget_is_usd_in_micro_dollars() {
        assert_eq!(parse_cost("$5").unwrap(), 5_000_000);
        assert_eq!(parse_cost("0.50").unwrap(), 500_000);
        assert_eq!(parse_cost("$0.01").unwrap(), 10_000);
        for bad in [
            "",
            "$",
            "-1",
            "$0",
            "5 USD",
            "1e3",
            "$.5",
            "1.2.3",
            "$0.0000001",
        ] {
            assert!(
                parse_cost(bad)
                    .unwrap_err()
                    .to_string()
                    .contains("$5, 0.50"),
                "{bad}"
            );
        }
        assert!(
            parse_cost("$2000000")
                .unwrap_err()
                .to_string()
                .contains("between 1 and 1000000")
        );
        let (o, b) = split_args("fix it cost=$5 budget=50K").unwrap();
        assert_eq!((o.as_str(), b.cost), ("fix it", Some(Some(5_000_000))));
        assert!(
            split_args("x cost=1 cost=2")
                .unwrap_err()
                .to_string()
                .contains("cost=")
        );
        assert_eq!(change_of(&b).cost, Some(Limit::To(5_000_000)));
    }
}
