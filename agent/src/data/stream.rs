//! One flow on one byte stream, either transport: the sender's loop (header,
//! paced payload, wait for the acknowledgement) and the receiver's (header,
//! payload CRC'd as it arrives, acknowledgement).

use super::pacer::Pacer;
use super::{DataError, FlowControl, FlowCounters, FlowTable};
use crate::clock;
use crate::content::{self, ContentSource};
use crate::frame::{read_frame, write_frame};
use crate::protocol::{DataAck, DataHeader, FlowDone, FlowId, FlowRole, FlowState, PROTOCOL_VERSION};
use ocslab_emulator::{Bytes, Nanos};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;

/// Largest write of payload (large writes, few syscalls).
pub const WRITE_BUF: usize = 256 * 1024;
/// Read buffer of a receiver.
pub const READ_BUF: usize = 256 * 1024;

/// Waits until the flow is released; fails if its controller is gone.
pub async fn wait_released(control: &mut watch::Receiver<FlowControl>) -> Result<(), DataError> {
    control
        .wait_for(|c| c.released)
        .await
        .map(|_| ())
        .map_err(|_| DataError::Withdrawn)
}

/// What the sender's loop works with.
pub struct Sending<'a, F: FnOnce(Nanos)> {
    /// The payload.
    pub source: &'a mut dyn ContentSource,
    /// Hold/release and rate.
    pub control: &'a mut watch::Receiver<FlowControl>,
    /// Progress for heartbeats.
    pub counters: &'a FlowCounters,
    /// Called with the time the header (first byte) was sent.
    pub started: F,
}

/// Sends `header` and the payload, then waits for the receiver's
/// acknowledgement. Returns (first byte sent, last byte handed over, ack).
pub async fn send<R, W, F>(
    r: &mut R,
    w: &mut W,
    mut header: DataHeader,
    s: Sending<'_, F>,
) -> Result<(Nanos, Nanos, DataAck), DataError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
    F: FnOnce(Nanos),
{
    let mut scratch = Vec::with_capacity(256);
    header.sent_at = clock::now();
    write_frame(w, &header, &mut scratch).await?;
    (s.started)(header.sent_at);
    s.counters.set_state(FlowState::Active);
    let mut pacer = Pacer::new(s.control.borrow_and_update().rate, header.sent_at);
    let mut buf = vec![0u8; WRITE_BUF];
    let mut end = header.sent_at;
    loop {
        // Every byte handed over: a hold has nothing left to stop. The
        // scheduler reads the flow as sent from its heartbeats, so a policy
        // that plans by bytes left (Sunflow) would never release it again.
        if s.source.remaining() == 0 {
            break;
        }
        // A closed controller (the agent is stopping) leaves the flow as it is.
        if s.control.has_changed().unwrap_or(false) {
            follow(&mut pacer, s.control, s.counters).await?;
        }
        let want = pacer.write_size(buf.len());
        let n = s.source.fill(&mut buf[..want]);
        if n == 0 {
            break;
        }
        // A new rate or a hold ends the wait for the pacer: a write of a
        // flow paced at a few bytes per second waits for seconds, and the
        // scheduler's next rate must not wait behind it.
        while let Some(wait) = pacer.admit(clock::now(), n) {
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                Ok(()) = s.control.changed() => follow(&mut pacer, s.control, s.counters).await?,
            }
        }
        w.write_all(&buf[..n]).await?;
        s.counters.add(n as u64);
        end = clock::now();
    }
    w.shutdown().await?;
    let ack: DataAck = read_frame(r, &mut scratch).await?.ok_or(DataError::NoAck)?;
    Ok((header.sent_at, end, ack))
}

/// Follows the controller's latest word: its rate from now on, and if it
/// holds the flow, waits for the release (with a new pacer from then on:
/// no credit, no debt).
async fn follow(
    pacer: &mut Pacer,
    control: &mut watch::Receiver<FlowControl>,
    counters: &FlowCounters,
) -> Result<(), DataError> {
    let c = *control.borrow_and_update();
    pacer.set_rate(c.rate, clock::now());
    if !c.released {
        counters.set_state(FlowState::Held);
        wait_released(control).await?;
        counters.set_state(FlowState::Active);
        let rate = control.borrow_and_update().rate;
        *pacer = Pacer::new(rate, clock::now());
    }
    Ok(())
}

/// Receives one flow: reads the header, CRCs the payload as it arrives,
/// checks it against the partition's expected checksum and acknowledges.
/// A short or over-long payload is reported as a flow that is not `ok`.
/// Errors carry the flow id when the header was read.
pub async fn receive<R, W>(
    r: &mut R,
    w: &mut W,
    flows: &FlowTable,
) -> Result<FlowDone, (Option<FlowId>, DataError)>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut scratch = Vec::with_capacity(256);
    let header: DataHeader = match read_frame(r, &mut scratch).await {
        Ok(Some(h)) => h,
        Ok(None) => return Err((None, DataError::NoHeader)),
        Err(e) => return Err((None, e.into())),
    };
    let flow = header.flow;
    if header.version != PROTOCOL_VERSION {
        return Err((Some(flow), DataError::Version(header.version)));
    }
    let reg = flows.register(flow, FlowRole::Receiver, FlowState::Active);
    let mut buf = vec![0u8; READ_BUF];
    let mut crc = crc32fast::Hasher::new();
    let (mut got, mut first, mut end) = (0u64, None, clock::now());
    let mut overlong = false;
    loop {
        let n = r.read(&mut buf).await.map_err(|e| (Some(flow), e.into()))?;
        if n == 0 {
            break;
        }
        let t = clock::now();
        first.get_or_insert(t);
        let take = (n as u64).min(header.bytes.0 - got) as usize;
        overlong |= take < n;
        crc.update(&buf[..take]);
        got += take as u64;
        reg.counters().add(take as u64);
        if take > 0 {
            end = t;
        }
    }
    drop(reg);
    let checksum = crc.finalize();
    // Over the bytes received, not the header's length: the cost of the
    // check follows what arrived, never what a peer claims it will send.
    let expected_checksum = content::expected_checksum(&header.partition, Bytes(got));
    let ok = got == header.bytes.0 && !overlong && checksum == expected_checksum;
    let ack = DataAck {
        bytes: Bytes(got),
        ok,
    };
    // The receipt stands even if the sender is gone before the acknowledgement.
    if write_frame(w, &ack, &mut scratch).await.is_ok() {
        let _ = w.shutdown().await;
    }
    Ok(FlowDone {
        flow,
        from: header.from,
        partition: header.partition,
        bytes_received: Bytes(got),
        bytes_expected: header.bytes,
        start: header.sent_at,
        first_byte: first.unwrap_or(end),
        end,
        checksum,
        expected_checksum,
        ok,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{JobId, PartitionId};
    use ocslab_emulator::HostId;

    fn header_of(bytes: u64) -> DataHeader {
        DataHeader {
            version: PROTOCOL_VERSION,
            flow: FlowId(1),
            from: HostId { rack: 0, host: 0 },
            partition: partition(),
            bytes: Bytes(bytes),
            sent_at: Nanos(0),
        }
    }

    fn partition() -> PartitionId {
        PartitionId {
            job: JobId(1),
            map: 0,
            reduce: 0,
            seed: 1,
        }
    }

    /// What a receiver answers to a flow of `bytes` that arrived whole.
    fn ack_of(bytes: u64) -> Vec<u8> {
        let mut out = Vec::new();
        let ack = DataAck {
            bytes: Bytes(bytes),
            ok: true,
        };
        crate::frame::encode_frame(&ack, &mut out).expect("encode");
        out
    }

    fn header(bytes: u64) -> Vec<u8> {
        let mut out = Vec::new();
        crate::frame::encode_frame(&header_of(bytes), &mut out).expect("encode");
        out
    }

    /// Found by `scripts/fuzz data_stream`: the expected checksum was
    /// computed over the length the header claims, in time proportional to
    /// it, so a peer claiming 2^62 bytes and closing at once held the
    /// receiver for hours. It is now computed over what arrived.
    #[test]
    fn a_header_claiming_exabytes_is_answered_at_once() {
        let mut input = header(1 << 62);
        input.extend([7u8; 100]);
        // On a thread of its own: the old computation never yielded, so
        // only a wait from outside can tell a hang.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (mut r, mut w) = (&input[..], Vec::new());
            let done = futures::executor::block_on(receive(&mut r, &mut w, &FlowTable::default()));
            let _ = tx.send((done.map_err(|(_, e)| e.to_string()), w));
        });
        let (done, w) = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("answered within 10 s");
        let done = done.expect("a receipt");
        assert_eq!((done.bytes_received, done.ok), (Bytes(100), false));
        let ack: DataAck = serde_json::from_slice(&w[4..]).expect("an acknowledgement");
        assert_eq!((ack.bytes, ack.ok), (Bytes(100), false));
    }

    /// Content that holds its flow as it hands over its last bytes: the
    /// scheduler's hold arriving between the last write and the end.
    struct HeldAtTheEnd {
        inner: content::PartitionContent,
        control: watch::Sender<FlowControl>,
    }

    impl ContentSource for HeldAtTheEnd {
        fn fill(&mut self, out: &mut [u8]) -> usize {
            let n = self.inner.fill(out);
            if self.inner.remaining() == 0 {
                self.control.send_modify(|c| c.released = false);
            }
            n
        }
        fn remaining(&self) -> u64 {
            self.inner.remaining()
        }
    }

    /// Found by running `sunflow` on real bytes: a flow held after its
    /// last write waited for a release that never came (the scheduler saw
    /// no bytes left, so planned no circuit for it), and its reduce with it.
    /// A flow with nothing left to write now ends whatever its hold.
    #[tokio::test]
    async fn a_hold_after_the_last_write_does_not_stop_the_flow() {
        let bytes = 3 * WRITE_BUF as u64 + 10;
        let (control, mut rx) = watch::channel(FlowControl {
            released: true,
            rate: None,
        });
        let mut source = HeldAtTheEnd {
            inner: content::PartitionContent::new(&partition(), Bytes(bytes)),
            control,
        };
        let table = FlowTable::default();
        let reg = table.register(FlowId(1), FlowRole::Sender, FlowState::Active);
        let acked = ack_of(bytes);
        let (mut r, mut w) = (&acked[..], Vec::new());
        let sending = Sending {
            source: &mut source,
            control: &mut rx,
            counters: reg.counters(),
            started: |_| {},
        };
        let sent = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            send(&mut r, &mut w, header_of(bytes), sending),
        )
        .await
        .expect("the flow ends though held")
        .expect("sent");
        assert_eq!((sent.2.bytes, sent.2.ok), (Bytes(bytes), true));
        assert!(!rx.borrow().released, "the hold did arrive");
        assert_eq!(reg.counters().bytes(), bytes);
    }

    /// Found by running `varys` on real bytes: MADD paced a flow at 1,251
    /// bit/s for a moment, its next 8 KiB write waited 52 s for the pacer,
    /// and the faster rate set 0.3 s later waited behind it (a 1.6 MB flow
    /// took 59 s, its job's makespan 61 s against 14 s). The wait now ends
    /// at a new rate. Tokio's clock is paused, so the test needs no real
    /// sleep when it passes; the old wait took 8 s of real time here (the
    /// pacer reads the real clock) and failed the bound.
    #[tokio::test(start_paused = true)]
    async fn a_new_rate_ends_a_long_wait_for_the_pacer() {
        let bytes = 64 * 1024;
        // 1,000 B/s: the second 8 KiB write waits about 8 s.
        let (control, mut rx) = watch::channel(FlowControl {
            released: true,
            rate: Some(ocslab_emulator::Bps(8_000)),
        });
        let mut source = content::PartitionContent::new(&partition(), Bytes(bytes));
        let table = FlowTable::default();
        let reg = table.register(FlowId(1), FlowRole::Sender, FlowState::Active);
        let acked = ack_of(bytes);
        let (mut r, mut w) = (&acked[..], Vec::new());
        let start = tokio::time::Instant::now();
        // Unpaced 1 ms in (virtual time), while the sender waits.
        let steer = tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            control.send_modify(|c| c.rate = None);
            control
        });
        let sending = Sending {
            source: &mut source,
            control: &mut rx,
            counters: reg.counters(),
            started: |_| {},
        };
        send(&mut r, &mut w, header_of(bytes), sending)
            .await
            .expect("sent");
        let took = start.elapsed();
        drop(steer.await.expect("the steering task"));
        assert_eq!(reg.counters().bytes(), bytes);
        assert!(
            took < std::time::Duration::from_millis(100),
            "the flow took {took:?} (paused clock) though its rate was lifted 1 ms in"
        );
    }

    #[tokio::test]
    async fn the_true_content_is_verified_and_a_flipped_byte_is_not() {
        let mut content = vec![0u8; 70_000];
        content::PartitionContent::new(&partition(), Bytes(70_000)).fill(&mut content);
        for flip in [None, Some(69_999)] {
            let mut input = header(70_000);
            let mut body = content.clone();
            if let Some(at) = flip {
                body[at] ^= 1;
            }
            input.extend(body);
            let (mut r, mut w) = (&input[..], Vec::new());
            let done = receive(&mut r, &mut w, &FlowTable::default())
                .await
                .expect("a receipt");
            assert_eq!(done.ok, flip.is_none(), "flip {flip:?}");
            assert_eq!(done.bytes_received, Bytes(70_000));
        }
    }
}
