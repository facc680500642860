//! Flow keys and the flow hash: what identifies a flow, shared by the
//! pipeline (which fills them) and the tables (the ACL and its flow cache,
//! the load balancer's connection table), so neither depends on the other
//! for them.

/// The lookup key of a packet, in network byte order, laid out for
/// `rte_acl` (it classifies straight from this struct): the first field is
/// one byte, fields are grouped in 4-byte words. IPv4 addresses sit in the
/// first four bytes of `src`/`dst`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct FlowKey {
    /// IP protocol (final next header for IPv6).
    pub proto: u8,
    pub _pad: u8,
    /// Outer VLAN id, big endian; 0 when untagged.
    pub vlan_be: u16,
    /// L4 source/destination port, big endian; 0 when none.
    pub sport_be: u16,
    pub dport_be: u16,
    pub src: [u8; 16],
    pub dst: [u8; 16],
}

impl FlowKey {
    pub const OFF_PROTO: u32 = 0;
    pub const OFF_VLAN: u32 = 2;
    pub const OFF_SPORT: u32 = 4;
    pub const OFF_DPORT: u32 = 6;
    pub const OFF_SRC: u32 = 8;
    pub const OFF_DST: u32 = 24;

    #[inline(always)]
    pub fn src_v4(&self) -> u32 {
        u32::from_be_bytes([self.src[0], self.src[1], self.src[2], self.src[3]])
    }
    #[inline(always)]
    pub fn dst_v4(&self) -> u32 {
        u32::from_be_bytes([self.dst[0], self.dst[1], self.dst[2], self.dst[3]])
    }
    #[inline(always)]
    pub fn sport(&self) -> u16 {
        u16::from_be(self.sport_be)
    }
    #[inline(always)]
    pub fn dport(&self) -> u16 {
        u16::from_be(self.dport_be)
    }
}

/// The bytes of an IPv4 [`FlowKey`] that classification reads, as two
/// words: the first 8 bytes (protocol, VLAN, ports) and the two addresses.
/// The fast lane builds it straight from the header, without a `Meta`;
/// the flow cache hashes and compares IPv4 keys in this form.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowKeyV4 {
    /// `proto | _pad << 8 | vlan_be << 16 | sport_be << 32 | dport_be << 48`.
    pub head: u64,
    /// The source address's bytes (as a native-endian `u32`) in the low
    /// half, the destination's in the high half.
    pub addrs: u64,
}

impl FlowKeyV4 {
    #[inline(always)]
    pub fn of(k: &FlowKey) -> FlowKeyV4 {
        let a4 = |x: &[u8; 16]| u64::from(u32::from_ne_bytes([x[0], x[1], x[2], x[3]]));
        FlowKeyV4 {
            head: u64::from(k.proto)
                | u64::from(k._pad) << 8
                | u64::from(k.vlan_be) << 16
                | u64::from(k.sport_be) << 32
                | u64::from(k.dport_be) << 48,
            addrs: a4(&k.src) | a4(&k.dst) << 32,
        }
    }

    /// The `FlowKey` it was taken from (the rest of the addresses zero, as
    /// parse leaves them for IPv4).
    pub fn to_flow_key(self) -> FlowKey {
        let h = self.head;
        let mut k = FlowKey {
            proto: h as u8,
            _pad: (h >> 8) as u8,
            vlan_be: (h >> 16) as u16,
            sport_be: (h >> 32) as u16,
            dport_be: (h >> 48) as u16,
            ..FlowKey::default()
        };
        k.src[..4].copy_from_slice(&(self.addrs as u32).to_ne_bytes());
        k.dst[..4].copy_from_slice(&((self.addrs >> 32) as u32).to_ne_bytes());
        k
    }
}

/// Flow hash over the 5-tuple: the same flow always gets the same hash, so
/// ECMP keeps a flow on one path. (A multiply-rotate mix: two instructions per
/// word, plenty for spreading flows over a handful of paths.)
#[inline]
pub fn flow_hash(k: &FlowKey) -> u32 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let w = |b: &[u8]| u64::from_ne_bytes(b.try_into().unwrap());
    let mut h = (u64::from(k.proto) << 32) | (u64::from(k.sport_be) << 16) | u64::from(k.dport_be);
    for word in [
        w(&k.src[..8]),
        w(&k.src[8..]),
        w(&k.dst[..8]),
        w(&k.dst[8..]),
    ] {
        h = (h ^ word).wrapping_mul(K).rotate_left(31);
    }
    h = h.wrapping_mul(K);
    (h >> 32) as u32 ^ h as u32
}
