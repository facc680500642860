//! Checks of the command line made before EAL starts, so that a mistake is
//! one clear line instead of a panic or a failure after the run: numeric
//! flags (clap value parsers; `--stop-when-idle` is a plain `u64`, which
//! clap already refuses cleanly when negative or too big) and the
//! `--stats-json` file.
use std::path::Path;
use std::time::Duration;

/// `--duration`: seconds, finite and not negative, within what a
/// `Duration` holds (`nan`, `inf`, `-1` and `1e20` are refused; they made
/// `Duration::from_secs_f64` panic).
pub fn parse_seconds(s: &str) -> Result<Duration, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!(
            "`{s}` is not a finite, non-negative number of seconds"
        ));
    }
    Duration::try_from_secs_f64(v).map_err(|_| format!("`{s}` seconds is too long"))
}

/// Opens (creating it when missing, keeping what it holds) the file the
/// final report goes to, so an unwritable path fails before the run.
pub fn check_writable(path: &Path) -> Result<(), String> {
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map(drop)
        .map_err(|e| format!("--stats-json {}: cannot write: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_seconds("0"), Ok(Duration::ZERO));
        for bad in ["nan", "inf", "-inf", "-1", "1e20", "x", ""] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn stats_file() {
        let dir = std::env::temp_dir().join(format!("dp-preflight-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("s.json");
        std::fs::write(&f, "kept").unwrap();
        assert_eq!(check_writable(&f), Ok(()));
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "kept");
        let e = check_writable(&dir.join("no/such/dir.json")).unwrap_err();
        assert!(e.contains("cannot write"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
