//! A loopback TCP forwarder that delays every chunk it passes on by a fixed time, each
//! way, standing in for the distance between two regions when network namespaces
//! cannot be made; it can be cut (new connections never answered, open ones closed) and
//! mended. The target is set after start, so two servers can name each other's proxy.

#![allow(dead_code)]

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Forwards `127.0.0.1:port` to a target, `delay` late each way.
pub struct DelayProxy {
    port: u16,
    target: Arc<Mutex<Option<SocketAddr>>>,
    cut: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
    /// Connections made through it.
    pub connections: Arc<AtomicU64>,
}

/// Copies `from` to `to`, each chunk delivered `delay` after it was read (a queue,
/// so a stream of chunks pays the delay once, as on a long link).
fn pipe(mut from: TcpStream, to: TcpStream, delay: Duration) {
    let (send, receive) = std::sync::mpsc::channel::<(Instant, Vec<u8>)>();
    let mut writer = to.try_clone().unwrap();
    let deliver = std::thread::spawn(move || {
        for (due, chunk) in receive {
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            if writer.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = writer.shutdown(Shutdown::Write);
    });
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if send
                    .send((Instant::now() + delay, buf[..n].to_vec()))
                    .is_err()
                {
                    break;
                }
            }
        }
    }
    drop(send);
    let _ = deliver.join();
    let _ = to.shutdown(Shutdown::Both);
    let _ = from.shutdown(Shutdown::Both);
}

impl DelayProxy {
    /// Starts on a free loopback port; nothing is forwarded until [`Self::set_target`].
    pub fn start(delay: Duration) -> Self {
        Self::start_on("127.0.0.1", delay)
    }

    /// Starts on a free port of address `ip` (one of this namespace's).
    pub fn start_on(ip: &str, delay: Duration) -> Self {
        let listener = TcpListener::bind((ip, 0)).expect("bind a free port");
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let proxy = Self {
            port,
            target: Arc::default(),
            cut: Arc::default(),
            stop: Arc::default(),
            open: Arc::default(),
            connections: Arc::default(),
        };
        let (target, cut, stop, open, connections) = (
            proxy.target.clone(),
            proxy.cut.clone(),
            proxy.stop.clone(),
            proxy.open.clone(),
            proxy.connections.clone(),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let to = *target.lock().unwrap();
                        let Some(to) = to.filter(|_| !cut.load(Ordering::Relaxed)) else {
                            // Cut: accepted and never answered, as a link losing every
                            // packet looks to the caller (it waits for its timeout).
                            open.lock().unwrap().push(client);
                            continue;
                        };
                        client.set_nonblocking(false).unwrap();
                        let Ok(upstream) = TcpStream::connect(to) else {
                            continue;
                        };
                        connections.fetch_add(1, Ordering::Relaxed);
                        open.lock()
                            .unwrap()
                            .extend([client.try_clone().unwrap(), upstream.try_clone().unwrap()]);
                        let (c2, u2) = (client.try_clone().unwrap(), upstream.try_clone().unwrap());
                        std::thread::spawn(move || pipe(client, upstream, delay));
                        std::thread::spawn(move || pipe(u2, c2, delay));
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(2))
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        proxy
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Where connections go from now on.
    pub fn set_target(&self, target: SocketAddr) {
        *self.target.lock().unwrap() = Some(target);
    }

    /// Cuts the link (`true`: new connections are held unanswered, open ones shut) or
    /// mends it.
    pub fn set_cut(&self, cut: bool) {
        self.cut.store(cut, Ordering::Relaxed);
        if cut {
            for stream in self.open.lock().unwrap().drain(..) {
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.set_cut(true);
    }
}
