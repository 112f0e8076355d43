//! The `address_tail` template:
//! `postal code, country, city, street, building[, entrance[, floor[, flat]]]`.
//!
//! "Letter" is any Unicode letter (`char::is_alphabetic`), "digit" any Unicode digit
//! (`char::is_numeric`), so addresses in any script pass.

const PARTS: [&str; 8] = [
    "postal code",
    "country",
    "city",
    "street",
    "building",
    "entrance",
    "floor",
    "flat",
];

/// Checks the template; on failure returns a message naming the part at fault.
pub fn check(address: &str) -> Result<(), String> {
    let parts: Vec<&str> = address.split(',').map(str::trim).collect();
    if !(5..=8).contains(&parts.len()) {
        return Err(format!(
            "address_tail must have 5 to 8 comma-separated parts ({}), got {}",
            PARTS.join(", "),
            parts.len()
        ));
    }
    let has_letter = |s: &str| s.chars().any(char::is_alphabetic);
    let fault = |index: usize, rule: &str| Err(format!("address_tail part {} ({}) {rule}", index + 1, PARTS[index]));

    let postal = parts[0];
    let postal_len = postal.chars().count();
    if !(3..=10).contains(&postal_len)
        || !postal.chars().all(|c| c.is_alphanumeric() || c == ' ' || c == '-')
        || !postal.chars().any(char::is_numeric)
    {
        return fault(
            0,
            "must be 3-10 letters, digits, spaces or '-', with at least one digit",
        );
    }
    if let Some(index) = (1..=3).find(|&i| !has_letter(parts[i])) {
        return fault(index, "must contain at least one letter");
    }
    if parts[4].is_empty() {
        return fault(4, "must not be empty");
    }
    if let Some(floor) = parts.get(6).filter(|f| !f.is_empty())
        && !floor.parse::<i32>().is_ok_and(|f| (-5..=200).contains(&f))
    {
        return fault(6, "must be an integer from -5 to 200");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn accepts_the_template() {
        for ok in [
            "101000, Russia, Moscow, Tverskaya, 1",
            "101000,Россия,Москва,Тверская ул.,1,2,3,45",
            "SW1A 1AA, UK, London, Downing Street, 10, , -1, ",
            "10115, DE, Berlin, Unter den Linden, 5a, 2",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn names_the_part_at_fault() {
        let cases = [
            ("101000, Russia, Moscow, Tverskaya", "5 to 8"),
            ("1, Russia, Moscow, Tverskaya, 1", "postal code"),
            ("ABCDE, Russia, Moscow, Tverskaya, 1", "postal code"),
            ("101000, 77, Moscow, Tverskaya, 1", "country"),
            ("101000, Russia, , Tverskaya, 1", "city"),
            ("101000, Russia, Moscow, 12, 1", "street"),
            ("101000, Russia, Moscow, Tverskaya, ", "building"),
            ("101000, Russia, Moscow, Tverskaya, 1, 2, 201, 3", "floor"),
            ("101000, Russia, Moscow, Tverskaya, 1, 2, two, 3", "floor"),
            ("101000, Russia, Moscow, Tverskaya, 1, 2, 3, 4, 5", "5 to 8"),
        ];
        for (address, part) in cases {
            let message = check(address).err().unwrap_or_default();
            assert!(message.contains(part), "{address}: {message}");
        }
    }
}
