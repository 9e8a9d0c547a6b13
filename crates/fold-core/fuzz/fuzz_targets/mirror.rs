//! Fuzz target `mirror`: see fold_core::fuzz (the contract it checks, and its corpus replay).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fold_core::fuzz::mirror(data));
