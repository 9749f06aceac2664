//! The operator's GeoIP database (`[links] geoip_db`, a MaxMind DB file such as
//! GeoLite2-Country): read once at start, looked up off the redirect path. Nothing is
//! downloaded; without the setting no country is recorded.

use std::net::IpAddr;
use std::path::Path;

/// A MaxMind DB held in memory.
pub struct GeoIp {
    reader: maxminddb::Reader<Vec<u8>>,
}

impl std::fmt::Debug for GeoIp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeoIp")
            .field("database_type", &self.reader.metadata().database_type)
            .finish()
    }
}

impl GeoIp {
    /// Reads the database at `path`; the error names the file and what is wrong.
    pub fn open(path: &Path) -> anyhow::Result<GeoIp> {
        let reader = maxminddb::Reader::open_readfile(path).map_err(|e| {
            anyhow::anyhow!(
                "[links] geoip_db {}: not a readable MaxMind DB file ({e})",
                path.display()
            )
        })?;
        Ok(GeoIp { reader })
    }

    /// The ISO 3166-1 code of the country `ip` is in, if the database knows it.
    pub fn country(&self, ip: IpAddr) -> Option<String> {
        let found = self.reader.lookup(ip).ok()?;
        // Only the two codes are read: a GeoLite2 record also holds the country's name
        // in eight languages, which a full `geoip2::Country` would copy out on every
        // lookup (a redirect rule on the country makes one per visit).
        let record = found.decode::<Codes<'_>>().ok()??;
        record
            .country
            .and_then(|c| c.iso_code)
            .or(record.registered_country.and_then(|c| c.iso_code))
            .map(str::to_string)
    }
}

/// The part of a GeoIP2 country record [`GeoIp::country`] reads.
#[derive(serde::Deserialize)]
struct Codes<'a> {
    #[serde(borrow)]
    country: Option<IsoCode<'a>>,
    #[serde(borrow)]
    registered_country: Option<IsoCode<'a>>,
}

#[derive(serde::Deserialize)]
struct IsoCode<'a> {
    iso_code: Option<&'a str>,
}
