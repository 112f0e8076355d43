//! A response body made of a few shared buffers: hyper queues each one and sends them all in one
//! vectored write, with a `Content-Length` (the exact size is known), without copying them into
//! one buffer first. A list page is mostly one slice of the taxonomy's arena.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

#[derive(Debug, Default)]
pub struct Pieces {
    pieces: VecDeque<Bytes>,
    remaining: u64,
}

impl Pieces {
    pub fn with_capacity(capacity: usize) -> Self {
        Pieces {
            pieces: VecDeque::with_capacity(capacity),
            remaining: 0,
        }
    }

    pub fn push(&mut self, piece: impl Into<Bytes>) {
        let piece = piece.into();
        if !piece.is_empty() {
            self.remaining += piece.len() as u64;
            self.pieces.push_back(piece);
        }
    }
}

impl Body for Pieces {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let piece = this.pieces.pop_front();
        if let Some(piece) = &piece {
            this.remaining -= piece.len() as u64;
        }
        Poll::Ready(piece.map(|piece| Ok(Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.pieces.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test]
    async fn pieces_arrive_whole_in_order_with_their_exact_length() {
        let mut body = Pieces::with_capacity(4);
        body.push(Bytes::from_static(b"{\"a\":["));
        body.push(Vec::new());
        body.push(Bytes::from_static(b"1,2"));
        body.push(b"]}".to_vec());
        assert_eq!(body.size_hint().exact(), Some(11));
        assert!(!body.is_end_stream());
        let bytes = body.collect().await.map(|c| c.to_bytes());
        assert_eq!(bytes.ok().as_deref(), Some(&b"{\"a\":[1,2]}"[..]));
        assert!(Pieces::default().is_end_stream());
    }
}
