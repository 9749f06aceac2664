//! A loopback TCP forwarder that a test can cut and bring back, standing in for a
//! database server that is lost and returns (its port stays the same).

#![allow(dead_code)]

use std::io::ErrorKind;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Forwards `127.0.0.1:port` to `target` until killed.
pub struct TcpProxy {
    port: u16,
    target: SocketAddr,
    stop: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
    acceptor: Option<JoinHandle<()>>,
}

impl TcpProxy {
    /// Starts forwarding a free loopback port to `target`.
    pub fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
        let port = listener.local_addr().unwrap().port();
        let mut proxy = Self {
            port,
            target,
            stop: Arc::new(AtomicBool::new(false)),
            open: Arc::default(),
            acceptor: None,
        };
        proxy.serve(listener);
        proxy
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    fn serve(&mut self, listener: TcpListener) {
        listener.set_nonblocking(true).unwrap();
        let (stop, open, target) = (self.stop.clone(), self.open.clone(), self.target);
        self.acceptor = Some(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        let Ok(upstream) = TcpStream::connect(target) else {
                            continue;
                        };
                        for (from, to) in [(&client, &upstream), (&upstream, &client)] {
                            let (mut from, mut to) =
                                (from.try_clone().unwrap(), to.try_clone().unwrap());
                            std::thread::spawn(move || {
                                let _ = std::io::copy(&mut from, &mut to);
                                let _ = to.shutdown(Shutdown::Both);
                                let _ = from.shutdown(Shutdown::Both);
                            });
                        }
                        open.lock().unwrap().extend([client, upstream]);
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(5))
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        }));
    }

    /// The server is lost: the port stops accepting and every open connection is cut.
    pub fn kill(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        for stream in self.open.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    /// The server is back on the same port.
    pub fn restart(&mut self) {
        self.kill();
        self.stop.store(false, Ordering::Relaxed);
        let listener = TcpListener::bind(("127.0.0.1", self.port)).expect("rebind the proxy port");
        self.serve(listener);
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.kill();
    }
}
