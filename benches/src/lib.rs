//! Criterion benches live in benches/benches.
