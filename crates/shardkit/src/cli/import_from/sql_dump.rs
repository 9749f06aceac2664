//! The rows of one table in a `mysqldump` file: its `CREATE TABLE` for the column
//! order and its `INSERT INTO` statements' value tuples, with MySQL's string escapes.
//! Enough for a YOURLS dump (`mysqldump DB yourls_url`), not a SQL parser.

/// One value of a row: `NULL`, or its text (numbers as written).
pub type Value = Option<String>;

/// A row: the dump's line it starts on, and its values.
pub type Row = (usize, Vec<Value>);

/// The column names (from `CREATE TABLE`, else from an `INSERT`'s column list) and
/// rows of `table` in `dump`, each row with the dump's line it starts on.
pub fn rows(dump: &str, table: &str) -> Result<(Vec<String>, Vec<Row>), String> {
    let mut columns = create_table_columns(dump, table);
    let mut rows = Vec::new();
    let insert = format!("INSERT INTO `{table}`");
    let mut at = 0;
    while let Some(found) = dump[at..].find(&insert) {
        let start = at + found + insert.len();
        let line = dump[..start].matches('\n').count() + 1;
        let rest = &dump[start..];
        let values_at = rest
            .find("VALUES")
            .ok_or_else(|| format!("line {line}: INSERT INTO `{table}` without VALUES"))?;
        let listed = rest[..values_at].trim();
        if listed.starts_with('(') && columns.is_empty() {
            columns = listed
                .trim_matches(|c| c == '(' || c == ')')
                .split(',')
                .map(|c| c.trim().trim_matches('`').to_string())
                .collect();
        }
        let (parsed, used) = tuples(&rest[values_at + "VALUES".len()..], line)?;
        rows.extend(parsed);
        at = start + values_at + "VALUES".len() + used;
    }
    if columns.is_empty() {
        return Err(format!(
            "no CREATE TABLE `{table}` nor column list in the dump: make it with mysqldump DB {table}"
        ));
    }
    Ok((columns, rows))
}

/// The column names of `CREATE TABLE `table``, in order; empty if absent.
fn create_table_columns(dump: &str, table: &str) -> Vec<String> {
    let Some(at) = dump.find(&format!("CREATE TABLE `{table}`")) else {
        return Vec::new();
    };
    dump[at..]
        .lines()
        .skip(1)
        .map(str::trim)
        .take_while(|l| l.starts_with('`'))
        .filter_map(|l| l[1..].split('`').next().map(str::to_string))
        .collect()
}

/// The tuples `(…),(…);` at the start of `text`; answers them and the bytes read.
fn tuples(text: &str, first_line: usize) -> Result<(Vec<Row>, usize), String> {
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut line = first_line;
    let mut out = Vec::new();
    let bad = |line: usize, what: &str| format!("line {line}: {what} in the INSERT's values");
    loop {
        while i < bytes.len() && (bytes[i] as char).is_ascii_whitespace()
            || bytes.get(i) == Some(&b',')
        {
            if bytes[i] == b'\n' {
                line += 1;
            }
            i += 1;
        }
        match bytes.get(i) {
            Some(b';') => return Ok((out, i + 1)),
            Some(b'(') => i += 1,
            _ => return Err(bad(line, "a row that does not start with (")),
        }
        let row_line = line;
        let mut row = Vec::new();
        loop {
            while bytes.get(i).is_some_and(|b| *b == b' ') {
                i += 1;
            }
            match bytes.get(i) {
                Some(b'\'') => {
                    let mut value = Vec::new();
                    i += 1;
                    loop {
                        match bytes.get(i) {
                            None => return Err(bad(row_line, "an unterminated string")),
                            Some(b'\\') => {
                                let c = *bytes
                                    .get(i + 1)
                                    .ok_or_else(|| bad(row_line, "a cut escape"))?;
                                value.push(match c {
                                    b'n' => b'\n',
                                    b'r' => b'\r',
                                    b't' => b'\t',
                                    b'0' => 0,
                                    b'Z' => 26,
                                    other => other,
                                });
                                i += 2;
                            }
                            Some(b'\'') if bytes.get(i + 1) == Some(&b'\'') => {
                                value.push(b'\'');
                                i += 2;
                            }
                            Some(b'\'') => {
                                i += 1;
                                break;
                            }
                            Some(&b) => {
                                if b == b'\n' {
                                    line += 1;
                                }
                                value.push(b);
                                i += 1;
                            }
                        }
                    }
                    row.push(Some(
                        String::from_utf8(value)
                            .map_err(|_| bad(row_line, "a string that is not UTF-8"))?,
                    ));
                }
                Some(_) => {
                    let end = text[i..]
                        .find([',', ')'])
                        .map(|e| i + e)
                        .ok_or_else(|| bad(row_line, "an unterminated row"))?;
                    let word = text[i..end].trim();
                    row.push((!word.eq_ignore_ascii_case("NULL")).then(|| word.to_string()));
                    i = end;
                }
                None => return Err(bad(row_line, "an unterminated row")),
            }
            while bytes.get(i).is_some_and(|b| *b == b' ') {
                i += 1;
            }
            match bytes.get(i) {
                Some(b',') => i += 1,
                Some(b')') => {
                    i += 1;
                    break;
                }
                _ => return Err(bad(row_line, "a value not followed by , or )")),
            }
        }
        out.push((row_line, row));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_come_back_with_their_escapes_and_nulls() {
        let dump = "CREATE TABLE `yourls_url` (\n  `keyword` varchar(100) NOT NULL,\n  `url` text NOT NULL,\n  `title` text,\n  PRIMARY KEY (`keyword`)\n);\nINSERT INTO `yourls_url` VALUES ('a','https://x/?q=1,2','It\\'s \"here\"'),('b','https://y/',NULL);\nINSERT INTO `yourls_url` VALUES ('c','https://z/','a''b\\\\c');\n";
        let (columns, rows) = rows(dump, "yourls_url").unwrap();
        assert_eq!(columns, ["keyword", "url", "title"]);
        let values: Vec<Vec<Value>> = rows.into_iter().map(|(_, r)| r).collect();
        assert_eq!(
            values[0],
            [
                Some("a".into()),
                Some("https://x/?q=1,2".into()),
                Some("It's \"here\"".into())
            ]
        );
        assert_eq!(values[1][2], None);
        assert_eq!(values[2][2].as_deref(), Some("a'b\\c"));
        assert!(super::rows("INSERT INTO `yourls_url` VALUES ('a", "yourls_url").is_err());
        assert!(super::rows("nothing here", "yourls_url").is_err());
    }
}
