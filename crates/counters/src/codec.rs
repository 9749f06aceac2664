//! Little byte encoders and a bounds-checked decoder shared by the log and snapshots.
//!
//! Decoding never panics: every read checks the remaining length and returns `None`
//! on short or malformed input, which the caller reports as corruption.

/// Appends fixed and variable-width values to a byte buffer.
pub(crate) trait Put {
    fn put_u8(&mut self, x: u8);
    fn put_u32(&mut self, x: u32);
    fn put_u64(&mut self, x: u64);
    fn put_var(&mut self, x: u64);
    fn put_str(&mut self, s: &str);
}

impl Put for Vec<u8> {
    fn put_u8(&mut self, x: u8) {
        self.push(x);
    }
    fn put_u32(&mut self, x: u32) {
        self.extend_from_slice(&x.to_le_bytes());
    }
    fn put_u64(&mut self, x: u64) {
        self.extend_from_slice(&x.to_le_bytes());
    }
    fn put_var(&mut self, mut x: u64) {
        while x >= 0x80 {
            self.push((x as u8) | 0x80);
            x >>= 7;
        }
        self.push(x as u8);
    }
    fn put_str(&mut self, s: &str) {
        self.put_var(s.len() as u64);
        self.extend_from_slice(s.as_bytes());
    }
}

/// Reads values back from a byte slice, `None` when the input is short or malformed.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }
    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }
    pub(crate) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
    pub(crate) fn u8(&mut self) -> Option<u8> {
        Some(self.bytes(1)?[0])
    }
    pub(crate) fn u16(&mut self) -> Option<u16> {
        let mut b = [0u8; 2];
        b.copy_from_slice(self.bytes(2)?);
        Some(u16::from_le_bytes(b))
    }
    pub(crate) fn u32(&mut self) -> Option<u32> {
        let mut b = [0u8; 4];
        b.copy_from_slice(self.bytes(4)?);
        Some(u32::from_le_bytes(b))
    }
    pub(crate) fn u64(&mut self) -> Option<u64> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.bytes(8)?);
        Some(u64::from_le_bytes(b))
    }
    pub(crate) fn var(&mut self) -> Option<u64> {
        let mut x = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            x |= ((b & 0x7F) as u64).checked_shl(shift)?;
            if b & 0x80 == 0 {
                return Some(x);
            }
        }
        None
    }
    pub(crate) fn str(&mut self) -> Option<&'a str> {
        let n = usize::try_from(self.var()?).ok()?;
        std::str::from_utf8(self.bytes(n)?).ok()
    }
}

/// CRC-32 (Castagnoli-free, IEEE) of a byte slice.
pub(crate) fn crc(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// Appends a framed record: `[len u32][crc32 u32][payload]`.
pub(crate) fn frame(out: &mut Vec<u8>, payload: &[u8]) {
    out.put_u32(payload.len() as u32);
    out.put_u32(crc(payload));
    out.extend_from_slice(payload);
}

/// Why a framed read stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FrameError {
    /// Fewer bytes left than the frame needs: a torn write.
    Torn,
    /// The checksum does not match: the bytes were damaged.
    Checksum,
    /// The length field is impossible.
    Length,
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FrameError::Torn => "torn record (file ends inside it)",
            FrameError::Checksum => "checksum mismatch",
            FrameError::Length => "impossible record length",
        })
    }
}

/// Largest payload a frame may declare (guards against a damaged length field).
pub(crate) const MAX_FRAME: usize = 1 << 30;

/// Reads one framed record's payload at the reader's position.
pub(crate) fn unframe<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], FrameError> {
    let len = r.u32().ok_or(FrameError::Torn)? as usize;
    if len > MAX_FRAME {
        return Err(FrameError::Length);
    }
    let sum = r.u32().ok_or(FrameError::Torn)?;
    let payload = r.bytes(len).ok_or(FrameError::Torn)?;
    if crc(payload) != sum {
        return Err(FrameError::Checksum);
    }
    Ok(payload)
}

/// What [`FrameReader::next`] found.
#[derive(Debug)]
pub(crate) enum NextFrame {
    /// A frame whose checksum matched, its payload now in the caller's buffer: where
    /// the payload starts in the input, and its checksum.
    Frame { at: u64, crc: u32 },
    /// The input ends exactly before a frame.
    End,
    /// The input ends inside a frame, or the frame is damaged.
    Bad(FrameError),
}

/// Reads framed records one at a time from a stream (a file through a buffer), so a
/// reader of a big log segment or snapshot holds one record, not the file.
pub(crate) struct FrameReader<R> {
    input: R,
    /// Bytes consumed so far (the end of the last good frame once `next` has returned
    /// one; the caller's starting offset before).
    pos: u64,
    /// Total bytes of the input, so an impossible length is known before it is read.
    len: u64,
}

impl<R: std::io::Read> FrameReader<R> {
    /// Frames of `input`, which starts at byte `pos` of something `len` bytes long.
    pub(crate) fn new(input: R, pos: u64, len: u64) -> Self {
        FrameReader { input, pos, len }
    }

    /// Where the next frame starts: the end of the last good one.
    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }

    /// Reads the next frame's payload into `buf`. `Err` only for an I/O error of the
    /// input (which says nothing about the bytes).
    pub(crate) fn next(&mut self, buf: &mut Vec<u8>) -> std::io::Result<NextFrame> {
        let mut head = [0u8; 8];
        match read_full(&mut self.input, &mut head)? {
            0 => return Ok(NextFrame::End),
            8 => {}
            _ => return Ok(NextFrame::Bad(FrameError::Torn)),
        }
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let sum = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        if len > MAX_FRAME {
            return Ok(NextFrame::Bad(FrameError::Length));
        }
        if len as u64 > self.len.saturating_sub(self.pos + 8) {
            return Ok(NextFrame::Bad(FrameError::Torn));
        }
        buf.clear();
        buf.resize(len, 0);
        if read_full(&mut self.input, buf)? != len {
            return Ok(NextFrame::Bad(FrameError::Torn));
        }
        if crc(buf) != sum {
            return Ok(NextFrame::Bad(FrameError::Checksum));
        }
        let at = self.pos + 8;
        self.pos = at + len as u64;
        Ok(NextFrame::Frame { at, crc: sum })
    }
}

/// Reads until `buf` is full or the input ends: the bytes read.
pub(crate) fn read_full(input: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
