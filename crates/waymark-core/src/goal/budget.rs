//! Budget syntax (G-8): tokens as `50K`, `1.5M`, `200000`; turns as a plain integer; time as
//! `90s`, `45m`, `2h`. Invalid values are refused with the accepted forms.

/// A budget value that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{value}` is not a valid {what}; use {forms}")]
pub struct BudgetSyntaxError {
    pub value: String,
    pub what: &'static str,
    pub forms: &'static str,
}

const TOKEN_FORMS: &str = "a number of tokens such as 200000, 50K or 1.5M";
const TURN_FORMS: &str = "a whole number of turns such as 20";
const TIME_FORMS: &str = "a duration such as 90s, 45m or 2h";

fn err(value: &str, what: &'static str, forms: &'static str) -> BudgetSyntaxError {
    BudgetSyntaxError {
        value: value.to_string(),
        what,
        forms,
    }
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
    if !(1.0..=1e15).contains(&tokens) {
        return Err(bad());
    }
    Ok(tokens as u64)
}

/// Turns: a positive whole number.
pub fn parse_turns(s: &str) -> Result<u64, BudgetSyntaxError> {
    match s.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(err(s, "turn budget", TURN_FORMS)),
    }
}

/// Time: `90s`, `45m`, `2h`; returns seconds.
pub fn parse_seconds(s: &str) -> Result<u64, BudgetSyntaxError> {
    let t = s.trim();
    let bad = || err(s, "time budget", TIME_FORMS);
    let (num, mult) = match t.chars().last() {
        Some('s') => (&t[..t.len() - 1], 1),
        Some('m') => (&t[..t.len() - 1], 60),
        Some('h') => (&t[..t.len() - 1], 3600),
        _ => return Err(bad()),
    };
    match num.parse::<u64>() {
        Ok(n) if n > 0 => n.checked_mul(mult).ok_or_else(bad),
        _ => Err(bad()),
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
        for bad in ["90", "1d", "0s", "s", "1.5h"] {
            assert!(
                parse_seconds(bad)
                    .unwrap_err()
                    .to_string()
                    .contains("90s, 45m or 2h"),
                "{bad}"
            );
        }
    }
}
