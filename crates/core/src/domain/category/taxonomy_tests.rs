//! Tests of the in-memory taxonomy (`taxonomy.rs`).

use super::*;

fn cat(id: &str, parent: Option<&str>, sort: Option<i64>, leaf: bool, status: CategoryStatus) -> Category {
    Category {
        id: id.into(),
        name: id.into(),
        slug: id.to_lowercase(),
        parent_id: parent.map(Into::into),
        leaf,
        sort_order: sort,
        icon_url: None,
        description: None,
        is_service: None,
        is_digital: None,
        status,
    }
}

fn ids(page: &Page<'_>) -> Vec<String> {
    // Shared and copied, the inside reads the same.
    let (shared, copied) = (page.inside(usize::MAX).concat(), page.inside(0).concat());
    assert_eq!(shared, copied);
    let array = [&b"["[..], &shared, b"]"].concat();
    let items: Vec<serde_json::Value> = serde_json::from_slice(&array).unwrap();
    items.iter().map(|j| j["id"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn filters_and_pages() {
    use CategoryStatus::*;
    let t = Taxonomy::build(
        1,
        vec![
            cat("r2", None, Some(2), false, Active),
            cat("r1", None, Some(1), false, Active),
            cat("a", Some("r1"), None, true, Active),
            cat("b", Some("r1"), Some(5), true, Disabled),
            cat("c", Some("r2"), Some(5), true, Active),
        ],
    );
    let all = Filter::new(None, false, None, None);
    assert_eq!(ids(&t.page(&all, None, 10)), ["r1", "r2", "b", "c", "a"]);
    assert_eq!(t.page(&all, None, 10).run_count(), 1, "neighbours share one run");
    let of_r1 = t.page(&Filter::new(None, false, Some("r1".into()), None), None, 10);
    assert_eq!(
        (ids(&of_r1), of_r1.run_count()),
        (vec!["b".to_owned(), "a".to_owned()], 2)
    );
    let first = t.page(&all, None, 2);
    assert_eq!(first.total, 5);
    let second = t.page(&all, first.next.as_ref(), 2);
    assert_eq!(ids(&second), ["b", "c"]);
    let third = t.page(&all, second.next.as_ref(), 2);
    assert_eq!(ids(&third), ["a"]);
    assert!(third.next.is_none());
    // Where the key sat is only a hint: any other position (a list changed since, a cursor
    // from before positions were kept) finds the key by search, and the page is the same.
    let resume = first.next.clone().unwrap();
    assert_eq!(resume.position, Some(1));
    for position in [None, Some(0), Some(2), Some(4), Some(5), Some(u32::MAX)] {
        let moved = Resume {
            position,
            ..resume.clone()
        };
        assert_eq!(ids(&t.page(&all, Some(&moved), 2)), ["b", "c"], "{position:?}");
    }
    // A key no longer in the list: the page starts after where it would be.
    let gone = Resume {
        key: OrderKey {
            sort_order: Some(2),
            id: "r2x".into(),
        },
        position: Some(1),
    };
    assert_eq!(ids(&t.page(&all, Some(&gone), 2)), ["b", "c"]);

    assert_eq!(
        ids(&t.page(&Filter::new(None, false, Some(String::new()), None), None, 10)),
        ["r1", "r2"]
    );
    assert_eq!(
        ids(&t.page(&Filter::new(Some(Active), true, Some("r1".into()), None), None, 10)),
        ["a"]
    );
    let by_ids = Filter::new(
        None,
        true,
        Some("r2".into()),
        Some(vec!["a".into(), "zz".into(), "r1".into(), "a".into()]),
    );
    let page = t.page(&by_ids, None, 10);
    assert_eq!((ids(&page), page.total), (vec!["a".to_owned()], 1));
    assert_eq!(
        t.page(&Filter::new(None, false, Some("nope".into()), None), None, 10)
            .total,
        0
    );
}

#[test]
fn categories_handed_over_in_any_order_page_the_same() {
    use CategoryStatus::*;
    let categories = || {
        (0..40).map(|i| {
            let parent = (i >= 4).then(|| format!("p{}", i % 4));
            let id = if i < 4 { format!("p{i}") } else { format!("c{i:02}") };
            cat(
                &id,
                parent.as_deref(),
                (i % 3 != 0).then_some(i % 5),
                i >= 4,
                if i % 7 == 0 { Disabled } else { Active },
            )
        })
    };
    let in_order = Taxonomy::build(1, categories().collect());
    let mut scattered = Builder::new(1);
    categories().rev().for_each(|c| scattered.push(c));
    let scattered = scattered.finish();
    for filter in [
        Filter::new(None, false, None, None),
        Filter::new(Some(Active), true, None, None),
        Filter::new(None, false, Some("p1".into()), None),
        Filter::new(None, false, None, Some(vec!["c09".into(), "p0".into(), "c33".into()])),
    ] {
        let (mut a, mut b) = (in_order.page(&filter, None, 7), scattered.page(&filter, None, 7));
        loop {
            assert_eq!((ids(&a), a.total), (ids(&b), b.total), "{filter:?}");
            assert_eq!(a.next, b.next);
            let Some(next) = a.next.clone() else { break };
            (a, b) = (
                in_order.page(&filter, Some(&next), 7),
                scattered.page(&filter, Some(&next), 7),
            );
        }
    }
    let all = Filter::new(None, false, None, None);
    assert_eq!(in_order.page(&all, None, 40).run_count(), 1);
    assert_eq!(
        scattered.page(&all, None, 40).run_count(),
        40,
        "no two neighbours share the arena"
    );
}

#[test]
fn equivalent_filters_share_a_digest() {
    let a = Filter::new(
        None,
        false,
        Some("x".into()),
        Some(vec!["b".into(), "a".into(), "b".into()]),
    );
    let b = Filter::new(None, false, None, Some(vec!["a".into(), "b".into()]));
    assert_eq!(a.digest(), b.digest());
    assert_ne!(
        a.digest(),
        Filter::new(None, true, None, Some(vec!["a".into(), "b".into()])).digest()
    );
    assert_ne!(
        Filter::new(None, false, Some(String::new()), None).digest(),
        Filter::new(None, false, None, None).digest()
    );
}
