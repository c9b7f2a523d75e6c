//! Length-delimited frames: a 4-byte big-endian length, then that many bytes
//! of JSON. Used for every control message and for the header and
//! acknowledgement of data-plane streams (never for payload bytes).

use serde::{de::DeserializeOwned, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest frame accepted (a heartbeat of thousands of flows fits).
pub const MAX_FRAME: usize = 4 << 20;

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The stream failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// A length prefix over [`MAX_FRAME`].
    #[error("frame of {0} bytes is over the limit of {MAX_FRAME} bytes")]
    TooLarge(usize),
    /// The JSON did not decode as the expected message.
    #[error("malformed message: {0}")]
    Json(#[from] serde_json::Error),
    /// The stream ended in the middle of a frame.
    #[error("stream ended inside a frame")]
    Truncated,
}

/// Encodes `msg` as one frame into `out` (cleared first): the length
/// prefix, then the JSON.
pub fn encode_frame<T: Serialize>(msg: &T, out: &mut Vec<u8>) -> Result<(), FrameError> {
    out.clear();
    out.extend_from_slice(&[0; 4]);
    serde_json::to_writer(&mut *out, msg)?;
    let len = out.len() - 4;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    out[..4].copy_from_slice(&(len as u32).to_be_bytes());
    Ok(())
}

/// Writes `msg` as one frame, encoding into `scratch` (reused between calls).
pub async fn write_frame<W, T>(w: &mut W, msg: &T, scratch: &mut Vec<u8>) -> Result<(), FrameError>
where
    W: AsyncWrite + Unpin,
    T: Serialize,
{
    encode_frame(msg, scratch)?;
    w.write_all(scratch).await?;
    Ok(())
}

/// Reads one frame's bytes into `scratch`; `Ok(false)` on a clean end of
/// stream before a frame started.
pub async fn read_frame_bytes<R>(r: &mut R, scratch: &mut Vec<u8>) -> Result<bool, FrameError>
where
    R: AsyncRead + Unpin,
{
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        let n = r.read(&mut len[got..]).await?;
        if n == 0 {
            return if got == 0 {
                Ok(false)
            } else {
                Err(FrameError::Truncated)
            };
        }
        got += n;
    }
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    scratch.resize(len, 0);
    r.read_exact(scratch).await.map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => FrameError::Truncated,
        _ => FrameError::Io(e),
    })?;
    Ok(true)
}

/// Reads and decodes one frame; `Ok(None)` on a clean end of stream.
pub async fn read_frame<R, T>(r: &mut R, scratch: &mut Vec<u8>) -> Result<Option<T>, FrameError>
where
    R: AsyncRead + Unpin,
    T: DeserializeOwned,
{
    if !read_frame_bytes(r, scratch).await? {
        return Ok(None);
    }
    Ok(Some(serde_json::from_slice(scratch)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip_and_end_cleanly() {
        let (mut a, mut b) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            let mut s = Vec::new();
            for i in 0..100u32 {
                write_frame(&mut a, &vec![i; 3], &mut s).await.unwrap();
            }
        });
        let mut s = Vec::new();
        for i in 0..100u32 {
            let v: Vec<u32> = read_frame(&mut b, &mut s).await.unwrap().unwrap();
            assert_eq!(v, vec![i; 3]);
        }
        writer.await.unwrap();
        assert!(read_frame::<_, Vec<u32>>(&mut b, &mut s).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn oversized_and_truncated_frames_are_errors() {
        let mut s = Vec::new();
        let big = ((MAX_FRAME + 1) as u32).to_be_bytes();
        let r = read_frame::<_, u32>(&mut &big[..], &mut s).await;
        assert!(matches!(r, Err(FrameError::TooLarge(_))), "{r:?}");
        let cut = [0u8, 0, 0, 10, b'1'];
        let r = read_frame::<_, u32>(&mut &cut[..], &mut s).await;
        assert!(matches!(r, Err(FrameError::Truncated)), "{r:?}");
    }
}
