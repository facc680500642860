//! A burst: a fixed array of packet slots plus a length, never a `Vec`.
//!
//! Slots are `Option<P>` so packets can be moved out one by one in safe code;
//! for `P = Mbuf` an `Option<Mbuf>` is exactly one pointer (null = `None`),
//! which is what lets `dpdk::port` hand the slot array straight to
//! `rte_eth_rx_burst`.

/// Packets pulled from a queue in one call; l3fwd and testpmd use 32 too.
pub const BURST_SIZE: usize = 32;

/// A set of a burst's slots: bit `i` is slot `i`.
pub type SlotMask = u32;
const _: () = assert!(
    BURST_SIZE <= SlotMask::BITS as usize,
    "a slot mask holds a burst"
);

/// The slots `0..n` (`n` at most [`BURST_SIZE`]).
#[inline(always)]
pub fn mask_below(n: usize) -> SlotMask {
    if n >= SlotMask::BITS as usize {
        SlotMask::MAX
    } else {
        (1 << n) - 1
    }
}

/// The slots whose bits are set in `mask`, in order.
#[inline(always)]
pub fn slots(mut mask: SlotMask) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let i = mask.trailing_zeros() as usize % BURST_SIZE;
            mask &= mask - 1;
            i
        })
    })
}

/// Up to `N` packets in slots `0..len`; slots past `len` are `None`.
pub struct Burst<P, const N: usize = BURST_SIZE> {
    slots: [Option<P>; N],
    len: usize,
}

impl<P, const N: usize> Default for Burst<P, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P, const N: usize> Burst<P, N> {
    pub const CAPACITY: usize = N;

    pub fn new() -> Self {
        Burst {
            slots: std::array::from_fn(|_| None),
            len: 0,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn is_full(&self) -> bool {
        self.len == N
    }

    /// Appends a packet; gives it back when the burst is full.
    #[inline]
    pub fn push(&mut self, pkt: P) -> Result<(), P> {
        self.push_len(pkt).map(|_| ())
    }

    /// [`Burst::push`], giving the new length: a TX buffer checks it
    /// against [`Burst::CAPACITY`] with no second load of the length.
    #[inline]
    pub fn push_len(&mut self, pkt: P) -> Result<usize, P> {
        let len = self.len;
        let Some(slot) = self.slots.get_mut(len) else {
            return Err(pkt);
        };
        // Slots past `len` are always `None`: forgetting the old value skips
        // the drop check (and a possible free call) a plain assignment emits.
        let old = slot.replace(pkt);
        debug_assert!(old.is_none(), "slot past len was occupied");
        std::mem::forget(old);
        self.len = len + 1;
        Ok(len + 1)
    }

    /// The packet in slot `i`, if any.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&P> {
        self.slots.get(i).and_then(Option::as_ref)
    }

    #[inline]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut P> {
        self.slots.get_mut(i).and_then(Option::as_mut)
    }

    /// Moves the packet out of slot `i`, leaving the slot empty.
    #[inline]
    pub fn take(&mut self, i: usize) -> Option<P> {
        self.slots.get_mut(i).and_then(Option::take)
    }

    /// Puts a packet back into slot `i` (which must be below `len`).
    #[inline]
    pub fn put(&mut self, i: usize, pkt: P) {
        debug_assert!(i < self.len);
        self.slots[i] = Some(pkt);
    }

    /// All `N` slots, for the dpdk layer to fill or drain in one call.
    #[inline]
    pub fn slots_mut(&mut self) -> &mut [Option<P>; N] {
        &mut self.slots
    }

    #[inline]
    pub fn slots(&self) -> &[Option<P>] {
        &self.slots[..self.len]
    }

    /// Sets the length after the slots were filled (or drained) in bulk.
    /// Slots `len..N` must be `None`; checked in debug builds.
    #[inline]
    pub fn set_len(&mut self, len: usize) {
        debug_assert!(len <= N);
        debug_assert!(self.slots[len..].iter().all(Option::is_none));
        self.len = len;
    }

    /// Moves the occupied slots down so the packets are contiguous again
    /// (after `take` left holes) and returns the new length.
    pub fn compact(&mut self) -> usize {
        let mut w = 0;
        for r in 0..self.len {
            if self.slots[r].is_some() {
                if r != w {
                    self.slots[w] = self.slots[r].take();
                }
                w += 1;
            }
        }
        self.len = w;
        w
    }

    /// Removes every packet (dropping each: for mbufs prefer the bulk free in `dpdk`).
    pub fn clear(&mut self) {
        for s in &mut self.slots[..self.len] {
            *s = None;
        }
        self.len = 0;
    }

    pub fn iter(&self) -> impl Iterator<Item = &P> {
        self.slots[..self.len].iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_take_compact() {
        let mut b: Burst<u32, 4> = Burst::new();
        for i in 0..4 {
            b.push(i).unwrap();
        }
        assert_eq!(b.push(9), Err(9));
        assert_eq!(b.take(1), Some(1));
        assert_eq!(b.take(1), None);
        assert_eq!(b.compact(), 3);
        assert_eq!(b.iter().copied().collect::<Vec<_>>(), vec![0, 2, 3]);
        b.clear();
        assert!(b.is_empty());
    }
}
