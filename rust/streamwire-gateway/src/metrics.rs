//! The gateway's counters and their Prometheus text exposition (`GET /metrics`).
//!
//! Every counter is a fixed atomic cell (route × status, route × latency bucket), so the hot
//! path costs a few relaxed `fetch_add`s and never a lock or an allocation. Statuses outside
//! the fixed list are counted under `other`; routes are the router's fixed labels. Rendering
//! is pure (`render` takes the gauges as arguments) and unit-tested; the gauges (live
//! producers and consumer instances) are read from the state at scrape time.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::route::ROUTE_LABELS;

/// The statuses counted by their own label; anything else is `other`.
pub const STATUSES: [u16; 19] = [
    200, 204, 307, 400, 401, 403, 404, 405, 409, 413, 415, 422, 429, 500, 501, 502, 503, 504, 505,
];

/// Upper bounds of the latency buckets, in seconds (`+Inf` is implied).
pub const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

const NR: usize = ROUTE_LABELS.len();
const NS: usize = STATUSES.len() + 1;
const NB: usize = BUCKETS.len() + 1;

fn zeros<const N: usize>() -> [AtomicU64; N] {
    std::array::from_fn(|_| AtomicU64::new(0))
}

/// The counters (one per gateway).
pub struct Metrics {
    requests: [[AtomicU64; NS]; NR],
    /// Per route: requests whose latency fell in each bucket (not cumulative; `render` sums).
    latency: [[AtomicU64; NB]; NR],
    latency_micros: [AtomicU64; NR],
    pub produced: AtomicU64,
    pub produce_failed: AtomicU64,
    pub delivered: AtomicU64,
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            requests: std::array::from_fn(|_| zeros()),
            latency: std::array::from_fn(|_| zeros()),
            latency_micros: zeros(),
            produced: AtomicU64::new(0),
            produce_failed: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            bytes_in: AtomicU64::new(0),
            bytes_out: AtomicU64::new(0),
        }
    }
}

fn status_index(status: u16) -> usize {
    STATUSES
        .iter()
        .position(|s| *s == status)
        .unwrap_or(STATUSES.len())
}

fn bucket_index(secs: f64) -> usize {
    BUCKETS
        .iter()
        .position(|b| secs <= *b)
        .unwrap_or(BUCKETS.len())
}

/// Gauges read at scrape time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gauges {
    pub producers: usize,
    pub consumer_instances: usize,
}

impl Metrics {
    /// Count one answered request of route `route` (an index into `ROUTE_LABELS`).
    pub fn request(&self, route: usize, status: u16, took: Duration) {
        let r = route.min(NR - 1);
        self.requests[r][status_index(status)].fetch_add(1, Ordering::Relaxed);
        self.latency[r][bucket_index(took.as_secs_f64())].fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.latency_micros[r].fetch_add(micros, Ordering::Relaxed);
    }

    pub fn add(counter: &AtomicU64, n: usize) {
        counter.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// The Prometheus text exposition (format 0.0.4).
    pub fn render(&self, g: Gauges) -> String {
        let mut o = String::with_capacity(8192);
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        o.push_str("# HELP streamwire_gateway_requests_total HTTP requests answered, by route and status.\n");
        o.push_str("# TYPE streamwire_gateway_requests_total counter\n");
        for (r, route) in ROUTE_LABELS.iter().enumerate() {
            for (s, cell) in self.requests[r].iter().enumerate() {
                let n = load(cell);
                if n == 0 {
                    continue;
                }
                let status = STATUSES
                    .get(s)
                    .map_or_else(|| "other".to_string(), u16::to_string);
                let _ = writeln!(
                    o,
                    "streamwire_gateway_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}"
                );
            }
        }
        o.push_str("# HELP streamwire_gateway_request_duration_seconds Time to answer a request (to its headers), by route.\n");
        o.push_str("# TYPE streamwire_gateway_request_duration_seconds histogram\n");
        for (r, route) in ROUTE_LABELS.iter().enumerate() {
            let counts: Vec<u64> = self.latency[r].iter().map(load).collect();
            let total: u64 = counts.iter().sum();
            if total == 0 {
                continue;
            }
            let mut cumulative = 0;
            for (b, n) in counts.iter().enumerate() {
                cumulative += n;
                let le = BUCKETS
                    .get(b)
                    .map_or_else(|| "+Inf".to_string(), f64::to_string);
                let _ = writeln!(
                    o,
                    "streamwire_gateway_request_duration_seconds_bucket{{route=\"{route}\",le=\"{le}\"}} {cumulative}"
                );
            }
            let sum = load(&self.latency_micros[r]) as f64 / 1e6;
            let _ = writeln!(
                o,
                "streamwire_gateway_request_duration_seconds_sum{{route=\"{route}\"}} {sum}"
            );
            let _ = writeln!(
                o,
                "streamwire_gateway_request_duration_seconds_count{{route=\"{route}\"}} {total}"
            );
        }
        let scalars: [(&str, &str, &str, u64); 7] = [
            (
                "messages_produced_total",
                "counter",
                "Messages the broker acknowledged for a produce request.",
                load(&self.produced),
            ),
            (
                "messages_failed_total",
                "counter",
                "Messages of produce requests that were not produced.",
                load(&self.produce_failed),
            ),
            (
                "messages_delivered_total",
                "counter",
                "Messages handed to clients by consumer instances.",
                load(&self.delivered),
            ),
            (
                "bytes_in_total",
                "counter",
                "Request body bytes read.",
                load(&self.bytes_in),
            ),
            (
                "bytes_out_total",
                "counter",
                "Response body bytes sent.",
                load(&self.bytes_out),
            ),
            (
                "producers",
                "gauge",
                "Live producers (one per topic).",
                g.producers as u64,
            ),
            (
                "consumer_instances",
                "gauge",
                "Live consumer instances on this node.",
                g.consumer_instances as u64,
            ),
        ];
        for (name, kind, help, v) in scalars {
            let _ = writeln!(o, "# HELP streamwire_gateway_{name} {help}");
            let _ = writeln!(o, "# TYPE streamwire_gateway_{name} {kind}");
            let _ = writeln!(o, "streamwire_gateway_{name} {v}");
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<&str> {
        s.lines().filter(|l| !l.starts_with('#')).collect()
    }

    #[test]
    fn empty_metrics_render_scalars_only() {
        let m = Metrics::default();
        let out = m.render(Gauges::default());
        assert!(!out.contains("requests_total{"));
        assert!(!out.contains("_bucket{"));
        assert!(out.contains("# TYPE streamwire_gateway_requests_total counter\n"));
        assert!(out.contains("streamwire_gateway_messages_produced_total 0\n"));
        assert!(out.contains("# TYPE streamwire_gateway_producers gauge\n"));
        assert!(out.ends_with('\n'));
    }

    #[test]
    fn requests_latency_and_counters_render() {
        let m = Metrics::default();
        let produce = ROUTE_LABELS.iter().position(|l| *l == "produce").unwrap();
        m.request(produce, 200, Duration::from_micros(500));
        m.request(produce, 200, Duration::from_millis(30));
        m.request(produce, 418, Duration::from_secs(20));
        Metrics::add(&m.produced, 7);
        Metrics::add(&m.produce_failed, 2);
        Metrics::add(&m.bytes_in, 100);
        let out = m.render(Gauges {
            producers: 3,
            consumer_instances: 1,
        });
        let l = lines(&out);
        assert!(l.contains(&r#"streamwire_gateway_requests_total{route="produce",status="200"} 2"#));
        assert!(
            l.contains(&r#"streamwire_gateway_requests_total{route="produce",status="other"} 1"#)
        );
        let b = |le: &str, n: u64| {
            format!("streamwire_gateway_request_duration_seconds_bucket{{route=\"produce\",le=\"{le}\"}} {n}")
        };
        for want in [
            b("0.001", 1),
            b("0.025", 1),
            b("0.05", 2),
            b("10", 2),
            b("+Inf", 3),
        ] {
            assert!(l.contains(&want.as_str()), "{want}\n{out}");
        }
        assert!(
            l.contains(&r#"streamwire_gateway_request_duration_seconds_count{route="produce"} 3"#)
        );
        assert!(l.contains(
            &r#"streamwire_gateway_request_duration_seconds_sum{route="produce"} 20.0305"#
        ));
        assert!(l.contains(&"streamwire_gateway_messages_produced_total 7"));
        assert!(l.contains(&"streamwire_gateway_messages_failed_total 2"));
        assert!(l.contains(&"streamwire_gateway_bytes_in_total 100"));
        assert!(l.contains(&"streamwire_gateway_producers 3"));
        assert!(l.contains(&"streamwire_gateway_consumer_instances 1"));
        // Only routes that were hit appear.
        assert!(!out.contains("route=\"read\""));
    }

    #[test]
    fn every_sample_line_is_name_labels_value() {
        let m = Metrics::default();
        for r in 0..ROUTE_LABELS.len() {
            m.request(
                r,
                STATUSES[r % STATUSES.len()],
                Duration::from_millis(r as u64),
            );
        }
        for line in lines(&m.render(Gauges::default())) {
            let (head, value) = line.rsplit_once(' ').unwrap();
            assert!(value.parse::<f64>().is_ok(), "{line}");
            assert!(head.starts_with("streamwire_gateway_"), "{line}");
            assert_eq!(
                head.matches('{').count(),
                head.matches('}').count(),
                "{line}"
            );
        }
    }

    #[test]
    fn buckets_are_increasing_and_indexes_bounded() {
        assert!(BUCKETS.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(bucket_index(0.0), 0);
        assert_eq!(bucket_index(1e9), BUCKETS.len());
        assert_eq!(status_index(200), 0);
        assert_eq!(status_index(999), STATUSES.len());
    }
}
