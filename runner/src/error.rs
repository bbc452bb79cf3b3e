use std::fmt;
use std::path::PathBuf;

/// Everything that can go wrong between reading a file and reading the
/// module's answer. Module traps and guest errors are `Call`, with the
/// engine's message, so a broken module never panics the runner.
#[derive(Debug)]
pub enum Error {
    /// A file could not be read.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// An input (request, settings, fixture) is not what it should be.
    Input(String),
    /// The module could not be compiled, linked or initialized.
    Load(String),
    /// A waPC call failed: the guest returned an error, trapped, or the host
    /// could not complete the call.
    Call { function: String, message: String },
    /// The guest answered, but not with what the Kubewarden protocol expects.
    BadResponse { function: String, message: String },
    /// `validate_settings` said no; the message is the module's own.
    InvalidSettings(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            Error::Input(message) => write!(f, "{message}"),
            Error::Load(message) => write!(f, "cannot load the module: {message}"),
            Error::Call { function, message } => {
                write!(f, "the module failed in `{function}`: {message}")
            }
            Error::BadResponse { function, message } => {
                write!(
                    f,
                    "the module's `{function}` answer is not valid: {message}"
                )
            }
            Error::InvalidSettings(message) => {
                write!(f, "settings rejected by the module: {message}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
