//! How a CSV file is written: its encoding (a byte order mark, `--encoding`, UTF-8,
//! or detected) and its delimiter (read from the header line, or `--delimiter`), found once before
//! the file is read; and the file as UTF-8 text in that encoding, streamed.

use std::io::{BufRead, BufReader, Read};

use encoding_rs::{Encoding, UTF_8};
use encoding_rs_io::DecodeReaderBytesBuilder;

/// How a CSV file is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CsvDialect {
    pub encoding: &'static Encoding,
    /// The file starts with a byte order mark (skipped).
    pub bom: bool,
    /// The encoding was detected (not marked, named or UTF-8): the summary names it.
    pub detected: bool,
    pub delimiter: u8,
}

/// What the command line says of a CSV file.
#[derive(Clone, Copy, Debug, Default)]
pub struct CsvOptions {
    pub delimiter: Option<u8>,
    pub encoding: Option<&'static Encoding>,
}

/// The delimiters a header line may use.
const DELIMITERS: [u8; 3] = [b',', b';', b'\t'];

/// How much of a file is read at once while looking at it.
const CHUNK: usize = 256 * 1024;

/// Finds the dialect of the file `open` opens (it is opened again for each look).
pub fn inspect<R: Read>(
    mut open: impl FnMut() -> std::io::Result<R>,
    options: CsvOptions,
) -> Result<CsvDialect, String> {
    let read_error = |e: std::io::Error| format!("cannot read the file: {e}");
    let mut reader = BufReader::with_capacity(CHUNK, open().map_err(read_error)?);
    let start = reader.fill_buf().map_err(read_error)?;
    let (encoding, bom, detected) = match Encoding::for_bom(start) {
        Some((encoding, _)) => (encoding, true, false),
        None => match options.encoding {
            Some(encoding) => (encoding, false, false),
            None => match look(reader)? {
                Looked::Utf8 => (UTF_8, false, false),
                Looked::Other { first_non_ascii } => {
                    let encoding = guess(open().map_err(read_error)?, first_non_ascii)?;
                    check_decodes(open().map_err(read_error)?, encoding)?;
                    (encoding, false, true)
                }
            },
        },
    };
    let mut dialect = CsvDialect {
        encoding,
        bom,
        detected,
        delimiter: b',',
    };
    dialect.delimiter = match options.delimiter {
        Some(delimiter) => delimiter,
        None => header_delimiter(decoded(open().map_err(read_error)?, dialect))?,
    };
    Ok(dialect)
}

/// The file as UTF-8 text: decoded from its encoding, its byte order mark left out. A UTF-8 file
/// is passed through as it is (the CSV reader checks each record).
pub fn decoded<'a>(reader: impl Read + 'a, dialect: CsvDialect) -> Box<dyn Read + 'a> {
    if dialect.encoding == UTF_8 && !dialect.bom {
        return Box::new(reader);
    }
    let mut builder = DecodeReaderBytesBuilder::new();
    if dialect.bom {
        builder.bom_sniffing(true).strip_bom(true).utf8_passthru(true);
    } else {
        builder.encoding(Some(dialect.encoding));
    }
    Box::new(builder.build(reader))
}

/// What the first look at a file without a mark found.
enum Looked {
    Utf8,
    /// Not UTF-8; where its first byte that is not ASCII is.
    Other {
        first_non_ascii: u64,
    },
}

/// How much text `chardetng` is shown: plenty for a guess, and a bounded cost whatever the file's
/// size.
const GUESS_FROM: u64 = 4 * 1024 * 1024;

/// Reads the whole file once: UTF-8 when it is valid UTF-8; an error naming the first line that is
/// not text when the file holds bytes no text has (a file of another kind, or UTF-16 without its
/// mark).
fn look(mut reader: impl BufRead) -> Result<Looked, String> {
    // The bytes of a character cut at a chunk's end, carried into the next.
    let mut pending: Vec<u8> = Vec::new();
    let mut offset = 0u64;
    let mut lines_before = 0u64;
    let mut first_invalid: Option<u64> = None;
    let mut first_control: Option<u64> = None;
    let mut first_non_ascii: Option<u64> = None;
    loop {
        let chunk = reader.fill_buf().map_err(|e| format!("cannot read the file: {e}"))?;
        if chunk.is_empty() {
            break;
        }
        let n = chunk.len();
        if first_non_ascii.is_none()
            && let Some(at) = chunk.iter().position(|b| !b.is_ascii())
        {
            first_non_ascii = Some(offset + at as u64);
        }
        if first_control.is_none()
            && let Some(at) = chunk.iter().position(|b| matches!(b, 0..=8 | 11 | 12 | 14..=31 | 127))
        {
            first_control = Some(lines_before + newlines(&chunk[..at]) + 1);
        }
        if first_invalid.is_none() {
            let mut text = std::mem::take(&mut pending);
            text.extend_from_slice(chunk);
            match std::str::from_utf8(&text) {
                Ok(_) => {}
                Err(e) if e.error_len().is_none() => pending = text[e.valid_up_to()..].to_vec(),
                Err(e) => first_invalid = Some(lines_before + newlines(&text[..e.valid_up_to()]) + 1),
            }
        }
        lines_before += newlines(chunk);
        offset += n as u64;
        reader.consume(n);
    }
    if first_invalid.is_none() && !pending.is_empty() {
        // The file ends in the middle of a character.
        first_invalid = Some(lines_before + 1);
    }
    match (first_control, first_invalid) {
        (Some(control), invalid) => Err(cannot_tell(invalid.map_or(control, |i| i.min(control)))),
        (None, None) => Ok(Looked::Utf8),
        (None, Some(_)) => Ok(Looked::Other {
            first_non_ascii: first_non_ascii.unwrap_or(0),
        }),
    }
}

/// The encoding `chardetng` guesses from the text that starts at the file's first byte that is
/// not ASCII (what comes before it tells nothing).
fn guess(reader: impl Read, first_non_ascii: u64) -> Result<&'static Encoding, String> {
    let mut reader = BufReader::with_capacity(CHUNK, reader);
    std::io::copy(&mut (&mut reader).take(first_non_ascii), &mut std::io::sink())
        .map_err(|e| format!("cannot read the file: {e}"))?;
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
    let mut sample = reader.take(GUESS_FROM);
    let mut buffer = vec![0u8; CHUNK];
    loop {
        let n = sample
            .read(&mut buffer)
            .map_err(|e| format!("cannot read the file: {e}"))?;
        if n == 0 {
            break;
        }
        detector.feed(&buffer[..n], false);
    }
    detector.feed(&[], true);
    Ok(detector.guess(None, chardetng::Utf8Detection::Deny))
}

/// The detected encoding reads the whole file without a byte it has no character for.
fn check_decodes(mut reader: impl Read, encoding: &'static Encoding) -> Result<(), String> {
    let mut decoder = encoding.new_decoder_without_bom_handling();
    let mut input = vec![0u8; CHUNK];
    let mut output = String::with_capacity(CHUNK * 3 + 16);
    let mut lines = 0u64;
    loop {
        let n = reader
            .read(&mut input)
            .map_err(|e| format!("cannot read the file: {e}"))?;
        let last = n == 0;
        let mut rest = &input[..n];
        loop {
            output.clear();
            let (result, read) = decoder.decode_to_string_without_replacement(rest, &mut output, last);
            match result {
                encoding_rs::DecoderResult::Malformed(..) => {
                    let line = lines + newlines(output.as_bytes()) + 1;
                    return Err(cannot_tell(line));
                }
                encoding_rs::DecoderResult::OutputFull => {
                    lines += newlines(output.as_bytes());
                    rest = &rest[read..];
                }
                encoding_rs::DecoderResult::InputEmpty => {
                    lines += newlines(output.as_bytes());
                    break;
                }
            }
        }
        if last {
            return Ok(());
        }
    }
}

fn cannot_tell(line: u64) -> String {
    format!(
        "line {line}: not UTF-8 text, and its encoding cannot be told; name it with --encoding (a WHATWG label \
         such as windows-1251, koi8-r, iso-8859-1 or utf-16le)"
    )
}

fn newlines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|b| **b == b'\n').count() as u64
}

/// The delimiter the header line uses most (outside quotes): `,`, `;` or a tab; `,` when it uses
/// none (a file of one column).
fn header_delimiter(reader: impl Read) -> Result<u8, String> {
    // The header is at most a few hundred bytes; a line longer than this is not one.
    let mut line = Vec::new();
    BufReader::new(reader.take(64 * 1024))
        .read_until(b'\n', &mut line)
        .map_err(|e| format!("cannot read the file: {e}"))?;
    let mut counts = [0usize; DELIMITERS.len()];
    let mut quoted = false;
    for byte in line {
        if byte == b'"' {
            quoted = !quoted;
        } else if !quoted && let Some(k) = DELIMITERS.iter().position(|d| *d == byte) {
            counts[k] += 1;
        }
    }
    let (best, count) = counts
        .iter()
        .enumerate()
        .max_by_key(|(k, count)| (**count, std::cmp::Reverse(*k)))
        .map_or((0, 0), |(k, count)| (k, *count));
    Ok(if count == 0 { b',' } else { DELIMITERS[best] })
}

/// `--delimiter`: `,`, `;`, or a tab (`tab`, `\t` or the character).
pub fn parse_delimiter(text: &str) -> Result<u8, String> {
    match text {
        "," => Ok(b','),
        ";" => Ok(b';'),
        "tab" | "\\t" | "\t" => Ok(b'\t'),
        other => Err(format!("{other:?} is not a delimiter: use , ; or tab")),
    }
}

/// `--encoding`: a WHATWG label.
pub fn parse_encoding(label: &str) -> Result<&'static Encoding, String> {
    Encoding::for_label(label.trim().as_bytes())
        .ok_or_else(|| format!("{label:?} is not an encoding label (windows-1251, koi8-r, iso-8859-1, utf-16le, …)"))
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    fn inspect_bytes(bytes: &[u8], options: CsvOptions) -> Result<CsvDialect, String> {
        inspect(|| Ok(Cursor::new(bytes.to_vec())), options)
    }

    fn text_of(bytes: &[u8], dialect: CsvDialect) -> String {
        let mut text = String::new();
        decoded(Cursor::new(bytes.to_vec()), dialect)
            .read_to_string(&mut text)
            .unwrap();
        text
    }

    #[test]
    fn the_delimiter_is_read_from_the_header() {
        let none = CsvOptions::default();
        assert_eq!(inspect_bytes(b"name,latitude\nA;B,1", none).unwrap().delimiter, b',');
        assert_eq!(inspect_bytes(b"name;latitude\nA,B;1", none).unwrap().delimiter, b';');
        assert_eq!(inspect_bytes(b"name\tlatitude\n", none).unwrap().delimiter, b'\t');
        assert_eq!(inspect_bytes(b"\"a,b\";name;x\n", none).unwrap().delimiter, b';');
        assert_eq!(inspect_bytes(b"name\n", none).unwrap().delimiter, b',');
        let forced = CsvOptions {
            delimiter: Some(b';'),
            ..none
        };
        assert_eq!(inspect_bytes(b"name,latitude\n", forced).unwrap().delimiter, b';');
    }

    #[test]
    fn encodings_are_marked_named_utf_8_or_detected() {
        let none = CsvOptions::default();
        let text = "name;address_tail\nТочка;Москва, Тверская улица, дом 1\n";
        // UTF-16 with its mark.
        let mut utf16: Vec<u8> = vec![0xFF, 0xFE];
        utf16.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
        let dialect = inspect_bytes(&utf16, none).unwrap();
        assert_eq!(
            (dialect.encoding.name(), dialect.bom, dialect.delimiter),
            ("UTF-16LE", true, b';')
        );
        assert_eq!(text_of(&utf16, dialect), text);
        // UTF-8 with its mark: the mark is not text.
        let marked = [b"\xEF\xBB\xBF".as_slice(), text.as_bytes()].concat();
        assert_eq!(text_of(&marked, inspect_bytes(&marked, none).unwrap()), text);
        // Windows-1251 and KOI8-R, detected (chardetng names KOI8-R text KOI8-U, the superset that
        // reads its letters alike).
        for (name, detected) in [("windows-1251", "windows-1251"), ("KOI8-R", "KOI8-U")] {
            let encoding = Encoding::for_label(name.as_bytes()).unwrap();
            let (bytes, _, _) = encoding.encode(text);
            let dialect = inspect_bytes(&bytes, none).unwrap();
            assert_eq!((dialect.encoding.name(), dialect.detected), (detected, true));
            assert_eq!(text_of(&bytes, dialect), text);
        }
        // Russian only after more ASCII than the guess is shown: guessed from where it starts.
        let mut late_text = "name;comment\n".to_owned();
        late_text.push_str(&"A;plain ascii row\n".repeat(300_000));
        late_text.push_str(text);
        let (bytes, _, _) = encoding_rs::WINDOWS_1251.encode(&late_text);
        assert!(bytes.len() as u64 > GUESS_FROM);
        assert_eq!(inspect_bytes(&bytes, none).unwrap().encoding, encoding_rs::WINDOWS_1251);
        // Named: used as it is.
        let (bytes, _, _) = encoding_rs::WINDOWS_1251.encode(text);
        let named = CsvOptions {
            encoding: Some(encoding_rs::WINDOWS_1251),
            ..none
        };
        assert!(!inspect_bytes(&bytes, named).unwrap().detected);
        // UTF-16 without its mark cannot be told, and the message says where and what to do.
        let unmarked = &utf16[2..];
        let error = inspect_bytes(unmarked, none).unwrap_err();
        assert!(
            error.starts_with("line 1: not UTF-8") && error.contains("--encoding"),
            "{error}"
        );
        let mut late = b"name\nA\nB\n".to_vec();
        late.extend_from_slice(b"\x00\xFF\x01\n");
        assert!(inspect_bytes(&late, none).unwrap_err().starts_with("line 4:"));
    }
}
