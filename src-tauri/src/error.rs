//! Errors as they cross IPC: the protocol's `ErrorInfo` (`{code, message, setting?}`), the
//! same type the CLI prints with `--json`, never a bare string. Runtime errors and settings
//! errors convert into it where they are defined.

pub use waymark_protocol::ErrorInfo as IpcError;

pub type IpcResult<T> = std::result::Result<T, IpcError>;
