//! Reading memory ahead of its use: a value of each 64-byte cache line a slice lies on, each read
//! independent of the others, so that the processor fetches the lines together rather than one
//! after another as the code that needs them comes to each.

use std::ops::BitXor;

/// The values of `items` one cache line apart (every `64 / size` th, and the last), xor-ed: what a
/// caller passes to [`std::hint::black_box`], so that the reads are made.
pub(super) fn a_value_a_line<T: Copy + Default + BitXor<Output = T>>(items: &[T]) -> T {
    let apart = (64 / std::mem::size_of::<T>().max(1)).max(1);
    items
        .iter()
        .step_by(apart)
        .chain(items.last())
        .fold(T::default(), |seen, item| seen ^ *item)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_of_each_line_is_read() {
        // Bytes 0, 64, 128, 192 and the last are read; the others (such as byte 1) are not.
        let mut bytes = vec![0u8; 200];
        for (at, bit) in [(0, 1), (64, 2), (128, 4), (192, 8), (199, 16), (1, 32), (100, 64)] {
            bytes[at] = bit;
        }
        assert_eq!(a_value_a_line(&bytes), 1 | 2 | 4 | 8 | 16);
        assert_eq!(a_value_a_line::<u8>(&[]), 0);
    }
}
