//! pcap files in and out. Written files are classic pcap, little-endian,
//! Ethernet link type, microsecond timestamps: frame `i` is stamped
//! [`PCAP_EPOCH_SECS`] + `i` µs, so timestamps strictly increase and the file
//! is byte-for-byte reproducible. Reading accepts any classic pcap with the
//! Ethernet link type (either byte order, either timestamp resolution).

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use pcap_file::pcap::{PcapHeader, PcapReader, PcapWriter, RawPcapPacket};
use pcap_file::{DataLink, Endianness, PcapError, TsResolution};

use super::GenError;

/// Timestamp of the first frame, in seconds since the Unix epoch
/// (2023-11-14T22:13:20Z): fixed so that output is deterministic.
pub const PCAP_EPOCH_SECS: u32 = 1_700_000_000;

/// Snapshot length written in the header; larger than any generated frame.
pub const SNAPLEN: u32 = 65535;

/// Writes `frames` to the pcap file at `path`, replacing it.
pub fn write_pcap(path: impl AsRef<Path>, frames: &[Vec<u8>]) -> Result<(), GenError> {
    let path = path.as_ref();
    let pcap_err = |source| GenError::Pcap {
        path: path.to_owned(),
        source,
    };
    let file = File::create(path).map_err(|source| GenError::Io {
        path: path.to_owned(),
        source,
    })?;
    let out = write_pcap_to(BufWriter::new(file), frames).map_err(pcap_err)?;
    out.into_inner()
        .map(drop)
        .map_err(|e| e.into_error())
        .map_err(|source| GenError::Io {
            path: path.to_owned(),
            source,
        })
}

/// Writes a pcap stream of `frames` to `out` and hands `out` back.
pub fn write_pcap_to<W: Write>(out: W, frames: &[Vec<u8>]) -> Result<W, PcapError> {
    let header = PcapHeader {
        snaplen: SNAPLEN,
        datalink: DataLink::ETHERNET,
        ts_resolution: TsResolution::MicroSecond,
        endianness: Endianness::Little,
        ..Default::default()
    };
    let mut writer = PcapWriter::with_header(out, header)?;
    for (i, frame) in frames.iter().enumerate() {
        let len = u32::try_from(frame.len())
            .ok()
            .filter(|&l| l <= SNAPLEN)
            .ok_or(PcapError::InvalidField("frame longer than the snaplen"))?;
        let secs = u32::try_from(i / 1_000_000)
            .ok()
            .and_then(|s| s.checked_add(PCAP_EPOCH_SECS))
            .ok_or(PcapError::InvalidField(
                "too many frames for 32-bit timestamps",
            ))?;
        writer.write_raw_packet(&RawPcapPacket {
            ts_sec: secs,
            ts_frac: (i % 1_000_000) as u32,
            incl_len: len,
            orig_len: len,
            data: Cow::Borrowed(frame),
        })?;
    }
    let mut out = writer.into_writer();
    out.flush().map_err(PcapError::IoError)?;
    Ok(out)
}

/// Reads every frame of the pcap file at `path`, in order.
pub fn read_pcap(path: impl AsRef<Path>) -> Result<Vec<Vec<u8>>, GenError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| GenError::Io {
        path: path.to_owned(),
        source,
    })?;
    read_pcap_from(BufReader::new(file)).map_err(|e| match e {
        ReadError::Pcap(source) => GenError::Pcap {
            path: path.to_owned(),
            source,
        },
        ReadError::LinkType(link) => GenError::LinkType {
            path: path.to_owned(),
            link,
        },
    })
}

/// Why [`read_pcap_from`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The stream is not a readable pcap.
    #[error("bad pcap stream")]
    Pcap(#[source] PcapError),
    /// The capture's link type is not Ethernet.
    #[error("link type {0} is not Ethernet")]
    LinkType(String),
}

/// Reads every frame of a pcap stream, in order.
pub fn read_pcap_from<R: Read>(input: R) -> Result<Vec<Vec<u8>>, ReadError> {
    let mut reader = PcapReader::new(input).map_err(ReadError::Pcap)?;
    let link = reader.header().datalink;
    if link != DataLink::ETHERNET {
        return Err(ReadError::LinkType(format!("{link:?}")));
    }
    let mut frames = Vec::new();
    while let Some(packet) = reader.next_packet() {
        frames.push(packet.map_err(ReadError::Pcap)?.data.into_owned());
    }
    Ok(frames)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_round_trip_keeps_frames_and_order() {
        let frames = vec![vec![1u8; 64], vec![2u8; 1518], vec![3u8; 5], Vec::new()];
        let bytes = write_pcap_to(Vec::new(), &frames).unwrap();
        // 24-byte global header, then 16 bytes of record header per frame.
        let records: usize = frames.iter().map(|f| 16 + f.len()).sum();
        assert_eq!(bytes.len(), 24 + records);
        // Little-endian microsecond magic, Ethernet link type.
        assert_eq!(bytes[..4], [0xd4, 0xc3, 0xb2, 0xa1]);
        assert_eq!(bytes[20..24], 1u32.to_le_bytes());
        assert_eq!(read_pcap_from(&bytes[..]).unwrap(), frames);
    }

    #[test]
    fn timestamps_strictly_increase() {
        let frames = vec![vec![0u8; 60]; 5];
        let bytes = write_pcap_to(Vec::new(), &frames).unwrap();
        let mut reader = PcapReader::new(&bytes[..]).unwrap();
        assert_eq!(reader.header().ts_resolution, TsResolution::MicroSecond);
        let mut last = None;
        while let Some(p) = reader.next_packet() {
            let ts = p.unwrap().timestamp;
            assert!(last.is_none_or(|l| l < ts));
            last = Some(ts);
        }
        assert_eq!(
            last.unwrap(),
            std::time::Duration::from_secs(u64::from(PCAP_EPOCH_SECS))
                + std::time::Duration::from_micros(4)
        );
    }

    #[test]
    fn rejects_other_link_types_and_garbage() {
        let header = PcapHeader {
            datalink: DataLink::RAW,
            ..Default::default()
        };
        let w = PcapWriter::with_header(Vec::new(), header).unwrap();
        let bytes = w.into_writer();
        assert!(matches!(
            read_pcap_from(&bytes[..]),
            Err(ReadError::LinkType(_))
        ));
        assert!(matches!(
            read_pcap_from(&b"not a pcap"[..]),
            Err(ReadError::Pcap(_))
        ));
    }
}
