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
    /// IP total/payload length longer than the frame, or a frame whose
    /// length disagrees with its mbuf chain. (A frame longer than its IP
    /// packet is trimmed, not dropped.)
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
    /// Packet larger than the output port's MTU that may not be fragmented
    /// (IPv4 with DF set, or IPv6): an ICMP fragmentation-needed / ICMPv6
    /// packet-too-big goes back to the source (rate-limited); also a packet
    /// that does not fit one buffer (see `parse`), larger than any port's.
    TooBig,
    /// IPv4 packet without DF larger than the output port's MTU: the router
    /// does not fragment (it would need new buffers), so it drops it.
    TooBigNoDf,
    /// To a load-balancer service none of whose backends has a weight.
    LbNoBackend,
    /// An IP fragment to a load-balancer service that drops fragments.
    LbFragment,
    /// Unicast frame whose destination MAC is not the input port's: a
    /// router does not forward what it merely overhears (promiscuous ports).
    NotForUs,
    /// IP packet with a unicast destination received as a link-layer
    /// broadcast or multicast (RFC 1812 5.3.4): never routed.
    L2Multicast,
    /// IPv4 broadcast: to a connected subnet's broadcast address (from the
    /// subnet or directed from elsewhere) or to 255.255.255.255. Never
    /// forwarded, answered or resolved with ARP.
    Broadcast,
    /// Ring mode: the receiving core found the worker's ring full (the
    /// worker fell behind); counted by the distributor, never a block.
    RingFull,
}

impl DropReason {
    pub const COUNT: usize = DropReason::RingFull as usize + 1;

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
        DropReason::TooBigNoDf,
        DropReason::LbNoBackend,
        DropReason::LbFragment,
        DropReason::NotForUs,
        DropReason::L2Multicast,
        DropReason::Broadcast,
        DropReason::RingFull,
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
            DropReason::TooBigNoDf => "too_big_no_df",
            DropReason::LbNoBackend => "lb_no_backend",
            DropReason::LbFragment => "lb_fragment",
            DropReason::NotForUs => "not_for_us",
            DropReason::L2Multicast => "l2_multicast",
            DropReason::Broadcast => "broadcast",
            DropReason::RingFull => "ring_full",
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
    /// ICMP/ICMPv6 error sent (time exceeded, fragmentation needed, packet
    /// too big).
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

pub use crate::flow::{FlowKey, FlowKeyV4};

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
