//! The Coflow-Benchmark trace format (github.com/coflow/coflow-benchmark;
//! Chowdhury & Stoica, SIGCOMM'15), e.g. `FB2010-1Hr-150-0.txt`:
//!
//! ```text
//! <ports> <coflows>
//! <id> <arrival ms> <#mappers> <mapper rack>... <#reducers> <reducer rack>:<shuffle MB>...
//! ```
//!
//! A reducer's MB is what it receives in total from all mappers. How that
//! becomes flows (what MB means, rounding, merging per rack, the smallest
//! flow) differs between the reference simulators; [`FlowSizes`] names the
//! rule, CoflowSim's by default.
//!
//! [`parse`] reads the text into a [`CoflowTrace`] (checking every field);
//! [`CoflowTrace::to_coflows`] sizes its flows and places them on a topology.

pub use super::flow_sizes::FlowSizes;
use super::flow_sizes::Sizer;
pub use super::TraceError;
use crate::model::coflow::{Coflow, CoflowId, FlowId, FlowSpec};
use ocslab_emulator::{Bytes, HostId, Nanos, Topology};
use std::path::Path;

/// The most a reducer may receive, in MB: 2^30 MB (1 PiB). Far above any
/// published trace, and low enough that the bytes of a coflow of millions
/// of reducers, and of a whole trace, still fit in 64 bits.
pub const MAX_REDUCER_MB: f64 = 1_073_741_824.0;

/// The latest arrival, in milliseconds: what nanoseconds in 64 bits hold
/// (about 584 years).
pub const MAX_ARRIVAL_MS: u64 = u64::MAX / 1_000_000;

/// A parsed trace, racks as the trace numbers them.
#[derive(Clone, Debug, PartialEq)]
pub struct CoflowTrace {
    /// Ports (racks) of the traced fabric.
    pub ports: u32,
    /// Coflows in file order.
    pub coflows: Vec<TraceCoflow>,
}

/// One line of the trace.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceCoflow {
    /// 1-based line in the file.
    pub line: usize,
    /// The coflow's id.
    pub id: u64,
    /// Arrival time.
    pub arrival: Nanos,
    /// Rack of each mapper.
    pub mappers: Vec<u32>,
    /// Each reducer's rack and the MB it receives in total.
    pub reducers: Vec<(u32, f64)>,
}

/// Reads and parses the trace at `path`.
pub fn load(path: &Path) -> Result<CoflowTrace, TraceError> {
    parse(&super::read(path)?, path)
}

/// Cursor over one line's whitespace-separated fields.
struct Fields<'a> {
    file: &'a Path,
    line: usize,
    tokens: std::str::SplitWhitespace<'a>,
}

impl Fields<'_> {
    fn error(&self, field: &str, message: impl Into<String>) -> TraceError {
        TraceError {
            file: self.file.to_path_buf(),
            line: self.line,
            field: field.to_string(),
            message: message.into(),
        }
    }

    fn next<T: std::str::FromStr>(&mut self, field: &str, expected: &str) -> Result<T, TraceError> {
        let tok = self
            .tokens
            .next()
            .ok_or_else(|| self.error(field, format!("missing: expected {expected}")))?;
        tok.parse()
            .map_err(|_| self.error(field, format!("{tok:?} is not valid: expected {expected}")))
    }

    fn rack(&mut self, field: &str, ports: u32) -> Result<u32, TraceError> {
        let expected = format!("a rack number from 0 to {}", ports.saturating_sub(1));
        let r: u32 = self.next(field, &expected)?;
        if r >= ports {
            return Err(self.error(field, format!("rack {r} is out of range: expected {expected}")));
        }
        Ok(r)
    }
}

/// Parses trace `text` (named `file` in errors).
pub fn parse(text: &str, file: &Path) -> Result<CoflowTrace, TraceError> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let Some((i, header)) = lines.next() else {
        return Err(TraceError {
            file: file.to_path_buf(),
            line: 1,
            field: "ports".into(),
            message: "the file is empty: expected a first line `<ports> <coflows>`".into(),
        });
    };
    let mut h = Fields {
        file,
        line: i + 1,
        tokens: header.split_whitespace(),
    };
    let ports: u32 = h.next("ports", "the number of ports (racks), e.g. 150")?;
    if ports == 0 {
        return Err(h.error("ports", "must be at least 1"));
    }
    let count: usize = h.next("coflows", "the number of coflow lines that follow, e.g. 526")?;
    if let Some(extra) = h.tokens.next() {
        return Err(h.error("", format!("unexpected {extra:?} after `<ports> <coflows>`")));
    }
    // Not sized by the counts a file announces: they are checked, not trusted.
    let mut coflows = Vec::new();
    let mut seen = std::collections::BTreeMap::new();
    for (i, text) in lines {
        let mut f = Fields {
            file,
            line: i + 1,
            tokens: text.split_whitespace(),
        };
        let id: u64 = f.next("id", "the coflow id, a whole number")?;
        if let Some(first) = seen.insert(id, i + 1) {
            return Err(f.error(
                "id",
                format!("coflow {id} is already on line {first}: ids must be unique"),
            ));
        }
        let ms: u64 = f.next("arrival_ms", "the arrival time in whole milliseconds")?;
        if ms > MAX_ARRIVAL_MS {
            return Err(f.error(
                "arrival_ms",
                format!("{ms} is too late: at most {MAX_ARRIVAL_MS} ms (nanoseconds in 64 bits)"),
            ));
        }
        let nm: u32 = f.next("mappers", "the number of mappers, at least 1")?;
        if nm == 0 {
            return Err(f.error("mappers", "must be at least 1"));
        }
        let mappers = (0..nm)
            .map(|k| f.rack(&format!("mapper[{k}]"), ports))
            .collect::<Result<Vec<_>, _>>()?;
        let nr: u32 = f.next("reducers", "the number of reducers, at least 1")?;
        if nr == 0 {
            return Err(f.error("reducers", "must be at least 1"));
        }
        let mut reducers = Vec::new();
        for k in 0..nr {
            let field = format!("reducer[{k}]");
            let tok: String = f.next(&field, "`<rack>:<MB>`, e.g. 65:1.0")?;
            let Some((r, mb)) = tok.split_once(':') else {
                return Err(f.error(
                    &field,
                    format!("{tok:?} is not valid: expected `<rack>:<MB>`, e.g. 65:1.0"),
                ));
            };
            let mut sub = Fields {
                file,
                line: i + 1,
                tokens: r.split_whitespace(),
            };
            let rack = sub.rack(&format!("{field}.rack"), ports)?;
            let megabytes: f64 = mb
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite() && (0.0..=MAX_REDUCER_MB).contains(x))
                .ok_or_else(|| {
                    f.error(
                        &format!("{field}.megabytes"),
                        format!(
                            "{mb:?} is not valid: expected a size in MB from 0 to {MAX_REDUCER_MB} (1 PiB), e.g. 1.0"
                        ),
                    )
                })?;
            reducers.push((rack, megabytes));
        }
        if let Some(extra) = f.tokens.next() {
            return Err(f.error(
                "",
                format!("unexpected {extra:?} after the {nr} reducers the line announces"),
            ));
        }
        coflows.push(TraceCoflow {
            line: i + 1,
            id,
            arrival: Nanos::from_millis(ms),
            mappers,
            reducers,
        });
    }
    if coflows.len() != count {
        return Err(TraceError {
            file: file.to_path_buf(),
            line: 1,
            field: "coflows".into(),
            message: format!(
                "the header announces {count} coflows but the file has {}",
                coflows.len()
            ),
        });
    }
    Ok(CoflowTrace { ports, coflows })
}

impl CoflowTrace {
    /// The coflows placed on `topo`, in arrival order (ties by id), at most
    /// `limit` of them, their flows sized by `sizes` ([`FlowSizes`]).
    /// Trace rack `t` becomes rack `t mod racks`; with several hosts per
    /// rack, mapper `k` and reducer `k` of coflow `id` sit on host
    /// `(id + k) mod hosts_per_rack` (a deterministic spread). Sizes are
    /// divided by the topology's `scale`; flows of 0 bytes are left out.
    /// Flow ids are numbered from 0 in that order.
    pub fn to_coflows(&self, topo: &Topology, limit: Option<usize>, sizes: FlowSizes) -> Vec<Coflow> {
        let mut order: Vec<&TraceCoflow> = self.coflows.iter().collect();
        order.sort_by_key(|c| (c.arrival, c.id));
        order.truncate(limit.unwrap_or(usize::MAX));
        let hosts = topo.hosts_per_rack as u64;
        let place =
            |rack: u32, id: u64, k: usize| HostId::new(rack % topo.racks, ((id + k as u64) % hosts) as u32);
        let sizer = Sizer::new(sizes);
        let mut next_flow = 0u64;
        order
            .into_iter()
            .map(|c| {
                let flows = sizer
                    .flows(c)
                    .into_iter()
                    .filter_map(|f| {
                        let bytes = Bytes(f.bytes).scaled_down(topo.scale);
                        (bytes.0 > 0).then_some((f, bytes))
                    })
                    .map(|(f, bytes)| {
                        let id = FlowId(next_flow);
                        next_flow += 1;
                        FlowSpec {
                            id,
                            coflow: CoflowId(c.id),
                            src: place(f.src_rack, c.id, f.mapper),
                            dst: place(f.dst_rack, c.id, f.reducer),
                            bytes,
                            weight: 1,
                        }
                    })
                    .collect();
                Coflow {
                    id: CoflowId(c.id),
                    arrival: c.arrival,
                    flows,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "4 2\n1 0 2 0 1 1 2:3.0\n2 10 1 3 2 0:1.0 1:2.0\n";

    #[test]
    fn parses_a_small_trace() {
        let t = parse(TWO, Path::new("t.txt")).unwrap();
        assert_eq!(t.ports, 4);
        assert_eq!(t.coflows[0].mappers, vec![0, 1]);
        assert_eq!(t.coflows[1].reducers, vec![(0, 1.0), (1, 2.0)]);
        assert_eq!(t.coflows[1].arrival, Nanos::from_millis(10));
        assert_eq!(t.coflows[1].line, 3);
    }

    #[test]
    fn errors_name_line_and_field() {
        let bad = TWO.replace("2 10 1 3", "2 1x0 1 3");
        let e = parse(&bad, Path::new("t.txt")).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (3, "arrival_ms"));
        assert!(
            e.to_string().starts_with("t.txt:3: field `arrival_ms`: \"1x0\""),
            "{e}"
        );

        let e = parse(&TWO.replace("2:3.0", "9:3.0"), Path::new("t.txt")).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (2, "reducer[0].rack"));
        assert!(e.message.contains("0 to 3"), "{e}");

        let e = parse(&TWO.replace("1:2.0", "1:lots"), Path::new("t.txt")).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (3, "reducer[1].megabytes"));

        // Sizes whose bytes would overflow, and non-finite or negative ones.
        for mb in ["1e15", "inf", "NaN", "-1.0"] {
            let e = parse(&TWO.replace("1:2.0", &format!("1:{mb}")), Path::new("t.txt")).unwrap_err();
            assert_eq!((e.line, e.field.as_str()), (3, "reducer[1].megabytes"), "{mb}");
            assert!(e.message.contains("from 0 to"), "{e}");
        }
        let e = parse(
            &TWO.replace("2 10 1 3", "2 18446744073709551 1 3"),
            Path::new("t.txt"),
        )
        .unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (3, "arrival_ms"));
        assert!(e.message.contains("too late"), "{e}");

        let e = parse(&TWO.replace("0:1.0 1:2.0", "0:1.0"), Path::new("t.txt")).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (3, "reducer[1]"));

        let e = parse(&TWO.replace("4 2", "4 3"), Path::new("t.txt")).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (1, "coflows"));
    }

    /// Found by `scripts/fuzz coflow_trace`: counts a file announces used
    /// to size allocations, so a header of 2.2e18 coflows, or a line of
    /// 4e9 reducers, aborted the process (capacity overflow, out of memory)
    /// instead of being refused.
    #[test]
    fn huge_announced_counts_are_refused_not_allocated() {
        let e = parse("4 2222222222222222222\n1 0 1 0 1 1:1.0\n", Path::new("t.txt")).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (1, "coflows"), "{e}");
        let e = parse("4 1\n1 0 1 0 4000000000 1:1.0\n", Path::new("t.txt")).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (2, "reducer[1]"), "{e}");
    }

    #[test]
    fn splits_each_reducer_evenly_over_mappers() {
        let topo = Topology::parse(
            "name = \"t\"\nracks = 4\nhosts_per_rack = 1\nsimulation_only = true\n[eps]\nhost_rate = \"1Gbit/s\"\noversubscription = 1.0\n[ocs]\nports_per_rack = 0\nport_rate = \"0bit/s\"\nreconfig_delay = \"0ms\"\nelephant_threshold = \"0B\"\n",
            Path::new("t.toml"),
        )
        .unwrap();
        let t = parse(TWO, Path::new("t.txt")).unwrap();
        let c = t.to_coflows(&topo, None, FlowSizes::Exact);
        assert_eq!(c[0].flows.len(), 2);
        assert_eq!(c[0].flows[0].bytes.0 + c[0].flows[1].bytes.0, 3 * 1_048_576);
        assert_eq!(c[0].flows[0].bytes, Bytes(1_572_864));
        assert_eq!(c[1].flows.len(), 2);
        assert_eq!(c[1].flows[1].dst, HostId::new(1, 0));
        assert_eq!(t.to_coflows(&topo, Some(1), FlowSizes::Exact).len(), 1);
    }
}
