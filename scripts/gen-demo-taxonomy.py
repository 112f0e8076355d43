#!/usr/bin/env python3
"""Generates assets/demo-taxonomy.json, the taxonomy `storefront serve --demo` loads.

The outline below is the source: departments > categories > leaves. Markers on a name:
  "!"  disabled (product creation forbidden)      "~"  no sort_order (null)
  "$"  a service (is_service)                      "@"  digital goods (is_digital)
Run: python3 scripts/gen-demo-taxonomy.py > assets/demo-taxonomy.json
"""
import json
import re
import sys

OUTLINE = {
    "Electronics": {
        "Phones": ["Smartphones", "Feature phones", "Phone cases", "Screen protectors", "Chargers & cables", "Power banks"],
        "Computers": ["Laptops", "Desktops", "Monitors", "Keyboards", "Mice", "Webcams~"],
        "Audio": ["Headphones", "Earbuds", "Portable speakers", "Soundbars", "Turntables~"],
        "TV & Video": ["Televisions", "Projectors", "Streaming devices", "TV mounts"],
        "Cameras": ["Mirrorless cameras", "Action cameras", "Lenses", "Tripods", "Film cameras!"],
    },
    "Home & Garden": {
        "Furniture": ["Sofas", "Beds", "Wardrobes", "Desks", "Office chairs", "Bookcases"],
        "Kitchen": ["Cookware", "Knives", "Small appliances", "Tableware", "Food storage"],
        "Garden": ["Garden tools", "Lawn mowers", "Planters", "Seeds & bulbs", "Garden furniture"],
        "Lighting": ["Ceiling lights", "Table lamps", "Light bulbs", "Outdoor lighting~"],
        "Bath": ["Towels", "Shower curtains", "Bath mats", "Bathroom storage"],
    },
    "Fashion": {
        "Women's clothing": ["Dresses", "Tops & blouses", "Jeans", "Coats & jackets", "Knitwear"],
        "Men's clothing": ["Shirts", "Trousers", "Suits", "Jackets", "T-shirts"],
        "Shoes": ["Sneakers", "Boots", "Sandals", "Formal shoes", "Slippers~"],
        "Accessories": ["Bags", "Wallets", "Belts", "Scarves", "Sunglasses", "Watches"],
        "Kids' clothing": ["Baby clothing", "Girls' clothing", "Boys' clothing", "School uniforms"],
    },
    "Beauty & Health": {
        "Skin care": ["Moisturisers", "Cleansers", "Sunscreen", "Face masks"],
        "Hair care": ["Shampoo", "Conditioner", "Hair dryers", "Hair styling"],
        "Makeup": ["Foundation", "Lipstick", "Mascara", "Makeup brushes"],
        "Health": ["Vitamins", "First aid", "Blood pressure monitors", "Thermometers", "Prescription drugs!"],
        "Fragrances": ["Perfume", "Eau de toilette", "Deodorants~"],
    },
    "Sports & Outdoors": {
        "Fitness": ["Dumbbells", "Yoga mats", "Treadmills", "Exercise bikes", "Resistance bands"],
        "Cycling": ["Bicycles", "Helmets", "Bike lights", "Bike locks"],
        "Camping": ["Tents", "Sleeping bags", "Camping stoves", "Backpacks"],
        "Winter sports": ["Skis", "Snowboards", "Ski goggles", "Ice skates"],
        "Team sports": ["Football", "Basketball", "Volleyball", "Hockey"],
    },
    "Toys & Games": {
        "Toys": ["Building sets", "Dolls", "Plush toys", "Remote control toys", "Puzzles"],
        "Games": ["Board games", "Card games", "Video game consoles", "Video games"],
        "Baby & toddler": ["Strollers", "Car seats", "Baby monitors", "Teething toys"],
    },
    "Food & Drinks": {
        "Grocery": ["Coffee", "Tea", "Pasta & grains", "Canned food", "Snacks", "Spices"],
        "Drinks": ["Water", "Juice", "Soft drinks", "Wine!", "Beer!"],
        "Fresh": ["Fruit", "Vegetables", "Dairy", "Bakery"],
    },
    "Pets": {
        "Dogs": ["Dog food", "Dog beds", "Leashes & collars", "Dog toys"],
        "Cats": ["Cat food", "Cat litter", "Scratching posts", "Cat toys"],
        "Small animals & fish": ["Aquariums", "Fish food", "Cages", "Small animal food"],
    },
    "Auto & Moto": {
        "Car parts": ["Tyres", "Brake pads", "Batteries", "Wiper blades", "Oil & fluids"],
        "Car electronics": ["Dash cams", "Car chargers", "GPS navigators", "Car audio"],
        "Motorcycle": ["Motorcycle helmets", "Riding gloves", "Motorcycle covers~"],
    },
    "Books & Media": {
        "Books": ["Fiction", "Non-fiction", "Children's books", "Textbooks", "Comics"],
        "Music": ["Vinyl records", "CDs", "Musical instruments", "Sheet music"],
        "Films": ["Blu-ray", "DVD!"],
    },
    "Digital goods@": {
        "E-books@": ["E-book fiction@", "E-book non-fiction@", "Audiobooks@"],
        "Software@": ["Operating systems@", "Office software@", "Antivirus@", "Design software@"],
        "Gift cards@": ["Store gift cards@", "Game store cards@", "Streaming subscriptions@"],
        "Online courses@": ["Languages@", "Programming@", "Music lessons@~"],
    },
    "Services$": {
        "Installation$": ["TV wall mounting$", "Appliance installation$", "Furniture assembly$", "Air conditioner installation$"],
        "Repair$": ["Phone repair$", "Laptop repair$", "Bicycle service$", "Shoe repair$"],
        "Delivery options$": ["Lift to floor$", "Express delivery$", "Evening delivery$"],
        "Insurance & warranty$": ["Extended warranty$", "Accidental damage cover$", "Theft cover!$"],
    },
    "Tobacco!": {
        "Cigarettes!": ["Cigarettes by the pack!", "Cigarettes by the carton!"],
        "Accessories!": ["Lighters!", "Ashtrays!"],
    },
}

DESCRIPTIONS = {
    "Electronics": "Phones, computers, audio, TV and cameras.",
    "Home & Garden": "Everything for the home, the kitchen and the garden.",
    "Fashion": "Clothing, shoes and accessories for everyone.",
    "Digital goods": "Delivered online: no shipping needed.",
    "Services": "Work done for you, sold alongside products under a shared SKU.",
    "Tobacco": "No longer sold on this storefront.",
    "Smartphones": "Unlocked smartphones from all major brands.",
    "Laptops": "Notebooks and ultrabooks for work and play.",
    "Furniture assembly": "A technician assembles your furniture at home.",
    "Extended warranty": "Adds up to three years to the manufacturer's warranty.",
}


def parse(label):
    name = label.rstrip("!~$@")
    marks = label[len(name):]
    return name, {"disabled": "!" in marks, "no_sort": "~" in marks, "service": "$" in marks, "digital": "@" in marks}


def slug(name, ident):
    words = re.findall(r"[a-z0-9]+", name.lower().replace("'", ""))
    return "-".join(words + [ident])


def main():
    out = []

    def add(ident, label, parent, position, leaf, inherited):
        name, marks = parse(label)
        flags = {k: marks[k] or inherited.get(k, False) for k in ("disabled", "service", "digital")}
        top_level = parent is None
        out.append({
            "id": ident,
            "name": name,
            "slug": slug(name, ident),
            "parent_id": parent,
            "leaf": leaf,
            "sort_order": None if marks["no_sort"] else position * 10,
            "icon_url": f"https://cdn.storefront.example/icons/{slug(name, ident)}.svg" if top_level else None,
            "description": DESCRIPTIONS.get(name),
            "is_service": True if flags["service"] else (False if top_level else None),
            "is_digital": True if flags["digital"] else (False if top_level else None),
            "status": "disabled" if flags["disabled"] else "active",
        })
        return flags

    for d, (department, categories) in enumerate(OUTLINE.items(), start=1):
        dept_id = str(d * 100)
        dept_flags = add(dept_id, department, None, d, False, {})
        for c, (category, leaves) in enumerate(categories.items(), start=1):
            cat_id = f"{d * 100 + c}"
            cat_flags = add(cat_id, category, dept_id, c, False, dept_flags)
            for l, leaf in enumerate(leaves, start=1):
                add(f"{cat_id}{l:02d}", leaf, cat_id, l, True, cat_flags)

    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")
    print(f"{len(out)} categories", file=sys.stderr)


if __name__ == "__main__":
    main()
