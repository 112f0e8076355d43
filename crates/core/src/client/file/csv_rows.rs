//! The records of a CSV file, each with the line it starts on, in one of the
//! delimiters spreadsheet programs write, from text already decoded to UTF-8.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::Read;
use std::rc::Rc;

/// A reader that remembers where its line breaks are (`\n`, and `\r` not followed by `\n`), for
/// the line a CSV record starts on. The csv crate counts `\n` only, and after a `\r\n` it places
/// the next record at the `\n`, on the line before the record's own.
struct LineBreaks<R> {
    inner: R,
    offset: u64,
    /// A `\r` at the end of what was read so far: a break unless a `\n` follows.
    pending_cr: Option<u64>,
    breaks: Rc<RefCell<Breaks>>,
}

#[derive(Default)]
struct Breaks {
    /// Offsets of breaks not yet passed by a record.
    ahead: VecDeque<u64>,
    /// Breaks already passed.
    passed: u64,
}

impl<R: Read> Read for LineBreaks<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut breaks = self.breaks.borrow_mut();
        for (i, byte) in buf[..n].iter().enumerate() {
            let at = self.offset + i as u64;
            match (*byte, self.pending_cr.take()) {
                (b'\n', _) => breaks.ahead.push_back(at),
                (other, cr) => {
                    if let Some(cr) = cr {
                        breaks.ahead.push_back(cr);
                    }
                    if other == b'\r' {
                        self.pending_cr = Some(at);
                    }
                }
            }
        }
        if n == 0
            && let Some(cr) = self.pending_cr.take()
        {
            breaks.ahead.push_back(cr);
        }
        self.offset += n as u64;
        Ok(n)
    }
}

/// The line a record that starts at `position` is on (1-based): one more than the breaks before it
/// (a break at its very first byte is the one the csv crate left in front of it).
fn start_line(position: Option<&csv::Position>, breaks: &RefCell<Breaks>) -> u64 {
    let Some(position) = position else { return 0 };
    let mut breaks = breaks.borrow_mut();
    while breaks.ahead.front().is_some_and(|b| *b <= position.byte()) {
        breaks.ahead.pop_front();
        breaks.passed += 1;
    }
    breaks.passed + 1
}

/// Reads the records of `reader` (UTF-8) separated by `delimiter`, the header's first, handing each
/// with the line it starts on to `each`; stops when `each` answers `false` or fails.
pub(crate) fn scan_csv(
    reader: impl Read,
    delimiter: u8,
    each: &mut dyn FnMut(u64, &csv::StringRecord) -> Result<bool, String>,
) -> Result<(), String> {
    let breaks = Rc::new(RefCell::new(Breaks::default()));
    let reader = LineBreaks {
        inner: reader,
        offset: 0,
        pending_cr: None,
        breaks: Rc::clone(&breaks),
    };
    let mut csv = csv::ReaderBuilder::new()
        .flexible(true)
        .has_headers(false)
        .delimiter(delimiter)
        .from_reader(reader);
    let csv_error = |e: csv::Error| {
        let line = e.position().map_or(String::new(), |p| format!("line {}: ", p.line()));
        format!("{line}{e}")
    };
    let mut record = csv::StringRecord::new();
    while csv.read_record(&mut record).map_err(csv_error)? {
        let line = start_line(record.position(), &breaks);
        if !each(line, &record)? {
            break;
        }
    }
    Ok(())
}
