//! The scheduler's choices step by step: whom it serves given the candidates and the places
//! taken, the shares it keeps, and how an endpoint's limit follows its answers.

use std::time::Duration;

use super::*;

fn candidate(webhook_id: &str, merchant_pk: i64, failing: bool) -> Candidate {
    Candidate {
        webhook_id: webhook_id.to_owned(),
        merchant_pk,
        failing,
    }
}

#[test]
fn an_endpoint_not_failing_is_served_before_failing_ones_whatever_the_order() {
    let places = Places::default();
    let offered = [
        candidate("a1", 1, true),
        candidate("a2", 1, true),
        candidate("b", 2, false),
    ];
    assert_eq!(places.choose(&offered, 1), vec![0, 0, PER_ENDPOINT]);
}

#[test]
fn the_merchant_with_the_fewest_places_taken_is_served_first() {
    let places = Places::default();
    for i in 0..20 {
        places.take(&format!("a{i}"), 1, PER_ENDPOINT);
    }
    let offered = [candidate("a-next", 1, false), candidate("b", 2, false)];
    assert_eq!(
        places.choose(&offered, 1),
        vec![0, PER_ENDPOINT],
        "b has none in flight"
    );
    // With room for both, each is served; the places just taken count in the order.
    let offered = [
        candidate("c1", 3, false),
        candidate("c2", 3, false),
        candidate("d1", 4, false),
    ];
    let granted = places.choose(&offered, 2);
    assert_eq!(
        granted,
        vec![PER_ENDPOINT, 0, PER_ENDPOINT],
        "c's second waits for d's first"
    );
}

#[test]
fn an_endpoint_with_attempts_in_flight_is_not_chosen_again() {
    let places = Places::default();
    places.take("a", 1, 1);
    assert_eq!(places.choose(&[candidate("a", 1, false)], 5), vec![0]);
    let (free, busy) = places.free_and_busy();
    assert_eq!((free, busy), (PER_INSTANCE - 1, vec!["a".to_owned()]));
}

#[test]
fn a_merchant_holds_at_most_its_share_and_the_instance_at_most_its_bound() {
    let places = Places::default();
    let mine: Vec<Candidate> = (0..PER_MERCHANT)
        .map(|i| candidate(&format!("a{i}"), 1, false))
        .collect();
    let granted = places.choose(&mine, usize::MAX);
    assert_eq!(granted.iter().sum::<usize>(), PER_MERCHANT, "a quarter of the instance");
    assert_eq!(places.taken(), PER_MERCHANT);
    // Three more merchants fill the instance; a fifth finds no room until a place is given back.
    for merchant in 2..=4 {
        let theirs: Vec<Candidate> = (0..PER_MERCHANT)
            .map(|i| candidate(&format!("m{merchant}-{i}"), merchant, false))
            .collect();
        places.choose(&theirs, usize::MAX);
    }
    assert_eq!(places.taken(), PER_INSTANCE);
    assert_eq!(places.choose(&[candidate("e", 5, false)], 1), vec![0]);
    places.give_back("a0", 3);
    assert_eq!(
        places.choose(&[candidate("e", 5, false)], 1),
        vec![3],
        "what was given back"
    );
}

#[test]
fn an_endpoint_that_does_not_answer_runs_fewer_at_once_down_to_one_and_back_up_as_it_answers() {
    let places = Places::default();
    let offered = [candidate("dead", 1, true)];
    let mut limits = Vec::new();
    for _ in 0..4 {
        let n = places.choose(&offered, 1)[0];
        limits.push(n);
        places.answered("dead", 1, false);
        places.give_back("dead", n);
    }
    assert_eq!(limits, vec![8, 4, 2, 1]);
    assert_eq!(places.choose(&offered, 1), vec![1], "never below one");
    places.give_back("dead", 1);
    places.answered("dead", 1, true);
    places.answered("dead", 1, true);
    assert_eq!(places.choose(&offered, 1), vec![3]);
    places.give_back("dead", 3);
    for _ in 0..10 {
        places.answered("dead", 1, true);
    }
    assert_eq!(places.choose(&offered, 1), vec![PER_ENDPOINT], "never above eight");
}

#[tokio::test]
async fn an_attempt_by_hand_waits_for_a_place_of_its_endpoint_and_merchant() {
    let places = Arc::new(Places::default());
    places.take("a", 1, PER_ENDPOINT);
    let soon = Instant::now() + Duration::from_millis(50);
    assert!(
        places.wait_for_one("a", 1, soon).await.is_none(),
        "its endpoint's places are all taken"
    );
    let other = places.wait_for_one("b", 1, soon).await;
    assert!(other.is_some(), "another endpoint's are not");
    let waiting = {
        let places = Arc::clone(&places);
        tokio::spawn(async move {
            places
                .wait_for_one("a", 1, Instant::now() + Duration::from_secs(30))
                .await
                .is_some()
        })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    places.give_back("a", 1);
    assert!(waiting.await.unwrap_or(false), "woken when a place is given back");
    drop(other);
    let (free, busy) = places.free_and_busy();
    assert_eq!(
        free,
        PER_INSTANCE - (PER_ENDPOINT - 1),
        "the places by hand were given back"
    );
    assert_eq!(busy, vec!["a".to_owned()]);
    // A merchant at its share waits, whichever of its endpoints it asks for.
    let full: Vec<Candidate> = (0..PER_MERCHANT)
        .map(|i| candidate(&format!("c{i}"), 2, false))
        .collect();
    places.choose(&full, usize::MAX);
    assert!(places.wait_for_one("c-new", 2, soon).await.is_none());
    assert!(
        places.wait_for_one("d", 3, soon).await.is_some(),
        "another merchant does not"
    );
}

/// A simulated instance, one step a second: a thousand merchants' endpoints whose attempts take
/// 15 s each and fail (hanging receivers: far more than the instance's bound at eight each) and
/// always have work, and one healthy endpoint whose event falls due every step and is answered
/// within the step. The healthy one is served in the very step its event appears, every time; the
/// hanging ones' limits fall as their attempts fail, so that ever more of them share the places.
#[test]
fn a_healthy_endpoint_is_served_at_once_beside_any_number_of_hanging_ones() {
    let places = Places::default();
    let hanging: Vec<Candidate> = (0..1000).map(|i| candidate(&format!("h{i}"), 100 + i, true)).collect();
    // (endpoint, places, step it ends)
    let mut running: Vec<(String, usize, u32)> = Vec::new();
    let mut served = std::collections::HashSet::new();
    for step in 0..120u32 {
        for (endpoint, n, _) in running.iter().filter(|(_, _, end)| *end == step) {
            places.give_back(endpoint, *n);
            places.answered(endpoint, 0, endpoint == "healthy");
        }
        running.retain(|(_, _, end)| *end != step);
        // The store offers the healthy endpoint among the others, never first.
        let mut offered = hanging.clone();
        offered.insert(500, candidate("healthy", 1, false));
        let granted = places.choose(&offered, 128);
        assert_eq!(
            granted[500], PER_ENDPOINT,
            "step {step}: the healthy endpoint was not served"
        );
        for (c, n) in offered.iter().zip(granted).filter(|(_, n)| *n > 0) {
            let end = if c.webhook_id == "healthy" { step + 1 } else { step + 15 };
            served.insert(c.webhook_id.clone());
            running.push((c.webhook_id.clone(), n, end));
        }
        assert!(places.taken() <= PER_INSTANCE);
    }
    assert!(
        served.len() > 500,
        "{} endpoints served: the hanging ones' places were not shared",
        served.len()
    );
}
