//! Checking answers against a form: the one validation of an elicitation's content.

use serde_json::{Map, Value};

use super::{Field, FieldKind, Form};

/// A field's problem with an answer: (field name, message for the user).
pub type Problem = (String, String);

impl Form {
    /// The values a new form starts with: each field's default, where it has one.
    pub fn defaults(&self) -> Map<String, Value> {
        let mut m = Map::new();
        for f in &self.fields {
            let v = match &f.kind {
                FieldKind::Text { default, .. } => default.clone().map(Value::String),
                FieldKind::Number {
                    default, integer, ..
                } => default.and_then(|d| number(d, *integer)),
                FieldKind::Boolean { default } => default.map(Value::Bool),
                FieldKind::Choice { default, .. } => default.clone().map(Value::String),
                FieldKind::Multi { default, .. } if !default.is_empty() => Some(Value::Array(
                    default.iter().cloned().map(Value::String).collect(),
                )),
                _ => None,
            };
            if let Some(v) = v {
                m.insert(f.name.clone(), v);
            }
        }
        m
    }

    /// Checks `content` against the form: every required field present, every value of
    /// its field's type and within its bounds, no unknown keys. Returns the content to
    /// send (values normalized: whole numbers of integer fields as integers), or every
    /// problem found, in field order.
    pub fn check(&self, content: &Map<String, Value>) -> Result<Map<String, Value>, Vec<Problem>> {
        let mut out = Map::new();
        let mut problems = Vec::new();
        for key in content.keys() {
            if !self.fields.iter().any(|f| f.name == *key) {
                problems.push((key.clone(), format!("{key}: not a field of this form")));
            }
        }
        for f in &self.fields {
            match content.get(&f.name) {
                None | Some(Value::Null) => {
                    if f.required {
                        problems.push((f.name.clone(), format!("{}: required", f.label())));
                    }
                }
                Some(v) => match check_value(f, v) {
                    Ok(v) => {
                        out.insert(f.name.clone(), v);
                    }
                    Err(msg) => problems.push((f.name.clone(), format!("{}: {msg}", f.label()))),
                },
            }
        }
        if problems.is_empty() {
            Ok(out)
        } else {
            Err(problems)
        }
    }
}

/// `x` as a JSON number, an integer where the field wants one.
fn number(x: f64, integer: bool) -> Option<Value> {
    if integer {
        if x.fract() != 0.0 || !x.is_finite() || x.abs() > 9_007_199_254_740_992.0 {
            return None;
        }
        Some(Value::from(x as i64))
    } else {
        serde_json::Number::from_f64(x).map(Value::Number)
    }
}

fn check_value(f: &Field, v: &Value) -> Result<Value, String> {
    match &f.kind {
        FieldKind::Text {
            min_length,
            max_length,
            pattern,
            format,
            ..
        } => {
            let s = v.as_str().ok_or("must be text")?;
            let n = s.chars().count() as u64;
            if let Some(min) = min_length
                && n < *min
            {
                return Err(format!("at least {min} characters"));
            }
            if let Some(max) = max_length
                && n > *max
            {
                return Err(format!("at most {max} characters"));
            }
            if let Some(p) = pattern
                && !matches_pattern(p, s)
            {
                return Err(format!("must match {p}"));
            }
            if let Some(fmt) = format {
                check_format(fmt, s)?;
            }
            Ok(Value::String(s.to_string()))
        }
        FieldKind::Number {
            integer,
            minimum,
            maximum,
            ..
        } => {
            let x = v.as_f64().ok_or("must be a number")?;
            let out = number(x, *integer).ok_or(if *integer {
                "must be a whole number"
            } else {
                "must be a finite number"
            })?;
            if let Some(min) = minimum
                && x < *min
            {
                return Err(format!("at least {min}"));
            }
            if let Some(max) = maximum
                && x > *max
            {
                return Err(format!("at most {max}"));
            }
            Ok(out)
        }
        FieldKind::Boolean { .. } => v
            .as_bool()
            .map(Value::Bool)
            .ok_or_else(|| "must be true or false".into()),
        FieldKind::Choice { options, .. } => {
            let s = v.as_str().ok_or("must be one of the choices")?;
            if options.iter().any(|o| o.value == s) {
                Ok(Value::String(s.to_string()))
            } else {
                Err(format!("{s:?} is not one of the choices"))
            }
        }
        FieldKind::Multi {
            options,
            min_items,
            max_items,
            ..
        } => {
            let list = v.as_array().ok_or("must be a list of choices")?;
            let mut picked = Vec::new();
            for item in list {
                let s = item.as_str().ok_or("must be a list of choices")?;
                if !options.iter().any(|o| o.value == s) {
                    return Err(format!("{s:?} is not one of the choices"));
                }
                if !picked.iter().any(|p: &Value| p == item) {
                    picked.push(item.clone());
                }
            }
            let n = picked.len() as u64;
            if let Some(min) = min_items
                && n < *min
            {
                return Err(format!("pick at least {min}"));
            }
            if let Some(max) = max_items
                && n > *max
            {
                return Err(format!("pick at most {max}"));
            }
            Ok(Value::Array(picked))
        }
        FieldKind::Unsupported { schema_type } => {
            Err(format!("a {schema_type} field cannot be filled in here"))
        }
    }
}

/// Whether `s` matches the schema's `pattern` (ECMAScript syntax, mostly shared with
/// Rust's `regex`; unanchored, as JSON Schema says). A pattern that does not compile (or
/// is too large) is not enforced: the agent validates what it receives anyway.
fn matches_pattern(pattern: &str, s: &str) -> bool {
    match regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
    {
        Ok(re) => re.is_match(s),
        Err(_) => true,
    }
}

fn check_format(format: &str, s: &str) -> Result<(), String> {
    let ok = match format {
        "email" => s.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !s.chars().any(char::is_whitespace)
                && !domain.contains('@')
        }),
        "uri" => s.split_once(':').is_some_and(|(scheme, rest)| {
            let mut c = scheme.chars();
            c.next().is_some_and(|c| c.is_ascii_alphabetic())
                && c.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && !rest.is_empty()
                && !s.chars().any(|c| c.is_whitespace() || c.is_control())
        }),
        "date" => is_date(s),
        "date-time" => s
            .split_once(['T', 't'])
            .is_some_and(|(d, t)| is_date(d) && is_time(t)),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(match format {
            "email" => "must be an email address".into(),
            "uri" => "must be a URI (scheme:…)".into(),
            "date" => "must be a date (YYYY-MM-DD)".into(),
            _ => "must be a date and time (YYYY-MM-DDTHH:MM:SSZ)".into(),
        })
    }
}

fn digits(s: &str, n: usize) -> Option<u32> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok())?
}

fn is_date(s: &str) -> bool {
    let mut p = s.split('-');
    let (Some(y), Some(m), Some(d), None) = (p.next(), p.next(), p.next(), p.next()) else {
        return false;
    };
    let (Some(y), Some(m), Some(d)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else {
        return false;
    };
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// `HH:MM:SS[.frac](Z|±HH:MM)` (RFC 3339).
fn is_time(s: &str) -> bool {
    let (clock, zone_ok) = if let Some(c) = s.strip_suffix(['Z', 'z']) {
        (c, true)
    } else if let Some(i) = s.rfind(['+', '-']) {
        let zone = &s[i + 1..];
        let ok = zone.split_once(':').is_some_and(|(h, m)| {
            digits(h, 2).is_some_and(|h| h < 24) && digits(m, 2).is_some_and(|m| m < 60)
        });
        (&s[..i], ok)
    } else {
        (s, false)
    };
    let clock = clock.split_once('.').map_or(clock, |(c, frac)| {
        if !frac.is_empty() && frac.bytes().all(|b| b.is_ascii_digit()) {
            c
        } else {
            ""
        }
    });
    let mut p = clock.split(':');
    let (Some(h), Some(m), Some(sec), None) = (p.next(), p.next(), p.next(), p.next()) else {
        return false;
    };
    zone_ok
        && digits(h, 2).is_some_and(|h| h < 24)
        && digits(m, 2).is_some_and(|m| m < 60)
        && digits(sec, 2).is_some_and(|s| s <= 60)
}

/// Reads what a user typed into a field (text, number) as the field's value: `None` for
/// an empty entry (the field is left out).
pub fn from_input(f: &Field, input: &str) -> Result<Option<Value>, String> {
    if input.is_empty() {
        return Ok(None);
    }
    match &f.kind {
        FieldKind::Number { .. } => {
            let x: f64 = input
                .trim()
                .parse()
                .map_err(|_| format!("{}: must be a number", f.label()))?;
            Ok(Some(
                serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number),
            ))
        }
        _ => Ok(Some(Value::String(input.to_string()))),
    }
}
