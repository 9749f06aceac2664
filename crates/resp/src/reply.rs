//! Writing RESP2 and RESP3 replies straight into a connection's output buffer.
//!
//! Most replies are the same bytes in both protocols. Where RESP3 has its own type
//! (null, map, verbatim string) the writer takes the connection's `resp3` flag: a
//! connection speaks RESP2 until it sends `HELLO 3`.

use bytes::{BufMut, BytesMut};

/// `+text\r\n`: a status reply such as `OK` or `PONG`.
#[inline]
pub fn simple(out: &mut BytesMut, text: &str) {
    out.reserve(text.len() + 3);
    out.put_u8(b'+');
    out.put_slice(text.as_bytes());
    out.put_slice(b"\r\n");
}

/// `-message\r\n`: an error. `message` starts with its code (`ERR`, `WRONGTYPE`, ...);
/// line breaks in it are replaced so the reply stays one line.
pub fn error(out: &mut BytesMut, message: &str) {
    out.reserve(message.len() + 3);
    out.put_u8(b'-');
    for &b in message.as_bytes() {
        out.put_u8(if b == b'\r' || b == b'\n' { b' ' } else { b });
    }
    out.put_slice(b"\r\n");
}

/// `:n\r\n`: an integer.
#[inline]
pub fn integer(out: &mut BytesMut, value: i64) {
    let mut digits = itoa::Buffer::new();
    let text = digits.format(value);
    out.reserve(text.len() + 3);
    out.put_u8(b':');
    out.put_slice(text.as_bytes());
    out.put_slice(b"\r\n");
}

/// `$len\r\nbytes\r\n`: a bulk string.
#[inline]
pub fn bulk(out: &mut BytesMut, value: &[u8]) {
    let mut digits = itoa::Buffer::new();
    let len = digits.format(value.len());
    out.reserve(value.len() + len.len() + 5);
    out.put_u8(b'$');
    out.put_slice(len.as_bytes());
    out.put_slice(b"\r\n");
    out.put_slice(value);
    out.put_slice(b"\r\n");
}

/// A number as a bulk string, as Redis's `GET` returns a counter.
#[inline]
pub fn bulk_integer(out: &mut BytesMut, value: i64) {
    let mut digits = itoa::Buffer::new();
    bulk(out, digits.format(value).as_bytes());
}

/// An unsigned number as a bulk string: ids and tickets, which must reach JavaScript
/// clients exactly (a RESP integer past 2^53 becomes a rounded `Number` there).
#[inline]
pub fn bulk_u64(out: &mut BytesMut, value: u64) {
    let mut digits = itoa::Buffer::new();
    bulk(out, digits.format(value).as_bytes());
}

/// A missing value: RESP2's null bulk string `$-1`, RESP3's null `_`.
#[inline]
pub fn null(out: &mut BytesMut, resp3: bool) {
    out.put_slice(if resp3 { b"_\r\n" } else { b"$-1\r\n" });
}

/// A missing array (Sentinel's unknown master): RESP2's `*-1`, RESP3's null `_`.
#[inline]
pub fn null_array(out: &mut BytesMut, resp3: bool) {
    out.put_slice(if resp3 { b"_\r\n" } else { b"*-1\r\n" });
}

/// The header of a map of `pairs` key/value pairs that follow: RESP3's `%`, or in
/// RESP2 the flat array of `2 * pairs` replies Redis 6 answers.
#[inline]
pub fn map_header(out: &mut BytesMut, pairs: usize, resp3: bool) {
    if resp3 {
        let mut digits = itoa::Buffer::new();
        let text = digits.format(pairs);
        out.reserve(text.len() + 3);
        out.put_u8(b'%');
        out.put_slice(text.as_bytes());
        out.put_slice(b"\r\n");
    } else {
        array_header(out, pairs * 2);
    }
}

/// A figure with a fraction (bytes per row): RESP3's double, or in RESP2 a bulk
/// string with two decimals.
pub fn double(out: &mut BytesMut, value: f64, resp3: bool) {
    if resp3 {
        let text = format!(",{value}\r\n");
        out.extend_from_slice(text.as_bytes());
    } else {
        bulk(out, format!("{value:.2}").as_bytes());
    }
}

/// Text meant for people (`INFO`, `CLIENT LIST`): RESP3's verbatim string of format
/// `txt`, which Redis 7 answers there, or a bulk string in RESP2.
pub fn verbatim(out: &mut BytesMut, text: &[u8], resp3: bool) {
    if !resp3 {
        return bulk(out, text);
    }
    let mut digits = itoa::Buffer::new();
    let len = digits.format(text.len() + 4);
    out.reserve(text.len() + len.len() + 9);
    out.put_u8(b'=');
    out.put_slice(len.as_bytes());
    out.put_slice(b"\r\ntxt:");
    out.put_slice(text);
    out.put_slice(b"\r\n");
}

/// `*n\r\n`: the header of an array of `n` replies that follow.
#[inline]
pub fn array_header(out: &mut BytesMut, n: usize) {
    let mut digits = itoa::Buffer::new();
    let text = digits.format(n);
    out.reserve(text.len() + 3);
    out.put_u8(b'*');
    out.put_slice(text.as_bytes());
    out.put_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_redis_bytes() {
        let mut out = BytesMut::new();
        simple(&mut out, "OK");
        error(&mut out, "ERR bad\r\nthing");
        integer(&mut out, -42);
        bulk(&mut out, b"hi");
        bulk_integer(&mut out, 7);
        null(&mut out, false);
        array_header(&mut out, 2);
        map_header(&mut out, 1, false);
        verbatim(&mut out, b"a", false);
        assert_eq!(
            &out[..],
            b"+OK\r\n-ERR bad  thing\r\n:-42\r\n$2\r\nhi\r\n$1\r\n7\r\n$-1\r\n*2\r\n*2\r\n$1\r\na\r\n"
        );
    }

    #[test]
    fn resp3_has_its_own_null_map_and_verbatim() {
        let mut out = BytesMut::new();
        null(&mut out, true);
        map_header(&mut out, 2, true);
        verbatim(&mut out, b"# Server", true);
        assert_eq!(&out[..], b"_\r\n%2\r\n=12\r\ntxt:# Server\r\n");
    }
}
