//! Writing RESP2 replies straight into a connection's output buffer.

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

/// `$-1\r\n`: the null bulk string (a missing key).
#[inline]
pub fn null(out: &mut BytesMut) {
    out.put_slice(b"$-1\r\n");
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
        null(&mut out);
        array_header(&mut out, 2);
        assert_eq!(
            &out[..],
            b"+OK\r\n-ERR bad  thing\r\n:-42\r\n$2\r\nhi\r\n$1\r\n7\r\n$-1\r\n*2\r\n"
        );
    }
}
