//! Writes the seed corpora of the two wire targets under DIR (the file
//! targets are seeded from the shipped files by `scripts/fuzz`):
//! `DIR/data_stream/` (a header and the partition's true content, and a
//! short one) and `DIR/control_frames/` (one frame of each message kind
//! the two ends exchange). Not a fuzz target: run it as a plain program.

use ocslab_agent::content::{ContentSource, PartitionContent};
use ocslab_agent::frame::encode_frame;
use ocslab_agent::protocol::*;
use ocslab_core::{Bps, Bytes, HostId, Nanos};
use serde::Serialize;
use std::path::Path;

fn frame<T: Serialize>(msg: &T) -> Vec<u8> {
    let mut out = Vec::new();
    encode_frame(msg, &mut out).expect("encode");
    out
}

fn main() -> std::io::Result<()> {
    let dir = std::env::args().nth(1).expect("usage: seeds DIR");
    let dir = Path::new(&dir);
    let host = HostId { rack: 1, host: 2 };
    let partition = PartitionId {
        job: JobId(3),
        map: 4,
        reduce: 5,
        seed: 6,
    };
    let header = |bytes| DataHeader {
        version: PROTOCOL_VERSION,
        flow: FlowId(7),
        from: host,
        partition,
        bytes: Bytes(bytes),
        sent_at: Nanos(8),
    };
    let data = dir.join("data_stream");
    std::fs::create_dir_all(&data)?;
    let mut whole = frame(&header(300));
    let mut content = vec![0u8; 300];
    PartitionContent::new(&partition, Bytes(300)).fill(&mut content);
    whole.extend(content);
    std::fs::write(data.join("whole"), whole)?;
    let mut short = frame(&header(300));
    short.extend([0u8; 10]);
    std::fs::write(data.join("short"), short)?;

    let control = dir.join("control_frames");
    std::fs::create_dir_all(&control)?;
    let hello = Hello {
        version: PROTOCOL_VERSION,
        host,
        pid: 9,
        data_addr: "198.18.0.2:7000".parse().expect("addr"),
        slots: 2,
    };
    let frames: Vec<(&str, Vec<u8>)> = vec![
        ("hello", frame(&hello)),
        (
            "welcome",
            frame(&HelloReply::Welcome {
                version: PROTOCOL_VERSION,
                heartbeat_interval: Nanos(100_000_000),
            }),
        ),
        ("refused", frame(&HelloReply::Refused { reason: "no".into() })),
        (
            "heartbeat",
            frame(&AgentMsg::Heartbeat(Heartbeat {
                seq: 1,
                at: Nanos(2),
                free_slots: 1,
                tasks: vec![],
                flows: vec![],
            })),
        ),
        (
            "flow_started",
            frame(&AgentMsg::FlowStarted {
                flow: FlowId(7),
                at: Nanos(3),
            }),
        ),
        ("pong", frame(&AgentMsg::Pong { nonce: 4 })),
        (
            "set_rate",
            frame(&Command::SetRate {
                flow: FlowId(7),
                rate: Some(Bps(1_000_000)),
            }),
        ),
        (
            "retime",
            frame(&Command::RetimeTask {
                task: TaskId(1),
                remaining: Nanos(5),
            }),
        ),
        ("shutdown", frame(&Command::Shutdown)),
        (
            "ack",
            frame(&DataAck {
                bytes: Bytes(300),
                ok: true,
            }),
        ),
    ];
    for (name, bytes) in frames {
        std::fs::write(control.join(name), bytes)?;
    }
    Ok(())
}
