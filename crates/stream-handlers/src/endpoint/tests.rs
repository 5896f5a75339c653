use super::*;
use crate::stream::Field;

fn flight(size: u32) -> PublisherConfig {
    PublisherConfig {
        stream: 3,
        fields: Some(Fields::Flight),
        size,
        seed: 11,
        fragment: 100,
    }
}

#[test]
fn ids_count_up_and_sequence_numbers_continue() {
    let mut p = Publisher::new(flight(250)).unwrap();
    let mut seqs = Vec::new();
    for id in 0..3u32 {
        let frags = p.next(u64::from(id) * 10).unwrap();
        assert_eq!(frags.len(), 3);
        for f in &frags {
            let h = rudp::Header::parse(f).unwrap();
            assert_eq!((h.stream, h.message, h.len, h.size), (3, id, 250, 100));
            seqs.push(h.seq);
        }
        let body: Vec<u8> = frags
            .iter()
            .flat_map(|f| f[rudp::HEADER_LEN..].to_vec())
            .collect();
        assert_eq!(body[..4], id.to_be_bytes());
        assert_eq!(body[4..12], (u64::from(id) * 10).to_be_bytes());
    }
    assert_eq!(seqs, (0..9).collect::<Vec<u32>>());
    assert_eq!(p.messages(), 3);
}

#[test]
fn bad_configurations_are_refused_up_front() {
    let short = Publisher::new(flight(20)).unwrap_err();
    assert_eq!(
        short,
        PublishError::Generate(GenerateError { need: 31, len: 20 })
    );
    let mut c = flight(250);
    c.fragment = 0;
    assert_eq!(
        Publisher::new(c).unwrap_err(),
        PublishError::Fragment(FragmentError::ZeroSize)
    );
    c.fields = None;
    c.fragment = 1;
    c.size = 11;
    assert!(matches!(Publisher::new(c), Err(PublishError::Generate(_))));
    c.size = 12;
    assert!(Publisher::new(c).is_ok());
}

#[test]
fn raw_messages_carry_the_header_and_depend_on_seed_and_seq() {
    let a = generate(None, 5, 77, 1, 64).unwrap();
    assert_eq!(a[..4], 5u32.to_be_bytes());
    assert_eq!(a[4..12], 77u64.to_be_bytes());
    assert_eq!(a, generate(None, 5, 77, 1, 64).unwrap());
    assert_ne!(a[12..], generate(None, 6, 77, 1, 64).unwrap()[12..]);
    assert_ne!(a[12..], generate(None, 5, 77, 2, 64).unwrap()[12..]);
    assert_eq!(generate(None, 5, 77, 1, 12).unwrap().len(), 12);
}

/// Verification by content, by header, and off: a body byte changed is caught by content
/// only; a wrong length by both.
#[test]
fn each_verification_checks_what_it_says() {
    let mut p = Publisher::new(flight(250)).unwrap();
    let frags = p.next(1_000).unwrap();
    let mut bad = frags.clone();
    bad[2][rudp::HEADER_LEN + 5] ^= 1; // a body byte of the last fragment
    for (verify, want) in [
        (Verify::Content, Some(false)),
        (Verify::Header, Some(true)),
        (Verify::Off, None),
    ] {
        let mut cfg = SubscriberConfig::new(3, Some(Fields::Flight), 250, 11);
        cfg.verify = verify;
        let mut s = Subscriber::new(cfg.clone());
        let got = bad
            .iter()
            .filter_map(|f| s.handle_fragment(2_000, f).unwrap())
            .collect::<Vec<_>>();
        assert_eq!(got.len(), 1);
        assert_eq!(
            (got[0].intact, got[0].latency_ns, got[0].seq),
            (want, 1_000, 0)
        );
        // The size the subscriber expects is not the one sent: neither check passes.
        cfg.size = 251;
        let mut s = Subscriber::new(cfg);
        let r = frags
            .iter()
            .filter_map(|f| s.handle_fragment(2_000, f).unwrap())
            .next();
        assert_eq!(r.map(|r| r.intact), Some(want.map(|_| false)));
    }
}

#[test]
fn other_streams_duplicates_and_garbage_are_counted_apart() {
    let mut p = Publisher::new(flight(150)).unwrap();
    let frags = p.next(0).unwrap();
    let mut s = Subscriber::new(SubscriberConfig::new(4, Some(Fields::Flight), 150, 11));
    assert_eq!(
        s.handle_fragment(0, &frags[0]),
        Err(SubscribeError::OtherStream(3))
    );
    let mut s = Subscriber::new(SubscriberConfig::new(3, Some(Fields::Flight), 150, 11));
    assert_eq!(s.handle_fragment(0, &frags[0]), Ok(None));
    assert_eq!(
        s.handle_fragment(0, &frags[0]),
        Err(SubscribeError::Fragment(ReassemblyError::Duplicate))
    );
    assert!(s.handle_fragment(0, &frags[1]).unwrap().is_some());
    assert_eq!(
        s.handle_fragment(0, &frags[1]),
        Err(SubscribeError::Fragment(ReassemblyError::AlreadyDelivered))
    );
    assert!(s.handle_fragment(0, b"short").is_err());
    let sum = s.summary();
    assert_eq!(
        (sum.received, sum.duplicates, sum.refused, sum.other_streams),
        (1, 2, 1, 0)
    );
}

/// Gaps, reordering, the loss a `--count` implies, and nearest-rank percentiles.
#[test]
fn gaps_reordering_and_latency_statistics() {
    let mut p = Publisher::new(flight(100)).unwrap();
    let msgs: Vec<Vec<Vec<u8>>> = (0..6u64).map(|i| p.next(i * 1_000).unwrap()).collect();
    let mut s = Subscriber::new(SubscriberConfig::new(3, Some(Fields::Flight), 100, 11));
    // 0, 3, 1 arrive (2 and 4 lost, 5 never sent as far as the subscriber knows).
    let mut got = Vec::new();
    for (id, now) in [(0usize, 100u64), (3, 3_300), (1, 1_200)] {
        got.push(s.handle_fragment(now, &msgs[id][0]).unwrap().unwrap());
    }
    assert_eq!(
        got.iter().map(|r| r.reordered).collect::<Vec<_>>(),
        [false, false, true]
    );
    let sum = s.summary();
    assert_eq!(
        (sum.received, sum.lost, sum.reordered, sum.highest),
        (3, 1, 1, Some(3))
    );
    assert_eq!(sum.lost_of(6), 3);
    assert_eq!(sum.lost_of(2), 1);
    let l = sum.latency.unwrap();
    assert_eq!(
        (l.min_ns, l.avg_ns, l.p50_ns, l.p99_ns, l.max_ns),
        (100, 200, 200, 300, 300)
    );
    assert_eq!(Subscriber::new(s.config().clone()).summary().latency, None);
    let many: Vec<u64> = (1..=200).collect();
    let l = latency(&many).unwrap();
    assert_eq!((l.p50_ns, l.p99_ns, l.avg_ns), (100, 198, 100));
}

#[test]
fn predicates_parse_as_the_spec_writes_them() {
    let status = FlightRecord::format().field("status").unwrap();
    assert_eq!(
        parse_predicate(Some(Fields::Flight), "status==2"),
        Ok(Predicate::Eq(status, 2))
    );
    assert_eq!(
        parse_predicate(None, "u16@12 in 10..20"),
        Ok(Predicate::Range(Field::new(12, 2), 10, 20))
    );
    assert_eq!(parse_predicate(None, "all"), Ok(Predicate::All));
    let e = parse_predicate(None, "status==2").unwrap_err();
    assert!(e.why.contains("unknown field"), "{e}");
    assert!(parse_predicate(Some(Fields::Image), "width>>2").is_err());
    // A second clause smuggled into the text is not one predicate.
    assert!(parse_predicate(None, "all | mirror").is_err());
}

/// A message that passed delta and then byteswap is checked byte for byte once both are
/// undone, in reverse order; not undone (or undone wrong) it is not intact.
#[test]
fn transforms_on_the_way_are_undone_before_checking() {
    let mut p = Publisher::new(flight(250)).unwrap();
    let frags = p.next(1_000).unwrap();
    let mut body: Vec<u8> = frags
        .iter()
        .flat_map(|f| f[rudp::HEADER_LEN..].to_vec())
        .collect();
    let mut out = Vec::new();
    Delta::paper(3).handle(Message::new(0, core::mem::take(&mut body)), &mut out);
    ByteSwap.handle(out.pop().unwrap(), &mut out);
    let changed = out.pop().unwrap().payload;
    let wire = rudp::fragment(3, 0, 0, &changed, 100).unwrap();
    let run = |undo: Vec<Transform>| {
        let mut cfg = SubscriberConfig::new(3, Some(Fields::Flight), 250, 11);
        cfg.undo = undo;
        let mut s = Subscriber::new(cfg);
        let got: Vec<Received> = wire
            .iter()
            .filter_map(|f| s.handle_fragment(2_000, f).unwrap())
            .collect();
        (
            got[0].intact,
            got[0].seq,
            got[0].latency_ns,
            got[0].payload == changed,
        )
    };
    let both = parse_transforms("delta 20 3 | byteswap").unwrap();
    assert_eq!(
        both,
        [
            Transform::Delta {
                percent: 20,
                step: 3
            },
            Transform::ByteSwap
        ]
    );
    assert_eq!(run(both), (Some(true), 0, 1_000, true));
    assert_eq!(run(Vec::new()).0, Some(false));
    let reversed = parse_transforms("byteswap | delta 20 3").unwrap();
    assert_eq!(run(reversed).0, Some(false));
    assert!(
        parse_transforms("mirror")
            .unwrap_err()
            .why
            .contains("delta, byteswap")
    );
    assert!(parse_transforms("fields flight").is_err());
    assert_eq!(
        parse_transforms("delta").unwrap(),
        [Transform::Delta {
            percent: 20,
            step: 1
        }]
    );
}

#[test]
fn a_filtered_subscriber_expects_only_what_its_filter_passes() {
    use crate::spec::Fields;
    let fields = Some(Fields::Flight);
    let mut p = Publisher::new(PublisherConfig {
        stream: 3,
        fields,
        size: 200,
        seed: 5,
        fragment: 64,
    })
    .unwrap();
    let status2 = parse_predicate(fields, "status==2").unwrap();
    let mut cfg = SubscriberConfig::new(3, fields, 200, 5);
    cfg.expect = Some(status2);
    let mut sub = Subscriber::new(cfg);
    let mut passing = 0;
    for id in 0..40u32 {
        let frags = p.next(1_000).unwrap();
        let whole: Vec<u8> = frags.iter().flat_map(|f| f[24..].to_vec()).collect();
        if !status2.matches(&whole) {
            continue;
        }
        passing += 1;
        // The filter passes it; the subscriber loses the third such message.
        if passing == 3 {
            continue;
        }
        for f in &frags {
            sub.handle_fragment(2_000, f).unwrap();
        }
        assert!(sub.passes(id));
    }
    assert!(
        passing > 3 && passing < 40,
        "status==2 passes some: {passing}"
    );
    let e = sub.expected(40);
    assert_eq!((e.expected, e.lost, e.filtered), (passing, 1, 40 - passing));
    assert_eq!(sub.summary().lost, 1);
    assert_eq!(sub.summary().unexpected, 0);
    // A message the filter should have kept back is flagged.
    let mut leaky = Subscriber::new(SubscriberConfig {
        expect: Some(parse_predicate(fields, "status==99").unwrap()),
        ..SubscriberConfig::new(3, fields, 200, 5)
    });
    let mut p = Publisher::new(PublisherConfig {
        stream: 3,
        fields,
        size: 200,
        seed: 5,
        fragment: 64,
    })
    .unwrap();
    for f in p.next(1_000).unwrap() {
        leaky.handle_fragment(2_000, &f).unwrap();
    }
    assert_eq!(leaky.summary().unexpected, 1);
}
