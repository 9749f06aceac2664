//! A tiny MaxMind DB writer for tests: an IPv4 database (24-bit records) that maps
//! single addresses to a country's ISO code, shaped like GeoLite2-Country
//! (`{"country": {"iso_code": "DE"}}`), so the server reads it with the real reader.
//! Format: <https://maxmind.github.io/MaxMind-DB/>.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// One MaxMind DB data field.
enum Field<'a> {
    Str(&'a str),
    U16(u16),
    U32(u32),
    U64(u64),
    Map(Vec<(&'a str, Field<'a>)>),
    Array(Vec<Field<'a>>),
}

/// The control byte(s) of a field of `kind` (1 to 15) and `size` (below 29).
fn control(out: &mut Vec<u8>, kind: u8, size: usize) {
    assert!(size < 29, "the test writer keeps fields small");
    if kind <= 7 {
        out.push((kind << 5) | size as u8);
    } else {
        out.push(size as u8);
        out.push(kind - 7);
    }
}

fn uint(out: &mut Vec<u8>, kind: u8, value: u64) {
    let bytes = value.to_be_bytes();
    let skip = bytes.iter().take_while(|b| **b == 0).count();
    control(out, kind, 8 - skip);
    out.extend_from_slice(&bytes[skip..]);
}

fn encode(out: &mut Vec<u8>, field: &Field<'_>) {
    match field {
        Field::Str(s) => {
            control(out, 2, s.len());
            out.extend_from_slice(s.as_bytes());
        }
        Field::U16(v) => uint(out, 5, u64::from(*v)),
        Field::U32(v) => uint(out, 6, u64::from(*v)),
        Field::U64(v) => uint(out, 9, *v),
        Field::Map(pairs) => {
            control(out, 7, pairs.len());
            for (k, v) in pairs {
                encode(out, &Field::Str(k));
                encode(out, v);
            }
        }
        Field::Array(items) => {
            control(out, 11, items.len());
            for item in items {
                encode(out, item);
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Record {
    Empty,
    Node(u32),
    Data(u32),
}

/// The bytes of a database that maps each address of `countries` to its code.
pub fn country_db(countries: &[(Ipv4Addr, &str)]) -> Vec<u8> {
    // The data section: one record per distinct country.
    let mut data = Vec::new();
    let mut offsets: BTreeMap<&str, u32> = BTreeMap::new();
    for (_, code) in countries {
        if !offsets.contains_key(code) {
            offsets.insert(code, data.len() as u32);
            let record = Field::Map(vec![(
                "country",
                Field::Map(vec![("iso_code", Field::Str(code))]),
            )]);
            encode(&mut data, &record);
        }
    }
    // The search tree: one bit of the address per level, 32 levels.
    let mut nodes: Vec<[Record; 2]> = vec![[Record::Empty; 2]];
    for (addr, code) in countries {
        let bits = u32::from(*addr);
        let mut node = 0usize;
        for level in 0..32 {
            let bit = ((bits >> (31 - level)) & 1) as usize;
            if level == 31 {
                nodes[node][bit] = Record::Data(offsets[code]);
                break;
            }
            node = match nodes[node][bit] {
                Record::Node(next) => next as usize,
                _ => {
                    nodes.push([Record::Empty; 2]);
                    let next = nodes.len() - 1;
                    nodes[node][bit] = Record::Node(next as u32);
                    next
                }
            };
        }
    }
    let node_count = nodes.len() as u32;
    let value = |r: Record| match r {
        Record::Empty => node_count,
        Record::Node(n) => n,
        Record::Data(offset) => node_count + 16 + offset,
    };
    let mut out = Vec::new();
    for [left, right] in nodes {
        out.extend_from_slice(&value(left).to_be_bytes()[1..]);
        out.extend_from_slice(&value(right).to_be_bytes()[1..]);
    }
    out.extend_from_slice(&[0u8; 16]);
    out.extend_from_slice(&data);
    out.extend_from_slice(b"\xAB\xCD\xEFMaxMind.com");
    let metadata = Field::Map(vec![
        ("node_count", Field::U32(node_count)),
        ("record_size", Field::U16(24)),
        ("ip_version", Field::U16(4)),
        ("database_type", Field::Str("shardkit-test-country")),
        ("languages", Field::Array(vec![Field::Str("en")])),
        ("binary_format_major_version", Field::U16(2)),
        ("binary_format_minor_version", Field::U16(0)),
        ("build_epoch", Field::U64(1_700_000_000)),
        (
            "description",
            Field::Map(vec![("en", Field::Str("countries of test addresses"))]),
        ),
    ]);
    encode(&mut out, &metadata);
    out
}
