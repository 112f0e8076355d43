//! A row of either engine, as the statements written once for both read it.

/// A row of either engine, as the readers here take it (each engine binds its own row type).
pub trait Columns {
    type Error;
    fn int(&self, i: usize) -> Result<i64, Self::Error>;
    fn opt_int(&self, i: usize) -> Result<Option<i64>, Self::Error>;
    fn text(&self, i: usize) -> Result<String, Self::Error>;
    fn opt_text(&self, i: usize) -> Result<Option<String>, Self::Error>;
    fn flag(&self, i: usize) -> Result<bool, Self::Error>;
    fn bytes(&self, i: usize) -> Result<Vec<u8>, Self::Error>;
    fn real(&self, i: usize) -> Result<f64, Self::Error>;
}
