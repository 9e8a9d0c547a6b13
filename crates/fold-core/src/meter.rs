//! The one visible-chars meter of the core: sizes are counted as the JS host counts them
//! (`string.length`, UTF-16 code units), so every size the core compares or returns is in the
//! host's unit. The host side of the same meter is `plugin/shared/meter.js`.

/// The length JS reports for `text`: UTF-16 code units (one per char, two for a char outside
/// the Basic Multilingual Plane, i.e. one encoded in 4 bytes of UTF-8).
pub fn utf16_len(text: &str) -> u64 {
    // Every byte but continuation bytes starts a char; a 4-byte char is a surrogate pair.
    text.bytes()
        .map(|b| u64::from(b & 0xC0 != 0x80) + u64::from(b >= 0xF0))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::utf16_len;

    #[test]
    fn counts_like_string_length() {
        for text in ["", "abc", "é", "日本語", "😀", "a😀b", "\u{10FFFF}", "e\u{301}"] {
            assert_eq!(utf16_len(text), text.encode_utf16().count() as u64, "{text:?}");
        }
    }
}
