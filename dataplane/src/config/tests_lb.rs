//! `[lb]` checks: each refusal names the file, line and field.
use super::*;

const LB: &str = r#"pipeline = ["lb", "route"]

[[port]]
name = "client"
device = "net_null0"
ipv4 = ["192.0.2.1/24"]

[[port]]
name = "dc"
device = "net_null1"
ipv4 = ["10.1.0.1/16"]

[[worker]]
core = 1
rx = ["client", "dc"]

[route]
[[route.static]]
prefix = "10.2.0.0/16"
via = "10.1.0.2"

[[lb.service]]
vip = "198.18.0.10"
proto = "tcp"
port = 80
source = "10.1.0.1"

[[lb.service.backend]]
address = "10.2.0.1"

[[lb.service.backend]]
address = "10.2.0.2"
weight = 3

[[lb.service]]
name = "dns"
vip = "198.18.0.53"
proto = "udp"
method = "dsr"

[[lb.service.backend]]
address = "10.1.0.53"
mac = "02:00:00:00:53:01"
"#;

/// `LB` with the first `from` replaced: its error's line, field, message.
fn lb_err(from: &str, to: &str) -> (usize, String, String) {
    assert!(LB.contains(from), "{from}");
    let src = LB.replacen(from, to, 1);
    match Config::parse(&src, "lb.toml") {
        Ok(_) => panic!("config should have failed:\n{src}"),
        Err(ConfigError::Invalid {
            line,
            field,
            message,
            ..
        }) => (line, field, message),
        Err(e) => panic!("unexpected error {e}"),
    }
}

fn line_of(needle: &str) -> usize {
    LB.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn a_good_lb_config_resolves() {
    let (_, res) = Config::parse(LB, "lb.toml").unwrap();
    let lb = res.lb.unwrap();
    assert_eq!(lb.services.len(), 2);
    let web = &lb.services[0];
    assert_eq!(web.name, "198.18.0.10:80/6");
    assert_eq!(web.table_size, 65_537);
    assert_eq!(web.backends[1].weight, 3);
    let dns = &lb.services[1];
    assert_eq!(dns.key.port, 0, "every port");
    assert_eq!(
        dns.backends[0].port,
        Some(1),
        "the dc port's subnet holds it"
    );
    assert_eq!(lb.conntrack_capacity, LbSection::DEFAULT_CONNTRACK);
}

#[test]
fn lb_needs_route_after_it() {
    let (_, field, msg) = lb_err(
        r#"pipeline = ["lb", "route"]"#,
        r#"pipeline = ["route", "lb"]"#,
    );
    assert_eq!(field, "pipeline");
    assert!(
        msg.contains("`lb` needs a later stage that forwards"),
        "{msg}"
    );
}

#[test]
fn lb_section_without_the_stage() {
    let (line, field, msg) = lb_err(r#"pipeline = ["lb", "route"]"#, r#"pipeline = ["route"]"#);
    assert_eq!(field, "lb");
    assert_eq!(line, line_of("198.18.0.10"));
    assert!(msg.contains("not in the pipeline"), "{msg}");
}

#[test]
fn bad_vip() {
    let (line, field, msg) = lb_err(r#"vip = "198.18.0.10""#, r#"vip = "198.18.0""#);
    assert_eq!(
        (line, field.as_str()),
        (line_of("198.18.0.10"), "lb.service[0].vip")
    );
    assert!(msg.contains("not an IPv4 or IPv6 address"), "{msg}");
    let (_, field, _) = lb_err(r#"vip = "198.18.0.10""#, r#"vip = "224.0.0.1""#);
    assert_eq!(field, "lb.service[0].vip");
}

#[test]
fn table_size_must_be_prime_and_large_enough() {
    let (line, field, msg) = lb_err(r#"port = 80"#, "port = 80\ntable_size = 65536");
    assert_eq!(field, "lb.service[0].table_size");
    assert_eq!(line, line_of("port = 80") + 1);
    assert!(msg.contains("not prime") && msg.contains("65537"), "{msg}");
    let (_, field, msg) = lb_err(r#"port = 80"#, "port = 80\ntable_size = 1");
    assert_eq!(field, "lb.service[0].table_size");
    assert!(msg.contains("prime"), "{msg}");
    let three = LB
        .replacen("port = 80", "port = 80\ntable_size = 2", 1)
        .replacen(
            "weight = 3",
            "weight = 3\n[[lb.service.backend]]\naddress = \"10.2.0.3\"",
            1,
        );
    let Err(ConfigError::Invalid { field, message, .. }) = Config::parse(&three, "lb.toml") else {
        panic!("accepted")
    };
    assert_eq!(field, "lb.service[0].table_size");
    assert!(message.contains("3 backends"), "{message}");
}

#[test]
fn a_small_table_is_warned_about() {
    let src = LB.replacen("port = 80", "port = 80\ntable_size = 101", 1);
    let (_, res) = Config::parse(&src, "lb.toml").unwrap();
    assert!(res
        .warnings
        .iter()
        .any(|w| w.to_string().contains("more than 100 entries per backend")));
}

#[test]
fn ipip_needs_a_source_of_the_vips_family() {
    let (_, field, msg) = lb_err("source = \"10.1.0.1\"\n", "");
    assert_eq!(field, "lb.service[0].source");
    assert!(msg.contains("needs `source`"), "{msg}");
    let (line, field, msg) = lb_err(r#"source = "10.1.0.1""#, r#"source = "2001:db8::1""#);
    assert_eq!(
        (line, field.as_str()),
        (line_of("source ="), "lb.service[0].source")
    );
    assert!(msg.contains("family"), "{msg}");
}

#[test]
fn backends_are_of_the_vips_family_and_listed_once() {
    let (line, field, msg) = lb_err(r#"address = "10.2.0.1""#, r#"address = "2001:db8::5""#);
    assert_eq!(
        (line, field.as_str()),
        (line_of("10.2.0.1"), "lb.service[0].backend[0].address")
    );
    assert!(msg.contains("family"), "{msg}");
    let (_, field, msg) = lb_err(r#"address = "10.2.0.2""#, r#"address = "10.2.0.1""#);
    assert_eq!(field, "lb.service[0].backend[1].address");
    assert!(msg.contains("listed twice"), "{msg}");
}

#[test]
fn ports_need_a_protocol_with_ports() {
    let (_, field, msg) = lb_err("proto = \"tcp\"\nport = 80", "proto = \"icmp\"\nport = 80");
    assert_eq!(field, "lb.service[0].port");
    assert!(msg.contains("no ports"), "{msg}");
    let (_, field, _) = lb_err("port = 80", "port = 0");
    assert_eq!(field, "lb.service[0].port");
}

#[test]
fn service_names_are_unique() {
    let (line, field, msg) = lb_err(
        "[[lb.service]]\nvip = \"198.18.0.10\"",
        "[[lb.service]]\nname = \"dns\"\nvip = \"198.18.0.10\"",
    );
    assert_eq!(field, "lb.service[1].name");
    assert_eq!(line, line_of("198.18.0.53") + 1, "one line added above it");
    assert!(msg.contains("`dns` is used twice"), "{msg}");
}

#[test]
fn a_service_is_configured_once() {
    let src = LB
        .replacen(r#"vip = "198.18.0.53""#, r#"vip = "198.18.0.10""#, 1)
        .replacen("proto = \"udp\"", "proto = \"tcp\"\nport = 80", 1);
    let Err(ConfigError::Invalid { field, message, .. }) = Config::parse(&src, "lb.toml") else {
        panic!("accepted")
    };
    assert_eq!(field, "lb.service[1].vip");
    assert!(message.contains("configured twice"), "{message}");
}

#[test]
fn dsr_needs_a_mac_and_a_port() {
    let (_, field, msg) = lb_err("mac = \"02:00:00:00:53:01\"\n", "");
    assert_eq!(field, "lb.service[1].backend[0].mac");
    assert!(msg.contains("needs each backend's `mac`"), "{msg}");
    let (_, field, msg) = lb_err(r#"address = "10.1.0.53""#, r#"address = "10.9.0.53""#);
    assert_eq!(field, "lb.service[1].backend[0].port");
    assert!(msg.contains("no port's subnet"), "{msg}");
    let (_, field, msg) = lb_err(
        "mac = \"02:00:00:00:53:01\"",
        "mac = \"02:00:00:00:53:01\"\nport = \"nope\"",
    );
    assert_eq!(field, "lb.service[1].backend[0].port");
    assert!(msg.contains("unknown port"), "{msg}");
}

/// Keys the service's method does not use are refused, not ignored.
#[test]
fn keys_of_the_other_method_are_refused() {
    let (_, field, msg) = lb_err(
        "method = \"dsr\"",
        "method = \"dsr\"\nsource = \"10.1.0.1\"",
    );
    assert_eq!(field, "lb.service[1].source");
    assert!(msg.contains("has none"), "{msg}");
    let (_, field, msg) = lb_err(
        r#"address = "10.2.0.1""#,
        "address = \"10.2.0.1\"\nmac = \"02:00:00:00:00:09\"",
    );
    assert_eq!(field, "lb.service[0].backend[0].mac");
    assert!(msg.contains("for method \"dsr\""), "{msg}");
}

#[test]
fn vips_backends_and_macs_must_be_others() {
    let (_, field, msg) = lb_err(r#"vip = "198.18.0.10""#, r#"vip = "10.1.0.1""#);
    assert_eq!(field, "lb.service[0].vip");
    assert!(msg.contains("own address"), "{msg}");
    for addr in ["198.18.0.10", "10.1.0.1"] {
        let (line, field, msg) =
            lb_err(r#"address = "10.2.0.1""#, &format!("address = \"{addr}\""));
        assert_eq!(
            (line, field.as_str()),
            (line_of("10.2.0.1"), "lb.service[0].backend[0].address")
        );
        assert!(msg.contains("no backend"), "{addr}: {msg}");
    }
    let (_, field, msg) = lb_err("mac = \"02:00:00:00:53:01\"", "mac = \"ff:ff:ff:ff:ff:ff\"");
    assert_eq!(field, "lb.service[1].backend[0].mac");
    assert!(msg.contains("unicast"), "{msg}");
}

#[test]
fn conntrack_capacity_and_timeouts() {
    let (_, field, msg) = lb_err(
        "[[lb.service]]\nvip",
        "[lb]\nconntrack_capacity = 3\n[[lb.service]]\nvip",
    );
    assert_eq!(field, "lb.conntrack_capacity");
    assert!(msg.contains("not in 16"), "{msg}");
    let (_, field, _) = lb_err(
        "[[lb.service]]\nvip",
        "[lb]\nudp_timeout_s = 0\n[[lb.service]]\nvip",
    );
    assert_eq!(field, "lb.udp_timeout_s");
}
