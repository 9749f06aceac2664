//! Parsing commands: the multibulk form (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`) that client
//! libraries send, and the inline form (`GET k\r\n`) people type.
//!
//! The parser is re-entrant: given the bytes received so far, it returns one whole
//! command and how many bytes it used, or "not yet" when the command is incomplete, so
//! the connection can parse every complete command in its buffer (pipelining) before
//! it writes the replies.

use crate::limits::Limits;

/// A protocol error. `skip` is how many bytes to drop to reach the next command when
/// the frame boundary is known (the connection stays usable); `None` means the stream
/// cannot be resynchronised and the connection must be closed after the reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Redis's text for the error, without the leading `-`.
    pub message: String,
    /// Bytes to skip to the next command, if known.
    pub skip: Option<usize>,
}

impl ParseError {
    fn fatal(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            skip: None,
        }
    }
}

/// One parsed command: its arguments are slices of the read buffer (multibulk) or of
/// the parser's scratch space (inline, after unquoting).
#[derive(Debug, Clone, Copy)]
pub struct Command<'a> {
    base: &'a [u8],
    spans: &'a [(usize, usize)],
}

impl<'a> Command<'a> {
    /// Number of arguments, the command name included.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True for an empty command (which is never returned by the parser).
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Argument `i` (0 is the command name), if present.
    pub fn arg(&self, i: usize) -> Option<&'a [u8]> {
        self.spans
            .get(i)
            .map(|&(start, end)| &self.base[start..end])
    }

    /// All arguments.
    pub fn args(&self) -> impl ExactSizeIterator<Item = &'a [u8]> + 'a {
        let base = self.base;
        self.spans
            .iter()
            .map(move |&(start, end)| &base[start..end])
    }
}

/// What one call to [`Parser::parse`] found.
#[derive(Debug)]
pub enum Parsed<'a> {
    /// A command, and the bytes it took from the front of the buffer.
    Command(Command<'a>, usize),
    /// Bytes to drop that hold no command (empty lines, `*0`).
    Skip(usize),
    /// The buffer ends inside a command: read more.
    Incomplete,
}

/// Reusable parse state of one connection: argument positions and scratch space,
/// kept between commands so that parsing allocates nothing once warmed up.
#[derive(Debug, Default)]
pub struct Parser {
    limits: Limits,
    spans: Vec<(usize, usize)>,
    scratch: Vec<u8>,
}

impl Parser {
    /// A parser enforcing `limits`.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            spans: Vec::with_capacity(16),
            scratch: Vec::new(),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Parses the command at the front of `buf`.
    pub fn parse<'a>(&'a mut self, buf: &'a [u8]) -> Result<Parsed<'a>, ParseError> {
        self.spans.clear();
        match buf.first() {
            None => Ok(Parsed::Incomplete),
            Some(b'*') => self.parse_multibulk(buf),
            Some(_) => self.parse_inline(buf),
        }
    }

    fn parse_multibulk<'a>(&'a mut self, buf: &'a [u8]) -> Result<Parsed<'a>, ParseError> {
        let Some((count, mut at)) = read_length_line(buf, 1, "invalid multibulk length")? else {
            return Ok(Parsed::Incomplete);
        };
        if count <= 0 {
            return Ok(Parsed::Skip(at)); // `*0` and `*-1`: Redis ignores them
        }
        let count = count as usize;
        if count > self.limits.max_array_len {
            return Err(ParseError::fatal(
                "Protocol error: invalid multibulk length",
            ));
        }
        for _ in 0..count {
            match buf.get(at) {
                None => return Ok(Parsed::Incomplete),
                Some(b'$') => {}
                Some(&other) => {
                    return Err(ParseError::fatal(format!(
                        "Protocol error: expected '$', got '{}'",
                        other as char
                    )))
                }
            }
            let Some((len, start)) = read_length_line(buf, at + 1, "invalid bulk length")? else {
                return Ok(Parsed::Incomplete);
            };
            if len < 0 || len as u64 > self.limits.max_bulk_len as u64 {
                return Err(ParseError::fatal("Protocol error: invalid bulk length"));
            }
            let end = start + len as usize;
            if buf.len() < end + 2 {
                return Ok(Parsed::Incomplete);
            }
            if &buf[end..end + 2] != b"\r\n" {
                return Err(ParseError::fatal(
                    "Protocol error: bulk string not followed by CRLF",
                ));
            }
            self.spans.push((start, end));
            at = end + 2;
        }
        Ok(Parsed::Command(
            Command {
                base: buf,
                spans: &self.spans,
            },
            at,
        ))
    }

    fn parse_inline<'a>(&'a mut self, buf: &'a [u8]) -> Result<Parsed<'a>, ParseError> {
        let Some(newline) = buf.iter().position(|&b| b == b'\n') else {
            if buf.len() > self.limits.max_inline_len {
                return Err(ParseError::fatal("Protocol error: too big inline request"));
            }
            return Ok(Parsed::Incomplete);
        };
        let consumed = newline + 1;
        if newline > self.limits.max_inline_len {
            return Err(ParseError {
                message: "Protocol error: too big inline request".into(),
                skip: Some(consumed),
            });
        }
        let line = buf[..newline]
            .strip_suffix(b"\r")
            .unwrap_or(&buf[..newline]);
        self.scratch.clear();
        if let Err(message) = split_inline(line, &mut self.scratch, &mut self.spans) {
            return Err(ParseError {
                message: message.into(),
                skip: Some(consumed),
            });
        }
        if self.spans.is_empty() {
            return Ok(Parsed::Skip(consumed));
        }
        Ok(Parsed::Command(
            Command {
                base: &self.scratch,
                spans: &self.spans,
            },
            consumed,
        ))
    }
}

/// Reads `<integer>\r\n` starting at `from`: `Ok(None)` if the line is not complete
/// yet, else the integer and the position after the line.
fn read_length_line(
    buf: &[u8],
    from: usize,
    what: &str,
) -> Result<Option<(i64, usize)>, ParseError> {
    // A length line is at most "-9223372036854775808\r\n"; anything longer is garbage.
    const MAX_LINE: usize = 21;
    let window = &buf[from.min(buf.len())..buf.len().min(from + MAX_LINE + 1)];
    let Some(cr) = window.iter().position(|&b| b == b'\r') else {
        if window.len() > MAX_LINE {
            return Err(ParseError::fatal(format!("Protocol error: {what}")));
        }
        return Ok(None);
    };
    if buf.len() < from + cr + 2 {
        return Ok(None);
    }
    if buf[from + cr + 1] != b'\n' {
        return Err(ParseError::fatal(format!("Protocol error: {what}")));
    }
    let digits = &window[..cr];
    let value =
        parse_i64(digits).ok_or_else(|| ParseError::fatal(format!("Protocol error: {what}")))?;
    Ok(Some((value, from + cr + 2)))
}

/// Parses a decimal integer with an optional leading `-`, no spaces, no `+`.
pub fn parse_i64(digits: &[u8]) -> Option<i64> {
    let (negative, digits) = match digits.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, digits),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut value: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        let digit = i64::from(d - b'0');
        value = if negative {
            value.checked_mul(10)?.checked_sub(digit)?
        } else {
            value.checked_mul(10)?.checked_add(digit)?
        };
    }
    Some(value)
}

/// Splits an inline command line into arguments as redis-cli's `sdssplitargs` does:
/// whitespace separates, `"..."` takes `\n \r \t \b \a \\ \" \xHH` escapes, `'...'`
/// takes `\'`; a closing quote must be followed by whitespace or the end.
fn split_inline(
    line: &[u8],
    scratch: &mut Vec<u8>,
    spans: &mut Vec<(usize, usize)>,
) -> Result<(), &'static str> {
    const UNBALANCED: &str = "Protocol error: unbalanced quotes in request";
    let mut i = 0;
    loop {
        while i < line.len() && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= line.len() {
            return Ok(());
        }
        let start = scratch.len();
        match line[i] {
            b'"' => {
                i += 1;
                loop {
                    match line.get(i) {
                        None => return Err(UNBALANCED),
                        Some(b'\\')
                            if i + 3 < line.len()
                                && line[i + 1] == b'x'
                                && line[i + 2].is_ascii_hexdigit()
                                && line[i + 3].is_ascii_hexdigit() =>
                        {
                            let hex = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
                            scratch.push(hex(line[i + 2]) * 16 + hex(line[i + 3]));
                            i += 4;
                        }
                        Some(b'\\') if i + 1 < line.len() => {
                            scratch.push(match line[i + 1] {
                                b'n' => b'\n',
                                b'r' => b'\r',
                                b't' => b'\t',
                                b'b' => 8,
                                b'a' => 7,
                                other => other,
                            });
                            i += 2;
                        }
                        Some(b'"') => {
                            i += 1;
                            if i < line.len() && !line[i].is_ascii_whitespace() {
                                return Err(UNBALANCED);
                            }
                            break;
                        }
                        Some(&c) => {
                            scratch.push(c);
                            i += 1;
                        }
                    }
                }
            }
            b'\'' => {
                i += 1;
                loop {
                    match line.get(i) {
                        None => return Err(UNBALANCED),
                        Some(b'\\') if line.get(i + 1) == Some(&b'\'') => {
                            scratch.push(b'\'');
                            i += 2;
                        }
                        Some(b'\'') => {
                            i += 1;
                            if i < line.len() && !line[i].is_ascii_whitespace() {
                                return Err(UNBALANCED);
                            }
                            break;
                        }
                        Some(&c) => {
                            scratch.push(c);
                            i += 1;
                        }
                    }
                }
            }
            _ => {
                while i < line.len() && !line[i].is_ascii_whitespace() {
                    scratch.push(line[i]);
                    i += 1;
                }
            }
        }
        spans.push((start, scratch.len()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(parser: &mut Parser, buf: &[u8]) -> (Vec<Vec<u8>>, usize) {
        match parser.parse(buf).unwrap() {
            Parsed::Command(cmd, used) => (cmd.args().map(<[u8]>::to_vec).collect(), used),
            other => panic!("expected a command, got {other:?}"),
        }
    }

    #[test]
    fn multibulk_and_inline_commands() {
        let mut p = Parser::new(Limits::default());
        let (a, used) = args(&mut p, b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nrest");
        assert_eq!(a, [b"GET".to_vec(), b"k".to_vec()]);
        assert_eq!(used, 20);
        let line = b"SET  k \"a b\\n\\x41\" 'it\\'s'\r\n";
        let (a, used) = args(&mut p, line);
        assert_eq!(
            a,
            [
                b"SET".to_vec(),
                b"k".to_vec(),
                b"a b\nA".to_vec(),
                b"it's".to_vec()
            ]
        );
        assert_eq!(used, line.len());
        assert!(matches!(
            p.parse(b"*2\r\n$3\r\nGET\r\n$1\r\n").unwrap(),
            Parsed::Incomplete
        ));
        assert!(matches!(p.parse(b"PING").unwrap(), Parsed::Incomplete));
        assert!(matches!(p.parse(b"\r\n").unwrap(), Parsed::Skip(2)));
        assert!(matches!(p.parse(b"*0\r\n").unwrap(), Parsed::Skip(4)));
    }

    #[test]
    fn announced_sizes_past_the_limits_are_refused_before_reading_them() {
        let mut p = Parser::new(Limits::default());
        let err = p.parse(b"*1\r\n$4294967296\r\n").unwrap_err();
        assert_eq!(
            (err.message.as_str(), err.skip),
            ("Protocol error: invalid bulk length", None)
        );
        let err = p.parse(b"*99999999999\r\n").unwrap_err();
        assert_eq!(err.message, "Protocol error: invalid multibulk length");
        assert!(p
            .parse(b"*1\r\n:5\r\n")
            .unwrap_err()
            .message
            .contains("expected '$', got ':'"));
        assert!(p.parse(b"*1\r\n$-5\r\n").is_err());
        assert!(p.parse(b"*x\r\n").is_err());
        assert!(p.parse(b"*1111111111111111111111111111").is_err());
    }

    #[test]
    fn a_bad_inline_line_is_skipped_and_the_next_command_parses() {
        let mut p = Parser::new(Limits::default());
        let buf = b"GET \"open\r\nPING\r\n";
        let err = p.parse(buf).unwrap_err();
        assert_eq!(err.message, "Protocol error: unbalanced quotes in request");
        let skip = err.skip.unwrap();
        let (a, _) = args(&mut p, &buf[skip..]);
        assert_eq!(a, [b"PING".to_vec()]);
    }

    #[test]
    fn integers_parse_strictly() {
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        for bad in [&b""[..], b"-", b"+1", b" 1", b"1 ", b"0x10", b"1.0"] {
            assert_eq!(parse_i64(bad), None, "{bad:?}");
        }
    }
}
