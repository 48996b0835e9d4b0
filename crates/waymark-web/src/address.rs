//! Which IP addresses a web fetch may connect to: the public internet only. Loopback,
//! private and shared ranges, link-local (where cloud metadata services answer), multicast,
//! reserved and unspecified addresses are this machine's or its network's, so a fetch there
//! is a request forgery, not a read of the web. An IPv6 address that carries an IPv4 one
//! (mapped, compatible, 6to4, NAT64, Teredo) is judged by the IPv4 address it reaches.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `ip` is not on the public internet, or `None` when it is.
pub fn private_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_kind(v4),
        IpAddr::V6(v6) => v6_kind(v6),
    }
}

fn v4_kind(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, _, _) => "an unspecified (\"this network\") address",
        (127, _, _) => "a loopback address",
        (10, _, _) | (192, 168, _) => "a private address",
        (172, b, _) if (16..32).contains(&b) => "a private address",
        (100, b, _) if (64..128).contains(&b) => "a shared (carrier-grade NAT) address",
        (169, 254, _) => "a link-local address (cloud metadata services answer there)",
        (192, 0, 0) => "an IETF protocol address (some cloud metadata services answer there)",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "a documentation address",
        (198, 18 | 19, _) => "a benchmarking address",
        (224..=239, _, _) => "a multicast address",
        (240..=255, _, _) => "a reserved or broadcast address",
        _ => return None,
    })
}

fn v6_kind(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = embedded_v4(ip) {
        return v4_kind(v4);
    }
    let s = ip.segments();
    Some(match s[0] {
        _ if ip.is_unspecified() => "an unspecified address",
        _ if ip.is_loopback() => "a loopback address",
        x if x & 0xfe00 == 0xfc00 => "a unique-local (private) address",
        x if x & 0xffc0 == 0xfe80 => "a link-local address",
        x if x & 0xffc0 == 0xfec0 => "a site-local (private) address",
        x if x & 0xff00 == 0xff00 => "a multicast address",
        0x0100 if s[1..4] == [0, 0, 0] => "a discard-only address",
        0x2001 if s[1] == 0x0db8 => "a documentation address",
        0 => "a reserved address",
        _ => return None,
    })
}

/// The IPv4 address an IPv6 one carries and reaches: IPv4-mapped (`::ffff:a.b.c.d`),
/// IPv4-compatible (`::a.b.c.d`), 6to4 (`2002:AABB:CCDD::/48`), NAT64 (`64:ff9b::/96` and the
/// local-use `64:ff9b:1::/48`) and Teredo (`2001:0::/32`, its client address inverted).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let from = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match s {
        [0, 0, 0, 0, 0, 0xffff, hi, lo] => Some(from(hi, lo)),
        // `::` and `::1` are themselves, not 0.0.0.0 and 0.0.0.1.
        [0, 0, 0, 0, 0, 0, hi, lo] if hi != 0 => Some(from(hi, lo)),
        [0x2002, hi, lo, ..] => Some(from(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] | [0x64, 0xff9b, 1, _, _, _, hi, lo] => {
            Some(from(hi, lo))
        }
        [0x2001, 0, _, _, _, _, hi, lo] => Some(from(!hi, !lo)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(s: &str) -> Option<&'static str> {
        private_kind(s.parse().unwrap())
    }

    /// Every kind of address that reaches this machine or its network is refused; these
    /// tests only parse addresses and never connect.
    #[test]
    fn addresses_of_this_machine_and_its_networks_are_refused() {
        for (addr, why) in [
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("0.0.0.0", "unspecified"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("100.64.0.1", "shared"),
            ("169.254.169.254", "metadata"),
            ("169.254.0.1", "link-local"),
            ("192.0.0.192", "metadata"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fc00::1", "unique-local"),
            ("fd00:ec2::254", "unique-local"),
            ("fe80::1", "link-local"),
            ("fec0::1", "site-local"),
            ("ff02::1", "multicast"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "metadata"),
            ("::ffff:10.0.0.1", "private"),
            ("::127.0.0.1", "loopback"),
            ("2002:7f00:1::", "loopback"),
            ("2002:a9fe:a9fe::1", "metadata"),
            ("64:ff9b::a9fe:a9fe", "metadata"),
            ("64:ff9b::7f00:1", "loopback"),
            ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"),
        ] {
            let got = kind(addr);
            assert!(got.is_some(), "{addr} ({why}) was let through");
            let said = got.unwrap();
            assert!(said.contains(why), "{addr}: {said}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for addr in [
            "1.1.1.1",
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "169.253.1.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert_eq!(kind(addr), None, "{addr}");
        }
    }
}
