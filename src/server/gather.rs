//! An answer's body handed to hyper as few frames as it can be: the buffers its body has ready are
//! gathered into one frame whose chunks hyper writes in one vectored write. hyper queues at most
//! 16 buffers before it writes, so an answer made of more pieces (a search page's kept records
//! between their distances) would otherwise go out in several writes, each waking the client.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http_body::{Body, Frame, SizeHint};

/// The most chunks a frame gathers: hyper writes up to 64 slices at once, one of them the head.
const MOST_CHUNKS: usize = 62;
/// The most bytes a frame gathers, well under what hyper buffers before it writes.
const MOST_BYTES: usize = 256 << 10;

/// A body whose ready data frames are gathered: each frame it yields holds every data frame its
/// inner body had ready, up to `MOST_CHUNKS` and `MOST_BYTES`; anything else (trailers, an
/// error) comes after the data gathered before it, in order.
pub struct Gather<B> {
    inner: B,
    /// What the inner body yielded after data already gathered, given at the next poll.
    held: Option<Result<Frame<Bytes>, axum::Error>>,
}

impl<B> Gather<B> {
    pub fn new(inner: B) -> Self {
        Gather { inner, held: None }
    }
}

impl<B> Body for Gather<B>
where
    B: Body<Data = Bytes, Error = axum::Error> + Unpin,
{
    type Data = Gathered;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Gathered>, axum::Error>>> {
        let this = self.get_mut();
        if let Some(held) = this.held.take() {
            return Poll::Ready(Some(held.map(|frame| frame.map_data(Gathered::one))));
        }
        let mut gathered = Gathered::default();
        while gathered.chunks.len() < MOST_CHUNKS && gathered.remaining < MOST_BYTES {
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => gathered.push(data),
                    Err(other) => {
                        this.held = Some(Ok(other));
                        break;
                    }
                },
                Poll::Ready(Some(Err(error))) => {
                    this.held = Some(Err(error));
                    break;
                }
                Poll::Ready(None) => break,
                Poll::Pending if gathered.remaining == 0 && this.held.is_none() => return Poll::Pending,
                Poll::Pending => break,
            }
        }
        if gathered.remaining > 0 {
            Poll::Ready(Some(Ok(Frame::data(gathered))))
        } else {
            // Only empty data before what ended the loop, if anything did.
            Poll::Ready(
                this.held
                    .take()
                    .map(|held| held.map(|frame| frame.map_data(Gathered::one))),
            )
        }
    }

    fn is_end_stream(&self) -> bool {
        self.held.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        // What is held is never data: the inner body's hint is the whole rest.
        self.inner.size_hint()
    }
}

/// Buffers sent one after another as one.
#[derive(Debug, Default)]
pub struct Gathered {
    /// None empty.
    chunks: VecDeque<Bytes>,
    remaining: usize,
}

impl Gathered {
    fn one(chunk: Bytes) -> Self {
        let mut gathered = Gathered::default();
        gathered.push(chunk);
        gathered
    }

    fn push(&mut self, chunk: Bytes) {
        if !chunk.is_empty() {
            self.remaining += chunk.len();
            self.chunks.push_back(chunk);
        }
    }
}

impl Buf for Gathered {
    fn remaining(&self) -> usize {
        self.remaining
    }

    fn chunk(&self) -> &[u8] {
        self.chunks.front().map_or(&[], |chunk| chunk.as_ref())
    }

    fn advance(&mut self, mut cnt: usize) {
        assert!(cnt <= self.remaining, "advanced past the end of the gathered buffers");
        self.remaining -= cnt;
        while cnt > 0 {
            let Some(front) = self.chunks.front_mut() else {
                return;
            };
            if cnt < front.len() {
                front.advance(cnt);
                return;
            }
            cnt -= front.len();
            self.chunks.pop_front();
        }
    }

    fn chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        let mut filled = 0;
        for (slot, chunk) in dst.iter_mut().zip(&self.chunks) {
            *slot = IoSlice::new(chunk);
            filled += 1;
        }
        filled
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::{BodyExt, StreamBody};
    use proptest::prelude::*;

    use super::*;

    fn gathered(chunks: &[Vec<u8>]) -> Gathered {
        let mut gathered = Gathered::default();
        for chunk in chunks {
            gathered.push(Bytes::from(chunk.clone()));
        }
        gathered
    }

    proptest! {
        /// Read through `chunk` and `chunks_vectored` in steps of any size, the buffers give their
        /// bytes in order, and `remaining` counts what is left.
        #[test]
        fn gathered_buffers_read_as_their_concatenation(
            chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..12),
            steps in prop::collection::vec(1usize..70, 1..30),
            slots in 1usize..5,
        ) {
            let whole: Vec<u8> = chunks.concat();
            let mut buf = gathered(&chunks);
            let mut read = Vec::new();
            for step in steps.iter().cycle().take(200) {
                prop_assert_eq!(buf.remaining(), whole.len() - read.len());
                if buf.remaining() == 0 {
                    prop_assert!(buf.chunk().is_empty());
                    break;
                }
                let mut iovs = vec![IoSlice::new(&[]); slots];
                let filled = buf.chunks_vectored(&mut iovs);
                prop_assert!(filled >= 1);
                let vectored: Vec<u8> = iovs[..filled].iter().flat_map(|iov| iov.iter().copied()).collect();
                prop_assert_eq!(&vectored[..], &whole[read.len()..read.len() + vectored.len()]);
                prop_assert_eq!(buf.chunk(), &vectored[..buf.chunk().len()]);
                let take = (*step).min(buf.remaining());
                read.extend_from_slice(&vectored[..take.min(vectored.len())]);
                if take > vectored.len() {
                    read.extend_from_slice(&whole[read.len()..read.len() + take - vectored.len()]);
                }
                buf.advance(take);
            }
            prop_assert_eq!(read, whole);
        }
    }

    fn body_of(frames: Vec<Result<Frame<Bytes>, axum::Error>>) -> axum::body::Body {
        axum::body::Body::new(StreamBody::new(futures_util::stream::iter(frames)))
    }

    async fn frames_of(body: axum::body::Body) -> Vec<Result<Frame<Gathered>, String>> {
        let mut gather = Gather::new(body);
        let mut frames = Vec::new();
        while let Some(frame) = gather.frame().await {
            frames.push(frame.map_err(|error| error.to_string()));
        }
        frames
    }

    fn data(frame: &Result<Frame<Gathered>, String>) -> Option<Vec<u8>> {
        let gathered = frame.as_ref().ok()?.data_ref()?;
        Some(gathered.chunks.iter().flat_map(|chunk| chunk.iter().copied()).collect())
    }

    #[tokio::test]
    async fn ready_data_goes_in_one_frame_and_trailers_after_it() {
        let mut trailers = axum::http::HeaderMap::new();
        trailers.insert("x-end", axum::http::HeaderValue::from_static("1"));
        let frames = frames_of(body_of(vec![
            Ok(Frame::data(Bytes::from_static(b"{\"a\":"))),
            Ok(Frame::data(Bytes::new())),
            Ok(Frame::data(Bytes::from_static(b"1}"))),
            Ok(Frame::trailers(trailers)),
        ]))
        .await;
        assert_eq!(frames.len(), 2);
        assert_eq!(data(&frames[0]).as_deref(), Some(&b"{\"a\":1}"[..]));
        let second = frames[1].as_ref().ok().and_then(|frame| frame.trailers_ref());
        assert_eq!(
            second.and_then(|t| t.get("x-end")).map(|v| v.as_bytes()),
            Some(&b"1"[..])
        );
    }

    #[tokio::test]
    async fn an_error_comes_after_the_data_before_it() {
        let frames = frames_of(body_of(vec![
            Ok(Frame::data(Bytes::from_static(b"part"))),
            Err(axum::Error::new(std::io::Error::other("gone"))),
        ]))
        .await;
        assert_eq!(frames.len(), 2);
        assert_eq!(data(&frames[0]).as_deref(), Some(&b"part"[..]));
        assert_eq!(frames[1].as_ref().err().map(String::as_str), Some("gone"));
    }

    #[tokio::test]
    async fn a_frame_gathers_a_bounded_number_of_chunks() {
        let pieces: Vec<Result<Frame<Bytes>, axum::Error>> = (0..MOST_CHUNKS * 2 + 1)
            .map(|n| Ok(Frame::data(Bytes::from(vec![n as u8]))))
            .collect();
        let frames = frames_of(body_of(pieces)).await;
        let sizes: Vec<usize> = frames.iter().map(|frame| data(frame).map_or(0, |d| d.len())).collect();
        assert_eq!(sizes, vec![MOST_CHUNKS, MOST_CHUNKS, 1]);
        let whole: Vec<u8> = frames.iter().filter_map(data).flatten().collect();
        let expected: Vec<u8> = (0..MOST_CHUNKS * 2 + 1).map(|n| n as u8).collect();
        assert_eq!(whole, expected);
    }

    #[tokio::test]
    async fn pieces_of_a_known_length_go_in_one_frame_that_ends_the_body() {
        let mut pieces = crate::http::body::Pieces::with_capacity(3);
        for piece in ["{\"results\":[", "{\"id\":1}", "]}"] {
            pieces.push(Bytes::from_static(piece.as_bytes()));
        }
        let mut gather = Gather::new(axum::body::Body::new(pieces));
        assert_eq!(gather.size_hint().exact(), Some(22));
        let frame = gather.frame().await.and_then(Result::ok);
        let gathered = frame.as_ref().and_then(Frame::data_ref);
        assert_eq!(gathered.map(|g| (g.chunks.len(), g.remaining())), Some((3, 22)));
        assert!(gather.is_end_stream());
        assert!(gather.frame().await.is_none());
    }

    #[tokio::test]
    async fn an_empty_body_ends_at_once() {
        assert!(frames_of(axum::body::Body::empty()).await.is_empty());
    }
}
