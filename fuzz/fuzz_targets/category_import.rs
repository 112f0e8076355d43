//! A categories file in both formats (and detected): it loads, or it reports problems; never both
//! silent and refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storefront_core::domain::category::import::{self, Format, Mode};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for format in [None, Some(Format::Json), Some(Format::Google)] {
        let parsed = import::parse(&text, format);
        let had_problems = !parsed.problems.is_empty();
        match import::merge(Vec::new(), parsed, Mode::Replace) {
            Ok(_) => assert!(!had_problems, "loaded although problems were found"),
            Err(problems) => assert!(!problems.is_empty(), "refused without a problem"),
        }
    }
});
