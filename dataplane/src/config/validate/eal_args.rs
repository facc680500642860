//! `eal.args` against the EAL options of the DPDK this daemon is built on
//! (22.11: `eal_common_options.c`, as `dpdk-testpmd --help` lists them). An
//! option EAL does not know makes `rte_eal_init` print its usage text and
//! fail; one the daemon derives from the config (the lcore map, `-m`, the
//! devices, telemetry) would override it or clash with it. Both are caught
//! here, at the argument's line.
use toml::Spanned;

/// How an option takes a value.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Value {
    No,
    /// `--opt VALUE` or `--opt=VALUE` (`-o VALUE`, `-oVALUE`).
    Required,
    /// Only as `--opt=VALUE`.
    Optional,
}

/// EAL's long options (getopt_long's table in DPDK 22.11).
const LONG: &[(&str, Value)] = &[
    ("base-virtaddr", Value::Required),
    ("block", Value::Required),
    ("allow", Value::Required),
    ("create-uio-dev", Value::No),
    ("file-prefix", Value::Required),
    ("force-max-simd-bitwidth", Value::Required),
    ("help", Value::No),
    ("huge-dir", Value::Required),
    ("huge-unlink", Value::Optional),
    ("huge-worker-stack", Value::Optional),
    ("in-memory", Value::No),
    ("iova-mode", Value::Required),
    ("lcores", Value::Required),
    ("legacy-mem", Value::No),
    ("log-level", Value::Required),
    ("main-lcore", Value::Required),
    ("match-allocations", Value::No),
    ("mbuf-pool-ops-name", Value::Required),
    ("no-hpet", Value::No),
    ("no-huge", Value::No),
    ("no-pci", Value::No),
    ("no-shconf", Value::No),
    ("no-telemetry", Value::No),
    ("proc-type", Value::Required),
    ("single-file-segments", Value::No),
    ("socket-limit", Value::Required),
    ("socket-mem", Value::Required),
    ("syslog", Value::Optional),
    ("telemetry", Value::No),
    ("trace", Value::Required),
    ("trace-bufsz", Value::Required),
    ("trace-dir", Value::Required),
    ("trace-mode", Value::Required),
    ("vdev", Value::Required),
    ("vfio-intr", Value::Required),
    ("vfio-vf-token", Value::Required),
    ("vmware-tsc-map", Value::No),
];

/// EAL's short options (`a:b:c:s:d:hl:S:m:n:r:v`).
const SHORT: &[(char, Value)] = &[
    ('a', Value::Required),
    ('b', Value::Required),
    ('c', Value::Required),
    ('d', Value::Required),
    ('h', Value::No),
    ('l', Value::Required),
    ('m', Value::Required),
    ('n', Value::Required),
    ('r', Value::Required),
    ('s', Value::Required),
    ('S', Value::Required),
    ('v', Value::No),
];

/// Why an option the daemon sets itself cannot be given here, and where
/// the config says it instead.
fn set_by_the_daemon(name: &str) -> Option<&'static str> {
    Some(match name {
        "l" | "c" | "lcores" | "main-lcore" => {
            "the daemon maps its lcores itself: set [[worker]] core and eal.control_core"
        }
        "m" | "socket-mem" => "EAL's memory is eal.memory_mb",
        "a" | "allow" | "b" | "block" | "vdev" => {
            "the devices EAL probes are the ports' `device` ([[port]])"
        }
        "telemetry" | "no-telemetry" => "telemetry is eal.no_telemetry",
        "proc-type" => "the daemon runs as DPDK's primary process",
        "h" | "help" => "EAL would print its usage and exit",
        _ => return None,
    })
}

/// The index of the first bad argument in `args` and why.
pub(super) fn check(args: &[Spanned<String>]) -> Result<(), (usize, String)> {
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].get_ref().as_str();
        let takes_next = option(arg).map_err(|e| (i, e))?;
        if takes_next {
            if i + 1 == args.len() {
                return Err((i, format!("`{arg}` needs a value (the next argument)")));
            }
            i += 1;
        }
        i += 1;
    }
    Ok(())
}

/// Checks one argument; whether it takes the next one as its value.
fn option(arg: &str) -> Result<bool, String> {
    if let Some(long) = arg.strip_prefix("--") {
        let (name, value) = match long.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (long, None),
        };
        if name.is_empty() {
            return Err(
                "`--` ends EAL's options, and the daemon takes no arguments after them".into(),
            );
        }
        let Some(&(_, kind)) = LONG.iter().find(|(n, _)| *n == name) else {
            return Err(format!(
                "`--{name}` is not an EAL option{}",
                suggestion(name)
            ));
        };
        if let Some(why) = set_by_the_daemon(name) {
            return Err(format!("`--{name}` cannot be given here: {why}"));
        }
        return match (kind, value) {
            (Value::No, Some(_)) => Err(format!("`--{name}` takes no value")),
            (Value::Required, None) => Ok(true),
            _ => Ok(false),
        };
    }
    let Some(short) = arg.strip_prefix('-').filter(|s| !s.is_empty()) else {
        return Err(format!(
            "`{arg}` is not an EAL option: each argument is an option (`-x`, `--name`) or the \
             value of the one before it"
        ));
    };
    // A cluster of flags (`-v`), or one option with its value attached
    // (`-n4`) or next (`-n 4`), as getopt reads them.
    for (k, c) in short.char_indices() {
        let Some(&(_, kind)) = SHORT.iter().find(|(s, _)| *s == c) else {
            return Err(format!("`-{c}` (in `{arg}`) is not an EAL option"));
        };
        if let Some(why) = set_by_the_daemon(&c.to_string()) {
            return Err(format!("`-{c}` cannot be given here: {why}"));
        }
        if kind == Value::Required {
            return Ok(k + c.len_utf8() == short.len());
        }
    }
    Ok(false)
}

/// ` (did you mean `--NAME`?)` for the closest long option, if one is close.
fn suggestion(name: &str) -> String {
    LONG.iter()
        .map(|(n, _)| (strsim::levenshtein(name, n), n))
        .filter(|&(d, n)| d <= 2 || n.starts_with(name))
        .min()
        .map_or_else(String::new, |(_, n)| format!(" (did you mean `--{n}`?)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<Spanned<String>> {
        a.iter()
            .map(|s| Spanned::new(0..0, (*s).to_string()))
            .collect()
    }

    #[test]
    fn eal_options_pass() {
        for ok in [
            &["--no-huge"][..],
            &[
                "--log-level=lib.eal:debug",
                "--log-level",
                "pmd.net.pcap:info",
            ],
            &["--file-prefix", "x", "--huge-unlink"],
            &["--huge-unlink=never", "--in-memory", "-n", "4", "-n4", "-v"],
            &["--iova-mode=va", "--syslog", "--huge-worker-stack=64"],
            &[],
        ] {
            assert_eq!(check(&args(ok)), Ok(()), "{ok:?}");
        }
    }

    #[test]
    fn unknown_and_daemon_set_options_are_refused_at_their_index() {
        for (bad, at, says) in [
            (
                &["--no-huge", "--huge-dri=/mnt"][..],
                1,
                "did you mean `--huge-dir`?",
            ),
            (&["--no-hug"][..], 0, "did you mean `--no-huge`?"),
            (
                &["--frobnicate"][..],
                0,
                "`--frobnicate` is not an EAL option",
            ),
            (&["-x"][..], 0, "`-x` (in `-x`) is not an EAL option"),
            (&["-v", "extra"][..], 1, "`extra` is not an EAL option"),
            (&["--"][..], 0, "ends EAL's options"),
            (&["--no-pci=1"][..], 0, "takes no value"),
            (&["-n"][..], 0, "needs a value"),
            (&["--log-level", "x", "--trace-dir"][..], 2, "needs a value"),
            (&["-l", "0-1"][..], 0, "[[worker]] core"),
            (&["--lcores=0@0"][..], 0, "[[worker]] core"),
            (&["-m", "64"][..], 0, "eal.memory_mb"),
            (&["--socket-mem=64"][..], 0, "eal.memory_mb"),
            (&["--vdev", "net_null0"][..], 0, "[[port]]"),
            (&["-a0000:01:00.0"][..], 0, "[[port]]"),
            (&["--no-telemetry"][..], 0, "eal.no_telemetry"),
            (&["--proc-type=secondary"][..], 0, "primary"),
            (&["-h"][..], 0, "usage"),
        ] {
            let (i, msg) = check(&args(bad)).unwrap_err();
            assert_eq!(i, at, "{bad:?}: {msg}");
            assert!(msg.contains(says), "{bad:?}: {msg}");
        }
    }
}
