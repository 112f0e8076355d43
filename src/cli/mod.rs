//! The `storefront` command line.

use std::fs::{File, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use tokio::net::TcpListener;

use crate::app::{self, AppState};
use crate::auth::{self, IssuedKey, KeyScope};
use crate::client::pull::{self, PullArgs};
use crate::client::push::{self, PushArgs};
use crate::config::{DatabaseArgs, LogFormat, ServeArgs};
use crate::domain::category::import::{self, Format, Mode};
use crate::domain::category::order;
use crate::store::{self, DatabaseUrl, Store, StoreError};

/// `println!` that never panics: a server whose stdout was closed (a pipe whose reader went
/// away) keeps serving; what it would have printed is lost, which is all that can happen to it.
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `eprintln!` that never panics (see `say!`).
macro_rules! warn_user {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod operator;

/// How long in-flight requests may run on after a shutdown signal.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Parser, Debug)]
#[command(name = "storefront", version, about = "Storefront Catalog Service")]
pub struct Cli {
    #[command(flatten)]
    pub db: DatabaseArgs,
    /// Log format (default: pretty on a terminal, json otherwise).
    #[arg(long, env = "STOREFRONT_LOG_FORMAT", global = true, value_enum)]
    pub log_format: Option<LogFormat>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the HTTP server.
    Serve(ServeArgs),
    /// Manage merchants.
    #[command(subcommand)]
    Merchant(MerchantCommand),
    /// Manage API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Import and export the category taxonomy.
    #[command(subcommand)]
    Categories(CategoriesCommand),
    /// Push and pull files of locations (merchants); review quarantined locations (operators).
    #[command(subcommand)]
    Locations(LocationsCommand),
}

#[derive(Subcommand, Debug)]
pub enum LocationsCommand {
    /// Send a file of locations (JSON Lines, JSON or CSV) to a running service: every row stored
    /// once, with progress, a summary and a report. Exit 0: every row stored; 1: some failed;
    /// 2: nothing sent.
    Push(PushArgs),
    /// Write every location of the merchant as JSON Lines, JSON or CSV (the layout push reads).
    Pull(PullArgs),
    /// Every QUARANTINE location of every merchant, with the neighbour that keeps it there.
    Quarantined {
        /// One JSON object per line: location_id, merchant_id, merchant_location_id, name, issue,
        /// neighbour_location_id.
        #[arg(long)]
        json: bool,
    },
    /// Approve a QUARANTINE location: it becomes ACTIVE and stays so until its coordinates change.
    Approve { location_id: String },
}

#[derive(Subcommand, Debug)]
pub enum CategoriesCommand {
    /// Load categories from FILE (JSON, or the Google Product Taxonomy text format). All or
    /// nothing: every problem is reported with its record or line, and exit code 1.
    Import {
        /// The file to import (`-` for standard input).
        file: PathBuf,
        /// Make the stored set exactly the file (default: upsert by id).
        #[arg(long)]
        replace: bool,
        /// The file's format (default: detected from its content).
        #[arg(long, value_enum)]
        format: Option<FormatArg>,
    },
    /// Print the stored categories in the JSON import format.
    Export,
}

/// `--format` of `categories import`: the domain's formats, named on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    Json,
    Google,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Json => Format::Json,
            FormatArg::Google => Format::Google,
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum MerchantCommand {
    /// Create a merchant and issue its first API key.
    Create {
        #[arg(long)]
        name: String,
        /// Print one JSON object: {"merchant_id", "key_id", "api_key", "scope"}.
        #[arg(long)]
        json: bool,
    },
    /// Every merchant, oldest first: id, name, created.
    List {
        /// One JSON object per line: {"merchant_id", "name", "created_at"}.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ScopeArg {
    Full,
    Storefront,
}

impl From<ScopeArg> for KeyScope {
    fn from(scope: ScopeArg) -> Self {
        match scope {
            ScopeArg::Full => KeyScope::Full,
            ScopeArg::Storefront => KeyScope::Storefront,
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum KeyCommand {
    /// Issue another API key for a merchant.
    Issue {
        #[arg(long)]
        merchant: String,
        /// `full` may call everything; `storefront` only search and the category list, for a key
        /// published in a web page (the pickup-point widget).
        #[arg(long, value_enum, default_value_t = ScopeArg::Full)]
        scope: ScopeArg,
        /// Print one JSON object: {"merchant_id", "key_id", "api_key", "scope"}.
        #[arg(long)]
        json: bool,
    },
    /// Revoke an API key by its key_id; it is refused from the next request on.
    Revoke { key_id: String },
    /// A merchant's keys, oldest first: key id, scope, created, revoked or not (never the key).
    List {
        #[arg(long)]
        merchant: String,
        /// One JSON object per line: {"key_id", "scope", "created_at", "revoked_at"}.
        #[arg(long)]
        json: bool,
    },
}

/// Runs the parsed command line. `push` and `pull` say their own exit code; every
/// other command succeeds or fails.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if let (Command::Serve(args), DatabaseUrl::Sqlite(_)) = (&cli.command, &cli.db.database)
        && !args.read_replicas().urls.is_empty()
    {
        <Cli as clap::CommandFactory>::command()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                "--read-replica needs a PostgreSQL --database: SQLite has no replicas",
            )
            .exit();
    }
    match cli.command {
        Command::Locations(LocationsCommand::Push(args)) => Ok(push::run(args).await),
        Command::Locations(LocationsCommand::Pull(args)) => Ok(pull::run(args).await),
        command => run_local(&cli.db.database, command).await.map(|()| ExitCode::SUCCESS),
    }
}

/// The commands that work on the database itself.
async fn run_local(url: &DatabaseUrl, command: Command) -> anyhow::Result<()> {
    match command {
        Command::Serve(args) => serve(url, args).await,
        Command::Locations(LocationsCommand::Push(_) | LocationsCommand::Pull(_)) => {
            bail!("push and pull talk to a running service, not to the database")
        }
        Command::Merchant(MerchantCommand::Create { name, json }) => {
            with_store(url, |store| async move {
                let name = name.trim();
                if name.is_empty() {
                    bail!("--name must not be empty");
                }
                let issued = auth::create_merchant(store.as_ref(), name).await?;
                print_key(&issued, json)
            })
            .await
        }
        Command::Key(KeyCommand::Issue { merchant, scope, json }) => {
            with_store(url, |store| async move {
                let issued = match auth::issue_key(store.as_ref(), &merchant, scope.into()).await {
                    Err(StoreError::NotFound(_)) => bail!("no merchant with id {merchant}"),
                    other => other?,
                };
                print_key(&issued, json)
            })
            .await
        }
        Command::Categories(CategoriesCommand::Import { file, replace, format }) => {
            let text = if file.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin()).context("reading standard input")?
            } else {
                std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?
            };
            let mode = if replace { Mode::Replace } else { Mode::Upsert };
            with_store(url, |store| async move {
                import_categories(store.as_ref(), &text, format.map(Format::from), mode).await
            })
            .await
        }
        Command::Categories(CategoriesCommand::Export) => {
            with_store(url, |store| async move {
                let (_, mut categories) = store.load_categories().await?;
                categories.sort_by(|a, b| order(a.sort_order, &a.id, b.sort_order, &b.id));
                let mut out = std::io::BufWriter::new(std::io::stdout().lock());
                writeln!(out, "[")?;
                for (i, category) in categories.iter().enumerate() {
                    let separator = if i + 1 < categories.len() { "," } else { "" };
                    writeln!(out, "{}{separator}", serde_json::to_string(category)?)?;
                }
                writeln!(out, "]")?;
                out.flush()?;
                Ok(())
            })
            .await
        }
        Command::Locations(LocationsCommand::Quarantined { json }) => {
            with_existing_store(url, |store| operator::quarantined(store, json)).await
        }
        Command::Locations(LocationsCommand::Approve { location_id }) => {
            with_existing_store(url, |store| operator::approve(store, location_id)).await
        }
        Command::Key(KeyCommand::Revoke { key_id }) => {
            with_existing_store(url, |store| operator::revoke(store, key_id)).await
        }
        Command::Key(KeyCommand::List { merchant, json }) => {
            with_existing_store(url, |store| operator::list_keys(store, merchant, json)).await
        }
        Command::Merchant(MerchantCommand::List { json }) => {
            with_existing_store(url, |store| operator::list_merchants(store, json)).await
        }
    }
}

/// Opens the store, runs `f`, and closes the store whatever `f` returned.
async fn with_store<F, Fut>(url: &DatabaseUrl, f: F) -> anyhow::Result<()>
where
    F: FnOnce(Arc<dyn Store>) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let store = store::open(url).await.context("opening the database")?;
    let result = f(Arc::clone(&store)).await;
    store.close().await;
    result
}

/// As `with_store`, for the commands that only read or review: a SQLite file that does not exist
/// is refused (a message naming it, exit 1) rather than created empty.
async fn with_existing_store<F, Fut>(url: &DatabaseUrl, f: F) -> anyhow::Result<()>
where
    F: FnOnce(Arc<dyn Store>) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    if let DatabaseUrl::Sqlite(path) = url
        && !path.exists()
    {
        bail!(
            "no database at {}: give the service's with --database sqlite://FILE (or STOREFRONT_DATABASE)",
            path.display()
        );
    }
    with_store(url, f).await
}

/// Imports a file's text; prints what it did, or every problem and fails.
async fn import_categories(store: &dyn Store, text: &str, format: Option<Format>, mode: Mode) -> anyhow::Result<()> {
    match store.import_categories(import::parse(text, format), mode).await? {
        Ok(imported) => {
            say!(
                "imported {} categories; the taxonomy now has {} (version {})",
                imported.records,
                imported.total,
                imported.version
            );
            Ok(())
        }
        Err(problems) => {
            for problem in &problems {
                warn_user!("{problem}");
            }
            bail!("import refused: {} problem(s); nothing was changed", problems.len())
        }
    }
}

fn print_key(issued: &IssuedKey, json: bool) -> anyhow::Result<()> {
    if json {
        say!("{}", serde_json::to_string(issued)?);
    } else {
        say!("merchant_id: {}", issued.merchant_id);
        say!("key_id:      {}", issued.key_id);
        say!("api_key:     {}", issued.api_key);
        say!("scope:       {}", issued.scope.as_str());
        say!("(the API key is shown only now; store it safely)");
    }
    Ok(())
}

async fn serve(url: &DatabaseUrl, args: ServeArgs) -> anyhow::Result<()> {
    let _lock = match url {
        DatabaseUrl::Sqlite(path) => Some(lock_database(path)?),
        DatabaseUrl::Postgres(_) => None,
    };
    let read_replicas = args.read_replicas();
    let pools = args.pools();
    match url {
        DatabaseUrl::Sqlite(_) => tracing::info!(readers = pools.readers, "database pool: SQLite readers"),
        DatabaseUrl::Postgres(_) => tracing::info!(
            connections = pools.pg_connections,
            writers_at_most = pools.pg_writers(),
            "database pool: PostgreSQL connections"
        ),
    }
    // The recorder first: what the store's background tasks measure from their first moment
    // (a replica's lag) would otherwise go to no recorder.
    let _ = crate::telemetry::metrics();
    let store = store::open_with(url, &read_replicas, pools)
        .await
        .context("opening the database")?;
    let durability = store.durability().await?;
    let durability: Vec<String> = durability.iter().map(|(k, v)| format!("{k}={v}")).collect();
    tracing::info!(database = ?url, durability = durability.join(" "), "database ready");
    let replicas: Vec<String> = read_replicas.urls.iter().map(|url| store::redact(url)).collect();
    if !replicas.is_empty() {
        tracing::info!(replicas = ?replicas, max_lag = ?read_replicas.max_lag, "buyers' searches read on replicas");
    }
    let settings = args.settings();
    tracing::info!(rate_limit = ?settings.rate, burst = settings.burst, max_in_flight = settings.max_in_flight, "limits");
    let state = AppState::load(Arc::clone(&store), settings)
        .await
        .context("loading the taxonomy")?;
    let listener = TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("listening on {}", args.addr))?;
    let local = listener.local_addr()?;
    // After binding: what the demo prints names the address really listened on.
    if args.demo {
        seed_demo(&state, local).await?;
    }
    tracing::info!(categories = state.taxonomy.load().len(), "taxonomy loaded");
    tracing::info!(addr = %local, "listening");
    warn_user!("storefront is listening on http://{local}");

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut server = tokio::spawn(app::serve(listener, state, async move {
        let _ = stopped.await;
    }));
    let result = tokio::select! {
        result = &mut server => result,
        () = shutdown_signal() => {
            tracing::info!("shutting down: finishing in-flight requests");
            let _ = stop.send(());
            match tokio::time::timeout(DRAIN_TIMEOUT, &mut server).await {
                Ok(result) => result,
                Err(_) => {
                    tracing::warn!("in-flight requests did not finish within {DRAIN_TIMEOUT:?}; stopping");
                    server.abort();
                    Ok(Ok(()))
                }
            }
        }
    };
    store.close().await;
    result.context("server task")?.context("serving")?;
    tracing::info!("stopped");
    Ok(())
}

/// One `serve` per SQLite file: an OS lock on `<file>.lock`, released by the OS when the process
/// ends however it ends.
fn lock_database(path: &Path) -> anyhow::Result<File> {
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .with_context(|| format!("opening lock file {}", Path::new(&lock_path).display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => bail!(
            "another `storefront serve` is already serving {}; stop it first or use another --database",
            path.display()
        ),
        Err(TryLockError::Error(e)) => Err(e).context("locking the database"),
    }
}

/// The built-in demo taxonomy (`scripts/gen-demo-taxonomy.py` writes it).
const DEMO_TAXONOMY: &str = include_str!("../../assets/demo-taxonomy.json");

/// `serve --demo`: on an empty database, the demo taxonomy and the merchant `demo` with its
/// locations (`demo::seed_locations`). Each part is
/// seeded only where it is empty, so a database with its own taxonomy keeps it.
async fn seed_demo(state: &AppState, addr: std::net::SocketAddr) -> anyhow::Result<()> {
    let store = state.store.as_ref();
    if state.taxonomy.load().is_empty() {
        import_categories(store, DEMO_TAXONOMY, Some(Format::Json), Mode::Replace)
            .await
            .context("loading the demo taxonomy")?;
        state.refresh_taxonomy().await?;
    }
    if store.merchant_count().await? == 0 {
        let merchant = store.create_merchant("demo").await?;
        let issued = auth::issue_key(store, &merchant.id, KeyScope::Full).await?;
        let locations = crate::demo::seed_locations(store, &merchant)
            .await
            .context("creating the demo locations")?;
        crate::demo::seed_statuses(store, &merchant)
            .await
            .context("archiving demo locations")?;
        say!(
            "Demo merchant created (merchant_id {}). Its API key, shown only now:",
            issued.merchant_id
        );
        say!();
        say!("    {}", issued.api_key);
        say!();
        say!(
            "It has {} pickup points, lockers and stores around Moscow and Saint Petersburg: 3 archived, \
             one in quarantine 20 m from another.",
            locations + 1
        );
        say!("Try it:");
        say!(
            "    curl -s http://{}/v1/categories/list -H 'Authorization: Bearer {}' -H 'Content-Type: application/json' -d '{{\"pagination\":{{\"limit\":5}}}}'",
            addr,
            issued.api_key
        );
        say!(
            "    curl -s http://{}/v1/location/search -H 'Authorization: Bearer {}' -H 'Content-Type: application/json' -d '{{\"near\":{{\"latitude\":55.7575,\"longitude\":37.6134}},\"pagination\":{{\"limit\":3}}}}'",
            addr,
            issued.api_key
        );
        let storefront = auth::issue_key(store, &merchant.id, KeyScope::Storefront).await?;
        say!();
        say!("A storefront key, for web pages (it may search and list categories, nothing else):");
        say!();
        say!("    {}", storefront.api_key);
        say!();
        say!("The pickup-point widget with the demo's points:");
        say!("    http://{addr}/widget/#key={}", storefront.api_key);
        say!();
        say!("The merchant's console (sign in with the API key above):");
        say!("    http://{addr}/console/");
    } else {
        // The demo merchant's id, so that a key can be issued (its keys were shown once).
        let merchants = store.list_merchants().await?;
        match merchants.iter().find(|m| m.name == "demo") {
            Some(demo) => say!(
                "This database already has the demo merchant (merchant_id {id}); its key was shown \
                 only when it was created. Issue another with:\n    storefront key issue --merchant {id}\n\
                 The merchant's console: http://{addr}/console/",
                id = demo.merchant_id
            ),
            None => say!(
                "This database already has merchants, so no demo was created; list them with \
                 `storefront merchant list` and issue a key with `storefront key issue --merchant <merchant_id>`."
            ),
        }
    }
    Ok(())
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}
