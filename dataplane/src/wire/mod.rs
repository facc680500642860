//! Zero-copy header views (smoltcp style) over packet bytes.
