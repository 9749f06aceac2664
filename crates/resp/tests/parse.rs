//! RESP framing under arbitrary delivery: a pipeline of commands split at random byte
//! boundaries parses to exactly the commands sent; random bytes never panic the
//! parser or make it loop.

use proptest::prelude::*;
use shardkit_resp::parse::Parsed;
use shardkit_resp::{Limits, ParseError, Parser};

type Commands = Vec<Vec<Vec<u8>>>;

/// Feeds `buf` to the parser like a connection does: every complete command is taken,
/// consumed bytes are dropped, the rest waits for more input.
fn drain(parser: &mut Parser, buf: &mut Vec<u8>, out: &mut Commands) -> Result<(), ParseError> {
    loop {
        let used = match parser.parse(buf)? {
            Parsed::Command(cmd, used) => {
                out.push(cmd.args().map(<[u8]>::to_vec).collect());
                used
            }
            Parsed::Skip(used) => used,
            Parsed::Incomplete => return Ok(()),
        };
        assert!(
            used > 0 && used <= buf.len(),
            "the parser must make progress within the buffer"
        );
        buf.drain(..used);
    }
}

fn multibulk(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend(format!("${}\r\n", arg.len()).bytes());
        out.extend(arg);
        out.extend(b"\r\n");
    }
    out
}

fn commands() -> impl Strategy<Value = Commands> {
    let arg = prop::collection::vec(any::<u8>(), 0..40);
    prop::collection::vec(prop::collection::vec(arg, 1..6), 1..30)
}

proptest! {
    #[test]
    fn a_pipeline_split_anywhere_parses_to_the_commands_sent(cmds in commands(), cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..20)) {
        let wire: Vec<u8> = cmds.iter().flat_map(|c| multibulk(c)).collect();
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(wire.len() + 1)).collect();
        points.push(0);
        points.push(wire.len());
        points.sort_unstable();
        let mut parser = Parser::new(Limits::default());
        let mut buf = Vec::new();
        let mut got = Vec::new();
        for pair in points.windows(2) {
            buf.extend_from_slice(&wire[pair[0]..pair[1]]);
            drain(&mut parser, &mut buf, &mut got).unwrap();
        }
        prop_assert!(buf.is_empty());
        prop_assert_eq!(got, cmds);
    }

    #[test]
    fn inline_commands_split_anywhere_parse_too(words in prop::collection::vec(prop::collection::vec("[a-zA-Z0-9:_]{1,12}", 1..5), 1..20), cut in any::<prop::sample::Index>()) {
        let wire: Vec<u8> = words.iter().flat_map(|w| format!("{}\r\n", w.join(" ")).into_bytes()).collect();
        let at = cut.index(wire.len() + 1);
        let mut parser = Parser::new(Limits::default());
        let (mut buf, mut got) = (wire[..at].to_vec(), Vec::new());
        drain(&mut parser, &mut buf, &mut got).unwrap();
        buf.extend_from_slice(&wire[at..]);
        drain(&mut parser, &mut buf, &mut got).unwrap();
        let expected: Commands = words.iter().map(|w| w.iter().map(|s| s.as_bytes().to_vec()).collect()).collect();
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn random_bytes_never_panic_and_always_progress(garbage in prop::collection::vec(any::<u8>(), 0..300), star in any::<bool>()) {
        let mut bytes = garbage;
        if star { bytes.insert(0, b'*'); }
        let mut parser = Parser::new(Limits { max_bulk_len: 64, max_array_len: 16, max_inline_len: 128, max_buffer: 1024 });
        let mut buf = bytes;
        let mut got = Vec::new();
        // Errors with a known boundary are skipped, as the server does; a fatal one ends it.
        for _ in 0..1000 {
            match drain(&mut parser, &mut buf, &mut got) {
                Ok(()) => break,
                Err(ParseError { skip: Some(n), .. }) => { prop_assert!(n > 0 && n <= buf.len()); buf.drain(..n); }
                Err(ParseError { skip: None, message }) => { prop_assert!(message.starts_with("Protocol error")); break; }
            }
        }
    }
}
