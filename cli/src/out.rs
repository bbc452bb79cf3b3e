//! Writing to stdout and stderr when the reader may be gone (`| head`,
//! `2>&1 | head`, a closed descriptor): `print!` and `eprint!` panic on a
//! failed write, and the release build aborts on a panic. Here a write
//! that fails is dropped: the command runs on and ends with the status its
//! work gives, as if the whole output had been read.

use std::fmt::Display;
use std::io::Write;

/// `text` and a line break on stderr.
pub fn err_line(text: impl Display) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// `text` on stderr, as it is (a progress line that `\r` rewrites).
pub fn err(text: impl Display) {
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "{text}");
    let _ = stderr.flush();
}

/// `text` on stdout, flushed.
pub fn out(text: impl Display) {
    let mut stdout = std::io::stdout().lock();
    let _ = write!(stdout, "{text}");
    let _ = stdout.flush();
}

/// A writer whose reader may go away: once a write finds the pipe broken,
/// it takes and drops everything after, so that the command still reads
/// all of its input and ends with the status that input gives. Any other
/// error is the writer's.
pub struct UntilGone<W> {
    inner: W,
    pub gone: bool,
}

impl<W> UntilGone<W> {
    pub fn new(inner: W) -> Self {
        UntilGone { inner, gone: false }
    }
}

impl<W: Write> Write for UntilGone<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.gone {
            return Ok(buf.len());
        }
        match self.inner.write(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.gone = true;
                Ok(buf.len())
            }
            other => other,
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.gone {
            return Ok(());
        }
        match self.inner.flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.gone = true;
                Ok(())
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stands for a pipe whose reader leaves after `room` bytes.
    struct Pipe {
        taken: Vec<u8>,
        room: usize,
    }

    impl Write for Pipe {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.taken.len() >= self.room {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
            let n = buf.len().min(self.room - self.taken.len());
            self.taken.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn after_a_broken_pipe_everything_is_taken_and_dropped() {
        let mut w = UntilGone::new(Pipe {
            taken: Vec::new(),
            room: 4,
        });
        w.write_all(b"abcdef").unwrap();
        w.write_all(b"ghi").unwrap();
        w.flush().unwrap();
        assert!(w.gone);
        assert_eq!(w.inner.taken, b"abcd");
    }
}
