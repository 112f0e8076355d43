//! `storefront categories import/export` (CONTRACT §1, §5.1) on the real Google taxonomy files,
//! every rejection, and a running server picking an import up.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::*;

fn repo_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data").join(name)
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run(db: &Path, args: &[&str], stdin: Option<&str>) -> Run {
    use std::io::Write;
    let mut child = storefront(db)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code(),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

fn export(db: &Path) -> Vec<Value> {
    let out = run(db, &["categories", "export"], None);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

/// Parents and leaves computed from the file independently of the service.
fn google_truth(text: &str) -> HashMap<String, (Option<String>, bool)> {
    let lines: Vec<(String, String)> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (id, path) = l.split_once(" - ").unwrap();
            (id.to_owned(), path.to_owned())
        })
        .collect();
    let by_path: HashMap<&str, &str> = lines.iter().map(|(id, p)| (p.as_str(), id.as_str())).collect();
    let parents: HashSet<&str> = lines
        .iter()
        .filter_map(|(_, p)| p.rsplit_once(" > ").map(|(parent, _)| parent))
        .collect();
    lines
        .iter()
        .map(|(id, path)| {
            let parent = path.rsplit_once(" > ").map(|(p, _)| by_path[p].to_owned());
            (id.clone(), (parent, !parents.contains(path.as_str())))
        })
        .collect()
}

#[test]
fn the_google_taxonomies_import_cleanly_and_round_trip() {
    for (file, count) in [
        ("google-product-taxonomy.en-US.txt", 5582),
        ("google-product-taxonomy.ru-RU.txt", 5427),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("g.db");
        let path = repo_data(file);
        let out = run(&db, &["categories", "import", path.to_str().unwrap()], None);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        assert!(
            out.stdout.contains(&format!("imported {count} categories")),
            "{}",
            out.stdout
        );

        let exported = export(&db);
        assert_eq!(exported.len(), count);
        let truth = google_truth(&std::fs::read_to_string(&path).unwrap());
        let slugs: HashSet<&str> = exported.iter().map(|c| c["slug"].as_str().unwrap()).collect();
        assert_eq!(slugs.len(), count, "slugs are unique");
        for c in &exported {
            let (parent, leaf) = &truth[c["id"].as_str().unwrap()];
            assert_eq!(c["parent_id"].as_str(), parent.as_deref(), "{c}");
            assert_eq!(c["leaf"].as_bool(), Some(*leaf), "{c}");
            assert_eq!(c["status"], "active");
            let slug = c["slug"].as_str().unwrap();
            assert!(slug.ends_with(&format!("-{}", c["id"].as_str().unwrap())) || slug == c["id"]);
            assert!(
                slug.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{slug}"
            );
        }

        // Export → import into a new database → the same export.
        let copy = dir.path().join("copy.db");
        let out = run(
            &copy,
            &["categories", "import", "-"],
            Some(&serde_json::to_string(&exported).unwrap()),
        );
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        assert_eq!(export(&copy), exported);
    }
}

#[test]
fn every_rejection_exits_1_names_the_record_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let base = json!([
        {"id": "root", "name": "Root", "slug": "root", "parent_id": null, "leaf": false, "status": "active"},
        {"id": "leaf", "name": "Leaf", "slug": "leaf", "parent_id": "root", "leaf": true, "status": "active"},
        {"id": "kid", "name": "Kid", "slug": "kid", "parent_id": "root", "leaf": true, "status": "active"}
    ]);
    let out = run(&db, &["categories", "import", "-"], Some(&base.to_string()));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let before = export(&db);

    let record = |id: &str, parent: Option<&str>, leaf: bool| json!({"id": id, "name": id, "slug": id, "parent_id": parent, "leaf": leaf, "status": "active"});
    let cases: Vec<(&str, Value, &[&str], &str)> = vec![
        (
            "repeated id",
            json!([record("n1", None, true), record("n1", None, true)]),
            &[],
            "record 1",
        ),
        ("empty id", json!([record("", None, true)]), &[], "record 0"),
        (
            "id too long",
            json!([record(&"x".repeat(65), None, true)]),
            &[],
            "record 0",
        ),
        (
            "unknown parent",
            json!([record("n1", Some("ghost"), true)]),
            &[],
            "record 0",
        ),
        (
            "cycle",
            json!([record("c1", Some("c2"), false), record("c2", Some("c1"), false)]),
            &[],
            "record 0",
        ),
        ("self parent", json!([record("c1", Some("c1"), false)]), &[], "record 0"),
        (
            "leaf with children",
            json!([record("n1", None, true), record("n2", Some("n1"), true)]),
            &[],
            "record 1",
        ),
        (
            "leaf over stored children",
            json!([record("root", None, true)]),
            &[],
            "record 0",
        ),
        (
            "child of a stored leaf",
            json!([record("n2", Some("leaf"), true)]),
            &[],
            "record 0",
        ),
        (
            "bad slug",
            json!([{"id": "n1", "name": "N", "slug": "Not A Slug", "leaf": true, "status": "active"}]),
            &[],
            "record 0",
        ),
        (
            "bad status",
            json!([{"id": "n1", "name": "N", "slug": "n", "leaf": true, "status": "archived"}]),
            &[],
            "record 0",
        ),
        (
            "unknown key",
            json!([{"id": "n1", "name": "N", "slug": "n", "leaf": true, "status": "active", "colour": "red"}]),
            &[],
            "record 0",
        ),
        (
            "missing leaf",
            json!([{"id": "n1", "name": "N", "slug": "n", "status": "active"}]),
            &[],
            "record 0",
        ),
        (
            "replace leaving an orphan",
            json!([record("kid2", Some("root"), true)]),
            &["--replace"],
            "record 0",
        ),
        ("not JSON", json!("[{"), &["--format", "json"], "not valid JSON"),
    ];
    for (name, file, flags, at) in cases {
        let text = if name == "not JSON" {
            "[{".to_owned()
        } else {
            file.to_string()
        };
        let mut args = vec!["categories", "import", "-"];
        args.extend_from_slice(flags);
        let out = run(&db, &args, Some(&text));
        assert_eq!(out.code, Some(1), "{name}: {}", out.stdout);
        assert!(out.stderr.contains(at), "{name}: {}", out.stderr);
        assert!(out.stderr.contains("nothing was changed"), "{name}: {}", out.stderr);
        assert_eq!(export(&db), before, "{name} changed the stored set");
    }

    // Every problem of one file at once, each with its line.
    let google = "1 - A\n2 - A > B\n2 - A > C\n4 - X > Y\nno separator here\n3 - A > B\n";
    let out = run(&db, &["categories", "import", "-", "--format", "google"], Some(google));
    assert_eq!(out.code, Some(1));
    for line in ["line 3:", "line 4:", "line 5:", "line 6:"] {
        assert!(out.stderr.contains(line), "{line}: {}", out.stderr);
    }
    assert_eq!(export(&db), before);
}

#[test]
fn upsert_replaces_whole_records_and_replace_makes_the_set_exact() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("u.db");
    let first = json!([
        {"id": "a", "name": "A", "slug": "a", "leaf": false, "sort_order": 1, "description": "first", "status": "active"},
        {"id": "b", "name": "B", "slug": "b", "parent_id": "a", "leaf": true, "status": "active"}
    ]);
    assert_eq!(
        run(&db, &["categories", "import", "-"], Some(&first.to_string())).code,
        Some(0)
    );
    let update = json!({"categories": [{"id": "a", "name": "A2", "slug": "a2", "parent_id": "", "leaf": false, "status": "disabled"}]});
    assert_eq!(
        run(&db, &["categories", "import", "-"], Some(&update.to_string())).code,
        Some(0)
    );
    let after = export(&db);
    assert_eq!(after.len(), 2);
    let a = after.iter().find(|c| c["id"] == "a").unwrap();
    assert_eq!(a["name"], "A2");
    assert_eq!(
        a["description"],
        Value::Null,
        "a record replaces the stored one as a whole"
    );
    assert_eq!(a["parent_id"], Value::Null, "parent_id \"\" is stored as null");
    let only = json!([{"id": "z", "name": "Z", "slug": "z", "leaf": true, "status": "active"}]);
    assert_eq!(
        run(
            &db,
            &["categories", "import", "-", "--replace"],
            Some(&only.to_string())
        )
        .code,
        Some(0)
    );
    assert_eq!(export(&db).len(), 1);
}

#[tokio::test]
async fn a_running_server_sees_an_import_within_5_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("live.db");
    let key = merchant_create(&db, "live")["api_key"].as_str().unwrap().to_owned();
    let server = Server::start(&db);
    let list = || async {
        read(
            reqwest::Client::new()
                .post(format!("{}/v1/categories/list", server.base))
                .bearer_auth(&key)
                .json(&json!({})),
        )
        .await
    };
    assert_eq!(list().await.body["pagination"]["total"], 0);
    let path = repo_data("google-product-taxonomy.en-US.txt");
    let out = run(&db, &["categories", "import", path.to_str().unwrap()], None);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let imported = Instant::now();
    loop {
        let answer = list().await;
        if answer.body["pagination"]["total"] == 5582 {
            break;
        }
        assert!(imported.elapsed() < Duration::from_secs(5), "not seen within 5 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn serve_demo_lists_the_demo_taxonomy() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("demo.db");
    let mut child = storefront(&db)
        .args(["serve", "--demo", "--addr", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::BufRead;
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let key = stdout
        .lines()
        .map(Result::unwrap)
        .find_map(|l| l.trim().strip_prefix("sf_").map(|k| format!("sf_{k}")))
        .unwrap();
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let base = stderr
        .lines()
        .map(Result::unwrap)
        .find_map(|l| l.strip_prefix("storefront is listening on ").map(str::to_owned))
        .unwrap();
    let answer = read(
        reqwest::Client::new()
            .post(format!("{base}/v1/categories/list"))
            .bearer_auth(&key)
            .json(&json!({"filter": {"parent_id": ""}, "pagination": {"limit": 100}})),
    )
    .await;
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(answer.status, 200);
    let roots = answer.body["categories"].as_array().unwrap();
    assert!(roots.len() >= 10);
    assert!(roots.iter().any(|c| c["status"] == "disabled"));
    assert!(roots.iter().any(|c| c["is_service"] == true));
    assert!(roots.iter().any(|c| c["is_digital"] == true));
    assert!(roots.iter().all(|c| c["icon_url"].is_string()));
}
