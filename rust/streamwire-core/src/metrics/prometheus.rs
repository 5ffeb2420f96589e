//! Prometheus text exposition (format 0.0.4) of metric snapshots.
//!
//! Pure: it takes snapshots and returns text, so the format (HELP/TYPE lines, label
//! escaping, cumulative histogram buckets ending in `+Inf`, `_sum`/`_count`) is unit- and
//! property-tested without a registry or a broker.

use std::fmt::Write as _;

use super::histogram::{bound_us, BOUNDS};
use super::{Kind, Snapshot};

/// Escape a label value: backslash, double quote and line feed.
pub fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for ch in v.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Escape `# HELP` text: backslash and line feed.
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

fn label_set(s: &Snapshot) -> String {
    let l = &s.labels;
    if l.kind == Kind::Client {
        format!(
            "protocol=\"{}\",client=\"{}\"",
            escape_label(l.protocol),
            l.client
        )
    } else {
        format!(
            "protocol=\"{}\",client=\"{}\",topic=\"{}\",name=\"{}\"",
            escape_label(l.protocol),
            l.client,
            escape_label(&l.topic),
            escape_label(&l.name)
        )
    }
}

fn header(out: &mut String, name: &str, help: &str, ty: &str) {
    let _ = writeln!(out, "# HELP {name} {}", escape_help(help));
    let _ = writeln!(out, "# TYPE {name} {ty}");
}

/// The exported bucket bounds: every second internal bound (powers of two microseconds),
/// as `(internal index, seconds)`. Cumulative counts at a subset of bounds are still exact.
fn exported_bounds() -> impl Iterator<Item = (usize, f64)> {
    (0..BOUNDS)
        .step_by(2)
        .map(|k| (k, bound_us(k) / 1_000_000.0))
}

/// Render every snapshot, grouped into metric families by kind.
pub fn render(snaps: &[Snapshot]) -> String {
    let mut out = String::new();
    for kind in Kind::ALL {
        // Entities with the same labels (two unnamed TANK producers of one topic, two
        // consumers given one name) are summed into one series: a scrape must not see a
        // label set twice.
        let mut of_kind: Vec<(Snapshot, String)> = Vec::new();
        for s in snaps.iter().filter(|s| s.labels.kind == kind) {
            let l = label_set(s);
            match of_kind.iter_mut().find(|(_, seen)| *seen == l) {
                Some((acc, _)) => acc.merge(s),
                None => of_kind.push((s.clone(), l)),
            }
        }
        if of_kind.is_empty() {
            continue;
        }
        let k = kind.as_str();
        for c in kind.counters() {
            let name = format!("streamwire_{k}_{}_total", c.as_str());
            header(&mut out, &name, c.help(), "counter");
            for (s, l) in &of_kind {
                let _ = writeln!(out, "{name}{{{l}}} {}", s.counter(*c));
            }
        }
        for g in kind.gauges() {
            let name = format!("streamwire_{k}_{}", g.as_str());
            header(&mut out, &name, g.help(), "gauge");
            for (s, l) in &of_kind {
                let _ = writeln!(out, "{name}{{{l}}} {}", s.gauge(*g));
            }
        }
        if kind.has_latency() {
            let name = format!("streamwire_{k}_send_latency_seconds");
            header(
                &mut out,
                &name,
                "Time from enqueueing a message to the broker's receipt, per receipt.",
                "histogram",
            );
            for (s, l) in &of_kind {
                for (i, le) in exported_bounds() {
                    let _ = writeln!(
                        out,
                        "{name}_bucket{{{l},le=\"{le}\"}} {}",
                        s.latency.cumulative(i)
                    );
                }
                let count = s.latency.count();
                let _ = writeln!(out, "{name}_bucket{{{l},le=\"+Inf\"}} {count}");
                let sum = s.latency.sum_us as f64 / 1_000_000.0;
                let _ = writeln!(out, "{name}_sum{{{l}}} {sum}");
                let _ = writeln!(out, "{name}_count{{{l}}} {count}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{HistogramSnapshot, Labels, C, G, NC, NG};
    use super::*;
    use proptest::prelude::*;

    fn snap(kind: Kind, topic: &str, name: &str) -> Snapshot {
        Snapshot {
            labels: Labels {
                protocol: "pulsar",
                kind,
                client: 3,
                topic: topic.into(),
                name: name.into(),
            },
            counters: [0; NC],
            gauges: [0; NG],
            latency: HistogramSnapshot::default(),
        }
    }

    /// Undo `escape_label` (the reading side of the format).
    fn unescape(v: &str) -> String {
        let mut out = String::new();
        let mut it = v.chars();
        while let Some(c) = it.next() {
            if c == '\\' {
                match it.next() {
                    Some('n') => out.push('\n'),
                    Some(o) => out.push(o),
                    None => out.push('\\'),
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn producer_families_and_histogram() {
        let mut s = snap(Kind::Producer, "persistent://public/default/t", "p-1");
        s.counters[C::Messages as usize] = 10;
        s.gauges[G::PendingMessages as usize] = 2;
        s.latency.buckets[0] = 1; // <= 1 us
        s.latency.buckets[20] = 2; // <= 1024 us
        s.latency.buckets[BOUNDS] = 1; // overflow
        s.latency.sum_us = 2_500_000;
        let text = render(&[s]);
        let l =
            "protocol=\"pulsar\",client=\"3\",topic=\"persistent://public/default/t\",name=\"p-1\"";
        assert!(text.contains("# TYPE streamwire_producer_messages_total counter\n"));
        assert!(text.contains(&format!("streamwire_producer_messages_total{{{l}}} 10\n")));
        assert!(text.contains("# TYPE streamwire_producer_pending_messages gauge\n"));
        assert!(text.contains(&format!("streamwire_producer_pending_messages{{{l}}} 2\n")));
        assert!(text.contains("# TYPE streamwire_producer_send_latency_seconds histogram\n"));
        let b = "streamwire_producer_send_latency_seconds_bucket";
        assert!(
            text.contains(&format!("{b}{{{l},le=\"0.000001\"}} 1\n")),
            "{text}"
        );
        assert!(text.contains(&format!("{b}{{{l},le=\"0.000512\"}} 1\n")));
        assert!(text.contains(&format!("{b}{{{l},le=\"0.001024\"}} 3\n")));
        assert!(text.contains(&format!("{b}{{{l},le=\"+Inf\"}} 4\n")));
        assert!(text.contains(&format!(
            "streamwire_producer_send_latency_seconds_sum{{{l}}} 2.5\n"
        )));
        assert!(text.contains(&format!(
            "streamwire_producer_send_latency_seconds_count{{{l}}} 4\n"
        )));
        // No consumer family without a consumer.
        assert!(!text.contains("streamwire_consumer_"));
    }

    #[test]
    fn entities_with_the_same_labels_are_one_series() {
        let mut a = snap(Kind::Producer, "t", "");
        a.counters[C::Messages as usize] = 3;
        a.latency.buckets[4] = 1;
        let mut b = a.clone();
        b.counters[C::Messages as usize] = 4;
        let other = snap(Kind::Producer, "u", "");
        let text = render(&[a, other, b]);
        let l = "protocol=\"pulsar\",client=\"3\",topic=\"t\",name=\"\"";
        let lines: Vec<&str> = text
            .lines()
            .filter(|x| x.starts_with("streamwire_producer_messages_total{"))
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(text.contains(&format!("streamwire_producer_messages_total{{{l}}} 7\n")));
        assert!(text.contains(&format!(
            "streamwire_producer_send_latency_seconds_count{{{l}}} 2\n"
        )));
    }

    #[test]
    fn client_series_have_no_topic_label() {
        let text = render(&[snap(Kind::Client, "", "")]);
        assert!(
            text.contains("streamwire_client_lookups_total{protocol=\"pulsar\",client=\"3\"} 0\n")
        );
    }

    #[test]
    fn every_line_is_comment_or_sample() {
        let text = render(&[
            snap(Kind::Client, "", ""),
            snap(Kind::Consumer, "a", "b"),
            snap(Kind::Writer, "s/s", "w"),
            snap(Kind::Reader, "s/s", "r"),
        ]);
        for line in text.lines() {
            if line.starts_with('#') {
                assert!(
                    line.starts_with("# HELP ") || line.starts_with("# TYPE "),
                    "{line}"
                );
            } else {
                let (_, value) = line.rsplit_once(' ').expect(line);
                assert!(value.parse::<f64>().is_ok(), "{line}");
                assert!(line.starts_with("streamwire_"), "{line}");
            }
        }
    }

    proptest! {
        #[test]
        fn label_escaping_round_trips_and_stays_on_one_line(v in ".*") {
            let e = escape_label(&v);
            prop_assert!(!e.contains('\n'));
            // Every '"' in the escaped text is preceded by an odd run of backslashes.
            let bytes = e.as_bytes();
            for (i, b) in bytes.iter().enumerate() {
                if *b == b'"' {
                    let run = bytes[..i].iter().rev().take_while(|c| **c == b'\\').count();
                    prop_assert!(run % 2 == 1);
                }
            }
            prop_assert_eq!(unescape(&e), v);
        }

        #[test]
        fn rendered_buckets_are_cumulative(
            counts in proptest::collection::vec(0u64..1000, BOUNDS + 1)
        ) {
            let mut s = snap(Kind::Producer, "t", "p");
            s.latency.buckets.copy_from_slice(&counts);
            let text = render(&[s]);
            let mut prev = 0u64;
            let mut n = 0;
            for line in text.lines().filter(|l| l.contains("_bucket{")) {
                let v: u64 = line.rsplit_once(' ').unwrap().1.parse().unwrap();
                prop_assert!(v >= prev, "{}", line);
                prev = v;
                n += 1;
            }
            prop_assert_eq!(n, BOUNDS.div_ceil(2) + 1);
            prop_assert_eq!(prev, counts.iter().sum::<u64>());
        }
    }
}
