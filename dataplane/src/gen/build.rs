//! Frame templates. Each (flow, frame length) pair is serialised once with
//! etherparse's `PacketBuilder`, which fills in lengths and the IPv4, UDP and
//! TCP checksums; every frame is then a copy of its template with only the
//! IPv4 identification (and so the IPv4 header checksum) patched. None of the
//! patched fields is covered by the L4 checksum, so it stays valid.

use crate::wire::ipv4::header_checksum;
use std::net::IpAddr;

use etherparse::{
    IpHeaders, Ipv4Header, Ipv6Header, PacketBuilder, PacketBuilderStep, TcpHeader, VlanId,
};

use super::flows::{Flow, L4};
use super::types::{Mac, IPV6_MIN_FRAME};
use super::GenError;

/// Ethernet II header length.
pub(crate) const ETH_LEN: usize = 14;
/// 802.1Q tag length.
pub(crate) const VLAN_LEN: usize = 4;
/// IPv4 header length (generated headers carry no options).
pub(crate) const IPV4_LEN: usize = 20;
/// IPv6 fixed header length.
pub(crate) const IPV6_LEN: usize = 40;
/// UDP header length.
pub(crate) const UDP_LEN: usize = 8;
/// TCP header length (no options).
pub(crate) const TCP_LEN: usize = 20;

/// The link layer shared by every frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct L2 {
    pub src: Mac,
    pub dst: Mac,
    pub vlan: Option<u16>,
}

impl L2 {
    pub fn header_len(&self) -> usize {
        ETH_LEN + if self.vlan.is_some() { VLAN_LEN } else { 0 }
    }
}

/// A serialised frame plus the offsets the generator patches or breaks.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    bytes: Vec<u8>,
    l3: usize,
    l4: usize,
    ipv4: bool,
}

/// The length frame number `index` of a flow gets for a requested size:
/// IPv6 frames are raised to [`IPV6_MIN_FRAME`]; every requested size
/// (>= 60) already holds the largest IPv4 header stack (58 bytes).
pub(crate) fn frame_len(ipv4: bool, requested: u16) -> usize {
    usize::from(if ipv4 {
        requested
    } else {
        requested.max(IPV6_MIN_FRAME)
    })
}

impl Template {
    /// Serialises `flow` into a frame of exactly `len` bytes, the payload
    /// filled with the flow's pattern.
    pub fn build(flow: &Flow, l2: &L2, ttl: u8, len: usize) -> Result<Template, GenError> {
        let l3 = l2.header_len();
        let (ip, ip_len) = match (flow.src, flow.dst) {
            (IpAddr::V4(src), IpAddr::V4(dst)) => {
                let header = Ipv4Header {
                    source: src.octets(),
                    destination: dst.octets(),
                    time_to_live: ttl,
                    identification: flow.ident_base,
                    dont_fragment: false,
                    ..Default::default()
                };
                (IpHeaders::Ipv4(header, Default::default()), IPV4_LEN)
            }
            (IpAddr::V6(src), IpAddr::V6(dst)) => {
                let header = Ipv6Header {
                    source: src.octets(),
                    destination: dst.octets(),
                    hop_limit: ttl,
                    ..Default::default()
                };
                (IpHeaders::Ipv6(header, Default::default()), IPV6_LEN)
            }
            _ => return Err(GenError::Build("flow mixes address families".into())),
        };
        let l4 = l3 + ip_len;
        let l4_len = match flow.l4 {
            L4::Udp => UDP_LEN,
            L4::Tcp => TCP_LEN,
        };
        let payload_len = len.checked_sub(l4 + l4_len).ok_or_else(|| {
            GenError::Build(format!("{len}-byte frame too short for its headers"))
        })?;
        let payload: Vec<u8> = (0..payload_len)
            .map(|i| (i as u8).wrapping_add(flow.pattern))
            .collect();

        let eth = PacketBuilder::ethernet2(l2.src.0, l2.dst.0);
        let step: PacketBuilderStep<IpHeaders> = match l2.vlan {
            Some(id) => {
                let id = VlanId::try_new(id).map_err(|_| GenError::Vlan(id))?;
                eth.single_vlan(id).ip(ip)
            }
            None => eth.ip(ip),
        };
        let mut bytes = Vec::with_capacity(len);
        let written = match flow.l4 {
            L4::Udp => step.udp(flow.sport, flow.dport).write(&mut bytes, &payload),
            L4::Tcp => {
                let mut tcp = TcpHeader::new(flow.sport, flow.dport, flow.tcp_seq, u16::MAX);
                tcp.ack = true;
                tcp.psh = true;
                tcp.acknowledgment_number = flow.tcp_seq.rotate_left(16);
                step.tcp_header(tcp).write(&mut bytes, &payload)
            }
        };
        written.map_err(|e| GenError::Build(e.to_string()))?;
        debug_assert_eq!(bytes.len(), len);
        Ok(Template {
            bytes,
            l3,
            l4,
            ipv4: flow.is_ipv4(),
        })
    }

    /// A copy of the frame with IPv4 identification `ident` (and the header
    /// checksum to match); IPv6 frames are copied unchanged.
    pub fn instantiate(&self, ident: u16) -> Vec<u8> {
        let mut frame = self.bytes.clone();
        if self.ipv4 {
            let ip = &mut frame[self.l3..self.l3 + IPV4_LEN];
            ip[4..6].copy_from_slice(&ident.to_be_bytes());
            let sum = header_checksum(ip);
            ip[10..12].copy_from_slice(&sum.to_be_bytes());
        }
        frame
    }

    /// Offset of the IP header.
    pub fn l3(&self) -> usize {
        self.l3
    }

    /// Offset of the L4 header.
    pub fn l4(&self) -> usize {
        self.l4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_frames_have_a_floor() {
        assert_eq!(frame_len(true, 60), 60);
        assert_eq!(frame_len(false, 60), 78);
        assert_eq!(frame_len(false, 64), 78);
        assert_eq!(frame_len(false, 570), 570);
    }
}
