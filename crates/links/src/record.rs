//! A link as the compact store keeps it: a few packed bytes, then the URL's own
//! bytes. No JSON, no field names, and no code: a generated code is rebuilt from the
//! record's place ([`crate::locator`]), so it costs nothing to store.
//!
//! Layout (integers are LEB128 varints unless said otherwise):
//!
//! ```text
//! header   varint: bit 0 alias, 1 expires_at, 2 max_visits, 3 password_hash,
//!          4 author, 5 code (only when it cannot be rebuilt), 6 tags,
//!          bits 7-8 the redirect (0 = 302, 1 = 301, 2 = 307, 3 = 308), 9 rules,
//!          10 domain, 11 title
//! id       8 bytes little-endian
//! created  varint ms since the Unix epoch
//! then, each only if its bit is set: expires_at varint, max_visits varint,
//! code, alias, tags (count, then each), password_hash, author, rules (their JSON
//! array: rare and small, so the readable form costs little), domain, title: each text a varint
//! length and its bytes
//! url      the rest of the value
//! ```
//!
//! A plain link costs 15 bytes beside its URL. Bits 12 and up must be zero: a record
//! from a newer format is refused as damaged, not misread.

use crate::error::StoreError;
use crate::model::{Link, Redirect};

const ALIAS: u64 = 1;
const EXPIRES: u64 = 1 << 1;
const MAX_VISITS: u64 = 1 << 2;
const PASSWORD: u64 = 1 << 3;
const AUTHOR: u64 = 1 << 4;
const CODE: u64 = 1 << 5;
const TAGS: u64 = 1 << 6;
const REDIRECT_SHIFT: u32 = 7;
const RULES: u64 = 1 << 9;
const DOMAIN: u64 = 1 << 10;
const TITLE: u64 = 1 << 11;
const KNOWN: u64 = (1 << 12) - 1;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_text(out: &mut Vec<u8>, text: &str) {
    put_varint(out, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
}

fn redirect_bits(r: Redirect) -> u64 {
    match r {
        Redirect::Found => 0,
        Redirect::Permanent => 1,
        Redirect::Temporary => 2,
        Redirect::PermanentKeepMethod => 3,
    }
}

/// The bytes of `link`; its code is written only if `keep_code` (a code the store
/// cannot rebuild from where the record sits).
pub(crate) fn encode(link: &Link, keep_code: bool) -> Vec<u8> {
    let mut header = redirect_bits(link.redirect) << REDIRECT_SHIFT;
    let flags = [
        (link.alias.is_some(), ALIAS),
        (link.expires_at.is_some(), EXPIRES),
        (link.max_visits.is_some(), MAX_VISITS),
        (link.password_hash.is_some(), PASSWORD),
        (link.author.is_some(), AUTHOR),
        (keep_code, CODE),
        (!link.tags.is_empty(), TAGS),
        (!link.rules.is_empty(), RULES),
        (link.domain.is_some(), DOMAIN),
        (link.title.is_some(), TITLE),
    ];
    for (present, bit) in flags {
        if present {
            header |= bit;
        }
    }
    let mut out = Vec::with_capacity(24 + link.url.len());
    put_varint(&mut out, header);
    out.extend_from_slice(&link.id.to_le_bytes());
    put_varint(&mut out, link.created_at);
    if let Some(t) = link.expires_at {
        put_varint(&mut out, t);
    }
    if let Some(n) = link.max_visits {
        put_varint(&mut out, n);
    }
    if keep_code {
        put_text(&mut out, &link.code);
    }
    if let Some(alias) = &link.alias {
        put_text(&mut out, alias);
    }
    if !link.tags.is_empty() {
        put_varint(&mut out, link.tags.len() as u64);
        for tag in &link.tags {
            put_text(&mut out, tag);
        }
    }
    if let Some(hash) = &link.password_hash {
        put_text(&mut out, hash);
    }
    if let Some(author) = &link.author {
        put_text(&mut out, author);
    }
    if !link.rules.is_empty() {
        // Rules were checked when made; their JSON cannot fail to write.
        put_text(
            &mut out,
            &serde_json::to_string(&link.rules).unwrap_or_default(),
        );
    }
    if let Some(domain) = &link.domain {
        put_text(&mut out, domain);
    }
    if let Some(title) = &link.title {
        put_text(&mut out, title);
    }
    out.extend_from_slice(link.url.as_bytes());
    out
}

/// Reads a record; `code` rebuilds the code when the record does not carry it.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.bytes.get(self.at)?;
            self.at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Some(value);
            }
        }
        None
    }

    fn text(&mut self) -> Option<String> {
        let len = usize::try_from(self.varint()?).ok()?;
        let end = self.at.checked_add(len)?;
        let text = std::str::from_utf8(self.bytes.get(self.at..end)?).ok()?;
        self.at = end;
        Some(text.to_string())
    }
}

/// The link in `bytes`; `code` gives its code when the record does not hold one.
pub(crate) fn decode(
    bytes: &[u8],
    code: impl FnOnce() -> Option<String>,
) -> Result<Link, StoreError> {
    let damaged = |reason: &str| StoreError::Corrupt {
        id: bytes
            .get(1..9)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes),
        reason: reason.to_string(),
    };
    let mut r = Reader { bytes, at: 0 };
    let header = r.varint().ok_or_else(|| damaged("no header"))?;
    if header & !KNOWN != 0 {
        return Err(damaged("unknown record flags (a newer format?)"));
    }
    let id_bytes = r
        .bytes
        .get(r.at..r.at + 8)
        .ok_or_else(|| damaged("no id"))?;
    let id = u64::from_le_bytes(id_bytes.try_into().map_err(|_| damaged("no id"))?);
    r.at += 8;
    let short = || damaged("record cut short");
    let created_at = r.varint().ok_or_else(short)?;
    let expires_at = (header & EXPIRES != 0)
        .then(|| r.varint().ok_or_else(short))
        .transpose()?;
    let max_visits = (header & MAX_VISITS != 0)
        .then(|| r.varint().ok_or_else(short))
        .transpose()?;
    let stored_code = (header & CODE != 0)
        .then(|| r.text().ok_or_else(short))
        .transpose()?;
    let alias = (header & ALIAS != 0)
        .then(|| r.text().ok_or_else(short))
        .transpose()?;
    let mut tags = Vec::new();
    if header & TAGS != 0 {
        let n = r.varint().ok_or_else(short)?;
        if n > crate::model::MAX_TAGS as u64 {
            return Err(damaged("more tags than a link may have"));
        }
        for _ in 0..n {
            tags.push(r.text().ok_or_else(short)?);
        }
    }
    let password_hash = (header & PASSWORD != 0)
        .then(|| r.text().ok_or_else(short))
        .transpose()?;
    let author = (header & AUTHOR != 0)
        .then(|| r.text().ok_or_else(short))
        .transpose()?;
    let rules = match (header & RULES != 0)
        .then(|| r.text().ok_or_else(short))
        .transpose()?
    {
        Some(json) => serde_json::from_str(&json).map_err(|_| damaged("unreadable rules"))?,
        None => Vec::new(),
    };
    let domain = (header & DOMAIN != 0)
        .then(|| r.text().ok_or_else(short))
        .transpose()?;
    let title = (header & TITLE != 0)
        .then(|| r.text().ok_or_else(short))
        .transpose()?;
    let url = std::str::from_utf8(&bytes[r.at..])
        .map_err(|_| damaged("url is not UTF-8"))?
        .to_string();
    let redirect = match (header >> REDIRECT_SHIFT) & 3 {
        0 => Redirect::Found,
        1 => Redirect::Permanent,
        2 => Redirect::Temporary,
        _ => Redirect::PermanentKeepMethod,
    };
    let code = match stored_code {
        Some(code) => code,
        None => code().ok_or_else(|| damaged("its place names no code"))?,
    };
    Ok(Link {
        id,
        url,
        code,
        alias,
        domain,
        title,
        created_at,
        expires_at,
        max_visits,
        redirect,
        tags,
        password_hash,
        author,
        rules,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::sample_link;

    #[test]
    fn every_field_round_trips_and_a_plain_link_costs_15_bytes() {
        let plain = sample_link(12_345, "a000001", "https://example.com/x");
        let bytes = encode(&plain, false);
        assert_eq!(bytes.len() - plain.url.len(), 15);
        assert_eq!(decode(&bytes, || Some("a000001".into())).unwrap(), plain);
        let mut full = plain.clone();
        full.alias = Some("my-alias".into());
        full.expires_at = Some(1_800_000_000_000);
        full.max_visits = Some(7);
        full.redirect = Redirect::PermanentKeepMethod;
        full.tags = vec!["a".into(), "b:c".into()];
        full.password_hash = Some("$argon2id$x".into());
        full.author = Some("writer".into());
        full.rules = vec![
            serde_json::from_str(r#"{"device":"ios","url":"https://apps.example/"}"#).unwrap(),
            serde_json::from_str(r#"{"cidr":"10.0.0.0/8","url":"https://in.example/"}"#).unwrap(),
        ];
        full.domain = Some("go.example".into());
        full.title = Some("Launch day, all of it".into());
        full.code = "Zzzzzzzzzzz".into();
        let bytes = encode(&full, true);
        assert_eq!(decode(&bytes, || None).unwrap(), full);
        // Cut anywhere before the url: damaged, never a panic.
        for cut in 0..bytes.len() - full.url.len() {
            let _ = decode(&bytes[..cut], || Some("x".into()));
        }
        assert!(decode(&[0xff, 0xff, 0x7f], || None).is_err());
    }
}
