//! Dates, as HTTP writes them (RFC 9110 §5.6.7) and as access logs do.
//!
//! No clock here: a date is whole seconds since the Unix epoch, given by the caller.
//!
//! * [`HttpDate`] writes IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, always 29 bytes)
//!   and parses it, and the two obsolete forms recipients must accept (RFC 850's
//!   `Sunday, 06-Nov-94 08:49:37 GMT` and asctime's `Sun Nov  6 08:49:37 1994`).
//! * [`ClfDate`] writes the Common Log Format's time (`10/Oct/2000:13:55:36 +0000`).
//!
//! Both write dates from 1970 to 9999 (later ones are written as the last second of 9999,
//! so a date always has the same length).
//!
//! ```
//! use trickles::app::http::{ClfDate, HttpDate};
//!
//! assert_eq!(HttpDate(784_111_777).to_string(), "Sun, 06 Nov 1994 08:49:37 GMT");
//! assert_eq!(HttpDate::parse(b"Sunday, 06-Nov-94 08:49:37 GMT"), Some(784_111_777));
//! assert_eq!(HttpDate::parse(b"Sun Nov  6 08:49:37 1994"), Some(784_111_777));
//! assert_eq!(ClfDate(971_186_136).to_string(), "10/Oct/2000:13:55:36 +0000");
//! ```

use core::fmt;

/// The last second written: 9999-12-31 23:59:59.
const MAX_SECS: u64 = 253_402_300_799;

const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
const LONG_DAYS: [&str; 7] = [
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A date broken into its parts (UTC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Civil {
    year: u64,
    /// 1..=12.
    month: u64,
    /// 1..=31.
    day: u64,
    hour: u64,
    minute: u64,
    second: u64,
    /// 0 = Thursday (1 January 1970 was one).
    weekday: usize,
}

/// Seconds since the epoch into their civil date (H. Hinnant's `civil_from_days`,
/// for days ≥ 0).
fn civil(secs: u64) -> Civil {
    let secs = secs.min(MAX_SECS);
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days since 0000-03-01, in 400-year eras of 146097 days.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    Civil {
        year,
        month,
        day,
        hour: rest / 3600,
        minute: rest / 60 % 60,
        second: rest % 60,
        weekday: (days % 7) as usize,
    }
}

/// Days since the epoch of a valid date from 1970 on (`days_from_civil`).
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y / 400;
    let yoe = y % 400;
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe) - 719_468
}

fn days_in_month(year: u64, month: u64) -> u64 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A time as HTTP writes it: [`Display`](fmt::Display) writes IMF-fixdate,
/// [`HttpDate::parse`] reads any of the three forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct HttpDate(pub u64);

/// Bytes of an IMF-fixdate.
pub const HTTP_DATE_LEN: usize = 29;

impl HttpDate {
    /// Parses an HTTP-date: IMF-fixdate, RFC 850 (two-digit years 70–99 are 19xx, 00–69
    /// 20xx) or asctime. The weekday must be a day's name but is not checked against the
    /// date; a date before 1970, a day past its month's end, or anything else malformed
    /// is `None` (which makes a conditional header be ignored, as RFC 9110 §13.1.3 asks).
    pub fn parse(value: &[u8]) -> Option<u64> {
        let value = trim(value);
        let comma = value.iter().position(|&b| b == b',');
        let (year, month, day, time) = match comma {
            Some(3) => imf(value)?,
            Some(_) => rfc850(value)?,
            None => asctime(value)?,
        };
        if !(1970..=9999).contains(&year) || day == 0 || day > days_in_month(year, month) {
            return None;
        }
        let (hour, minute, second) = time;
        if hour > 23 || minute > 59 || second > 60 {
            return None;
        }
        let days = days_from_civil(year, month, day);
        Some(days * 86_400 + hour * 3600 + minute * 60 + second)
    }
}

impl HttpDate {
    /// The IMF-fixdate, as bytes: what [`Display`](fmt::Display) writes, without the
    /// formatting machinery (a response head is written for every request a Trickles
    /// server resumes).
    pub fn to_bytes(self) -> [u8; HTTP_DATE_LEN] {
        let c = civil(self.0);
        let mut out = *b"Thu, 01 Jan 1970 00:00:00 GMT";
        let name = |n: &&str| n.as_bytes().first_chunk::<3>().copied();
        let put = |out: &mut [u8; HTTP_DATE_LEN], at: usize, n: u64, width: usize| {
            let mut n = n;
            for i in (at..at + width).rev() {
                if let Some(d) = out.get_mut(i) {
                    *d = b'0' + (n % 10) as u8;
                }
                n /= 10;
            }
        };
        if let Some(day) = DAYS.get(c.weekday).and_then(name) {
            out[..3].copy_from_slice(&day);
        }
        if let Some(month) = name(&month_name(c.month)) {
            out[8..11].copy_from_slice(&month);
        }
        put(&mut out, 5, c.day, 2);
        put(&mut out, 12, c.year, 4);
        put(&mut out, 17, c.hour, 2);
        put(&mut out, 20, c.minute, 2);
        put(&mut out, 23, c.second, 2);
        out
    }
}

impl fmt::Display for HttpDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Always ASCII.
        f.write_str(core::str::from_utf8(&self.to_bytes()).map_err(|_| fmt::Error)?)
    }
}

/// A time as the Common Log Format writes it (`10/Oct/2000:13:55:36 +0000`, always UTC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClfDate(pub u64);

impl fmt::Display for ClfDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = civil(self.0);
        write!(
            f,
            "{:02}/{}/{:04}:{:02}:{:02}:{:02} +0000",
            c.day,
            month_name(c.month),
            c.year,
            c.hour,
            c.minute,
            c.second
        )
    }
}

fn month_name(month: u64) -> &'static str {
    usize::try_from(month)
        .ok()
        .and_then(|m| MONTHS.get(m.wrapping_sub(1)))
        .unwrap_or(&"Jan")
}

type Parts = (u64, u64, u64, (u64, u64, u64));

/// `Sun, 06 Nov 1994 08:49:37 GMT`.
fn imf(v: &[u8]) -> Option<Parts> {
    let [d0, d1, d2, b',', b' ', rest @ ..] = v else {
        return None;
    };
    weekday(&[*d0, *d1, *d2], &DAYS)?;
    let [
        a,
        b,
        b' ',
        m0,
        m1,
        m2,
        b' ',
        y0,
        y1,
        y2,
        y3,
        b' ',
        time @ ..,
    ] = rest
    else {
        return None;
    };
    let (time, zone) = time.split_at_checked(8)?;
    (zone == b" GMT").then_some(())?;
    Some((
        digits(&[*y0, *y1, *y2, *y3])?,
        month(&[*m0, *m1, *m2])?,
        digits(&[*a, *b])?,
        clock(time)?,
    ))
}

/// `Sunday, 06-Nov-94 08:49:37 GMT`.
fn rfc850(v: &[u8]) -> Option<Parts> {
    let comma = v.iter().position(|&b| b == b',')?;
    let (name, rest) = v.split_at(comma);
    weekday(name, &LONG_DAYS)?;
    let [
        b',',
        b' ',
        a,
        b,
        b'-',
        m0,
        m1,
        m2,
        b'-',
        y0,
        y1,
        b' ',
        time @ ..,
    ] = rest
    else {
        return None;
    };
    let (time, zone) = time.split_at_checked(8)?;
    (zone == b" GMT").then_some(())?;
    let yy = digits(&[*y0, *y1])?;
    Some((
        if yy < 70 { 2000 + yy } else { 1900 + yy },
        month(&[*m0, *m1, *m2])?,
        digits(&[*a, *b])?,
        clock(time)?,
    ))
}

/// `Sun Nov  6 08:49:37 1994` (the day padded with a space).
fn asctime(v: &[u8]) -> Option<Parts> {
    let [d0, d1, d2, b' ', m0, m1, m2, b' ', a, b, b' ', rest @ ..] = v else {
        return None;
    };
    weekday(&[*d0, *d1, *d2], &DAYS)?;
    let (time, year) = rest.split_at_checked(8)?;
    let [b' ', y0, y1, y2, y3] = year else {
        return None;
    };
    let day = match (a, b) {
        (b' ', d) => digits(&[*d])?,
        (a, b) => digits(&[*a, *b])?,
    };
    Some((
        digits(&[*y0, *y1, *y2, *y3])?,
        month(&[*m0, *m1, *m2])?,
        day,
        clock(time)?,
    ))
}

/// `HH:MM:SS`.
fn clock(t: &[u8]) -> Option<(u64, u64, u64)> {
    let [h0, h1, b':', m0, m1, b':', s0, s1] = t else {
        return None;
    };
    Some((
        digits(&[*h0, *h1])?,
        digits(&[*m0, *m1])?,
        digits(&[*s0, *s1])?,
    ))
}

fn weekday(name: &[u8], names: &[&str]) -> Option<()> {
    names.iter().any(|n| n.as_bytes() == name).then_some(())
}

/// 1..=12 for a month's name (case as written: `Nov`).
fn month(name: &[u8]) -> Option<u64> {
    MONTHS
        .iter()
        .position(|m| m.as_bytes() == name)
        .map(|i| i as u64 + 1)
}

fn digits(d: &[u8]) -> Option<u64> {
    d.iter().try_fold(0u64, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + u64::from(b - b'0'))
    })
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use proptest::prelude::*;

    #[test]
    fn the_rfc_example_in_all_three_forms() {
        let t = 784_111_777;
        assert_eq!(HttpDate(t).to_string(), "Sun, 06 Nov 1994 08:49:37 GMT");
        for form in [
            &b"Sun, 06 Nov 1994 08:49:37 GMT"[..],
            b"Sunday, 06-Nov-94 08:49:37 GMT",
            b"Sun Nov  6 08:49:37 1994",
            b" Sun, 06 Nov 1994 08:49:37 GMT\t",
        ] {
            assert_eq!(HttpDate::parse(form), Some(t), "{form:?}");
        }
    }

    #[test]
    fn literal_vectors() {
        for (secs, imf, clf) in [
            (
                0,
                "Thu, 01 Jan 1970 00:00:00 GMT",
                "01/Jan/1970:00:00:00 +0000",
            ),
            (
                971_186_136,
                "Tue, 10 Oct 2000 13:55:36 GMT",
                "10/Oct/2000:13:55:36 +0000",
            ),
            (
                951_782_400,
                "Tue, 29 Feb 2000 00:00:00 GMT",
                "29/Feb/2000:00:00:00 +0000",
            ),
            (
                1_709_164_799,
                "Wed, 28 Feb 2024 23:59:59 GMT",
                "28/Feb/2024:23:59:59 +0000",
            ),
            (
                4_107_542_400,
                "Mon, 01 Mar 2100 00:00:00 GMT",
                "01/Mar/2100:00:00:00 +0000",
            ),
            (
                MAX_SECS,
                "Fri, 31 Dec 9999 23:59:59 GMT",
                "31/Dec/9999:23:59:59 +0000",
            ),
            (
                u64::MAX,
                "Fri, 31 Dec 9999 23:59:59 GMT",
                "31/Dec/9999:23:59:59 +0000",
            ),
        ] {
            assert_eq!(HttpDate(secs).to_string(), imf);
            assert_eq!(ClfDate(secs).to_string(), clf);
            assert_eq!(HttpDate::parse(imf.as_bytes()), Some(secs.min(MAX_SECS)));
        }
    }

    #[test]
    fn malformed_dates_are_none() {
        for bad in [
            &b""[..],
            b"Sun, 06 Nov 1994 08:49:37 UTC",
            b"Sun, 06 Nov 1994 08:49:37",
            b"Sun, 6 Nov 1994 08:49:37 GMT",
            b"Sun, 06 nov 1994 08:49:37 GMT",
            b"Xyz, 06 Nov 1994 08:49:37 GMT",
            b"Sun, 31 Nov 1994 08:49:37 GMT",
            b"Sun, 29 Feb 1900 08:49:37 GMT",
            b"Sun, 00 Nov 1994 08:49:37 GMT",
            b"Sun, 06 Nov 1969 08:49:37 GMT",
            b"Sun, 06 Nov 1994 24:00:00 GMT",
            b"Sun, 06 Nov 1994 08:60:00 GMT",
            b"Sun, 06 Nov 1994 08:49:61 GMT",
            b"Sun, 06 Nov 1994 08-49-37 GMT",
            b"Sun, 06 Nov 1994 08:49:37 GMT extra",
            b"Sun, 06 Nov +994 08:49:37 GMT",
            b"Sunday, 06-Nov-1994 08:49:37 GMT",
            b"Sun, 06-Nov-94 08:49:37 GMT",
            b"Sun Nov 6 08:49:37 1994",
            b"Sun Nov  6 08:49:37 94",
            b"\xff\xfe, 06 Nov 1994 08:49:37 GMT",
        ] {
            assert_eq!(
                HttpDate::parse(bad),
                None,
                "{:?}",
                core::str::from_utf8(bad)
            );
        }
        // Two-digit years: 70–99 are 19xx, 00–69 20xx.
        assert_eq!(
            HttpDate::parse(b"Thursday, 01-Jan-70 00:00:00 GMT"),
            Some(0)
        );
        assert_eq!(
            HttpDate::parse(b"Monday, 01-Jan-69 00:00:00 GMT"),
            HttpDate::parse(b"Tue, 01 Jan 2069 00:00:00 GMT")
        );
        // A leap second is taken as written.
        assert_eq!(
            HttpDate::parse(b"Sat, 31 Dec 2016 23:59:60 GMT"),
            Some(1_483_228_800)
        );
        // Ordering follows time.
        assert!(HttpDate(1) < HttpDate(2));
    }

    proptest! {
        /// Every second from 1970 to 9999 writes 29 bytes in each of the three forms and
        /// reads back as itself (the RFC 850 form within its century).
        #[test]
        fn every_date_round_trips(secs in 0..=MAX_SECS) {
            let imf = HttpDate(secs).to_string();
            prop_assert_eq!(imf.len(), HTTP_DATE_LEN);
            let c = civil(secs);
            let reference = alloc::format!(
                "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
                DAYS[c.weekday], c.day, month_name(c.month), c.year, c.hour, c.minute, c.second
            );
            prop_assert_eq!(&imf, &reference);
            prop_assert_eq!(HttpDate::parse(imf.as_bytes()), Some(secs));
            let asc = alloc::format!(
                "{} {} {:>2} {:02}:{:02}:{:02} {}",
                DAYS[c.weekday], month_name(c.month), c.day, c.hour, c.minute, c.second, c.year
            );
            prop_assert_eq!(HttpDate::parse(asc.as_bytes()), Some(secs));
            if (1970..2070).contains(&c.year) {
                let rfc850 = alloc::format!(
                    "{}, {:02}-{}-{:02} {:02}:{:02}:{:02} GMT",
                    LONG_DAYS[c.weekday], c.day, month_name(c.month), c.year % 100,
                    c.hour, c.minute, c.second
                );
                prop_assert_eq!(HttpDate::parse(rfc850.as_bytes()), Some(secs));
            }
            prop_assert_eq!(ClfDate(secs).to_string().len(), 26);
        }

        /// Any bytes: no panic, and whatever parses is a date that writes back the same
        /// second.
        #[test]
        fn any_bytes_parse_without_panic(bytes in prop::collection::vec(any::<u8>(), 0..40)) {
            if let Some(secs) = HttpDate::parse(&bytes) {
                prop_assert!(secs <= MAX_SECS + 1);
            }
        }
    }
}
