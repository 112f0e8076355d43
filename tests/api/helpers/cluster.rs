//! A private PostgreSQL cluster a test may stop and start, and its streaming standby.

use std::path::PathBuf;
use std::process::Command;

/// A private PostgreSQL cluster this test may stop and start.
pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
}

impl Cluster {
    pub fn new() -> Cluster {
        let bin = PathBuf::from(
            std::env::var("STOREFRONT_TEST_PGBIN").expect("STOREFRONT_TEST_PGBIN (scripts/test sets it)"),
        );
        let cluster = Cluster::empty(bin);
        let data = format!("{}/data", cluster.path());
        cluster.run(
            "initdb",
            &[
                "-D",
                &data,
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-locale",
            ],
        );
        cluster.start();
        cluster
    }

    /// A streaming hot standby of this cluster (`pg_basebackup -R`), started.
    pub fn standby(&self) -> Cluster {
        let standby = Cluster::empty(self.bin.clone());
        let data = format!("{}/data", standby.path());
        let port = self.port.to_string();
        standby.run(
            "pg_basebackup",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "postgres",
                "-D",
                &data,
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
            ],
        );
        standby.start();
        standby
    }

    /// A directory for a cluster and a free port, nothing in them yet.
    fn empty(bin: PathBuf) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cluster = Cluster { dir, bin, port };
        if cluster.root() {
            assert!(
                Command::new("chown")
                    .args(["postgres:postgres", cluster.path()])
                    .status()
                    .unwrap()
                    .success()
            );
        }
        cluster
    }

    fn path(&self) -> &str {
        self.dir.path().to_str().unwrap()
    }

    fn root(&self) -> bool {
        String::from_utf8(Command::new("id").arg("-u").output().unwrap().stdout)
            .unwrap()
            .trim()
            == "0"
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let tool = self.bin.join(tool);
        let mut command = if self.root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&tool);
            c
        } else {
            Command::new(&tool)
        };
        let out = command.args(args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    pub fn start(&self) {
        let data = format!("{}/data", self.path());
        let log = format!("{}/log", self.path());
        let options = format!("-c listen_addresses=127.0.0.1 -p {} -k {}", self.port, self.path());
        self.run("pg_ctl", &["-D", &data, "-l", &log, "-w", "-o", &options, "start"]);
    }

    pub fn stop(&self) {
        let data = format!("{}/data", self.path());
        self.run("pg_ctl", &["-D", &data, "-m", "fast", "-w", "stop"]);
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Runs `sql` on the cluster's `postgres` database.
    pub async fn execute(&self, sql: &str) -> Vec<tokio_postgres::Row> {
        let (client, connection) = tokio_postgres::connect(&self.url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client.query(sql, &[]).await.unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = format!("{}/data", self.path());
        let _ = Command::new(self.bin.join("pg_ctl"))
            .args(["-D", &data, "-m", "immediate", "stop"])
            .output();
        if self.root() {
            let _ = Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(self.bin.join("pg_ctl"))
                .args(["-D", &data, "-m", "immediate", "-w", "stop"])
                .output();
        }
    }
}
