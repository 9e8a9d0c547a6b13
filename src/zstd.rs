//! `decodeZstd` and `decodeZstdLog`: the CLI's readers for DSH's `session.jsonl.zstd` logs (see
//! `fold_core::zstd`, which holds every rule; here only conversion). Both run under the panic
//! guard like every export.

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;

use crate::convert::throw;
use crate::types::DecodedZstdLog;

/// The bytes of a Buffer/Uint8Array argument, or the classified error.
fn bytes_of(env: &Env, data: &Unknown<'_>) -> Result<Uint8Array> {
    crate::convert::cast::<Uint8Array>(data).map_err(|_| {
        throw(
            env,
            &fold_core::FoldError::invalid("data must be a Buffer or Uint8Array"),
        )
    })
}

/// Decodes a sequence of concatenated Zstandard frames (a `session.jsonl.zstd` file); data that
/// ends inside a frame is an error.
#[napi(ts_args_type = "data: Uint8Array")]
pub fn decode_zstd(env: &Env, data: Unknown<'_>) -> Result<Buffer> {
    crate::guard::throwing(env, "decodeZstd", || {
        let bytes = bytes_of(env, &data)?;
        fold_core::zstd::decode_frames(&bytes)
            .map(Buffer::from)
            .map_err(|e| throw(env, &e))
    })
}

/// Decodes a session log's frames as DSH reads them: a final frame the data ends inside (a torn
/// tail) is not an error; its decodable prefix is returned after the complete frames' text.
#[napi(ts_args_type = "data: Uint8Array")]
pub fn decode_zstd_log(env: &Env, data: Unknown<'_>) -> Result<DecodedZstdLog> {
    crate::guard::throwing(env, "decodeZstdLog", || {
        let bytes = bytes_of(env, &data)?;
        let log = fold_core::zstd::decode_log(&bytes).map_err(|e| throw(env, &e))?;
        let u32_of = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Ok(DecodedZstdLog {
            frame_ends: log.frame_ends.iter().map(|&n| u32_of(n)).collect(),
            torn_frame: log.torn.map(|t| u32_of(t.frame)),
            torn_byte: log.torn.map(|t| u32_of(t.byte)),
            text: Buffer::from(log.text),
        })
    })
}
