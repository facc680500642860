//! Large per-worker tables on transparent huge pages.
//!
//! A table of a few megabytes read at random (a connection table, one
//! line per flow) costs a TLB miss per lookup on 4 KiB pages: the table
//! spans thousands of pages, more than the TLB holds. [`BigSlice`]
//! allocates such a table aligned to 2 MiB and asks the kernel
//! (`madvise(MADV_HUGEPAGE)`) to back it with 2 MiB pages, as DPDK's
//! hugepage memory is for mbufs and its own tables. It needs no EAL, so
//! tables built on it run in tests and under the `linear` backend; where
//! the kernel refuses (transparent huge pages off), the memory is simply
//! ordinary pages. It lives in `dpdk/` for its one raw allocation and
//! system call, not because it calls DPDK.
use std::alloc::{self, Layout};
use std::ptr::NonNull;

/// Tables at least this large are aligned and advised (a huge page).
const HUGE: usize = 2 << 20;

/// A fixed-length slice of `T` that owns its allocation (see the module
/// doc). Allocated once, on the control thread; dereferences to `[T]`.
pub struct BigSlice<T: Copy> {
    ptr: NonNull<T>,
    len: usize,
    layout: Layout,
}

// SAFETY: `BigSlice` owns its elements as a `Box<[T]>` would; sending or
// sharing it is sending or sharing them.
unsafe impl<T: Copy + Send> Send for BigSlice<T> {}
// SAFETY: as above; `&BigSlice` gives only `&[T]`.
unsafe impl<T: Copy + Sync> Sync for BigSlice<T> {}

impl<T: Copy> BigSlice<T> {
    /// `len` copies of `value`. Panics, as `vec!` does, when the size
    /// overflows or the allocation fails.
    pub fn new(len: usize, value: T) -> Self {
        let size = len
            .checked_mul(std::mem::size_of::<T>())
            .expect("BigSlice size overflows");
        let align = if size >= HUGE {
            HUGE.max(std::mem::align_of::<T>())
        } else {
            std::mem::align_of::<T>()
        };
        let layout = Layout::from_size_align(size.max(1), align).expect("BigSlice layout");
        // SAFETY: the layout's size is at least 1.
        let raw = unsafe { alloc::alloc(layout) } as *mut T;
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout);
        };
        if size >= HUGE {
            // Before the first touch, so the faults take huge pages. A
            // refusal (THP off, an old kernel) leaves ordinary pages.
            // SAFETY: the range is the allocation just made, 2 MiB aligned.
            let _ = unsafe { libc::madvise(raw.cast(), size, libc::MADV_HUGEPAGE) };
        }
        for i in 0..len {
            // SAFETY: `i < len`: inside the allocation, aligned for `T`;
            // the memory is uninitialised, so `write` (no drop of old).
            unsafe { ptr.as_ptr().add(i).write(value) };
        }
        BigSlice { ptr, len, layout }
    }
}

impl<T: Copy> std::ops::Deref for BigSlice<T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: `len` initialised elements from `ptr`, owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> std::ops::DerefMut for BigSlice<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as `deref`; `&mut self` is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> Drop for BigSlice<T> {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with exactly this layout; `T: Copy`
        // has no drop to run.
        unsafe { alloc::dealloc(self.ptr.as_ptr().cast(), self.layout) }
    }
}

impl<T: Copy + std::fmt::Debug> std::fmt::Debug for BigSlice<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BigSlice").field("len", &self.len).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::BigSlice;

    #[test]
    fn small_and_huge_slices_hold_their_values() {
        let mut s = BigSlice::new(10, 7u32);
        assert_eq!(&s[..], &[7u32; 10][..]);
        s[3] = 1;
        assert_eq!(s[3], 1);
        let mut h = BigSlice::new(1 << 20, 0u64); // 8 MiB: aligned, advised
        assert_eq!(h.as_ptr() as usize % (2 << 20), 0);
        h[(1 << 20) - 1] = 5;
        assert_eq!(h.iter().sum::<u64>(), 5);
        let e = BigSlice::new(0, 0u8);
        assert!(e.is_empty());
    }
}
