//! A response body watched as it is written: what it carries is told to a callback (the
//! bytes a client took, the connection at work until it ends), its length kept, so an
//! answer of known size is still sent with its `content-length`.

use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame, SizeHint};

/// `inner`, with `on_data` told the length of each of its data frames as they are taken.
pub(super) struct Watched<F> {
    inner: axum::body::Body,
    on_data: F,
}

impl<F: FnMut(usize) + Send + Unpin + 'static> Watched<F> {
    pub(super) fn body(inner: axum::body::Body, on_data: F) -> axum::body::Body {
        axum::body::Body::new(Watched { inner, on_data })
    }
}

impl<F: FnMut(usize) + Unpin> Body for Watched<F> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            (self.on_data)(data.len());
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
