//! The control socket: a Unix stream socket in the daemon's DPDK runtime
//! directory (`<runtime dir>/dataplane.sock`, next to EAL's own sockets, so
//! the file prefix finds it as it finds telemetry's). One request per
//! connection: the client writes one line, the daemon answers one line of
//! JSON and closes. The control loop polls the listener between its ticks,
//! so a request waits at most one tick. Nothing here blocks the loop:
//! connections are read without blocking as their bytes arrive, at most
//! [`MAX_PENDING`] at once; a client that has not sent its line after
//! [`CLIENT_TIMEOUT`] gets an error answer and is closed, as is one that
//! sends a bad line.
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long the daemon waits for a client's request line, and a client for
/// the answer's first byte after it (a 1M-route reload takes seconds).
pub const CLIENT_TIMEOUT: Duration = Duration::from_millis(500);
/// How long a client waits for the answer.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);

/// Connections being read at once; more wait in the listener's backlog.
pub const MAX_PENDING: usize = 64;
/// The longest request line.
const MAX_LINE: usize = 4096;

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
    /// Connections whose request line is still coming.
    pending: Vec<Pending>,
}

/// A connection being read: its bytes so far and when it is cut off.
struct Pending {
    stream: UnixStream,
    buf: Vec<u8>,
    deadline: Instant,
}

/// What reading a pending connection gave.
enum Progress {
    Waiting,
    Line(String),
    Refused(&'static str),
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
        Ok(ControlSocket {
            listener,
            path,
            pending: Vec::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next complete request, if any; never blocks. Takes waiting
    /// connections (up to [`MAX_PENDING`] open), reads what each has sent,
    /// and answers and closes those that sent a bad line or none in time.
    pub fn poll(&mut self) -> Option<Request> {
        self.accept_waiting();
        let now = Instant::now();
        let mut i = 0;
        while i < self.pending.len() {
            let progress = self.pending[i].read(now);
            match progress {
                Progress::Waiting => i += 1,
                Progress::Line(line) => {
                    let p = self.pending.swap_remove(i);
                    return Some(Request::new(p.stream, line));
                }
                Progress::Refused(why) => {
                    let p = self.pending.swap_remove(i);
                    tracing::warn!("control socket: bad request: {why}");
                    Request::new(p.stream, String::new()).answer(&Answer {
                        ok: false,
                        message: format!("bad request: {why}"),
                        generation: 0,
                        data: None,
                    });
                }
            }
        }
        None
    }

    fn accept_waiting(&mut self) {
        while self.pending.len() < MAX_PENDING {
            let stream = match self.listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    tracing::warn!("control socket: accept: {e}");
                    return;
                }
            };
            if let Err(e) = stream.set_nonblocking(true) {
                tracing::warn!("control socket: {e}");
                continue;
            }
            self.pending.push(Pending {
                stream,
                buf: Vec::new(),
                deadline: Instant::now() + CLIENT_TIMEOUT,
            });
        }
    }
}

impl Pending {
    /// Reads what has arrived (at most one line: a client cannot make the
    /// daemon buffer more than [`MAX_LINE`] bytes).
    fn read(&mut self, now: Instant) -> Progress {
        let mut chunk = [0u8; 512];
        loop {
            match io::Read::read(&mut self.stream, &mut chunk) {
                Ok(0) => return Progress::Refused("request line missing its newline"),
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    if let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                        return match std::str::from_utf8(&self.buf[..end]) {
                            Ok(l) => Progress::Line(l.trim().to_owned()),
                            Err(_) => Progress::Refused("request line is not UTF-8"),
                        };
                    }
                    if self.buf.len() > MAX_LINE {
                        return Progress::Refused("request line longer than 4096 bytes");
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Progress::Refused("connection failed"),
            }
        }
        if now >= self.deadline {
            Progress::Refused("no request line in time")
        } else {
            Progress::Waiting
        }
    }
}

impl Request {
    /// The request `line` read from `stream`, to be answered there: the
    /// answer's write may wait up to [`CLIENT_TIMEOUT`] for a client that
    /// does not read (one line: the socket buffer takes it at once from
    /// any client that does).
    fn new(stream: UnixStream, line: String) -> Request {
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_write_timeout(Some(CLIENT_TIMEOUT));
        Request { stream, line }
    }

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
        let mut sock = ControlSocket::bind(&dir).unwrap();
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
        // Silent clients never hold up the loop or the others: each poll
        // returns at once, a client that writes is answered meanwhile, and
        // a silent one is answered with an error after the timeout.
        let path = sock.path().to_owned();
        let silent: Vec<UnixStream> = (0..3 * MAX_PENDING)
            .map(|_| UnixStream::connect(&path).unwrap())
            .collect();
        let t = std::time::Instant::now();
        assert!(sock.poll().is_none());
        assert!(t.elapsed() < Duration::from_millis(50), "{:?}", t.elapsed());
        let start = Instant::now();
        let mut talker = None;
        let mut refused = 0;
        let mut answered = false;
        while start.elapsed() < CLIENT_TIMEOUT * 8 && !answered {
            let t = Instant::now();
            if let Some(r) = sock.poll() {
                assert_eq!(r.line, "stats");
                r.answer(&Answer {
                    ok: true,
                    message: "later".into(),
                    generation: 4,
                    data: None,
                });
                answered = true;
            }
            assert!(t.elapsed() < Duration::from_millis(50), "poll blocked");
            if talker.is_none() && start.elapsed() > CLIENT_TIMEOUT / 2 {
                let path = path.clone();
                talker = Some(std::thread::spawn(move || {
                    let mut s = UnixStream::connect(&path).unwrap();
                    s.write_all(b"stats\n").unwrap();
                    let mut a = String::new();
                    BufReader::new(&s).read_line(&mut a).unwrap();
                    serde_json::from_str::<Answer>(&a).unwrap()
                }));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(answered, "a client behind {} silent ones", silent.len());
        assert_eq!(talker.unwrap().join().unwrap().generation, 4);
        for s in &silent {
            s.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
            let mut a = String::new();
            if BufReader::new(s).read_line(&mut a).is_ok() && !a.is_empty() {
                let a: Answer = serde_json::from_str(&a).unwrap();
                assert!(!a.ok && a.message.contains("in time"), "{a:?}");
                refused += 1;
            }
        }
        assert!(refused >= MAX_PENDING, "{refused} silent clients answered");
        // Bad lines get an error answer.
        for junk in [&b"\xff\xfe\n"[..], &[b'x'; 5000][..]] {
            let mut s = UnixStream::connect(&path).unwrap();
            s.write_all(junk).unwrap();
            let mut a = String::new();
            let t = Instant::now();
            while sock.poll().is_none() && t.elapsed() < CLIENT_TIMEOUT * 2 {
                let _ = s.set_read_timeout(Some(Duration::from_millis(5)));
                if BufReader::new(&s).read_line(&mut a).is_ok() && !a.is_empty() {
                    break;
                }
            }
            let a: Answer = serde_json::from_str(&a).unwrap();
            assert!(!a.ok && a.message.starts_with("bad request"), "{a:?}");
        }
        drop(sock);
        assert!(!path.exists(), "socket file removed on drop");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
