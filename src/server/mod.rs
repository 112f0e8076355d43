//! The accept loop and the discipline every connection keeps (time limits, connections per
//! client, bounded memory).
//!
//! hyper-util serves each connection (HTTP/1.1, or HTTP/2 after its preface); what it does not
//! bound, this module does, with one small watchdog task per connection:
//! - **first head**: a connection on which no request head has arrived `head_timeout` after it
//!   was accepted is closed, whatever it sent (a load balancer's PROXY header included: one
//!   deadline from accept). hyper's own HTTP/1 header timeout is switched off: it starts only with
//!   the first byte, and it restarts for every later head, so it would close an idle keep-alive
//!   connection at the head deadline rather than the idle one; HTTP/2 has none.
//! - **idle**: a connection with no request in progress for `idle_timeout` is closed, both
//!   protocols (hyper closes neither). A request is in progress from its head until its answer's
//!   body has been handed to hyper whole. HTTP/2 keep-alive pings find peers that vanished.
//! - **admission**: at most `max_connections` open at once and `max_per_client` from one client
//!   address; one more is closed as soon as it is accepted, the open ones undisturbed. At start
//!   the process raises its file-descriptor limit and lowers `max_connections` to fit it.
//! - **shutdown**: connections with no request in progress close at once; the others finish the
//!   request in progress (HTTP/1.1 closes after it, HTTP/2 gets GOAWAY) and close when hyper has
//!   written the last byte of its answer (the connection's own future ends), not when the handler
//!   returns, so a large answer to a slow reader arrives whole; the caller caps the wait.
//!
//! - **load balancers**: a connection from an address named in `proxies` opens with a PROXY
//!   protocol header (`proxy`), read within the head deadline; the client it names is the
//!   connection's client, counted per client from then on.
//!
//! The watchdog sleeps until the one instant that matters next (the head deadline, or the idle
//! deadline) and looks at the connection's counters then; requests only update atomics and never
//! wake it, so serving a request costs no extra task wake-up.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

pub mod proxy;

/// A client must send its request headers within this time.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection with no request in progress for this long is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How often an HTTP/2 connection is pinged, and how long a ping may go unanswered.
const H2_KEEP_ALIVE: Duration = Duration::from_secs(20);
/// File descriptors kept for everything but client connections: the listener, database files
/// and connections, the log, the process's own.
pub const RESERVED_FDS: u64 = 256;

/// The peer address of the connection a request came on (for per-client budgets and logs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr(pub SocketAddr);

/// The limits of the accept loop.
#[derive(Clone, Debug)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    /// `0`: no per-client limit (behind a load balancer whose address every client shares).
    pub max_per_client: usize,
    pub head_timeout: Duration,
    pub idle_timeout: Duration,
    /// Load balancers whose connections open with a PROXY protocol header naming the client.
    pub proxies: Arc<[IpAddr]>,
}

impl Default for ConnectionLimits {
    /// The documented defaults (the `serve` flags' help says each).
    fn default() -> Self {
        ConnectionLimits {
            max_connections: 4096,
            max_per_client: 256,
            head_timeout: HEAD_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
            proxies: Arc::from([]),
        }
    }
}

impl ConnectionLimits {
    /// Raises the process's soft limit on open files as far as the hard limit allows, and lowers
    /// `max_connections` (with a warning) when even that leaves too few for them.
    pub fn fit_descriptors(mut self) -> Self {
        let soft = match rlimit::increase_nofile_limit(u64::MAX) {
            Ok(soft) => soft,
            Err(e) => {
                tracing::warn!(error = %e, "could not read or raise the open-file limit");
                return self;
            }
        };
        let room = usize::try_from(soft.saturating_sub(RESERVED_FDS))
            .unwrap_or(usize::MAX)
            .max(1);
        if room < self.max_connections {
            tracing::warn!(
                open_file_limit = soft,
                requested = self.max_connections,
                max_connections = room,
                "the open-file limit leaves room for fewer connections than --max-connections; lowered"
            );
            self.max_connections = room;
        }
        self
    }
}

/// Who may open one more connection: a permit of the total and a count per client address.
struct Admission {
    total: Arc<Semaphore>,
    per_client: Mutex<HashMap<IpAddr, usize>>,
    max_per_client: usize,
}

/// An admitted connection's place, given back when it closes.
struct Admitted {
    admission: Arc<Admission>,
    /// The client it is counted for (none yet: a load balancer's, before its header).
    client: Option<IpAddr>,
    _permit: OwnedSemaphorePermit,
}

impl Admission {
    fn new(limits: &ConnectionLimits) -> Arc<Self> {
        Arc::new(Admission {
            total: Arc::new(Semaphore::new(limits.max_connections.max(1))),
            per_client: Mutex::new(HashMap::new()),
            max_per_client: limits.max_per_client,
        })
    }

    fn clients(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, usize>> {
        // Only counts change under the lock; nothing can panic half-way.
        self.per_client.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place for one more connection from `client`, or why not.
    fn admit(self: &Arc<Self>, client: IpAddr) -> Result<Admitted, &'static str> {
        self.admit_any()?.count_for(client)
    }

    /// A place among all connections, not yet counted for a client.
    fn admit_any(self: &Arc<Self>) -> Result<Admitted, &'static str> {
        let permit = Arc::clone(&self.total)
            .try_acquire_owned()
            .map_err(|_| "max_connections")?;
        Ok(Admitted {
            admission: Arc::clone(self),
            client: None,
            _permit: permit,
        })
    }
}

impl Admitted {
    /// Counts the connection for `client` too, or refuses it (its place among all given back).
    fn count_for(mut self, client: IpAddr) -> Result<Admitted, &'static str> {
        if self.admission.max_per_client > 0 {
            let mut clients = self.admission.clients();
            let open = clients.entry(client).or_insert(0);
            if *open >= self.admission.max_per_client {
                return Err("max_connections_per_client");
            }
            *open += 1;
            self.client = Some(client);
        }
        Ok(self)
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        if let Some(client) = self.client {
            let mut clients = self.admission.clients();
            if let Some(open) = clients.get_mut(&client) {
                *open -= 1;
                if *open == 0 {
                    clients.remove(&client);
                }
            }
        }
    }
}

/// What a connection's watchdog knows of its requests. Requests only touch atomics: the watchdog
/// is not woken per request but reads these when its deadline comes (and is notified of a request
/// ending only while the connection drains at shutdown).
struct Activity {
    opened: Instant,
    /// A request head arrived (its service was called) at least once.
    headed: AtomicBool,
    in_progress: AtomicUsize,
    /// When the last request ended, in milliseconds after `opened`.
    last_end_ms: AtomicU64,
}

impl Activity {
    /// The activity of a connection accepted at `opened`.
    fn new(opened: Instant) -> Arc<Self> {
        Arc::new(Activity {
            opened,
            headed: AtomicBool::new(false),
            in_progress: AtomicUsize::new(0),
            last_end_ms: AtomicU64::new(0),
        })
    }

    fn busy(&self) -> bool {
        self.in_progress.load(Ordering::SeqCst) > 0
    }

    /// When the connection became idle: the end of its last request.
    fn idle_since(&self) -> Instant {
        self.opened + Duration::from_millis(self.last_end_ms.load(Ordering::SeqCst))
    }
}

/// A request in progress on its connection, from its head until its answer's body is done (it
/// lives in that body, which hyper drops once it has taken the last frame).
struct InProgress(Arc<Activity>);

impl InProgress {
    fn begin(activity: &Arc<Activity>) -> Self {
        // Counted before `headed` is set: a watchdog that sees `headed` sees the count too.
        activity.in_progress.fetch_add(1, Ordering::SeqCst);
        if !activity.headed.load(Ordering::Relaxed) {
            activity.headed.store(true, Ordering::SeqCst);
        }
        InProgress(Arc::clone(activity))
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        let activity = &self.0;
        let ms = crate::clock::millis_u64(activity.opened.elapsed());
        activity.last_end_ms.store(ms, Ordering::SeqCst);
        activity.in_progress.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An answer's body that keeps its request in progress until it is done.
struct Tracked {
    body: axum::body::Body,
    _in_progress: InProgress,
}

impl http_body::Body for Tracked {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Serves `app` on `listener` until `shutdown` resolves, then stops accepting, closes idle
/// connections and returns once the requests in progress have been answered.
pub async fn run(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // The first-head deadline is the watchdog's (see the module's notes).
    builder.http1().timer(TokioTimer::new()).header_read_timeout(None);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(H2_KEEP_ALIVE)
        .keep_alive_timeout(H2_KEEP_ALIVE);
    let builder = Arc::new(builder);
    let admission = Admission::new(&limits);
    let stopping = CancellationToken::new();
    let connections = TaskTracker::new();
    let mut shutdown = pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: wait, do not spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let from_proxy = limits.proxies.contains(&peer.ip());
        let admitted = match if from_proxy {
            admission.admit_any()
        } else {
            admission.admit(peer.ip())
        } {
            Ok(admitted) => admitted,
            Err(limit) => {
                // Dropping the stream closes it; the open connections are not disturbed.
                metrics::counter!("connections_refused_total", "limit" => limit).increment(1);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (app, builder, limits, stopping) = (app.clone(), Arc::clone(&builder), limits.clone(), stopping.clone());
        let activity = Activity::new(Instant::now());
        connections.spawn(async move {
            let carried = carried(
                stream,
                peer,
                from_proxy,
                admitted,
                activity.opened + limits.head_timeout,
            );
            let Some((stream, client, admitted)) = carried.await else {
                return;
            };
            connection(stream, client, app, builder, activity, &limits, stopping, admitted).await;
        });
    }
    drop(listener);
    stopping.cancel();
    connections.close();
    connections.wait().await;
    Ok(())
}

/// The client a connection carries: its peer, or for a load balancer's connection the client its
/// PROXY header names (read by `head_deadline`, the connection's one head deadline), then counted
/// for that client. `None`: the connection is closed (no valid header in time, or the client has
/// its connections).
async fn carried(
    mut stream: TcpStream,
    peer: SocketAddr,
    from_proxy: bool,
    admitted: Admitted,
    head_deadline: Instant,
) -> Option<(TcpStream, ClientAddr, Admitted)> {
    if !from_proxy {
        return Some((stream, ClientAddr(peer), admitted));
    }
    let client = match tokio::time::timeout_at(head_deadline, proxy::read_header(&mut stream)).await {
        Ok(Ok(client)) => client.unwrap_or(peer),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, balancer = %peer, "closing a load balancer's connection");
            return None;
        }
        Err(_) => return None,
    };
    match admitted.count_for(client.ip()) {
        Ok(admitted) => Some((stream, ClientAddr(client), admitted)),
        Err(limit) => {
            metrics::counter!("connections_refused_total", "limit" => limit).increment(1);
            None
        }
    }
}

/// Serves one connection under its watchdog (see the module's notes).
#[allow(clippy::too_many_arguments)]
async fn connection(
    stream: TcpStream,
    client: ClientAddr,
    app: Router,
    builder: Arc<auto::Builder<TokioExecutor>>,
    activity: Arc<Activity>,
    limits: &ConnectionLimits,
    stopping: CancellationToken,
    _admitted: Admitted,
) {
    let service = {
        let activity = Arc::clone(&activity);
        tower::service_fn(move |mut request: Request<hyper::body::Incoming>| {
            let in_progress = InProgress::begin(&activity);
            request.extensions_mut().insert(client);
            let app = app.clone();
            async move {
                let response = match app.oneshot(request.map(axum::body::Body::new)).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                };
                Ok::<_, Infallible>(response.map(|body| Tracked {
                    body,
                    _in_progress: in_progress,
                }))
            }
        })
    };
    let service = hyper_util::service::TowerToHyperService::new(service);
    let mut conn = pin!(builder.serve_connection_with_upgrades(TokioIo::new(stream), service));
    let mut draining = false;
    loop {
        // The one instant that matters next; a busy connection is looked at again an idle
        // period later (a request's own time is bounded elsewhere).
        let wake = if !activity.headed.load(Ordering::SeqCst) {
            // The head deadline, or sooner when idleness could close the connection sooner.
            activity.opened + limits.head_timeout.min(limits.idle_timeout)
        } else if activity.busy() {
            Instant::now() + limits.idle_timeout
        } else {
            activity.idle_since() + limits.idle_timeout
        };
        tokio::select! {
            // Draining, this is the only way out: the answers in progress are written whole.
            _ = conn.as_mut() => return,
            () = tokio::time::sleep_until(wake), if !draining => {
                let headed = activity.headed.load(Ordering::SeqCst);
                let idle = !activity.busy() && Instant::now() >= activity.idle_since() + limits.idle_timeout;
                if !headed || idle {
                    // No head in time, or idle for too long: dropping the connection closes it.
                    return;
                }
            }
            () = stopping.cancelled(), if !draining => {
                if !activity.busy() {
                    return;
                }
                // Let the request in progress finish; HTTP/1.1 closes after it, HTTP/2 sends
                // GOAWAY; either way hyper ends the connection once its answers are written.
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(total: usize, per_client: usize) -> ConnectionLimits {
        ConnectionLimits {
            max_connections: total,
            max_per_client: per_client,
            ..ConnectionLimits::default()
        }
    }

    #[test]
    fn admission_counts_per_client_and_in_total_and_gives_places_back() {
        let admission = Admission::new(&limits(3, 2));
        let a: IpAddr = [127, 0, 0, 2].into();
        let b: IpAddr = [127, 0, 0, 3].into();
        let a1 = admission.admit(a);
        let a2 = admission.admit(a);
        assert!(a1.is_ok() && a2.is_ok());
        assert_eq!(admission.admit(a).err(), Some("max_connections_per_client"));
        let b1 = admission.admit(b);
        assert!(b1.is_ok());
        assert_eq!(admission.admit(b).err(), Some("max_connections"));
        drop(a1);
        assert!(admission.admit(b).is_ok(), "a closed connection gives its place back");
        drop((a2, b1));
        assert!(
            admission.clients().len() <= 1,
            "clients with no connection are forgotten"
        );
    }

    #[test]
    fn no_per_client_limit_when_zero() {
        let admission = Admission::new(&limits(10, 0));
        let a: IpAddr = [127, 0, 0, 2].into();
        let held: Vec<_> = (0..10).map(|_| admission.admit(a)).collect();
        assert!(held.iter().all(Result::is_ok));
        assert_eq!(admission.admit(a).err(), Some("max_connections"));
    }
}
