//! Calendar dates of Unix times (UTC), for log file names and the dates exports and
//! listings print, and dates typed by a user. The calendar is `jiff`'s.

use jiff::Timestamp;
use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;

/// The UTC date and time of a Unix time in seconds (the epoch for one out of range).
pub fn civil(secs: i64) -> DateTime {
    TimeZone::UTC.to_datetime(Timestamp::from_second(secs).unwrap_or(Timestamp::UNIX_EPOCH))
}

/// The Unix time of midnight UTC starting `date` (`2026-11-30`); an error for anything
/// that is not a real date (`2026-02-31`, `2026-13-01`).
pub fn midnight_utc(date: &str) -> Result<i64, String> {
    let d: Date = date.parse().map_err(|e: jiff::Error| e.to_string())?;
    TimeZone::UTC
        .to_timestamp(d.to_datetime(jiff::civil::Time::midnight()))
        .map(|t| t.as_second())
        .map_err(|e| e.to_string())
}

/// `2026-12-01 14:03 UTC`.
pub fn utc_minutes(secs: f64) -> String {
    civil(secs.max(0.0) as i64)
        .strftime("%Y-%m-%d %H:%M UTC")
        .to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn dates() {
        let d = civil(1795996800 + 3661);
        assert_eq!(
            (
                d.year(),
                d.month(),
                d.day(),
                d.hour(),
                d.minute(),
                d.second()
            ),
            (2026, 11, 30, 1, 1, 1)
        );
        let leap = civil(951_782_400);
        assert_eq!((leap.year(), leap.month(), leap.day()), (2000, 2, 29));
        assert_eq!(midnight_utc("2026-11-30"), Ok(1795996800));
        assert_eq!(midnight_utc("2000-02-29"), Ok(951_782_400));
        assert!(midnight_utc("2026-02-31").is_err());
        assert!(midnight_utc("2026-13-01").is_err());
        assert!(midnight_utc("2026-11").is_err());
        assert_eq!(utc_minutes(1795996800.0 + 3661.0), "2026-11-30 01:01 UTC");
    }
}
