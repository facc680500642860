//! The control socket: a Unix stream socket in the daemon's DPDK runtime
//! directory (`<runtime dir>/dataplane.sock`, next to EAL's own sockets, so
//! the file prefix finds it as it finds telemetry's). One request per
//! connection: the client writes one line, the daemon answers one line of
//! JSON and closes. The control loop polls the listener between its ticks,
//! so a request waits at most one tick; a slow or silent client is cut off
//! after [`CLIENT_TIMEOUT`] and cannot stall the loop for longer.
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long the daemon waits for a client's request line, and a client for
/// the answer's first byte after it (a 1M-route reload takes seconds).
pub const CLIENT_TIMEOUT: Duration = Duration::from_millis(500);
/// How long a client waits for the answer.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);

/// The socket's file name in the runtime directory.
pub const SOCKET_NAME: &str = "dataplane.sock";

/// DPDK's runtime directory for `file_prefix`, as EAL 22.11 creates it
/// (`eal_create_runtime_dir`): `/var/run/dpdk/<prefix>` for root, else
/// `$XDG_RUNTIME_DIR/dpdk/<prefix>` or `/tmp/dpdk/<prefix>`.
pub fn runtime_dir(file_prefix: &str) -> PathBuf {
    let base = if nix_is_root() {
        PathBuf::from("/var/run")
    } else {
        std::env::var_os("XDG_RUNTIME_DIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
    };
    base.join("dpdk").join(file_prefix)
}

fn nix_is_root() -> bool {
    // The effective uid, read from /proc to keep this module free of FFI.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(str::to_owned))
        })
        .is_some_and(|euid| euid == "0")
}

/// An answer: whether the request was carried out, what happened, and the
/// table generation in force afterwards.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Answer {
    pub ok: bool,
    pub message: String,
    #[serde(default)]
    pub generation: u64,
    /// A request's data (`stats`: the live report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

/// The daemon's end. Removes its file when dropped.
pub struct ControlSocket {
    listener: UnixListener,
    path: PathBuf,
}

/// A request read from a client, to be answered with [`Request::answer`].
pub struct Request {
    stream: UnixStream,
    pub line: String,
}

impl ControlSocket {
    /// Listens at `dir/dataplane.sock` (a stale file from a crashed daemon
    /// is replaced: the runtime directory is this prefix's, and EAL already
    /// refused to start if another primary holds it).
    pub fn bind(dir: &Path) -> io::Result<ControlSocket> {
        let path = dir.join(SOCKET_NAME);
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path)?;
        listener.set_nonblocking(true)?;
        Ok(ControlSocket { listener, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next waiting request, if any (never blocks for longer than
    /// [`CLIENT_TIMEOUT`] on a client that connected but sends nothing).
    pub fn poll(&self) -> Option<Request> {
        loop {
            let stream = match self.listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
                Err(e) => {
                    tracing::warn!("control socket: accept: {e}");
                    return None;
                }
            };
            match read_request(stream) {
                Ok(r) => return Some(r),
                Err(e) => tracing::warn!("control socket: bad request: {e}"),
            }
        }
    }
}

fn read_request(stream: UnixStream) -> io::Result<Request> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let mut line = String::new();
    // At most one short line: a client cannot make the daemon buffer more.
    let mut r = BufReader::new(io::Read::take(&stream, 4096));
    r.read_line(&mut line)?;
    if !line.ends_with('\n') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "request line missing its newline, or longer than 4096 bytes",
        ));
    }
    Ok(Request {
        stream,
        line: line.trim().to_owned(),
    })
}

impl Request {
    /// Sends the answer (a client that went away is only logged).
    pub fn answer(mut self, a: &Answer) {
        let mut s = serde_json::to_string(a).unwrap_or_else(|_| "{\"ok\":false}".into());
        s.push('\n');
        if let Err(e) = self.stream.write_all(s.as_bytes()) {
            tracing::warn!("control socket: answer not delivered: {e}");
        }
    }
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The client's end: sends `line` to the daemon of `file_prefix` and waits
/// for its answer.
pub fn request(file_prefix: &str, line: &str) -> io::Result<Answer> {
    let path = runtime_dir(file_prefix).join(SOCKET_NAME);
    let mut s = UnixStream::connect(&path).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "no daemon is listening at {} (is one running with file prefix `{file_prefix}`?): {e}",
                path.display()
            ),
        )
    })?;
    s.set_read_timeout(Some(ANSWER_TIMEOUT))?;
    s.write_all(line.as_bytes())?;
    s.write_all(b"\n")?;
    let mut answer = String::new();
    BufReader::new(&s).read_line(&mut answer)?;
    serde_json::from_str(&answer).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unreadable answer from the daemon ({e}): {answer:?}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_gets_its_answer_and_junk_is_refused() {
        let dir = std::env::temp_dir().join(format!("dp-sock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sock = ControlSocket::bind(&dir).unwrap();
        assert!(sock.poll().is_none(), "nothing waiting");
        let path = sock.path().to_owned();
        let client = std::thread::spawn(move || {
            let mut s = UnixStream::connect(&path).unwrap();
            s.write_all(b"stats\n").unwrap();
            let mut a = String::new();
            BufReader::new(&s).read_line(&mut a).unwrap();
            serde_json::from_str::<Answer>(&a).unwrap()
        });
        let req = loop {
            if let Some(r) = sock.poll() {
                break r;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        assert_eq!(req.line, "stats");
        req.answer(&Answer {
            ok: true,
            message: "fine".into(),
            generation: 3,
            data: None,
        });
        let a = client.join().unwrap();
        assert!(a.ok);
        assert_eq!(a.generation, 3);
        // A client that never ends its line is dropped after the timeout,
        // and the socket goes on answering others.
        let path = sock.path().to_owned();
        let _silent = UnixStream::connect(&path).unwrap();
        let t = std::time::Instant::now();
        assert!(sock.poll().is_none());
        assert!(t.elapsed() < CLIENT_TIMEOUT * 3);
        drop(sock);
        assert!(!path.exists(), "socket file removed on drop");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
