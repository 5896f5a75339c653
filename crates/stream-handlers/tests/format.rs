//! Declared formats against an independent reader, the text form, validation, and the
//! shipped generators.

use proptest::prelude::*;
use stream_handlers::format::shipped::{FlightRecord, GenerateError, ImageFrame};
use stream_handlers::format::{
    Endian, FieldDecl, FieldError, Format, FormatError, MAX_FIELDS, ReadError, Scalar, TokenError,
    Type, Value,
};

/// The value at `bytes` (exactly the field's size), read with std's own conversions.
fn reference(ty: Type, bytes: &[u8]) -> Value {
    let le = ty.endian == Endian::Little;
    macro_rules! rd {
        ($t:ty, $v:ident) => {{
            let a = <[u8; size_of::<$t>()]>::try_from(bytes).expect("field-sized slice");
            Value::$v(if le {
                <$t>::from_le_bytes(a)
            } else {
                <$t>::from_be_bytes(a)
            })
        }};
    }
    match ty.scalar {
        Scalar::U8 => rd!(u8, U8),
        Scalar::U16 => rd!(u16, U16),
        Scalar::U32 => rd!(u32, U32),
        Scalar::U64 => rd!(u64, U64),
        Scalar::I8 => rd!(i8, I8),
        Scalar::I16 => rd!(i16, I16),
        Scalar::I32 => rd!(i32, I32),
        Scalar::I64 => rd!(i64, I64),
        Scalar::F32 => rd!(f32, F32),
        Scalar::F64 => rd!(f64, F64),
    }
}

/// A value as comparable bits (NaN payloads included).
fn bits(v: Value) -> (Scalar, u64) {
    let b = match v {
        Value::U8(x) => u64::from(x),
        Value::U16(x) => u64::from(x),
        Value::U32(x) => u64::from(x),
        Value::U64(x) => x,
        Value::I8(x) => x as u64,
        Value::I16(x) => x as u64,
        Value::I32(x) => x as u64,
        Value::I64(x) => x as u64,
        Value::F32(x) => u64::from(x.to_bits()),
        Value::F64(x) => x.to_bits(),
    };
    (v.scalar(), b)
}

fn ty() -> impl Strategy<Value = Type> {
    (prop::sample::select(Scalar::ALL.to_vec()), any::<bool>()).prop_map(|(scalar, le)| Type {
        scalar,
        endian: if le { Endian::Little } else { Endian::Big },
    })
}

/// Valid field lists: unique names (a digit-only suffix after the last `_`), fields laid out with random gaps, in random order.
fn fields(max: usize) -> impl Strategy<Value = Vec<FieldDecl>> {
    prop::collection::vec(("[a-zA-Z_.-][a-zA-Z0-9_.-]{0,20}", ty(), 0u16..6), 0..=max)
        .prop_map(|v| {
            let mut at = 0u16;
            v.into_iter()
                .enumerate()
                .map(|(i, (name, ty, gap))| {
                    let d = FieldDecl::new(format!("{name}_{i}"), at + gap, ty);
                    at += gap + ty.size();
                    d
                })
                .collect::<Vec<_>>()
        })
        .prop_shuffle()
}

proptest! {
    #[test]
    fn get_agrees_with_an_independent_reader(
        fs in fields(20),
        payload in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        let f = Format::new(fs.clone()).expect("valid by construction");
        for d in &fs {
            let got = f.get(&d.name, &payload);
            match payload.get(usize::from(d.offset)..d.end()) {
                Some(b) => prop_assert_eq!(bits(got.expect("in range")), bits(reference(d.ty, b))),
                None => prop_assert_eq!(
                    got,
                    Err(ReadError::Short { name: d.name.clone(), need: d.end(), len: payload.len() })
                ),
            }
        }
    }

    #[test]
    fn set_then_get_gives_the_value_and_leaves_other_bytes(
        fs in fields(12),
        payload in prop::collection::vec(any::<u8>(), 0..120),
        pick in any::<prop::sample::Index>(),
        raw in prop::collection::vec(any::<u8>(), 8),
    ) {
        prop_assume!(!fs.is_empty());
        let f = Format::new(fs.clone()).expect("valid by construction");
        let d = pick.get(&fs);
        let v = reference(d.ty, &raw[..usize::from(d.ty.size())]);
        let mut p = payload.clone();
        match f.set(&d.name, v, &mut p) {
            Ok(()) => {
                prop_assert_eq!(bits(f.get(&d.name, &p).expect("set, so in range")), bits(v));
                for (i, (a, b)) in payload.iter().zip(&p).enumerate() {
                    if !(usize::from(d.offset)..d.end()).contains(&i) {
                        prop_assert_eq!(a, b);
                    }
                }
            }
            Err(e) => {
                prop_assert!(d.end() > payload.len());
                prop_assert_eq!(e, ReadError::Short { name: d.name.clone(), need: d.end(), len: payload.len() });
                prop_assert_eq!(p, payload);
            }
        }
    }

    #[test]
    fn text_round_trips(fs in fields(MAX_FIELDS)) {
        let f = Format::new(fs).expect("valid by construction");
        let text = f.to_string();
        prop_assert_eq!(text.parse::<Format>(), Ok(f.clone()));
        prop_assert_eq!(f.len(), f.fields().iter().map(FieldDecl::end).max().unwrap_or(0));
    }

    #[test]
    fn predicate_fields_read_what_get_reads_or_are_refused(
        fs in fields(16),
        payload in prop::collection::vec(any::<u8>(), 0..100),
    ) {
        let f = Format::new(fs.clone()).expect("valid by construction");
        for d in &fs {
            let expressible = matches!(d.ty.scalar, Scalar::U8 | Scalar::U16 | Scalar::U32)
                && (d.ty.endian == Endian::Big || d.ty.size() == 1);
            match f.field(&d.name) {
                Ok(field) => {
                    prop_assert!(expressible, "{} gave a predicate field", d.ty);
                    let want = f.get(&d.name, &payload).ok().and_then(Value::as_u64);
                    prop_assert_eq!(field.read(&payload).map(u64::from), want);
                }
                Err(e) => {
                    prop_assert!(!expressible, "{} refused", d.ty);
                    let is_unsupported = matches!(e, FieldError::Unsupported { .. });
                    prop_assert!(is_unsupported);
                }
            }
        }
    }

    #[test]
    fn each_invalid_case_gives_its_error(fs in fields(10), pick in any::<prop::sample::Index>(), t in ty()) {
        prop_assume!(!fs.is_empty());
        let d = pick.get(&fs).clone();
        let check = |bad: Vec<FieldDecl>, want: FormatError| -> Result<(), TestCaseError> {
            prop_assert_eq!(Format::new(bad.clone()), Err(want.clone()));
            let text: Vec<String> =
                bad.iter().map(|d| format!("{}:{}@{}", d.name, d.ty, d.offset)).collect();
            let parsed = text.join(" ").parse::<Format>();
            if !matches!(want, FormatError::BadName { .. }) {
                // A bad name may not even tokenise; the others fail on the last token.
                let e = parsed.expect_err("invalid");
                prop_assert_eq!(&e.token, text.last().expect("one token at least"));
                prop_assert_eq!(e.error, TokenError::Invalid(want));
            } else {
                prop_assert!(parsed.is_err());
            }
            Ok(())
        };
        let mut dup = fs.clone();
        dup.push(FieldDecl::new(d.name.clone(), 60_000, t));
        check(dup, FormatError::DuplicateName { name: d.name.clone() })?;
        // A field starting on d's last byte; the error names the first field it overlaps.
        let new = FieldDecl::new("new", d.offset + d.ty.size() - 1, t);
        let first = fs.iter().find(|b| b.offset < new.offset + t.size() && new.offset < b.offset + b.ty.size());
        let first = first.expect("overlaps d at least").name.clone();
        let mut overlap = fs.clone();
        overlap.push(new);
        check(overlap, FormatError::Overlap { first, second: "new".into() })?;
        let mut empty = fs.clone();
        empty.push(FieldDecl::new("", 60_000, t));
        check(empty, FormatError::EmptyName { index: fs.len() })?;
        let mut bad = fs.clone();
        bad.push(FieldDecl::new("a:b", 60_000, t));
        check(bad, FormatError::BadName { name: "a:b".into() })?;
        let mut far = fs.clone();
        far.push(FieldDecl::new("far", u16::MAX - t.size() + 1, t));
        check(far, FormatError::OffsetOverflow { name: "far".into() })?;
        let mut many = fs.clone();
        let base = 1_000u16;
        many.extend((many.len()..=MAX_FIELDS).map(|i| FieldDecl::new(format!("m{i}x"), base + 8 * i as u16, t)));
        check(many, FormatError::TooManyFields { count: MAX_FIELDS + 1 })?;
    }

    #[test]
    fn generators_are_deterministic_and_write_seq_and_ts(
        seq in any::<u32>(), ts in any::<u64>(), seed in any::<u64>(), extra in 0usize..300,
    ) {
        type Gen = fn(u32, u64, u64, usize) -> Result<Vec<u8>, GenerateError>;
        let shipped: [(Format, usize, Gen); 2] = [
            (Format::image_frame(), ImageFrame::HEADER, ImageFrame::generate),
            (Format::flight_record(), FlightRecord::HEADER, FlightRecord::generate),
        ];
        for (f, header, generate) in shipped {
            prop_assert_eq!(f.len(), header);
            let len = header + extra;
            let m = generate(seq, ts, seed, len).expect("long enough");
            prop_assert_eq!(m.len(), len);
            prop_assert_eq!(&generate(seq, ts, seed, len).expect("long enough"), &m);
            prop_assert_eq!(f.get("seq", &m), Ok(Value::U32(seq)));
            prop_assert_eq!(f.get("timestamp_ns", &m), Ok(Value::U64(ts)));
            // Another sequence number changes the message beyond seq (the PRNG is keyed by it).
            if extra >= 8 {
                let other = generate(seq.wrapping_add(1), ts, seed, len).expect("long enough");
                prop_assert_ne!(&other[header..], &m[header..]);
            }
            prop_assert_eq!(generate(seq, ts, seed, header - 1), Err(GenerateError { need: header, len: header - 1 }));
        }
    }

    #[test]
    fn generated_fields_are_in_their_ranges(seq in any::<u32>(), seed in any::<u64>()) {
        let img = Format::image_frame();
        let m = ImageFrame::generate(seq, 0, seed, ImageFrame::HEADER).expect("header only");
        let u = |f: &Format, n: &str, m: &[u8]| f.get(n, m).ok().and_then(Value::as_u64).expect("unsigned");
        prop_assert!(u(&img, "region_x", &m) < u(&img, "width", &m));
        prop_assert!(u(&img, "region_y", &m) < u(&img, "height", &m));
        // A stream keeps its frame size.
        let next = ImageFrame::generate(seq.wrapping_add(1), 0, seed, ImageFrame::HEADER).expect("header only");
        prop_assert_eq!(img.get("width", &m), img.get("width", &next));

        let fl = Format::flight_record();
        let r = FlightRecord::generate(seq, 0, seed, FlightRecord::HEADER).expect("header only");
        prop_assert!((1..=9999).contains(&u(&fl, "flight", &r)));
        let airports: Vec<u64> =
            FlightRecord::AIRPORTS.iter().map(|c| u64::from(FlightRecord::airport(c))).collect();
        let (o, d) = (u(&fl, "origin", &r), u(&fl, "destination", &r));
        prop_assert!(airports.contains(&o) && airports.contains(&d) && o != d);
        prop_assert!(u(&fl, "altitude_ft", &r) <= 45_000);
        prop_assert!(u(&fl, "speed_kt", &r) <= 600);
        prop_assert!(u(&fl, "status", &r) < u64::from(FlightRecord::STATUSES));
        // Every header field but the timestamp is usable by a predicate.
        for d in fl.fields().iter().chain(img.fields()) {
            prop_assert_eq!(fl.field(&d.name).is_ok() || img.field(&d.name).is_ok(), d.name != "timestamp_ns");
        }
    }
}
