//! Decoding DSH's persisted session logs (`session.jsonl.zstd`): a sequence of concatenated
//! Zstandard frames — one for the header, one per append batch — that together are the JSONL
//! text. Node 20 has no zstd, and Node 22's `zstdDecompressSync` stops after the first frame,
//! so the CLI decodes here.
//!
//! Torn tails are read the way DSH's own backend (`@deepseek-ai/dsh-session-persistence-jsonl`,
//! `scanZstdFrames` + `readZstdPrefix`) reads them: the frames are first located by their
//! headers alone; a final frame that ends early (a crash mid-append) is a torn tail whose
//! decodable prefix is recovered; anything else that is not a frame where a frame must start
//! (a bad magic number, a reserved bit or block type) is damage, and so is a complete frame that
//! does not decode or whose checksum differs. Errors are sentences that name the frame and the
//! byte, never a decoder's debug output.
//!
//! Output is capped so a hostile file cannot exhaust memory, and nothing past
//! [`MAX_INITIAL_CAPACITY`] is reserved before the frames say what they hold.

use std::io::Read;

use ruzstd::decoding::StreamingDecoder;

use crate::error::{FoldError, Result};

/// Largest decoded size accepted (1 GiB).
pub const MAX_DECODED_BYTES: u64 = 1 << 30;

/// Most the output buffer reserves before anything is decoded (16 MiB); past it, it grows with
/// what the frames really decode to, up to [`MAX_DECODED_BYTES`].
pub const MAX_INITIAL_CAPACITY: usize = 16 << 20;

const MAGIC: u32 = 0xFD2F_B528;

/// A decoded log: the text of every complete frame, then whatever the torn final frame (if
/// any) still decodes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedLog {
    /// The decoded bytes: complete frames first, then the torn frame's recovered prefix.
    pub text: Vec<u8>,
    /// Where each complete frame's text ends in `text` (one entry per complete frame).
    pub frame_ends: Vec<usize>,
    /// The torn final frame, when the data ends inside one.
    pub torn: Option<TornFrame>,
}

/// A final frame that ends before its last block (what a crash mid-append leaves).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TornFrame {
    /// Its index (0-based) among the frames.
    pub frame: usize,
    /// The byte offset in the input where it starts.
    pub byte: usize,
}

/// Where one structurally complete frame lies in the input.
struct FrameSpan {
    start: usize,
    end: usize,
    checksum: bool,
}

/// The first bytes of `bytes`, printable, for an error message.
fn preview(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(16)];
    if head.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        format!("'{}'", String::from_utf8_lossy(head))
    } else {
        let hex: Vec<String> = head.iter().take(8).map(|b| format!("{b:02x}")).collect();
        format!("bytes {}", hex.join(" "))
    }
}

/// Locates the complete frames of `bytes` from their headers alone; a frame the data ends
/// inside is the torn tail (`Ok` with its start). The rules are DSH's `scanZstdFrames`: each
/// frame is its header ([`frame_header`]), its blocks up to the last ([`blocks_end`]), then its
/// checksum when the header announces one ([`frame_span`]).
fn scan(bytes: &[u8]) -> Result<(Vec<FrameSpan>, Option<usize>)> {
    let mut frames = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        match frame_span(bytes, at, frames.len())? {
            Some(span) => {
                at = span.end;
                frames.push(span);
            }
            None => return Ok((frames, Some(at))),
        }
    }
    Ok((frames, None))
}

/// Whether fewer than `n` bytes are left from `at`.
fn short(bytes: &[u8], at: usize, n: usize) -> bool {
    bytes.len() - at < n
}

/// The frame `index` starting at byte `start`: header, blocks, checksum; `None` when the data
/// ends inside it.
fn frame_span(bytes: &[u8], start: usize, index: usize) -> Result<Option<FrameSpan>> {
    let Some((blocks, checksum)) = frame_header(bytes, start, index)? else {
        return Ok(None);
    };
    let Some(mut at) = blocks_end(bytes, blocks, start, index)? else {
        return Ok(None);
    };
    if checksum {
        if short(bytes, at, 4) {
            return Ok(None);
        }
        at += 4;
    }
    Ok(Some(FrameSpan {
        start,
        end: at,
        checksum,
    }))
}

/// Reads the header of frame `index` at byte `start` (magic number, descriptor, window,
/// dictionary id, content size): where its first block starts and whether a checksum follows
/// its last; `None` when the data ends inside the header.
fn frame_header(bytes: &[u8], start: usize, index: usize) -> Result<Option<(usize, bool)>> {
    let mut at = start;
    if short(bytes, at, 4) {
        return Ok(None);
    }
    let magic = u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    if magic != MAGIC {
        return Err(if start == 0 {
            FoldError::invalid(format!(
                "the data is not zstd-compressed (it starts with {})",
                preview(bytes)
            ))
        } else {
            FoldError::invalid(format!(
                "byte {start} is not the start of a zstd frame (after frame {}; it holds {})",
                index - 1,
                preview(&bytes[start..])
            ))
        });
    }
    at += 4;
    if short(bytes, at, 1) {
        return Ok(None);
    }
    let descriptor = bytes[at];
    at += 1;
    if descriptor & 0x18 != 0 {
        return Err(FoldError::invalid(format!(
            "zstd frame {index} (byte {start}) is damaged: its header sets a reserved bit"
        )));
    }
    let single_segment = descriptor & 0x20 != 0;
    let checksum = descriptor & 0x04 != 0;
    let dictionary = match descriptor & 3 {
        3 => 4,
        n => n as usize,
    };
    let content_size = match descriptor >> 6 {
        0 => usize::from(single_segment),
        flag => 1 << flag,
    };
    let header_rest = usize::from(!single_segment) + dictionary + content_size;
    if short(bytes, at, header_rest) {
        return Ok(None);
    }
    Ok(Some((at + header_rest, checksum)))
}

/// Walks the blocks of frame `index` (at byte `start`) from `at` by their 3-byte headers: where
/// its last block ends; `None` when the data ends inside a block.
fn blocks_end(bytes: &[u8], mut at: usize, start: usize, index: usize) -> Result<Option<usize>> {
    loop {
        if short(bytes, at, 3) {
            return Ok(None);
        }
        let header = u32::from(bytes[at]) | u32::from(bytes[at + 1]) << 8 | u32::from(bytes[at + 2]) << 16;
        at += 3;
        let last = header & 1 != 0;
        let kind = (header >> 1) & 3;
        if kind == 3 {
            return Err(FoldError::invalid(format!(
                "zstd frame {index} (byte {start}) is damaged: block at byte {} has the reserved type",
                at - 3
            )));
        }
        let payload = if kind == 1 { 1 } else { (header >> 3) as usize };
        if short(bytes, at, payload) {
            return Ok(None);
        }
        at += payload;
        if last {
            return Ok(Some(at));
        }
    }
}

/// Appends the decoding of one frame to `out` (up to the cap). With `partial`, a decoding error
/// (the frame ends early) keeps what was decoded before it.
fn decode_one(frame: &[u8], out: &mut Vec<u8>, index: usize, start: usize, verify: bool, partial: bool) -> Result<()> {
    let damaged = |why: String| FoldError::invalid(format!("zstd frame {index} (byte {start}) is damaged: {why}"));
    let mut source = frame;
    let decoder = match StreamingDecoder::new(&mut source) {
        Ok(decoder) => decoder,
        Err(_) if partial => return Ok(()),
        Err(e) => return Err(damaged(format!("its header does not decode ({e})"))),
    };
    let limit = MAX_DECODED_BYTES + 1 - out.len() as u64;
    let mut limited = decoder.take(limit);
    let read = limited.read_to_end(out);
    if out.len() as u64 > MAX_DECODED_BYTES {
        return Err(FoldError::invalid(format!(
            "the log decodes to more than {MAX_DECODED_BYTES} bytes"
        )));
    }
    match read {
        Err(_) if partial => return Ok(()),
        Err(e) => return Err(damaged(format!("its blocks do not decode ({})", e.kind()))),
        Ok(_) => {}
    }
    if verify {
        let decoder = limited.into_inner();
        let (stored, computed) = (
            decoder.decoder.get_checksum_from_data(),
            decoder.decoder.get_calculated_checksum(),
        );
        if stored != computed {
            return Err(damaged("its content checksum does not match".to_string()));
        }
    }
    Ok(())
}

/// Decodes a session log's frames the way DSH reads them: complete frames must decode (and
/// match their checksums); a torn final frame yields what it still decodes to.
///
/// # Errors
/// `INVALID_ARGUMENT` with a sentence naming the frame and the byte: data that is not zstd,
/// a byte where a frame must start that is not one, a damaged frame, or more than
/// [`MAX_DECODED_BYTES`] of output.
pub fn decode_log(bytes: &[u8]) -> Result<DecodedLog> {
    let (frames, torn_at) = scan(bytes)?;
    // Session logs compress ~4×: reserve that much, but never more than the cap before a byte is
    // decoded (a hostile input would otherwise get 4× its size up front).
    let mut text = Vec::with_capacity(bytes.len().saturating_mul(4).min(MAX_INITIAL_CAPACITY));
    let mut frame_ends = Vec::with_capacity(frames.len());
    for (index, span) in frames.iter().enumerate() {
        decode_one(
            &bytes[span.start..span.end],
            &mut text,
            index,
            span.start,
            span.checksum,
            false,
        )?;
        frame_ends.push(text.len());
    }
    let torn = torn_at.map(|byte| TornFrame {
        frame: frames.len(),
        byte,
    });
    if let Some(t) = torn {
        decode_one(&bytes[t.byte..], &mut text, t.frame, t.byte, false, true)?;
    }
    Ok(DecodedLog { text, frame_ends, torn })
}

/// Decodes every frame of `bytes` and concatenates the output; a torn final frame is an error.
///
/// # Errors
/// As [`decode_log`], and `INVALID_ARGUMENT` when the data ends inside a frame.
pub fn decode_frames(bytes: &[u8]) -> Result<Vec<u8>> {
    let log = decode_log(bytes)?;
    if let Some(t) = log.torn {
        return Err(FoldError::invalid(format!(
            "zstd frame {} (byte {}) is incomplete: the data ends inside it",
            t.frame, t.byte
        )));
    }
    Ok(log.text)
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
        let log = decode_log(TWO_FRAMES).unwrap();
        assert_eq!(log.frame_ends, vec![6, 11]);
        assert_eq!(log.torn, None);
    }

    #[test]
    fn a_torn_final_frame_is_a_tail_not_an_error() {
        for cut in [20, 22, 25, 30, 36] {
            let log = decode_log(&TWO_FRAMES[..cut]).unwrap();
            assert_eq!(log.frame_ends, vec![6], "cut at {cut}");
            assert_eq!(log.torn, Some(TornFrame { frame: 1, byte: 19 }), "cut at {cut}");
            assert!(log.text.starts_with(b"hello "));
            assert!(decode_frames(&TWO_FRAMES[..cut])
                .unwrap_err()
                .to_string()
                .contains("frame 1 (byte 19) is incomplete"));
        }
    }

    #[test]
    fn damage_is_named_in_a_sentence() {
        let plain = decode_log(b"{\"type\":\"session\",\"version\":0}\n").unwrap_err();
        assert_eq!(plain.code(), "INVALID_ARGUMENT");
        assert_eq!(
            plain.to_string(),
            "the data is not zstd-compressed (it starts with '{\"type\":\"session')"
        );
        let mut after = TWO_FRAMES.to_vec();
        after.extend_from_slice(b"garbage!");
        assert_eq!(
            decode_log(&after).unwrap_err().to_string(),
            "byte 37 is not the start of a zstd frame (after frame 1; it holds 'garbage!')"
        );
        let mut flipped = TWO_FRAMES.to_vec();
        flipped[11] ^= 0x01; // a raw block's byte: decodes, but the checksum differs
        let e = decode_log(&flipped).unwrap_err().to_string();
        assert_eq!(
            e,
            "zstd frame 0 (byte 0) is damaged: its content checksum does not match"
        );
        for e in [plain.to_string(), e] {
            assert!(!e.contains("Error {") && !e.contains("kind:"), "{e}");
        }
    }
}
