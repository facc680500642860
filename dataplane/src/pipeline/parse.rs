//! `parse` (inserted automatically before the first stage that needs it):
//! checks the frame is for us, walks Ethernet and VLAN tags, validates the
//! IPv4/IPv6 header (RFC 1812 checks: version, IHL, total length, header
//! checksum), walks IPv6 extension headers, trims the frame to its IP
//! packet and fills the packet's [`Meta`] once.
//!
//! The frame rules, each in one place here and taken by the lane's plain
//! packets and every other packet alike (the lane's check
//! [`Parse::fast_v4`] accepts only frames the general walk
//! accepts unchanged):
//! - **L2 destination**: a unicast frame whose destination MAC is not the
//!   input port's is dropped as `not_for_us` (ports are promiscuous by
//!   default; a router forwards only what is addressed to it). Broadcast
//!   and multicast frames are parsed and flagged `L2_MULTICAST`; `route`
//!   drops those that carry a unicast IP destination (`l2_multicast`).
//! - **L2 source**: a frame from a group (broadcast or multicast) MAC is
//!   dropped as `bad_address`, whatever it holds: no station sends from
//!   one. On the lane it is the same masked compare as the destination's.
//! - **Frame length vs IP length**: a frame longer than its IP packet
//!   (Ethernet padding, or anything else after it) is trimmed to the IP
//!   packet, as Linux does, so no trailing byte is forwarded and the MTU
//!   check sees the packet's own length; a frame shorter than its IP
//!   length is `bad_total_len`. ARP frames are trimmed to their 28-byte
//!   body, padded to the 60-byte minimum.
//! - **Chains** (a frame larger than one mbuf, as a PMD delivers it):
//!   headers are read from the first segment only; the IP length is
//!   checked against the whole packet (`pkt_len`), whose segments must add
//!   up (`bad_total_len` otherwise), and the frame is trimmed, freeing the
//!   segments past its end. A packet whose IP packet still ends beyond the
//!   first segment is dropped as `too_big`: `check` makes every mbuf hold
//!   the largest MTU plus its Ethernet and VLAN headers, so such a packet
//!   is larger than any port's MTU. The router never sends a chain.
//!
//! Meta: reads `verdict`, `in_port` (through [`Parse::port_mac`], which the
//! pipeline sets per burst); sets `l3`, `l3_off`, `l4_off`, `flags`
//! (FRAGMENT, L2_MULTICAST), `key` (proto, vlan, ports, addresses) and
//! `hash`; sets `verdict = Drop(reason)` for malformed packets, frames not
//! for us and EtherTypes other than IPv4, IPv6 and ARP.
use super::meta::flags;
use super::tx::FastTx;
use super::{DropReason, FlowKeyV4, Meta, MetaBurst, PacketBuf, Verdict, L3};
use super::{StageOps, StageSpec};
use crate::burst::Burst;
use crate::tables::set::{ParseNeeds, TableSet};
use crate::wire::{self, EtherType, Ipv6Packet};

/// What [`Parse::fast_v4`] reads from a plain IPv4 header (host order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastV4 {
    pub src: u32,
    pub dst: u32,
}

/// How deep to parse; set from what the later stages need.
#[derive(Debug, Clone, Copy)]
pub struct Parse {
    /// Read L4 ports (ACL rules with ports, ECMP hashing).
    pub l4: bool,
    /// Compute `Meta::hash` (ECMP).
    pub hash: bool,
    /// Verify the IPv4 header checksum in software.
    pub verify_checksum: bool,
    /// The input port's MAC as [`mac_word`] gives it: a unicast frame to
    /// any other destination is `not_for_us`. The pipeline sets it for
    /// each burst from the port the burst came in on
    /// (`Pipeline::set_port_macs`).
    pub port_mac: u64,
}

impl Default for Parse {
    fn default() -> Self {
        Parse {
            l4: true,
            hash: true,
            verify_checksum: true,
            port_mac: 0,
        }
    }
}

/// The low 48 bits of a little-endian `u64`: a MAC address as the first
/// eight bytes of a frame load, masked ([`mac_word`]).
const MAC_MASK: u64 = 0xffff_ffff_ffff;

/// A MAC address as the L2 destination check compares it: its six bytes,
/// in wire order from the low byte of a `u64` (so a frame's destination is
/// one masked 8-byte load).
pub const fn mac_word(mac: [u8; 6]) -> u64 {
    u64::from_le_bytes([mac[0], mac[1], mac[2], mac[3], mac[4], mac[5], 0, 0])
}

/// The group bit of a frame's source MAC (its byte 6) in the frame's first
/// eight bytes read as a little-endian `u64`.
const SRC_GROUP_BIT: u64 = 1 << 48;

/// A frame's destination MAC as a [`mac_word`]; the frame has at least 8 bytes.
#[inline(always)]
fn dst_word(data: &[u8]) -> u64 {
    let w: [u8; 8] = data[..8].try_into().expect("8 bytes");
    u64::from_le_bytes(w) & MAC_MASK
}

/// [`dst_word`] with the source MAC's group bit ([`SRC_GROUP_BIT`]): equal
/// to a port's [`mac_word`] exactly when the frame is to that (unicast)
/// MAC from a unicast source.
#[inline(always)]
fn l2_word(data: &[u8]) -> u64 {
    let w: [u8; 8] = data[..8].try_into().expect("8 bytes");
    u64::from_le_bytes(w) & (MAC_MASK | SRC_GROUP_BIT)
}

impl Parse {
    /// What to extract for these tables.
    pub fn set_needs(&mut self, needs: ParseNeeds) {
        self.l4 = needs.l4;
        self.hash = needs.hash;
    }
}

/// As a stage of its own (stage by stage, `Pipeline::set_lane(false)`):
/// the full parse of every packet. On the lane the pipeline runs
/// [`super::Lane::sweep`] instead.
impl StageOps for Parse {
    const SPEC: StageSpec = StageSpec {
        name: "parse",
        section: None,
        forwards: false,
        needs_later_forwarder: false,
        needs_headers: false,
        headerless: false,
        restart: crate::pipeline::RestartKeys::None,
    };

    /// Checksums verified; L4 ports and the other fields read only where
    /// the stages' tables need them ([`ParseNeeds`]).
    fn build(b: &super::StageBuild) -> Self {
        let mut parse = Parse {
            verify_checksum: true,
            ..Parse::default()
        };
        parse.set_needs(b.tables.parse);
        parse
    }

    fn process<P: PacketBuf, F: FastTx<P>>(
        &mut self,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        lane: &mut super::Lane,
        _ctx: &super::StageCtx,
        _tx: &mut F,
    ) {
        // The input port's MAC comes with the burst (`Pipeline::run_with`).
        let p = Parse {
            port_mac: lane.parse.port_mac,
            ..*self
        };
        lane.parse = p;
        p.process(pkts, meta);
    }

    fn rebind(&mut self, set: &TableSet, _worker: usize) {
        self.set_needs(set.parse);
    }
}

/// An IPv4 fragment, first or later (MF set or a non-zero offset). Parse
/// marks only later ones; the first carries ports the others lack.
#[inline(always)]
pub fn fragment_v4(data: &[u8], m: &Meta) -> bool {
    let at = usize::from(m.l3_off) + 6;
    data.get(at..at + 2)
        .is_some_and(|b| u16::from_be_bytes([b[0], b[1]]) & 0x3fff != 0)
}

/// An IPv6 fragment, first or later: a Fragment header in the chain.
#[inline(always)]
pub fn fragment_v6(data: &[u8], m: &Meta) -> bool {
    if m.flags & flags::FRAGMENT != 0 {
        return true;
    }
    // No extension header (the common case): the next header is the upper
    // layer itself.
    let nh = data.get(usize::from(m.l3_off) + 6).copied().unwrap_or(0);
    if matches!(nh, 6 | 17 | 58 | 132) {
        return false;
    }
    fragment_v6_walk(data, m)
}

#[cold]
#[inline(never)]
fn fragment_v6_walk(data: &[u8], m: &Meta) -> bool {
    use crate::wire::{ipv6, walk_extensions};
    let Some(l3) = data.get(usize::from(m.l3_off)..) else {
        return false;
    };
    let Ok(ip) = Ipv6Packet::new_checked(l3) else {
        return false;
    };
    let end = ipv6::HEADER_LEN + usize::from(ip.payload_len());
    l3.get(ipv6::HEADER_LEN..end)
        .and_then(|payload| walk_extensions(ip.next_header(), payload).ok())
        .is_some_and(|w| w.is_fragment)
}

pub fn drop_reason(e: wire::Error) -> DropReason {
    match e {
        wire::Error::Truncated => DropReason::Truncated,
        wire::Error::BadVersion => DropReason::BadVersion,
        wire::Error::BadHeaderLen => DropReason::BadHeaderLen,
        wire::Error::BadTotalLen => DropReason::BadTotalLen,
        wire::Error::BadChecksum => DropReason::BadChecksum,
        _ => DropReason::Unsupported,
    }
}

impl Parse {
    #[inline]
    pub fn process<P: PacketBuf>(&self, pkts: &mut Burst<P>, meta: &mut MetaBurst) {
        let n = pkts.len();
        for (i, m) in meta[..n].iter_mut().enumerate() {
            if let Some(p) = pkts.get(i + 3) {
                p.prefetch();
            }
            if m.verdict != Verdict::Continue {
                continue;
            }
            let Some(pkt) = pkts.get_mut(i) else { continue };
            if let Err(reason) = self.parse_packet(pkt, m) {
                m.verdict = Verdict::Drop(reason);
            }
        }
    }

    /// Parses packet `pkt` into `m` and trims it to its IP packet (see the
    /// module doc: the frame-length and chain rules).
    #[inline(always)]
    pub fn parse_packet<P: PacketBuf>(&self, pkt: &mut P, m: &mut Meta) -> Result<(), DropReason> {
        let len = pkt.pkt_len();
        if len != pkt.data().len() && !pkt.chain_ok() {
            return Err(DropReason::BadTotalLen);
        }
        let end = self.parse_frame(pkt.data(), len, m)?;
        if end < len && !pkt.resize(end) {
            // Shrinking does not fail (a chain's check passed above).
            return Err(DropReason::BadTotalLen);
        }
        Ok(())
    }

    /// [`Parse::parse_one`] whatever the frame's destination MAC: for the
    /// ring-mode distributor, which steers frames before the worker that
    /// runs the pipeline applies the L2 rule.
    pub fn parse_any_dst(&self, data: &[u8], m: &mut Meta) -> Result<(), DropReason> {
        let mut p = *self;
        if data.len() >= 8 {
            p.port_mac = dst_word(data);
        }
        p.parse_one(data, m)
    }

    /// Parses a contiguous frame into `m` as it stands (nothing trimmed:
    /// trailing bytes are the caller's to keep or cut). For frames whose
    /// buffer is not the pipeline's: the fuzz harness's own checks.
    pub fn parse_one(&self, data: &[u8], m: &mut Meta) -> Result<(), DropReason> {
        self.parse_frame(data, data.len(), m).map(|_| ())
    }

    /// Parses a frame whose first segment is `data` and whose whole length
    /// is `len` (≥ `data.len()`; more when chained) into `m`; returns the
    /// length the frame must be trimmed to: the end of its IP packet (ARP:
    /// of its body, padded to 60 bytes), never beyond the first segment.
    #[inline(always)]
    pub fn parse_frame(&self, data: &[u8], len: usize, m: &mut Meta) -> Result<usize, DropReason> {
        debug_assert!(len >= data.len());
        // The common case first: untagged IPv4 without options that the
        // lane's check accepts, its `Meta` filled from what that check read.
        // Anything else, and any such frame the check refuses, takes the
        // general walk. Both read the IPv4 header through `ipv4_header`,
        // so they give the same verdicts (the proptest
        // `fast_path_matches_general_walk` guards the frame-shape tests
        // around it).
        match Self::fast_v4_keyed_as(data, len, self.port_mac, self.verify_checksum, self.l4) {
            Some((_, key)) => {
                self.fill_plain_v4(data, key, m);
                Ok(len)
            }
            None => self.parse_general(data, len, m),
        }
    }

    /// `Meta` for a frame [`Parse::fast_v4_keyed`] accepted, with its key.
    #[inline(always)]
    fn fill_plain_v4(&self, data: &[u8], key: FlowKeyV4, m: &mut Meta) {
        m.flags = if data[0] & 1 != 0 {
            flags::L2_MULTICAST
        } else {
            0
        };
        m.l3 = L3::Ipv4;
        m.l3_off = 14;
        m.key = key.to_flow_key();
        if u16::from_be_bytes([data[20], data[21]]) & 0x1fff != 0 {
            m.flags |= flags::FRAGMENT;
            m.l4_off = 0;
        } else {
            m.l4_off = 34;
        }
        if self.hash {
            m.hash = flow_hash(&m.key);
        }
    }

    /// The fast lane's check (see [`super::Lane::sweep`]): for a frame
    /// `data` of `len` bytes in one segment, addressed to the input port's
    /// MAC, holding exactly an untagged IPv4 packet without options that
    /// [`Parse::parse_frame`] accepts, its header fields the route needs;
    /// `None` for anything else (which then takes the full parse).
    /// `parse_frame` reads such frames through this very check; the header
    /// itself is checked by `ipv4_header`, as in the general walk, and
    /// the frame's shape (EtherType, IHL 5, exact length, one segment)
    /// here (proptests `fast_path_matches_general_walk`,
    /// `fast_v4_agrees_with_parse`).
    #[inline(always)]
    pub fn fast_v4(&self, data: &[u8], len: usize) -> Option<FastV4> {
        Self::fast_v4_as(data, len, self.port_mac, self.verify_checksum, self.l4)
    }

    /// [`Parse::fast_v4`] with the settings it reads given as arguments: a
    /// caller that passes constants (the sweep, specialised per setting)
    /// leaves no per-packet test of them.
    #[inline(always)]
    pub fn fast_v4_as(
        data: &[u8],
        len: usize,
        port_mac: u64,
        verify_checksum: bool,
        l4: bool,
    ) -> Option<FastV4> {
        // The key's loads are dead here and compiled away once inlined.
        Self::fast_v4_keyed_as(data, len, port_mac, verify_checksum, l4).map(|(h, _)| h)
    }

    /// [`Parse::fast_v4`] plus the frame's ACL key, read straight from the
    /// header: the same key [`Parse::parse_frame`] writes into `Meta::key`
    /// (proptest `fast_v4_agrees_with_parse`).
    #[inline(always)]
    pub fn fast_v4_keyed(&self, data: &[u8], len: usize) -> Option<(FastV4, FlowKeyV4)> {
        Self::fast_v4_keyed_as(data, len, self.port_mac, self.verify_checksum, self.l4)
    }

    /// [`Parse::fast_v4_keyed`] with its settings as arguments (see
    /// [`Parse::fast_v4_as`]).
    #[inline(always)]
    pub(crate) fn fast_v4_keyed_as(
        data: &[u8],
        len: usize,
        port_mac: u64,
        verify_checksum: bool,
        l4: bool,
    ) -> Option<(FastV4, FlowKeyV4)> {
        let hdr: &[u8; 34] = data.get(..34)?.try_into().ok()?;
        // The L2 rules: to our port's (unicast) MAC, from a unicast one, in
        // one masked load and compare (the source's group bit is bit 48 of
        // the load, and 0 in `port_mac`); a broadcast, multicast or foreign
        // destination, or a group source, takes the general walk.
        if l2_word(hdr) != port_mac {
            return None;
        }
        // Plain: untagged IPv4 without options, the frame exactly the IP
        // packet and in one segment (a padded frame or a chain is trimmed
        // by the general walk). Tested first, these make the header
        // checks' length tests constant below.
        // The EtherType in one 16-bit compare; the byte compare with 0x45
        // lets `ipv4_header` below drop its version and IHL tests.
        let total = u16::from_be_bytes([hdr[16], hdr[17]]);
        if [hdr[12], hdr[13]] != [0x08, 0x00]
            || hdr[14] != 0x45
            || usize::from(total) + 14 != data.len()
            || len != data.len()
        {
            return None;
        }
        // The header's checks: the general walk's own.
        let ip = ipv4_header(&data[14..], len - 14, verify_checksum).ok()?;
        // The one other refusal: L4 ports wanted but cut short (with the
        // frame exactly the packet, `total` says where it ends).
        let first_fragment = ip.frag & 0x1fff == 0;
        let ports = l4 && first_fragment && wire::has_ports(ip.proto);
        if ports && ip.total < 24 {
            return None;
        }
        let h = FastV4 {
            src: u32::from_be_bytes(ip.src),
            dst: u32::from_be_bytes(ip.dst),
        };
        let mut head = u64::from(ip.proto);
        if ports {
            // Checked above: the ports are there.
            let p: &[u8; 4] = data.get(34..38)?.try_into().ok()?;
            head |= u64::from(u32::from_ne_bytes(*p)) << 32;
        }
        let key = FlowKeyV4 {
            head,
            addrs: u64::from(u32::from_ne_bytes(ip.src))
                | u64::from(u32::from_ne_bytes(ip.dst)) << 32,
        };
        Some((h, key))
    }

    /// Any frame: VLAN tags, IPv4 options, IPv6 extension headers, ARP,
    /// padding, chains; `len` is the whole frame's length (`data` its first
    /// segment). Returns the length to trim the frame to.
    fn parse_general(&self, data: &[u8], len: usize, m: &mut Meta) -> Result<usize, DropReason> {
        m.flags = 0;
        m.l3 = L3::Unparsed;
        if data.len() < wire::ethernet::HEADER_LEN {
            return Err(DropReason::Truncated);
        }
        // The L2 rules first: what is not for us is not looked at; no
        // station sends from a group address (IEEE 802: the bit is the
        // destination's), so such a frame is a forgery or a loop.
        if data[0] & 1 != 0 {
            m.flags |= flags::L2_MULTICAST;
        } else if dst_word(data) != self.port_mac {
            return Err(DropReason::NotForUs);
        }
        if data[6] & 1 != 0 {
            return Err(DropReason::BadAddress);
        }
        let l2 = wire::l3_offset(data).map_err(drop_reason)?;
        let chained = len != data.len();
        m.key.vlan_be = l2.vids[0].unwrap_or(0).to_be();
        m.l3_off = l2.l3_offset as u16;
        m.l4_off = 0;
        m.key.sport_be = 0;
        m.key.dport_be = 0;
        let l3 = &data[l2.l3_offset..];
        // Beyond the first segment: what the whole frame holds after L2.
        let avail = len - l2.l3_offset;
        let end;
        let (proto, l4) = match l2.ethertype {
            EtherType::Ipv4 => {
                let ip = ipv4_header(l3, avail, self.verify_checksum)?;
                end = l2.l3_offset + ip.total;
                m.l3 = L3::Ipv4;
                m.key.proto = ip.proto;
                m.key.src = [0; 16];
                m.key.dst = [0; 16];
                m.key.src[..4].copy_from_slice(&ip.src);
                m.key.dst[..4].copy_from_slice(&ip.dst);
                if ip.frag & 0x1fff != 0 {
                    m.flags |= flags::FRAGMENT;
                    (ip.proto, None)
                } else {
                    (ip.proto, Some((ip.hlen, &l3[ip.hlen..ip.total])))
                }
            }
            EtherType::Ipv6 => {
                let ip = match Ipv6Packet::new_checked(l3) {
                    Ok(ip) => ip,
                    Err(wire::Error::BadTotalLen) if chained => {
                        // The header is in the first segment, the payload
                        // runs past it.
                        let ip = Ipv6Packet::new_unchecked(l3);
                        let total = wire::ipv6::HEADER_LEN + usize::from(ip.payload_len());
                        return Err(if total > avail {
                            DropReason::BadTotalLen
                        } else {
                            DropReason::TooBig
                        });
                    }
                    Err(e) => return Err(drop_reason(e)),
                };
                end = l2.l3_offset + wire::ipv6::HEADER_LEN + usize::from(ip.payload_len());
                m.l3 = L3::Ipv6;
                m.key.src.copy_from_slice(&l3[8..24]);
                m.key.dst.copy_from_slice(&l3[24..40]);
                let payload =
                    &l3[wire::ipv6::HEADER_LEN..wire::ipv6::HEADER_LEN + ip.payload_len() as usize];
                let walk = wire::walk_extensions(ip.next_header(), payload).map_err(drop_reason)?;
                let proto = u8::from(walk.protocol);
                m.key.proto = proto;
                if walk.is_non_first_fragment {
                    m.flags |= flags::FRAGMENT;
                    (proto, None)
                } else {
                    let off = wire::ipv6::HEADER_LEN + walk.l4_offset;
                    (proto, Some((off, &payload[walk.l4_offset..])))
                }
            }
            EtherType::Arp => {
                m.l3 = L3::Arp;
                // The body (28 bytes for IPv4 over Ethernet, checked where
                // it is answered) padded to the minimum frame; a shorter
                // first segment is kept whole (and found truncated there).
                let body = (l2.l3_offset + wire::arp::HEADER_LEN).max(60);
                return Ok(body.min(data.len()));
            }
            _ => return Err(DropReason::Unsupported),
        };
        if let Some((off, l4)) = l4 {
            m.l4_off = (l2.l3_offset + off) as u16;
            if self.l4 && wire::has_ports(proto) {
                if l4.len() < 4 {
                    return Err(DropReason::Truncated);
                }
                m.key.sport_be = u16::from_ne_bytes([l4[0], l4[1]]);
                m.key.dport_be = u16::from_ne_bytes([l4[2], l4[3]]);
            }
        }
        if self.hash {
            m.hash = flow_hash(&m.key);
        }
        Ok(end)
    }
}

/// What [`ipv4_header`] reads from an IPv4 header that passed its checks.
#[derive(Debug, Clone, Copy)]
struct V4Header {
    /// Header length in bytes (IHL × 4, options included).
    hlen: usize,
    /// Total length: header and payload.
    total: usize,
    proto: u8,
    /// Flags and fragment offset, as on the wire (host order).
    frag: u16,
    /// Source and destination, in wire order.
    src: [u8; 4],
    dst: [u8; 4],
}

/// The IPv4 header's checks (RFC 1812 5.2.2) and the fields the parse
/// reads: the one IPv4 header reader, called by the lane's check
/// ([`Parse::fast_v4_keyed_as`]) and by the general walk alike. `l3` is
/// the header onward as the first segment holds it; `avail` what the whole
/// frame holds from there (more than `l3.len()` only for a chain).
///
/// In this order: `truncated` (under 20 bytes), `bad_version`,
/// `bad_header_len` (IHL under 5, or the header past the first segment),
/// `bad_total_len` (shorter than the header, or longer than the frame),
/// `bad_checksum` (when `verify_checksum`), and `too_big` for a chain's
/// packet that runs past its first segment (see the module doc).
/// Inlined into both callers: the lane's check has already compared the
/// first byte with 0x45, so the version and IHL tests and the options'
/// checksum fold away there.
#[inline(always)]
fn ipv4_header(l3: &[u8], avail: usize, verify_checksum: bool) -> Result<V4Header, DropReason> {
    let Some(h) = l3.first_chunk::<20>() else {
        return Err(DropReason::Truncated);
    };
    if h[0] >> 4 != 4 {
        return Err(DropReason::BadVersion);
    }
    let hlen = usize::from(h[0] & 0x0f) * 4;
    if hlen < 20 || hlen > l3.len() {
        return Err(DropReason::BadHeaderLen);
    }
    let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    if total < hlen || total > avail {
        return Err(DropReason::BadTotalLen);
    }
    if verify_checksum {
        let ok = if hlen == 20 {
            checksum20_ok(h)
        } else {
            wire::checksum::sum(&l3[..hlen]) == 0xffff
        };
        if !ok {
            return Err(DropReason::BadChecksum);
        }
    }
    if total > l3.len() {
        return Err(DropReason::TooBig);
    }
    Ok(V4Header {
        hlen,
        total,
        proto: h[9],
        frag: u16::from_be_bytes([h[6], h[7]]),
        src: [h[12], h[13], h[14], h[15]],
        dst: [h[16], h[17], h[18], h[19]],
    })
}

/// Whether a 20-byte IPv4 header's checksum verifies: its one's-complement
/// sum is 0xffff. Summed as native-endian words (RFC 1071: the sum is
/// independent of byte order, and 0xffff is its own byte swap): two 64-bit
/// words and a 32-bit one, each add's carry added back at once (add + adc;
/// that add cannot carry again, as a carried sum is at most 2^64 - 2).
///
/// No fold to 16 bits: the one's-complement sum of 16-bit words is 0xffff
/// exactly when their plain sum is a non-zero multiple of 0xffff (2^16 is
/// 1 modulo 0xffff, so folding a carry back keeps the residue; so does the
/// 64-bit end-around carry, as 0xffff divides 2^64 - 1). So the test is
/// whether `s` is a non-zero multiple of 0xffff, which for an odd divisor
/// is one multiply by its inverse modulo 2^64 and one compare: the
/// multiples `k * 0xffff` map to exactly `k`, for `k` up to
/// `u64::MAX / 0xffff`, and every other value lands above.
#[inline(always)]
fn checksum20_ok(h: &[u8; 20]) -> bool {
    let w64 = |i: usize| u64::from_ne_bytes(h[i..i + 8].try_into().expect("8 bytes"));
    let tail = u64::from(u32::from_ne_bytes(h[16..20].try_into().expect("4 bytes")));
    let add = |x: u64, y: u64| {
        let (s, carry) = x.overflowing_add(y);
        s + u64::from(carry)
    };
    let s = add(add(w64(0), w64(8)), tail);
    // k = s / 0xffff when `s` is a multiple, else something above the
    // largest multiple's quotient; k - 1 also excludes s = 0 (an all-zero
    // header, whose one's-complement sum is 0).
    let k = s.wrapping_mul(INV_0XFFFF);
    k.wrapping_sub(1) < u64::MAX / 0xffff
}

/// The inverse of 0xffff modulo 2^64 (Newton's iteration: each step doubles
/// the correct low bits, from 3 for any odd number's own inverse guess).
const INV_0XFFFF: u64 = {
    let d: u64 = 0xffff;
    let mut x = d;
    let mut i = 0;
    while i < 5 {
        x = x.wrapping_mul(2u64.wrapping_sub(d.wrapping_mul(x)));
        i += 1;
    }
    x
};
const _: () = assert!(INV_0XFFFF.wrapping_mul(0xffff) == 1);

pub use crate::flow::flow_hash;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{new_meta_burst, VecPacket};
    use etherparse::PacketBuilder;

    fn udp4(ttl: u8) -> Vec<u8> {
        let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([10, 0, 0, 1], [198, 18, 0, 5], ttl)
            .udp(1234, 53);
        let mut v = Vec::new();
        b.write(&mut v, &[1, 2, 3, 4]).unwrap();
        v
    }

    /// The MAC of the port the test frames come in on (their destination).
    const US: [u8; 6] = [2, 0, 0, 0, 0, 2];

    fn ours() -> Parse {
        Parse {
            port_mac: mac_word(US),
            ..Parse::default()
        }
    }

    fn parse(data: &[u8]) -> (Result<(), DropReason>, Meta) {
        let mut m = new_meta_burst()[0];
        let r = ours().parse_one(data, &mut m);
        (r, m)
    }

    /// `pkt` through [`Parse::parse_packet`] (which trims it).
    fn parse_pkt(pkt: &mut impl PacketBuf) -> (Result<(), DropReason>, Meta) {
        let mut m = new_meta_burst()[0];
        let r = ours().parse_packet(pkt, &mut m);
        (r, m)
    }

    #[test]
    fn ipv4_udp_fills_key() {
        let (r, m) = parse(&udp4(64));
        r.unwrap();
        assert_eq!(m.l3, L3::Ipv4);
        assert_eq!(m.l3_off, 14);
        assert_eq!(m.l4_off, 34);
        assert_eq!(m.key.proto, 17);
        assert_eq!(m.key.src_v4(), u32::from_be_bytes([10, 0, 0, 1]));
        assert_eq!(m.key.dst_v4(), u32::from_be_bytes([198, 18, 0, 5]));
        assert_eq!(m.key.sport(), 1234);
        assert_eq!(m.key.dport(), 53);
        assert_eq!(m.hash, flow_hash(&m.key));
    }

    #[test]
    fn ipv6_tcp_with_vlan() {
        let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .single_vlan(77.try_into().unwrap())
            .ipv6(
                [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                [0x20, 1, 0xd, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
                9,
            )
            .tcp(4000, 80, 1, 100);
        let mut v = Vec::new();
        b.write(&mut v, &[]).unwrap();
        let (r, m) = parse(&v);
        r.unwrap();
        assert_eq!(m.l3, L3::Ipv6);
        assert_eq!(m.l3_off, 18);
        assert_eq!(m.l4_off, 58);
        assert_eq!(u16::from_be(m.key.vlan_be), 77);
        assert_eq!(m.key.proto, 6);
        assert_eq!((m.key.sport(), m.key.dport()), (4000, 80));
        assert_eq!(m.key.dst[15], 2);
    }

    #[test]
    fn drop_reasons() {
        let good = udp4(64);
        // Bad checksum.
        let mut b = good.clone();
        b[14 + 10] ^= 0xff;
        assert_eq!(parse(&b).0, Err(DropReason::BadChecksum));
        // Bad version.
        let mut b = good.clone();
        b[14] = 0x55;
        assert_eq!(parse(&b).0, Err(DropReason::BadVersion));
        // IHL < 5.
        let mut b = good.clone();
        b[14] = 0x44;
        assert_eq!(parse(&b).0, Err(DropReason::BadHeaderLen));
        // Total length beyond the frame.
        let mut b = good.clone();
        b[16] = 0x10;
        assert_eq!(parse(&b).0, Err(DropReason::BadTotalLen));
        // Unknown EtherType.
        let mut b = good.clone();
        b[12] = 0x88;
        b[13] = 0xb5;
        assert_eq!(parse(&b).0, Err(DropReason::Unsupported));
        // Every truncation of the headers is an error, never a panic.
        for n in 0..good.len() {
            let r = parse(&good[..n]).0;
            assert!(r.is_err(), "len {n} parsed");
        }
    }

    #[test]
    fn arp_is_recognised() {
        let mut f = vec![0xffu8; 6];
        f.extend([2, 0, 0, 0, 0, 1]);
        f.extend([0x08, 0x06]);
        f.extend([0u8; 28]);
        let (r, m) = parse(&f);
        r.unwrap();
        assert_eq!(m.l3, L3::Arp);
        assert_ne!(m.flags & flags::L2_MULTICAST, 0);
    }

    /// A UDP over IPv4 frame to `dst`, written out field by field: 20 + 8
    /// + 4 bytes of IP, no padding (46 bytes).
    #[rustfmt::skip]
    fn frame_to(dst: [u8; 6]) -> Vec<u8> {
        let mut f = dst.to_vec();                                   // destination MAC
        f.extend([0x02, 0x00, 0x00, 0x00, 0x00, 0x01]);             // source MAC
        f.extend([0x08, 0x00]);                                     // EtherType IPv4
        f.extend([
            0x45, 0x00, 0x00, 0x20,                                 // v4, IHL 5, total 32
            0x00, 0x01, 0x00, 0x00,                                 // id 1, no fragment
            0x40, 0x11, 0x00, 0x00,                                 // TTL 64, UDP, checksum
            10, 0, 0, 1,                                            // source 10.0.0.1
            198, 18, 0, 5,                                          // destination 198.18.0.5
            0x04, 0xd2, 0x00, 0x35,                                 // ports 1234 -> 53
            0x00, 0x0c, 0x00, 0x00,                                 // UDP length 12, no checksum
            1, 2, 3, 4,                                             // payload
        ]);
        let c = crate::wire::checksum::internet_checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        f
    }

    /// The L2 rule: a unicast frame to another MAC than the port's is
    /// `not_for_us` (never plain); broadcast and multicast frames parse,
    /// flagged, off the lane; the port's own MAC is plain.
    #[test]
    fn l2_destination() {
        let p = ours();
        let ok = frame_to(US);
        assert!(p.fast_v4(&ok, ok.len()).is_some());
        assert_eq!(parse(&ok).0, Ok(()));
        assert_eq!(parse(&ok).1.flags & flags::L2_MULTICAST, 0);
        for foreign in [[2, 0, 0, 0, 0, 3], [0, 0, 0, 0, 0, 0], [2, 0, 0, 0, 1, 2]] {
            let f = frame_to(foreign);
            assert!(p.fast_v4(&f, f.len()).is_none(), "{foreign:02x?}");
            assert_eq!(parse(&f).0, Err(DropReason::NotForUs), "{foreign:02x?}");
        }
        for group in [
            [0xff; 6],
            [0x01, 0x00, 0x5e, 0, 0, 5],
            [0x33, 0x33, 0, 0, 0, 1],
        ] {
            let f = frame_to(group);
            assert!(p.fast_v4(&f, f.len()).is_none(), "{group:02x?}");
            let (r, m) = parse(&f);
            assert_eq!(r, Ok(()), "{group:02x?}");
            assert_ne!(m.flags & flags::L2_MULTICAST, 0);
        }
        // Of the source's first two bytes (in the same 8-byte load) only
        // the group bit matters (`l2_source`).
        let mut f = ok.clone();
        f[6] = 0xfe;
        f[7] = 0xee;
        assert!(p.fast_v4(&f, f.len()).is_some());
        // Shorter than an Ethernet header: truncated, whatever the MAC.
        assert_eq!(
            parse(&frame_to([2, 0, 0, 0, 0, 3])[..13]).0,
            Err(DropReason::Truncated)
        );
    }

    /// The L2 source rule: a frame from a group MAC (broadcast, IPv4 or
    /// IPv6 multicast, any address with the group bit) is `bad_address`,
    /// to our MAC or to a group, IPv4, IPv6 or ARP, and never plain; a
    /// frame to another station stays `not_for_us`.
    #[test]
    fn l2_source() {
        let p = ours();
        for group in [
            [0xff; 6],
            [0x01, 0x00, 0x5e, 0, 0, 5],
            [0x33, 0x33, 0, 0, 0, 1],
            [0x03, 0, 0, 0, 0, 0],
        ] {
            for dst in [US, [0xff; 6]] {
                let mut f = frame_to(dst);
                f[6..12].copy_from_slice(&group);
                assert!(p.fast_v4(&f, f.len()).is_none(), "{group:02x?}");
                assert_eq!(parse(&f).0, Err(DropReason::BadAddress), "{group:02x?}");
                let mut arp = dst.to_vec();
                arp.extend(group);
                arp.extend([0x08, 0x06]);
                arp.extend([0u8; 28]);
                assert_eq!(parse(&arp).0, Err(DropReason::BadAddress), "ARP");
            }
            let mut f = frame_to([2, 0, 0, 0, 0, 3]);
            f[6..12].copy_from_slice(&group);
            assert_eq!(parse(&f).0, Err(DropReason::NotForUs));
        }
        let mut v6 = Vec::new();
        PacketBuilder::ethernet2([0x01, 0, 0x5e, 0, 0, 9], US)
            .ipv6(
                [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                [0x20, 1, 0xd, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
                9,
            )
            .udp(1, 2)
            .write(&mut v6, &[5; 3])
            .unwrap();
        assert_eq!(parse(&v6).0, Err(DropReason::BadAddress));
        // Unicast sources, locally administered or not, parse.
        for src in [
            [0x02, 0, 0, 0, 0, 1],
            [0x00, 0x1b, 0x21, 1, 2, 3],
            [0xfe; 6],
        ] {
            let mut f = frame_to(US);
            f[6..12].copy_from_slice(&src);
            assert!(p.fast_v4(&f, f.len()).is_some(), "{src:02x?}");
            assert_eq!(parse(&f).0, Ok(()));
        }
    }

    /// Frame length against IP length: padding is trimmed by the parse
    /// (then the frame is plain), a frame shorter than its IP packet is
    /// `bad_total_len`, and only an exact frame is plain.
    #[test]
    fn frames_are_trimmed_to_their_ip_packet() {
        let p = ours();
        let exact = frame_to(US);
        for pad in [1usize, 14, 1554, 9000] {
            let mut f = exact.clone();
            f.resize(f.len() + pad, 0xee);
            assert!(
                p.fast_v4(&f, f.len()).is_none(),
                "pad {pad}: not plain as it is"
            );
            let mut pkt = VecPacket::new(f);
            let (r, m) = parse_pkt(&mut pkt);
            assert_eq!(r, Ok(()), "pad {pad}");
            assert_eq!(pkt.bytes, exact, "pad {pad}: trimmed to the IP packet");
            assert_eq!((m.l3, m.l4_off), (L3::Ipv4, 34));
            assert!(p.fast_v4(&pkt.bytes, pkt.pkt_len()).is_some());
        }
        // One byte short of the IP length.
        let mut pkt = VecPacket::new(exact[..exact.len() - 1].to_vec());
        assert_eq!(parse_pkt(&mut pkt).0, Err(DropReason::BadTotalLen));
        assert_eq!(
            pkt.bytes.len(),
            exact.len() - 1,
            "nothing trimmed on a drop"
        );
        // IPv6 and VLAN-tagged frames are trimmed too.
        let mut v6 = Vec::new();
        PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], US)
            .single_vlan(7.try_into().unwrap())
            .ipv6(
                [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                [0x20, 1, 0xd, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
                9,
            )
            .udp(1, 2)
            .write(&mut v6, &[5; 3])
            .unwrap();
        let want = v6.clone();
        v6.resize(v6.len() + 100, 0);
        let mut pkt = VecPacket::new(v6);
        assert_eq!(parse_pkt(&mut pkt).0, Ok(()));
        assert_eq!(pkt.bytes, want);
        // ARP: the 28-byte body, padded to 60.
        let mut arp = vec![0xffu8; 6];
        arp.extend([2, 0, 0, 0, 0, 1, 0x08, 0x06]);
        arp.extend([0u8; 28]);
        arp.resize(1000, 0xee);
        let mut pkt = VecPacket::new(arp);
        assert_eq!(parse_pkt(&mut pkt).0, Ok(()));
        assert_eq!(pkt.bytes.len(), 60);
    }

    /// A chain (a frame over one buffer): headers from the first segment,
    /// lengths against the whole packet; trimmed when its IP packet ends in
    /// the first segment, `too_big` when it runs past it, `bad_total_len`
    /// when it runs past the whole frame; never plain.
    #[test]
    fn chains() {
        let p = ours();
        let exact = frame_to(US);
        // Padding in later segments: freed by the trim.
        let mut pkt = VecPacket::chained(exact.clone(), 8000);
        assert!(p.fast_v4(&pkt.bytes, pkt.pkt_len()).is_none());
        assert_eq!(parse_pkt(&mut pkt).0, Ok(()));
        assert_eq!((pkt.bytes.len(), pkt.more), (exact.len(), 0));
        // A 9000-byte IPv4 packet of which the first segment holds 2048.
        let mut big = exact.clone();
        big[16..18].copy_from_slice(&8986u16.to_be_bytes());
        big[24..26].fill(0);
        let c = crate::wire::checksum::internet_checksum(&big[14..34]);
        big[24..26].copy_from_slice(&c.to_be_bytes());
        big.resize(2048, 0);
        let mut pkt = VecPacket::chained(big.clone(), 9000 - 2048);
        assert_eq!(parse_pkt(&mut pkt).0, Err(DropReason::TooBig));
        // ... whose chain is a byte short: bad_total_len.
        let mut pkt = VecPacket::chained(big.clone(), 9000 - 2048 - 1);
        assert_eq!(parse_pkt(&mut pkt).0, Err(DropReason::BadTotalLen));
        // ... with a bad header checksum: that first.
        let mut bad = big.clone();
        bad[24] ^= 1;
        let mut pkt = VecPacket::chained(bad, 9000 - 2048);
        assert_eq!(parse_pkt(&mut pkt).0, Err(DropReason::BadChecksum));
        // ... and an IPv6 one.
        let mut v6 = vec![0u8; 2048];
        v6[..6].copy_from_slice(&US);
        v6[12..14].copy_from_slice(&[0x86, 0xdd]);
        v6[14] = 0x60;
        v6[18..20].copy_from_slice(&(9000u16 - 54).to_be_bytes());
        v6[20] = 17;
        let mut pkt = VecPacket::chained(v6.clone(), 9000 - 2048);
        assert_eq!(parse_pkt(&mut pkt).0, Err(DropReason::TooBig));
        let mut pkt = VecPacket::chained(v6, 100);
        assert_eq!(parse_pkt(&mut pkt).0, Err(DropReason::BadTotalLen));
        // Headers cut by the end of the first segment: truncated.
        let mut pkt = VecPacket::chained(exact[..30].to_vec(), 100);
        assert_eq!(parse_pkt(&mut pkt).0, Err(DropReason::Truncated));
    }

    /// A packet whose length disagrees with its segments is
    /// `bad_total_len`, whatever its headers say.
    #[test]
    fn a_broken_chain_is_dropped() {
        struct Broken(VecPacket);
        impl PacketBuf for Broken {
            fn data(&self) -> &[u8] {
                self.0.data()
            }
            fn data_mut(&mut self) -> &mut [u8] {
                self.0.data_mut()
            }
            fn pkt_len(&self) -> usize {
                self.0.pkt_len()
            }
            fn chain_ok(&self) -> bool {
                false
            }
            fn resize(&mut self, len: usize) -> bool {
                self.0.resize(len)
            }
            fn request_ipv4_checksum(&mut self, l2: u8, l3: u8) {
                self.0.request_ipv4_checksum(l2, l3)
            }
            fn prepend(&mut self, len: usize) -> bool {
                self.0.prepend(len)
            }
            fn adj(&mut self, len: usize) -> bool {
                self.0.adj(len)
            }
        }
        let mut pkt = Broken(VecPacket::chained(frame_to(US), 100));
        assert_eq!(parse_pkt(&mut pkt).0, Err(DropReason::BadTotalLen));
        // A single segment is not asked.
        let mut pkt = Broken(VecPacket::new(frame_to(US)));
        assert_eq!(parse_pkt(&mut pkt).0, Ok(()));
    }

    #[test]
    fn flow_hash_is_stable_and_spreads() {
        let (_, a) = parse(&udp4(64));
        let (_, b) = parse(&udp4(3));
        assert_eq!(a.hash, b.hash, "TTL is not part of the flow");
        let mut seen = std::collections::HashSet::new();
        for port in 0..256u16 {
            let mut k = a.key;
            k.sport_be = port.to_be();
            seen.insert(flow_hash(&k) % 4);
        }
        assert_eq!(seen.len(), 4);
    }

    proptest::proptest! {
        /// Packets of one flow (same 5-tuple) hash alike whatever their TTL,
        /// IP id and payload, so ECMP keeps the flow on one path.
        #[test]
        fn flow_hash_ignores_everything_but_the_flow(
            src in proptest::prelude::any::<[u8; 4]>(),
            dst in proptest::prelude::any::<[u8; 4]>(),
            sport in proptest::prelude::any::<u16>(),
            dport in proptest::prelude::any::<u16>(),
            ttl_a in 2u8..=255, ttl_b in 2u8..=255,
            payload_a in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
            payload_b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
        ) {
            let frame = |ttl: u8, payload: &[u8]| {
                let mut v = Vec::new();
                PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
                    .ipv4(src, dst, ttl)
                    .udp(sport, dport)
                    .write(&mut v, payload)
                    .unwrap();
                v
            };
            let (ra, a) = parse(&frame(ttl_a, &payload_a));
            let (rb, b) = parse(&frame(ttl_b, &payload_b));
            proptest::prop_assert!(ra.is_ok() && rb.is_ok());
            proptest::prop_assert_eq!(a.key, b.key);
            proptest::prop_assert_eq!(a.hash, b.hash);
        }
    }

    /// The reference for `checksum20_ok`: a plain 16-bit one's-complement
    /// sum, folded.
    fn sum16(h: &[u8; 20]) -> u32 {
        let mut s: u32 = h
            .chunks(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
            .sum();
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        s
    }

    /// Headers whose word sums carry at every step (all ones, all but one
    /// byte ones, one word short of a carry), and all zeros, against the
    /// plain 16-bit sum.
    #[test]
    fn checksum20_carry_edges() {
        let mut cases = vec![[0u8; 20], [0xff; 20]];
        for i in 0..20 {
            for v in [0x00, 0x01, 0xfe] {
                let mut h = [0xff; 20];
                h[i] = v;
                cases.push(h);
                let mut h = [0u8; 20];
                h[i] = 0xff;
                cases.push(h);
            }
        }
        for h in cases {
            assert_eq!(checksum20_ok(&h), sum16(&h) == 0xffff, "{h:02x?}");
        }
    }

    proptest::proptest! {
        /// The folded check agrees with a plain 16-bit one's-complement sum.
        #[test]
        fn checksum20_matches_reference(h in proptest::prelude::any::<[u8; 20]>(), fix in proptest::prelude::any::<bool>()) {
            let mut h = h;
            if fix {
                // Make it valid: checksum = complement of the sum without it.
                h[10] = 0;
                h[11] = 0;
                let c = !(sum16(&h) as u16);
                h[10..12].copy_from_slice(&c.to_be_bytes());
            }
            proptest::prop_assert_eq!(checksum20_ok(&h), sum16(&h) == 0xffff);
        }
    }

    /// A UDP over IPv4 frame to [`US`] with one 4-byte option (Router
    /// Alert), written out field by field: IHL 6, 24 + 8 bytes of IP.
    #[rustfmt::skip]
    fn frame_with_option() -> Vec<u8> {
        let mut f = US.to_vec();                                    // destination MAC
        f.extend([0x02, 0x00, 0x00, 0x00, 0x00, 0x01]);             // source MAC
        f.extend([0x08, 0x00]);                                     // EtherType IPv4
        f.extend([
            0x46, 0x00, 0x00, 0x20,                                 // v4, IHL 6, total 32
            0x00, 0x01, 0x00, 0x00,                                 // id 1, no fragment
            0x40, 0x11, 0x00, 0x00,                                 // TTL 64, UDP, checksum
            10, 0, 0, 1,                                            // source 10.0.0.1
            198, 18, 0, 5,                                          // destination 198.18.0.5
            0x94, 0x04, 0x00, 0x00,                                 // Router Alert
            0x04, 0xd2, 0x00, 0x35,                                 // ports 1234 -> 53
            0x00, 0x08, 0x00, 0x00,                                 // UDP length 8, no checksum
        ]);
        let c = crate::wire::checksum::internet_checksum(&f[14..38]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        f
    }

    /// The IPv4 header rules on a header with options, which only the
    /// general walk takes: the checksum covers the options, ports are read
    /// after them, and each length rule has its drop.
    #[test]
    fn ipv4_options_take_the_general_walk() {
        let p = ours();
        let ok = frame_with_option();
        assert!(p.fast_v4(&ok, ok.len()).is_none(), "options: never plain");
        let (r, m) = parse(&ok);
        assert_eq!(r, Ok(()));
        assert_eq!((m.l3, m.l3_off, m.l4_off), (L3::Ipv4, 14, 38));
        assert_eq!((m.key.sport(), m.key.dport()), (1234, 53));
        assert_eq!(m.key.dst_v4(), u32::from_be_bytes([198, 18, 0, 5]));
        // An option byte changed: the checksum covers it.
        let mut b = ok.clone();
        b[36] ^= 1;
        assert_eq!(parse(&b).0, Err(DropReason::BadChecksum));
        let no_verify = Parse {
            verify_checksum: false,
            ..p
        };
        let mut m = new_meta_burst()[0];
        assert_eq!(no_verify.parse_one(&b, &mut m), Ok(()));
        // The options past the end of the frame: bad_header_len.
        assert_eq!(parse(&ok[..14 + 22]).0, Err(DropReason::BadHeaderLen));
        // A total length shorter than the header: bad_total_len.
        let mut b = ok.clone();
        b[17] = 22;
        assert_eq!(parse(&b).0, Err(DropReason::BadTotalLen));
    }

    proptest::proptest! {
        /// [`ipv4_header`] (the parse's one IPv4 header reader) against the
        /// wire view, `Ipv4Packet::new_checked` then `verify_checksum`:
        /// same verdict, same fields, on headers with and without options.
        #[test]
        fn ipv4_header_matches_the_wire_view(
            ihl in 0u8..16,
            total in 0u16..80,
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..80),
            fix in proptest::prelude::any::<bool>(),
            verify in proptest::prelude::any::<bool>(),
        ) {
            use crate::wire::Ipv4Packet;
            let mut b = body;
            if b.len() >= 20 {
                b[0] = 0x40 | ihl;
                b[2..4].copy_from_slice(&total.to_be_bytes());
                let hlen = usize::from(ihl) * 4;
                if fix && hlen >= 20 && hlen <= b.len() {
                    b[10..12].fill(0);
                    let c = crate::wire::checksum::internet_checksum(&b[..hlen]);
                    b[10..12].copy_from_slice(&c.to_be_bytes());
                }
            }
            let got = ipv4_header(&b, b.len(), verify);
            let want = Ipv4Packet::new_checked(&b[..]).map_err(drop_reason).and_then(|ip| {
                if verify && !ip.verify_checksum() {
                    Err(DropReason::BadChecksum)
                } else {
                    Ok(ip)
                }
            });
            match (got, want) {
                (Ok(h), Ok(ip)) => {
                    proptest::prop_assert_eq!(h.hlen, ip.header_len());
                    proptest::prop_assert_eq!(h.total, usize::from(ip.total_len()));
                    proptest::prop_assert_eq!(h.proto, u8::from(ip.protocol()));
                    proptest::prop_assert_eq!(h.frag & 0x1fff != 0, ip.is_non_first_fragment());
                    proptest::prop_assert_eq!(h.src, ip.src_addr().octets());
                    proptest::prop_assert_eq!(h.dst, ip.dst_addr().octets());
                }
                (got, want) => proptest::prop_assert_eq!(got.map(|_| ()), want.map(|_| ())),
            }
        }
    }

    /// A small TCP or UDP over IPv4 frame for the fast-path proptests.
    fn tcp_or_udp4(ttl: u8, tcp: bool) -> Vec<u8> {
        let mut v = Vec::new();
        let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]).ipv4(
            [10, 0, 0, 1],
            [198, 18, 0, 5],
            ttl,
        );
        if tcp {
            b.tcp(1, 2, 3, 4).write(&mut v, &[9; 6]).unwrap();
        } else {
            b.udp(1, 2).write(&mut v, &[9; 6]).unwrap();
        }
        v
    }

    proptest::proptest! {
        /// The IPv4 fast path decides exactly like the general walk, on
        /// valid and corrupted headers alike.
        #[test]
        fn fast_path_matches_general_walk(
            ttl in 1u8..=255,
            flip in proptest::option::of((0usize..38, proptest::prelude::any::<u8>())),
            cut in proptest::option::of(0usize..50),
            pad in proptest::option::of(1usize..8),
            proto_tcp in proptest::prelude::any::<bool>(),
        ) {
            let mut v = tcp_or_udp4(ttl, proto_tcp);
            if let Some(n) = pad {
                v.resize(v.len() + n, 0);
            }
            if let Some((at, x)) = flip {
                if at < v.len() {
                    v[at] ^= x;
                }
            }
            if let Some(c) = cut {
                v.truncate(c.min(v.len()));
            }
            let p = ours();
            let mut a = new_meta_burst()[0];
            let mut g = new_meta_burst()[0];
            let ra = p.parse_frame(&v, v.len(), &mut a);
            let rg = p.parse_general(&v, v.len(), &mut g);
            proptest::prop_assert_eq!(ra, rg);
            if ra.is_ok() {
                proptest::prop_assert_eq!(a.key, g.key);
                proptest::prop_assert_eq!((a.l3, a.l3_off, a.l4_off, a.flags, a.hash), (g.l3, g.l3_off, g.l4_off, g.flags, g.hash));
            }
        }

        /// `fast_v4` (the lane's check) accepts a frame exactly
        /// when the full parse accepts it as plain untagged IPv4, and reads
        /// the same addresses, whatever parse depth is configured;
        /// `fast_v4_keyed` reads the same ACL key.
        #[test]
        fn fast_v4_agrees_with_parse(
            ttl in 1u8..=255,
            flips in proptest::collection::vec((0usize..40, proptest::prelude::any::<u8>()), 0..3),
            cut in proptest::option::of(0usize..50),
            pad in proptest::option::of(1usize..8),
            chained in proptest::option::of(1u16..2000),
            proto_tcp in proptest::prelude::any::<bool>(),
            l4 in proptest::prelude::any::<bool>(),
            verify_checksum in proptest::prelude::any::<bool>(),
        ) {
            let mut v = tcp_or_udp4(ttl, proto_tcp);
            if let Some(n) = pad {
                v.resize(v.len() + n, 0);
            }
            for (at, x) in flips {
                if at < v.len() {
                    v[at] ^= x;
                }
            }
            if let Some(c) = cut {
                v.truncate(c.min(v.len()));
            }
            let p = Parse { l4, hash: l4, verify_checksum, port_mac: mac_word(US) };
            let len = v.len() + usize::from(chained.unwrap_or(0));
            let mut m = new_meta_burst()[0];
            let full = p.parse_frame(&v, len, &mut m);
            // Plain: accepted as untagged IPv4 without options, in one
            // segment, to our (unicast) MAC, with nothing to trim.
            let plain = full == Ok(len)
                && len == v.len()
                && m.flags & flags::L2_MULTICAST == 0
                && m.l3 == L3::Ipv4
                && m.l3_off == 14
                && v[14] == 0x45;
            let fast = p.fast_v4(&v, len);
            proptest::prop_assert_eq!(fast.is_some(), plain, "full parse {:?}", full);
            if let Some(f) = fast {
                proptest::prop_assert_eq!(f.src, m.key.src_v4());
                proptest::prop_assert_eq!(f.dst, m.key.dst_v4());
            }
            let keyed = p.fast_v4_keyed(&v, len);
            proptest::prop_assert_eq!(keyed.map(|k| k.0), fast);
            if let Some((_, k)) = keyed {
                proptest::prop_assert_eq!(k, FlowKeyV4::of(&m.key));
                proptest::prop_assert_eq!(k.to_flow_key(), m.key);
            }
        }
    }
}
