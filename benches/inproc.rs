//! A profiling aid, not part of the benchmark's figures: a route's cost per request inside
//! the process (the whole middleware stack, the gate, the handler, the access log), without TCP
//! and without the load generator competing for the CPU. Its figure moves far less between runs
//! than a wrk run on this 2-core machine, so it is what to compare two builds of the list path by.
//!
//! Usage: `inproc DB API_KEY BODIES_FILE [REQUESTS [ROUTE]]` (BODIES_FILE: one request body per
//! line, as `benches/bench.py` writes them; ROUTE `/v1/categories/list` unless named, e.g.
//! `/v1/location/search`). Logs go to stderr as `serve` writes them; send them
//! to /dev/null.

use std::time::Instant;

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use storefront::app::{self, AppState, Settings};
use storefront::rate_limit::Rate;
use storefront::store::{self, DatabaseUrl};
use tower::ServiceExt;

/// The server's allocator, so that the figures are the server's.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn cpu_seconds() -> f64 {
    // utime + stime of this process, in clock ticks of 1/100 s.
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1.split_whitespace().collect::<Vec<_>>();
            Some((rest.get(11)?.parse::<f64>().ok()? + rest.get(12)?.parse::<f64>().ok()?) / 100.0)
        })
        .unwrap_or(0.0)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [db, key, bodies, rest @ ..] = args.as_slice() else {
        anyhow::bail!("usage: inproc DB API_KEY BODIES_FILE [REQUESTS [ROUTE]]");
    };
    let requests: usize = rest.first().map_or(Ok(200_000), |n| n.parse())?;
    let route = rest.get(1).map_or("/v1/categories/list", String::as_str);
    let _log = storefront::telemetry::init(Some(storefront::config::LogFormat::Json));
    let store = store::open(&DatabaseUrl::parse(&format!("sqlite://{db}")).map_err(anyhow::Error::msg)?).await?;
    let settings = Settings {
        rate: Rate::Off,
        ..Settings::default()
    };
    let state = AppState::load(store, settings).await?;
    let search = std::sync::Arc::clone(&state.search);
    let router = app::router(state);
    let bodies: Vec<String> = std::fs::read_to_string(bodies)?
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    let authorization = format!("Bearer {key}");
    let call = |i: usize| {
        let body = bodies[i % bodies.len()].clone();
        let request = Request::post(route)
            .header("content-type", "application/json")
            .header("authorization", &authorization)
            .body(Body::from(body));
        let router = router.clone();
        async move {
            let response = router.oneshot(request?).await?;
            let status = response.status();
            let mut body = response.into_body();
            if status != 200 {
                let body = body.collect().await?.to_bytes();
                anyhow::bail!("status {status}: {}", String::from_utf8_lossy(&body));
            }
            // Counted frame by frame, not collected: collecting would copy a body of several
            // pieces into one buffer, a cost the server does not pay.
            let mut len = 0;
            while let Some(frame) = body.frame().await {
                len += frame?.data_ref().map_or(0, |data| data.len());
            }
            Ok::<usize, anyhow::Error>(len)
        }
    };
    call(0).await?;
    // A merchant's search index is built in the background after its first search: measured
    // once it is held, from memory.
    while route.ends_with("/search") && search.stats().merchants == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    for i in 0..requests / 10 {
        call(i).await?;
    }
    let before = search.stats();
    let (wall, cpu) = (Instant::now(), cpu_seconds());
    let mut bytes = 0;
    // With INPROC_BY_BODY set, each body's own time is kept too, to find the slow ones.
    let by_body = std::env::var_os("INPROC_BY_BODY").is_some();
    let mut spent = vec![(0.0f64, 0u32); bodies.len()];
    for i in 0..requests {
        let started = by_body.then(Instant::now);
        bytes += call(i * 7).await?;
        if let Some(started) = started {
            let slot = &mut spent[(i * 7) % bodies.len()];
            slot.0 += started.elapsed().as_secs_f64();
            slot.1 += 1;
        }
    }
    let (wall, cpu) = (wall.elapsed().as_secs_f64(), cpu_seconds() - cpu);
    let after = search.stats();
    if by_body {
        let mut each: Vec<(f64, usize)> = spent
            .iter()
            .enumerate()
            .filter(|(_, (_, n))| *n > 0)
            .map(|(i, (s, n))| (s * 1e6 / f64::from(*n), i))
            .collect();
        each.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (micros, i) in each.iter().take(20) {
            println!("{micros:8.1} µs  body {i}: {}", bodies[*i]);
        }
        let at = |q: f64| each[((each.len() - 1) as f64 * q) as usize].0;
        println!(
            "bodies by their mean: max {:.1}, 1% {:.1}, 10% {:.1}, median {:.1}, min {:.1} µs",
            at(0.0),
            at(0.01),
            at(0.1),
            at(0.5),
            at(1.0)
        );
    }
    println!(
        "{requests} requests: {:.2} µs/request wall, {:.2} µs/request CPU (all threads), {} bytes/answer",
        wall * 1e6 / requests as f64,
        cpu * 1e6 / requests as f64,
        bytes / requests
    );
    if route.ends_with("/search") {
        println!(
            "searches from memory {}, from the database {}; of those from memory, {} read the database",
            after.from_memory - before.from_memory,
            after.from_database - before.from_database,
            after.reads_from_memory - before.reads_from_memory
        );
    }
    Ok(())
}
