//! Column specifications and the fixed-width arrays that hold a column inline.

/// How one column of a counter is stored and bounded.
///
/// Exists so a counter can keep most values in a few bits (`bits`) while still
/// allowing large ones (`max`): a value that does not fit inline is marked with the
/// all-ones pattern and kept in the stripe's overflow map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnSpec {
    /// Column name, unique within the counter.
    pub name: String,
    /// Inline width in bits: 8, 16, 32 or 64.
    pub bits: u8,
    /// Widest value allowed, in bits: 32 or 64 (and at least `bits`, unless `bits` is 64).
    pub max_bits: u8,
    /// Value of the column in rows that never set it; must fit inline (below `2^bits - 1`).
    pub default: u64,
}

/// The largest value any column holds: `i64::MAX`, so no client reading a signed
/// 64-bit integer ever sees a count wrap to a negative number.
pub const MAX_VALUE: u64 = i64::MAX as u64;

impl ColumnSpec {
    /// The spec of a column `name` made with `opts`, or why it is refused (a bad name,
    /// bad widths): the one check `add_column` and a cluster's schema both make.
    pub fn new(name: &str, opts: crate::ColumnOptions) -> crate::Result<ColumnSpec> {
        check_name(name)?;
        let spec = ColumnSpec {
            name: name.to_string(),
            bits: opts.bits,
            max_bits: opts.max_bits,
            default: opts.default,
        };
        spec.check().map_err(|reason| crate::Error::BadColumn {
            column: name.to_string(),
            reason,
        })?;
        Ok(spec)
    }

    /// Checks the spec; returns the reason it is refused, if any.
    pub(crate) fn check(&self) -> Result<(), String> {
        if !matches!(self.bits, 8 | 16 | 32 | 64) {
            return Err(format!("bits must be 8, 16, 32 or 64, not {}", self.bits));
        }
        if !matches!(self.max_bits, 32 | 64) {
            return Err(format!("max must be 32 or 64, not {}", self.max_bits));
        }
        if self.bits > self.max_bits {
            return Err(format!(
                "bits ({}) must not exceed max ({})",
                self.bits, self.max_bits
            ));
        }
        if self.default >= self.marker() || self.default > self.max_value() {
            return Err(format!(
                "default {} must be below 2^bits - 1 = {} so it is stored inline",
                self.default,
                self.marker()
            ));
        }
        Ok(())
    }

    /// The inline pattern meaning "the value is in the overflow map".
    #[inline]
    pub(crate) fn marker(&self) -> u64 {
        if self.bits == 64 {
            u64::MAX
        } else {
            (1u64 << self.bits) - 1
        }
    }

    /// Largest value the column may hold. A 64-bit column stops at 2^63 - 1 so every
    /// value is also a signed 64-bit integer (what RESP, JSON and SQL clients read).
    #[inline]
    pub fn max_value(&self) -> u64 {
        if self.max_bits == 64 {
            MAX_VALUE
        } else {
            u32::MAX as u64
        }
    }
}

/// The value a column takes after adding `delta` to `current`, or why it is refused:
/// counts never go negative and never pass the column's max.
pub(crate) fn apply_delta(current: u64, delta: i64, spec: &ColumnSpec) -> crate::Result<u64> {
    let next = current as i128 + delta as i128;
    if next < 0 {
        return Err(crate::Error::Negative {
            column: spec.name.clone(),
            current,
            delta,
        });
    }
    if next > spec.max_value() as i128 {
        return Err(crate::Error::TooLarge {
            column: spec.name.clone(),
            current,
            delta: delta as i128,
            max: spec.max_value(),
        });
    }
    Ok(next as u64)
}

/// Checks a value given to `set` against the column's max.
pub(crate) fn check_set(value: u64, spec: &ColumnSpec) -> crate::Result<u64> {
    if value > spec.max_value() {
        return Err(crate::Error::TooLarge {
            column: spec.name.clone(),
            current: 0,
            delta: value as i128,
            max: spec.max_value(),
        });
    }
    Ok(value)
}

/// Checks a counter or column name: 1 to 200 bytes, no spaces, colons or control bytes
/// (a colon separates counter, id and column in RESP keys).
pub fn check_name(name: &str) -> crate::Result<()> {
    let bad = |reason| {
        Err(crate::Error::BadName {
            name: name.to_string(),
            reason,
        })
    };
    if name.is_empty() {
        return bad("a name must not be empty");
    }
    if name.len() > 200 {
        return bad("a name must be at most 200 bytes");
    }
    if name
        .chars()
        .any(|c| c == ':' || c.is_whitespace() || c.is_control())
    {
        return bad("a name must not contain ':', whitespace or control characters");
    }
    Ok(())
}
