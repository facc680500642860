//! Fuzz seed corpus: each distinct frame as one raw file. Files are named
//! `<what>-<fnv1a64 of the bytes>.bin`, `<what>` being `good` or the malformed
//! kind, so rerunning the generator rewrites the same files instead of adding
//! copies, and a fuzzer's corpus minimiser can tell them apart at a glance.

use std::collections::HashSet;
use std::fs;
use std::path::Path;

use super::{FrameInfo, GenError};

/// Writes each distinct frame of `frames` under `dir` (created if missing)
/// and returns how many files were written. `info` labels the frames (one
/// entry per frame, as [`super::generate_detailed`] returns it).
pub fn write_corpus(dir: &Path, frames: &[Vec<u8>], info: &[FrameInfo]) -> Result<usize, GenError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| GenError::Io { path, source }
    };
    fs::create_dir_all(dir).map_err(io(dir))?;
    let mut seen: HashSet<&[u8]> = HashSet::new();
    for (i, frame) in frames.iter().enumerate() {
        if !seen.insert(frame) {
            continue;
        }
        let what = info
            .get(i)
            .and_then(|f| f.malformed)
            .map_or("good", |k| k.name());
        let path = dir.join(format!("{what}-{:016x}.bin", fnv1a64(frame)));
        fs::write(&path, frame).map_err(io(&path))?;
    }
    Ok(seen.len())
}

/// 64-bit FNV-1a: a stable, dependency-free content hash for file names.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_reference_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
