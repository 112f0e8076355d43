//! `POST /v1/location/search` against an independent model (CONTRACT §12): random locations of
//! two merchants (some quarantined, archived or moved), random questions and page sizes, every
//! walk compared with a brute-force answer computed here from the locations' JSON, not with the
//! service's code. And the same questions on SQLite and PostgreSQL give the same answers.

use std::collections::HashMap;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;

/// A small deterministic generator (xorshift64*), so a failure is reproducible from its seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// Haversine on the contract's sphere (CONTRACT §4.5).
pub fn distance_m(a: (f64, f64), b: (f64, f64)) -> f64 {
    let (p1, p2) = (a.0.to_radians(), b.0.to_radians());
    let (dp, dl) = ((b.0 - a.0).to_radians(), (b.1 - a.1).to_radians());
    let h = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * 6_371_008.8 * h.sqrt().min(1.0).asin()
}

const DAYS: [&str; 7] = [
    "MONDAY",
    "TUESDAY",
    "WEDNESDAY",
    "THURSDAY",
    "FRIDAY",
    "SATURDAY",
    "SUNDAY",
];

/// The weekday of a `YYYY-MM-DD` (Sakamoto's method).
fn weekday(date: &str) -> &'static str {
    let (mut y, m, d): (i64, usize, i64) = (
        date[0..4].parse().unwrap(),
        date[5..7].parse().unwrap(),
        date[8..10].parse().unwrap(),
    );
    const T: [i64; 12] = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4];
    if m < 3 {
        y -= 1;
    }
    let sunday_first = (y + y / 4 - y / 100 + y / 400 + T[m - 1] + d) % 7;
    DAYS[((sunday_first + 6) % 7) as usize]
}

fn minutes(hhmm: &str) -> u32 {
    hhmm[0..2].parse::<u32>().unwrap() * 60 + hhmm[3..5].parse::<u32>().unwrap()
}

/// Whether a day schedule is open at `t` minutes.
fn open_in(schedule: &Value, t: u32) -> bool {
    let (start, end) = (
        minutes(schedule["time_start"].as_str().unwrap()),
        minutes(schedule["time_end"].as_str().unwrap()),
    );
    let in_break = schedule["break"].as_str().is_some_and(|b| {
        let (s, e) = b.split_once('-').unwrap();
        minutes(s) <= t && t < minutes(e)
    });
    start <= t && t < end && !in_break
}

/// CONTRACT §12.2's open-at rule, read from a location's JSON.
pub fn open_at(location: &Value, at: &str) -> bool {
    let (date, time) = at.split_once('T').unwrap();
    let t = minutes(time);
    let dated = location["individual_schedule"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["date"] == date);
    if let Some(d) = dated {
        return d["is_works"] == true && open_in(&d["schedule"], t);
    }
    location["working_schedule"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["day"] == weekday(date))
        .is_some_and(|d| open_in(&d["schedule"], t))
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap()).collect())
        .unwrap_or_default()
}

/// Whether a location's JSON meets every condition of a filter (CONTRACT §12.1's table).
pub fn matches(location: &Value, filter: &Value) -> bool {
    let Some(filter) = filter.as_object() else {
        return true;
    };
    filter
        .iter()
        .filter(|(_, v)| !v.is_null())
        .all(|(key, want)| match key.as_str() {
            "location_types" => {
                let have = strings(&location["location_types"]);
                strings(want).iter().any(|t| have.contains(t))
            }
            "pickup_point_type" => location["pickup_point_type"] == *want,
            "payment_method" => strings(&location["payment_methods"]).contains(&want.as_str().unwrap()),
            "pickup_services" => {
                let have = strings(&location["pickup_services"]);
                strings(want).iter().all(|s| have.contains(s))
            }
            "accepts_returns" => location["is_accepts_returns"] == *want,
            "parcel" => {
                let limits = &location["limits"];
                let sorted = |mut v: Vec<f64>| {
                    v.sort_by(|a, b| b.partial_cmp(a).unwrap());
                    v
                };
                let side = |v: &Value, k: &str| v[k].as_f64().unwrap();
                let parcel = sorted(["length", "width", "height"].map(|k| side(want, k)).to_vec());
                let room = sorted(["length", "width", "height"].map(|k| side(limits, k)).to_vec());
                side(want, "weight") <= side(limits, "weight") && parcel.iter().zip(&room).all(|(p, r)| p <= r)
            }
            "open_at" => open_at(location, want.as_str().unwrap()),
            other => panic!("the model has no filter {other}"),
        })
}

/// A location the model knows: its JSON as sent, its creation order and its current status.
#[derive(Clone, Debug)]
pub struct Known {
    pub json: Value,
    pub order: usize,
    pub status: String,
    pub key: String,
}

impl Known {
    fn point(&self) -> (f64, f64) {
        (
            self.json["latitude"].as_f64().unwrap(),
            self.json["longitude"].as_f64().unwrap(),
        )
    }
}

/// The expected results of a question: `(distance_m, merchant_location_id)` in order.
pub fn expected(known: &[Known], key: &str, question: &Value) -> Vec<(u64, String)> {
    let near = (
        question["near"]["latitude"].as_f64().unwrap(),
        question["near"]["longitude"].as_f64().unwrap(),
    );
    let radius = question["radius_m"].as_u64().unwrap_or(5000);
    let mut found: Vec<(u64, usize, String)> = known
        .iter()
        .filter(|k| k.key == key && k.status == "ACTIVE")
        .map(|k| (distance_m(near, k.point()).round() as u64, k))
        .filter(|(d, k)| *d <= radius && matches(&k.json, &question["filter"]))
        .map(|(d, k)| (d, k.order, k.json["merchant_location_id"].as_str().unwrap().to_owned()))
        .collect();
    found.sort();
    found.into_iter().map(|(d, _, id)| (d, id)).collect()
}

/// Every page of a search, `limit` results a page: `(distance_m, merchant_location_id)` in order.
pub async fn walk(app: &TestApp, key: &str, question: &Value, limit: u64) -> Vec<(u64, String)> {
    let mut found = Vec::new();
    let mut cursor = Value::Null;
    for _ in 0..1000 {
        let mut body = question.clone();
        body["pagination"] = json!({"limit": limit, "cursor": cursor});
        let answer = app.post_as("/v1/location/search", key, &body).await;
        assert_eq!(answer.status, StatusCode::OK, "{:#}", answer.body);
        assert_eq!(
            answer.body.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["pagination", "results"]
        );
        let results = answer.body["results"].as_array().unwrap();
        assert!(results.len() as u64 <= limit);
        for r in results {
            assert_eq!(r["location"]["status"], "ACTIVE");
            found.push((
                r["distance_m"].as_u64().unwrap(),
                r["location"]["merchant_location_id"].as_str().unwrap().to_owned(),
            ));
        }
        let pagination = &answer.body["pagination"];
        assert_eq!(pagination.as_object().unwrap().len(), 2, "no total: {pagination}");
        if pagination["has_next"] == false {
            assert_eq!(pagination["next_cursor"], Value::Null);
            return found;
        }
        assert_eq!(results.len() as u64, limit, "a page before the last is full");
        cursor = pagination["next_cursor"].clone();
    }
    panic!("the walk did not end");
}

const CENTRE: (f64, f64) = (55.75, 37.62);

fn time(rng: &mut Rng, from: u32, to: u32) -> String {
    let t = from + rng.below(u64::from(to - from)) as u32;
    format!("{:02}:{:02}", t / 60, t % 60)
}

fn day_schedule(rng: &mut Rng) -> Value {
    let start = 6 * 60 + rng.below(5) as u32 * 60;
    let end = if rng.chance(0.2) {
        24 * 60
    } else {
        start + 6 * 60 + rng.below(8) as u32 * 60
    };
    let end_text = if end == 24 * 60 {
        "24:00".to_owned()
    } else {
        format!("{:02}:00", end / 60)
    };
    let mut schedule = json!({"time_start": format!("{:02}:00", start / 60), "time_end": end_text});
    if rng.chance(0.4) {
        let b = start + 120 + rng.below(3) as u32 * 30;
        schedule["break"] = json!(format!("{}-{}", time(rng, b, b + 1), time(rng, b + 30, b + 31)));
    }
    schedule
}

/// A random valid location of one of the four kinds, within about `spread` metres of `centre`.
pub fn random_location(rng: &mut Rng, n: usize, centre: (f64, f64), spread: f64) -> Value {
    let kind = rng.below(4);
    let mut item = match kind {
        0 => pickup_point(n as u32),
        1 => postamat(n as u32),
        2 => warehouse(n as u32),
        _ => click_and_collect(n as u32),
    };
    item["merchant_location_id"] = json!(format!("r-{n}"));
    item["latitude"] = json!(centre.0 + (rng.unit() - 0.5) * 2.0 * spread / 111_195.0);
    item["longitude"] = json!(centre.1 + (rng.unit() - 0.5) * 2.0 * spread / (111_195.0 * centre.0.to_radians().cos()));
    let side = |rng: &mut Rng| json!(10 + rng.below(140));
    item["limits"] = json!({"length": side(rng), "width": side(rng), "height": side(rng), "weight": 1 + rng.below(40)});
    item["is_accepts_returns"] = json!(rng.chance(0.5));
    if kind != 2 {
        let methods: Vec<&str> = ["ALREADY_PAID", "CARD", "CASH"]
            .into_iter()
            .filter(|m| rng.chance(0.6) && !(kind == 1 && *m == "CASH"))
            .collect();
        item["payment_methods"] = if methods.is_empty() {
            json!(["CARD"])
        } else {
            json!(methods)
        };
        if kind != 1 {
            item["pickup_services"] = if rng.chance(0.4) {
                json!(["FITTING"])
            } else {
                Value::Null
            };
        }
    }
    let mut days = Vec::new();
    for d in DAYS {
        if rng.chance(0.7) {
            days.push(json!({"day": d, "schedule": day_schedule(rng)}));
        }
    }
    item["working_schedule"] = if days.is_empty() {
        json!([{"day": "MONDAY", "schedule": day_schedule(rng)}])
    } else {
        json!(days)
    };
    if kind == 2 {
        // A warehouse's fixture schedule may carry a shipping cut-off; the random one has none.
        item.as_object_mut().unwrap().remove("individual_schedule");
    } else {
        let mut dated = Vec::new();
        for d in 23..=30 {
            if rng.chance(0.25) {
                let schedule = day_schedule(rng);
                dated.push(json!({"date": format!("2026-11-{d}"), "schedule": schedule, "is_works": rng.chance(0.5)}));
            }
        }
        item["individual_schedule"] = if dated.is_empty() { Value::Null } else { json!(dated) };
    }
    item
}

/// A random question near `centre`.
pub fn random_question(rng: &mut Rng, centre: (f64, f64)) -> Value {
    let mut filter = serde_json::Map::new();
    if rng.chance(0.3) {
        let types = ["WAREHOUSE", "PICKUP_POINT", "CLICK_AND_COLLECT"];
        let chosen: Vec<&str> = types.into_iter().filter(|_| rng.chance(0.5)).collect();
        if !chosen.is_empty() {
            filter.insert("location_types".into(), json!(chosen));
        }
    }
    if rng.chance(0.2) {
        filter.insert(
            "pickup_point_type".into(),
            json!(rng.pick(&["PICKUP_POINT", "POSTAMAT"])),
        );
    }
    if rng.chance(0.2) {
        filter.insert(
            "payment_method".into(),
            json!(rng.pick(&["ALREADY_PAID", "CARD", "CASH"])),
        );
    }
    if rng.chance(0.15) {
        filter.insert("pickup_services".into(), json!(["FITTING"]));
    }
    if rng.chance(0.2) {
        filter.insert("accepts_returns".into(), json!(rng.chance(0.5)));
    }
    if rng.chance(0.3) {
        let side = |rng: &mut Rng| json!(5 + rng.below(120));
        filter.insert(
            "parcel".into(),
            json!({"length": side(rng), "width": side(rng), "height": side(rng), "weight": 0.5 + rng.below(30) as f64}),
        );
    }
    if rng.chance(0.35) {
        let at = format!("2026-11-{}T{}", 23 + rng.below(8), time(rng, 0, 24 * 60));
        filter.insert("open_at".into(), json!(at));
    }
    let near = (
        centre.0 + (rng.unit() - 0.5) * 0.04,
        centre.1 + (rng.unit() - 0.5) * 0.06,
    );
    json!({
        "near": {"latitude": near.0, "longitude": near.1},
        "radius_m": *rng.pick(&[200, 800, 1500, 3000, 5000]),
        "filter": if filter.is_empty() && rng.chance(0.5) { Value::Null } else { Value::Object(filter) },
    })
}

/// Creates `items` (in requests of at most 200) as `key`, adding what each became to `known`.
pub async fn create_known(app: &TestApp, key: &str, items: Vec<Value>, known: &mut Vec<Known>) {
    for chunk in items.chunks(200) {
        let results = app.create_as(key, chunk.to_vec()).await;
        for (item, result) in chunk.iter().zip(results) {
            assert_ne!(result["status"], "FAILED", "{result:#} {item:#}");
            known.push(Known {
                json: item.clone(),
                order: known.len(),
                status: result["status"].as_str().unwrap().to_owned(),
                key: key.to_owned(),
            });
        }
    }
}

/// Applies a change (`archive`, `restore` or `update`) to one known location and records its
/// new status.
async fn change(app: &TestApp, known: &mut [Known], i: usize, action: &str, body: Value) {
    let key = known[i].key.clone();
    let answer = app
        .post_as(&format!("/v1/location/{action}"), &key, &json!({"locations": [body]}))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{:#}", answer.body);
    let result = &answer.body["locations"][0];
    assert!(result["errors"].as_array().unwrap().is_empty(), "{result:#}");
    known[i].status = result["status"].as_str().unwrap().to_owned();
}

#[tokio::test]
async fn walks_equal_the_model_whatever_the_question() {
    let app = TestApp::spawn().await;
    let other = app.merchant_key("other").await;
    let mut rng = Rng::new(12);
    let mut known = Vec::new();
    // Two merchants' locations mixed over the same few kilometres; some close enough to quarantine.
    let mut mine = Vec::new();
    let mut theirs = Vec::new();
    for n in 0..260 {
        let item = random_location(&mut rng, n, CENTRE, 2500.0);
        if n % 3 == 0 { theirs.push(item) } else { mine.push(item) }
    }
    create_known(&app, &app.key, mine, &mut known).await;
    create_known(&app, &other, theirs, &mut known).await;
    // Archive some, move some, restore one.
    for i in (0..known.len()).step_by(11) {
        let id = known[i].json["merchant_location_id"].clone();
        change(&app, &mut known, i, "archive", json!({"merchant_location_id": id})).await;
    }
    for i in (5..known.len()).step_by(13) {
        if known[i].status == "ARCHIVED" {
            continue;
        }
        let mut moved = known[i].json.clone();
        moved["latitude"] = json!(moved["latitude"].as_f64().unwrap() + 0.003);
        change(&app, &mut known, i, "update", moved.clone()).await;
        known[i].json = moved;
    }
    let id = known[0].json["merchant_location_id"].clone();
    change(&app, &mut known, 0, "restore", json!({"merchant_location_id": id})).await;
    // A move or an archive decides again the quarantined locations that named it: read every
    // status back.
    for key in [app.key.clone(), other.clone()] {
        let records = app.walk_locations(&key, &json!({}), 1000).await;
        let status: HashMap<&str, &str> = records
            .iter()
            .map(|r| {
                (
                    r["merchant_location_id"].as_str().unwrap(),
                    r["status"].as_str().unwrap(),
                )
            })
            .collect();
        for k in known.iter_mut().filter(|k| k.key == key) {
            k.status = status[k.json["merchant_location_id"].as_str().unwrap()].to_owned();
        }
    }
    let statuses: Vec<&str> = known.iter().map(|k| k.status.as_str()).collect();
    assert!(statuses.contains(&"QUARANTINE") && statuses.contains(&"ARCHIVED"));

    let mut nonempty = 0;
    for _ in 0..60 {
        let question = random_question(&mut rng, CENTRE);
        let limit = 1 + rng.below(12);
        let key = if rng.chance(0.8) {
            app.key.clone()
        } else {
            other.clone()
        };
        let want = expected(&known, &key, &question);
        nonempty += usize::from(!want.is_empty());
        assert_eq!(
            walk(&app, &key, &question, limit).await,
            want,
            "{question:#} limit {limit}"
        );
    }
    assert!(nonempty > 30, "the questions found something ({nonempty} of 60)");
}

#[tokio::test]
#[ignore = "needs PostgreSQL beside SQLite: scripts/test runs it"]
async fn sqlite_and_postgresql_answer_the_same() {
    assert!(
        postgres_admin_url().is_some(),
        "set STOREFRONT_TEST_POSTGRES (scripts/test does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let sqlite = TestApp::spawn_with(
        open_store(&format!("sqlite://{}", dir.path().join("p.db").display())).await,
        dir,
    )
    .await;
    let postgres = TestApp::spawn().await;
    let mut rng = Rng::new(7);
    let items: Vec<Value> = (0..3000)
        .map(|n| random_location(&mut rng, n, CENTRE, 6000.0))
        .collect();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    create_known(&sqlite, &sqlite.key, items.clone(), &mut a).await;
    create_known(&postgres, &postgres.key, items, &mut b).await;
    let status = |k: &[Known]| k.iter().map(|k| k.status.clone()).collect::<Vec<_>>();
    assert_eq!(status(&a), status(&b));
    let mut pages: HashMap<bool, usize> = HashMap::new();
    for _ in 0..40 {
        let question = random_question(&mut rng, CENTRE);
        let limit = 1 + rng.below(30);
        let on_sqlite = walk(&sqlite, &sqlite.key, &question, limit).await;
        let on_postgres = walk(&postgres, &postgres.key, &question, limit).await;
        assert_eq!(on_sqlite, on_postgres, "{question:#}");
        assert_eq!(on_sqlite, expected(&a, &sqlite.key, &question));
        *pages.entry(on_sqlite.len() as u64 > limit).or_default() += 1;
    }
    assert!(
        pages.get(&true).is_some_and(|n| *n > 5),
        "several walks had more than one page"
    );
}
