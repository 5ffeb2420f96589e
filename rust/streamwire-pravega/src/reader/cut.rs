//! Stream cuts: a position in a stream as each segment's offset, between events.
//!
//! The text form (`scope/stream:segment=offset,...`, segment ids as the controller numbers
//! them) is what users store in checkpoints and what pickles; it parses back exactly.

use std::collections::BTreeMap;

use streamwire_core::error::{Error, Result};

use crate::controller::ScopedStream;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamCut {
    pub stream: ScopedStream,
    /// Segment id (`epoch << 32 | number`) → offset of the next event to read.
    pub positions: BTreeMap<i64, i64>,
}

impl StreamCut {
    pub fn to_text(&self) -> String {
        let mut s = format!("{}/{}:", self.stream.scope, self.stream.stream);
        for (i, (seg, off)) in self.positions.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(&format!("{seg}={off}"));
        }
        s
    }

    pub fn parse(text: &str) -> Result<StreamCut> {
        let bad = |why: &str| Error::invalid(format!("not a stream cut ({why}): {text:?}"));
        let (name, rest) = text.split_once(':').ok_or_else(|| bad("no ':'"))?;
        let (scope, stream) = name.split_once('/').ok_or_else(|| bad("no scope/stream"))?;
        if scope.is_empty() || stream.is_empty() || stream.contains('/') {
            return Err(bad("no scope/stream"));
        }
        let mut positions = BTreeMap::new();
        if !rest.is_empty() {
            for part in rest.split(',') {
                let (seg, off) = part.split_once('=').ok_or_else(|| bad("no '='"))?;
                let seg: i64 = seg.parse().map_err(|_| bad("bad segment id"))?;
                let off: i64 = off.parse().map_err(|_| bad("bad offset"))?;
                if seg < 0 || off < 0 {
                    return Err(bad("negative number"));
                }
                if positions.insert(seg, off).is_some() {
                    return Err(bad("a segment twice"));
                }
            }
        }
        Ok(StreamCut {
            stream: ScopedStream::new(scope, stream),
            positions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn text_round_trips(
            scope in "[a-z][a-z0-9-]{0,10}",
            stream in "[a-z][a-z0-9.-]{0,10}",
            pos in proptest::collection::btree_map(0i64..1 << 40, 0i64..1 << 50, 0..6),
        ) {
            let cut = StreamCut { stream: ScopedStream::new(scope, stream), positions: pos };
            prop_assert_eq!(StreamCut::parse(&cut.to_text()).unwrap(), cut);
        }
    }

    #[test]
    fn bad_text_is_refused() {
        for t in [
            "",
            "a",
            "a/b",
            "a/b:1",
            "a/b:x=1",
            "a/b:1=-1",
            "a/b:1=1,1=2",
            "/b:1=1",
        ] {
            assert!(StreamCut::parse(t).is_err(), "{t}");
        }
    }
}
