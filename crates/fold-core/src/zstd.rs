//! Decoding DSH's persisted session logs (`session.jsonl.zstd`): a sequence of concatenated
//! Zstandard frames — one for the header, one per append batch — that together are the
//! JSONL text. Node 20 has no zstd, and Node 22's `zstdDecompressSync` stops after the first
//! frame, so the CLI decodes here. Output is capped so a hostile file cannot exhaust memory,
//! and nothing past [`MAX_INITIAL_CAPACITY`] is reserved before the frames say what they hold.

use std::io::Read;

use ruzstd::decoding::StreamingDecoder;

use crate::error::{FoldError, Result};

/// Largest decoded size accepted (1 GiB).
pub const MAX_DECODED_BYTES: u64 = 1 << 30;

/// Most the output buffer reserves before anything is decoded (16 MiB); past it, it grows with
/// what the frames really decode to, up to [`MAX_DECODED_BYTES`].
pub const MAX_INITIAL_CAPACITY: usize = 16 << 20;

/// Decodes every frame of `bytes` and concatenates the output.
///
/// # Errors
/// `INVALID_ARGUMENT` when the data is not a sequence of valid zstd frames, or decodes past
/// [`MAX_DECODED_BYTES`].
pub fn decode_frames(mut bytes: &[u8]) -> Result<Vec<u8>> {
    // Session logs compress ~4×: reserve that much, but never more than the cap before a byte is
    // decoded (a hostile input would otherwise get 4× its size up front).
    let mut out = Vec::with_capacity(bytes.len().saturating_mul(4).min(MAX_INITIAL_CAPACITY));
    let mut frame = 0usize;
    while !bytes.is_empty() {
        let decoder =
            StreamingDecoder::new(&mut bytes).map_err(|e| FoldError::invalid(format!("zstd frame {frame}: {e}")))?;
        let limit = MAX_DECODED_BYTES + 1 - out.len() as u64;
        decoder
            .take(limit)
            .read_to_end(&mut out)
            .map_err(|e| FoldError::invalid(format!("zstd frame {frame}: {e}")))?;
        if out.len() as u64 > MAX_DECODED_BYTES {
            return Err(FoldError::invalid(format!(
                "zstd data decodes to more than {MAX_DECODED_BYTES} bytes"
            )));
        }
        frame += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // `printf 'hello ' | zstd -c; printf 'world' | zstd -c` (zstd 1.5, with checksums).
    const TWO_FRAMES: &[u8] = &[
        0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x58, 0x31, 0x00, 0x00, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x20, 0xd2, 0x3b, 0xe1,
        0xa9, 0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x58, 0x29, 0x00, 0x00, 0x77, 0x6f, 0x72, 0x6c, 0x64, 0xef, 0x51, 0xee,
        0x66,
    ];

    #[test]
    fn decodes_concatenated_frames() {
        assert_eq!(decode_frames(TWO_FRAMES).unwrap(), b"hello world");
        assert_eq!(decode_frames(&[]).unwrap(), b"");
    }

    #[test]
    fn rejects_garbage_and_truncation() {
        assert_eq!(decode_frames(b"not zstd").unwrap_err().code(), "INVALID_ARGUMENT");
        assert_eq!(decode_frames(&TWO_FRAMES[..25]).unwrap_err().code(), "INVALID_ARGUMENT");
    }
}
