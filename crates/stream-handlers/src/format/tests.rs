//! Unit tests with literal bytes.

use alloc::string::ToString;
use alloc::vec;
use alloc::vec::Vec;

use super::shipped::{FlightRecord, GenerateError, ImageFrame};
use super::*;
use crate::Predicate;

fn fmt(s: &str) -> Format {
    s.parse().expect("a valid format")
}

#[test]
fn reads_literal_bytes_in_both_orders() {
    let f = fmt("a:u16@0 b:u16le@2 c:i8@4 d:i32@5 e:f32le@9 g:u64@13 h:f64@21");
    assert_eq!(f.len(), 29);
    let mut p = vec![0x12, 0x34, 0x12, 0x34, 0xff, 0xff, 0xff, 0xff, 0xfe];
    p.extend_from_slice(&1.5f32.to_le_bytes());
    p.extend_from_slice(&[0, 0, 0, 0, 0, 0, 1, 2]);
    p.extend_from_slice(&[0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18]);
    assert_eq!(f.get("a", &p), Ok(Value::U16(0x1234)));
    assert_eq!(f.get("b", &p), Ok(Value::U16(0x3412)));
    assert_eq!(f.get("c", &p), Ok(Value::I8(-1)));
    assert_eq!(f.get("d", &p), Ok(Value::I32(-2)));
    assert_eq!(f.get("e", &p), Ok(Value::F32(1.5)));
    assert_eq!(f.get("g", &p), Ok(Value::U64(0x0102)));
    assert_eq!(f.get("h", &p), Ok(Value::F64(core::f64::consts::PI)));
}

#[test]
fn short_payloads_and_unknown_names_are_errors() {
    let f = fmt("a:u8@0 b:u32@4");
    let p = [1u8, 2, 3, 4, 5, 6, 7];
    assert_eq!(f.get("a", &p), Ok(Value::U8(1)));
    assert_eq!(
        f.get("b", &p),
        Err(ReadError::Short {
            name: "b".into(),
            need: 8,
            len: 7
        })
    );
    assert_eq!(
        f.get("b", &[]),
        Err(ReadError::Short {
            name: "b".into(),
            need: 8,
            len: 0
        })
    );
    assert_eq!(
        f.get("z", &p),
        Err(ReadError::UnknownField { name: "z".into() })
    );
}

#[test]
fn set_writes_exact_bytes_and_checks_kind_and_length() {
    let f = fmt("a:u16@0 b:i32le@2");
    let mut p = [0u8; 6];
    f.set("a", Value::U16(0xabcd), &mut p).unwrap();
    f.set("b", Value::I32(-2), &mut p).unwrap();
    assert_eq!(p, [0xab, 0xcd, 0xfe, 0xff, 0xff, 0xff]);
    assert_eq!(
        f.set("a", Value::U32(1), &mut p),
        Err(ReadError::TypeMismatch {
            name: "a".into(),
            field: Scalar::U16,
            value: Scalar::U32
        })
    );
    let mut short = [0u8; 5];
    assert_eq!(
        f.set("b", Value::I32(1), &mut short),
        Err(ReadError::Short {
            name: "b".into(),
            need: 6,
            len: 5
        })
    );
    assert_eq!(short, [0; 5]);
}

#[test]
fn validation_names_each_problem() {
    let u32be = Type::be(Scalar::U32);
    let new = |v: Vec<(&str, u16)>| {
        Format::new(
            v.into_iter()
                .map(|(n, o)| FieldDecl::new(n, o, u32be))
                .collect(),
        )
    };
    assert_eq!(
        new(vec![("a", 0), ("", 4)]),
        Err(FormatError::EmptyName { index: 1 })
    );
    assert_eq!(
        new(vec![("a b", 0)]),
        Err(FormatError::BadName { name: "a b".into() })
    );
    assert_eq!(
        new(vec![("a", 0), ("a", 4)]),
        Err(FormatError::DuplicateName { name: "a".into() })
    );
    assert_eq!(
        new(vec![("a", 0), ("b", 3)]),
        Err(FormatError::Overlap {
            first: "a".into(),
            second: "b".into()
        })
    );
    assert_eq!(
        new(vec![("a", 65532)]),
        Err(FormatError::OffsetOverflow { name: "a".into() })
    );
    assert!(new(vec![("a", 65531)]).is_ok());
    let many: Vec<_> = (0..=MAX_FIELDS as u16)
        .map(|i| FieldDecl::new(i.to_string(), i * 4, u32be))
        .collect();
    assert_eq!(
        Format::new(many.clone()),
        Err(FormatError::TooManyFields {
            count: MAX_FIELDS + 1
        })
    );
    assert!(Format::new(many[..MAX_FIELDS].to_vec()).is_ok());
}

#[test]
fn text_errors_name_the_token() {
    let err = |s: &str| s.parse::<Format>().unwrap_err();
    assert_eq!(
        err("a:u8@0 bu8@1"),
        ParseError {
            token: "bu8@1".into(),
            error: TokenError::NoType
        }
    );
    assert_eq!(
        err("b:u8"),
        ParseError {
            token: "b:u8".into(),
            error: TokenError::NoOffset
        }
    );
    assert_eq!(err("b:u33@0").error, TokenError::UnknownType("u33".into()));
    assert_eq!(err("b:u8@+1").error, TokenError::BadOffset("+1".into()));
    assert_eq!(
        err("b:u8@65536").error,
        TokenError::BadOffset("65536".into())
    );
    assert_eq!(
        err("a:u32@0 b:u8@2"),
        ParseError {
            token: "b:u8@2".into(),
            error: TokenError::Invalid(FormatError::Overlap {
                first: "a".into(),
                second: "b".into()
            })
        }
    );
    assert_eq!(
        err(":u8@0").error,
        TokenError::Invalid(FormatError::EmptyName { index: 0 })
    );
    assert!(err("a:u8@0 bu8@1").to_string().contains("\"bu8@1\""));
}

#[test]
fn text_round_trips_and_be_is_the_default() {
    let f = fmt("  seq:u32be@0\tts:u64@4 lat:f32le@12 ");
    assert_eq!(f.to_string(), "seq:u32@0 ts:u64@4 lat:f32le@12");
    assert_eq!(fmt(&f.to_string()), f);
    assert_eq!(fmt(""), Format::new(vec![]).unwrap());
    assert!(fmt("").is_empty());
}

#[test]
fn predicate_fields_only_for_what_predicates_read() {
    let f = fmt("a:u8@0 b:u16@1 c:u32@3 d:u64@7 e:i16@15 g:f32@17 h:u16le@21 i:u8le@23");
    assert_eq!(f.field("a"), Ok(Field::new(0, 1)));
    assert_eq!(f.field("b"), Ok(Field::new(1, 2)));
    assert_eq!(f.field("c"), Ok(Field::new(3, 4)));
    assert_eq!(f.field("i"), Ok(Field::new(23, 1)));
    let why = |n: &str| match f.field(n) {
        Err(FieldError::Unsupported { why, .. }) => Some(why),
        _ => None,
    };
    assert_eq!(why("d"), Some(Unsupported::Wide));
    assert_eq!(why("e"), Some(Unsupported::Signed));
    assert_eq!(why("g"), Some(Unsupported::Float));
    assert_eq!(why("h"), Some(Unsupported::LittleEndian));
    assert_eq!(
        f.field("z"),
        Err(FieldError::UnknownField { name: "z".into() })
    );
    // The field a predicate gets reads what `get` reads.
    let p = [7u8, 0x01, 0x02, 0, 0, 0x10, 0];
    assert_eq!(f.get("b", &p), Ok(Value::U16(0x0102)));
    assert!(Predicate::Eq(f.field("b").unwrap(), 0x0102).matches(&p));
    assert!(Predicate::Eq(f.field("c").unwrap(), 0x1000).matches(&p));
}

#[test]
fn shipped_formats_read_their_generated_headers() {
    let img = Format::image_frame();
    assert_eq!(img.len(), ImageFrame::HEADER);
    let m = ImageFrame::generate(9, 1_000, 42, 64).unwrap();
    assert_eq!(m.len(), 64);
    assert_eq!(&m[..12], &[0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0x03, 0xe8]);
    let w = img.get("width", &m).unwrap().as_u64().unwrap();
    let x = img.get("region_x", &m).unwrap().as_u64().unwrap();
    assert!(x < w);

    let fl = Format::flight_record();
    assert_eq!(fl.len(), FlightRecord::HEADER);
    let r = FlightRecord::generate(3, 5, 1, 31).unwrap();
    assert_eq!(fl.get("seq", &r), Ok(Value::U32(3)));
    assert_eq!(fl.get("timestamp_ns", &r), Ok(Value::U64(5)));
    assert_ne!(fl.get("origin", &r), fl.get("destination", &r));
    assert_eq!(FlightRecord::airport(b"ATL"), 0x0041_544c);
    assert_eq!(
        FlightRecord::generate(3, 5, 1, 30),
        Err(GenerateError { need: 31, len: 30 })
    );
}
