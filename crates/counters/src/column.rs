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

impl ColumnSpec {
    /// Checks the spec; returns the reason it is refused, if any.
    pub(crate) fn check(&self) -> Result<(), String> {
        if !matches!(self.bits, 8 | 16 | 32 | 64) {
            return Err(format!("bits must be 8, 16, 32 or 64, not {}", self.bits));
        }
        if !matches!(self.max_bits, 32 | 64) {
            return Err(format!("max must be 32 or 64, not {}", self.max_bits));
        }
        if self.bits > self.max_bits {
            return Err(format!("bits ({}) must not exceed max ({})", self.bits, self.max_bits));
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

    /// Largest value the column may hold.
    #[inline]
    pub fn max_value(&self) -> u64 {
        if self.max_bits == 64 {
            u64::MAX
        } else {
            u32::MAX as u64
        }
    }
}

/// One column's inline values for every slot of a partition, at the column's width.
#[derive(Debug, Clone)]
pub(crate) enum ColumnArray {
    /// 8-bit inline values.
    U8(Vec<u8>),
    /// 16-bit inline values.
    U16(Vec<u16>),
    /// 32-bit inline values.
    U32(Vec<u32>),
    /// 64-bit inline values.
    U64(Vec<u64>),
}

impl ColumnArray {
    /// An array of `cap` slots, all holding `fill` (the column default).
    pub(crate) fn new(bits: u8, cap: usize, fill: u64) -> ColumnArray {
        match bits {
            8 => ColumnArray::U8(vec![fill as u8; cap]),
            16 => ColumnArray::U16(vec![fill as u16; cap]),
            32 => ColumnArray::U32(vec![fill as u32; cap]),
            _ => ColumnArray::U64(vec![fill; cap]),
        }
    }

    /// Inline value at `i`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> u64 {
        match self {
            ColumnArray::U8(v) => v[i] as u64,
            ColumnArray::U16(v) => v[i] as u64,
            ColumnArray::U32(v) => v[i] as u64,
            ColumnArray::U64(v) => v[i],
        }
    }

    /// Stores an inline value (already known to fit) at `i`.
    #[inline]
    pub(crate) fn set(&mut self, i: usize, x: u64) {
        match self {
            ColumnArray::U8(v) => v[i] = x as u8,
            ColumnArray::U16(v) => v[i] = x as u16,
            ColumnArray::U32(v) => v[i] = x as u32,
            ColumnArray::U64(v) => v[i] = x,
        }
    }

    /// Address of slot `i`, for prefetching.
    #[inline]
    pub(crate) fn addr(&self, i: usize) -> *const u8 {
        match self {
            ColumnArray::U8(v) => v.as_ptr().wrapping_add(i),
            ColumnArray::U16(v) => v.as_ptr().wrapping_add(i) as *const u8,
            ColumnArray::U32(v) => v.as_ptr().wrapping_add(i) as *const u8,
            ColumnArray::U64(v) => v.as_ptr().wrapping_add(i) as *const u8,
        }
    }

    /// Moves slots `from..to` one place up (to `from+1..=to`), the column half of
    /// inserting a row into a sorted run.
    #[inline]
    pub(crate) fn shift_up(&mut self, from: usize, to: usize) {
        match self {
            ColumnArray::U8(v) => v.copy_within(from..to, from + 1),
            ColumnArray::U16(v) => v.copy_within(from..to, from + 1),
            ColumnArray::U32(v) => v.copy_within(from..to, from + 1),
            ColumnArray::U64(v) => v.copy_within(from..to, from + 1),
        }
    }

    /// Moves slots `from+1..to` one place down (to `from..to-1`), the column half of
    /// removing a row from a sorted run.
    #[inline]
    pub(crate) fn shift_down(&mut self, from: usize, to: usize) {
        match self {
            ColumnArray::U8(v) => v.copy_within(from + 1..to, from),
            ColumnArray::U16(v) => v.copy_within(from + 1..to, from),
            ColumnArray::U32(v) => v.copy_within(from + 1..to, from),
            ColumnArray::U64(v) => v.copy_within(from + 1..to, from),
        }
    }

    /// Grows the array to `len` slots, the new ones holding `fill`.
    pub(crate) fn extend_to(&mut self, len: usize, fill: u64) {
        match self {
            ColumnArray::U8(v) => grow_exact(v, len, fill as u8),
            ColumnArray::U16(v) => grow_exact(v, len, fill as u16),
            ColumnArray::U32(v) => grow_exact(v, len, fill as u32),
            ColumnArray::U64(v) => grow_exact(v, len, fill),
        }
    }

    /// Heap bytes held.
    pub(crate) fn bytes(&self) -> usize {
        match self {
            ColumnArray::U8(v) => v.capacity(),
            ColumnArray::U16(v) => v.capacity() * 2,
            ColumnArray::U32(v) => v.capacity() * 4,
            ColumnArray::U64(v) => v.capacity() * 8,
        }
    }
}

/// Resizes `v` to `len` without the doubling `Vec::resize` would reserve: the tables'
/// memory per row is the point of this crate.
pub(crate) fn grow_exact<T: Copy>(v: &mut Vec<T>, len: usize, fill: T) {
    if len > v.len() {
        v.reserve_exact(len - v.len());
        v.resize(len, fill);
    }
}

/// The value a column takes after adding `delta` to `current`, or why it is refused:
/// counts never go negative and never pass the column's max.
pub(crate) fn apply_delta(current: u64, delta: i64, spec: &ColumnSpec) -> crate::Result<u64> {
    let next = current as i128 + delta as i128;
    if next < 0 {
        return Err(crate::Error::Negative { column: spec.name.clone(), current, delta });
    }
    if next > spec.max_value() as i128 {
        return Err(crate::Error::TooLarge { column: spec.name.clone(), current, delta: delta as i128, max: spec.max_value() });
    }
    Ok(next as u64)
}

/// Checks a value given to `set` against the column's max.
pub(crate) fn check_set(value: u64, spec: &ColumnSpec) -> crate::Result<u64> {
    if value > spec.max_value() {
        return Err(crate::Error::TooLarge { column: spec.name.clone(), current: 0, delta: value as i128, max: spec.max_value() });
    }
    Ok(value)
}

/// Checks a counter or column name: 1 to 200 bytes, no spaces, colons or control bytes
/// (a colon separates counter, id and column in RESP keys).
pub(crate) fn check_name(name: &str) -> crate::Result<()> {
    let bad = |reason| Err(crate::Error::BadName { name: name.to_string(), reason });
    if name.is_empty() {
        return bad("a name must not be empty");
    }
    if name.len() > 200 {
        return bad("a name must be at most 200 bytes");
    }
    if name.chars().any(|c| c == ':' || c.is_whitespace() || c.is_control()) {
        return bad("a name must not contain ':', whitespace or control characters");
    }
    Ok(())
}
