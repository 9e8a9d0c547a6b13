//! `zstd::decode_frames` on hostile input allocates within its cap: a counting global allocator
//! records the largest single allocation made while a large garbage input is decoded (the
//! decoder used to reserve 4× the input before reading a byte of it).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use fold_core::zstd::{decode_frames, MAX_INITIAL_CAPACITY};

struct Counting;

static WATCHING: AtomicBool = AtomicBool::new(false);
static LARGEST: AtomicUsize = AtomicUsize::new(0);

#[allow(
    unsafe_code,
    reason = "a global allocator is unsafe by definition; this one only forwards"
)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if WATCHING.load(Ordering::Relaxed) {
            LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if WATCHING.load(Ordering::Relaxed) {
            LARGEST.fetch_max(new_size, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn a_large_garbage_input_is_refused_without_a_proportional_allocation() {
    // 64 MiB of bytes that are not a zstd frame: refused at the first frame header.
    let hostile = vec![0x5a_u8; 64 << 20];
    WATCHING.store(true, Ordering::Relaxed);
    let result = decode_frames(&hostile);
    WATCHING.store(false, Ordering::Relaxed);
    assert_eq!(result.unwrap_err().code(), "INVALID_ARGUMENT");
    let largest = LARGEST.load(Ordering::Relaxed);
    assert!(
        largest <= MAX_INITIAL_CAPACITY,
        "decoding 64 MiB of garbage allocated {largest} bytes at once (cap {MAX_INITIAL_CAPACITY})"
    );
}
