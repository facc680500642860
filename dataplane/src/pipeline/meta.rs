//! Per-packet metadata: filled once by the parse stage, read by later stages,
//! so no stage parses a header twice. One `Meta` is one cache line.

/// Why a packet was dropped. Every drop has exactly one reason and bumps one
/// counter; the names are the counter names in stats and telemetry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum DropReason {
    /// No stage chose an output (e.g. a port outside every forward pair).
    NoOutput = 0,
    /// The TX queue was full.
    TxFull,
    /// Frame or header cut short.
    Truncated,
    /// IP version field wrong for the EtherType.
    BadVersion,
    /// IPv4 IHL < 5 or header longer than the packet.
    BadHeaderLen,
    /// IP total/payload length inconsistent with the frame.
    BadTotalLen,
    /// IPv4 header checksum wrong.
    BadChecksum,
    /// EtherType or protocol the pipeline does not handle.
    Unsupported,
    /// TTL or hop limit would reach zero.
    TtlExceeded,
    /// No route for the destination.
    NoRoute,
    /// Denied by an ACL rule (or the ACL default).
    AclDeny,
    /// Next hop's MAC not known yet (an ARP/NS request was sent).
    NeighborUnresolved,
    /// Addressed to the daemon but not something it answers.
    LocalUnhandled,
    /// Source or destination address that must not be forwarded.
    BadAddress,
    /// Frame larger than the output port's MTU.
    TooBig,
}

impl DropReason {
    pub const COUNT: usize = DropReason::TooBig as usize + 1;

    pub const ALL: [DropReason; DropReason::COUNT] = [
        DropReason::NoOutput,
        DropReason::TxFull,
        DropReason::Truncated,
        DropReason::BadVersion,
        DropReason::BadHeaderLen,
        DropReason::BadTotalLen,
        DropReason::BadChecksum,
        DropReason::Unsupported,
        DropReason::TtlExceeded,
        DropReason::NoRoute,
        DropReason::AclDeny,
        DropReason::NeighborUnresolved,
        DropReason::LocalUnhandled,
        DropReason::BadAddress,
        DropReason::TooBig,
    ];

    /// The counter's name.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::NoOutput => "no_output",
            DropReason::TxFull => "tx_full",
            DropReason::Truncated => "truncated",
            DropReason::BadVersion => "bad_version",
            DropReason::BadHeaderLen => "bad_header_len",
            DropReason::BadTotalLen => "bad_total_len",
            DropReason::BadChecksum => "bad_checksum",
            DropReason::Unsupported => "unsupported",
            DropReason::TtlExceeded => "ttl_exceeded",
            DropReason::NoRoute => "no_route",
            DropReason::AclDeny => "acl_deny",
            DropReason::NeighborUnresolved => "neighbor_unresolved",
            DropReason::LocalUnhandled => "local_unhandled",
            DropReason::BadAddress => "bad_address",
            DropReason::TooBig => "too_big",
        }
    }
}

/// What happens to a packet after the current stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verdict {
    /// Go on to the next stage.
    #[default]
    Continue,
    /// Transmit on this port (port index in config order); later stages skip it.
    Tx(u16),
    /// Drop; later stages skip it.
    Drop(DropReason),
    /// Used up by the daemon itself (an ARP reply it learned from): freed,
    /// not counted as a drop.
    Consumed,
}

/// Slow-path events the stages count (not drops).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Event {
    /// ARP request for one of our addresses answered.
    ArpReply = 0,
    /// ARP request sent to resolve a next hop.
    ArpRequest,
    /// Neighbour solicitation for one of our addresses answered.
    NdAdvert,
    /// Neighbour solicitation sent to resolve a next hop.
    NdSolicit,
    /// ICMP/ICMPv6 echo request to us answered.
    EchoReply,
    /// ICMP/ICMPv6 error (time exceeded) sent.
    IcmpError,
    /// ICMP error suppressed by the rate limit.
    IcmpRateLimited,
    /// Neighbour learned or refreshed from ARP/NDP.
    NeighborLearned,
    /// Packet consumed by the daemon (ARP reply, NA).
    Consumed,
}

impl Event {
    pub const COUNT: usize = Event::Consumed as usize + 1;
    pub const ALL: [Event; Event::COUNT] = [
        Event::ArpReply,
        Event::ArpRequest,
        Event::NdAdvert,
        Event::NdSolicit,
        Event::EchoReply,
        Event::IcmpError,
        Event::IcmpRateLimited,
        Event::NeighborLearned,
        Event::Consumed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Event::ArpReply => "arp_reply_sent",
            Event::ArpRequest => "arp_request_sent",
            Event::NdAdvert => "nd_advert_sent",
            Event::NdSolicit => "nd_solicit_sent",
            Event::EchoReply => "echo_reply_sent",
            Event::IcmpError => "icmp_error_sent",
            Event::IcmpRateLimited => "icmp_rate_limited",
            Event::NeighborLearned => "neighbor_learned",
            Event::Consumed => "consumed",
        }
    }
}

/// Network-layer kind found by the parse stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum L3 {
    #[default]
    Unparsed = 0,
    Ipv4,
    Ipv6,
    Arp,
    Other,
}

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
/// The fused pass builds it straight from the header, without a `Meta`;
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

/// Flags in `Meta::flags`.
pub mod flags {
    /// Non-first IPv4/IPv6 fragment: L4 ports are not present.
    pub const FRAGMENT: u8 = 1 << 0;
    /// Destination is one of the daemon's own addresses.
    pub const LOCAL: u8 = 1 << 1;
    /// Ethernet destination is broadcast or multicast.
    pub const L2_MULTICAST: u8 = 1 << 2;
}

/// Per-packet state for one trip through the pipeline.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(64))]
pub struct Meta {
    pub verdict: Verdict,
    /// Port index the packet came in on.
    pub in_port: u16,
    /// Offset of the L3 header (after Ethernet and VLAN tags).
    pub l3_off: u16,
    /// Offset of the L4 header; 0 when there is none.
    pub l4_off: u16,
    pub l3: L3,
    pub flags: u8,
    /// Flow hash over the 5-tuple (symmetric is not required).
    pub hash: u32,
    /// Next-hop index chosen by the route stage.
    pub nexthop: u32,
    pub key: FlowKey,
}

const _: () = assert!(std::mem::size_of::<Meta>() == 64);
