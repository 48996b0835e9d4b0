//! What can go wrong with a fetch, by kind: a guard refused it before anything was sent, the
//! exchange failed, or the answer is not something the model can read. Each says what in
//! words the model can act on.

/// A web fetch that did not bring back a page.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebError {
    /// A guard refused the URL, an address it resolves to, or a redirect, before anything
    /// was sent there.
    #[error("{0}")]
    Refused(String),
    /// The lookup, the connection or the answer failed, or the time ran out.
    #[error("{0}")]
    Failed(String),
    /// The answer is not a web page or text.
    #[error("{0}")]
    Unreadable(String),
}

pub type Result<T> = std::result::Result<T, WebError>;
