//! `decodeZstd`: the CLI's reader for DSH's `session.jsonl.zstd` logs (see `fold_core::zstd`).

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;

use crate::convert::throw;

/// Decodes a sequence of concatenated Zstandard frames (a `session.jsonl.zstd` file).
#[napi(ts_args_type = "data: Uint8Array")]
pub fn decode_zstd(env: &Env, data: Unknown<'_>) -> Result<Buffer> {
    crate::guard::throwing(env, "decodeZstd", || decode_checked(env, data))
}

fn decode_checked(env: &Env, data: Unknown<'_>) -> Result<Buffer> {
    let bytes = match crate::convert::cast::<Uint8Array>(&data) {
        Ok(bytes) => bytes,
        Err(_) => {
            return Err(throw(
                env,
                &fold_core::FoldError::invalid("data must be a Buffer or Uint8Array"),
            ))
        }
    };
    fold_core::zstd::decode_frames(&bytes)
        .map(Buffer::from)
        .map_err(|e| throw(env, &e))
}
