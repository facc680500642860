use super::*;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;

const GOOD: &str = r#"pipeline = ["forward"]

[eal]
file_prefix = "t"
memory_mb = 256
hugepages = "off"
args = ["--log-level=lib.eal:debug"]

[[port]]
name = "p0"
device = "net_pcap0,rx_pcap=a.pcap"
mac = "02:00:00:00:00:aa"
ipv4 = ["192.0.2.1/24"]
ipv6 = ["2001:db8::1/64"]

[[port]]
name = "p1"
device = "net_pcap1,rx_pcap=b.pcap"
rx_queues = 2

[[worker]]
core = 1
rx = ["p0:0", "p1:0"]

[[worker]]
core = 2
rx = ["p1:1"]

[forward]
pairs = [["p0", "p1"]]
"#;

fn err(src: &str) -> (usize, String, String) {
    match Config::parse(src, "test.toml") {
        Ok(_) => panic!("config should have failed:\n{src}"),
        Err(ConfigError::Invalid {
            file,
            line,
            field,
            message,
            ..
        }) => {
            assert_eq!(file, "test.toml");
            (line, field, message)
        }
        Err(e) => panic!("unexpected error {e}"),
    }
}

/// Replaces the first occurrence of `from` in GOOD.
fn bad(from: &str, to: &str) -> String {
    assert!(GOOD.contains(from), "{from}");
    GOOD.replacen(from, to, 1)
}

#[test]
fn good_file_parses_and_resolves() {
    let (cfg, res) = Config::parse(GOOD, "good.toml").unwrap();
    assert_eq!(cfg.ports.len(), 2);
    assert_eq!(
        cfg.ports[0].mac.as_ref().map(|m| *m.get_ref()),
        Some(Mac([2, 0, 0, 0, 0, 0xaa]))
    );
    assert_eq!(cfg.ports[0].ipv4[0].get_ref().len, 24);
    assert!(cfg.ports[0].tx_checksum_offload, "on unless turned off");
    assert_eq!(cfg.stages(), vec![StageKind::Forward]);
    assert_eq!(res.worker_rx[1], vec![RxAssignment { port: 1, queue: 1 }]);
    assert_eq!(res.tx_queues, vec![2, 2]);
    assert_eq!(res.forward_out, vec![Some(1), Some(0)]);
    assert_eq!(cfg.eal.hugepages, Hugepages::Off);
    assert!(cfg.mempool_size(&res) >= 4 * 1024);
}

#[test]
fn checksum_offload_can_be_turned_off() {
    let src = bad(
        "rx_queues = 2",
        "rx_queues = 2\ntx_checksum_offload = false",
    );
    let (cfg, _) = Config::parse(&src, "t.toml").unwrap();
    assert!(cfg.ports[0].tx_checksum_offload);
    assert!(!cfg.ports[1].tx_checksum_offload);
    let (line, field, _) = err(&bad(
        "rx_queues = 2",
        "rx_queues = 2\ntx_checksum_offload = 1",
    ));
    assert_eq!((line, field.as_str()), (20, "port[1].tx_checksum_offload"));
}

/// `rx_checksum_offload` is `auto` unless set to `on` or `off` (or a
/// boolean); anything else is refused at its line, saying what it takes.
#[test]
fn rx_checksum_offload_is_auto_on_or_off() {
    let (cfg, _) = Config::parse(GOOD, "good.toml").unwrap();
    assert_eq!(cfg.ports[0].rx_checksum_offload, RxChecksumOffload::Auto);
    let values = [
        ("\"on\"", RxChecksumOffload::On),
        ("\"off\"", RxChecksumOffload::Off),
        ("\"auto\"", RxChecksumOffload::Auto),
        ("true", RxChecksumOffload::On),
        ("false", RxChecksumOffload::Off),
    ];
    for (value, want) in values {
        let src = bad(
            "rx_queues = 2",
            &format!("rx_queues = 2\nrx_checksum_offload = {value}"),
        );
        let (cfg, _) = Config::parse(&src, "t.toml").unwrap();
        assert_eq!(cfg.ports[1].rx_checksum_offload, want, "{value}");
    }
    for value in ["\"yes\"", "1"] {
        let (line, field, msg) = err(&bad(
            "rx_queues = 2",
            &format!("rx_queues = 2\nrx_checksum_offload = {value}"),
        ));
        assert_eq!((line, field.as_str()), (20, "port[1].rx_checksum_offload"));
        assert!(
            msg.contains("\"auto\", \"on\", \"off\" or a boolean"),
            "{value}: {msg}"
        );
    }
}

#[test]
fn shipped_configs_are_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            // Their pcap inputs are made by the scripts that run them.
            Config::load_with(&p, &Host::current().with_files(false))
                .unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert!(n > 0, "no configs found in {}", dir.display());
}

/// The bench templates (`config/bench/`, rendered by scripts/bench.sh) are
/// valid configs once their `@NAME@` strings are filled in; the values
/// bench.sh sets on lines marked `# @NAME@` are valid as they stand.
#[test]
fn bench_templates_are_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/bench");
    let tmp = std::env::temp_dir().join(format!("dp-bench-tmpl-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(
        tmp.join("routes"),
        "198.18.0.0/24 10.0.0.2\n198.18.1.0/24 10.0.1.2\n",
    )
    .unwrap();
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let src = std::fs::read_to_string(&p)
            .unwrap()
            .replace("@PREFIX@", "t")
            .replace("@FEED0@", "f0.pcap")
            .replace("@FEED1@", "f1.pcap")
            .replace("@HUGEPAGES@", "off")
            .replace("@ROUTES@", "routes");
        let name = p.display().to_string();
        let (_, res) = Config::parse_in(&src, &name, &tmp).unwrap_or_else(|e| panic!("{e}"));
        if name.ends_with("ring.toml") {
            assert!(res.distributor.is_some(), "{name}: ring mode");
        }
        n += 1;
    }
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(n >= 6, "{n} templates in {}", dir.display());
}

#[test]
fn unknown_key_names_line_and_field() {
    let (line, field, msg) = err(&bad("memory_mb = 256", "memory_mb = 256\nmemroy = 3"));
    assert_eq!(line, 6);
    assert_eq!(field, "eal.memroy");
    assert!(msg.contains("unknown field `memroy`"), "{msg}");
}

#[test]
fn unknown_section_is_rejected() {
    let (line, field, msg) = err(&format!("{GOOD}\n[bogus]\nx = 1\n"));
    assert_eq!(line, 32);
    assert_eq!(field, "bogus");
    assert!(msg.contains("unknown field `bogus`"), "{msg}");
}

#[test]
fn bad_mac_names_line_and_field() {
    let (line, field, msg) = err(&bad("02:00:00:00:00:aa", "02:00:00:00:zz:aa"));
    assert_eq!(line, 12);
    assert_eq!(field, "port[0].mac");
    assert!(msg.contains("invalid MAC address"), "{msg}");
}

#[test]
fn bad_cidr_names_line_and_field() {
    let (line, field, msg) = err(&bad("192.0.2.1/24", "192.0.2.1/33"));
    assert_eq!((line, field.as_str()), (13, "port[0].ipv4"));
    assert!(msg.contains("0..=32"), "{msg}");
    let (line, field, msg) = err(&bad("2001:db8::1/64", "2001:db8::g/64"));
    assert_eq!((line, field.as_str()), (14, "port[0].ipv6"));
    assert!(msg.contains("not an IPv4 or IPv6 address"), "{msg}");
    let (_, _, msg) = err(&bad("192.0.2.1/24", "192.0.2.1"));
    assert!(msg.contains("ADDRESS/LENGTH"), "{msg}");
}

#[test]
fn unknown_port_in_worker() {
    let (line, field, msg) = err(&bad(r#"rx = ["p0:0", "p1:0"]"#, r#"rx = ["p0:0", "p9:0"]"#));
    assert_eq!((line, field.as_str()), (23, "worker[0].rx"));
    assert!(msg.contains("unknown port `p9`"), "{msg}");
}

#[test]
fn missing_queue_and_double_polling() {
    let (line, _, msg) = err(&bad(r#"rx = ["p1:1"]"#, r#"rx = ["p1:5"]"#));
    assert_eq!(line, 27);
    assert!(msg.contains("queue 5 does not exist"), "{msg}");
    let (line, _, msg) = err(&bad(r#"rx = ["p1:1"]"#, r#"rx = ["p1:1", "p0:0"]"#));
    assert_eq!(line, 27);
    assert!(msg.contains("already polled by worker[0]"), "{msg}");
    let (_, field, msg) = err(&bad(r#"rx = ["p1:1"]"#, r#"rx = ["p0"]"#));
    assert!(msg.contains("already polled"), "{msg} {field}");
}

#[test]
fn unpolled_queue_is_an_error() {
    let (_, field, msg) = err(&bad("rx_queues = 2", "rx_queues = 3"));
    assert_eq!(field, "port[1].rx_queues");
    assert!(msg.contains("p1:2 is polled by no worker"), "{msg}");
}

#[test]
fn duplicate_core() {
    let (line, field, msg) = err(&bad("core = 2", "core = 1"));
    assert_eq!((line, field.as_str()), (26, "worker[1].core"));
    assert!(msg.contains("core 1 is used by two workers"), "{msg}");
}

#[test]
fn stage_referencing_missing_port() {
    let (line, field, msg) = err(&bad(
        r#"pairs = [["p0", "p1"]]"#,
        r#"pairs = [["p0", "nope"]]"#,
    ));
    assert_eq!((line, field.as_str()), (30, "forward.pairs[0]"));
    assert!(msg.contains("unknown port `nope`"), "{msg}");
}

/// A `[forward]` section without the stage is refused at its header, like
/// any stage's section (the check is the stages' own, not forward's).
#[test]
fn forward_section_without_the_stage() {
    let (line, field, msg) = err(&bad(r#"pipeline = ["forward"]"#, r#"pipeline = ["count"]"#));
    assert_eq!((line, field.as_str()), (29, "forward"));
    assert!(
        msg.contains("[forward] is configured but `forward` is not in the pipeline"),
        "{msg}"
    );
}

#[test]
fn pipeline_errors() {
    let (line, field, msg) = err(&bad(
        r#"pipeline = ["forward"]"#,
        r#"pipeline = ["teleport"]"#,
    ));
    assert_eq!((line, field.as_str()), (1, "pipeline"));
    assert!(msg.contains("unknown variant `teleport`"), "{msg}");
    let (_, _, msg) = err(&bad(r#"pipeline = ["forward"]"#, r#"pipeline = []"#));
    assert!(
        msg.contains("pipeline is empty") || msg.contains("not in the pipeline"),
        "{msg}"
    );
    let (_, _, msg) = err(&bad(
        r#"pipeline = ["forward"]"#,
        r#"pipeline = ["forward", "forward"]"#,
    ));
    assert!(msg.contains("listed twice"), "{msg}");
    let no_section = GOOD.split("[forward]").next().unwrap();
    let (_, _, msg) = err(no_section);
    assert!(msg.contains("needs a [forward] section"), "{msg}");
}

#[test]
fn duplicate_port_name_and_device() {
    let (line, field, msg) = err(&bad(r#"name = "p1""#, r#"name = "p0""#));
    assert_eq!((line, field.as_str()), (17, "port[1].name"));
    assert!(msg.contains("duplicate port name"), "{msg}");
    let (_, field, msg) = err(&bad("net_pcap1,rx_pcap=b.pcap", "net_pcap0,rx_pcap=b.pcap"));
    assert_eq!(field, "port[1].device");
    assert!(msg.contains("used by two ports"), "{msg}");
}

#[test]
fn wrong_types_and_syntax() {
    let (line, field, msg) = err(&bad("memory_mb = 256", "memory_mb = \"lots\""));
    assert_eq!((line, field.as_str()), (5, "eal.memory_mb"));
    assert!(msg.contains("invalid type"), "{msg}");
    let (line, _, _) = err(&bad("memory_mb = 256", "memory_mb = = 3"));
    assert_eq!(line, 5);
    let (_, field, msg) = err(&bad(r#"hugepages = "off""#, r#"hugepages = "maybe""#));
    assert_eq!(field, "eal.hugepages");
    assert!(msg.contains("unknown variant"), "{msg}");
}

#[test]
fn too_few_tx_queues() {
    let (_, field, msg) = err(&bad("rx_queues = 2", "rx_queues = 2\ntx_queues = 1"));
    assert_eq!(field, "port[1].tx_queues");
    assert!(msg.contains("each worker needs its own"), "{msg}");
}

#[test]
fn error_display_has_file_line_field() {
    let e = Config::parse(&bad("02:00:00:00:00:aa", "nonsense"), "x/y.toml").unwrap_err();
    let s = e.to_string();
    assert!(s.starts_with("x/y.toml:12:"), "{s}");
    assert!(s.contains("port[0].mac"), "{s}");
}

#[test]
fn cidr_helpers() {
    let c: Ipv4Cidr = "10.1.2.3/8".parse().unwrap();
    assert_eq!(c.network(), Ipv4Addr::new(10, 0, 0, 0));
    assert!(c.contains(Ipv4Addr::new(10, 200, 0, 1)));
    assert!(!c.contains(Ipv4Addr::new(11, 0, 0, 1)));
    let z: Ipv4Cidr = "0.0.0.0/0".parse().unwrap();
    assert!(z.contains(Ipv4Addr::new(1, 2, 3, 4)));
    let c6: Ipv6Cidr = "2001:db8::5/64".parse().unwrap();
    assert!(c6.contains("2001:db8::ffff".parse().unwrap()));
    assert_eq!(c6.network(), "2001:db8::".parse::<Ipv6Addr>().unwrap());
    assert!("2001:db8::/64".parse::<Ipv4Cidr>().is_err());
    // The tables' prefix: host bits cleared, lengths kept, /0 and /32 too.
    for (text, want) in [
        ("10.1.2.3/8", "10.0.0.0/8"),
        ("10.1.2.3/0", "0.0.0.0/0"),
        ("10.1.2.3/32", "10.1.2.3/32"),
        ("2001:db8::5/64", "2001:db8::/64"),
        ("2001:db8::5/0", "::/0"),
    ] {
        let c: IpCidr = text.parse().unwrap();
        assert_eq!(c.prefix().to_string(), want, "{text}");
    }
    let c: Ipv6Cidr = "2001:db8::5/128".parse().unwrap();
    assert!(c.contains("2001:db8::5".parse().unwrap()));
    assert!(!c.contains("2001:db8::4".parse().unwrap()));
}

/// A port on a /0: the network-address check shifted a u32 by 32 and
/// panicked (debug builds) on every next hop and neighbour.
#[test]
fn a_port_on_a_default_subnet_is_checked_without_panic() {
    let src = router_bad(r#"ipv4 = ["10.0.2.1/24"]"#, r#"ipv4 = ["10.0.2.1/0"]"#);
    assert!(Config::parse(&src, "r.toml").is_ok());
    let src = src.replacen(r#""10.0.2.2"]"#, r#""0.0.0.0"]"#, 1);
    let (line, field, msg) = err(&src);
    assert_eq!((line, field.as_str()), (30, "route.static[0].via"));
    assert!(
        msg.contains("0.0.0.0 is the network address of 10.0.2.1/0"),
        "{msg}"
    );
}

const ROUTER: &str = r#"pipeline = ["acl", "route"]

[[port]]
name = "lan"
device = "net_null0"
ipv4 = ["10.0.1.1/24"]
ipv6 = ["2001:db8:1::1/64"]

[[port]]
name = "wan"
device = "net_null1"
ipv4 = ["10.0.2.1/24"]

[[worker]]
core = 1
rx = ["lan", "wan"]

[acl]
default = "allow"

[[acl.rule]]
action = "deny"
src = "10.9.0.0/16"
proto = "tcp"
dport = "22-23"

[route]
[[route.static]]
prefix = "198.18.0.0/24"
via = ["10.0.1.2", "10.0.2.2"]

[[route.static]]
prefix = "192.0.2.0/24"
port = "wan"

[[route.neighbor]]
ip = "10.0.1.2"
mac = "02:00:00:00:00:01"
"#;

fn router_bad(from: &str, to: &str) -> String {
    assert!(ROUTER.contains(from), "{from}");
    ROUTER.replacen(from, to, 1)
}

#[test]
fn router_config_resolves() {
    use crate::tables::routing::RouteTarget;
    let (cfg, res) = Config::parse(ROUTER, "r.toml").unwrap();
    assert_eq!(cfg.stages(), vec![StageKind::Acl, StageKind::Route]);
    assert_eq!(res.acl_rules.len(), 1);
    assert_eq!(res.acl_rules[0].dport, (22, 23));
    assert_eq!(res.acl_rules[0].proto, Some(6));
    assert_eq!(res.routes.len(), 2);
    match &res.routes[0].target {
        RouteTarget::Via(h) => {
            assert_eq!(h.iter().map(|x| x.1).collect::<Vec<_>>(), vec![0, 1])
        }
        t => panic!("{t:?}"),
    }
    assert_eq!(res.routes[1].target, RouteTarget::Port(1));
    assert_eq!(
        res.neighbors,
        vec![(0, "10.0.1.2".parse().unwrap(), [2, 0, 0, 0, 0, 1])]
    );
}

/// A rule an earlier rule hides (it matches every packet the later one
/// does) is a warning at the later rule, naming the earlier one's line;
/// past ten such rules the rest are summed up in one more warning.
#[test]
fn acl_rules_that_can_never_match_are_warned_of() {
    let (_, res) = Config::parse(ROUTER, "r.toml").unwrap();
    assert!(res.warnings.is_empty(), "{:?}", res.warnings);
    let hidden = |n: usize| {
        let more = r#"[[acl.rule]]
action = "allow"
src = "10.9.1.0/24"
proto = "tcp"
dport = 22
"#
        .repeat(n);
        router_bad("[route]\n", &format!("{more}\n[route]\n"))
    };
    let (_, res) = Config::parse(&hidden(1), "r.toml").unwrap();
    assert_eq!(res.warnings.len(), 1, "{:?}", res.warnings);
    let w = &res.warnings[0];
    assert_eq!(
        (w.line(), w.field()),
        (Some(27), Some("acl.rule[1]")),
        "{w}"
    );
    assert!(
        w.to_string()
            .contains("acl.rule[0] (line 21) matches every packet it does, with the other action"),
        "{w}"
    );
    let (_, res) = Config::parse(&hidden(12), "r.toml").unwrap();
    assert_eq!(res.warnings.len(), 11, "{:?}", res.warnings);
    // Each named after the first rule that hides it: rule 0 hides them all.
    assert_eq!(res.warnings[1].field(), Some("acl.rule[2]"));
    assert!(res.warnings[1]
        .to_string()
        .contains("acl.rule[0] (line 21)"));
    assert_eq!(res.warnings[10].field(), Some("acl.rule[11]"));
    assert!(
        res.warnings[10]
            .to_string()
            .contains("2 more rules never match"),
        "{}",
        res.warnings[10]
    );
    // A narrower rule first hides nothing.
    let narrow_first = router_bad(
        r#"src = "10.9.0.0/16""#,
        r#"src = "10.9.0.0/16"
dst = "198.18.0.0/24""#,
    );
    let (_, res) = Config::parse(
        &narrow_first.replace(
            "[route]\n",
            "[[acl.rule]]\naction = \"allow\"\nsrc = \"10.9.0.0/16\"\n\n[route]\n",
        ),
        "r.toml",
    )
    .unwrap();
    assert!(res.warnings.is_empty(), "{:?}", res.warnings);
}

/// A stage that sends frames on unread (`forward`: `StageSpec::headerless`)
/// shares no pipeline with stages that read headers; `count` may follow it.
#[test]
fn a_headerless_stage_is_alone_with_header_readers() {
    let with = |list: &str| {
        router_bad(
            "pipeline = [\"acl\", \"route\"]\n",
            &format!("pipeline = {list}\n[forward]\npairs = [[\"lan\", \"wan\"]]\n"),
        )
    };
    let (line, field, msg) = err(&with(r#"["acl", "route", "forward"]"#));
    assert_eq!((line, field.as_str()), (1, "pipeline"));
    assert!(
        msg.contains("`forward` sends frames on without reading them and cannot share a pipeline with stages that read headers (acl, route)"),
        "{msg}"
    );
    let alone = bad(
        r#"pipeline = ["forward"]"#,
        r#"pipeline = ["forward", "count"]"#,
    );
    assert!(Config::parse(&alone, "t.toml").is_ok());
}

#[test]
fn acl_flow_cache_size() {
    let (_, res) = Config::parse(ROUTER, "r.toml").unwrap();
    assert_eq!(res.acl_flow_cache, AclConfig::DEFAULT_FLOW_CACHE);
    let off = router_bad(
        r#"default = "allow""#,
        "default = \"allow\"\nflow_cache = 0",
    );
    assert_eq!(Config::parse(&off, "r.toml").unwrap().1.acl_flow_cache, 0);
    let big = router_bad(
        r#"default = "allow""#,
        "default = \"allow\"\nflow_cache = 99999999",
    );
    let (line, field, msg) = err(&big);
    assert_eq!((line, field.as_str()), (20, "acl.flow_cache"));
    assert!(msg.contains("99999999 entries"), "{msg}");
}

#[test]
fn router_config_errors_name_line_and_field() {
    let (line, field, msg) = err(&router_bad(r#"proto = "tcp""#, r#"proto = "tpc""#));
    assert_eq!((line, field.as_str()), (24, "acl.rule[0].proto"));
    assert!(msg.contains("unknown protocol `tpc`"), "{msg}");
    let (line, field, msg) = err(&router_bad(r#"dport = "22-23""#, r#"dport = "23-22""#));
    assert_eq!((line, field.as_str()), (25, "acl.rule[0].dport"));
    assert!(msg.contains("invalid port range"), "{msg}");
    // Ports on a protocol without them: the rule could never match.
    for proto in [r#""icmp""#, r#""icmpv6""#, "47"] {
        let (line, field, msg) = err(&router_bad(r#"proto = "tcp""#, &format!("proto = {proto}")));
        assert_eq!((line, field.as_str()), (25, "acl.rule[0].dport"), "{proto}");
        assert!(msg.contains("has no ports"), "{msg}");
    }
    for proto in [r#""udp""#, r#""sctp""#, "6"] {
        let ok = router_bad(r#"proto = "tcp""#, &format!("proto = {proto}"));
        assert!(Config::parse(&ok, "r.toml").is_ok(), "{proto}");
    }
    let (line, field, msg) = err(&router_bad(
        r#"via = ["10.0.1.2", "10.0.2.2"]"#,
        r#"via = ["10.0.1.2", "10.7.7.7"]"#,
    ));
    assert_eq!((line, field.as_str()), (30, "route.static[0].via"));
    assert!(msg.contains("10.7.7.7 is on no port's subnet"), "{msg}");
    let (_, field, msg) = err(&router_bad(
        r#"via = ["10.0.1.2", "10.0.2.2"]"#,
        r#"via = "2001:db8:1::9""#,
    ));
    assert_eq!(field, "route.static[0].via");
    assert!(msg.contains("address family"), "{msg}");
    let (line, field, msg) = err(&router_bad(r#"port = "wan""#, r#"port = "dmz""#));
    assert_eq!((line, field.as_str()), (34, "route.static[1].port"));
    assert!(msg.contains("unknown port `dmz`"), "{msg}");
    let (_, field, msg) = err(&router_bad(r#"ip = "10.0.1.2""#, r#"ip = "10.0.3.2""#));
    assert_eq!(field, "route.neighbor[0].ip");
    assert!(msg.contains("on no port's subnet"), "{msg}");
    // A subnet's broadcast address is no next hop and no neighbour.
    let (line, field, msg) = err(&router_bad(
        r#"via = ["10.0.1.2", "10.0.2.2"]"#,
        r#"via = ["10.0.1.2", "10.0.2.255"]"#,
    ));
    assert_eq!((line, field.as_str()), (30, "route.static[0].via"));
    assert!(
        msg.contains("10.0.2.255 is the broadcast address of 10.0.2.1/24"),
        "{msg}"
    );
    let (line, field, msg) = err(&router_bad(r#"ip = "10.0.1.2""#, r#"ip = "10.0.1.255""#));
    assert_eq!((line, field.as_str()), (37, "route.neighbor[0].ip"));
    assert!(msg.contains("broadcast address"), "{msg}");
    // Nor are the subnet's own address, the router's own, or a group MAC.
    let (line, field, msg) = err(&router_bad(
        r#"via = ["10.0.1.2", "10.0.2.2"]"#,
        r#"via = ["10.0.1.2", "10.0.2.0"]"#,
    ));
    assert_eq!((line, field.as_str()), (30, "route.static[0].via"));
    assert!(msg.contains("10.0.2.0 is the network address"), "{msg}");
    let (_, field, msg) = err(&router_bad(
        r#"via = ["10.0.1.2", "10.0.2.2"]"#,
        r#"via = ["10.0.1.2", "10.0.2.1"]"#,
    ));
    assert_eq!(field, "route.static[0].via");
    assert!(msg.contains("this router's own address"), "{msg}");
    let (_, field, msg) = err(&router_bad(r#"ip = "10.0.1.2""#, r#"ip = "10.0.1.1""#));
    assert_eq!(field, "route.neighbor[0].ip");
    assert!(msg.contains("own address"), "{msg}");
    let (line, field, msg) = err(&router_bad(
        r#"mac = "02:00:00:00:00:01"
"#,
        r#"mac = "ff:ff:ff:ff:ff:ff"
"#,
    ));
    assert_eq!((line, field.as_str()), (37, "route.neighbor[0].mac"));
    assert!(msg.contains("unicast"), "{msg}");
    let (_, field, msg) = err(&router_bad(
        r#"src = "10.9.0.0/16""#,
        r#"src = "2001:db8::/32"
dst = "10.0.0.0/8""#,
    ));
    assert_eq!(field, "acl.rule[0].dst");
    assert!(msg.contains("same address family"), "{msg}");
    let (_, _, msg) = err(&router_bad(
        r#"pipeline = ["acl", "route"]"#,
        r#"pipeline = ["route", "acl"]"#,
    ));
    assert!(msg.contains("acl"), "{msg}");
    let (_, _, msg) = err(&router_bad(
        r#"pipeline = ["acl", "route"]"#,
        r#"pipeline = ["route"]"#,
    ));
    assert!(
        msg.contains("[acl] is configured but `acl` is not in the pipeline"),
        "{msg}"
    );
}

/// `count` stands anywhere, with or without a forwarder; two forwarders,
/// or `forward` with a stage that reads headers, are refused.
#[test]
fn pipeline_rules_are_the_stages_declarations() {
    for ok in [
        r#"pipeline = ["acl", "route", "count"]"#,
        r#"pipeline = ["count", "acl", "route"]"#,
        r#"pipeline = ["acl", "count", "route"]"#,
    ] {
        let src = router_bad(r#"pipeline = ["acl", "route"]"#, ok);
        let (cfg, _) = Config::parse(&src, "test.toml").unwrap_or_else(|e| panic!("{ok}: {e}"));
        assert!(cfg.stages().contains(&StageKind::Count));
    }
    let (cfg, _) = Config::parse(
        &bad(
            r#"pipeline = ["forward"]"#,
            r#"pipeline = ["forward", "count"]"#,
        ),
        "test.toml",
    )
    .unwrap();
    assert_eq!(cfg.stages(), vec![StageKind::Forward, StageKind::Count]);
    // `count` alone is a sink: valid, with a warning.
    let (cfg, res) = Config::parse(
        &bad("pipeline = [\"forward\"]", "pipeline = [\"count\"]")
            .replace("[forward]\npairs = [[\"p0\", \"p1\"]]\n", ""),
        "test.toml",
    )
    .unwrap();
    assert_eq!(cfg.stages(), vec![StageKind::Count]);
    assert_eq!(res.warnings.len(), 1, "{:?}", res.warnings);
    let w = res.warnings[0].to_string();
    assert!(
        w.starts_with("test.toml:1:12: pipeline: no stage forwards"),
        "{w}"
    );
    let (line, field, msg) = err(&router_bad(
        r#"pipeline = ["acl", "route"]"#,
        r#"pipeline = ["route", "count", "acl"]"#,
    ));
    assert_eq!((line, field.as_str()), (1, "pipeline"));
    assert!(
        msg.contains("`acl` needs a later stage that forwards"),
        "{msg}"
    );
    let (_, field, msg) = err(&bad(
        r#"pipeline = ["forward"]"#,
        r#"pipeline = ["forward", "count", "count"]"#,
    ));
    assert_eq!(field, "pipeline");
    assert!(msg.contains("listed twice"), "{msg}");
}

#[test]
fn routes_file_errors_name_its_line() {
    let dir = tempfile_dir();
    std::fs::write(
        dir.join("r.txt"),
        "# comment\n198.18.6.0/24 10.0.1.2\n\n198.18.1.0/33 10.0.1.2\n",
    )
    .unwrap();
    let src = ROUTER.replacen("[route]", "[route]\nroutes_file = \"r.txt\"", 1);
    let e = Config::parse_in(&src, "r.toml", &dir).unwrap_err();
    let s = e.to_string();
    assert!(s.contains("r.txt:4:"), "{s}");
    assert!(s.contains("0..=32"), "{s}");
    std::fs::write(
        dir.join("r.txt"),
        "198.18.5.0/24 10.0.1.2,10.0.2.2\n203.0.113.0/24 dev wan\n",
    )
    .unwrap();
    let (_, res) = Config::parse_in(&src, "r.toml", &dir).unwrap();
    assert_eq!(res.routes.len(), 4);
    std::fs::write(dir.join("r.txt"), "198.18.6.0/24 via 10.0.1.2\n").unwrap();
    let s = Config::parse_in(&src, "r.toml", &dir)
        .unwrap_err()
        .to_string();
    assert!(
        s.contains("r.txt:1:") && s.contains("expected `PREFIX VIA"),
        "{s}"
    );
    // Nothing after `dev PORT`; no next hop that is no station.
    for (text, want) in [
        ("198.18.6.0/24 dev lan 10.0.1.2\n", "expected `PREFIX VIA"),
        ("198.18.6.0/24 10.0.1.1\n", "this router's own address"),
        (
            "198.18.6.0/24 10.0.1.255\n",
            "broadcast address of 10.0.1.1/24",
        ),
        ("198.18.6.0/24 10.0.1.0\n", "network address of 10.0.1.1/24"),
    ] {
        std::fs::write(dir.join("r.txt"), text).unwrap();
        let s = Config::parse_in(&src, "r.toml", &dir)
            .unwrap_err()
            .to_string();
        assert!(s.contains("r.txt:1:") && s.contains(want), "{text}: {s}");
    }
    let missing = ROUTER.replacen("[route]", "[route]\nroutes_file = \"nope.txt\"", 1);
    let s = Config::parse_in(&missing, "r.toml", &dir)
        .unwrap_err()
        .to_string();
    assert!(
        s.contains("route.routes_file") && s.contains("nope.txt"),
        "{s}"
    );
}

/// A prefix routed twice (static, routes file, or one of each; host bits
/// ignored) is refused where the second route is, naming the first: the
/// tables would silently keep only the last.
#[test]
fn one_route_per_prefix() {
    let twice = ROUTER.replacen(
        "[[route.static]]\nprefix = \"192.0.2.0/24\"",
        "[[route.static]]\nprefix = \"198.18.0.7/24\"\nport = \"lan\"\n\n[[route.static]]\nprefix = \"192.0.2.0/24\"",
        1,
    );
    assert_ne!(twice, ROUTER);
    let e = Config::parse(&twice, "r.toml").unwrap_err();
    let s = e.to_string();
    let line = twice
        .lines()
        .position(|l| l.contains("198.18.0.7/24"))
        .unwrap()
        + 1;
    assert!(s.contains(&format!("r.toml:{line}:")), "{s}");
    assert!(
        s.contains("route.static[1].prefix")
            && s.contains("198.18.0.0/24 is already routed by route.static[0]"),
        "{s}"
    );
    let dir = tempfile_dir();
    let src = ROUTER.replacen("[route]", "[route]\nroutes_file = \"dup.txt\"", 1);
    for (text, line, first) in [
        ("198.18.0.0/24 10.0.1.2\n", 1, "route.static[0]"),
        (
            "203.0.113.0/24 dev wan\n# again\n203.0.113.9/24 10.0.1.2\n",
            3,
            "line 1 of the routes file",
        ),
    ] {
        std::fs::write(dir.join("dup.txt"), text).unwrap();
        let s = Config::parse_in(&src, "r.toml", &dir)
            .unwrap_err()
            .to_string();
        assert!(
            s.contains(&format!("dup.txt:{line}:"))
                && s.contains(&format!("already routed by {first}")),
            "{text}: {s}"
        );
    }
}

/// A link-local next hop (or static neighbour) is on every port's link:
/// without `port` it is refused, with one it is taken on that port.
#[test]
fn link_local_next_hops_need_their_port() {
    let route = "[[route.static]]\nprefix = \"2001:db8:300::/48\"\nvia = \"fe80::2\"\n\n[[route.static]]\nprefix = \"192.0.2.0/24\"";
    let src = ROUTER.replacen("[[route.static]]\nprefix = \"192.0.2.0/24\"", route, 1);
    assert_ne!(src, ROUTER);
    let s = Config::parse(&src, "r.toml").unwrap_err().to_string();
    assert!(
        s.contains("route.static[") && s.contains(".via") && s.contains("fe80::2 is link-local"),
        "{s}"
    );
    let pinned = src.replacen("via = \"fe80::2\"", "via = \"fe80::2\"\nport = \"wan\"", 1);
    let (_, res) = Config::parse(&pinned, "r.toml").unwrap();
    let wan = res.port_index["wan"] as u16;
    assert!(res.routes.iter().any(|r| matches!(
        &r.target,
        crate::tables::routing::RouteTarget::Via(h) if h == &[("fe80::2".parse().unwrap(), wan)]
    )));
}

fn tempfile_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("dp-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn route_backend_deserializes_into_the_table_type() {
    use crate::tables::RouteBackend;
    let (cfg, _) = Config::parse(ROUTER, "r.toml").unwrap();
    assert_eq!(cfg.route.unwrap().get_ref().backend, RouteBackend::Fib);
    let lpm = router_bad("[route]", "[route]\nbackend = \"lpm\"");
    let (cfg, _) = Config::parse(&lpm, "r.toml").unwrap();
    assert_eq!(cfg.route.unwrap().get_ref().backend, RouteBackend::Lpm);
    let linear = router_bad("[route]", "[route]\nbackend = \"linear\"");
    let (cfg, res) = Config::parse(&linear, "r.toml").unwrap();
    assert_eq!(
        cfg.route.as_ref().unwrap().get_ref().backend,
        RouteBackend::Linear
    );
    // The linear tables live on the heap: no EAL memory for them.
    assert_eq!(cfg.memory_estimate(&res).route_tables_mb, 0);
    let (line, field, msg) = err(&router_bad("[route]", "[route]\nbackend = \"trie\""));
    assert_eq!((line, field.as_str()), (28, "route.backend"));
    assert!(msg.contains("unknown variant `trie`"), "{msg}");
}

/// Parses GOOD-derived `src` against a host whose online CPUs are `online`.
fn parse_on(src: &str, online: &str) -> Result<(Config, Resolved), ConfigError> {
    let host = Host::with_online_cpus(online).unwrap();
    Config::parse_with(src, "test.toml", Path::new("."), &host)
}

fn invalid(e: ConfigError) -> (usize, String, String) {
    match e {
        ConfigError::Invalid {
            line,
            field,
            message,
            ..
        } => (line, field, message),
        e => panic!("unexpected error {e}"),
    }
}

#[test]
fn cores_must_be_online() {
    assert!(parse_on(GOOD, "0-3").is_ok());
    let (line, field, msg) = invalid(parse_on(GOOD, "0-1").unwrap_err());
    assert_eq!((line, field.as_str()), (26, "worker[1].core"));
    assert!(
        msg.contains("CPU 2 does not exist or is offline (online CPUs: 0-1)"),
        "{msg}"
    );
    let src = bad("memory_mb = 256", "memory_mb = 256\ncontrol_core = 5");
    let (line, field, msg) = invalid(parse_on(&src, "0-3").unwrap_err());
    assert_eq!((line, field.as_str()), (6, "eal.control_core"));
    assert!(msg.contains("CPU 5 does not exist or is offline"), "{msg}");
    // Without host facts (`parse`) nothing is checked.
    assert!(Config::parse(&src, "test.toml").is_ok());
}

/// An online CPU outside the process's affinity (taskset, cpuset) is
/// refused by `check`: EAL would refuse it later with its usage text.
#[test]
fn cores_must_be_in_the_affinity() {
    let host = |allowed: &str| {
        Host::with_online_cpus("0-7")
            .unwrap()
            .with_allowed_cpus(allowed)
            .unwrap()
    };
    let on = |src: &str, allowed: &str| {
        Config::parse_with(src, "test.toml", Path::new("."), &host(allowed))
    };
    assert!(on(GOOD, "0-3").is_ok());
    let (line, field, msg) = invalid(on(GOOD, "0-1,3").unwrap_err());
    assert_eq!((line, field.as_str()), (26, "worker[1].core"));
    assert!(
        msg.starts_with("CPU 2 is outside this process's CPU affinity (allowed CPUs: 0-1,3;"),
        "{msg}"
    );
    let (line, field, _) = invalid(on(GOOD, "1-3").unwrap_err());
    assert_eq!((line, field.as_str()), (1, "eal.control_core"));
    let (line, field, msg) = invalid(on(&ring("core = 3", "core = 5"), "0-4").unwrap_err());
    assert_eq!((line, field.as_str()), (22, "distributor.core"));
    assert!(
        msg.contains("CPU 5 is outside this process's CPU affinity"),
        "{msg}"
    );
}

#[test]
fn worker_on_the_control_core_is_a_warning() {
    let (_, res) = parse_on(GOOD, "0-3").unwrap();
    assert!(res.warnings.is_empty(), "{:?}", res.warnings);
    let src = bad("memory_mb = 256", "memory_mb = 256\ncontrol_core = 1");
    let (_, res) = parse_on(&src, "0-3").unwrap();
    assert_eq!(res.warnings.len(), 1, "{:?}", res.warnings);
    let w = res.warnings[0].to_string();
    assert!(w.starts_with("test.toml:23:8: worker[0].core: "), "{w}");
    assert!(w.contains("CPU 1 is also eal.control_core"), "{w}");
}

/// GOOD with `[mempool]` lines (they land on line 10 onwards).
fn with_mempool(lines: &str) -> String {
    bad(
        "args = [\"--log-level=lib.eal:debug\"]\n",
        &format!("args = [\"--log-level=lib.eal:debug\"]\n\n[mempool]\n{lines}\n"),
    )
}

#[test]
fn mempool_limits_name_the_one_hit() {
    assert!(Config::parse(&with_mempool("mbufs = 384"), "t.toml").is_ok());
    let (line, field, msg) = err(&with_mempool("mbufs = 300"));
    assert_eq!((line, field.as_str()), (10, "mempool.mbufs"));
    assert!(
        msg.contains("300 mbufs is less than 1.5 × mempool.cache (256)")
            && msg.contains("at least 384"),
        "{msg}"
    );
    let (line, field, msg) = err(&with_mempool("cache = 600"));
    assert_eq!((line, field.as_str()), (10, "mempool.cache"));
    assert!(
        msg.contains("cache 600 is above DPDK's per-lcore maximum of 512"),
        "{msg}"
    );
    // mbufs = 0 sizes the pool itself: no minimum to check.
    assert!(Config::parse(&with_mempool("mbufs = 0\ncache = 512"), "t.toml").is_ok());
}

#[test]
fn data_room_must_hold_headroom_and_mtu() {
    let (line, field, msg) = err(&with_mempool("data_room = 128"));
    assert_eq!((line, field.as_str()), (10, "mempool.data_room"));
    assert!(msg.contains("128-byte mbuf headroom"), "{msg}");
    let (line, field, msg) = err(&with_mempool("data_room = 1600"));
    assert_eq!((line, field.as_str()), (10, "mempool.data_room"));
    assert!(
        msg.contains("port `p0` (MTU 1500, the default) needs mbufs with data_room ≥ 1650")
            && msg.contains("is 1600"),
        "{msg}"
    );
    assert!(Config::parse(&with_mempool("data_room = 1650"), "t.toml").is_ok());
    let jumbo = |mempool: &str| {
        with_mempool(mempool).replacen(
            "mac = \"02:00:00:00:00:aa\"",
            "mac = \"02:00:00:00:00:aa\"\nmtu = 9000",
            1,
        )
    };
    let (line, field, msg) = err(&jumbo("data_room = 2176"));
    assert_eq!((line, field.as_str()), (16, "port[0].mtu"));
    assert!(
        msg.contains("MTU 9000 needs mbufs with data_room ≥ 9150") && msg.contains("is 2176"),
        "{msg}"
    );
    // Unset, the data room is sized from the largest MTU (jumbo frames fit
    // one mbuf), never below DPDK's default.
    let (cfg, _) = Config::parse(&jumbo("cache = 256"), "t.toml").unwrap();
    assert_eq!(cfg.data_room(), 9150);
    assert_eq!(Config::parse(GOOD, "t.toml").unwrap().0.data_room(), 2176);
    assert_eq!(
        Config::parse(&with_mempool("data_room = 4096"), "t.toml")
            .unwrap()
            .0
            .data_room(),
        4096
    );
    // An MTU no mbuf holds.
    let huge = bad(
        "mac = \"02:00:00:00:00:aa\"",
        "mac = \"02:00:00:00:00:aa\"\nmtu = 65500",
    );
    let (line, field, msg) = err(&huge);
    assert_eq!((line, field.as_str()), (13, "port[0].mtu"));
    assert!(msg.contains("more than an mbuf holds"), "{msg}");
}

/// A port's MAC must be unicast: the L2 destination check compares
/// frames with it, and a group address would make every frame to that
/// group "for us".
#[test]
fn port_mac_must_be_unicast() {
    let (line, field, msg) = err(&bad(
        "mac = \"02:00:00:00:00:aa\"",
        "mac = \"03:00:00:00:00:aa\"",
    ));
    assert_eq!((line, field.as_str()), (12, "port[0].mac"));
    assert!(
        msg.contains("03:00:00:00:00:aa is a group (multicast) address"),
        "{msg}"
    );
}

#[test]
fn device_must_be_a_vdev_or_pci_address() {
    let (line, field, msg) = err(&bad("net_pcap0,rx_pcap=a.pcap", ",,,"));
    assert_eq!((line, field.as_str()), (11, "port[0].device"));
    assert!(
        msg.contains("`,,,` is neither a virtual device") && msg.contains("PCI address"),
        "{msg}"
    );
    let (line, field, msg) = err(&bad("net_pcap0,rx_pcap=a.pcap", "net_pcap0,rx_pcap"));
    assert_eq!((line, field.as_str()), (11, "port[0].device"));
    assert!(
        msg.contains("argument `rx_pcap` is not `key=value`"),
        "{msg}"
    );
    for ok in [
        "net_pcap0,rx_pcap=a.pcap,tx_pcap=b.pcap",
        "net_af_packet12,iface=veth0",
        "net_null0",
        "eth_pcap0,iface=lo",
        "0000:01:00.0",
        "0000:af:1f.7,txq_inline=128",
        "01:00.1",
    ] {
        assert_eq!(super::validate::check_device(ok), Ok(()), "{ok}");
    }
    for no in [
        ",,,",
        "net_pcap",
        "net_0",
        "pcap0",
        "NET_PCAP0",
        "0000:01:20.0",
        "0000:01:00.8",
        "1:00.0",
        "000:01:00.0",
        "0000:zz:00.0",
        "net_pcap0,,rx_pcap=a",
        "net_pcap0,=x",
    ] {
        assert!(super::validate::check_device(no).is_err(), "{no}");
    }
}

/// A vdev driver DPDK does not have failed only in EAL's start-up
/// (`failed to find driver`), an af_packet port without `iface` in the PMD.
#[test]
fn vdev_driver_must_exist_and_af_packet_needs_iface() {
    for ok in [
        "net_tap0,iface=dp0",
        "net_memif0,role=server",
        "net_ring0",
        "net_bonding0,mode=0",
        "eth_bond0,mode=0",
        "net_virtio_user0,path=/dev/vhost-net",
        "net_af_xdp0,iface=eth0",
    ] {
        assert_eq!(super::validate::check_device(ok), Ok(()), "{ok}");
    }
    let (line, field, msg) = err(&bad("net_pcap1,rx_pcap=b.pcap", "net_bogus1"));
    assert_eq!((line, field.as_str()), (18, "port[1].device"));
    assert!(
        msg.starts_with("`net_bogus1`: unknown virtual device driver `net_bogus` (DPDK's are net_af_packet, net_af_xdp,"),
        "{msg}"
    );
    let (_, _, msg) = err(&bad("net_pcap1,rx_pcap=b.pcap", "eth_tap1"));
    assert!(
        msg.contains("unknown virtual device driver `eth_tap`"),
        "{msg}"
    );
    let (line, field, msg) = err(&bad("net_pcap1,rx_pcap=b.pcap", "net_af_packet1,qpairs=1"));
    assert_eq!((line, field.as_str()), (18, "port[1].device"));
    assert_eq!(
        msg,
        "`net_af_packet1,qpairs=1`: net_af_packet needs `iface=<name>`, the kernel interface \
         it attaches to"
    );
}

/// A missing pcap input failed in EAL's start-up with neither the port nor
/// the config line named; with host facts `check` names them. (Unit tests
/// run in the package directory: `Cargo.toml` and `src/` exist there.)
#[test]
fn pcap_files_are_checked_against_the_host() {
    let host = Host::unknown().with_files(true);
    let on = |src: &str| Config::parse_with(src, "test.toml", Path::new("."), &host);
    let files = |p0: &str, p1: &str| {
        bad("net_pcap0,rx_pcap=a.pcap", p0).replace("net_pcap1,rx_pcap=b.pcap", p1)
    };
    assert!(on(&files(
        "net_pcap0,rx_pcap=Cargo.toml",
        "net_pcap1,rx_pcap=Cargo.toml,tx_pcap=src/o.pcap,tx_pcap=o.pcap"
    ))
    .is_ok());
    // Without host facts (`parse`, a reload) the files are not looked for.
    assert!(Config::parse(GOOD, "test.toml").is_ok());
    let (line, field, msg) = invalid(on(GOOD).unwrap_err());
    assert_eq!((line, field.as_str()), (11, "port[0].device"));
    assert!(
        msg.starts_with("`net_pcap0,rx_pcap=a.pcap`: rx_pcap file `a.pcap` does not exist (relative to the working directory "),
        "{msg}"
    );
    let (_, _, msg) = invalid(on(&files("net_pcap0,rx_pcap=src", "net_null1")).unwrap_err());
    assert!(
        msg.contains("rx_pcap `src` is a directory, not a pcap file"),
        "{msg}"
    );
    let src = files(
        "net_pcap0,rx_pcap=Cargo.toml",
        "net_pcap1,rx_pcap=Cargo.toml,tx_pcap=o.pcap,tx_pcap=no/such/o.pcap",
    );
    let (line, field, msg) = invalid(on(&src).unwrap_err());
    assert_eq!((line, field.as_str()), (18, "port[1].device"));
    assert!(
        msg.contains("tx_pcap `no/such/o.pcap`: directory `no/such` does not exist"),
        "{msg}"
    );
}

#[test]
fn too_little_eal_memory_for_the_route_tables_is_a_warning() {
    let low = router_bad(
        "pipeline = [\"acl\", \"route\"]\n",
        "pipeline = [\"acl\", \"route\"]\n[eal]\nmemory_mb = 256\n",
    );
    let (cfg, res) = Config::parse(&low, "r.toml").unwrap();
    let est = cfg.memory_estimate(&res);
    // Two rte_fib tables of 64 MiB tbl24 each, plus tbl8 groups and RIB.
    assert!((140..160).contains(&est.route_tables_mb), "{est:?}");
    assert_eq!(res.warnings.len(), 1, "{:?}", res.warnings);
    let w = res.warnings[0].to_string();
    assert!(
        w.starts_with("r.toml:3:13: eal.memory_mb: 256 MB is below"),
        "{w}"
    );
    assert!(
        w.contains(&format!("route tables ~{} MB", est.route_tables_mb)),
        "{w}"
    );
    let enough = low.replace("memory_mb = 256", "memory_mb = 512");
    assert!(Config::parse(&enough, "r.toml")
        .unwrap()
        .1
        .warnings
        .is_empty());
}

/// `eal.memory_mb` against the machine: with `hugepages = "on"` fewer free
/// hugepages (or none mounted) is an error at `memory_mb`, unless
/// `eal.args` turns hugepages off; `auto` and `off` are not; more than the
/// machine's memory is a warning; an unknown machine is not checked.
#[test]
fn eal_memory_is_checked_against_the_machine() {
    let cfg = |huge: &str, mb: u32, args: &str| {
        router_bad(
            "pipeline = [\"acl\", \"route\"]\n",
            &format!(
                "pipeline = [\"acl\", \"route\"]\n[eal]\nmemory_mb = {mb}\nhugepages = \"{huge}\"\nargs = [{args}]\n"
            ),
        )
    };
    let machine = |huge_free_mb, huge_mounted| {
        Host::unknown().with_memory(HostMemory {
            total_mb: 24_000,
            huge_free_mb,
            huge_mounted,
        })
    };
    let parse = |src: &str, host: &Host| Config::parse_with(src, "r.toml", Path::new("."), host);
    // Enough hugepages: fine in every mode.
    for huge in ["on", "auto", "off"] {
        let (_, res) = parse(&cfg(huge, 1024, ""), &machine(2048, true)).unwrap();
        assert!(res.warnings.is_empty(), "{huge}: {:?}", res.warnings);
    }
    // Too few, or none mounted: "on" is refused at memory_mb.
    for (free, mounted, says) in [
        (512, true, "512 MB of hugepages are free"),
        (4096, false, "no hugetlbfs is mounted"),
    ] {
        let e = parse(&cfg("on", 1024, ""), &machine(free, mounted)).unwrap_err();
        assert_eq!(
            (e.line(), e.field()),
            (Some(3), Some("eal.memory_mb")),
            "{e}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains("1024 MB with eal.hugepages = \"on\"") && msg.contains(says),
            "{msg}"
        );
        // `auto` runs without them, `off` never wants them, and `--no-huge`
        // in eal.args wins over "on".
        for ok in [
            cfg("auto", 1024, ""),
            cfg("off", 1024, ""),
            cfg("on", 1024, "\"--no-huge\""),
        ] {
            assert!(parse(&ok, &machine(free, mounted)).is_ok(), "{ok}");
        }
    }
    // More than the machine has: a warning.
    let (_, res) = parse(&cfg("off", 100_000, ""), &machine(0, false)).unwrap();
    assert_eq!(res.warnings.len(), 1, "{:?}", res.warnings);
    let w = res.warnings[0].to_string();
    assert!(
        w.starts_with(
            "r.toml:3:13: eal.memory_mb: 100000 MB is more than this machine's memory (24000 MB)"
        ),
        "{w}"
    );
    // Not known: not checked.
    assert!(Config::parse(&cfg("on", 1024, ""), "r.toml").is_ok());
}

/// Ring mode: two ports, two workers without `rx`, fed by a distributor.
const RING: &str = r#"pipeline = ["forward"]

[eal]
file_prefix = "t"
hugepages = "off"

[[port]]
name = "in"
device = "net_pcap0,rx_pcap=a.pcap"

[[port]]
name = "out"
device = "net_pcap1,rx_pcap=b.pcap"

[[worker]]
core = 1

[[worker]]
core = 2

[distributor]
core = 3
rx = ["in", "out"]
ring_size = 2048

[forward]
pairs = [["in", "out"]]
"#;

/// Replaces the first occurrence of `from` in RING.
fn ring(from: &str, to: &str) -> String {
    assert!(RING.contains(from), "{from}");
    RING.replacen(from, to, 1)
}

#[test]
fn ring_mode_resolves() {
    let (cfg, res) = Config::parse(RING, "ring.toml").unwrap();
    let d = res.distributor.as_ref().unwrap();
    assert_eq!(d.core, 3);
    assert_eq!(d.ports, vec![0, 1]);
    assert_eq!(d.workers, vec![0, 1]);
    assert_eq!(d.ring_size, 2048);
    assert_eq!(d.hash, DistributorHash::FiveTuple);
    assert_eq!(d.rings(), 4);
    assert_eq!(
        d.rx,
        vec![
            RxAssignment { port: 0, queue: 0 },
            RxAssignment { port: 1, queue: 0 }
        ]
    );
    assert!(res.worker_rx.iter().all(Vec::is_empty));
    assert_eq!(res.tx_queues, vec![2, 2], "each worker its own TX queue");
    // The rings' mbufs are in the pool (every ring full at once).
    assert!(cfg.mempool_size(&res) >= 4 * 2047 + 8192);
    let (args, _) = crate::daemon::eal_args(&cfg, &[]).unwrap();
    assert!(
        args.contains(&"--lcores=0@0,1@1,2@2,3@3".to_owned()),
        "{args:?}"
    );
    let (_, res) = Config::parse(
        &ring("ring_size = 2048", "hash = \"three_tuple\""),
        "r.toml",
    )
    .unwrap();
    let d = res.distributor.unwrap();
    assert_eq!((d.ring_size, d.hash), (1024, DistributorHash::ThreeTuple));
}

/// A distributor may feed some workers while others poll queues of their
/// own (a multi-queue NIC beside a single-queue device).
#[test]
fn ring_mode_beside_run_to_completion() {
    let src = ring(
        "[[worker]]\ncore = 2\n",
        "[[worker]]\ncore = 2\nrx = [\"out\"]\n",
    )
    .replace(
        "rx = [\"in\", \"out\"]\nring_size",
        "rx = [\"in\"]\nring_size",
    );
    let (_, res) = Config::parse(&src, "r.toml").unwrap();
    let d = res.distributor.unwrap();
    assert_eq!((d.workers, d.ports), (vec![0], vec![0]));
    assert_eq!(res.worker_rx[1], vec![RxAssignment { port: 1, queue: 0 }]);
}

fn ring_err(src: &str) -> (usize, String, String) {
    match Config::parse(src, "ring.toml") {
        Ok(_) => panic!("config should have failed:\n{src}"),
        Err(e) => invalid(e),
    }
}

#[test]
fn worker_without_rx_needs_a_distributor() {
    let src = ring(
        "[distributor]\ncore = 3\nrx = [\"in\", \"out\"]\nring_size = 2048\n",
        "",
    );
    let (line, field, msg) = ring_err(&src);
    assert_eq!((line, field.as_str()), (16, "worker[0].rx"));
    assert!(
        msg.contains("no `rx` and there is no [distributor]"),
        "{msg}"
    );
}

#[test]
fn worker_with_an_empty_rx_list() {
    let (line, field, msg) = ring_err(&ring("core = 2\n", "core = 2\nrx = []\n"));
    assert_eq!((line, field.as_str()), (20, "worker[1].rx"));
    assert!(msg.contains("at least one rx queue"), "{msg}");
}

#[test]
fn distributor_with_no_worker_to_feed() {
    let src = ring("core = 1\n", "core = 1\nrx = [\"in\"]\n")
        .replace("core = 2\n", "core = 2\nrx = [\"out\"]\n")
        .replace("rx = [\"in\", \"out\"]\nring_size", "rx = []\nring_size");
    let (line, field, msg) = ring_err(&src);
    assert_eq!((line, field.as_str()), (23, "distributor"));
    assert!(msg.contains("every [[worker]] has one"), "{msg}");
}

#[test]
fn distributor_rx_errors() {
    let (line, field, msg) = ring_err(&ring("rx = [\"in\", \"out\"]", "rx = []"));
    assert_eq!((line, field.as_str()), (23, "distributor.rx"));
    assert!(msg.contains("at least one rx queue"), "{msg}");
    let (line, field, msg) = ring_err(&ring("rx = [\"in\", \"out\"]", "rx = [\"in\", \"nope\"]"));
    assert_eq!((line, field.as_str()), (23, "distributor.rx"));
    assert!(
        msg.contains("unknown port `nope` (ports: in, out)"),
        "{msg}"
    );
    let (line, field, msg) = ring_err(&ring("rx = [\"in\", \"out\"]", "rx = [\"in:1\"]"));
    assert_eq!((line, field.as_str()), (23, "distributor.rx"));
    assert!(
        msg.contains("port `in` has 1 rx queue(s); queue 1 does not exist"),
        "{msg}"
    );
    let (_, field, msg) = ring_err(&ring("rx = [\"in\", \"out\"]", "rx = [\"in:x\"]"));
    assert_eq!(field, "distributor.rx");
    assert!(msg.contains("queue `x` is not a number"), "{msg}");
    let (_, field, msg) = ring_err(&ring("rx = [\"in\", \"out\"]", "rx = [\"in\", \"in:0\"]"));
    assert_eq!(field, "distributor.rx");
    assert!(
        msg.contains("rx queue in:0 is already polled by the distributor"),
        "{msg}"
    );
    // A queue a worker polls.
    let src = ring("core = 2\n", "core = 2\nrx = [\"out\"]\n");
    let (line, field, msg) = ring_err(&src);
    assert_eq!((line, field.as_str()), (24, "distributor.rx"));
    assert!(
        msg.contains("rx queue out:0 is already polled by worker[1]"),
        "{msg}"
    );
    // A queue nobody polls.
    let src = ring(
        "device = \"net_pcap0,rx_pcap=a.pcap\"",
        "device = \"net_pcap0\"\nrx_queues = 2",
    );
    let (_, field, msg) = ring_err(&src);
    assert_eq!(field, "port[0].rx_queues");
    assert!(
        msg.contains("rx queue in:1 is polled by no worker"),
        "{msg}"
    );
}

#[test]
fn ring_size_must_be_a_power_of_two_in_range() {
    for bad_size in ["1000", "32", "131072", "0"] {
        let (line, field, msg) = ring_err(&ring("2048", bad_size));
        assert_eq!(
            (line, field.as_str()),
            (24, "distributor.ring_size"),
            "{bad_size}"
        );
        assert!(
            msg.contains("must be a power of two from 64 to 65536"),
            "{msg}"
        );
    }
    let (line, field, _) = ring_err(&ring("2048", "-1"));
    assert_eq!((line, field.as_str()), (24, "distributor.ring_size"));
}

#[test]
fn distributor_section_keys() {
    let (line, field, msg) = ring_err(&ring("ring_size = 2048", "ring_size = 2048\nbatch = 4"));
    assert_eq!((line, field.as_str()), (25, "distributor.batch"));
    assert!(msg.contains("unknown field `batch`"), "{msg}");
    let (line, field, msg) = ring_err(&ring("ring_size = 2048", "hash = \"crc\""));
    assert_eq!((line, field.as_str()), (24, "distributor.hash"));
    assert!(msg.contains("unknown variant `crc`"), "{msg}");
    let (_, _, msg) = ring_err(&ring("core = 3\n", ""));
    assert!(msg.contains("missing field `core`"), "{msg}");
}

#[test]
fn distributor_core_is_checked_against_the_host() {
    assert!(parse_on(RING, "0-3").is_ok());
    let (line, field, msg) = invalid(parse_on(&ring("core = 3", "core = 7"), "0-3").unwrap_err());
    assert_eq!((line, field.as_str()), (22, "distributor.core"));
    assert!(
        msg.contains("CPU 7 does not exist or is offline (online CPUs: 0-3)"),
        "{msg}"
    );
    // Sharing a CPU with a worker or the control thread: warnings.
    let (_, res) = parse_on(RING, "0-3").unwrap();
    assert!(res.warnings.is_empty(), "{:?}", res.warnings);
    let (_, res) = parse_on(&ring("core = 3", "core = 2"), "0-3").unwrap();
    let w: Vec<String> = res.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("test.toml:22:8: distributor.core: CPU 2 is also worker[1].core"),
        "{w:?}"
    );
    let (_, res) = parse_on(&ring("core = 3", "core = 0"), "0-3").unwrap();
    let w: Vec<String> = res.warnings.iter().map(ToString::to_string).collect();
    assert!(
        w.iter()
            .any(|w| w.contains("distributor.core: CPU 0 is also eal.control_core")),
        "{w:?}"
    );
}

/// Each worker transmits on a TX queue of its own, and `net_pcap` makes one
/// per TX file: a port with fewer files than workers is a `check` error
/// (without any, DPDK decides).
#[test]
fn pcap_port_needs_a_tx_file_per_worker() {
    let src = ring("rx_pcap=a.pcap\"", "rx_pcap=a.pcap,tx_pcap=o.pcap\"");
    let (line, field, msg) = ring_err(&src);
    assert_eq!((line, field.as_str()), (9, "port[0].device"));
    assert!(
        msg.contains("(1 here) and this port needs 2 (one per worker)"),
        "{msg}"
    );
    let two = ring(
        "rx_pcap=a.pcap\"",
        "rx_pcap=a.pcap,tx_pcap=o0.pcap,tx_pcap=o1.pcap\"",
    );
    assert!(Config::parse(&two, "r.toml").is_ok());
    assert_eq!(
        super::validate::pcap_tx_files("net_pcap3,iface=eth0"),
        Some(1)
    );
    assert_eq!(super::validate::pcap_tx_files("net_null0,tx_pcap=x"), None);
}

/// More ports than DPDK can hold (and the workers' TX buffers are sized
/// for) is refused at check, at the first port too many.
#[test]
fn more_ports_than_dpdk_holds() {
    let extra: String = (2..=crate::dpdk::port::MAX_PORTS)
        .map(|i| format!("[[port]]\nname = \"x{i}\"\ndevice = \"net_null{i}\"\n\n"))
        .collect();
    let src = bad(
        "[[worker]]\ncore = 1",
        &format!("{extra}[[worker]]\ncore = 1"),
    );
    let (line, field, message) = err(&src);
    let at = src
        .lines()
        .position(|l| l == format!("name = \"x{}\"", crate::dpdk::port::MAX_PORTS))
        .unwrap()
        + 1;
    let max = crate::dpdk::port::MAX_PORTS;
    assert_eq!((line, field), (at, format!("port[{max}]")));
    assert!(message.contains(&format!("at most {max}")), "{message}");
}

/// A file prefix becomes EAL's directory and hugepage file names: `..`, a
/// `/`, nothing or too much is refused where it is written.
/// `eal.args` are EAL's own options and none the config sets otherwise:
/// each mistake is named at its argument's line (the rules and messages:
/// `validate::eal_args`'s tests).
#[test]
fn eal_args_are_checked_where_they_stand() {
    let args = |list: &str| {
        bad(
            "args = [\"--log-level=lib.eal:debug\"]",
            &format!("args = [\n  {list}\n]"),
        )
    };
    let (line, field, msg) = err(&args("\"--no-huge\",\n  \"--huge-dri\", \"/mnt\""));
    assert_eq!((line, field.as_str()), (9, "eal.args[1]"));
    assert!(
        msg.contains("`--huge-dri` is not an EAL option (did you mean `--huge-dir`?)"),
        "{msg}"
    );
    let (line, field, msg) = err(&args("\"-l\", \"0-1\""));
    assert_eq!((line, field.as_str()), (8, "eal.args[0]"));
    assert!(msg.contains("[[worker]] core"), "{msg}");
    assert!(Config::parse(
        &args("\"--no-huge\", \"-n\", \"4\", \"--iova-mode=va\""),
        "t.toml"
    )
    .is_ok());
}

#[test]
fn file_prefix_must_be_a_plain_name() {
    for prefix in ["../x", "a/b", "", ".hidden", "sp ace"] {
        let src = bad(
            "file_prefix = \"t\"",
            &format!("file_prefix = \"{prefix}\""),
        );
        let (line, field, msg) = err(&src);
        assert_eq!(
            (line, field.as_str()),
            (4, "eal.file_prefix"),
            "{prefix}: {msg}"
        );
        assert!(msg.contains("file prefix"), "{msg}");
    }
    let long = "p".repeat(65);
    let (_, field, msg) = err(&bad(
        "file_prefix = \"t\"",
        &format!("file_prefix = \"{long}\""),
    ));
    assert_eq!(field, "eal.file_prefix");
    assert!(msg.contains("1 to 64"), "{msg}");
    let (line, field, _) = err(&bad(
        "args = [\"--log-level=lib.eal:debug\"]",
        "args = [\"--file-prefix=../y\"]",
    ));
    assert_eq!((line, field.as_str()), (7, "eal.args[0]"));
    for ok in ["dp-test_1.a", "t"] {
        let src = bad("file_prefix = \"t\"", &format!("file_prefix = \"{ok}\""));
        Config::parse(&src, "test.toml").unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
}

/// A TOML syntax error is one line, with its place and a field name.
#[test]
fn a_syntax_error_is_one_line_with_its_place() {
    let e = Config::parse("pipeline = [\"forward\"\n", "m.toml")
        .unwrap_err()
        .to_string();
    assert!(!e.contains('\n'), "{e}");
    assert!(e.starts_with("m.toml:"), "{e}");
    assert!(!e.contains(": : "), "an empty field: {e}");
}

/// An MTU below what IP allows is refused where it is written.
#[test]
fn mtu_has_ips_minimum() {
    let (_, field, msg) = err(&bad("rx_queues = 2", "rx_queues = 2\nmtu = 0"));
    assert_eq!(field, "port[1].mtu");
    assert!(msg.contains("below 68"), "{msg}");
    // p0 has an IPv6 address: 1280 at least.
    let (_, field, msg) = err(&bad(
        "ipv6 = [\"2001:db8::1/64\"]",
        "ipv6 = [\"2001:db8::1/64\"]\nmtu = 1279",
    ));
    assert_eq!(field, "port[0].mtu");
    assert!(msg.contains("below 1280"), "{msg}");
    Config::parse(
        &bad("rx_queues = 2", "rx_queues = 2\nmtu = 68"),
        "test.toml",
    )
    .unwrap();
}

/// Table capacities the tables would refuse at start are refused by `check`.
#[test]
fn route_capacities_are_in_range() {
    for (key, v) in [
        ("max_routes", "0"),
        ("max_routes6", "4294967295"),
        ("neighbor_capacity", "4294967295"),
        ("neighbor_capacity", "7"),
    ] {
        let src = router_bad("[route]", &format!("[route]\n{key} = {v}"));
        let (_, field, msg) = err(&src);
        assert_eq!(field, format!("route.{key}"), "{msg}");
        assert!(msg.contains("is not in"), "{msg}");
    }
}
