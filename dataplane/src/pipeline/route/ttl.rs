//! TTL decrement with the RFC 1624 incremental checksum update, for the
//! route stage's rewrite of a forwarded IPv4 header.

/// Takes one off an IPv4 header's TTL and patches its checksum. TTL is the
/// high byte of the 16-bit word at offset 8, so the checksum gains 0x0100
/// (RFC 1624 eqn. 3 with m' = m - 0x0100), end-around carry included; a
/// result of 0xffff is written as 0x0000, as a full recomputation gives.
/// The sum is taken on the checksum read little-endian, where the same
/// change is + 1: a one's-complement sum does not depend on byte order
/// (RFC 1071), and 0xffff reads the same both ways. That spares two byte
/// swaps per packet.
#[inline(always)]
pub fn decrement_ttl_v4(ip: &mut [u8]) {
    ip[8] -= 1;
    let c = u32::from(u16::from_le_bytes([ip[10], ip[11]])) + 1;
    let c = ((c & 0xffff) + (c >> 16)) as u16;
    let c = if c == 0xffff { 0 } else { c };
    ip[10..12].copy_from_slice(&c.to_le_bytes());
}

/// Takes one off an IPv4 header's TTL for a port that computes the header
/// checksum itself (TX offload): the field is zeroed, as devices expect.
#[inline(always)]
pub fn decrement_ttl_v4_offloaded(ip: &mut [u8]) {
    ip[8] -= 1;
    ip[10..12].fill(0);
}

#[cfg(test)]
mod tests {
    use super::decrement_ttl_v4;

    fn full_checksum(h: &[u8]) -> u16 {
        let mut s: u32 = 0;
        for (k, w) in h.chunks(2).enumerate() {
            if k != 5 {
                s += u32::from(u16::from_be_bytes([w[0], w[1]]));
            }
        }
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        !(s as u16)
    }

    /// Every checksum value before the update (the word at offset 12 sweeps
    /// them all), with TTLs whose change does and does not carry: the
    /// incremental update equals the recomputed checksum, 0xffff/0x0000
    /// edge included.
    #[test]
    fn ttl_decrement_every_checksum() {
        for ttl in [2u8, 64, 255] {
            for w in 0..=u16::MAX {
                let mut h = [
                    0x45, 0, 0, 84, 0, 0, 0x40, 0, ttl, 17, 0, 0, 0, 0, 10, 0, 0, 1, 0, 0,
                ];
                h[12..14].copy_from_slice(&w.to_be_bytes());
                let c = full_checksum(&h);
                h[10..12].copy_from_slice(&c.to_be_bytes());
                decrement_ttl_v4(&mut h);
                assert_eq!(
                    u16::from_be_bytes([h[10], h[11]]),
                    full_checksum(&h),
                    "word {w:#x} ttl {ttl}"
                );
            }
        }
    }

    proptest::proptest! {
        /// The incremental TTL update gives exactly the recomputed checksum.
        #[test]
        fn ttl_decrement_equals_recomputation(mut h in proptest::prelude::any::<[u8; 20]>(), ttl in 2u8..=255) {
            h[0] = 0x45;
            h[8] = ttl;
            let c = full_checksum(&h);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            decrement_ttl_v4(&mut h);
            proptest::prop_assert_eq!(h[8], ttl - 1);
            proptest::prop_assert_eq!(u16::from_be_bytes([h[10], h[11]]), full_checksum(&h));
        }
    }
}
