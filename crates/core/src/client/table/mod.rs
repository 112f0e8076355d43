//! A location as a row of a table: the layout's columns (`layout`), a row's
//! cells into a create or update item (`read_cells`) and a record into cells (`write_cells`), the
//! rows of a file in any format (`rows`), and what is wrong with a row ([`RowError`]). Uses the
//! files below it, nothing above.

pub mod layout;
pub(crate) mod read_cells;
pub mod rows;
pub mod write_cells;

use serde::Serialize;

/// An error of a row: `field` names the CSV column or the JSON key path (empty when the error is
/// the request's, not a field's).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RowError {
    pub field: String,
    pub code: String,
    pub message: String,
}

impl RowError {
    pub fn new(field: impl Into<String>, code: impl Into<String>, message: impl Into<String>) -> RowError {
        RowError {
            field: field.into(),
            code: code.into(),
            message: message.into(),
        }
    }
}
