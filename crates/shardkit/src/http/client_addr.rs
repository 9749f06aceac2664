//! The client's address as every per-client decision sees it (creation rate limit,
//! password attempts, the key-check throttle, a click's country and analytics).
//!
//! Without `[http] trusted_proxies` it is the connection's peer, and forwarding headers
//! are ignored: anyone can write them. With it, a request whose peer is one of those
//! proxies is taken to come from the address the proxies recorded: the `Forwarded`
//! header's `for=` hops (RFC 7239) or, without one, `X-Forwarded-For`'s, read from the
//! right (the hop the nearest proxy added) past every trusted address, so a client
//! cannot choose its address by sending a forged header through the proxy. This is
//! nginx's `real_ip_recursive on` and Shlink's trusted-proxies rule.

use axum::extract::ConnectInfo;
use axum::http::header::FORWARDED;
use axum::http::HeaderMap;
use ipnet::IpNet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// The `X-Forwarded-For` header (not among `http`'s named headers).
const X_FORWARDED_FOR: &str = "x-forwarded-for";
/// The `X-Forwarded-Proto` header.
const X_FORWARDED_PROTO: &str = "x-forwarded-proto";

/// The connection's peer (unspecified when the server runs without connect info, as
/// in tests that call the router directly).
pub fn peer(extensions: &axum::http::Extensions) -> IpAddr {
    extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
        .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
}

/// The client's address: the peer unless it is a trusted proxy, then the right-most
/// hop of the forwarding header that is not a trusted proxy. A hop that is no address
/// (`unknown`, an obfuscated `_name`, garbage) ends the walk: the address before it,
/// the proxy that recorded it, is as far as anything can be known. Every hop trusted:
/// the left-most.
pub fn client(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    if trusted.is_empty() || !is_trusted(peer, trusted) {
        return peer;
    }
    let hops = forwarded_for(headers);
    let mut last = peer;
    for hop in hops.iter().rev() {
        match hop {
            Some(ip) if is_trusted(*ip, trusted) => last = *ip,
            Some(ip) => return *ip,
            None => return last,
        }
    }
    last
}

/// The scheme the client used, as a trusted proxy says (`Forwarded: proto=` or
/// `X-Forwarded-Proto`); `None` from anyone else or when no proxy said.
pub fn forwarded_proto(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> Option<String> {
    if trusted.is_empty() || !is_trusted(peer, trusted) {
        return None;
    }
    let from_forwarded = headers
        .get_all(FORWARDED)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|element| param(element, "proto"))
        .next_back();
    let proto = from_forwarded.or_else(|| {
        headers
            .get_all(X_FORWARDED_PROTO)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|s| s.trim().to_string())
            .next()
    })?;
    let proto = proto.to_ascii_lowercase();
    matches!(proto.as_str(), "http" | "https").then_some(proto)
}

fn is_trusted(ip: IpAddr, trusted: &[IpNet]) -> bool {
    let ip = ip.to_canonical();
    trusted.iter().any(|net| net.contains(&ip))
}

/// The hops the proxies recorded, oldest first: `Forwarded`'s `for=` values when that
/// header is present, else `X-Forwarded-For`'s; each header line in order.
fn forwarded_for(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    let lines = |name| {
        headers
            .get_all(name)
            .iter()
            .map(|v| v.to_str().unwrap_or(""))
            .collect::<Vec<_>>()
    };
    let forwarded = lines(FORWARDED.as_str());
    if !forwarded.is_empty() {
        return forwarded
            .iter()
            .flat_map(|line| line.split(','))
            .map(|element| param(element, "for").and_then(|v| node_ip(&v)))
            .collect();
    }
    lines(X_FORWARDED_FOR)
        .iter()
        .flat_map(|line| line.split(','))
        .map(|hop| node_ip(hop.trim()))
        .collect()
}

/// The value of `name` in one `Forwarded` element (`for=…;proto=…;by=…`), unquoted.
fn param(element: &str, name: &str) -> Option<String> {
    element.split(';').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then(|| value.trim().trim_matches('"').to_string())
    })
}

/// An address from a hop as proxies write it: `192.0.2.43`, `192.0.2.43:47011`,
/// `2001:db8::17`, `[2001:db8::17]:4711`; `None` for `unknown`, `_hidden` and the like.
fn node_ip(hop: &str) -> Option<IpAddr> {
    if let Some(rest) = hop.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(ip);
    }
    hop.parse::<SocketAddr>().ok().map(|a| a.ip())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().map(|n| n.parse().unwrap()).collect()
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(*name, HeaderValue::from_str(value).unwrap());
        }
        h
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn headers_count_only_from_trusted_proxies() {
        let h = headers(&[("x-forwarded-for", "203.0.113.9")]);
        // No trusted proxies: the header is anyone's to write.
        assert_eq!(client(ip("10.0.0.5"), &h, &[]), ip("10.0.0.5"));
        // A peer outside the trusted ranges: ignored likewise.
        let trusted = nets(&["10.0.0.0/8"]);
        assert_eq!(client(ip("192.0.2.1"), &h, &trusted), ip("192.0.2.1"));
        assert_eq!(client(ip("10.0.0.5"), &h, &trusted), ip("203.0.113.9"));
        // A trusted peer that forwarded nothing is the client.
        assert_eq!(
            client(ip("10.0.0.5"), &HeaderMap::new(), &trusted),
            ip("10.0.0.5")
        );
    }

    #[test]
    fn the_right_most_untrusted_hop_wins_so_a_forged_left_part_is_ignored() {
        let trusted = nets(&["10.0.0.0/8", "127.0.0.1/32"]);
        // The client forged "1.2.3.4"; its proxy appended the real peer, 198.51.100.7,
        // and an inner proxy 10.1.1.1 appended its own peer.
        let h = headers(&[("x-forwarded-for", "1.2.3.4, 198.51.100.7, 10.1.1.1")]);
        assert_eq!(client(ip("127.0.0.1"), &h, &trusted), ip("198.51.100.7"));
        // Several header lines are one list, in order.
        let h = headers(&[
            ("x-forwarded-for", "1.2.3.4"),
            ("x-forwarded-for", "198.51.100.7, 10.1.1.1"),
        ]);
        assert_eq!(client(ip("127.0.0.1"), &h, &trusted), ip("198.51.100.7"));
        // Every hop trusted: the left-most.
        let h = headers(&[("x-forwarded-for", "10.9.9.9, 10.1.1.1")]);
        assert_eq!(client(ip("127.0.0.1"), &h, &trusted), ip("10.9.9.9"));
        // A hop that is no address stops the walk at the proxy that recorded it.
        let h = headers(&[("x-forwarded-for", "198.51.100.7, garbage, 10.1.1.1")]);
        assert_eq!(client(ip("127.0.0.1"), &h, &trusted), ip("10.1.1.1"));
    }

    #[test]
    fn forwarded_is_read_before_x_forwarded_for_in_every_form_rfc_7239_shows() {
        let trusted = nets(&["10.0.0.0/8"]);
        for (value, expect) in [
            ("for=192.0.2.43", "192.0.2.43"),
            ("For=\"[2001:db8:cafe::17]:4711\"", "2001:db8:cafe::17"),
            ("for=\"192.0.2.43:47011\";proto=https", "192.0.2.43"),
            (
                "for=192.0.2.43, for=198.51.100.17;by=10.0.0.1",
                "198.51.100.17",
            ),
            ("for=198.51.100.17, for=10.2.2.2", "198.51.100.17"),
            ("for=unknown, for=10.2.2.2", "10.2.2.2"),
            ("for=_hidden", "10.0.0.1"),
        ] {
            let h = headers(&[("forwarded", value), ("x-forwarded-for", "203.0.113.1")]);
            assert_eq!(client(ip("10.0.0.1"), &h, &trusted), ip(expect), "{value}");
        }
        // An IPv4-mapped IPv6 peer is the IPv4 address it maps.
        let h = headers(&[("x-forwarded-for", "203.0.113.1")]);
        assert_eq!(
            client(ip("::ffff:10.0.0.1"), &h, &trusted),
            ip("203.0.113.1")
        );
    }

    #[test]
    fn the_scheme_comes_from_a_trusted_proxy_only() {
        let trusted = nets(&["10.0.0.0/8"]);
        let h = headers(&[("x-forwarded-proto", "HTTPS")]);
        assert_eq!(
            forwarded_proto(ip("10.0.0.1"), &h, &trusted).as_deref(),
            Some("https")
        );
        assert_eq!(forwarded_proto(ip("192.0.2.1"), &h, &trusted), None);
        assert_eq!(forwarded_proto(ip("10.0.0.1"), &h, &[]), None);
        let h = headers(&[("forwarded", "for=1.2.3.4;proto=http")]);
        assert_eq!(
            forwarded_proto(ip("10.0.0.1"), &h, &trusted).as_deref(),
            Some("http")
        );
        let h = headers(&[("x-forwarded-proto", "gopher")]);
        assert_eq!(forwarded_proto(ip("10.0.0.1"), &h, &trusted), None);
    }
}
